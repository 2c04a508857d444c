//! `cargo xtask release CONFIG`: every cell of a release file, then the
//! release's SHA256SUMS, PEP 503 index and release.json, and a summary table.
//!
//! Each cell that has to build runs as a child process of this binary (`wheel`
//! or `build` with the cell's options), its output in
//! `<build dir>/release-logs/<cell>.log`. Parallel cells (`--jobs`) then cannot
//! interleave their output, and a crash or abort of one cell cannot take the
//! others down. The parent learns what a cell built the way a no-op run does
//! (`build::existing`: the plan's finished artifacts in dist/), so nothing
//! is parsed from the child's output.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;

use super::Env;
use crate::recipe::{ArtifactKind, Recipe};
use crate::release::{self, ArtifactEntry, Cell, CellRecord, Config, SummaryRow};
use crate::request::BuildRequest;

#[derive(Args)]
pub struct ReleaseArgs {
    /// The release file (TOML): recipe, versions, arch sets, CUDA releases, Pythons.
    pub config: PathBuf,
    /// Run only this cell (repeatable); the names are those `--github-matrix` prints.
    #[arg(long = "cell", conflicts_with = "index_only")]
    pub cells: Vec<String>,
    /// Cells to build at the same time. Each build already uses every core, so
    /// more than 1 helps only on large machines.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: u16,
    /// Print the cells as a GitHub Actions matrix (JSON) and exit; builds nothing.
    #[arg(long, conflicts_with = "index_only")]
    pub github_matrix: bool,
    /// Build nothing: (re)write SHA256SUMS, simple/ and release.json from the
    /// cells' records in dist/ (the last job of a CI release).
    #[arg(long)]
    pub index_only: bool,
    /// Where artifacts go (default dist/).
    #[arg(long)]
    pub dist: Option<PathBuf>,
    /// Compile every cell through this cache (`ccache` or `sccache`): a CI
    /// setting, not part of the release (it changes no byte).
    #[arg(long)]
    pub launcher: Option<crate::plan::launcher::LauncherKind>,
}

const FAILED: &str = "FAILED";
const OVER_BUDGET: &str = "over budget";

/// What happened to one cell in this run.
#[derive(Debug)]
enum Outcome {
    Built { record: CellRecord, seconds: f64 },
    UpToDate { record: CellRecord, seconds: f64 },
    Failed { message: String, seconds: f64 },
}

pub fn run(args: &ReleaseArgs, env: &Env) -> Result<ExitCode> {
    let config = Config::load(&args.config)?;
    let recipe = Recipe::find(&env.recipes, &config.recipe)?;
    let cells = release::expand(&config, &recipe)?;
    let selected = release::select(&cells, &args.cells).map_err(anyhow::Error::msg)?;
    if args.github_matrix {
        println!("{}", release::github_matrix(&selected));
        return Ok(ExitCode::SUCCESS);
    }
    let dist = args.dist.clone().unwrap_or_else(|| env.root.join("dist"));
    fs_err::create_dir_all(&dist).with_context(|| format!("cannot create {}", dist.display()))?;
    let dist = dist.canonicalize()?;
    let started = Instant::now();

    let mut outcomes: BTreeMap<String, Outcome> = BTreeMap::new();
    if !args.index_only {
        let ctx = Ctx {
            config: &config,
            launcher: args.launcher,
            kind: recipe.artifact,
            env,
            dist: &dist,
        };
        outcomes = run_cells(&ctx, &selected, args.jobs.into());
        for (name, o) in &outcomes {
            match o {
                Outcome::Built { record, .. } | Outcome::UpToDate { record, .. } => {
                    release::write_record(&dist, record)?
                }
                Outcome::Failed { .. } => release::remove_record(&dist, name)?,
            }
        }
    }

    // The release files, from the records of all cells in dist/.
    let g = gather(&config, &cells, &dist)?;
    let accepted: Vec<&CellRecord> = g.accepted.values().collect();
    let incomplete: Vec<String> = cells
        .iter()
        .filter(|c| !g.accepted.contains_key(&c.name))
        .map(|c| c.name.clone())
        .collect();
    let manifest = release::ReleaseManifest::new(&config, &accepted, incomplete.clone());
    release::write_release_files(&dist, &accepted, &manifest)?;

    // The summary.
    let mut rows = Vec::new();
    let mut failures: Vec<(String, String)> = Vec::new();
    let mut failed = false;
    for c in &cells {
        let (status, seconds) = match (
            outcomes.get(&c.name),
            g.accepted.get(&c.name),
            g.rejected.get(&c.name),
        ) {
            (Some(Outcome::Failed { message, seconds }), _, _) => {
                failures.push((c.name.clone(), message.clone()));
                (FAILED.to_string(), Some(*seconds))
            }
            (o, _, Some((status, why))) => {
                failures.push((c.name.clone(), why.clone()));
                let s = match o {
                    Some(Outcome::Built { seconds, .. } | Outcome::UpToDate { seconds, .. }) => {
                        Some(*seconds)
                    }
                    _ => None,
                };
                (status.to_string(), s)
            }
            (Some(Outcome::Built { seconds, .. }), Some(_), _) => {
                ("built".to_string(), Some(*seconds))
            }
            (Some(Outcome::UpToDate { seconds, .. }), Some(_), _) => {
                ("up to date".to_string(), Some(*seconds))
            }
            (_, Some(_), _) => ("in dist".to_string(), None),
            (_, None, None) => ("missing".to_string(), None),
        };
        // With --cell, only the cells asked for decide the exit status.
        let asked = args.cells.is_empty() || args.cells.contains(&c.name);
        failed |= asked
            && (status == FAILED
                || status == OVER_BUDGET
                || (args.index_only && status == "missing"));
        let (n, bytes) = g
            .accepted
            .get(&c.name)
            .map(|r| (r.artifacts.len(), r.artifacts.iter().map(|a| a.size).sum()))
            .unwrap_or((0, 0));
        rows.push(SummaryRow {
            cell: c.name.clone(),
            status,
            seconds,
            artifacts: n,
            bytes,
        });
    }
    for (cell, why) in &failures {
        eprintln!("\ncell {cell} failed: {why}");
    }
    for f in &g.strays {
        eprintln!(
            "note: dist/{f} belongs to no cell of this release: it is not in {} or the index",
            release::SUMS_FILE
        );
    }
    println!();
    print!("{}", release::summary_table(&rows));
    let n: usize = accepted.iter().map(|r| r.artifacts.len()).sum();
    println!(
        "\n{n} artifacts of {} cells in {}: {}, {}{}, {} ({:.1} s)",
        accepted.len(),
        dist.display(),
        release::SUMS_FILE,
        if accepted
            .iter()
            .any(|r| r.artifacts.iter().any(|a| a.filename.ends_with(".whl")))
        {
            "simple/, "
        } else {
            ""
        },
        release::MANIFEST_FILE,
        if incomplete.is_empty() {
            "complete".to_string()
        } else {
            format!("incomplete: {}", incomplete.join(", "))
        },
        started.elapsed().as_secs_f64()
    );
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

struct Ctx<'a> {
    config: &'a Config,
    launcher: Option<crate::plan::launcher::LauncherKind>,
    kind: ArtifactKind,
    env: &'a Env,
    dist: &'a Path,
}

impl Ctx<'_> {
    /// The options of the `wheel`/`build` command that builds `cell`.
    fn request(&self, cell: &Cell) -> BuildRequest {
        let c = self.config;
        BuildRequest {
            recipe: c.recipe.clone(),
            release: Some(cell.version.clone()),
            accelerator: cell.arch.clone(),
            ptx: c.ptx,
            cuda: cell.cuda,
            cuda_path: None,
            bundle_cuda_runtime: c.bundle_cuda_runtime,
            pythons: c.python.clone(),
            cpu_baseline: c.cpu_baseline,
            source: c.source.clone(),
            dist: Some(self.dist.to_path_buf()),
            host_cc: None,
            launcher: self.launcher,
        }
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
fn run_cells(ctx: &Ctx, cells: &[&Cell], jobs: usize) -> BTreeMap<String, Outcome> {
    let mut out = BTreeMap::new();
    let mut todo: Vec<&Cell> = Vec::new();
    for cell in cells {
        let t = Instant::now();
        match crate::pipeline::existing(&ctx.request(cell), ctx.env, ctx.kind) {
            Ok(Some(built)) => {
                println!("[{}] up to date", cell.name);
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
                out.insert(
                    cell.name.clone(),
                    Outcome::Failed {
                        message: format!("{e:#}"),
                        seconds: t.elapsed().as_secs_f64(),
                    },
                );
            }
        }
    }
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let jobs = jobs.min(todo.len()).max(1);
    if jobs > 1 {
        if jobs > cores {
            eprintln!(
                "warning: --jobs {jobs} on {cores} cores: each build already uses every core"
            );
        }
        // The builds share the download cache and the provisioned tools, which
        // unpack into fixed places: do that part one cell at a time.
        todo.retain(|cell| {
            let t = Instant::now();
            match crate::pipeline::provision(&ctx.request(cell), ctx.env, ctx.kind) {
                Ok(()) => true,
                Err(e) => {
                    out.insert(
                        cell.name.clone(),
                        Outcome::Failed {
                            message: format!("{e:#}"),
                            seconds: t.elapsed().as_secs_f64(),
                        },
                    );
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
                let outcome = build_cell(ctx, cell);
                match &outcome {
                    Outcome::Built { seconds, .. } => {
                        println!("[{}] built in {seconds:.0} s", cell.name)
                    }
                    Outcome::Failed { seconds, .. } => {
                        println!("[{}] FAILED after {seconds:.0} s", cell.name)
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

/// Builds one cell in a child process, its output in the cell's log.
fn build_cell(ctx: &Ctx, cell: &Cell) -> Outcome {
    let t = Instant::now();
    let args = ctx.request(cell);
    let log = ctx.log(cell);
    println!("[{}] building: {}", cell.name, log.display());
    let result = (|| -> Result<CellRecord> {
        let status = spawn(ctx, &args, &log)?;
        if !status.success() {
            anyhow::bail!(
                "`{}` {status}. Last lines of its log:\n{}\nfull log: {}",
                command_line(ctx.kind, &args),
                tail(&log, 20),
                log.display()
            );
        }
        match crate::pipeline::existing(&args, ctx.env, ctx.kind)? {
            Some(built) => Ok(ctx.record(cell, &built)),
            None => anyhow::bail!(
                "the build succeeded, but its artifacts are not in {}: see {}",
                ctx.dist.display(),
                log.display()
            ),
        }
    })();
    let seconds = t.elapsed().as_secs_f64();
    match result {
        Ok(record) => Outcome::Built { record, seconds },
        Err(e) => Outcome::Failed {
            message: format!("{e:#}"),
            seconds,
        },
    }
}

fn spawn(ctx: &Ctx, args: &BuildRequest, log: &Path) -> Result<std::process::ExitStatus> {
    fs_err::create_dir_all(log.parent().expect("log has a dir"))?;
    let out =
        fs_err::File::create(log).with_context(|| format!("cannot write {}", log.display()))?;
    let err = out.try_clone()?;
    let exe =
        std::env::current_exe().context("cannot find this program's own path to run the cell")?;
    let env = ctx.env;
    let mut cmd = std::process::Command::new(&exe);
    cmd.args(child_argv(ctx.kind, args))
        .env("LLAMA_FORGE_ROOT", &env.root)
        .env("LLAMA_FORGE_CACHE", &env.cache)
        .env("LLAMA_FORGE_BUILD_DIR", &env.build_root)
        .env("LLAMA_FORGE_RECIPES", &env.recipes)
        .stdin(std::process::Stdio::null())
        .stdout(out.into_parts().0)
        .stderr(err.into_parts().0);
    cmd.status()
        .with_context(|| format!("cannot run {}", exe.display()))
}

/// The command line that builds `args` (what a person would type after `cargo xtask`).
fn child_argv(kind: ArtifactKind, a: &BuildRequest) -> Vec<String> {
    let mut v = vec![match kind {
        ArtifactKind::Wheel => "wheel".to_string(),
        ArtifactKind::Archive => "build".to_string(),
    }];
    v.push(a.recipe.clone());
    if let Some(r) = &a.release {
        v.extend(["--version".into(), r.to_string()]);
    }
    v.extend(["--arch".into(), a.accelerator.to_string()]);
    if a.ptx {
        v.push("--ptx".into());
    }
    if let Some(c) = &a.cuda {
        v.extend(["--cuda".into(), c.to_string()]);
    }
    if let Some(p) = &a.cuda_path {
        v.extend(["--cuda-path".into(), p.display().to_string()]);
    }
    if a.bundle_cuda_runtime {
        v.push("--bundle-cuda-runtime".into());
    }
    if !a.pythons.is_empty() {
        v.extend([
            "--py".into(),
            a.pythons
                .iter()
                .map(|p| p.cp_tag().trim_start_matches("cp").to_string())
                .collect::<Vec<_>>()
                .join(","),
        ]);
    }
    v.extend(["--cpu-baseline".into(), a.cpu_baseline.to_string()]);
    if let Some(s) = &a.source {
        v.extend(["--source".into(), s.display().to_string()]);
    }
    if let Some(d) = &a.dist {
        v.extend(["--dist".into(), d.display().to_string()]);
    }
    if let Some(h) = &a.host_cc {
        v.extend(["--host-cc".into(), h.display().to_string()]);
    }
    if let Some(l) = &a.launcher {
        v.extend(["--launcher".into(), l.to_string()]);
    }
    v
}

fn command_line(kind: ArtifactKind, a: &BuildRequest) -> String {
    format!("cargo xtask {}", child_argv(kind, a).join(" "))
}

fn tail(log: &Path, n: usize) -> String {
    let text = fs_err::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The cells' records in dist/, checked: artifacts there with the recorded
/// sha256, and within the size budget.
struct Gathered {
    accepted: BTreeMap<String, CellRecord>,
    /// Cell -> its status in the summary, and why its record was not taken.
    rejected: BTreeMap<String, (&'static str, String)>,
    /// Artifacts in dist/ that no accepted cell lists.
    strays: Vec<String>,
}

fn gather(config: &Config, cells: &[Cell], dist: &Path) -> Result<Gathered> {
    let mut g = Gathered {
        accepted: BTreeMap::new(),
        rejected: BTreeMap::new(),
        strays: vec![],
    };
    let mut owner: BTreeMap<String, String> = BTreeMap::new();
    for c in cells {
        let record = match release::read_record(dist, &c.name) {
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
                release::remove_record(dist, &c.name)?;
                let why = format!(
                    "{why}\nmoved to {}: {}",
                    dist.join(release::REJECTED_DIR).display(),
                    moved.join(", ")
                );
                g.rejected.insert(c.name.clone(), (OVER_BUDGET, why));
            }
        }
    }
    for f in files_in(dist) {
        if (f.ends_with(".whl") || f.ends_with(".tar.gz")) && !owner.contains_key(&f) {
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
    record.check(cell, config).map_err(Rejection::Stale)?;
    for a in &record.artifacts {
        if let Some(other) = owner.get(&a.filename) {
            return Err(Rejection::Stale(format!(
                "{} is also an artifact of cell {other}",
                a.filename
            )));
        }
        let p = dist.join(&a.filename);
        if !p.is_file() {
            return Err(Rejection::Stale(format!(
                "its record lists {}, which is not there: build the cell again",
                p.display()
            )));
        }
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
            let m = crate::manifest::Manifest::read(&dist.join(&a.manifest))
                .map_err(|e| Rejection::Stale(format!("{e:#}")))?;
            let files: BTreeMap<String, u64> =
                m.files.iter().map(|(p, f)| (p.clone(), f.size)).collect();
            let libs: BTreeSet<String> = m.binaries.keys().cloned().collect();
            if let Some(why) =
                release::over_budget(&a.filename, a.size, max, &files, &libs, &config.path)
            {
                over.push(why);
            }
        }
        if !over.is_empty() {
            return Err(Rejection::OverBudget(over.join("\n")));
        }
    }
    Ok(())
}

/// Moves a cell's artifacts and their manifests to dist/rejected/.
fn reject(dist: &Path, record: &CellRecord) -> Result<Vec<String>> {
    let to = dist.join(release::REJECTED_DIR);
    fs_err::create_dir_all(&to).with_context(|| format!("cannot create {}", to.display()))?;
    let mut moved = Vec::new();
    for a in &record.artifacts {
        for f in [&a.filename, &a.manifest] {
            if dist.join(f).exists() {
                fs_err::rename(dist.join(f), to.join(f))
                    .with_context(|| format!("cannot move {} to {}", f, to.display()))?;
                moved.push(f.clone());
            }
        }
    }
    Ok(moved)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn env() -> Env {
        let mut e = Env::from_process();
        e.root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap()
            .to_path_buf();
        e.recipes = e.root.join("recipes");
        e
    }

    /// The child's command line parses back into the same options.
    #[test]
    fn child_argv_round_trips() {
        let cfg = Config::parse(
            "recipe = \"llama-cpp-python\"\narch = [\"cpu\", \"120,121\"]\ncuda = [\"13.1\"]\npython = [\"3.10\", \"313\"]\ncpu_baseline = \"x86-64-v3\"\nptx = true\nbundle_cuda_runtime = true\n",
            Path::new("x.toml"),
        )
        .unwrap();
        let env = env();
        let recipe = Recipe::find(&env.recipes, "llama-cpp-python").unwrap();
        let cells = release::expand(&cfg, &recipe).unwrap();
        let ctx = Ctx {
            config: &cfg,
            launcher: Some(crate::plan::launcher::LauncherKind::Ccache),
            kind: ArtifactKind::Wheel,
            env: &env,
            dist: Path::new("/d/dist"),
        };
        for cell in &cells {
            let a = ctx.request(cell);
            let argv = child_argv(ArtifactKind::Wheel, &a);
            assert_eq!(argv[0], "wheel");
            let cli = super::super::Cli::try_parse_from(
                std::iter::once("xtask".to_string()).chain(argv.clone()),
            )
            .unwrap_or_else(|e| panic!("{argv:?}: {e}"));
            let super::super::Command::Wheel(b) = cli.command else {
                panic!("not wheel")
            };
            assert_eq!(b.request(), a, "{argv:?}");
        }
        assert_eq!(
            command_line(ArtifactKind::Wheel, &ctx.request(&cells[1])),
            "cargo xtask wheel llama-cpp-python --version 0.3.36 --arch 120,121 --ptx --cuda 13.1 --bundle-cuda-runtime --py 310,313 --cpu-baseline x86-64-v3 --dist /d/dist --launcher ccache"
        );
    }
}
