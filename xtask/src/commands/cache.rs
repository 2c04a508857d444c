//! `cargo xtask cache dir|size|clean|prune`: the user cache, shared by every checkout;
//! `cache keygen|list` and `prune --substituter`: a substituter's key and entries.

use std::path::PathBuf;
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
    /// Remove the entries no build has used for a while (with --substituter: a
    /// substituter dir's entries built longer ago).
    Prune {
        /// Keep what was used (built) within this many days.
        #[arg(long, default_value_t = 30, value_name = "DAYS")]
        older_than: u64,
        /// Only list what would go.
        #[arg(long)]
        dry_run: bool,
        /// A substituter dir (`--cache-to`'s) to prune instead of the user cache.
        #[arg(long, value_name = "DIR")]
        substituter: Option<PathBuf>,
    },
    /// Make a key pair to sign a substituter's entries with: FILE (the secret key, for
    /// --sign-key or LLAMA_FORGE_SIGNING_KEY; keep it secret) and FILE.pub (give it to
    /// those who fetch, for --cache-from).
    Keygen {
        /// Where the secret key goes (refused where a file is there already).
        file: PathBuf,
    },
    /// List a substituter dir's entries: each plan, when it was built, its artifacts.
    List {
        /// The substituter dir (`--cache-to`'s).
        dir: PathBuf,
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
        Action::Keygen { file } => keygen(file)?,
        Action::List { dir } => list(dir)?,
        Action::Prune {
            older_than,
            dry_run,
            substituter: Some(sub),
        } => prune_substituter(sub, *older_than, *dry_run)?,
        Action::Prune {
            older_than,
            dry_run,
            substituter: None,
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

/// `cache keygen FILE`: FILE and FILE.pub, neither over an existing file.
fn keygen(file: &std::path::Path) -> Result<()> {
    let public = PathBuf::from(format!("{}.pub", file.display()));
    for f in [file, public.as_path()] {
        if fs_err::symlink_metadata(f).is_ok() {
            return Err(crate::usage!(
                "{} is there already: give another file (a key is never overwritten)",
                f.display()
            ));
        }
    }
    let (secret, public_text) = crate::substitute::keys::Signer::generate()?;
    let mut o = fs_err::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use fs_err::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    std::io::Write::write_all(&mut o.open(file)?, secret.as_bytes())?;
    // Made new too: never written through a name planted between the check and now.
    let mut p = fs_err::OpenOptions::new();
    p.write(true).create_new(true);
    std::io::Write::write_all(&mut p.open(&public)?, public_text.as_bytes())?;
    let key = public_text.lines().nth(1).unwrap_or_default();
    println!(
        "secret key: {} (keep it secret: --sign-key {}, or its text in LLAMA_FORGE_SIGNING_KEY)",
        file.display(),
        file.display()
    );
    println!("public key: {} ({key})", public.display());
    println!(
        "publish:  cargo xtask wheel llama-cpp-python --arch 120 --cache-to <dir> --sign-key {}",
        file.display()
    );
    println!(
        "fetch:    cargo xtask wheel llama-cpp-python --arch 120 --cache-from <url or dir>={key}"
    );
    Ok(())
}

/// `cache list DIR`: a substituter dir's entries, oldest first.
fn list(dir: &std::path::Path) -> Result<()> {
    let (entries, odd) = crate::substitute::dir::entries(dir)?;
    let total: u64 = entries
        .iter()
        .flat_map(|e| &e.listing.pairs)
        .map(|p| p.artifact.size + p.manifest.size)
        .sum();
    println!(
        "{}: {} entries, {}",
        dir.display(),
        entries.len(),
        human(total)
    );
    for e in &entries {
        println!(
            "  plan {}  built {}{}",
            &e.listing.plan.as_str()[..16],
            crate::escape::value(&e.listing.built),
            if e.has_signature() {
                ""
            } else {
                "  (no signature: never fetched)"
            }
        );
        for p in &e.listing.pairs {
            println!(
                "    {:>8}  {}",
                human(p.artifact.size),
                crate::escape::value(&p.artifact.name)
            );
        }
    }
    for o in &odd {
        println!("  not an entry: {}", crate::escape::value(o));
    }
    Ok(())
}

/// `cache prune --substituter DIR`: the entries built more than `days` ago.
fn prune_substituter(dir: &std::path::Path, days: u64, dry_run: bool) -> Result<()> {
    let (entries, _) = crate::substitute::dir::entries(dir)?;
    let now = SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut n = 0;
    for e in entries.iter().filter(|e| e.built_secs + days * 86400 < now) {
        if !dry_run {
            crate::substitute::dir::remove(e)?;
        }
        n += 1;
        println!(
            "{} plan {} (built {})",
            if dry_run { "would remove" } else { "removed" },
            &e.listing.plan.as_str()[..16],
            e.listing.built
        );
    }
    println!(
        "{} {n} entries built over {days} days ago; {} kept",
        if dry_run { "would remove" } else { "removed" },
        entries.len() - n
    );
    Ok(())
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
