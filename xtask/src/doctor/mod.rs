//! `cargo xtask doctor`: this machine's GPUs and driver ([`gpus`]: NVML, else
//! nvidia-smi), the CUDA toolkits found, and for one Python ([`python`]) whether
//! llama_cpp, torch and bitsandbytes run on the GPU, each with a verdict
//! ([`verdict`]) and, when bad, the command that fixes it.
//!
//! [`run`] does the I/O; [`assess`] and [`text`] are pure.

pub use crate::detect::gpus;
pub mod python;
pub mod verdict;

use std::path::PathBuf;

use serde::Serialize;

use crate::cuda::{describe_cc, CudaArch, Gpu};
use crate::platform::Arch;
use crate::process::Processes;
use gpus::Machine;
use python::PythonEnv;
use verdict::{DriverFacts, FixContext, Verdict};

/// `--gpu`: a name (`rtx5090`) or a compute capability (`12.0`, `120`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuChoice {
    /// As given: `rtx5090`, `12.0`.
    pub name: String,
    pub arch: CudaArch,
    /// The CPU arch of every machine with this GPU, and the machine (`DGX Spark
    /// (GB10)`), where there is only one (`--gpu gb10`, and `--gpu 12.1`: every GPU of it
    /// is in one machine).
    pub only_on: Option<(crate::platform::Arch, &'static str)>,
}

impl std::str::FromStr for GpuChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let unknown = match s.parse::<Gpu>() {
            Ok(g) => {
                return Ok(GpuChoice {
                    name: g.to_string(),
                    arch: g.arch(),
                    only_on: g.only_on().map(|a| (a, g.machine())),
                })
            }
            Err(e) => e,
        };
        match s.parse::<CudaArch>() {
            Ok(a) => Ok(GpuChoice {
                name: format!("{}.{}", a.major(), a.minor()),
                arch: a.to_plain(),
                // 12.1: every one is a DGX Spark's, an aarch64 machine, as `gb10` says.
                only_on: Gpu::only_machine_of(a)
                    .and_then(|g| Some((g.only_on()?, g.machine()))),
            }),
            Err(_) => Err(format!(
                "unknown GPU `{s}`: {}give a GPU name (rtx5090, h100, gb10, or the name nvidia-smi prints) or a compute capability (12.0 or 120)",
                crate::cuda::did_you_mean(&unknown.suggestions)
                    .map(|d| format!("{d} Otherwise "))
                    .unwrap_or_default()
            )),
        }
    }
}

/// What `doctor` is asked to check.
#[derive(Debug, Clone)]
pub struct Options {
    pub python: PathBuf,
    pub gpu: Option<GpuChoice>,
    pub at: gpus::Where,
}

/// A CUDA toolkit, as `toolchains` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolkitLine {
    pub nvcc: String,
    pub root: String,
    pub found_by: String,
}

/// A GPU the packages are checked against.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Checked {
    /// `rtx5090` (`--gpu`) or the machine's GPU name.
    pub name: String,
    pub compute_capability: String,
    /// `--gpu` or `this machine`.
    pub from: String,
    #[serde(skip)]
    pub arch: CudaArch,
    /// [`GpuChoice::only_on`], for `--gpu`.
    #[serde(skip)]
    pub only_on: Option<(crate::platform::Arch, &'static str)>,
}

/// One package's verdict on one checked GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OnGpu {
    pub compute_capability: String,
    #[serde(flatten)]
    pub verdict: Verdict,
    /// The commands that fix a bad verdict, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fix: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PackageCheck {
    /// `llama_cpp`, `torch`, `bitsandbytes`.
    pub name: String,
    pub installed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dir: Option<String>,
    /// What was read: device code, CUDA runtime, minimum driver; torch's CUDA and arch list.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<String>,
    /// The oldest NVIDIA driver (Linux) it runs on, and what says so
    /// ([`verdict::driver_floor`]); none for a CPU build or where nothing says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub driver_floor: Option<crate::inspect::MinDriver>,
    pub gpus: Vec<OnGpu>,
}

/// `ok` (exit 0), `problems` (1), `cannot_check` (3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Ok,
    Problems,
    CannotCheck,
}

impl Outcome {
    pub fn exit_code(self) -> u8 {
        match self {
            Outcome::Ok => crate::exit::Exit::Ok,
            Outcome::Problems => crate::exit::Exit::Problem,
            Outcome::CannotCheck => crate::exit::Exit::CannotCheck,
        }
        .code()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// What NVML or nvidia-smi said; `None` when neither answered.
    pub machine: Option<Machine>,
    /// Why no GPU was found (each source tried).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub machine_unavailable: Vec<String>,
    pub toolkits: Vec<ToolkitLine>,
    pub checked: Vec<Checked>,
    /// The Python asked: its path as given.
    pub python: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub python_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub python_error: Option<String>,
    pub packages: Vec<PackageCheck>,
    /// What stopped the check, for `cannot_check`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cannot_check: Vec<String>,
    pub problems: usize,
    pub outcome: Outcome,
}

/// What [`run`] gathered, for [`assess`].
pub struct Facts {
    pub machine: Result<Machine, Vec<String>>,
    pub toolkits: Vec<ToolkitLine>,
    pub gpu: Option<GpuChoice>,
    pub python: String,
    pub env: Result<PythonEnv, String>,
    /// `inspect` of llama_cpp's and bitsandbytes' package dirs.
    pub llama_cpp: Option<Result<crate::inspect::Report, String>>,
    pub bitsandbytes: Option<Result<crate::inspect::Report, String>>,
}

fn inspected_details(
    r: &crate::inspect::Report,
    floor: Option<&crate::inspect::MinDriver>,
) -> Vec<String> {
    let mut out = Vec::new();
    for l in r.libraries.iter().filter(|l| !l.codes.is_empty()) {
        let mut codes: Vec<String> = l.sass.clone();
        codes.extend(l.ptx.iter().cloned());
        let needs = if l.cuda_libraries.is_empty() {
            String::new()
        } else {
            format!("; needs {}", l.cuda_libraries.join(" "))
        };
        out.push(format!("{}: {}{needs}", l.path, codes.join(" ")));
    }
    if out.is_empty() {
        out.push(format!(
            "no CUDA device code in its libraries ({} read)",
            r.libraries.len()
        ));
    }
    if let Some(d) = floor {
        out.push(format!(
            "minimum NVIDIA driver: {} on Linux, {} on Windows and WSL2, from {}",
            d.linux, d.windows, d.from
        ));
    }
    out
}

/// The verdicts, from what was gathered. Pure.
pub fn assess(f: Facts) -> Report {
    let mut cannot_check = Vec::new();
    let (machine, machine_unavailable) = match f.machine {
        Ok(m) => (Some(m), Vec::new()),
        Err(why) => (None, why),
    };
    let this_driver = DriverFacts {
        version: machine.as_ref().and_then(|m| m.driver.clone()),
        max_cuda_major: machine.as_ref().and_then(Machine::max_cuda_major),
        os: machine.as_ref().map(|m| m.driver_os).unwrap_or_default(),
    };
    // --gpu: another box, whose driver is not known here.
    let checked: Vec<(Checked, DriverFacts)> = match &f.gpu {
        Some(g) => vec![(
            Checked {
                name: g.name.clone(),
                compute_capability: format!("{}.{}", g.arch.major(), g.arch.minor()),
                from: "--gpu".into(),
                arch: g.arch,
                only_on: g.only_on,
            },
            DriverFacts::default(),
        )],
        None => {
            let mut seen = Vec::new();
            for g in machine.iter().flat_map(|m| &m.gpus) {
                if !seen
                    .iter()
                    .any(|(c, _): &(Checked, DriverFacts)| c.arch == g.arch)
                {
                    seen.push((
                        Checked {
                            name: g.name.clone(),
                            compute_capability: g.compute_capability.clone(),
                            from: "this machine".into(),
                            arch: g.arch,
                            only_on: None,
                        },
                        this_driver.clone(),
                    ));
                }
            }
            seen
        }
    };
    if checked.is_empty() {
        cannot_check.push(match &machine {
            Some(m) => format!("{} found no GPU", m.source),
            None => "no GPU found here".to_string(),
        } + ": give the GPU to check against with --gpu NAME|CC (e.g. --gpu rtx5090 or --gpu 12.0)");
    }
    let (env, python_error) = match f.env {
        Ok(e) => (Some(e), None),
        Err(e) => {
            cannot_check.push(format!("the Python could not be asked: {e}"));
            (None, Some(e))
        }
    };
    let mut packages = Vec::new();
    if let Some(env) = &env {
        let cx = |c: &Checked, d: &DriverFacts| FixContext {
            python: f.python.clone(),
            py: env.py_tag(),
            gpu: c.arch,
            arch_arg: match c.only_on {
                Some(_) => c.name.clone(),
                None => c.arch.to_plain().number().to_string(),
            },
            driver: d.clone(),
        };
        let on_each = |name: &str, v: &dyn Fn(&Checked, &DriverFacts) -> Verdict| -> Vec<OnGpu> {
            checked
                .iter()
                .map(|(c, d)| {
                    let verdict = v(c, d);
                    let fix = verdict::fix(name, &verdict, &cx(c, d)).unwrap_or_default();
                    OnGpu {
                        compute_capability: c.compute_capability.clone(),
                        verdict,
                        fix,
                    }
                })
                .collect()
        };
        let torch_cuda = env.torch.as_ref().and_then(|t| t.cuda.clone());
        for (name, pkg, read) in [
            ("llama_cpp", &env.llama_cpp, &f.llama_cpp),
            ("bitsandbytes", &env.bitsandbytes, &f.bitsandbytes),
        ] {
            let mut check = PackageCheck {
                name: name.into(),
                installed: pkg.is_some(),
                version: pkg.as_ref().and_then(|p| p.version.clone()),
                dir: pkg.as_ref().map(|p| p.dir.display().to_string()),
                details: Vec::new(),
                driver_floor: None,
                gpus: Vec::new(),
            };
            match read {
                // No library at all: a broken or partial install, not a CPU-only build.
                Some(Ok(r)) if r.libraries.is_empty() => {
                    cannot_check.push(format!(
                        "{name}: no shared library (.so or .dll) found in {}; reinstall the package",
                        r.path
                    ));
                }
                Some(Ok(r)) => {
                    let floor = verdict::driver_floor(
                        r.min_driver.as_ref(),
                        pkg.as_ref().and_then(|p| p.version.as_deref()),
                    );
                    check.details = inspected_details(r, floor.as_ref());
                    let python_arch = env.machine.as_deref().and_then(Arch::from_machine);
                    check.gpus = on_each(name, &|c, d| {
                        if let Some(v) = verdict::wrong_machine(r, python_arch, c.only_on) {
                            v
                        } else if name == "llama_cpp" {
                            verdict::artifact(r, floor.as_ref(), c.arch, d)
                        } else {
                            verdict::bitsandbytes(r, torch_cuda.as_deref(), c.arch)
                        }
                    });
                    check.driver_floor = floor;
                }
                Some(Err(e)) => {
                    let e = e.clone();
                    check.gpus = on_each(name, &|_, _| Verdict::Broken { error: e.clone() });
                }
                None => {}
            }
            packages.push(check);
        }
        let mut check = PackageCheck {
            name: "torch".into(),
            installed: env.torch.is_some(),
            version: env.torch.as_ref().and_then(|t| t.version.clone()),
            dir: None,
            details: Vec::new(),
            driver_floor: None,
            gpus: Vec::new(),
        };
        if let Some(t) = &env.torch {
            if t.error.is_none() {
                check.details.push(match &t.cuda {
                    Some(c) => format!(
                        "CUDA {c}; arch list: {}",
                        if t.arch_list.is_empty() {
                            "empty".to_string()
                        } else {
                            t.arch_list.join(" ")
                        }
                    ),
                    None => "torch.version.cuda is None".to_string(),
                });
            }
            check.gpus = on_each("torch", &|c, d| verdict::torch(t, c.arch, d));
        }
        // llama_cpp, torch, bitsandbytes.
        packages.insert(1, check);
    }
    let problems = packages
        .iter()
        .flat_map(|p| &p.gpus)
        .filter(|g| g.verdict.is_problem())
        .count();
    let outcome = if !cannot_check.is_empty() {
        Outcome::CannotCheck
    } else if problems > 0 {
        Outcome::Problems
    } else {
        Outcome::Ok
    };
    Report {
        machine,
        machine_unavailable,
        toolkits: f.toolkits,
        checked: checked.into_iter().map(|(c, _)| c).collect(),
        python: f.python,
        python_version: env
            .as_ref()
            .map(|e| format!("{}.{}, {}", e.version[0], e.version[1], e.platform)),
        python_error,
        packages,
        cannot_check,
        problems,
        outcome,
    }
}

/// Reads a package dir with `inspect`, and its manifest's driver floor when there is one.
fn inspect_package(p: &python::Package) -> Result<crate::inspect::Report, String> {
    let mut r = crate::inspect::inspect(&p.dir).map_err(|e| format!("{e:#}"))?;
    if let Some(m) = &p.manifest {
        if let Some(d) = crate::manifest::read_bytes(m)
            .ok()
            .and_then(|b| crate::inspect::manifest_min_driver(&b))
        {
            r.min_driver = Some(d);
        }
    }
    Ok(r)
}

/// Gathers the facts (NVML or nvidia-smi, the toolkits, the Python's probe, the
/// package dirs) and assesses them.
pub fn run(opts: &Options, toolkits: Vec<ToolkitLine>, procs: &dyn Processes) -> Report {
    let machine = gpus::probe(&opts.at, procs);
    let env = python::probe(&opts.python, procs).map_err(|e| format!("{e:#}"));
    let read = |p: Option<&python::Package>| p.map(inspect_package);
    let (llama_cpp, bitsandbytes) = match &env {
        Ok(e) => (read(e.llama_cpp.as_ref()), read(e.bitsandbytes.as_ref())),
        Err(_) => (None, None),
    };
    assess(Facts {
        machine,
        toolkits,
        gpu: opts.gpu.clone(),
        python: opts.python.display().to_string(),
        env,
        llama_cpp,
        bitsandbytes,
    })
}

/// The report for people.
pub fn text(r: &Report) -> String {
    // What the Python, its packages and the artifacts say is theirs: one value per line.
    let v = |s: &str| crate::escape::value(s).into_owned();
    let mut o = String::new();
    match &r.machine {
        Some(m) => {
            o.push_str(&format!("GPUs (from {})\n", m.source));
            if m.gpus.is_empty() {
                o.push_str("  none\n");
            }
            for (i, g) in m.gpus.iter().enumerate() {
                o.push_str(&format!("  {i}: {}\n", g.describe()));
            }
            o.push_str(&format!(
                "  driver {}, runs CUDA up to {}\n",
                m.driver
                    .as_ref()
                    .map(|d| d.to_string())
                    .unwrap_or_else(|| "unknown".into()),
                m.max_cuda.as_deref().unwrap_or("unknown")
            ));
        }
        None => {
            o.push_str("GPUs: none found\n");
            for w in &r.machine_unavailable {
                o.push_str(&format!("  {}\n", v(w)));
            }
        }
    }
    o.push_str("CUDA toolkits\n");
    if r.toolkits.is_empty() {
        o.push_str("  none found\n");
    }
    for t in &r.toolkits {
        o.push_str(&format!(
            "  nvcc {} at {} [{}]\n",
            t.nvcc, t.root, t.found_by
        ));
    }
    for c in &r.checked {
        let family = describe_cc(c.arch)
            .map(|d| format!(", {d}"))
            .unwrap_or_default();
        o.push_str(&format!(
            "Checked against: {} (compute capability {}{family}; {})\n",
            c.name, c.compute_capability, c.from
        ));
    }
    o.push_str(&format!(
        "Python {}{}\n",
        v(&r.python),
        r.python_version
            .as_ref()
            .map(|pv| format!(" ({})", v(pv)))
            .unwrap_or_default()
    ));
    if let Some(e) = &r.python_error {
        o.push_str(&format!("  cannot be asked: {}\n", v(e)));
    }
    for p in &r.packages {
        if !p.installed {
            o.push_str(&format!("  {}: not installed\n", p.name));
            continue;
        }
        o.push_str(&format!(
            "  {} {}{}\n",
            p.name,
            v(p.version.as_deref().unwrap_or("(version unknown)")),
            p.dir
                .as_ref()
                .map(|d| format!(" at {}", v(d)))
                .unwrap_or_default()
        ));
        for d in &p.details {
            o.push_str(&format!("    {}\n", v(d)));
        }
        for g in &p.gpus {
            let mark = if g.verdict.is_problem() {
                "PROBLEM"
            } else {
                "ok"
            };
            o.push_str(&format!(
                "    {mark} on {}: {}\n",
                g.compute_capability,
                v(&g.verdict.say())
            ));
            for (i, f) in g.fix.iter().enumerate() {
                let lead = if i == 0 { "fix:" } else { "    " };
                o.push_str(&format!("      {lead} {f}\n"));
            }
        }
    }
    for c in &r.cannot_check {
        o.push_str(&format!("cannot check: {c}\n"));
    }
    o.push_str(&match r.outcome {
        Outcome::Ok if r.packages.iter().all(|p| !p.installed) => {
            "all fine: nothing to check (llama_cpp, torch and bitsandbytes are not installed in this Python)\n".to_string()
        }
        Outcome::Ok => "all fine\n".to_string(),
        Outcome::Problems => format!(
            "{} problem{} found\n",
            r.problems,
            if r.problems == 1 { "" } else { "s" }
        ),
        Outcome::CannotCheck => "could not check (exit 3)\n".to_string(),
    });
    o
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
