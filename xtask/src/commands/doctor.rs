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
    /// A substituter (repeatable) that may hold the wheel a fix builds: where one
    /// serves it, doctor says so under the fix (the build then fetches it). Without it,
    /// those of LLAMA_FORGE_SUBSTITUTERS and llama-forge.toml, as `wheel` would ask.
    #[arg(long, value_name = "URL|DIR=KEY")]
    pub cache_from: Vec<crate::request::substituter::Substituter>,
}

/// Whether a substituter serves what the fix command `fix` (`cargo xtask wheel ...`)
/// would build: the command parsed as typed, with the defaults it would get, planned here
/// (nothing downloaded or built), and its plan asked of `subs` (else the defaults').
fn served(
    fix: &str,
    subs: &[crate::request::substituter::Substituter],
    env: &Env,
) -> Option<String> {
    use clap::{CommandFactory, FromArgMatches};
    let words = fix.strip_prefix("cargo xtask ")?.split_whitespace();
    let m = super::Cli::command()
        .try_get_matches_from(std::iter::once("cargo-xtask").chain(words))
        .ok()?;
    let given = super::given_options(&m);
    let super::Command::Wheel(mut w) = super::Cli::from_arg_matches(&m).ok()?.command else {
        return None;
    };
    w.build.defaults = super::defaults::apply(&mut w.build, &given, env).ok()?;
    if !subs.is_empty() {
        w.build.cache_from = subs.to_vec();
    }
    let req = w.build.request();
    if req.substituters.is_empty() {
        return None;
    }
    let quiet = tempfile::NamedTempFile::new().ok()?;
    let log = crate::report::Log::file(quiet.path()).ok()?;
    let plan = crate::pipeline::prepare(&req, env, &log).ok()?.plan;
    let hash = plan.hash();
    req.substituters.iter().find_map(|s| {
        match crate::substitute::fetch::ask(&hash, s) {
            crate::substitute::fetch::Asked::Has(l) => Some(format!(
                "{} serves this wheel (signed by key {}, built {}): the command above fetches and verifies it, nothing is compiled",
                s.location,
                s.key_id(),
                l.built
            )),
            _ => None,
        }
    })
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
    let mut report = doctor::run(&opts, toolkits, procs);
    for p in &mut report.packages {
        for g in &mut p.gpus {
            let Some(i) = g
                .fix
                .iter()
                .position(|f| f.starts_with("cargo xtask wheel "))
            else {
                continue;
            };
            if let Some(note) = served(&g.fix[i], &args.cache_from, env) {
                g.fix.insert(i + 1, format!("# {note}"));
            }
        }
    }
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
