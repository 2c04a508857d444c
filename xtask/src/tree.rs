//! Content hashes of directory trees: what identifies a `--source DIR`, and what an
//! unpacked source must still hash to before a build reuses it.
//!
//! The hash covers, in path order, every entry's relative path (`/`-separated), its kind,
//! for files the executable bit and the sha256 of the content, and for links the target.
//! Timestamps, owners and other mode bits are left out, so the same tree hashes the same
//! on every machine.

use std::io;
use std::path::Path;

use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};

use crate::recipe::Sha256Hex;

/// Which entries a tree hash (and a copy of the tree) covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Everything: an unpacked archive, checked against what was unpacked.
    All,
    /// A source directory a user points at: leaves out what is not source, namely
    /// `.git`, `__pycache__`, and CMake build dirs (any dir with a `CMakeCache.txt`).
    Source,
}

/// Whether the tree walk leaves this entry (and everything under it) out.
pub fn left_out(entry: &walkdir::DirEntry, scope: Scope) -> bool {
    if scope == Scope::All || entry.depth() == 0 {
        return false;
    }
    let name = entry.file_name();
    entry.file_type().is_dir() && (name == ".git" || name == "__pycache__" || entry.path().join("CMakeCache.txt").is_file())
}

/// The entries of `root` that `scope` covers, in a stable order, never following links.
pub fn walk(root: &Path, scope: Scope) -> impl Iterator<Item = walkdir::Result<walkdir::DirEntry>> {
    walkdir::WalkDir::new(root).follow_links(false).sort_by_file_name().into_iter().filter_entry(move |e| !left_out(e, scope))
}

/// The content hash of the tree at `root`. With `owner`, every entry must belong to that
/// uid (else: an error naming the entry).
pub fn hash(root: &Path, scope: Scope, owner: Option<u32>) -> Result<Sha256Hex> {
    let mut h = Sha256::new();
    for e in walk(root, scope) {
        let e = e.with_context(|| format!("cannot read the tree {}", root.display()))?;
        let meta = e.metadata().with_context(|| format!("cannot stat {}", e.path().display()))?;
        if let Some(uid) = owner.filter(|&uid| owner_of(&meta) != uid) {
            bail!("{} is owned by uid {}, not {uid}: not written by this tool", e.path().display(), owner_of(&meta));
        }
        let rel = e.path().strip_prefix(root).expect("walk stays under root");
        let rel = rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/");
        let t = e.file_type();
        if t.is_dir() {
            h.update(format!("D {rel}\n"));
        } else if t.is_symlink() {
            let target = std::fs::read_link(e.path()).with_context(|| format!("cannot read link {}", e.path().display()))?;
            h.update(format!("L {rel} {}\n", target.display()));
        } else if t.is_file() {
            let mut f = fs_err::File::open(e.path())?;
            let mut fh = Sha256::new();
            io::copy(&mut f, &mut fh).with_context(|| format!("cannot read {}", e.path().display()))?;
            let exec = if executable(&meta) { "x" } else { "-" };
            h.update(format!("F {rel} {exec} {}\n", hex::encode(fh.finalize())));
        } else {
            bail!("{} is neither a file, a dir nor a link (a FIFO, socket or device): a source tree holds none", e.path().display());
        }
    }
    Ok(hex::encode(h.finalize()).parse().expect("hex digest"))
}

/// Copies what `scope` covers of `from` into `to` (files with their executable bit, dirs,
/// and links as links), never following a link.
pub fn copy(from: &Path, to: &Path, scope: Scope) -> Result<()> {
    for e in walk(from, scope) {
        let e = e.with_context(|| format!("cannot read the tree {}", from.display()))?;
        let rel = e.path().strip_prefix(from).expect("walk stays under root");
        let out = to.join(rel);
        let t = e.file_type();
        if t.is_dir() {
            fs_err::create_dir_all(&out)?;
        } else if t.is_symlink() {
            symlink_like(e.path(), &out)?;
        } else if t.is_file() {
            fs_err::copy(e.path(), &out)?;
        } else {
            bail!("{} is neither a file, a dir nor a link (a FIFO, socket or device): a source tree holds none", e.path().display());
        }
    }
    Ok(())
}

#[cfg(unix)]
fn owner_of(meta: &std::fs::Metadata) -> u32 {
    std::os::unix::fs::MetadataExt::uid(meta)
}
#[cfg(unix)]
fn executable(meta: &std::fs::Metadata) -> bool {
    std::os::unix::fs::MetadataExt::mode(meta) & 0o111 != 0
}
#[cfg(unix)]
fn symlink_like(link: &Path, out: &Path) -> Result<()> {
    Ok(fs_err::os::unix::fs::symlink(fs_err::read_link(link)?, out)?)
}
#[cfg(not(unix))]
fn owner_of(_: &std::fs::Metadata) -> u32 {
    0
}
#[cfg(not(unix))]
fn executable(_: &std::fs::Metadata) -> bool {
    false
}
#[cfg(not(unix))]
fn symlink_like(link: &Path, _: &Path) -> Result<()> {
    bail!("{}: links in a source tree are not copied on this platform", link.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(d: &Path) {
        fs_err::create_dir_all(d.join("a/b")).unwrap();
        fs_err::write(d.join("a/b/f.c"), "int x;").unwrap();
        fs_err::write(d.join("CMakeLists.txt"), "project(x)").unwrap();
    }

    #[test]
    fn content_not_place_or_time_decides_the_hash() {
        let (x, y) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        tree(x.path());
        tree(y.path());
        assert_eq!(hash(x.path(), Scope::All, None).unwrap(), hash(y.path(), Scope::All, None).unwrap());
        fs_err::write(y.path().join("a/b/f.c"), "int y;").unwrap();
        assert_ne!(hash(x.path(), Scope::All, None).unwrap(), hash(y.path(), Scope::All, None).unwrap(), "an edit changes it");
    }

    #[test]
    fn source_scope_leaves_out_git_caches_and_cmake_build_dirs() {
        let d = tempfile::tempdir().unwrap();
        tree(d.path());
        let before = hash(d.path(), Scope::Source, None).unwrap();
        for (dir, file) in [(".git", "HEAD"), ("__pycache__", "x.pyc"), ("build", "CMakeCache.txt"), ("a/out", "CMakeCache.txt")] {
            fs_err::create_dir_all(d.path().join(dir)).unwrap();
            fs_err::write(d.path().join(dir).join(file), "x").unwrap();
        }
        assert_eq!(hash(d.path(), Scope::Source, None).unwrap(), before);
        assert_ne!(hash(d.path(), Scope::All, None).unwrap(), hash(d.path(), Scope::Source, None).unwrap());
        let copy_to = tempfile::tempdir().unwrap();
        copy(d.path(), &copy_to.path().join("c"), Scope::Source).unwrap();
        assert_eq!(hash(&copy_to.path().join("c"), Scope::All, None).unwrap(), before, "a copy holds exactly what the hash covers");
    }

    #[test]
    fn a_foreign_owner_is_named() {
        let d = tempfile::tempdir().unwrap();
        tree(d.path());
        let e = hash(d.path(), Scope::All, Some(u32::MAX - 1)).unwrap_err().to_string();
        assert!(e.contains(&d.path().display().to_string()) && e.contains("not written by this tool"), "{e}");
    }
}
