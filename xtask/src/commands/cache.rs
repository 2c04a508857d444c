//! `cargo xtask cache dir|size|clean|prune`: the user cache, shared by every checkout.

use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use clap::{Args, Subcommand};

use crate::detect::Env;
use crate::provision::cache::{self, human};

#[derive(Args)]
pub(crate) struct CacheArgs {
    #[command(subcommand)]
    action: Action,
}

#[derive(Subcommand)]
enum Action {
    /// Print where the cache is (LLAMA_FORGE_CACHE moves it).
    Dir,
    /// How much it holds: the total, and each entry with its last use.
    Size {
        /// One JSON document (schema `llama-forge.cache/1`).
        #[arg(long)]
        json: bool,
    },
    /// Remove everything in it; the next build fetches what it needs again.
    Clean,
    /// Remove the entries no build has used for a while.
    Prune {
        /// Keep what was used within this many days.
        #[arg(long, default_value_t = 30, value_name = "DAYS")]
        older_than: u64,
        /// Only list what would go.
        #[arg(long)]
        dry_run: bool,
    },
}

impl CacheArgs {
    /// `cache size --json`.
    pub(crate) fn json(&self) -> bool {
        matches!(self.action, Action::Size { json: true })
    }
}

pub(crate) fn run(args: &CacheArgs, env: &Env) -> Result<ExitCode> {
    let dir = &env.cache;
    match &args.action {
        Action::Dir => println!("{}", dir.display()),
        Action::Size { json } => {
            let entries = cache::entries(dir)?;
            let total: u64 = entries.iter().map(|e| e.bytes).sum();
            if *json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&serde_json::json!({
                        "schema": "llama-forge.cache/1",
                        "dir": dir.display().to_string(),
                        "bytes": total,
                        "entries": entries,
                    }))?
                );
            } else {
                println!("{}: {}", dir.display(), human(total));
                let now = SystemTime::now();
                for e in &entries {
                    println!(
                        "  {:>8}  {:<24} {}",
                        human(e.bytes),
                        ago(now, e.last_used),
                        e.name
                    );
                }
            }
        }
        Action::Clean => {
            let entries = cache::entries(dir)?;
            let total: u64 = entries.iter().map(|e| e.bytes).sum();
            for e in &entries {
                cache::remove(dir, &e.name).with_context(|| {
                    format!(
                        "cannot remove {} (is a build using it? run again when it is done)",
                        e.name
                    )
                })?;
            }
            println!(
                "removed {} entries, {} from {}",
                entries.len(),
                human(total),
                dir.display()
            );
        }
        Action::Prune {
            older_than,
            dry_run,
        } => {
            let entries = cache::entries(dir)?;
            let keep = Duration::from_secs(older_than * 86400);
            let stale = cache::stale(&entries, keep, SystemTime::now());
            let total: u64 = stale.iter().map(|e| e.bytes).sum();
            for e in &stale {
                if !dry_run {
                    cache::remove(dir, &e.name)
                        .with_context(|| format!("cannot remove {}", e.name))?;
                }
                println!(
                    "{} {} ({})",
                    if *dry_run { "would remove" } else { "removed" },
                    e.name,
                    human(e.bytes)
                );
            }
            let orphans = if *dry_run {
                0
            } else {
                cache::remove_orphan_stamps(dir).context("cannot tidy the cache's use stamps")?
            };
            if orphans > 0 {
                println!("removed {orphans} use stamps of entries that are gone");
            }
            println!(
                "{} {} entries not used in {older_than} days, {}; {} kept",
                if *dry_run { "would remove" } else { "removed" },
                stale.len(),
                human(total),
                entries.len() - stale.len()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `used 3 days ago`, `used today`.
fn ago(now: SystemTime, then: SystemTime) -> String {
    let days = now
        .duration_since(then)
        .map(|d| d.as_secs() / 86400)
        .unwrap_or(0);
    match days {
        0 => "used today".into(),
        1 => "used yesterday".into(),
        d => format!("used {d} days ago"),
    }
}

/// `clean [--dry-run]`: the work dirs under the build dir, what each held, and those a
/// running build keeps.
pub(crate) fn clean_work_dirs(env: &Env, dry_run: bool) -> Result<ExitCode> {
    let done = crate::build::clean::clean(env, dry_run)?;
    let mut total = 0;
    let mut n = 0;
    for c in &done {
        if c.busy {
            println!(
                "kept {}: a build of its source is running (run clean again when it is done)",
                c.path.display()
            );
            continue;
        }
        total += c.bytes;
        n += 1;
        println!(
            "{} {} ({})",
            if dry_run { "would remove" } else { "removed" },
            c.path.display(),
            human(c.bytes)
        );
    }
    println!(
        "{} {n} work dir{}, {} in {}; dist/ and the download cache (cargo xtask cache) are kept",
        if dry_run { "would remove" } else { "removed" },
        if n == 1 { "" } else { "s" },
        human(total),
        env.build_root.display()
    );
    Ok(ExitCode::SUCCESS)
}
