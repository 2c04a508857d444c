//! `--launcher`: which compile cache a build asks for (the plan's launcher settings are
//! `plan::launcher`'s).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LauncherKind {
    Ccache,
    Sccache,
}

impl LauncherKind {
    pub fn program(self) -> &'static str {
        match self {
            LauncherKind::Ccache => "ccache",
            LauncherKind::Sccache => "sccache",
        }
    }
    /// The variable naming the local cache dir, and the prefix of the tool's own settings.
    pub(crate) fn dir_var(self) -> &'static str {
        match self {
            LauncherKind::Ccache => "CCACHE_DIR",
            LauncherKind::Sccache => "SCCACHE_DIR",
        }
    }
    /// The prefixes of the variables passed to the build: the tool's own settings and,
    /// for sccache, the S3 credentials it reads (`AWS_ACCESS_KEY_ID`, `AWS_PROFILE`, ...).
    pub(crate) fn prefixes(self) -> &'static [&'static str] {
        match self {
            LauncherKind::Ccache => &["CCACHE_"],
            LauncherKind::Sccache => &["SCCACHE_", "AWS_"],
        }
    }
}

impl fmt::Display for LauncherKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.program())
    }
}

impl FromStr for LauncherKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "ccache" => Ok(LauncherKind::Ccache),
            "sccache" => Ok(LauncherKind::Sccache),
            _ => Err(format!("unknown launcher `{s}`: use ccache or sccache")),
        }
    }
}
