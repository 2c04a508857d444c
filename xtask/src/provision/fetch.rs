//! Downloads into a content-checked cache, and safe unpacking of archives.
//!
//! Every file is checked against its pinned sha256 before anything is unpacked.
//! A mismatch refuses, names both hashes, and deletes nothing but its own temp file
//! (and the file's download dir, when that is left empty).
//!
//! Unpacking writes under the target dir only, and never through a link: every
//! directory on an entry's path is looked at (not followed) before the entry is
//! written, and one that is a link refuses the archive; files and links are created
//! new, so a name that already exists (an entry given twice, a link replaced by a
//! file) refuses it too; and every symlink is resolved through the links of the tree
//! as it stands, when it is made and again once all entries are in, so that no order
//! of entries leaves a link pointing outside. Hard links to a file unpacked before
//! are made as copies; devices, FIFOs and anything else are refused. A refused
//! archive leaves nothing behind: the target dir, when this call made it, is removed.

use crate::report::Log;
use fs_err as fs;
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Component, Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use sha2::{Digest, Sha256};

use crate::digest::{sha256_file, Sha256Hex};

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
    let _lock = lock_download(cache, sha256, log)?;
    if dest.is_file() {
        // Another run fetched it while this one waited.
        return check_cached(&dest, sha256).map(|()| dest);
    }
    let dir = dest.parent().expect("cache path has a parent");
    fs_err::create_dir_all(dir).context("cannot create the download cache dir")?;
    remove_partial(dir, log);
    let got = download(url, sha256, dir, &dest, log);
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

/// Streams `url` into a temp file in `dir`, checks its sha256 and moves it to `dest`.
/// The temp file is deleted on every error.
fn download(url: &str, sha256: &Sha256Hex, dir: &Path, dest: &Path, log: &Log) -> Result<()> {
    log.line(format_args!("downloading {url}"));
    let agent = ureq::AgentBuilder::new()
        .timeout_connect(std::time::Duration::from_secs(30))
        .build();
    let resp = agent
        .get(url)
        .call()
        .with_context(|| format!("cannot download {url}"))?;
    let total: Option<u64> = resp.header("Content-Length").and_then(|v| v.parse().ok());
    let bar = crate::progress::bytes(total, url.rsplit('/').next().unwrap_or(url), log.bars());
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot create a temp file in {}", dir.display()))?;
    let mut hasher = Sha256::new();
    let mut reader = resp.into_reader();
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
    if &got != sha256 {
        bail!("{url} has sha256 {got}, but the recipe pins {sha256}: refusing to use it (nothing was unpacked)");
    }
    tmp.persist(dest)
        .with_context(|| format!("cannot move download into {}", dest.display()))?;
    Ok(())
}

/// A relative path inside an archive, or why it could land outside the target dir.
fn safe_relative(p: &Path) -> Result<PathBuf, &'static str> {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::Normal(s) => out.push(s),
            Component::CurDir => {}
            Component::ParentDir => return Err("would land outside the target dir (it has `..`)"),
            Component::RootDir | Component::Prefix(_) => {
                return Err("would land outside the target dir (it is an absolute path)")
            }
        }
    }
    Ok(out)
}

/// Follows a link's `target`, written in the dir `from` (both relative to `root`), through
/// the tree as it stands now, links included. Returns where it lands, relative to `root`,
/// or why it does not stay inside. Names that do not exist yet are taken as plain dirs:
/// the check is repeated once the whole archive is in.
fn resolve(
    root: &Path,
    from: &Path,
    target: &Path,
    hops: &mut u32,
) -> Result<PathBuf, &'static str> {
    let mut at: Vec<OsString> = from
        .components()
        .map(|c| c.as_os_str().to_owned())
        .collect();
    for c in target.components() {
        match c {
            Component::RootDir | Component::Prefix(_) => {
                return Err("points outside the tree (an absolute path)")
            }
            Component::CurDir => {}
            Component::ParentDir => {
                if at.pop().is_none() {
                    return Err("points outside the tree");
                }
            }
            Component::Normal(s) => {
                at.push(s.to_owned());
                let here = root.join(at.iter().collect::<PathBuf>());
                if fs::symlink_metadata(&here).is_ok_and(|m| m.file_type().is_symlink()) {
                    *hops += 1;
                    if *hops > 40 {
                        return Err("is a loop of links");
                    }
                    let next = fs::read_link(&here)
                        .map_err(|_| "goes through a link that cannot be read")?;
                    at.pop();
                    let dir: PathBuf = at.iter().collect();
                    at = resolve(root, &dir, &next, hops)?
                        .components()
                        .map(|c| c.as_os_str().to_owned())
                        .collect();
                }
            }
        }
    }
    Ok(at.iter().collect())
}

/// Writes the entries of one archive under `root`, never through a link (see the module doc).
struct Unpack<'a> {
    archive: &'a Path,
    root: &'a Path,
    /// The symlinks made, relative to `root`, with the entry that made each: checked again at the end.
    links: Vec<(PathBuf, String)>,
}

impl<'a> Unpack<'a> {
    fn new(archive: &'a Path, root: &'a Path) -> Unpack<'a> {
        Unpack {
            archive,
            root,
            links: Vec::new(),
        }
    }

    fn refuse(&self, entry: &str, why: impl std::fmt::Display) -> anyhow::Error {
        anyhow!(
            "archive {}: entry `{entry}` {why}: refusing to unpack it. An archive of a source or a tool holds only files, \
             dirs and links that stay inside it; this one is damaged or made to write elsewhere: do not use it",
            self.archive.display()
        )
    }

    /// Makes every component of `rel` a real dir under the root (creating those missing
    /// when `create`), refusing any that is a link or a file.
    fn dirs(&self, entry: &str, rel: &Path, create: bool) -> Result<()> {
        let mut here = PathBuf::new();
        for c in rel.components() {
            here.push(c);
            let p = self.root.join(&here);
            match fs::symlink_metadata(&p) {
                Ok(m) if m.is_dir() => {}
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(self.refuse(
                        entry,
                        format_args!(
                            "goes through the symlink `{}`: nothing is written through a link",
                            here.display()
                        ),
                    ))
                }
                Ok(_) => {
                    return Err(self.refuse(
                        entry,
                        format_args!(
                            "goes through `{}`, which is not a directory",
                            here.display()
                        ),
                    ))
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound && create => fs_err::create_dir(&p)?,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Err(self.refuse(
                        entry,
                        format_args!(
                            "goes through `{}`, which no entry before it made",
                            here.display()
                        ),
                    ))
                }
                Err(e) => return Err(e).with_context(|| format!("cannot look at {}", p.display())),
            }
        }
        Ok(())
    }

    fn exists_already(&self, entry: &str, rel: &Path) -> anyhow::Error {
        self.refuse(
            entry,
            format_args!(
                "names `{}`, which an entry before it already made",
                rel.display()
            ),
        )
    }

    /// A new regular file at `rel` with the contents of `data`.
    fn file(&self, entry: &str, rel: &Path, data: &mut dyn Read, exec: bool) -> Result<()> {
        self.dirs(entry, rel.parent().unwrap_or(Path::new("")), true)?;
        let out = self.root.join(rel);
        // create_new (O_EXCL) neither follows nor replaces whatever is there, a link included.
        let mut w = match fs_err::File::create_new(&out) {
            Ok(w) => w,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                return Err(self.exists_already(entry, rel))
            }
            Err(e) => return Err(e.into()),
        };
        io::copy(data, &mut w).with_context(|| {
            format!(
                "cannot unpack `{entry}` of {} into {}",
                self.archive.display(),
                out.display()
            )
        })?;
        set_file_mode(&w, if exec { 0o755 } else { 0o644 })?;
        Ok(())
    }

    /// A symlink at `rel` to `target`, which must stay inside the root.
    fn symlink(&mut self, entry: &str, rel: &Path, target: &Path) -> Result<()> {
        if target.as_os_str().is_empty() {
            return Err(self.refuse(entry, "is a symlink with no target"));
        }
        self.dirs(entry, rel.parent().unwrap_or(Path::new("")), true)?;
        self.check_link(entry, rel, target)?;
        match make_symlink(target, &self.root.join(rel)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                return Err(self.exists_already(entry, rel))
            }
            Err(e) => {
                return Err(e).with_context(|| {
                    format!("cannot make the link {}", self.root.join(rel).display())
                })
            }
        }
        if cfg!(unix) {
            self.links.push((rel.to_path_buf(), entry.to_string()));
        }
        Ok(())
    }

    fn check_link(&self, entry: &str, rel: &Path, target: &Path) -> Result<()> {
        let from = rel.parent().unwrap_or(Path::new(""));
        resolve(self.root, from, target, &mut 0)
            .map(drop)
            .map_err(|why| {
                self.refuse(
                    entry,
                    format_args!("is a symlink to `{}` that {why}", target.display()),
                )
            })
    }

    /// A hard link at `rel` to `target` (relative to the root): made as a copy of a regular
    /// file an entry before it unpacked, reached without going through a link.
    /// `named` is the target as the archive gives it, for messages.
    fn hardlink(&self, entry: &str, rel: &Path, target: &Path, named: &Path) -> Result<()> {
        let not_a_file = || {
            self.refuse(
                entry,
                format_args!(
                    "is a hard link to `{}`, which is not a file unpacked before it",
                    named.display()
                ),
            )
        };
        self.dirs(entry, target.parent().unwrap_or(Path::new("")), false)?;
        let src = self.root.join(target);
        let meta = fs::symlink_metadata(&src).map_err(|_| not_a_file())?;
        if !meta.is_file() {
            return Err(not_a_file());
        }
        let mut from = open_nofollow(&src)?;
        self.file(
            entry,
            rel,
            &mut from,
            crate::provision::tree::is_exec(&meta),
        )
    }

    /// Checks every link again, now that all entries are in: a link made early may
    /// lead outside through links made after it.
    fn finish(&self) -> Result<()> {
        for (rel, entry) in &self.links {
            let target = fs_err::read_link(self.root.join(rel))?;
            self.check_link(entry, rel, &target)?;
        }
        Ok(())
    }
}

/// Makes the dir entries are unpacked into, which must be a dir of its own, not a link.
fn make_root(dest: &Path) -> Result<()> {
    fs_err::create_dir_all(dest)?;
    if !fs_err::symlink_metadata(dest)?.is_dir() {
        bail!(
            "{} is a link, not a dir: refusing to unpack into it; remove it and run again",
            dest.display()
        );
    }
    Ok(())
}

/// Runs `unpack` into `dest`; when it fails, removes `dest` if this call made it.
fn cleaning_up<T>(dest: &Path, unpack: impl FnOnce() -> Result<T>) -> Result<T> {
    let made = fs::symlink_metadata(dest).is_err();
    let got = unpack();
    if got.is_err() && made {
        let _ = fs::remove_dir_all(dest);
    }
    got
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
        if fs::symlink_metadata(&root).is_ok() {
            // remove_dir_all removes a link itself, not what it points at.
            fs::remove_dir_all(&root)
                .or_else(|_| fs::remove_file(&root))
                .with_context(|| format!("cannot remove {}", root.display()))?;
        }
        fs::rename(tmp.keep(), &root)?;
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

/// Unpacks the entries of a `.tar.gz` under `strip/` into `dest` (which must not exist yet).
/// Returns the newest entry mtime (a pinned source's `date` must be later: [`crate::recipe::date_problem`]).
pub fn unpack_tar_gz(archive: &Path, strip: &str, dest: &Path) -> Result<u64> {
    cleaning_up(dest, || unpack_tar_gz_into(archive, strip, dest))
}

fn unpack_tar_gz_into(archive: &Path, strip: &str, dest: &Path) -> Result<u64> {
    let f = fs_err::File::open(archive)?;
    let tar = flate2::read::GzDecoder::new(io::BufReader::new(f));
    unpack_tar_into(archive, tar, "tar.gz", strip, dest)
}

/// Unpacks the files of a Debian package (`.deb`: an `ar` archive whose `data.tar.xz`
/// holds them, named from the root) into `dest`, which may hold other packages' files
/// already: a file another package unpacked there refuses this one, as with dpkg. The
/// same checks as [`unpack_tar_gz`] apply (nothing outside `dest`, nothing through a link,
/// no devices). On failure `dest` may hold part of the package: unpack into a temp dir.
pub fn unpack_deb(deb: &Path, dest: &Path) -> Result<()> {
    let not_deb = || format!("{} is not a Debian package (.deb)", deb.display());
    let bytes = fs_err::read(deb)?;
    let ar = object::read::archive::ArchiveFile::parse(&*bytes).with_context(not_deb)?;
    for member in ar.members() {
        let member = member.with_context(not_deb)?;
        let name = String::from_utf8_lossy(member.name()).into_owned();
        if !name.starts_with("data.tar") {
            continue;
        }
        if name != "data.tar.xz" {
            bail!(
                "{}: its files are in `{name}`; only data.tar.xz is read (Debian 12's packages use it)",
                deb.display()
            );
        }
        // lzma-rs decodes from a BufRead into a Write: into memory (a compiler's package is
        // under 100 MB unpacked), stopped at 64 times the packed size (xz reaches 10 on
        // binaries) so an archive made to fill memory cannot.
        let data = member.data(&*bytes).with_context(not_deb)?;
        let packed = data.len() as u64;
        let mut tar = Capped {
            buf: Vec::new(),
            limit: packed.saturating_mul(64).max(1 << 20),
        };
        lzma_rs::xz_decompress(&mut io::BufReader::new(data), &mut tar).with_context(|| {
            format!(
                "{}: data.tar.xz does not decode, or unpacks to more than {} bytes from {packed}",
                deb.display(),
                tar.limit
            )
        })?;
        let tar = tar.buf;
        unpack_tar_into(deb, io::Cursor::new(tar), "deb", "", dest)?;
        return Ok(());
    }
    bail!("{}: no data.tar.xz member", not_deb())
}

/// A writer into memory that fails once more than `limit` bytes came.
struct Capped {
    buf: Vec<u8>,
    limit: u64,
}

impl Write for Capped {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.buf.len() as u64 + data.len() as u64 > self.limit {
            return Err(io::Error::other(format!("more than {} bytes", self.limit)));
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The entries of a tar stream under `strip/` into `dest`; `kind` names the archive's
/// format in messages. Returns the newest entry mtime.
fn unpack_tar_into(
    archive: &Path,
    tar: impl Read,
    kind: &str,
    strip: &str,
    dest: &Path,
) -> Result<u64> {
    use tar::EntryType as T;
    let mut ar = tar::Archive::new(tar);
    let strip = Path::new(strip);
    make_root(dest)?;
    let mut u = Unpack::new(archive, dest);
    let mut newest = 0u64;
    let mut count = 0usize;
    for entry in ar
        .entries()
        .with_context(|| format!("{} is not a {kind} archive", archive.display()))?
    {
        let mut entry = entry.with_context(|| format!("corrupt entry in {}", archive.display()))?;
        let kind = entry.header().entry_type();
        // Headers that describe other entries (git archive's commit id is a global pax header).
        if matches!(
            kind,
            T::XGlobalHeader | T::XHeader | T::GNULongName | T::GNULongLink
        ) {
            continue;
        }
        let path = entry
            .path()
            .with_context(|| format!("corrupt entry name in {}", archive.display()))?
            .into_owned();
        let name = path.display().to_string();
        // `..` and absolute names are refused anywhere; entries outside `strip/` are not unpacked.
        let full = safe_relative(&path).map_err(|why| u.refuse(&name, why))?;
        let Ok(rel) = full.strip_prefix(strip) else {
            continue;
        };
        let rel = rel.to_path_buf();
        if rel.as_os_str().is_empty() {
            continue;
        }
        newest = newest.max(entry.header().mtime().unwrap_or(0));
        match kind {
            T::Directory => u.dirs(&name, &rel, true)?,
            T::Regular | T::Continuous => {
                let exec = entry.header().mode().unwrap_or(0o644) & 0o111 != 0;
                u.file(&name, &rel, &mut entry, exec)?;
            }
            T::Symlink => {
                let target = entry
                    .link_name()?
                    .map(|t| t.into_owned())
                    .unwrap_or_default();
                u.symlink(&name, &rel, &target)?;
            }
            T::Link => {
                let target = entry
                    .link_name()?
                    .map(|t| t.into_owned())
                    .unwrap_or_default();
                let full = safe_relative(&target).map_err(|why| {
                    u.refuse(
                        &name,
                        format_args!("is a hard link to `{}`, which {why}", target.display()),
                    )
                })?;
                let inside = full.strip_prefix(strip).map_err(|_| {
                    u.refuse(
                        &name,
                        format_args!(
                            "is a hard link to `{}`, outside `{}/`",
                            target.display(),
                            strip.display()
                        ),
                    )
                })?;
                u.hardlink(&name, &rel, inside, &target)?;
            }
            other => return Err(u.refuse(&name, format_args!("is {}", tar_kind(other)))),
        }
        count += 1;
    }
    u.finish()?;
    if count == 0 {
        bail!(
            "archive {} has nothing under `{}/`: check the recipe's `strip`",
            archive.display(),
            strip.display()
        );
    }
    Ok(newest)
}

fn tar_kind(kind: tar::EntryType) -> String {
    use tar::EntryType as T;
    match kind {
        T::Char => "a character device".into(),
        T::Block => "a block device".into(),
        T::Fifo => "a FIFO (named pipe)".into(),
        T::GNUSparse => "a sparse file".into(),
        other => format!(
            "an entry of type {:?} (`{}`)",
            other,
            other.as_byte() as char
        ),
    }
}

/// Unpacks a zip (a wheel) into `dest`, with the same checks. A wheel holds files and
/// dirs only: links, devices and FIFOs (by their Unix mode) are refused, and so are
/// names with a backslash and names given twice.
pub fn unpack_zip(archive: &Path, dest: &Path) -> Result<()> {
    cleaning_up(dest, || unpack_zip_into(archive, dest))
}

fn unpack_zip_into(archive: &Path, dest: &Path) -> Result<()> {
    let f = fs_err::File::open(archive)?;
    let mut zip = zip::ZipArchive::new(f)
        .with_context(|| format!("{} is not a zip archive", archive.display()))?;
    let u = Unpack::new(archive, dest);
    // The zip reader keeps one entry per name: look for names given twice in the raw directory.
    let start = zip.central_directory_start();
    let raw = central_names(&mut io::BufReader::new(fs_err::File::open(archive)?), start)
        .with_context(|| format!("cannot read the directory of {}", archive.display()))?;
    let mut raw_seen = BTreeSet::new();
    if let Some(twice) = raw.iter().find(|n| !raw_seen.insert(n.as_slice())) {
        return Err(u.refuse(
            &String::from_utf8_lossy(twice),
            "appears twice in the archive",
        ));
    }
    if raw.len() != zip.len() {
        bail!(
            "archive {}: its directory lists {} entries but only {} distinct names (two entries share a name): refusing to unpack it",
            archive.display(),
            raw.len(),
            zip.len()
        );
    }
    make_root(dest)?;
    let mut seen = BTreeSet::new();
    for i in 0..zip.len() {
        let mut e = zip
            .by_index(i)
            .with_context(|| format!("corrupt entry {i} in {}", archive.display()))?;
        let name = e.name().to_string();
        if name.contains('\\') {
            return Err(u.refuse(&name, "has a `\\` in its name: zip names separate dirs with `/`, and Windows would read it as a separator"));
        }
        let rel = safe_relative(Path::new(&name)).map_err(|why| u.refuse(&name, why))?;
        if rel.as_os_str().is_empty() {
            continue;
        }
        if !seen.insert(rel.clone()) {
            return Err(u.refuse(&name, format_args!("names `{}` again", rel.display())));
        }
        let mode = e.unix_mode().unwrap_or(0);
        match mode & 0o170000 {
            0 | 0o100000 | 0o040000 => {}
            0o120000 => {
                return Err(u.refuse(&name, "is a symlink: a wheel holds files and dirs only"))
            }
            0o020000 => return Err(u.refuse(&name, "is a character device")),
            0o060000 => return Err(u.refuse(&name, "is a block device")),
            0o010000 => return Err(u.refuse(&name, "is a FIFO (named pipe)")),
            t => {
                return Err(u.refuse(
                    &name,
                    format_args!("has Unix file type {t:o}, not a file or dir"),
                ))
            }
        }
        if e.is_dir() || mode & 0o170000 == 0o040000 {
            u.dirs(&name, &rel, true)?;
            continue;
        }
        u.file(&name, &rel, &mut e, mode & 0o111 != 0)?;
    }
    u.finish()
}

/// The raw names in a zip's central directory, in order, duplicates kept.
fn central_names<R: Read + Seek>(r: &mut R, start: u64) -> io::Result<Vec<Vec<u8>>> {
    const CENTRAL_HEADER: u32 = 0x0201_4b50;
    r.seek(SeekFrom::Start(start))?;
    let mut out = Vec::new();
    let mut fixed = [0u8; 46];
    loop {
        if r.read_exact(&mut fixed[..4]).is_err()
            || u32::from_le_bytes(fixed[..4].try_into().expect("4 bytes")) != CENTRAL_HEADER
        {
            return Ok(out);
        }
        r.read_exact(&mut fixed[4..])?;
        let len = |at: usize| u16::from_le_bytes([fixed[at], fixed[at + 1]]) as usize;
        let (name_len, extra_len, comment_len) = (len(28), len(30), len(32));
        let mut name = vec![0u8; name_len];
        r.read_exact(&mut name)?;
        r.seek(SeekFrom::Current((extra_len + comment_len) as i64))?;
        out.push(name);
    }
}

#[cfg(unix)]
pub fn set_mode(p: &Path, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(p, std::fs::Permissions::from_mode(mode))
}
#[cfg(not(unix))]
pub fn set_mode(_: &Path, _: u32) -> io::Result<()> {
    Ok(())
}

#[cfg(unix)]
fn set_file_mode(f: &fs_err::File, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    f.set_permissions(std::fs::Permissions::from_mode(mode))
}
#[cfg(not(unix))]
fn set_file_mode(_: &fs_err::File, _: u32) -> io::Result<()> {
    Ok(())
}

#[cfg(unix)]
fn open_nofollow(p: &Path) -> io::Result<fs_err::File> {
    use fs_err::os::unix::fs::OpenOptionsExt;
    fs_err::OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
        .open(p)
}
#[cfg(not(unix))]
fn open_nofollow(p: &Path) -> io::Result<fs_err::File> {
    fs_err::File::open(p)
}

#[cfg(unix)]
fn make_symlink(target: &Path, link: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}
/// Links are skipped where they cannot be made (and builds do not run there yet).
#[cfg(not(unix))]
fn make_symlink(_: &Path, _: &Path) -> io::Result<()> {
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::digest::sha256_bytes;
    use tar::EntryType as T;

    fn tar_gz(entries: &[(&str, tar::EntryType, &[u8], Option<&str>)]) -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().unwrap();
        let gz = flate2::write::GzEncoder::new(f.reopen().unwrap(), flate2::Compression::fast());
        let mut b = tar::Builder::new(gz);
        for (path, kind, data, link) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(*kind);
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_mtime(1_700_000_000);
            // Write the raw name so that hostile paths reach the reader unchanged.
            let name = path.as_bytes();
            h.as_old_mut().name[..name.len()].copy_from_slice(name);
            if let Some(l) = link {
                h.set_link_name(l).unwrap();
            }
            h.set_cksum();
            b.append(&h, *data).unwrap();
        }
        b.into_inner().unwrap().finish().unwrap();
        f
    }

    /// A Debian package: an ar archive of `debian-binary`, `control.tar.xz` and `data`
    /// (named `data_name`), the tar of `entries` compressed with xz.
    fn deb(
        entries: &[(&str, tar::EntryType, &[u8], Option<&str>)],
        data_name: &str,
    ) -> tempfile::NamedTempFile {
        let gz = tar_gz(entries);
        let mut tar = Vec::new();
        io::copy(
            &mut flate2::read::GzDecoder::new(fs::File::open(gz.path()).unwrap()),
            &mut tar,
        )
        .unwrap();
        let mut xz = Vec::new();
        lzma_rs::xz_compress(&mut io::Cursor::new(&tar), &mut xz).unwrap();
        let mut ar = b"!<arch>\n".to_vec();
        for (name, data) in [
            ("debian-binary", &b"2.0\n"[..]),
            ("control.tar.xz", b""),
            (data_name, &xz),
        ] {
            ar.extend(
                format!(
                    "{:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
                    name,
                    0,
                    0,
                    0,
                    100644,
                    data.len()
                )
                .as_bytes(),
            );
            ar.extend_from_slice(data);
            if data.len() % 2 == 1 {
                ar.push(b'\n');
            }
        }
        let f = tempfile::NamedTempFile::new().unwrap();
        fs::write(f.path(), ar).unwrap();
        f
    }

    #[test]
    fn debian_packages_unpack_into_one_tree_and_never_over_each_other() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("root");
        let gcc = deb(
            &[
                ("./usr/", T::Directory, b"", None),
                ("./usr/bin/gcc-12", T::Regular, b"gcc", None),
                (
                    "./usr/bin/x86_64-linux-gnu-gcc-12",
                    T::Symlink,
                    b"",
                    Some("gcc-12"),
                ),
            ],
            "data.tar.xz",
        );
        let lib = deb(
            &[("./usr/lib/libisl.so.23", T::Regular, b"isl", None)],
            "data.tar.xz",
        );
        unpack_deb(gcc.path(), &root).unwrap();
        unpack_deb(lib.path(), &root).unwrap();
        assert_eq!(
            fs::read(root.join("usr/bin/x86_64-linux-gnu-gcc-12")).unwrap(),
            b"gcc"
        );
        assert_eq!(fs::read(root.join("usr/lib/libisl.so.23")).unwrap(), b"isl");
        // A file another package unpacked already: refused, as dpkg refuses it.
        let clash = deb(
            &[("./usr/bin/gcc-12", T::Regular, b"evil", None)],
            "data.tar.xz",
        );
        let e = format!("{:#}", unpack_deb(clash.path(), &root).unwrap_err());
        assert!(
            e.contains("`./usr/bin/gcc-12`") && e.contains("already made"),
            "{e}"
        );
        assert_eq!(fs::read(root.join("usr/bin/gcc-12")).unwrap(), b"gcc");
        // Through a link of another package, or outside: refused.
        let through = deb(
            &[(
                "./usr/bin/x86_64-linux-gnu-gcc-12/x",
                T::Regular,
                b"x",
                None,
            )],
            "data.tar.xz",
        );
        assert!(
            format!("{:#}", unpack_deb(through.path(), &root).unwrap_err()).contains("symlink")
        );
        let out = deb(
            &[("./usr/lib/up", T::Symlink, b"", Some("../../.."))],
            "data.tar.xz",
        );
        assert!(format!("{:#}", unpack_deb(out.path(), &root).unwrap_err()).contains("outside"));
        // Another compression, and a file that is no package at all.
        let zst = deb(&[("./a", T::Regular, b"a", None)], "data.tar.zst");
        assert!(format!("{:#}", unpack_deb(zst.path(), &root).unwrap_err())
            .contains("only data.tar.xz"));
        let not = tempfile::NamedTempFile::new().unwrap();
        fs::write(not.path(), b"PK\x03\x04").unwrap();
        assert!(format!("{:#}", unpack_deb(not.path(), &root).unwrap_err())
            .contains("not a Debian package"));
    }

    #[test]
    fn a_debian_package_that_unpacks_to_far_more_than_it_holds_is_refused() {
        // 64 MiB of zeros as one file, xz -9 (made with Python's lzma; lzma-rs's own encoder
        // does not compress): a few kB that would unpack to 64 MiB.
        let bomb = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/deb/bomb.deb");
        assert!(fs::metadata(&bomb).unwrap().len() < 64 << 10);
        let d = tempfile::tempdir().unwrap();
        let e = format!(
            "{:#}",
            unpack_deb(&bomb, &d.path().join("root")).unwrap_err()
        );
        assert!(e.contains("unpacks to more than"), "{e}");
    }

    /// Everything under `d` that is not a dir: what an unpack left behind.
    fn leftovers(d: &Path) -> Vec<PathBuf> {
        walkdir::WalkDir::new(d)
            .into_iter()
            .map(|e| e.unwrap())
            .filter(|e| !e.file_type().is_dir())
            .map(|e| e.into_path())
            .collect()
    }

    /// Unpacks `entries` (under `pkg-1/`) into `<tmp>/w/x/src`, three levels below the
    /// temp dir, expecting a refusal; returns the message after checking that it names the
    /// archive and `entry`, and that nothing at all is left in the temp dir.
    fn refused(entries: &[(&str, tar::EntryType, &[u8], Option<&str>)], entry: &str) -> String {
        let a = tar_gz(entries);
        let d = tempfile::tempdir().unwrap();
        let dest = d.path().join("w/x/src");
        fs::create_dir_all(dest.parent().unwrap()).unwrap();
        let e = format!("{:#}", unpack_tar_gz(a.path(), "pkg-1", &dest).unwrap_err());
        assert!(
            e.contains(&a.path().display().to_string()),
            "names the archive: {e}"
        );
        assert!(
            e.contains(&format!("`{entry}`")),
            "names the entry {entry}: {e}"
        );
        assert!(!dest.exists(), "a refused unpack removes what it made");
        assert_eq!(leftovers(d.path()), Vec::<PathBuf>::new(), "{e}");
        e
    }

    #[test]
    fn unpacks_under_strip_prefix() {
        let a = tar_gz(&[
            (
                "pax_global_header",
                T::XGlobalHeader,
                b"52 comment=0000000000000000000000000000000000000000\n",
                None,
            ),
            ("pkg-1/a.txt", T::Regular, b"hi", None),
            ("pkg-1/sub/b.txt", T::Regular, b"yo", None),
            ("other/c.txt", T::Regular, b"no", None),
            ("pkg-1/sub/ok", T::Symlink, b"", Some("../a.txt")),
            ("pkg-1/sub/dir", T::Symlink, b"", Some(".")),
            ("pkg-1/sub/chain", T::Symlink, b"", Some("dir/dir/b.txt")),
            ("pkg-1/hard.txt", T::Link, b"", Some("pkg-1/sub/b.txt")),
        ]);
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("src");
        assert_eq!(
            unpack_tar_gz(a.path(), "pkg-1", &out).unwrap(),
            1_700_000_000
        );
        assert_eq!(fs::read(out.join("sub/b.txt")).unwrap(), b"yo");
        assert_eq!(fs::read(out.join("sub/ok")).unwrap(), b"hi");
        assert_eq!(fs::read(out.join("sub/chain")).unwrap(), b"yo");
        assert!(!out.join("other").exists() && !d.path().join("c.txt").exists());
        // A hard link inside the tree is made as a copy of the file it names.
        let hard = fs::symlink_metadata(out.join("hard.txt")).unwrap();
        assert!(hard.is_file() && fs::read(out.join("hard.txt")).unwrap() == b"yo");
        use std::os::unix::fs::MetadataExt;
        assert_eq!(hard.nlink(), 1, "a copy, not a link");
    }

    #[test]
    fn refuses_path_escape() {
        let e = refused(
            &[("pkg-1/../../evil.txt", T::Regular, b"x", None)],
            "pkg-1/../../evil.txt",
        );
        assert!(e.contains("outside"), "{e}");
        // `..` is refused outside `strip/` too, though nothing there is unpacked.
        refused(
            &[
                ("pkg-1/a.txt", T::Regular, b"x", None),
                ("../evil.txt", T::Regular, b"x", None),
            ],
            "../evil.txt",
        );
    }

    #[test]
    fn refuses_absolute_paths() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("evil.txt");
        let name = target.to_str().unwrap();
        let e = refused(
            &[
                ("pkg-1/a.txt", T::Regular, b"x", None),
                (name, T::Regular, b"x", None),
            ],
            name,
        );
        assert!(e.contains("absolute"), "{e}");
        assert!(!target.exists());
    }

    #[test]
    fn refuses_symlink_escape() {
        for target in ["../../etc/passwd", "/etc/passwd", "sub/../.."] {
            let e = refused(
                &[("pkg-1/link", T::Symlink, b"", Some(target))],
                "pkg-1/link",
            );
            assert!(e.contains("points outside"), "{target}: {e}");
        }
    }

    /// The chain from the issue: `a/up -> ..`, then `a/up/a/up/esc -> ../../..`, then a
    /// file under `esc/`, which landed outside the work dir.
    #[test]
    fn refuses_a_chain_of_symlinks() {
        let e = refused(
            &[
                ("pkg-1/a/up", T::Symlink, b"", Some("..")),
                ("pkg-1/a/up/a/up/esc", T::Symlink, b"", Some("../../..")),
                ("pkg-1/a/up/a/up/esc/pwned.txt", T::Regular, b"pwned", None),
            ],
            "pkg-1/a/up/a/up/esc",
        );
        assert!(e.contains("goes through the symlink `a/up`"), "{e}");
        // The same escape, with the link's target going through the first link.
        let e = refused(
            &[
                ("pkg-1/a/up", T::Symlink, b"", Some("..")),
                ("pkg-1/esc", T::Symlink, b"", Some("a/up/..")),
            ],
            "pkg-1/esc",
        );
        assert!(e.contains("points outside"), "{e}");
        // A link that was inside when made, and leads outside through a link made after it.
        let e = refused(
            &[
                ("pkg-1/y", T::Symlink, b"", Some("a/..")),
                ("pkg-1/a", T::Symlink, b"", Some(".")),
            ],
            "pkg-1/y",
        );
        assert!(e.contains("points outside"), "{e}");
        let e = refused(
            &[("pkg-1/loop", T::Symlink, b"", Some("loop/x"))],
            "pkg-1/loop",
        );
        assert!(e.contains("loop"), "{e}");
    }

    #[test]
    fn never_writes_through_a_link() {
        // A link to a dir inside the tree, then a file under it.
        let e = refused(
            &[
                ("pkg-1/sub/", T::Directory, b"", None),
                ("pkg-1/d", T::Symlink, b"", Some("sub")),
                ("pkg-1/d/f.txt", T::Regular, b"x", None),
            ],
            "pkg-1/d/f.txt",
        );
        assert!(e.contains("goes through the symlink `d`"), "{e}");
        // A link replaced later by a dir, a file or another link of the same name.
        for (kind, link) in [
            (T::Directory, None),
            (T::Regular, None),
            (T::Symlink, Some("b")),
        ] {
            let e = refused(
                &[
                    ("pkg-1/s", T::Symlink, b"", Some("sub")),
                    ("pkg-1/s", kind, b"", link),
                ],
                "pkg-1/s",
            );
            assert!(
                e.contains("symlink `s`") || e.contains("already made"),
                "{kind:?}: {e}"
            );
        }
        // A file given twice, and a file replaced by a link.
        let e = refused(
            &[
                ("pkg-1/f", T::Regular, b"1", None),
                ("pkg-1/f", T::Regular, b"2", None),
            ],
            "pkg-1/f",
        );
        assert!(e.contains("already made"), "{e}");
        refused(
            &[
                ("pkg-1/f", T::Regular, b"1", None),
                ("pkg-1/f", T::Symlink, b"", Some("g")),
            ],
            "pkg-1/f",
        );
        // A file where a dir is needed.
        let e = refused(
            &[
                ("pkg-1/f", T::Regular, b"1", None),
                ("pkg-1/f/g", T::Regular, b"2", None),
            ],
            "pkg-1/f/g",
        );
        assert!(e.contains("not a directory"), "{e}");
    }

    #[test]
    fn refuses_hard_links_that_are_not_copies_of_files_inside() {
        for target in [
            "/etc/passwd",
            "other/x",
            "pkg-1/../../x",
            "pkg-1/missing",
            "pkg-1/sub",
            "pkg-1/l/x",
            "pkg-1/l",
        ] {
            let e = refused(
                &[
                    ("pkg-1/sub/x", T::Regular, b"x", None),
                    ("pkg-1/l", T::Symlink, b"", Some("sub")),
                    ("pkg-1/h", T::Link, b"", Some(target)),
                ],
                "pkg-1/h",
            );
            assert!(
                e.contains("hard link") || e.contains("symlink `l`"),
                "{target}: {e}"
            );
        }
    }

    #[test]
    fn refuses_devices_and_fifos() {
        for (kind, what) in [
            (T::Char, "character device"),
            (T::Block, "block device"),
            (T::Fifo, "FIFO"),
        ] {
            let e = refused(
                &[
                    ("pkg-1/a.txt", T::Regular, b"x", None),
                    ("pkg-1/dev", kind, b"", None),
                ],
                "pkg-1/dev",
            );
            assert!(e.contains(what), "{kind:?}: {e}");
        }
    }

    /// A zip made with the zip crate, then edited the way a hostile one would be:
    /// `rename` replaces a name's bytes everywhere, `modes` sets an entry's Unix mode.
    fn zip_file(
        files: &[(&str, &[u8])],
        symlinks: &[(&str, &str)],
        rename: &[(&str, &str)],
        modes: &[(&str, u32)],
    ) -> tempfile::NamedTempFile {
        let mut w = zip::ZipWriter::new(io::Cursor::new(Vec::new()));
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored)
            .unix_permissions(0o644);
        for (name, data) in files {
            if name.ends_with('/') {
                w.add_directory(*name, opts).unwrap();
            } else {
                w.start_file(*name, opts).unwrap();
                w.write_all(data).unwrap();
            }
        }
        for (name, target) in symlinks {
            w.add_symlink(*name, *target, opts).unwrap();
        }
        let mut bytes = w.finish().unwrap().into_inner();
        for (from, to) in rename {
            assert_eq!(from.len(), to.len());
            let n = bytes
                .windows(from.len())
                .filter(|w| *w == from.as_bytes())
                .count();
            assert!(n > 0);
            for i in 0..bytes.len() - from.len() {
                if &bytes[i..i + from.len()] == from.as_bytes() {
                    bytes[i..i + from.len()].copy_from_slice(to.as_bytes());
                }
            }
        }
        for (name, mode) in modes {
            // Central header: external attributes at 38 (Unix mode in the upper half), name at 46.
            let at = (0..bytes.len() - 46)
                .find(|&i| {
                    bytes[i..i + 4] == [0x50, 0x4b, 0x01, 0x02]
                        && bytes[i + 46..].starts_with(name.as_bytes())
                })
                .unwrap();
            bytes[at + 38..at + 42].copy_from_slice(&(mode << 16).to_le_bytes());
            bytes[at + 5] = 3; // made by Unix
        }
        let f = tempfile::NamedTempFile::new().unwrap();
        fs::write(f.path(), bytes).unwrap();
        f
    }

    fn zip_refused(z: &tempfile::NamedTempFile, entry: &str) -> String {
        let d = tempfile::tempdir().unwrap();
        let dest = d.path().join("w/x/wheel");
        fs::create_dir_all(dest.parent().unwrap()).unwrap();
        let e = format!("{:#}", unpack_zip(z.path(), &dest).unwrap_err());
        assert!(
            e.contains(&z.path().display().to_string()),
            "names the archive: {e}"
        );
        assert!(
            e.contains(&format!("`{entry}`")),
            "names the entry {entry}: {e}"
        );
        assert!(!dest.exists(), "a refused unpack removes what it made");
        assert_eq!(leftovers(d.path()), Vec::<PathBuf>::new(), "{e}");
        e
    }

    #[test]
    fn refuses_a_target_dir_that_is_a_link() {
        let a = tar_gz(&[("pkg-1/a.txt", T::Regular, b"x", None)]);
        let d = tempfile::tempdir().unwrap();
        fs::create_dir(d.path().join("elsewhere")).unwrap();
        std::os::unix::fs::symlink("elsewhere", d.path().join("src")).unwrap();
        let e = format!(
            "{:#}",
            unpack_tar_gz(a.path(), "pkg-1", &d.path().join("src")).unwrap_err()
        );
        assert!(
            e.contains(&d.path().join("src").display().to_string()) && e.contains("is a link"),
            "{e}"
        );
        let z = zip_file(&[("a.txt", b"x")], &[], &[], &[]);
        let e = format!(
            "{:#}",
            unpack_zip(z.path(), &d.path().join("src")).unwrap_err()
        );
        assert!(e.contains("is a link"), "{e}");
        assert_eq!(
            leftovers(&d.path().join("elsewhere")),
            Vec::<PathBuf>::new()
        );
    }

    #[test]
    fn unpacks_a_wheel() {
        let z = zip_file(
            &[
                ("pkg/", b""),
                ("pkg/bin/tool", b"#!/bin/sh\n"),
                ("pkg-1.0.dist-info/RECORD", b"r"),
            ],
            &[],
            &[],
            &[("pkg/bin/tool", 0o100755)],
        );
        let d = tempfile::tempdir().unwrap();
        unpack_zip(z.path(), d.path()).unwrap();
        assert_eq!(
            fs::read(d.path().join("pkg/bin/tool")).unwrap(),
            b"#!/bin/sh\n"
        );
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            fs::metadata(d.path().join("pkg/bin/tool"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o755
        );
        assert_eq!(
            fs::metadata(d.path().join("pkg-1.0.dist-info/RECORD"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o644
        );
    }

    #[test]
    fn refuses_hostile_wheels() {
        let e = zip_refused(
            &zip_file(&[("../../evil.txt", b"x")], &[], &[], &[]),
            "../../evil.txt",
        );
        assert!(e.contains("outside"), "{e}");
        let e = zip_refused(
            &zip_file(&[("/tmp/evil.txt", b"x")], &[], &[], &[]),
            "/tmp/evil.txt",
        );
        assert!(e.contains("absolute"), "{e}");
        let e = zip_refused(
            &zip_file(&[("pkg\\..\\..\\evil.txt", b"x")], &[], &[], &[]),
            "pkg\\..\\..\\evil.txt",
        );
        assert!(e.contains("`\\`"), "{e}");
        // A symlink entry, out or in: a wheel holds files only.
        for target in ["../../..", "a.txt"] {
            let e = zip_refused(
                &zip_file(&[("a.txt", b"x")], &[("pkg/esc", target)], &[], &[]),
                "pkg/esc",
            );
            assert!(e.contains("symlink"), "{e}");
        }
        for (mode, what) in [
            (0o010644, "FIFO"),
            (0o020644, "character device"),
            (0o060644, "block device"),
            (0o140644, "file type"),
        ] {
            let e = zip_refused(
                &zip_file(
                    &[("a.txt", b"x"), ("pkg/dev", b"")],
                    &[],
                    &[],
                    &[("pkg/dev", mode)],
                ),
                "pkg/dev",
            );
            assert!(e.contains(what), "{mode:o}: {e}");
        }
        // The same name twice (the zip reader would keep one of them, silently), and twice after normalising.
        let e = zip_refused(
            &zip_file(
                &[("pkg/a.txt", b"good"), ("pkg/b.txt", b"evil")],
                &[],
                &[("pkg/b.txt", "pkg/a.txt")],
                &[],
            ),
            "pkg/a.txt",
        );
        assert!(e.contains("twice"), "{e}");
        let e = zip_refused(
            &zip_file(
                &[("pkg/a.txt", b"good"), ("pkg/./a.txt", b"evil")],
                &[],
                &[],
                &[],
            ),
            "pkg/./a.txt",
        );
        assert!(e.contains("again"), "{e}");
        // A file where a dir is needed.
        let e = zip_refused(
            &zip_file(&[("pkg", b"file"), ("pkg/a.txt", b"x")], &[], &[], &[]),
            "pkg/a.txt",
        );
        assert!(e.contains("not a directory"), "{e}");
    }

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
            let mut r = io::BufReader::new(s.try_clone().unwrap());
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

    /// The message of a refused entry, as users read it (the temp archive's path replaced).
    #[test]
    fn refused_entry_message() {
        let a = tar_gz(&[("pkg-1/../../evil.txt", T::Regular, b"x", None)]);
        let d = tempfile::tempdir().unwrap();
        let e = format!(
            "{:#}",
            unpack_tar_gz(a.path(), "pkg-1", &d.path().join("src")).unwrap_err()
        );
        insta::assert_snapshot!(
            "refused_entry",
            e.replace(&a.path().display().to_string(), "/cache/pkg-1.tar.gz")
                .replace(&d.path().display().to_string(), "/work")
        );
    }
}
