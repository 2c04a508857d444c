//! `cargo xtask toolchains`: what this machine has; `toolchains install cuda 13.5`.

use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};

use crate::detect::compiler::detect_compiler;
use crate::detect::toolkits::{detect_cuda, hermetic_offers};
use crate::detect::Env;
use crate::versions::Version;

#[derive(Args)]
pub struct ToolchainsArgs {
    #[command(subcommand)]
    pub action: Option<Action>,
}

#[derive(Subcommand)]
pub enum Action {
    /// Assemble a pinned toolkit from the package index into the cache.
    Install {
        /// `cuda`
        what: String,
        /// The release, one of toolchains/cuda-*.toml: 13.0 to 13.5.
        release: Version,
        /// Leave out nvidia-cublas (~420 MB): enough for small CUDA projects, not for llama.cpp.
        #[arg(long)]
        without_cublas: bool,
    },
}

pub fn run(args: &ToolchainsArgs, env: &Env) -> Result<ExitCode> {
    match &args.action {
        Some(Action::Install {
            what,
            release,
            without_cublas,
        }) => install(what, release, *without_cublas, env),
        None => list(env),
    }
}

fn install(what: &str, release: &Version, without_cublas: bool, env: &Env) -> Result<ExitCode> {
    anyhow::ensure!(
        what == "cuda",
        "`{what}`: only `cuda` can be installed (e.g. `cargo xtask toolchains install cuda 13.5`)"
    );
    crate::provision::hermetic::toolkit_file(release)?;
    let spec = crate::provision::hermetic::CudaSpec::load(&env.root.join("toolchains"), release)?;
    let windows = crate::platform::Os::host() == crate::platform::Os::Windows;
    // On Windows, the same release's win_amd64 wheels.
    let mut spec = if windows { spec.for_windows()? } else { spec };
    if without_cublas {
        spec = spec.without(&["nvidia-cublas"])?;
    }
    let downloading = || {
        eprintln!(
            "downloading up to {:.0} MB of pinned wheels (cached in {})",
            spec.download_size() as f64 / 1e6,
            env.cache.display()
        )
    };
    if windows {
        downloading();
        let log = crate::report::Log::stderr();
        let root = crate::provision::hermetic::install_windows(&env.cache, &spec, &log)?;
        println!(
            "CUDA {} (nvcc {}) at {}",
            spec.release,
            spec.nvcc_version,
            root.display()
        );
        println!(
            "  nvcc:      {}",
            root.join("bin").join("nvcc.exe").display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let cc = detect_compiler(
        env,
        None,
        &crate::report::Log::stderr(),
        &crate::process::System,
    )?
    .ok_or_else(|| {
        anyhow::anyhow!(
            "no C compiler found (it builds the libcuda link stub): install gcc or set CC"
        )
    })?;
    downloading();
    let got = crate::provision::hermetic::install(
        &env.cache,
        &spec,
        &cc.cc,
        &crate::report::Log::stderr(),
    )?;
    println!(
        "CUDA {} (nvcc {}) at {}",
        got.release,
        got.version,
        got.root.display()
    );
    println!("  nvcc:      {}", got.nvcc.display());
    println!("  cuobjdump: {}", got.cuobjdump.display());
    println!("  min Linux driver: {}", got.min_driver_linux);
    Ok(ExitCode::SUCCESS)
}

fn list(env: &Env) -> Result<ExitCode> {
    use crate::detect::toolchain::{detect_tool, which};
    use crate::platform::host::Origin;
    for name in ["cmake", "ninja", "patchelf"] {
        match detect_tool(
            which(name, &env.path),
            Origin::System,
            &crate::process::System,
        ) {
            Some(t) => println!("{name:<9} {} {}", t.version, t.path.display()),
            None => println!("{name:<9} not on PATH (a pinned one is fetched when needed)"),
        }
    }
    match detect_compiler(env, None, &crate::report::Log::stderr(), &crate::process::System)? {
        Some(c) => {
            println!("{:<9} {:?} {} {} / {}", "compiler", c.kind, c.version, c.cc.display(), c.cxx.display());
            if let Some(m) = &c.msvc {
                for (i, t) in std::iter::once(&m.host).chain(&m.others).enumerate() {
                    let role = if i == 0 { "host" } else { "also" };
                    println!(
                        "          {role} toolset {} (cl {}, _MSC_VER 19{:02}) of {} {} at {}",
                        t.toolset,
                        t.cl_version,
                        t.toolset.minor,
                        t.instance.display_name,
                        t.instance.version,
                        t.instance.path.display()
                    );
                    println!("               cl {}; environment from {}", t.cl.display(), t.source);
                }
            }
        }
        None if crate::platform::Os::host() == crate::platform::Os::Windows => println!("compiler  none found: install Visual Studio with the \"Desktop development with C++\" workload"),
        None => println!("compiler  none found: install g++ or clang++, or set CC and CXX"),
    }
    let mut toolkits = detect_cuda(
        None,
        env,
        &crate::report::Log::stderr(),
        &crate::process::System,
    )?;
    if toolkits.is_empty() {
        println!("nvcc      none installed");
    }
    toolkits.extend(hermetic_offers(env, crate::platform::Os::host())?);
    let table = crate::cuda::SupportTable::builtin();
    for t in toolkits {
        let installed = if t.nvcc.is_file() {
            ""
        } else {
            " (not installed yet: `cargo xtask toolchains install cuda ...`)"
        };
        println!(
            "nvcc      {} at {} [{}]{installed}",
            t.version.nvcc,
            t.root.display(),
            t.found_by
        );
        match table.lookup(&t.version.release) {
            crate::cuda::ReleaseMatch::Exact(r) | crate::cuda::ReleaseMatch::Untested(r) => {
                let targets: Vec<String> = r.targets.iter().map(|a| a.to_string()).collect();
                println!(
                    "          emits {}; host gcc <= {}, clang <= {}, MSVC {}",
                    targets.join(" "),
                    r.max_gcc,
                    r.max_clang,
                    r.msvc
                );
            }
            crate::cuda::ReleaseMatch::OlderThanTable => {
                println!("          older than the support table: cannot build for Blackwell")
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
