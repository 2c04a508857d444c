//! The command line: one module per command.

pub mod build;
mod plan;
mod release;
mod toolchains;
mod verify;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Parser, Subcommand};

use crate::tags::PyVersion;
use crate::target::{Accelerator, CpuBaseline};
use crate::version::Version;

#[derive(Parser)]
#[command(name = "cargo xtask", about = "Builds llama.cpp and llama-cpp-python artifacts, reproducibly, with a manifest")]
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
    /// Check artifacts against their RECORD and manifests.
    Verify {
        /// Wheels (.whl) or archives (.tar.gz).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// cuobjdump for re-checking GPU code (default: on PATH or in /usr/local/cuda/bin).
        #[arg(long)]
        cuobjdump: Option<PathBuf>,
    },
}

#[derive(Args, Clone)]
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
    /// CUDA release to use when several toolkits are found (`12.8`, `13.0`).
    #[arg(long)]
    pub cuda: Option<crate::cuda::CudaVersion>,
    /// A CUDA toolkit root to use (has bin/nvcc).
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
    /// `LLAMA_FORGE_RECIPES`: the recipe dir (default `recipes/`).
    pub recipes: PathBuf,
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
            cache: var("LLAMA_FORGE_CACHE").map(PathBuf::from).unwrap_or_else(|| root.join("vendor/cache")),
            build_root: var("LLAMA_FORGE_BUILD_DIR").map(PathBuf::from).unwrap_or_else(|| root.join(".build")),
            recipes: var("LLAMA_FORGE_RECIPES").map(PathBuf::from).unwrap_or_else(|| root.join("recipes")),
            root,
        }
    }
}

pub fn run(cli: Cli, env: &Env) -> Result<ExitCode> {
    match cli.command {
        Command::Plan(a) => plan::run(&a, env),
        Command::Wheel(a) => build::run(&a, env, crate::recipe::ArtifactKind::Wheel),
        Command::Build(a) => build::run(&a, env, crate::recipe::ArtifactKind::Archive),
        Command::Release(a) => release::run(&a, env),
        Command::Toolchains(a) => toolchains::run(&a, env),
        Command::Verify { paths, cuobjdump } => {
            let found = cuobjdump.or_else(|| {
                crate::toolchain::which("cuobjdump", &env.path).or_else(|| Some(PathBuf::from("/usr/local/cuda/bin/cuobjdump")).filter(|p| p.is_file()))
            });
            verify::run(&paths, found.as_deref())
        }
    }
}

/// Everything a build command needs, prepared from the arguments.
pub struct Prepared {
    pub recipe: crate::recipe::Recipe,
    pub plan: crate::plan::Plan,
    pub pins: crate::toolchain::PinnedTools,
}

/// recipe + detected tools + options -> plan. Detection runs each tool's
/// `--version` once; nothing is downloaded here.
pub fn prepare(args: &BuildArgs, env: &Env) -> Result<Prepared> {
    use crate::toolchain::{self, Origin};
    let recipe = crate::recipe::Recipe::find(&env.recipes, &args.recipe)?;
    let release = recipe.release(args.release.as_ref())?.clone();
    let pins = toolchain::PinnedTools::load(&env.root.join("toolchains/build-tools.toml"))?;

    let system = |name: &str| toolchain::detect_tool(toolchain::which(name, &env.path), Origin::System);
    let pinned = |name: &str, pin: &toolchain::PinnedTool| toolchain::Tool {
        path: env.cache.join("tools").join(format!("{name}-{}", pin.version)).join(&pin.bin),
        version: pin.version.clone(),
        origin: Origin::PackageIndex { url: pin.url.clone(), sha256: pin.sha256.clone() },
    };
    let pick = |name: &str, pin: &toolchain::PinnedTool, min: &Version| match system(name) {
        Some(t) if t.version.at_least(min) => t,
        _ => pinned(name, pin),
    };
    let cmake = pick("cmake", &pins.cmake, &recipe.cmake.min_cmake);
    let ninja_min = pins.ninja.min_version.clone().unwrap_or_else(|| pins.ninja.version.clone());
    let ninja = pick("ninja", &pins.ninja, &ninja_min);
    let compiler = detect_compiler(env)?;
    let cuda = match args.arch {
        crate::target::Accelerator::Cpu => vec![],
        crate::target::Accelerator::Cuda(_) => {
            let mut found = detect_cuda(args.cuda_path.as_deref(), env)?;
            found.extend(hermetic_offers(env)?);
            found
        }
    };
    let patchelf_min = pins.patchelf.min_version.clone().unwrap_or_else(|| pins.patchelf.version.clone());
    let patchelf = (!cuda.is_empty()).then(|| pick("patchelf", &pins.patchelf, &patchelf_min));
    let tools = toolchain::Toolchains { cmake: Some(cmake), ninja: Some(ninja), patchelf, compiler, cuda };

    let source = match &args.source {
        None => crate::plan::SourceChoice::Pinned,
        Some(p) if p.is_dir() => crate::plan::SourceChoice::Local { path: p.canonicalize()?, sha256: None },
        Some(p) if p.is_file() => {
            crate::plan::SourceChoice::Local { path: p.canonicalize()?, sha256: Some(crate::fetch::sha256_file(p)?) }
        }
        Some(p) => anyhow::bail!("--source {}: no such file or directory", p.display()),
    };
    let opts = crate::plan::Options {
        accelerator: args.arch.clone(),
        cpu_baseline: args.cpu_baseline,
        pythons: args.py.clone(),
        source,
        cache: env.cache.clone(),
        ptx: args.ptx,
        cuda_release: args.cuda,
        cuda_runtime: if args.bundle_cuda_runtime {
            crate::cuda_plan::RuntimeMode::Bundled
        } else {
            crate::cuda_plan::RuntimeMode::IndexWheels
        },
    };
    let plan = crate::plan::make(&recipe, &release, &tools, &opts)?;
    Ok(Prepared { recipe, plan, pins })
}

/// The host C/C++ compiler: `CC`/`CXX` when set, else `cc`/`c++` on PATH.
pub(super) fn detect_compiler(env: &Env) -> Result<Option<crate::toolchain::Compiler>> {
    use crate::toolchain::{self, Origin};
    let find = |explicit: &Option<String>, var: &str, defaults: &[&str]| -> Result<Option<(PathBuf, Origin)>> {
        if let Some(v) = explicit {
            let p = if v.contains('/') { Some(PathBuf::from(v)) } else { toolchain::which(v, &env.path) };
            return match p.filter(|p| p.is_file()) {
                Some(p) => Ok(Some((p, Origin::Explicit { by: var.into() }))),
                None => anyhow::bail!("{var}={v}: no such compiler (not a file, and not on PATH)"),
            };
        }
        Ok(defaults.iter().find_map(|d| toolchain::which(d, &env.path)).map(|p| (p, Origin::System)))
    };
    let cxx = find(&env.cxx, "CXX", &["c++", "g++", "clang++"])?;
    let cc = find(&env.cc, "CC", &["cc", "gcc", "clang"])?;
    match (cc, cxx) {
        (Some((cc, _)), Some((cxx, origin))) => {
            let canon = |p: PathBuf| p.canonicalize().unwrap_or(p);
            Ok(Some(toolchain::detect_compiler(canon(cc), canon(cxx), origin)?))
        }
        _ => Ok(None),
    }
}

/// The CUDA toolkits that can be assembled from pinned wheels (provisioned at
/// build time, nothing is downloaded here), in order of preference.
pub fn hermetic_offers(env: &Env) -> Result<Vec<crate::cuda_plan::Toolkit>> {
    let mut out = Vec::new();
    for release in ["13.0", "13.1"] {
        let v: Version = release.parse().expect("static");
        let file = crate::hermetic::toolkit_file(&v)?;
        let path = env.root.join("toolchains").join(file);
        let spec = crate::hermetic::CudaSpec::load(&env.root.join("toolchains"), &v)?;
        let root = env.cache.join("cuda").join(spec.nvcc_version.to_string());
        let out_text = format!("Cuda compilation tools, release {release}, V{}", spec.nvcc_version);
        out.push(crate::cuda_plan::Toolkit {
            nvcc: root.join("bin/nvcc"),
            // The cuobjdump wheel is pinned separately (it starts at 13.2).
            cuobjdump: spec.wheels.iter().find(|w| w.name == "nvidia-cuda-cuobjdump").map(|w| (root.join("bin/cuobjdump"), w.version.clone())),
            root,
            version: crate::cuda::NvccVersion::from_nvcc_output(&out_text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?,
            origin: crate::toolchain::Origin::PinnedSet { file: format!("toolchains/{file}"), sha256: crate::fetch::sha256_file(&path)? },
            found_by: format!("pinned wheels in toolchains/{file}"),
        });
    }
    Ok(out)
}

/// Every CUDA toolkit found, in priority order, with the version its nvcc reports.
pub(super) fn detect_cuda(cuda_path: Option<&std::path::Path>, env: &Env) -> Result<Vec<crate::cuda_plan::Toolkit>> {
    use crate::cuda;
    let mut inputs = cuda::DiscoveryInputs::new(cuda::TargetOs::host());
    inputs.cuda_path_flag = cuda_path.map(std::path::Path::to_path_buf);
    inputs.cudacxx = env.cudacxx.clone();
    inputs.cuda_path = env.cuda_path.clone();
    inputs.cuda_home = env.cuda_home.clone();
    inputs.path = std::env::split_paths(&env.path).collect();
    if let Some(bad) = cuda::unresolved_inputs(&inputs).into_iter().next() {
        anyhow::bail!("{bad}");
    }
    let mut found = Vec::new();
    for c in cuda::discover_nvcc(&inputs) {
        let Some(out) = crate::toolchain::version_output(&c.nvcc, "--version") else {
            eprintln!("warning: {} does not run; skipped", c.nvcc.display());
            continue;
        };
        let version = cuda::NvccVersion::from_nvcc_output(&out).map_err(|e| anyhow::anyhow!("{}: {e}", c.nvcc.display()))?;
        let own_version: Version = version.nvcc.to_string().parse()?;
        let cuobjdump = Some(c.root.join("bin/cuobjdump")).filter(|p| p.is_file()).map(|p| (p, own_version));
        let found_by = c.sources.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", ");
        found.push(crate::cuda_plan::Toolkit {
            root: c.root.clone(),
            nvcc: c.nvcc.clone(),
            version,
            origin: crate::toolchain::Origin::System,
            cuobjdump,
            found_by,
        });
    }
    Ok(found)
}
