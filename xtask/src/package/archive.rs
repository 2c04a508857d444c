//! Binary archives (`.tar.gz`): one top dir, sorted entries, owner 0, fixed
//! times and modes, no gzip name or time.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::package::entries::{refusal, CountIn, EntryKind, Head, Limits, Meter, Metered, Refused};
use crate::package::payload::Payload;

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
    crate::provision::fetch::set_mode(tmp.path(), 0o644)?;
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
    crate::provision::fetch::set_mode(tmp.path(), 0o644)?;
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
/// past them, the error's root is [`Refused`], naming the entry. Every gzip
/// member is read, as `gzip -d` does: a second member's entries are entries.
pub fn stream_entries(
    path: &Path,
    limits: &Limits,
    mut visit: impl FnMut(&Head, &mut dyn Read) -> Result<()>,
) -> Result<()> {
    let f = fs_err::File::open(path)?;
    // The decoder reads ahead of what it has produced: allow for its buffer.
    let meter = Meter::new(*limits, 64 << 10);
    let gz = flate2::read::MultiGzDecoder::new(CountIn::new(f, meter.clone()));
    let mut ar = tar::Archive::new(Metered::new(gz, meter.clone()));
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
            let head = Head {
                name: String::from_utf8_lossy(&raw).into_owned(),
                utf8: std::str::from_utf8(&raw).is_ok(),
                kind: tar_kind(e.header().entry_type()),
                mode: e.header().mode().unwrap_or(0),
                link: e
                    .link_name_bytes()
                    .map(|l| String::from_utf8_lossy(&l).into_owned()),
            };
            meter.start_entry(&head.name);
            visit(&head, &mut e)?;
            std::io::copy(&mut e, &mut std::io::sink())
                .with_context(|| format!("{}: cannot read {}", path.display(), head.name))?;
            meter.end_entry();
        }
        Ok(())
    };
    let res = walk();
    match refusal(&meter) {
        Some(refused) => Err(refused),
        None => res,
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
            "tar entry of type {:?}",
            char::from(other.as_byte())
        )),
    }
}
