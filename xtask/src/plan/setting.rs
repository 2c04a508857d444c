//! The pieces every part of a plan is made of: a [`Setting`] (a name, its
//! value and why), a [`ToolRecord`], and [`portable`] paths.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::detect::toolchain::Tool;
use crate::platform::host::{Compiler, CompilerKind, Origin};
use crate::platform::msvc::env::MsvcToolsetEnv;
use crate::versions::Version;

/// A tool as the plan and manifest name it. A path inside the tool cache is
/// written `${CACHE}/...`, so plans do not depend on where the checkout is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolRecord {
    pub path: String,
    pub version: Version,
    pub origin: Origin,
    /// `gcc` or `clang` for compilers.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub kind: Option<CompilerKind>,
}

impl ToolRecord {
    pub fn of(tool: &Tool, cache: &Path) -> ToolRecord {
        ToolRecord {
            path: portable(&tool.path, cache),
            version: tool.version.clone(),
            origin: tool.origin.clone(),
            kind: None,
        }
    }
    pub fn compiler(c: &Compiler, path: &Path, cache: &Path) -> ToolRecord {
        ToolRecord {
            path: portable(path, cache),
            version: c.version.clone(),
            origin: c.origin.clone(),
            kind: Some(c.kind),
        }
    }
    /// The cl.exe of the MSVC toolset the build uses (the host's, or the one the CUDA policy chose).
    pub fn cl(c: &Compiler, t: &MsvcToolsetEnv, cache: &Path) -> ToolRecord {
        ToolRecord {
            path: portable(&t.cl, cache),
            version: t.cl_version.clone(),
            origin: c.origin.clone(),
            kind: Some(CompilerKind::Msvc),
        }
    }
}

/// `${CACHE}/rest` for paths under the cache, the path itself otherwise.
pub fn portable(p: &Path, cache: &Path) -> String {
    match p.strip_prefix(cache) {
        Ok(rest) => format!("${{CACHE}}/{}", rest.display()),
        Err(_) => p.display().to_string(),
    }
}

/// A name, its value and why it is there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Setting {
    pub name: String,
    pub value: String,
    pub reason: String,
    /// `recipe` or `policy` (this tool's rules).
    pub origin: String,
}

pub fn policy(name: &str, value: impl Into<String>, reason: impl Into<String>) -> Setting {
    Setting {
        name: name.into(),
        value: value.into(),
        reason: reason.into(),
        origin: "policy".into(),
    }
}

pub fn onoff(b: bool) -> &'static str {
    if b {
        "ON"
    } else {
        "OFF"
    }
}
