//! The plan's CMake defines: each with its value and the reason it is there.

use std::path::Path;

use crate::cuda::ArchRequest;
use crate::detect::toolchain::Tool;
use crate::plan::cuda::PlannedCuda;
use crate::plan::setting::{decided, policy, portable, Setting, SettingOrigin};
use crate::platform::Platform;
use crate::recipe::{Recipe, Upstream};
use crate::request::CpuBaseline;

/// An optional dependency that llama.cpp's or llama-cpp-python's CMake files may
/// find on the build machine, and what every plan decides for it. The audit (each
/// `find_package`, `find_library`, `find_program` and pkg-config call of both
/// recipes' sources, with file and line) is docs/optional-dependencies.md.
pub struct OptionalDependency {
    /// The CMake variable that decides it.
    pub name: &'static str,
    pub value: &'static str,
    pub reason: &'static str,
    /// Libraries it would link (file-name prefixes): when one of them turns up in an
    /// artifact undeclared, the packaging gate names this define.
    pub links: &'static [&'static str],
}

const fn dep(
    name: &'static str,
    value: &'static str,
    links: &'static [&'static str],
    reason: &'static str,
) -> OptionalDependency {
    OptionalDependency {
        name,
        value,
        reason,
        links,
    }
}

const SSL: &[&str] = &["libssl.so", "libcrypto.so"];

/// Every optional dependency, decided: off, so that nothing depends on what the build
/// machine has installed (turning one on needs a declared source: a Requires-Dist wheel
/// and hermetic headers). Where an option alone could be undone by a new default, the
/// package itself is disabled too (`CMAKE_DISABLE_FIND_PACKAGE_<Pkg>`). Defines a release
/// does not know are harmless: CMake lists them as unused.
pub const OPTIONAL_DEPENDENCIES: &[OptionalDependency] = &[
    dep("GGML_OPENMP", "OFF", &["libgomp.so", "libomp.so", "libiomp5.so"], "libgomp is outside the manylinux allow-list and would have to be bundled; ggml's own thread pool is used"),
    dep("CMAKE_DISABLE_FIND_PACKAGE_OpenMP", "ON", &["libgomp.so", "libomp.so", "libiomp5.so"], "no OpenMP runtime is found and linked (FindOpenMP), whatever an option says"),
    dep("GGML_OPENMP_FETCH", "OFF", &[], "newer llama.cpp would download LLVM's OpenMP (libomp.dll) at configure time for MSVC; OpenMP is off"),
    dep("GGML_BLAS", "OFF", &["libblas.so", "libcblas.so", "libopenblas", "libblis.so", "libmkl_", "libflexiblas.so", "libatlas.so"], "BLAS would be whatever FindBLAS or pkg-config (openblas, blis, mkl-sdl, ...) finds on the build machine; ggml's own kernels are used (llama.cpp's default is OFF except on Apple)"),
    dep("CMAKE_DISABLE_FIND_PACKAGE_BLAS", "ON", &["libblas.so", "libcblas.so", "libopenblas", "libblis.so", "libmkl_", "libflexiblas.so", "libatlas.so"], "no system BLAS is found, whatever an option says"),
    dep("GGML_CPU_HBM", "OFF", &["libmemkind.so"], "memkind (find_library) for high-bandwidth memory is a system library"),
    dep("GGML_CPU_KLEIDIAI", "OFF", &[], "KleidiAI is downloaded at configure time (FetchContent); Arm only"),
    dep("GGML_ACCELERATE", "OFF", &[], "Apple's Accelerate framework (find_library): Apple only"),
    dep("GGML_RPC", "OFF", &["libibverbs.so"], "the RPC backend is not shipped; newer llama.cpp also links libibverbs (RDMA) to it wherever find_library finds one"),
    dep("GGML_RPC_RDMA", "OFF", &["libibverbs.so"], "newer llama.cpp turns RDMA for RPC on wherever libibverbs is installed"),
    dep("GGML_CUDA_NCCL", "OFF", &["libnccl.so"], "NCCL (multi-GPU collectives): newer llama.cpp turns it on by default and links whatever libnccl.so.2 FindNCCL finds on the build machine (/usr, CUDA_HOME, /usr/local/cuda), a library neither in the artifact nor declared; these builds target one GPU"),
    dep("CMAKE_DISABLE_FIND_PACKAGE_NCCL", "ON", &["libnccl.so"], "NCCL is never found, whatever an option says: turning it on needs a declared source (the index's nvidia-nccl wheel as Requires-Dist, its headers in the plan)"),
    dep("GGML_CUDA_CUB_3DOT2", "OFF", &[], "would clone NVIDIA CCCL 3.2 from GitHub at configure time; the toolkit's CUB is used"),
    dep("GGML_VULKAN", "OFF", &["libvulkan.so"], "backend not shipped: it would find the Vulkan SDK and glslc on the build machine"),
    dep("GGML_METAL", "OFF", &[], "backend not shipped: Apple's Metal frameworks (find_library), Apple only"),
    dep("GGML_HIP", "OFF", &["libamdhip64.so", "libhipblas.so", "librocblas.so", "librccl.so"], "backend not shipped: it would find ROCm (hip, hipblas, rocblas, rccl) on the build machine"),
    dep("GGML_MUSA", "OFF", &["libmusa.so", "libmusart.so", "libmublas.so"], "backend not shipped: it would find the MUSA toolkit on the build machine"),
    dep("GGML_SYCL", "OFF", &["libsycl.so", "libdnnl.so", "libmkl_", "libze_loader.so"], "backend not shipped: it would find oneAPI (IntelSYCL, MKL, oneDNN, Level Zero) on the build machine"),
    dep("GGML_OPENCL", "OFF", &["libOpenCL.so"], "backend not shipped: it would find an OpenCL ICD loader on the build machine"),
    dep("GGML_CANN", "OFF", &["libascendcl.so"], "backend not shipped: it would find the Ascend CANN toolkit on the build machine"),
    dep("GGML_WEBGPU", "OFF", &["libwebgpu_dawn.so"], "backend not shipped: it would find Dawn on the build machine"),
    dep("GGML_ZDNN", "OFF", &["libzdnn.so"], "backend not shipped: IBM zDNN (s390x)"),
    dep("GGML_VIRTGPU", "OFF", &["libdrm.so"], "backend not shipped: newer llama.cpp would find libdrm with pkg-config"),
    dep("GGML_OPENVINO", "OFF", &["libopenvino.so", "libOpenCL.so"], "backend not shipped: newer llama.cpp would find OpenVINO and OpenCL on the build machine"),
    dep("GGML_ZENDNN", "OFF", &["libzendnn"], "backend not shipped: newer llama.cpp would download and build ZenDNN at configure time"),
    dep("GGML_HEXAGON", "OFF", &[], "backend not shipped: newer llama.cpp would need the Hexagon SDK"),
    dep("GGML_ET", "OFF", &[], "backend not shipped: newer llama.cpp would find the ET runtime packages"),
    dep("LLAMA_USE_SYSTEM_GGML", "OFF", &[], "find_package(ggml) would link the build machine's libggml instead of the vendored one"),
    dep("LLAMA_CURL", "OFF", &["libcurl.so"], "libcurl (find_package(CURL)) would be one more system dependency; models are local files"),
    dep("CMAKE_DISABLE_FIND_PACKAGE_CURL", "ON", &["libcurl.so"], "libcurl is never found, whatever an option says"),
    dep("LLAMA_OPENSSL", "OFF", SSL, "OpenSSL (find_package(OpenSSL)) would be one more system dependency; newer llama.cpp turns it on by default"),
    dep("LLAMA_SERVER_SSL", "OFF", SSL, "older llama.cpp: OpenSSL for llama-server's HTTPS (find_package(OpenSSL REQUIRED))"),
    dep("LLAMA_BUILD_BORINGSSL", "OFF", SSL, "newer llama.cpp would download and build BoringSSL at configure time"),
    dep("LLAMA_BUILD_LIBRESSL", "OFF", SSL, "newer llama.cpp would download and build LibreSSL at configure time"),
    dep("CMAKE_DISABLE_FIND_PACKAGE_OpenSSL", "ON", SSL, "OpenSSL is never found, whatever an option says"),
    dep("LLAMA_LLGUIDANCE", "OFF", &["libllguidance"], "ExternalProject would download llguidance and build it with the build machine's cargo"),
    dep("LLAMA_BUILD_UI", "OFF", &[], "newer llama.cpp would build llama-server's web UI with whatever npm (find_program) finds, downloading its packages"),
    dep("LLAMA_USE_PREBUILT_UI", "OFF", &[], "newer llama.cpp would download llama-server's web UI from Hugging Face during the build"),
    dep("CMAKE_DISABLE_FIND_PACKAGE_Git", "ON", &[], "the build info (commit, build number) is not read with whatever git the build machine has: the sdist ships a .git, so with git installed libllama and libggml embedded `0c1e570`, build 1, `0c1e570-dirty`, and without it `unknown`, 0; now the same on every machine: the recipe's [release.upstream] (LLAMA_BUILD_NUMBER, LLAMA_BUILD_COMMIT), or `unknown`, 0 for a local source"),
    dep("GIT_EXECUTABLE", "", &[], "build-info.cmake's fallback find_program(GIT_EXECUTABLE): set and empty, it is not searched and reads as no git"),
    dep("GIT_EXE", "", &[], "ggml's own find_program(GIT_EXE) for its commit (GGML_BUILD_COMMIT): set and empty, it is not searched and reads as no git"),
];

/// The define that decides whether a library is linked, if it is one of the optional dependencies.
pub fn deciding_define(library: &str) -> Option<&'static OptionalDependency> {
    OPTIONAL_DEPENDENCIES
        .iter()
        .filter(|d| !d.name.starts_with("CMAKE_DISABLE_FIND_PACKAGE_"))
        .find(|d| d.links.iter().any(|l| library.starts_with(l)))
}

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

/// What every build decides the same way: no native code, no compile cache of its own,
/// every optional dependency, runtime dispatch of the CPU code.
pub fn fixed(
    platform: &Platform,
    baseline: CpuBaseline,
    subset: bool,
    cpu: &[crate::cpu::Decision],
) -> Vec<Setting> {
    let mut defines = Vec::new();
    defines.push(policy(
        "GGML_NATIVE",
        "OFF",
        "never -march=native or the build machine's GPU: the artifact must run on other machines",
    ));
    defines.push(policy(
        "GGML_CCACHE",
        "OFF",
        "llama.cpp otherwise wraps every compile in any ccache/sccache it finds on PATH, so the build would depend on what happens to be installed; --launcher turns a compile cache on explicitly",
    ));
    for d in OPTIONAL_DEPENDENCIES {
        defines.push(match (d.name, platform.openmp_reason()) {
            ("GGML_OPENMP", Some(reason)) => policy(d.name, d.value, reason),
            _ => policy(d.name, d.value, d.reason),
        });
    }
    defines.push(policy(
        "GGML_BACKEND_DL",
        "ON",
        "backends are modules loaded at run time (libggml-cpu-<variant>.so, libggml-cuda.so), so the CPU code can be chosen for the CPU it runs on; llama.cpp's tools load them (ggml_backend_load_all), the wheel's llama_cpp does at import (a recorded patch)",
    ));
    let arch = platform.arch();
    let built = if subset {
        format!("only the shipped variants are built ({CPU_VARIANTS})")
    } else {
        "every variant ggml knows is built (ggml has no switch for a subset, and no recipe patch gives one)".to_string()
    };
    let skipped: Vec<String> = cpu
        .iter()
        .filter_map(|d| match &d.skipped {
            Some(crate::cpu::Skip::Compiler(why)) => Some(format!("{}: {why}", d.variant.name)),
            _ => None,
        })
        .collect();
    defines.push(policy(
        "GGML_CPU_ALL_VARIANTS",
        "ON",
        match arch {
            crate::platform::Arch::X86_64 => format!(
                "runtime dispatch: the CPU backend is built once per x86-64 variant, each with its own ISA switches, and ggml loads the best one the CPU can run; {built}; the artifact ships those from the {baseline} floor up (cpu_variants): {}",
                crate::cpu::variants::SHIPPED_REASON
            ),
            crate::platform::Arch::Aarch64 => format!(
                "runtime dispatch: the CPU backend is built once per Arm variant (-march=armv8-a up to armv8.6-a+sve2), and ggml loads the best one the CPU can run (hwcaps); {built}; {}{}",
                crate::cpu::variants::shipped_reason(arch),
                if skipped.is_empty() {
                    String::new()
                } else {
                    format!("; not built: {}", skipped.join("; "))
                }
            ),
        },
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

/// The CMake variable that a recipe's patch of ggml's `ggml_add_cpu_backend_variant`
/// reads: the variants to add, comma-separated; ggml itself builds every variant it knows.
pub const CPU_VARIANTS: &str = "LLAMA_FORGE_CPU_VARIANTS";

/// Whether the source's patches read [`CPU_VARIANTS`], so that only the shipped variants
/// are compiled (a release without such a patch builds them all, to the same bytes).
pub fn builds_variant_subset(patches: &[crate::recipe::Patch]) -> bool {
    patches_read(patches, CPU_VARIANTS)
}

/// Whether one of the source's patches reads the CMake variable `name` (the plan sets such
/// a variable only where a patch of this release reads it).
fn patches_read(patches: &[crate::recipe::Patch], name: &str) -> bool {
    patches.iter().any(|p| p.replace.contains(name))
}

/// [`CPU_VARIANTS`]: the shipped variants, the only ones compiled.
pub fn cpu_variants(names: &[&str]) -> Setting {
    policy(
        CPU_VARIANTS,
        names.join(","),
        "only the CPU variants the artifact ships are compiled (the recipe's patch of ggml/src/CMakeLists.txt skips the others): each variant is its own library from its own objects, so the shipped ones are the same bytes as when all are built (bench/cpu_variants.sh), with 251 of the 0.3.36 wheel's 413 compiles",
    )
}

/// The CMake variable that a recipe's patch of ggml-cuda's CMakeLists reads: the template
/// instance families to compile in groups, `FAMILY:SIZE` comma-separated; without it ggml
/// compiles every instance file alone.
pub const CUDA_GROUPS: &str = "LLAMA_FORGE_CUDA_GROUPS";

/// The families [`CUDA_GROUPS`] names, with how many files at most each group takes. A
/// group is one compile, so it must not outlast the build's longest file (mmvq.cu, about
/// 90 s on the GPU machine's cores): with 16 cores, groups of three mmq instances (about
/// 200 s) ended the build. mmq's instances take 45-100 s there, fattn-mma-f16's 40-80,
/// fattn-tile's 20-95 (two to a group); mmf's about 30 and fattn-vec's about 20 (four).
/// `ops` is ggml-cuda's own op files (not template instances) but for those the patch
/// keeps alone: 4-14 s each there, most of it the fixed cost, seven to a group.
/// Four headers get their `#pragma once` from the recipe's patches.
pub const CUDA_GROUP_FAMILIES: &[(&str, u8)] = &[
    ("mmq", 2),
    ("mmf", 4),
    ("fattn-vec", 4),
    ("fattn-mma-f16", 2),
    ("fattn-tile", 2),
    ("ops", 7),
];

/// Whether the source's patches read [`CUDA_GROUPS`] (a release without such a patch
/// compiles every instance alone).
pub fn builds_cuda_groups(patches: &[crate::recipe::Patch]) -> bool {
    patches_read(patches, CUDA_GROUPS)
}

/// [`CUDA_GROUPS`], where CUDA is built and the patch is there.
pub fn cuda_groups() -> Setting {
    let value = CUDA_GROUP_FAMILIES
        .iter()
        .map(|(family, size)| format!("{family}:{size}"))
        .collect::<Vec<_>>()
        .join(",");
    policy(
        CUDA_GROUPS,
        value,
        "ggml-cuda's template instances, and its short op files (family ops), are compiled in groups, one translation unit each (the recipe's patch of ggml/src/ggml-cuda/CMakeLists.txt writes a file per group into the source tree, which includes the group's files; FAMILY:SIZE, the most files a group takes): each file paid nvcc's fixed cost again (two host preprocessings, the parse of common.cuh and the family's header by cicc and the host compiler, cudafe++), 6-9 s of a 10-90 s instance and most of a 4-14 s op file; a group compiles the same kernels. Members are spread by name (file i of n goes to group i % ceil(n / SIZE)), so neighbours such as the two FP4 mmq instances are not in one group",
    )
}

/// The CMake variable that an archive recipe's patch reads: the static C++ runtime
/// (`libstdc++.a`) to link the tools' shared runtime from. Set only where a patch reads it
/// and each library would otherwise link its own copy ([`Platform::static_cxx_runtime`]).
pub const CXX_RUNTIME: &str = "LLAMA_FORGE_CXX_RUNTIME";
/// The shared runtime's name (`lib<NAME>.so`, its SONAME too), which the packaging gate
/// accepts exporting the C++ runtime in an archive.
pub const CXX_RUNTIME_NAME: &str = "LLAMA_FORGE_CXX_RUNTIME_NAME";
/// [`CXX_RUNTIME_NAME`]'s value: a name of its own, so that the file never takes the place of
/// a system `libstdc++.so.6` in a process that loads one.
pub const CXX_RUNTIME_LIBRARY: &str = "llama-forge-stdc++";

/// Whether the source's patches read [`CXX_RUNTIME`].
pub fn shares_cxx_runtime(patches: &[crate::recipe::Patch]) -> bool {
    patches_read(patches, CXX_RUNTIME)
}

/// [`CXX_RUNTIME`] and [`CXX_RUNTIME_NAME`], for the runtime at `archive` (as the plan
/// writes paths).
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

/// GGML_CUDA, and for a GPU build the toolkit, host compiler, architectures and flags nvcc gets.
pub fn cuda(
    gpu: Option<(&ArchRequest, &PlannedCuda)>,
    switched: bool,
    platform: &Platform,
    cache: &Path,
) -> Vec<Setting> {
    let mut defines = Vec::new();
    match gpu {
        Some((request, c)) => {
            defines.push(policy(
                "GGML_CUDA",
                "ON",
                format!("GPU build: --arch {request}"),
            ));
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
        _ => defines.push(policy("GGML_CUDA", "OFF", "CPU build: --arch cpu")),
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
