//! The CUDA part of a plan: which nvcc, which arch targets and why, what the
//! host compiler policy injects, and how the wheel finds the CUDA runtime.
//! Pure: takes the detected toolkits and the host platform, returns typed settings.

use crate::platform::Os;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::cuda::{self, ArchRequest, CudaVersion, HostDecision};
use crate::detect::cuda::Toolkit;
use crate::plan::error::PlanError;
use crate::plan::setting::{portable, ToolRecord};
use crate::platform::host::Origin;
use crate::platform::msvc::MsvcToolset;
use crate::platform::{Platform, ORIGIN};

/// What sccache names the host source nvcc generates (`<obj>.cudafe1.cpp` otherwise),
/// which the object keeps as its STT_FILE symbol: the seed script names it so too.
pub const SCCACHE_HOST_FILE: &str = "x_0.cudafe1.cpp";

pub use crate::cuda::pinned::{default_release, offer_order, GPU_CHECKED, PINNED_RELEASES};

/// Why a pinned release that has not passed the GPU check is a plan's toolkit.
fn unchecked_warning(release: &CudaVersion) -> String {
    format!(
        "CUDA {release} from the package index has not passed the GPU token check (that a wheel built with it gives the CPU's tokens on a GPU; passed: {}): check the artifact on a GPU before you ship it",
        crate::listed(GPU_CHECKED, "and")
    )
}

/// The cuBLAS release a CUDA release ships, where its number is not the CUDA
/// release's own: cuBLAS runs ahead (13.10 with CUDA 13.5). As NVIDIA's cuda-toolkit
/// metapackage pairs them, and as toolchains/cuda-<release>.toml pins them (a test
/// checks that the two agree). Any other release (12.x, 13.0, 13.1, whose pins are
/// cuBLAS 13.0.x and 13.1.x, or a release newer than the pins) has the CUDA release's number.
const CUBLAS_OF: &[(CudaVersion, CudaVersion)] = &[
    (CudaVersion::new(13, 2), CudaVersion::new(13, 4)),
    (CudaVersion::new(13, 3), CudaVersion::new(13, 6)),
    (CudaVersion::new(13, 4), CudaVersion::new(13, 8)),
    (CudaVersion::new(13, 5), CudaVersion::new(13, 10)),
];

/// The Requires-Dist lines of a wheel built with CUDA `release` whose runtime comes as
/// `mode` says: each runtime wheel from the release the build used, up to the next
/// major (the runtime is numbered by the CUDA release, cuBLAS on its own:
/// `cublas_release`); none where the runtime is bundled. `verify` holds a wheel's
/// METADATA to these.
pub fn runtime_requires(release: &CudaVersion, mode: RuntimeMode) -> Vec<String> {
    let major = release.major;
    match mode {
        RuntimeMode::Bundled => vec![],
        RuntimeMode::IndexWheels if major >= 13 => vec![
            format!("nvidia-cuda-runtime>={release},<{}", major + 1),
            format!("nvidia-cublas>={},<{}", cublas_release(release), major + 1),
        ],
        RuntimeMode::IndexWheels => vec![
            format!("nvidia-cuda-runtime-cu12>={release},<13"),
            format!("nvidia-cublas-cu12>={release},<13"),
        ],
    }
}

/// The oldest cuBLAS a build with CUDA `release` may run with: the one it shipped with.
fn cublas_release(release: &CudaVersion) -> CudaVersion {
    let release = release.release();
    CUBLAS_OF
        .iter()
        .find(|(cuda, _)| *cuda == release)
        .map_or(release, |(_, cublas)| *cublas)
}

/// The pinned releases oldest first, for messages: `13.0, 13.1 and 13.2` (`conj`
/// joins the last two).
pub fn pinned_list(conj: &str) -> String {
    let mut all: Vec<&str> = PINNED_RELEASES.to_vec();
    all.reverse();
    crate::listed(&all, conj)
}

/// A toolkit this machine has that the plan does not use, and why. Left out
/// of the plan hash and of the manifest ([`crate::plan::Plan::recorded`]):
/// what else is installed does not change what is built.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SkippedToolkit {
    pub root: String,
    pub nvcc: crate::versions::Version,
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
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum RuntimeMode {
    /// Depend on NVIDIA's runtime wheels from the package index (default).
    #[default]
    IndexWheels,
    /// Copy libcudart/libcublas into the wheel (`--bundle-cuda-runtime`).
    Bundled,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PlannedCuda {
    pub nvcc: ToolRecord,
    pub cuobjdump: Option<ToolRecord>,
    pub root: String,
    /// The CUDA release, `13.0`.
    pub release: CudaVersion,
    /// `CMAKE_CUDA_ARCHITECTURES`.
    pub architectures: cuda::ArchList,
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
    /// Oldest driver of the target's OS the build's code runs on: its CUDA major's
    /// minor-version compatibility floor (the support table's `[[major]]`).
    pub min_driver: Option<cuda::DriverVersion>,
    /// The local version label part: `cu130`.
    pub label: String,
    /// The toolkits found here and not used, each with the reason; not hashed
    /// nor recorded in the manifest ([`SkippedToolkit`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedToolkit>,
    /// This machine's driver and what it meant for the choice of release; none where no
    /// driver was seen (a build box) or the target is not Linux. Like `skipped`, not
    /// hashed nor recorded: the same build on another machine is the same plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub driver: Option<DriverNote>,
}

/// What this machine's NVIDIA driver said about the CUDA release ([`PlannedCuda::driver`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DriverNote {
    /// The driver seen here (NVML or nvidia-smi).
    pub version: cuda::DriverVersion,
    /// Why this release for that driver: `driver 575.64.03 runs CUDA <= 12.9: using
    /// CUDA 12.9 ...; CUDA 13.0 needs driver 580.65.06 or newer`.
    pub choice: String,
    /// Set when that driver cannot run what is built, with what to do.
    pub warning: Option<String>,
}

/// The oldest driver of `os` a build with CUDA `release` runs on: its major's
/// minor-version compatibility floor (the support table's `[[major]]`: 525.60.13 on
/// Linux and 527.41 on Windows for 12.x, 580 for 13.x), as every release of a major
/// runs its SASS there. The one floor of plans, manifests and doctor; the release's own
/// GA driver only JITs its newer PTX. `None` for a release older than the table.
pub fn driver_floor(release: &CudaVersion, os: Os) -> Option<cuda::DriverVersion> {
    let table = cuda::SupportTable::builtin();
    match table.lookup(&release.release()) {
        cuda::ReleaseMatch::Exact(_) | cuda::ReleaseMatch::Untested(_) => {
            table.driver_floor(release.major, os).cloned()
        }
        cuda::ReleaseMatch::OlderThanTable => None,
    }
}

/// The oldest driver of `os` that knows GPUs of compute capability `gpu` at all: the
/// driver of the GA toolkit of the first CUDA release that builds for it (12.0: CUDA
/// 12.8's 570.26 on Linux, 570.65 on Windows), where the table records it, else that
/// release's major floor; with that release. `None` for a GPU older than the table.
pub fn gpu_driver_floor(gpu: cuda::CudaArch, os: Os) -> Option<(CudaVersion, cuda::DriverVersion)> {
    let table = cuda::SupportTable::builtin();
    let plain = gpu.to_plain();
    let first = table.releases.iter().find(|r| r.targets.contains(&plain))?;
    if std::ptr::eq(first, table.oldest()) && !first.added.contains(&plain) {
        return None;
    }
    let ga = match os {
        Os::Linux => first.min_linux_driver.clone(),
        Os::Windows => first.min_windows_driver.clone(),
    };
    let floor = ga.or_else(|| table.driver_floor(first.cuda.major, os).cloned())?;
    Some((first.cuda, floor))
}

/// Whether this machine's Linux `driver` runs a build of CUDA `release` (a release with
/// no known floor: yes).
pub fn driver_runs(driver: &cuda::DriverVersion, release: &CudaVersion) -> bool {
    driver_floor(release, Os::Linux).is_none_or(|f| *driver >= f)
}

/// The newest release of the support table that a driver of `os` runs (`12.9` for
/// 575.64.03, `13.5` for 580.95.05, none below 525.60.13 on Linux): what a build for
/// that driver can use.
pub fn newest_release_for(driver: &cuda::DriverVersion, os: Os) -> Option<CudaVersion> {
    cuda::SupportTable::builtin()
        .releases
        .iter()
        .map(|r| r.cuda)
        .filter(|r| driver_floor(r, os).is_none_or(|f| *driver >= f))
        .max()
}

/// The newest release of the support table that `driver` runs, and the oldest newer
/// one it does not (with its floor): `(12.9, Some((13.0, 580.65.06)))` for 575.64.
fn driver_reach(
    driver: &cuda::DriverVersion,
) -> (
    Option<CudaVersion>,
    Option<(CudaVersion, cuda::DriverVersion)>,
) {
    let table = cuda::SupportTable::builtin();
    let newest = table
        .releases
        .iter()
        .map(|r| r.cuda)
        .filter(|r| driver_runs(driver, r))
        .max();
    let next = table
        .releases
        .iter()
        .map(|r| r.cuda)
        .filter(|r| newest.is_none_or(|n| *r > n) && !driver_runs(driver, r))
        .min()
        .and_then(|r| driver_floor(&r, Os::Linux).map(|f| (r, f)));
    (newest, next)
}

/// What to do when this machine's driver cannot run a build of `release`.
fn driver_fixes(driver: &cuda::DriverVersion, release: &CudaVersion) -> String {
    let floor =
        driver_floor(release, Os::Linux).map_or_else(|| "a newer one".into(), |f| f.to_string());
    let (newest, _) = driver_reach(driver);
    let rebuild = match newest {
        Some(n) if n.major < 13 => format!(
            "; or build for this driver with CUDA {n} (`--cuda {n}`): install the CUDA {n} toolkit from NVIDIA, \
             as CUDA 12 cannot come from the package index (nvidia-cuda-nvcc-cu12 holds no nvcc), \
             and give --cuda-path DIR if it is not found"
        ),
        Some(n) => format!("; or build with CUDA {n} or older (`--cuda {n}`)"),
        None => String::new(),
    };
    format!("update the NVIDIA driver to {floor} or newer{rebuild}")
}

pub struct CudaOptions<'a> {
    pub request: &'a ArchRequest,
    pub ptx: bool,
    pub release: Option<CudaVersion>,
    pub runtime: RuntimeMode,
    pub cache: &'a Path,
    /// This machine's NVIDIA driver, where one was seen and the build is for this
    /// machine's OS: without `--cuda`/`--cuda-path` the plan takes the first toolkit
    /// this driver runs.
    pub driver: Option<&'a cuda::DriverVersion>,
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
    // Why a toolkit cannot build the targets: its release first (the more basic
    // reason), then a missing target arch (detection's word).
    let cannot = |t: &Toolkit| {
        targets
            .targets()
            .iter()
            .find_map(|a| cuda::can_emit(&t.version.release, &a.arch).err())
            .map(|e| e.to_string())
            .or_else(|| t.lacks_target.clone())
    };
    // Installed toolkits are "found"; the package index's pinned ones are offers, not
    // toolkits on this disk.
    let listed = || {
        let (pinned, here): (Vec<&Toolkit>, Vec<&Toolkit>) = toolkits
            .iter()
            .partition(|t| matches!(t.origin, Origin::PinnedSet { .. }));
        let here = if here.is_empty() {
            "none installed".to_string()
        } else {
            here.iter()
                .map(|t| format!("{} at {}", t.version.nvcc, t.root.display()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if pinned.is_empty() {
            here
        } else {
            let offers: Vec<String> = pinned.iter().map(|t| t.version.nvcc.to_string()).collect();
            format!("{here}; pinned on the package index: {}", offers.join(", "))
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
            let floor = |r: &CudaVersion| {
                driver_floor(r, Os::Linux).map_or_else(String::new, |f| {
                    format!(", which runs on driver {f} or newer")
                })
            };
            let index: CudaVersion = default_release().parse().expect("static");
            let what = if rel.major < 13 {
                format!(
                    "CUDA {} cannot come from the package index (NVIDIA's nvidia-cuda-nvcc-cu12 wheels hold ptxas and libnvvm, no nvcc): install the CUDA {} toolkit from NVIDIA{}, and give --cuda-path DIR if it is not found; or leave --cuda out for CUDA {index} from the package index{} (pinned there: {})",
                    rel.major,
                    rel.release(),
                    floor(rel),
                    floor(&index),
                    pinned_list("and")
                )
            } else {
                format!(
                    "install it or point --cuda-path at it (CUDA {} can also come from the package index: `cargo xtask toolchains install cuda {}`)",
                    pinned_list("and"),
                    default_release()
                )
            };
            return Err(PlanError::Cuda(format!(
                "--cuda {rel}: no toolkit of that release here (found: {}); {what}",
                listed(),
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
        // With a driver seen here: the first toolkit that can build the targets and that
        // this driver runs; else (a driver too old for all of them) the first that can
        // build them, and the plan says the driver cannot run it.
        let runs = |t: &Toolkit| {
            opts.driver
                .is_none_or(|d| driver_runs(d, &t.version.release))
        };
        let first = toolkits.iter().find(|t| cannot(t).is_none() && runs(t));
        match first.or_else(|| toolkits.iter().find(|t| cannot(t).is_none())) {
            Some(t) => t,
            None if toolkits.is_empty() => {
                return Err(PlanError::Cuda(format!(
                    "no nvcc found (looked at --cuda-path, CUDACXX, CUDA_PATH, CUDA_HOME, PATH, /usr/local/cuda*, /opt/cuda): install CUDA 12.8 or newer, or run `cargo xtask toolchains install cuda {}`",
                    default_release()
                )))
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
                (Some(e), _) => e.clone(),
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
                nvcc: t.version.nvcc.into(),
                found_by: t.found_by.clone(),
                reason,
            }
        })
        .collect();
    Ok((chosen, skipped))
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
    let pinned = offer_order()
        .map(|r| r.parse::<CudaVersion>().expect("static"))
        .find(|r| can.contains(r));
    let index = pinned.map(|r| format!(" (CUDA {r} can come from the package index: `cargo xtask toolchains install cuda {r}`)")).unwrap_or_default();
    format!("use CUDA {}{index}", crate::listed(&can, "or"))
}

/// Why a binding choice (`--cuda-path DIR`, `--cuda X.Y`) cannot build the
/// targets: what its nvcc can emit, and what to use instead.
fn refusal(
    t: &Toolkit,
    given: &str,
    e: &str,
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
        t.lacks_target.is_none()
            && targets
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
        here.sort_unstable_by(|a, b| b.cmp(a));
        here.dedup();
        if here.is_empty() {
            format!(
                "--cuda names the release to use, so no other is tried: {}",
                use_instead(targets)
            )
        } else {
            format!("--cuda names the release to use, so no other is tried: ask for --cuda {} (found here or provisionable), or leave --cuda out", crate::listed(&here, "or"))
        }
    };
    PlanError::Cuda(format!("{head}. {instead}"))
}

/// The CUDA plan, and the MSVC toolset the host compiler policy switched to
/// (`UseToolset`): the build then runs in that toolset's environment, with its cl.exe.
/// `platform` is the detected host's (before any switch).
pub fn plan(
    toolkits: &[Toolkit],
    platform: &Platform,
    opts: &CudaOptions,
) -> Result<(PlannedCuda, Option<MsvcToolset>), PlanError> {
    let selection = opts.request.resolve(opts.ptx);
    let (tk, skipped) = choose(toolkits, opts, &selection.targets)?;
    let release = tk.version.release;
    let mut warnings: Vec<String> = selection.warnings.iter().map(|w| w.to_string()).collect();
    if matches!(tk.origin, Origin::PinnedSet { .. })
        && !GPU_CHECKED.contains(&release.to_string().as_str())
    {
        warnings.push(unchecked_warning(&release));
    }
    for t in selection.targets.targets() {
        match cuda::can_emit(&release, &t.arch) {
            Ok(cuda::EmitSupport::Known) => {}
            Ok(cuda::EmitSupport::Untested(u)) => warnings.push(format!("{u}")),
            Err(e) => {
                return Err(PlanError::CannotEmit {
                    cannot: e,
                    nvcc: tk.version.nvcc,
                    nvcc_path: tk.nvcc.clone(),
                })
            }
        }
    }
    let host = platform.host_compiler()?;
    // MSVC: every other installed toolset is a candidate when the host's is out of range.
    let toolsets = platform.other_toolsets();
    let decision = cuda::host_compiler_decision(&release, &host, &toolsets)?;
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
    flags.extend(platform.nvcc_platform_flags(|p| portable(p, opts.cache)));
    for f in cuda::extra_cuda_flags(&release, &host) {
        flags.push((f.flag, f.reason));
    }
    flags.push((
        "-objtemp".into(),
        "nvcc names its temp files after the object, not its process id, which otherwise lands in every object: byte-identical rebuilds".into(),
    ));
    flags.extend(platform.nvcc_repro_flags());

    // --frandom-seed exists from 12.9: per object, through the launcher (a shell script: not on Windows).
    // It also names the host compile's source as sccache does (see the script), so a
    // `--launcher sccache` build has the same bytes as one without.
    let launcher = (release >= CudaVersion::new(12, 9) && platform.runs_shell_launcher())
        .then(|| format!("${{REPO}}/toolchains/nvcc-seed.sh;--host-file-name={SCCACHE_HOST_FILE}"));
    warnings.extend(platform.cuda_warnings());
    let major = release.major;
    // Each runtime wheel from the release the build used, up to the next major: the
    // runtime is numbered by the CUDA release, cuBLAS on its own (`cublas_release`).
    let files = cuda::runtime::files(platform.os(), major);
    let requires = runtime_requires(&release, RuntimeMode::IndexWheels);
    let (requires, runpath, bundle) = match opts.runtime {
        RuntimeMode::IndexWheels => {
            let mut rp = vec![ORIGIN.to_string()];
            rp.extend(
                files
                    .wheel_dirs
                    .iter()
                    .map(|d| format!("{ORIGIN}/../../{d}")),
            );
            (requires, rp, vec![])
        }
        RuntimeMode::Bundled => (vec![], vec![ORIGIN.to_string()], files.libraries.clone()),
    };
    let runpath = platform.runpath(runpath);
    let mut provided = files.libraries.clone();
    provided.push(files.driver.to_string());

    let min_driver = driver_floor(&release, platform.os());
    let driver = opts
        .driver
        .filter(|_| platform.os() == crate::platform::Os::Linux)
        .map(|d| driver_note(d, tk, toolkits, opts, &selection.targets));
    let record = |p: &Path, version: crate::versions::Version| ToolRecord {
        path: portable(p, opts.cache),
        version,
        origin: tk.origin.clone(),
        kind: None,
    };
    let planned = PlannedCuda {
        nvcc: record(&tk.nvcc, tk.version.nvcc.into()),
        cuobjdump: tk.cuobjdump.as_ref().map(|(p, v)| record(p, v.clone())),
        root: portable(&tk.root, opts.cache),
        release,
        architectures: selection.targets.clone(),
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
        label: label(release),
        skipped,
        driver,
    };
    Ok((planned, switched))
}

/// Why toolkit `tk` for this machine's `driver`, and a warning where the driver cannot
/// run it (`--cuda` or `--cuda-path` named it, or nothing here is old enough).
fn driver_note(
    driver: &cuda::DriverVersion,
    tk: &Toolkit,
    toolkits: &[Toolkit],
    opts: &CudaOptions,
    targets: &cuda::ArchList,
) -> DriverNote {
    let release = tk.version.release;
    let (newest, next) = driver_reach(driver);
    let reach = match newest {
        Some(n) => format!("driver {driver} runs CUDA <= {n}"),
        None => format!("driver {driver} runs no CUDA release of the support table"),
    };
    let used = format!("CUDA {release} (nvcc {}, {})", tk.version.nvcc, tk.found_by);
    let given = if tk.cuda_path_flag {
        Some(format!("--cuda-path {}", tk.root.display()))
    } else {
        opts.release.map(|r| format!("--cuda {r}"))
    };
    if driver_runs(driver, &release) {
        // The first toolkit passed over for the driver, if any, says what needs more.
        let passed_over = toolkits
            .iter()
            .take_while(|t| !std::ptr::eq(*t, tk))
            .find(|t| {
                !driver_runs(driver, &t.version.release)
                    && targets
                        .targets()
                        .iter()
                        .all(|a| cuda::can_emit(&t.version.release, &a.arch).is_ok())
            });
        let needs = match (passed_over, &next) {
            (Some(t), _) if given.is_none() => {
                driver_floor(&t.version.release, Os::Linux).map(|f| {
                    format!(
                        "; CUDA {} ({}) needs driver {f} or newer",
                        t.version.release, t.found_by
                    )
                })
            }
            (_, Some((r, f))) => Some(format!("; CUDA {r} needs driver {f} or newer")),
            _ => None,
        };
        let how = given.map_or("using".to_string(), |g| format!("{g}:"));
        return DriverNote {
            version: driver.clone(),
            choice: format!("{reach}: {how} {used}{}", needs.unwrap_or_default()),
            warning: None,
        };
    }
    let floor =
        driver_floor(&release, Os::Linux).map_or_else(|| "a newer one".into(), |f| f.to_string());
    let why = match &given {
        Some(g) => format!("{g} was given"),
        None => format!(
            "no toolkit here or on the package index that builds --arch {} is one it runs",
            opts.request
        ),
    };
    DriverNote {
        version: driver.clone(),
        choice: format!("{reach}: {why}: using {used}"),
        warning: Some(format!(
            "this machine's NVIDIA driver {driver} cannot run what this builds (CUDA {release} needs {floor} or newer), so it is for another machine: to run it here, {}",
            driver_fixes(driver, &release)
        )),
    }
}

/// A CUDA release's part of the local version label: `cu130` for 13.0 (any patch).
pub fn label(release: crate::cuda::CudaVersion) -> String {
    format!("cu{}{}", release.major, release.minor)
}

/// The CUDA release a version's local label names, as [`label`] writes it (and as
/// other wheels do: `+cu124`): `13.0` for `0.3.16+cu130.sm120a`, `12.8` for
/// `0.3.4+cu128`. `None` without a local label or a `cuNNN` part in it (`+cpu`).
pub fn label_release(version: &str) -> Option<CudaVersion> {
    let (_, local) = version.split_once('+')?;
    local.split(['.', '-', '_']).find_map(|part| {
        let digits = part.strip_prefix("cu")?;
        if !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        // Majors from 10 have two digits: cu130 is 13.0, cu92 is 9.2.
        let split = match digits.len() {
            2 => 1,
            3.. => 2,
            _ => return None,
        };
        Some(CudaVersion::new(
            digits[..split].parse().ok()?,
            digits[split..].parse().ok()?,
        ))
    })
}

#[cfg(test)]
#[path = "cuda_tests.rs"]
pub(crate) mod tests;
