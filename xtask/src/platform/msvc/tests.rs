//! MSVC detection over recorded outputs: vswhere JSON, `set` after vcvars64.bat,
//! `cl` banners (tests/fixtures/toolchains/). A fake [`Probe`] replays them.

use super::*;
use crate::process::{Command, Env, Output, Processes, StartError};
use std::cell::RefCell;
use std::io;

const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/toolchains/");

pub(crate) const VS2026: &str = r"C:\Program Files\Microsoft Visual Studio\18\Community";
pub(crate) const VS2022: &str = r"C:\Program Files\Microsoft Visual Studio\2022\Community";
const PF86: &str = r"C:\Program Files (x86)";

pub(crate) fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{FIX}{name}")).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The recorded `set` output of `vcvars64.bat -vcvars_ver=14.44` on VS 2026 and,
/// for other toolsets or instances, the same environment with only the install
/// path and the toolset version changed (no other vcvars output was recorded).
pub(crate) fn vcvars_set(instance: &str, toolset: &str) -> String {
    fixture("vcvars64-14.44-on-vs2026-set.txt")
        .replace(VS2026, instance)
        .replace("14.44.35207", toolset)
        .replace(
            "VSCMD_ARG_VCVARS_VER=14.44",
            &format!("VSCMD_ARG_VCVARS_VER={}", &toolset[..5]),
        )
}

pub(crate) fn cl_of(instance: &str, toolset: &str) -> String {
    format!(r"{instance}\VC\Tools\MSVC\{toolset}\bin\HostX64\x64\cl.exe")
}

fn script(instance: &str) -> String {
    format!(r"{instance}\VC\Auxiliary\Build\vcvars64.bat")
}

/// A toolset as detection returns it, built from the recorded outputs.
pub(crate) fn recorded_toolset(
    instance: &str,
    display_name: &str,
    vs_version: &str,
    toolset: &str,
    cl_banner: &str,
) -> MsvcToolsetEnv {
    let env = VcvarsEnv::parse(&vcvars_set(instance, toolset));
    let cl = cl_path(&env).unwrap();
    let t: MsvcToolset = toolset.parse().unwrap();
    let out = Output::ok("", &fixture(cl_banner));
    MsvcToolsetEnv {
        toolset: t,
        instance: VsInstall {
            display_name: display_name.into(),
            version: vs_version.into(),
            path: instance.into(),
        },
        source: MsvcEnvSource::Vcvars {
            script: script(instance).into(),
            vcvars_ver: t.vcvars_ver(),
        },
        cl_version: cl_version(&out, &cl, &t).unwrap(),
        cl,
        env: build_vars(&env),
    }
}

/// The machine of the recorded outputs: VS 2026 with its 14.50 and VS 2022's
/// 14.44 toolset, VS 2022 with 14.44 and VS 2019's 14.29.
pub(crate) struct Fake {
    vswhere: Option<String>,
    dirs: BTreeMap<String, Vec<String>>,
    vcvars: BTreeMap<(String, String), String>,
    cl: BTreeMap<String, String>,
    ran: RefCell<Vec<Command>>,
}

impl Fake {
    pub(crate) fn recorded() -> Fake {
        let tools = |i: &str| format!(r"{i}\VC\Tools\MSVC");
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let mut vcvars = BTreeMap::new();
        vcvars.insert(
            (script(VS2026), "14.50".into()),
            vcvars_set(VS2026, "14.50.35717"),
        );
        vcvars.insert(
            (script(VS2026), "14.44".into()),
            fixture("vcvars64-14.44-on-vs2026-set.txt"),
        );
        vcvars.insert(
            (script(VS2022), "14.44".into()),
            vcvars_set(VS2022, "14.44.35207"),
        );
        vcvars.insert(
            (script(VS2022), "14.29".into()),
            vcvars_set(VS2022, "14.29.30133"),
        );
        let mut cl = BTreeMap::new();
        cl.insert(
            cl_of(VS2026, "14.50.35717"),
            fixture("cl-19.50.35717-x64.txt"),
        );
        cl.insert(
            cl_of(VS2026, "14.44.35207"),
            fixture("cl-19.44.35211-x64.txt"),
        );
        cl.insert(
            cl_of(VS2022, "14.44.35207"),
            fixture("cl-19.44.35211-x64.txt"),
        );
        cl.insert(
            cl_of(VS2022, "14.29.30133"),
            fixture("cl-19.29.30159-x64.txt"),
        );
        Fake {
            vswhere: Some(fixture("vswhere-vs2022-vs2026.json")),
            dirs: [
                (tools(VS2026), names(&["14.44.35207", "14.50.35717"])),
                (
                    tools(VS2022),
                    names(&["14.29.30133", "14.44.35207", "desktop.ini"]),
                ),
            ]
            .into_iter()
            .collect(),
            vcvars,
            cl,
            ran: RefCell::new(vec![]),
        }
    }

    pub(crate) fn commands(&self) -> Vec<String> {
        self.ran.borrow().iter().map(|c| c.to_string()).collect()
    }
}

impl Processes for Fake {
    fn output(&self, cmd: &Command) -> Result<Output, StartError> {
        self.ran.borrow_mut().push(cmd.clone());
        let prog = cmd.program.to_string_lossy().into_owned();
        let ok = Output::ok;
        let not_found = || StartError::new(cmd, io::ErrorKind::NotFound.into());
        if prog.ends_with("vswhere.exe") {
            return self
                .vswhere
                .as_deref()
                .map(|j| ok(j, ""))
                .ok_or_else(not_found);
        }
        if prog == "cmd.exe" {
            assert!(cmd.verbatim, "cmd /c takes its line unquoted");
            let line = cmd.args[2].to_str().unwrap();
            let script = line.split('"').nth(1).expect("quoted script");
            let ver = line
                .split("-vcvars_ver=")
                .nth(1)
                .and_then(|r| r.split(' ').next())
                .expect("-vcvars_ver");
            return Ok(
                match self.vcvars.get(&(script.to_string(), ver.to_string())) {
                    Some(set) => ok(set, ""),
                    // vcvars prints its error on stdout, which `>nul` drops: exit code 1, no output.
                    None => Output::failed(1),
                },
            );
        }
        if prog.ends_with("cl.exe") {
            let Env::Exact(env) = &cmd.env else {
                panic!("cl runs in the captured environment")
            };
            let ts = VcvarsEnv { vars: env.clone() }
                .get("VCToolsVersion")
                .unwrap()
                .to_string();
            assert!(prog.contains(&ts), "{prog} runs in the environment of {ts}");
            // `cl` alone: banner on stderr, usage on stdout, exit code 0.
            return self
                .cl
                .get(&prog)
                .map(|b| {
                    ok(
                        "usage: cl [ option... ] filename... [ /link linkoption... ]\r\n",
                        b,
                    )
                })
                .ok_or_else(not_found);
        }
        panic!("unexpected command: {cmd}");
    }

    fn step(&self, step: &str, cmd: &Command, _log: &Path) -> anyhow::Result<()> {
        panic!("detection runs no build step: {step}: {cmd}")
    }
}

impl Probe for Fake {
    fn dir_names(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.dirs
            .get(&*dir.to_string_lossy())
            .cloned()
            .ok_or_else(|| io::ErrorKind::NotFound.into())
    }
}

fn system() -> BTreeMap<String, String> {
    [
        ("SystemRoot", r"C:\Windows"),
        ("TEMP", r"C:\Users\builder\AppData\Local\Temp"),
        ("ProgramFiles(x86)", PF86),
        ("USERPROFILE", r"C:\Users\builder"),
        (
            "Path",
            r"C:\Users\builder\.cargo\bin;C:\Program Files\Git\cmd;C:\Windows\system32",
        ),
        ("INCLUDE", r"C:\some\other\toolset\include"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

fn detect_on(fake: &Fake) -> Result<Detected> {
    detect(fake, Some(Path::new(PF86)), &system())
}

fn summary(t: &MsvcToolsetEnv) -> (String, String, String) {
    (
        t.toolset.to_string(),
        t.instance.display_name.clone(),
        t.cl_version.to_string(),
    )
}

#[test]
fn finds_every_toolset_with_its_environment_and_cl() {
    let fake = Fake::recorded();
    let d = detect_on(&fake).unwrap();
    assert_eq!(d.skipped, Vec::<String>::new());
    let host = &d.msvc.host;
    assert_eq!(
        summary(host),
        (
            "14.50.35717".into(),
            "Visual Studio Community 2026".into(),
            "19.50.35717".into()
        )
    );
    assert_eq!(host.cl, PathBuf::from(cl_of(VS2026, "14.50.35717")));
    assert_eq!(host.instance.version, "18.0.11205.157");
    assert_eq!(
        host.source,
        MsvcEnvSource::Vcvars {
            script: script(VS2026).into(),
            vcvars_ver: "14.50".into()
        }
    );
    // VS 2022's 14.44.35207 is the same toolset as VS 2026's: listed once, from the newer Visual Studio.
    let others: Vec<_> = d.msvc.others.iter().map(summary).collect();
    assert_eq!(
        others,
        [
            (
                "14.44.35207".to_string(),
                "Visual Studio Community 2026".to_string(),
                "19.44.35211".to_string()
            ),
            (
                "14.29.30133".into(),
                "Visual Studio Community 2022".into(),
                "19.29.30159".into()
            ),
        ]
    );
    let ran = fake.commands();
    assert_eq!(
        ran[0],
        r"C:\Program Files (x86)\Microsoft Visual Studio\Installer\vswhere.exe -products * -requires Microsoft.VisualStudio.Component.VC.Tools.x86.x64 -format json -utf8"
    );
    assert_eq!(
        ran[1],
        format!(
            r#"cmd.exe /d /c call "{VS2026}\VC\Auxiliary\Build\vcvars64.bat" -vcvars_ver=14.50 >nul && set"#
        )
    );
    assert_eq!(ran[2], cl_of(VS2026, "14.50.35717"));
    assert_eq!(
        ran.len(),
        1 + 3 * 2,
        "vswhere once, then vcvars and cl once per toolset: {ran:#?}"
    );
}

#[test]
fn the_capture_runs_without_the_users_path_or_toolset() {
    let fake = Fake::recorded();
    detect_on(&fake).unwrap();
    let ran = fake.ran.borrow();
    let Env::Exact(env) = &ran[1].env else {
        panic!("the capture inherits nothing")
    };
    assert_eq!(
        env.get("PATH").unwrap(),
        r"C:\Windows\System32;C:\Windows;C:\Windows\System32\Wbem;C:\Windows\System32\WindowsPowerShell\v1.0"
    );
    assert_eq!(env.get("SystemRoot").unwrap(), r"C:\Windows");
    assert_eq!(env.get("ProgramFiles(x86)").unwrap(), PF86);
    assert!(
        !env.contains_key("INCLUDE") && !env.contains_key("Path"),
        "{env:?}"
    );
}

#[test]
fn keeps_the_variables_a_build_needs() {
    let d = detect_on(&Fake::recorded()).unwrap();
    let t = &d.msvc.others[0];
    let names: Vec<&str> = t.env.keys().map(String::as_str).collect();
    let mut want: Vec<&str> = MSVC_ENV_VARS.to_vec();
    want.sort();
    assert_eq!(
        names, want,
        "every one of them is in the recorded environment"
    );
    assert!(t.env["PATH"].starts_with(&format!(
        r"{VS2026}\VC\Tools\MSVC\14.44.35207\bin\HostX64\x64;"
    )));
    assert!(t.env["INCLUDE"].contains(r"Windows Kits\10\include\10.0.26100.0\ucrt"));
    assert_eq!(t.env["VCToolsVersion"], "14.44.35207");
    assert_eq!(t.env["SystemRoot"], r"C:\Windows");
    assert!(t.env.values().all(|v| !v.ends_with('\r')));
}

#[test]
fn failures_name_the_path_and_what_to_do() {
    type Tweak = fn(&mut Fake);
    let cases: &[(&str, Tweak, &[&str])] = &[
        (
            "no vswhere",
            |f| f.vswhere = None,
            &[
                "no Visual Studio found",
                r"C:\Program Files (x86)\Microsoft Visual Studio\Installer\vswhere.exe does not exist",
                "Desktop development with C++",
                "CC=cl CXX=cl",
            ],
        ),
        (
            "no instance",
            |f| f.vswhere = Some("[]".into()),
            &["lists no Visual Studio", VC_TOOLS_COMPONENT],
        ),
        (
            "bad json",
            |f| f.vswhere = Some("Visual Studio Locator version 3.1".into()),
            &["vswhere.exe -products * -format json"],
        ),
        (
            "no toolset dirs",
            |f| f.dirs.clear(),
            &[
                "no MSVC toolset directory",
                r"cannot list C:\Program Files\Microsoft Visual Studio\18\Community\VC\Tools\MSVC",
            ],
        ),
        (
            "vcvars fails for the host",
            |f| {
                f.vcvars.retain(|(_, v), _| v != "14.50");
            },
            &[
                "toolset 14.50.35717 of Visual Studio Community 2026",
                "-vcvars_ver=14.50",
                r"18\Community\VC\Auxiliary\Build\vcvars64.bat exists",
            ],
        ),
        (
            "vcvars sets up another toolset",
            |f| {
                let s = fixture("vcvars64-14.44-on-vs2026-set.txt");
                f.vcvars.insert((script(VS2026), "14.50".into()), s);
            },
            &["-vcvars_ver=14.50 set up toolset 14.44.35207, not 14.50.35717"],
        ),
        (
            "vcvars ran, set printed nothing useful",
            |f| {
                f.vcvars
                    .insert((script(VS2026), "14.50".into()), "PROMPT=$P$G\r\n".into());
            },
            &["has no VCToolsVersion", "-vcvars_ver=14.50"],
        ),
        (
            "cl of another version",
            |f| {
                f.cl.insert(
                    cl_of(VS2026, "14.50.35717"),
                    fixture("cl-19.44.35211-x64.txt"),
                );
            },
            &["reports cl 19.44.35211", "toolset 14.50.35717 (cl 19.50)"],
        ),
        (
            "cl banner unreadable",
            |f| {
                f.cl.insert(
                    cl_of(VS2026, "14.50.35717"),
                    "Der Befehl ist falsch geschrieben\r\n".into(),
                );
            },
            &["cannot tell which compiler", "14.50.35717"],
        ),
        (
            "cl missing",
            |f| {
                f.cl.remove(&cl_of(VS2026, "14.50.35717"));
            },
            &["did not run", r"14.50.35717\bin\HostX64\x64\cl.exe"],
        ),
    ];
    for (name, tweak, needles) in cases {
        let mut fake = Fake::recorded();
        tweak(&mut fake);
        let e = format!("{:#}", detect_on(&fake).unwrap_err());
        for n in *needles {
            assert!(e.contains(n), "{name}: `{n}` not in: {e}");
        }
    }
    let e = detect(&Fake::recorded(), None, &system())
        .unwrap_err()
        .to_string();
    assert!(e.contains("%ProgramFiles(x86)% is not set"), "{e}");
}

#[test]
fn a_broken_other_toolset_is_skipped_with_a_note() {
    let mut fake = Fake::recorded();
    fake.vcvars.remove(&(script(VS2022), "14.29".into()));
    let d = detect_on(&fake).unwrap();
    assert_eq!(
        d.msvc
            .others
            .iter()
            .map(summary)
            .map(|s| s.0)
            .collect::<Vec<_>>(),
        ["14.44.35207"]
    );
    assert_eq!(d.skipped.len(), 1);
    assert!(
        d.skipped[0].contains("toolset 14.29.30133 of Visual Studio Community 2022")
            && d.skipped[0].contains("-vcvars_ver=14.29"),
        "{:?}",
        d.skipped
    );
}

#[test]
fn a_developer_prompt_is_used_as_it_is() {
    let fake = Fake::recorded();
    let vars = VcvarsEnv::parse(&fixture("vcvars64-14.44-on-vs2026-set.txt")).vars;
    let t = from_current_env(&fake, &vars, Some(Path::new("cl")), "CXX").unwrap();
    assert_eq!(
        summary(&t),
        (
            "14.44.35207".into(),
            "Visual Studio 18.0".into(),
            "19.44.35211".into()
        )
    );
    assert_eq!(t.source, MsvcEnvSource::Inherited { by: "CXX".into() });
    assert_eq!(t.cl, PathBuf::from(cl_of(VS2026, "14.44.35207")));
    assert_eq!(t.instance.path, PathBuf::from(VS2026));
    assert_eq!(
        t.source.to_string(),
        "the environment cargo xtask was started in (CXX names cl.exe)"
    );
    assert_eq!(
        fake.commands(),
        [cl_of(VS2026, "14.44.35207")],
        "no vswhere, no vcvars"
    );

    let mut plain = vars.clone();
    plain.retain(|k, _| !k.starts_with("VC"));
    let e = from_current_env(&fake, &plain, None, "CC")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("CC names cl.exe")
            && e.contains("no VCToolsVersion")
            && e.contains("x64 Native Tools Command Prompt"),
        "{e}"
    );
}

#[test]
fn host_cc_finds_a_detected_cl() {
    let d = detect_on(&Fake::recorded()).unwrap();
    let found = find_cl(
        &d.msvc,
        Path::new(&cl_of(VS2026, "14.44.35207").to_lowercase()),
    )
    .unwrap();
    assert_eq!(found.toolset.to_string(), "14.44.35207");
    assert_eq!(find_cl(&d.msvc, &d.msvc.host.cl), Some(&d.msvc.host));
    assert_eq!(find_cl(&d.msvc, Path::new(r"D:\elsewhere\cl.exe")), None);
    let c = compiler(
        Msvc {
            host: found.clone(),
            others: vec![],
        },
        Origin::Explicit {
            by: "--host-cc".into(),
        },
    );
    assert_eq!(
        (c.kind, c.version.to_string()),
        (CompilerKind::Msvc, "19.44.35211".into())
    );
    assert_eq!(c.cc, c.cxx);
}

#[test]
fn cl_names() {
    for (name, want) in [
        ("cl", true),
        ("CL.EXE", true),
        (r"C:\VS\bin\cl.exe", true),
        ("/usr/bin/cl", true),
        ("clang", false),
        ("clang-cl", false),
        ("g++", false),
        ("cl.exe.bak", false),
    ] {
        assert_eq!(is_cl(name), want, "{name}");
    }
}

#[test]
fn msvc_build_path_keeps_visual_studio_sdk_and_system_dirs() {
    let t = recorded_toolset(
        VS2026,
        "Visual Studio Community 2026",
        "18.0.11205.157",
        "14.44.35207",
        "cl-19.44.35211-x64.txt",
    );
    let got = crate::platform::msvc::plan::msvc_build_path(&t.env["PATH"], &t.env);
    let dirs: Vec<&str> = got.split(';').collect();
    assert_eq!(
        dirs[0],
        r"C:\Program Files\Microsoft Visual Studio\18\Community\VC\Tools\MSVC\14.44.35207\bin\HostX64\x64"
    );
    assert!(
        dirs.contains(&r"C:\Program Files (x86)\Windows Kits\10\bin\10.0.26100.0\x64"),
        "rc.exe, mt.exe"
    );
    assert!(
        dirs.contains(&r"C:\Windows\system32"),
        "cmd.exe for CMake's custom commands"
    );
    for gone in ["NVIDIA GPU Computing Toolkit", r"Git\cmd", ".cargo"] {
        assert!(
            !got.contains(gone),
            "{gone} is the user's, not the toolset's: {got}"
        );
    }
    // Windows compares paths case-insensitively; a dir is kept once.
    let mut env = t.env.clone();
    env.insert("SystemRoot".into(), r"c:\windows\".into());
    assert_eq!(
        crate::platform::msvc::plan::msvc_build_path(
            r"C:\Windows\System32;C:\WINDOWS\system32;D:\tools;;C:\Windows",
            &env
        ),
        r"C:\Windows\System32;C:\Windows"
    );
}

/// A user whose name has a space: nothing of their profile (TEMP, TMP, a PATH dir under
/// it) reaches the plan's environment; TEMP and TMP are the build's own dir.
#[test]
fn no_user_profile_path_reaches_the_plan() {
    let d = detect_on(&Fake::recorded()).unwrap();
    let mut t = d.msvc.others[0].clone();
    let profile = r"C:\Users\John Smith";
    for k in ["TEMP", "TMP"] {
        t.env
            .insert(k.to_string(), format!(r"{profile}\AppData\Local\Temp"));
    }
    let path = t.env["PATH"].clone();
    t.env
        .insert("PATH".to_string(), format!(r"{profile}\.cargo\bin;{path}"));
    let env = super::plan::msvc_env(&t);
    for (name, value, _) in &env {
        assert!(
            !value.contains("John Smith") && !value.contains(r"C:\Users"),
            "{name}={value}"
        );
    }
    for k in ["TEMP", "TMP"] {
        let (_, v, why) = env.iter().find(|(n, _, _)| *n == k).unwrap();
        assert_eq!(v, r"${BUILD}\tmp");
        assert!(why.contains("not the user's %TEMP%"), "{why}");
    }
}
