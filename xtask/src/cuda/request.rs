//! The `--arch` value: `rtx5090`, `120`, `120,121`, `h100` -> CMake arch targets with reasons.

use std::fmt;
use std::str::FromStr;

use super::arch::{ArchList, ArchTarget, ArchVariant, CudaArch, CudaArchError};
use super::gpu::{describe_cc, did_you_mean, Gpu};

/// One `--arch` item: a GPU name or a compute capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArchSpec {
    Gpu(Gpu),
    Cc(CudaArch),
}

impl ArchSpec {
    /// The GPU whose machines decide the CPU arch: the one named, or the one that
    /// stands for a compute capability all of whose GPUs are in one kind of machine
    /// ([`Gpu::only_machine_of`]).
    fn machine_gpu(&self) -> Option<Gpu> {
        match self {
            ArchSpec::Gpu(g) => Some(*g),
            ArchSpec::Cc(cc) => Gpu::only_machine_of(*cc),
        }
    }
}

impl fmt::Display for ArchSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArchSpec::Gpu(g) => write!(f, "{g}"),
            ArchSpec::Cc(a) => write!(f, "{a}"),
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ArchSpecError {
    #[error("unknown --arch value `{value}`: {}", unknown_hint(suggestions))]
    Unknown {
        value: String,
        /// The closest GPU names.
        suggestions: Vec<&'static str>,
    },
    #[error("--arch is empty: give e.g. --arch rtx5090 or --arch 120,121")]
    Empty,
}

/// The closest GPU names, then what `--arch` takes (a pointer, not the whole table).
fn unknown_hint(suggestions: &[&str]) -> String {
    let what = "a GPU name (rtx5090, rtx4090, h100, l4, t4, gb10, or the name nvidia-smi prints) or a compute capability \
                (`--arch 120` for 12.0; `nvidia-smi --query-gpu=name,compute_cap --format=csv` prints both)";
    match did_you_mean(suggestions) {
        Some(d) => format!("{d} Otherwise give {what}"),
        None => format!("give {what}"),
    }
}

impl FromStr for ArchSpec {
    type Err = ArchSpecError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let unknown = match s.parse::<Gpu>() {
            Ok(g) => return Ok(ArchSpec::Gpu(g)),
            Err(e) => e,
        };
        s.parse::<CudaArch>()
            .map(ArchSpec::Cc)
            .map_err(|CudaArchError { .. }| ArchSpecError::Unknown {
                value: s.trim().to_string(),
                suggestions: unknown.suggestions,
            })
    }
}

/// The whole `--arch` value: comma-separated specs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchRequest {
    pub specs: Vec<ArchSpec>,
}

impl FromStr for ArchRequest {
    type Err = ArchSpecError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let specs = s
            .split([',', ';'])
            .filter(|p| !p.trim().is_empty())
            .map(str::parse)
            .collect::<Result<Vec<_>, _>>()?;
        if specs.is_empty() {
            return Err(ArchSpecError::Empty);
        }
        Ok(ArchRequest { specs })
    }
}

impl ArchRequest {
    /// The GPUs named that exist only in machines of another CPU arch than `arch`
    /// (`gb10` for an x86-64 target).
    pub fn gpus_not_on(&self, arch: crate::platform::Arch) -> Vec<(String, Gpu)> {
        self.specs
            .iter()
            .filter_map(|s| Some((s.to_string(), s.machine_gpu()?)))
            .filter(|(_, g)| g.only_on().is_some_and(|a| a != arch))
            .collect()
    }

    /// The CPU arch the GPUs named imply (aarch64 for `gb10`, `thor`, `gh200`, `gb200`,
    /// `gb300`, and for `121`, `110` and `87`, whose GPUs are all in aarch64 machines),
    /// where any does.
    pub fn implied_arch(&self) -> Option<crate::platform::Arch> {
        self.specs
            .iter()
            .find_map(|s| s.machine_gpu().and_then(Gpu::only_on))
    }
}

impl fmt::Display for ArchRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.specs.iter().map(ToString::to_string).collect();
        f.write_str(&parts.join(","))
    }
}

/// Why one target is in the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchReason {
    pub requested: ArchSpec,
    pub target: ArchTarget,
    pub text: String,
}

impl fmt::Display for ArchReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Something in the request that is probably a mistake; the plan still builds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArchWarning {
    /// `100`/`100a` by number: B200, not RTX 50.
    NotRtx50 { requested: CudaArch },
}

impl fmt::Display for ArchWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArchWarning::NotRtx50 { requested } => write!(
                f,
                "--arch {requested} is compute capability {}.{} ({}), not an RTX 50 card: RTX 50 series and RTX PRO 6000 Blackwell are 12.0 \
                 (use --arch 120 or a name such as rtx5090). A build for {} fails there with \"no kernel image is available\". \
                 If you do mean B200/GB200, use --arch b200 to say so.",
                requested.major(),
                requested.minor(),
                describe_cc(*requested).unwrap_or("data-center Blackwell"),
                requested.sm_name(),
            ),
        }
    }
}

/// The resolved plan: CMake targets, one reason per target, warnings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchSelection {
    pub targets: ArchList,
    pub reasons: Vec<ArchReason>,
    pub warnings: Vec<ArchWarning>,
}

impl ArchRequest {
    /// Blackwell -> `XXXa-real` (FP4/MXFP4 need `a`), others plain `NN-real`; an explicit
    /// suffix is kept. With `ptx`, plain PTX for the highest arch is added.
    pub fn resolve(&self, ptx: bool) -> ArchSelection {
        let mut reasons = Vec::new();
        let mut warnings = Vec::new();
        for &spec in &self.specs {
            let (asked, who) = match spec {
                ArchSpec::Gpu(g) => (g.arch(), g.to_string()),
                ArchSpec::Cc(a) => (a, a.to_string()),
            };
            if let ArchSpec::Cc(a) = spec {
                if a.major() == 10 && a.minor() == 0 {
                    warnings.push(ArchWarning::NotRtx50 { requested: a });
                }
            }
            let (arch, why) = match asked.variant() {
                ArchVariant::Plain if asked.is_blackwell() => (
                    asked.with_variant(ArchVariant::ArchSpecific),
                    "arch-specific SASS, needed for the FP4/MXFP4 mma paths",
                ),
                ArchVariant::Plain => (asked, "SASS for this compute capability"),
                ArchVariant::ArchSpecific => (
                    asked,
                    "arch-specific SASS, as asked (runs only on this exact compute capability)",
                ),
                ArchVariant::Family => (
                    asked,
                    "family SASS, as asked (runs on later minors of the same major too)",
                ),
            };
            let target = ArchTarget::real(arch);
            let cc = format!("{}.{}", asked.major(), asked.minor());
            let what = describe_cc(asked)
                .map(|d| format!(" ({d})"))
                .unwrap_or_default();
            let ptx_note = if ptx {
                "PTX only for the highest arch"
            } else {
                "no PTX (--ptx adds it)"
            };
            let text =
                format!("{who} is compute capability {cc}{what}; {target}: {why}; {ptx_note}");
            reasons.push(ArchReason {
                requested: spec,
                target,
                text,
            });
        }
        if ptx {
            if let Some(top) = reasons
                .iter()
                .max_by_key(|r| r.target.arch.to_plain())
                .cloned()
            {
                let plain = top.target.arch.to_plain();
                let target = ArchTarget::virtual_(plain);
                let text = format!(
                    "--ptx: {target}: plain compute_{plain} PTX for the highest arch, JIT-compiled by the driver on newer GPUs \
                     (arch-specific PTX would run only on {}.{})",
                    plain.major(),
                    plain.minor()
                );
                reasons.push(ArchReason {
                    requested: top.requested,
                    target,
                    text,
                });
            }
        }
        warnings.dedup();
        let targets = ArchList::new(reasons.iter().map(|r| r.target));
        ArchSelection {
            targets,
            reasons,
            warnings,
        }
    }
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
