//! The verdicts, as pure rules: what a package's device code and CUDA runtime mean on
//! one GPU with one driver, and the command that fixes a bad one.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::cuda::runs::{runs_on, Runs};
use crate::cuda::{CodeKind, CudaArch, EmbeddedCode, SupportTable};
use crate::inspect::{self, FloorSource, MinDriver};
use crate::platform::Arch;
use crate::versions::driver::DriverVersion;

/// How a package fares on one GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    Natively,
    /// Only PTX covers the GPU: the driver compiles it at first load (slow), and only
    /// when the driver is at least as new as the compiler that wrote the PTX.
    PtxJit,
    /// "no kernel image is available for execution on the device".
    NoKernelImage,
    /// The package's CUDA runtime needs a newer driver than the machine's.
    DriverTooOld {
        /// The CUDA runtime, and what says so: `CUDA 13.0 (torch.version.cuda)`.
        runtime: String,
        /// The oldest driver that runs it (Linux); `None` where the table has no floor.
        needs: Option<DriverVersion>,
        /// The machine's driver; `None` when only its newest CUDA is known.
        has: Option<DriverVersion>,
    },
    CpuOnly,
    /// Its libraries are for another CPU arch than the machine that loads them: the
    /// Python checked, or every machine with the `--gpu` named (a GB10 is in an aarch64
    /// DGX Spark). Python cannot even import them.
    WrongMachine {
        /// The arch of its libraries: `x86_64`.
        built_for: String,
        /// The arch they must be: `aarch64`.
        needs: String,
        /// Whose arch that is: `this Python` (its `platform.machine()`), `every DGX Spark (GB10)`.
        of: String,
        /// The machine is another box (`--gpu`), not this one.
        elsewhere: bool,
    },
    /// The package could not be asked (torch failed to import): the error.
    Broken {
        error: String,
    },
}

impl Verdict {
    /// Whether it makes `doctor` exit 1. PTX JIT runs, slowly at first: not a problem.
    pub fn is_problem(&self) -> bool {
        !matches!(self, Verdict::Natively | Verdict::PtxJit)
    }

    /// One line, for people.
    pub fn say(&self) -> String {
        match self {
            Verdict::Natively => "runs natively".into(),
            Verdict::PtxJit => "runs only through PTX JIT (slow first load)".into(),
            Verdict::NoKernelImage => {
                "will fail: \"no kernel image is available for execution on the device\"".into()
            }
            Verdict::DriverTooOld {
                runtime,
                needs,
                has,
            } => format!(
                "driver too old for its CUDA runtime, {runtime}: needs {}, this machine has {}",
                needs
                    .as_ref()
                    .map(|n| format!("driver >= {n}"))
                    .unwrap_or_else(|| "a newer driver".to_string()),
                has.as_ref()
                    .map(|h| h.to_string())
                    .unwrap_or_else(|| "an older one".into())
            ),
            Verdict::CpuOnly => "CPU-only build: it will not use the GPU".into(),
            Verdict::WrongMachine {
                built_for,
                needs,
                of,
                ..
            } => format!("will not load: its libraries are {built_for} code, and {of} is {needs}"),
            Verdict::Broken { error } => format!("cannot be checked: {error}"),
        }
    }
}

/// The driver the checked GPU runs with: this machine's, or unknown (`--gpu`: another box).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DriverFacts {
    pub version: Option<DriverVersion>,
    /// The newest CUDA major it runs (`13` for "CUDA Version: 13.0").
    pub max_cuda_major: Option<u32>,
    /// Whose driver: Windows' on Windows and WSL2, whose floors apply.
    pub os: crate::platform::Os,
}

impl Runs {
    fn verdict(self) -> Verdict {
        match self {
            Runs::Natively => Verdict::Natively,
            Runs::PtxJit => Verdict::PtxJit,
            Runs::No => Verdict::NoKernelImage,
        }
    }
}

/// Whether a runtime of CUDA `major` runs on `driver` (`None`: cannot tell, so yes).
fn driver_too_old(cuda: &str, major: u32, driver: &DriverFacts) -> Option<Verdict> {
    let needs = SupportTable::builtin()
        .driver_floor(major, driver.os)
        .cloned();
    let too_old = match (&driver.version, &needs, driver.max_cuda_major) {
        (Some(has), Some(needs), _) => has < needs,
        (_, _, Some(max)) => major > max,
        _ => false,
    };
    too_old.then(|| Verdict::DriverTooOld {
        runtime: format!("CUDA {cuda} (torch.version.cuda)"),
        needs,
        has: driver.version.clone(),
    })
}

/// Whether the package's libraries are for the CPU that must load them: this Python's
/// (`platform.machine()`), and every machine with the `--gpu` named (`only_on`). `None`
/// when they are, or when nothing says (no arch read, an unknown machine).
pub fn wrong_machine(
    report: &inspect::Report,
    python: Option<Arch>,
    only_on: Option<(Arch, &'static str)>,
) -> Option<Verdict> {
    let built: Vec<Arch> = report.arches().into_iter().collect();
    let wrong = |needs: Arch, of: String, elsewhere: bool| {
        (!built.is_empty() && built != [needs]).then(|| Verdict::WrongMachine {
            built_for: crate::listed(&built, "and"),
            needs: needs.to_string(),
            of,
            elsewhere,
        })
    };
    // `--gpu gb10` checks the package for another box: that box's arch decides.
    match only_on {
        Some((a, machine)) => wrong(a, format!("every {machine}"), true),
        None => python.and_then(|a| wrong(a, "this Python".to_string(), false)),
    }
}

/// The driver floor of an installed package: what `inspect` read (our manifest's
/// `plan.cuda.min_driver`, else its CUDA runtime major's compatibility floor), where the
/// manifest did not say, the floor of the CUDA release its version's local label names
/// (`0.3.16+cu130.sm120a`: 13.0, 580.65.06), from the one support table.
pub fn driver_floor(read: Option<&MinDriver>, version: Option<&str>) -> Option<MinDriver> {
    let from_label = || {
        let release = crate::plan::cuda::label_release(version?)?;
        Some(MinDriver {
            linux: crate::plan::cuda::driver_floor(&release, crate::platform::Os::Linux)?,
            windows: crate::plan::cuda::driver_floor(&release, crate::platform::Os::Windows)?,
            from: format!(
                "its version's label {} (CUDA {release}; no llama-forge manifest)",
                crate::plan::cuda::label(release)
            ),
            source: FloorSource::VersionLabel,
        })
    };
    match read {
        Some(m) if m.source == FloorSource::Manifest => Some(m.clone()),
        _ => from_label().or_else(|| read.cloned()),
    }
}

/// A package read by `inspect` (llama_cpp): CPU-only, its driver floor (`floor`, from
/// [`driver_floor`]), then its device code on `gpu`.
pub fn artifact(
    report: &inspect::Report,
    floor: Option<&MinDriver>,
    gpu: CudaArch,
    driver: &DriverFacts,
) -> Verdict {
    let Some(runs) = report.runs_on(gpu) else {
        return Verdict::CpuOnly;
    };
    if let (Some(has), Some(min)) = (&driver.version, floor) {
        if has < min.for_os(driver.os) {
            return Verdict::DriverTooOld {
                runtime: min.from.clone(),
                needs: Some(min.for_os(driver.os).clone()),
                has: Some(has.clone()),
            };
        }
    }
    runs.verdict()
}

/// bitsandbytes ships a library per CUDA release (`libbitsandbytes_cuda128.so`) and
/// loads the one for torch's CUDA: that one decides when it is there, else the best
/// of them. The CUDA runtime is torch's, checked with torch.
pub fn bitsandbytes(report: &inspect::Report, torch_cuda: Option<&str>, gpu: CudaArch) -> Verdict {
    let with_code: Vec<&inspect::Library> = report
        .libraries
        .iter()
        .filter(|l| !l.codes.is_empty())
        .collect();
    if with_code.is_empty() {
        return Verdict::CpuOnly;
    }
    let tag = torch_cuda.map(|c| format!("cuda{}", c.replace('.', "")));
    let matching: Vec<&&inspect::Library> = with_code
        .iter()
        .filter(|l| {
            tag.as_ref().is_some_and(|t| {
                let base = l.path.rsplit('/').next().unwrap_or(&l.path);
                base.starts_with(&format!("libbitsandbytes_{t}."))
            })
        })
        .collect();
    let chosen: Vec<&inspect::Library> = if matching.is_empty() {
        with_code
    } else {
        matching.into_iter().copied().collect()
    };
    chosen
        .iter()
        .map(|l| runs_on(&l.codes, gpu.to_plain()))
        .min()
        .unwrap_or(Runs::No)
        .verdict()
}

/// torch's arch list (`sm_90`, `compute_90`) as device code.
pub fn torch_codes(arch_list: &[String]) -> BTreeSet<EmbeddedCode> {
    arch_list
        .iter()
        .filter_map(|a| {
            let kind = if a.starts_with("compute_") {
                CodeKind::Ptx
            } else {
                CodeKind::Sass
            };
            Some(EmbeddedCode {
                kind,
                arch: a.parse().ok()?,
            })
        })
        .collect()
}

/// torch: CPU-only without `torch.version.cuda`; its CUDA against the driver; its
/// arch list by the same rules as device code read from a library.
pub fn torch(t: &super::python::Torch, gpu: CudaArch, driver: &DriverFacts) -> Verdict {
    if let Some(e) = &t.error {
        return Verdict::Broken { error: e.clone() };
    }
    let Some(cuda) = &t.cuda else {
        return Verdict::CpuOnly;
    };
    let major = cuda.split('.').next().and_then(|m| m.parse::<u32>().ok());
    if let Some(v) = major.and_then(|m| driver_too_old(cuda, m, driver)) {
        return v;
    }
    runs_on(&torch_codes(&t.arch_list), gpu.to_plain()).verdict()
}

/// What the fix commands need to know.
#[derive(Debug, Clone)]
pub struct FixContext {
    /// The Python checked, as given.
    pub python: String,
    /// `312`
    pub py: String,
    pub gpu: CudaArch,
    /// What `--arch` the fix names: the GPU's name where it picks the machine's arch
    /// (`gb10`: an aarch64 wheel), else its compute capability (`120`).
    pub arch_arg: String,
    pub driver: DriverFacts,
}

/// The PyTorch index for a GPU and driver: cu130 where the driver runs CUDA 13, else
/// cu128 (the first with Blackwell, sm_100/sm_120; runs on any CUDA 12 driver,
/// >= 525.60.13 on Linux).
pub fn torch_index(driver: &DriverFacts) -> &'static str {
    let cuda13 = SupportTable::builtin().driver_floor(13, driver.os);
    let runs_13 = match (&driver.version, cuda13) {
        (Some(v), Some(floor)) => v >= floor,
        _ => driver.max_cuda_major.is_some_and(|m| m >= 13),
    };
    if runs_13 {
        "cu130"
    } else {
        "cu128"
    }
}

/// The file pattern of the one py3 wheel `cargo xtask wheel llama-cpp-python --arch
/// {arch} --cuda {cuda}` makes (its flavour from the same parts as the plan's label,
/// at the default CPU baseline), of any platform or one of `machine`:
/// `llama_cpp_python-*+cu135.sm120a-py3-none-*.whl`.
fn our_wheel(arch: &str, cuda: &str, machine: Option<Arch>) -> String {
    use crate::request::{Accelerator, CpuBaseline};
    let label = match (
        arch.parse::<Accelerator>(),
        cuda.parse::<crate::cuda::CudaVersion>(),
    ) {
        (Ok(Accelerator::Cuda(r)), Ok(release)) => {
            let targets = r.resolve(false).targets;
            crate::plan::Plan::label_of(
                Some((&crate::plan::cuda::label(release), &targets)),
                CpuBaseline::default(),
            )
        }
        _ => crate::plan::Plan::label_of(None, CpuBaseline::default()),
    };
    crate::tags::wheel_pattern(
        &crate::tags::normalize_distribution("llama-cpp-python"),
        &label,
        crate::tags::PythonTag::Py3,
        machine,
    )
}

/// The second fix for a package too new for this machine's `driver`: a build with the
/// newest CUDA release that driver runs (from the support table's floors), its
/// commands from `commands(release)`. CUDA 12 comes only from NVIDIA's installer, so
/// the line before the commands says to install it first. A driver older than every
/// release, or a newest release that cannot build for `gpu`: why no build runs here.
fn build_for_driver(
    driver: &DriverVersion,
    os: crate::platform::Os,
    gpu: CudaArch,
    commands: impl Fn(&str) -> [String; 2],
) -> Vec<String> {
    let table = SupportTable::builtin();
    if let Some((first, floor)) = crate::plan::cuda::gpu_driver_floor(gpu, os) {
        if *driver < floor {
            return vec![format!(
                "no build runs on driver {driver} with this GPU: the first NVIDIA driver for compute capability {}.{} is {floor} (CUDA {first}'s, the first release that builds for it)",
                gpu.major(),
                gpu.minor()
            )];
        }
    }
    let Some(newest) = crate::plan::cuda::newest_release_for(driver, os) else {
        let oldest = table.oldest();
        let first = if oldest.added.contains(&gpu) {
            format!(
                " and the first that builds for compute capability {}.{}",
                gpu.major(),
                gpu.minor()
            )
        } else {
            String::new()
        };
        let floor = crate::plan::cuda::driver_floor(&oldest.cuda, os)
            .map(|f| format!(", needs driver {f} or newer"))
            .unwrap_or_default();
        return vec![format!(
            "no build of this tool runs on driver {driver}: CUDA {}, the oldest release it builds with{first}{floor}",
            oldest.cuda
        )];
    };
    if crate::cuda::can_emit(&newest, &gpu).is_err() {
        return vec![format!(
            "no build for this GPU runs on driver {driver}: CUDA {newest}, the newest release it runs, cannot build for compute capability {}.{}",
            gpu.major(),
            gpu.minor()
        )];
    }
    let how = if newest.major < 13 {
        format!(
            "; CUDA {newest} cannot come from the package index (NVIDIA's nvidia-cuda-nvcc-cu{} wheels hold no nvcc): install the CUDA {newest} toolkit from NVIDIA first; `--cuda {newest}` then finds it (or add --cuda-path DIR)",
            newest.major
        )
    } else {
        String::new()
    };
    let mut v = vec![format!(
        "or build for this driver with CUDA {newest}, the newest release driver {driver} runs{how}:"
    )];
    v.extend(commands(&newest.to_string()));
    v
}

/// The commands that fix a bad verdict of `package` (`llama_cpp`, `torch`,
/// `bitsandbytes`); `None` when there is nothing to fix or no command we know.
pub fn fix(package: &str, verdict: &Verdict, cx: &FixContext) -> Option<Vec<String>> {
    let python = &cx.python;
    let arch = &cx.arch_arg;
    // Our wheel is built with a named CUDA release, so its flavour (the local version
    // label) is known and the install command matches that one py3 wheel only: dist/
    // may hold other builds, and pip refuses two candidates (or takes the highest label).
    let ours = |cuda: &str| {
        (
            format!("cargo xtask wheel llama-cpp-python --arch {arch} --cuda {cuda}"),
            our_wheel(arch, cuda, None),
        )
    };
    let (wheel, pattern) = ours(crate::plan::cuda::default_release());
    let install =
        |pattern: &str| format!("{python} -m pip install --force-reinstall dist/{pattern}");
    let install_ours = install(&pattern);
    let torch_cmd = |index: &str| {
        format!(
            "{python} -m pip install --force-reinstall torch --index-url https://download.pytorch.org/whl/{index}"
        )
    };
    let update_driver = |needs: &Option<DriverVersion>| match needs {
        Some(n) if n.is_branch() => format!("update the NVIDIA driver to {n} or newer"),
        Some(n) => format!(
            "update the NVIDIA driver to {n} or newer (driver branch {} or newer)",
            n.branch()
        ),
        None => "update the NVIDIA driver".to_string(),
    };
    Some(match (package, verdict) {
        (_, Verdict::Natively | Verdict::Broken { .. }) => return None,
        ("llama_cpp", Verdict::DriverTooOld { needs, has, .. }) => {
            let mut v = vec![update_driver(needs)];
            if let Some(has) = has.as_ref().or(cx.driver.version.as_ref()) {
                v.extend(build_for_driver(has, cx.driver.os, cx.gpu, |cuda| {
                    let (wheel, pattern) = ours(cuda);
                    [wheel, install(&pattern)]
                }));
            }
            v
        }
        // Another machine's arch (`--gpu gb10` checked from an x86-64 box): build for
        // it (`--arch gb10` makes an aarch64 wheel) and install it there.
        (
            "llama_cpp",
            Verdict::WrongMachine {
                needs,
                elsewhere: true,
                ..
            },
        ) => vec![
            wheel,
            format!(
                "on the {needs} machine: python -m pip install --force-reinstall {}",
                our_wheel(
                    arch,
                    crate::plan::cuda::default_release(),
                    needs.parse().ok()
                )
            ),
        ],
        ("llama_cpp", _) => vec![wheel, install_ours],
        ("torch", Verdict::DriverTooOld { needs, .. }) => {
            let mut v = vec![update_driver(needs)];
            if cx.driver.max_cuda_major == Some(12) {
                v.push(format!(
                    "or a torch for this driver: {}",
                    torch_cmd("cu128")
                ));
            }
            v
        }
        ("torch", _) => vec![torch_cmd(torch_index(&cx.driver))],
        ("bitsandbytes", _) => vec![format!("{python} -m pip install -U bitsandbytes")],
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::python::Torch;

    fn cc(s: &str) -> CudaArch {
        s.parse().unwrap()
    }
    fn drv(v: &str, max: u32) -> DriverFacts {
        DriverFacts {
            version: Some(v.parse().unwrap()),
            max_cuda_major: Some(max),
            os: crate::platform::Os::Linux,
        }
    }
    fn t(cuda: Option<&str>, archs: &[&str]) -> Torch {
        Torch {
            version: Some("2.7.0".into()),
            cuda: cuda.map(str::to_string),
            arch_list: archs.iter().map(|a| a.to_string()).collect(),
            error: None,
        }
    }

    /// The torch rules, a row per case: (torch CUDA, arch list, GPU, driver, verdict).
    #[test]
    fn torch_verdicts() {
        let sm90 = ["sm_50", "sm_80", "sm_86", "sm_90"];
        let cu128 = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"];
        let none = DriverFacts::default();
        let rows: Vec<(Torch, &str, DriverFacts, &str)> = vec![
            (
                t(Some("12.6"), &sm90),
                "120",
                none.clone(),
                "no_kernel_image",
            ),
            (t(Some("12.6"), &sm90), "90", none.clone(), "natively"),
            (t(Some("12.8"), &cu128), "120", none.clone(), "natively"),
            (t(Some("12.8"), &cu128), "121", none.clone(), "natively"),
            (
                t(Some("12.6"), &["sm_90", "compute_90"]),
                "120",
                none.clone(),
                "ptx_jit",
            ),
            (t(None, &[]), "120", none.clone(), "cpu_only"),
            (
                t(Some("13.0"), &cu128),
                "120",
                drv("570.133.07", 12),
                "driver_too_old",
            ),
            (
                t(Some("13.0"), &cu128),
                "120",
                drv("580.95.05", 13),
                "natively",
            ),
            (
                t(Some("12.8"), &cu128),
                "120",
                drv("520.61.05", 12),
                "driver_too_old",
            ),
            // Only the newest CUDA known (no driver version): the major decides.
            (
                t(Some("13.0"), &cu128),
                "120",
                DriverFacts {
                    version: None,
                    max_cuda_major: Some(12),
                    os: crate::platform::Os::Linux,
                },
                "driver_too_old",
            ),
        ];
        for (torch, gpu, driver, want) in rows {
            let v = super::torch(&torch, cc(gpu), &driver);
            let got = serde_json::to_value(&v).unwrap()["verdict"].clone();
            assert_eq!(got, want, "{torch:?} on {gpu} with {driver:?}: {v:?}");
        }
        let broken = Torch {
            error: Some("ImportError: libcudnn.so.9".into()),
            ..t(Some("12.8"), &cu128)
        };
        assert!(super::torch(&broken, cc("120"), &none).is_problem());
        assert!(!Verdict::PtxJit.is_problem());
    }

    #[test]
    fn fix_commands() {
        let cx = |gpu: &str, driver: DriverFacts| FixContext {
            python: "/v/bin/python".into(),
            py: "312".into(),
            gpu: cc(gpu),
            arch_arg: gpu.into(),
            driver,
        };
        assert_eq!(
            fix("llama_cpp", &Verdict::NoKernelImage, &cx("90", DriverFacts::default())).unwrap(),
            [
                "cargo xtask wheel llama-cpp-python --arch 90 --cuda 13.5",
                "/v/bin/python -m pip install --force-reinstall dist/llama_cpp_python-*+cu135.sm90-py3-none-*.whl"
            ]
        );
        assert_eq!(
            fix("torch", &Verdict::NoKernelImage, &cx("120", DriverFacts::default())).unwrap(),
            ["/v/bin/python -m pip install --force-reinstall torch --index-url https://download.pytorch.org/whl/cu128"]
        );
        assert_eq!(
            fix("torch", &Verdict::CpuOnly, &cx("120", drv("580.95.05", 13))).unwrap(),
            ["/v/bin/python -m pip install --force-reinstall torch --index-url https://download.pytorch.org/whl/cu130"]
        );
        let old = Verdict::DriverTooOld {
            runtime: "CUDA 13.0 (torch.version.cuda)".into(),
            needs: Some("580".parse().unwrap()),
            has: Some("570.133.07".parse().unwrap()),
        };
        assert_eq!(
            fix("torch", &old, &cx("120", drv("570.133.07", 12))).unwrap(),
            [
                "update the NVIDIA driver to 580 or newer",
                "or a torch for this driver: /v/bin/python -m pip install --force-reinstall torch --index-url https://download.pytorch.org/whl/cu128"
            ]
        );
        assert_eq!(
            fix(
                "bitsandbytes",
                &Verdict::NoKernelImage,
                &cx("120", DriverFacts::default())
            )
            .unwrap(),
            ["/v/bin/python -m pip install -U bitsandbytes"]
        );
        assert_eq!(
            fix(
                "torch",
                &Verdict::Natively,
                &cx("120", DriverFacts::default())
            ),
            None
        );
        // GB10's wheel: --arch 121.
        assert!(fix(
            "llama_cpp",
            &Verdict::CpuOnly,
            &cx("121", DriverFacts::default())
        )
        .unwrap()[0]
            .contains("--arch 121"));
    }
}
