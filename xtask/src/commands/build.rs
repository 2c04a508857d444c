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
    /// Also publish the artifacts into this substituter dir (`<dir>/<plan>/`, a static
    /// tree to serve over HTTP(S) or share), signed with --sign-key or
    /// LLAMA_FORGE_SIGNING_KEY; whoever names the key with `--cache-from` fetches them.
    #[arg(long, value_name = "DIR")]
    pub cache_to: Option<std::path::PathBuf>,
    /// The minisign secret key --cache-to signs with (`cache keygen` makes one); its
    /// password, where it is encrypted, in LLAMA_FORGE_SIGNING_KEY_PASSWORD.
    #[arg(long, value_name = "FILE", requires = "cache_to")]
    pub sign_key: Option<std::path::PathBuf>,
    /// The URL --cache-to's dir is served at: its index.html then has install lines that
    /// work as copied (else they name the file).
    #[arg(long, value_name = "URL", requires = "cache_to")]
    pub cache_url: Option<String>,
}

/// The JSON `wheel --json`/`build --json` prints.
#[derive(serde::Serialize)]
struct BuildJson<'a> {
    schema: &'static str,
    plan_hash: &'a str,
    reused: bool,
    /// Where the artifacts were fetched from, where a substituter served them.
    #[serde(skip_serializing_if = "Option::is_none")]
    fetched: Option<&'a str>,
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
    // Before the build: a key that cannot sign fails now, not after an hour.
    let to = super::publish_to(
        cmd.cache_to.as_deref(),
        cmd.sign_key.as_deref(),
        cmd.cache_url.as_deref(),
        env,
    )?;
    let publish = |built: &crate::pipeline::Built| -> Result<()> {
        if let Some(to) = &to {
            to.entry(&built.plan_hash, &built.artifacts, &ui.log())?;
        }
        Ok(())
    };
    if !cmd.json {
        let log = ui.log();
        let built = crate::pipeline::build_and_report(&args, env, kind, &log)?;
        publish(&built)?;
        crate::pipeline::next_lines(&built, &args, env, &log);
        return Ok(ExitCode::SUCCESS);
    }
    let started = Instant::now();
    let built = build_artifacts(&args, env, kind, &ui.log())?;
    publish(&built)?;
    let doc = BuildJson {
        schema: "llama-forge.build/1",
        plan_hash: built.plan_hash.as_str(),
        reused: built.reused,
        fetched: built.fetched.as_deref(),
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
