//! `cargo xtask`: builds llama.cpp and llama-cpp-python for NVIDIA GPUs, right.
//!
//! Data flows one way: recipe -> plan -> build -> package -> manifest -> verify.
//! This file only reads the command line and environment and dispatches.

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

mod archive;
mod build;
mod commands;
mod cuda;
mod cuda_plan;
mod cudapkg;
mod elf;
mod fetch;
mod manifest;
mod manylinux;
mod package;
mod payload;
mod plan;
mod progress;
mod recipe;
mod tags;
mod target;
mod toolchain;
mod verify;
mod version;
mod wheel;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = commands::Cli::parse();
    let env = commands::Env::from_process();
    match commands::run(cli, &env) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// The repository root: recipes, toolchains, dist and caches live under it.
fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the repo").to_path_buf()
}
