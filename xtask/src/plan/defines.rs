//! The plan's CMake defines: each with its value and the reason it is there.

use std::path::Path;

use crate::cuda::ArchRequest;
use crate::detect::toolchain::Tool;
use crate::plan::cuda::PlannedCuda;
use crate::plan::setting::{decided, policy, portable, Setting, SettingOrigin};
use crate::platform::Platform;
pub use crate::recipe::profile::CXX_RUNTIME;
use crate::recipe::profile::{fill, CudaGroups, CudaSwitch, FeatureDefine, Profile};
use crate::recipe::{Recipe, Upstream};
use crate::request::CpuBaseline;

/// The build type, Ninja and the host compiler with its flags (the platform's: GCC/Clang, or the MSVC toolset's cl.exe).
pub fn host(platform: &Platform, ninja: &Tool, cache: &Path) -> Vec<Setting> {
    let mut defines = vec![
        policy("CMAKE_BUILD_TYPE", "Release", platform.release_reason()),
        policy(
            "CMAKE_MAKE_PROGRAM",
            portable(&ninja.path, cache),
            "the Ninja found or provisioned for this build",
        ),
    ];
    defines.extend(decided(platform.compiler_defines(|p| portable(p, cache))));
    defines
}

/// What the profile has every build decide (ggml's policy: no native code, no compile cache
/// of its own, every optional dependency, backends as modules), then GGML_CPU_ALL_VARIANTS,
/// its reason saying which variants are compiled (`subset`: a patch provides
/// `cpu-variants`) and which the artifact ships.
pub fn fixed(
    profile: &Profile,
    platform: &Platform,
    baseline: CpuBaseline,
    subset: bool,
    cpu: &[crate::cpu::Decision],
) -> Vec<Setting> {
    let target = platform.target();
    let mut defines: Vec<Setting> = profile
        .defines
        .iter()
        .map(|d| policy(d.name.as_str(), d.value.as_str(), d.reason_for(target)))
        .collect();
    let arch = platform.arch();
    let c = &profile.cpu_variants;
    let subset_define = profile
        .features
        .cpu_variants
        .as_ref()
        .map_or("", |f| f.define.as_str());
    let built = fill(
        if subset { &c.subset } else { &c.all },
        &[("define", subset_define)],
    );
    let skipped: Vec<String> = cpu
        .iter()
        .filter_map(|d| match &d.skipped {
            Some(crate::cpu::Skip::Compiler(why)) => Some(format!("{}: {why}", d.variant.name)),
            _ => None,
        })
        .collect();
    let not_built = if skipped.is_empty() {
        String::new()
    } else {
        format!("; not built: {}", skipped.join("; "))
    };
    let reason = c
        .reason
        .get(&arch.to_string())
        .expect("a profile gives the reason for every architecture (checked when loaded)");
    defines.push(policy(
        c.name.as_str(),
        c.value.as_str(),
        fill(
            reason,
            &[
                ("built", &built),
                ("baseline", &baseline.to_string()),
                ("shipped", crate::cpu::variants::shipped_reason(arch)),
                ("not_built", &not_built),
            ],
        ),
    ));
    defines
}

/// A CUDA build for another arch (aarch64 on x86-64): every link also looks for the
/// libraries that linked libraries need (libcudart, libcublas) in the toolkit's target
/// dir. CMake leaves that dir out of its own -rpath-link (it is one of nvcc's implicit
/// link dirs), and a program linked against libggml-cuda then fails with "libcublas.so.13,
/// needed by ..., not found". Nothing of -rpath-link is written into the files.
pub fn cuda_cross_link(defines: &mut Vec<Setting>, root: &str, arch: crate::platform::Arch) {
    let dir = format!(
        "{root}/targets/{}/lib",
        crate::cuda::runtime::toolkit_target(arch)
    );
    let flag = format!("-Wl,-rpath-link,{dir}");
    let why = format!("the CUDA libraries for {arch} that linked libraries need are found at link time in {dir} (CMake leaves nvcc's implicit link dirs out of its -rpath-link); nothing of it is written into the files");
    for name in [
        "CMAKE_SHARED_LINKER_FLAGS",
        "CMAKE_MODULE_LINKER_FLAGS",
        "CMAKE_EXE_LINKER_FLAGS",
    ] {
        match defines.iter_mut().find(|d| d.name == name) {
            Some(d) => {
                d.value = format!("{} {flag}", d.value);
                d.reason = format!("{}; {why}", d.reason);
            }
            None => defines.push(policy(name, flag.clone(), why.clone())),
        }
    }
}

/// The profile's `cpu-variants` define: the shipped variants, the only ones compiled.
pub fn cpu_variants(feature: &FeatureDefine, names: &[&str]) -> Setting {
    policy(
        feature.define.as_str(),
        names.join(","),
        feature.reason.as_str(),
    )
}

/// The profile's `cuda-groups` define, where CUDA is built and a patch provides it.
pub fn cuda_groups(groups: &CudaGroups) -> Setting {
    policy(
        groups.define.as_str(),
        groups.value(),
        groups.reason.as_str(),
    )
}

/// The shared runtime's name (`lib<NAME>.so`, its SONAME too), which the packaging gate
/// accepts exporting the C++ runtime in an archive.
pub const CXX_RUNTIME_NAME: &str = "LLAMA_FORGE_CXX_RUNTIME_NAME";
/// [`CXX_RUNTIME_NAME`]'s value: a name of its own, so that the file never takes the place of
/// a system `libstdc++.so.6` in a process that loads one.
pub const CXX_RUNTIME_LIBRARY: &str = "llama-forge-stdc++";

/// [`CXX_RUNTIME`] and [`CXX_RUNTIME_NAME`], for the runtime at `archive` (as the plan
/// writes paths), where a patch provides `shared-cxx-runtime` and each library would
/// otherwise link its own copy ([`Platform::static_cxx_runtime`]).
pub fn cxx_runtime(archive: String) -> Vec<Setting> {
    vec![
        policy(
            CXX_RUNTIME,
            archive,
            "llama.cpp's tool libraries (llama-common, the tools' -impl libraries) pass C++ objects to each other and to the programs (common_params, std::ifstream), and each linked its own hidden copy of the C++ runtime: a std::locale made by one copy and destroyed by another aborted llama-bench twice while flags changed (BENCHMARKS.md). The recipe's patch links one shared runtime from this libstdc++.a, whole, and the tool libraries and programs use it; the libraries with a C API (ggml's, llama, mtmd) keep their own, hidden",
        ),
        policy(
            CXX_RUNTIME_NAME,
            CXX_RUNTIME_LIBRARY,
            format!("the tools' shared C++ runtime is lib{CXX_RUNTIME_LIBRARY}.so: a name of its own, so that it never stands in for the system's libstdc++.so.6, which other libraries in a process may need (it is the one file of the archive allowed to export the C++ runtime)"),
        ),
    ]
}

/// llama.cpp's build number and commit, from the recipe's `[release.upstream]`: the
/// source is not a git checkout (and git is never asked, `CMAKE_DISABLE_FIND_PACKAGE_Git`),
/// so `cmake/build-info.cmake` would leave them `0` and `unknown`. llama.cpp's CMakeLists
/// keeps a LLAMA_BUILD_NUMBER/LLAMA_BUILD_COMMIT that is already defined, and hands both to
/// ggml (GGML_BUILD_NUMBER/GGML_BUILD_COMMIT) when it adds it; llama-cpp-python adds
/// llama.cpp as a subdirectory, where the cache variables reach it the same way. None for a
/// local source: which commit a given tree is, the tool cannot tell.
pub fn build_info(upstream: Option<&Upstream>) -> Vec<Setting> {
    let Some(u) = upstream else {
        return Vec::new();
    };
    let recipe = |name: &str, value: String, reason: String| Setting {
        name: name.into(),
        value,
        reason,
        origin: SettingOrigin::Recipe,
    };
    vec![
        recipe(
            "LLAMA_BUILD_NUMBER",
            u.build.to_string(),
            format!(
                "the build number of {}@{} (the recipe's [release.upstream] `build`: `git rev-list --count` of that commit in a full clone, which llama.cpp's build-info.cmake computes and its release tags bN are numbered by); the sources carry no git history, so without it the tools report build 0 (`--version`, llama-bench's `build:`)",
                u.repo, u.commit
            ),
        ),
        recipe(
            "LLAMA_BUILD_COMMIT",
            u.commit.short().to_string(),
            format!(
                "the commit of {}@{} (the recipe's [release.upstream] `commit`), {} hex digits as `git rev-parse --short` gives them in a full clone; without it the tools report `unknown`, and ggml's `ggml_commit()` too",
                u.repo,
                u.commit,
                crate::recipe::GitCommit::SHORT
            ),
        ),
    ]
}

/// The profile's GGML_CUDA, and for a GPU build the toolkit, host compiler, architectures and
/// flags nvcc gets.
pub fn cuda(
    switch: Option<&CudaSwitch>,
    gpu: Option<(&ArchRequest, &PlannedCuda)>,
    switched: bool,
    platform: &Platform,
    cache: &Path,
) -> Vec<Setting> {
    let mut defines = Vec::new();
    match gpu {
        Some((request, c)) => {
            if let Some(s) = switch {
                defines.push(policy(
                    s.name.as_str(),
                    "ON",
                    fill(&s.on, &[("arch", &request.to_string())]),
                ));
            }
            defines.push(policy(
                "CMAKE_CUDA_COMPILER",
                c.nvcc.path.clone(),
                format!("nvcc {} ({})", c.nvcc.version, c.nvcc.origin),
            ));
            defines.push(policy(
                "CUDAToolkit_ROOT",
                c.root.clone(),
                "FindCUDAToolkit uses the same toolkit as nvcc",
            ));
            defines.push(policy(
                "CMAKE_CUDA_HOST_COMPILER",
                portable(platform.host_cxx(), cache),
                platform.cuda_host_reason(switched),
            ));
            defines.push(policy(
                "CMAKE_CUDA_ARCHITECTURES",
                c.architectures.to_string(),
                c.arch_reasons.join("; "),
            ));
            let (flags, reasons): (Vec<String>, Vec<String>) = c.flags.iter().cloned().unzip();
            defines.push(policy(
                "CMAKE_CUDA_FLAGS",
                flags.join(" "),
                reasons.join("; "),
            ));
            if let Some(l) = &c.launcher {
                defines.push(policy(
                    "CMAKE_CUDA_COMPILER_LAUNCHER",
                    l.clone(),
                    "adds --frandom-seed per object (from its path): nvcc otherwise draws random numbers for generated names and some objects differ between builds; names the host compile's generated source as sccache does (x_0.cudafe1.cpp, the object's file symbol), so objects are the same with or without --launcher sccache",
                ));
            }
        }
        None => {
            if let Some(s) = switch {
                defines.push(policy(s.name.as_str(), "OFF", s.off.as_str()));
            }
        }
    }
    defines
}

/// The recipe's own defines, each replacing a define of the same name.
pub fn apply_recipe(defines: &mut Vec<Setting>, recipe: &Recipe) {
    for d in &recipe.cmake.defines {
        defines.retain(|p| p.name != d.name);
        defines.push(Setting {
            name: d.name.clone(),
            value: d.value.clone(),
            reason: d.reason.clone(),
            origin: SettingOrigin::Recipe,
        });
    }
}

/// `--define NAME=VALUE`s, after the recipe's: each added with its reason, "asked for on the
/// command line". One the plan already sets is refused, naming the option that decides it
/// (an arch list given by hand would get past the device-code gate, a compiler past the
/// host-compiler policy).
pub fn apply_user(
    defines: &mut Vec<Setting>,
    asked: &[(String, String)],
) -> Result<(), crate::plan::PlanError> {
    for (name, value) in asked {
        if let Some(p) = defines.iter().find(|p| p.name == *name) {
            let instead = match option_for(name) {
                Some(o) => format!("give {o} instead"),
                None => "it is not one --define changes (docs/options.md, --define)".to_string(),
            };
            return Err(crate::plan::PlanError::DefineOwned {
                name: name.clone(),
                asked: value.clone(),
                value: p.value.clone(),
                reason: p.reason.clone(),
                instead,
            });
        }
        defines.push(Setting {
            name: name.clone(),
            value: value.clone(),
            reason: "asked for on the command line (--define)".to_string(),
            origin: SettingOrigin::CommandLine,
        });
    }
    Ok(())
}

/// The option that decides CMake define `name` in a plan, where one does: `--arch` for
/// CMAKE_CUDA_ARCHITECTURES. What `--define` and a CMAKE_ARGS warning point to.
pub fn option_for(name: &str) -> Option<&'static str> {
    Some(match name {
        "CMAKE_CUDA_ARCHITECTURES" | "GGML_CUDA" => "--arch (120, 90, cpu)",
        "CMAKE_CUDA_COMPILER" | "CUDAToolkit_ROOT" => "--cuda or --cuda-path",
        "CMAKE_CXX_COMPILER" | "CMAKE_C_COMPILER" | "CMAKE_CUDA_HOST_COMPILER" => "--host-cc",
        "GGML_NATIVE" | "GGML_CPU_ALL_VARIANTS" | "GGML_BACKEND_DL" => "--cpu-baseline",
        "CMAKE_C_COMPILER_LAUNCHER"
        | "CMAKE_CXX_COMPILER_LAUNCHER"
        | "CMAKE_CUDA_COMPILER_LAUNCHER" => "--launcher",
        _ => return None,
    })
}

/// The one line for a CMAKE_ARGS in the environment, which the build does not read (the
/// plan decides every define): what each `-D` of it maps to, an option or `--define`.
pub fn cmake_args_warning(cmake_args: &str) -> String {
    let mut instead: Vec<String> = Vec::new();
    for word in cmake_args.split_whitespace() {
        let Some(d) = word.strip_prefix("-D") else {
            continue;
        };
        let (name, value) = d.split_once('=').unwrap_or((d, ""));
        let name = name.split(':').next().unwrap_or(name);
        let say = match option_for(name) {
            Some(o) => format!("{name}: {o}"),
            None => format!("{name}: --define {name}={value}"),
        };
        if !instead.contains(&say) {
            instead.push(say);
        }
    }
    let mut line = format!(
        "CMAKE_ARGS is set ({}) and not read: the plan decides every CMake define",
        cmake_args.trim()
    );
    if !instead.is_empty() {
        line.push_str(&format!("; instead give {}", instead.join(", ")));
    }
    line
}
