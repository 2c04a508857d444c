//! The plan: a pure function of (recipe, detected toolchains, options).
//!
//! Everything the build will do is here: every CMake define and compiler flag with
//! the reason it is there, the complete environment of every command, the command
//! lines themselves, and what gets packaged. Paths that differ between machines
//! and checkouts are placeholders (`${SRC}`, `${BUILD}`, `${STAGE}`) that the
//! executor fills in, so equal plans hash equal wherever they run.

pub mod cuda;
pub mod error;
pub mod launcher;
pub mod setting;
pub mod source;
pub mod target;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use crate::plan::error::PlanError;
pub use crate::plan::setting::{portable, Setting, SettingOrigin, ToolRecord};
pub use crate::plan::source::{PlannedSource, SourceChoice, SourceKind};

use crate::detect::toolchain::Toolchains;
use crate::digest::Sha256Hex;
use crate::package::tags::{normalize_distribution, LocalLabel, PyVersion};
use crate::plan::setting::{onoff, policy};
use crate::plan::target::{Accelerator, CpuBaseline};
use crate::platform::msvc::env::{MsvcEnvSource, MsvcToolsetEnv, VsInstall};
use crate::platform::msvc::plan::{
    msvc_env, MSVC_BREPRO_REASON, MSVC_OPENMP_REASON, MSVC_REPRO_FLAGS, MSVC_TRIMFILE_REASON,
};
use crate::recipe::{ArtifactKind, Recipe, Release};
use crate::versions::Version;

pub const SCHEMA: u32 = 1;

/// What the user asked for, as typed values.
#[derive(Debug, Clone)]
pub struct Options {
    pub accelerator: Accelerator,
    pub cpu_baseline: CpuBaseline,
    /// Python versions to package for (wheels only); empty for archives.
    pub pythons: Vec<PyVersion>,
    pub source: SourceChoice,
    /// The tool cache root: paths under it are written `${CACHE}/...`.
    pub cache: PathBuf,
    /// `--ptx`: add PTX for the highest arch.
    pub ptx: bool,
    /// `--cuda 13.0`: which toolkit, when several are found.
    pub cuda_release: Option<crate::cuda::CudaVersion>,
    pub cuda_runtime: crate::plan::cuda::RuntimeMode,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub schema: u32,
    pub recipe: String,
    pub version: Version,
    pub upstream: Option<String>,
    pub artifact: ArtifactKind,
    pub accelerator: Accelerator,
    pub cpu_baseline: CpuBaseline,
    /// Present for GPU builds.
    pub cuda: Option<crate::plan::cuda::PlannedCuda>,
    pub source: PlannedSource,
    /// Unix seconds: SOURCE_DATE_EPOCH and every timestamp in the artifact.
    pub source_date_epoch: u64,
    pub tools: PlannedTools,
    /// The whole environment of every command: nothing else is inherited.
    pub env: Vec<Setting>,
    /// Every `-D` given to CMake, in order.
    pub defines: Vec<Setting>,
    /// Command lines, with placeholders.
    pub commands: Commands,
    pub package: Package,
    /// `--launcher ccache|sccache`: how objects are made faster, not which bytes.
    /// Left out of the hash and of the manifest inside the artifact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launcher: Option<crate::plan::launcher::Launcher>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedTools {
    pub cmake: ToolRecord,
    pub ninja: ToolRecord,
    /// Rewrites RUNPATHs (CUDA builds only).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub patchelf: Option<ToolRecord>,
    pub cc: ToolRecord,
    pub cxx: ToolRecord,
    /// MSVC: the toolset the build runs with, where its environment came from, and its Visual Studio.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub msvc: Option<PlannedMsvc>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedMsvc {
    pub toolset: crate::platform::msvc::MsvcToolset,
    pub source: MsvcEnvSource,
    pub instance: VsInstall,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Commands {
    pub configure: Vec<String>,
    pub build: Vec<String>,
    pub install: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Package {
    Wheel {
        project: String,
        distribution: String,
        local: LocalLabel,
        pythons: Vec<PyVersion>,
        packages: Vec<String>,
        lib_dir: String,
        collect_from: String,
        libraries: Vec<String>,
        /// Extra Requires-Dist lines (CUDA runtime wheels).
        requires: Vec<String>,
    },
    Archive {
        stem: String,
        collect_from: String,
        binaries: Vec<String>,
        optional_binaries: Vec<String>,
        libraries: Vec<String>,
        docs: Vec<String>,
    },
}

impl Plan {
    /// sha256 of the plan's JSON: the build cache key and the manifest's plan id.
    pub fn hash(&self) -> Sha256Hex {
        crate::digest::sha256_bytes(&serde_json::to_vec(&self.recorded()).expect("plan serialises"))
    }

    /// The plan as the artifact records it: what is built, without the launcher
    /// and without the CUDA toolkits found here but not used (`cuda.skipped`).
    pub fn recorded(&self) -> Plan {
        let mut p = Plan {
            launcher: None,
            ..self.clone()
        };
        if let Some(c) = &mut p.cuda {
            c.skipped.clear();
        }
        p
    }

    /// The plan's own `CMAKE_CUDA_COMPILER_LAUNCHER` (the nvcc seed script), if any.
    pub fn cuda_launcher(&self) -> Option<&str> {
        self.defines
            .iter()
            .find(|d| d.name == "CMAKE_CUDA_COMPILER_LAUNCHER")
            .map(|d| d.value.as_str())
    }

    pub fn local_label(
        cuda: Option<&crate::plan::cuda::PlannedCuda>,
        baseline: CpuBaseline,
    ) -> LocalLabel {
        let mut label = match cuda {
            None => "cpu".to_string(),
            Some(c) => {
                let mut l = c.label.clone();
                for a in c.architectures.sass() {
                    l.push_str(&format!(".{}", a.sm_name().replace('_', "")));
                }
                if c.architectures.ptx().next().is_some() {
                    l.push_str(".ptx");
                }
                l
            }
        };
        if let Some(s) = baseline.label_suffix() {
            label = format!("{label}.{s}");
        }
        label
            .parse()
            .expect("labels built from known parts are valid")
    }
}

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
    dep("CMAKE_DISABLE_FIND_PACKAGE_Git", "ON", &[], "the build info (commit, build number) is not read with whatever git the build machine has: the sdist ships a .git, so with git installed libllama and libggml embedded `0c1e570`, build 1, `0c1e570-dirty`, and without it `unknown`, 0; now `unknown`, 0 on every machine (the recipe's `upstream` names the commit)"),
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

/// Makes the plan. No I/O: everything comes in as arguments.
pub fn make(
    recipe: &Recipe,
    release: &Release,
    tools: &Toolchains,
    opts: &Options,
) -> Result<Plan, PlanError> {
    let cmake = tools.cmake.clone().ok_or(PlanError::MissingTool {
        tool: "cmake",
        hint: "install CMake, or let the tool fetch the pinned one (Linux x86-64)",
    })?;
    if !cmake.version.at_least(&recipe.cmake.min_cmake) {
        return Err(PlanError::OldCmake {
            found: cmake.version.clone(),
            needed: recipe.cmake.min_cmake.clone(),
            path: cmake.path.display().to_string(),
            recipe: recipe.name.clone(),
        });
    }
    let ninja = tools.ninja.clone().ok_or(PlanError::MissingTool {
        tool: "ninja",
        hint: "install Ninja, or let the tool fetch the pinned one (Linux x86-64)",
    })?;
    let compiler = tools.compiler.clone().ok_or(PlanError::MissingTool {
        tool: "C++ compiler",
        hint: "install g++ or clang++, or name one with CC and CXX",
    })?;
    match recipe.artifact {
        ArtifactKind::Archive if !opts.pythons.is_empty() => {
            return Err(PlanError::PyForArchive(recipe.name.clone()))
        }
        ArtifactKind::Wheel if opts.pythons.is_empty() => {
            return Err(PlanError::NoPython(recipe.name.clone()))
        }
        _ => {}
    }

    let pinned = &release.sources[0];
    let source = source::planned(recipe, release, &opts.source);
    let date = pinned.date;
    // The CUDA plan comes first: with MSVC, its host compiler policy may pick another toolset,
    // whose environment and cl.exe the whole build then uses.
    let cuda = match &opts.accelerator {
        Accelerator::Cpu => None,
        Accelerator::Cuda(request) => Some(crate::plan::cuda::plan(
            &tools.cuda,
            &compiler,
            &crate::plan::cuda::CudaOptions {
                request,
                ptx: opts.ptx,
                release: opts.cuda_release,
                runtime: opts.cuda_runtime,
                cache: &opts.cache,
            },
        )?),
    };
    let (cuda, switched) = match cuda {
        Some((c, t)) => (Some(c), t),
        None => (None, None),
    };
    let msvc: Option<&MsvcToolsetEnv> = compiler.msvc.as_ref().map(|m| match switched {
        Some(t) => m.others.iter().find(|o| o.toolset == t).unwrap_or(&m.host),
        None => &m.host,
    });
    let host_cxx = match msvc {
        Some(t) => t.cl.clone(),
        None => compiler.cxx.clone(),
    };

    let sde = policy(
        "SOURCE_DATE_EPOCH",
        date.to_string(),
        "the source's own date: tools that stamp times use it instead of the clock",
    );
    let tz = policy(
        "TZ",
        "UTC",
        "no local time zone in anything the build writes",
    );
    let env = match msvc {
        None => {
            let mut path_dirs: Vec<String> = Vec::new();
            for d in [
                compiler.cxx.parent(),
                Some(std::path::Path::new("/usr/bin")),
                Some(std::path::Path::new("/bin")),
            ]
            .into_iter()
            .flatten()
            {
                let d = d.display().to_string();
                if !d.is_empty() && !path_dirs.contains(&d) {
                    path_dirs.push(d);
                }
            }
            vec![
                policy(
                    "PATH",
                    path_dirs.join(":"),
                    "the build sees no user PATH: the compiler's dir (for its assembler and linker) and the system dirs",
                ),
                policy("LC_ALL", "C", "compiler messages and sorting independent of the user's locale"),
                tz,
                sde,
            ]
        }
        Some(t) => {
            let mut env: Vec<Setting> = msvc_env(t)
                .into_iter()
                .map(|(name, value, reason)| policy(name, value, reason))
                .collect();
            env.push(tz);
            env.push(sde);
            env
        }
    };

    let mut defines = vec![
        policy(
            "CMAKE_BUILD_TYPE",
            "Release",
            if msvc.is_some() {
                "optimised code (/O2 /DNDEBUG), no debug info"
            } else {
                "optimised code (-O3 -DNDEBUG), no debug info"
            },
        ),
        policy(
            "CMAKE_MAKE_PROGRAM",
            portable(&ninja.path, &opts.cache),
            "the Ninja found or provisioned for this build",
        ),
    ];
    match msvc {
        None => defines.extend([
            policy("CMAKE_C_COMPILER", portable(&compiler.cc, &opts.cache), "the host compiler detected for this build"),
            policy("CMAKE_CXX_COMPILER", portable(&compiler.cxx, &opts.cache), "the host compiler detected for this build"),
            policy(
                "CMAKE_C_FLAGS",
                "-ffile-prefix-map=${SRC}=/src -ffile-prefix-map=${BUILD}=/build",
                "no build-machine path in __FILE__, asserts or debug info",
            ),
            policy(
                "CMAKE_CXX_FLAGS",
                "-ffile-prefix-map=${SRC}=/src -ffile-prefix-map=${BUILD}=/build",
                "no build-machine path in __FILE__, asserts or debug info",
            ),
            policy("CMAKE_INSTALL_PREFIX", "${STAGE}/prefix", "install rules outside the artifact (headers, CMake files) land in the staging dir, not the system"),
            policy("CMAKE_BUILD_WITH_INSTALL_RPATH", "ON", "libraries get their final RUNPATH when linked: no build-dir path is ever written"),
            policy("CMAKE_INSTALL_RPATH", "$ORIGIN", "libraries and tools find each other beside themselves, wherever they are unpacked"),
            policy(
                "CMAKE_PLATFORM_NO_VERSIONED_SONAME",
                "ON",
                "each library exactly once, under the name that is loaded (libllama.so): no .so.0/.so.0.0.N copies, which zip cannot store as links",
            ),
        ]),
        Some(t) => {
            let cl = portable(&t.cl, &opts.cache);
            let why = format!("MSVC toolset {}'s cl.exe, {} ({})", t.toolset, t.source, t.instance.display_name);
            let flags = format!("{MSVC_REPRO_FLAGS}; {MSVC_BREPRO_REASON}; {MSVC_TRIMFILE_REASON}");
            defines.extend([
                policy("CMAKE_C_COMPILER", cl.clone(), why.clone()),
                policy("CMAKE_CXX_COMPILER", cl, why),
                policy("CMAKE_C_FLAGS", "/DWIN32 /D_WINDOWS /Brepro /d1trimfile:${SRC}", flags.clone()),
                policy("CMAKE_CXX_FLAGS", "/DWIN32 /D_WINDOWS /EHsc /Brepro /d1trimfile:${SRC}", flags),
                policy("CMAKE_INSTALL_PREFIX", "${STAGE}/prefix", "install rules outside the artifact (headers, CMake files) land in the staging dir, not the system"),
            ]);
        }
    }
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
        defines.push(match (d.name, msvc) {
            ("GGML_OPENMP", Some(_)) => policy(d.name, d.value, MSVC_OPENMP_REASON),
            _ => policy(d.name, d.value, d.reason),
        });
    }
    let baseline_reason = format!(
        "CPU baseline {}: every ggml ISA switch is set, none left to ggml's defaults (which turn AVX2 on when GGML_NATIVE=OFF); runtime dispatch (GGML_BACKEND_DL) is not used because llama-cpp-python does not load backend modules",
        opts.cpu_baseline
    );
    for (name, on) in opts.cpu_baseline.ggml_defines() {
        defines.push(policy(name, onoff(on), baseline_reason.clone()));
    }
    match (&opts.accelerator, &cuda) {
        (Accelerator::Cuda(request), Some(c)) => {
            defines.push(policy(
                "GGML_CUDA",
                "ON",
                format!("GPU build: --arch {request}"),
            ));
            defines.push(policy(
                "CMAKE_CUDA_COMPILER",
                c.nvcc.path.clone(),
                format!("nvcc {} ({:?})", c.nvcc.version, c.nvcc.origin),
            ));
            defines.push(policy(
                "CUDAToolkit_ROOT",
                c.root.clone(),
                "FindCUDAToolkit uses the same toolkit as nvcc",
            ));
            let host_reason = match (switched, msvc) {
                (Some(_), Some(t)) => format!("nvcc's host passes use cl.exe of MSVC toolset {}, which the host compiler policy chose (see cuda.host_policy)", t.toolset),
                _ => "nvcc's host passes use the detected host compiler".to_string(),
            };
            defines.push(policy(
                "CMAKE_CUDA_HOST_COMPILER",
                portable(&host_cxx, &opts.cache),
                host_reason,
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
                    "adds --frandom-seed per object (from its path): nvcc otherwise draws random numbers for generated names and some objects differ between builds",
                ));
            }
        }
        _ => defines.push(policy("GGML_CUDA", "OFF", "CPU build: --arch cpu")),
    }
    for d in &recipe.cmake.defines {
        defines.retain(|p| p.name != d.name);
        defines.push(Setting {
            name: d.name.clone(),
            value: d.value.clone(),
            reason: d.reason.clone(),
            origin: SettingOrigin::Recipe,
        });
    }

    let project = if source.project_dir == "." {
        "${SRC}".to_string()
    } else {
        format!("${{SRC}}/{}", source.project_dir)
    };
    let cmake_bin = portable(&cmake.path, &opts.cache);
    let mut configure = vec![
        cmake_bin.clone(),
        "-S".into(),
        project,
        "-B".into(),
        "${BUILD}".into(),
        "-G".into(),
        "Ninja".into(),
    ];
    configure.extend(defines.iter().map(|d| format!("-D{}={}", d.name, d.value)));
    let mut build = vec![cmake_bin.clone(), "--build".into(), "${BUILD}".into()];
    let targets: Vec<&String> = recipe
        .cmake
        .targets
        .iter()
        .chain(&release.extra_targets)
        .collect();
    if !targets.is_empty() {
        build.push("--target".into());
        build.extend(targets.into_iter().cloned());
    }
    let install = recipe
        .cmake
        .install
        .then(|| vec![cmake_bin, "--install".into(), "${BUILD}".into()]);

    let local = Plan::local_label(cuda.as_ref(), opts.cpu_baseline);
    let cuda_libs: Vec<String> = match (&cuda, &recipe.wheel, &recipe.archive) {
        (None, _, _) => vec![],
        (Some(_), Some(w), _) => w.cuda_libraries.clone(),
        (Some(_), None, Some(a)) => a.cuda_libraries.clone(),
        (Some(_), None, None) => vec![],
    };
    let package = match (&recipe.wheel, &recipe.archive) {
        (Some(w), _) => Package::Wheel {
            project: w.project.clone(),
            distribution: normalize_distribution(&w.project),
            local,
            pythons: opts.pythons.clone(),
            packages: w.packages.clone(),
            lib_dir: w.lib_dir.clone(),
            collect_from: w.collect_from.clone(),
            libraries: w.libraries.iter().chain(&cuda_libs).cloned().collect(),
            requires: cuda
                .as_ref()
                .map(|c| c.requires.clone())
                .unwrap_or_default(),
        },
        (None, Some(a)) => Package::Archive {
            stem: format!(
                "{}-{}-{}-{}",
                recipe.name,
                release.version,
                local,
                if msvc.is_some() {
                    "windows-x86_64"
                } else {
                    "linux-x86_64"
                }
            ),
            collect_from: a.collect_from.clone(),
            binaries: a.binaries.clone(),
            optional_binaries: a.optional_binaries.clone(),
            libraries: a.libraries.iter().chain(&cuda_libs).cloned().collect(),
            docs: a.docs.clone(),
        },
        (None, None) => unreachable!("recipe validation guarantees an artifact table"),
    };

    let patchelf = match (&cuda, &tools.patchelf) {
        // RUNPATHs are ELF: nothing to rewrite in Windows DLLs.
        _ if msvc.is_some() => None,
        (Some(_), Some(p)) => Some(ToolRecord::of(p, &opts.cache)),
        (Some(_), None) => {
            return Err(PlanError::MissingTool {
                tool: "patchelf",
                hint: "install patchelf, or let the tool fetch the pinned one (Linux x86-64)",
            })
        }
        (None, _) => None,
    };
    Ok(Plan {
        schema: SCHEMA,
        recipe: recipe.name.clone(),
        version: release.version.clone(),
        upstream: release.upstream.clone(),
        artifact: recipe.artifact,
        accelerator: opts.accelerator.clone(),
        cpu_baseline: opts.cpu_baseline,
        cuda,
        source,
        source_date_epoch: date,
        tools: PlannedTools {
            cmake: ToolRecord::of(&cmake, &opts.cache),
            ninja: ToolRecord::of(&ninja, &opts.cache),
            patchelf,
            cc: match msvc {
                Some(t) => ToolRecord::cl(&compiler, t, &opts.cache),
                None => ToolRecord::compiler(&compiler, &compiler.cc, &opts.cache),
            },
            cxx: match msvc {
                Some(t) => ToolRecord::cl(&compiler, t, &opts.cache),
                None => ToolRecord::compiler(&compiler, &compiler.cxx, &opts.cache),
            },
            msvc: msvc.map(|t| PlannedMsvc {
                toolset: t.toolset,
                source: t.source.clone(),
                instance: t.instance.clone(),
            }),
        },
        env,
        defines,
        commands: Commands {
            configure,
            build,
            install,
        },
        package,
        launcher: None,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::detect::toolchain::{Compiler, CompilerKind, Origin, Tool};
    use crate::platform::msvc::plan::msvc_build_path;
    use std::path::Path;

    pub(crate) fn fake_tools(cache: &Path) -> Toolchains {
        let tool = |p: &str, v: &str, origin: Origin| Tool {
            path: PathBuf::from(p),
            version: v.parse().unwrap(),
            origin,
        };
        Toolchains {
            cmake: Some(tool(
                &cache
                    .join("tools/cmake-4.4.4/cmake/data/bin/cmake")
                    .display()
                    .to_string(),
                "4.4.4",
                Origin::PackageIndex {
                    url: "https://example.invalid/cmake.whl".into(),
                    sha256: "ab".repeat(32).parse().unwrap(),
                },
            )),
            ninja: Some(tool("/usr/bin/ninja", "1.11.1", Origin::System)),
            patchelf: None,
            compiler: Some(Compiler {
                kind: CompilerKind::Gcc,
                cc: "/usr/bin/gcc-12".into(),
                cxx: "/usr/bin/g++-12".into(),
                version: "12.2.0".parse().unwrap(),
                origin: Origin::System,
                msvc: None,
            }),
            cuda: vec![],
        }
    }

    /// A Windows machine from the recorded outputs: Visual Studio's own CMake and
    /// Ninja, and MSVC with `host` as the compiler and `others` installed beside it.
    pub(crate) fn fake_windows_tools(
        host: crate::detect::toolchain::MsvcToolsetEnv,
        others: Vec<crate::detect::toolchain::MsvcToolsetEnv>,
    ) -> Toolchains {
        let vs = r"C:\Program Files\Microsoft Visual Studio\18\Community\Common7\IDE\CommonExtensions\Microsoft\CMake";
        let tool = |p: String, v: &str| Tool {
            path: PathBuf::from(p),
            version: v.parse().unwrap(),
            origin: Origin::System,
        };
        Toolchains {
            cmake: Some(tool(format!(r"{vs}\CMake\bin\cmake.exe"), "4.1.1")),
            ninja: Some(tool(format!(r"{vs}\Ninja\ninja.exe"), "1.12.1")),
            patchelf: None,
            compiler: Some(crate::platform::msvc::compiler(
                crate::detect::toolchain::Msvc { host, others },
                Origin::System,
            )),
            cuda: vec![],
        }
    }

    /// VS 2026's own toolset (cl 19.50), VS 2022's toolset installed in VS 2026
    /// (cl 19.44, the recorded vcvars environment) and VS 2019's in VS 2022 (cl 19.29).
    pub(crate) fn vs2026_14_50() -> crate::detect::toolchain::MsvcToolsetEnv {
        use crate::platform::msvc::tests::{recorded_toolset, VS2026};
        recorded_toolset(
            VS2026,
            "Visual Studio Community 2026",
            "18.0.11205.157",
            "14.50.35717",
            "cl-19.50.35717-x64.txt",
        )
    }
    pub(crate) fn vs2026_14_44() -> crate::detect::toolchain::MsvcToolsetEnv {
        use crate::platform::msvc::tests::{recorded_toolset, VS2026};
        recorded_toolset(
            VS2026,
            "Visual Studio Community 2026",
            "18.0.11205.157",
            "14.44.35207",
            "cl-19.44.35211-x64.txt",
        )
    }
    pub(crate) fn vs2022_14_29() -> crate::detect::toolchain::MsvcToolsetEnv {
        use crate::platform::msvc::tests::{recorded_toolset, VS2022};
        recorded_toolset(
            VS2022,
            "Visual Studio Community 2022",
            "17.14.36414.22",
            "14.29.30133",
            "cl-19.29.30159-x64.txt",
        )
    }

    pub(crate) fn opts(pythons: &[&str]) -> Options {
        Options {
            accelerator: Accelerator::Cpu,
            cpu_baseline: CpuBaseline::V2,
            pythons: pythons.iter().map(|p| p.parse().unwrap()).collect(),
            source: SourceChoice::Pinned,
            cache: PathBuf::from("/home/someone/checkout/vendor/cache"),
            ptx: false,
            cuda_release: None,
            cuda_runtime: crate::plan::cuda::RuntimeMode::IndexWheels,
        }
    }

    fn recipe(name: &str) -> Recipe {
        Recipe::find(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("../recipes"),
            name,
        )
        .unwrap()
    }

    #[test]
    fn a_local_copy_of_the_pinned_sdist_plans_like_the_download() {
        let r = recipe("llama-cpp-python");
        let rel = r.release(None).unwrap();
        let mut o = opts(&["311"]);
        let fetched = make(&r, rel, &fake_tools(&o.cache), &o).unwrap();
        o.source = SourceChoice::Local {
            path: "/offline/copy.tar.gz".into(),
            sha256: rel.sources[0].sha256.clone(),
        };
        assert_eq!(
            make(&r, rel, &fake_tools(&o.cache), &o).unwrap().hash(),
            fetched.hash()
        );
        o.source = SourceChoice::Local {
            path: "/offline/patched.tar.gz".into(),
            sha256: crate::digest::sha256_bytes(b"other"),
        };
        let other = make(&r, rel, &fake_tools(&o.cache), &o).unwrap();
        assert_eq!(
            (other.source.kind.as_str(), other.source.location.as_str()),
            ("local", "/offline/patched.tar.gz")
        );
    }

    #[test]
    fn wheel_plan_snapshot() {
        let r = recipe("llama-cpp-python");
        let o = opts(&["311", "312"]);
        let plan = make(
            &r,
            r.release(Some(&"0.3.16".parse().unwrap())).unwrap(),
            &fake_tools(&o.cache),
            &o,
        )
        .unwrap();
        insta::assert_json_snapshot!("wheel_plan_0_3_16", plan);
    }

    #[test]
    fn archive_plan_snapshot() {
        let r = recipe("llama.cpp");
        let o = opts(&[]);
        let plan = make(
            &r,
            r.release(Some(&"0.3.36".parse().unwrap())).unwrap(),
            &fake_tools(&o.cache),
            &o,
        )
        .unwrap();
        insta::assert_json_snapshot!("archive_plan_0_3_36", plan);
    }

    #[test]
    fn plan_is_independent_of_the_checkout_location() {
        let r = recipe("llama-cpp-python");
        let a = opts(&["311"]);
        let mut b = opts(&["311"]);
        b.cache = PathBuf::from("/elsewhere/vendor/cache");
        let pa = make(&r, r.release(None).unwrap(), &fake_tools(&a.cache), &a).unwrap();
        let pb = make(&r, r.release(None).unwrap(), &fake_tools(&b.cache), &b).unwrap();
        assert_eq!(pa.hash(), pb.hash());
        assert!(!serde_json::to_string(&pa)
            .unwrap()
            .contains("/home/someone"));
    }

    #[test]
    fn every_setting_has_a_reason_and_native_is_off() {
        let r = recipe("llama-cpp-python");
        let o = opts(&["311"]);
        let plan = make(&r, r.release(None).unwrap(), &fake_tools(&o.cache), &o).unwrap();
        assert!(plan
            .defines
            .iter()
            .chain(&plan.env)
            .all(|s| !s.reason.trim().is_empty()));
        let get = |n: &str| {
            plan.defines
                .iter()
                .find(|d| d.name == n)
                .map(|d| d.value.as_str())
        };
        assert_eq!(get("GGML_NATIVE"), Some("OFF"));
        assert_eq!(get("GGML_AVX2"), Some("OFF"));
        assert_eq!(get("GGML_SSE42"), Some("ON"));
        // Each define reaches the configure command exactly once.
        for d in &plan.defines {
            let flag = format!("-D{}=", d.name);
            assert_eq!(
                plan.commands
                    .configure
                    .iter()
                    .filter(|a| a.starts_with(&flag))
                    .count(),
                1,
                "{}",
                d.name
            );
        }
    }

    #[test]
    fn baseline_v3_changes_defines_and_label() {
        let r = recipe("llama-cpp-python");
        let mut o = opts(&["311"]);
        o.cpu_baseline = CpuBaseline::V3;
        let plan = make(&r, r.release(None).unwrap(), &fake_tools(&o.cache), &o).unwrap();
        assert!(plan
            .defines
            .iter()
            .any(|d| d.name == "GGML_AVX2" && d.value == "ON"));
        let Package::Wheel { local, .. } = &plan.package else {
            panic!()
        };
        assert_eq!(local.to_string(), "cpu.v3");
    }

    #[test]
    fn msvc_cpu_plan_runs_in_the_toolset_environment_without_elf_settings() {
        let r = recipe("llama.cpp");
        let o = opts(&[]);
        let plan = make(
            &r,
            r.release(None).unwrap(),
            &fake_windows_tools(vs2026_14_50(), vec![vs2026_14_44()]),
            &o,
        )
        .unwrap();
        let get = |n: &str| {
            plan.defines
                .iter()
                .find(|d| d.name == n)
                .map(|d| d.value.as_str())
        };
        let cl = r"C:\Program Files\Microsoft Visual Studio\18\Community\VC\Tools\MSVC\14.50.35717\bin\HostX64\x64\cl.exe";
        assert_eq!(
            (get("CMAKE_C_COMPILER"), get("CMAKE_CXX_COMPILER")),
            (Some(cl), Some(cl))
        );
        assert_eq!(
            get("CMAKE_CXX_FLAGS"),
            Some("/DWIN32 /D_WINDOWS /EHsc /Brepro /d1trimfile:${SRC}")
        );
        assert_eq!(get("GGML_CUDA"), Some("OFF"));
        for elf in [
            "CMAKE_INSTALL_RPATH",
            "CMAKE_BUILD_WITH_INSTALL_RPATH",
            "CMAKE_PLATFORM_NO_VERSIONED_SONAME",
        ] {
            assert_eq!(get(elf), None, "{elf} is ELF-only");
        }
        let env = |n: &str| plan.env.iter().find(|e| e.name == n);
        let ts = env("VCToolsVersion").unwrap();
        assert_eq!(
            ts.value, "14.50.35717",
            "the host toolset: no CUDA, no policy"
        );
        assert_eq!(
            ts.reason,
            "from vcvars64.bat -vcvars_ver=14.50 (Visual Studio Community 2026)"
        );
        assert!(
            env("LC_ALL").is_none() && env("TZ").is_some() && env("SOURCE_DATE_EPOCH").is_some()
        );
        assert_eq!(plan.tools.cxx.kind, Some(CompilerKind::Msvc));
        assert_eq!(plan.tools.cxx.version.to_string(), "19.50.35717");
        assert_eq!(
            plan.tools.msvc.as_ref().unwrap().toolset.to_string(),
            "14.50.35717"
        );
        let Package::Archive { stem, .. } = &plan.package else {
            panic!()
        };
        assert!(stem.ends_with("-cpu-windows-x86_64"), "{stem}");
        for d in &plan.defines {
            let flag = format!("-D{}=", d.name);
            assert_eq!(
                plan.commands
                    .configure
                    .iter()
                    .filter(|a| a.starts_with(&flag))
                    .count(),
                1,
                "{}",
                d.name
            );
        }
        assert!(plan
            .defines
            .iter()
            .chain(&plan.env)
            .all(|s| !s.reason.trim().is_empty()));
    }

    #[test]
    fn msvc_build_path_keeps_visual_studio_sdk_and_system_dirs() {
        let t = vs2026_14_44();
        let got = msvc_build_path(&t.env["PATH"], &t.env);
        let dirs: Vec<&str> = got.split(';').collect();
        assert_eq!(
            dirs[0],
            r"C:\Program Files\Microsoft Visual Studio\18\Community\VC\Tools\MSVC\14.44.35207\bin\HostX64\x64"
        );
        assert!(
            dirs.contains(&r"C:\Program Files (x86)\Windows Kits\10\bin\10.0.26100.0\x64"),
            "rc.exe, mt.exe"
        );
        assert!(
            dirs.contains(&r"C:\Windows\system32"),
            "cmd.exe for CMake's custom commands"
        );
        for gone in ["NVIDIA GPU Computing Toolkit", r"Git\cmd", ".cargo"] {
            assert!(
                !got.contains(gone),
                "{gone} is the user's, not the toolset's: {got}"
            );
        }
        // Windows compares paths case-insensitively; a dir is kept once.
        let mut env = t.env.clone();
        env.insert("SystemRoot".into(), r"c:\windows\".into());
        assert_eq!(
            msvc_build_path(
                r"C:\Windows\System32;C:\WINDOWS\system32;D:\tools;;C:\Windows",
                &env
            ),
            r"C:\Windows\System32;C:\Windows"
        );
    }

    /// A CUDA 13.0 toolkit at /usr/local/cuda-13.0, as `nvcc --version` describes it.
    pub(crate) fn cuda_13_0() -> crate::plan::cuda::Toolkit {
        let out = "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 13.0, V13.0.88\n";
        crate::plan::cuda::Toolkit {
            root: "/usr/local/cuda-13.0".into(),
            nvcc: "/usr/local/cuda-13.0/bin/nvcc".into(),
            version: crate::cuda::NvccVersion::from_nvcc_output(out).unwrap(),
            origin: Origin::System,
            cuobjdump: Some((
                "/usr/local/cuda-13.0/bin/cuobjdump".into(),
                "13.0.88".parse().unwrap(),
            )),
            found_by: "test".into(),
            cuda_path_flag: false,
        }
    }

    /// Every optional dependency of the audit (docs/optional-dependencies.md) is decided in
    /// every plan: both recipes, every release, CPU and CUDA, Linux and MSVC. Each reaches
    /// the configure command once, off (or disabled), whoever set it; nothing is left to
    /// llama.cpp's defaults or to what the build machine has.
    #[test]
    fn every_optional_dependency_is_decided_in_every_plan() {
        let mut plans = Vec::new();
        for name in ["llama-cpp-python", "llama.cpp"] {
            let r = recipe(name);
            for rel in &r.releases {
                let mut o = opts(if name == "llama.cpp" { &[] } else { &["311"] });
                plans.push(make(&r, rel, &fake_tools(&o.cache), &o).unwrap());
                o.accelerator = "rtx5060ti".parse().unwrap();
                let mut t = fake_tools(&o.cache);
                t.cuda = vec![cuda_13_0()];
                t.patchelf = t.ninja.clone();
                plans.push(make(&r, rel, &t, &o).unwrap());
            }
            let o = opts(if name == "llama.cpp" { &[] } else { &["311"] });
            plans.push(
                make(
                    &r,
                    r.release(None).unwrap(),
                    &fake_windows_tools(vs2026_14_50(), vec![]),
                    &o,
                )
                .unwrap(),
            );
        }
        for plan in &plans {
            let at = format!("{} {} {}", plan.recipe, plan.version, plan.accelerator);
            for dep in OPTIONAL_DEPENDENCIES {
                let found: Vec<&Setting> =
                    plan.defines.iter().filter(|d| d.name == dep.name).collect();
                assert_eq!(found.len(), 1, "{at}: {} decided once", dep.name);
                assert_eq!(found[0].value, dep.value, "{at}: {}", dep.name);
                assert!(!found[0].reason.trim().is_empty());
                let flag = format!("-D{}={}", dep.name, dep.value);
                assert_eq!(
                    plan.commands
                        .configure
                        .iter()
                        .filter(|a| **a == flag)
                        .count(),
                    1,
                    "{at}: {flag}"
                );
            }
        }
        // The ones that made the issue: NCCL in CUDA plans, OpenMP, and the build info from git.
        let cuda = plans
            .iter()
            .find(|p| {
                p.cuda.is_some()
                    && p.recipe == "llama-cpp-python"
                    && p.version.to_string() == "0.3.36"
            })
            .unwrap();
        let get = |n: &str| {
            cuda.defines
                .iter()
                .find(|d| d.name == n)
                .map(|d| d.value.as_str())
        };
        assert_eq!(get("GGML_CUDA"), Some("ON"));
        assert_eq!(get("GGML_CUDA_NCCL"), Some("OFF"));
        assert_eq!(get("CMAKE_DISABLE_FIND_PACKAGE_NCCL"), Some("ON"));
        assert_eq!(get("GGML_OPENMP"), Some("OFF"));
        assert_eq!(
            (get("GIT_EXECUTABLE"), get("GIT_EXE")),
            (Some(""), Some(""))
        );
        // The recipes' own reasons win where they decide the same thing.
        let curl = cuda
            .defines
            .iter()
            .find(|d| d.name == "LLAMA_CURL")
            .unwrap();
        assert_eq!(
            (curl.value.as_str(), curl.origin.as_str()),
            ("OFF", "recipe")
        );
    }

    /// The audit lists every define the plan sets for an optional dependency, and the
    /// packaging gate can name the define for each library one would link.
    #[test]
    fn the_audit_documents_every_decision() {
        let doc = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/optional-dependencies.md"),
        )
        .unwrap();
        for dep in OPTIONAL_DEPENDENCIES {
            assert!(
                doc.contains(&format!("`{}", dep.name)),
                "docs/optional-dependencies.md does not mention {}",
                dep.name
            );
        }
        assert_eq!(
            deciding_define("libnccl.so.2").map(|d| d.name),
            Some("GGML_CUDA_NCCL")
        );
        assert_eq!(
            deciding_define("libgomp.so.1").map(|d| d.name),
            Some("GGML_OPENMP")
        );
        assert_eq!(
            deciding_define("libcrypto.so.3").map(|d| d.name),
            Some("LLAMA_OPENSSL")
        );
        assert_eq!(deciding_define("libfoo.so.1").map(|d| d.name), None);
    }

    #[test]
    fn errors_name_what_is_missing() {
        let r = recipe("llama-cpp-python");
        let o = opts(&["311"]);
        let mut t = fake_tools(&o.cache);
        t.compiler = None;
        let e = make(&r, r.release(None).unwrap(), &t, &o)
            .unwrap_err()
            .to_string();
        assert!(e.contains("C++ compiler") && e.contains("CXX"), "{e}");
        let e = make(
            &r,
            r.release(None).unwrap(),
            &fake_tools(&o.cache),
            &opts(&[]),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("--py"), "{e}");
        let a = recipe("llama.cpp");
        let e = make(&a, a.release(None).unwrap(), &fake_tools(&o.cache), &o)
            .unwrap_err()
            .to_string();
        assert!(e.contains("wheels only"), "{e}");
        let mut t = fake_tools(&o.cache);
        t.cmake.as_mut().unwrap().version = "3.16.3".parse().unwrap();
        let e = make(&r, r.release(None).unwrap(), &t, &o)
            .unwrap_err()
            .to_string();
        assert!(e.contains("3.16.3") && e.contains("3.21"), "{e}");
    }
}
