//! `cargo xtask doctor [--python PATH] [--gpu NAME|CC] [--json]`

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use crate::detect::gpus::WSL_LIB;
use crate::detect::toolkits::detect_cuda;
use crate::detect::Env;
use crate::doctor::{self, GpuChoice, ToolkitLine};
use crate::platform::Os;

#[derive(Args)]
pub(crate) struct DoctorArgs {
    /// The Python to check (default: the active venv's, else python3).
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,
    /// Check against this GPU instead of this machine's: a name (rtx5090, gb10, h100)
    /// or a compute capability (12.0, 120). For a venv or wheel meant for another box.
    #[arg(long, value_name = "NAME|CC")]
    pub gpu: Option<GpuChoice>,
    /// One JSON document instead of text (schema `llama-forge.doctor/1`).
    #[arg(long)]
    pub json: bool,
    /// Ask nvidia-smi only, not NVML (tests: recorded nvidia-smi outputs).
    #[arg(long, hide = true)]
    pub no_nvml: bool,
    /// Where WSL2's driver files are (tests: a dir of their own).
    #[arg(long, hide = true, value_name = "DIR", default_value = WSL_LIB)]
    pub wsl_lib: PathBuf,
}

/// `doctor --json`: the report, with its schema first.
#[derive(serde::Serialize)]
struct DoctorJson<'a> {
    schema: &'static str,
    #[serde(flatten)]
    report: &'a doctor::Report,
}

pub(crate) fn run(args: &DoctorArgs, env: &Env) -> Result<ExitCode> {
    let windows = Os::host() == Os::Windows;
    let opts = doctor::Options {
        python: args
            .python
            .clone()
            .unwrap_or_else(|| doctor::python::default_python(env.virtual_env.as_deref(), windows)),
        gpu: args.gpu.clone(),
        at: doctor::gpus::Where {
            path: std::env::split_paths(&env.path).collect(),
            wsl_lib: args.wsl_lib.clone(),
            windows,
            nvml: !args.no_nvml,
        },
    };
    let procs = &crate::process::System;
    // As `toolchains` lists them; a failure to look is said, not fatal.
    let toolkits = match detect_cuda(None, env, &crate::report::Log::stderr(), procs) {
        Ok(t) => t
            .into_iter()
            .map(|t| ToolkitLine {
                nvcc: t.version.nvcc.to_string(),
                root: t.root.display().to_string(),
                found_by: t.found_by,
            })
            .collect(),
        Err(e) => {
            eprintln!("warning: cannot list the CUDA toolkits: {e:#}");
            Vec::new()
        }
    };
    let report = doctor::run(&opts, toolkits, procs);
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&DoctorJson {
                schema: "llama-forge.doctor/1",
                report: &report,
            })?
        );
    } else {
        print!("{}", crate::escape::text(&doctor::text(&report)));
    }
    Ok(ExitCode::from(report.outcome.exit_code()))
}
