//! `cargo xtask recipe update <recipe>`: the package index's newest release, its sdist
//! checked against every patch the recipe's unpinned releases take, then pinned in the
//! recipe file (url, sha256, upload time, leading dir, the patches of `[unpinned]
//! patches_of`), with each patch's verdict in a comment. A required patch that does not
//! fit pins nothing. The scheduled workflow `recipe-update.yml` runs it weekly.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};

use crate::detect::Env;

#[derive(Args)]
pub(crate) struct RecipeArgs {
    #[command(subcommand)]
    action: Action,
}

#[derive(Subcommand)]
enum Action {
    /// Pin the package index's newest release in recipes/<recipe>.toml, after checking
    /// every patch against its tree. Exit 0: pinned, or already the newest; 1: a required
    /// patch does not fit (nothing is written).
    Update {
        /// The recipe (a file in recipes/): llama-cpp-python or llama.cpp.
        recipe: String,
    },
}

pub(crate) fn run(args: &RecipeArgs, env: &Env) -> Result<ExitCode> {
    let Action::Update { recipe: name } = &args.action;
    let log = crate::report::Log::stderr();
    let recipe = crate::recipe::Recipe::find(&env.recipes, name)?;
    let Some(u) = &recipe.unpinned else {
        bail!(
            "recipe `{name}` has no [unpinned] table: it names no package index to look for releases on"
        );
    };
    let index = env.index_url.as_deref().unwrap_or(&u.index);
    let page = crate::provision::index::page_url(index, &u.project);
    let offered = crate::provision::index::releases(index, &u.project)?;
    let newest = offered
        .first()
        .with_context(|| format!("{page} lists no sdist of {}", u.project))?;
    if recipe.pinned(&newest.version).is_some() {
        println!(
            "{name}: up to date: it pins {}, the newest release on {page}",
            newest.version
        );
        return Ok(ExitCode::SUCCESS);
    }
    let release = recipe
        .unpinned_release(
            &newest.version,
            newest.url.clone(),
            newest.sha256.clone(),
            newest.date,
            crate::recipe::PinnedBy::Index { page: page.clone() },
        )
        .expect("the recipe has [unpinned]");
    let source = &release.sources[0];
    let archive = crate::provision::fetch::fetch(&env.cache, &source.url, &source.sha256, &log)?;
    let patches: Vec<crate::recipe::Patch> = recipe
        .patches
        .iter()
        .chain(&release.patches)
        .cloned()
        .collect();
    // The recipe's file of the vendored commit, else llama-cpp-python's submodule's.
    let vendored = u.upstream.as_ref();
    let head = vendored.map_or(".git/modules/vendor/llama.cpp/HEAD", |v| &v.commit_file);
    let mut wanted = crate::recipe::check::files_of(&patches);
    wanted.insert(head.to_string());
    let info = crate::provision::source_info::of_archive(&archive, &wanted)?;
    if info.top.as_deref() != Some(source.strip.as_str()) {
        bail!(
            "{} has its files under `{}/`, not `{}/`: not the sdist of {} {}",
            source.url,
            info.top.unwrap_or_default(),
            source.strip,
            u.project,
            newest.version
        );
    }
    // Checked as each target's build would: the patches for every target, then with each
    // target's own (mingw-w64's, MSVC's) in their places.
    let host = crate::platform::Target::host();
    let mut targets = vec![host];
    for t in patches.iter().flat_map(|p| &p.targets) {
        if !targets.contains(t) {
            targets.push(*t);
        }
    }
    let mut lines: Vec<String> = Vec::new();
    for t in &targets {
        let for_target: Vec<crate::recipe::Patch> = patches
            .iter()
            .filter(|p| p.targets.is_empty() || p.targets.contains(t))
            .cloned()
            .collect();
        let checked = match crate::recipe::check(&for_target, &info.files) {
            Ok(c) => c,
            Err(e) => {
                eprintln!(
                    "error: {} {} is not pinned: for {t}, {e}",
                    u.project, newest.version
                );
                return Ok(ExitCode::from(1));
            }
        };
        for ((n, fit), p) in checked.verdicts.iter().zip(&for_target) {
            if t == &host {
                lines.push(format!("{n}: {fit}"));
            } else if !p.targets.is_empty() {
                lines.push(format!("{n} ({t}): {fit}"));
            }
        }
    }
    let path = env.recipes.join(format!("{name}.toml"));
    let text = fs_err::read_to_string(&path)?;
    let of = recipe
        .pinned(&u.patches_of)
        .expect("a recipe's patches_of is a pin (checked when it is read)");
    let commit = info
        .files
        .get(head)
        .map(|t| t.trim())
        .filter(|c| c.parse::<crate::recipe::GitCommit>().is_ok());
    // Its build number, where the recipe says how to ask for it; else the pin's comment
    // says how to add it.
    let api = &env.github_api;
    let build = match (vendored, commit.and_then(|c| c.parse().ok())) {
        (Some(v), Some(c)) => {
            let shown = format!("{c}");
            match crate::provision::build_number::upstream_of(v, api, &env.cache, c) {
                Ok(u) => Some((v.repo.as_str(), u.build)),
                Err(e) => {
                    log.warning(format_args!(
                        "{}@{shown}'s build number: GitHub's API ({api}) gave none: {}; the pin says how to add it",
                        v.repo,
                        e.root_cause()
                    ));
                    None
                }
            }
        }
        _ => None,
    };
    let pin = crate::recipe::update::NewPin {
        version: &newest.version,
        url: &source.url,
        sha256: &source.sha256,
        date: source.date,
        strip: &source.strip,
        commit,
        build,
        checked: &lines,
        page: &page,
    };
    let Some(new) = crate::recipe::update::add_pin(&text, of, &pin) else {
        bail!(
            "{}: cannot find release {}'s [[release.patch]] entries to copy for the new pin",
            path.display(),
            of.version
        );
    };
    // What is written must read back as the recipe with the new pin first.
    let parsed = crate::recipe::Recipe::parse(&new, &path)
        .context("the edited recipe does not parse: nothing was written")?;
    if parsed.releases[0].version != newest.version {
        bail!(
            "the edited recipe does not list {} first: nothing was written",
            newest.version
        );
    }
    let dir = path.parent().context("a recipe is in a dir")?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    tmp.write_all(new.as_bytes())?;
    tmp.as_file().sync_all()?;
    tmp.persist(&path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    println!(
        "{name}: pinned {} {} in {} (sha256 {}, from {page})",
        u.project,
        newest.version,
        path.display(),
        source.sha256
    );
    for l in &lines {
        println!("  {l}");
    }
    println!(
        "Review it (git diff {}), then run the tests.",
        path.display()
    );
    Ok(ExitCode::SUCCESS)
}
