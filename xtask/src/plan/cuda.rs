//! The CUDA part of a plan: which nvcc, which arch targets and why, what the
//! host compiler policy injects, and how the wheel finds the CUDA runtime.
//! Pure: takes the detected toolkits and compiler, returns typed settings.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::cuda::{self, ArchRequest, CudaVersion, HostDecision, NvccVersion};
use crate::detect::toolchain::{Compiler, CompilerKind, Origin};
use crate::plan::{portable, PlanError, ToolRecord};

/// One CUDA toolkit this machine has, or can provision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolkit {
    pub root: PathBuf,
    pub nvcc: PathBuf,
    pub version: NvccVersion,
    pub origin: Origin,
    /// `cuobjdump` that reads this toolkit's output (its own, or a newer one), and its version.
    pub cuobjdump: Option<(PathBuf, crate::version::Version)>,
    /// For `--cuda-path`/`CUDACXX` etc.: how it was found.
    pub found_by: String,
    /// Given with `--cuda-path`: binding, no other toolkit may stand in for it.
    pub cuda_path_flag: bool,
}

/// The CUDA releases assembled from pinned wheels of the package index
/// (`toolchains/cuda-*.toml`), in order of preference: offered by
/// `commands::hermetic_offers`, suggested by the messages here.
pub const PINNED_RELEASES: [&str; 2] = ["13.0", "13.1"];

/// A toolkit this machine has that the plan does not use, and why. Left out
/// of the plan hash and of the manifest ([`crate::plan::Plan::recorded`]):
/// what else is installed does not change what is built.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedToolkit {
    pub root: String,
    pub nvcc: crate::version::Version,
    pub found_by: String,
    pub reason: String,
}

impl std::fmt::Display for SkippedToolkit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "CUDA toolkit skipped: nvcc {} at {} (found by {}): {}",
            self.nvcc, self.root, self.found_by, self.reason
        )
    }
}

/// Where the wheel's CUDA runtime comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum RuntimeMode {
    /// Depend on NVIDIA's runtime wheels from the package index (default).
    #[default]
    IndexWheels,
    /// Copy libcudart/libcublas into the wheel (`--bundle-cuda-runtime`).
    Bundled,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedCuda {
    pub nvcc: ToolRecord,
    pub cuobjdump: Option<ToolRecord>,
    pub root: String,
    /// The CUDA release, `13.0`.
    pub release: String,
    /// `CMAKE_CUDA_ARCHITECTURES`.
    pub architectures: String,
    pub arch_reasons: Vec<String>,
    pub warnings: Vec<String>,
    /// What the nvcc x host compiler policy decided.
    pub host_policy: String,
    /// Set when `-allow-unsupported-compiler` was injected: why.
    pub waiver: Option<String>,
    /// Flags for CMAKE_CUDA_FLAGS, each with its reason.
    pub flags: Vec<(String, String)>,
    /// CMAKE_CUDA_COMPILER_LAUNCHER: adds a per-object --frandom-seed (nvcc >= 12.9).
    pub launcher: Option<String>,
    pub runtime: RuntimeMode,
    /// Requires-Dist lines for the runtime wheels (index mode).
    pub requires: Vec<String>,
    /// RUNPATH of libraries that load the CUDA runtime.
    pub runpath: Vec<String>,
    /// Runtime library files copied into the artifact (bundled mode), from the toolkit.
    pub bundle: Vec<String>,
    /// Libraries the artifact may need that come from the driver or the runtime wheels.
    pub provided: Vec<String>,
    /// Oldest Linux driver the toolkit's code runs on.
    pub min_driver: Option<String>,
    /// The local version label part: `cu130`.
    pub label: String,
    /// The toolkits found here and not used, each with the reason; not hashed
    /// nor recorded in the manifest ([`SkippedToolkit`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedToolkit>,
}

pub struct CudaOptions<'a> {
    pub request: &'a ArchRequest,
    pub ptx: bool,
    pub release: Option<CudaVersion>,
    pub runtime: RuntimeMode,
    pub cache: &'a Path,
}

/// Picks a toolkit, and names every other one found here with the reason it
/// is not used. `--cuda-path` and `--cuda` are binding: the toolkit given, or
/// one of the release asked for, is used or the plan is refused (saying what
/// it can emit and what to use instead); nothing else stands in. Without
/// either, the first found (in discovery priority) that can emit every
/// target; provisionable ones come last.
fn choose<'a>(
    toolkits: &'a [Toolkit],
    opts: &CudaOptions,
    targets: &cuda::ArchList,
) -> Result<(&'a Toolkit, Vec<SkippedToolkit>), PlanError> {
    let cannot = |t: &Toolkit| {
        targets
            .targets()
            .iter()
            .find_map(|a| cuda::can_emit(&t.version.release, &a.arch).err())
    };
    let listed = || {
        if toolkits.is_empty() {
            "none".to_string()
        } else {
            toolkits
                .iter()
                .map(|t| format!("{} at {}", t.version.nvcc, t.root.display()))
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    let chosen = if let Some(t) = toolkits.iter().find(|t| t.cuda_path_flag) {
        if let Some(rel) = opts.release.filter(|r| r.release() != t.version.release) {
            return Err(PlanError::Cuda(format!(
                "--cuda {rel} and --cuda-path {} (nvcc {}, CUDA {}) disagree: --cuda-path names the toolkit to use; give the one of CUDA {rel}, or leave --cuda out",
                t.root.display(),
                t.version.nvcc,
                t.version.release
            )));
        }
        if let Some(e) = cannot(t) {
            return Err(refusal(
                t,
                &format!("--cuda-path {}", t.root.display()),
                &e,
                toolkits,
                opts,
                targets,
            ));
        }
        t
    } else if let Some(rel) = &opts.release {
        let mut same = toolkits
            .iter()
            .filter(|t| t.version.release == rel.release());
        let Some(first) = same.clone().next() else {
            return Err(PlanError::Cuda(format!(
                "--cuda {rel}: no such toolkit found (found: {}); install it or point --cuda-path at it (13.0 and 13.1 can also come from the package index: `cargo xtask toolchains install cuda 13.0`)",
                listed()
            )));
        };
        match same.find(|t| cannot(t).is_none()) {
            Some(t) => t,
            None => {
                return Err(refusal(
                    first,
                    &format!("--cuda {rel}"),
                    &cannot(first).expect("cannot emit"),
                    toolkits,
                    opts,
                    targets,
                ))
            }
        }
    } else {
        match toolkits.iter().find(|t| cannot(t).is_none()) {
            Some(t) => t,
            None if toolkits.is_empty() => {
                return Err(PlanError::Cuda(
                    "no nvcc found (looked at --cuda-path, CUDACXX, CUDA_PATH, CUDA_HOME, PATH, /usr/local/cuda*, /opt/cuda): install CUDA 12.8 or newer, or run `cargo xtask toolchains install cuda 13.0`".into(),
                ))
            }
            None => {
                let why: Vec<String> = toolkits.iter().map(|t| format!("nvcc {} at {}: {}", t.version.nvcc, t.root.display(), cannot(t).expect("cannot emit"))).collect();
                return Err(PlanError::Cuda(format!(
                    "no CUDA toolkit here can build --arch {} ({}); {}",
                    opts.request,
                    why.join("; "),
                    use_instead(targets)
                )));
            }
        }
    };
    let skipped = toolkits
        .iter()
        .filter(|t| !std::ptr::eq(*t, chosen) && !matches!(t.origin, Origin::PinnedSet { .. }))
        .map(|t| {
            let reason = match (cannot(t), &opts.release) {
                _ if chosen.cuda_path_flag => format!("--cuda-path {} was given", chosen.root.display()),
                (_, Some(rel)) if t.version.release != rel.release() => format!("not CUDA {rel} (--cuda {rel} was given)"),
                (Some(e), _) => e.to_string(),
                (None, _) => format!(
                    "found after the one used (nvcc {} at {}, found by {}); give --cuda-path {} to use this one",
                    chosen.version.nvcc,
                    portable(&chosen.root, opts.cache),
                    chosen.found_by,
                    t.root.display()
                ),
            };
            SkippedToolkit {
                root: portable(&t.root, opts.cache),
                nvcc: t.version.nvcc.to_string().parse().expect("dotted"),
                found_by: t.found_by.clone(),
                reason,
            }
        })
        .collect();
    Ok((chosen, skipped))
}

/// `a`, `a or b`, `a, b or c`.
fn or_list<T: std::fmt::Display>(items: &[T]) -> String {
    let s: Vec<String> = items.iter().map(ToString::to_string).collect();
    match s.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

/// What a release's nvcc emits, by the support table.
pub fn emits_summary(release: &CudaVersion) -> String {
    let table = cuda::SupportTable::builtin();
    let nums = |v: &[cuda::CudaArch]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.iter()
                .map(|a| a.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    let row = |r: &cuda::ReleaseSupport| {
        format!(
            "sm_{} to sm_{} ({}; with `a`: {}; with `f`: {})",
            r.oldest,
            r.targets.last().expect("targets"),
            nums(&r.targets),
            nums(&r.arch_specific),
            nums(&r.family)
        )
    };
    match table.lookup(release) {
        cuda::ReleaseMatch::Exact(r) => row(r),
        cuda::ReleaseMatch::Untested(r) => format!(
            "what CUDA {} does, assumed (CUDA {release} is not in the support table): {}",
            r.cuda,
            row(r)
        ),
        cuda::ReleaseMatch::OlderThanTable => {
            let o = table.oldest();
            let before: Vec<cuda::CudaArch> = o
                .targets
                .iter()
                .filter(|a| !o.added.contains(a))
                .copied()
                .collect();
            format!(
                "at most sm_{} to sm_{} ({}: CUDA {release} is older than the support table, which starts at {}, where {} were added)",
                before.first().expect("targets"),
                before.last().expect("targets"),
                nums(&before),
                o.cuda,
                nums(&o.added)
            )
        }
    }
}

/// The releases that can emit every target, and where to get one.
fn use_instead(targets: &cuda::ArchList) -> String {
    let table = cuda::SupportTable::builtin();
    let all = |r: &cuda::ReleaseSupport| targets.targets().iter().all(|a| r.emits(&a.arch));
    let can: Vec<CudaVersion> = table
        .releases
        .iter()
        .filter(|r| all(r))
        .map(|r| r.cuda)
        .collect();
    if can.is_empty() {
        return format!("no CUDA release in the nvcc support table ({}) can emit all of {targets}: check --arch", table.range());
    }
    let pinned = PINNED_RELEASES
        .iter()
        .map(|r| r.parse::<CudaVersion>().expect("static"))
        .find(|r| can.contains(r));
    let index = pinned.map(|r| format!(" (CUDA {r} can come from the package index: `cargo xtask toolchains install cuda {r}`)")).unwrap_or_default();
    format!("use CUDA {}{index}", or_list(&can))
}

/// Why a binding choice (`--cuda-path DIR`, `--cuda X.Y`) cannot build the
/// targets: what its nvcc can emit, and what to use instead.
fn refusal(
    t: &Toolkit,
    given: &str,
    e: &cuda::CannotEmit,
    toolkits: &[Toolkit],
    opts: &CudaOptions,
    targets: &cuda::ArchList,
) -> PlanError {
    let head = format!(
        "{given}: nvcc {} at {} cannot build --arch {}: {e}. nvcc {} emits {}",
        t.version.nvcc,
        t.nvcc.display(),
        opts.request,
        t.version.release,
        emits_summary(&t.version.release)
    );
    let emits_all = |t: &&Toolkit| {
        targets
            .targets()
            .iter()
            .all(|a| cuda::can_emit(&t.version.release, &a.arch).is_ok())
    };
    let instead = if t.cuda_path_flag {
        format!("--cuda-path names the toolkit to use, so no other is tried: point it at another toolkit, or leave it out; {}", use_instead(targets))
    } else {
        let mut here: Vec<CudaVersion> = toolkits
            .iter()
            .filter(emits_all)
            .map(|t| t.version.release)
            .collect();
        here.dedup();
        if here.is_empty() {
            format!(
                "--cuda names the release to use, so no other is tried: {}",
                use_instead(targets)
            )
        } else {
            format!("--cuda names the release to use, so no other is tried: ask for --cuda {} (found here or provisionable), or leave --cuda out", or_list(&here))
        }
    };
    PlanError::Cuda(format!("{head}. {instead}"))
}

/// The CUDA plan, and the MSVC toolset the host compiler policy switched to
/// (`UseToolset`): the build then runs in that toolset's environment, with its cl.exe.
pub fn plan(
    toolkits: &[Toolkit],
    compiler: &Compiler,
    opts: &CudaOptions,
) -> Result<(PlannedCuda, Option<crate::platform::msvc::MsvcToolset>), PlanError> {
    let selection = opts.request.resolve(opts.ptx);
    let (tk, skipped) = choose(toolkits, opts, &selection.targets)?;
    let release = tk.version.release;
    let mut warnings: Vec<String> = selection.warnings.iter().map(|w| w.to_string()).collect();
    for t in selection.targets.targets() {
        match cuda::can_emit(&release, &t.arch) {
            Ok(cuda::EmitSupport::Known) => {}
            Ok(cuda::EmitSupport::Untested(u)) => warnings.push(format!("{u}")),
            Err(e) => {
                return Err(PlanError::Cuda(format!(
                    "{e} (nvcc {} at {})",
                    tk.version.nvcc,
                    tk.nvcc.display()
                )))
            }
        }
    }
    let is_msvc = compiler.kind == CompilerKind::Msvc;
    let host = crate::platform::compiler::HostCompiler {
        kind: match compiler.kind {
            CompilerKind::Gcc => crate::platform::compiler::HostCompilerKind::Gcc,
            CompilerKind::Clang => crate::platform::compiler::HostCompilerKind::Clang,
            CompilerKind::Msvc => crate::platform::compiler::HostCompilerKind::Msvc,
        },
        version: compiler
            .version
            .to_string()
            .parse()
            .map_err(|e| PlanError::Cuda(format!("{e}")))?,
        path: compiler.cxx.clone(),
    };
    // MSVC: every other installed toolset is a candidate when the host's is out of range.
    let toolsets: Vec<crate::platform::msvc::MsvcToolset> = compiler
        .msvc
        .iter()
        .flat_map(|m| m.others.iter().map(|t| t.toolset))
        .collect();
    let decision = cuda::host_compiler_decision(&release, &host, &toolsets)
        .map_err(|e| PlanError::Cuda(e.to_string()))?;
    let mut flags = Vec::new();
    let mut switched = None;
    let (host_policy, waiver) = match &decision {
        HostDecision::InRange => (
            format!(
                "{} {} is supported by nvcc {release}: nothing injected",
                host.kind, host.version
            ),
            None,
        ),
        HostDecision::UseToolset { toolset, reason } => {
            switched = Some(*toolset);
            (format!("use MSVC toolset {toolset}: {reason}"), None)
        }
        HostDecision::Waiver { flag, reason } => {
            flags.push((flag.to_string(), reason.clone()));
            (format!("waiver: {reason}"), Some(reason.clone()))
        }
    };
    if is_msvc {
        flags.push((
            "-D_WINDOWS -Xcompiler=/EHsc".into(),
            "CMake's own CUDA flags on Windows (Modules/Platform/Windows-NVIDIA-CUDA.cmake), restated because giving CMAKE_CUDA_FLAGS replaces them: /EHsc is C++ exception handling in the host code (their /GR, RTTI, is cl's default anyway; /W3 is only the warning level)".into(),
        ));
    }
    for f in cuda::extra_cuda_flags(&release, &host) {
        flags.push((f.flag, f.reason));
    }
    flags.push((
        "-objtemp".into(),
        "nvcc names its temp files after the object, not its process id, which otherwise lands in every object: byte-identical rebuilds".into(),
    ));
    if is_msvc {
        flags.push((
            "-Xcompiler=/Brepro".into(),
            crate::plan::MSVC_BREPRO_REASON.into(),
        ));
        flags.push((
            "-Xcompiler=/d1trimfile:${SRC}".into(),
            crate::plan::MSVC_TRIMFILE_REASON.into(),
        ));
    } else {
        flags.push((
            "-Xcompiler=-ffile-prefix-map=${SRC}=/src".into(),
            "host-side passes of nvcc: no build-machine path in __FILE__ or asserts".into(),
        ));
        flags.push((
            "-Xcompiler=-ffile-prefix-map=${BUILD}=/build".into(),
            "host-side passes of nvcc: no build-machine path in __FILE__ or asserts".into(),
        ));
    }

    // --frandom-seed exists from 12.9: per object, through the launcher (a shell script: not on Windows).
    let launcher = (release >= CudaVersion::new(12, 9) && !is_msvc)
        .then(|| "${REPO}/toolchains/nvcc-seed.sh".to_string());
    if is_msvc {
        warnings.push(
            "Windows: no per-object --frandom-seed (the launcher that adds it, toolchains/nvcc-seed.sh, is a shell script; one seed for every object could give two objects the same generated names): some CUDA objects may differ between builds".into(),
        );
        warnings.push(
            "Windows: building is not implemented yet (this is what the build would do): the runtime and package parts of this plan (library names, Requires-Dist, driver) still describe the Linux artifact".into(),
        );
    }
    let major = release.major;
    let (requires, runtime_dir, libs): (Vec<String>, &str, Vec<&str>) = if major >= 13 {
        (
            vec![
                format!("nvidia-cuda-runtime>={release},<{}", major + 1),
                format!("nvidia-cublas>={release},<{}", major + 1),
            ],
            "$ORIGIN/../../nvidia/cu13/lib",
            vec!["libcudart.so.13", "libcublas.so.13", "libcublasLt.so.13"],
        )
    } else {
        (
            vec![
                format!("nvidia-cuda-runtime-cu12>={release},<13"),
                format!("nvidia-cublas-cu12>={release},<13"),
            ],
            "$ORIGIN/../../nvidia/cuda_runtime/lib:$ORIGIN/../../nvidia/cublas/lib",
            vec!["libcudart.so.12", "libcublas.so.12", "libcublasLt.so.12"],
        )
    };
    let (requires, runpath, bundle) = match opts.runtime {
        RuntimeMode::IndexWheels => {
            let mut rp = vec!["$ORIGIN".to_string()];
            rp.extend(runtime_dir.split(':').map(str::to_string));
            (requires, rp, vec![])
        }
        RuntimeMode::Bundled => (
            vec![],
            vec!["$ORIGIN".to_string()],
            libs.iter().map(|s| s.to_string()).collect(),
        ),
    };
    // RUNPATH is ELF: Windows finds DLLs otherwise.
    let runpath = if is_msvc { vec![] } else { runpath };
    let mut provided: Vec<String> = libs.iter().map(|s| s.to_string()).collect();
    provided.push("libcuda.so.1".into());

    let table = cuda::SupportTable::builtin();
    let min_driver = match table.lookup(&release) {
        cuda::ReleaseMatch::Exact(r) | cuda::ReleaseMatch::Untested(r) => {
            r.min_linux_driver.as_ref().map(|d| d.to_string())
        }
        cuda::ReleaseMatch::OlderThanTable => None,
    };
    let record = |p: &Path, version: crate::version::Version| ToolRecord {
        path: portable(p, opts.cache),
        version,
        origin: tk.origin.clone(),
        kind: None,
    };
    let planned = PlannedCuda {
        nvcc: record(
            &tk.nvcc,
            tk.version.nvcc.to_string().parse().expect("dotted"),
        ),
        cuobjdump: tk.cuobjdump.as_ref().map(|(p, v)| record(p, v.clone())),
        root: portable(&tk.root, opts.cache),
        release: release.to_string(),
        architectures: selection.targets.to_string(),
        arch_reasons: selection.reasons.iter().map(|r| r.to_string()).collect(),
        warnings,
        host_policy,
        waiver,
        flags,
        launcher,
        runtime: opts.runtime,
        requires,
        runpath,
        bundle,
        provided,
        min_driver,
        label: format!("cu{}{}", release.major, release.minor),
        skipped,
    };
    Ok((planned, switched))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::target::Accelerator;
    use crate::plan::{
        make,
        tests::{fake_tools, opts},
        Package,
    };
    use crate::recipe::Recipe;

    fn toolkit(root: &str, nvcc_version: &str) -> Toolkit {
        let out = format!("nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release {}, V{nvcc_version}\n", &nvcc_version[..nvcc_version.rfind('.').unwrap()]);
        Toolkit {
            root: root.into(),
            nvcc: format!("{root}/bin/nvcc").into(),
            version: NvccVersion::from_nvcc_output(&out).unwrap(),
            origin: Origin::System,
            cuobjdump: Some((
                format!("{root}/bin/cuobjdump").into(),
                nvcc_version.parse().unwrap(),
            )),
            found_by: "test".into(),
            cuda_path_flag: false,
        }
    }

    fn plan_for(
        arch: &str,
        toolkits: Vec<Toolkit>,
        gcc: &str,
        tweak: impl Fn(&mut crate::plan::Options),
    ) -> Result<crate::plan::Plan, PlanError> {
        let r = Recipe::find(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("../recipes"),
            "llama-cpp-python",
        )
        .unwrap();
        let mut o = opts(&["311"]);
        o.accelerator = arch.parse::<Accelerator>().unwrap();
        tweak(&mut o);
        let mut t = fake_tools(&o.cache);
        t.cuda = toolkits;
        t.compiler.as_mut().unwrap().version = gcc.parse().unwrap();
        t.patchelf = t.ninja.clone();
        make(&r, snapshot_release(&r), &t, &o)
    }

    fn define<'a>(p: &'a crate::plan::Plan, name: &str) -> &'a str {
        &p.defines
            .iter()
            .find(|d| d.name == name)
            .unwrap_or_else(|| panic!("no {name}"))
            .value
    }

    #[test]
    fn rtx50_gets_120a_real_and_runtime_wheels() {
        let p = plan_for(
            "rtx5060ti",
            vec![toolkit("/usr/local/cuda-13.0", "13.0.88")],
            "12.2.0",
            |_| {},
        )
        .unwrap();
        assert_eq!(define(&p, "CMAKE_CUDA_ARCHITECTURES"), "120a-real");
        assert_eq!(define(&p, "GGML_CUDA"), "ON");
        assert_eq!(define(&p, "CUDAToolkit_ROOT"), "/usr/local/cuda-13.0");
        assert!(!define(&p, "CMAKE_CUDA_FLAGS").contains("allow-unsupported"));
        let c = p.cuda.as_ref().unwrap();
        assert_eq!(c.waiver, None);
        assert_eq!(
            c.requires,
            ["nvidia-cuda-runtime>=13.0,<14", "nvidia-cublas>=13.0,<14"]
        );
        assert_eq!(c.runpath, ["$ORIGIN", "$ORIGIN/../../nvidia/cu13/lib"]);
        assert_eq!(c.min_driver.as_deref(), Some("580.65.06"));
        let Package::Wheel {
            local,
            libraries,
            requires,
            ..
        } = &p.package
        else {
            panic!()
        };
        assert_eq!(local.to_string(), "cu130.sm120a");
        assert!(libraries.contains(&"ggml-cuda".to_string()));
        assert_eq!(requires, &c.requires);
        insta::assert_json_snapshot!("cuda_plan_rtx5060ti", c);
    }

    #[test]
    fn newer_gcc_than_nvcc_accepts_gets_a_recorded_waiver() {
        let p = plan_for(
            "120",
            vec![toolkit("/usr/local/cuda-12.9", "12.9.86")],
            "15.1.0",
            |_| {},
        )
        .unwrap();
        assert!(define(&p, "CMAKE_CUDA_FLAGS").starts_with("-allow-unsupported-compiler "));
        assert!(p
            .cuda
            .as_ref()
            .unwrap()
            .waiver
            .as_ref()
            .unwrap()
            .contains("15"));
        let p = plan_for(
            "120",
            vec![toolkit("/usr/local/cuda-13.0", "13.0.88")],
            "15.1.0",
            |_| {},
        )
        .unwrap();
        assert!(
            p.cuda.as_ref().unwrap().waiver.is_none(),
            "gcc 15 is in range for 13.0"
        );
    }

    #[test]
    fn targets_the_nvcc_cannot_emit_are_refused_with_the_versions_that_can() {
        let e = plan_for(
            "120",
            vec![toolkit("/usr/local/cuda-12.6", "12.6.85")],
            "12.2.0",
            |_| {},
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("12.8") && e.contains("12.6"), "{e}");
        let e = plan_for(
            "61",
            vec![toolkit("/usr/local/cuda-13.0", "13.0.88")],
            "12.2.0",
            |_| {},
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("sm_61") && e.contains("13.0"), "{e}");
    }

    #[test]
    fn sm100_for_an_rtx50_is_warned_about() {
        let p = plan_for(
            "100",
            vec![toolkit("/usr/local/cuda-13.0", "13.0.88")],
            "12.2.0",
            |_| {},
        )
        .unwrap();
        let c = p.cuda.unwrap();
        assert_eq!(c.architectures, "100a-real");
        assert!(
            c.warnings.iter().any(|w| w.contains("not an RTX 50")),
            "{:?}",
            c.warnings
        );
    }

    #[test]
    fn cuda_flag_picks_among_several_toolkits() {
        let tks = vec![
            toolkit("/usr/local/cuda-13.0", "13.0.88"),
            toolkit("/usr/local/cuda-12.8", "12.8.93"),
        ];
        let p = plan_for("120", tks.clone(), "12.2.0", |o| {
            o.cuda_release = Some("12.8".parse().unwrap())
        })
        .unwrap();
        let c = p.cuda.unwrap();
        assert_eq!(c.release, "12.8");
        assert_eq!(
            c.requires,
            [
                "nvidia-cuda-runtime-cu12>=12.8,<13",
                "nvidia-cublas-cu12>=12.8,<13"
            ]
        );
        let e = plan_for("120", tks, "12.2.0", |o| {
            o.cuda_release = Some("12.9".parse().unwrap())
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("--cuda 12.9") && e.contains("13.0.88"), "{e}");
        let e = plan_for("120", vec![], "12.2.0", |_| {})
            .unwrap_err()
            .to_string();
        assert!(e.contains("no nvcc found"), "{e}");
    }

    /// `toolkit`, given with `--cuda-path`.
    fn given(root: &str, nvcc_version: &str) -> Toolkit {
        Toolkit {
            cuda_path_flag: true,
            found_by: "--cuda-path".into(),
            ..toolkit(root, nvcc_version)
        }
    }

    /// `toolkit`, offered from the pinned wheels (not installed on this machine).
    fn offer(release: &str, nvcc_version: &str) -> Toolkit {
        let origin = Origin::PinnedSet {
            file: format!("toolchains/cuda-{release}.toml"),
            sha256: "ab".repeat(32).parse().unwrap(),
        };
        Toolkit {
            origin,
            found_by: "pinned wheels".into(),
            ..toolkit(&format!("/cache/cuda/{nvcc_version}"), nvcc_version)
        }
    }

    #[test]
    fn cuda_path_is_binding_and_its_refusal_says_what_it_emits_and_what_to_use() {
        // A 12.6 for sm_120: refused, not swapped for the 13.0 that could be provisioned.
        let e = plan_for(
            "120",
            vec![given("/opt/cuda-12.6", "12.6.85"), offer("13.0", "13.0.88")],
            "12.2.0",
            |_| {},
        )
        .unwrap_err()
        .to_string();
        for want in [
            "--cuda-path /opt/cuda-12.6: nvcc 12.6.85 at /opt/cuda-12.6/bin/nvcc cannot build --arch 120",
            "CUDA 12.6 cannot emit sm_120a: needs CUDA >= 12.8",
            "nvcc 12.6 emits at most sm_50 to sm_90",
            "no other is tried",
            "use CUDA 12.8, 12.9, 13.0, 13.1 or 13.2",
            "`cargo xtask toolchains install cuda 13.0`",
        ] {
            assert!(e.contains(want), "{want}: {e}");
        }
        // A 12.8 for sm_121 (GB10): the same, with 12.8's own targets.
        let e = plan_for(
            "121",
            vec![
                given("/opt/cuda-12.8", "12.8.93"),
                toolkit("/usr/local/cuda-13.0", "13.0.88"),
            ],
            "12.2.0",
            |_| {},
        )
        .unwrap_err()
        .to_string();
        for want in [
            "--cuda-path /opt/cuda-12.8: nvcc 12.8.93",
            "needs CUDA >= 12.9",
            "nvcc 12.8 emits sm_50 to sm_120 (",
            "use CUDA 12.9, 13.0, 13.1 or 13.2",
        ] {
            assert!(e.contains(want), "{want}: {e}");
        }
        // --cuda naming another release than the toolkit given: both are binding, so they disagree.
        let e = plan_for(
            "120",
            vec![
                given("/opt/cuda-13.1", "13.1.115"),
                toolkit("/usr/local/cuda-13.0", "13.0.88"),
            ],
            "12.2.0",
            |o| o.cuda_release = Some("13.0".parse().unwrap()),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains(
                "--cuda 13.0 and --cuda-path /opt/cuda-13.1 (nvcc 13.1.115, CUDA 13.1) disagree"
            ),
            "{e}"
        );
        // One that can: used, even after another in the list.
        let p = plan_for(
            "120",
            vec![
                toolkit("/usr/local/cuda-13.1", "13.1.115"),
                given("/opt/cuda-13.0", "13.0.88"),
            ],
            "12.2.0",
            |_| {},
        )
        .unwrap();
        let c = p.cuda.unwrap();
        assert_eq!(
            (c.root.as_str(), c.release.as_str()),
            ("/opt/cuda-13.0", "13.0")
        );
        assert_eq!(c.skipped.len(), 1);
        assert_eq!(c.skipped[0].reason, "--cuda-path /opt/cuda-13.0 was given");
    }

    #[test]
    fn cuda_release_is_binding_and_its_refusal_names_the_releases_that_can() {
        let tks = vec![
            toolkit("/usr/local/cuda-12.8", "12.8.93"),
            offer("13.0", "13.0.88"),
            offer("13.1", "13.1.115"),
        ];
        let e = plan_for("121", tks, "12.2.0", |o| {
            o.cuda_release = Some("12.8".parse().unwrap())
        })
        .unwrap_err()
        .to_string();
        for want in [
            "--cuda 12.8: nvcc 12.8.93 at /usr/local/cuda-12.8/bin/nvcc cannot build --arch 121",
            "needs CUDA >= 12.9",
            "nvcc 12.8 emits sm_50 to sm_120",
            "ask for --cuda 13.0 or 13.1",
            "or leave --cuda out",
        ] {
            assert!(e.contains(want), "{want}: {e}");
        }
        // Nothing here can: the support table says which release to get.
        let e = plan_for(
            "121",
            vec![toolkit("/usr/local/cuda-12.8", "12.8.93")],
            "12.2.0",
            |o| o.cuda_release = Some("12.8".parse().unwrap()),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains(
                "use CUDA 12.9, 13.0, 13.1 or 13.2 (CUDA 13.0 can come from the package index"
            ),
            "{e}"
        );
    }

    #[test]
    fn skipped_toolkits_are_named_with_their_reason_but_not_hashed() {
        let tks = vec![
            toolkit("/usr/local/cuda-12.8", "12.8.93"),
            toolkit("/usr/local/cuda-12.9", "12.9.86"),
            toolkit("/usr/local/cuda-13.0", "13.0.88"),
            offer("13.1", "13.1.115"),
        ];
        let p = plan_for("121", tks.clone(), "12.2.0", |_| {}).unwrap();
        let c = p.cuda.as_ref().unwrap();
        assert_eq!(c.release, "12.9");
        let skipped: Vec<(&str, &str)> = c
            .skipped
            .iter()
            .map(|s| (s.root.as_str(), s.reason.as_str()))
            .collect();
        assert_eq!(
            skipped.len(),
            2,
            "the pinned offer was not found here: not listed: {skipped:#?}"
        );
        assert_eq!(
            skipped[0],
            (
                "/usr/local/cuda-12.8",
                "CUDA 12.8 cannot emit sm_121a: needs CUDA >= 12.9 (12.9, 13.0, 13.1, 13.2 can)"
            )
        );
        assert_eq!(skipped[1].0, "/usr/local/cuda-13.0");
        assert!(skipped[1].1.starts_with("found after the one used (nvcc 12.9.86 at /usr/local/cuda-12.9, found by test); give --cuda-path /usr/local/cuda-13.0"), "{skipped:#?}");
        assert_eq!(c.skipped[0].nvcc.to_string(), "12.8.93");
        // Printed as warnings by plan/wheel/build; in the plan JSON.
        let w = crate::commands::build::plan_warnings(&p);
        assert!(w.contains(&"CUDA toolkit skipped: nvcc 12.8.93 at /usr/local/cuda-12.8 (found by test): CUDA 12.8 cannot emit sm_121a: needs CUDA >= 12.9 (12.9, 13.0, 13.1, 13.2 can)".to_string()), "{w:#?}");
        let json = serde_json::to_value(&p).unwrap();
        assert_eq!(json["cuda"]["skipped"][0]["root"], "/usr/local/cuda-12.8");
        // What else is installed changes neither the hash nor what the artifact records.
        let alone = plan_for(
            "121",
            vec![toolkit("/usr/local/cuda-12.9", "12.9.86")],
            "12.2.0",
            |_| {},
        )
        .unwrap();
        assert!(alone.cuda.as_ref().unwrap().skipped.is_empty());
        assert_eq!(p.hash(), alone.hash());
        assert_eq!(p.recorded(), alone.recorded());
        assert!(
            serde_json::to_value(alone.cuda.as_ref().unwrap())
                .unwrap()
                .get("skipped")
                .is_none(),
            "not written when empty"
        );
        // --cuda: the other releases are skipped for that reason.
        let p = plan_for("120", tks, "12.2.0", |o| {
            o.cuda_release = Some("13.0".parse().unwrap())
        })
        .unwrap();
        let c = p.cuda.unwrap();
        assert_eq!(c.root, "/usr/local/cuda-13.0");
        assert_eq!(
            c.skipped
                .iter()
                .map(|s| s.reason.as_str())
                .collect::<Vec<_>>(),
            [
                "not CUDA 13.0 (--cuda 13.0 was given)",
                "not CUDA 13.0 (--cuda 13.0 was given)"
            ]
        );
    }

    /// A CUDA install as the Windows installer lays it out; nvcc's version output is recorded.
    fn windows_toolkit(release: &str, nvcc_fixture: &str) -> Toolkit {
        let root = format!(r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v{release}");
        let out = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../tests/fixtures/toolchains")
                .join(nvcc_fixture),
        )
        .unwrap();
        let version = NvccVersion::from_nvcc_output(&out).unwrap();
        Toolkit {
            nvcc: format!(r"{root}\bin\nvcc.exe").into(),
            cuobjdump: Some((
                format!(r"{root}\bin\cuobjdump.exe").into(),
                version.nvcc.to_string().parse().unwrap(),
            )),
            root: root.into(),
            version,
            origin: Origin::System,
            found_by: "CUDA_PATH".into(),
            cuda_path_flag: false,
        }
    }

    /// A fixed release, not the newest: the snapshots stay put when a recipe gains a release.
    fn snapshot_release(r: &Recipe) -> &crate::recipe::Release {
        r.release(Some(&"0.3.36".parse().unwrap())).unwrap()
    }

    fn windows_plan(
        toolkit: Toolkit,
        host: crate::detect::toolchain::MsvcToolsetEnv,
        others: Vec<crate::detect::toolchain::MsvcToolsetEnv>,
    ) -> crate::plan::Plan {
        use crate::plan::tests::fake_windows_tools;
        let r = Recipe::find(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("../recipes"),
            "llama-cpp-python",
        )
        .unwrap();
        let mut o = opts(&["311"]);
        o.accelerator = "120".parse::<Accelerator>().unwrap();
        let mut t = fake_windows_tools(host, others);
        t.cuda = vec![toolkit];
        make(&r, snapshot_release(&r), &t, &o).unwrap()
    }

    /// What the host compiler policy decided and everything it touched.
    fn policy_view(p: &crate::plan::Plan) -> serde_json::Value {
        let c = p.cuda.as_ref().unwrap();
        let env = |n: &str| {
            p.env
                .iter()
                .find(|e| e.name == n)
                .map(|e| serde_json::json!([e.value, e.reason]))
        };
        serde_json::json!({
            "cxx": p.tools.cxx,
            "msvc": p.tools.msvc,
            "host_policy": c.host_policy,
            "waiver": c.waiver,
            "flags": c.flags,
            "CMAKE_CUDA_FLAGS": define(p, "CMAKE_CUDA_FLAGS"),
            "CMAKE_CUDA_HOST_COMPILER": define(p, "CMAKE_CUDA_HOST_COMPILER"),
            "CMAKE_CXX_COMPILER": define(p, "CMAKE_CXX_COMPILER"),
            "VCToolsVersion": env("VCToolsVersion"),
        })
    }

    #[test]
    fn windows_cuda_13_0_with_vs2026_switches_to_the_installed_14_44_toolset() {
        use crate::plan::tests::{vs2022_14_29, vs2026_14_44, vs2026_14_50};
        let p = windows_plan(
            windows_toolkit("13.0", "nvcc-13.0.88-version.txt"),
            vs2026_14_50(),
            vec![vs2026_14_44(), vs2022_14_29()],
        );
        let c = p.cuda.as_ref().unwrap();
        assert!(
            c.host_policy
                .starts_with("use MSVC toolset 14.44.35207: MSVC 19.50.35717 (_MSC_VER 1950)"),
            "{}",
            c.host_policy
        );
        assert_eq!(c.waiver, None);
        let cl = r"C:\Program Files\Microsoft Visual Studio\18\Community\VC\Tools\MSVC\14.44.35207\bin\HostX64\x64\cl.exe";
        assert_eq!(
            (
                define(&p, "CMAKE_CXX_COMPILER"),
                define(&p, "CMAKE_CUDA_HOST_COMPILER")
            ),
            (cl, cl)
        );
        assert_eq!(
            (p.tools.cxx.path.as_str(), p.tools.cxx.version.to_string()),
            (cl, "19.44.35211".into())
        );
        let flags = define(&p, "CMAKE_CUDA_FLAGS");
        assert_eq!(flags, "-D_WINDOWS -Xcompiler=/EHsc -Xcompiler=/Zc:preprocessor -objtemp -Xcompiler=/Brepro -Xcompiler=/d1trimfile:${SRC}");
        let env = |n: &str| p.env.iter().find(|e| e.name == n).unwrap();
        assert_eq!(env("VCToolsVersion").value, "14.44.35207");
        assert_eq!(
            env("INCLUDE").reason,
            "from vcvars64.bat -vcvars_ver=14.44 (Visual Studio Community 2026)"
        );
        assert!(env("LIB").value.contains(r"MSVC\14.44.35207\lib\x64"));
        assert_eq!(c.launcher, None);
        assert!(c.runpath.is_empty());
        assert!(
            c.warnings.iter().any(|w| w.contains("--frandom-seed")),
            "{:?}",
            c.warnings
        );
        assert_eq!(p.tools.patchelf, None);
        let json = serde_json::to_string(&p).unwrap();
        for linux in [
            "ffile-prefix-map",
            "${REPO}/toolchains/nvcc-seed.sh",
            "$ORIGIN",
            "LC_ALL",
            "/usr/bin",
        ] {
            assert!(!json.contains(linux), "{linux} in a Windows plan");
        }
        insta::assert_json_snapshot!("windows_cuda_plan_use_toolset", p);
    }

    #[test]
    fn windows_without_an_in_range_toolset_gets_a_recorded_waiver() {
        use crate::plan::tests::vs2026_14_50;
        let p = windows_plan(
            windows_toolkit("13.0", "nvcc-13.0.88-version.txt"),
            vs2026_14_50(),
            vec![],
        );
        let c = p.cuda.as_ref().unwrap();
        assert!(
            define(&p, "CMAKE_CUDA_FLAGS").starts_with("-allow-unsupported-compiler -D_WINDOWS ")
        );
        let w = c.waiver.as_ref().unwrap();
        assert!(
            w.contains("_MSC_VER 1950")
                && w.contains("install an in-range MSVC toolset")
                && w.contains("or use CUDA 13.2"),
            "{w}"
        );
        assert_eq!(
            crate::commands::build::plan_warnings(&p)[0],
            format!("host compiler waiver (recorded in the manifest): {w}")
        );
        insta::assert_json_snapshot!("windows_cuda_plan_waiver", policy_view(&p));
    }

    #[test]
    fn windows_in_range_injects_nothing_and_keeps_the_host_toolset() {
        use crate::plan::tests::{vs2026_14_44, vs2026_14_50};
        // CUDA 13.2 takes VS 2026: the 14.44 toolset beside it does not matter.
        let p = windows_plan(
            windows_toolkit("13.2", "nvcc-13.2.86-version.txt"),
            vs2026_14_50(),
            vec![vs2026_14_44()],
        );
        let c = p.cuda.as_ref().unwrap();
        assert_eq!(
            c.host_policy,
            "MSVC 19.50.35717 is supported by nvcc 13.2: nothing injected"
        );
        assert_eq!(c.waiver, None);
        assert!(!define(&p, "CMAKE_CUDA_FLAGS").contains("allow-unsupported"));
        assert_eq!(
            p.tools.msvc.as_ref().unwrap().toolset.to_string(),
            "14.50.35717"
        );
        insta::assert_json_snapshot!("windows_cuda_plan_in_range", policy_view(&p));
    }

    #[test]
    fn bundled_runtime_has_no_requirements_and_origin_only_runpath() {
        let p = plan_for(
            "120,121",
            vec![toolkit("/usr/local/cuda-13.1", "13.1.115")],
            "12.2.0",
            |o| o.cuda_runtime = RuntimeMode::Bundled,
        )
        .unwrap();
        let c = p.cuda.as_ref().unwrap();
        assert!(c.requires.is_empty());
        assert_eq!(c.runpath, ["$ORIGIN"]);
        assert_eq!(
            c.bundle,
            ["libcudart.so.13", "libcublas.so.13", "libcublasLt.so.13"]
        );
        assert!(
            !c.bundle.iter().any(|b| b.starts_with("libcuda.")),
            "never libcuda"
        );
        assert_eq!(c.architectures, "120a-real;121a-real");
        let Package::Wheel { local, .. } = &p.package else {
            panic!()
        };
        assert_eq!(local.to_string(), "cu131.sm120a.sm121a");
    }
}
