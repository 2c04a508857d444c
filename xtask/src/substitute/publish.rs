//! Writing a plan's artifacts into a substituter dir (`--cache-to`, `release
//! --cache-to`): `<dir>/<plan>/` with each artifact, its manifest, the listing and its
//! signature, made in a temporary dir beside it and renamed into place, so a reader sees
//! the old entry or the new one, never a part.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::keys::Signer;
use super::listing::{self, Listing};
use crate::digest::Sha256Hex;
use crate::report::Log;

/// Where and how to publish: the substituter dir, the key, and the URL it is served at
/// (for the page's install lines).
#[derive(Debug, Clone)]
pub struct Publish {
    pub dir: PathBuf,
    pub signer: Signer,
    pub url: Option<String>,
}

impl Publish {
    /// [`publish`], then the tree's page again (`page::write`).
    pub fn entry(
        &self,
        plan: &Sha256Hex,
        artifacts: &[crate::package::Artifact],
        log: &Log,
    ) -> Result<()> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        publish(&self.dir, plan, artifacts, &self.signer, now, log)?;
        self.page()
    }

    /// Writes the tree's `index.html`.
    pub fn page(&self) -> Result<()> {
        super::page::write(
            &self.dir,
            self.url.as_deref(),
            &self.signer.public,
            &format!("key {}", self.signer.id()),
        )
    }
}

/// Puts `artifacts` (in dist/, each beside its manifest) of `plan` into `dir`, signed by
/// `signer`, as built at `built` (Unix seconds). Returns the entry's dir.
pub fn publish(
    dir: &Path,
    plan: &Sha256Hex,
    artifacts: &[crate::package::Artifact],
    signer: &Signer,
    built: u64,
    log: &Log,
) -> Result<PathBuf> {
    fs_err::create_dir_all(dir)
        .with_context(|| format!("--cache-to {}: cannot create it", dir.display()))?;
    let tmp = tempfile::Builder::new()
        .prefix(".incoming-")
        .tempdir_in(dir)
        .with_context(|| format!("--cache-to {}: cannot write in it", dir.display()))?;
    let mut pairs = Vec::new();
    for a in artifacts {
        let name = file_name(&a.path);
        let mname = format!("{name}.manifest.json");
        let mut files = Vec::new();
        for (from, to) in [(&a.path, &name), (&a.manifest_path, &mname)] {
            let dest = tmp.path().join(to);
            fs_err::copy(from, &dest)?;
            files.push(listing::File {
                sha256: crate::digest::sha256_file(&dest)?,
                size: fs_err::metadata(&dest)?.len(),
                name: to.clone(),
            });
        }
        if files[0].sha256 != a.sha256 {
            anyhow::bail!(
                "{} changed while it was published (sha256 {}, built as {})",
                a.path.display(),
                files[0].sha256,
                a.sha256
            );
        }
        let manifest = files.pop().expect("two files");
        let artifact = files.pop().expect("two files");
        pairs.push(listing::Pair { artifact, manifest });
    }
    let l = Listing {
        plan: plan.clone(),
        built: crate::recipe::utc(built),
        pairs,
    };
    let text = l.render();
    fs_err::write(tmp.path().join("artifacts"), &text)?;
    let sig = signer.sign(
        text.as_bytes(),
        &format!("llama-forge plan {plan} built {}", l.built),
    )?;
    fs_err::write(tmp.path().join("artifacts.minisig"), sig)?;
    crate::durable::sync_tree(tmp.path())?;
    let at = dir.join(plan.as_str());
    // The old entry moves into a new dir of its own (no name someone could plant), the
    // new one takes its name, then the old one goes.
    let old = tempfile::Builder::new().prefix(".old-").tempdir_in(dir)?;
    if fs_err::symlink_metadata(&at).is_ok() {
        fs_err::rename(&at, old.path().join("entry"))?;
    }
    let made = tmp.keep();
    fs_err::rename(&made, &at)?;
    old.close()?;
    crate::durable::sync_dir(dir)?;
    log.line(format_args!(
        "published plan {} to {} (signed by key {})",
        &plan.as_str()[..16],
        at.display(),
        crate::request::substituter::key_id(&signer.public)
    ));
    Ok(at)
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}
