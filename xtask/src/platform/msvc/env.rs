//! An MSVC toolset as detection reports it: its Visual Studio, the environment
//! its `cl.exe` runs in and where that environment came from.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::platform::msvc::toolset::MsvcToolset;
use crate::versions::Version;

/// A Visual Studio installation, as `vswhere` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct VsInstall {
    /// `Visual Studio Community 2026`.
    pub display_name: String,
    /// `18.0.11205.157`.
    pub version: String,
    pub path: PathBuf,
}

/// Where an MSVC toolset's environment came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum MsvcEnvSource {
    /// Captured with `cmd /d /c call "<script>" -vcvars_ver=<vcvars_ver> >nul && set`.
    Vcvars { script: PathBuf, vcvars_ver: String },
    /// The environment this tool was started in (a Developer Command Prompt):
    /// `CC`/`CXX`/`--host-cc` named `cl.exe`, so the user chose the toolset.
    Inherited { by: String },
}

impl std::fmt::Display for MsvcEnvSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MsvcEnvSource::Vcvars { vcvars_ver, .. } => {
                write!(f, "vcvars64.bat -vcvars_ver={vcvars_ver}")
            }
            MsvcEnvSource::Inherited { by } => write!(
                f,
                "the environment cargo xtask was started in ({by} names cl.exe)"
            ),
        }
    }
}

/// One MSVC toolset with the environment its `cl.exe` needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MsvcToolsetEnv {
    /// `14.44.35207` (`VCToolsVersion`).
    pub toolset: MsvcToolset,
    pub instance: VsInstall,
    pub source: MsvcEnvSource,
    pub cl: PathBuf,
    /// What `cl` prints in its banner: `19.44.35211`.
    pub cl_version: Version,
    /// The variables a build needs from that environment ([`MSVC_ENV_VARS`]), as captured.
    pub env: std::collections::BTreeMap<String, String>,
}

/// The MSVC side of a [`crate::platform::host::Compiler`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Msvc {
    /// The toolset `cc`/`cxx` belong to.
    pub host: MsvcToolsetEnv,
    /// Every other toolset installed (any Visual Studio), newest first: the host
    /// compiler policy may pick one that the CUDA release supports.
    pub others: Vec<MsvcToolsetEnv>,
}

/// The variables of a vcvars environment a build needs, in the order the plan lists them.
/// `PATH` is reduced by the plan; `SystemRoot`, `TEMP` and `TMP` are what any Windows process needs.
pub const MSVC_ENV_VARS: &[&str] = &[
    "PATH",
    "INCLUDE",
    "LIB",
    "LIBPATH",
    "VSINSTALLDIR",
    "VCINSTALLDIR",
    "VCToolsInstallDir",
    "VCToolsVersion",
    "WindowsSdkDir",
    "WindowsSDKVersion",
    "WindowsSDKLibVersion",
    "WindowsSdkBinPath",
    "WindowsSdkVerBinPath",
    "UniversalCRTSdkDir",
    "UCRTVersion",
    "SystemRoot",
    "TEMP",
    "TMP",
];
