//! What detection reports about a tool: where it came from ([`Origin`]), and
//! the host C/C++ compiler ([`Compiler`], with its MSVC environment on Windows).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::digest::Sha256Hex;
use crate::platform::msvc::env::Msvc;
use crate::versions::Version;

/// Where a tool came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Origin {
    System,
    /// Unpacked from a pinned wheel on the package index.
    PackageIndex {
        url: String,
        sha256: Sha256Hex,
    },
    /// Named on the command line or in the environment (`CC`, `CXX`, `--host-cc`).
    Explicit {
        by: String,
    },
    /// Assembled from a pinned set of wheels (`toolchains/cuda-13.0.toml`, with that file's sha256).
    PinnedSet {
        file: String,
        sha256: Sha256Hex,
    },
}

impl Origin {
    /// ` (from CXX)` for a tool the user named (environment or command line), else
    /// nothing: what a message that names the tool adds after its path.
    pub fn named_by(&self) -> String {
        match self {
            Origin::Explicit { by } => format!(" (from {by})"),
            _ => String::new(),
        }
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::System => f.write_str("system"),
            Origin::PackageIndex { url, sha256 } => write!(
                f,
                "pinned wheel {} (sha256 {})",
                url.rsplit('/').next().unwrap_or(url),
                &sha256.as_str()[..12]
            ),
            Origin::Explicit { by } => write!(f, "set by {by}"),
            // The CUDA toolkits (wheels) or the host toolchains (Debian packages).
            Origin::PinnedSet { file, .. } if file.contains("linux-gcc") => {
                write!(f, "pinned Debian packages in {file}")
            }
            Origin::PinnedSet { file, .. } => write!(f, "pinned wheels in {file}"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum CompilerKind {
    Gcc,
    Clang,
    /// Microsoft's `cl.exe` (Windows).
    Msvc,
}

impl std::fmt::Display for CompilerKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CompilerKind::Gcc => "gcc",
            CompilerKind::Clang => "clang",
            CompilerKind::Msvc => "msvc",
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compiler {
    pub kind: CompilerKind,
    pub cc: PathBuf,
    pub cxx: PathBuf,
    pub version: Version,
    pub origin: Origin,
    /// MSVC only: the environment `cl.exe` runs in, and the other toolsets installed.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub msvc: Option<Msvc>,
    /// mingw-w64 cross compilers only (`--target x86_64-pc-windows-gnu`): their sysroot and windres.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub mingw: Option<crate::platform::mingw::Mingw>,
    /// The pinned toolchain of Linux builds (`toolchains/linux-gcc.toml`): its sysroot and binutils.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub pinned: Option<crate::platform::gcc::PinnedGcc>,
}
