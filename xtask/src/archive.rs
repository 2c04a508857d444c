//! Binary archives (`.tar.gz`): one top dir, sorted entries, owner 0, fixed
//! times and modes, no gzip name or time.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::payload::Payload;

/// Writes `<out>/<stem>.tar.gz` through a temp file in `out` renamed when
/// complete; `extra` files (the manifest) go after the payload. Returns its path.
pub fn write(out: &Path, stem: &str, payload: &Payload, extra: &[(String, Vec<u8>)], epoch: u64) -> Result<PathBuf> {
    let tmp = tempfile::NamedTempFile::new_in(out).with_context(|| format!("cannot create a temp file in {}", out.display()))?;
    let gz = flate2::GzBuilder::new().mtime(0).write(tmp.reopen()?, flate2::Compression::new(6));
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
    let files = payload.files.iter().map(|(p, e)| (p.as_str(), e.data.as_slice(), e.executable));
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
    crate::fetch::set_mode(tmp.path(), 0o644)?;
    tmp.persist(&dest).with_context(|| format!("cannot write {}", dest.display()))?;
    Ok(dest)
}

/// All regular-file entries (path, data, mode), paths without the top dir.
pub fn read_entries(path: &Path) -> Result<(String, Vec<(String, Vec<u8>, u32)>)> {
    let f = std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(f));
    let mut top = String::new();
    let mut out = Vec::new();
    for e in ar.entries().with_context(|| format!("{} is not a tar.gz file", path.display()))? {
        let mut e = e?;
        let p = e.path()?.to_string_lossy().into_owned();
        let (head, rest) = p.split_once('/').unwrap_or((p.as_str(), ""));
        if top.is_empty() {
            top = head.to_string();
        }
        if e.header().entry_type() != tar::EntryType::Regular {
            continue;
        }
        let mode = e.header().mode().unwrap_or(0);
        let mut data = Vec::new();
        e.read_to_end(&mut data)?;
        out.push((rest.to_string(), data, mode));
    }
    Ok((top, out))
}
