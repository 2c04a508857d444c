//! Releases: a TOML file names a recipe, its versions, arch sets, CUDA releases
//! and Python versions. It expands into cells, each ONE native build packaged
//! for every Python of the release. After the cells ran, the release's files are
//! written from what the cells left in dist/: `SHA256SUMS`, a PEP 503 simple
//! index and `release.json`.
//!
//! Each cell that finishes writes a record, `dist/cells/<cell>.json`. The
//! release files are always made from those records. A local run and a CI
//! workflow that builds each cell in its own job and gathers the records at the
//! end (`--index-only`) then make the same files.
//!
//! Everything here except the `write_*`/`read_*` functions is pure.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::cuda::CudaVersion;
use crate::digest::Sha256Hex;
use crate::package::tags::{PyVersion, WheelFilename};
use crate::plan::target::{Accelerator, CpuBaseline};
use crate::recipe::{ArtifactKind, Recipe};
use crate::versions::Version;

/// Schema of the cell records and of `release.json`.
pub const SCHEMA: u32 = 1;
/// Where the cells' records live, under dist/.
pub const CELLS_DIR: &str = "cells";
/// Where the artifacts of a cell that broke the size budget are moved, under dist/.
pub const REJECTED_DIR: &str = "rejected";
pub const SUMS_FILE: &str = "SHA256SUMS";
pub const MANIFEST_FILE: &str = "release.json";
pub const INDEX_DIR: &str = "simple";

#[derive(Debug, thiserror::Error)]
#[error("release file {path}: {message}")]
pub struct ConfigError {
    pub path: PathBuf,
    pub message: String,
}

/// The release file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    recipe: String,
    #[serde(default)]
    versions: Vec<Version>,
    arch: Vec<Accelerator>,
    #[serde(default, deserialize_with = "cuda_list")]
    cuda: Vec<CudaVersion>,
    #[serde(default)]
    python: Vec<PyVersion>,
    #[serde(default)]
    cpu_baseline: CpuBaseline,
    max_size_mb: Option<f64>,
    source: Option<PathBuf>,
    #[serde(default)]
    ptx: bool,
    #[serde(default)]
    bundle_cuda_runtime: bool,
}

fn cuda_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<CudaVersion>, D::Error> {
    let raw = Vec::<String>::deserialize(d)?;
    raw.iter()
        .map(|s| s.parse().map_err(serde::de::Error::custom))
        .collect()
}

/// A release file, parsed and checked on its own (not yet against the recipe).
#[derive(Debug, Clone)]
pub struct Config {
    /// The release file.
    pub path: PathBuf,
    pub recipe: String,
    /// Empty: the recipe's newest release.
    pub versions: Vec<Version>,
    /// Each entry one arch set (one native build per CUDA release).
    pub arch: Vec<Accelerator>,
    pub cuda: Vec<CudaVersion>,
    pub python: Vec<PyVersion>,
    pub cpu_baseline: CpuBaseline,
    /// Largest artifact allowed, in MB (10^6 bytes).
    pub max_size_mb: Option<f64>,
    /// A local source, made absolute against the release file's directory.
    pub source: Option<PathBuf>,
    pub ptx: bool,
    pub bundle_cuda_runtime: bool,
}

impl Config {
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = fs_err::read_to_string(path).map_err(|e| ConfigError {
            path: path.to_path_buf(),
            message: format!("cannot read it: {e}"),
        })?;
        Config::parse(&text, path)
    }

    /// Parses and checks `text`; `path` names the file in errors and anchors `source`.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let err = |message: String| ConfigError {
            path: path.to_path_buf(),
            message,
        };
        let raw: RawConfig =
            toml::from_str(text).map_err(|e| err(e.to_string().trim_end().to_string()))?;
        if raw.arch.is_empty() {
            return Err(err(
                "`arch` is empty: list at least one arch set, e.g. arch = [\"cpu\", \"120\"]"
                    .into(),
            ));
        }
        dupes("versions", &raw.versions).map_err(err)?;
        dupes("arch", &raw.arch).map_err(err)?;
        dupes("cuda", &raw.cuda).map_err(err)?;
        dupes("python", &raw.python).map_err(err)?;
        let gpu = raw.arch.iter().find(|a| matches!(a, Accelerator::Cuda(_)));
        if let (Some(a), true) = (gpu, raw.cuda.is_empty()) {
            return Err(err(format!("arch `{a}` is a GPU set, but `cuda` is empty: name the CUDA releases to build with, e.g. cuda = [\"13.0\"]")));
        }
        if let Some(m) = raw.max_size_mb {
            if !(m.is_finite() && m > 0.0) {
                return Err(err(format!(
                    "max_size_mb = {m}: give a positive size in MB, e.g. 100"
                )));
            }
        }
        let source = match raw.source {
            None => None,
            Some(s) => {
                let base = path
                    .parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .unwrap_or(Path::new("."));
                let full = base.join(&s);
                let found = full.canonicalize().map_err(|e| {
                    err(format!("source = \"{}\": {} ({e}; a relative path is taken from the release file's directory)", s.display(), full.display()))
                })?;
                Some(found)
            }
        };
        Ok(Config {
            path: path.to_path_buf(),
            recipe: raw.recipe,
            versions: raw.versions,
            arch: raw.arch,
            cuda: raw.cuda,
            python: raw.python,
            cpu_baseline: raw.cpu_baseline,
            max_size_mb: raw.max_size_mb,
            source,
            ptx: raw.ptx,
            bundle_cuda_runtime: raw.bundle_cuda_runtime,
        })
    }

    /// The release's name: the file stem (`releases/cpu.toml` -> `cpu`).
    pub fn name(&self) -> String {
        self.path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "release".into())
    }

    fn error(&self, message: String) -> ConfigError {
        ConfigError {
            path: self.path.clone(),
            message,
        }
    }
}

fn dupes<T: PartialEq + std::fmt::Display>(key: &str, items: &[T]) -> Result<(), String> {
    for (i, a) in items.iter().enumerate() {
        if items[..i].contains(a) {
            return Err(format!("`{key}` lists {a} twice"));
        }
    }
    Ok(())
}

/// One native build of a release, packaged for all its Pythons.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    /// Stable, file-name-safe: `0.3.36-cpu`, `0.3.36-cu13.0-120`.
    pub name: String,
    pub version: Version,
    pub arch: Accelerator,
    /// The CUDA release, for GPU arch sets.
    pub cuda: Option<CudaVersion>,
}

impl Cell {
    pub fn new(version: Version, arch: Accelerator, cuda: Option<CudaVersion>) -> Cell {
        let safe = |s: String| {
            s.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '.' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect::<String>()
        };
        let name = match &cuda {
            None => format!("{version}-{}", safe(arch.to_string())),
            Some(c) => format!("{version}-cu{c}-{}", safe(arch.to_string())),
        };
        Cell {
            name,
            version,
            arch,
            cuda,
        }
    }
}

/// Versions x arch sets x (CUDA releases for GPU sets; one cell for `cpu`), in
/// the order the file lists them. Checks the file against its recipe.
pub fn expand(config: &Config, recipe: &Recipe) -> Result<Vec<Cell>, ConfigError> {
    if recipe.name != config.recipe {
        return Err(config.error(format!(
            "recipe = \"{}\", but the recipe given is `{}`",
            config.recipe, recipe.name
        )));
    }
    match (recipe.artifact, config.python.is_empty()) {
        (ArtifactKind::Wheel, true) => {
            return Err(config.error(format!(
                "recipe `{}` makes wheels: list their Pythons, e.g. python = [\"311\", \"312\"]",
                recipe.name
            )))
        }
        (ArtifactKind::Archive, false) => {
            return Err(config.error(format!(
                "recipe `{}` makes archives, which are not per Python: remove `python`",
                recipe.name
            )))
        }
        _ => {}
    }
    let versions = if config.versions.is_empty() {
        vec![recipe
            .release(None)
            .map_err(|e| config.error(e.to_string()))?
            .version
            .clone()]
    } else {
        for v in &config.versions {
            recipe
                .release(Some(v))
                .map_err(|e| config.error(format!("versions: {e}")))?;
        }
        config.versions.clone()
    };
    let mut cells = Vec::new();
    for v in &versions {
        for a in &config.arch {
            match a {
                Accelerator::Cpu => cells.push(Cell::new(v.clone(), a.clone(), None)),
                Accelerator::Cuda(_) => cells.extend(
                    config
                        .cuda
                        .iter()
                        .map(|c| Cell::new(v.clone(), a.clone(), Some(*c))),
                ),
            }
        }
    }
    // Two spellings of one set (`120` and `rtx5090`) would build the same wheels twice.
    let mut seen: Vec<(String, &Accelerator)> = Vec::new();
    for a in &config.arch {
        let Accelerator::Cuda(r) = a else { continue };
        let targets = r.resolve(config.ptx).targets.to_string();
        if let Some((_, first)) = seen.iter().find(|(t, _)| *t == targets) {
            return Err(config.error(format!("arch `{first}` and `{a}` build the same targets ({targets}): list each arch set once")));
        }
        seen.push((targets, a));
    }
    let mut names = BTreeSet::new();
    if let Some(c) = cells.iter().find(|c| !names.insert(&c.name)) {
        return Err(config.error(format!(
            "two arch sets give the same cell name `{}`: list each arch set once",
            c.name
        )));
    }
    Ok(cells)
}

/// The cells a `--cell` selection names (all when empty); an unknown name lists the known ones.
pub fn select<'a>(cells: &'a [Cell], names: &[String]) -> Result<Vec<&'a Cell>, String> {
    if names.is_empty() {
        return Ok(cells.iter().collect());
    }
    let mut out = Vec::new();
    for n in names {
        match cells.iter().find(|c| &c.name == n) {
            Some(c) if !out.contains(&c) => out.push(c),
            Some(_) => {}
            None => {
                let known: Vec<&str> = cells.iter().map(|c| c.name.as_str()).collect();
                return Err(format!(
                    "--cell {n}: the release has no such cell; its cells are {}",
                    known.join(", ")
                ));
            }
        }
    }
    Ok(out)
}

/// `{"include": [{"cell": ..., "version": ..., "arch": ..., "cuda": ...}]}` for a
/// GitHub Actions `strategy.matrix`.
pub fn github_matrix(cells: &[&Cell]) -> serde_json::Value {
    let include: Vec<serde_json::Value> = cells
        .iter()
        .map(|c| {
            let mut m = serde_json::Map::new();
            m.insert("cell".into(), c.name.clone().into());
            m.insert("version".into(), c.version.to_string().into());
            m.insert("arch".into(), c.arch.to_string().into());
            m.insert(
                "cuda".into(),
                c.cuda.map(|v| v.to_string()).unwrap_or_default().into(),
            );
            serde_json::Value::Object(m)
        })
        .collect();
    serde_json::json!({ "include": include })
}

/// What one finished cell left in dist/: `dist/cells/<cell>.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellRecord {
    pub schema: u32,
    pub cell: String,
    pub recipe: String,
    pub version: Version,
    pub arch: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cuda: Option<String>,
    pub plan_hash: Sha256Hex,
    /// Sorted by file name.
    pub artifacts: Vec<ArtifactEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArtifactEntry {
    /// File name in dist/.
    pub filename: String,
    pub sha256: Sha256Hex,
    pub size: u64,
    /// The artifact's manifest, file name in dist/.
    pub manifest: String,
}

impl CellRecord {
    pub fn new(
        cell: &Cell,
        recipe: &str,
        plan_hash: Sha256Hex,
        mut artifacts: Vec<ArtifactEntry>,
    ) -> CellRecord {
        artifacts.sort();
        CellRecord {
            schema: SCHEMA,
            cell: cell.name.clone(),
            recipe: recipe.to_string(),
            version: cell.version.clone(),
            arch: cell.arch.to_string(),
            cuda: cell.cuda.map(|c| c.to_string()),
            plan_hash,
            artifacts,
        }
    }

    /// Whether the record is the cell as this release file asks for it: same
    /// recipe, version and target, and a wheel for each of its Pythons.
    pub fn check(&self, cell: &Cell, config: &Config) -> Result<(), String> {
        let want = CellRecord::new(cell, &config.recipe, self.plan_hash.clone(), vec![]);
        if (&self.recipe, &self.version, &self.arch, &self.cuda)
            != (&want.recipe, &want.version, &want.arch, &want.cuda)
        {
            return Err(format!(
                "its record is for {} {} arch {} cuda {}, not what the release file asks for: build the cell again",
                self.recipe,
                self.version,
                self.arch,
                self.cuda.as_deref().unwrap_or("-")
            ));
        }
        if self.artifacts.is_empty() {
            return Err("its record lists no artifacts: build the cell again".into());
        }
        if !config.python.is_empty() {
            let have: BTreeSet<PyVersion> = self
                .artifacts
                .iter()
                .filter_map(|a| a.filename.parse::<WheelFilename>().ok())
                .map(|w| w.python)
                .collect();
            let want: BTreeSet<PyVersion> = config.python.iter().copied().collect();
            if have != want {
                let list = |s: &BTreeSet<PyVersion>| {
                    s.iter()
                        .map(|p| p.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                return Err(format!("it has wheels for Python {}, but the release asks for {}: build the cell again", list(&have), list(&want)));
            }
        }
        Ok(())
    }
}

/// The size budget: `None` when every artifact fits, else why not, with the size
/// of each library inside the artifact (from its manifest's `files`).
pub fn over_budget(
    filename: &str,
    size: u64,
    max_size_mb: f64,
    files: &BTreeMap<String, u64>,
    libraries: &BTreeSet<String>,
    config: &Path,
) -> Option<String> {
    if size as f64 <= max_size_mb * 1e6 {
        return None;
    }
    let mut libs: Vec<(&String, u64)> = files
        .iter()
        .filter(|(p, _)| libraries.contains(*p))
        .map(|(p, s)| (p, *s))
        .collect();
    libs.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let rest: Vec<u64> = files
        .iter()
        .filter(|(p, _)| !libraries.contains(*p))
        .map(|(_, s)| *s)
        .collect();
    let mut m = format!(
        "{filename} is {}, over the size budget of {max_size_mb} MB (max_size_mb in {}). Inside it, uncompressed:",
        human(size),
        config.display()
    );
    let width = libs.iter().map(|(p, _)| p.len()).max().unwrap_or(0);
    for (p, s) in &libs {
        let _ = write!(m, "\n  {p:<width$}  {}", human(*s));
    }
    if !rest.is_empty() {
        let _ = write!(
            m,
            "\n  {:<width$}  {}",
            format!("other files ({})", rest.len()),
            human(rest.iter().sum())
        );
    }
    m.push_str("\nBuild fewer GPU targets, leave out ptx, or raise max_size_mb.");
    Some(m)
}

/// `12.3 MB`, `45.6 kB`, `789 B` (decimal units, as the rest of the tool prints).
pub fn human(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= 1e6 {
        format!("{:.1} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.1} kB", b / 1e3)
    } else {
        format!("{bytes} B")
    }
}

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

/// The PEP 503 simple index of the wheels among `artifacts` (others are
/// skipped): paths under `simple/` -> HTML. Links are relative
/// (`../../<wheel>#sha256=<hex>`), so the tree works from `file://` and any server
/// that serves dist/ as it is. Empty when there are no wheels.
pub fn simple_index(artifacts: &[&ArtifactEntry]) -> BTreeMap<String, String> {
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
                    "<a href=\"../../{}#sha256={}\">{}</a><br>\n",
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

/// `release.json`: every artifact of the release, with its cell and plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReleaseManifest {
    pub schema: u32,
    pub tool: crate::manifest::ToolInfo,
    /// The release file's name (`cpu` for `releases/cpu.toml`).
    pub release: String,
    pub recipe: String,
    pub cells: BTreeMap<String, CellInfo>,
    /// Sorted by file name.
    pub artifacts: Vec<ReleasedArtifact>,
    /// Cells of the release file that have no artifacts here (failed or not built).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub incomplete: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CellInfo {
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
                            version: r.version.clone(),
                            arch: r.arch.clone(),
                            cuda: r.cuda.clone(),
                            plan_hash: r.plan_hash.clone(),
                        },
                    )
                })
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

/// One line of the summary table.
#[derive(Debug, Clone)]
pub struct SummaryRow {
    pub cell: String,
    pub status: String,
    pub seconds: Option<f64>,
    pub artifacts: usize,
    pub bytes: u64,
}

/// The table printed at the end of a release.
pub fn summary_table(rows: &[SummaryRow]) -> String {
    let cells: Vec<[String; 5]> = rows
        .iter()
        .map(|r| {
            [
                r.cell.clone(),
                r.status.clone(),
                r.seconds
                    .map(|s| format!("{s:.1} s"))
                    .unwrap_or_else(|| "-".into()),
                r.artifacts.to_string(),
                if r.artifacts == 0 {
                    "-".into()
                } else {
                    human(r.bytes)
                },
            ]
        })
        .collect();
    let head = ["cell", "status", "time", "artifacts", "size"];
    let mut w = head.map(str::len);
    for c in &cells {
        for (i, s) in c.iter().enumerate() {
            w[i] = w[i].max(s.chars().count());
        }
    }
    let line = |c: &[String; 5]| {
        format!(
            "{:<a$}  {:<b$}  {:>c$}  {:>d$}  {:>e$}\n",
            c[0],
            c[1],
            c[2],
            c[3],
            c[4],
            a = w[0],
            b = w[1],
            c = w[2],
            d = w[3],
            e = w[4]
        )
    };
    let mut out = line(&head.map(String::from));
    out.push_str(&line(&w.map(|n| "-".repeat(n))));
    for c in &cells {
        out.push_str(&line(c));
    }
    out
}

/// Writes `data` to `path` through a temp file in the same directory and a rename, mode 0644.
pub fn write_atomic(path: &Path, data: &[u8]) -> Result<()> {
    let dir = path.parent().context("a file path has a parent")?;
    fs_err::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut t = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    std::io::Write::write_all(&mut t, data)?;
    crate::provision::fetch::set_mode(t.path(), 0o644)?;
    t.persist(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

pub fn record_path(dist: &Path, cell: &str) -> PathBuf {
    dist.join(CELLS_DIR).join(format!("{cell}.json"))
}

pub fn write_record(dist: &Path, record: &CellRecord) -> Result<()> {
    let mut v = serde_json::to_vec_pretty(record).expect("record serialises");
    v.push(b'\n');
    write_atomic(&record_path(dist, &record.cell), &v)
}

/// The cell's record in dist/, if there is one.
pub fn read_record(dist: &Path, cell: &str) -> Result<Option<CellRecord>> {
    let p = record_path(dist, cell);
    let text = match fs_err::read(&p) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", p.display())),
    };
    let r: CellRecord = serde_json::from_slice(&text).with_context(|| {
        format!(
            "{} is not a cell record of this tool: delete it and build the cell again",
            p.display()
        )
    })?;
    anyhow::ensure!(
        r.schema == SCHEMA,
        "{}: record schema {} is not {SCHEMA}: build the cell again",
        p.display(),
        r.schema
    );
    anyhow::ensure!(
        r.cell == cell,
        "{} is the record of cell `{}`: delete it and build the cell again",
        p.display(),
        r.cell
    );
    Ok(Some(r))
}

pub fn remove_record(dist: &Path, cell: &str) -> Result<()> {
    let p = record_path(dist, cell);
    match fs_err::remove_file(&p) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("cannot remove {}", p.display()))
        }
        _ => Ok(()),
    }
}

/// Writes `SHA256SUMS`, `simple/` (when there are wheels) and `release.json` into dist/.
/// `simple/` is written beside the old one and swapped in, so it never mixes two releases.
pub fn write_release_files(
    dist: &Path,
    records: &[&CellRecord],
    manifest: &ReleaseManifest,
) -> Result<()> {
    let artifacts: Vec<&ArtifactEntry> = records.iter().flat_map(|r| r.artifacts.iter()).collect();
    write_atomic(&dist.join(SUMS_FILE), sha256sums(&artifacts).as_bytes())?;
    let index = simple_index(&artifacts);
    let simple = dist.join(INDEX_DIR);
    if !index.is_empty() {
        let fresh = tempfile::Builder::new()
            .prefix(".simple-")
            .tempdir_in(dist)
            .with_context(|| format!("cannot write in {}", dist.display()))?;
        for (rel, html) in &index {
            write_atomic(&fresh.path().join(rel), html.as_bytes())?;
            crate::provision::fetch::set_mode(
                fresh.path().join(rel).parent().expect("has a parent"),
                0o755,
            )?;
        }
        crate::provision::fetch::set_mode(fresh.path(), 0o755)?;
        let old = dist.join(".simple-old");
        if simple.exists() {
            let _ = fs_err::remove_dir_all(&old);
            fs_err::rename(&simple, &old)
                .with_context(|| format!("cannot replace {}", simple.display()))?;
        }
        fs_err::rename(fresh.keep(), &simple)
            .with_context(|| format!("cannot write {}", simple.display()))?;
        let _ = fs_err::remove_dir_all(&old);
    } else if simple.exists() {
        fs_err::remove_dir_all(&simple)
            .with_context(|| format!("cannot remove the stale index {}", simple.display()))?;
    }
    write_atomic(&dist.join(MANIFEST_FILE), &manifest.to_json())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recipe(name: &str) -> Recipe {
        Recipe::find(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("../recipes"),
            name,
        )
        .unwrap()
    }

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("releases/test.toml"))
    }

    fn cells(text: &str, r: &str) -> Vec<String> {
        expand(&parse(text).unwrap(), &recipe(r))
            .unwrap()
            .into_iter()
            .map(|c| c.name)
            .collect()
    }

    #[test]
    fn parses_a_full_release_file() {
        let c = parse(
            r#"
recipe = "llama-cpp-python"
versions = ["0.3.36"]
arch = ["cpu", "120", "120,121"]
cuda = ["13.0", "13.1"]
python = ["310", "3.11"]
cpu_baseline = "x86-64-v3"
max_size_mb = 0.5
"#,
        )
        .unwrap();
        assert_eq!(
            c.python,
            vec!["310".parse().unwrap(), "311".parse().unwrap()]
        );
        assert_eq!(c.cpu_baseline, CpuBaseline::V3);
        assert_eq!(c.max_size_mb, Some(0.5));
        assert_eq!(c.name(), "test");
    }

    #[test]
    fn errors_name_the_file_and_the_key() {
        let e = parse("recipe = \"llama.cpp\"\narch = [\"cpu\"]\npyton = [\"311\"]\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("releases/test.toml")
                && e.contains("unknown field `pyton`")
                && e.contains("line 3"),
            "{e}"
        );
        let e = parse("recipe = \"llama.cpp\"\narch = [\"cpu\", \"gpu\"]\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("releases/test.toml")
                && e.contains("unknown --arch value `gpu`")
                && e.contains("line 2"),
            "{e}"
        );
        let e = parse("recipe = \"x\"\narch = [\"cpu\"]\npython = [\"27\"]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("`27` is not a Python version"), "{e}");
        let e = parse("recipe = \"x\"\narch = [\"120\"]\ncuda = [\"thirteen\"]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("invalid CUDA version `thirteen`"), "{e}");
        let e = parse("recipe = \"x\"\narch = [\"120\"]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("`cuda` is empty"), "{e}");
        let e = parse("recipe = \"x\"\narch = []\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("`arch` is empty"), "{e}");
        let e = parse("recipe = \"x\"\narch = [\"cpu\"]\nmax_size_mb = -1\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("max_size_mb = -1"), "{e}");
        let e = parse("recipe = \"x\"\narch = [\"cpu\", \"CPU\"]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("`arch` lists cpu twice"), "{e}");
        let e = parse("recipe = \"x\"\narch = [\"cpu\"]\nsource = \"no/such/dir\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("source = \"no/such/dir\"") && e.contains("releases/no/such/dir"),
            "{e}"
        );
    }

    #[test]
    fn errors_against_the_recipe() {
        let check = |text: &str, r: &str, needle: &str| {
            let e = expand(&parse(text).unwrap(), &recipe(r))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(needle) && e.contains("releases/test.toml"),
                "{e}"
            );
        };
        check(
            "recipe = \"llama-cpp-python\"\narch = [\"cpu\"]\n",
            "llama-cpp-python",
            "list their Pythons",
        );
        check(
            "recipe = \"llama.cpp\"\narch = [\"cpu\"]\npython = [\"311\"]\n",
            "llama.cpp",
            "remove `python`",
        );
        check(
            "recipe = \"llama.cpp\"\nversions = [\"9.9\"]\narch = [\"cpu\"]\n",
            "llama.cpp",
            "no release `9.9`",
        );
        check(
            "recipe = \"llama.cpp\"\narch = [\"120\", \"rtx5090\"]\ncuda = [\"13.0\"]\n",
            "llama.cpp",
            "arch `120` and `rtx5090` build the same targets (120a-real)",
        );
    }

    #[test]
    fn cells_are_versions_by_arch_sets_by_cuda() {
        let names = cells(
            "recipe = \"llama-cpp-python\"\nversions = [\"0.3.36\", \"0.3.16\"]\narch = [\"cpu\", \"120\", \"120,121\"]\ncuda = [\"13.0\", \"13.1\"]\npython = [\"311\", \"312\"]\n",
            "llama-cpp-python",
        );
        assert_eq!(
            names,
            [
                "0.3.36-cpu",
                "0.3.36-cu13.0-120",
                "0.3.36-cu13.1-120",
                "0.3.36-cu13.0-120_121",
                "0.3.36-cu13.1-120_121",
                "0.3.16-cpu",
                "0.3.16-cu13.0-120",
                "0.3.16-cu13.1-120",
                "0.3.16-cu13.0-120_121",
                "0.3.16-cu13.1-120_121",
            ]
        );
        // cuda is ignored for cpu; versions default to the recipe's newest.
        assert_eq!(
            cells(
                "recipe = \"llama.cpp\"\narch = [\"cpu\"]\ncuda = [\"13.0\"]\n",
                "llama.cpp"
            ),
            ["0.3.36-cpu"]
        );
    }

    #[test]
    fn selects_cells_by_name() {
        let all = expand(
            &parse("recipe = \"llama.cpp\"\narch = [\"cpu\", \"120\"]\ncuda = [\"13.0\"]\n")
                .unwrap(),
            &recipe("llama.cpp"),
        )
        .unwrap();
        assert_eq!(select(&all, &[]).unwrap().len(), 2);
        let one = select(&all, &["0.3.36-cu13.0-120".into()]).unwrap();
        assert_eq!(one[0].cuda, Some(CudaVersion::new(13, 0)));
        let e = select(&all, &["0.3.36-gpu".into()]).unwrap_err();
        assert!(e.contains("0.3.36-cpu, 0.3.36-cu13.0-120"), "{e}");
        let m = github_matrix(&select(&all, &[]).unwrap());
        assert_eq!(
            m.to_string(),
            r#"{"include":[{"cell":"0.3.36-cpu","version":"0.3.36","arch":"cpu","cuda":""},{"cell":"0.3.36-cu13.0-120","version":"0.3.36","arch":"120","cuda":"13.0"}]}"#
        );
    }

    fn entry(filename: &str, byte: char, size: u64) -> ArtifactEntry {
        ArtifactEntry {
            filename: filename.into(),
            sha256: byte.to_string().repeat(64).parse().unwrap(),
            size,
            manifest: format!("{filename}.manifest.json"),
        }
    }

    #[test]
    fn sha256sums_and_simple_index() {
        let a = entry(
            "llama_cpp_python-0.3.36+cpu-cp312-cp312-manylinux_2_17_x86_64.whl",
            'b',
            10,
        );
        let b = entry(
            "llama_cpp_python-0.3.36+cpu-cp311-cp311-manylinux_2_17_x86_64.whl",
            'a',
            10,
        );
        let c = entry("llama.cpp-0.3.36-cpu-linux-x86_64.tar.gz", 'c', 10);
        let all = [&a, &b, &c];
        assert_eq!(
            sha256sums(&all),
            format!(
                "{}  llama.cpp-0.3.36-cpu-linux-x86_64.tar.gz\n{}  llama_cpp_python-0.3.36+cpu-cp311-cp311-manylinux_2_17_x86_64.whl\n{}  llama_cpp_python-0.3.36+cpu-cp312-cp312-manylinux_2_17_x86_64.whl\n",
                "c".repeat(64),
                "a".repeat(64),
                "b".repeat(64)
            )
        );
        let index = simple_index(&all);
        assert_eq!(
            index.keys().collect::<Vec<_>>(),
            ["index.html", "llama-cpp-python/index.html"]
        );
        assert!(index["index.html"].contains("<a href=\"llama-cpp-python/\">llama-cpp-python</a>"));
        let page = &index["llama-cpp-python/index.html"];
        let first = page.find("cp311").unwrap();
        assert!(first < page.find("cp312").unwrap(), "sorted");
        assert!(page.contains(&format!(
            "<a href=\"../../llama_cpp_python-0.3.36%2Bcpu-cp311-cp311-manylinux_2_17_x86_64.whl#sha256={}\">llama_cpp_python-0.3.36+cpu-cp311-cp311-manylinux_2_17_x86_64.whl</a>",
            "a".repeat(64)
        )));
        assert!(
            !page.contains("tar.gz"),
            "archives are not in the Python index"
        );
        assert!(simple_index(&[&c]).is_empty());
        assert_eq!(pep503_name("Llama_CPP.python"), "llama-cpp-python");
        assert_eq!(pep503_name("a__-b"), "a-b");
    }

    #[test]
    fn size_budget_lists_each_library() {
        let files: BTreeMap<String, u64> = [
            ("llama_cpp/lib/libggml-cuda.so", 150_000_000),
            ("llama_cpp/lib/libllama.so", 2_500_000),
            ("llama_cpp/__init__.py", 1_000),
            ("llama_cpp/llama.py", 2_000),
        ]
        .into_iter()
        .map(|(p, s)| (p.to_string(), s))
        .collect();
        let libs: BTreeSet<String> = ["llama_cpp/lib/libggml-cuda.so", "llama_cpp/lib/libllama.so"]
            .into_iter()
            .map(String::from)
            .collect();
        let cfg = Path::new("releases/x.toml");
        assert_eq!(
            over_budget("x.whl", 100_000_000, 100.0, &files, &libs, cfg),
            None,
            "exactly the budget fits"
        );
        let m = over_budget("x.whl", 120_000_000, 100.0, &files, &libs, cfg).unwrap();
        assert_eq!(
            m,
            "x.whl is 120.0 MB, over the size budget of 100 MB (max_size_mb in releases/x.toml). Inside it, uncompressed:\n  \
             llama_cpp/lib/libggml-cuda.so  150.0 MB\n  \
             llama_cpp/lib/libllama.so      2.5 MB\n  \
             other files (2)                3.0 kB\n\
             Build fewer GPU targets, leave out ptx, or raise max_size_mb."
        );
        assert!(over_budget("x.whl", 20_000, 0.01, &files, &libs, cfg)
            .unwrap()
            .contains("budget of 0.01 MB"));
    }

    #[test]
    fn record_check_catches_a_stale_cell() {
        let cfg =
            parse("recipe = \"llama-cpp-python\"\narch = [\"cpu\"]\npython = [\"311\", \"312\"]\n")
                .unwrap();
        let cell = &expand(&cfg, &recipe("llama-cpp-python")).unwrap()[0];
        let wheel = |py: &str| {
            entry(
                &format!("llama_cpp_python-0.3.36+cpu-cp{py}-cp{py}-manylinux_2_17_x86_64.whl"),
                'a',
                1,
            )
        };
        let sha: Sha256Hex = "d".repeat(64).parse().unwrap();
        let ok = CellRecord::new(
            cell,
            "llama-cpp-python",
            sha.clone(),
            vec![wheel("312"), wheel("311")],
        );
        assert_eq!(ok.artifacts[0].filename, wheel("311").filename, "sorted");
        ok.check(cell, &cfg).unwrap();
        let short = CellRecord::new(cell, "llama-cpp-python", sha.clone(), vec![wheel("311")]);
        assert!(short
            .check(cell, &cfg)
            .unwrap_err()
            .contains("wheels for Python 3.11, but the release asks for 3.11, 3.12"));
        let mut other = ok.clone();
        other.version = "0.3.16".parse().unwrap();
        assert!(other.check(cell, &cfg).unwrap_err().contains("0.3.16"));
    }

    #[test]
    fn release_manifest_is_sorted_and_complete() {
        let cfg = parse("recipe = \"llama.cpp\"\narch = [\"cpu\", \"120\"]\ncuda = [\"13.0\"]\n")
            .unwrap();
        let cells = expand(&cfg, &recipe("llama.cpp")).unwrap();
        let r1 = CellRecord::new(
            &cells[1],
            "llama.cpp",
            "1".repeat(64).parse().unwrap(),
            vec![entry("b.tar.gz", 'b', 2)],
        );
        let r0 = CellRecord::new(
            &cells[0],
            "llama.cpp",
            "0".repeat(64).parse().unwrap(),
            vec![entry("a.tar.gz", 'a', 1)],
        );
        let m = ReleaseManifest::new(&cfg, &[&r1, &r0], vec![]);
        assert_eq!(
            m.artifacts
                .iter()
                .map(|a| (a.filename.as_str(), a.cell.as_str()))
                .collect::<Vec<_>>(),
            [
                ("a.tar.gz", "0.3.36-cpu"),
                ("b.tar.gz", "0.3.36-cu13.0-120")
            ]
        );
        assert_eq!(m.artifacts[1].plan_hash.as_str(), "1".repeat(64));
        assert_eq!(
            m,
            ReleaseManifest::new(&cfg, &[&r0, &r1], vec![]),
            "order of the records does not matter"
        );
        let json = String::from_utf8(m.to_json()).unwrap();
        assert!(!json.contains("incomplete"));
        let partial = ReleaseManifest::new(&cfg, &[&r0], vec![cells[1].name.clone()]);
        assert!(String::from_utf8(partial.to_json())
            .unwrap()
            .contains("\"incomplete\": [\n    \"0.3.36-cu13.0-120\""));
    }

    #[test]
    fn summary_table_aligns() {
        let rows = [
            SummaryRow {
                cell: "0.3.36-cpu".into(),
                status: "built".into(),
                seconds: Some(12.34),
                artifacts: 2,
                bytes: 9_000_000,
            },
            SummaryRow {
                cell: "0.3.36-cu13.0-120".into(),
                status: "FAILED".into(),
                seconds: None,
                artifacts: 0,
                bytes: 0,
            },
        ];
        assert_eq!(
            summary_table(&rows),
            "cell               status    time  artifacts    size\n\
             -----------------  ------  ------  ---------  ------\n\
             0.3.36-cpu         built   12.3 s          2  9.0 MB\n\
             0.3.36-cu13.0-120  FAILED       -          0       -\n"
        );
    }

    #[test]
    fn release_files_are_written_and_replaced() {
        let d = tempfile::tempdir().unwrap();
        let cfg =
            parse("recipe = \"llama-cpp-python\"\narch = [\"cpu\"]\npython = [\"311\"]\n").unwrap();
        let cell = &expand(&cfg, &recipe("llama-cpp-python")).unwrap()[0];
        let w = entry(
            "llama_cpp_python-0.3.36+cpu-cp311-cp311-manylinux_2_17_x86_64.whl",
            'a',
            1,
        );
        let rec = CellRecord::new(
            cell,
            "llama-cpp-python",
            "d".repeat(64).parse().unwrap(),
            vec![w],
        );
        write_record(d.path(), &rec).unwrap();
        assert_eq!(
            read_record(d.path(), &cell.name).unwrap(),
            Some(rec.clone())
        );
        let m = ReleaseManifest::new(&cfg, &[&rec], vec![]);
        write_release_files(d.path(), &[&rec], &m).unwrap();
        write_release_files(d.path(), &[&rec], &m).unwrap();
        assert!(d
            .path()
            .join("simple/llama-cpp-python/index.html")
            .is_file());
        assert!(!d.path().join(".simple-old").exists());
        let leftovers: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        let mut leftovers = leftovers;
        leftovers.sort();
        assert_eq!(leftovers, ["SHA256SUMS", "cells", "release.json", "simple"]);
        remove_record(d.path(), &cell.name).unwrap();
        remove_record(d.path(), &cell.name).unwrap();
        assert_eq!(read_record(d.path(), &cell.name).unwrap(), None);
    }
}
