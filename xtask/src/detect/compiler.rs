//! The host C/C++ compiler: `--host-cc`, `CC`/`CXX`, MSVC (vswhere or a
//! Developer Command Prompt), or `cc`/`c++` on PATH.

use crate::report::Log;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::env::Env;
use crate::platform::msvc;

/// The host C/C++ compiler: `--host-cc` when given; else `CC`/`CXX` when set;
/// else, on Windows, MSVC found with vswhere; else `cc`/`c++` on PATH.
/// `procs` runs the compiler's `--version`; MSVC is probed through [`msvc::SystemProbe`].
pub fn detect_compiler(
    env: &Env,
    host_cc: Option<&Path>,
    log: &Log,
    procs: &dyn crate::process::Processes,
) -> Result<Option<crate::platform::host::Compiler>> {
    detect_compiler_with(
        env,
        host_cc,
        &msvc::SystemProbe,
        crate::platform::Os::host() == crate::platform::Os::Windows,
        log,
        procs,
    )
}

fn detect_compiler_with(
    env: &Env,
    host_cc: Option<&Path>,
    probe: &dyn msvc::Probe,
    windows: bool,
    log: &Log,
    procs: &dyn crate::process::Processes,
) -> Result<Option<crate::platform::host::Compiler>> {
    use crate::detect::toolchain;
    use crate::platform::host::Origin;
    use crate::platform::msvc::env::Msvc;
    let canon = |p: PathBuf| p.canonicalize().unwrap_or(p);
    if let Some(cxx) = host_cc {
        if msvc::is_cl(&cxx.to_string_lossy()) {
            return msvc_host_cc(env, cxx, probe, windows).map(Some);
        }
        // A bare name (`g++-14`) is looked up on PATH.
        let found = match cxx.components().count() {
            1 if !cxx.is_file() => toolchain::which(&cxx.to_string_lossy(), &env.path),
            _ => Some(cxx.to_path_buf()).filter(|p| p.is_file()),
        };
        let Some(cxx) = found else {
            anyhow::bail!("--host-cc {}: no such file (give the path of a C++ compiler, e.g. /usr/bin/g++-14)", cxx.display());
        };
        let cc = c_compiler_of_host_cc(env, &cxx, log, procs)?;
        return Ok(Some(toolchain::detect_compiler(
            canon(cc),
            canon(cxx),
            Origin::Explicit {
                by: "--host-cc".into(),
            },
            procs,
        )?));
    }
    // CC or CXX naming cl.exe: the user set up a toolset (a Developer Command Prompt): use it as it is.
    let named_cl = [("CXX", &env.cxx), ("CC", &env.cc)]
        .into_iter()
        .find_map(|(k, v)| v.as_ref().filter(|v| msvc::is_cl(v)).map(|v| (k, v)));
    if let Some((var, v)) = named_cl {
        if !windows {
            anyhow::bail!(
                "{var}={v}: MSVC's cl.exe is used on Windows only; here give g++ or clang++"
            );
        }
        let host = msvc::from_current_env(probe, &env.windows_vars, Some(Path::new(v)), var)?;
        return Ok(Some(msvc::compiler(
            Msvc {
                host,
                others: vec![],
            },
            Origin::Explicit { by: var.into() },
        )));
    }
    if windows && env.cc.is_none() && env.cxx.is_none() {
        let found = msvc::detect(probe, env.program_files_x86.as_deref(), &env.windows_vars)?;
        for s in &found.skipped {
            log.warning(s);
        }
        return Ok(Some(msvc::compiler(found.msvc, Origin::System)));
    }
    let find = |explicit: &Option<String>,
                var: &str,
                defaults: &[&str]|
     -> Result<Option<(PathBuf, Origin)>> {
        if let Some(v) = explicit {
            return Ok(Some((
                explicit_path(v, var, &env.path)?,
                Origin::Explicit { by: var.into() },
            )));
        }
        Ok(defaults
            .iter()
            .find_map(|d| toolchain::which(d, &env.path))
            .map(|p| (p, Origin::System)))
    };
    let cxx = find(&env.cxx, "CXX", &["c++", "g++", "clang++"])?;
    let cc = find(&env.cc, "CC", &["cc", "gcc", "clang"])?;
    match (cc, cxx) {
        (Some((cc, _)), Some((cxx, origin))) => Ok(Some(toolchain::detect_compiler(
            canon(cc),
            canon(cxx),
            origin,
            procs,
        )?)),
        _ => Ok(None),
    }
}

/// `--host-cc`'s C compiler: the one beside it (`g++-14` -> `gcc-14`). A `CC` naming
/// another compiler is not mixed in: the one beside is used, with a warning naming both.
/// Where there is none beside it, `CC` is used only if it is the same compiler (kind and
/// version, from `--version`); else refused, saying which `CC` to set.
fn c_compiler_of_host_cc(
    env: &Env,
    cxx: &Path,
    log: &Log,
    procs: &dyn crate::process::Processes,
) -> Result<PathBuf> {
    use crate::detect::toolchain::probe_compiler;
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let named = match &env.cc {
        Some(v) => Some((v, explicit_path(v, "CC", &env.path)?)),
        None => None,
    };
    // `CC=gcc-12 (/usr/bin/gcc-12)`: the file, where the value is a name on PATH.
    let shown = |v: &str, p: &Path| match Path::new(v) == p {
        true => format!("CC={v}"),
        false => format!("CC={v} ({})", p.display()),
    };
    match (sibling_c_compiler(cxx), named) {
        (Ok(beside), None) => Ok(beside),
        (Ok(beside), Some((v, cc))) => {
            if canon(&cc) != canon(&beside) {
                log.warning(format_args!(
                    "{} is not the C compiler of --host-cc {}: building with {}, the one beside it, so that C and C++ come from one compiler; unset CC, or give a matching pair (CC=... --host-cc ... of one compiler)",
                    shown(v, &cc),
                    cxx.display(),
                    beside.display()
                ));
            }
            Ok(beside)
        }
        (Err(e), None) => Err(e),
        (Err(_), Some((v, cc))) => {
            let (kind, version) = probe_compiler(cxx, procs)?;
            let (cc_kind, cc_version) = probe_compiler(&cc, procs).with_context(|| {
                format!("CC={v}: the C compiler for --host-cc {}", cxx.display())
            })?;
            if (kind, &version) == (cc_kind, &cc_version) {
                return Ok(cc);
            }
            anyhow::bail!(
                "--host-cc {} is {kind} {version}, and {} is {cc_kind} {cc_version}: mixing them builds C and C++ with two compilers, and there is no C compiler beside {} to use instead; \
                 set CC to the {kind} {version} C compiler of the same install (the {} beside its C++ compiler), or unset CC and give --host-cc a compiler with its C compiler beside it",
                cxx.display(),
                shown(v, &cc),
                cxx.display(),
                match kind {
                    crate::platform::host::CompilerKind::Clang => "clang",
                    _ => "gcc",
                }
            )
        }
    }
}

/// `CC=gcc-14` (on PATH) or `CC=/usr/bin/gcc-14`: the file it names.
fn explicit_path(v: &str, var: &str, path: &str) -> Result<PathBuf> {
    let p = if v.contains('/') || v.contains('\\') {
        Some(PathBuf::from(v))
    } else {
        crate::detect::toolchain::which(v, path)
    };
    match p.filter(|p| p.is_file()) {
        Some(p) => Ok(p),
        None => anyhow::bail!("{var}={v}: no such compiler (not a file, and not on PATH)"),
    }
}

/// The C compiler's name for a C++ compiler's: `g++-14` -> `gcc-14`,
/// `x86_64-linux-gnu-g++` -> `x86_64-linux-gnu-gcc`, `clang++-18` -> `clang-18`, `c++` -> `cc`.
pub fn c_compiler_name(cxx: &str) -> Option<String> {
    [("clang++", "clang"), ("g++", "gcc"), ("c++", "cc")]
        .iter()
        .find_map(|(from, to)| {
            cxx.rfind(from)
                .map(|i| format!("{}{to}{}", &cxx[..i], &cxx[i + from.len()..]))
        })
}

/// `--host-cc DIR/g++-14` -> `DIR/gcc-14`, which must exist.
fn sibling_c_compiler(cxx: &Path) -> Result<PathBuf> {
    let name = cxx
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let Some(cc) = c_compiler_name(&name) else {
        anyhow::bail!(
            "--host-cc {}: `{name}` is not a C++ compiler's name (g++, clang++, c++ or cl.exe, with any prefix or suffix such as g++-14): --host-cc names the C++ compiler, and the C compiler is the one beside it (or CC)",
            cxx.display()
        );
    };
    let cc = cxx.with_file_name(cc);
    if !cc.is_file() {
        anyhow::bail!("--host-cc {}: no C compiler beside it ({} does not exist); set CC to the C compiler that goes with it", cxx.display(), cc.display());
    }
    Ok(cc)
}

/// `--host-cc cl.exe`: bare, the Developer Command Prompt this tool runs in; a
/// path, that toolset as vswhere finds it (with its captured environment).
/// Either way it is used as given: no other toolset is considered.
fn msvc_host_cc(
    env: &Env,
    cl: &Path,
    probe: &dyn msvc::Probe,
    windows: bool,
) -> Result<crate::platform::host::Compiler> {
    use crate::platform::host::Origin;
    use crate::platform::msvc::env::Msvc;
    let origin = Origin::Explicit {
        by: "--host-cc".into(),
    };
    if !windows {
        anyhow::bail!(
            "--host-cc {}: MSVC's cl.exe is used on Windows only; here give g++ or clang++",
            cl.display()
        );
    }
    if cl.components().count() == 1 {
        let host = msvc::from_current_env(probe, &env.windows_vars, Some(cl), "--host-cc")?;
        return Ok(msvc::compiler(
            Msvc {
                host,
                others: vec![],
            },
            origin,
        ));
    }
    if !cl.is_file() {
        anyhow::bail!("--host-cc {}: no such file", cl.display());
    }
    let found = msvc::detect(probe, env.program_files_x86.as_deref(), &env.windows_vars)?;
    match msvc::find_cl(&found.msvc, cl) {
        Some(host) => Ok(msvc::compiler(
            Msvc {
                host: host.clone(),
                others: vec![],
            },
            origin,
        )),
        None => {
            let known: Vec<String> = std::iter::once(&found.msvc.host)
                .chain(&found.msvc.others)
                .map(|t| t.cl.display().to_string())
                .collect();
            anyhow::bail!(
                "--host-cc {}: this cl.exe is in none of the toolsets vswhere lists ({}): name one of those, or start from its Developer Command Prompt and give --host-cc cl.exe",
                cl.display(),
                known.join(", ")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::env::test_env as env;
    use crate::platform::host::{CompilerKind, Origin};
    use crate::platform::msvc::env::MsvcEnvSource;
    use crate::platform::msvc::tests::{cl_of, fixture, Fake, VS2026};
    use crate::process::{Output, Recorder};

    /// The processes of a test in which none should run (MSVC is probed through `Fake`).
    fn runs_nothing() -> Recorder {
        Recorder::replying(|c| panic!("no process runs here, yet `{c}` did"))
    }

    /// A GCC that finds no libstdc++.so (as the GPU machine's `CXX=/opt/gcc/bin/g++` did)
    /// would link libstdc++ statically into every library: refused before any build,
    /// naming where the compiler came from; one that finds it passes.
    #[test]
    fn a_gcc_without_a_shared_libstdcxx_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let gxx = d.path().join("g++");
        std::fs::write(&gxx, "").unwrap();
        std::fs::write(d.path().join("gcc"), "").unwrap();
        let reply = |libstdcxx: &'static str| {
            let banner = fixture("gcc-13.3.0-ubuntu24.04.txt");
            Recorder::replying(move |c| {
                Ok(match c.to_string().ends_with("--version") {
                    true => Output::ok(&banner, ""),
                    false => Output::ok(libstdcxx, ""),
                })
            })
        };
        let mut e = env();
        e.cxx = Some(gxx.display().to_string());
        e.cc = Some(d.path().join("gcc").display().to_string());
        let detect = |procs: &Recorder| {
            detect_compiler_with(&e, None, &Fake::recorded(), false, &Log::stderr(), procs)
        };
        let err = format!("{:#}", detect(&reply("libstdc++.so\n")).unwrap_err());
        let gxx = gxx.canonicalize().unwrap();
        assert_eq!(
            err.replace(&gxx.display().to_string(), "/opt/gcc/bin/g++"),
            "C++ compiler /opt/gcc/bin/g++ (from CXX) finds no libstdc++.so (`/opt/gcc/bin/g++ -print-file-name=libstdc++.so` prints the bare name), \
             so it would link libstdc++ statically into every library, and a wheel built so crashes once another \
             copy is loaded (numpy loads libstdc++.so.6). Use a GCC installed with its shared runtime: \
             --host-cc /usr/bin/g++, or unset CC/CXX"
        );
        let ok = detect(&reply("/usr/lib/gcc/x86_64-linux-gnu/13/libstdc++.so\n")).unwrap();
        assert_eq!(ok.unwrap().version.to_string(), "13.3.0");
    }

    /// `--host-cc DIR/g++-14`: the compiler's `--version` runs through the
    /// process seam (stderr merged), and the banner it prints decides the
    /// compiler's kind and version; a failing `--version` is an error naming it.
    #[test]
    fn the_compiler_version_probe_runs_through_the_process_seam() {
        let d = tempfile::tempdir().unwrap();
        let gxx = d.path().join("g++-14");
        std::fs::write(&gxx, "").unwrap();
        std::fs::write(d.path().join("gcc-14"), "").unwrap();
        let banner = fixture("gcc-13.3.0-ubuntu24.04.txt");
        let procs = Recorder::replying(move |_| Ok(Output::ok(&banner, "")));
        let c = detect_compiler_with(
            &env(),
            Some(&gxx),
            &Fake::recorded(),
            false,
            &Log::stderr(),
            &procs,
        )
        .unwrap()
        .unwrap();
        let gxx = gxx.canonicalize().unwrap();
        assert_eq!(c.kind, CompilerKind::Gcc);
        assert_eq!(c.version.to_string(), "13.3.0");
        assert_eq!(c.cxx, gxx);
        assert_eq!(
            procs.commands(),
            [
                format!("{} --version", gxx.display()),
                format!("{} -print-file-name=libstdc++.so", gxx.display())
            ]
        );
        assert!(procs.calls.borrow()[0].cmd.merge_stderr);

        let failing = Recorder::replying(|_| Ok(Output::failed(1)));
        let e = detect_compiler_with(
            &env(),
            Some(&gxx),
            &Fake::recorded(),
            false,
            &Log::stderr(),
            &failing,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("does not run") && e.contains("--version"), "{e}");
    }

    #[test]
    fn c_compiler_beside_a_cxx_compiler() {
        for (cxx, cc) in [
            ("g++", Some("gcc")),
            ("g++-14", Some("gcc-14")),
            ("x86_64-linux-gnu-g++-12", Some("x86_64-linux-gnu-gcc-12")),
            ("clang++", Some("clang")),
            ("clang++-18", Some("clang-18")),
            ("c++", Some("cc")),
            ("g++.exe", Some("gcc.exe")),
            ("gcc-14", None),
            ("clang", None),
        ] {
            assert_eq!(c_compiler_name(cxx).as_deref(), cc, "{cxx}");
        }
    }

    #[test]
    fn host_cc_needs_its_c_compiler_beside_it() {
        let d = tempfile::tempdir().unwrap();
        let gxx = d.path().join("g++-14");
        std::fs::write(&gxx, "").unwrap();
        let e = sibling_c_compiler(&gxx).unwrap_err().to_string();
        assert!(
            e.contains(&gxx.display().to_string())
                && e.contains(&d.path().join("gcc-14").display().to_string())
                && e.contains("set CC"),
            "{e}"
        );
        std::fs::write(d.path().join("gcc-14"), "").unwrap();
        assert_eq!(sibling_c_compiler(&gxx).unwrap(), d.path().join("gcc-14"));
        let e = sibling_c_compiler(&d.path().join("gcc-14"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("`gcc-14` is not a C++ compiler's name"), "{e}");
        let e = detect_compiler_with(
            &env(),
            Some(&d.path().join("missing/g++")),
            &Fake::recorded(),
            false,
            &Log::stderr(),
            &runs_nothing(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("--host-cc") && e.contains("missing/g++") && e.contains("no such file"),
            "{e}"
        );
    }

    /// `--host-cc DIR/g++` with `CC` naming another GCC (the machine's `CC=/opt/gcc-12/bin/gcc`):
    /// the gcc beside g++ is used and the plan warns, naming both; with no gcc beside it,
    /// `CC` is taken only where it is the same compiler, else refused, saying which CC to set.
    #[test]
    fn host_cc_takes_its_own_c_compiler_over_a_conflicting_cc() {
        let d = tempfile::tempdir().unwrap();
        let (usr, opt) = (d.path().join("usr/bin"), d.path().join("opt/gcc-12/bin"));
        fs_err::create_dir_all(&usr).unwrap();
        fs_err::create_dir_all(&opt).unwrap();
        for f in [usr.join("g++"), usr.join("gcc"), opt.join("gcc")] {
            std::fs::write(f, "").unwrap();
        }
        // Shims: each compiler's --version by its directory.
        let banner = |c: &crate::process::Command| {
            let v = if c.program.to_string_lossy().contains("gcc-12") {
                "12.2.0"
            } else {
                "13.3.0"
            };
            Output::ok(
                &format!("gcc (GCC) {v}\nCopyright (C) 2023 Free Software Foundation, Inc.\n"),
                "",
            )
        };
        let procs = Recorder::replying(move |c| {
            Ok(match c.to_string().ends_with("--version") {
                true => banner(c),
                false => Output::ok("/usr/lib/libstdc++.so\n", ""),
            })
        });
        let log_file = d.path().join("log");
        let log = Log::file(&log_file).unwrap();
        let mut e = env();
        e.cc = Some(opt.join("gcc").display().to_string());
        let detect = |e: &crate::detect::Env, gxx: &Path, log: &Log| {
            detect_compiler_with(e, Some(gxx), &Fake::recorded(), false, log, &procs)
        };
        let c = detect(&e, &usr.join("g++"), &log).unwrap().unwrap();
        let canon = |p: PathBuf| p.canonicalize().unwrap();
        assert_eq!(
            (c.cc, c.cxx),
            (canon(usr.join("gcc")), canon(usr.join("g++")))
        );
        let warned = fs_err::read_to_string(&log_file).unwrap();
        let root = d.path().display().to_string();
        insta::assert_snapshot!("host_cc_with_another_cc", warned.replace(&root, "/ROOT"));

        // CC naming the very compiler beside it: no warning.
        let quiet = d.path().join("quiet");
        e.cc = Some(usr.join("gcc").display().to_string());
        detect(&e, &usr.join("g++"), &Log::file(&quiet).unwrap()).unwrap();
        assert_eq!(fs_err::read_to_string(&quiet).unwrap(), "");

        // No gcc beside: CC of another version is refused; of the same version, taken.
        std::fs::remove_file(usr.join("gcc")).unwrap();
        e.cc = Some(opt.join("gcc").display().to_string());
        let err = format!("{:#}", detect(&e, &usr.join("g++"), &log).unwrap_err());
        insta::assert_snapshot!(
            "host_cc_with_another_cc_and_none_beside",
            err.replace(&root, "/ROOT")
        );
        std::fs::write(usr.join("gcc-13"), "").unwrap();
        e.cc = Some(usr.join("gcc-13").display().to_string());
        let c = detect(&e, &usr.join("g++"), &log).unwrap().unwrap();
        assert_eq!(c.cc, canon(usr.join("gcc-13")));
    }

    #[test]
    fn windows_finds_msvc_with_vswhere_unless_told_otherwise() {
        let fake = Fake::recorded();
        let c = detect_compiler_with(&env(), None, &fake, true, &Log::stderr(), &runs_nothing())
            .unwrap()
            .unwrap();
        assert_eq!(
            (c.kind, c.version.to_string(), c.origin.clone()),
            (CompilerKind::Msvc, "19.50.35717".into(), Origin::System)
        );
        assert_eq!(c.msvc.as_ref().unwrap().others.len(), 2);
        assert!(fake.commands()[0].ends_with(r"vswhere.exe -products * -requires Microsoft.VisualStudio.Component.VC.Tools.x86.x64 -format json -utf8"));

        // CXX=cl in a Developer Command Prompt: that environment, as it is.
        let fake = Fake::recorded();
        let mut e = env();
        e.cxx = Some("cl".into());
        e.windows_vars =
            crate::platform::msvc::VcvarsEnv::parse(&fixture("vcvars64-14.44-on-vs2026-set.txt"))
                .vars;
        let c = detect_compiler_with(&e, None, &fake, true, &Log::stderr(), &runs_nothing())
            .unwrap()
            .unwrap();
        let m = c.msvc.as_ref().unwrap();
        assert_eq!(
            (c.origin.clone(), m.host.source.clone()),
            (
                Origin::Explicit { by: "CXX".into() },
                MsvcEnvSource::Inherited { by: "CXX".into() }
            )
        );
        assert!(
            m.others.is_empty(),
            "the user chose the toolset: nothing to switch to"
        );
        assert_eq!(c.cxx, PathBuf::from(cl_of(VS2026, "14.44.35207")));
        assert_eq!(fake.commands().len(), 1, "only cl runs");

        // --host-cc cl.exe, bare: the same, recorded as --host-cc.
        let mut e2 = e.clone();
        e2.cxx = None;
        let c = detect_compiler_with(
            &e2,
            Some(Path::new("cl.exe")),
            &Fake::recorded(),
            true,
            &Log::stderr(),
            &runs_nothing(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            c.origin,
            Origin::Explicit {
                by: "--host-cc".into()
            }
        );

        // Not on Windows, cl is refused by name.
        let err = detect_compiler_with(
            &e,
            None,
            &Fake::recorded(),
            false,
            &Log::stderr(),
            &runs_nothing(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("CXX=cl") && err.contains("Windows only"),
            "{err}"
        );
        let err = detect_compiler_with(
            &env(),
            Some(Path::new(r"C:\VS\cl.exe")),
            &Fake::recorded(),
            false,
            &Log::stderr(),
            &runs_nothing(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains(r"--host-cc C:\VS\cl.exe") && err.contains("Windows only"),
            "{err}"
        );
    }
}
