//! What a build is for: the CPU baseline, and (later) the GPU architectures.

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

impl FromStr for Accelerator {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.eq_ignore_ascii_case("cpu") {
            return Ok(Accelerator::Cpu);
        }
        s.parse()
            .map(Accelerator::Cuda)
            .map_err(|e| format!("{e}; or `cpu` for a CPU-only build"))
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
