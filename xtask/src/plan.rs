//! The plan: a pure function of (recipe, detected toolchains, options).
//!
//! Everything the build will do is here: every CMake define and compiler flag with
//! the reason it is there, the complete environment of every command, the command
//! lines themselves, and what gets packaged. Paths that differ between machines
//! and checkouts are placeholders (`${SRC}`, `${BUILD}`, `${STAGE}`) that the
//! executor fills in, so equal plans hash equal wherever they run.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::recipe::{ArtifactKind, Recipe, Release, Sha256Hex, SourceKind};
use crate::tags::{normalize_distribution, LocalLabel, PyVersion};
use crate::target::{Accelerator, CpuBaseline};
use crate::toolchain::{Compiler, CompilerKind, Origin, Tool, Toolchains};
use crate::version::Version;

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
    pub cuda_runtime: crate::cuda_plan::RuntimeMode,
}

#[derive(Debug, Clone)]
pub enum SourceChoice {
    /// The recipe's first source, fetched into the cache.
    Pinned,
    /// `--source PATH`: an archive (with its sha256, computed by the caller) or a directory.
    Local { path: PathBuf, sha256: Option<Sha256Hex> },
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PlanError {
    #[error("no {tool} found: {hint}")]
    MissingTool { tool: &'static str, hint: &'static str },
    #[error("CMake {found} at {path} is older than {needed}, which recipe `{recipe}` needs: install a newer CMake or remove it from PATH so the pinned one is used")]
    OldCmake { found: Version, needed: Version, path: String, recipe: String },
    #[error("{0}")]
    Cuda(String),
    #[error("recipe `{0}` builds an archive: --py applies to wheels only")]
    PyForArchive(String),
    #[error("recipe `{0}` builds a wheel: give at least one Python version with --py (e.g. --py 311)")]
    NoPython(String),
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
    pub cuda: Option<crate::cuda_plan::PlannedCuda>,
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
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedSource {
    /// `sdist`, `tarball` or `local`.
    pub kind: String,
    pub location: String,
    /// Absent for a local directory: then the build is not pinned.
    pub sha256: Option<Sha256Hex>,
    /// Leading directory stripped from the archive.
    pub strip: String,
    /// The CMake project inside the unpacked tree.
    pub project_dir: String,
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
}

/// A tool as the plan and manifest name it. A path inside the tool cache is
/// written `${CACHE}/...`, so plans do not depend on where the checkout is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolRecord {
    pub path: String,
    pub version: Version,
    pub origin: Origin,
    /// `gcc` or `clang` for compilers.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub kind: Option<CompilerKind>,
}

impl ToolRecord {
    fn of(tool: &Tool, cache: &Path) -> ToolRecord {
        ToolRecord { path: portable(&tool.path, cache), version: tool.version.clone(), origin: tool.origin.clone(), kind: None }
    }
    fn compiler(c: &Compiler, path: &Path, cache: &Path) -> ToolRecord {
        ToolRecord { path: portable(path, cache), version: c.version.clone(), origin: c.origin.clone(), kind: Some(c.kind) }
    }
}

/// `${CACHE}/rest` for paths under the cache, the path itself otherwise.
pub fn portable(p: &Path, cache: &Path) -> String {
    match p.strip_prefix(cache) {
        Ok(rest) => format!("${{CACHE}}/{}", rest.display()),
        Err(_) => p.display().to_string(),
    }
}

/// A name, its value and why it is there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Setting {
    pub name: String,
    pub value: String,
    pub reason: String,
    /// `recipe` or `policy` (this tool's rules).
    pub origin: String,
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
        crate::fetch::sha256_bytes(&serde_json::to_vec(self).expect("plan serialises"))
    }

    pub fn local_label(cuda: Option<&crate::cuda_plan::PlannedCuda>, baseline: CpuBaseline) -> LocalLabel {
        let mut label = match cuda {
            None => "cpu".to_string(),
            Some(c) => {
                let list: crate::cuda::ArchList = c.architectures.parse().expect("planned arch list parses");
                let mut l = c.label.clone();
                for a in list.sass() {
                    l.push_str(&format!(".{}", a.sm_name().replace('_', "")));
                }
                if list.ptx().next().is_some() {
                    l.push_str(".ptx");
                }
                l
            }
        };
        if let Some(s) = baseline.label_suffix() {
            label = format!("{label}.{s}");
        }
        label.parse().expect("labels built from known parts are valid")
    }
}

fn policy(name: &str, value: impl Into<String>, reason: impl Into<String>) -> Setting {
    Setting { name: name.into(), value: value.into(), reason: reason.into(), origin: "policy".into() }
}

fn onoff(b: bool) -> &'static str {
    if b {
        "ON"
    } else {
        "OFF"
    }
}

/// Makes the plan. No I/O: everything comes in as arguments.
pub fn make(recipe: &Recipe, release: &Release, tools: &Toolchains, opts: &Options) -> Result<Plan, PlanError> {
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
        ArtifactKind::Archive if !opts.pythons.is_empty() => return Err(PlanError::PyForArchive(recipe.name.clone())),
        ArtifactKind::Wheel if opts.pythons.is_empty() => return Err(PlanError::NoPython(recipe.name.clone())),
        _ => {}
    }

    let pinned = &release.sources[0];
    let source = match &opts.source {
        SourceChoice::Pinned => PlannedSource {
            kind: match pinned.kind {
                SourceKind::Sdist => "sdist",
                SourceKind::Tarball => "tarball",
            }
            .into(),
            location: pinned.url.clone(),
            sha256: Some(pinned.sha256.clone()),
            strip: pinned.strip.clone(),
            project_dir: recipe.cmake.project_dir.clone(),
        },
        SourceChoice::Local { path, sha256 } => {
            // A local archive with a pinned hash is that source; a directory is taken as the source root.
            let known = release.sources.iter().find(|s| Some(&s.sha256) == sha256.as_ref());
            PlannedSource {
                kind: "local".into(),
                location: path.display().to_string(),
                sha256: sha256.clone(),
                strip: match (known, sha256) {
                    (Some(s), _) => s.strip.clone(),
                    (None, Some(_)) => pinned.strip.clone(),
                    (None, None) => String::new(),
                },
                project_dir: recipe.cmake.project_dir.clone(),
            }
        }
    };

    let date = pinned.date;
    let mut path_dirs: Vec<String> = Vec::new();
    for d in [compiler.cxx.parent(), Some(std::path::Path::new("/usr/bin")), Some(std::path::Path::new("/bin"))].into_iter().flatten() {
        let d = d.display().to_string();
        if !d.is_empty() && !path_dirs.contains(&d) {
            path_dirs.push(d);
        }
    }
    let env = vec![
        policy(
            "PATH",
            path_dirs.join(":"),
            "the build sees no user PATH: the compiler's dir (for its assembler and linker) and the system dirs",
        ),
        policy("LC_ALL", "C", "compiler messages and sorting independent of the user's locale"),
        policy("TZ", "UTC", "no local time zone in anything the build writes"),
        policy(
            "SOURCE_DATE_EPOCH",
            date.to_string(),
            "the source's own date: tools that stamp times use it instead of the clock",
        ),
    ];

    let mut defines = vec![
        policy("CMAKE_BUILD_TYPE", "Release", "optimised code (-O3 -DNDEBUG), no debug info"),
        policy("CMAKE_MAKE_PROGRAM", portable(&ninja.path, &opts.cache), "the Ninja found or provisioned for this build"),
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
        policy(
            "GGML_NATIVE",
            "OFF",
            "never -march=native or the build machine's GPU: the artifact must run on other machines",
        ),
        policy(
            "GGML_OPENMP",
            "OFF",
            "libgomp is outside the manylinux allow-list and would have to be bundled; ggml's own thread pool is used",
        ),
    ];
    let baseline_reason = format!(
        "CPU baseline {}: every ggml ISA switch is set, none left to ggml's defaults (which turn AVX2 on when GGML_NATIVE=OFF); runtime dispatch (GGML_BACKEND_DL) is not used because llama-cpp-python does not load backend modules",
        opts.cpu_baseline
    );
    for (name, on) in opts.cpu_baseline.ggml_defines() {
        defines.push(policy(name, onoff(on), baseline_reason.clone()));
    }
    let cuda = match &opts.accelerator {
        Accelerator::Cpu => {
            defines.push(policy("GGML_CUDA", "OFF", "CPU build: --arch cpu"));
            None
        }
        Accelerator::Cuda(request) => {
            let c = crate::cuda_plan::plan(
                &tools.cuda,
                &compiler,
                &crate::cuda_plan::CudaOptions {
                    request,
                    ptx: opts.ptx,
                    release: opts.cuda_release,
                    runtime: opts.cuda_runtime,
                    cache: &opts.cache,
                },
            )?;
            defines.push(policy("GGML_CUDA", "ON", format!("GPU build: --arch {request}")));
            defines.push(policy("CMAKE_CUDA_COMPILER", c.nvcc.path.clone(), format!("nvcc {} ({:?})", c.nvcc.version, c.nvcc.origin)));
            defines.push(policy("CUDAToolkit_ROOT", c.root.clone(), "FindCUDAToolkit uses the same toolkit as nvcc"));
            defines.push(policy("CMAKE_CUDA_HOST_COMPILER", portable(&compiler.cxx, &opts.cache), "nvcc's host passes use the detected host compiler"));
            defines.push(policy("CMAKE_CUDA_ARCHITECTURES", c.architectures.clone(), c.arch_reasons.join("; ")));
            let (flags, reasons): (Vec<String>, Vec<String>) = c.flags.iter().cloned().unzip();
            defines.push(policy("CMAKE_CUDA_FLAGS", flags.join(" "), reasons.join("; ")));
            if let Some(l) = &c.launcher {
                defines.push(policy(
                    "CMAKE_CUDA_COMPILER_LAUNCHER",
                    l.clone(),
                    "adds --frandom-seed per object (from its path): nvcc otherwise draws random numbers for generated names and some objects differ between builds",
                ));
            }
            Some(c)
        }
    };
    for d in &recipe.cmake.defines {
        defines.retain(|p| p.name != d.name);
        defines.push(Setting { name: d.name.clone(), value: d.value.clone(), reason: d.reason.clone(), origin: "recipe".into() });
    }

    let project = if source.project_dir == "." { "${SRC}".to_string() } else { format!("${{SRC}}/{}", source.project_dir) };
    let cmake_bin = portable(&cmake.path, &opts.cache);
    let mut configure = vec![cmake_bin.clone(), "-S".into(), project, "-B".into(), "${BUILD}".into(), "-G".into(), "Ninja".into()];
    configure.extend(defines.iter().map(|d| format!("-D{}={}", d.name, d.value)));
    let mut build = vec![cmake_bin.clone(), "--build".into(), "${BUILD}".into()];
    let targets: Vec<&String> = recipe.cmake.targets.iter().chain(&release.extra_targets).collect();
    if !targets.is_empty() {
        build.push("--target".into());
        build.extend(targets.into_iter().cloned());
    }
    let install = recipe.cmake.install.then(|| vec![cmake_bin, "--install".into(), "${BUILD}".into()]);

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
            requires: cuda.as_ref().map(|c| c.requires.clone()).unwrap_or_default(),
        },
        (None, Some(a)) => Package::Archive {
            stem: format!("{}-{}-{}-linux-x86_64", recipe.name, release.version, local),
            collect_from: a.collect_from.clone(),
            binaries: a.binaries.clone(),
            optional_binaries: a.optional_binaries.clone(),
            libraries: a.libraries.iter().chain(&cuda_libs).cloned().collect(),
            docs: a.docs.clone(),
        },
        (None, None) => unreachable!("recipe validation guarantees an artifact table"),
    };

    let patchelf = match (&cuda, &tools.patchelf) {
        (Some(_), Some(p)) => Some(ToolRecord::of(p, &opts.cache)),
        (Some(_), None) => {
            return Err(PlanError::MissingTool { tool: "patchelf", hint: "install patchelf, or let the tool fetch the pinned one (Linux x86-64)" })
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
            cc: ToolRecord::compiler(&compiler, &compiler.cc, &opts.cache),
            cxx: ToolRecord::compiler(&compiler, &compiler.cxx, &opts.cache),
        },
        env,
        defines,
        commands: Commands { configure, build, install },
        package,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::toolchain::{Compiler, CompilerKind, Origin, Tool};

    pub(crate) fn fake_tools(cache: &Path) -> Toolchains {
        let tool = |p: &str, v: &str, origin: Origin| Tool { path: PathBuf::from(p), version: v.parse().unwrap(), origin };
        Toolchains {
            cmake: Some(tool(
                &cache.join("tools/cmake-4.4.4/cmake/data/bin/cmake").display().to_string(),
                "4.4.4",
                Origin::PackageIndex { url: "https://example.invalid/cmake.whl".into(), sha256: "ab".repeat(32).parse().unwrap() },
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

    pub(crate) fn opts(pythons: &[&str]) -> Options {
        Options {
            accelerator: Accelerator::Cpu,
            cpu_baseline: CpuBaseline::V2,
            pythons: pythons.iter().map(|p| p.parse().unwrap()).collect(),
            source: SourceChoice::Pinned,
            cache: PathBuf::from("/home/someone/checkout/vendor/cache"),
            ptx: false,
            cuda_release: None,
            cuda_runtime: crate::cuda_plan::RuntimeMode::IndexWheels,
        }
    }

    fn recipe(name: &str) -> Recipe {
        Recipe::find(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../recipes"), name).unwrap()
    }

    #[test]
    fn wheel_plan_snapshot() {
        let r = recipe("llama-cpp-python");
        let o = opts(&["311", "312"]);
        let plan = make(&r, r.release(Some(&"0.3.16".parse().unwrap())).unwrap(), &fake_tools(&o.cache), &o).unwrap();
        insta::assert_json_snapshot!("wheel_plan_0_3_16", plan);
    }

    #[test]
    fn archive_plan_snapshot() {
        let r = recipe("llama.cpp");
        let o = opts(&[]);
        let plan = make(&r, r.release(None).unwrap(), &fake_tools(&o.cache), &o).unwrap();
        insta::assert_json_snapshot!("archive_plan_newest", plan);
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
        assert!(!serde_json::to_string(&pa).unwrap().contains("/home/someone"));
    }

    #[test]
    fn every_setting_has_a_reason_and_native_is_off() {
        let r = recipe("llama-cpp-python");
        let o = opts(&["311"]);
        let plan = make(&r, r.release(None).unwrap(), &fake_tools(&o.cache), &o).unwrap();
        assert!(plan.defines.iter().chain(&plan.env).all(|s| !s.reason.trim().is_empty()));
        let get = |n: &str| plan.defines.iter().find(|d| d.name == n).map(|d| d.value.as_str());
        assert_eq!(get("GGML_NATIVE"), Some("OFF"));
        assert_eq!(get("GGML_AVX2"), Some("OFF"));
        assert_eq!(get("GGML_SSE42"), Some("ON"));
        // Each define reaches the configure command exactly once.
        for d in &plan.defines {
            let flag = format!("-D{}=", d.name);
            assert_eq!(plan.commands.configure.iter().filter(|a| a.starts_with(&flag)).count(), 1, "{}", d.name);
        }
    }

    #[test]
    fn baseline_v3_changes_defines_and_label() {
        let r = recipe("llama-cpp-python");
        let mut o = opts(&["311"]);
        o.cpu_baseline = CpuBaseline::V3;
        let plan = make(&r, r.release(None).unwrap(), &fake_tools(&o.cache), &o).unwrap();
        assert!(plan.defines.iter().any(|d| d.name == "GGML_AVX2" && d.value == "ON"));
        let Package::Wheel { local, .. } = &plan.package else { panic!() };
        assert_eq!(local.to_string(), "cpu.v3");
    }

    #[test]
    fn errors_name_what_is_missing() {
        let r = recipe("llama-cpp-python");
        let o = opts(&["311"]);
        let mut t = fake_tools(&o.cache);
        t.compiler = None;
        let e = make(&r, r.release(None).unwrap(), &t, &o).unwrap_err().to_string();
        assert!(e.contains("C++ compiler") && e.contains("CXX"), "{e}");
        let e = make(&r, r.release(None).unwrap(), &fake_tools(&o.cache), &opts(&[])).unwrap_err().to_string();
        assert!(e.contains("--py"), "{e}");
        let a = recipe("llama.cpp");
        let e = make(&a, a.release(None).unwrap(), &fake_tools(&o.cache), &o).unwrap_err().to_string();
        assert!(e.contains("wheels only"), "{e}");
        let mut t = fake_tools(&o.cache);
        t.cmake.as_mut().unwrap().version = "3.16.3".parse().unwrap();
        let e = make(&r, r.release(None).unwrap(), &t, &o).unwrap_err().to_string();
        assert!(e.contains("3.16.3") && e.contains("3.21"), "{e}");
    }
}
