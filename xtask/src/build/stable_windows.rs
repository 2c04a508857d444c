//! The stable build path on Windows: builds stop after the plan there (see README), so
//! these only keep the crate compiling. The Windows issue replaces them with ACL checks.

use std::io;
use std::path::{Path, PathBuf};

pub const DEFAULT_DIR: &str = crate::detect::env::DEFAULT_STABLE_DIR;

#[derive(Debug, thiserror::Error)]
pub enum Unsafe {
    #[error("cannot use {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
}

pub fn private_dir(path: &Path) -> Result<(), Unsafe> {
    fs_err::create_dir_all(path).map_err(|source| Unsafe::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Which of the tool's own dirs a check is for (see the Unix module).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Root {
    Stable,
    Cache,
    Build,
}

pub fn private_root(path: &Path, _root: Root) -> Result<PathBuf, Unsafe> {
    private_dir(path)?;
    Ok(path.to_path_buf())
}

pub fn private_root_if_made(_path: &Path, _root: Root) -> Result<(), Unsafe> {
    Ok(())
}

pub fn existing(path: &Path, _dir: bool) -> Result<Option<std::fs::Metadata>, Unsafe> {
    Ok(fs_err::symlink_metadata(path).ok())
}

pub fn open_private_file(path: &Path, truncate: bool) -> Result<fs_err::File, Unsafe> {
    fs_err::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(truncate)
        .open(path)
        .map_err(|source| Unsafe::Io {
            path: path.to_path_buf(),
            source,
        })
}

pub fn read_private_file(path: &Path) -> Result<Option<Vec<u8>>, Unsafe> {
    Ok(fs_err::read(path).ok())
}

pub fn remove_ours(path: &Path, _dir: bool) -> Result<(), Unsafe> {
    let gone = if path.is_dir() {
        fs_err::remove_dir_all(path)
    } else {
        fs_err::remove_file(path)
    };
    match gone {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(Unsafe::Io {
            path: path.to_path_buf(),
            source: e,
        }),
        _ => Ok(()),
    }
}

pub fn me() -> u32 {
    0
}

pub fn is_ours(path: &Path) -> bool {
    path.exists()
}
