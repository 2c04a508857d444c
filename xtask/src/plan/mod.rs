//! The plan: a pure function of (recipe, detected toolchains, options).
//!
//! Everything the build will do is here: every CMake define and compiler flag with
//! the reason it is there, the complete environment of every command, the command
//! lines themselves, and what gets packaged. Paths that differ between machines
//! and checkouts are placeholders (`${SRC}`, `${BUILD}`, `${STAGE}`) that the
//! executor fills in, so equal plans hash equal wherever they run.

pub mod commands;
pub mod cuda;
pub mod defines;
pub mod env;
pub mod error;
pub mod jobs;
pub mod launcher;
pub mod package;
pub mod setting;
pub mod source;
pub mod tools;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use crate::plan::commands::Commands;
pub use crate::plan::error::PlanError;
pub use crate::plan::package::{ArchiveFormat, Package, WheelPythons};
pub use crate::plan::setting::{portable, Setting, SettingOrigin, ToolRecord};
pub use crate::plan::source::{
    Overlay, PlannedSource, PlannedUpstream, SourceChoice, SourceFacts, SourceKind,
};
pub use crate::plan::tools::PlannedTools;

use crate::detect::toolchain::Toolchains;
use crate::digest::Sha256Hex;
use crate::platform::Platform;
use crate::recipe::{ArtifactKind, Feature, Recipe, Release};
use crate::request::{Accelerator, CpuBaseline};
use crate::tags::{LocalLabel, PyVersion};
use crate::versions::Version;

pub const SCHEMA: u32 = 1;

/// What the user asked for, as typed values.
#[derive(Debug, Clone)]
pub struct Options {
    /// `--target`: the platform the artifact is for.
    pub target: crate::platform::Target,
    pub accelerator: Accelerator,
    /// `--arch auto`: what it saw and chose (`auto: NVIDIA GeForce RTX 5090 (12.0)`).
    pub auto_arch: Option<String>,
    pub cpu_baseline: CpuBaseline,
    /// `--py`: the CPythons to make a wheel each for; empty for archives, and for
    /// the one `py3` wheel (every Python) that a wheel recipe makes by default.
    pub pythons: Vec<PyVersion>,
    pub source: SourceChoice,
    /// What was read of the source before planning (the patched files, for the check).
    pub source_facts: SourceFacts,
    /// `--llama-cpp`: another llama.cpp tree in place of the source's vendored one.
    pub overlay: Option<Overlay>,
    /// The tool cache root: paths under it are written `${CACHE}/...`.
    pub cache: PathBuf,
    /// `--ptx`: add PTX for the highest arch.
    pub ptx: bool,
    /// This machine's NVIDIA driver (NVML or nvidia-smi), where one was seen and the
    /// artifact is for this machine: the CUDA release defaults to one it runs.
    pub driver: Option<crate::cuda::DriverVersion>,
    /// `--cuda 13.0`: which toolkit, when several are found.
    pub cuda_release: Option<crate::cuda::CudaVersion>,
    pub cuda_runtime: crate::plan::cuda::RuntimeMode,
    /// The arch of the machine the build runs on: a Linux target of another arch is
    /// cross-compiled.
    pub host_arch: crate::platform::Arch,
    /// `--define NAME=VALUE`s, in the order given: CMake defines the plan does not set.
    pub defines: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Plan {
    pub schema: u32,
    pub recipe: String,
    pub version: Version,
    /// The upstream llama.cpp build the source is (the recipe's `[release.upstream]`),
    /// whose build number and commit the binaries report; none for a local source.
    pub upstream: Option<PlannedUpstream>,
    pub artifact: ArtifactKind,
    /// The platform the artifact is for. Left out of the JSON for Linux, which every
    /// plan from before `--target` was for, so their hashes hold.
    #[serde(default, skip_serializing_if = "crate::platform::Target::is_linux_gnu")]
    pub target: crate::platform::Target,
    /// What is built for: never `auto`, which `detect` resolves first.
    pub accelerator: Accelerator,
    /// Where `--arch auto` chose [`Plan::accelerator`]: the GPUs it saw
    /// (`auto: NVIDIA GeForce RTX 5090 (12.0)`) or why the CPU. Not hashed, and not in the
    /// manifest, which names the arch chosen: a rebuild from it asks for that arch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub auto_arch: Option<String>,
    pub cpu_baseline: CpuBaseline,
    /// The CPU backend variants the artifact ships (ggml loads the best one at run
    /// time), from the baseline's floor up, each with the CPU models that load it.
    /// Empty (and left out of the JSON, so their hash holds) in plans from before
    /// runtime dispatch.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_variants: Vec<crate::cpu::ShippedVariant>,
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
    /// `--jobs N`: compiles at once. As the launcher: not which bytes, so left out of the
    /// hash and of every manifest (so of the manifest's schema too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub jobs: Option<crate::plan::jobs::Jobs>,
    /// Each patch's verdict against the source (`no-modules-from-cwd: applies`), where the
    /// source was at hand; none: planned unchecked (the build checks them first). What was
    /// left out is in [`PlannedSource::skipped_patches`]: this is not hashed, and not in
    /// the manifest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub patch_check: Option<Vec<String>>,
    /// The options that came from a default (`LLAMA_FORGE_ARCH`, `llama-forge.toml`), and
    /// where from: their values are in the plan as if given; this is not hashed, and not
    /// in the manifest.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(skip)]
    pub defaults: Vec<crate::request::DefaultFrom>,
}

impl Plan {
    /// sha256 of the plan's JSON: the build cache key, the manifest's plan id and a
    /// substituter's address for the artifact (`substitute`). A local source's path is
    /// left out (recorded, not hashed): its content hash (`tree_sha256`, or `sha256` for an
    /// archive) says which source it is, and the same tree at another path on another
    /// machine builds the same bytes, so it must get the same id.
    pub fn hash(&self) -> Sha256Hex {
        let mut p = self.recorded();
        p.source.unlocate();
        crate::digest::sha256_bytes(&serde_json::to_vec(&p).expect("plan serialises"))
    }

    /// The plan as the artifact records it: what is built, without the launcher
    /// and without the CUDA toolkits found here but not used (`cuda.skipped`).
    pub fn recorded(&self) -> Plan {
        let mut p = Plan {
            launcher: None,
            jobs: None,
            auto_arch: None,
            patch_check: None,
            defaults: vec![],
            ..self.clone()
        };
        if let Some(c) = &mut p.cuda {
            c.skipped.clear();
            c.driver = None;
        }
        p
    }

    /// The build command as it runs: the plan's, with `--jobs`'s `--parallel N` where given.
    pub fn build_command(&self) -> Vec<String> {
        match &self.jobs {
            Some(j) => j.build_command(&self.commands.build),
            None => self.commands.build.clone(),
        }
    }

    /// The file of the tools' shared C++ runtime this plan builds (`libllama-forge-stdc++.so`,
    /// [`defines::CXX_RUNTIME_NAME`]), if it builds one.
    pub fn shared_cxx_runtime(&self) -> Option<String> {
        self.defines
            .iter()
            .find(|d| d.name == defines::CXX_RUNTIME_NAME)
            .map(|d| self.target.binary_format().library_file(&d.value))
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
        Plan::label_of(cuda.map(|c| (c.label.as_str(), &c.architectures)), baseline)
    }

    /// The local version label from its parts: the CUDA label (`cu130`) and the device
    /// code of a GPU build, and the CPU baseline (`cpu`, `cu130.sm120a`, `cpu.v3`). A
    /// release names its cells' flavours with it before they are built.
    pub fn label_of(
        cuda: Option<(&str, &crate::cuda::ArchList)>,
        baseline: CpuBaseline,
    ) -> LocalLabel {
        let mut label = match cuda {
            None => "cpu".to_string(),
            Some((cuda_label, architectures)) => {
                let mut l = cuda_label.to_string();
                for a in architectures.sass() {
                    l.push_str(&format!(".{}", a.sm_name().replace('_', "")));
                }
                if architectures.ptx().next().is_some() {
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

/// Makes the plan. No I/O: everything comes in as arguments.
pub fn make(
    recipe: &Recipe,
    release: &Release,
    tools: &Toolchains,
    opts: &Options,
) -> Result<Plan, PlanError> {
    let (cmake, ninja, compiler) = tools::required(tools, recipe)?;
    match recipe.artifact {
        ArtifactKind::Archive if !opts.pythons.is_empty() => {
            return Err(PlanError::PyForArchive(recipe.name.clone()))
        }
        _ => {}
    }
    let (mut source, patch_check) = source::planned(
        recipe,
        release,
        &opts.source,
        &opts.source_facts,
        opts.target,
    )?;
    // Another llama.cpp tree: its build and commit are what the binaries report, and the
    // date is the later of the two trees'.
    let (upstream, date) = match &opts.overlay {
        None => (source::upstream(release, &source), release.sources[0].date),
        Some(o) => {
            source.overlay = Some(Box::new(o.source.clone()));
            (o.upstream.as_ref(), release.sources[0].date.max(o.date))
        }
    };
    // The CUDA plan comes first: with MSVC, its host compiler policy may pick another toolset,
    // whose environment and cl.exe the whole build then uses.
    let detected = Platform::of(&compiler, opts.target, opts.host_arch);
    // A system compiler for a cross target: its name says which code it makes
    // (aarch64-linux-gnu-g++); the host's own g++ would make x86-64 code.
    let cross_named = |c: &crate::platform::host::Compiler| {
        c.pinned.is_some()
            || c.cxx.file_name().is_some_and(|n| {
                n.to_string_lossy()
                    .starts_with(opts.target.arch().gnu_triple())
            })
    };
    if opts.target.is_linux() && opts.target.arch() != opts.host_arch && !cross_named(&compiler) {
        return Err(PlanError::TargetCompiler {
            asked: opts.target,
            builds: crate::platform::Target::default_for(
                crate::platform::Os::Linux,
                opts.host_arch,
            ),
            cxx: compiler.cxx.display().to_string(),
        });
    }
    if detected.target() != opts.target {
        return Err(PlanError::TargetCompiler {
            asked: opts.target,
            builds: detected.target(),
            cxx: compiler.cxx.display().to_string(),
        });
    }
    let (cuda, switched) = match &opts.accelerator {
        Accelerator::Cpu => (None, None),
        Accelerator::Cuda(request) => {
            let (c, switched) = cuda::plan(
                &tools.cuda,
                &detected,
                &cuda::CudaOptions {
                    request,
                    ptx: opts.ptx,
                    release: opts.cuda_release,
                    runtime: opts.cuda_runtime,
                    cache: &opts.cache,
                    driver: opts.driver.as_ref(),
                },
            )?;
            (Some(c), switched)
        }
    };
    let platform = detected.switched_to(switched);

    let env = env::env(&platform, date);
    let cpu = cpu_variants(&platform, opts.cpu_baseline);
    let variants: Vec<&crate::cpu::Variant> = cpu
        .iter()
        .filter(|d| d.skipped.is_none())
        .map(|d| d.variant)
        .collect();
    let profile = recipe.profile.as_ref();
    let provided = |f| crate::recipe::profile::provided(&source.patches, f);
    let subset_feature = profile
        .and_then(|p| p.features.cpu_variants.as_ref())
        .filter(|_| provided(Feature::CpuVariants) && !variants.is_empty());
    let mut defines = defines::host(&platform, &ninja, &opts.cache);
    if let Some(p) = profile {
        defines.extend(defines::fixed(
            p,
            &platform,
            opts.cpu_baseline,
            subset_feature.is_some(),
            &cpu,
        ));
    }
    if let Some(f) = subset_feature {
        let names: Vec<&str> = variants.iter().map(|v| v.name).collect();
        defines.push(defines::cpu_variants(f, &names));
    }
    defines.extend(defines::build_info(upstream));
    let gpu = match (&opts.accelerator, &cuda) {
        (Accelerator::Cuda(request), Some(c)) => Some((request, c)),
        _ => None,
    };
    defines.extend(defines::cuda(
        profile.map(|p| &p.cuda),
        gpu,
        switched.is_some(),
        &platform,
        &opts.cache,
    ));
    if let (Some(g), true) = (
        profile.and_then(|p| p.features.cuda_groups.as_ref()),
        cuda.is_some() && provided(Feature::CudaGroups),
    ) {
        defines.push(defines::cuda_groups(g));
    }
    if let (Some(rt), true) = (
        platform.static_cxx_runtime(),
        provided(Feature::SharedCxxRuntime),
    ) {
        defines.extend(defines::cxx_runtime(setting::portable(rt, &opts.cache)));
    }
    if let (Some(c), true) = (&cuda, platform.is_cross_arch()) {
        defines::cuda_cross_link(&mut defines, &c.root, platform.arch());
    }
    defines::apply_recipe(&mut defines, recipe);
    defines::apply_user(&mut defines, &opts.defines)?;
    let commands = commands::commands(recipe, release, &source, &cmake, &defines, &opts.cache);
    let mut local = Plan::local_label(cuda.as_ref(), opts.cpu_baseline);
    if let Some(o) = &opts.overlay {
        local = format!("{local}.{}", o.label())
            .parse()
            .expect("a build number or a word is a label segment");
    }
    let cpu_variants =
        crate::cpu::variants::record(&variants, |t| platform.binary_format().library_file(t));
    let package = package::package(
        recipe,
        release,
        WheelPythons::from_asked(&opts.pythons),
        local,
        cuda.as_ref(),
        &cpu_variants,
        &platform,
    );
    let patchelf = tools::patchelf(tools, cuda.is_some(), &platform, &opts.cache)?;
    Ok(Plan {
        schema: SCHEMA,
        recipe: recipe.name.clone(),
        version: release.version.clone(),
        upstream: upstream.cloned().map(PlannedUpstream::Build),
        artifact: recipe.artifact,
        target: opts.target,
        accelerator: opts.accelerator.clone(),
        auto_arch: opts.auto_arch.clone(),
        cpu_baseline: opts.cpu_baseline,
        cpu_variants,
        cuda,
        source,
        source_date_epoch: date,
        tools: tools::record(&cmake, &ninja, &platform, patchelf, &opts.cache),
        env,
        defines,
        commands,
        package,
        launcher: None,
        jobs: None,
        patch_check,
        defaults: vec![],
    })
}

/// ggml's CPU variants for the target's arch, each shipped or skipped with its reason:
/// x86-64 from the `--cpu-baseline`'s floor up, less those the platform's compiler
/// leaves out (MSVC); aarch64 every variant the compiler builds (`cpu::aarch64`).
fn cpu_variants(platform: &Platform, baseline: CpuBaseline) -> Vec<crate::cpu::Decision> {
    use crate::cpu::{Decision, Skip};
    let (version, kind, _) = platform.compiler_facts();
    let major = version
        .parts()
        .first()
        .and_then(|m| u32::try_from(*m).ok())
        .unwrap_or(0);
    let arch = platform.arch();
    let floor: &[crate::cpu::Feature] = match arch {
        crate::platform::Arch::X86_64 => baseline.floor(),
        crate::platform::Arch::Aarch64 => crate::cpu::aarch64::FLOOR,
    };
    crate::cpu::variants::decide(arch, floor, kind, major)
        .into_iter()
        .map(|d| match d.skipped {
            None if !platform.builds_cpu_variant(d.variant.name) => Decision {
                skipped: Some(Skip::Compiler(format!(
                    "{}'s CMake leaves it out for this compiler",
                    d.variant.name
                ))),
                ..d
            },
            _ => d,
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests;
