//! Safe unpacking of archives: `.tar.gz` (sources, tool wheels' trees), Debian packages
//! and zips (wheels).
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

use fs_err as fs;
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Component, Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};

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
        // Into memory (a compiler's package is under 100 MB unpacked), stopped at 64 times
        // the packed size (xz reaches 10 on binaries) so an archive made to fill memory or
        // the disk cannot; the decoder itself (liblzma, C) may take at most XZ_MEMLIMIT.
        let data = member.data(&*bytes).with_context(not_deb)?;
        let packed = data.len() as u64;
        let limit = packed.saturating_mul(64).max(1 << 20);
        let stream =
            liblzma::stream::Stream::new_stream_decoder(XZ_MEMLIMIT, liblzma::stream::CONCATENATED)
                .context("cannot start an xz decoder")?;
        let mut tar = Vec::new();
        liblzma::read::XzDecoder::new_stream(data, stream)
            .take(limit + 1)
            .read_to_end(&mut tar)
            .with_context(|| {
                format!(
                    "{}: data.tar.xz does not decode (or its decoder would need more than {} MiB)",
                    deb.display(),
                    XZ_MEMLIMIT >> 20
                )
            })?;
        if tar.len() as u64 > limit {
            bail!(
                "{}: data.tar.xz unpacks to more than {limit} bytes from {packed}",
                deb.display()
            );
        }
        unpack_tar_into(deb, io::Cursor::new(tar), "deb", "", dest)?;
        return Ok(());
    }
    bail!("{}: no data.tar.xz member", not_deb())
}

/// The most memory the xz decoder may take: what a dictionary of xz's preset -9 (64 MiB)
/// needs, and more. Debian's packages are made with -6 (8 MiB) or less.
const XZ_MEMLIMIT: u64 = 128 << 20;

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
        let name = entry_name(e.name_raw(), e.name());
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

/// An entry's name as the zip crate decodes it (UTF-8, else CP437), or its bytes made
/// UTF-8 (each bad sequence a U+FFFD) where that fails.
pub fn entry_name(
    raw: &[u8],
    decoded: zip::result::ZipResult<std::borrow::Cow<'_, str>>,
) -> String {
    decoded.map_or_else(
        |_| String::from_utf8_lossy(raw).into_owned(),
        std::borrow::Cow::into_owned,
    )
}

#[cfg(all(test, unix))]
#[path = "unpack_tests.rs"]
pub(crate) mod tests;
