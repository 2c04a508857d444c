//! `cargo xtask wheel|build RECIPE ...`: plan, build, package, verify.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::Result;

use crate::detect::Env;
use crate::pipeline::{build_artifacts, Built};
// plan/cuda.rs's tests still name it here.
pub use crate::pipeline::plan_warnings;
use crate::recipe::ArtifactKind;
use crate::report::Log;
use crate::request::BuildRequest;

pub fn run(args: &BuildRequest, env: &Env, kind: ArtifactKind) -> Result<ExitCode> {
    build(args, env, kind, &Log::stderr()).map(|_| ExitCode::SUCCESS)
}

/// The build and its report: the artifacts' lines as results (stdout on the
/// terminal), the time taken as progress (stderr). A release cell runs this with
/// its log file, so the cell's log holds what `wheel`/`build` would print.
pub fn build(args: &BuildRequest, env: &Env, kind: ArtifactKind, log: &Log) -> Result<Built> {
    let started = Instant::now();
    let built = build_artifacts(args, env, kind, log)?;
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
            "{} ({:.1} MB, sha256 {})",
            a.path.display(),
            a.size as f64 / 1e6,
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
