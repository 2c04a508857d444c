//! The release's files: `SHA256SUMS`, the PEP 503 simple index and `release.json`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::digest::Sha256Hex;
use crate::tags::{LocalLabel, WheelFilename};
use crate::versions::Version;

use super::*;

/// `SHA256SUMS` in GNU format (`<hex>  <file>`), sorted by file name.
pub fn sha256sums(artifacts: &[&ArtifactEntry]) -> String {
    let mut v: Vec<&&ArtifactEntry> = artifacts.iter().collect();
    v.sort_by(|a, b| a.filename.cmp(&b.filename));
    v.iter()
        .map(|a| format!("{}  {}\n", a.sha256, a.filename))
        .collect()
}

/// The PEP 503 project name: lower case, runs of `-_.` become `-`.
pub fn pep503_name(name: &str) -> String {
    let mut out = String::new();
    let mut sep = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            sep = true;
            continue;
        }
        if sep && !out.is_empty() {
            out.push('-');
        }
        sep = false;
        out.push(c.to_ascii_lowercase());
    }
    out
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Percent-encodes what is not safe in a URL path segment (`+` in local versions).
fn url_segment(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// The PEP 503 simple indexes of the wheels among `artifacts` (others are skipped),
/// one per flavour (`cpu`, `cu130-sm120a`: [`LocalLabel::flavour`]), as PyTorch has
/// one per CUDA release: pip takes the highest local version it is offered
/// (`+cpu < +cu130.sm120a`), so an index with two flavours would give every machine
/// the GPU wheel. Flavour -> (its label, paths under `<flavour>/simple/` -> HTML).
/// Links are relative (`../../../<wheel>#sha256=<hex>`), so the tree works from
/// `file://` and any server that serves dist/ as it is. Empty when there are no wheels.
pub fn flavour_indexes(artifacts: &[&ArtifactEntry]) -> BTreeMap<String, FlavourIndex> {
    let mut flavours: BTreeMap<String, (LocalLabel, Vec<&ArtifactEntry>)> = BTreeMap::new();
    for a in artifacts {
        if let Ok(WheelFilename {
            local: Some(local), ..
        }) = a.filename.parse::<WheelFilename>()
        {
            flavours
                .entry(local.flavour())
                .or_insert_with(|| (local.clone(), vec![]))
                .1
                .push(a);
        }
    }
    flavours
        .into_iter()
        .map(|(f, (label, files))| {
            (
                f,
                FlavourIndex {
                    label,
                    pages: simple_index(&files),
                },
            )
        })
        .collect()
}

/// One flavour's index: its local version label and its pages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlavourIndex {
    pub label: LocalLabel,
    /// Paths under `<flavour>/simple/` -> HTML.
    pub pages: BTreeMap<String, String>,
}

/// A PEP 503 simple index of the wheels among `artifacts`, written at
/// `<dist>/<flavour>/simple/`: paths under it -> HTML.
fn simple_index(artifacts: &[&ArtifactEntry]) -> BTreeMap<String, String> {
    let mut projects: BTreeMap<String, Vec<&ArtifactEntry>> = BTreeMap::new();
    for a in artifacts {
        if let Ok(w) = a.filename.parse::<WheelFilename>() {
            projects
                .entry(pep503_name(&w.distribution))
                .or_default()
                .push(a);
        }
    }
    let page = |title: &str, links: String| {
        format!(
            "<!DOCTYPE html>\n<html>\n<head>\n<meta name=\"pypi:repository-version\" content=\"1.0\">\n<title>{}</title>\n</head>\n<body>\n{links}</body>\n</html>\n",
            html_escape(title)
        )
    };
    let mut out = BTreeMap::new();
    if projects.is_empty() {
        return out;
    }
    let root_links: String = projects
        .keys()
        .map(|p| {
            format!(
                "<a href=\"{}/\">{}</a><br>\n",
                url_segment(p),
                html_escape(p)
            )
        })
        .collect();
    out.insert("index.html".to_string(), page("Simple index", root_links));
    for (p, mut files) in projects {
        files.sort_by(|a, b| a.filename.cmp(&b.filename));
        let links: String = files
            .iter()
            .map(|a| {
                format!(
                    "<a href=\"../../../{}#sha256={}\">{}</a><br>\n",
                    url_segment(&a.filename),
                    a.sha256,
                    html_escape(&a.filename)
                )
            })
            .collect();
        out.insert(
            format!("{p}/index.html"),
            page(&format!("Links for {p}"), links),
        );
    }
    out
}

/// What the release prints about its indexes: for each flavour and version, the lines that
/// install `project` at that exact version from that flavour's index in `dist` (absolute),
/// its dependencies from the package index, for someone on `host` (none without wheels).
pub fn pip_lines(
    dist: &Path,
    project: &str,
    m: &ReleaseManifest,
    host: crate::platform::Os,
) -> String {
    if m.indexes.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "One index per flavour (pip installs the highest local version it is offered, so an index holds one flavour); install one into a new virtual environment, here:\n",
    );
    for (label, path) in &m.indexes {
        let versions: std::collections::BTreeSet<String> = m
            .artifacts
            .iter()
            .filter_map(|a| a.filename.parse::<WheelFilename>().ok())
            .filter(|w| w.local.as_ref().is_some_and(|l| l.to_string() == *label))
            .map(|w| w.full_version())
            .collect();
        for v in versions {
            let _ = writeln!(out, "  {label} ({project} {v}):");
            for line in crate::package::install::from_index(
                &format!("{project}=={v}"),
                &dist.join(path),
                host,
            ) {
                let _ = writeln!(out, "    {line}");
            }
        }
    }
    out
}

/// `release.json`: every artifact of the release, with its cell and plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReleaseManifest {
    pub schema: u32,
    pub tool: crate::manifest::ToolInfo,
    /// The name of the release file that wrote it last (`cpu` for `releases/cpu.toml`).
    pub release: String,
    /// That release file's recipe.
    pub recipe: String,
    /// Every cell in dist/: the last release file's, and those other release files
    /// left there (each names its recipe and release file).
    pub cells: BTreeMap<String, CellInfo>,
    /// Sorted by file name.
    pub artifacts: Vec<ReleasedArtifact>,
    /// Cells of the last release file that have no artifacts here (failed or not built).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub incomplete: Vec<String>,
    /// Each flavour's PEP 503 index (its local version label -> the index's path
    /// under dist/, `cu130.sm120a` -> `cu130-sm120a/simple`): `pip install
    /// --index-url <dist>/<path> <project>`. Empty for archives.
    #[serde(skip_serializing_if = "BTreeMap::is_empty", default)]
    pub indexes: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CellInfo {
    /// The cell's recipe (a dist/ may hold the cells of several release files).
    #[serde(skip_serializing_if = "String::is_empty", default)]
    pub recipe: String,
    /// The release file that made the cell ([`CellRecord::release`]).
    #[serde(skip_serializing_if = "String::is_empty", default)]
    pub release: String,
    pub version: Version,
    pub arch: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cuda: Option<String>,
    pub plan_hash: Sha256Hex,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleasedArtifact {
    pub filename: String,
    pub cell: String,
    pub sha256: Sha256Hex,
    pub size: u64,
    pub plan_hash: Sha256Hex,
    /// The artifact's manifest (file name in dist/).
    pub manifest: String,
}

impl ReleaseManifest {
    pub fn new(
        config: &Config,
        records: &[&CellRecord],
        incomplete: Vec<String>,
    ) -> ReleaseManifest {
        let mut artifacts: Vec<ReleasedArtifact> = records
            .iter()
            .flat_map(|r| {
                r.artifacts.iter().map(|a| ReleasedArtifact {
                    filename: a.filename.clone(),
                    cell: r.cell.clone(),
                    sha256: a.sha256.clone(),
                    size: a.size,
                    plan_hash: r.plan_hash.clone(),
                    manifest: a.manifest.clone(),
                })
            })
            .collect();
        artifacts.sort_by(|a, b| a.filename.cmp(&b.filename));
        ReleaseManifest {
            schema: SCHEMA,
            tool: crate::manifest::ToolInfo::this(),
            release: config.name(),
            recipe: config.recipe.clone(),
            cells: records
                .iter()
                .map(|r| {
                    (
                        r.cell.clone(),
                        CellInfo {
                            recipe: r.recipe.clone(),
                            release: r.release.clone(),
                            version: r.version.clone(),
                            arch: r.arch.clone(),
                            cuda: r.cuda.clone(),
                            plan_hash: r.plan_hash.clone(),
                        },
                    )
                })
                .collect(),
            indexes: flavour_indexes(
                &records
                    .iter()
                    .flat_map(|r| r.artifacts.iter())
                    .collect::<Vec<_>>(),
            )
            .into_iter()
            .map(|(f, i)| (i.label.to_string(), format!("{f}/{INDEX_DIR}")))
            .collect(),
            artifacts,
            incomplete,
        }
    }

    pub fn to_json(&self) -> Vec<u8> {
        let mut v = serde_json::to_vec_pretty(self).expect("release manifest serialises");
        v.push(b'\n');
        v
    }
}

/// Writes `data` to `path` through a temp file in the same directory and a rename, mode 0644.
pub fn write_atomic(path: &Path, data: &[u8]) -> Result<()> {
    let dir = path.parent().context("a file path has a parent")?;
    fs_err::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut t = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    std::io::Write::write_all(&mut t, data)?;
    crate::provision::unpack::set_mode(t.path(), 0o644)?;
    t.persist(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// Writes `SHA256SUMS`, each flavour's `<flavour>/simple/` (when there are wheels) and
/// `release.json` into dist/. Each index is written beside the old one and swapped in,
/// so it never mixes two releases. `records` are every cell in dist/ (the release
/// file's and those of other release files there), and each flavour's index is made
/// from all of them: the index of a flavour the previous `release.json` listed is
/// removed only when no cell of that flavour is left, and so is the single `simple/`
/// of releases from before indexes per flavour (it mixed the flavours).
pub fn write_release_files(
    dist: &Path,
    records: &[&CellRecord],
    manifest: &ReleaseManifest,
) -> Result<()> {
    let artifacts: Vec<&ArtifactEntry> = records.iter().flat_map(|r| r.artifacts.iter()).collect();
    write_atomic(&dist.join(SUMS_FILE), sha256sums(&artifacts).as_bytes())?;
    let previous: Vec<String> = crate::manifest::read_bytes(&dist.join(MANIFEST_FILE))
        .ok()
        .and_then(|b| serde_json::from_slice::<ReleaseManifest>(&b).ok())
        .map(|m| m.indexes.into_values().collect())
        .unwrap_or_default();
    let indexes = flavour_indexes(&artifacts);
    for (flavour, index) in &indexes {
        write_index(dist, flavour, &index.pages)?;
    }
    let current: Vec<&String> = manifest.indexes.values().collect();
    for path in previous.iter().filter(|p| !current.contains(p)) {
        // Only `<flavour>/simple` as this tool writes it: never a path out of dist/.
        let Some((flavour, INDEX_DIR)) = path.split_once('/') else {
            continue;
        };
        if plain_file_name(flavour).is_ok()
            && flavour.replace('-', ".").parse::<LocalLabel>().is_ok()
        {
            remove_index(&dist.join(flavour).join(INDEX_DIR), true)?;
        }
    }
    remove_index(&dist.join(INDEX_DIR), false)?;
    write_atomic(&dist.join(MANIFEST_FILE), &manifest.to_json())
}

/// `<dist>/<flavour>/simple/`, written beside the old one and swapped in.
fn write_index(dist: &Path, flavour: &str, pages: &BTreeMap<String, String>) -> Result<()> {
    let parent = dist.join(flavour);
    fs_err::create_dir_all(&parent)
        .with_context(|| format!("cannot create {}", parent.display()))?;
    crate::provision::unpack::set_mode(&parent, 0o755)?;
    let simple = parent.join(INDEX_DIR);
    let fresh = tempfile::Builder::new()
        .prefix(".simple-")
        .tempdir_in(&parent)
        .with_context(|| format!("cannot write in {}", parent.display()))?;
    for (rel, html) in pages {
        write_atomic(&fresh.path().join(rel), html.as_bytes())?;
        crate::provision::unpack::set_mode(
            fresh.path().join(rel).parent().expect("has a parent"),
            0o755,
        )?;
    }
    crate::provision::unpack::set_mode(fresh.path(), 0o755)?;
    let old = parent.join(".simple-old");
    if simple.exists() {
        let _ = fs_err::remove_dir_all(&old);
        fs_err::rename(&simple, &old)
            .with_context(|| format!("cannot replace {}", simple.display()))?;
    }
    fs_err::rename(fresh.keep(), &simple)
        .with_context(|| format!("cannot write {}", simple.display()))?;
    let _ = fs_err::remove_dir_all(&old);
    Ok(())
}

/// Removes a stale index dir and then (`flavour_dir`) its flavour dir, if that is left empty.
fn remove_index(simple: &Path, flavour_dir: bool) -> Result<()> {
    if fs_err::symlink_metadata(simple).is_ok_and(|m| m.is_dir()) {
        fs_err::remove_dir_all(simple)
            .with_context(|| format!("cannot remove the stale index {}", simple.display()))?;
        if let (true, Some(parent)) = (flavour_dir, simple.parent()) {
            // Fails, as it should, where the dir holds anything else.
            let _ = fs_err::remove_dir(parent);
        }
    }
    Ok(())
}
