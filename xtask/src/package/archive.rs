//! Binary archives (`.tar.gz`): one top dir, sorted entries, owner 0, fixed
//! times and modes, no gzip name or time.

use std::cell::RefCell;
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use anyhow::{Context, Result};

use crate::package::entries::{refusal, CountIn, EntryKind, Head, Limits, Meter, Metered, Refused};
use crate::package::payload::Payload;
use crate::package::tar_layout::Expected;

/// Writes `<out>/<stem>.tar.gz` through a temp file in `out` renamed when
/// complete; `extra` files (the manifest) go after the payload. Returns its path.
pub fn write(
    out: &Path,
    stem: &str,
    payload: &Payload,
    extra: &[(String, Vec<u8>)],
    epoch: u64,
) -> Result<PathBuf> {
    let tmp = tempfile::NamedTempFile::new_in(out)
        .with_context(|| format!("cannot create a temp file in {}", out.display()))?;
    let gz = flate2::GzBuilder::new()
        .mtime(0)
        .write(tmp.reopen()?, flate2::Compression::new(6));
    let mut tar = tar::Builder::new(gz);
    tar.mode(tar::HeaderMode::Deterministic);
    let mut dir = tar::Header::new_gnu();
    dir.set_entry_type(tar::EntryType::Directory);
    dir.set_mode(0o755);
    dir.set_mtime(epoch);
    dir.set_uid(0);
    dir.set_gid(0);
    dir.set_size(0);
    tar.append_data(&mut dir, format!("{stem}/"), std::io::empty())?;
    let files = payload
        .files
        .iter()
        .map(|(p, e)| (p.as_str(), e.data.as_slice(), e.executable));
    let extra = extra.iter().map(|(p, d)| (p.as_str(), d.as_slice(), false));
    for (path, data, exec) in files.chain(extra) {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Regular);
        h.set_mode(if exec { 0o755 } else { 0o644 });
        h.set_mtime(epoch);
        h.set_uid(0);
        h.set_gid(0);
        h.set_size(data.len() as u64);
        tar.append_data(&mut h, format!("{stem}/{path}"), data)?;
    }
    tar.into_inner()?.finish()?;
    let dest = out.join(format!("{stem}.tar.gz"));
    crate::provision::unpack::set_mode(tmp.path(), 0o644)?;
    tmp.persist(&dest)
        .with_context(|| format!("cannot write {}", dest.display()))?;
    Ok(dest)
}

/// Writes `<out>/<stem>.zip`, everything under `<stem>/`, as [`write`] does the
/// tar.gz: sorted entries, one fixed time (`epoch`), fixed modes, through a temp
/// file renamed when complete.
pub fn write_zip(
    out: &Path,
    stem: &str,
    payload: &Payload,
    extra: &[(String, Vec<u8>)],
    epoch: u64,
) -> Result<PathBuf> {
    use std::io::Write;
    let tmp = tempfile::NamedTempFile::new_in(out)
        .with_context(|| format!("cannot create a temp file in {}", out.display()))?;
    let mut zip = zip::ZipWriter::new(tmp.reopen()?);
    let time = crate::package::wheel::zip_time(epoch);
    let opts = |exec: bool| {
        zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .compression_level(Some(6))
            .last_modified_time(time)
            .unix_permissions(if exec { 0o755 } else { 0o644 })
    };
    let files = payload
        .files
        .iter()
        .map(|(p, e)| (p.as_str(), e.data.as_slice(), e.executable));
    let extra = extra.iter().map(|(p, d)| (p.as_str(), d.as_slice(), false));
    for (path, data, exec) in files.chain(extra) {
        zip.start_file(format!("{stem}/{path}"), opts(exec))?;
        zip.write_all(data)?;
    }
    zip.finish()?;
    let dest = out.join(format!("{stem}.zip"));
    crate::provision::unpack::set_mode(tmp.path(), 0o644)?;
    tmp.persist(&dest)
        .with_context(|| format!("cannot write {}", dest.display()))?;
    Ok(dest)
}

/// Regular-file entries: (path, data, mode).
pub type Entries = Vec<(String, Vec<u8>, u32)>;

/// All regular-file entries (path, data, mode), paths without the top dir,
/// read within [`Limits::ARTIFACT`].
pub fn read_entries(path: &Path) -> Result<(String, Entries)> {
    let mut top = String::new();
    let mut out = Vec::new();
    stream_entries(path, &Limits::ARTIFACT, |head, data| {
        let (first, rest) = head
            .name
            .split_once('/')
            .unwrap_or((head.name.as_str(), ""));
        if top.is_empty() {
            top = first.to_string();
        }
        if head.kind == EntryKind::File {
            let mut bytes = Vec::new();
            data.read_to_end(&mut bytes)?;
            out.push((rest.to_string(), bytes, head.mode));
        }
        Ok(())
    })?;
    Ok((top, out))
}

/// Hands each entry of the tar.gz, in stored order and of every type, to
/// `visit` as a stream (what it leaves unread is read past), within `limits`:
/// past them, the error's root is [`Refused`], naming the entry.
///
/// One reading for every tool: every gzip member is read, as `gzip -d` does (a
/// second member's entries are entries), and the tar stream goes through
/// [`crate::package::tar_layout`], which refuses (root [`Refused`], naming the
/// archive, the entry and the problem) whatever GNU tar, Python's tarfile and
/// the `tar` crate could read differently, before the `tar` crate hands out the
/// entry concerned; bytes after the gzip data, or anything but zeros after the
/// tar's end blocks, are refused too. An error means the whole archive is
/// refused: what `visit` saw before it is not to be trusted.
pub fn stream_entries(
    path: &Path,
    limits: &Limits,
    mut visit: impl FnMut(&Head, &mut dyn Read) -> Result<()>,
) -> Result<()> {
    // A regular file only: a FIFO or a device named like an artifact would hang or never end.
    let (f, _) = crate::manifest::open_regular(path)?;
    let archive = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    // The decoder reads ahead of what it has produced: allow for its buffer.
    let meter = Meter::new(*limits, 64 << 10);
    let input = std::io::BufReader::with_capacity(32 << 10, CountIn::new(f, meter.clone()));
    let (members, gz_refused) = Members::new(input, &archive);
    let (checked, layout) = crate::package::tar_layout::checked(members, &archive);
    let mut ar = tar::Archive::new(Metered::new(checked, meter.clone()));
    let mut walk = || -> Result<()> {
        let mut count = 0u64;
        for e in ar
            .entries()
            .with_context(|| format!("{} is not a tar.gz file", path.display()))?
        {
            let mut e = e.with_context(|| format!("{}: unreadable tar entry", path.display()))?;
            count += 1;
            if count > limits.entries {
                return Err(Refused(format!(
                    "more than {} entries: not an artifact of this tool; not read further",
                    limits.entries
                ))
                .into());
            }
            let raw = e.path_bytes().into_owned();
            let link = e.link_name_bytes().map(|l| l.into_owned());
            // The entry as the headers read: the tar crate must agree.
            let mine = layout.borrow_mut().next_expected();
            let theirs = Expected {
                name: raw.clone(),
                link: link.clone(),
                size: e.size(),
                typeflag: e.header().entry_type().as_byte(),
            };
            if mine.as_ref() != Some(&theirs) {
                let why = format!(
                    "{}: the tar crate reads this entry as {theirs}, its headers as {}: readers disagree on this archive",
                    String::from_utf8_lossy(&raw),
                    mine.map(|m| m.to_string()).unwrap_or_else(|| "no entry".into())
                );
                return Err(layout.borrow_mut().refuse(why).into());
            }
            let head = Head {
                name: String::from_utf8_lossy(&raw).into_owned(),
                utf8: std::str::from_utf8(&raw).is_ok(),
                kind: tar_kind(e.header().entry_type()),
                mode: e.header().mode().unwrap_or(0),
                link: link.map(|l| String::from_utf8_lossy(&l).into_owned()),
                owner: match (e.header().uid(), e.header().gid()) {
                    (Ok(u), Ok(g)) => Some((u, g)),
                    _ => None,
                },
            };
            meter.start_entry(&head.name);
            visit(&head, &mut e)?;
            std::io::copy(&mut e, &mut std::io::sink())
                .with_context(|| format!("{}: cannot read {}", path.display(), head.name))?;
            meter.end_entry();
        }
        Ok(())
    };
    let mut res = walk();
    if res.is_ok() {
        // The tar crate stops at the first end block: the rest of the stream
        // (more end blocks, more gzip members) is read for what it may hide.
        res = std::io::copy(&mut ar.into_inner(), &mut std::io::sink())
            .map(drop)
            .with_context(|| format!("{}: unreadable after the tar's end", path.display()));
    }
    let layout_refused = layout.borrow().refused();
    let gz_refused = gz_refused.borrow().clone();
    match (layout_refused.or(gz_refused), refusal(&meter)) {
        (Some(r), _) => Err(r.into()),
        (None, Some(refused)) => Err(refused),
        (None, None) => res,
    }
}

/// The gzip members of a file, one after another, as `gzip -d` reads them;
/// bytes after a member that do not start another one (which `gzip -d` skips
/// with a warning) are refused.
struct Members<R: BufRead> {
    current: Option<flate2::bufread::GzDecoder<R>>,
    rest: Option<R>,
    count: usize,
    archive: String,
    refused: Rc<RefCell<Option<Refused>>>,
}

impl<R: BufRead> Members<R> {
    fn new(input: R, archive: &str) -> (Self, Rc<RefCell<Option<Refused>>>) {
        let refused = Rc::new(RefCell::new(None));
        (
            Members {
                current: None,
                rest: Some(input),
                count: 0,
                archive: archive.to_string(),
                refused: refused.clone(),
            },
            refused,
        )
    }
}

impl<R: BufRead> Read for Members<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if let Some(r) = self.refused.borrow().clone() {
            return Err(std::io::Error::other(r));
        }
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if let Some(d) = &mut self.current {
                let n = d.read(buf)?;
                if n > 0 {
                    return Ok(n);
                }
                self.rest = self.current.take().map(|d| d.into_inner());
            }
            let rest = self.rest.as_mut().expect("between members");
            let next = rest.fill_buf()?;
            match next.first() {
                None if self.count == 0 => {
                    return Err(std::io::Error::other("an empty file: not gzip data"))
                }
                None => return Ok(0),
                Some(0x1f) => {}
                Some(_) if self.count == 0 => {
                    return Err(std::io::Error::other("not gzip data"));
                }
                Some(b) => {
                    let r = Refused(format!(
                        "{}: bytes after gzip member {} that are not gzip data (the first is {b:#04x}): gzip -d skips them with a warning; an artifact of this tool ends with its last member; not read further",
                        self.archive, self.count
                    ));
                    *self.refused.borrow_mut() = Some(r.clone());
                    return Err(std::io::Error::other(r));
                }
            }
            self.count += 1;
            let input = self.rest.take().expect("between members");
            self.current = Some(flate2::bufread::GzDecoder::new(input));
        }
    }
}

fn tar_kind(t: tar::EntryType) -> EntryKind {
    use tar::EntryType as T;
    match t {
        T::Regular => EntryKind::File,
        T::Directory => EntryKind::Dir,
        T::Symlink => EntryKind::Symlink,
        T::Link => EntryKind::Hardlink,
        T::Fifo => EntryKind::Other("FIFO".into()),
        T::Char => EntryKind::Other("character device".into()),
        T::Block => EntryKind::Other("block device".into()),
        T::Continuous => EntryKind::Other("contiguous file".into()),
        T::GNUSparse => EntryKind::Other("sparse file".into()),
        T::XGlobalHeader => EntryKind::Other("pax global header".into()),
        other => EntryKind::Other(format!(
            "tar entry of type '{}'",
            char::from(other.as_byte()).escape_default()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::package::tar_layout::tests::{end, entry, file_sized, pax_entry};
    use crate::package::tar_layout::BLOCK;
    use std::io::Write;

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut g = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        g.write_all(data).unwrap();
        g.finish().unwrap()
    }

    /// The names `stream_entries` handed out, and its error's root if refused.
    fn read(bytes: &[u8]) -> (Vec<String>, Option<String>) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.tar.gz");
        std::fs::write(&p, bytes).unwrap();
        let mut seen = Vec::new();
        let r = stream_entries(&p, &Limits::ARTIFACT, |h, _| {
            seen.push(h.name.clone());
            Ok(())
        });
        let refused = r.err().map(|e| {
            e.downcast_ref::<Refused>()
                .unwrap_or_else(|| panic!("not refused: {e:#}"))
                .0
                .clone()
        });
        (seen, refused)
    }

    /// What the writer makes reads back, long names (GNU 'L') included.
    #[test]
    fn written_archives_read_back() {
        let d = tempfile::tempdir().unwrap();
        let mut payload = Payload::default();
        let long = format!("lib/{}.so", "l".repeat(120));
        payload.add(long.clone(), b"lib".to_vec(), true).unwrap();
        payload
            .add("README.md".into(), b"hi".to_vec(), false)
            .unwrap();
        let p = write(
            d.path(),
            "top",
            &payload,
            &[("m.json".into(), b"{}".to_vec())],
            0,
        )
        .unwrap();
        let (top, entries) = read_entries(&p).unwrap();
        assert_eq!(top, "top");
        let names: Vec<_> = entries.iter().map(|e| e.0.as_str()).collect();
        assert_eq!(names, ["README.md", long.as_str(), "m.json"]);
    }

    /// The archive: the entry whose pax header gives `size` twice is
    /// never handed out, and the error's root is `Refused`.
    #[test]
    fn an_ambiguous_entry_is_refused_before_it_is_handed_out() {
        let mut data = b"good!".to_vec();
        data.resize(BLOCK, 0);
        data.extend(entry(b"top/", b'5', b""));
        let a = [
            entry(b"top/", b'5', b""),
            pax_entry(&[("size", b"5"), ("size", data.len().to_string().as_bytes())]),
            file_sized("top/llama-cli", 5, &data),
            end(),
        ]
        .concat();
        let (seen, refused) = read(&gz(&a));
        assert_eq!(seen, ["top/"]);
        let why = refused.unwrap();
        assert!(
            why.starts_with(
                "a.tar.gz: the pax header at byte 512 (after top/): gives `size` 2 times"
            ),
            "{why}"
        );
    }

    /// A second member is read, as gzip -d reads it; bytes after the last
    /// member that are not one are refused, as is anything but zeros after
    /// the tar's end, in whichever member.
    #[test]
    fn gzip_members_and_what_follows_them() {
        let first = entry(b"top/", b'5', b"");
        let second = [entry(b"top/a", b'0', b"a"), end()].concat();
        let two = [gz(&first), gz(&second)].concat();
        assert_eq!(read(&two), (vec!["top/".into(), "top/a".into()], None));

        let garbage = [two.clone(), b"trailing".to_vec()].concat();
        let (_, why) = read(&garbage);
        let why = why.unwrap();
        assert!(
            why.starts_with(
                "a.tar.gz: bytes after gzip member 2 that are not gzip data (the first is 0x74)"
            ),
            "{why}"
        );
        let hidden = [two, gz(&entry(b"top/hidden", b'0', b"evil"))].concat();
        let (seen, why) = read(&hidden);
        assert_eq!(seen, ["top/", "top/a"]);
        assert!(why.unwrap().contains("non-zero bytes at byte 2560 of the tar stream, after its end-of-archive block at byte 1536"));
    }
}
