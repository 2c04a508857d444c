//! The user cache (`cache dir|size|clean|prune`): where it is, what is in it, when
//! each entry was last used, and removing what has not been used for a while.
//!
//! An entry is one download (`downloads/<sha256>`), one unpacked tool
//! (`tools/<id>`), one CUDA root (`cuda/<version>`), or a launcher's whole cache dir
//! (`ccache`, `sccache`). Its last use is the time of a stamp under `.used/`, touched
//! each time a build takes the entry (a stamp beside, never inside, an entry: the
//! trees' records cover every file inside them).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use fs_err as fs;

/// The kinds of entries, as the cache's top-level dirs: each holds one entry per child.
const PER_CHILD: &[&str] = &["downloads", "tools", "cuda"];
/// Bookkeeping: never an entry itself.
const BOOKKEEPING: &[&str] = &[".used", ".locks"];

/// One entry of the cache.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Entry {
    /// Relative to the cache, `/`-separated: `downloads/<sha256>`, `tools/cmake-4.4.4`.
    pub name: String,
    pub bytes: u64,
    /// The last build that took it (its stamp), else when it was made.
    #[serde(with = "unix_secs")]
    pub last_used: SystemTime,
}

mod unix_secs {
    use std::time::SystemTime;
    pub(crate) fn serialize<S: serde::Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(
            t.duration_since(SystemTime::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
        )
    }
}

fn stamp(cache: &Path, name: &str) -> PathBuf {
    cache.join(".used").join(name.replace('/', "+"))
}

/// Notes that a build took `entry` (a path inside `cache`) now. A stamp that cannot be
/// written does not stop the build: the entry then looks as old as it is.
pub fn mark_used(cache: &Path, entry: &Path) {
    let Ok(rel) = entry.strip_prefix(cache) else {
        return;
    };
    let name = rel
        .components()
        .take(2)
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/");
    let p = stamp(cache, &name);
    let _ = fs::create_dir_all(cache.join(".used"));
    // A fresh write moves the stamp's mtime to now.
    let _ = fs::write(&p, b"");
}

/// Every entry, largest first.
pub fn entries(cache: &Path) -> Result<Vec<Entry>> {
    let mut out = Vec::new();
    if !cache.is_dir() {
        return Ok(out);
    }
    for top in fs::read_dir(cache)? {
        let top = top?;
        let name = top.file_name().to_string_lossy().into_owned();
        if BOOKKEEPING.contains(&name.as_str()) || name.starts_with(".tmp") {
            continue;
        }
        if PER_CHILD.contains(&name.as_str()) && top.file_type()?.is_dir() {
            for child in fs::read_dir(top.path())? {
                let child = child?;
                let c = child.file_name().to_string_lossy().into_owned();
                if c.starts_with('.') {
                    continue; // locks, unpacks in progress
                }
                out.push(entry(cache, &format!("{name}/{c}"), &child.path())?);
            }
        } else {
            out.push(entry(cache, &name, &top.path())?);
        }
    }
    out.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.name.cmp(&b.name)));
    Ok(out)
}

fn entry(cache: &Path, name: &str, path: &Path) -> Result<Entry> {
    let made = fs::symlink_metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH);
    let used = fs::metadata(stamp(cache, name))
        .and_then(|m| m.modified())
        .ok();
    Ok(Entry {
        name: name.to_string(),
        bytes: size(path)?,
        last_used: used.map_or(made, |u| u.max(made)),
    })
}

/// The bytes of every regular file under `path` (links are not followed).
pub fn size(path: &Path) -> Result<u64> {
    let mut total = 0;
    for e in walkdir::WalkDir::new(path).follow_links(false) {
        let e = e.with_context(|| format!("cannot read {}", path.display()))?;
        if e.file_type().is_file() {
            total += e.metadata().map(|m| m.len()).unwrap_or(0);
        }
    }
    Ok(total)
}

/// The entries not used within `keep` before `now`: what `prune` removes.
pub fn stale(entries: &[Entry], keep: Duration, now: SystemTime) -> Vec<&Entry> {
    entries
        .iter()
        .filter(|e| now.duration_since(e.last_used).is_ok_and(|age| age > keep))
        .collect()
}

/// Removes one entry and its stamp: first renamed out of the way (one step, so no
/// build finds it half removed), then deleted.
pub fn remove(cache: &Path, name: &str) -> Result<()> {
    let path = cache.join(name);
    let trash = cache.join(format!(".tmp-removing-{}", name.replace('/', "+")));
    fs::rename(&path, &trash)?;
    let gone = if fs::symlink_metadata(&trash)?.is_dir() {
        fs::remove_dir_all(&trash)
    } else {
        fs::remove_file(&trash)
    };
    let _ = fs::remove_file(stamp(cache, name));
    gone.map_err(Into::into)
}

/// Removes the stamps under `.used/` whose entry is gone: a build stamps an entry when it
/// asks for it, before a download or an unpack that may fail or be stopped, and an
/// entry removed by hand leaves its stamp. Returns how many were removed.
pub fn remove_orphan_stamps(cache: &Path) -> Result<usize> {
    let used = cache.join(".used");
    if !used.is_dir() {
        return Ok(0);
    }
    let mut removed = 0;
    for s in fs::read_dir(&used)? {
        let s = s?;
        let name = s.file_name().to_string_lossy().replace('+', "/");
        if fs::symlink_metadata(cache.join(&name)).is_err() {
            fs::remove_file(s.path())?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// `1.7 GB`, `518 MB`, `12 kB`.
pub fn human(bytes: u64) -> String {
    let b = bytes as f64;
    match bytes {
        0..=999 => format!("{bytes} B"),
        1_000..=999_999 => format!("{:.0} kB", b / 1e3),
        1_000_000..=999_999_999 => format!("{:.0} MB", b / 1e6),
        _ => format!("{:.1} GB", b / 1e9),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch_old(p: &Path, days: u64) {
        let t = SystemTime::now() - Duration::from_secs(days * 86400);
        std::fs::File::options()
            .write(true)
            .open(p)
            .unwrap()
            .set_modified(t)
            .unwrap();
    }

    #[test]
    fn stamps_of_entries_that_are_gone_are_removed() {
        let d = tempfile::tempdir().unwrap();
        let c = d.path();
        std::fs::create_dir_all(c.join("downloads/aaaa")).unwrap();
        std::fs::write(c.join("downloads/aaaa/x.whl"), b"x").unwrap();
        mark_used(c, &c.join("downloads/aaaa/x.whl"));
        // A download that never completed, and an entry removed by hand.
        mark_used(c, &c.join("downloads/bbbb/y.whl"));
        mark_used(c, &c.join("cuda/13.0.88"));
        assert_eq!(std::fs::read_dir(c.join(".used")).unwrap().count(), 3);
        assert_eq!(remove_orphan_stamps(c).unwrap(), 2);
        let left: Vec<String> = std::fs::read_dir(c.join(".used"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, ["downloads+aaaa"]);
        assert_eq!(remove_orphan_stamps(c).unwrap(), 0);
        assert_eq!(remove_orphan_stamps(&c.join("nothing")).unwrap(), 0);
    }

    #[test]
    fn entries_sizes_last_use_and_pruning() {
        let d = tempfile::tempdir().unwrap();
        let c = d.path();
        for (f, n) in [
            ("downloads/aaaa/x.whl", 3000),
            ("downloads/bbbb/y.deb", 10),
            ("tools/cmake-4.4.4/bin/cmake", 500),
            ("cuda/13.0.88/bin/nvcc", 2000),
            ("ccache/0/1", 7),
            ("tools/.locks/cmake.lock", 1),
        ] {
            let p = c.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, vec![0u8; n]).unwrap();
        }
        // Used now, through a file inside it; the others made 40 days ago, never used since.
        mark_used(c, &c.join("downloads/aaaa/x.whl"));
        mark_used(c, &c.join("cuda/13.0.88"));
        for dir in ["downloads/bbbb", "tools/cmake-4.4.4", "ccache"] {
            let p = c.join(dir);
            let t = SystemTime::now() - Duration::from_secs(40 * 86400);
            std::fs::File::open(&p).unwrap().set_modified(t).unwrap();
        }
        let e = entries(c).unwrap();
        let names: Vec<(&str, u64)> = e.iter().map(|e| (e.name.as_str(), e.bytes)).collect();
        assert_eq!(
            names,
            [
                ("downloads/aaaa", 3000),
                ("cuda/13.0.88", 2000),
                ("tools/cmake-4.4.4", 500),
                ("downloads/bbbb", 10),
                ("ccache", 7),
            ]
        );
        let old: Vec<&str> = stale(&e, Duration::from_secs(30 * 86400), SystemTime::now())
            .iter()
            .map(|e| e.name.as_str())
            .collect();
        assert_eq!(old, ["tools/cmake-4.4.4", "downloads/bbbb", "ccache"]);
        // A stamp older than the entry does not make it look unused.
        touch_old(&stamp(c, "downloads/aaaa"), 90);
        let e = entries(c).unwrap();
        assert!(
            stale(&e, Duration::from_secs(30 * 86400), SystemTime::now())
                .iter()
                .all(|e| e.name != "downloads/aaaa")
        );

        remove(c, "tools/cmake-4.4.4").unwrap();
        remove(c, "ccache").unwrap();
        assert!(!c.join("tools/cmake-4.4.4").exists() && !c.join("ccache").exists());
        assert!(
            c.join("tools/.locks/cmake.lock").exists(),
            "bookkeeping stays"
        );
        assert_eq!(entries(c).unwrap().len(), 3);
        assert_eq!(
            (
                human(999),
                human(12_345),
                human(518_000_000),
                human(1_700_000_000)
            ),
            (
                "999 B".into(),
                "12 kB".into(),
                "518 MB".into(),
                "1.7 GB".into()
            )
        );
    }
}
