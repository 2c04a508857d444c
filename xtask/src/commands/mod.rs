//! The command line: one module per command.

pub mod build;
mod plan;
mod release;
pub mod reproduce;
mod toolchains;
mod verify;

use crate::platform::msvc;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Parser, Subcommand};

use crate::package::tags::PyVersion;
use crate::plan::target::{Accelerator, CpuBaseline};
use crate::versions::Version;

#[derive(Parser)]
#[command(
    name = "cargo xtask",
    about = "Builds llama.cpp and llama-cpp-python artifacts, reproducibly, with a manifest"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print what a build would do, with the reason for every setting.
    Plan(PlanArgs),
    /// Build a wheel recipe (llama-cpp-python) into dist/.
    Wheel(BuildArgs),
    /// Build an archive recipe (llama.cpp) into dist/.
    Build(BuildArgs),
    /// Build every cell of a release file; write SHA256SUMS, a PEP 503 index and release.json.
    Release(release::ReleaseArgs),
    /// List the toolchains found here, or install a pinned CUDA toolkit from the package index.
    Toolchains(toolchains::ToolchainsArgs),
    /// Rebuild a colleague's artifact from its manifest (path or URL): report how this
    /// machine's toolchains and sources differ, rebuild, and say whether it came out identical.
    Reproduce(reproduce::ReproduceArgs),
    /// Check artifacts against their RECORD and manifests.
    Verify {
        /// Wheels (.whl) or archives (.tar.gz).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// cuobjdump for re-checking GPU code (default: the pinned one in the cache, from
        /// `toolchains install cuda`, then one on PATH or in /usr/local/cuda/bin).
        #[arg(long)]
        cuobjdump: Option<PathBuf>,
    },
}

#[derive(Args, Clone, Debug)]
pub struct BuildArgs {
    /// Recipe name (a file in recipes/).
    pub recipe: String,
    /// Release to build; the recipe's newest by default.
    #[arg(long = "version")]
    pub release: Option<Version>,
    /// Target: `cpu`, compute capabilities (`120`, `120,121`, `90`) or GPU names (`rtx5090`, `gb10`, `h100`).
    #[arg(long, default_value = "cpu")]
    pub arch: Accelerator,
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
    /// Python versions for wheels: 311, or a list 310,311,312.
    #[arg(long, value_delimiter = ',')]
    pub py: Vec<PyVersion>,
    /// Oldest x86-64 CPU the code runs on.
    #[arg(long, default_value = "x86-64-v2")]
    pub cpu_baseline: CpuBaseline,
    /// Build from a local source archive or directory instead of downloading.
    #[arg(long)]
    pub source: Option<PathBuf>,
    /// Where artifacts go.
    #[arg(long)]
    pub dist: Option<PathBuf>,
    /// Compile through a cache (`ccache` or `sccache` on PATH): faster rebuilds, same bytes.
    #[arg(long)]
    pub launcher: Option<crate::plan::launcher::LauncherKind>,
    /// The C++ host compiler (CXX, and nvcc's host compiler); the C compiler is the
    /// one beside it (g++-14 -> gcc-14, clang++-18 -> clang-18, cl.exe -> cl.exe) or CC.
    #[arg(long, value_name = "PATH")]
    pub host_cc: Option<PathBuf>,
}

#[derive(Args)]
pub struct PlanArgs {
    #[command(flatten)]
    pub build: BuildArgs,
    /// Print the plan as JSON.
    #[arg(long)]
    pub json: bool,
}

/// What the tool reads from its environment, read once in `main`.
#[derive(Debug, Clone)]
pub struct Env {
    pub root: PathBuf,
    pub path: String,
    pub cc: Option<String>,
    pub cxx: Option<String>,
    pub cudacxx: Option<PathBuf>,
    pub cuda_path: Option<PathBuf>,
    pub cuda_home: Option<PathBuf>,
    /// `LLAMA_FORGE_CACHE`: downloads and provisioned tools.
    pub cache: PathBuf,
    /// `LLAMA_FORGE_BUILD_DIR`: work dirs.
    pub build_root: PathBuf,
    /// `LLAMA_FORGE_STABLE_DIR`: where the stable build paths live (default `/tmp/llama-forge`).
    pub stable_dir: PathBuf,
    /// `LLAMA_FORGE_RECIPES`: the recipe dir (default `recipes/`).
    pub recipes: PathBuf,
    /// `HOME`: searched for in built binaries (`verify`), never passed to a build.
    pub home: Option<PathBuf>,
    /// `CCACHE_*` and `SCCACHE_*`: passed to the build when `--launcher` names that tool.
    pub launcher_env: std::collections::BTreeMap<String, String>,
    /// `%ProgramFiles(x86)%`: where vswhere.exe is (Windows).
    pub program_files_x86: Option<PathBuf>,
    /// Windows: the system variables the vcvars capture runs with
    /// ([`msvc::BASE_VARS`]) and, in a Developer Command Prompt, the MSVC ones
    /// ([`crate::detect::toolchain::MSVC_ENV_VARS`], `VisualStudioVersion`). Empty elsewhere.
    pub windows_vars: std::collections::BTreeMap<String, String>,
}

impl Env {
    pub fn from_process() -> Env {
        let root = crate::repo_root();
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        Env {
            path: var("PATH").unwrap_or_default(),
            cc: var("CC"),
            cxx: var("CXX"),
            cudacxx: var("CUDACXX").map(PathBuf::from),
            cuda_path: var("CUDA_PATH").map(PathBuf::from),
            cuda_home: var("CUDA_HOME").map(PathBuf::from),
            cache: var("LLAMA_FORGE_CACHE")
                .map(PathBuf::from)
                .unwrap_or_else(|| root.join("vendor/cache")),
            build_root: var("LLAMA_FORGE_BUILD_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| root.join(".build")),
            stable_dir: var("LLAMA_FORGE_STABLE_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(crate::build::stable::DEFAULT_DIR)),
            recipes: var("LLAMA_FORGE_RECIPES")
                .map(PathBuf::from)
                .unwrap_or_else(|| root.join("recipes")),
            launcher_env: std::env::vars()
                .filter(|(k, v)| {
                    (k.starts_with("CCACHE_") || k.starts_with("SCCACHE_")) && !v.is_empty()
                })
                .collect(),
            home: var("HOME").map(PathBuf::from),
            program_files_x86: var("ProgramFiles(x86)").map(PathBuf::from),
            windows_vars: if cfg!(windows) {
                msvc::BASE_VARS
                    .iter()
                    .chain(crate::detect::toolchain::MSVC_ENV_VARS)
                    .chain(&["VisualStudioVersion"])
                    .filter_map(|k| var(k).map(|v| (k.to_string(), v)))
                    .collect()
            } else {
                Default::default()
            },
            root,
        }
    }

    /// Where `plan` is built, with this environment's dirs.
    pub fn work_dir(&self, plan: &crate::plan::Plan) -> crate::build::WorkDir {
        crate::build::WorkDir::new(
            &self.build_root,
            &self.cache,
            &self.root,
            &self.stable_dir,
            plan,
        )
    }
}

pub fn run(cli: Cli, env: &Env) -> Result<ExitCode> {
    match cli.command {
        Command::Plan(a) => plan::run(&a, env),
        Command::Wheel(a) => build::run(&a, env, crate::recipe::ArtifactKind::Wheel),
        Command::Build(a) => build::run(&a, env, crate::recipe::ArtifactKind::Archive),
        Command::Release(a) => release::run(&a, env),
        Command::Toolchains(a) => toolchains::run(&a, env),
        Command::Reproduce(a) => reproduce::run(&a, env),
        Command::Verify { paths, cuobjdump } => {
            let found = cuobjdump.or_else(|| pinned_cuobjdump(env)).or_else(|| {
                crate::detect::toolchain::which("cuobjdump", &env.path).or_else(|| {
                    Some(PathBuf::from("/usr/local/cuda/bin/cuobjdump")).filter(|p| p.is_file())
                })
            });
            verify::run(&paths, found.as_deref())
        }
    }
}

/// The pinned cuobjdump, when a pinned CUDA toolkit is installed in the cache
/// (`toolchains install cuda`): `verify` prefers it to one on PATH, as it is
/// hashed, and the newest (it reads every older toolkit's output).
fn pinned_cuobjdump(env: &Env) -> Option<PathBuf> {
    ["13.1", "13.0"].into_iter().find_map(|release| {
        let spec = crate::provision::hermetic::CudaSpec::load(
            &env.root.join("toolchains"),
            &release.parse().ok()?,
        )
        .ok()?;
        crate::provision::hermetic::installed_cuobjdump(&env.cache, &spec)
    })
}

/// Everything a build command needs, prepared from the arguments.
pub struct Prepared {
    pub recipe: crate::recipe::Recipe,
    pub plan: crate::plan::Plan,
    pub pins: crate::detect::toolchain::PinnedTools,
}

/// recipe + detected tools + options -> plan. Detection runs each tool's
/// `--version` once; nothing is downloaded here.
pub fn prepare(args: &BuildArgs, env: &Env) -> Result<Prepared> {
    use crate::detect::toolchain::{self, Origin};
    let recipe = crate::recipe::Recipe::find(&env.recipes, &args.recipe)?;
    let release = recipe.release(args.release.as_ref())?.clone();
    let pins = toolchain::PinnedTools::load(&env.root.join("toolchains/build-tools.toml"))?;

    let compiler = detect_compiler(env, args.host_cc.as_deref())?;
    // Visual Studio carries CMake and Ninja: on Windows they are also looked for on the toolset's PATH.
    let tool_path = match compiler
        .as_ref()
        .and_then(|c| c.msvc.as_ref())
        .and_then(|m| m.host.env.get("PATH"))
    {
        Some(vs) if !vs.is_empty() => format!("{};{vs}", env.path),
        _ => env.path.clone(),
    };
    let system =
        |name: &str| toolchain::detect_tool(toolchain::which(name, &tool_path), Origin::System);
    let pinned = |name: &str, pin: &toolchain::PinnedTool| toolchain::Tool {
        path: env
            .cache
            .join("tools")
            .join(format!("{name}-{}", pin.version))
            .join(&pin.bin),
        version: pin.version.clone(),
        origin: Origin::PackageIndex {
            url: pin.url.clone(),
            sha256: pin.sha256.clone(),
        },
    };
    let pick = |name: &str, pin: &toolchain::PinnedTool, min: &Version| match system(name) {
        Some(t) if t.version.at_least(min) => t,
        _ => pinned(name, pin),
    };
    let cmake = pick("cmake", &pins.cmake, &recipe.cmake.min_cmake);
    let ninja_min = pins
        .ninja
        .min_version
        .clone()
        .unwrap_or_else(|| pins.ninja.version.clone());
    let ninja = pick("ninja", &pins.ninja, &ninja_min);
    let cuda = match args.arch {
        crate::plan::target::Accelerator::Cpu => vec![],
        // `--cuda-path` is binding: that toolkit alone (nothing else is looked for, nothing provisioned).
        crate::plan::target::Accelerator::Cuda(_) => match &args.cuda_path {
            Some(dir) => detect_cuda(Some(dir), env)?,
            None => {
                let mut found = detect_cuda(None, env)?;
                found.extend(hermetic_offers(env)?);
                found
            }
        },
    };
    let patchelf_min = pins
        .patchelf
        .min_version
        .clone()
        .unwrap_or_else(|| pins.patchelf.version.clone());
    let patchelf = (!cuda.is_empty()).then(|| pick("patchelf", &pins.patchelf, &patchelf_min));
    let tools = toolchain::Toolchains {
        cmake: Some(cmake),
        ninja: Some(ninja),
        patchelf,
        compiler,
        cuda,
    };

    let source = match &args.source {
        None => crate::plan::SourceChoice::Pinned,
        Some(p) if p.is_dir() => crate::plan::SourceChoice::LocalDir {
            path: fs_err::canonicalize(p)?,
            tree_sha256: crate::provision::tree::digest(p, crate::provision::tree::Scope::Source)?,
        },
        Some(p) if p.is_file() => crate::plan::SourceChoice::Local {
            path: fs_err::canonicalize(p)?,
            sha256: crate::digest::sha256_file(p)?,
        },
        Some(p) => anyhow::bail!("--source {}: no such file or directory", p.display()),
    };
    let opts = crate::plan::Options {
        accelerator: args.arch.clone(),
        cpu_baseline: args.cpu_baseline,
        pythons: unique_pythons(&args.py),
        source,
        cache: env.cache.clone(),
        ptx: args.ptx,
        cuda_release: args.cuda,
        cuda_runtime: if args.bundle_cuda_runtime {
            crate::plan::cuda::RuntimeMode::Bundled
        } else {
            crate::plan::cuda::RuntimeMode::IndexWheels
        },
    };
    let mut plan = crate::plan::make(&recipe, &release, &tools, &opts)?;
    if let Some(kind) = args.launcher {
        let tool = toolchain::detect_tool(toolchain::which(kind.program(), &env.path), Origin::System).ok_or_else(|| {
            anyhow::anyhow!("--launcher {kind}: no working `{kind}` on PATH; install it (e.g. `apt install {kind}`) or leave --launcher out")
        })?;
        plan.launcher = Some(crate::plan::launcher::plan(
            kind,
            &tool,
            plan.cuda.is_some(),
            plan.cuda_launcher(),
            &env.launcher_env,
            &env.cache,
        ));
    }
    Ok(Prepared { recipe, plan, pins })
}

/// `--py 311,3.11,312`: each Python once (`311`, `3.11` and `cp311` are one),
/// in the order first given, so no wheel is built twice.
pub fn unique_pythons(py: &[PyVersion]) -> Vec<PyVersion> {
    let mut out: Vec<PyVersion> = Vec::with_capacity(py.len());
    for p in py {
        if !out.contains(p) {
            out.push(*p);
        }
    }
    out
}

/// The host C/C++ compiler: `--host-cc` when given; else `CC`/`CXX` when set;
/// else, on Windows, MSVC found with vswhere; else `cc`/`c++` on PATH.
pub(super) fn detect_compiler(
    env: &Env,
    host_cc: Option<&Path>,
) -> Result<Option<crate::detect::toolchain::Compiler>> {
    detect_compiler_with(env, host_cc, &msvc::SystemProbe, cfg!(windows))
}

fn detect_compiler_with(
    env: &Env,
    host_cc: Option<&Path>,
    probe: &dyn msvc::Probe,
    windows: bool,
) -> Result<Option<crate::detect::toolchain::Compiler>> {
    use crate::detect::toolchain::{self, Msvc, Origin};
    let canon = |p: PathBuf| p.canonicalize().unwrap_or(p);
    if let Some(cxx) = host_cc {
        if msvc::is_cl(&cxx.to_string_lossy()) {
            return msvc_host_cc(env, cxx, probe, windows).map(Some);
        }
        // A bare name (`g++-14`) is looked up on PATH.
        let found = match cxx.components().count() {
            1 if !cxx.is_file() => toolchain::which(&cxx.to_string_lossy(), &env.path),
            _ => Some(cxx.to_path_buf()).filter(|p| p.is_file()),
        };
        let Some(cxx) = found else {
            anyhow::bail!("--host-cc {}: no such file (give the path of a C++ compiler, e.g. /usr/bin/g++-14)", cxx.display());
        };
        let cc = match &env.cc {
            Some(v) => explicit_path(v, "CC", &env.path)?,
            None => sibling_c_compiler(&cxx)?,
        };
        return Ok(Some(toolchain::detect_compiler(
            canon(cc),
            canon(cxx),
            Origin::Explicit {
                by: "--host-cc".into(),
            },
        )?));
    }
    // CC or CXX naming cl.exe: the user set up a toolset (a Developer Command Prompt): use it as it is.
    let named_cl = [("CXX", &env.cxx), ("CC", &env.cc)]
        .into_iter()
        .find_map(|(k, v)| v.as_ref().filter(|v| msvc::is_cl(v)).map(|v| (k, v)));
    if let Some((var, v)) = named_cl {
        if !windows {
            anyhow::bail!(
                "{var}={v}: MSVC's cl.exe is used on Windows only; here give g++ or clang++"
            );
        }
        let host = msvc::from_current_env(probe, &env.windows_vars, Some(Path::new(v)), var)?;
        return Ok(Some(msvc::compiler(
            Msvc {
                host,
                others: vec![],
            },
            Origin::Explicit { by: var.into() },
        )));
    }
    if windows && env.cc.is_none() && env.cxx.is_none() {
        let found = msvc::detect(probe, env.program_files_x86.as_deref(), &env.windows_vars)?;
        for s in &found.skipped {
            eprintln!("warning: {s}");
        }
        return Ok(Some(msvc::compiler(found.msvc, Origin::System)));
    }
    let find = |explicit: &Option<String>,
                var: &str,
                defaults: &[&str]|
     -> Result<Option<(PathBuf, Origin)>> {
        if let Some(v) = explicit {
            return Ok(Some((
                explicit_path(v, var, &env.path)?,
                Origin::Explicit { by: var.into() },
            )));
        }
        Ok(defaults
            .iter()
            .find_map(|d| toolchain::which(d, &env.path))
            .map(|p| (p, Origin::System)))
    };
    let cxx = find(&env.cxx, "CXX", &["c++", "g++", "clang++"])?;
    let cc = find(&env.cc, "CC", &["cc", "gcc", "clang"])?;
    match (cc, cxx) {
        (Some((cc, _)), Some((cxx, origin))) => Ok(Some(toolchain::detect_compiler(
            canon(cc),
            canon(cxx),
            origin,
        )?)),
        _ => Ok(None),
    }
}

/// `CC=gcc-14` (on PATH) or `CC=/usr/bin/gcc-14`: the file it names.
fn explicit_path(v: &str, var: &str, path: &str) -> Result<PathBuf> {
    let p = if v.contains('/') || v.contains('\\') {
        Some(PathBuf::from(v))
    } else {
        crate::detect::toolchain::which(v, path)
    };
    match p.filter(|p| p.is_file()) {
        Some(p) => Ok(p),
        None => anyhow::bail!("{var}={v}: no such compiler (not a file, and not on PATH)"),
    }
}

/// The C compiler's name for a C++ compiler's: `g++-14` -> `gcc-14`,
/// `x86_64-linux-gnu-g++` -> `x86_64-linux-gnu-gcc`, `clang++-18` -> `clang-18`, `c++` -> `cc`.
pub fn c_compiler_name(cxx: &str) -> Option<String> {
    [("clang++", "clang"), ("g++", "gcc"), ("c++", "cc")]
        .iter()
        .find_map(|(from, to)| {
            cxx.rfind(from)
                .map(|i| format!("{}{to}{}", &cxx[..i], &cxx[i + from.len()..]))
        })
}

/// `--host-cc DIR/g++-14` -> `DIR/gcc-14`, which must exist.
fn sibling_c_compiler(cxx: &Path) -> Result<PathBuf> {
    let name = cxx
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let Some(cc) = c_compiler_name(&name) else {
        anyhow::bail!(
            "--host-cc {}: `{name}` is not a C++ compiler's name (g++, clang++, c++ or cl.exe, with any prefix or suffix such as g++-14): --host-cc names the C++ compiler, and the C compiler is the one beside it (or CC)",
            cxx.display()
        );
    };
    let cc = cxx.with_file_name(cc);
    if !cc.is_file() {
        anyhow::bail!("--host-cc {}: no C compiler beside it ({} does not exist); set CC to the C compiler that goes with it", cxx.display(), cc.display());
    }
    Ok(cc)
}

/// `--host-cc cl.exe`: bare, the Developer Command Prompt this tool runs in; a
/// path, that toolset as vswhere finds it (with its captured environment).
/// Either way it is used as given: no other toolset is considered.
fn msvc_host_cc(
    env: &Env,
    cl: &Path,
    probe: &dyn msvc::Probe,
    windows: bool,
) -> Result<crate::detect::toolchain::Compiler> {
    use crate::detect::toolchain::{Msvc, Origin};
    let origin = Origin::Explicit {
        by: "--host-cc".into(),
    };
    if !windows {
        anyhow::bail!(
            "--host-cc {}: MSVC's cl.exe is used on Windows only; here give g++ or clang++",
            cl.display()
        );
    }
    if cl.components().count() == 1 {
        let host = msvc::from_current_env(probe, &env.windows_vars, Some(cl), "--host-cc")?;
        return Ok(msvc::compiler(
            Msvc {
                host,
                others: vec![],
            },
            origin,
        ));
    }
    if !cl.is_file() {
        anyhow::bail!("--host-cc {}: no such file", cl.display());
    }
    let found = msvc::detect(probe, env.program_files_x86.as_deref(), &env.windows_vars)?;
    match msvc::find_cl(&found.msvc, cl) {
        Some(host) => Ok(msvc::compiler(
            Msvc {
                host: host.clone(),
                others: vec![],
            },
            origin,
        )),
        None => {
            let known: Vec<String> = std::iter::once(&found.msvc.host)
                .chain(&found.msvc.others)
                .map(|t| t.cl.display().to_string())
                .collect();
            anyhow::bail!(
                "--host-cc {}: this cl.exe is in none of the toolsets vswhere lists ({}): name one of those, or start from its Developer Command Prompt and give --host-cc cl.exe",
                cl.display(),
                known.join(", ")
            )
        }
    }
}

/// The CUDA toolkits that can be assembled from pinned wheels (provisioned at
/// build time, nothing is downloaded here), in order of preference.
pub fn hermetic_offers(env: &Env) -> Result<Vec<crate::plan::cuda::Toolkit>> {
    let mut out = Vec::new();
    // The pinned wheels are Linux x86-64 ones.
    if !cfg!(target_os = "linux") {
        return Ok(out);
    }
    for release in crate::plan::cuda::PINNED_RELEASES {
        let v: Version = release.parse().expect("static");
        let file = crate::provision::hermetic::toolkit_file(&v)?;
        let path = env.root.join("toolchains").join(file);
        let spec = crate::provision::hermetic::CudaSpec::load(&env.root.join("toolchains"), &v)?;
        let root = env.cache.join("cuda").join(spec.nvcc_version.to_string());
        let out_text = format!(
            "Cuda compilation tools, release {release}, V{}",
            spec.nvcc_version
        );
        out.push(crate::plan::cuda::Toolkit {
            nvcc: root.join("bin/nvcc"),
            // The cuobjdump wheel is pinned separately (it starts at 13.2).
            cuobjdump: spec
                .wheels
                .iter()
                .find(|w| w.name == "nvidia-cuda-cuobjdump")
                .map(|w| (root.join("bin/cuobjdump"), w.version.clone())),
            root,
            version: crate::cuda::NvccVersion::from_nvcc_output(&out_text)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?,
            origin: crate::detect::toolchain::Origin::PinnedSet {
                file: format!("toolchains/{file}"),
                sha256: crate::digest::sha256_file(&path)?,
            },
            found_by: format!("pinned wheels in toolchains/{file}"),
            cuda_path_flag: false,
        });
    }
    Ok(out)
}

/// Every CUDA toolkit found, in priority order, with the version its nvcc
/// reports. With `cuda_path` (`--cuda-path`), that toolkit only: CUDACXX,
/// CUDA_PATH, CUDA_HOME, PATH and the usual locations are not looked at.
pub(super) fn detect_cuda(
    cuda_path: Option<&std::path::Path>,
    env: &Env,
) -> Result<Vec<crate::plan::cuda::Toolkit>> {
    use crate::cuda;
    let mut inputs =
        crate::detect::cuda::DiscoveryInputs::new(crate::detect::cuda::TargetOs::host());
    match cuda_path {
        Some(dir) => {
            inputs.cuda_path_flag = Some(dir.to_path_buf());
            inputs.system.clear();
        }
        None => {
            inputs.cudacxx = env.cudacxx.clone();
            inputs.cuda_path = env.cuda_path.clone();
            inputs.cuda_home = env.cuda_home.clone();
            inputs.path = std::env::split_paths(&env.path).collect();
        }
    }
    if let Some(bad) = crate::detect::cuda::unresolved_inputs(&inputs)
        .into_iter()
        .next()
    {
        anyhow::bail!("{bad}");
    }
    let mut found = Vec::new();
    for c in crate::detect::cuda::discover_nvcc(&inputs) {
        let flag = c
            .sources
            .contains(&crate::detect::cuda::NvccSource::CudaPathFlag);
        let Some(out) = crate::detect::toolchain::version_output(&c.nvcc, "--version") else {
            if flag {
                anyhow::bail!("--cuda-path {}: {} does not run (`{} --version` fails): give a working CUDA toolkit root", c.root.display(), c.nvcc.display(), c.nvcc.display());
            }
            eprintln!("warning: {} does not run; skipped", c.nvcc.display());
            continue;
        };
        let version = cuda::NvccVersion::from_nvcc_output(&out)
            .map_err(|e| anyhow::anyhow!("{}: {e}", c.nvcc.display()))?;
        let own_version = Version::from(version.nvcc);
        let cuobjdump = Some(c.root.join("bin/cuobjdump"))
            .filter(|p| p.is_file())
            .map(|p| (p, own_version));
        let found_by = c
            .sources
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        found.push(crate::plan::cuda::Toolkit {
            root: c.root.clone(),
            nvcc: c.nvcc.clone(),
            version,
            origin: crate::detect::toolchain::Origin::System,
            cuobjdump,
            found_by,
            cuda_path_flag: flag,
        });
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::toolchain::{CompilerKind, MsvcEnvSource, Origin};
    use crate::platform::msvc::tests::{cl_of, fixture, Fake, VS2026};

    fn env() -> Env {
        Env {
            root: PathBuf::from("/nonexistent/checkout"),
            path: String::new(),
            cc: None,
            cxx: None,
            cudacxx: None,
            cuda_path: None,
            cuda_home: None,
            cache: PathBuf::from("/nonexistent/cache"),
            build_root: PathBuf::from("/nonexistent/build"),
            stable_dir: PathBuf::from("/nonexistent/stable"),
            recipes: PathBuf::from("/nonexistent/recipes"),
            home: None,
            launcher_env: Default::default(),
            program_files_x86: Some(PathBuf::from(r"C:\Program Files (x86)")),
            windows_vars: [("SystemRoot", r"C:\Windows")]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    /// verify finds the pinned cuobjdump in the cache, when a complete root
    /// there was assembled from the pinned cuobjdump wheel and still matches the
    /// record of its files.
    #[test]
    fn verify_finds_the_pinned_cuobjdump_in_the_cache() {
        let d = tempfile::tempdir().unwrap();
        let env = Env {
            root: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".."),
            cache: d.path().to_path_buf(),
            ..env()
        };
        let spec = crate::provision::hermetic::CudaSpec::load(
            &env.root.join("toolchains"),
            &"13.0".parse().unwrap(),
        )
        .unwrap();
        let root = d.path().join("cuda").join(spec.nvcc_version.to_string());
        let cuobjdump = root.join("bin/cuobjdump");
        std::fs::create_dir_all(cuobjdump.parent().unwrap()).unwrap();
        std::fs::write(&cuobjdump, "#!/bin/sh\n").unwrap();
        assert_eq!(
            pinned_cuobjdump(&env),
            None,
            "no marker: not a finished root"
        );
        let marker = root.join("llama-forge-cuda.json");
        std::fs::write(&marker, serde_json::to_string(&spec).unwrap()).unwrap();
        assert_eq!(
            pinned_cuobjdump(&env),
            None,
            "no record of the root's files: not checked, not used"
        );
        crate::provision::tree::write(&root).unwrap();
        assert_eq!(pinned_cuobjdump(&env), Some(cuobjdump.clone()));
        std::fs::write(&cuobjdump, "#!/bin/sh\necho changed\n").unwrap();
        assert_eq!(
            pinned_cuobjdump(&env),
            None,
            "a cuobjdump changed since the root was made"
        );
        std::fs::write(&cuobjdump, "#!/bin/sh\n").unwrap();
        let other = crate::provision::hermetic::CudaSpec {
            wheels: spec
                .wheels
                .iter()
                .filter(|w| w.name != "nvidia-cuda-cuobjdump")
                .cloned()
                .collect(),
            ..spec
        };
        std::fs::write(&marker, serde_json::to_string(&other).unwrap()).unwrap();
        crate::provision::tree::write(&root).unwrap();
        assert_eq!(
            pinned_cuobjdump(&env),
            None,
            "a root without the pinned cuobjdump wheel"
        );
    }

    #[test]
    fn each_python_once_in_the_order_given() {
        let py: Vec<PyVersion> = ["312", "3.11", "311", "cp312", "310", "3.11"]
            .iter()
            .map(|p| p.parse().unwrap())
            .collect();
        let got: Vec<String> = unique_pythons(&py).iter().map(|p| p.to_string()).collect();
        assert_eq!(got, ["3.12", "3.11", "3.10"]);
    }

    #[test]
    fn c_compiler_beside_a_cxx_compiler() {
        for (cxx, cc) in [
            ("g++", Some("gcc")),
            ("g++-14", Some("gcc-14")),
            ("x86_64-linux-gnu-g++-12", Some("x86_64-linux-gnu-gcc-12")),
            ("clang++", Some("clang")),
            ("clang++-18", Some("clang-18")),
            ("c++", Some("cc")),
            ("g++.exe", Some("gcc.exe")),
            ("gcc-14", None),
            ("clang", None),
        ] {
            assert_eq!(c_compiler_name(cxx).as_deref(), cc, "{cxx}");
        }
    }

    #[test]
    fn host_cc_needs_its_c_compiler_beside_it() {
        let d = tempfile::tempdir().unwrap();
        let gxx = d.path().join("g++-14");
        std::fs::write(&gxx, "").unwrap();
        let e = sibling_c_compiler(&gxx).unwrap_err().to_string();
        assert!(
            e.contains(&gxx.display().to_string())
                && e.contains(&d.path().join("gcc-14").display().to_string())
                && e.contains("set CC"),
            "{e}"
        );
        std::fs::write(d.path().join("gcc-14"), "").unwrap();
        assert_eq!(sibling_c_compiler(&gxx).unwrap(), d.path().join("gcc-14"));
        let e = sibling_c_compiler(&d.path().join("gcc-14"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("`gcc-14` is not a C++ compiler's name"), "{e}");
        let e = detect_compiler_with(
            &env(),
            Some(&d.path().join("missing/g++")),
            &Fake::recorded(),
            false,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("--host-cc") && e.contains("missing/g++") && e.contains("no such file"),
            "{e}"
        );
    }

    #[test]
    fn windows_finds_msvc_with_vswhere_unless_told_otherwise() {
        let fake = Fake::recorded();
        let c = detect_compiler_with(&env(), None, &fake, true)
            .unwrap()
            .unwrap();
        assert_eq!(
            (c.kind, c.version.to_string(), c.origin.clone()),
            (CompilerKind::Msvc, "19.50.35717".into(), Origin::System)
        );
        assert_eq!(c.msvc.as_ref().unwrap().others.len(), 2);
        assert!(fake.commands()[0].ends_with(r"vswhere.exe -products * -requires Microsoft.VisualStudio.Component.VC.Tools.x86.x64 -format json -utf8"));

        // CXX=cl in a Developer Command Prompt: that environment, as it is.
        let fake = Fake::recorded();
        let mut e = env();
        e.cxx = Some("cl".into());
        e.windows_vars =
            crate::platform::msvc::VcvarsEnv::parse(&fixture("vcvars64-14.44-on-vs2026-set.txt"))
                .vars;
        let c = detect_compiler_with(&e, None, &fake, true)
            .unwrap()
            .unwrap();
        let m = c.msvc.as_ref().unwrap();
        assert_eq!(
            (c.origin.clone(), m.host.source.clone()),
            (
                Origin::Explicit { by: "CXX".into() },
                MsvcEnvSource::Inherited { by: "CXX".into() }
            )
        );
        assert!(
            m.others.is_empty(),
            "the user chose the toolset: nothing to switch to"
        );
        assert_eq!(c.cxx, PathBuf::from(cl_of(VS2026, "14.44.35207")));
        assert_eq!(fake.commands().len(), 1, "only cl runs");

        // --host-cc cl.exe, bare: the same, recorded as --host-cc.
        let mut e2 = e.clone();
        e2.cxx = None;
        let c = detect_compiler_with(&e2, Some(Path::new("cl.exe")), &Fake::recorded(), true)
            .unwrap()
            .unwrap();
        assert_eq!(
            c.origin,
            Origin::Explicit {
                by: "--host-cc".into()
            }
        );

        // Not on Windows, cl is refused by name.
        let err = detect_compiler_with(&e, None, &Fake::recorded(), false)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("CXX=cl") && err.contains("Windows only"),
            "{err}"
        );
        let err = detect_compiler_with(
            &env(),
            Some(Path::new(r"C:\VS\cl.exe")),
            &Fake::recorded(),
            false,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains(r"--host-cc C:\VS\cl.exe") && err.contains("Windows only"),
            "{err}"
        );
    }
}
