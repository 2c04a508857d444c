//! `cargo xtask wheel|build RECIPE ...`: plan, build, package, verify.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::Result;

use crate::detect::Env;
use crate::pipeline::build_artifacts;
// plan/cuda.rs's tests still name it here.
pub use crate::pipeline::plan_warnings;
use crate::recipe::ArtifactKind;
use crate::request::BuildRequest;

pub fn run(args: &BuildRequest, env: &Env, kind: ArtifactKind) -> Result<ExitCode> {
    let started = Instant::now();
    let built = build_artifacts(args, env, kind)?;
    if built.reused {
        for a in &built.artifacts {
            println!("up to date: {} (sha256 {})", a.path.display(), a.sha256);
        }
        return Ok(ExitCode::SUCCESS);
    }
    for a in &built.artifacts {
        println!(
            "{} ({:.1} MB, sha256 {})",
            a.path.display(),
            a.size as f64 / 1e6,
            a.sha256
        );
        println!("  manifest: {}", a.manifest_path.display());
    }
    eprintln!("done in {:.0} s", started.elapsed().as_secs_f64());
    Ok(ExitCode::SUCCESS)
}
