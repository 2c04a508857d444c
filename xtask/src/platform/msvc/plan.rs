//! What a plan does with MSVC: the reasons for its flags, and the build
//! environment taken from a toolset's captured vcvars environment.

use serde::{Deserialize, Serialize};

use crate::platform::msvc::env::{MsvcEnvSource, MsvcToolsetEnv, VsInstall, MSVC_ENV_VARS};
use crate::platform::msvc::MsvcToolset;

/// The MSVC toolset as the plan records it (`tools.msvc`): the toolset the build
/// runs with, where its environment came from, and its Visual Studio.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedMsvc {
    pub toolset: MsvcToolset,
    pub source: MsvcEnvSource,
    pub instance: VsInstall,
}

/// Why the MSVC C/C++ flags are what they are.
pub const MSVC_REPRO_FLAGS: &str = "CMake's MSVC defaults restated, since giving the variable replaces them (Modules/Platform/Windows-MSVC.cmake: /DWIN32 /D_WINDOWS, and /EHsc for C++; their /GR, RTTI, is cl's default anyway, /W3 only the warning level)";
pub const MSVC_BREPRO_REASON: &str = "/Brepro: no timestamps in the objects, so equal sources give equal objects (undocumented by Microsoft, long used for deterministic builds; the linker's /Brepro belongs to the packaging step, not written yet)";
pub const MSVC_TRIMFILE_REASON: &str = "/d1trimfile:${SRC}: __FILE__ and asserts without the build machine's source dir (cl documents no path map: __FILE__ is the path CMake passes, an absolute one; /d1trimfile is undocumented, so this is untested until a Windows build is run)";

/// Why OpenMP stays off with MSVC.
pub const MSVC_OPENMP_REASON: &str = "MSVC's OpenMP runtime (vcomp140.dll) would have to be shipped with the libraries; ggml's own thread pool is used";

/// The environment of a build with MSVC, as (name, value, reason): the chosen
/// toolset's captured variables; PATH only with the Visual Studio, Windows SDK
/// and system dirs.
pub fn msvc_env(t: &MsvcToolsetEnv) -> Vec<(&'static str, String, String)> {
    let from = format!("from {} ({})", t.source, t.instance.display_name);
    let mut out = Vec::new();
    for name in MSVC_ENV_VARS {
        let Some(value) = t.env.get(*name) else {
            continue;
        };
        if *name == "PATH" {
            out.push((
                "PATH",
                msvc_build_path(value, &t.env),
                format!("{from}, less every dir outside VSINSTALLDIR, WindowsSdkDir and SystemRoot: the build sees no user PATH"),
            ));
        } else {
            out.push((*name, value.clone(), from.clone()));
        }
    }
    out
}

/// The dirs of a vcvars PATH under the Visual Studio, the Windows SDK or the
/// system dir (case-insensitive, as Windows compares), in order, once each.
pub fn msvc_build_path(path: &str, env: &std::collections::BTreeMap<String, String>) -> String {
    let norm = |s: &str| s.trim().trim_end_matches('\\').to_ascii_lowercase();
    let roots: Vec<String> = [
        "VSINSTALLDIR",
        "WindowsSdkDir",
        "UniversalCRTSdkDir",
        "SystemRoot",
    ]
    .iter()
    .filter_map(|k| env.get(*k))
    .map(|v| norm(v))
    .filter(|r| !r.is_empty())
    .collect();
    let mut kept: Vec<&str> = Vec::new();
    for dir in path.split(';').map(str::trim).filter(|d| !d.is_empty()) {
        let n = norm(dir);
        let inside = roots
            .iter()
            .any(|r| n == *r || n.starts_with(&format!("{r}\\")));
        if inside && !kept.iter().any(|k| norm(k) == n) {
            kept.push(dir);
        }
    }
    kept.join(";")
}
