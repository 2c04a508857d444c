//! ggml's aarch64 CPU backend variants on Linux (`GGML_CPU_ALL_VARIANTS` with
//! `GGML_BACKEND_DL`), which of them a compiler builds, and the CPUs people run them on.
//!
//! ggml names each variant after the ARM architecture version that first had its
//! features (`ggml/src/CMakeLists.txt`, the `GGML_SYSTEM_ARCH STREQUAL "ARM"` branch,
//! `CMAKE_SYSTEM_NAME MATCHES "Linux"`; the same eight in 0.3.16 and 0.3.36), compiles it
//! with one `-march=` flag ([`Variant::march_flag`]) and scores it at load time like the
//! x86-64 ones: 0 when the CPU lacks a feature, else 1 plus the features' weights
//! (`ggml-cpu/arch/arm/cpu-feats.cpp`), the CPU's features read from the Linux hwcaps
//! (`ggml-feats.h`: [`features_from_cpuinfo`] reads the same ones from `/proc/cpuinfo`).
//! The features form a chain, so every variant has its own score and a CPU loads the
//! variant of the longest run of the chain it has.

use super::feature::{CpuModel, Feature, Variant};
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
        arch: Arch::Aarch64,
        features,
        cpus,
        shipped,
    }
}

/// Every aarch64 Linux variant of the llama.cpp releases the recipes build (0.3.36's
/// `ggml/src/CMakeLists.txt` lines 524-531, 0.3.16's lines 334-341), in ggml's order.
/// All are in the default set: what a compiler cannot build is left out by
/// [`compiler_rejects`].
pub const VARIANTS: &[Variant] = &[
    v(
        "armv8.0_1",
        &[],
        "any aarch64 (ARMv8.0): Cortex-A53/A57/A72 (Raspberry Pi 3/4, Jetson Nano/TX2), A64FX (SVE without DOTPROD)",
        true,
    ),
    v(
        "armv8.2_1",
        &[Dotprod],
        "DOTPROD without FP16 arithmetic (no CPU of MODELS)",
        true,
    ),
    v(
        "armv8.2_2",
        &[Dotprod, Fp16VectorArithmetic],
        "Neoverse N1 (Graviton2, Ampere Altra), Cortex-A76/A78AE (Raspberry Pi 5, Jetson Orin); I8MM without SVE",
        true,
    ),
    v(
        "armv8.2_3",
        &[Dotprod, Fp16VectorArithmetic, Sve],
        "SVE without I8MM (no CPU of MODELS)",
        true,
    ),
    v(
        "armv8.6_1",
        &[Dotprod, Fp16VectorArithmetic, Sve, MatmulInt8],
        "Neoverse V1 (Graviton3): SVE and I8MM without SVE2",
        true,
    ),
    v(
        "armv8.6_2",
        &[Dotprod, Fp16VectorArithmetic, Sve, MatmulInt8, Sve2],
        "ARMv9 without SME: Neoverse V2 (Grace, Graviton4), Neoverse N2, Cortex-X925/A725 (DGX Spark GB10), Neoverse V3AE (Jetson Thor)",
        true,
    ),
    v(
        "armv9.2_1",
        &[Dotprod, Fp16VectorArithmetic, Sve, MatmulInt8, Sme],
        "SME with SVE but without SVE2",
        true,
    ),
    v(
        "armv9.2_2",
        &[Dotprod, Fp16VectorArithmetic, Sve, MatmulInt8, Sve2, Sme],
        "SME and SVE2 (qemu -cpu max)",
        true,
    ),
];

/// The features every aarch64 CPU has, as ggml checks them: none (ARMv8.0).
pub const FLOOR: &[Feature] = &[];

/// Why the default set is what it is.
pub const SHIPPED_REASON: &str = "every variant the compiler builds ships: GCC 12 builds six (armv8.0_1 to armv8.6_2), one per step of ggml's feature chain (DOTPROD, FP16, SVE, I8MM, SVE2), so each CPU loads the variant of the longest run of that chain it has: Cortex-A57/A72 armv8.0_1, Neoverse N1 and Cortex-A76/A78AE armv8.2_2, Neoverse V1 armv8.6_1, Neoverse V2 (Grace), Cortex-X925/A725 (DGX Spark GB10) and Neoverse V3AE (Jetson Thor) armv8.6_2; the armv9.2 variants (SME) need a compiler with +sme, and of the CPUs named only qemu's max has SME";

/// Why `compiler` (its kind and major version) cannot build the variant `v`, or None.
/// Only GCC is gated: SME (`+sme`, `armv9.2-a`) came with GCC 14; Debian 12's
/// `aarch64-linux-gnu-gcc` 12.2 rejects both armv9.2 flags ("unknown value ... for
/// -march"; its newest levels are armv8.8-a and armv9-a) and builds the other six
/// (measured). Other compilers are not gated here; x86-64 variants never are (their
/// gates are the platform's).
pub fn compiler_rejects(v: &Variant, compiler: CompilerKind, major: u32) -> Option<String> {
    if v.arch != Arch::Aarch64 || compiler != CompilerKind::Gcc {
        return None;
    }
    if v.features.contains(&Sme) && major < 14 {
        let flag = v.march_flag().unwrap_or_default();
        return Some(format!(
            "GCC {major} has no +sme (nor armv9.2-a): it rejects ggml's `{flag}`; GCC supports SME from 14"
        ));
    }
    None
}

/// The features ggml checks, from the `Features` line of `/proc/cpuinfo` (the words the
/// kernel prints for the hwcaps `ggml-feats.h` reads): `asimddp` DOTPROD, `fphp` and
/// `asimdhp` both FP16 arithmetic (0.3.16 read `fphp` alone), `sve`, `i8mm`, `sve2`, `sme`.
pub fn features_from_cpuinfo(features: &str) -> Vec<Feature> {
    let words: Vec<&str> = features.split_whitespace().collect();
    let has = |w: &str| words.contains(&w);
    let mut out = Vec::new();
    for (feature, needs) in [
        (Dotprod, &["asimddp"][..]),
        (Fp16VectorArithmetic, &["fphp", "asimdhp"]),
        (Sve, &["sve"]),
        (MatmulInt8, &["i8mm"]),
        (Sve2, &["sve2"]),
        (Sme, &["sme"]),
    ] {
        if needs.iter().all(|n| has(n)) {
            out.push(feature);
        }
    }
    out
}

/// The CPU models `qemu-aarch64` 7.2 (Debian 12) has (`qemu-aarch64 -cpu help`).
pub const QEMU_MODELS: &[&str] = &[
    "a64fx",
    "cortex-a35",
    "cortex-a53",
    "cortex-a57",
    "cortex-a72",
    "cortex-a76",
    "max",
    "neoverse-n1",
];

const fn m(name: &'static str, features: &'static [Feature]) -> CpuModel {
    CpuModel { name, features }
}

const ARMV9_NO_SME: &[Feature] = &[Dotprod, Fp16VectorArithmetic, Sve, MatmulInt8, Sve2];

/// aarch64 CPUs people run, with the features ggml checks. Those of [`QEMU_MODELS`]
/// are as `qemu-aarch64 -cpu <name>` reports them in its hwcaps (measured); the others
/// from Arm's manuals: Neoverse V2, N2, V3AE and Cortex-X925/A725 are ARMv9 with SVE2 and
/// I8MM and without SME.
pub const MODELS: &[CpuModel] = &[
    // Jetson Nano/TX1/TX2 (qemu, measured: loads armv8.0_1).
    m("cortex-a57", &[]),
    // Raspberry Pi 4, Graviton1.
    m("cortex-a72", &[]),
    // Fujitsu A64FX (Fugaku): SVE and FP16 without DOTPROD.
    m("a64fx", &[Fp16VectorArithmetic, Sve]),
    // Raspberry Pi 5.
    m("cortex-a76", &[Dotprod, Fp16VectorArithmetic]),
    // Graviton2, Ampere Altra.
    m("neoverse-n1", &[Dotprod, Fp16VectorArithmetic]),
    // Jetson Orin.
    m("cortex-a78ae", &[Dotprod, Fp16VectorArithmetic]),
    // Graviton3.
    m(
        "neoverse-v1",
        &[Dotprod, Fp16VectorArithmetic, Sve, MatmulInt8],
    ),
    // NVIDIA Grace, Graviton4.
    m("neoverse-v2", ARMV9_NO_SME),
    // Azure Cobalt 100, Alibaba Yitian 710.
    m("neoverse-n2", ARMV9_NO_SME),
    // DGX Spark's GB10 (with Cortex-A725 cores of the same features).
    m("cortex-x925", ARMV9_NO_SME),
    // Jetson Thor.
    m("neoverse-v3ae", ARMV9_NO_SME),
    // qemu -cpu max: every feature, SME too (measured: loads armv8.6_2 of GCC 12's six).
    m(
        "max",
        &[Dotprod, Fp16VectorArithmetic, Sve, MatmulInt8, Sve2, Sme],
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn find(name: &str) -> &'static Variant {
        VARIANTS.iter().find(|v| v.name == name).unwrap()
    }

    #[test]
    fn march_flags_are_the_ones_ggml_builds() {
        // ggml-cpu/CMakeLists.txt (0.3.36 lines 212-253, 0.3.16 lines 162-203).
        let flags: Vec<(&str, String)> = VARIANTS
            .iter()
            .map(|v| (v.name, v.march_flag().unwrap()))
            .collect();
        let expected = [
            ("armv8.0_1", "-march=armv8-a"),
            ("armv8.2_1", "-march=armv8.2-a+dotprod"),
            ("armv8.2_2", "-march=armv8.2-a+dotprod+fp16"),
            ("armv8.2_3", "-march=armv8.2-a+dotprod+fp16+sve"),
            ("armv8.6_1", "-march=armv8.6-a+dotprod+fp16+sve+i8mm"),
            ("armv8.6_2", "-march=armv8.6-a+dotprod+fp16+sve+i8mm+sve2"),
            ("armv9.2_1", "-march=armv9.2-a+dotprod+fp16+sve+i8mm+sme"),
            (
                "armv9.2_2",
                "-march=armv9.2-a+dotprod+fp16+sve+i8mm+sve2+sme",
            ),
        ];
        assert_eq!(flags.len(), expected.len());
        for ((name, flag), (n, f)) in flags.iter().zip(expected) {
            assert_eq!((*name, flag.as_str()), (n, f));
        }
    }

    #[test]
    fn gcc_12_builds_all_but_the_sme_variants() {
        let rejected: Vec<(&str, String)> = VARIANTS
            .iter()
            .filter_map(|v| compiler_rejects(v, CompilerKind::Gcc, 12).map(|r| (v.name, r)))
            .collect();
        let names: Vec<&str> = rejected.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["armv9.2_1", "armv9.2_2"]);
        assert_eq!(
            rejected[1].1,
            "GCC 12 has no +sme (nor armv9.2-a): it rejects ggml's `-march=armv9.2-a+dotprod+fp16+sve+i8mm+sve2+sme`; GCC supports SME from 14"
        );
        assert_eq!(
            compiler_rejects(find("armv9.2_2"), CompilerKind::Gcc, 14),
            None
        );
        assert_eq!(
            compiler_rejects(find("armv8.6_2"), CompilerKind::Gcc, 12),
            None
        );
    }

    #[test]
    fn scores_are_the_ones_ggml_computes() {
        // The real score function: 0.3.36's cpu-feats.cpp built with each variant's
        // GGML_USE_* defines (aarch64-linux-gnu-g++ 12.2), run as `qemu-aarch64 -cpu max`
        // (every feature): 1 3 7 15 31 63 95 127.
        let max = MODELS.iter().find(|m| m.name == "max").unwrap();
        let scores: Vec<u32> = VARIANTS.iter().map(|v| v.score(max.features)).collect();
        assert_eq!(scores, [1, 3, 7, 15, 31, 63, 95, 127]);
        // ... and as `-cpu neoverse-n1` (and cortex-a76): 1 3 7, then 0.
        let n1 = MODELS.iter().find(|m| m.name == "neoverse-n1").unwrap();
        let scores: Vec<u32> = VARIANTS.iter().map(|v| v.score(n1.features)).collect();
        assert_eq!(scores, [1, 3, 7, 0, 0, 0, 0, 0]);
        // ... and as `-cpu a64fx` (SVE, FP16, no DOTPROD): only armv8.0_1.
        let a64fx = MODELS.iter().find(|m| m.name == "a64fx").unwrap();
        let scores: Vec<u32> = VARIANTS.iter().map(|v| v.score(a64fx.features)).collect();
        assert_eq!(scores, [1, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn every_variant_scores_differently_so_no_tie_depends_on_directory_order() {
        let mut scores: Vec<u32> = VARIANTS.iter().map(|v| v.score(v.features)).collect();
        scores.sort();
        scores.dedup();
        assert_eq!(scores.len(), VARIANTS.len());
    }

    #[test]
    fn cpuinfo_words_map_to_ggmls_hwcaps() {
        // A Neoverse V2 (Grace) `Features` line.
        let grace = "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid \
                     asimdrdm jscvt fcma lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm \
                     dit uscat ilrcpc flagm ssbs sb paca pacg dcpodp sve2 sveaes svepmull \
                     svebitperm svesha3 svesm4 flagm2 frint svei8mm svebf16 i8mm bf16 dgh bti";
        assert_eq!(features_from_cpuinfo(grace), ARMV9_NO_SME);
        // A Cortex-A72 (Raspberry Pi 4).
        assert_eq!(
            features_from_cpuinfo("fp asimd evtstrm crc32 cpuid"),
            Vec::<Feature>::new()
        );
        // `svei8mm` is not `i8mm`; FP16 needs both words.
        assert_eq!(
            features_from_cpuinfo("fp asimd fphp asimddp svei8mm"),
            [Dotprod]
        );
    }

    #[test]
    fn every_feature_here_is_an_aarch64_one() {
        for v in VARIANTS {
            assert_eq!(v.arch, Arch::Aarch64);
            assert!(v.features.iter().all(|f| f.arch() == Arch::Aarch64));
        }
        for m in MODELS {
            assert!(m.features.iter().all(|f| f.arch() == Arch::Aarch64));
        }
    }
}
