//! MSVC discovery from text: vswhere JSON, toolset directory names, the vcvars environment.

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::Deserialize;

use crate::versions::compiler::CompilerVersion;

/// An MSVC toolset (`VC\Tools\MSVC\14.44.35207`); toolset 14.NN is cl 19.NN, `_MSC_VER` 19NN.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MsvcToolset {
    pub minor: u32,
    pub build: Option<u32>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid MSVC toolset `{value}`: expected 14.NN or 14.NN.BUILD, e.g. 14.44 or 14.44.35207")]
pub struct MsvcToolsetError {
    pub value: String,
}

impl MsvcToolset {
    pub fn msc_ver(&self) -> u32 {
        1900 + self.minor
    }
    pub fn cl_version(&self) -> CompilerVersion {
        CompilerVersion {
            major: 19,
            minor: self.minor,
            patch: None,
        }
    }
    /// The `-vcvars_ver=` value (`14.44`).
    pub fn vcvars_ver(&self) -> String {
        format!("14.{}", self.minor)
    }
    /// Which Visual Studio ships it (toolset 14.5x = VS 2026).
    pub fn visual_studio(&self) -> &'static str {
        match self.minor {
            10..=19 => "VS 2017",
            20..=29 => "VS 2019",
            30..=49 => "VS 2022",
            50..=59 => "VS 2026",
            _ => "an unknown Visual Studio",
        }
    }
}

impl FromStr for MsvcToolset {
    type Err = MsvcToolsetError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || MsvcToolsetError {
            value: s.to_string(),
        };
        let mut parts = s.trim().split('.');
        let num = |p: Option<&str>| -> Option<u32> {
            p.filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))?
                .parse()
                .ok()
        };
        if num(parts.next()) != Some(14) {
            return Err(err());
        }
        let minor = num(parts.next()).filter(|m| *m < 100).ok_or_else(err)?;
        let build = match parts.next() {
            None => None,
            p => Some(num(p).ok_or_else(err)?),
        };
        if parts.next().is_some() {
            return Err(err());
        }
        Ok(MsvcToolset { minor, build })
    }
}

serde_as_string!(MsvcToolset);

impl fmt::Display for MsvcToolset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "14.{}", self.minor)?;
        match self.build {
            Some(b) => write!(f, ".{b}"),
            None => Ok(()),
        }
    }
}

/// Toolsets from the entries of `VC\Tools\MSVC\`, newest first; other names are skipped.
pub fn toolsets_from_dir_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<MsvcToolset> {
    let mut v: Vec<MsvcToolset> = names.into_iter().filter_map(|n| n.parse().ok()).collect();
    v.sort_by(|a, b| b.cmp(a));
    v.dedup();
    v
}

/// Reads the directory names under `VC\Tools\MSVC\`.
pub fn list_toolsets(msvc_tools_dir: &Path) -> io::Result<Vec<MsvcToolset>> {
    let mut names = Vec::new();
    for entry in fs_err::read_dir(msvc_tools_dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    Ok(toolsets_from_dir_names(names.iter().map(String::as_str)))
}

/// One Visual Studio installation from `vswhere -products * -format json`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VsInstance {
    pub installation_path: PathBuf,
    pub installation_version: String,
    pub display_name: String,
    #[serde(default)]
    pub is_prerelease: bool,
}

#[derive(Debug, thiserror::Error)]
#[error("cannot read vswhere JSON ({0}); run `vswhere.exe -products * -format json` and check its output")]
pub struct VswhereError(#[from] serde_json::Error);

pub fn parse_vswhere(json: &str) -> Result<Vec<VsInstance>, VswhereError> {
    Ok(serde_json::from_str(json)?)
}

/// Joins Windows path parts with `\` when the base is a Windows path, so it reads right on any host.
pub fn windows_join(base: &Path, parts: &[&str]) -> PathBuf {
    let b = base.to_string_lossy();
    if b.contains('\\') {
        PathBuf::from(format!(
            "{}\\{}",
            b.trim_end_matches('\\'),
            parts.join("\\")
        ))
    } else {
        parts
            .iter()
            .fold(base.to_path_buf(), |p, part| p.join(part))
    }
}

impl VsInstance {
    pub fn msvc_tools_dir(&self) -> PathBuf {
        windows_join(&self.installation_path, &["VC", "Tools", "MSVC"])
    }
    pub fn vcvars64(&self) -> PathBuf {
        windows_join(
            &self.installation_path,
            &["VC", "Auxiliary", "Build", "vcvars64.bat"],
        )
    }
}

/// The `cmd /c` line that captures the environment of one toolset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VcvarsCall {
    pub script: PathBuf,
    pub toolset: MsvcToolset,
}

impl fmt::Display for VcvarsCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "call \"{}\" -vcvars_ver={} >nul && set",
            self.script.display(),
            self.toolset.vcvars_ver()
        )
    }
}

/// The environment printed by `set` after vcvars; names compare case-insensitively, as on Windows.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct VcvarsEnv {
    pub vars: BTreeMap<String, String>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum VcvarsError {
    #[error("the environment captured after vcvars64.bat has no VCToolsVersion: vcvars did not run; check the script path and that toolset {wanted} is installed")]
    NotSet { wanted: MsvcToolset },
    #[error("vcvars64.bat -vcvars_ver={} set up toolset {got}, not {wanted}: install the {wanted} build tools with the Visual Studio Installer", wanted.vcvars_ver())]
    Mismatch { wanted: MsvcToolset, got: String },
}

impl VcvarsEnv {
    /// Parses `NAME=value` lines (CRLF or LF); the first `=` splits, values may contain `=`.
    pub fn parse(set_output: &str) -> Self {
        let vars = set_output
            .lines()
            .filter_map(|l| l.trim_end_matches('\r').split_once('='))
            .filter(|(k, _)| !k.is_empty())
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        VcvarsEnv { vars }
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Checks vcvars really selected `wanted` (VCToolsVersion 14.44.x for 14.44).
    pub fn check_toolset(&self, wanted: &MsvcToolset) -> Result<(), VcvarsError> {
        let got = self
            .get("VCToolsVersion")
            .ok_or(VcvarsError::NotSet { wanted: *wanted })?
            .trim();
        let ok = match got.parse::<MsvcToolset>() {
            Ok(t) => t.minor == wanted.minor && wanted.build.is_none_or(|b| t.build == Some(b)),
            Err(_) => false,
        };
        if ok {
            Ok(())
        } else {
            Err(VcvarsError::Mismatch {
                wanted: *wanted,
                got: got.to_string(),
            })
        }
    }
}

#[cfg(test)]
#[path = "toolset_tests.rs"]
mod tests;
