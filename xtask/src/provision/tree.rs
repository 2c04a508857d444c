//! Records and content hashes of directory trees: every file's sha256, size and
//! executable bit, and every link's target (dirs, times and owners left out, so the
//! same tree is the same on every machine).
//!
//! - A tree unpacked into the cache (a pinned tool under `tools/`, the hermetic CUDA
//!   root) gets its record when it is made from the sha256-checked downloads, and is
//!   [`check`]ed before it is used again, so that a file changed, added or removed since
//!   is found and the tree is made afresh. That record lives in the tree itself: it finds
//!   what changes a tree without also rewriting the record (a build or an installer
//!   writing into the tool dir, a copy cut short, an edit), not a hand that rewrites both.
//! - The unpacked source at the stable build path is checked the same way, against a
//!   record kept beside it ([`Record`], [`check_record`]), with every entry owned by the
//!   user building.
//! - A `--source DIR` is identified by the [`digest`] of its record ([`Scope::Source`]).

use fs_err as fs;
use std::collections::BTreeMap;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::digest::Sha256Hex;

/// The record, at the top of the tree it describes (and not part of it).
pub const RECORD: &str = ".llama-forge-tree.json";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
enum Entry {
    File {
        sha256: Sha256Hex,
        size: u64,
        exec: bool,
    },
    Link {
        target: String,
    },
}

/// What a tree holds: made once by [`Record::of`], kept as bytes, hashed as a digest.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    /// Paths relative to the root, `/`-separated.
    files: BTreeMap<String, Entry>,
}

impl Record {
    /// What `scope` covers under `root` now; with `owner`, every entry must belong to that uid.
    pub fn of(root: &Path, scope: Scope, owner: Option<u32>) -> Result<Record> {
        Ok(Record {
            files: scan(root, scope, owner)?,
        })
    }

    /// The record as bytes to keep ([`check_record`] reads them back).
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec_pretty(self).expect("record serialises")
    }

    /// The content hash of the tree: the sha256 of the record's compact JSON.
    pub fn digest(&self) -> Sha256Hex {
        crate::digest::sha256_bytes(&serde_json::to_vec(self).expect("record serialises"))
    }
}

/// Which entries a record (and a copy of the tree) covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Everything (but a record at the top): an unpacked archive or tool.
    All,
    /// A source dir a user points at: leaves out what is not source, namely `.git`,
    /// `__pycache__`, and CMake build dirs (any dir with a `CMakeCache.txt`).
    Source,
}

/// Whether the walk leaves this entry (and everything under it) out.
fn left_out(entry: &walkdir::DirEntry, scope: Scope) -> bool {
    if scope == Scope::All || entry.depth() == 0 {
        return false;
    }
    let name = entry.file_name();
    entry.file_type().is_dir()
        && (name == ".git"
            || name == "__pycache__"
            || entry.path().join("CMakeCache.txt").is_file())
}

/// The entries of `root` that `scope` covers, in path order, never following links.
fn walk(root: &Path, scope: Scope) -> impl Iterator<Item = walkdir::Result<walkdir::DirEntry>> {
    walkdir::WalkDir::new(root)
        .follow_links(false)
        .sort_by_file_name()
        .min_depth(1)
        .into_iter()
        .filter_entry(move |e| !left_out(e, scope))
}

/// Records what is under `root` now, in `root/`[`RECORD`].
pub fn write(root: &Path) -> Result<()> {
    let path = root.join(RECORD);
    fs_err::write(&path, Record::of(root, Scope::All, None)?.to_bytes())?;
    Ok(())
}

/// The content hash of what `scope` covers under `root` (see [`Record::digest`]).
pub fn digest(root: &Path, scope: Scope) -> Result<Sha256Hex> {
    Ok(Record::of(root, scope, None)?.digest())
}

/// Copies what `scope` covers of `from` into `to` (files with their executable bit,
/// dirs, and links as links), never following a link.
pub fn copy(from: &Path, to: &Path, scope: Scope) -> Result<()> {
    fs_err::create_dir_all(to)?;
    for e in walk(from, scope) {
        let e = e.with_context(|| format!("cannot read the tree {}", from.display()))?;
        let out = to.join(e.path().strip_prefix(from).expect("walk stays under root"));
        let t = e.file_type();
        if t.is_dir() {
            fs_err::create_dir_all(&out)?;
        } else if t.is_symlink() {
            copy_link(e.path(), &out)?;
        } else if t.is_file() {
            fs_err::copy(e.path(), &out)?;
        } else {
            bail!("{} is neither a file, a dir nor a link (a FIFO, socket or device): a source tree holds none", e.path().display());
        }
    }
    Ok(())
}

#[cfg(unix)]
fn copy_link(link: &Path, out: &Path) -> Result<()> {
    Ok(fs_err::os::unix::fs::symlink(
        fs_err::read_link(link)?,
        out,
    )?)
}
#[cfg(not(unix))]
fn copy_link(link: &Path, _: &Path) -> Result<()> {
    bail!(
        "{}: links in a source tree are not copied on this platform",
        link.display()
    )
}

/// Checks that the tree under `root` is the one its record describes: nothing changed,
/// added or removed. The error names the root and the first file that differs.
pub fn check(root: &Path) -> Result<()> {
    let path = root.join(RECORD);
    let text = match fs::read(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            bail!("{} has no record of its files ({RECORD}): it was made by an older llama-forge, or the record was removed", root.display())
        }
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    // Every entry, the record and the root itself must be this user's: an entry another
    // uid owns was not unpacked by this tool, and the tree is made afresh.
    let me = current_owner();
    for p in [root, path.as_path()] {
        let meta = fs::symlink_metadata(p)?;
        if owner_of(&meta) != me {
            bail!(
                "{} is owned by uid {}, not {me}: not written by this tool",
                p.display(),
                owner_of(&meta)
            );
        }
    }
    check_record(root, &text, &path, Some(me))
}

/// Checks the tree under `root` against a record's bytes ([`Record::to_bytes`], read from
/// `from`), with every entry owned by `owner` when given.
pub fn check_record(root: &Path, text: &[u8], from: &Path, owner: Option<u32>) -> Result<()> {
    let record: Record = serde_json::from_slice(text)
        .with_context(|| format!("{} is not a record of files", from.display()))?;
    let now = scan(root, Scope::All, owner)
        .with_context(|| format!("{} is not the tree that was unpacked", root.display()))?;
    let problems = differences(root, &record.files, &now);
    match problems.split_first() {
        None => Ok(()),
        Some((first, rest)) => {
            let more = if rest.is_empty() {
                String::new()
            } else {
                format!(" (and {} more)", rest.len())
            };
            bail!(
                "{} is not the tree that was unpacked: {first}{more}",
                root.display()
            )
        }
    }
}

fn differences(
    root: &Path,
    record: &BTreeMap<String, Entry>,
    now: &BTreeMap<String, Entry>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (rel, want) in record {
        let p = root.join(rel);
        match (want, now.get(rel)) {
            (_, None) => out.push(format!("{} is missing", p.display())),
            (w, Some(g)) if w == g => {}
            (
                Entry::File {
                    sha256: w,
                    size: ws,
                    exec: wx,
                },
                Some(Entry::File {
                    sha256: g,
                    size: gs,
                    ..
                }),
            ) => {
                if w != g {
                    out.push(format!(
                        "{} was changed (sha256 {g}, {gs} bytes; recorded {w}, {ws} bytes)",
                        p.display()
                    ));
                } else if *wx {
                    out.push(format!(
                        "{} is not executable now, recorded executable",
                        p.display()
                    ));
                } else {
                    out.push(format!(
                        "{} is executable now, recorded not executable",
                        p.display()
                    ));
                }
            }
            (Entry::Link { target: w }, Some(Entry::Link { target: g })) => out.push(format!(
                "{} links to `{g}` now, recorded `{w}`",
                p.display()
            )),
            (w, Some(g)) => out.push(format!(
                "{} is a {} now, recorded a {}",
                p.display(),
                kind(g),
                kind(w)
            )),
        }
    }
    for rel in now.keys().filter(|r| !record.contains_key(*r)) {
        out.push(format!(
            "{} was added (it is not among the files unpacked)",
            root.join(rel).display()
        ));
    }
    out
}

fn kind(e: &Entry) -> &'static str {
    match e {
        Entry::File { .. } => "file",
        Entry::Link { .. } => "link",
    }
}

/// Every file and link under `root` that `scope` covers (but a record at the top),
/// files hashed on several threads. With `owner`, an entry another uid owns is an error.
fn scan(root: &Path, scope: Scope, owner: Option<u32>) -> Result<BTreeMap<String, Entry>> {
    let mut out = BTreeMap::new();
    let mut files: Vec<(String, PathBuf)> = Vec::new();
    for e in walk(root, scope) {
        let e = e.with_context(|| format!("cannot list {}", root.display()))?;
        if let Some(uid) = owner {
            let meta = e
                .metadata()
                .with_context(|| format!("cannot stat {}", e.path().display()))?;
            if owner_of(&meta) != uid {
                bail!(
                    "{} is owned by uid {}, not {uid}: not written by this tool",
                    e.path().display(),
                    owner_of(&meta)
                );
            }
        }
        let rel = e
            .path()
            .strip_prefix(root)
            .expect("walk stays under its root");
        let Some(name) = rel
            .to_str()
            .map(|s| s.replace(std::path::MAIN_SEPARATOR, "/"))
        else {
            bail!("{} has a name that is not UTF-8", e.path().display());
        };
        let t = e.file_type();
        if t.is_dir() || (name == RECORD && t.is_file() && scope == Scope::All) {
            continue;
        } else if t.is_symlink() {
            let target = fs_err::read_link(e.path())?;
            let Some(target) = target.to_str() else {
                bail!("{} links to a name that is not UTF-8", e.path().display())
            };
            out.insert(
                name,
                Entry::Link {
                    target: target.to_string(),
                },
            );
        } else if t.is_file() {
            files.push((name, e.into_path()));
        } else {
            bail!(
                "{} is neither a file, a dir nor a link (a FIFO, socket or device)",
                e.path().display()
            );
        }
    }
    for ((name, _), entry) in files.iter().zip(hash_all(&files)) {
        out.insert(name.clone(), entry?);
    }
    Ok(out)
}

/// Hashes the files on up to 8 threads (a CUDA root is about 1.5 GB).
fn hash_all(files: &[(String, PathBuf)]) -> Vec<Result<Entry>> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8)
        .min(files.len())
        .max(1);
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<Option<Result<Entry>>>> =
        Mutex::new((0..files.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((_, path)) = files.get(i) else { break };
                let got = hash_file(path);
                done.lock().expect("no thread panics holding it")[i] = Some(got);
            });
        }
    });
    done.into_inner()
        .expect("no thread panicked")
        .into_iter()
        .map(|r| r.expect("every file was hashed"))
        .collect()
}

fn hash_file(path: &Path) -> Result<Entry> {
    let mut f = fs_err::File::open(path)?;
    let meta = f.metadata()?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 18];
    let mut size = 0u64;
    loop {
        let n = f
            .read(&mut buf)
            .with_context(|| format!("cannot read {}", path.display()))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        size += n as u64;
    }
    Ok(Entry::File {
        sha256: hex::encode(h.finalize()).parse().expect("hex digest"),
        size,
        exec: is_exec(&meta),
    })
}

/// Whether any execute bit is set (always false where there are none).
#[cfg(unix)]
pub fn is_exec(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    m.permissions().mode() & 0o111 != 0
}
#[cfg(not(unix))]
pub fn is_exec(_: &std::fs::Metadata) -> bool {
    false
}

#[cfg(unix)]
fn owner_of(m: &std::fs::Metadata) -> u32 {
    std::os::unix::fs::MetadataExt::uid(m)
}
#[cfg(not(unix))]
fn owner_of(_: &std::fs::Metadata) -> u32 {
    0
}

/// Whose files this run writes (`owner_of` of what it makes).
#[cfg(unix)]
fn current_owner() -> u32 {
    nix::unistd::Uid::effective().as_raw()
}
#[cfg(not(unix))]
fn current_owner() -> u32 {
    0
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn tree() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        fs::create_dir_all(root.join("bin")).unwrap();
        fs::create_dir_all(root.join("lib/empty")).unwrap();
        fs::write(root.join("bin/tool"), b"#!/bin/sh\necho tool 1.0\n").unwrap();
        fs::set_permissions(
            root.join("bin/tool"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        fs::write(root.join("lib/libx.so.1"), b"elf").unwrap();
        symlink("libx.so.1", root.join("lib/libx.so")).unwrap();
        write(root).unwrap();
        d
    }

    fn problem(root: &Path) -> String {
        format!("{:#}", check(root).unwrap_err())
    }

    /// A tree with one entry another uid owns (a ninja planted with its record rewritten
    /// to match) fails the check, naming it: the caller unpacks the tool afresh. The
    /// record and the root are held to the same owner. Chown needs root, as CI runs.
    #[test]
    fn an_entry_another_uid_owns_fails_the_check() {
        if !nix::unistd::Uid::effective().is_root() {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true, and this test needs root to chown"
            );
            return;
        }
        let nobody = Some(65534);
        for what in ["bin/tool", RECORD, "."] {
            let d = tree();
            fs::write(d.path().join("bin/tool"), b"#!/bin/sh\necho planted\n").unwrap();
            write(d.path()).unwrap();
            check(d.path()).unwrap();
            std::os::unix::fs::lchown(d.path().join(what), nobody, nobody).unwrap();
            let e = problem(d.path());
            assert!(
                e.contains("is owned by uid 65534") && e.contains("not written by this tool"),
                "{what}: {e}"
            );
        }
    }

    #[test]
    fn an_untouched_tree_passes() {
        let d = tree();
        check(d.path()).unwrap();
        // Dirs are not recorded: an empty one more or less changes nothing that runs.
        fs::create_dir(d.path().join("lib/other")).unwrap();
        check(d.path()).unwrap();
    }

    #[test]
    fn each_change_is_found_and_named() {
        /// The change, how it is made, what the check says.
        type Case = (&'static str, fn(&Path), &'static str);
        let cases: &[Case] = &[
            (
                "changed",
                |r| fs::write(r.join("bin/tool"), b"#!/bin/sh\necho evil\n").unwrap(),
                "bin/tool was changed",
            ),
            (
                "same size",
                |r| fs::write(r.join("lib/libx.so.1"), b"ELF").unwrap(),
                "lib/libx.so.1 was changed",
            ),
            (
                "added",
                |r| fs::write(r.join("lib/libevil.so"), b"x").unwrap(),
                "lib/libevil.so was added",
            ),
            (
                "removed",
                |r| fs::remove_file(r.join("lib/libx.so.1")).unwrap(),
                "lib/libx.so.1 is missing",
            ),
            (
                "mode",
                |r| {
                    fs::set_permissions(r.join("bin/tool"), std::fs::Permissions::from_mode(0o644))
                        .unwrap()
                },
                "bin/tool is not executable now",
            ),
            (
                "relinked",
                |r| {
                    fs::remove_file(r.join("lib/libx.so")).unwrap();
                    symlink("/usr/lib/libevil.so", r.join("lib/libx.so")).unwrap()
                },
                "lib/libx.so links to `/usr/lib/libevil.so` now",
            ),
            (
                "file to link",
                |r| {
                    fs::remove_file(r.join("bin/tool")).unwrap();
                    symlink("/bin/sh", r.join("bin/tool")).unwrap()
                },
                "bin/tool is a link now, recorded a file",
            ),
            (
                "fifo",
                |r| {
                    nix::unistd::mkfifo(&r.join("bin/pipe"), nix::sys::stat::Mode::S_IRWXU).unwrap()
                },
                "bin/pipe is neither",
            ),
            (
                "no record",
                |r| fs::remove_file(r.join(RECORD)).unwrap(),
                "has no record of its files",
            ),
            (
                "bad record",
                |r| fs::write(r.join(RECORD), b"{\"files\": 1}").unwrap(),
                "is not a record of files",
            ),
        ];
        for (what, change, expect) in cases {
            let d = tree();
            change(d.path());
            let e = problem(d.path());
            assert!(
                e.contains(expect) && e.contains(&d.path().display().to_string()),
                "{what}: {e}"
            );
        }
    }

    fn source(d: &Path) {
        fs::create_dir_all(d.join("a/b")).unwrap();
        fs::write(d.join("a/b/f.c"), "int x;").unwrap();
        fs::write(d.join("CMakeLists.txt"), "project(x)").unwrap();
    }

    #[test]
    fn content_not_place_or_time_decides_the_digest() {
        let (x, y) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        source(x.path());
        source(y.path());
        assert_eq!(
            digest(x.path(), Scope::All).unwrap(),
            digest(y.path(), Scope::All).unwrap()
        );
        fs::write(y.path().join("a/b/f.c"), "int y;").unwrap();
        assert_ne!(
            digest(x.path(), Scope::All).unwrap(),
            digest(y.path(), Scope::All).unwrap(),
            "an edit changes it"
        );
    }

    #[test]
    fn source_scope_leaves_out_git_caches_and_cmake_build_dirs() {
        let d = tempfile::tempdir().unwrap();
        source(d.path());
        let before = digest(d.path(), Scope::Source).unwrap();
        for (dir, file) in [
            (".git", "HEAD"),
            ("__pycache__", "x.pyc"),
            ("build", "CMakeCache.txt"),
            ("a/out", "CMakeCache.txt"),
        ] {
            fs::create_dir_all(d.path().join(dir)).unwrap();
            fs::write(d.path().join(dir).join(file), "x").unwrap();
        }
        assert_eq!(digest(d.path(), Scope::Source).unwrap(), before);
        assert_ne!(digest(d.path(), Scope::All).unwrap(), before);
        let to = tempfile::tempdir().unwrap();
        copy(d.path(), &to.path().join("c"), Scope::Source).unwrap();
        assert_eq!(
            digest(&to.path().join("c"), Scope::All).unwrap(),
            before,
            "a copy holds exactly what the digest covers"
        );
    }

    #[test]
    fn a_record_kept_elsewhere_finds_changes_and_foreign_owners() {
        let d = tempfile::tempdir().unwrap();
        source(d.path());
        let kept = Record::of(d.path(), Scope::All, None).unwrap().to_bytes();
        let from = Path::new("/kept/src.done");
        check_record(d.path(), &kept, from, None).unwrap();
        let e = format!(
            "{:#}",
            check_record(d.path(), &kept, from, Some(u32::MAX - 1)).unwrap_err()
        );
        assert!(
            e.contains("not written by this tool") && e.contains(&d.path().display().to_string()),
            "{e}"
        );
        fs::write(d.path().join("a/b/f.c"), "int z;").unwrap();
        let e = format!(
            "{:#}",
            check_record(d.path(), &kept, from, None).unwrap_err()
        );
        assert!(e.contains("a/b/f.c was changed"), "{e}");
    }
}
