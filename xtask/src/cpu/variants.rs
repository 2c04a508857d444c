//! ggml's CPU backend variants (`GGML_CPU_ALL_VARIANTS`): the x86-64 table (the
//! aarch64 one is `aarch64.rs`), which of them an artifact ships, and which one a CPU
//! gets at run time.
//!
//! With `GGML_BACKEND_DL` every variant is a module `libggml-cpu-<name>.so`; at load
//! time ggml asks each for its score (`ggml_backend_cpu_x86_score` in
//! `ggml-cpu/arch/x86/cpu-feats.cpp`, `ggml_backend_cpu_aarch64_score` in
//! `ggml-cpu/arch/arm/cpu-feats.cpp`): 0 when the CPU lacks a feature the variant was
//! compiled for, else 1 plus the sum of the features' weights, and loads the highest.
//! This module mirrors that rule, so the plan can say which variant a given CPU runs.
//! [`decide`] says for every variant of an architecture whether an artifact ships it
//! and why not; [`shipped`] is the x86-64 answer the plan has always asked.

use serde::{Deserialize, Serialize};

pub use super::feature::{target, CpuModel, Feature, Variant};

use super::aarch64;
use crate::platform::host::CompilerKind;
use crate::platform::Arch;

use Feature::*;

const fn v(
    name: &'static str,
    features: &'static [Feature],
    cpus: &'static str,
    shipped: bool,
) -> Variant {
    Variant {
        name,
        arch: Arch::X86_64,
        features,
        cpus,
        shipped,
    }
}

/// Every x86-64 variant of the llama.cpp releases the recipes build (0.3.36's
/// `ggml/src/CMakeLists.txt` has all 14; 0.3.16's has x64, sse42, sandybridge,
/// haswell, skylakex, icelake, alderlake, sapphirerapids), oldest first.
pub const VARIANTS: &[Variant] = &[
    v(
        "x64",
        &[],
        "any x86-64 (no SSE4.2): below every baseline offered",
        false,
    ),
    v(
        "sse42",
        &[Sse42],
        "Nehalem (2008) and newer; Atom/Celeron/Pentium without AVX (Goldmont, Tremont)",
        true,
    ),
    v(
        "sandybridge",
        &[Sse42, Avx],
        "Sandy Bridge (2011), AMD Bulldozer: AVX without AVX2",
        false,
    ),
    v("ivybridge", &[Sse42, Avx, F16c], "Ivy Bridge (2012)", false),
    v(
        "piledriver",
        &[Sse42, Avx, F16c, Fma],
        "AMD Piledriver (2012)",
        false,
    ),
    v(
        "haswell",
        &[Sse42, Avx, F16c, Fma, Avx2, Bmi2],
        "Haswell (2013) to Comet Lake, AMD Zen 1-3: x86-64-v3",
        true,
    ),
    v(
        "skylakex",
        &[Sse42, Avx, F16c, Fma, Avx2, Bmi2, Avx512],
        "Skylake-SP/X (2017), Cascade Lake",
        false,
    ),
    v(
        "cannonlake",
        &[Sse42, Avx, F16c, Fma, Avx2, Bmi2, Avx512, Avx512Vbmi],
        "Cannon Lake (2018)",
        false,
    ),
    v(
        "cascadelake",
        &[Sse42, Avx, F16c, Fma, Avx2, Bmi2, Avx512, Avx512Vnni],
        "Cascade Lake (2019)",
        false,
    ),
    v(
        "icelake",
        &[
            Sse42, Avx, F16c, Fma, Avx2, Bmi2, Avx512, Avx512Vbmi, Avx512Vnni,
        ],
        "Ice Lake (2019), Tiger/Rocket Lake, AMD Zen 4/5",
        true,
    ),
    v(
        "cooperlake",
        &[
            Sse42, Avx, F16c, Fma, Avx2, Bmi2, Avx512, Avx512Vnni, Avx512Bf16,
        ],
        "Cooper Lake (2020)",
        false,
    ),
    v(
        "zen4",
        &[
            Sse42, Avx, F16c, Fma, Avx2, Bmi2, Avx512, Avx512Vbmi, Avx512Vnni, Avx512Bf16,
        ],
        "AMD Zen 4/5 (2022)",
        false,
    ),
    v(
        "alderlake",
        &[Sse42, Avx, F16c, Fma, Avx2, Bmi2, AvxVnni],
        "Alder Lake (2021) to Arrow Lake: AVX-VNNI, no AVX-512",
        true,
    ),
    v(
        "sapphirerapids",
        &[
            Sse42, Avx, F16c, Fma, Avx2, Bmi2, Avx512, Avx512Vbmi, Avx512Vnni, Avx512Bf16, AmxTile,
            AmxInt8,
        ],
        "Sapphire Rapids (2023) and newer Xeons: AMX",
        true,
    ),
];

/// Why the default set is what it is.
pub const SHIPPED_REASON: &str = "five variants cover the CPUs people run: sse42 (the x86-64-v2 floor), haswell (x86-64-v3: desktops and laptops since 2013, AMD Zen 1-3, Skylake/Cascade Lake servers), alderlake (AVX-VNNI: Intel 12th gen and newer), icelake (AVX-512 with VBMI and VNNI: Ice Lake, AMD Zen 4/5) and sapphirerapids (AMX: current Xeons); together 2.7 MB deflated for 0.3.36, against 7.4 MB for all 14; the other nine differ from one of these by a feature quantized models barely use (AVX without AVX2, AVX-512 without VNNI, BF16) or name rare CPUs, and a CPU that would have picked one of them loads the next lower shipped variant";

/// The x86-64 variants an artifact ships: the default set, from the baseline's
/// floor up (a variant needing less than the floor is never loaded on a CPU
/// the baseline allows... it is still the floor: with `x86-64-v2`, `sse42`).
pub fn shipped(floor: &[Feature]) -> Vec<&'static Variant> {
    VARIANTS
        .iter()
        .filter(|v| v.shipped && floor.iter().all(|f| v.features.contains(f)))
        .collect()
}

/// The variant named `name`, of either architecture (the names differ).
pub fn find(name: &str) -> Option<&'static Variant> {
    VARIANTS
        .iter()
        .chain(aarch64::VARIANTS)
        .find(|v| v.name == name)
}

/// The variant ggml loads on a CPU with `cpu` features, among `shipped`: the highest
/// score, the first on a tie (ggml keeps the first it sees with a higher score).
pub fn selected<'a>(shipped: &[&'a Variant], cpu: &[Feature]) -> Option<&'a Variant> {
    let mut best: Option<(&Variant, u32)> = None;
    for v in shipped {
        let s = v.score(cpu);
        if s > 0 && best.is_none_or(|(_, b)| s > b) {
            best = Some((v, s));
        }
    }
    best.map(|(v, _)| v)
}

/// CPU models that stand for the CPUs people have, with the features ggml checks.
pub const MODELS: &[CpuModel] = &[
    CpuModel {
        name: "Nehalem",
        features: &[Sse42],
    },
    CpuModel {
        name: "SandyBridge",
        features: &[Sse42, Avx],
    },
    CpuModel {
        name: "Haswell",
        features: &[Sse42, Avx, F16c, Fma, Avx2, Bmi2],
    },
    CpuModel {
        name: "Skylake-Server",
        features: &[Sse42, Avx, F16c, Fma, Avx2, Bmi2, Avx512],
    },
    CpuModel {
        name: "Cascadelake-Server",
        features: &[Sse42, Avx, F16c, Fma, Avx2, Bmi2, Avx512, Avx512Vnni],
    },
    CpuModel {
        name: "Icelake-Server",
        features: &[
            Sse42, Avx, F16c, Fma, Avx2, Bmi2, Avx512, Avx512Vbmi, Avx512Vnni,
        ],
    },
    CpuModel {
        name: "AlderLake",
        features: &[Sse42, Avx, F16c, Fma, Avx2, Bmi2, AvxVnni],
    },
    CpuModel {
        name: "EPYC-Genoa",
        features: &[
            Sse42, Avx, F16c, Fma, Avx2, Bmi2, Avx512, Avx512Vbmi, Avx512Vnni, Avx512Bf16,
        ],
    },
    CpuModel {
        name: "SapphireRapids",
        features: &[
            Sse42, Avx, F16c, Fma, Avx2, Bmi2, AvxVnni, Avx512, Avx512Vbmi, Avx512Vnni, Avx512Bf16,
            AmxTile, AmxInt8,
        ],
    },
];

/// Every variant ggml defines for `arch` (on Linux), in ggml's order.
pub fn variants(arch: Arch) -> &'static [Variant] {
    match arch {
        Arch::X86_64 => VARIANTS,
        Arch::Aarch64 => aarch64::VARIANTS,
    }
}

/// The named CPUs of `arch` the plan says the variants are loaded on.
pub fn models(arch: Arch) -> &'static [CpuModel] {
    match arch {
        Arch::X86_64 => MODELS,
        Arch::Aarch64 => aarch64::MODELS,
    }
}

/// Why the default set of `arch` is what it is.
pub fn shipped_reason(arch: Arch) -> &'static str {
    match arch {
        Arch::X86_64 => SHIPPED_REASON,
        Arch::Aarch64 => aarch64::SHIPPED_REASON,
    }
}

/// Why an artifact leaves a variant out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skip {
    /// The compiler cannot build it (the reason: [`aarch64::compiler_rejects`]).
    Compiler(String),
    /// Not in the default set ([`shipped_reason`]).
    NotDefault,
    /// It needs less than the floor: the floor's own variant outranks it on every CPU
    /// the baseline allows.
    BelowFloor,
}

impl std::fmt::Display for Skip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Skip::Compiler(reason) => f.write_str(reason),
            Skip::NotDefault => f.write_str("not in the default set"),
            Skip::BelowFloor => f.write_str(
                "below the baseline's floor: a variant needing more outranks it on every CPU the baseline allows",
            ),
        }
    }
}

/// One variant of an architecture, and whether an artifact ships it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub variant: &'static Variant,
    /// None: shipped.
    pub skipped: Option<Skip>,
}

/// For every variant of `arch` (ggml's order), whether an artifact built by `compiler`
/// (its kind and major version) for CPUs with at least `floor` ships it, and if not why:
/// the compiler first, then the default set, then the floor. x86-64: the floor is the
/// `--cpu-baseline`'s (`CpuBaseline::floor`) and the shipped ones are [`shipped`]'s
/// (the platform's own gate, `Platform::builds_cpu_variant`, still applies); aarch64:
/// the floor is [`aarch64::FLOOR`].
pub fn decide(arch: Arch, floor: &[Feature], compiler: CompilerKind, major: u32) -> Vec<Decision> {
    variants(arch)
        .iter()
        .map(|v| {
            let skipped = if let Some(reason) = aarch64::compiler_rejects(v, compiler, major) {
                Some(Skip::Compiler(reason))
            } else if !v.shipped {
                Some(Skip::NotDefault)
            } else if !floor.iter().all(|f| v.features.contains(f)) {
                Some(Skip::BelowFloor)
            } else {
                None
            };
            Decision {
                variant: v,
                skipped,
            }
        })
        .collect()
}

/// The variants of `arch` an artifact ships: [`decide`]'s unskipped ones.
pub fn shipped_for(
    arch: Arch,
    floor: &[Feature],
    compiler: CompilerKind,
    major: u32,
) -> Vec<&'static Variant> {
    decide(arch, floor, compiler, major)
        .into_iter()
        .filter(|d| d.skipped.is_none())
        .map(|d| d.variant)
        .collect()
}

/// A shipped variant as the plan and the manifest record it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ShippedVariant {
    pub name: String,
    /// The library file (`libggml-cpu-haswell.so`).
    pub file: String,
    /// ggml's switches it is compiled with.
    pub features: Vec<String>,
    pub cpus: String,
    /// The CPU models of [`MODELS`] that load this variant.
    pub loaded_on: Vec<String>,
}

/// The record of `shipped`, with the file name each has on `library_file`'s platform.
pub fn record(shipped: &[&Variant], library_file: impl Fn(&str) -> String) -> Vec<ShippedVariant> {
    shipped
        .iter()
        .map(|v| ShippedVariant {
            name: v.name.to_string(),
            file: library_file(&v.target()),
            features: v.features.iter().map(|f| f.to_string()).collect(),
            cpus: v.cpus.to_string(),
            loaded_on: models(v.arch)
                .iter()
                .filter(|m| selected(shipped, m.features).is_some_and(|s| s.name == v.name))
                .map(|m| m.name.to_string())
                .collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(vs: &[&Variant]) -> Vec<&'static str> {
        vs.iter().map(|v| v.name).collect()
    }

    #[test]
    fn the_floor_decides_the_oldest_variant_shipped() {
        assert_eq!(
            names(&shipped(&[Sse42])),
            ["sse42", "haswell", "icelake", "alderlake", "sapphirerapids"]
        );
        assert_eq!(
            names(&shipped(&[Sse42, Avx, F16c, Fma, Avx2, Bmi2])),
            ["haswell", "icelake", "alderlake", "sapphirerapids"]
        );
    }

    #[test]
    fn each_model_gets_the_variant_ggml_would_pick() {
        let s = shipped(&[Sse42]);
        let pick = |m: &str| {
            let m = MODELS.iter().find(|x| x.name == m).unwrap();
            selected(&s, m.features).map(|v| v.name)
        };
        assert_eq!(pick("Nehalem"), Some("sse42"));
        // AVX without AVX2: the next lower shipped variant.
        assert_eq!(pick("SandyBridge"), Some("sse42"));
        assert_eq!(pick("Haswell"), Some("haswell"));
        // AVX-512 without VBMI/VNNI: haswell's AVX2 code.
        assert_eq!(pick("Skylake-Server"), Some("haswell"));
        assert_eq!(pick("Cascadelake-Server"), Some("haswell"));
        assert_eq!(pick("Icelake-Server"), Some("icelake"));
        assert_eq!(pick("AlderLake"), Some("alderlake"));
        assert_eq!(pick("EPYC-Genoa"), Some("icelake"));
        assert_eq!(pick("SapphireRapids"), Some("sapphirerapids"));
        // A CPU without SSE4.2 gets nothing: below the floor.
        assert_eq!(selected(&s, &[]), None);
    }

    #[test]
    fn scores_follow_ggml() {
        // ggml: 1 + SSE42(4) + AVX(16) + F16C(2) + FMA(1) + AVX2(32) + BMI2(8) = 64 for haswell.
        let h = find("haswell").unwrap();
        assert_eq!(h.score(h.features), 64);
        assert_eq!(h.score(&[Sse42, Avx]), 0);
        // AVX-512 outranks AVX-VNNI: a CPU with both (Sapphire Rapids without AMX) picks icelake.
        let both = [
            Sse42, Avx, F16c, Fma, Avx2, Bmi2, AvxVnni, Avx512, Avx512Vbmi, Avx512Vnni,
        ];
        let without_amx: Vec<&Variant> = shipped(&[Sse42])
            .into_iter()
            .filter(|v| v.name != "sapphirerapids")
            .collect();
        assert_eq!(selected(&without_amx, &both).unwrap().name, "icelake");
    }

    #[test]
    fn every_shipped_variant_is_some_models_pick() {
        let s = shipped(&[Sse42]);
        for r in record(&s, |t| format!("lib{t}.so")) {
            assert!(!r.loaded_on.is_empty(), "{} is loaded by no model", r.name);
        }
    }

    #[test]
    fn shipped_for_x86_is_what_shipped_always_said() {
        for floor in [&[Sse42][..], &[Sse42, Avx, F16c, Fma, Avx2, Bmi2]] {
            assert_eq!(
                names(&shipped_for(Arch::X86_64, floor, CompilerKind::Gcc, 12)),
                names(&shipped(floor))
            );
        }
        let v3 = decide(
            Arch::X86_64,
            &[Sse42, Avx, F16c, Fma, Avx2, Bmi2],
            CompilerKind::Gcc,
            12,
        );
        let why = |n: &str| {
            v3.iter()
                .find(|d| d.variant.name == n)
                .unwrap()
                .skipped
                .clone()
        };
        assert_eq!(why("x64"), Some(Skip::NotDefault));
        assert_eq!(why("sse42"), Some(Skip::BelowFloor));
        assert_eq!(why("haswell"), None);
    }

    #[test]
    fn an_aarch64_artifact_ships_every_variant_gcc_12_builds() {
        let decisions = decide(Arch::Aarch64, aarch64::FLOOR, CompilerKind::Gcc, 12);
        let shipped: Vec<&str> = decisions
            .iter()
            .filter(|d| d.skipped.is_none())
            .map(|d| d.variant.name)
            .collect();
        assert_eq!(
            shipped,
            [
                "armv8.0_1",
                "armv8.2_1",
                "armv8.2_2",
                "armv8.2_3",
                "armv8.6_1",
                "armv8.6_2"
            ]
        );
        let skipped: Vec<(&str, String)> = decisions
            .iter()
            .filter_map(|d| d.skipped.as_ref().map(|s| (d.variant.name, s.to_string())))
            .collect();
        assert_eq!(skipped.len(), 2);
        assert_eq!(skipped[0].0, "armv9.2_1");
        assert_eq!(skipped[1].0, "armv9.2_2");
        assert!(
            skipped[0].1.starts_with("GCC 12 has no +sme"),
            "{}",
            skipped[0].1
        );
        assert_eq!(
            names(&shipped_for(
                Arch::Aarch64,
                aarch64::FLOOR,
                CompilerKind::Gcc,
                12
            )),
            shipped
        );
        // A GCC with SME would ship all eight.
        assert_eq!(
            shipped_for(Arch::Aarch64, aarch64::FLOOR, CompilerKind::Gcc, 14).len(),
            8
        );
    }

    #[test]
    fn each_aarch64_cpu_gets_the_variant_ggml_would_pick() {
        let gcc12 = shipped_for(Arch::Aarch64, aarch64::FLOOR, CompilerKind::Gcc, 12);
        let all: Vec<&Variant> = variants(Arch::Aarch64).iter().collect();
        let pick = |among: &[&'static Variant], m: &str| {
            let m = models(Arch::Aarch64)
                .iter()
                .find(|x| x.name == m)
                .unwrap_or_else(|| panic!("no model {m}"));
            selected(among, m.features).map(|v| v.name)
        };
        for (model, gets) in [
            // Measured: a wheel's tools under qemu-aarch64 -cpu cortex-a57 load armv8.0_1.
            ("cortex-a57", "armv8.0_1"),
            ("cortex-a72", "armv8.0_1"),
            // SVE without DOTPROD: only the ARMv8.0 variant runs.
            ("a64fx", "armv8.0_1"),
            ("cortex-a76", "armv8.2_2"),
            ("neoverse-n1", "armv8.2_2"),
            ("cortex-a78ae", "armv8.2_2"),
            ("neoverse-v1", "armv8.6_1"),
            ("neoverse-v2", "armv8.6_2"),
            ("neoverse-n2", "armv8.6_2"),
            ("cortex-x925", "armv8.6_2"),
            ("neoverse-v3ae", "armv8.6_2"),
            // Measured: qemu-aarch64 -cpu max loads armv8.6_2 (GCC 12 builds no SME variant).
            ("max", "armv8.6_2"),
        ] {
            assert_eq!(pick(&gcc12, model), Some(gets), "{model}");
        }
        // Had the compiler built them: only SME changes a pick, and of these CPUs only
        // qemu's max has it.
        assert_eq!(pick(&all, "max"), Some("armv9.2_2"));
        for m in aarch64::MODELS.iter().filter(|m| m.name != "max") {
            assert_eq!(pick(&all, m.name), pick(&gcc12, m.name), "{}", m.name);
        }
        // I8MM without SVE (`qemu-aarch64 -cpu max,sve=off,sme=off`, measured with
        // ggml's score: 1 3 7 then 0): armv8.2_2.
        assert_eq!(
            selected(&gcc12, &[Dotprod, Fp16VectorArithmetic, MatmulInt8]).map(|v| v.name),
            Some("armv8.2_2")
        );
        // Every aarch64 CPU runs at least armv8.0_1.
        assert_eq!(selected(&gcc12, &[]).map(|v| v.name), Some("armv8.0_1"));
    }

    #[test]
    fn the_aarch64_record_names_its_own_models_and_files() {
        let s = shipped_for(Arch::Aarch64, aarch64::FLOOR, CompilerKind::Gcc, 12);
        let r = record(&s, |t| format!("lib{t}.so"));
        let by = |n: &str| r.iter().find(|v| v.name == n).unwrap();
        assert_eq!(by("armv8.0_1").file, "libggml-cpu-armv8.0_1.so");
        assert_eq!(
            by("armv8.0_1").loaded_on,
            ["cortex-a57", "cortex-a72", "a64fx"]
        );
        assert_eq!(
            by("armv8.6_2").loaded_on,
            [
                "neoverse-v2",
                "neoverse-n2",
                "cortex-x925",
                "neoverse-v3ae",
                "max"
            ]
        );
        assert_eq!(
            by("armv8.6_2").features,
            [
                "DOTPROD",
                "FP16_VECTOR_ARITHMETIC",
                "SVE",
                "MATMUL_INT8",
                "SVE2"
            ]
        );
        // Two steps of ggml's chain are no named CPU's pick (shipped all the same).
        let unpicked: Vec<&str> = r
            .iter()
            .filter(|v| v.loaded_on.is_empty())
            .map(|v| v.name.as_str())
            .collect();
        assert_eq!(unpicked, ["armv8.2_1", "armv8.2_3"]);
        // The x86-64 record is unchanged: its models, not the aarch64 ones.
        let x = record(&shipped(&[Sse42]), |t| format!("lib{t}.so"));
        assert_eq!(x[0].loaded_on, ["Nehalem", "SandyBridge"]);
    }

    #[test]
    fn find_knows_both_architectures() {
        assert_eq!(find("haswell").unwrap().arch, Arch::X86_64);
        assert_eq!(find("armv8.6_2").unwrap().arch, Arch::Aarch64);
        assert_eq!(find("armv9.9_9"), None);
    }
}
