//! What a plan does with MSVC: the reasons for its flags, the compiler defines
//! and nvcc flags, and the build environment taken from a toolset's captured
//! vcvars environment. [`crate::platform::Platform::Windows`] answers with these.

use serde::{Deserialize, Serialize};

use crate::platform::msvc::env::{MsvcEnvSource, MsvcToolsetEnv, VsInstall, MSVC_ENV_VARS};
use crate::platform::msvc::MsvcToolset;
use crate::platform::Decided;

/// The MSVC toolset as the plan records it (`tools.msvc`): the toolset the build
/// runs with, where its environment came from, and its Visual Studio.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PlannedMsvc {
    pub toolset: MsvcToolset,
    pub source: MsvcEnvSource,
    pub instance: VsInstall,
}

/// Why the MSVC C/C++ flags are what they are.
pub const MSVC_REPRO_FLAGS: &str = "CMake's MSVC defaults restated, since giving the variable replaces them (Modules/Platform/Windows-MSVC.cmake: /DWIN32 /D_WINDOWS, and /EHsc for C++; their /GR, RTTI, is cl's default anyway, /W3 only the warning level)";
pub const MSVC_BREPRO_REASON: &str = "/Brepro: no timestamps in the objects, so equal sources give equal objects (undocumented by Microsoft, long used for deterministic builds)";
/// Why the linker gets /Brepro.
pub const MSVC_LINK_BREPRO_REASON: &str = "/Brepro for link.exe: no link time in the PE header, and a debug directory id hashed from the content instead of a random GUID, so equal objects give equal DLLs and EXEs";
/// The MSVC C/C++ runtime the artifacts use, and why.
pub const MSVC_RUNTIME_REASON: &str = "/MT: the MSVC C and C++ runtime linked into each DLL and EXE (the UCRT too), so the artifact needs no Visual C++ Redistributable (msvcp140.dll, vcruntime140.dll) on the user's machine, as the mingw-w64 build links its runtime statically; safe here because the libraries talk through ggml's and llama's C APIs and free what they allocate (no C++ object or heap block crosses a DLL boundary)";
pub const MSVC_TRIMFILE_REASON: &str = "/d1trimfile:${SRC}: __FILE__ and asserts without the build machine's source dir (cl documents no path map: __FILE__ is the path CMake passes, an absolute one; /d1trimfile is undocumented, so this is untested until a Windows build is run)";

/// The host compiler defines with MSVC: the toolset's cl.exe for C and C++,
/// CMake's MSVC flags restated with the repro flags, the install prefix.
pub fn compiler_defines(
    t: &MsvcToolsetEnv,
    portable: impl Fn(&std::path::Path) -> String,
) -> Vec<Decided> {
    let cl = portable(&t.cl);
    let why = format!(
        "MSVC toolset {}'s cl.exe, {} ({})",
        t.toolset, t.source, t.instance.display_name
    );
    let flags = format!("{MSVC_REPRO_FLAGS}; {MSVC_BREPRO_REASON}; {MSVC_TRIMFILE_REASON}");
    vec![
        ("CMAKE_C_COMPILER", cl.clone(), why.clone()),
        ("CMAKE_CXX_COMPILER", cl, why),
        ("CMAKE_C_FLAGS", "/DWIN32 /D_WINDOWS /Brepro /d1trimfile:${SRC}".into(), flags.clone()),
        ("CMAKE_CXX_FLAGS", "/DWIN32 /D_WINDOWS /EHsc /Brepro /d1trimfile:${SRC}".into(), flags),
        ("CMAKE_POLICY_DEFAULT_CMP0091", "NEW".into(), "CMAKE_MSVC_RUNTIME_LIBRARY decides the runtime flag (CMake 3.15's policy), not /MD in CMake's default flags".into()),
        ("CMAKE_MSVC_RUNTIME_LIBRARY", "MultiThreaded".into(), MSVC_RUNTIME_REASON.into()),
        ("CMAKE_SHARED_LINKER_FLAGS", "/Brepro".into(), MSVC_LINK_BREPRO_REASON.into()),
        ("CMAKE_EXE_LINKER_FLAGS", "/Brepro".into(), MSVC_LINK_BREPRO_REASON.into()),
        ("CMAKE_INSTALL_PREFIX", "${STAGE}/prefix".into(), "install rules outside the artifact (headers, CMake files) land in the staging dir, not the system".into()),
    ]
}

/// Why `CMAKE_CUDA_HOST_COMPILER` is the cl.exe of a toolset the host compiler policy chose.
pub fn cuda_host_reason(t: &MsvcToolsetEnv) -> String {
    format!("nvcc's host passes use cl.exe of MSVC toolset {}, which the host compiler policy chose (see cuda.host_policy)", t.toolset)
}

/// CMake's own CUDA flags on Windows, restated (before the policy's flags).
pub fn nvcc_platform_flags() -> Vec<(String, String)> {
    vec![(
        "-D_WINDOWS -Xcompiler=/EHsc".into(),
        "CMake's own CUDA flags on Windows (Modules/Platform/Windows-NVIDIA-CUDA.cmake), restated because giving CMAKE_CUDA_FLAGS replaces them: /EHsc is C++ exception handling in the host code (their /GR, RTTI, is cl's default anyway; /W3 is only the warning level)".into(),
    )]
}

/// cl's repro flags for nvcc's host passes.
pub fn nvcc_repro_flags() -> Vec<(String, String)> {
    vec![
        ("-Xcompiler=/Brepro".into(), MSVC_BREPRO_REASON.into()),
        (
            "-Xcompiler=/d1trimfile:${SRC}".into(),
            MSVC_TRIMFILE_REASON.into(),
        ),
    ]
}

/// What a CUDA plan with MSVC cannot do yet.
pub fn cuda_warnings() -> Vec<String> {
    vec![
        "Windows: no per-object --frandom-seed (the launcher that adds it, toolchains/nvcc-seed.sh, is a shell script; one seed for every object could give two objects the same generated names): some CUDA objects may differ between builds".into(),
    ]
}

/// The toolset as the plan records it.
pub fn planned(t: &MsvcToolsetEnv) -> PlannedMsvc {
    PlannedMsvc {
        toolset: t.toolset,
        source: t.source.clone(),
        instance: t.instance.clone(),
    }
}

/// The build's own temp dir under `${BUILD}`, where an MSVC build's TEMP and TMP point
/// (the build creates it before the first step).
pub const BUILD_TEMP_DIR: &str = "tmp";

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
        if *name == "TEMP" || *name == "TMP" {
            // %TEMP% is under the user's profile (C:\Users\<name>\AppData\Local\Temp):
            // in the plan, it put their name into every manifest and two users' plans apart.
            out.push((
                *name,
                format!("${{BUILD}}\\{BUILD_TEMP_DIR}"),
                "the build's own temp dir, in its work dir (created before the build), not the user's %TEMP%: no user's profile path in the plan, and two users' plans agree".to_string(),
            ));
        } else if *name == "PATH" {
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
