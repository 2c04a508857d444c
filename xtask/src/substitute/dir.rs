//! A local substituter dir, as `cache list` and `cache prune --substituter` see it: its
//! entries (each plan's listing, read as `fetch` would but without a key: this is the
//! publisher's own dir), and their removal.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::listing::{self, Listing};

/// One plan's entry.
#[derive(Debug)]
pub struct Entry {
    pub dir: PathBuf,
    pub listing: Listing,
    /// `built`, as Unix seconds.
    pub built_secs: u64,
}

/// The entries of `dir`, oldest first; what is not an entry (a dir whose listing is
/// missing or unreadable) is named in the second list, with why.
pub fn entries(dir: &Path) -> Result<(Vec<Entry>, Vec<String>)> {
    let mut out = Vec::new();
    let mut odd = Vec::new();
    for e in fs_err::read_dir(dir)
        .with_context(|| format!("{} is not a substituter dir", dir.display()))?
    {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || name == "index.html" {
            continue;
        }
        let path = e.path();
        let read = || -> Result<Listing, String> {
            if name.parse::<crate::digest::Sha256Hex>().is_err() {
                return Err("not a plan's entry (its name is no plan hash)".into());
            }
            let text = crate::manifest::read_capped(
                &path.join("artifacts"),
                listing::MAX_BYTES,
                "a listing",
            )
            .map_err(|e| format!("{e:#}"))?;
            let l = Listing::parse(&String::from_utf8_lossy(&text))?;
            if l.plan.as_str() != name {
                return Err(format!("its listing is of plan {}", l.plan));
            }
            Ok(l)
        };
        match read() {
            Ok(listing) => out.push(Entry {
                dir: path,
                built_secs: crate::recipe::parse_utc(&listing.built).unwrap_or(0),
                listing,
            }),
            Err(why) => odd.push(format!("{}: {why}", path.display())),
        }
    }
    out.sort_by(|a, b| (a.built_secs, &a.listing.plan).cmp(&(b.built_secs, &b.listing.plan)));
    Ok((out, odd))
}

impl Entry {
    /// Whether its listing is signed by `key` (`artifacts.minisig` beside it).
    pub fn signed_by(&self, key: &minisign::PublicKey) -> bool {
        let sig = crate::bounded::read_capped(
            &self.dir.join("artifacts.minisig"),
            super::keys::MAX_SIG_BYTES,
            "a signature",
        );
        let text = crate::bounded::read_capped(
            &self.dir.join("artifacts"),
            listing::MAX_BYTES,
            "a listing",
        );
        match (sig, text) {
            (Ok(sig), Ok(text)) => {
                super::keys::check(key, &text, &String::from_utf8_lossy(&sig)).is_ok()
            }
            _ => false,
        }
    }

    /// Whether a signature is beside its listing at all.
    pub fn has_signature(&self) -> bool {
        self.dir.join("artifacts.minisig").is_file()
    }
}

/// Moves `path` (an entry) away, into a new dir of its own beside it (never a name
/// someone could have planted), and removes it: a reader sees it whole or not at all.
pub fn remove_dir(path: &Path) -> Result<()> {
    let parent = path.parent().expect("an entry is in a dir");
    let gone = tempfile::Builder::new()
        .prefix(".old-")
        .tempdir_in(parent)?;
    fs_err::rename(path, gone.path().join("entry"))?;
    gone.close()?;
    Ok(())
}

/// Removes one entry ([`remove_dir`]).
pub fn remove(e: &Entry) -> Result<()> {
    remove_dir(&e.dir)
}
