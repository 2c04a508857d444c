//! llama-forge: builds llama.cpp and llama-cpp-python for NVIDIA GPUs, right.
//!
//! Data flows one way: recipe -> plan -> build -> package -> manifest -> verify.
//! The binary (`main.rs`) only parses the command line and dispatches to
//! [`commands`]; integration tests use these modules directly.

/// Serialises a type through its `Display` and deserialises it through `FromStr`,
/// so JSON and TOML hold the same text the command line takes.
macro_rules! serde_as_string {
    ($t:ty) => {
        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

pub mod archive;
pub mod build;
pub mod commands;
pub mod cuda;
pub mod cuda_plan;
pub mod cudapkg;
pub mod elf;
pub mod entries;
pub mod fetch;
pub mod launcher;
pub mod lock;
pub mod manifest;
pub mod manylinux;
pub mod package;
pub mod payload;
pub mod plan;
pub mod progress;
pub mod recipe;
pub mod reproduce;
pub mod release;
/// Windows builds stop after the plan (see README): there the stable dir is checked by nothing yet.
#[cfg_attr(not(unix), path = "stable_windows.rs")]
pub mod stable;
pub mod tags;
pub mod target;
pub mod toolchain;
pub mod tree;
pub mod verify;
pub mod version;
pub mod wheel;

pub mod hermetic;

use std::path::PathBuf;

/// The repository root: recipes, toolchains, dist and caches live under it.
/// `LLAMA_FORGE_ROOT` overrides it for a binary copied elsewhere.
pub fn repo_root() -> PathBuf {
    match std::env::var_os("LLAMA_FORGE_ROOT") {
        Some(r) if !r.is_empty() => PathBuf::from(r),
        _ => PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the repo").to_path_buf(),
    }
}
