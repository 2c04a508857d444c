//! The pieces every part of a plan is made of: a [`Setting`] (a name, its
//! value and why), a [`ToolRecord`], and [`portable`] paths.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::detect::toolchain::Tool;
use crate::platform::host::{CompilerKind, Origin};
use crate::versions::Version;

/// A tool as the plan and manifest name it. A path inside the tool cache is
/// written `${CACHE}/...`, so plans do not depend on where the checkout is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// A compiler the build runs, with the version, kind and origin detection gave it.
    pub fn compiler(
        path: &Path,
        (version, kind, origin): (&Version, CompilerKind, &Origin),
        cache: &Path,
    ) -> ToolRecord {
        ToolRecord {
            path: portable(path, cache),
            version: version.clone(),
            origin: origin.clone(),
            kind: Some(kind),
        }
    }
}

/// The platform's decisions ([`crate::platform::Decided`]) as policy settings, in order.
pub fn decided(d: Vec<crate::platform::Decided>) -> Vec<Setting> {
    d.into_iter()
        .map(|(name, value, reason)| policy(name, value, reason))
        .collect()
}

/// `${CACHE}/rest` for paths under the cache, the path itself otherwise.
pub fn portable(p: &Path, cache: &Path) -> String {
    match p.strip_prefix(cache) {
        Ok(rest) => format!("${{CACHE}}/{}", rest.display()),
        Err(_) => p.display().to_string(),
    }
}

/// A name, its value and why it is there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Setting {
    pub name: String,
    pub value: String,
    pub reason: String,
    pub origin: SettingOrigin,
}

/// Who put a [`Setting`] there; serialised as `policy`, `recipe`, `launcher` or
/// `command-line`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingOrigin {
    /// This tool's rules.
    Policy,
    /// The recipe's own defines.
    Recipe,
    /// `--launcher ccache|sccache`.
    Launcher,
    /// `--define NAME=VALUE`.
    CommandLine,
}

impl SettingOrigin {
    pub fn as_str(self) -> &'static str {
        match self {
            SettingOrigin::Policy => "policy",
            SettingOrigin::Recipe => "recipe",
            SettingOrigin::Launcher => "launcher",
            SettingOrigin::CommandLine => "command-line",
        }
    }
}

impl fmt::Display for SettingOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SettingOrigin {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [
            SettingOrigin::Policy,
            SettingOrigin::Recipe,
            SettingOrigin::Launcher,
            SettingOrigin::CommandLine,
        ]
        .into_iter()
        .find(|o| o.as_str() == s)
        .ok_or_else(|| {
            format!(
                "`{s}` is not a setting origin: expected policy, recipe, launcher or command-line"
            )
        })
    }
}

serde_as_string!(SettingOrigin);

pub fn policy(name: &str, value: impl Into<String>, reason: impl Into<String>) -> Setting {
    Setting {
        name: name.into(),
        value: value.into(),
        reason: reason.into(),
        origin: SettingOrigin::Policy,
    }
}
