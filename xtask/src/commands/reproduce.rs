//! `cargo xtask reproduce MANIFEST`: the options; the rebuild and its report
//! are [`crate::reproduce::rebuild`].

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use crate::detect::Env;
use crate::reproduce::rebuild;

#[derive(Args)]
pub struct ReproduceArgs {
    /// The manifest (`<artifact>.manifest.json`): a path, or an http(s) URL.
    pub manifest: String,
    /// Refuse to build when this machine's plan differs from the recorded one (exit code 3: could not check).
    #[arg(long)]
    pub strict: bool,
    /// The source, when the recorded build was made from a local archive or directory.
    #[arg(long)]
    pub source: Option<PathBuf>,
    /// Where the rebuilt artifacts go (default `dist/reproduce/`: never over your own dist/).
    #[arg(long)]
    pub dist: Option<PathBuf>,
    /// The CUDA toolkit root to use (has bin/nvcc); binding, as for `build` (the manifest's CUDA root is only compared).
    #[arg(long)]
    pub cuda_path: Option<PathBuf>,
    /// The C++ host compiler (default: this machine's, as `build` finds it; the compiler the manifest records is never run).
    #[arg(long, value_name = "PATH")]
    pub host_cc: Option<PathBuf>,
}

/// Exit codes: 0 identical, 1 differs (or an error), 3 drift under `--strict` (could not check).
pub fn run(a: &ReproduceArgs, env: &Env) -> Result<ExitCode> {
    rebuild::run(
        &rebuild::Request {
            manifest: a.manifest.clone(),
            strict: a.strict,
            source: a.source.clone(),
            dist: a.dist.clone(),
            cuda_path: a.cuda_path.clone(),
            host_cc: a.host_cc.clone(),
        },
        env,
    )
}
