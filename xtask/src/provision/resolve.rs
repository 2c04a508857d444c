//! Which release a build is, and what its source says, before the plan is made.
//!
//! A release the recipe pins is taken as reviewed. Any other release of the project
//! (`--version 0.3.30`, `--version latest`) is resolved from the package index (URL,
//! sha256, upload time) with the recipe's `[unpinned]` patches. A `--source` names its own
//! release (PKG-INFO, pyproject.toml or `__version__`): one that contradicts `--version`
//! is refused, and one that names none needs `--version`. The files the patches change
//! are read from the source, so the plan checks every patch against the tree
//! ([`crate::recipe::check`]) before anything is built.

use std::path::Path;

use anyhow::{bail, Context, Result};

use crate::plan::{SourceChoice, SourceFacts};
use crate::recipe::{PinnedBy, Recipe, Release};
use crate::report::Log;
use crate::request::{LlamaCppChoice, RecordedSource, ReleaseChoice};

/// The release to plan, its source and what was read of it.
#[derive(Debug)]
pub struct Resolved {
    pub release: Release,
    pub choice: SourceChoice,
    pub facts: SourceFacts,
    /// `--llama-cpp`'s tree, in place of the vendored one.
    pub overlay: Option<crate::plan::Overlay>,
}

/// What [`resolve`] needs besides the recipe.
pub struct Ask<'a> {
    /// `--version`, if given.
    pub release: Option<&'a ReleaseChoice>,
    /// `--source`, if given.
    pub source: Option<&'a Path>,
    /// A source recorded in a manifest (`reproduce`): used as it is, the index not asked.
    pub recorded: Option<&'a RecordedSource>,
    /// The package index's simple API root (`LLAMA_FORGE_INDEX_URL`, else the recipe's).
    pub index: Option<&'a str>,
    /// The download cache.
    pub cache: &'a Path,
    /// Download the source to check the patches, where it is not cached: every build
    /// does; `plan` only for a release the recipe does not pin.
    pub fetch: bool,
    /// `--llama-cpp`, with the `[upstream_builds]` that fetches llama.cpp's builds.
    pub llama_cpp: Option<(&'a LlamaCppChoice, &'a crate::recipe::UpstreamBuilds)>,
    /// The `--llama-cpp` tarball a manifest recorded (`reproduce`).
    pub recorded_llama_cpp: Option<&'a RecordedSource>,
    /// GitHub's API root (`LLAMA_FORGE_GITHUB_API_URL`, else `https://api.github.com`):
    /// where the build number of a vendored llama.cpp commit is asked.
    pub github_api: &'a str,
}

/// The release `ask` names, resolved: see the module's doc.
pub fn resolve(recipe: &Recipe, ask: &Ask, log: &Log) -> Result<Resolved> {
    let mut resolved = resolve_source(recipe, ask, log)?;
    if let Some((choice, builds)) = ask.llama_cpp {
        let (overlay, files) = overlay(choice, builds, recipe, ask, log)?;
        // The patches of the vendored tree are checked against this one.
        if let Some(all) = &mut resolved.facts.files {
            let prefix = format!("{}/", builds.under);
            all.retain(|f, _| !f.starts_with(&prefix));
            all.extend(files);
        }
        resolved.overlay = Some(overlay);
    }
    Ok(resolved)
}

/// `--llama-cpp`: upstream's build `bN` (its tag tarball, hashed by its first download
/// here or by the manifest being rebuilt), or a local llama.cpp tree or tarball; with the
/// files the patches change in it, by their paths in the source.
fn overlay(
    choice: &LlamaCppChoice,
    builds: &crate::recipe::UpstreamBuilds,
    recipe: &Recipe,
    ask: &Ask,
    log: &Log,
) -> Result<(
    crate::plan::Overlay,
    std::collections::BTreeMap<String, String>,
)> {
    let prefix = format!("{}/", builds.under);
    let mut inside: std::collections::BTreeSet<String> = all_wanted(recipe)
        .iter()
        .filter_map(|f| f.strip_prefix(&prefix).map(str::to_string))
        .collect();
    const MARK: &str = "include/llama.h";
    inside.insert(MARK.to_string());
    let planned = |kind, location: String, sha256, tree_sha256, strip: String, hash_from| {
        crate::plan::PlannedSource {
            kind,
            location,
            sha256,
            tree_sha256,
            strip,
            under: Some(builds.under.clone()),
            project_dir: builds.under.clone(),
            patches: vec![],
            skipped_patches: vec![],
            hash_from,
            version_from: None,
            overlay: None,
        }
    };
    let (source, info, upstream) = match choice {
        LlamaCppChoice::Build(n) => {
            let t = tag_tarball(builds, *n, ask.recorded_llama_cpp, ask.cache, &inside, log)?;
            let source = planned(
                crate::plan::SourceKind::Tarball,
                t.url,
                Some(t.sha256),
                None,
                t.strip,
                t.by.hash_from(),
            );
            (source, t.info, Some(t.upstream))
        }
        LlamaCppChoice::Path(p) if p.is_dir() => {
            let path = fs_err::canonicalize(p)?;
            let info = crate::provision::source_info::of_dir(&path, ".", &inside)?;
            let tree =
                crate::provision::tree::digest(&path, crate::provision::tree::Scope::Source)?;
            let source = planned(
                crate::plan::SourceKind::Local,
                path.display().to_string(),
                None,
                Some(tree),
                String::new(),
                None,
            );
            (source, info, None)
        }
        LlamaCppChoice::Path(p) if p.is_file() => {
            let path = fs_err::canonicalize(p)?;
            let info = crate::provision::source_info::of_archive(&path, &inside)?;
            let sha256 = crate::digest::sha256_file(&path)?;
            let source = planned(
                crate::plan::SourceKind::Local,
                path.display().to_string(),
                Some(sha256),
                None,
                info.top.clone().unwrap_or_default(),
                None,
            );
            (source, info, None)
        }
        LlamaCppChoice::Path(p) => bail!("--llama-cpp {}: no such file or directory", p.display()),
    };
    if !info.files.contains_key(MARK) {
        bail!(
            "--llama-cpp {choice} has no {MARK}: it is not a llama.cpp tree (give upstream's build by its tag, such as b11541, or the root of a llama.cpp checkout or tarball)"
        );
    }
    let files = info
        .files
        .into_iter()
        .filter(|(f, _)| f != MARK)
        .map(|(f, t)| (format!("{prefix}{f}"), t))
        .collect();
    let date = if info.newest > 0 { info.newest + 1 } else { 0 };
    Ok((
        crate::plan::Overlay {
            source,
            upstream,
            date,
        },
        files,
    ))
}

fn resolve_source(recipe: &Recipe, ask: &Ask, log: &Log) -> Result<Resolved> {
    if let Some(src) = ask.source {
        return local(recipe, ask, src, log);
    }
    if let Some(ReleaseChoice::Build(n)) = ask.release {
        return upstream_build(recipe, *n, ask, log);
    }
    let mut release = match ask.release {
        None => recipe.release(None)?.clone(),
        Some(ReleaseChoice::Exact(v)) if recipe.pinned(v).is_some() => {
            recipe.release(Some(v))?.clone()
        }
        Some(ReleaseChoice::Exact(v)) if ask.recorded.is_some() => {
            let s = ask.recorded.expect("matched");
            unpinned(
                recipe,
                v,
                s.url.clone(),
                s.sha256.clone(),
                s.date,
                PinnedBy::Manifest {
                    hash_from: s.hash_from.clone(),
                },
            )?
        }
        Some(choice) => from_index(recipe, choice, ask.index)?,
    };
    let pinned = release.sources[0].clone();
    let cached = crate::provision::fetch::cache_path(ask.cache, &pinned.url, &pinned.sha256);
    let archive = if cached.is_file() || ask.fetch || release.pinned_by != PinnedBy::Recipe {
        Some(crate::provision::fetch::fetch(
            ask.cache,
            &pinned.url,
            &pinned.sha256,
            log,
        )?)
    } else {
        None
    };
    // A release the recipe does not pin: the llama.cpp build its vendored tree is, read.
    let vendored = recipe
        .unpinned
        .as_ref()
        .and_then(|u| u.upstream.as_ref())
        .filter(|_| release.pinned_by != PinnedBy::Recipe);
    let mut facts = SourceFacts::default();
    if let Some(a) = archive {
        let mut want = wanted(recipe, &release);
        if let Some(v) = vendored {
            want.insert(v.commit_file.clone());
        }
        let mut info = crate::provision::source_info::of_archive(&a, &want)?;
        if let Some(v) = vendored {
            let head = info.files.remove(&v.commit_file);
            release.upstream = vendored_build(v, head.as_deref(), &pinned.url, ask, log);
            release.tag = release.upstream.as_ref().map(|u| format!("b{}", u.build));
        }
        if info.top.as_deref() != Some(pinned.strip.as_str()) {
            bail!(
                "{} ({} {}) has its files under `{}/`, not `{}/`: it is not the sdist of that release",
                pinned.url,
                recipe.name,
                release.version,
                info.top.unwrap_or_default(),
                pinned.strip
            );
        }
        if let Some((v, file)) = &info.version {
            if v != &release.version {
                bail!(
                    "{} says it is {} {v} (its {file}), but it is pinned as {}: refusing a mislabelled source",
                    pinned.url,
                    recipe.name,
                    release.version
                );
            }
        }
        facts.files = Some(info.files);
    }
    Ok(Resolved {
        release,
        choice: SourceChoice::Pinned,
        facts,
        overlay: None,
    })
}

/// Upstream's tarball of tag `bN`, as `[upstream_builds]` names it: fetched by the hash a
/// manifest recorded, else by its first download here (upstream publishes no hash for tag
/// archives); its leading dir checked, the `inside` files (paths below it) read, and its
/// commit taken from the `git archive` pax header.
struct TagTarball {
    url: String,
    strip: String,
    sha256: crate::digest::Sha256Hex,
    by: PinnedBy,
    info: crate::provision::source_info::SourceInfo,
    upstream: crate::recipe::Upstream,
}

fn tag_tarball(
    u: &crate::recipe::UpstreamBuilds,
    n: u32,
    recorded: Option<&RecordedSource>,
    cache: &Path,
    inside: &std::collections::BTreeSet<String>,
    log: &Log,
) -> Result<TagTarball> {
    let url = u.url.replace("{build}", &n.to_string());
    let (archive, sha256, by) = match recorded {
        Some(r) => (
            crate::provision::fetch::fetch(cache, &r.url, &r.sha256, log)?,
            r.sha256.clone(),
            PinnedBy::Manifest {
                hash_from: r.hash_from.clone(),
            },
        ),
        None => {
            let (p, sha) = crate::provision::fetch::fetch_first(cache, &url, log).map_err(|e| {
                if e.is::<crate::provision::fetch::Offline>() {
                    e
                } else {
                    e.context(format!(
                        "llama.cpp b{n}: is it a release tag of {}?",
                        u.repo
                    ))
                }
            })?;
            (p, sha, PinnedBy::FirstDownload { url: url.clone() })
        }
    };
    let strip = u.strip.replace("{build}", &n.to_string());
    let info = crate::provision::source_info::of_archive(&archive, inside)?;
    if info.top.as_deref() != Some(strip.as_str()) {
        bail!(
            "{url} has its files under `{}/`, not `{strip}/`: not upstream's tarball of tag b{n}",
            info.top.clone().unwrap_or_default()
        );
    }
    let commit: crate::recipe::GitCommit =
        info.commit.as_deref().unwrap_or("").parse().map_err(|_| {
            anyhow::anyhow!(
                "{url} names no commit (a `git archive` tarball's pax header has it, as GitHub's tag tarballs do): the tool cannot tell which llama.cpp it is"
            )
        })?;
    Ok(TagTarball {
        upstream: crate::recipe::Upstream {
            repo: u.repo.clone(),
            commit,
            build: n,
        },
        url,
        strip,
        sha256,
        by,
        info,
    })
}

/// llama.cpp's build `n` from upstream's tag tarball: its hash from the first download
/// here (upstream publishes none for tag archives) or from the manifest being rebuilt, its
/// commit from the tarball's pax header, its tree placed where the recipe's source has it.
fn upstream_build(recipe: &Recipe, n: u32, ask: &Ask, log: &Log) -> Result<Resolved> {
    let Some(u) = &recipe.upstream_builds else {
        return Err(crate::usage!(
            "recipe `{}` does not build llama.cpp's own builds (b{n}): it has no [upstream_builds]; the llama.cpp recipe does (`cargo xtask build llama.cpp --version b{n}`)",
            recipe.name
        ));
    };
    let prefix = format!("{}/", u.under);
    let patches: Vec<crate::recipe::Patch> =
        recipe.patches.iter().chain(&u.patches).cloned().collect();
    let inside: std::collections::BTreeSet<String> = crate::recipe::check::files_of(&patches)
        .iter()
        .filter_map(|f| f.strip_prefix(&prefix).map(str::to_string))
        .collect();
    let TagTarball {
        sha256,
        by,
        info,
        upstream,
        ..
    } = tag_tarball(u, n, ask.recorded, ask.cache, &inside, log)?;
    let commit = upstream.commit;
    // A second after the newest entry: a tag tarball's entries carry the commit's time.
    let date = info.newest + 1;
    let release = recipe
        .build_release(n, sha256, date, commit, by)
        .expect("the recipe has [upstream_builds]");
    let facts = SourceFacts {
        files: Some(
            info.files
                .into_iter()
                .map(|(f, t)| (format!("{prefix}{f}"), t))
                .collect(),
        ),
        ..SourceFacts::default()
    };
    Ok(Resolved {
        release,
        choice: SourceChoice::Pinned,
        facts,
        overlay: None,
    })
}

/// The llama.cpp build a release's sdist vendors: its commit from `head` (the sdist's
/// `commit_file`), its build number from the manifest being rebuilt, else asked of GitHub
/// (kept in the cache). None, with a warning that says what the artifact is then named by,
/// where either cannot be had: the build goes on, as llama.cpp's own does without git.
fn vendored_build(
    v: &crate::recipe::UnpinnedUpstream,
    head: Option<&str>,
    url: &str,
    ask: &Ask,
    log: &Log,
) -> Option<crate::recipe::Upstream> {
    let file = url.rsplit('/').next().unwrap_or(url);
    let unknown = |why: String| {
        log.warning(format_args!(
            "which llama.cpp build {file} vendors is not known: {why}; the archive is named by the release, and its tools report build 0"
        ));
        None
    };
    let commit: crate::recipe::GitCommit = match head.map(|h| h.trim().parse()) {
        Some(Ok(c)) => c,
        Some(Err(_)) => return unknown(format!("its {} holds no commit", v.commit_file)),
        None => return unknown(format!("it has no {}", v.commit_file)),
    };
    if let Some((c, build)) = ask.recorded.and_then(|r| r.vendored.as_ref()) {
        if c == commit.as_str() {
            return Some(crate::recipe::Upstream {
                repo: v.repo.clone(),
                commit,
                build: *build,
            });
        }
    }
    let shown = commit.to_string();
    match crate::provision::build_number::upstream_of(v, ask.github_api, ask.cache, commit) {
        Ok(u) => Some(u),
        Err(e) => unknown(format!(
            "it is {}@{shown}, and GitHub's API ({}) gave no build number for it: {} (LLAMA_FORGE_GITHUB_API_URL names a reachable mirror)",
            v.repo,
            ask.github_api,
            e.root_cause()
        )),
    }
}

/// Every file the recipe's and the release's patches (and their variants) change.
fn wanted(recipe: &Recipe, release: &Release) -> std::collections::BTreeSet<String> {
    let all: Vec<crate::recipe::Patch> = recipe
        .patches
        .iter()
        .chain(&release.patches)
        .cloned()
        .collect();
    crate::recipe::check::files_of(&all)
}

fn unpinned(
    recipe: &Recipe,
    version: &crate::versions::Version,
    url: String,
    sha256: crate::digest::Sha256Hex,
    date: u64,
    by: PinnedBy,
) -> Result<Release> {
    recipe
        .unpinned_release(version, url, sha256, date, by)
        .ok_or_else(|| recipe.release(Some(version)).unwrap_err().into())
}

/// The index's page of the recipe's project, and the index root to use.
fn index_of<'a>(recipe: &'a Recipe, over: Option<&'a str>) -> Result<(&'a str, &'a str)> {
    let Some(u) = &recipe.unpinned else {
        return Err(crate::usage!(
            "recipe `{}` builds only the releases it pins ({}): it has no [unpinned] table naming a package index; give one of those with --version",
            recipe.name,
            recipe.releases.iter().map(|r| r.version.to_string()).collect::<Vec<_>>().join(", ")
        ));
    };
    Ok((over.unwrap_or(&u.index), &u.project))
}

fn from_index(recipe: &Recipe, choice: &ReleaseChoice, over: Option<&str>) -> Result<Release> {
    let (index, project) = index_of(recipe, over)?;
    let page = crate::provision::index::page_url(index, project);
    let offered = crate::provision::index::releases(index, project)?;
    let newest = |n: usize| {
        offered
            .iter()
            .take(n)
            .map(|r| r.version.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let found = match choice {
        ReleaseChoice::Build(_) => unreachable!("an upstream build is resolved first"),
        ReleaseChoice::Latest => offered.first().with_context(|| {
            format!("{page} lists no sdist of {project}: no release to build")
        })?,
        // The index answered, and has no such release: the request names what does not exist.
        ReleaseChoice::Exact(v) => offered.iter().find(|r| &r.version == v).ok_or_else(|| {
            crate::usage!(
                "{project} has no release `{v}`: the recipe pins {}, and the package index ({page}) has no sdist of it (not yanked); the newest there are {}",
                recipe.releases.iter().map(|r| r.version.to_string()).collect::<Vec<_>>().join(", "),
                newest(5)
            )
        })?,
    };
    if let Some(pinned) = recipe.pinned(&found.version) {
        // The index's newest is a release the recipe pins: the reviewed pin, unless the
        // index now serves another file under its name.
        let s = &pinned.sources[0];
        if s.sha256 != found.sha256 {
            bail!(
                "{page} serves {project} {} with sha256 {}, but the recipe pins {}: the index changed a published release; refusing it (the pinned file is {})",
                found.version, found.sha256, s.sha256, s.url
            );
        }
        return Ok(pinned.clone());
    }
    unpinned(
        recipe,
        &found.version,
        found.url.clone(),
        found.sha256.clone(),
        found.date,
        PinnedBy::Index { page },
    )
}

/// A `--source` archive or directory: its release read from it, checked against `--version`.
fn local(recipe: &Recipe, ask: &Ask, src: &Path, log: &Log) -> Result<Resolved> {
    let (choice, info) = if src.is_dir() {
        let path = fs_err::canonicalize(src)?;
        // Read with every patch file the recipe could want: the release is not known yet.
        let info = crate::provision::source_info::of_dir(
            &path,
            &recipe.cmake.project_dir,
            &all_wanted(recipe),
        )?;
        let tree_sha256 =
            crate::provision::tree::digest(&path, crate::provision::tree::Scope::Source)?;
        (SourceChoice::LocalDir { path, tree_sha256 }, info)
    } else if src.is_file() {
        let path = fs_err::canonicalize(src)?;
        let info = crate::provision::source_info::of_archive(&path, &all_wanted(recipe))?;
        let sha256 = crate::digest::sha256_file(&path)?;
        (SourceChoice::Local { path, sha256 }, info)
    } else {
        bail!("--source {}: no such file or directory", src.display());
    };
    let given = match ask.release {
        None => None,
        Some(ReleaseChoice::Exact(v)) => Some(v),
        Some(ReleaseChoice::Latest) => return Err(crate::usage!(
            "--version latest asks the package index for its newest release, and --source names the source: give the release --source is (--version X.Y.Z), or leave --version out"
        )),
        Some(ReleaseChoice::Build(n)) => return Err(crate::usage!(
            "--version b{n} downloads upstream's tarball of that tag, and --source names the source: leave one out"
        )),
    };
    let (version, version_from) = match (&info.version, given) {
        (Some((read, file)), Some(v)) if read != v => return Err(crate::usage!(
            "--source {} is {} {read} (its {file} says so), but --version asks for {v}: give the {v} source, or drop --version (or use --version {read})",
            src.display(),
            recipe.name
        )),
        (Some((read, file)), _) => (read.clone(), (*file).to_string()),
        (None, Some(v)) => (v.clone(), "given".to_string()),
        (None, None) => return Err(crate::usage!(
            "cannot tell which release --source {} is: it has no PKG-INFO, no version in pyproject.toml's [project] and no llama_cpp/__init__.py __version__; say which it is with --version (e.g. --version {}), and the manifest records it as given, not read",
            src.display(),
            recipe.releases[0].version
        )),
    };
    let (url, sha256) = match &choice {
        SourceChoice::Local { path, sha256 } => (path.display().to_string(), sha256.clone()),
        SourceChoice::LocalDir { path, tree_sha256 } => {
            (path.display().to_string(), tree_sha256.clone())
        }
        SourceChoice::Pinned => unreachable!("a local source"),
    };
    let release = match recipe.pinned(&version) {
        Some(r) => r.clone(),
        None => {
            // An archive the index serves under this release is that release, as if fetched.
            let from_index = match (&choice, &recipe.unpinned) {
                (SourceChoice::Local { .. }, Some(_)) => {
                    match from_index(recipe, &ReleaseChoice::Exact(version.clone()), ask.index) {
                        Ok(r) => Some(r),
                        Err(e) => {
                            log.line(format_args!(
                                "--source {}: not compared with the package index ({e:#}); built as a local source",
                                src.display()
                            ));
                            None
                        }
                    }
                }
                _ => None,
            };
            match from_index {
                Some(r) if r.sources[0].sha256 == sha256 => r,
                other => {
                    // Dated by the index's upload of this release where it has one, else just
                    // after the source's newest entry: the same source gives the same date.
                    let date = other.map_or(info.newest + 1, |r| r.sources[0].date);
                    unpinned(recipe, &version, url, sha256, date, PinnedBy::Local)?
                }
            }
        }
    };
    let facts = SourceFacts {
        files: Some(info.files),
        strip: info.top,
        version_from: Some(version_from),
    };
    Ok(Resolved {
        release,
        choice,
        facts,
        overlay: None,
    })
}

/// Every file any release's patches change (a local source's release is read from it).
fn all_wanted(recipe: &Recipe) -> std::collections::BTreeSet<String> {
    let mut all: Vec<crate::recipe::Patch> = recipe.patches.clone();
    for r in &recipe.releases {
        all.extend(r.patches.iter().cloned());
    }
    if let Some(u) = &recipe.unpinned {
        all.extend(u.patches.iter().cloned());
    }
    crate::recipe::check::files_of(&all)
}
