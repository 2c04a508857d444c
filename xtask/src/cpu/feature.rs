//! The vocabulary of ggml's CPU variants, for every architecture: the ISA features a
//! variant is compiled for ([`Feature`], with ggml's score weights), a variant
//! ([`Variant`]: its features, its score, its library, on ARM its `-march=` flag) and a
//! named CPU ([`CpuModel`]). The tables are in `variants.rs` (x86-64) and `aarch64.rs`.

use std::fmt;

use crate::platform::Arch;

/// An ISA feature a variant is compiled for: ggml's CMake switch without `GGML_` (x86-64)
/// or `GGML_INTERNAL_` (aarch64).
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
    /// aarch64 `DOTPROD` (FEAT_DotProd; Linux hwcap `asimddp`).
    Dotprod,
    /// aarch64 `FP16_VECTOR_ARITHMETIC` (FEAT_FP16; hwcaps `fphp` and `asimdhp`).
    Fp16VectorArithmetic,
    /// aarch64 `SVE` (hwcap `sve`).
    Sve,
    /// aarch64 `MATMUL_INT8` (FEAT_I8MM; hwcap2 `i8mm`).
    MatmulInt8,
    /// aarch64 `SVE2` (hwcap2 `sve2`).
    Sve2,
    /// aarch64 `SME` (hwcap2 `sme`).
    Sme,
}

use Feature::*;

impl Feature {
    /// ggml's score weight (0: checked by no score, e.g. AMX_TILE rides on AMX_INT8).
    /// x86-64: `ggml-cpu/arch/x86/cpu-feats.cpp`; aarch64: `ggml-cpu/arch/arm/cpu-feats.cpp`
    /// (`score += 1<<1` for DOTPROD up to `1<<6` for SME).
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
            Dotprod => 1 << 1,
            Fp16VectorArithmetic => 1 << 2,
            Sve => 1 << 3,
            MatmulInt8 => 1 << 4,
            Sve2 => 1 << 5,
            Sme => 1 << 6,
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
            Dotprod => "DOTPROD",
            Fp16VectorArithmetic => "FP16_VECTOR_ARITHMETIC",
            Sve => "SVE",
            MatmulInt8 => "MATMUL_INT8",
            Sve2 => "SVE2",
            Sme => "SME",
        }
    }

    /// The architecture the feature belongs to.
    pub fn arch(self) -> Arch {
        match self {
            Dotprod | Fp16VectorArithmetic | Sve | MatmulInt8 | Sve2 | Sme => Arch::Aarch64,
            _ => Arch::X86_64,
        }
    }

    /// aarch64: the architecture level ggml bumps `-march` to for this feature and the
    /// extension it appends (`ggml-cpu/CMakeLists.txt`, the `GGML_CPU_ALL_VARIANTS` branch).
    fn arm_march(self) -> Option<(&'static str, &'static str)> {
        match self {
            Dotprod => Some(("armv8.2-a", "+dotprod")),
            Fp16VectorArithmetic => Some(("armv8.2-a", "+fp16")),
            Sve => Some(("armv8.2-a", "+sve")),
            MatmulInt8 => Some(("armv8.6-a", "+i8mm")),
            Sve2 => Some(("armv8.6-a", "+sve2")),
            Sme => Some(("armv9.2-a", "+sme")),
            _ => None,
        }
    }
}

impl fmt::Display for Feature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The order ggml's CMake checks the ARM features in when it builds `-march=`: the
/// extensions are appended in this order, whatever order a variant lists them in, and
/// the level is the last one set (the levels only rise along it).
const ARM_MARCH_ORDER: [Feature; 6] = [Dotprod, Fp16VectorArithmetic, Sve, MatmulInt8, Sve2, Sme];

/// One variant as ggml defines it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variant {
    pub name: &'static str,
    /// The architecture it is built for.
    pub arch: Arch,
    pub features: &'static [Feature],
    /// The CPUs it is meant for.
    pub cpus: &'static str,
    /// In the default set (x86-64: see `variants::SHIPPED_REASON`; aarch64:
    /// `aarch64::SHIPPED_REASON`). Whether the compiler builds it is asked apart.
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

    /// The `-march=` flag ggml compiles an aarch64 variant with (None on x86-64, where
    /// each feature is its own `-m` switch): `armv8-a`, raised to the first level with
    /// each feature asked, plus one extension per feature (`ggml-cpu/CMakeLists.txt`:
    /// `list(APPEND ARCH_FLAGS "-march=${ARM_MCPU}${ARCH_TAGS}")`).
    pub fn march_flag(&self) -> Option<String> {
        if self.arch != Arch::Aarch64 {
            return None;
        }
        let mut level = "armv8-a";
        let mut tags = String::new();
        for f in ARM_MARCH_ORDER {
            if let (true, Some((l, tag))) = (self.features.contains(&f), f.arm_march()) {
                level = l;
                tags.push_str(tag);
            }
        }
        Some(format!("-march={level}{tags}"))
    }
}

/// The CMake target (and library base name) of the variant `name`: `ggml-cpu-haswell`.
pub fn target(name: &str) -> String {
    format!("ggml-cpu-{name}")
}

/// A named CPU model and the features of it ggml checks, for saying which variant it
/// gets. x86-64 models are named as `qemu-x86_64 -cpu` names them; aarch64 ones as
/// `qemu-aarch64 -cpu` does where qemu has the model (`aarch64::QEMU_MODELS`), else as
/// GCC's `-mcpu=` does.
#[derive(Debug, Clone, Copy)]
pub struct CpuModel {
    pub name: &'static str,
    pub features: &'static [Feature],
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_feature_belongs_to_one_arch_and_arm_ones_have_a_march_extension() {
        for f in [Dotprod, Fp16VectorArithmetic, Sve, MatmulInt8, Sve2, Sme] {
            assert_eq!(f.arch(), Arch::Aarch64);
            assert!(f.arm_march().is_some(), "{f}");
        }
        assert_eq!(Sse42.arch(), Arch::X86_64);
        assert_eq!(Sse42.arm_march(), None);
    }

    #[test]
    fn an_x86_variant_has_no_march_flag() {
        let v = Variant {
            name: "haswell",
            arch: Arch::X86_64,
            features: &[Sse42, Avx, F16c, Fma, Avx2, Bmi2],
            cpus: "",
            shipped: true,
        };
        assert_eq!(v.march_flag(), None);
    }

    #[test]
    fn the_march_extensions_follow_cmake_order_not_the_variants_order() {
        // android_armv9.0_1 lists MATMUL_INT8 before FP16_VECTOR_ARITHMETIC; ggml's CMake
        // appends +fp16 before +i8mm all the same.
        let v = Variant {
            name: "android_armv9.0_1",
            arch: Arch::Aarch64,
            features: &[Dotprod, MatmulInt8, Fp16VectorArithmetic, Sve2],
            cpus: "",
            shipped: false,
        };
        assert_eq!(
            v.march_flag().unwrap(),
            "-march=armv8.6-a+dotprod+fp16+i8mm+sve2"
        );
    }
}
