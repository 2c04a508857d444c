//! What a build is for: the CPU baseline, and the GPU architectures (`--arch`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The oldest x86-64 CPU the code must run on (psABI micro-architecture levels).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
pub enum CpuBaseline {
    /// SSE4.2/POPCNT: every x86-64 CPU since about 2009. The default.
    #[default]
    #[serde(rename = "x86-64-v2")]
    V2,
    /// AVX2/FMA/F16C/BMI2: Haswell (2013) and Zen 1 and newer.
    #[serde(rename = "x86-64-v3")]
    V3,
}

impl CpuBaseline {
    /// The features every CPU the baseline allows has: the oldest variant shipped
    /// needs no more than these ([`crate::cpu::shipped`]).
    pub fn floor(self) -> &'static [crate::cpu::Feature] {
        use crate::cpu::Feature::*;
        match self {
            CpuBaseline::V2 => &[Sse42],
            CpuBaseline::V3 => &[Sse42, Avx, F16c, Fma, Avx2, Bmi2],
        }
    }

    /// The part of the local version label that names a non-default baseline.
    pub fn label_suffix(self) -> Option<&'static str> {
        match self {
            CpuBaseline::V2 => None,
            CpuBaseline::V3 => Some("v3"),
        }
    }
}

impl FromStr for CpuBaseline {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "x86-64-v2" | "v2" => Ok(CpuBaseline::V2),
            "x86-64-v3" | "v3" => Ok(CpuBaseline::V3),
            _ => Err(format!("`{s}` is not a CPU baseline: use x86-64-v2 (default, any x86-64 CPU since 2009) or x86-64-v3 (AVX2, 2013+)")),
        }
    }
}

impl fmt::Display for CpuBaseline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CpuBaseline::V2 => "x86-64-v2",
            CpuBaseline::V3 => "x86-64-v3",
        })
    }
}

/// The `--arch` value: `cpu`, or GPU targets (`120`, `rtx5090`, `120,121`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Accelerator {
    Cpu,
    Cuda(crate::cuda::ArchRequest),
}

/// `auto` and `native`: the GPUs of the machine running the tool, which only the
/// command line may ask for ([`ArchChoice::Auto`]).
fn is_auto(s: &str) -> bool {
    ["auto", "native"]
        .iter()
        .any(|a| s.trim().eq_ignore_ascii_case(a))
}

impl FromStr for Accelerator {
    type Err = String;
    /// `cpu` or GPU targets. `auto` is refused: what is recorded (a release file, a plan,
    /// a manifest) names its arch, never "whatever this machine has".
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.eq_ignore_ascii_case("cpu") {
            return Ok(Accelerator::Cpu);
        }
        if is_auto(s) {
            return Err(format!(
                "`{}` (the GPUs of the machine that builds) is for plan, wheel and build on the command line: \
                 here name what is built, `cpu` or GPUs (e.g. `120` for RTX 50 cards, `rtx5090,h100`)",
                s.trim()
            ));
        }
        s.parse()
            .map(Accelerator::Cuda)
            .map_err(|e| format!("{e}; or `cpu` for a CPU-only build"))
    }
}

/// `--arch` as given on the command line: `auto` (the default) or what to build for.
/// `pipeline::prepare` resolves `auto` once, from this machine's GPUs, into an
/// [`Accelerator`]; nothing below it sees `auto`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArchChoice {
    /// `auto` or `native`: every distinct compute capability of this machine's GPUs, or
    /// the CPU where it has none (or the target is another machine's).
    Auto,
    Given(Accelerator),
}

impl ArchChoice {
    /// What was asked for, where it was not `auto`.
    pub fn given(&self) -> Option<&Accelerator> {
        match self {
            ArchChoice::Auto => None,
            ArchChoice::Given(a) => Some(a),
        }
    }
}

impl ArchChoice {
    /// The values a shell completes `--arch` with, each with a line saying what it is:
    /// `auto`, `cpu`, every compute capability with a name (newest first), then every
    /// GPU name. Each parses; a list (`120,121`) and other spellings parse too.
    pub fn completions() -> Vec<(String, String)> {
        use crate::cuda::{describe_cc, Gpu};
        let mut out = vec![
            (
                "auto".to_string(),
                "this machine's GPUs, else the CPU (the default)".to_string(),
            ),
            ("cpu".to_string(), "a CPU-only build".to_string()),
        ];
        for cc in Gpu::judged_capabilities() {
            let what = describe_cc(cc).unwrap_or("GPUs");
            out.push((
                cc.to_string(),
                format!("{what} ({}.{})", cc.major(), cc.minor()),
            ));
        }
        for name in Gpu::names() {
            if let Some(g) = Gpu::lookup(name) {
                let cc = g.arch();
                out.push((
                    name.to_string(),
                    format!("compute capability {}.{}", cc.major(), cc.minor()),
                ));
            }
        }
        out
    }
}

impl From<Accelerator> for ArchChoice {
    fn from(a: Accelerator) -> Self {
        ArchChoice::Given(a)
    }
}

impl FromStr for ArchChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if is_auto(s) {
            return Ok(ArchChoice::Auto);
        }
        s.parse()
            .map(ArchChoice::Given)
            .map_err(|e| format!("{e}, or `auto` (the default) for this machine's GPUs"))
    }
}

impl fmt::Display for ArchChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArchChoice::Auto => f.write_str("auto"),
            ArchChoice::Given(a) => write!(f, "{a}"),
        }
    }
}

impl fmt::Display for Accelerator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Accelerator::Cpu => f.write_str("cpu"),
            Accelerator::Cuda(r) => write!(f, "{r}"),
        }
    }
}

serde_as_string!(Accelerator);

#[cfg(test)]
mod tests {
    use super::*;

    /// `auto` is the command line's alone: a release file, plan or manifest that says
    /// `auto` is refused, saying what to write instead.
    /// Every value a shell offers for `--arch` is one `--arch` takes, once each, and
    /// the table's names and capabilities are all there.
    #[test]
    fn every_completed_arch_parses() {
        let values = ArchChoice::completions();
        let mut seen = std::collections::BTreeSet::new();
        for (v, help) in &values {
            assert!(v.parse::<ArchChoice>().is_ok(), "{v}");
            assert!(!help.is_empty(), "{v}");
            assert!(seen.insert(v.as_str()), "twice: {v}");
        }
        for must in [
            "auto", "cpu", "120", "121", "89", "75", "rtx5090", "gb10", "h100",
        ] {
            assert!(seen.contains(must), "{must}: {values:?}");
        }
        assert_eq!(
            values.len(),
            2 + crate::cuda::Gpu::judged_capabilities().len() + crate::cuda::Gpu::names().count()
        );
    }

    #[test]
    fn auto_is_a_command_line_choice_only() {
        for s in ["auto", "native", "AUTO", " Native "] {
            assert_eq!(s.parse::<ArchChoice>(), Ok(ArchChoice::Auto), "{s}");
            assert!(s.parse::<Accelerator>().is_err(), "{s}");
        }
        assert_eq!(
            "120"
                .parse::<ArchChoice>()
                .unwrap()
                .given()
                .map(ToString::to_string),
            Some("120".into())
        );
        assert_eq!(ArchChoice::Auto.to_string(), "auto");
        insta::assert_snapshot!(
            "auto_in_a_release_file",
            "auto".parse::<Accelerator>().unwrap_err()
        );
        let e = "gpu".parse::<ArchChoice>().unwrap_err();
        assert!(
            e.ends_with(
                "or `cpu` for a CPU-only build, or `auto` (the default) for this machine's GPUs"
            ),
            "{e}"
        );
    }
}
