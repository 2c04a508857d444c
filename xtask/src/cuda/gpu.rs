//! GPUs known by name (`rtx5090`, `dgx-spark`, `h100`) and their compute capabilities.

use std::fmt;
use std::str::FromStr;

use super::arch::CudaArch;

/// A GPU the `--arch` option knows by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Gpu {
    Rtx5090,
    Rtx5080,
    Rtx5070Ti,
    Rtx5070,
    Rtx5060Ti,
    Rtx5060,
    Rtx5050,
    RtxPro6000,
    Gb10,
    B200,
    Gb200,
    B300,
    Gb300,
    Thor,
    Gh200,
    H100,
    H200,
    L40s,
    Rtx4090,
    A100,
    Rtx3090,
}

/// (gpu, canonical name, aliases, major, minor).
const GPUS: &[(Gpu, &str, &[&str], u8, u8)] = &[
    (Gpu::Rtx5090, "rtx5090", &[], 12, 0),
    (Gpu::Rtx5080, "rtx5080", &[], 12, 0),
    (Gpu::Rtx5070Ti, "rtx5070ti", &[], 12, 0),
    (Gpu::Rtx5070, "rtx5070", &[], 12, 0),
    (Gpu::Rtx5060Ti, "rtx5060ti", &[], 12, 0),
    (Gpu::Rtx5060, "rtx5060", &[], 12, 0),
    (Gpu::Rtx5050, "rtx5050", &[], 12, 0),
    (Gpu::RtxPro6000, "rtxpro6000", &[], 12, 0),
    (Gpu::Gb10, "gb10", &["dgxspark"], 12, 1),
    (Gpu::B200, "b200", &[], 10, 0),
    (Gpu::Gb200, "gb200", &[], 10, 0),
    (Gpu::B300, "b300", &[], 10, 3),
    (Gpu::Gb300, "gb300", &[], 10, 3),
    (Gpu::Thor, "thor", &["jetsonthor"], 11, 0),
    (Gpu::Gh200, "gh200", &["gracehopper"], 9, 0),
    (Gpu::H100, "h100", &[], 9, 0),
    (Gpu::H200, "h200", &[], 9, 0),
    (Gpu::L40s, "l40s", &[], 8, 9),
    (Gpu::Rtx4090, "rtx4090", &[], 8, 9),
    (Gpu::A100, "a100", &[], 8, 0),
    (Gpu::Rtx3090, "rtx3090", &[], 8, 6),
];

/// The GPUs that come only in aarch64 machines (Grace CPUs, DGX Spark's GB10, Jetson
/// Thor): naming one asks for a linux-aarch64 artifact. (B200, B300 and H100 also come
/// in x86-64 servers.)
const AARCH64_ONLY: &[Gpu] = &[Gpu::Gb10, Gpu::Gb200, Gpu::Gb300, Gpu::Thor, Gpu::Gh200];

impl Gpu {
    /// The CPU arch of every machine with this GPU, where there is only one.
    pub fn only_on(self) -> Option<crate::platform::Arch> {
        AARCH64_ONLY
            .contains(&self)
            .then_some(crate::platform::Arch::Aarch64)
    }

    /// The machine, for messages: `DGX Spark`, `Grace Blackwell (GB200)`.
    pub fn machine(self) -> &'static str {
        match self {
            Gpu::Gb10 => "DGX Spark (GB10)",
            Gpu::Gb200 => "Grace Blackwell (GB200)",
            Gpu::Gb300 => "Grace Blackwell Ultra (GB300)",
            Gpu::Thor => "Jetson Thor",
            Gpu::Gh200 => "Grace Hopper (GH200)",
            _ => self.row().1,
        }
    }

    fn row(self) -> &'static (Gpu, &'static str, &'static [&'static str], u8, u8) {
        GPUS.iter()
            .find(|r| r.0 == self)
            .expect("every Gpu has a row")
    }
    /// Its compute capability (plain).
    pub fn arch(self) -> CudaArch {
        let r = self.row();
        CudaArch::plain(r.3, r.4)
    }
    /// The compute capabilities of the GPUs known by name, each once, newest first.
    pub fn capabilities() -> Vec<CudaArch> {
        let mut ccs: Vec<CudaArch> = GPUS.iter().map(|r| CudaArch::plain(r.3, r.4)).collect();
        ccs.sort();
        ccs.dedup();
        ccs.reverse();
        ccs
    }
    pub fn names() -> impl Iterator<Item = &'static str> {
        GPUS.iter().map(|r| r.1)
    }
}

impl fmt::Display for Gpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.row().1)
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("unknown GPU `{value}`: known names are {}", Gpu::names().collect::<Vec<_>>().join(", "))]
pub struct GpuError {
    pub value: String,
}

impl FromStr for Gpu {
    type Err = GpuError;

    /// Case-insensitive; spaces, `-` and `_` are ignored (`RTX 5060 Ti`, `dgx-spark`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let key: String = s
            .chars()
            .filter(|c| !matches!(c, ' ' | '-' | '_'))
            .collect::<String>()
            .to_ascii_lowercase();
        GPUS.iter()
            .find(|r| r.1 == key || r.2.contains(&key.as_str()))
            .map(|r| r.0)
            .ok_or_else(|| GpuError {
                value: s.to_string(),
            })
    }
}

/// Which products a compute capability means, for reasons and warnings.
pub fn describe_cc(arch: CudaArch) -> Option<&'static str> {
    Some(match (arch.major(), arch.minor()) {
        (12, 0) => "RTX 50 series / RTX PRO 6000 Blackwell",
        (12, 1) => "DGX Spark / GB10",
        (11, 0) => "Jetson Thor",
        (10, 0) => "B200 / GB200, data-center Blackwell",
        (10, 1) => "Jetson Thor under CUDA 12.x",
        (10, 3) => "B300 / GB300, Blackwell Ultra",
        (9, 0) => "Hopper: H100 / H200",
        (8, 9) => "Ada: RTX 40 series / L40S",
        (8, 7) => "Jetson Orin",
        (8, 6) => "Ampere: RTX 30 series / A40 / A10",
        (8, 0) => "Ampere: A100",
        (7, 5) => "Turing: RTX 20 series / T4",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_loosely_and_display_canonically() {
        for (input, shown, cc) in [
            ("RTX 5060 Ti", "rtx5060ti", "120"),
            ("dgx-spark", "gb10", "121"),
            ("DGX_Spark", "gb10", "121"),
            ("Jetson-Thor", "thor", "110"),
            ("GB300", "gb300", "103"),
            ("l40s", "l40s", "89"),
        ] {
            let g: Gpu = input.parse().unwrap();
            assert_eq!(
                (g.to_string(), g.arch().to_string()),
                (shown.to_string(), cc.to_string()),
                "{input}"
            );
        }
        let e = "rtx6090".parse::<Gpu>().unwrap_err().to_string();
        assert!(e.contains("`rtx6090`") && e.contains("rtxpro6000"), "{e}");
        assert!(Gpu::names().all(|n| n.parse::<Gpu>().map(|g| g.to_string()) == Ok(n.to_string())));
    }

    #[test]
    fn describes_the_confusable_capabilities() {
        let d = |s: &str| describe_cc(s.parse().unwrap());
        assert_eq!(d("120a"), Some("RTX 50 series / RTX PRO 6000 Blackwell"));
        assert_eq!(d("100"), Some("B200 / GB200, data-center Blackwell"));
        assert_eq!(d("121"), Some("DGX Spark / GB10"));
        assert_eq!(d("72"), None);
    }

    #[test]
    fn grace_spark_and_thor_are_aarch64_machines_and_the_rest_any() {
        use crate::platform::Arch;
        for (name, only) in [
            ("gb10", Some(Arch::Aarch64)),
            ("dgx-spark", Some(Arch::Aarch64)),
            ("thor", Some(Arch::Aarch64)),
            ("gh200", Some(Arch::Aarch64)),
            ("gb200", Some(Arch::Aarch64)),
            ("gb300", Some(Arch::Aarch64)),
            ("b200", None),
            ("h100", None),
            ("rtx5090", None),
        ] {
            assert_eq!(name.parse::<Gpu>().unwrap().only_on(), only, "{name}");
        }
        assert_eq!("gh200".parse::<Gpu>().unwrap().arch().to_string(), "90");
    }
}
