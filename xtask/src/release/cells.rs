//! The cells a release file expands into, and the `--cell` / GitHub matrix views of them.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::Result;

use crate::cuda::CudaVersion;
use crate::recipe::{ArtifactKind, Recipe};
use crate::request::Accelerator;
use crate::tags::LocalLabel;
use crate::versions::Version;

use super::*;

/// One native build of a release: one py3 wheel, or a wheel for each of its Pythons.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    /// Stable, file-name-safe, and one name for one artifact: recipe, version, arch
    /// set (and CUDA release), a CPU baseline other than the default, `ptx`, the
    /// bundled CUDA runtime (`rt`) and the target: `llama.cpp-0.3.36-cpu-x86_64-linux`,
    /// `llama-cpp-python-0.3.36-cu13.0-120-v3-ptx-rt-x86_64-linux`.
    pub name: String,
    pub version: Version,
    pub arch: Accelerator,
    /// The CUDA release, for GPU arch sets.
    pub cuda: Option<CudaVersion>,
}

impl Cell {
    /// The cell of `config` for `version`, `arch` and `cuda`, named by [`cell_name`].
    pub fn new(
        config: &Config,
        version: Version,
        arch: Accelerator,
        cuda: Option<CudaVersion>,
    ) -> Cell {
        let name = cell_name(config, &version, &arch, cuda);
        Cell {
            name,
            version,
            arch,
            cuda,
        }
    }
}

/// The target as a cell name ends: `x86_64-linux`, `aarch64-linux`, `x86_64-windows-msvc`,
/// `x86_64-windows-gnu`.
fn target_part(target: crate::platform::Target) -> String {
    let t = target.triple();
    match t.split('-').collect::<Vec<_>>().as_slice() {
        [arch, _, "linux", "gnu"] => format!("{arch}-linux"),
        [arch, _, os, env] => format!("{arch}-{os}-{env}"),
        _ => t.to_string(),
    }
}

/// The name of the cell of `config` for `version`, `arch` and `cuda`: every setting of
/// the release file that makes another artifact is in it (see [`Cell::name`]), so two
/// release files' cells of different artifacts never share a record in dist/.
pub fn cell_name(
    config: &Config,
    version: &Version,
    arch: &Accelerator,
    cuda: Option<CudaVersion>,
) -> String {
    let safe = |s: String| {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect::<String>()
    };
    let mut name = format!("{}-{version}", safe(config.recipe.clone()));
    if let Some(c) = cuda {
        name.push_str(&format!("-cu{c}"));
    }
    name.push('-');
    name.push_str(&safe(arch.to_string()).replace('-', "_"));
    if let Some(b) = config.cpu_baseline.label_suffix() {
        name.push('-');
        name.push_str(b);
    }
    // PTX and the bundled runtime change GPU builds only: a CPU cell is the same
    // artifact with them or without.
    if config.ptx && cuda.is_some() {
        name.push_str("-ptx");
    }
    if config.bundle_cuda_runtime && cuda.is_some() {
        name.push_str("-rt");
    }
    name.push('-');
    name.push_str(&target_part(config.target));
    name
}

/// The most cells a GitHub Actions matrix takes (GitHub's limit for one job's matrix).
pub const MAX_MATRIX_CELLS: usize = 256;
/// The most cells a local release builds without `--yes`.
pub const MAX_LOCAL_CELLS: usize = 32;

/// Whether a run of `n` cells may go on: `--github-matrix` takes at most
/// [`MAX_MATRIX_CELLS`], a local build of more than [`MAX_LOCAL_CELLS`] needs `yes`.
/// `Err`: what to do instead (a usage error).
pub fn check_cell_count(n: usize, github_matrix: bool, yes: bool) -> Result<(), String> {
    if github_matrix && n > MAX_MATRIX_CELLS {
        return Err(format!(
            "the release has {n} cells, more than the {MAX_MATRIX_CELLS} a GitHub Actions matrix takes: split the release file (fewer versions, arch sets or CUDA releases in each), or select cells with --cell"
        ));
    }
    if !github_matrix && n > MAX_LOCAL_CELLS && !yes {
        return Err(format!(
            "the release would build {n} cells here, more than {MAX_LOCAL_CELLS}: give --yes to build them all, or select cells with --cell"
        ));
    }
    Ok(())
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
    // A wheel recipe without `python` makes one py3 wheel per cell, for every Python.
    if let (ArtifactKind::Archive, false) = (recipe.artifact, config.python.is_empty()) {
        return Err(config.error(format!(
            "recipe `{}` makes archives, which are not per Python: remove `python`",
            recipe.name
        )));
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
                Accelerator::Cpu => cells.push(Cell::new(config, v.clone(), a.clone(), None)),
                Accelerator::Cuda(_) => cells.extend(
                    config
                        .cuda
                        .iter()
                        .map(|c| Cell::new(config, v.clone(), a.clone(), Some(*c))),
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
    // One flavour per index: two cells of one version and flavour would make artifacts
    // of the same names, and the flavour's index would hold two builds of it.
    let mut made: BTreeMap<(&Version, LocalLabel), &Cell> = BTreeMap::new();
    for c in &cells {
        let label = flavour(config, c);
        if let Some(first) = made.insert((&c.version, label.clone()), c) {
            return Err(config.error(format!(
                "cells `{}` and `{}` both make {} {}+{label}: the same file names, and two builds in the index of flavour {} ({}/{INDEX_DIR}); keep one of them (one CUDA release per major.minor in `cuda`, each arch set once in `arch`)",
                first.name,
                c.name,
                recipe.name,
                c.version,
                label.flavour(),
                label.flavour(),
            )));
        }
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

/// The local version label `cell` gives its artifacts (`cpu`, `cu130.sm120a`), known
/// before it is built: the CUDA release's major.minor, the device code the arch set
/// asks for, the CPU baseline.
pub fn flavour(config: &Config, cell: &Cell) -> LocalLabel {
    let targets = match &cell.arch {
        Accelerator::Cuda(r) => Some(r.resolve(config.ptx).targets),
        Accelerator::Cpu => None,
    };
    let cuda = match (cell.cuda, &targets) {
        (Some(c), Some(t)) => Some((crate::plan::cuda::label(c), t)),
        _ => None,
    };
    crate::plan::Plan::label_of(
        cuda.as_ref().map(|(l, t)| (l.as_str(), *t)),
        config.cpu_baseline,
    )
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
                    "--cell {n}: the release has no such cell; its cells are {}: give one of those (or leave --cell out to run them all)",
                    known.join(", ")
                ));
            }
        }
    }
    Ok(out)
}

/// `{"include": [{"cell": ..., "version": ..., "arch": ..., "cuda": ..., "target": ...}]}`
/// for a GitHub Actions `strategy.matrix`; `target` tells the job what to install
/// (mingw-w64 for `x86_64-pc-windows-gnu`).
pub fn github_matrix(cells: &[&Cell], target: crate::platform::Target) -> serde_json::Value {
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
            m.insert("target".into(), target.triple().into());
            serde_json::Value::Object(m)
        })
        .collect();
    serde_json::json!({ "include": include })
}

// Running the cells.
//
// Each cell that has to build runs on a thread of this process, through the
// same typed `BuildRequest` and `pipeline::build_and_report` that `wheel`/`build`
// run, with a file `Log` as its output: `<build dir>/release-logs/<cell>.log`
// holds what `wheel`/`build` with the cell's options would print (its progress,
// warnings and artifact lines, and the `error: ` line it ends with when it
// fails); CMake's and Ninja's output goes to the work dir's logs as for any
// build. Parallel cells (`--jobs`) then cannot interleave their output. Each
// cell runs on a thread of its own that is joined: a cell that panics is
// recorded as failed with the panic's message, and the others go on. Two cells
// of one plan exclude each other through the work dir's lock, as two processes
// would (see `lock.rs`).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use crate::detect::Env;
use crate::report::Log;
use crate::request::BuildRequest;

/// What happened to one cell in this run.
#[derive(Debug)]
pub(super) enum Outcome {
    Built { record: CellRecord, seconds: f64 },
    UpToDate { record: CellRecord, seconds: f64 },
    Failed { message: String, seconds: f64 },
}

impl Outcome {
    /// A cell that failed with `message`, `started` when its work began.
    fn failed(message: String, started: Instant) -> Outcome {
        Outcome::Failed {
            message,
            seconds: started.elapsed().as_secs_f64(),
        }
    }
}

/// The build request (the options of `wheel`/`build`) that builds `cell` into `dist`.
pub fn cell_request(
    config: &Config,
    cell: &Cell,
    dist: &Path,
    launcher: Option<crate::request::LauncherKind>,
) -> BuildRequest {
    let c = config;
    BuildRequest {
        recipe: c.recipe.clone(),
        release: Some(crate::request::ReleaseChoice::Exact(cell.version.clone())),
        recorded_source: None,
        target: c.target,
        // A cell names its arch: a release never resolves `auto`.
        accelerator: cell.arch.clone().into(),
        ptx: c.ptx,
        cuda: cell.cuda,
        cuda_path: None,
        bundle_cuda_runtime: c.bundle_cuda_runtime,
        pythons: c.python.clone(),
        cpu_baseline: c.cpu_baseline,
        source: c.source.clone(),
        llama_cpp: None,
        force: false,
        recorded_llama_cpp: None,
        dist: Some(dist.to_path_buf()),
        host_cc: None,
        defaults: Vec::new(),
        substituters: Vec::new(),
        launcher,
        // Each cell's build takes Ninja's default; `release --jobs` runs cells side by side.
        jobs: None,
        defines: Vec::new(),
    }
}

pub(super) struct Ctx<'a> {
    pub config: &'a Config,
    pub launcher: Option<crate::request::LauncherKind>,
    pub kind: ArtifactKind,
    /// The release's environment (root, cache, build dir, recipes, ...): each
    /// cell builds with it, as the child processes did with the same values.
    pub env: &'a Env,
    pub dist: &'a Path,
    /// The release file as its cells' records name it ([`CellRecord::release`]).
    pub release: &'a str,
}

impl Ctx<'_> {
    /// The build request of `cell`.
    fn request(&self, cell: &Cell) -> BuildRequest {
        cell_request(self.config, cell, self.dist, self.launcher)
    }

    fn record(&self, cell: &Cell, built: &crate::pipeline::Built) -> CellRecord {
        let entries = built
            .artifacts
            .iter()
            .map(|a| ArtifactEntry {
                filename: file_name(&a.path),
                sha256: a.sha256.clone(),
                size: a.size,
                manifest: file_name(&a.manifest_path),
            })
            .collect();
        CellRecord::new(cell, &self.config.recipe, built.plan_hash.clone(), entries)
            .of_release(self.release)
    }

    fn log(&self, cell: &Cell) -> PathBuf {
        self.env
            .build_root
            .join("release-logs")
            .join(format!("{}.log", cell.name))
    }
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Finds the cells already built (no-op), provisions the others' downloads and
/// tools one cell at a time, then builds them `jobs` at a time.
pub(super) fn run_cells(ctx: &Ctx, cells: &[&Cell], jobs: usize) -> BTreeMap<String, Outcome> {
    // The checks and the shared provisioning run here, before any cell's log
    // exists: what they say goes to the terminal.
    let terminal = Log::stderr();
    let mut out = BTreeMap::new();
    let mut todo: Vec<&Cell> = Vec::new();
    for cell in cells {
        let t = Instant::now();
        match crate::pipeline::existing(&ctx.request(cell), ctx.env, ctx.kind, &terminal) {
            Ok(Some(built)) => {
                terminal.out(format_args!("[{}] up to date", cell.name));
                out.insert(
                    cell.name.clone(),
                    Outcome::UpToDate {
                        record: ctx.record(cell, &built),
                        seconds: t.elapsed().as_secs_f64(),
                    },
                );
            }
            Ok(None) => todo.push(cell),
            Err(e) => {
                out.insert(cell.name.clone(), Outcome::failed(format!("{e:#}"), t));
            }
        }
    }
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let jobs = jobs.min(todo.len()).max(1);
    if jobs > 1 {
        if jobs > cores {
            terminal.warning(format_args!(
                "--jobs {jobs} on {cores} cores: each build already uses every core"
            ));
        }
        // The builds share the download cache and the provisioned tools, which
        // unpack into fixed places: do that part one cell at a time.
        todo.retain(|cell| {
            let t = Instant::now();
            match crate::pipeline::provision(&ctx.request(cell), ctx.env, ctx.kind, &terminal) {
                Ok(()) => true,
                Err(e) => {
                    out.insert(cell.name.clone(), Outcome::failed(format!("{e:#}"), t));
                    false
                }
            }
        });
    }
    let queue = Mutex::new(todo.into_iter().collect::<VecDeque<_>>());
    let results = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let Some(cell) = queue.lock().expect("queue").pop_front() else {
                    break;
                };
                let outcome = build_cell(ctx, cell, &terminal);
                match &outcome {
                    Outcome::Built { seconds, .. } => {
                        terminal.out(format_args!("[{}] built in {seconds:.0} s", cell.name));
                    }
                    Outcome::Failed { seconds, .. } => {
                        terminal.out(format_args!("[{}] FAILED after {seconds:.0} s", cell.name));
                    }
                    Outcome::UpToDate { .. } => {}
                }
                results
                    .lock()
                    .expect("results")
                    .push((cell.name.clone(), outcome));
            });
        }
    });
    out.extend(results.into_inner().expect("results"));
    out
}

/// Builds one cell on a thread of its own, its output in the cell's log (see
/// the top of this part). A failure, or a panic, is the cell's `Failed` outcome,
/// its message also the last line of the log.
fn build_cell(ctx: &Ctx, cell: &Cell, terminal: &Log) -> Outcome {
    let t = Instant::now();
    let args = ctx.request(cell);
    let path = ctx.log(cell);
    terminal.out(format_args!("[{}] building: {}", cell.name, path.display()));
    let failed = |message: String| Outcome::failed(message, t);
    let log = match Log::file(&path) {
        Ok(log) => log,
        Err(e) => return failed(format!("{e:#}")),
    };
    let joined = isolated(|| crate::pipeline::build_and_report(&args, ctx.env, ctx.kind, &log));
    let why = match joined {
        Ok(Ok(built)) => {
            return Outcome::Built {
                record: ctx.record(cell, &built),
                seconds: t.elapsed().as_secs_f64(),
            }
        }
        Ok(Err(e)) => format!("{e:#}"),
        Err(panic) => format!("the build panicked: {panic}"),
    };
    // What `main` prints for a command that fails.
    log.line(format_args!("error: {why}"));
    failed(format!("{why}\nfull log: {}", path.display()))
}

/// Runs `f` on a thread of its own and joins it: a panic there comes back as
/// its message, and this thread (and the other cells) go on.
fn isolated<T: Send>(f: impl FnOnce() -> T + Send) -> Result<T, String> {
    std::thread::scope(|s| s.spawn(f).join()).map_err(|p| panic_message(&*p))
}

/// The text a panic was raised with.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".to_string()
    }
}

#[cfg(test)]
mod run_tests {
    use super::*;

    #[test]
    fn a_panicking_cell_comes_back_as_its_message_and_the_next_one_runs() {
        let n = 7;
        assert_eq!(
            isolated(|| -> u32 { panic!("cell {n} broke") }),
            Err("cell 7 broke".to_string())
        );
        assert_eq!(
            isolated(|| -> u32 { std::panic::panic_any(3_u8) }),
            Err("(no message)".to_string())
        );
        assert_eq!(isolated(|| n + 1), Ok(8));
    }
}
