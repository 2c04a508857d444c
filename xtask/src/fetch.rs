//! Downloads into a content-checked cache, and safe unpacking of archives.
//!
//! Every file is checked against its pinned sha256 before anything is unpacked.
//! A mismatch refuses, names both hashes, and deletes nothing but its own temp file.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Component, Path, PathBuf};

use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};

use crate::recipe::Sha256Hex;

/// sha256 of a file, streamed.
pub fn sha256_file(path: &Path) -> Result<Sha256Hex> {
    let mut f = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut h = Sha256::new();
    io::copy(&mut f, &mut h).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(hex::encode(h.finalize()).parse().expect("hex digest"))
}

pub fn sha256_bytes(data: &[u8]) -> Sha256Hex {
    hex::encode(Sha256::digest(data)).parse().expect("hex digest")
}

/// The cache file for `url`: `<cache>/<sha256>/<file name>`.
pub fn cache_path(cache: &Path, url: &str, sha256: &Sha256Hex) -> PathBuf {
    let name = url.rsplit('/').next().filter(|n| !n.is_empty()).unwrap_or("download");
    cache.join("downloads").join(sha256.as_str()).join(name)
}

/// Returns the cached copy of `url`, downloading it first if needed.
pub fn fetch(cache: &Path, url: &str, sha256: &Sha256Hex) -> Result<PathBuf> {
    let dest = cache_path(cache, url, sha256);
    if dest.is_file() {
        let got = sha256_file(&dest)?;
        if &got != sha256 {
            bail!(
                "cached file {} has sha256 {got}, but the recipe pins {sha256}: it was changed or truncated; \
                 delete it and run again to download it afresh",
                dest.display()
            );
        }
        return Ok(dest);
    }
    let dir = dest.parent().expect("cache path has a parent");
    fs::create_dir_all(dir).with_context(|| format!("cannot create cache dir {}", dir.display()))?;
    eprintln!("downloading {url}");
    let agent = ureq::AgentBuilder::new().timeout_connect(std::time::Duration::from_secs(30)).build();
    let resp = agent.get(url).call().with_context(|| format!("cannot download {url}"))?;
    let total: Option<u64> = resp.header("Content-Length").and_then(|v| v.parse().ok());
    let bar = crate::progress::bytes(total, url.rsplit('/').next().unwrap_or(url));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    let mut hasher = Sha256::new();
    let mut reader = resp.into_reader();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = reader.read(&mut buf).with_context(|| format!("download of {url} broke off"))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        tmp.write_all(&buf[..n])?;
        bar.inc(n as u64);
    }
    bar.finish_and_clear();
    let got: Sha256Hex = hex::encode(hasher.finalize()).parse().expect("hex digest");
    if &got != sha256 {
        bail!("{url} has sha256 {got}, but the recipe pins {sha256}: refusing to use it (nothing was unpacked)");
    }
    tmp.persist(&dest).with_context(|| format!("cannot move download into {}", dest.display()))?;
    Ok(dest)
}

/// A relative path inside an archive, refused if it could land outside the target dir.
fn safe_relative(p: &Path) -> Result<PathBuf> {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::Normal(s) => out.push(s),
            Component::CurDir => {}
            _ => bail!("archive entry `{}` would land outside the target dir: refusing to unpack", p.display()),
        }
    }
    Ok(out)
}

/// Whether a symlink at `link` (relative to the root) pointing at `target` stays inside the root.
fn link_stays_inside(link: &Path, target: &Path) -> bool {
    if target.is_absolute() {
        return false;
    }
    let mut depth: i64 = link.parent().map(|p| p.components().count() as i64).unwrap_or(0);
    for c in target.components() {
        match c {
            Component::ParentDir => depth -= 1,
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            _ => return false,
        }
        if depth < 0 {
            return false;
        }
    }
    true
}

/// Unpacks the entries of a `.tar.gz` under `strip/` into `dest` (which must not exist yet).
/// Returns the newest entry mtime, the source's own date.
pub fn unpack_tar_gz(archive: &Path, strip: &str, dest: &Path) -> Result<u64> {
    let f = File::open(archive).with_context(|| format!("cannot open {}", archive.display()))?;
    let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(io::BufReader::new(f)));
    let strip = Path::new(strip);
    fs::create_dir_all(dest)?;
    let mut newest = 0u64;
    let mut count = 0usize;
    for entry in ar.entries().with_context(|| format!("{} is not a tar.gz archive", archive.display()))? {
        let mut entry = entry.with_context(|| format!("corrupt entry in {}", archive.display()))?;
        let path = entry.path()?.into_owned();
        let Ok(rel) = path.strip_prefix(strip) else { continue };
        let rel = safe_relative(rel)?;
        if rel.as_os_str().is_empty() {
            continue;
        }
        let out = dest.join(&rel);
        let kind = entry.header().entry_type();
        newest = newest.max(entry.header().mtime().unwrap_or(0));
        match kind {
            tar::EntryType::Directory => fs::create_dir_all(&out)?,
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                if let Some(p) = out.parent() {
                    fs::create_dir_all(p)?;
                }
                let mode = entry.header().mode().unwrap_or(0o644);
                let mut w = File::create(&out).with_context(|| format!("cannot write {}", out.display()))?;
                io::copy(&mut entry, &mut w)?;
                set_mode(&out, if mode & 0o111 != 0 { 0o755 } else { 0o644 })?;
            }
            tar::EntryType::Symlink => {
                let target = entry.link_name()?.map(|t| t.into_owned()).unwrap_or_default();
                if !link_stays_inside(&rel, &target) {
                    bail!(
                        "archive {} has symlink `{}` -> `{}` that points outside the source tree: refusing to unpack",
                        archive.display(),
                        path.display(),
                        target.display()
                    );
                }
                if let Some(p) = out.parent() {
                    fs::create_dir_all(p)?;
                }
                make_symlink(&target, &out)?;
            }
            // pax headers, hard links and devices carry no source content we need.
            _ => continue,
        }
        count += 1;
    }
    if count == 0 {
        bail!("archive {} has nothing under `{}/`: check the recipe's `strip`", archive.display(), strip.display());
    }
    Ok(newest)
}

/// Unpacks a zip (a wheel) into `dest`, with the same path checks.
pub fn unpack_zip(archive: &Path, dest: &Path) -> Result<()> {
    let f = File::open(archive).with_context(|| format!("cannot open {}", archive.display()))?;
    let mut zip = zip::ZipArchive::new(f).with_context(|| format!("{} is not a zip archive", archive.display()))?;
    for i in 0..zip.len() {
        let mut e = zip.by_index(i)?;
        let rel = safe_relative(Path::new(e.name()))?;
        let out = dest.join(rel);
        if e.is_dir() {
            fs::create_dir_all(&out)?;
            continue;
        }
        if let Some(p) = out.parent() {
            fs::create_dir_all(p)?;
        }
        let mut w = File::create(&out)?;
        io::copy(&mut e, &mut w)?;
        let exec = e.unix_mode().map(|m| m & 0o111 != 0).unwrap_or(false);
        set_mode(&out, if exec { 0o755 } else { 0o644 })?;
    }
    Ok(())
}

#[cfg(unix)]
pub fn set_mode(p: &Path, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(p, fs::Permissions::from_mode(mode))
}
#[cfg(not(unix))]
pub fn set_mode(_: &Path, _: u32) -> io::Result<()> {
    Ok(())
}

#[cfg(unix)]
fn make_symlink(target: &Path, link: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}
#[cfg(not(unix))]
fn make_symlink(_: &Path, _: &Path) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn unpacks_under_strip_prefix() {
        let a = tar_gz(&[
            ("pkg-1/a.txt", tar::EntryType::Regular, b"hi", None),
            ("pkg-1/sub/b.txt", tar::EntryType::Regular, b"yo", None),
            ("other/c.txt", tar::EntryType::Regular, b"no", None),
            ("pkg-1/sub/ok", tar::EntryType::Symlink, b"", Some("../a.txt")),
        ]);
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("src");
        assert_eq!(unpack_tar_gz(a.path(), "pkg-1", &out).unwrap(), 1_700_000_000);
        assert_eq!(fs::read(out.join("sub/b.txt")).unwrap(), b"yo");
        assert!(!out.join("other").exists() && !d.path().join("c.txt").exists());
    }

    #[test]
    fn refuses_path_escape() {
        let a = tar_gz(&[("pkg-1/../../evil.txt", tar::EntryType::Regular, b"x", None)]);
        let d = tempfile::tempdir().unwrap();
        let e = unpack_tar_gz(a.path(), "pkg-1", &d.path().join("src")).unwrap_err().to_string();
        assert!(e.contains("outside"), "{e}");
        assert!(!d.path().join("evil.txt").exists());
    }

    #[test]
    fn refuses_symlink_escape() {
        for target in ["../../etc/passwd", "/etc/passwd"] {
            let a = tar_gz(&[("pkg-1/link", tar::EntryType::Symlink, b"", Some(target))]);
            let d = tempfile::tempdir().unwrap();
            let e = unpack_tar_gz(a.path(), "pkg-1", &d.path().join("src")).unwrap_err().to_string();
            assert!(e.contains("points outside"), "{target}: {e}");
        }
    }

    #[test]
    fn checksum_mismatch_names_both_hashes_and_keeps_other_files() {
        let d = tempfile::tempdir().unwrap();
        let pin: Sha256Hex = "00".repeat(32).parse().unwrap();
        let cached = cache_path(d.path(), "https://example.invalid/x.tar.gz", &pin);
        fs::create_dir_all(cached.parent().unwrap()).unwrap();
        fs::write(&cached, b"tampered").unwrap();
        let e = fetch(d.path(), "https://example.invalid/x.tar.gz", &pin).unwrap_err().to_string();
        assert!(e.contains(pin.as_str()) && e.contains(sha256_bytes(b"tampered").as_str()), "{e}");
        assert!(cached.exists(), "a mismatch deletes nothing");
    }
}
