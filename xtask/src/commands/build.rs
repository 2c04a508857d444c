//! `cargo xtask wheel|build RECIPE ...`: plan, build, package, verify.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::Result;

use crate::detect::Env;
use crate::pipeline::build_artifacts;
// plan/cuda.rs's tests still name it here.
pub use crate::pipeline::plan_warnings;
use crate::recipe::ArtifactKind;

/// `wheel`/`build`: the build options, and how the result is printed.
#[derive(clap::Args)]
pub struct BuildCmd {
    #[command(flatten)]
    pub build: super::BuildArgs,
    /// Print the result as one JSON document on stdout (schema `llama-forge.build/1`:
    /// `plan_hash`, `reused`, and per artifact `path`, `file`, `sha256`, `size`, `manifest`);
    /// progress and warnings stay on stderr.
    #[arg(long)]
    pub json: bool,
}

/// The JSON `wheel --json`/`build --json` prints.
#[derive(serde::Serialize)]
struct BuildJson<'a> {
    schema: &'static str,
    plan_hash: &'a str,
    reused: bool,
    seconds: u64,
    artifacts: Vec<ArtifactJson>,
}

#[derive(serde::Serialize)]
struct ArtifactJson {
    path: String,
    file: String,
    sha256: String,
    size: u64,
    manifest: String,
}

pub fn run(cmd: &BuildCmd, env: &Env, kind: ArtifactKind, ui: super::Ui) -> Result<ExitCode> {
    let args = cmd.build.request();
    super::warn_cmake_args(env, &ui);
    let old = env.root.join("vendor/cache");
    if env.cache_is_default && old.is_dir() && old != env.cache {
        ui.log().line(format_args!(
            "note: downloads and tools are cached in {} now, shared by every checkout; this checkout's {} is no longer used: move its contents there to keep them, or delete it",
            env.cache.display(),
            old.display()
        ));
    }
    if !cmd.json {
        let log = ui.log();
        let built = crate::pipeline::build_and_report(&args, env, kind, &log)?;
        crate::pipeline::next_lines(&built, &args, env, &log);
        return Ok(ExitCode::SUCCESS);
    }
    let started = Instant::now();
    let built = build_artifacts(&args, env, kind, &ui.log())?;
    let doc = BuildJson {
        schema: "llama-forge.build/1",
        plan_hash: built.plan_hash.as_str(),
        reused: built.reused,
        seconds: started.elapsed().as_secs(),
        artifacts: built
            .artifacts
            .iter()
            .map(|a| ArtifactJson {
                path: a.path.display().to_string(),
                file: a
                    .path
                    .file_name()
                    .map(|f| f.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                sha256: a.sha256.to_string(),
                size: a.size,
                manifest: a.manifest_path.display().to_string(),
            })
            .collect(),
    };
    println!("{}", serde_json::to_string_pretty(&doc)?);
    Ok(ExitCode::SUCCESS)
}
