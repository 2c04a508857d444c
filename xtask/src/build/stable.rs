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
pub const DEFAULT_DIR: &str = crate::detect::env::DEFAULT_STABLE_DIR;

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
    #[error("{path}, above {what} {stable}, is owned by {owner}, neither you ({me}) nor root: its owner could move {stable} away and put their own in its place. Set {var} to a dir whose parents only you and root own", what = .root.what(), var = .root.var())]
    ForeignAncestor {
        path: PathBuf,
        stable: PathBuf,
        owner: String,
        me: String,
        root: Root,
    },
    #[error("{path}, above {what} {stable}, has mode {mode:o}: group or other users can write there and, without the sticky bit, could move {stable} away and put their own in its place. `chmod go-w {path}` (or `chmod +t {path}`, as /tmp has it), or set {var} to a dir whose parents only you and root can write", what = .root.what(), var = .root.var())]
    WritableAncestor {
        path: PathBuf,
        stable: PathBuf,
        mode: u32,
        root: Root,
    },
    #[error("{path}, above {what} {stable}, has more than {MAX_LINKS} symbolic links on the way: set {var} to a path without them", what = .root.what(), var = .root.var())]
    LinkLoop {
        path: PathBuf,
        stable: PathBuf,
        root: Root,
    },
    #[error("{path}, {what}, is owned by {owner}, not by you ({me}): its owner could replace the tools and files your builds run. Set {var} to a dir of your own (docs/security.md says how a team shares safely)", what = .root.what(), var = .root.var())]
    ForeignRoot {
        path: PathBuf,
        owner: String,
        me: String,
        root: Root,
    },
    #[error("{path}, {what}, has mode {mode:o}: group or other users can write there and could replace the tools and files your builds run. If you trust what is inside, `chmod go-w {path}`; else remove it, or set {var} to a private dir", what = .root.what(), var = .root.var())]
    WritableRoot {
        path: PathBuf,
        mode: u32,
        root: Root,
    },
    #[error("{path} is not a {want}: remove it and run again")]
    WrongKind { path: PathBuf, want: &'static str },
    #[error("cannot use {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
}

/// Which of the tool's own dirs a check is for: its messages name it and the variable
/// that moves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Root {
    /// The stable build paths (`LLAMA_FORGE_STABLE_DIR`).
    Stable,
    /// Downloads and unpacked tools (`LLAMA_FORGE_CACHE`).
    Cache,
    /// Work dirs (`LLAMA_FORGE_BUILD_DIR`).
    Build,
}

impl Root {
    fn what(self) -> &'static str {
        match self {
            Root::Stable => "the stable build dir",
            Root::Cache => "the cache",
            Root::Build => "the build dir",
        }
    }
    fn var(self) -> &'static str {
        match self {
            Root::Stable => "LLAMA_FORGE_STABLE_DIR",
            Root::Cache => "LLAMA_FORGE_CACHE",
            Root::Build => "LLAMA_FORGE_BUILD_DIR",
        }
    }
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

/// The most symbolic links followed above the stable dir (as the kernel's ELOOP).
const MAX_LINKS: u32 = 40;

/// Checks every dir above `stable` up to `/`, as ssh's StrictModes and sudo do: each
/// owned by root or this user, and writable by no one else unless sticky (`/tmp`,
/// 1777): else another user could rename the stable dir away and put theirs in its
/// place. Each component is looked at with `lstat`; a symbolic link on the way is
/// followed only when root or this user owns it (whoever may write its dir was checked
/// before it), and the dirs of its target are checked the same way.
fn check_ancestors(stable: &Path, root: Root) -> Result<(), Unsafe> {
    let abs = if stable.is_absolute() {
        stable.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(io_err(stable))?
            .join(stable)
    };
    match abs.parent() {
        Some(parent) => resolve_checked(parent, stable, root, false, &mut 0).map(|_| ()),
        None => Ok(()),
    }
}

/// `dir` with its links resolved, every dir on the way checked (see [`check_ancestors`]);
/// with `make`, a missing one is made (mode 0700) and checked as it is then found.
fn resolve_checked(
    dir: &Path,
    stable: &Path,
    root: Root,
    make: bool,
    links: &mut u32,
) -> Result<PathBuf, Unsafe> {
    use std::path::Component;
    let mut cur = PathBuf::from("/");
    check_ancestor(
        &cur,
        &fs_err::symlink_metadata(&cur).map_err(io_err(&cur))?,
        stable,
        root,
    )?;
    for c in dir.components() {
        let name = match c {
            Component::Normal(n) => n,
            // `cur` has no links in it: `..` is its parent.
            Component::ParentDir => {
                cur.pop();
                continue;
            }
            _ => continue,
        };
        let next = cur.join(name);
        if make {
            make_dir(&next)?;
        }
        let meta = fs_err::symlink_metadata(&next).map_err(io_err(&next))?;
        if meta.file_type().is_symlink() {
            check_owner(&next, &meta, stable, root)?;
            *links += 1;
            if *links > MAX_LINKS {
                return Err(Unsafe::LinkLoop {
                    path: next,
                    stable: stable.to_path_buf(),
                    root,
                });
            }
            let target = fs_err::read_link(&next).map_err(io_err(&next))?;
            cur = resolve_checked(&cur.join(target), stable, root, make, links)?;
        } else {
            check_ancestor(&next, &meta, stable, root)?;
            cur = next;
        }
    }
    Ok(cur)
}

fn check_owner(
    path: &Path,
    meta: &std::fs::Metadata,
    stable: &Path,
    root: Root,
) -> Result<(), Unsafe> {
    if meta.uid() != 0 && meta.uid() != me() {
        return Err(Unsafe::ForeignAncestor {
            path: path.to_path_buf(),
            stable: stable.to_path_buf(),
            owner: user_name(meta.uid()),
            me: user_name(me()),
            root,
        });
    }
    Ok(())
}

/// A dir above the stable dir (`lstat`'s answer, not a link): root's or ours, and
/// writable by no one else unless sticky.
fn check_ancestor(
    path: &Path,
    meta: &std::fs::Metadata,
    stable: &Path,
    root: Root,
) -> Result<(), Unsafe> {
    check_owner(path, meta, stable, root)?;
    if !meta.is_dir() {
        return Err(Unsafe::WrongKind {
            path: path.to_path_buf(),
            want: "directory",
        });
    }
    if others_can_write(meta) && meta.mode() & 0o1000 == 0 {
        return Err(Unsafe::WritableAncestor {
            path: path.to_path_buf(),
            stable: stable.to_path_buf(),
            mode: meta.mode() & 0o7777,
            root,
        });
    }
    Ok(())
}

/// A dir only this user can write: created (mode 0700, its parent must exist) when
/// missing, else checked. Never follows a link. Every dir above it must be safe too
/// (see [`check_ancestors`]), checked before anything is created.
pub fn private_dir(path: &Path) -> Result<(), Unsafe> {
    check_ancestors(path, Root::Stable)?;
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

/// One of the tool's own dirs that it reuses and runs things from (the cache, the build
/// dir): made when missing, with every missing dir on the way (mode 0700, each checked
/// as it is then found, so one planted in between is caught), else checked. Every dir
/// above it must be root's or ours and writable by no one else unless sticky, as for the
/// stable dir; the dir itself must be ours (through links root or we own) and writable
/// by no one else. A group write bit is allowed where the group is the owner's own
/// (a user private group with no other members: umask 002 on Debian and Ubuntu), as
/// Debian's ssh allows it. Returns the dir with its links resolved.
pub fn private_root(path: &Path, root: Root) -> Result<PathBuf, Unsafe> {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().map_err(io_err(path))?.join(path)
    };
    let Some(parent) = abs.parent() else {
        return Err(Unsafe::WrongKind {
            path: abs,
            want: "directory below /",
        });
    };
    let dir = resolve_checked(parent, &abs, root, true, &mut 0)?;
    let Some(name) = abs.file_name() else {
        // `..` at the end: resolved above, check what it names.
        return check_root(&dir, root).map(|()| dir);
    };
    let mut at = dir.join(name);
    make_dir(&at)?;
    let meta = fs_err::symlink_metadata(&at).map_err(io_err(&at))?;
    if meta.file_type().is_symlink() {
        check_owner(&at, &meta, &abs, root)?;
        let target = fs_err::read_link(&at).map_err(io_err(&at))?;
        let to = dir.join(target);
        let up = resolve_checked(to.parent().unwrap_or(&to), &abs, root, true, &mut 1)?;
        at = match to.file_name() {
            Some(n) => up.join(n),
            None => up,
        };
        make_dir(&at)?;
    }
    check_root(&at, root)?;
    Ok(at)
}

/// [`private_root`] of a dir that only some runs of a command use: checked where it
/// exists (with the dirs above it), left unmade where it does not; whatever makes it
/// later goes through [`private_root`].
pub fn private_root_if_made(path: &Path, root: Root) -> Result<(), Unsafe> {
    match fs_err::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => check_ancestors(path, root),
        _ => private_root(path, root).map(drop),
    }
}

/// `mkdir -m 700`, where nothing is at `path` yet.
fn make_dir(path: &Path) -> Result<(), Unsafe> {
    match std::fs::DirBuilder::new().mode(0o700).create(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(Unsafe::Io {
            path: path.to_path_buf(),
            source: e,
        }),
    }
}

/// The dir a [`private_root`] names, links resolved: a real dir of ours that no one
/// else can write.
fn check_root(path: &Path, root: Root) -> Result<(), Unsafe> {
    let meta = fs_err::symlink_metadata(path).map_err(io_err(path))?;
    if meta.file_type().is_symlink() || !meta.is_dir() {
        return Err(Unsafe::WrongKind {
            path: path.to_path_buf(),
            want: "directory",
        });
    }
    if meta.uid() != me() {
        return Err(Unsafe::ForeignRoot {
            path: path.to_path_buf(),
            owner: user_name(meta.uid()),
            me: user_name(me()),
            root,
        });
    }
    if others_can_write(&meta) {
        return Err(Unsafe::WritableRoot {
            path: path.to_path_buf(),
            mode: meta.mode() & 0o7777,
            root,
        });
    }
    Ok(())
}

/// Whether anyone but the owner (and root) can write into what `meta` describes: the
/// other write bit, or the group's where the group is more than the owner's own.
fn others_can_write(meta: &std::fs::Metadata) -> bool {
    meta.mode() & 0o002 != 0 || (meta.mode() & 0o020 != 0 && !own_group(meta.uid(), meta.gid()))
}

/// Whether `gid` is `uid`'s user private group: its primary group, with no members
/// listed but that user.
fn own_group(uid: u32, gid: u32) -> bool {
    use nix::unistd::{Gid, Group};
    let Ok(Some(user)) = User::from_uid(Uid::from_raw(uid)) else {
        return false;
    };
    let Ok(Some(group)) = Group::from_gid(Gid::from_raw(gid)) else {
        return false;
    };
    user.gid.as_raw() == gid && group.mem.iter().all(|m| *m == user.name)
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

    /// A dir above the stable dir that others can write (0777, not sticky) is refused,
    /// naming it, before anything is created; with the sticky bit (as /tmp, 1777) it is
    /// fine; a link above it is followed, its target's dirs checked alike.
    #[test]
    fn a_writable_ancestor_is_refused_unless_sticky() {
        let d = tempfile::tempdir().unwrap();
        let open = d.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let stable = open.join("a/stable");
        std::fs::create_dir(open.join("a")).unwrap();
        let e = private_dir(&stable).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!(
                "{}, above the stable build dir {}, has mode 777",
                open.display(),
                stable.display()
            )) && e.contains(&format!("chmod go-w {}", open.display())),
            "{e}"
        );
        assert!(!stable.exists());
        let link = d.path().join("link");
        std::os::unix::fs::symlink(open.join("a"), &link).unwrap();
        let e = private_dir(&link.join("stable")).unwrap_err().to_string();
        assert!(e.contains(&format!("{}, above", open.display())), "{e}");
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
        private_dir(&stable).unwrap();
        private_dir(&link.join("stable")).unwrap();
    }

    /// The cache or build dir: made with its missing parents (0700 each); a link of ours
    /// to a dir of ours is followed and the dir returned; a dir others can write is
    /// refused naming it and the variable; a group write bit of the owner's own group is
    /// fine (umask 002).
    #[test]
    fn a_private_root_is_made_or_checked() {
        let d = tempfile::tempdir().unwrap();
        let cache = d.path().join("a/b/cache");
        assert_eq!(private_root(&cache, Root::Cache).unwrap(), cache);
        for p in [d.path().join("a"), d.path().join("a/b"), cache.clone()] {
            let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "{}", p.display());
        }
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&cache, &link).unwrap();
        assert_eq!(private_root(&link, Root::Cache).unwrap(), cache);
        std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let e = private_root(&cache, Root::Build).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!(
                "{}, the build dir, has mode 1777",
                cache.display()
            )) && e.contains("LLAMA_FORGE_BUILD_DIR"),
            "{e}"
        );
        // Below a dir others can write: refused before anything is made.
        let open = d.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = private_root(&open.join("x/cache"), Root::Cache)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("above the cache") && e.contains("LLAMA_FORGE_CACHE"),
            "{e}"
        );
        assert!(!open.join("x").exists());
        // The owner's own group may write (a user private group).
        let meta = std::fs::metadata(&cache).unwrap();
        if own_group(meta.uid(), meta.gid()) {
            std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o770)).unwrap();
            private_root(&cache, Root::Cache).unwrap();
        }
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
