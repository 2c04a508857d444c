//! CPU knowledge as pure functions: ggml's runtime-dispatched CPU variants (x86-64 in
//! `variants.rs`, aarch64 in `aarch64.rs`, their vocabulary in `feature.rs`), which of
//! them an artifact ships, and which one a CPU loads. Nothing here runs a process.

pub mod aarch64;
pub mod feature;
pub mod variants;

pub use variants::{
    decide, selected, shipped, shipped_for, CpuModel, Decision, Feature, ShippedVariant, Skip,
    Variant, MODELS, VARIANTS,
};
