//! CPU knowledge as pure functions: ggml's runtime-dispatched x86-64 variants, which
//! of them an artifact ships, and which one a CPU loads. Nothing here runs a process.

pub mod variants;

pub use variants::{
    selected, shipped, CpuModel, Feature, ShippedVariant, Variant, MODELS, VARIANTS,
};
