//! Downloads into a content-checked cache, and the tool trees made from them.
//!
//! Every file is checked against its pinned sha256 before anything is unpacked.
//! A mismatch refuses, names both hashes, and deletes nothing but its own temp file
//! (and the file's download dir, when that is left empty). Unpacking is
//! [`crate::provision::unpack`]'s.

use crate::report::Log;
use fs_err as fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};

use crate::digest::{sha256_file, Sha256Hex};

/// `--offline`: set once by the command line, before anything is fetched.
static OFFLINE: std::sync::OnceLock<()> = std::sync::OnceLock::new();

/// Nothing is downloaded from now on (`--offline`): a file that is not in the cache, the
/// package index's page, a manifest given by URL, each is an error that names it.
pub fn go_offline() {
    let _ = OFFLINE.set(());
}

/// What `--offline` refused: it says itself what is missing and what to do, so callers
/// pass it on without a guess of their own about the network.
#[derive(Debug, thiserror::Error)]
#[error("--offline: {0}; run once without --offline to download it (`cargo xtask cache dir` shows the cache)")]
pub struct Offline(String);

/// Where `--offline` is given, the error for `what`, which is not in the cache.
pub fn refuse_offline(what: &str) -> Result<()> {
    if OFFLINE.get().is_some() {
        return Err(Offline(what.to_string()).into());
    }
    Ok(())
}

/// The cache file for `url`: `<cache>/<sha256>/<file name>`.
pub fn cache_path(cache: &Path, url: &str, sha256: &Sha256Hex) -> PathBuf {
    let name = url
        .rsplit('/')
        .next()
        .filter(|n| !n.is_empty())
        .unwrap_or("download");
    cache.join("downloads").join(sha256.as_str()).join(name)
}

/// Returns the cached copy of `url`, downloading it first if needed.
///
/// A download holds a lock of its own (`<cache>/downloads/.locks/<sha256>.lock`) from
/// start to end: two runs that need the same file fetch it once, and a temp file found
/// in its dir while the lock is held is from a run that was killed, so it is removed.
/// (An age limit instead could delete the temp file of a download that stalls.)
pub fn fetch(cache: &Path, url: &str, sha256: &Sha256Hex, log: &Log) -> Result<PathBuf> {
    let dest = cache_path(cache, url, sha256);
    crate::provision::cache::mark_used(cache, &dest);
    if dest.is_file() {
        return check_cached(&dest, sha256).map(|()| dest);
    }
    refuse_offline(&format!(
        "{url} is not in the cache (it would be {})",
        dest.display()
    ))?;
    let _lock = lock_download(cache, sha256, log)?;
    if dest.is_file() {
        // Another run fetched it while this one waited.
        return check_cached(&dest, sha256).map(|()| dest);
    }
    let dir = dest.parent().expect("cache path has a parent");
    fs_err::create_dir_all(dir).context("cannot create the download cache dir")?;
    remove_partial(dir, log);
    let got = download(url, Some(sha256), dir, &dest, log).map(drop);
    if got.is_err() {
        // Nothing may stay behind for a failed download; only an empty dir is removed.
        let _ = fs::remove_dir(dir);
    }
    got.map(|()| dest)
}

fn check_cached(dest: &Path, sha256: &Sha256Hex) -> Result<()> {
    let got = sha256_file(dest)?;
    if &got != sha256 {
        bail!(
            "cached file {} has sha256 {got}, but the recipe pins {sha256}: it was changed or truncated; \
             delete it and run again to download it afresh",
            dest.display()
        );
    }
    Ok(())
}

/// Waits for, then holds, the lock of the download of `sha256` until the file is dropped.
fn lock_download(cache: &Path, sha256: &Sha256Hex, log: &Log) -> Result<fs_err::File> {
    let path = cache
        .join("downloads")
        .join(".locks")
        .join(format!("{}.lock", sha256.as_str()));
    hold_lock(
        &path,
        &format!("another run is downloading into {}", cache.display()),
        log,
    )
}

/// Waits for, then holds, an exclusive lock on the file `path` (made, with its dir, when
/// missing) until the returned file is dropped; says `busy` while it waits.
/// The lock file stays: deleting one could hand a lock to two runs.
pub fn hold_lock(path: &Path, busy: &str, log: &Log) -> Result<fs_err::File> {
    fs_err::create_dir_all(path.parent().expect("a lock file has a dir"))
        .context("cannot create the lock dir")?;
    let file = fs_err::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)?;
    crate::lock::take(file.file(), path, log, || {
        format!("{busy} (lock {})", path.display())
    })?;
    Ok(file)
}

/// Removes the temp files a killed download left in `dir` (`.tmp*`, as `tempfile` names
/// them). Called with that download's lock held, so none of them is being written.
fn remove_partial(dir: &Path, log: &Log) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if e.file_name().to_string_lossy().starts_with(".tmp")
            && e.file_type().is_ok_and(|t| t.is_file())
            && fs::remove_file(e.path()).is_ok()
        {
            log.line(format_args!(
                "removed {}: left by a download that was stopped",
                e.path().display()
            ));
        }
    }
}

/// A file whose publisher gives no sha256 (an upstream tag's tarball): the sha256 its first
/// download into this cache had (recorded under `<cache>/downloads/by-url/`, by the URL's
/// own sha256), and the cached file, checked against it. Trust on first use: the recorded
/// hash goes into the plan and the manifest, so a rebuild elsewhere checks its download.
pub fn fetch_first(cache: &Path, url: &str, log: &Log) -> Result<(PathBuf, Sha256Hex)> {
    let by_url = cache.join("downloads").join("by-url");
    let record = by_url.join(format!(
        "{}.sha256",
        crate::digest::sha256_bytes(url.as_bytes()).as_str()
    ));
    if let Ok(text) = fs::read_to_string(&record) {
        let sha: Sha256Hex = text.trim().parse().map_err(|e| {
            anyhow::anyhow!(
                "{}: {e}: delete it to download {url} afresh",
                record.display()
            )
        })?;
        return fetch(cache, url, &sha, log).map(|p| (p, sha));
    }
    refuse_offline(&format!(
        "{url} is not in the cache (no first download of it is recorded in {})",
        by_url.display()
    ))?;
    let first = cache.join("downloads").join(".first");
    fs::create_dir_all(&first).context("cannot create the download cache dir")?;
    let tmp = tempfile::tempdir_in(&first)
        .with_context(|| format!("cannot create a temp dir in {}", first.display()))?;
    let part = tmp.path().join("download");
    let sha = download(url, None, tmp.path(), &part, log)?;
    let dest = cache_path(cache, url, &sha);
    fs::create_dir_all(dest.parent().expect("cache path has a parent"))?;
    fs::rename(&part, &dest)?;
    fs::create_dir_all(&by_url)?;
    let mut rec = tempfile::NamedTempFile::new_in(&by_url)?;
    rec.write_all(format!("{sha}\n").as_bytes())?;
    rec.as_file().sync_all()?;
    rec.persist(&record)
        .with_context(|| format!("cannot write {}", record.display()))?;
    Ok((dest, sha))
}

/// Streams `url` into a temp file in `dir`, checks its sha256 (where one is pinned) and
/// moves it to `dest`; returns the sha256. The temp file is deleted on every error.
fn download(
    url: &str,
    sha256: Option<&Sha256Hex>,
    dir: &Path,
    dest: &Path,
    log: &Log,
) -> Result<Sha256Hex> {
    log.line(format_args!("downloading {url}"));
    let mut reader = crate::provision::http::get(url, None, None)
        .with_context(|| format!("cannot download {url}"))?;
    let total = reader.len;
    let bar = crate::progress::bytes(total, url.rsplit('/').next().unwrap_or(url), log.bars());
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot create a temp file in {}", dir.display()))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = reader
            .read(&mut buf)
            .with_context(|| format!("download of {url} broke off"))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        tmp.write_all(&buf[..n])
            .with_context(|| format!("cannot write {}", tmp.path().display()))?;
        bar.inc(n as u64);
    }
    bar.finish_and_clear();
    let got: Sha256Hex = hex::encode(hasher.finalize()).parse().expect("hex digest");
    if let Some(sha256) = sha256.filter(|s| **s != got) {
        bail!("{url} has sha256 {got}, but the recipe pins {sha256}: refusing to use it (nothing was unpacked)");
    }
    tmp.as_file()
        .sync_all()
        .with_context(|| format!("cannot write {} to the disk", tmp.path().display()))?;
    tmp.persist(dest)
        .with_context(|| format!("cannot move download into {}", dest.display()))?;
    if let Some(dir) = dest.parent() {
        crate::durable::sync_dir(dir)?;
    }
    Ok(got)
}
/// The tool tree `<tools>/<id>`, made by `make` unless the one there passes `usable` (its
/// record, and whatever else the caller checks). `make` fills a fresh temp dir beside it,
/// under the tree's lock (another run may have made the tree while this one waited); the
/// temp dir is recorded ([`crate::provision::tree::write`]) and moved into place, replacing
/// what was there after a warning that says what differed and then `again`. `busy` is said
/// while the lock is waited for.
pub fn ensure_tree(
    tools: &Path,
    id: &str,
    usable: impl Fn(&Path) -> Result<()>,
    busy: &str,
    again: &str,
    make: impl FnOnce(&Path) -> Result<()>,
    log: &Log,
) -> Result<PathBuf> {
    let root = tools.join(id);
    // `tools` is `<cache>/tools`: the entry's last use is stamped in the cache.
    if let Some(cache) = tools.parent() {
        crate::provision::cache::mark_used(cache, &root);
    }
    if usable(&root).is_ok() {
        return Ok(root);
    }
    let _lock = hold_lock(&tools.join(".locks").join(format!("{id}.lock")), busy, log)?;
    if let Err(why) = usable(&root) {
        if fs::symlink_metadata(&root).is_ok() {
            log.warning(format_args!("{why:#}: {again}"));
        }
        let tmp = fresh_unpack_dir(tools, id)?;
        make(tmp.path())?;
        crate::provision::tree::write(tmp.path())?;
        crate::durable::sync_tree(tmp.path())?;
        if fs::symlink_metadata(&root).is_ok() {
            // remove_dir_all removes a link itself, not what it points at.
            fs::remove_dir_all(&root)
                .or_else(|_| fs::remove_file(&root))
                .with_context(|| format!("cannot remove {}", root.display()))?;
        }
        fs::rename(tmp.keep(), &root)?;
        crate::durable::sync_dir(tools)?;
    }
    Ok(root)
}

/// A new temp dir `<parent>/.unpack-<id>-XXXX` to make a tool's tree in before it is moved
/// into place. Called with the tool's lock held: a temp dir of this `id` found there is from
/// a run that was killed, and is removed first.
fn fresh_unpack_dir(parent: &Path, id: &str) -> Result<tempfile::TempDir> {
    fs_err::create_dir_all(parent)?;
    let prefix = format!(".unpack-{id}-");
    for e in fs_err::read_dir(parent).into_iter().flatten().flatten() {
        if e.file_name().to_string_lossy().starts_with(&prefix) {
            let _ = fs_err::remove_dir_all(e.path());
        }
    }
    tempfile::Builder::new()
        .prefix(&prefix)
        .tempdir_in(parent)
        .with_context(|| format!("cannot create a temp dir in {}", parent.display()))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::digest::sha256_bytes;
    use crate::provision::unpack::tests::leftovers;

    #[test]
    fn checksum_mismatch_names_both_hashes_and_keeps_other_files() {
        let d = tempfile::tempdir().unwrap();
        let pin: Sha256Hex = "00".repeat(32).parse().unwrap();
        let cached = cache_path(d.path(), "https://example.invalid/x.tar.gz", &pin);
        fs::create_dir_all(cached.parent().unwrap()).unwrap();
        fs::write(&cached, b"tampered").unwrap();
        let e = fetch(
            d.path(),
            "https://example.invalid/x.tar.gz",
            &pin,
            &Log::stderr(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains(pin.as_str()) && e.contains(sha256_bytes(b"tampered").as_str()),
            "{e}"
        );
        assert!(cached.exists(), "a mismatch deletes nothing");
    }

    /// Serves `body` to one HTTP GET on 127.0.0.1; returns the URL.
    fn serve_once(body: &'static [u8]) -> String {
        use std::io::BufRead;
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/tool-1.0.whl", l.local_addr().unwrap());
        std::thread::spawn(move || {
            let (s, _) = l.accept().unwrap();
            let mut r = std::io::BufReader::new(s.try_clone().unwrap());
            let mut line = String::new();
            while r.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let mut s = s;
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = s.write_all(body);
        });
        url
    }

    #[test]
    fn a_wrong_download_leaves_no_dir_behind() {
        let d = tempfile::tempdir().unwrap();
        let pin = sha256_bytes(b"the pinned bytes");
        let url = serve_once(b"other bytes");
        let e = fetch(d.path(), &url, &pin, &Log::stderr())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(pin.as_str()) && e.contains(sha256_bytes(b"other bytes").as_str()),
            "{e}"
        );
        let dir = cache_path(d.path(), &url, &pin)
            .parent()
            .unwrap()
            .to_path_buf();
        assert!(
            !dir.exists(),
            "{} stays after a failed download",
            dir.display()
        );
        // Nor after a download that cannot start.
        let e = fetch(d.path(), "http://127.0.0.1:1/x.whl", &pin, &Log::stderr())
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot download"), "{e}");
        assert!(
            !dir.exists(),
            "{} stays after a failed download",
            dir.display()
        );
        assert_eq!(
            leftovers(&d.path().join("downloads")).len(),
            1,
            "only the lock file: {:?}",
            leftovers(d.path())
        );
    }

    #[test]
    fn a_killed_download_is_cleaned_up_by_the_next_but_a_running_one_is_not() {
        let d = tempfile::tempdir().unwrap();
        let pin = sha256_bytes(b"the pinned bytes");
        let url = serve_once(b"the pinned bytes");
        let dir = cache_path(d.path(), &url, &pin)
            .parent()
            .unwrap()
            .to_path_buf();
        fs::create_dir_all(&dir).unwrap();
        let partial = dir.join(".tmpAbC123");
        fs::write(&partial, b"the pin").unwrap();
        // While another run holds the download's lock, its temp file is left alone.
        let held = lock_download(d.path(), &pin, &Log::stderr()).unwrap();
        let cache = d.path().to_path_buf();
        let (u, p) = (url.clone(), pin.clone());
        let waiting = std::thread::spawn(move || fetch(&cache, &u, &p, &Log::stderr()));
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(
            partial.exists() && !waiting.is_finished(),
            "the second fetch waits for the lock"
        );
        drop(held);
        // Once it is free, the temp file is from a run that is gone.
        let got = waiting.join().unwrap().unwrap();
        assert_eq!(fs::read(&got).unwrap(), b"the pinned bytes");
        assert!(!partial.exists(), "{} left behind", partial.display());
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
    }
}
