//! The stable build path (`/tmp/llama-forge`), made safe to share a machine with other users.
//!
//! Every compile sees `/tmp/llama-forge/<id>/...`, the same path for every user and
//! machine, so artifacts are byte-identical wherever they are built. `/tmp` is writable
//! by everyone, so anything found there may have been planted by another user: a
//! symlink to their own dir, a dir they own, a `1777` dir, a lock file that is a link.
//! What this module enforces, before any build uses the path:
//!
//! - the base dir and every dir and file the tool uses under it are real (never a
//!   symlink: nothing there is followed), owned by the user running the tool, and
//!   writable by no one else (no group or other write bit);
//! - whatever fails that is refused with its path, owner and mode, and what to do;
//!   nothing is ever deleted or changed in a dir or file another user owns.
//!
//! Why not a private location per user: nvcc hashes the source's resolved path into
//! device symbol names, so the path the compilers see must be the same everywhere for
//! identical bytes. Why not a private mount namespace bound at the stable path: it needs
//! unprivileged user namespaces, which several distributions and most containers turn
//! off. The price of ownership checks: on one machine, the stable dir belongs to the
//! first user who builds there; another user is told so and may set
//! `LLAMA_FORGE_STABLE_DIR` to a private dir (CUDA bytes then differ from builds made
//! at the standard path).

use fs_err::os::unix::fs::OpenOptionsExt as _;
use std::io;
use std::os::unix::fs::OpenOptionsExt as _;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

use nix::unistd::{Uid, User};

/// Where the stable build paths live by default.
pub const DEFAULT_DIR: &str = "/tmp/llama-forge";

/// Why a path under the stable dir cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum Unsafe {
    #[error("{path} is a symbolic link (to {target}, owned by {owner}): another user may have planted it, and the tool never follows links in the stable build dir. Remove it (`rm {path}`, as its owner or root) and run again")]
    Symlink {
        path: PathBuf,
        target: String,
        owner: String,
    },
    #[error("{path} is owned by {owner}, not by you ({me}): its owner could plant code in your build. Ask them or root to remove it, or set LLAMA_FORGE_STABLE_DIR to a private dir of yours (CUDA artifacts then differ from builds made at {default})", default = DEFAULT_DIR)]
    Foreign {
        path: PathBuf,
        owner: String,
        me: String,
    },
    #[error("{path} has mode {mode:o}: group or other users can write there and could plant code in your build. If you trust what is inside, `chmod go-w {path}`; else remove it (`rm -r {path}`) and run again")]
    Writable { path: PathBuf, mode: u32 },
    #[error("{path} is not a {want}: remove it and run again")]
    WrongKind { path: PathBuf, want: &'static str },
    #[error("cannot use {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> Unsafe + '_ {
    move |source| Unsafe::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn user_name(uid: u32) -> String {
    match User::from_uid(Uid::from_raw(uid)) {
        Ok(Some(u)) => format!("{} (uid {uid})", u.name),
        _ => format!("uid {uid}"),
    }
}

/// The effective uid: whose files the stable dir may hold.
pub fn me() -> u32 {
    Uid::effective().as_raw()
}

/// Checks what `lstat` says of an existing entry: not a link, the right kind, ours, and
/// not writable by group or others.
fn check(path: &Path, meta: &std::fs::Metadata, dir: bool) -> Result<(), Unsafe> {
    if meta.file_type().is_symlink() {
        let target = fs_err::read_link(path)
            .map(|t| t.display().to_string())
            .unwrap_or_else(|_| "?".into());
        return Err(Unsafe::Symlink {
            path: path.to_path_buf(),
            target,
            owner: user_name(meta.uid()),
        });
    }
    if meta.uid() != me() {
        return Err(Unsafe::Foreign {
            path: path.to_path_buf(),
            owner: user_name(meta.uid()),
            me: user_name(me()),
        });
    }
    let kind_ok = if dir { meta.is_dir() } else { meta.is_file() };
    if !kind_ok {
        return Err(Unsafe::WrongKind {
            path: path.to_path_buf(),
            want: if dir { "directory" } else { "regular file" },
        });
    }
    if meta.mode() & 0o022 != 0 {
        return Err(Unsafe::Writable {
            path: path.to_path_buf(),
            mode: meta.mode() & 0o7777,
        });
    }
    Ok(())
}

/// A dir only this user can write: created (mode 0700, its parent must exist) when
/// missing, else checked. Never follows a link.
pub fn private_dir(path: &Path) -> Result<(), Unsafe> {
    match std::fs::DirBuilder::new().mode(0o700).create(path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            return Err(Unsafe::Io {
                path: path.to_path_buf(),
                source: e,
            })
        }
    }
    let meta = fs_err::symlink_metadata(path).map_err(io_err(path))?;
    check(path, &meta, true)
}

/// `Some(metadata)` when `path` exists and is ours (a file or dir, per `dir`), `None`
/// when it does not exist; an error when it is anything another user could control.
pub fn existing(path: &Path, dir: bool) -> Result<Option<std::fs::Metadata>, Unsafe> {
    match fs_err::symlink_metadata(path) {
        Ok(meta) => check(path, &meta, dir).map(|()| Some(meta)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Unsafe::Io {
            path: path.to_path_buf(),
            source: e,
        }),
    }
}

/// Opens (creating, mode 0600) a regular file of ours for writing, without following a
/// link at its name; a file another user owns, or one others can write, is refused.
pub fn open_private_file(path: &Path, truncate: bool) -> Result<fs_err::File, Unsafe> {
    // std, not fs-err: the ELOOP of a planted link is read from the OS error, which
    // fs-err's wrapper hides (`raw_os_error` is None); `Unsafe` names the path itself.
    let file = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(truncate)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(nix::libc::ELOOP) => match fs_err::symlink_metadata(path) {
                Ok(meta) => check(path, &meta, false).expect_err("a link fails the check"),
                Err(e) => Unsafe::Io {
                    path: path.to_path_buf(),
                    source: e,
                },
            },
            _ => Unsafe::Io {
                path: path.to_path_buf(),
                source: e,
            },
        })?;
    let file = fs_err::File::from_parts(file, path);
    let meta = file.metadata().map_err(io_err(path))?;
    check(path, &meta, false)?;
    Ok(file)
}

/// Reads a small regular file of ours without following a link; `None` when missing.
pub fn read_private_file(path: &Path) -> Result<Option<Vec<u8>>, Unsafe> {
    let file = match fs_err::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(_) => {
            existing(path, false)?;
            return Ok(None);
        }
    };
    let meta = file.metadata().map_err(io_err(path))?;
    check(path, &meta, false)?;
    let mut data = Vec::new();
    io::Read::read_to_end(&mut { file }, &mut data).map_err(io_err(path))?;
    Ok(Some(data))
}

/// Removes `path` when it exists: a dir of ours (`dir`) with what is in it, or a file of
/// ours. A link, the other kind, or anything another user owns is refused, not removed.
pub fn remove_ours(path: &Path, dir: bool) -> Result<(), Unsafe> {
    if existing(path, dir)?.is_none() {
        return Ok(());
    }
    if dir {
        fs_err::remove_dir_all(path)
    } else {
        fs_err::remove_file(path)
    }
    .map_err(io_err(path))
}

/// Whether `path` exists and belongs to this user (for sweeping: never touch others' entries).
pub fn is_ours(path: &Path) -> bool {
    fs_err::symlink_metadata(path).is_ok_and(|m| m.uid() == me())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn creates_a_0700_dir_and_accepts_it_again() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("forge");
        private_dir(&p).unwrap();
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o700
        );
        private_dir(&p).unwrap();
    }

    #[test]
    fn a_linked_or_writable_dir_is_refused_with_its_path() {
        let d = tempfile::tempdir().unwrap();
        let link = d.path().join("forge");
        std::os::unix::fs::symlink(d.path(), &link).unwrap();
        let e = private_dir(&link).unwrap_err().to_string();
        assert!(
            e.contains("symbolic link") && e.contains(&link.display().to_string()),
            "{e}"
        );

        let open = d.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let e = private_dir(&open).unwrap_err().to_string();
        assert!(e.contains("mode 1777") && e.contains("chmod go-w"), "{e}");
    }

    #[test]
    fn a_linked_file_is_never_opened_through() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        let link = d.path().join("x.lock");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let e = open_private_file(&link, false).unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        assert!(!victim.exists(), "nothing created where the link points");
        assert!(read_private_file(&link).is_err());
    }

    /// A foreign-owned stable dir needs a second user to produce: the message
    /// is checked on the error value itself.
    #[test]
    fn foreign_owner_message() {
        insta::assert_snapshot!(
            "foreign_owner",
            Unsafe::Foreign {
                path: "/tmp/llama-forge/llama.cpp-b6000-0123456789abcdef".into(),
                owner: "alice (uid 1001)".into(),
                me: "bob (uid 1002)".into(),
            }
            .to_string()
        );
    }
}
