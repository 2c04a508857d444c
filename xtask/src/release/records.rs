//! Cell records: what one finished cell left in dist/ (`dist/cells/<cell>.json`), and the size budget.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::digest::Sha256Hex;
use crate::tags::{PythonTag, WheelFilename};
use crate::versions::Version;

use super::*;

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
    /// The release file that made the cell: its path relative to the checkout (or
    /// its absolute path, for a file outside it). Empty in records from before it
    /// was written down. Release files that share a dist/ keep each other's cells.
    #[serde(skip_serializing_if = "String::is_empty", default)]
    pub release: String,
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

/// Why a cell's record is not the cell as the release file asks for it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordMismatch {
    #[error(
        "its record is for {recipe} {version} arch {arch} cuda {}, not what the release file asks for: build the cell again",
        .cuda.as_deref().unwrap_or("-")
    )]
    OtherCell {
        recipe: String,
        version: Version,
        arch: String,
        cuda: Option<String>,
    },
    #[error("its record lists no artifacts: build the cell again")]
    NoArtifacts,
    #[error(
        "it has wheels for Python {}, but the release asks for {}: build the cell again",
        py_list(.have),
        py_list(.want)
    )]
    Pythons {
        have: BTreeSet<PythonTag>,
        want: BTreeSet<PythonTag>,
    },
}

/// `3.11, 3.12`, or `py3 (every Python)` for a `py3-none` wheel; `none` when empty.
fn py_list(s: &BTreeSet<PythonTag>) -> String {
    if s.is_empty() {
        return "none".into();
    }
    s.iter()
        .map(|p| match p {
            PythonTag::Py3 => "py3 (every Python)".to_string(),
            PythonTag::CPython(v) => v.to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ")
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
            release: String::new(),
        }
    }

    /// The record, as made by the release file `release` (see [`CellRecord::release`]).
    pub fn of_release(mut self, release: &str) -> CellRecord {
        self.release = release.to_string();
        self
    }

    /// The release file that made it, as a message names it.
    pub fn release_name(&self) -> &str {
        if self.release.is_empty() {
            "an earlier release file"
        } else {
            &self.release
        }
    }

    /// Whether the record is the cell as this release file asks for it: same
    /// recipe, version and target, and a wheel for each of its Pythons.
    pub fn check(&self, cell: &Cell, config: &Config) -> Result<(), RecordMismatch> {
        let want = CellRecord::new(cell, &config.recipe, self.plan_hash.clone(), vec![]);
        if (&self.recipe, &self.version, &self.arch, &self.cuda)
            != (&want.recipe, &want.version, &want.arch, &want.cuda)
        {
            return Err(RecordMismatch::OtherCell {
                recipe: self.recipe.clone(),
                version: self.version.clone(),
                arch: self.arch.clone(),
                cuda: self.cuda.clone(),
            });
        }
        if self.artifacts.is_empty() {
            return Err(RecordMismatch::NoArtifacts);
        }
        let have: BTreeSet<PythonTag> = self
            .artifacts
            .iter()
            .filter_map(|a| a.filename.parse::<WheelFilename>().ok())
            .map(|w| w.python)
            .collect();
        // Archives have no wheels and a release of archives no `python`.
        if !have.is_empty() || !config.python.is_empty() {
            let want: BTreeSet<PythonTag> = crate::plan::WheelPythons::from_asked(&config.python)
                .tags()
                .into_iter()
                .collect();
            if have != want {
                return Err(RecordMismatch::Pythons { have, want });
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
    for (i, a) in r.artifacts.iter().enumerate() {
        for (field, name) in [("filename", &a.filename), ("manifest", &a.manifest)] {
            if let Err(why) = plain_file_name(name) {
                anyhow::bail!(
                    "{}: artifacts[{i}].{field} is {name:?}, which {why}: a record names files in dist/ by their plain name only. Delete the record and build the cell again",
                    p.display()
                );
            }
        }
    }
    Ok(Some(r))
}

/// Whether `name` is a plain file name, as a record may name a file in dist/: no
/// path (`/`, `\`, `..`, absolute), no NUL or control character, not starting
/// with `-` or `.` (an option to a tool, a hidden file, `.` itself). `Err`: why not.
pub fn plain_file_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        return Err("is empty");
    }
    if name.contains('/') || name.contains('\\') {
        return Err("is a path (it has `/` or `\\`)");
    }
    if name.contains("..") {
        return Err("has `..`");
    }
    if name.chars().any(|c| c.is_control()) {
        return Err("has a NUL or control character");
    }
    if name.starts_with('-') || name.starts_with('.') {
        return Err("starts with `-` or `.`");
    }
    if name.contains(':') {
        return Err("has `:` (a drive or stream on Windows)");
    }
    Ok(())
}

/// `dist/<name>`, when it is a regular file there (not a link, not a dir, not a FIFO
/// or device); `Err`: what it is instead, with the path.
fn regular_in(dist: &Path, name: &str) -> Result<PathBuf, String> {
    let p = dist.join(name);
    match fs_err::symlink_metadata(&p) {
        Ok(m) if m.file_type().is_file() => Ok(p),
        Ok(m) if m.file_type().is_symlink() => Err(format!(
            "its record lists {}, which is a symbolic link, not a file in dist/: remove the link and build the cell again",
            p.display()
        )),
        Ok(_) => Err(format!(
            "its record lists {}, which is not a regular file: remove it and build the cell again",
            p.display()
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!(
            "its record lists {}, which is not there: build the cell again",
            p.display()
        )),
        Err(e) => Err(format!("{e:#}")),
    }
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

// Checking the records in dist/.

/// The cells' records in dist/, checked: artifacts there with the recorded
/// sha256, and within the size budget.
pub(super) struct Gathered {
    pub accepted: BTreeMap<String, CellRecord>,
    /// Cell -> its status in the summary, and why its record was not taken.
    pub rejected: BTreeMap<String, (&'static str, String)>,
    /// Artifacts in dist/ that no accepted cell lists.
    pub strays: Vec<String>,
    /// The records of other release files' cells in dist/ whose artifacts are there
    /// as recorded: the release's files list them too.
    pub others: BTreeMap<String, CellRecord>,
    /// Records of other release files in dist/ that are not listed, each with why.
    pub notes: Vec<String>,
}

/// `release` names the release file as its records do ([`CellRecord::release`]).
pub(super) fn gather(
    config: &Config,
    cells: &[Cell],
    dist: &Path,
    release: &str,
) -> Result<Gathered> {
    let mut g = Gathered {
        accepted: BTreeMap::new(),
        rejected: BTreeMap::new(),
        strays: vec![],
        others: BTreeMap::new(),
        notes: vec![],
    };
    let mut owner: BTreeMap<String, String> = BTreeMap::new();
    for c in cells {
        let record = match read_record(dist, &c.name) {
            Ok(Some(r)) => r,
            Ok(None) => continue,
            Err(e) => {
                g.rejected
                    .insert(c.name.clone(), (FAILED, format!("{e:#}")));
                continue;
            }
        };
        match check_cell(config, c, &record, dist, &owner) {
            Ok(()) => {
                for a in &record.artifacts {
                    owner.insert(a.filename.clone(), c.name.clone());
                }
                g.accepted.insert(c.name.clone(), record);
            }
            Err(Rejection::Stale(why)) => {
                g.rejected.insert(c.name.clone(), (FAILED, why));
            }
            Err(Rejection::OverBudget(why)) => {
                let moved = reject(dist, &record)?;
                remove_record(dist, &c.name)?;
                let why = format!(
                    "{why}\nmoved to {}: {}",
                    dist.join(REJECTED_DIR).display(),
                    moved.join(", ")
                );
                g.rejected.insert(c.name.clone(), (OVER_BUDGET, why));
            }
        }
    }
    // The other records in dist/: another release file's cells, kept; this file's own
    // cells that it no longer has are left out, as before.
    for f in files_in(&dist.join(CELLS_DIR)) {
        let Some(name) = f.strip_suffix(".json") else {
            continue;
        };
        if cells.iter().any(|c| c.name == name) || plain_file_name(name).is_err() {
            continue;
        }
        let record = match read_record(dist, name) {
            Ok(Some(r)) => r,
            Ok(None) => continue,
            Err(e) => {
                g.notes.push(format!("{e:#}: not listed"));
                continue;
            }
        };
        if record.release == release {
            continue;
        }
        match check_other(&record, dist, &owner) {
            Ok(()) => {
                for a in &record.artifacts {
                    owner.insert(a.filename.clone(), record.cell.clone());
                }
                g.others.insert(record.cell.clone(), record);
            }
            Err(why) => g.notes.push(format!(
                "cell {} of {} in {}: {why}; it is not listed (build it again with its release file)",
                record.cell,
                record.release_name(),
                dist.display()
            )),
        }
    }
    for f in files_in(dist) {
        if [".whl", ".tar.gz", ".zip"].iter().any(|x| f.ends_with(x)) && !owner.contains_key(&f) {
            g.strays.push(f);
        }
    }
    Ok(g)
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs_err::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

enum Rejection {
    /// The record does not match dist/ or the release file.
    Stale(String),
    /// An artifact is larger than `max_size_mb`.
    OverBudget(String),
}

fn check_cell(
    config: &Config,
    cell: &Cell,
    record: &CellRecord,
    dist: &Path,
    owner: &BTreeMap<String, String>,
) -> Result<(), Rejection> {
    record
        .check(cell, config)
        .map_err(|e| Rejection::Stale(e.to_string()))?;
    for a in &record.artifacts {
        if let Some(other) = owner.get(&a.filename) {
            return Err(Rejection::Stale(format!(
                "{} is also an artifact of cell {other}",
                a.filename
            )));
        }
        let p = regular_in(dist, &a.filename).map_err(Rejection::Stale)?;
        regular_in(dist, &a.manifest).map_err(Rejection::Stale)?;
        let sha = crate::digest::sha256_file(&p).map_err(|e| Rejection::Stale(format!("{e:#}")))?;
        if sha != a.sha256 {
            return Err(Rejection::Stale(format!(
                "{} has sha256 {sha}, but the cell built {}: build the cell again",
                p.display(),
                a.sha256
            )));
        }
    }
    if let Some(max) = config.max_size_mb {
        let mut over = Vec::new();
        for a in &record.artifacts {
            let path = regular_in(dist, &a.manifest).map_err(Rejection::Stale)?;
            let m = crate::manifest::Manifest::read(&path)
                .map_err(|e| Rejection::Stale(format!("{e:#}")))?;
            let files: BTreeMap<String, u64> =
                m.files.iter().map(|(p, f)| (p.clone(), f.size)).collect();
            let libs: BTreeSet<String> = m.binaries.keys().cloned().collect();
            if let Some(why) = over_budget(&a.filename, a.size, max, &files, &libs, &config.path) {
                over.push(why);
            }
        }
        if !over.is_empty() {
            return Err(Rejection::OverBudget(over.join("\n")));
        }
    }
    Ok(())
}

/// Whether another release file's record still is what dist/ holds: each artifact
/// and its manifest there, with the recorded sha256, listed by no cell taken before.
fn check_other(
    record: &CellRecord,
    dist: &Path,
    owner: &BTreeMap<String, String>,
) -> Result<(), String> {
    if record.artifacts.is_empty() {
        return Err(RecordMismatch::NoArtifacts.to_string());
    }
    for a in &record.artifacts {
        if let Some(other) = owner.get(&a.filename) {
            return Err(format!("{} is now an artifact of cell {other}", a.filename));
        }
        let p = regular_in(dist, &a.filename)?;
        regular_in(dist, &a.manifest)?;
        let sha = crate::digest::sha256_file(&p).map_err(|e| format!("{e:#}"))?;
        if sha != a.sha256 {
            return Err(format!(
                "{} has sha256 {sha}, but the cell built {}",
                p.display(),
                a.sha256
            ));
        }
    }
    Ok(())
}

/// Moves a cell's artifacts and their manifests to dist/rejected/.
fn reject(dist: &Path, record: &CellRecord) -> Result<Vec<String>> {
    let to = dist.join(REJECTED_DIR);
    fs_err::create_dir_all(&to).with_context(|| format!("cannot create {}", to.display()))?;
    let mut moved = Vec::new();
    for a in &record.artifacts {
        for f in [&a.filename, &a.manifest] {
            // Names read_record checked: plain file names, so both paths are in dist/.
            if regular_in(dist, f).is_ok() {
                fs_err::rename(dist.join(f), to.join(f))
                    .with_context(|| format!("cannot move {} to {}", f, to.display()))?;
                moved.push(f.clone());
            }
        }
    }
    Ok(moved)
}
