//! A release run: the selected cells (each built, or found up to date), then
//! the release's files from the cells' records in dist/, and a summary table.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};

use super::cells::{run_cells, Ctx, Outcome};
use super::records::gather;
use super::*;
use crate::detect::Env;
use crate::recipe::Recipe;

/// What `release` is asked (the `release` command's options).
#[derive(Debug, Clone)]
pub struct Request {
    /// The release file.
    pub config: PathBuf,
    /// Only these cells (all when empty).
    pub cells: Vec<String>,
    /// Cells built at the same time.
    pub jobs: u16,
    /// Print the cells as a GitHub Actions matrix and build nothing.
    pub github_matrix: bool,
    /// Build nothing: write the release files from the records in dist/.
    pub index_only: bool,
    /// Where artifacts go (`dist/` when `None`).
    pub dist: Option<PathBuf>,
    /// Compile every cell through this cache.
    pub launcher: Option<crate::request::LauncherKind>,
    /// `--cache-to`: publish every cell of this release file into a substituter dir.
    pub publish: Option<crate::substitute::publish::Publish>,
    /// Build more than [`MAX_LOCAL_CELLS`] cells.
    pub yes: bool,
}

/// The release file as its cells' records name it: its path relative to the checkout
/// `root`, `/`-separated (`releases/llama.cpp.toml`), or its absolute path when it is
/// outside the checkout.
pub fn release_id(file: &std::path::Path, root: &std::path::Path) -> String {
    let abs = file
        .canonicalize()
        .or_else(|_| std::path::absolute(file))
        .unwrap_or_else(|_| file.to_path_buf());
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    match abs.strip_prefix(&root) {
        Ok(rel) => rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/"),
        Err(_) => abs.display().to_string(),
    }
}

// The `release` command's body (called by commands/release.rs only): it prints the
// command's results, the summary table, the pip lines and the `--github-matrix` JSON.
#[allow(clippy::print_stdout, clippy::print_stderr)]
pub fn run(args: &Request, env: &Env) -> Result<ExitCode> {
    let config = Config::load(&args.config)?;
    let recipe = Recipe::find(&env.recipes, &config.recipe)?;
    let cells = expand(&config, &recipe)?;
    let selected = select(&cells, &args.cells).map_err(crate::Usage)?;
    check_cell_count(
        selected.len(),
        args.github_matrix,
        args.yes || args.index_only,
    )
    .map_err(|e| crate::usage!("{}: {e}", args.config.display()))?;
    let release = release_id(&args.config, &env.root);
    if args.github_matrix {
        println!("{}", github_matrix(&selected, config.target));
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
            release: &release,
        };
        outcomes = run_cells(&ctx, &selected, args.jobs.into());
        for (name, o) in &outcomes {
            match o {
                Outcome::Built { record, .. } | Outcome::UpToDate { record, .. } => {
                    write_record(&dist, record)?
                }
                Outcome::Failed { .. } => remove_record(&dist, name)?,
            }
        }
    }

    // The release files, from the records of all cells in dist/.
    let g = gather(&config, &cells, &dist, &release)?;
    // Another release file's cells in dist/ stay in its files (issue 48).
    let accepted: Vec<&CellRecord> = g.accepted.values().chain(g.others.values()).collect();
    let incomplete: Vec<String> = cells
        .iter()
        .filter(|c| !g.accepted.contains_key(&c.name))
        .map(|c| c.name.clone())
        .collect();
    let manifest = ReleaseManifest::new(&config, &accepted, incomplete.clone());
    write_release_files(&dist, &accepted, &manifest)?;
    if let Some(to) = &args.publish {
        let log = crate::report::Log::stderr();
        for r in g.accepted.values() {
            let artifacts: Vec<crate::package::Artifact> = r
                .artifacts
                .iter()
                .map(|a| crate::package::Artifact {
                    path: dist.join(&a.filename),
                    manifest_path: dist.join(&a.manifest),
                    sha256: a.sha256.clone(),
                    size: a.size,
                })
                .collect();
            to.entry(&r.plan_hash, &artifacts, &log)?;
        }
    }

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
    for note in &g.notes {
        eprintln!("note: {note}");
    }
    let mut kept: BTreeMap<&str, usize> = BTreeMap::new();
    for r in g.others.values() {
        *kept.entry(r.release_name()).or_default() += 1;
    }
    for (file, n) in &kept {
        println!(
            "{} also holds {n} {} of {file}: kept in {SUMS_FILE}, {MANIFEST_FILE} and the indexes",
            dist.display(),
            if *n == 1 { "cell" } else { "cells" }
        );
    }
    for f in &g.strays {
        eprintln!(
            "note: dist/{f} belongs to no cell of this release: it is not in {SUMS_FILE} or the index"
        );
    }
    println!();
    print!("{}", summary_table(&rows));
    let n: usize = accepted.iter().map(|r| r.artifacts.len()).sum();
    println!(
        "\n{n} artifacts of {} cells in {}: {}, {}{}, {} ({:.1} s)",
        accepted.len(),
        dist.display(),
        SUMS_FILE,
        manifest
            .indexes
            .values()
            .map(|p| format!("{p}/, "))
            .collect::<String>(),
        MANIFEST_FILE,
        if incomplete.is_empty() {
            "complete".to_string()
        } else {
            format!("incomplete: {}", incomplete.join(", "))
        },
        started.elapsed().as_secs_f64()
    );
    if let Some(w) = &recipe.wheel {
        let at = std::path::absolute(&dist).unwrap_or_else(|_| dist.clone());
        let lines = pip_lines(
            &at,
            &pep503_name(&w.project),
            &manifest,
            crate::platform::Os::host(),
        );
        if !lines.is_empty() {
            print!("\n{lines}");
        }
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
