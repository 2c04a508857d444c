//! Results on disk before they are renamed into place: an artifact and its manifest before
//! dist/, a download before the cache, an unpacked tree before its name. A rename is only
//! as durable as the bytes under it: without these, a power cut after the rename can leave
//! a file of the right name and the wrong (zero) length, which the next run trusts.

use std::path::Path;

use anyhow::{Context, Result};

/// Writes `path`'s data to the disk (opened for writing: Windows flushes only such handles).
pub fn sync_file(path: &Path) -> Result<()> {
    fs_err::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|f| f.sync_all())
        .with_context(|| format!("cannot write {} to the disk", path.display()))
}

/// Writes a dir's entries to the disk, where the system can (a dir cannot be opened so on
/// Windows, whose renames are written through; a file system that cannot sync a dir says
/// so with EINVAL, and then there is nothing more to do).
pub fn sync_dir(dir: &Path) -> Result<()> {
    #[cfg(unix)]
    match fs_err::File::open(dir).and_then(|d| d.sync_all()) {
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {}
        r => r.with_context(|| format!("cannot write {} to the disk", dir.display()))?,
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// Every file under `root` and every dir, itself included, written to the disk; links as
/// they are.
pub fn sync_tree(root: &Path) -> Result<()> {
    let mut dirs = Vec::new();
    for e in walkdir::WalkDir::new(root) {
        let e = e.with_context(|| format!("cannot read {}", root.display()))?;
        match e.file_type() {
            t if t.is_file() => sync_file(e.path())?,
            t if t.is_dir() => dirs.push(e.into_path()),
            _ => {}
        }
    }
    // The deepest first: a dir's entries, then the entry naming it.
    for d in dirs.iter().rev() {
        sync_dir(d)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_with_a_link_and_a_read_only_file_is_synced() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("t");
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/b/f"), b"x").unwrap();
        std::fs::write(root.join("g"), b"y").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink("g", root.join("link")).unwrap();
        sync_tree(&root).unwrap();
        sync_file(&root.join("g")).unwrap();
        let e = sync_file(&root.join("missing")).unwrap_err();
        assert!(format!("{e:#}").contains("missing"), "{e:#}");
    }
}
