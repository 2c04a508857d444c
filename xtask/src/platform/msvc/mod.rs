//! MSVC on Windows: which Visual Studios and toolsets are installed (vswhere),
//! the environment of each toolset (`vcvars64.bat -vcvars_ver=14.NN`, captured
//! with `cmd /d /c ... && set`) and the version its `cl.exe` reports (the
//! banner on stderr).
//!
//! Compiled on every host, run only on Windows. Every process and directory
//! listing goes through [`Probe`], so the tests replay recorded outputs.

pub mod env;
pub mod plan;
pub mod toolset;
pub use toolset::*;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};

use crate::platform::compiler::{HostCompiler, HostCompilerKind};
use crate::platform::host::{Compiler, CompilerKind, Origin};
use crate::platform::msvc::env::{Msvc, MsvcEnvSource, MsvcToolsetEnv, VsInstall, MSVC_ENV_VARS};
use crate::process::{Command, Env, Output, Processes, StartError, Stdin};
use crate::versions::Version;

/// vswhere's place under `%ProgramFiles(x86)%`.
pub const VSWHERE: &[&str] = &["Microsoft Visual Studio", "Installer", "vswhere.exe"];
/// The component an instance needs: MSVC for x64.
pub const VC_TOOLS_COMPONENT: &str = "Microsoft.VisualStudio.Component.VC.Tools.x86.x64";

/// The variables the vcvars capture runs with (besides a PATH of the system dirs
/// only): what Windows processes and the Visual Studio scripts expect. Nothing
/// else of the user's environment (PATH, INCLUDE, LIB of another toolset) leaks
/// into the captured environment.
pub const BASE_VARS: &[&str] = &[
    "ALLUSERSPROFILE",
    "APPDATA",
    "CommonProgramFiles",
    "CommonProgramFiles(x86)",
    "CommonProgramW6432",
    "ComSpec",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "NUMBER_OF_PROCESSORS",
    "OS",
    "PATHEXT",
    "PROCESSOR_ARCHITECTURE",
    "ProgramData",
    "ProgramFiles",
    "ProgramFiles(x86)",
    "ProgramW6432",
    "SystemDrive",
    "SystemRoot",
    "TEMP",
    "TMP",
    "USERNAME",
    "USERPROFILE",
    "windir",
];

/// How detection touches the machine: run a process (through the tool's one
/// process seam, [`Processes`]), list a directory.
pub trait Probe: Processes {
    /// The names of the directories in `dir` (toolsets under `VC\Tools\MSVC`).
    fn dir_names(&self, dir: &Path) -> std::io::Result<Vec<String>>;
}

/// The real machine.
pub struct SystemProbe;

impl Processes for SystemProbe {
    fn output(&self, cmd: &Command) -> Result<Output, StartError> {
        crate::process::System.output(cmd)
    }
    fn step(&self, step: &str, cmd: &Command, log: &Path) -> Result<()> {
        crate::process::System.step(step, cmd, log)
    }
}

impl Probe for SystemProbe {
    fn dir_names(&self, dir: &Path) -> std::io::Result<Vec<String>> {
        let mut names = Vec::new();
        for e in fs_err::read_dir(dir)? {
            let e = e?;
            if e.file_type()?.is_dir() {
                names.push(e.file_name().to_string_lossy().into_owned());
            }
        }
        Ok(names)
    }
}

/// A probe: stdin empty, stdout and stderr captured apart.
fn probe_command(program: PathBuf, args: Vec<String>, env: Env) -> Command {
    let mut c = Command::new(program).args(args);
    c.env = env;
    c.stdin = Stdin::Null;
    c
}

/// `%ProgramFiles(x86)%\Microsoft Visual Studio\Installer\vswhere.exe`.
pub fn vswhere_path(program_files_x86: Option<&Path>) -> Result<PathBuf> {
    let base = program_files_x86.ok_or_else(|| {
        anyhow!("%ProgramFiles(x86)% is not set, so vswhere.exe cannot be found: run from a normal Windows environment, or start from a Visual Studio Developer Command Prompt and set CC=cl CXX=cl")
    })?;
    Ok(crate::platform::msvc::windows_join(base, VSWHERE))
}

/// `vswhere -products * -requires <VC tools> -format json -utf8`: every Visual
/// Studio edition and the Build Tools, with the MSVC x64 compiler installed.
pub fn vswhere_command(vswhere: &Path) -> Command {
    let args = [
        "-products",
        "*",
        "-requires",
        VC_TOOLS_COMPONENT,
        "-format",
        "json",
        "-utf8",
    ];
    probe_command(
        vswhere.to_path_buf(),
        args.iter().map(|s| s.to_string()).collect(),
        Env::Inherit,
    )
}

/// What the vcvars capture runs with: [`BASE_VARS`] as this process has them,
/// and PATH = the system dirs under `SystemRoot`.
pub fn capture_env(system: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let get = |k: &str| {
        system
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(k))
            .map(|(_, v)| v.clone())
    };
    let mut env: BTreeMap<String, String> = BASE_VARS
        .iter()
        .filter_map(|k| get(k).map(|v| (k.to_string(), v)))
        .collect();
    let root = get("SystemRoot").unwrap_or_else(|| r"C:\Windows".into());
    let root = root.trim_end_matches('\\');
    env.insert(
        "PATH".into(),
        [
            r"\System32",
            "",
            r"\System32\Wbem",
            r"\System32\WindowsPowerShell\v1.0",
        ]
        .iter()
        .map(|d| format!("{root}{d}"))
        .collect::<Vec<_>>()
        .join(";"),
    );
    env
}

/// `cmd /d /c call "<vcvars64.bat>" -vcvars_ver=14.NN >nul && set`, in `base`.
pub fn capture_command(call: &VcvarsCall, base: &BTreeMap<String, String>) -> Command {
    Command {
        verbatim: true,
        ..probe_command(
            PathBuf::from("cmd.exe"),
            vec!["/d".into(), "/c".into(), call.to_string()],
            Env::Exact(base.clone()),
        )
    }
}

/// `<VCToolsInstallDir>\bin\HostX64\x64\cl.exe`: the x64-hosted compiler for x64, what vcvars64 sets up.
pub fn cl_path(env: &VcvarsEnv) -> Option<PathBuf> {
    let dir = env.get("VCToolsInstallDir")?.trim();
    (!dir.is_empty()).then(|| {
        crate::platform::msvc::windows_join(Path::new(dir), &["bin", "HostX64", "x64", "cl.exe"])
    })
}

/// Bare `cl` in the toolset's environment: it prints its banner on stderr.
pub fn cl_command(cl: &Path, env: &VcvarsEnv) -> Command {
    probe_command(cl.to_path_buf(), vec![], Env::Exact(env.vars.clone()))
}

/// Parses `cl`'s banner and checks it is the compiler of `toolset` (cl 19.NN for 14.NN).
pub fn cl_version(out: &Output, cl: &Path, toolset: &MsvcToolset) -> Result<Version> {
    let banner = if out.stderr.trim().is_empty() {
        &out.stdout
    } else {
        &out.stderr
    };
    let host = HostCompiler::parse(banner, cl)?;
    if host.kind != HostCompilerKind::Msvc {
        bail!("{} is {}, not MSVC's cl.exe", cl.display(), host.kind);
    }
    if host.version.major != 19 || host.version.minor != toolset.minor {
        bail!(
            "{} reports cl {}, but its environment is toolset {toolset} (cl 19.{}): the toolset directory holds another compiler; repair the installation with the Visual Studio Installer",
            cl.display(),
            host.version,
            toolset.minor
        );
    }
    Ok(host.version.into())
}

/// The variables of [`MSVC_ENV_VARS`] present in `env`, under their canonical names (`Path` -> `PATH`).
pub fn build_vars(env: &VcvarsEnv) -> BTreeMap<String, String> {
    MSVC_ENV_VARS
        .iter()
        .filter_map(|k| env.get(k).map(|v| (k.to_string(), v.to_string())))
        .collect()
}

fn install_of(i: &VsInstance) -> VsInstall {
    VsInstall {
        display_name: i.display_name.clone(),
        version: i.installation_version.clone(),
        path: i.installation_path.clone(),
    }
}

/// Captures one toolset's environment and checks its `cl`.
pub fn toolset_env(
    probe: &dyn Probe,
    instance: &VsInstance,
    toolset: MsvcToolset,
    base: &BTreeMap<String, String>,
) -> Result<MsvcToolsetEnv> {
    let call = VcvarsCall {
        script: instance.vcvars64(),
        toolset,
    };
    let cmd = capture_command(&call, base);
    let what = format!(
        "toolset {toolset} of {} (`vcvars64.bat -vcvars_ver={}`)",
        instance.display_name,
        toolset.vcvars_ver()
    );
    let fix = format!(
        "check that {} exists and that toolset {} is installed (Visual Studio Installer, Individual components, \"MSVC ... build tools\")",
        call.script.display(),
        toolset.vcvars_ver()
    );
    let out = probe.output(&cmd).map_err(|e| {
        anyhow!(
            "cannot capture the environment of {what}: `{cmd}` did not start: {}",
            e.io
        )
    })?;
    if !out.success() {
        bail!(
            "capturing the environment of {what} failed: `{cmd}` exited with an error ({}); {fix}",
            first_line(&out)
        );
    }
    let env = VcvarsEnv::parse(&out.stdout);
    env.check_toolset(&toolset)
        .map_err(|e| anyhow!("{what}: {e}; {fix}"))?;
    let cl = cl_path(&env).ok_or_else(|| {
        anyhow!("{what}: the captured environment has no VCToolsInstallDir; {fix}")
    })?;
    let out = probe.output(&cl_command(&cl, &env)).map_err(|e| {
        anyhow!(
            "{} (from {what}) did not run: {}; {fix}",
            cl.display(),
            e.io
        )
    })?;
    let cl_version = cl_version(&out, &cl, &toolset)?;
    let toolset = env
        .get("VCToolsVersion")
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(toolset);
    Ok(MsvcToolsetEnv {
        toolset,
        instance: install_of(instance),
        source: MsvcEnvSource::Vcvars {
            script: call.script.clone(),
            vcvars_ver: call.toolset.vcvars_ver(),
        },
        cl,
        cl_version,
        env: build_vars(&env),
    })
}

fn first_line(out: &Output) -> String {
    let text = if out.stderr.trim().is_empty() {
        &out.stdout
    } else {
        &out.stderr
    };
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("no output")
        .to_string()
}

/// What detection found, and what it skipped (to be printed as warnings).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detected {
    pub msvc: Msvc,
    pub skipped: Vec<String>,
}

/// Every Visual Studio with the MSVC x64 tools and every toolset in it, each
/// with its captured environment. The host compiler is the newest toolset of the
/// newest (released) Visual Studio: what its Developer Command Prompt gives by
/// default. A failing other toolset is skipped with a note; a failing host is an error.
pub fn detect(
    probe: &dyn Probe,
    program_files_x86: Option<&Path>,
    system: &BTreeMap<String, String>,
) -> Result<Detected> {
    let vswhere = vswhere_path(program_files_x86)?;
    let cmd = vswhere_command(&vswhere);
    let out = probe.output(&cmd).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => anyhow!(
            "no Visual Studio found: {} does not exist; install Visual Studio 2022 or 2026 (Community or Build Tools) with the \"Desktop development with C++\" workload, or start from a Developer Command Prompt and set CC=cl CXX=cl",
            vswhere.display()
        ),
        _ => anyhow!("`{cmd}` did not start: {}", e.io),
    })?;
    if !out.success() {
        bail!("`{cmd}` failed ({}): repair the Visual Studio Installer, or start from a Developer Command Prompt and set CC=cl CXX=cl", first_line(&out));
    }
    let mut instances =
        crate::platform::msvc::parse_vswhere(out.stdout.trim_start_matches('\u{feff}'))?;
    if instances.is_empty() {
        bail!(
            "{} lists no Visual Studio with the MSVC x64 compiler ({VC_TOOLS_COMPONENT}): add the \"Desktop development with C++\" workload in the Visual Studio Installer",
            vswhere.display()
        );
    }
    // Released before prerelease, then newest first.
    let key = |i: &VsInstance| {
        (
            !i.is_prerelease,
            i.installation_version.parse::<Version>().ok(),
        )
    };
    instances.sort_by_key(|i| std::cmp::Reverse(key(i)));

    let base = capture_env(system);
    let mut skipped = Vec::new();
    let mut candidates: Vec<(&VsInstance, MsvcToolset)> = Vec::new();
    for i in &instances {
        let dir = i.msvc_tools_dir();
        match probe.dir_names(&dir) {
            Ok(names) => {
                let found = crate::platform::msvc::toolsets_from_dir_names(
                    names.iter().map(String::as_str),
                );
                if found.is_empty() {
                    skipped.push(format!(
                        "{}: no MSVC toolset in {}",
                        i.display_name,
                        dir.display()
                    ));
                }
                for t in found {
                    if !candidates.iter().any(|(_, c)| *c == t) {
                        candidates.push((i, t));
                    }
                }
            }
            Err(e) => skipped.push(format!(
                "{}: cannot list {}: {e}",
                i.display_name,
                dir.display()
            )),
        }
    }
    let Some(((host_instance, host_toolset), rest)) = candidates.split_first() else {
        bail!(
            "vswhere lists {} but no MSVC toolset directory was found ({}); repair the \"Desktop development with C++\" workload in the Visual Studio Installer",
            instances.iter().map(|i| i.display_name.as_str()).collect::<Vec<_>>().join(", "),
            skipped.join("; ")
        );
    };
    let host = toolset_env(probe, host_instance, *host_toolset, &base)?;
    let mut others = Vec::new();
    for (i, t) in rest {
        match toolset_env(probe, i, *t, &base) {
            Ok(e) => others.push(e),
            Err(e) => skipped.push(format!("skipped: {e:#}")),
        }
    }
    Ok(Detected {
        msvc: Msvc { host, others },
        skipped,
    })
}

/// The toolset of the environment this tool was started in (a Developer Command
/// Prompt): `CC`/`CXX`/`--host-cc` named cl.exe, so nothing is switched.
pub fn from_current_env(
    probe: &dyn Probe,
    vars: &BTreeMap<String, String>,
    given: Option<&Path>,
    by: &str,
) -> Result<MsvcToolsetEnv> {
    let env = VcvarsEnv { vars: vars.clone() };
    let not_dev = |what: &str| {
        anyhow!(
            "{by} names cl.exe, but this is not a Visual Studio developer environment ({what}): start from the \"x64 Native Tools Command Prompt\" (or run vcvars64.bat), or unset {by} so the tool finds Visual Studio with vswhere"
        )
    };
    let toolset: MsvcToolset = env
        .get("VCToolsVersion")
        .ok_or_else(|| not_dev("no VCToolsVersion"))?
        .trim()
        .parse()
        .map_err(|e| not_dev(&format!("{e}")))?;
    let default_cl = cl_path(&env).ok_or_else(|| not_dev("no VCToolsInstallDir"))?;
    let cl = match given {
        Some(p) if p.components().count() > 1 => p.to_path_buf(),
        _ => default_cl,
    };
    let out = probe
        .output(&cl_command(&cl, &env))
        .map_err(|e| anyhow!("{by}: {} did not run: {}", cl.display(), e.io))?;
    let cl_version = cl_version(&out, &cl, &toolset)?;
    let version = env
        .get("VisualStudioVersion")
        .unwrap_or("")
        .trim()
        .to_string();
    let path = PathBuf::from(env.get("VSINSTALLDIR").unwrap_or("").trim_end_matches('\\'));
    let display_name = if version.is_empty() {
        "Visual Studio".to_string()
    } else {
        format!("Visual Studio {version}")
    };
    Ok(MsvcToolsetEnv {
        toolset,
        instance: VsInstall {
            display_name,
            version,
            path,
        },
        source: MsvcEnvSource::Inherited { by: by.into() },
        cl,
        cl_version,
        env: build_vars(&env),
    })
}

/// `--host-cc C:\...\cl.exe`: the detected toolset whose `cl.exe` that is.
pub fn find_cl<'a>(msvc: &'a Msvc, cl: &Path) -> Option<&'a MsvcToolsetEnv> {
    let same = |t: &&MsvcToolsetEnv| {
        t.cl.to_string_lossy()
            .eq_ignore_ascii_case(&cl.to_string_lossy())
    };
    std::iter::once(&msvc.host).chain(&msvc.others).find(same)
}

/// The typed compiler: `cc` and `cxx` are the host toolset's cl.exe.
pub fn compiler(msvc: Msvc, origin: Origin) -> Compiler {
    Compiler {
        kind: CompilerKind::Msvc,
        cc: msvc.host.cl.clone(),
        cxx: msvc.host.cl.clone(),
        version: msvc.host.cl_version.clone(),
        origin,
        msvc: Some(msvc),
        mingw: None,
        pinned: None,
    }
}

/// Whether a compiler name (`cl`, `CL.EXE`, `C:\...\cl.exe`) is MSVC's.
pub fn is_cl(name: &str) -> bool {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    base.eq_ignore_ascii_case("cl") || base.eq_ignore_ascii_case("cl.exe")
}

#[cfg(test)]
#[path = "tests.rs"]
pub(crate) mod tests;
