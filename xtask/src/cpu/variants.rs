//! ggml's x86-64 CPU backend variants (`GGML_CPU_ALL_VARIANTS`), which of them an
//! artifact ships, and which one a CPU gets at run time.
//!
//! With `GGML_BACKEND_DL` every variant is a module `libggml-cpu-<name>.so`; at load
//! time ggml asks each for its score (`ggml_backend_cpu_x86_score` in
//! `ggml-cpu/arch/x86/cpu-feats.cpp`): 0 when the CPU lacks a feature the variant was
//! compiled for, else the sum of the weights below, and loads the highest. This module
//! mirrors that rule, so the plan can say which variant a given CPU runs.

use std::fmt;

use serde::{Deserialize, Serialize};

/// An ISA feature a variant is compiled for (ggml's CMake switch without `GGML_`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Feature {
    Sse42,
    Avx,
    F16c,
    Fma,
    Avx2,
    Bmi2,
    AvxVnni,
    Avx512,
    Avx512Vbmi,
    Avx512Vnni,
    Avx512Bf16,
    AmxTile,
    AmxInt8,
}

use Feature::*;

impl Feature {
    /// ggml's score weight (0: checked by no score, e.g. AMX_TILE rides on AMX_INT8).
    pub fn weight(self) -> u32 {
        match self {
            Fma => 1,
            F16c => 1 << 1,
            Sse42 => 1 << 2,
            Bmi2 => 1 << 3,
            Avx => 1 << 4,
            Avx2 => 1 << 5,
            AvxVnni => 1 << 6,
            Avx512 => 1 << 7,
            Avx512Vbmi => 1 << 8,
            Avx512Bf16 => 1 << 9,
            Avx512Vnni => 1 << 10,
            AmxInt8 => 1 << 11,
            AmxTile => 0,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Sse42 => "SSE42",
            Avx => "AVX",
            F16c => "F16C",
            Fma => "FMA",
            Avx2 => "AVX2",
            Bmi2 => "BMI2",
            AvxVnni => "AVX_VNNI",
            Avx512 => "AVX512",
            Avx512Vbmi => "AVX512_VBMI",
            Avx512Vnni => "AVX512_VNNI",
            Avx512Bf16 => "AVX512_BF16",
            AmxTile => "AMX_TILE",
            AmxInt8 => "AMX_INT8",
        }
    }
}

impl fmt::Display for Feature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One variant as ggml defines it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variant {
    pub name: &'static str,
    pub features: &'static [Feature],
    /// The CPUs it is meant for.
    pub cpus: &'static str,
    /// Shipped by default (see [`SHIPPED_REASON`]).
    pub shipped: bool,
}

impl Variant {
    /// The library file ggml loads it from (`libggml-cpu-haswell.so`): the CMake target
    /// is `ggml-cpu-<name>`.
    pub fn target(&self) -> String {
        target(self.name)
    }

    /// ggml's score on a CPU with `cpu` features: 0 when it cannot run there.
    pub fn score(&self, cpu: &[Feature]) -> u32 {
        if self.features.iter().all(|f| cpu.contains(f)) {
            1 + self.features.iter().map(|f| f.weight()).sum::<u32>()
        } else {
            0
        }
    }
}

/// The CMake target (and library base name) of the variant `name`: `ggml-cpu-haswell`.
pub fn target(name: &str) -> String {
    format!("ggml-cpu-{name}")
}

const fn v(
    name: &'static str,
    features: &'static [Feature],
    cpus: &'static str,
    shipped: bool,
) -> Variant {
    Variant {
        name,
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

pub fn find(name: &str) -> Option<&'static Variant> {
    VARIANTS.iter().find(|v| v.name == name)
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

/// A named CPU model (as `qemu-x86_64 -cpu` names them) and its features, for saying
/// which variant it gets.
#[derive(Debug, Clone, Copy)]
pub struct CpuModel {
    pub name: &'static str,
    pub features: &'static [Feature],
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
            loaded_on: MODELS
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
}
