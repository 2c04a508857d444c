//! Asking substituters for a plan's artifacts, and downloading them into a staging dir:
//! the listing first, bounded, and its signature checked with the substituter's key;
//! then each file, read no further than the size the listing signs, its sha256 checked;
//! then each manifest, which must be this plan's. The caller verifies the artifacts as a
//! build's own before they go into dist/.

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use sha2::Digest as _;

use super::keys;
use super::listing::{self, Listing};
use crate::digest::Sha256Hex;
use crate::report::Log;
use crate::request::substituter::{Location, Substituter};

/// The longest a substituter may keep a read waiting: past it, the build runs here.
pub const STALL: Duration = Duration::from_secs(10);

/// A plan's artifacts, downloaded and checked against the signed listing.
pub struct Hit {
    /// Where from (`https://...`, a directory).
    pub from: String,
    /// The id of the key that signed the listing.
    pub key_id: String,
    /// When its publisher built it (the signed listing's `built`).
    pub built: String,
    /// In the staging dir, each beside its manifest.
    pub staged: Vec<crate::package::Artifact>,
}

/// What asking one substituter gave.
pub enum Asked {
    /// It holds this plan's entry, signed with its key.
    Has(Listing),
    /// It has no entry for this plan.
    Missing,
    /// It could not be asked, or what it answers is refused: why.
    Refused(String),
}

/// The plan's listing at `s`, its signature checked (no artifact is downloaded): what
/// `plan` says, and the first step of [`fetch`].
pub fn ask(plan: &Sha256Hex, s: &Substituter) -> Asked {
    match listing_of(plan, s) {
        Ok(Some(l)) => Asked::Has(l),
        Ok(None) => Asked::Missing,
        Err(e) => Asked::Refused(format!("{e:#}")),
    }
}

/// The first substituter's artifacts of `plan` that pass every check, downloaded into
/// `into` (one line per substituter that has none, a warning per one refused).
pub fn fetch(plan: &Sha256Hex, subs: &[Substituter], into: &Path, log: &Log) -> Option<Hit> {
    for s in subs {
        if let Location::Http(_) = s.location {
            if crate::provision::fetch::refuse_offline("a substituter").is_err() {
                log.line(format_args!("{}: not asked (offline)", s.location));
                continue;
            }
        }
        let listing = match ask(plan, s) {
            Asked::Has(l) => l,
            Asked::Missing => {
                log.line(format_args!(
                    "{}: no artifacts of plan {}",
                    s.location,
                    &plan.as_str()[..16]
                ));
                continue;
            }
            Asked::Refused(why) => {
                log.warning(format_args!("substituter {} not used: {why}", s.location));
                continue;
            }
        };
        match download_all(plan, s, &listing, into, log) {
            Ok(staged) => {
                return Some(Hit {
                    from: s.location.to_string(),
                    key_id: s.key_id(),
                    built: listing.built,
                    staged,
                })
            }
            Err(e) => {
                log.warning(format_args!("substituter {} not used: {e:#}", s.location));
                for p in &listing.pairs {
                    for f in [&p.artifact, &p.manifest] {
                        let _ = fs_err::remove_file(into.join(&f.name));
                    }
                }
            }
        }
    }
    None
}

fn listing_of(plan: &Sha256Hex, s: &Substituter) -> Result<Option<Listing>> {
    let rel = format!("{plan}/artifacts");
    let Some(text) = read_small(&s.location, &rel, listing::MAX_BYTES)? else {
        return Ok(None);
    };
    let sig = read_small(&s.location, &format!("{rel}.minisig"), keys::MAX_SIG_BYTES)?.ok_or_else(
        || {
            anyhow!(
                "{rel} has no signature beside it ({rel}.minisig): an unsigned entry is never used"
            )
        },
    )?;
    let sig = String::from_utf8(sig).map_err(|_| anyhow!("{rel}.minisig is not text"))?;
    keys::check(&s.key, &text, &sig).map_err(|e| anyhow!("{rel}: {e}"))?;
    let text = std::str::from_utf8(&text).map_err(|_| anyhow!("{rel} is not text"))?;
    let l = Listing::parse(text).map_err(|e| anyhow!("{rel}: {e}"))?;
    if &l.plan != plan {
        bail!(
            "{rel} is signed for plan {}, not this one: an entry is used only for the plan it was built from",
            l.plan
        );
    }
    Ok(Some(l))
}

fn download_all(
    plan: &Sha256Hex,
    s: &Substituter,
    l: &Listing,
    into: &Path,
    log: &Log,
) -> Result<Vec<crate::package::Artifact>> {
    let total: u64 = l
        .pairs
        .iter()
        .map(|p| p.artifact.size + p.manifest.size)
        .sum();
    log.line(format_args!(
        "{} has plan {}'s artifacts (signed by key {}, built {}): fetching {}",
        s.location,
        &plan.as_str()[..16],
        s.key_id(),
        l.built,
        crate::provision::cache::human(total)
    ));
    // One deadline for the whole entry, as for one download of its total size: a server
    // that sends each file just within its own cannot stretch it file by file.
    let deadline = std::time::Instant::now() + crate::provision::http::deadline(total);
    let mut out = Vec::new();
    for p in &l.pairs {
        for f in [&p.manifest, &p.artifact] {
            download(
                &s.location,
                &format!("{plan}/{}", f.name),
                f,
                &into.join(&f.name),
                deadline,
                log,
            )?;
        }
        let manifest_path = into.join(&p.manifest.name);
        let m = crate::manifest::Manifest::read(&manifest_path)
            .with_context(|| format!("{}'s manifest", p.artifact.name))?;
        let planned = m.plan.hash();
        if m.plan_hash != *plan || planned != *plan {
            bail!(
                "{}'s manifest is of plan {} (its plan hashes to {planned}), not this one",
                p.artifact.name,
                m.plan_hash
            );
        }
        if m.artifact.filename != p.artifact.name
            || m.artifact.sha256.as_ref() != Some(&p.artifact.sha256)
        {
            bail!(
                "{}'s manifest describes {} (sha256 {}), not the listed artifact",
                p.artifact.name,
                m.artifact.filename,
                m.artifact
                    .sha256
                    .as_ref()
                    .map_or("none".to_string(), |s| s.to_string())
            );
        }
        out.push(crate::package::Artifact {
            path: into.join(&p.artifact.name),
            manifest_path,
            sha256: p.artifact.sha256.clone(),
            size: p.artifact.size,
        });
    }
    Ok(out)
}

/// An open file of a substituter, and the length it says it has (where it says one).
type Opened = (Box<dyn Read>, Option<u64>);

fn open(loc: &Location, rel: &str, max: u64) -> Result<Option<Opened>> {
    match loc {
        Location::Http(base) => {
            let url = format!("{}/{rel}", base.trim_end_matches('/'));
            let r = crate::provision::http::get_if_there(&url, None, Some(max), STALL)?;
            Ok(r.map(|r| {
                let len = r.len;
                (Box::new(r) as Box<dyn Read>, len)
            }))
        }
        Location::Dir(d) => {
            let path = d.join(rel);
            if fs_err::symlink_metadata(&path)
                .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
            {
                return Ok(None);
            }
            // A regular file only, opened without blocking and checked again once open:
            // a FIFO or a device swapped in cannot hang the build.
            let (f, meta) = crate::bounded::open_regular(&path)?;
            Ok(Some((Box::new(f), Some(meta.len()))))
        }
    }
}

/// A small file (listing, signature), of at most `max` bytes; `None` where it is not there.
fn read_small(loc: &Location, rel: &str, max: u64) -> Result<Option<Vec<u8>>> {
    let Some((r, len)) = open(loc, rel, max)? else {
        return Ok(None);
    };
    if len.is_some_and(|l| l > max) {
        bail!(
            "{rel} is {} bytes, more than the {max} it may hold",
            len.unwrap_or(0)
        );
    }
    let mut data = Vec::new();
    r.take(max + 1).read_to_end(&mut data)?;
    if data.len() as u64 > max {
        bail!("{rel} holds more than the {max} bytes it may");
    }
    Ok(Some(data))
}

/// Downloads `rel` to `to`: exactly the listed size, with the listed sha256.
fn download(
    loc: &Location,
    rel: &str,
    f: &listing::File,
    to: &Path,
    deadline: std::time::Instant,
    log: &Log,
) -> Result<()> {
    let (mut r, len) =
        open(loc, rel, f.size)?.ok_or_else(|| anyhow!("{rel} is listed but not there"))?;
    if let Some(l) = len.filter(|l| *l != f.size) {
        bail!(
            "{rel} is {l} bytes, but its signed listing says {}: not downloaded",
            f.size
        );
    }
    let mut out = fs_err::File::create(to)?;
    let bar = crate::progress::bytes(Some(f.size), &f.name, log.bars());
    let mut sha = sha2::Sha256::new();
    let mut got: u64 = 0;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = r
            .read(&mut buf)
            .with_context(|| format!("{rel}: reading it stopped after {got} bytes"))?;
        if n == 0 {
            break;
        }
        got += n as u64;
        if std::time::Instant::now() > deadline {
            bail!(
                "{rel}: the entry is not downloaded within its deadline (at {} kB/s, plus {} s)",
                crate::provision::http::MIN_RATE / 1000,
                crate::provision::http::ALLOWANCE.as_secs()
            );
        }
        if got > f.size {
            bail!(
                "{rel} is longer than the {} bytes its signed listing says",
                f.size
            );
        }
        sha.update(&buf[..n]);
        std::io::Write::write_all(&mut out, &buf[..n])?;
        bar.inc(n as u64);
    }
    bar.finish_and_clear();
    if got != f.size {
        bail!(
            "{rel} is truncated: {got} of the {} bytes its signed listing says",
            f.size
        );
    }
    let got_sha: Sha256Hex = hex::encode(sha.finalize()).parse().expect("hex digest");
    if got_sha != f.sha256 {
        bail!(
            "{rel} has sha256 {got_sha}, but its signed listing says {}: it was changed",
            f.sha256
        );
    }
    out.sync_all()?;
    Ok(())
}
