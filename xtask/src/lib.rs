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
        /// In the manifest's JSON schema: a string (its `Display` form).
        impl schemars::JsonSchema for $t {
            fn inline_schema() -> bool {
                true
            }
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($t).into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({ "type": "string" })
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

/// An error in what the command line asked, as [`Usage`]: `return Err(usage!("--x {y}: ..."))`.
#[macro_export]
macro_rules! usage {
    ($($arg:tt)*) => {
        anyhow::Error::from($crate::Usage(format!($($arg)*)))
    };
}

pub mod binary;
pub mod bounded;
pub mod build;
pub mod commands;
pub mod cpu;
pub mod cuda;
pub mod detect;
pub mod digest;
pub mod doctor;
pub mod durable;
pub mod escape;
pub mod exit;
pub mod inspect;
pub mod lock;
pub mod manifest;
pub mod package;
pub mod pipeline;
pub mod plan;
pub mod platform;
pub mod portable;
pub mod process;
pub mod progress;
pub mod provision;
pub mod recipe;
pub mod release;
pub mod report;
pub mod reproduce;
pub mod request;
pub mod substitute;
pub mod tags;
pub mod verify;
pub mod versions;

use std::path::PathBuf;

/// What the command line asked is refused by the tool's own rules, the same on any
/// machine of this OS (an unknown recipe, release or cell, an option that does not fit
/// the recipe or this OS): exit 2 ([`exit::Exit::of_error`]). A leaf, so that every stage
/// can say so; made with [`usage!`].
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Usage(pub String);

/// Why `path` is not a plain relative path that stays inside the directory it is
/// taken from (an archive entry's name, a recipe patch's file), if it is not one:
/// `/`-separated, no `..`, `.` or empty parts, not absolute, no drive letter, no
/// backslash (a separator on Windows), no control characters.
pub fn relative_path_problem(path: &str) -> Option<&'static str> {
    let b = path.as_bytes();
    if path.is_empty() {
        Some("it is empty")
    } else if path.chars().any(char::is_control) {
        Some("its name holds a control character")
    } else if path.contains('\\') {
        Some("its name holds a backslash (a path separator on Windows)")
    } else if path.starts_with('/') {
        Some("it is an absolute path")
    } else if b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':' {
        Some("it starts with a drive letter")
    } else if path.split('/').any(|c| c == "..") {
        Some("it climbs out with `..`")
    } else if path.split('/').any(|c| c.is_empty() || c == ".") {
        Some("it has an empty or `.` path component")
    } else {
        None
    }
}

/// `items` as a message lists them: `a`, `a or b`, `a, b or c` (`conj` is `or` or `and`).
pub fn listed<T: std::fmt::Display>(items: &[T], conj: &str) -> String {
    let s: Vec<String> = items.iter().map(ToString::to_string).collect();
    match s.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} {conj} {last}", rest.join(", ")),
    }
}

/// The repository root this binary was built in: recipes, toolchains, dist and
/// caches live under it. `LLAMA_FORGE_ROOT` overrides it for a binary copied
/// elsewhere; that is read with the rest of the environment, in
/// [`detect::Env::from_process`].
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the repo")
        .to_path_buf()
}
