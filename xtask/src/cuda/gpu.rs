//! GPUs known by name (`rtx5090`, `dgx-spark`, `h100`, and the names nvidia-smi and NVML
//! print: `NVIDIA GeForce RTX 5090`, `NVIDIA H100 80GB HBM3`) and their compute capabilities.

use std::fmt;
use std::str::FromStr;

use super::arch::CudaArch;

/// A GPU known by name: a row of the table of GPUs with compute capability 7.5 and up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Gpu(&'static Row);

/// One part: its canonical name (lower case, no spaces: what `--arch` prints back), other
/// names for it, and its compute capability.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Row {
    name: &'static str,
    aliases: &'static [&'static str],
    major: u8,
    minor: u8,
}

const fn row(name: &'static str, aliases: &'static [&'static str], major: u8, minor: u8) -> Row {
    Row {
        name,
        aliases,
        major,
        minor,
    }
}

/// Every part with compute capability 7.5 (Turing) and up whose capability is certain.
/// A laptop part not listed here is its desktop namesake's row (`RTX 4090 Laptop GPU`
/// is `rtx4090`: the same chip generation and capability); the laptop-only parts are listed.
/// Bare `rtx4000`, `rtx5000` and `rtx6000` are no row: they are Quadro RTX (7.5) or RTX Ada (8.9).
static GPUS: &[Row] = &[
    // Blackwell, consumer and workstation: 12.0.
    row("rtx5090", &["rtx5090d"], 12, 0),
    row("rtx5080", &[], 12, 0),
    row("rtx5070ti", &[], 12, 0),
    row("rtx5070", &[], 12, 0),
    row("rtx5060ti", &[], 12, 0),
    row("rtx5060", &[], 12, 0),
    row("rtx5050", &[], 12, 0),
    row("rtxpro6000", &[], 12, 0),
    row("rtxpro5000", &[], 12, 0),
    row("rtxpro4500", &[], 12, 0),
    row("rtxpro4000", &["rtxpro4000sff"], 12, 0),
    // DGX Spark: 12.1.
    row("gb10", &["dgxspark"], 12, 1),
    // Jetson Thor: 11.0 (10.1 under CUDA 12).
    row("thor", &["jetsonthor", "agxthor", "jetsonagxthor"], 11, 0),
    // Data-center Blackwell: 10.0; Blackwell Ultra: 10.3.
    row("b200", &[], 10, 0),
    row("gb200", &[], 10, 0),
    row("b300", &[], 10, 3),
    row("gb300", &[], 10, 3),
    // Hopper: 9.0.
    row("gh200", &["gracehopper"], 9, 0),
    row("h100", &[], 9, 0),
    row("h200", &[], 9, 0),
    row("h800", &[], 9, 0),
    row("h20", &[], 9, 0),
    // Ada: 8.9.
    row("rtx4090", &["rtx4090d"], 8, 9),
    row("rtx4080super", &[], 8, 9),
    row("rtx4080", &[], 8, 9),
    row("rtx4070tisuper", &[], 8, 9),
    row("rtx4070ti", &[], 8, 9),
    row("rtx4070super", &[], 8, 9),
    row("rtx4070", &[], 8, 9),
    row("rtx4060ti", &[], 8, 9),
    row("rtx4060", &[], 8, 9),
    row("rtx4050laptop", &["rtx4050"], 8, 9),
    row("rtx6000ada", &[], 8, 9),
    row("rtx5000ada", &[], 8, 9),
    row("rtx4500ada", &[], 8, 9),
    row("rtx4000ada", &[], 8, 9),
    row("rtx4000sffada", &[], 8, 9),
    row("rtx2000ada", &[], 8, 9),
    row("l40s", &[], 8, 9),
    row("l40", &[], 8, 9),
    row("l20", &[], 8, 9),
    row("l4", &[], 8, 9),
    // Jetson Orin: 8.7.
    row(
        "orin",
        &[
            "jetsonorin",
            "agxorin",
            "jetsonagxorin",
            "orinnx",
            "jetsonorinnx",
            "orinnano",
            "jetsonorinnano",
        ],
        8,
        7,
    ),
    // Ampere, consumer and workstation: 8.6.
    row("rtx3090ti", &[], 8, 6),
    row("rtx3090", &[], 8, 6),
    row("rtx3080ti", &[], 8, 6),
    row("rtx3080", &[], 8, 6),
    row("rtx3070ti", &[], 8, 6),
    row("rtx3070", &[], 8, 6),
    row("rtx3060ti", &[], 8, 6),
    row("rtx3060", &[], 8, 6),
    row("rtx3050", &[], 8, 6),
    row("rtx3050tilaptop", &["rtx3050ti"], 8, 6),
    row("rtx2050laptop", &["rtx2050"], 8, 6),
    row("rtxa6000", &[], 8, 6),
    row("rtxa5500", &[], 8, 6),
    row("rtxa5000", &[], 8, 6),
    row("rtxa4500", &[], 8, 6),
    row("rtxa4000", &[], 8, 6),
    row("rtxa2000", &[], 8, 6),
    row("a40", &[], 8, 6),
    row("a16", &[], 8, 6),
    row("a10", &["a10g"], 8, 6),
    row("a2", &[], 8, 6),
    // Ampere, data-center: 8.0.
    row("a100", &[], 8, 0),
    row("a800", &[], 8, 0),
    row("a30", &[], 8, 0),
    // Turing: 7.5.
    row("rtx2080ti", &[], 7, 5),
    row("rtx2080super", &[], 7, 5),
    row("rtx2080", &[], 7, 5),
    row("rtx2070super", &[], 7, 5),
    row("rtx2070", &[], 7, 5),
    row("rtx2060super", &[], 7, 5),
    row("rtx2060", &[], 7, 5),
    row("titanrtx", &[], 7, 5),
    row("gtx1660ti", &[], 7, 5),
    row("gtx1660super", &[], 7, 5),
    row("gtx1660", &[], 7, 5),
    row("gtx1650super", &[], 7, 5),
    row("gtx1650ti", &[], 7, 5),
    row("gtx1650", &[], 7, 5),
    row("gtx1630", &[], 7, 5),
    row("quadrortx8000", &["rtx8000"], 7, 5),
    row("quadrortx6000", &[], 7, 5),
    row("quadrortx5000", &[], 7, 5),
    row("quadrortx4000", &[], 7, 5),
    row("t4", &[], 7, 5),
];

/// The GPUs that come only in aarch64 machines (Grace CPUs, DGX Spark's GB10, Jetson
/// Orin and Thor): naming one asks for a linux-aarch64 artifact. (B200, B300 and H100
/// also come in x86-64 servers.)
const AARCH64_ONLY: &[(&str, &str)] = &[
    ("gb10", "DGX Spark (GB10)"),
    ("gb200", "Grace Blackwell (GB200)"),
    ("gb300", "Grace Blackwell Ultra (GB300)"),
    ("thor", "Jetson Thor"),
    ("orin", "Jetson Orin"),
    ("gh200", "Grace Hopper (GH200)"),
];

/// Words of nvidia-smi's and NVML's names that say nothing about the chip: the brand,
/// the form factor, the memory kind, the edition.
const NOISE: &[&str] = &[
    "nvidia",
    "geforce",
    "tesla",
    "pcie",
    "sxm",
    "sxm2",
    "sxm3",
    "sxm4",
    "sxm5",
    "sxm6",
    "nvl",
    "hbm2",
    "hbm2e",
    "hbm3",
    "hbm3e",
    "workstation",
    "server",
    "edition",
    "generation",
    "gpu",
    "with",
    "maxq",
    "design",
    "blackwell",
    "ac",
    "nvgpu",
];

/// The key a name is looked up by: lower case, `-`/`_`/spaces gone, the [`NOISE`] words
/// and memory sizes (`80gb`) dropped, `mobile` said as `laptop`.
/// `NVIDIA A100-SXM4-80GB` -> `a100`; `NVIDIA GeForce RTX 4060 Laptop GPU` -> `rtx4060laptop`.
fn key(name: &str) -> String {
    let lower = name.to_ascii_lowercase().replace("max-q", "maxq");
    lower
        .split(|c: char| c.is_whitespace() || matches!(c, '-' | '_' | '/' | '(' | ')'))
        .filter(|w| !w.is_empty() && !NOISE.contains(w) && !is_memory_size(w))
        .map(|w| if w == "mobile" { "laptop" } else { w })
        .collect()
}

/// `80gb`, `12g`: a memory size.
fn is_memory_size(word: &str) -> bool {
    let digits = word.trim_end_matches("gb").trim_end_matches('g');
    digits.len() < word.len() && !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

impl Gpu {
    /// The part `name` means: a canonical name, an alias, or a name as nvidia-smi or
    /// NVML prints it. A laptop part not in the table is its desktop namesake.
    pub fn lookup(name: &str) -> Option<Gpu> {
        let k = key(name);
        let find = |k: &str| {
            GPUS.iter()
                .find(|r| key(r.name) == k || r.aliases.iter().any(|a| key(a) == k))
                .map(Gpu)
        };
        if k.is_empty() {
            return None;
        }
        find(&k).or_else(|| find(k.strip_suffix("laptop")?))
    }

    /// The CPU arch of every machine with this GPU, where there is only one.
    pub fn only_on(self) -> Option<crate::platform::Arch> {
        AARCH64_ONLY
            .iter()
            .any(|(n, _)| *n == self.0.name)
            .then_some(crate::platform::Arch::Aarch64)
    }

    /// The machine, for messages: `DGX Spark (GB10)`, `Grace Blackwell (GB200)`.
    pub fn machine(self) -> &'static str {
        AARCH64_ONLY
            .iter()
            .find(|(n, _)| *n == self.0.name)
            .map_or(self.0.name, |(_, m)| m)
    }

    /// Its compute capability (plain).
    pub fn arch(self) -> CudaArch {
        CudaArch::plain(self.0.major, self.0.minor)
    }

    /// The compute capabilities artifacts and plans are judged on (`inspect`, `doctor`,
    /// the plan's "runs on"): every GPU known by name, and every capability from 7.5
    /// (Turing) up that has a name, newest first.
    pub fn judged_capabilities() -> Vec<CudaArch> {
        let mut ccs = Gpu::capabilities();
        for (major, minor) in [(7, 5), (8, 0), (8, 6), (8, 7), (8, 9), (9, 0)] {
            ccs.push(CudaArch::plain(major, minor));
        }
        ccs.sort();
        ccs.dedup();
        ccs.reverse();
        ccs
    }

    /// The compute capabilities of the GPUs known by name, each once, newest first.
    pub fn capabilities() -> Vec<CudaArch> {
        let mut ccs: Vec<CudaArch> = GPUS
            .iter()
            .map(|r| CudaArch::plain(r.major, r.minor))
            .collect();
        ccs.sort();
        ccs.dedup();
        ccs.reverse();
        ccs
    }

    /// The GPU that stands for compute capability `cc` where every GPU of it is in
    /// machines of one CPU arch (12.1: `gb10`, DGX Spark; 11.0: `thor`; 8.7: `orin`), so
    /// `--arch 121` means what `--arch gb10` does. `None` where any is in other machines
    /// (10.0: B200 in x86-64 servers too) or none is known.
    pub fn only_machine_of(cc: CudaArch) -> Option<Gpu> {
        let plain = cc.to_plain();
        let mut of = GPUS.iter().map(Gpu).filter(|g| g.arch() == plain);
        let first = of.next()?;
        let arch = first.only_on()?;
        of.all(|g| g.only_on() == Some(arch)).then_some(first)
    }

    /// Every canonical name.
    pub fn names() -> impl Iterator<Item = &'static str> {
        GPUS.iter().map(|r| r.name)
    }

    /// The known names closest to `name` (at most three, closest first): those that
    /// contain what was typed (`rtx6000`: `rtx6000ada`, `quadrortx6000`), then those a
    /// few edits away (`rtx6090`: `rtx5090`).
    pub fn suggestions(name: &str) -> Vec<&'static str> {
        let k = key(name);
        if k.is_empty() {
            return Vec::new();
        }
        // (rank, row: newest first on ties, name)
        let mut scored: Vec<(usize, usize, &'static str)> = GPUS
            .iter()
            .enumerate()
            .flat_map(|(i, r)| {
                std::iter::once(r.name)
                    .chain(r.aliases.iter().copied())
                    .map(move |n| (i, n))
            })
            .filter_map(|(i, n)| {
                let nk = key(n);
                let d = strsim::damerau_levenshtein(&k, &nk);
                let contains =
                    (k.len() >= 3 && nk.contains(&k)) || (nk.len() >= 3 && k.contains(&nk));
                let near = d <= (k.len() / 4).clamp(1, 3);
                // Names that contain what was typed first, then the nearest.
                (contains || near).then_some((if contains { d } else { 100 + d }, i, n))
            })
            .collect();
        scored.sort();
        let mut out: Vec<&'static str> = Vec::new();
        for (_, _, n) in scored {
            // An alias and its row's name are one suggestion: the name.
            let canonical = Gpu::lookup(n).map_or(n, |g| g.0.name);
            if !out.contains(&canonical) {
                out.push(canonical);
            }
        }
        out.truncate(3);
        out
    }
}

impl fmt::Display for Gpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name)
    }
}

/// A GPU name that is in none of the rows, with the closest names there are.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("unknown GPU `{value}`{}", did_you_mean(suggestions).map(|d| format!(": {d}")).unwrap_or_default())]
pub struct GpuError {
    pub value: String,
    pub suggestions: Vec<&'static str>,
}

/// `did you mean `rtx5090` or `rtx4090`?`, where there are names to suggest.
pub fn did_you_mean(names: &[&str]) -> Option<String> {
    if names.is_empty() {
        return None;
    }
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    Some(format!("did you mean {}?", crate::listed(&quoted, "or")))
}

impl FromStr for Gpu {
    type Err = GpuError;

    /// Case-insensitive; spaces, `-` and `_` are ignored (`RTX 5060 Ti`, `dgx-spark`),
    /// and so are the brand, form and memory words of nvidia-smi's names.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Gpu::lookup(s).ok_or_else(|| GpuError {
            value: s.trim().to_string(),
            suggestions: Gpu::suggestions(s),
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
            ("rtx 4090 laptop", "rtx4090", "89"),
            ("RTX A6000", "rtxa6000", "86"),
            ("rtx6000ada", "rtx6000ada", "89"),
            ("gtx1660super", "gtx1660super", "75"),
        ] {
            let g: Gpu = input.parse().unwrap();
            assert_eq!(
                (g.to_string(), g.arch().to_string()),
                (shown.to_string(), cc.to_string()),
                "{input}"
            );
        }
        assert!(Gpu::names().all(|n| n.parse::<Gpu>().map(|g| g.to_string()) == Ok(n.to_string())));
        // Every alias is its row's, and no two rows share a key.
        let mut keys: Vec<String> = GPUS
            .iter()
            .flat_map(|r| std::iter::once(r.name).chain(r.aliases.iter().copied()))
            .map(key)
            .collect();
        let n = keys.len();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), n, "two rows answer to one name");
    }

    /// The names nvidia-smi (`--query-gpu=name`) and NVML (`nvmlDeviceGetName`) print,
    /// as recorded on these parts, with the row each is and its compute capability.
    #[test]
    fn the_drivers_own_names_parse() {
        for (reported, row, cc) in [
            ("NVIDIA GeForce RTX 5090", "rtx5090", "12.0"),
            ("NVIDIA GeForce RTX 5070 Ti", "rtx5070ti", "12.0"),
            ("NVIDIA GeForce RTX 5060 Laptop GPU", "rtx5060", "12.0"),
            (
                "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
                "rtxpro6000",
                "12.0",
            ),
            (
                "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",
                "rtxpro6000",
                "12.0",
            ),
            (
                "NVIDIA RTX PRO 6000 Blackwell Server Edition",
                "rtxpro6000",
                "12.0",
            ),
            ("NVIDIA RTX PRO 4000 Blackwell", "rtxpro4000", "12.0"),
            ("NVIDIA GB10", "gb10", "12.1"),
            ("NVIDIA B200", "b200", "10.0"),
            ("NVIDIA GB200", "gb200", "10.0"),
            ("NVIDIA B300 SXM6 AC", "b300", "10.3"),
            ("NVIDIA H100 80GB HBM3", "h100", "9.0"),
            ("NVIDIA H100 PCIe", "h100", "9.0"),
            ("NVIDIA H100 NVL", "h100", "9.0"),
            ("NVIDIA H200", "h200", "9.0"),
            ("NVIDIA H200 NVL", "h200", "9.0"),
            ("NVIDIA H800", "h800", "9.0"),
            ("NVIDIA H20", "h20", "9.0"),
            ("NVIDIA GH200 480GB", "gh200", "9.0"),
            ("NVIDIA GeForce RTX 4090", "rtx4090", "8.9"),
            ("NVIDIA GeForce RTX 4090 D", "rtx4090", "8.9"),
            ("NVIDIA GeForce RTX 4070 Ti SUPER", "rtx4070tisuper", "8.9"),
            ("NVIDIA GeForce RTX 4060 Laptop GPU", "rtx4060", "8.9"),
            ("NVIDIA GeForce RTX 4050 Laptop GPU", "rtx4050laptop", "8.9"),
            ("NVIDIA RTX 6000 Ada Generation", "rtx6000ada", "8.9"),
            ("NVIDIA RTX 4000 SFF Ada Generation", "rtx4000sffada", "8.9"),
            (
                "NVIDIA RTX 2000 Ada Generation Laptop GPU",
                "rtx2000ada",
                "8.9",
            ),
            ("NVIDIA L4", "l4", "8.9"),
            ("NVIDIA L40S", "l40s", "8.9"),
            ("NVIDIA L40", "l40", "8.9"),
            ("NVIDIA L20", "l20", "8.9"),
            ("Orin (nvgpu)", "orin", "8.7"),
            ("NVIDIA GeForce RTX 3090", "rtx3090", "8.6"),
            ("NVIDIA GeForce RTX 3080 Ti Laptop GPU", "rtx3080ti", "8.6"),
            (
                "NVIDIA GeForce RTX 3050 Ti Laptop GPU",
                "rtx3050tilaptop",
                "8.6",
            ),
            ("NVIDIA GeForce RTX 2050", "rtx2050laptop", "8.6"),
            ("NVIDIA RTX A6000", "rtxa6000", "8.6"),
            ("NVIDIA RTX A2000 12GB", "rtxa2000", "8.6"),
            ("NVIDIA RTX A5000 Laptop GPU", "rtxa5000", "8.6"),
            ("NVIDIA A10G", "a10", "8.6"),
            ("NVIDIA A10", "a10", "8.6"),
            ("NVIDIA A40", "a40", "8.6"),
            ("NVIDIA A16", "a16", "8.6"),
            ("NVIDIA A2", "a2", "8.6"),
            ("NVIDIA A100-SXM4-80GB", "a100", "8.0"),
            ("NVIDIA A100-PCIE-40GB", "a100", "8.0"),
            ("NVIDIA A100 80GB PCIe", "a100", "8.0"),
            ("NVIDIA A800-SXM4-80GB", "a800", "8.0"),
            ("NVIDIA A30", "a30", "8.0"),
            ("Tesla T4", "t4", "7.5"),
            ("NVIDIA GeForce RTX 2080 Ti", "rtx2080ti", "7.5"),
            (
                "NVIDIA GeForce RTX 2070 with Max-Q Design",
                "rtx2070",
                "7.5",
            ),
            ("NVIDIA GeForce GTX 1660 SUPER", "gtx1660super", "7.5"),
            ("NVIDIA GeForce GTX 1650 Ti", "gtx1650ti", "7.5"),
            ("NVIDIA TITAN RTX", "titanrtx", "7.5"),
            ("Quadro RTX 8000", "quadrortx8000", "7.5"),
            ("Quadro RTX 5000 with Max-Q Design", "quadrortx5000", "7.5"),
        ] {
            let g = Gpu::lookup(reported).unwrap_or_else(|| panic!("`{reported}` is no row"));
            let a = g.arch();
            assert_eq!(
                (g.to_string(), format!("{}.{}", a.major(), a.minor())),
                (row.to_string(), cc.to_string()),
                "{reported}"
            );
        }
    }

    /// An unknown name gets the closest known ones; bare `rtx6000` is two parts.
    #[test]
    fn unknown_names_get_the_closest_known_ones() {
        for (typed, want) in [
            ("rtx6090", &["rtx5090", "rtx4090", "rtx3090"][..]),
            ("rtx5900", &["rtx5090"]),
            ("h10", &["h100", "h20", "a10"]),
            ("rtx6000", &["rtx6000ada", "quadrortx6000", "rtxa6000"]),
            ("NVIDIA GeForce RTX 4095", &["rtx4090"]),
            ("gpu", &[]),
            ("radeon", &[]),
        ] {
            let e = typed.parse::<Gpu>().unwrap_err();
            assert_eq!(e.suggestions, want, "{typed}");
        }
        insta::assert_snapshot!(
            "unknown_gpu",
            "rtx6090".parse::<Gpu>().unwrap_err().to_string()
        );
        assert_eq!(
            "radeon".parse::<Gpu>().unwrap_err().to_string(),
            "unknown GPU `radeon`"
        );
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
    fn grace_spark_jetson_are_aarch64_machines_and_the_rest_any() {
        use crate::platform::Arch;
        for (name, only) in [
            ("gb10", Some(Arch::Aarch64)),
            ("dgx-spark", Some(Arch::Aarch64)),
            ("thor", Some(Arch::Aarch64)),
            ("jetson orin", Some(Arch::Aarch64)),
            ("gh200", Some(Arch::Aarch64)),
            ("gb200", Some(Arch::Aarch64)),
            ("gb300", Some(Arch::Aarch64)),
            ("b200", None),
            ("h100", None),
            ("rtx5090", None),
            ("t4", None),
        ] {
            assert_eq!(name.parse::<Gpu>().unwrap().only_on(), only, "{name}");
        }
        assert_eq!("gh200".parse::<Gpu>().unwrap().arch().to_string(), "90");
        assert_eq!("orin".parse::<Gpu>().unwrap().machine(), "Jetson Orin");
        assert_eq!("h100".parse::<Gpu>().unwrap().machine(), "h100");
    }
}
