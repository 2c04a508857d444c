//! Writing and reading wheels (PEP 427): payload first in sorted order,
//! `.dist-info` last, RECORD last inside it, with fixed times and modes.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use base64::Engine;
use sha2::{Digest, Sha256};

use crate::package::entries::{refusal, CountIn, EntryKind, Head, Limits, Meter, Metered, Refused};
use crate::package::payload::Payload;
use crate::package::zip_layout;
use crate::tags::WheelFilename;

/// `sha256=<urlsafe base64, no padding>` as RECORD writes it.
pub fn record_hash(data: &[u8]) -> String {
    record_hash_of(&Sha256::digest(data))
}

/// [`record_hash`] from a sha256 digest already taken.
pub fn record_hash_of(digest: &[u8]) -> String {
    format!(
        "sha256={}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest)
    )
}

/// METADATA from the sdist's PKG-INFO: the version gets the local label and
/// the extra requirements are added after the existing ones.
pub fn metadata_from_pkg_info(
    pkg_info: &str,
    full_version: &str,
    extra_requires: &[String],
) -> Result<String> {
    let (headers, body) = match pkg_info.split_once("\n\n") {
        Some((h, b)) => (h, Some(b)),
        None => (pkg_info.trim_end(), None),
    };
    let mut out = Vec::new();
    let mut saw_version = false;
    let mut last_requires = None;
    for line in headers.lines() {
        if line.starts_with("Version:") {
            out.push(format!("Version: {full_version}"));
            saw_version = true;
        } else {
            if line.starts_with("Requires-Dist:") {
                last_requires = Some(out.len());
            }
            out.push(line.to_string());
        }
    }
    if !saw_version || !out.iter().any(|l| l.starts_with("Name:")) {
        bail!("PKG-INFO has no Name: or Version: header: is this an sdist?");
    }
    let at = last_requires.map(|i| i + 1).unwrap_or(out.len());
    for (i, r) in extra_requires.iter().enumerate() {
        out.insert(at + i, format!("Requires-Dist: {r}"));
    }
    let mut text = out.join("\n");
    text.push('\n');
    if let Some(b) = body {
        text.push('\n');
        text.push_str(b);
    }
    Ok(text)
}

/// `entry_points.txt` from pyproject's `[project.scripts]`, `[project.gui-scripts]`
/// and `[project.entry-points.*]`; None when there are none.
pub fn entry_points_from_pyproject(pyproject: &str) -> Result<Option<String>> {
    let doc: toml::Table =
        toml::from_str(pyproject).context("malformed pyproject.toml in the source")?;
    let Some(project) = doc.get("project").and_then(|p| p.as_table()) else {
        return Ok(None);
    };
    let mut groups: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut add = |group: &str, table: &toml::Table| {
        for (k, v) in table {
            if let Some(s) = v.as_str() {
                groups
                    .entry(group.to_string())
                    .or_default()
                    .insert(k.clone(), s.to_string());
            }
        }
    };
    if let Some(t) = project.get("scripts").and_then(|t| t.as_table()) {
        add("console_scripts", t);
    }
    if let Some(t) = project.get("gui-scripts").and_then(|t| t.as_table()) {
        add("gui_scripts", t);
    }
    if let Some(eps) = project.get("entry-points").and_then(|t| t.as_table()) {
        for (g, t) in eps {
            if let Some(t) = t.as_table() {
                add(g, t);
            }
        }
    }
    if groups.is_empty() {
        return Ok(None);
    }
    let mut text = String::new();
    for (g, entries) in groups {
        text.push_str(&format!("[{g}]\n"));
        for (k, v) in entries {
            text.push_str(&format!("{k} = {v}\n"));
        }
        text.push('\n');
    }
    Ok(Some(text))
}

/// The WHEEL file.
pub fn wheel_file(name: &WheelFilename) -> String {
    format!(
        "Wheel-Version: 1.0\nGenerator: llama-forge {}\nRoot-Is-Purelib: false\nTag: {}\n",
        env!("CARGO_PKG_VERSION"),
        name.tag()
    )
}

/// A zip timestamp from Unix seconds (zip cannot go before 1980).
pub fn zip_time(epoch: u64) -> zip::DateTime {
    let secs = epoch.max(315_532_800) as i64; // 1980-01-01
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    zip::DateTime::from_date_and_time(
        y as u16,
        m as u8,
        d as u8,
        (rem / 3600) as u8,
        (rem % 3600 / 60) as u8,
        (rem % 60) as u8,
    )
    .expect("valid date")
}

/// Writes the wheel as `dir/<name>`, through a temp file in `dir` renamed when
/// complete. `dist_info` holds the `.dist-info` files except RECORD. Returns its path.
pub fn write(
    dir: &Path,
    name: &WheelFilename,
    payload: &Payload,
    dist_info: &BTreeMap<String, Vec<u8>>,
    epoch: u64,
) -> Result<PathBuf> {
    let dist_info_dir = name.dist_info_dir();
    let tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot create a temp file in {}", dir.display()))?;
    let mut zip = zip::ZipWriter::new(tmp.reopen()?);
    let time = zip_time(epoch);
    let opts = |exec: bool| {
        zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .compression_level(Some(6))
            .last_modified_time(time)
            .unix_permissions(if exec { 0o755 } else { 0o644 })
    };
    let mut record = String::new();
    let mut put = |zip: &mut zip::ZipWriter<std::fs::File>,
                   path: &str,
                   data: &[u8],
                   exec: bool|
     -> Result<()> {
        zip.start_file(path, opts(exec))?;
        zip.write_all(data)?;
        record.push_str(&format!("{path},{},{}\n", record_hash(data), data.len()));
        Ok(())
    };
    for (path, e) in &payload.files {
        if path.starts_with(&dist_info_dir) {
            bail!("payload file {path} collides with the .dist-info dir");
        }
        put(&mut zip, path, &e.data, e.executable)?;
    }
    for (file, data) in dist_info {
        put(&mut zip, &format!("{dist_info_dir}/{file}"), data, false)?;
    }
    let record_path = format!("{dist_info_dir}/RECORD");
    record.push_str(&format!("{record_path},,\n"));
    zip.start_file(record_path, opts(false))?;
    zip.write_all(record.as_bytes())?;
    zip.finish()?;
    let dest = dir.join(name.to_string());
    crate::provision::unpack::set_mode(tmp.path(), 0o644)?;
    tmp.persist(&dest)
        .with_context(|| format!("cannot write {}", dest.display()))?;
    Ok(dest)
}

/// All entries of a zip, in stored order, with their unix modes, read within
/// [`Limits::ARTIFACT`].
pub fn read_entries(path: &Path) -> Result<Vec<(String, Vec<u8>, u32)>> {
    let mut out = Vec::new();
    stream_entries(path, &Limits::ARTIFACT, |head, data| {
        let mut bytes = Vec::new();
        data.read_to_end(&mut bytes)?;
        out.push((head.name.clone(), bytes, head.mode));
        Ok(())
    })?;
    Ok(out)
}

/// What the zip's central directory holds, beyond what the zip crate reads
/// (it keeps one entry per name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZipListing {
    /// Every name in the central directory, in stored order, repeats kept.
    pub names: Vec<String>,
    /// How many entries the zip crate reads (one per distinct name, and no more
    /// than the end record says).
    pub read: usize,
}

/// Hands each entry of the zip, in stored order, to `visit` as a stream, within
/// `limits`: past them, the error's root is [`Refused`], naming the entry.
///
/// The zip's layout is read first, strictly ([`zip_layout::read`]): a zip that
/// zip tools could read differently (two end records, trailing bytes, a local
/// header that says other than its directory record, overlapping entries, bytes
/// no entry accounts for, a name stored twice) is refused before any entry is
/// handed out. The zip crate then decompresses each entry, and must see the same
/// entries where the layout has them. The bounds count the bytes read from the
/// file, not the sizes the headers claim.
pub fn stream_entries(
    path: &Path,
    limits: &Limits,
    mut visit: impl FnMut(&Head, &mut dyn Read) -> Result<()>,
) -> Result<ZipListing> {
    // A regular file only: a FIFO or a device named like an artifact would hang or never end.
    let (mut f, _) = crate::manifest::open_regular(path)?;
    let layout =
        zip_layout::read(&mut f, limits.entries).with_context(|| path.display().to_string())?;
    let meter = Meter::new(*limits, 0);
    let mut zip = zip::ZipArchive::new(CountIn::new(f, meter.clone()))
        .with_context(|| format!("{} is not a zip file", path.display()))?;
    let differs = |what: String| -> anyhow::Error {
        anyhow::Error::new(Refused(format!(
            "the zip crate reads {what}, not what the zip's layout says: an ambiguous zip (zip tools could read different contents from it), not one this tool wrote; not read"
        )))
        .context(path.display().to_string())
    };
    if zip.len() != layout.entries.len()
        || zip.offset() != 0
        || zip.central_directory_start() != layout.directory
    {
        return Err(differs(format!(
            "{} entries from a directory at {} (offset {})",
            zip.len(),
            zip.central_directory_start(),
            zip.offset()
        )));
    }
    for (i, want) in layout.entries.iter().enumerate() {
        let e = zip
            .by_index(i)
            .with_context(|| format!("corrupt entry #{i} in {}", path.display()))?;
        if e.name_raw() != want.name.as_slice()
            || e.header_start() != want.header
            || e.data_start() != Some(want.data)
            || e.compressed_size() != want.compressed
            || e.size() != want.uncompressed
            || e.crc32() != want.crc
        {
            let name = crate::provision::unpack::entry_name(e.name_raw(), e.name());
            drop(e);
            return Err(differs(format!("entry #{i} as {name}")));
        }
        let name = crate::provision::unpack::entry_name(e.name_raw(), e.name());
        let head = Head {
            kind: zip_kind(e.unix_mode(), &name),
            name,
            utf8: std::str::from_utf8(e.name_raw()).is_ok(),
            mode: e.unix_mode().unwrap_or(0),
            link: None,
            owner: None,
        };
        meter.start_entry(&head.name);
        let res = visit(&head, &mut Metered::new(e, meter.clone()));
        if let Some(refused) = refusal(&meter) {
            return Err(refused);
        }
        res.with_context(|| format!("corrupt entry {} in {}", head.name, path.display()))?;
    }
    Ok(ZipListing {
        names: layout
            .entries
            .iter()
            .map(|e| String::from_utf8_lossy(&e.name).into_owned())
            .collect(),
        read: zip.len(),
    })
}

/// The file type in a zip entry's unix mode (none: a file, or a directory when the name ends in `/`).
fn zip_kind(mode: Option<u32>, name: &str) -> EntryKind {
    match mode.map(|m| m & 0o170000).unwrap_or(0) {
        0 | 0o100000 if name.ends_with('/') => EntryKind::Dir,
        0 | 0o100000 => EntryKind::File,
        0o040000 => EntryKind::Dir,
        0o120000 => EntryKind::Symlink,
        0o010000 => EntryKind::Other("FIFO".into()),
        0o020000 => EntryKind::Other("character device".into()),
        0o060000 => EntryKind::Other("block device".into()),
        0o140000 => EntryKind::Other("socket".into()),
        t => EntryKind::Other(format!("file of type {t:o}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bomb whose entry claims more compressed bytes than its deflate stream
    /// takes: 64 MiB of zeros deflate to about 64 KiB, followed, inside the
    /// entry, by 2 MiB that the decompressor never reads. Against the claimed
    /// size (2 MiB x 100) the zeros passed; against the bytes read they do not.
    #[test]
    fn the_ratio_counts_the_compressed_bytes_read_not_the_claimed_size() {
        let size = 64u64 << 20;
        let mut enc = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
        std::io::copy(&mut std::io::repeat(0).take(size), &mut enc).unwrap();
        let mut data = enc.finish().unwrap();
        data.extend(std::iter::repeat_n(0x55u8, 2 << 20));
        let mut crc = flate2::Crc::new();
        crc.update(&vec![0; size as usize]);
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("bomb.whl");
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        zip.start_file("pkg/bomb.bin", opts).unwrap();
        zip.write_all(&data).unwrap();
        zip.finish().unwrap();
        // Stored -> deflated, with the zeros' size and CRC, in both headers.
        let mut bytes = std::fs::read(&path).unwrap();
        let l = zip_layout::read(&mut std::io::Cursor::new(&bytes), 10).unwrap();
        let (local, central) = (l.entries[0].header as usize, l.directory as usize);
        for (method, crc_at, size_at) in [
            (local + 8, local + 14, local + 22),
            (central + 10, central + 16, central + 24),
        ] {
            bytes[method..method + 2].copy_from_slice(&8u16.to_le_bytes());
            bytes[crc_at..crc_at + 4].copy_from_slice(&crc.sum().to_le_bytes());
            bytes[size_at..size_at + 4].copy_from_slice(&(size as u32).to_le_bytes());
        }
        std::fs::write(&path, &bytes).unwrap();
        assert!(l.entries[0].compressed > 2 << 20 && l.entries[0].compressed * 100 > size);
        let err = stream_entries(&path, &Limits::ARTIFACT, |_, data| {
            std::io::copy(data, &mut std::io::sink())?;
            Ok(())
        })
        .unwrap_err();
        let refused = err
            .downcast_ref::<Refused>()
            .unwrap_or_else(|| panic!("{err:#}"));
        assert!(
            refused
                .0
                .starts_with("pkg/bomb.bin: unpacks to more than 100x its compressed size"),
            "{refused}"
        );
    }

    #[test]
    fn record_hash_is_urlsafe_unpadded() {
        // sha256("") = e3b0c442...; urlsafe base64 without '='.
        assert_eq!(
            record_hash(b""),
            "sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"
        );
    }

    #[test]
    fn zip_time_from_epoch() {
        let t = zip_time(1_667_997_441); // 2022-11-09 12:37:21 UTC
        assert_eq!(
            (
                t.year(),
                t.month(),
                t.day(),
                t.hour(),
                t.minute(),
                t.second()
            ),
            (2022, 11, 9, 12, 37, 20)
        );
        assert_eq!(zip_time(0).year(), 1980);
    }

    #[test]
    fn metadata_gets_local_version_and_requirements() {
        let pkg = "Metadata-Version: 2.1\nName: llama_cpp_python\nVersion: 0.3.16\nRequires-Dist: numpy>=1.20.0\nProvides-Extra: server\n\n# README\nbody\n";
        let m = metadata_from_pkg_info(pkg, "0.3.16+cpu", &["nvidia-cublas==13.0.2.14".into()])
            .unwrap();
        assert!(m.contains("Version: 0.3.16+cpu\n"));
        assert!(m.contains(
            "Requires-Dist: numpy>=1.20.0\nRequires-Dist: nvidia-cublas==13.0.2.14\nProvides-Extra"
        ));
        assert!(m.ends_with("\n# README\nbody\n"));
        assert!(metadata_from_pkg_info("Name: x\n", "1", &[]).is_err());
    }

    #[test]
    fn entry_points_from_scripts() {
        let py = "[project]\nname='x'\n[project.scripts]\nb = 'x.b:main'\na = 'x.a:main'\n";
        assert_eq!(
            entry_points_from_pyproject(py).unwrap().unwrap(),
            "[console_scripts]\na = x.a:main\nb = x.b:main\n\n"
        );
        assert!(entry_points_from_pyproject("[project]\nname='x'\n")
            .unwrap()
            .is_none());
    }
}
