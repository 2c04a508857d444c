//! This machine's GPUs and driver: NVML (the driver's `libnvidia-ml`, loaded at run
//! time) first, `nvidia-smi` (through the process seam) when NVML is absent or fails.
//! Under WSL2 both live in `/usr/lib/wsl/lib`, which is searched after the defaults.
//! `doctor` reports them; `--arch auto` ([`resolve_auto`]) builds for them.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::cuda::{describe_cc, CudaArch};
use crate::process::{Command, Processes};
use crate::versions::driver::DriverVersion;

/// One GPU as the driver reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GpuInfo {
    /// `NVIDIA GeForce RTX 5090`
    pub name: String,
    /// `12.0`
    pub compute_capability: String,
    /// Total memory; `None` where the driver reports none (GB10: unified memory, `[N/A]`).
    pub memory_mib: Option<u64>,
    #[serde(skip)]
    pub arch: CudaArch,
}

impl GpuInfo {
    /// `NVIDIA GeForce RTX 5090, compute capability 12.0 (RTX 50 series / ...), 32607 MiB`
    pub fn describe(&self) -> String {
        let family = describe_cc(self.arch)
            .map(|d| format!(" ({d})"))
            .unwrap_or_default();
        let memory = match self.memory_mib {
            Some(m) => format!("{m} MiB"),
            None => "memory not reported (unified memory)".to_string(),
        };
        format!(
            "{}, compute capability {}{family}, {memory}",
            self.name, self.compute_capability
        )
    }
}

/// What the driver said, and who said it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Machine {
    /// `nvml (libnvidia-ml.so.1)` or `nvidia-smi (/usr/bin/nvidia-smi)`.
    pub source: String,
    pub gpus: Vec<GpuInfo>,
    pub driver: Option<DriverVersion>,
    /// The newest CUDA the driver runs: `13.0`.
    pub max_cuda: Option<String>,
    /// Whose driver it is: Windows' on Windows and under WSL2 (its libraries in
    /// `/usr/lib/wsl/lib`), whose driver floors apply ([`crate::cuda::SupportTable::driver_floor`]).
    #[serde(skip)]
    pub driver_os: crate::platform::Os,
}

impl Machine {
    /// With whose driver it is: Windows' where this is Windows or WSL2 (the Windows
    /// driver's libcuda in `/usr/lib/wsl/lib`).
    fn of(mut self, at: &Where) -> Machine {
        self.driver_os = if at.windows || at.wsl_lib.join("libcuda.so.1").is_file() {
            crate::platform::Os::Windows
        } else {
            crate::platform::Os::Linux
        };
        self
    }

    /// The major of [`Machine::max_cuda`].
    pub fn max_cuda_major(&self) -> Option<u32> {
        self.max_cuda.as_deref()?.split('.').next()?.parse().ok()
    }
}

/// Where to look: read from the environment by the command, passed in typed.
#[derive(Debug, Clone)]
pub struct Where {
    /// `PATH`, split by the platform's separator.
    pub path: Vec<PathBuf>,
    /// WSL2's driver dir (`/usr/lib/wsl/lib`); searched whether or not it exists.
    pub wsl_lib: PathBuf,
    pub windows: bool,
    /// Try NVML at all (off: `nvidia-smi` only).
    pub nvml: bool,
}

impl Where {
    /// The NVML libraries to try, in order: the loader's default name, then WSL2's.
    pub fn nvml_candidates(&self) -> Vec<PathBuf> {
        if self.windows {
            vec![PathBuf::from("nvml.dll")]
        } else {
            vec![
                PathBuf::from("libnvidia-ml.so.1"),
                self.wsl_lib.join("libnvidia-ml.so.1"),
            ]
        }
    }

    /// The first `nvidia-smi` on PATH, else WSL2's.
    pub fn nvidia_smi(&self) -> Option<PathBuf> {
        let exe = if self.windows {
            "nvidia-smi.exe"
        } else {
            "nvidia-smi"
        };
        self.path
            .iter()
            .map(|d| d.join(exe))
            .chain([self.wsl_lib.join(exe)])
            .find(|p| p.is_file())
    }
}

/// The `--query-gpu` fields, in this order.
pub const QUERY: &str = "--query-gpu=name,compute_cap,memory.total,driver_version";

/// Parses `nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version
/// --format=csv,noheader,nounits`: a line per GPU. Memory `[N/A]` (GB10) is `None`.
pub fn parse_query(csv: &str) -> Result<(Vec<GpuInfo>, Option<DriverVersion>), String> {
    let mut gpus = Vec::new();
    let mut driver = None;
    for line in csv.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        let [name, cc, memory, drv] = f[..] else {
            return Err(format!(
                "line `{line}`: expected 4 fields (name, compute_cap, memory.total, driver_version)"
            ));
        };
        let arch: CudaArch = cc
            .parse()
            .map_err(|_| format!("line `{line}`: compute capability `{cc}` is not like 12.0"))?;
        let memory_mib = match memory {
            "[N/A]" | "N/A" | "[Not Supported]" => None,
            m => Some(
                m.parse::<u64>()
                    .map_err(|_| format!("line `{line}`: memory.total `{m}` is not MiB"))?,
            ),
        };
        driver = Some(
            drv.parse::<DriverVersion>()
                .map_err(|_| format!("line `{line}`: driver version `{drv}`"))?,
        );
        gpus.push(GpuInfo {
            name: name.to_string(),
            compute_capability: format!("{}.{}", arch.major(), arch.minor()),
            memory_mib,
            arch,
        });
    }
    Ok((gpus, driver))
}

/// `CUDA Version: 13.0` from plain `nvidia-smi`'s banner.
pub fn parse_banner_cuda(banner: &str) -> Option<String> {
    let rest = banner.split("CUDA Version:").nth(1)?;
    let v = rest.split_whitespace().next()?.trim_end_matches('|');
    let ok = v.split('.').count() == 2 && v.split('.').all(|p| p.parse::<u32>().is_ok());
    ok.then(|| v.to_string())
}

/// Asks `nvidia-smi` at `smi`: the GPU query, then the banner for the CUDA version.
pub fn from_nvidia_smi(smi: &Path, procs: &dyn Processes) -> Result<Machine, String> {
    let query = Command::new(smi).args([QUERY, "--format=csv,noheader,nounits"]);
    let out = procs.output(&query).map_err(|e| e.to_string())?;
    if !out.success() {
        return Err(format!(
            "`{query}` failed ({}): {}",
            out.status,
            out.stderr.trim().lines().last().unwrap_or("").trim()
        ));
    }
    let (gpus, driver) = parse_query(&out.stdout).map_err(|e| format!("`{query}`: {e}"))?;
    let banner = procs
        .output(&Command::new(smi))
        .ok()
        .filter(|o| o.success())
        .map(|o| o.stdout)
        .unwrap_or_default();
    Ok(Machine {
        source: format!("nvidia-smi ({})", smi.display()),
        gpus,
        driver,
        max_cuda: parse_banner_cuda(&banner),
        driver_os: crate::platform::Os::Linux,
    })
}

/// Asks NVML, loaded from `lib`.
fn from_nvml(lib: &Path) -> Result<Machine, String> {
    use nvml_wrapper::{cuda_driver_version_major, cuda_driver_version_minor, Nvml};
    let nvml = Nvml::builder()
        .lib_path(lib.as_os_str())
        .init()
        .map_err(|e| match e {
            // Its Display is "a libloading error occurred"; the loader's own words say why.
            nvml_wrapper::error::NvmlError::LibloadingError(l) => format!(
                "{}: the NVIDIA driver's library could not be loaded ({l}): no driver installed, or not where the loader looks",
                lib.display()
            ),
            e => format!("{}: {e}", lib.display()),
        })?;
    let err = |e: nvml_wrapper::error::NvmlError| format!("NVML ({}): {e}", lib.display());
    let mut gpus = Vec::new();
    for i in 0..nvml.device_count().map_err(err)? {
        let d = nvml.device_by_index(i).map_err(err)?;
        let cc = d.cuda_compute_capability().map_err(err)?;
        let arch = CudaArch::plain(cc.major as u8, cc.minor as u8);
        gpus.push(GpuInfo {
            name: d.name().map_err(err)?,
            compute_capability: format!("{}.{}", cc.major, cc.minor),
            // GB10's unified memory: NVML answers "not supported"; no number.
            memory_mib: d.memory_info().ok().map(|m| m.total / (1024 * 1024)),
            arch,
        });
    }
    let driver = nvml
        .sys_driver_version()
        .ok()
        .and_then(|v| v.parse::<DriverVersion>().ok());
    let max_cuda = nvml.sys_cuda_driver_version().ok().map(|v| {
        format!(
            "{}.{}",
            cuda_driver_version_major(v),
            cuda_driver_version_minor(v)
        )
    });
    Ok(Machine {
        source: format!("nvml ({})", lib.display()),
        gpus,
        driver,
        max_cuda,
        driver_os: crate::platform::Os::Linux,
    })
}

/// The machine's GPUs: NVML, then nvidia-smi. `Err` holds why each failed.
pub fn probe(at: &Where, procs: &dyn Processes) -> Result<Machine, Vec<String>> {
    let mut why = Vec::new();
    if at.nvml {
        for lib in at.nvml_candidates() {
            // The WSL2 path only where it is there; the default name through the loader.
            if lib.is_absolute() && !lib.is_file() {
                continue;
            }
            match from_nvml(&lib) {
                Ok(m) => return Ok(m.of(at)),
                Err(e) => why.push(format!("NVML: {e}")),
            }
        }
    }
    match at.nvidia_smi() {
        Some(smi) => match from_nvidia_smi(&smi, procs) {
            Ok(m) => return Ok(m.of(at)),
            Err(e) => why.push(format!("nvidia-smi: {e}")),
        },
        None => why.push(format!(
            "nvidia-smi: not on PATH, nor in {}",
            at.wsl_lib.display()
        )),
    }
    Err(why)
}

/// Where WSL2 keeps the Windows driver's libraries and nvidia-smi.
pub const WSL_LIB: &str = "/usr/lib/wsl/lib";

/// What `--arch auto` saw of this machine's GPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// Not looked at: the artifact is for another platform (`--target`), so this
    /// machine's GPUs say nothing about the ones it runs on.
    OtherTarget,
    /// No GPU: why (no driver, no nvidia-smi, a driver that lists none).
    NoGpu(Vec<String>),
    /// The GPUs the driver listed.
    Gpus(Vec<GpuInfo>),
}

/// `--arch auto`, resolved: what to build for, and the one line that says why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Auto {
    pub accelerator: crate::request::Accelerator,
    /// `auto: NVIDIA GeForce RTX 5090 (12.0)`, or why it is the CPU.
    pub why: String,
}

/// `--arch auto` as a pure function of what was seen, for `target` built on `host`:
/// every distinct compute capability of the GPUs seen (a GPU the table knows by name is
/// named, where its capability is the one the driver reports; else its capability);
/// the CPU where there is none, or where the target is not this machine.
pub fn resolve_auto(
    seen: &Seen,
    target: crate::platform::Target,
    host: crate::platform::Target,
) -> Auto {
    use crate::cuda::{ArchRequest, ArchSpec, Gpu};
    use crate::request::Accelerator;
    let cpu = |why: String| Auto {
        accelerator: Accelerator::Cpu,
        why,
    };
    match seen {
        Seen::OtherTarget if target == crate::platform::Target::WINDOWS_GNU => cpu(format!(
            "--arch auto: the artifact is for {target}, which is built for the CPU only: building for CPU"
        )),
        Seen::OtherTarget => cpu(format!(
            "--arch auto: the artifact is for {target}, not this {host} machine, so this machine's GPUs say nothing about it: \
             building for CPU; give --arch for its GPUs (e.g. --arch 120 for an RTX 50 card)"
        )),
        Seen::NoGpu(_) | Seen::Gpus(_) if target != host => cpu(format!(
            "--arch auto: the artifact is for {target}, not this {host} machine: building for CPU; give --arch for its GPUs"
        )),
        Seen::Gpus(gpus) if !gpus.is_empty() => {
            let mut specs: Vec<ArchSpec> = Vec::new();
            let mut seen_names: Vec<String> = Vec::new();
            for g in gpus {
                let spec = match Gpu::lookup(&g.name) {
                    Some(known) if known.arch() == g.arch => ArchSpec::Gpu(known),
                    _ => ArchSpec::Cc(g.arch),
                };
                let cc = |s: &ArchSpec| match s {
                    ArchSpec::Gpu(k) => k.arch(),
                    ArchSpec::Cc(a) => *a,
                };
                if !specs.iter().any(|s| cc(s) == g.arch) {
                    specs.push(spec);
                }
                let shown = format!("{} ({})", g.name, g.compute_capability);
                if !seen_names.contains(&shown) {
                    seen_names.push(shown);
                }
            }
            Auto {
                accelerator: Accelerator::Cuda(ArchRequest { specs }),
                why: format!("auto: {}", seen_names.join(", ")),
            }
        }
        Seen::NoGpu(_) | Seen::Gpus(_) => {
            cpu("no NVIDIA GPU found: building for CPU; --arch 120 for an RTX 50 card".to_string())
        }
    }
}

/// This machine's GPUs for `--arch auto`: NVIDIA's driver asked as `doctor` asks it
/// (NVML, else nvidia-smi on PATH or in WSL2's dir), or only the nvidia-smi at
/// `nvidia_smi` where given (`LLAMA_FORGE_NVIDIA_SMI`). Not looked at for another target.
pub fn seen_here(
    target: crate::platform::Target,
    path: &str,
    nvidia_smi: Option<&Path>,
    procs: &dyn Processes,
) -> Seen {
    let here = target == crate::platform::Target::host();
    seen_of(here.then(|| machine_here(path, nvidia_smi, procs)))
}

/// What `--arch auto` saw, from this machine's answer ([`machine_here`]; `None`: not
/// asked, the artifact is for another target).
pub fn seen_of(machine: Option<Result<Machine, Vec<String>>>) -> Seen {
    match machine {
        None => Seen::OtherTarget,
        Some(Ok(m)) if !m.gpus.is_empty() => Seen::Gpus(m.gpus),
        Some(Ok(m)) => Seen::NoGpu(vec![format!("{}: no GPU listed", m.source)]),
        Some(Err(why)) => Seen::NoGpu(why),
    }
}

/// This machine's GPUs and driver, asked as [`seen_here`] says.
pub fn machine_here(
    path: &str,
    nvidia_smi: Option<&Path>,
    procs: &dyn Processes,
) -> Result<Machine, Vec<String>> {
    let host = crate::platform::Target::host();
    match nvidia_smi {
        Some(smi) if smi.is_file() => from_nvidia_smi(smi, procs).map_err(|e| vec![e]),
        Some(smi) => Err(vec![format!(
            "LLAMA_FORGE_NVIDIA_SMI={}: no such file",
            smi.display()
        )]),
        None => probe(
            &Where {
                path: std::env::split_paths(path).collect(),
                wsl_lib: PathBuf::from(WSL_LIB),
                windows: host.os == crate::platform::Os::Windows,
                nvml: true,
            },
            procs,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::{Output, Recorder};

    fn fixture(name: &str) -> String {
        let p = crate::repo_root().join("tests/fixtures/doctor").join(name);
        fs_err::read_to_string(p).unwrap()
    }

    #[test]
    fn parses_the_three_recorded_gpus() {
        let (h100, d) = parse_query(&fixture("h100.query.csv")).unwrap();
        assert_eq!(h100[0].name, "NVIDIA H100 80GB HBM3");
        assert_eq!(
            (h100[0].compute_capability.as_str(), h100[0].memory_mib),
            ("9.0", Some(81559))
        );
        assert_eq!(d.unwrap().to_string(), "580.95.05");
        let (rtx, _) = parse_query(&fixture("rtx5090.query.csv")).unwrap();
        assert_eq!(
            (rtx[0].arch.to_string(), rtx[0].memory_mib),
            ("120".to_string(), Some(32607))
        );
        let (gb10, _) = parse_query(&fixture("gb10.query.csv")).unwrap();
        assert_eq!(
            (gb10[0].arch.to_string(), gb10[0].memory_mib),
            ("121".to_string(), None)
        );
        assert!(gb10[0].describe().contains("DGX Spark / GB10"));
        assert!(gb10[0].describe().contains("memory not reported"));
        for (f, cuda) in [
            ("h100.banner.txt", "13.0"),
            ("rtx5090.banner.txt", "12.8"),
            ("gb10.banner.txt", "13.0"),
        ] {
            assert_eq!(parse_banner_cuda(&fixture(f)).as_deref(), Some(cuda), "{f}");
        }
        assert_eq!(parse_banner_cuda("no banner"), None);
        let e = parse_query("NVIDIA H100, 9.0, 81559").unwrap_err();
        assert!(e.contains("expected 4 fields"), "{e}");
        let e = parse_query("NVIDIA H100, nine, 81559, 580.95.05").unwrap_err();
        assert!(e.contains("compute capability `nine`"), "{e}");
    }

    /// The recorded outputs through the process seam: the query, then the banner.
    #[test]
    fn nvidia_smi_through_the_process_seam() {
        let rec = Recorder::replying(|c| {
            Ok(if c.args.is_empty() {
                Output::ok(&fixture("h100.banner.txt"), "")
            } else {
                Output::ok(&fixture("h100.query.csv"), "")
            })
        });
        let m = from_nvidia_smi(Path::new("/usr/bin/nvidia-smi"), &rec).unwrap();
        assert_eq!(m.source, "nvidia-smi (/usr/bin/nvidia-smi)");
        assert_eq!(m.max_cuda.as_deref(), Some("13.0"));
        assert_eq!(m.max_cuda_major(), Some(13));
        assert_eq!(m.gpus.len(), 1);
        assert_eq!(
            rec.commands(),
            [
                format!("/usr/bin/nvidia-smi {QUERY} --format=csv,noheader,nounits"),
                "/usr/bin/nvidia-smi".to_string()
            ]
        );
        // A failing nvidia-smi (no driver loaded) says so.
        let rec = Recorder::replying(|_| {
            Ok(Output {
                stderr:
                    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
                        .into(),
                ..Output::failed(9)
            })
        });
        let e = from_nvidia_smi(Path::new("nvidia-smi"), &rec).unwrap_err();
        assert!(e.contains("couldn't communicate"), "{e}");
    }

    /// WSL2: no nvidia-smi on PATH, one in the WSL driver dir (a temp dir here).
    #[test]
    fn finds_nvidia_smi_on_path_then_in_the_wsl_dir() {
        let d = tempfile::tempdir().unwrap();
        let wsl = d.path().join("usr/lib/wsl/lib");
        let bin = d.path().join("bin");
        fs_err::create_dir_all(&wsl).unwrap();
        fs_err::create_dir_all(&bin).unwrap();
        let mut at = Where {
            path: vec![bin.clone()],
            wsl_lib: wsl.clone(),
            windows: false,
            nvml: false,
        };
        assert_eq!(at.nvidia_smi(), None);
        let e = probe(&at, &Recorder::default()).unwrap_err();
        assert!(e[0].contains("not on PATH, nor in"), "{e:?}");
        fs_err::write(wsl.join("nvidia-smi"), "").unwrap();
        assert_eq!(at.nvidia_smi(), Some(wsl.join("nvidia-smi")));
        assert_eq!(
            at.nvml_candidates(),
            [
                PathBuf::from("libnvidia-ml.so.1"),
                wsl.join("libnvidia-ml.so.1")
            ]
        );
        fs_err::write(bin.join("nvidia-smi"), "").unwrap();
        assert_eq!(at.nvidia_smi(), Some(bin.join("nvidia-smi")), "PATH first");
        // Windows: nvidia-smi.exe and nvml.dll.
        at.windows = true;
        assert_eq!(at.nvidia_smi(), None);
        fs_err::write(bin.join("nvidia-smi.exe"), "").unwrap();
        assert_eq!(at.nvidia_smi(), Some(bin.join("nvidia-smi.exe")));
        assert_eq!(at.nvml_candidates(), [PathBuf::from("nvml.dll")]);
    }

    fn gpu(name: &str, cc: &str) -> GpuInfo {
        let arch: CudaArch = cc.parse().unwrap();
        GpuInfo {
            name: name.into(),
            compute_capability: format!("{}.{}", arch.major(), arch.minor()),
            memory_mib: None,
            arch,
        }
    }

    /// `--arch auto` as a function of (GPUs seen, target): a table.
    #[test]
    fn auto_builds_for_the_gpus_seen_or_the_cpu_and_says_why() {
        use crate::platform::Target;
        let x86 = Target::LINUX_X86_64;
        let none = Seen::NoGpu(vec!["nvidia-smi: not on PATH".into()]);
        let rtx5090 = gpu("NVIDIA GeForce RTX 5090", "12.0");
        let cases: Vec<(Seen, Target, &str, &str)> = vec![
            (
                Seen::Gpus(vec![rtx5090.clone()]),
                x86,
                "rtx5090",
                "auto: NVIDIA GeForce RTX 5090 (12.0)",
            ),
            // Two of one card, and a second kind: each capability once, each name once.
            (
                Seen::Gpus(vec![
                    rtx5090.clone(),
                    rtx5090.clone(),
                    gpu("NVIDIA GeForce RTX 4090", "8.9"),
                ]),
                x86,
                "rtx5090,rtx4090",
                "auto: NVIDIA GeForce RTX 5090 (12.0), NVIDIA GeForce RTX 4090 (8.9)",
            ),
            // Two names of one capability: one target.
            (
                Seen::Gpus(vec![
                    gpu("NVIDIA H100 80GB HBM3", "9.0"),
                    gpu("NVIDIA H200", "9.0"),
                ]),
                x86,
                "h100",
                "auto: NVIDIA H100 80GB HBM3 (9.0), NVIDIA H200 (9.0)",
            ),
            // A part the table does not know: its capability, as the driver says.
            (
                Seen::Gpus(vec![gpu("NVIDIA Future GPU", "13.0")]),
                x86,
                "130",
                "auto: NVIDIA Future GPU (13.0)",
            ),
            // A B200 is named, so no "100 is not an RTX 50 card" warning follows.
            (
                Seen::Gpus(vec![gpu("NVIDIA B200", "10.0")]),
                x86,
                "b200",
                "auto: NVIDIA B200 (10.0)",
            ),
            (
                Seen::Gpus(vec![gpu("NVIDIA GB10", "12.1")]),
                Target::LINUX_AARCH64,
                "gb10",
                "auto: NVIDIA GB10 (12.1)",
            ),
            (
                none.clone(),
                x86,
                "cpu",
                "no NVIDIA GPU found: building for CPU; --arch 120 for an RTX 50 card",
            ),
            (
                Seen::Gpus(vec![]),
                x86,
                "cpu",
                "no NVIDIA GPU found: building for CPU; --arch 120 for an RTX 50 card",
            ),
        ];
        for (seen, host, arch, why) in cases {
            let a = resolve_auto(&seen, host, host);
            assert_eq!(
                (a.accelerator.to_string(), a.why.as_str()),
                (arch.to_string(), why),
                "{seen:?}"
            );
        }
        // Another target than this machine: the CPU, whatever is seen, and why.
        for target in [
            Target::LINUX_AARCH64,
            Target::WINDOWS_MSVC,
            Target::WINDOWS_GNU,
        ] {
            for seen in [
                Seen::OtherTarget,
                Seen::Gpus(vec![rtx5090.clone()]),
                none.clone(),
            ] {
                let a = resolve_auto(&seen, target, x86);
                assert_eq!(a.accelerator.to_string(), "cpu", "{target} {seen:?}");
                assert!(
                    a.why.contains(&target.to_string()) && a.why.contains("building for CPU"),
                    "{}",
                    a.why
                );
            }
        }
        insta::assert_snapshot!(
            "auto_for_another_target",
            resolve_auto(&Seen::OtherTarget, Target::LINUX_AARCH64, x86).why
        );
        insta::assert_snapshot!(
            "auto_for_mingw",
            resolve_auto(&Seen::OtherTarget, Target::WINDOWS_GNU, x86).why
        );
        insta::assert_snapshot!("auto_without_a_gpu", resolve_auto(&none, x86, x86).why);
    }

    /// `LLAMA_FORGE_NVIDIA_SMI`: that nvidia-smi alone, through the process seam; a
    /// missing one is no GPU (the tests' way to see none on a machine that has one).
    #[test]
    fn auto_asks_the_named_nvidia_smi_only() {
        let host = crate::platform::Target::host();
        let d = tempfile::tempdir().unwrap();
        let smi = d.path().join("nvidia-smi");
        let rec = Recorder::replying(|c| {
            Ok(if c.args.is_empty() {
                Output::ok(&fixture("rtx5090.banner.txt"), "")
            } else {
                Output::ok(&fixture("rtx5090.query.csv"), "")
            })
        });
        match seen_here(host, "", Some(&smi), &rec) {
            Seen::NoGpu(why) => assert!(
                why[0].contains("LLAMA_FORGE_NVIDIA_SMI") && why[0].contains("no such file"),
                "{why:?}"
            ),
            other => panic!("{other:?}"),
        }
        assert!(rec.commands().is_empty());
        fs_err::write(&smi, "").unwrap();
        let seen = seen_here(host, "", Some(&smi), &rec);
        let Seen::Gpus(g) = &seen else {
            panic!("{seen:?}")
        };
        assert_eq!(g[0].name, "NVIDIA GeForce RTX 5090");
        assert_eq!(
            resolve_auto(&seen, host, host).accelerator.to_string(),
            "rtx5090"
        );
        // Another target: nothing is asked.
        let other = if host == crate::platform::Target::LINUX_AARCH64 {
            crate::platform::Target::LINUX_X86_64
        } else {
            crate::platform::Target::LINUX_AARCH64
        };
        let n = rec.commands().len();
        assert_eq!(seen_here(other, "", Some(&smi), &rec), Seen::OtherTarget);
        assert_eq!(rec.commands().len(), n);
    }
}
