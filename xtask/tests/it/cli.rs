//! The command line on bad input, and the whole pipeline on a small real CMake
//! project (mini-llama: llama.cpp's target names, builds in seconds).
// Tests say on stderr why they skip and where a long build is.
#![allow(clippy::print_stderr)]

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::*;

fn fails_with(args: &[&str], envs: &[(&str, &str)], needles: &[&str]) {
    let o = run(args, envs);
    assert!(!o.status.success(), "expected failure: {args:?}");
    let t = text(&o);
    for n in needles {
        assert!(t.contains(n), "`{n}` not in:\n{t}");
    }
}

#[test]
fn unknown_recipe_version_arch_and_python() {
    fails_with(
        &["plan", "llama"],
        &[],
        &["no recipe named `llama`", "llama-cpp-python", "llama.cpp"],
    );
    fails_with(
        &[
            "plan",
            "llama-cpp-python",
            "--py",
            "311",
            "--version",
            "9.9.9",
        ],
        &[],
        &["no release `9.9.9`: the recipe pins 0.3.36, 0.3.16"],
    );
    fails_with(
        &["plan", "llama-cpp-python", "--py", "311", "--arch", "gpu"],
        &[],
        &["unknown --arch value `gpu`", "rtx5090", "`cpu`"],
    );
    fails_with(
        &["plan", "llama-cpp-python", "--py", "27"],
        &[],
        &["`27` is not a Python version"],
    );
    fails_with(
        &["wheel", "llama.cpp"],
        &[],
        &["cargo xtask build llama.cpp"],
    );
}

/// `--arch auto` is the default: with no GPU seen (the tests' nvidia-smi does not
/// exist), the plan is for the CPU and says so in one line, on stderr, and records it.
#[test]
fn without_arch_and_without_a_gpu_the_plan_is_for_the_cpu() {
    let line = "no NVIDIA GPU found: building for CPU; --arch 120 for an RTX 50 card";
    for args in [
        &["plan", "llama.cpp", "--json"][..],
        &["plan", "llama.cpp", "--arch", "native", "--json"],
    ] {
        let o = run(args, &[]);
        assert!(o.status.success(), "{}", text(&o));
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(stderr.matches(line).count(), 1, "{stderr}");
        let p: serde_json::Value =
            serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["plan"].clone();
        assert_eq!(
            (p["accelerator"].as_str(), p["auto_arch"].as_str()),
            (Some("cpu"), Some(line))
        );
        assert!(p["cuda"].is_null(), "{}", p["cuda"]);
    }
    // This machine's own driver, asked as a build asks it (NVML, then nvidia-smi): on a
    // machine without a GPU (CI) the same line; on one with, a plan for its GPUs.
    let mut c = xtask(&["plan", "llama.cpp", "--json"], &[]);
    c.env_remove("LLAMA_FORGE_NVIDIA_SMI");
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let p: serde_json::Value =
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["plan"].clone();
    let why = p["auto_arch"].as_str().unwrap_or_default();
    match p["accelerator"].as_str() {
        Some("cpu") => assert_eq!(why, line),
        _ => assert!(why.starts_with("auto: ") && !p["cuda"].is_null(), "{p}"),
    }
    assert!(text(&o).contains(why), "{}", text(&o));
    // The manifest's plan never says auto: an `auto` there (or in a release file) is refused.
    let o = run(&["plan", "llama.cpp", "--arch", "cpu", "--json"], &[]);
    let p: serde_json::Value =
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["plan"].clone();
    assert!(p.get("auto_arch").is_none(), "{p}");
}

#[test]
fn malformed_recipe_names_file_line_and_field() {
    let d = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(repo().join("recipes/llama-cpp-python.toml")).unwrap();
    std::fs::write(
        d.path().join("llama-cpp-python.toml"),
        text.replacen("project_dir", "projectdir", 1),
    )
    .unwrap();
    let recipes = d.path().display().to_string();
    fails_with(
        &["plan", "llama-cpp-python", "--py", "311"],
        &[("LLAMA_FORGE_RECIPES", &recipes)],
        &["llama-cpp-python.toml", "line", "projectdir"],
    );
}

#[test]
fn missing_compiler_is_named() {
    fails_with(
        &["plan", "llama-cpp-python", "--py", "311"],
        &[("CXX", "/nonexistent/g++")],
        &["CXX=/nonexistent/g++", "no such compiler"],
    );
}

#[test]
fn bad_host_cc_is_named() {
    fails_with(
        &[
            "plan",
            "llama-cpp-python",
            "--py",
            "311",
            "--host-cc",
            "/nonexistent/g++-99",
        ],
        &[],
        &["--host-cc /nonexistent/g++-99", "no such file"],
    );
    fails_with(
        &[
            "plan",
            "llama-cpp-python",
            "--py",
            "311",
            "--host-cc",
            "/usr/bin/cl.exe",
        ],
        &[],
        &["--host-cc /usr/bin/cl.exe", "Windows only"],
    );
}

/// The real g++ on PATH (this machine's), given with --host-cc: the plan's C++
/// and C compilers are it and the gcc beside it, recorded as set by --host-cc.
fn which_gxx() -> Option<std::path::PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join("g++"))
        .find(|p| p.is_file() && p.with_file_name("gcc").is_file())
}

#[test]
fn host_cc_overrides_the_compiler_in_the_plan() {
    let Some(gxx) = which_gxx() else {
        return cannot_run_here("no g++ with a gcc beside it on PATH");
    };
    let g = gxx.display().to_string();
    let o = run(
        &[
            "plan",
            "llama-cpp-python",
            "--py",
            "311",
            "--host-cc",
            &g,
            "--json",
        ],
        &[("CXX", "/nonexistent/c++")],
    );
    assert!(o.status.success(), "--host-cc wins over CXX");
    let plan: serde_json::Value =
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["plan"].clone();
    let want = serde_json::json!({"kind": "explicit", "by": "--host-cc"});
    assert_eq!(plan["tools"]["cxx"]["origin"], want);
    assert_eq!(plan["tools"]["cc"]["origin"], want);
    assert_eq!(
        plan["tools"]["cxx"]["path"],
        gxx.canonicalize().unwrap().display().to_string()
    );
    assert_eq!(
        plan["tools"]["cc"]["path"],
        gxx.with_file_name("gcc")
            .canonicalize()
            .unwrap()
            .display()
            .to_string()
    );
    let cxx_define = plan["defines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "CMAKE_CXX_COMPILER")
        .unwrap();
    assert_eq!(cxx_define["value"], plan["tools"]["cxx"]["path"]);
    let o = run(
        &["plan", "llama-cpp-python", "--py", "311", "--host-cc", &g],
        &[],
    );
    assert!(text(&o).contains("(set by --host-cc)"), "{}", text(&o));
}

#[test]
fn checksum_mismatch_refuses_and_keeps_the_file() {
    let d = tempfile::tempdir().unwrap();
    let plan = run(&["plan", "llama-cpp-python", "--py", "311", "--json"], &[]);
    let plan: serde_json::Value =
        serde_json::from_slice::<serde_json::Value>(&plan.stdout).unwrap()["plan"].clone();
    let url = plan["source"]["location"].as_str().unwrap();
    let sha = plan["source"]["sha256"].as_str().unwrap();
    let cached = d
        .path()
        .join("downloads")
        .join(sha)
        .join(url.rsplit('/').next().unwrap());
    std::fs::create_dir_all(cached.parent().unwrap()).unwrap();
    std::fs::write(&cached, b"not the sdist").unwrap();
    let dist = d.path().join("dist");
    let cache = d.path().display().to_string();
    let mut cmd = xtask(
        &[
            "wheel",
            "llama-cpp-python",
            "--py",
            "311",
            "--dist",
            &dist.display().to_string(),
        ],
        &[],
    );
    cmd.env("LLAMA_FORGE_CACHE", &cache)
        .env("LLAMA_FORGE_BUILD_DIR", d.path().join("build"));
    let o = cmd.output().unwrap();
    let t = text(&o);
    assert!(!o.status.success());
    let got = {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(b"not the sdist"))
    };
    assert!(
        t.contains(sha) && t.contains(&got),
        "both hashes named:\n{t}"
    );
    assert!(cached.exists(), "nothing deleted");
    assert!(files_in(&dist).is_empty(), "nothing in dist");
}

fn mini_build(src: &Path, dist: &Path, build: &Path) -> std::process::Output {
    let mut c = mini_build_command(src, dist, &[]);
    c.env("LLAMA_FORGE_BUILD_DIR", build);
    let o = c.output().unwrap();
    eprintln!("{}", text(&o));
    o
}

#[test]
fn mini_project_builds_packages_verifies_and_runs_anywhere() {
    let d = tempfile::tempdir().unwrap();
    let src = mini_source(d.path());
    let (dist, build) = (d.path().join("dist"), d.path().join("build"));
    let o = mini_build(&src, &dist, &build);
    assert!(o.status.success());
    let files = files_in(&dist);
    let archive = files
        .iter()
        .find(|f| f.ends_with(".tar.gz"))
        .expect("an archive")
        .clone();
    assert!(
        archive.starts_with("llama.cpp-0.3.36-cpu-linux-x86_64"),
        "{archive}"
    );
    assert!(
        files.contains(&format!("{archive}.manifest.json")),
        "{files:?}"
    );
    assert_eq!(
        files.len(),
        3,
        "only the archive, its manifest and the dist lock: {files:?}"
    );
    assert_eq!(files[0], ".lock");

    let v = run(&["verify", &dist.join(&archive).display().to_string()], &[]);
    assert!(v.status.success());

    // Only the shipped CPU variants were compiled (the recipe's patch of ggml's
    // ggml_add_cpu_backend_variant, LLAMA_FORGE_CPU_VARIANTS): the mini project knows 14.
    let work: Vec<String> = files_in(&build)
        .into_iter()
        .filter(|f| f.starts_with("llama.cpp-0.3.36-"))
        .collect();
    assert_eq!(work.len(), 1, "{work:?}");
    // The project builds where it is in the source: vendor/llama.cpp.
    let mut modules: Vec<String> =
        files_in(&build.join(&work[0]).join("build/vendor/llama.cpp/bin"))
            .into_iter()
            .filter(|f| f.starts_with("libggml-cpu-"))
            .collect();
    modules.sort();
    assert_eq!(
        modules,
        [
            "libggml-cpu-alderlake.so",
            "libggml-cpu-haswell.so",
            "libggml-cpu-icelake.so",
            "libggml-cpu-sapphirerapids.so",
            "libggml-cpu-sse42.so"
        ]
    );

    // Unpack somewhere else and run a tool: RUNPATH $ORIGIN finds the libraries.
    let elsewhere = d.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let st = std::process::Command::new("tar")
        .arg("xzf")
        .arg(dist.join(&archive))
        .arg("-C")
        .arg(&elsewhere)
        .status()
        .unwrap();
    assert!(st.success());
    let top = elsewhere.join(archive.trim_end_matches(".tar.gz"));
    let names = files_in(&top);
    assert!(
        names.contains(&"libllama.so".to_string()) && names.contains(&"manifest.json".to_string()),
        "{names:?}"
    );
    assert!(
        !names.iter().any(|n| n.contains(".so.")),
        "no versioned copies: {names:?}"
    );
    let out = std::process::Command::new(top.join("llama-cli"))
        .env_clear()
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "llama-cli 42");

    // The manifest records the defines with reasons and every file.
    let m: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dist.join(format!("{archive}.manifest.json"))).unwrap(),
    )
    .unwrap();
    let define = |name: &str| {
        m["plan"]["defines"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no define {name}"))
    };
    assert_eq!(define("GGML_NATIVE")["value"], "OFF");
    assert!(define("GGML_NATIVE")["reason"].as_str().unwrap().len() > 10);
    assert!(
        m["files"]["libggml-base.so"]["sha256"]
            .as_str()
            .unwrap()
            .len()
            == 64
    );
    assert_eq!(m["plan"]["source"]["kind"], "local");
    // Schema 3: nothing of the plan is copied beside it.
    for copied in [
        "cmake_defines",
        "toolchains",
        "source",
        "env",
        "cuda",
        "recipe",
    ] {
        assert!(m.get(copied).is_none(), "{copied} beside the plan");
    }
    assert!(m["artifact"]["sha256"].is_string());

    // The compiler's origin reaches the manifest: here the pinned toolchain (the default,
    // CC/CXX unset), with the pins file and its sha256; `--host-cc` below.
    assert_eq!(m["plan"]["tools"]["cxx"]["origin"]["kind"], "pinned-set");
    assert_eq!(
        m["plan"]["tools"]["cxx"]["origin"]["file"],
        "toolchains/linux-gcc.toml"
    );

    // A second run with nothing changed is a no-op.
    let again = mini_build(&src, &dist, &build);
    assert!(again.status.success());
    assert!(text(&again).contains("up to date"), "{}", text(&again));
}

#[test]
fn host_cc_reaches_the_manifest() {
    let Some(gxx) = which_gxx() else {
        return cannot_run_here("no g++ with a gcc beside it on PATH");
    };
    let d = tempfile::tempdir().unwrap();
    let src = mini_source(d.path());
    let dist = d.path().join("dist");
    let mut c = xtask(
        &[
            "build",
            "llama.cpp",
            "--version",
            "0.3.36",
            "--source",
            &src.display().to_string(),
            "--dist",
            &dist.display().to_string(),
            "--host-cc",
            &gxx.display().to_string(),
        ],
        &[],
    );
    c.env("LLAMA_FORGE_BUILD_DIR", d.path().join("build"));
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let manifest = files_in(&dist)
        .into_iter()
        .find(|f| f.ends_with(".manifest.json"))
        .unwrap();
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dist.join(manifest)).unwrap()).unwrap();
    let want = serde_json::json!({"kind": "explicit", "by": "--host-cc"});
    assert_eq!(m["plan"]["tools"]["cxx"]["origin"], want);
    assert_eq!(
        m["plan"]["tools"]["cxx"]["path"],
        gxx.canonicalize().unwrap().display().to_string()
    );
}

#[test]
fn cmake_failure_shows_the_log_and_leaves_dist_empty() {
    let d = tempfile::tempdir().unwrap();
    let src = mini_source(d.path());
    let cml = src.join("CMakeLists.txt");
    let t = std::fs::read_to_string(&cml).unwrap().replace(
        "option(MINI_FAIL \"make the configure step fail\" OFF)",
        "set(MINI_FAIL ON)",
    );
    std::fs::write(&cml, t).unwrap();
    let (dist, build) = (d.path().join("dist"), d.path().join("build"));
    let o = mini_build(&src, &dist, &build);
    assert!(!o.status.success());
    let t = text(&o);
    assert!(
        t.contains("configure failed")
            && t.contains("configure failed on purpose")
            && t.contains("full log: "),
        "{t}"
    );
    let log = t
        .split("full log: ")
        .nth(1)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .trim();
    assert!(Path::new(log).is_file(), "log {log} exists");
    assert!(files_in(&dist).is_empty());
}

#[cfg(unix)]
#[test]
fn interrupted_build_leaves_nothing_in_dist_and_resumes() {
    use std::os::unix::process::CommandExt;
    let d = tempfile::tempdir().unwrap();
    let src = mini_source(d.path());
    let cml = src.join("CMakeLists.txt");
    let t = std::fs::read_to_string(&cml)
        .unwrap()
        .replace("if (DEFINED ENV{MINI_SLEEP})", "if (TRUE)")
        .replace("$ENV{MINI_SLEEP}", "15");
    std::fs::write(&cml, t).unwrap();
    let (dist, build) = (d.path().join("dist"), d.path().join("build"));
    let mut c = xtask(
        &[
            "build",
            "llama.cpp",
            "--version",
            "0.3.36",
            "--source",
            &src.display().to_string(),
            "--dist",
            &dist.display().to_string(),
        ],
        &[],
    );
    c.env("LLAMA_FORGE_BUILD_DIR", &build).process_group(0);
    // Ctrl-C in a terminal reaches a foreground job whose SIGINT is caught or
    // default. A test run started in the background (`cargo test &`, CI scripts)
    // has SIGINT ignored, the tool keeps an ignored SIGINT ignored (as nohup
    // wants), and the build would run to its end: give the tool the terminal's
    // disposition.
    // SAFETY: only sigaction (async-signal-safe) between fork and exec.
    unsafe {
        c.pre_exec(|| {
            use nix::sys::signal::{signal, SigHandler, Signal};
            signal(Signal::SIGINT, SigHandler::SigDfl).map_err(std::io::Error::from)?;
            Ok(())
        });
    }
    let mut child = c.spawn().unwrap();
    // Wait until the build step runs, then Ctrl-C the whole process group.
    let started = Instant::now();
    // The build dir holds the work dir and its lock file: look in every entry. The
    // build step then sleeps 15 s, so the signal 2 s later lands in it even on a
    // loaded machine (with 6 s, one CI run's build finished first).
    loop {
        let configured = std::fs::read_dir(&build)
            .map(|rd| {
                rd.flatten()
                    .any(|e| e.path().join("configure.done").is_file())
            })
            .unwrap_or(false);
        if configured {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "build never got to configure"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(2));
    let pgid = child.id().to_string();
    std::process::Command::new("kill")
        .args(["-INT", "--", &format!("-{pgid}")])
        .status()
        .unwrap();
    let status = child.wait().unwrap();
    // Its step stopped, the tool ends by SIGINT itself: a shell shows 130 (README, "Exit
    // codes"), and a script that ran it stops too. It exited 1 before.
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            (status.code(), status.signal()),
            (None, Some(2)),
            "ended by SIGINT: {status}"
        );
    }
    assert!(
        files_in(&dist).is_empty(),
        "no partial file in dist: {:?}",
        files_in(&dist)
    );

    let o = mini_build(&src, &dist, &build);
    assert!(o.status.success(), "the next run resumes and finishes");
    assert_eq!(
        files_in(&dist).len(),
        3,
        "the archive, its manifest and the dist lock: {:?}",
        files_in(&dist)
    );
}

/// `--dist` naming a file (or a path under one) fails in seconds, naming the
/// path, before anything is configured or built.
#[test]
fn a_bad_dist_fails_before_anything_is_built() {
    let d = tempfile::tempdir().unwrap();
    let src = mini_source(d.path());
    let file = d.path().join("dist-is-a-file");
    std::fs::write(&file, b"x").unwrap();
    for (dist, why) in [
        (file.clone(), "is not a directory"),
        (file.join("sub"), "cannot create the directory"),
    ] {
        let build = d.path().join("build");
        let started = Instant::now();
        let o = mini_build(&src, &dist, &build);
        let t = text(&o);
        assert!(!o.status.success());
        assert!(
            t.contains(&format!("--dist {}: {why}", dist.display())),
            "{t}"
        );
        assert!(!t.contains("building llama.cpp"), "no build step ran:\n{t}");
        assert!(
            files_in(&build).is_empty(),
            "nothing in the build dir: {:?}",
            files_in(&build)
        );
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{:?}",
            started.elapsed()
        );
    }
    assert_eq!(std::fs::read(&file).unwrap(), b"x");
}

/// An artifact that fails verification (here a build path compiled into
/// libllama.so) never reaches dist/, and the staging dir is cleaned up.
#[test]
fn an_artifact_failing_verification_never_reaches_dist() {
    let d = tempfile::tempdir().unwrap();
    let src = mini_source(d.path());
    let cml = src.join("CMakeLists.txt");
    let t = std::fs::read_to_string(&cml).unwrap();
    let leaky = t.replace(
        "MINI_SERVER=\"${LLAMA_BUILD_SERVER}\"",
        "MINI_SERVER=\"${CMAKE_BINARY_DIR}\"",
    );
    assert_ne!(t, leaky);
    std::fs::write(&cml, leaky).unwrap();
    let (dist, build) = (d.path().join("dist"), d.path().join("build"));
    let o = mini_build(&src, &dist, &build);
    let t = text(&o);
    assert!(!o.status.success());
    assert!(
        t.contains("failed verification, so it was not put into")
            && t.contains("libllama.so: contains the build path"),
        "{t}"
    );
    assert!(
        files_in(&dist).is_empty(),
        "nothing in dist: {:?}",
        files_in(&dist)
    );
    assert!(
        files_in(&build.join("tmp")).is_empty(),
        "no staging dir left: {:?}",
        files_in(&build.join("tmp"))
    );
}

/// The pid in `file`, once it is there.
fn wait_for_pid(file: &Path) -> i32 {
    let started = Instant::now();
    loop {
        if let Some(pid) = std::fs::read_to_string(file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return pid;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "{} never appeared",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Process `pid` is gone (no such pid, or a zombie).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => s
            .rsplit(')')
            .next()
            .and_then(|r| r.split_whitespace().next())
            .is_some_and(|st| st == "Z" || st == "X"),
    }
}

fn wait_gone(pid: i32, within: Duration) -> bool {
    let started = Instant::now();
    while started.elapsed() < within {
        if gone(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// A signal to the tool alone (not to its step, whose process group is its
/// own) while CMake's configure runs a child, and that child one more in a session of
/// its own (`setsid`, out of every process group of the step): SIGTERM stops the step
/// and every process it started before the tool exits; SIGKILL cannot be caught, but the
/// step's reaper gets SIGTERM from the kernel (PR_SET_PDEATHSIG) and ends them all.
/// The same for a command that blocks in the build step, under Ninja (as a compile would,
/// in the process group Ninja gives each of its jobs).
#[cfg(target_os = "linux")]
#[test]
fn a_signal_to_the_tool_ends_its_step() {
    use nix::sys::signal::{kill, killpg, Signal};
    use nix::unistd::Pid;
    for (sig, phase) in [
        (Signal::SIGTERM, "configure"),
        (Signal::SIGKILL, "configure"),
        (Signal::SIGTERM, "build"),
        (Signal::SIGKILL, "build"),
    ] {
        eprintln!("{sig} during {phase}");
        let d = tempfile::tempdir().unwrap();
        let src = mini_source(d.path());
        let pidfile = d.path().join("child.pid");
        let escaped = d.path().join("escaped.pid");
        let cml = src.join("CMakeLists.txt");
        let t = std::fs::read_to_string(&cml).unwrap();
        let script = format!(
            "setsid /bin/sh -c 'echo $$ > {}; exec sleep 300' & echo $$ > {}; exec sleep 300",
            escaped.display(),
            pidfile.display()
        );
        let cml_text = match phase {
            "configure" => t.replacen(
                "project(mini_llama C CXX)",
                &format!("project(mini_llama C CXX)\nexecute_process(COMMAND /bin/sh -c \"{script}\")"),
                1,
            ),
            // A dependency of a target the plan builds (it names them).
            _ => format!("{t}\nadd_custom_target(block COMMAND /bin/sh -c \"{script}\" VERBATIM)\nadd_dependencies(llama block)\n"),
        };
        std::fs::write(&cml, cml_text).unwrap();
        let (dist, build) = (d.path().join("dist"), d.path().join("build"));
        let (log, json) = (d.path().join("out.log"), d.path().join("out.json"));
        // --json: the interruption is also said as the error document on stdout.
        let mut c = mini_build_command(&src, &dist, &["--json"]);
        c.env("LLAMA_FORGE_BUILD_DIR", &build)
            .stdout(std::fs::File::create(&json).unwrap())
            .stderr(std::fs::File::create(&log).unwrap());
        let mut tool = c.spawn().unwrap();
        let child = wait_for_pid(&pidfile);
        let escapee = wait_for_pid(&escaped);
        let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap();
        let cmake: i32 = stat
            .rsplit(')')
            .next()
            .unwrap()
            .split_whitespace()
            .nth(2)
            .unwrap()
            .parse()
            .unwrap();
        assert_ne!(
            cmake,
            nix::unistd::getpgrp().as_raw(),
            "the step runs in a process group of its own"
        );
        kill(Pid::from_raw(tool.id() as i32), sig).unwrap();
        let status = tool.wait().unwrap();
        // Ended by the signal itself (after its step, for SIGTERM): 143 and 137 in a shell.
        {
            use std::os::unix::process::ExitStatusExt;
            assert_eq!(status.signal(), Some(sig as i32), "{status}");
        }
        let out = std::fs::read_to_string(&log).unwrap();
        if sig == Signal::SIGTERM {
            let doc: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
            assert_eq!(doc["schema"], "llama-forge.error/1", "{doc}");
            assert_eq!(doc["exit_code"], 143, "{doc}");
            assert!(
                gone(cmake) && gone(child) && gone(escapee),
                "the tool exited only after its step's processes:\n{out}"
            );
            assert!(
                out.contains(&format!(
                    "interrupted by SIGTERM: stopped {phase} and every process it started"
                )),
                "{out}"
            );
        } else {
            for (what, pid) in [
                ("cmake", cmake),
                ("its child", child),
                ("the escapee", escapee),
            ] {
                let ok = wait_gone(pid, Duration::from_secs(10));
                if !ok {
                    let _ = killpg(Pid::from_raw(cmake), Signal::SIGKILL);
                    let _ = kill(Pid::from_raw(child), Signal::SIGKILL);
                    let _ = kill(Pid::from_raw(escapee), Signal::SIGKILL);
                }
                assert!(ok, "{what} (pid {pid}) outlived the killed tool");
            }
        }
        assert!(files_in(&dist).is_empty());
    }
}

#[test]
fn plan_json_has_a_reason_for_every_setting() {
    let o = run(
        &["plan", "llama-cpp-python", "--py", "311,312", "--json"],
        &[],
    );
    assert!(o.status.success());
    let plan: serde_json::Value =
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["plan"].clone();
    for key in ["defines", "env"] {
        for s in plan[key].as_array().unwrap() {
            assert!(!s["reason"].as_str().unwrap().is_empty(), "{s}");
        }
    }
    assert_eq!(
        plan["package"]["pythons"],
        serde_json::json!(["3.11", "3.12"])
    );
    // The same Python given twice, in any spelling, is built once.
    let o = run(
        &[
            "plan",
            "llama-cpp-python",
            "--py",
            "312,311,3.12,cp311",
            "--json",
        ],
        &[],
    );
    assert!(o.status.success());
    let plan: serde_json::Value =
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["plan"].clone();
    assert_eq!(
        plan["package"]["pythons"],
        serde_json::json!(["3.12", "3.11"])
    );
    // Without --py: one py3 wheel, for every Python.
    let o = run(&["plan", "llama-cpp-python", "--json"], &[]);
    assert!(o.status.success(), "{}", text(&o));
    let plan: serde_json::Value =
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["plan"].clone();
    assert_eq!(plan["package"]["pythons"], "py3");
}

/// Two checkouts at different paths, with different build dirs, build the same
/// plan: the archives are byte-identical (SOURCE_DATE_EPOCH, prefix maps, the
/// stable build path, sorted tar entries with fixed times and modes). The second
/// build runs with programs posing as the compilers, binutils, CMake and Ninja first
/// on PATH: the default (the pinned GCC, binutils, CMake and Ninja) runs none of them.
#[test]
fn two_checkouts_build_identical_archives() {
    let d = tempfile::tempdir().unwrap();
    let src = mini_source(d.path());
    let fakes = d.path().join("fakes");
    std::fs::create_dir_all(&fakes).unwrap();
    let ran = d.path().join("fakes-ran.txt");
    for name in [
        "cc", "c++", "gcc", "g++", "clang", "clang++", "ld", "ar", "ranlib", "as", "cmake", "ninja",
    ] {
        let p = fakes.join(name);
        std::fs::write(
            &p,
            format!("#!/bin/sh\necho \"$0 $*\" >> '{}'\nexit 1\n", ran.display()),
        )
        .unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    let path = format!("{}:{}", fakes.display(), std::env::var("PATH").unwrap());
    let mut shas = Vec::new();
    for (side, envs) in [
        ("a", vec![]),
        ("checkout-b-longer-path", vec![("PATH", path.as_str())]),
    ] {
        let (dist, _) = build_in_checkout(&d.path().join(side), &src, &[], &envs);
        let archive = files_in(&dist)
            .into_iter()
            .find(|f| f.ends_with(".tar.gz"))
            .unwrap();
        shas.push(archive_sha256_without(
            &dist.join(&archive),
            &d.path().join(side),
        ));
    }
    assert_eq!(
        shas[0], shas[1],
        "same plan, different checkouts, fake compilers first on PATH: same bytes"
    );
    assert!(
        !ran.exists(),
        "a program from PATH ran: {}",
        std::fs::read_to_string(&ran).unwrap_or_default()
    );
}

/// A library that carries a build path (here appended to a real one) fails
/// `verify`, which names the file and the path.
#[test]
fn verify_flags_a_build_path_inside_a_library() {
    let d = tempfile::tempdir().unwrap();
    let src = mini_source(d.path());
    let (dist, build) = (d.path().join("dist"), d.path().join("build"));
    assert!(mini_build(&src, &dist, &build).status.success());
    let archive = files_in(&dist)
        .into_iter()
        .find(|f| f.ends_with(".tar.gz"))
        .unwrap();
    let top = archive.trim_end_matches(".tar.gz");
    let unpacked = d.path().join("unpacked");
    std::fs::create_dir_all(&unpacked).unwrap();
    let tar = |args: &[&std::ffi::OsStr]| {
        assert!(std::process::Command::new("tar")
            .args(args)
            .status()
            .unwrap()
            .success())
    };
    tar(&[
        "xzf".as_ref(),
        dist.join(&archive).as_os_str(),
        "-C".as_ref(),
        unpacked.as_os_str(),
    ]);
    let lib = unpacked.join(top).join("libggml-base.so");
    let mut data = std::fs::read(&lib).unwrap();
    data.extend_from_slice(
        b"\0/tmp/llama-forge/llama.cpp-0.3.36-0123456789abcdef/src/ggml/src/ggml.c\0",
    );
    std::fs::write(&lib, data).unwrap();
    let tampered = d.path().join("tampered");
    std::fs::create_dir_all(&tampered).unwrap();
    tar(&[
        "czf".as_ref(),
        tampered.join(&archive).as_os_str(),
        "-C".as_ref(),
        unpacked.as_os_str(),
        top.as_ref(),
    ]);
    let v = run(
        &["verify", &tampered.join(&archive).display().to_string()],
        &[],
    );
    assert!(!v.status.success());
    assert!(
        text(&v).contains("libggml-base.so: contains the build path /tmp/llama-forge/llama.cpp-0.3.36-0123456789abcdef/src/ggml/src/ggml.c"),
        "{}",
        text(&v)
    );
}

/// `xtask build llama.cpp --source <src> --dist <dist> <extra>`, not yet started.
fn mini_build_command(src: &Path, dist: &Path, extra: &[&str]) -> std::process::Command {
    let mut args = vec![
        "build",
        "llama.cpp",
        "--version",
        "0.3.36",
        "--source",
        src.to_str().unwrap(),
        "--dist",
        dist.to_str().unwrap(),
    ];
    args.extend(extra);
    xtask(&args, &[])
}

/// `build llama.cpp --source <src> --dist <dir>/dist <extra>`, its build dir `<dir>/work`,
/// with `envs` set; it must succeed. The archive's sha256 and path.
fn mini_archive(
    src: &Path,
    dir: &Path,
    extra: &[&str],
    envs: &[(&str, &Path)],
) -> (String, std::path::PathBuf) {
    let dist = dir.join("dist");
    let mut c = mini_build_command(src, &dist, extra);
    c.env("LLAMA_FORGE_BUILD_DIR", dir.join("work"));
    for (k, v) in envs {
        c.env(k, v);
    }
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let archive = files_in(&dist)
        .into_iter()
        .find(|f| f.ends_with(".tar.gz"))
        .unwrap();
    let archive = dist.join(archive);
    let sha = xtask::digest::sha256_file(&archive).unwrap().to_string();
    (sha, archive)
}

/// `--jobs 1`: Ninja runs one compile at a time (no two steps of its log overlap, where
/// the default build's do), the plan says so with its reason, and the archive and its
/// plan id are those of the build without it.
#[test]
fn jobs_sets_the_compiles_in_flight_and_changes_no_byte() {
    let d = tempfile::tempdir().unwrap();
    let src = mini_source(d.path());
    let build = |name: &str, jobs: &[&str]| {
        let (sha, archive) = mini_archive(&src, &d.path().join(name), jobs, &[]);
        let manifest: serde_json::Value = serde_json::from_slice(
            &std::fs::read(format!("{}.manifest.json", archive.display())).unwrap(),
        )
        .unwrap();
        let work = d.path().join(name).join("work");
        // Ninja's log: each step's start and end (ms), the most in flight at once.
        let log = walkdir::WalkDir::new(&work)
            .into_iter()
            .map(|e| e.unwrap().into_path())
            .find(|p| p.file_name().is_some_and(|n| n == ".ninja_log"))
            .expect("a .ninja_log in the build dir");
        // A step with several outputs has a line for each (start, end and command hash
        // the same): counted once.
        let mut steps = std::collections::BTreeSet::new();
        for line in std::fs::read_to_string(log).unwrap().lines().skip(1) {
            let f: Vec<&str> = line.split('\t').collect();
            steps.insert((
                f[0].parse::<u64>().unwrap(),
                f[1].parse::<u64>().unwrap(),
                f[4].to_string(),
            ));
        }
        let mut edges: Vec<(u64, i32)> = Vec::new();
        for (start, end, _) in steps {
            edges.push((start, 1));
            edges.push((end, -1));
        }
        // Ends before starts at the same millisecond: back-to-back steps do not overlap.
        edges.sort();
        let (mut now, mut most) = (0, 0);
        for (_, e) in edges {
            now += e;
            most = most.max(now);
        }
        assert!(manifest["plan"].get("jobs").is_none(), "{manifest:#}");
        (sha, manifest["plan_hash"].clone(), most)
    };
    let (plain, plain_plan, plain_most) = build("plain", &[]);
    let (one, one_plan, one_most) = build("one", &["--jobs", "1"]);
    assert_eq!(one_most, 1, "--jobs 1 ran {one_most} steps at once");
    assert!(
        plain_most > 1,
        "the default build ran one step at a time: the check above would not tell"
    );
    assert_eq!(one, plain, "--jobs changed the archive's bytes");
    assert!(!plain_plan.is_null());
    assert_eq!(one_plan, plain_plan, "--jobs changed the plan id");

    let p = run(
        &[
            "plan",
            "-v",
            "llama.cpp",
            "--version",
            "0.3.36",
            "--source",
            src.to_str().unwrap(),
            "--jobs",
            "26",
        ],
        &[],
    );
    assert!(p.status.success(), "{}", text(&p));
    let t = text(&p);
    assert!(t.contains("jobs: 26 (not part of the plan hash"), "{t}");
    assert!(t.contains("Ninja runs 26 compiles at once"), "{t}");
    assert!(t.contains("--parallel 26 --target"), "{t}");
    let zero = run(&["plan", "llama.cpp", "--jobs", "0"], &[]);
    assert_eq!(zero.status.code(), Some(2), "{}", text(&zero));
}

/// `--launcher ccache`: the second build in a fresh build dir is served from
/// the cache, and the archive is the same file as without a launcher. The
/// launcher is recorded beside the artifact only.
#[test]
fn ccache_launcher_hits_and_changes_no_byte() {
    let d = tempfile::tempdir().unwrap();
    let src = mini_source(d.path());
    let ccache_dir = d.path().join("ccache");
    let ccache_log = d.path().join("ccache.log");
    let build = |name: &str, launcher: bool| -> (String, std::path::PathBuf) {
        let extra: &[&str] = if launcher {
            &["--launcher", "ccache"]
        } else {
            &[]
        };
        let envs = [
            ("CCACHE_DIR", &*ccache_dir),
            ("CCACHE_LOGFILE", &*ccache_log),
        ];
        let (sha, archive) = mini_archive(&src, &d.path().join(name), extra, &envs);
        (sha, format!("{}.manifest.json", archive.display()).into())
    };
    let (plain, _) = build("plain", false);
    let (first, _) = build("first", true);
    let stats = |what: &str| {
        let o = std::process::Command::new("ccache")
            .args(["--print-stats"])
            .env("CCACHE_DIR", &ccache_dir)
            .output()
            .expect("ccache is installed (.ci/run installs it)");
        let t = String::from_utf8_lossy(&o.stdout).to_string();
        t.lines()
            .find_map(|l| l.strip_prefix(&format!("{what}\t")))
            .unwrap_or("0")
            .trim()
            .parse::<u64>()
            .unwrap()
    };
    let misses = stats("cache_miss");
    assert!(misses > 0, "the first build compiled through ccache");
    // The plan's CCACHE_DEPEND reached ccache: each miss ran the compiler once, with no
    // preprocessor run before it.
    let log = std::fs::read_to_string(&ccache_log).unwrap();
    assert!(log.contains("depend_mode = true"), "{log}");
    assert!(!log.contains("Running preprocessor"), "{log}");
    assert!(log.contains("Running real compiler"), "{log}");
    let (second, manifest) = build("second", true);
    assert!(
        stats("direct_cache_hit") + stats("preprocessed_cache_hit") >= misses,
        "the second build was served from the cache"
    );
    assert_eq!(plain, first, "a launcher changes no byte");
    assert_eq!(first, second);
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(manifest).unwrap()).unwrap();
    assert_eq!(
        m["launcher"]["kind"], "ccache",
        "recorded beside the artifact"
    );
    assert!(
        m["plan"].get("launcher").is_none(),
        "not part of the recorded plan"
    );
}

/// A changed option reuses the build dir: CMake reconfigures from a fresh cache
/// and Ninja recompiles only what the change touches (the mini fixture's
/// LLAMA_BUILD_SERVER reaches llama.cpp only). Going back is a no-op.
#[test]
fn changed_define_recompiles_only_what_it_touches() {
    let d = tempfile::tempdir().unwrap();
    let src = mini_source(d.path());
    let root = d.path().join("repo");
    checkout(&root);
    let (dist, work) = (d.path().join("dist"), d.path().join("work"));
    let build = || {
        let mut c = mini_build_command(&src, &dist, &[]);
        c.env("LLAMA_FORGE_ROOT", &root)
            .env("LLAMA_FORGE_BUILD_DIR", &work);
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", text(&o));
        let log = std::fs::read_dir(&work)
            .unwrap()
            .flatten()
            .map(|e| e.path().join("logs/build.log"))
            .find(|p| p.is_file())
            .expect("a build log");
        let log = std::fs::read_to_string(log).unwrap();
        let compiled: Vec<String> = log
            .lines()
            .filter(|l| l.contains("Building CXX object"))
            .map(|l| l.rsplit('/').next().unwrap().to_string())
            .collect();
        (text(&o), compiled)
    };
    let archive = || {
        use sha2::Digest;
        let f = files_in(&dist)
            .into_iter()
            .find(|f| f.ends_with(".tar.gz"))
            .unwrap();
        hex::encode(sha2::Sha256::digest(std::fs::read(dist.join(f)).unwrap()))
    };
    let (_, first) = build();
    assert!(
        first.len() >= 5,
        "a cold build compiles everything: {first:?}"
    );
    let first_sha = archive();
    let recipe = root.join("recipes/llama.cpp.toml");
    let t = std::fs::read_to_string(&recipe).unwrap();
    let changed = t.replacen(
        "name = \"LLAMA_BUILD_SERVER\"\nvalue = \"ON\"",
        "name = \"LLAMA_BUILD_SERVER\"\nvalue = \"OFF\"",
        1,
    );
    assert_ne!(t, changed, "the recipe sets LLAMA_BUILD_SERVER=ON");
    std::fs::write(&recipe, changed).unwrap();
    let (_, second) = build();
    assert_eq!(
        second,
        ["llama.cpp.o"],
        "only the object the define reaches"
    );
    let logs = std::fs::read_dir(&work)
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("logs").is_dir())
        .count();
    assert_eq!(logs, 1, "one work dir for the source");
    assert_ne!(archive(), first_sha);
    // Back to the first plan: again one object, and the first build's bytes.
    std::fs::write(&recipe, t).unwrap();
    let (_, third) = build();
    assert_eq!(third, ["llama.cpp.o"]);
    assert_eq!(
        archive(),
        first_sha,
        "an incremental build gives the same bytes as a cold one"
    );
}

/// `--target` from Linux: an unknown one gets the list of targets; mingw-w64 with a
/// GPU arch is refused, pointing at the MSVC target; the MSVC target points at the
/// mingw one; mingw missing names the Debian package. With Debian's mingw-w64 (which
/// .ci/run installs) the plans of both recipes cross-compile with it.
#[test]
fn windows_targets_from_linux_are_planned_and_refused_clearly() {
    fails_with(
        &["plan", "llama.cpp", "--target", "x86_64-pc-windows"],
        &[],
        &[
            "unknown --target `x86_64-pc-windows`",
            "x86_64-unknown-linux-gnu",
            "x86_64-pc-windows-msvc",
            "x86_64-pc-windows-gnu",
        ],
    );
    fails_with(
        &[
            "plan",
            "llama.cpp",
            "--target",
            "x86_64-pc-windows-gnu",
            "--arch",
            "120",
        ],
        &[],
        &[
            "nvcc accepts no mingw-w64 GCC",
            "--target x86_64-pc-windows-msvc",
        ],
    );
    fails_with(
        &[
            "plan",
            "llama-cpp-python",
            "--py",
            "311",
            "--target",
            "x86_64-pc-windows-msvc",
        ],
        &[],
        &[
            "is built on Windows, with MSVC",
            "--target x86_64-pc-windows-gnu",
        ],
    );
    let empty = tempfile::tempdir().unwrap();
    fails_with(
        &["plan", "llama.cpp", "--target", "x86_64-pc-windows-gnu"],
        &[("PATH", empty.path().to_str().unwrap())],
        &["x86_64-w64-mingw32-g++-posix", "apt install mingw-w64"],
    );
    let Some(_) = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join("x86_64-w64-mingw32-g++-posix"))
        .find(|p| p.is_file())
    else {
        return cannot_run_here("no x86_64-w64-mingw32-g++-posix: apt install mingw-w64");
    };
    let o = run(
        &[
            "plan",
            "llama.cpp",
            "--target",
            "x86_64-pc-windows-gnu",
            "--json",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    let plan: serde_json::Value =
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["plan"].clone();
    assert_eq!(plan["target"], "x86_64-pc-windows-gnu");
    let cxx = plan["tools"]["cxx"]["path"].as_str().unwrap();
    assert!(cxx.ends_with("/x86_64-w64-mingw32-g++-posix"), "{cxx}");
    let define = |n: &str| {
        plan["defines"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["name"] == n)
            .map(|d| d["value"].as_str().unwrap().to_string())
    };
    assert_eq!(define("CMAKE_SYSTEM_NAME").as_deref(), Some("Windows"));
    let sysroot = define("CMAKE_FIND_ROOT_PATH").unwrap();
    assert!(
        Path::new(&sysroot).join("lib/libkernel32.a").is_file(),
        "{sysroot}"
    );
    let patches = plan["source"]["patches"].as_array().unwrap();
    assert!(
        patches
            .iter()
            .any(|p| p["file"] == "vendor/llama.cpp/ggml/src/ggml-cpu/amx/common.h"),
        "{patches:?}"
    );
    // The wheel's plan: the same cross build, a wheel of the Windows DLLs.
    let o = run(
        &[
            "plan",
            "llama-cpp-python",
            "--py",
            "311",
            "--target",
            "x86_64-pc-windows-gnu",
            "--json",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    let plan: serde_json::Value =
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["plan"].clone();
    assert_eq!(plan["target"], "x86_64-pc-windows-gnu");
    assert_eq!(plan["package"]["kind"], "wheel");
    assert_eq!(plan["package"]["lib_dir"], "llama_cpp/lib");
}

fn have(program: &str) -> bool {
    std::env::split_paths(&std::env::var_os("PATH").unwrap()).any(|d| d.join(program).is_file())
}

/// `--target x86_64-pc-windows-gnu` end to end on the mini project: a `.zip` (its
/// manifest beside it) that `verify` passes, whose EXEs and DLLs import only each
/// other and Windows' own DLLs, whose tool runs under wine, and whose bytes are the
/// same from two checkouts.
#[test]
fn mini_project_cross_builds_a_windows_zip_that_runs_under_wine() {
    if !have("x86_64-w64-mingw32-g++-posix") || !have("wine") {
        return cannot_run_here("mingw-w64 or wine missing: apt install mingw-w64 wine");
    }
    let d = tempfile::tempdir().unwrap();
    let src = mini_windows_source(d.path());
    let mut shas = Vec::new();
    let mut zips = Vec::new();
    for side in ["a", "checkout-b-longer-path"] {
        let (dist, _) = build_in_checkout(
            &d.path().join(side),
            &src,
            &["--target", "x86_64-pc-windows-gnu"],
            &[],
        );
        let zip = dist.join("llama.cpp-0.3.36-cpu-windows-x86_64.zip");
        assert!(zip.is_file(), "{:?}", files_in(&dist));
        assert!(zip
            .with_file_name("llama.cpp-0.3.36-cpu-windows-x86_64.zip.manifest.json")
            .is_file());
        use sha2::Digest;
        shas.push(hex::encode(sha2::Sha256::digest(
            std::fs::read(&zip).unwrap(),
        )));
        zips.push(zip);
    }
    assert_eq!(
        shas[0], shas[1],
        "same plan, different checkouts: same bytes"
    );

    let zip = &zips[0];
    let o = run(&["verify", &zip.display().to_string()], &[]);
    assert!(o.status.success(), "{}", text(&o));
    let out = d.path().join("unpacked");
    let mut names: Vec<String> = Vec::new();
    let mut z = zip::ZipArchive::new(std::fs::File::open(zip).unwrap()).unwrap();
    for i in 0..z.len() {
        names.push(z.by_index(i).unwrap().name().unwrap().to_string());
    }
    z.extract(&out).unwrap();
    let top = out.join("llama.cpp-0.3.36-cpu-windows-x86_64");
    for want in [
        "llama-cli.exe",
        "libllama.dll",
        "ggml.dll",
        "ggml-base.dll",
        "ggml-cpu-sse42.dll",
        "ggml-cpu-sapphirerapids.dll",
        "manifest.json",
        "LICENSE",
    ] {
        assert!(
            names.contains(&format!("llama.cpp-0.3.36-cpu-windows-x86_64/{want}")),
            "{want}: {names:?}"
        );
    }
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(top.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["target"]["platform"], "win_amd64");
    assert_eq!(m["plan"]["target"], "x86_64-pc-windows-gnu");
    let o = std::process::Command::new("wine")
        .arg(top.join("llama-cli.exe"))
        .env("WINEDEBUG", "-all")
        .env("WINEPREFIX", d.path().join("wine"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim_end(),
        "llama-cli 42"
    );
}

#[test]
fn version_completions_colour_and_exit_codes() {
    let o = run(&["--version"], &[]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    // `cargo xtask 0.1.0 (commit 0123456789ab, 2026-11-26)`: the commit git gave the build.
    let re =
        regex::Regex::new(r"^cargo xtask \d+\.\d+\.\d+ \(commit ([0-9a-f]{12}|unknown), ").unwrap();
    assert!(re.is_match(&t), "{t}");

    let o = run(&["completions", "bash"], &[]);
    assert!(o.status.success());
    let script = String::from_utf8_lossy(&o.stdout);
    assert!(
        script.contains("_xtask()") && script.contains("doctor"),
        "{script}"
    );

    // Usage errors exit 2: clap's own, and an unknown recipe found after parsing.
    let o = run(&["wheel"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let o = run(&["plan", "no-such-recipe"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    // `error:` is coloured only where asked: never by NO_COLOR, always by --color always.
    let plain = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(
        plain.starts_with("error: no recipe named `no-such-recipe`"),
        "{plain}"
    );
    let o = run(
        &["--color", "always", "plan", "no-such-recipe"],
        &[("NO_COLOR", "1")],
    );
    let coloured = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(
        coloured.starts_with("\u{1b}[1m\u{1b}[31merror:\u{1b}[0m no recipe"),
        "{coloured:?}"
    );
    let o = run(
        &["--color", "auto", "plan", "no-such-recipe"],
        &[("NO_COLOR", "1")],
    );
    assert!(!String::from_utf8_lossy(&o.stderr).contains('\u{1b}'));
    // FORCE_COLOR (force-color.org) colours off a terminal too; NO_COLOR wins over it.
    let o = run(&["plan", "no-such-recipe"], &[("FORCE_COLOR", "1")]);
    assert!(
        String::from_utf8_lossy(&o.stderr).starts_with("\u{1b}[1m\u{1b}[31merror:"),
        "{}",
        text(&o)
    );
    let o = run(
        &["plan", "no-such-recipe"],
        &[("FORCE_COLOR", "1"), ("NO_COLOR", "1")],
    );
    assert!(!String::from_utf8_lossy(&o.stderr).contains('\u{1b}'));

    // A file that cannot be read: a failure (1); verify --json of it fails the same way.
    let o = run(&["verify", "/nonexistent/x.whl"], &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
}

/// Off a terminal (CI, `| tee`): one line per step with its log, a heartbeat with `[n/N]`
/// while Ninja runs, the result as JSON with `--json`; `-q` says nothing but the
/// result; `-v` streams the build's own output.
#[test]
fn progress_off_a_terminal_and_json_results() {
    let d = tempfile::tempdir().unwrap();
    let src = mini_source(d.path());
    let build = d.path().join("build");
    let dist = |name: &str| d.path().join(name).display().to_string();
    let src_arg = src.display().to_string();
    let args = |dist: &str, extra: &[&'static str]| -> Vec<String> {
        let mut a: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        a.extend(
            [
                "build",
                "llama.cpp",
                "--arch",
                "cpu",
                "--version",
                "0.3.36",
                "--source",
                &src_arg,
                "--dist",
                dist,
            ]
            .map(String::from),
        );
        a
    };
    let go = |a: &[String], json: bool| {
        let mut a: Vec<&str> = a.iter().map(|s| s.as_str()).collect();
        if json {
            a.push("--json");
        }
        let mut c = xtask(&a, &[("LLAMA_FORGE_HEARTBEAT_SECS", "0.2")]);
        c.env("LLAMA_FORGE_BUILD_DIR", &build);
        let o = c.output().unwrap();
        eprintln!("{}", text(&o));
        assert!(o.status.success(), "{}", text(&o));
        o
    };

    let o = go(&args(&dist("dist"), &[]), true);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    for step in ["configure", "build"] {
        assert!(
            err.lines().any(|l| l.starts_with(&format!("{step}: log "))
                && l.ends_with(&format!("logs/{step}.log"))),
            "no `{step}: log ...` line:\n{err}"
        );
    }
    let beat = regex::Regex::new(r"(?m)^build: (\[\d+/\d+\] \d+%, )?\d+s elapsed").unwrap();
    assert!(beat.is_match(&err), "no heartbeat:\n{err}");
    let doc: serde_json::Value =
        serde_json::from_slice(&o.stdout).expect("stdout is one JSON document");
    assert_eq!(doc["schema"], "llama-forge.build/1");
    assert_eq!(doc["reused"], false);
    let a = &doc["artifacts"][0];
    let file = a["file"].as_str().unwrap();
    assert!(
        file.starts_with("llama.cpp-0.3.36-cpu-linux-x86_64") && file.ends_with(".tar.gz"),
        "{doc}"
    );
    assert_eq!(a["sha256"].as_str().unwrap().len(), 64);
    // The build stamped its use of the pinned CMake in the cache (what `cache prune` reads).
    let stamps: Vec<_> = std::fs::read_dir(cache().join(".used"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("tools+cmake-"))
        .filter(|e| {
            e.metadata().unwrap().modified().unwrap().elapsed().unwrap() < Duration::from_secs(600)
        })
        .collect();
    assert!(
        !stamps.is_empty(),
        "no fresh stamp for the pinned CMake in {}",
        cache().display()
    );

    // verify --json: the same artifact, ok, with how many files it checked.
    let v = run(&["verify", "--json", a["path"].as_str().unwrap()], &[]);
    assert!(v.status.success(), "{}", text(&v));
    let vj: serde_json::Value = serde_json::from_slice(&v.stdout).unwrap();
    assert_eq!(vj["schema"], "llama-forge.verify/1");
    assert_eq!(vj["results"][0]["ok"], true);
    assert!(vj["results"][0]["checked_files"].as_u64().unwrap() > 0);

    // -q: up to date, the result on stdout and nothing on stderr.
    let o = go(&args(&dist("dist"), &["-q"]), false);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("up to date"),
        "{}",
        text(&o)
    );
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "",
        "-q printed progress"
    );

    // -v, into another dist (so the build runs again, Ninja finding nothing to do):
    // the build's own output streamed, and no heartbeat (the stream says it all).
    let o = go(&args(&dist("dist2"), &["-v"]), false);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(
        err.contains("ninja: no work to do."),
        "the build log was not streamed:\n{err}"
    );
    assert!(!beat.is_match(&err), "-v printed heartbeats:\n{err}");
}

/// The user cache: `dir` follows XDG_CACHE_HOME (LLAMA_FORGE_CACHE moves it), `size`
/// lists entries with their last use, `prune` removes what no build used for a while,
/// `clean` everything; a build fetching into it stamps its use.
#[test]
fn the_user_cache_is_shown_pruned_and_cleaned() {
    let d = tempfile::tempdir().unwrap();
    let xdg = d.path().join("xdg");
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_xtask"));
    c.args(["cache", "dir"])
        .env_remove("LLAMA_FORGE_CACHE")
        .env("XDG_CACHE_HOME", &xdg);
    let o = c.output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        xdg.join("llama-forge").display().to_string()
    );

    let cache = d.path().join("cache");
    let put = |rel: &str, n: usize| {
        let p = cache.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, vec![1u8; n]).unwrap();
    };
    put("downloads/1111/old.whl", 2_000_000);
    put("tools/cmake-0.1/bin/cmake", 3_000);
    put("cuda/13.0.88/bin/nvcc", 5_000_000);
    // Made (and last used) 60 days ago: what prune removes.
    let long_ago = std::time::SystemTime::now() - Duration::from_secs(60 * 86400);
    for dir in ["downloads/1111", "tools/cmake-0.1"] {
        std::fs::File::open(cache.join(dir))
            .unwrap()
            .set_modified(long_ago)
            .unwrap();
    }
    let env = [("LLAMA_FORGE_CACHE", cache.to_str().unwrap())];
    let cmd = |args: &[&str]| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_xtask"));
        c.args(args).envs(env);
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", text(&o));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let size = cmd(&["cache", "size"]);
    assert!(
        size.starts_with(&format!("{}: 7 MB\n", cache.display())),
        "{size}"
    );
    assert!(
        size.contains("used 60 days ago") && size.contains("used today"),
        "{size}"
    );
    let json: serde_json::Value = serde_json::from_str(&cmd(&["cache", "size", "--json"])).unwrap();
    assert_eq!(
        (json["schema"].as_str(), json["bytes"].as_u64()),
        (Some("llama-forge.cache/1"), Some(7_003_000))
    );

    let dry = cmd(&["cache", "prune", "--dry-run"]);
    assert!(
        dry.contains("would remove 2 entries not used in 30 days, 2 MB; 1 kept"),
        "{dry}"
    );
    assert!(cache.join("downloads/1111").exists());
    let pruned = cmd(&["cache", "prune"]);
    assert!(
        pruned.contains("removed downloads/1111") && pruned.contains("removed tools/cmake-0.1"),
        "{pruned}"
    );
    assert!(!cache.join("downloads/1111").exists() && cache.join("cuda/13.0.88/bin/nvcc").exists());

    let cleaned = cmd(&["cache", "clean"]);
    assert!(cleaned.starts_with("removed 1 entries, 5 MB"), "{cleaned}");
    assert!(!cache.join("cuda/13.0.88").exists());
}

/// The lines after `indent`'s heading in the tool's stdout: each indented line below it.
fn lines_after(stdout: &str, heading: &str) -> Vec<String> {
    stdout
        .lines()
        .skip_while(|l| !l.starts_with(heading))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.trim().to_string())
        .collect()
}

/// What `wheel` and `build` print to type next, run as printed (`sh -c`, in a fresh dir),
/// with a dist dir whose path has a space: the wheel installs into a new venv by its exact
/// version, and the archive unpacks.
#[test]
fn the_lines_printed_after_a_build_work_as_printed() {
    let d = tempfile::tempdir().unwrap();
    let dist = d.path().join("my dist");
    let o = run(
        &[
            "wheel",
            "llama-cpp-python",
            "--source",
            &repo()
                .join("tests/fixtures/mini-llama-python")
                .display()
                .to_string(),
            "--version",
            "0.3.36",
            "--arch",
            "cpu",
            "--dist",
            &dist.display().to_string(),
        ],
        &[(
            "LLAMA_FORGE_BUILD_DIR",
            &d.path().join("work").display().to_string(),
        )],
    );
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(stdout.contains(" kB, sha256 "), "{stdout}");
    let lines = lines_after(&stdout, "install it into a new virtual environment:");
    assert_eq!(lines.len(), 2, "{stdout}");
    let here = d.path().join("user");
    std::fs::create_dir(&here).unwrap();
    for line in &lines {
        let r = std::process::Command::new("sh")
            .args(["-c", line])
            .current_dir(&here)
            .output()
            .unwrap();
        assert!(r.status.success(), "`{line}`: {}", text(&r));
    }
    let listed = std::process::Command::new(here.join(".venv/bin/python"))
        .args(["-m", "pip", "list"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("0.3.36+cpu"),
        "{}",
        text(&listed)
    );

    let src = mini_source(d.path());
    let (dist, build) = (d.path().join("archive dist"), d.path().join("build"));
    let o = mini_build(&src, &dist, &build);
    assert!(o.status.success());
    let stdout = String::from_utf8_lossy(&o.stdout).to_string();
    let lines = lines_after(&stdout, "unpack it:");
    assert_eq!(lines.len(), 1, "{stdout}");
    let there = d.path().join("unpacked");
    std::fs::create_dir(&there).unwrap();
    let r = std::process::Command::new("sh")
        .args(["-c", &lines[0]])
        .current_dir(&there)
        .output()
        .unwrap();
    assert!(r.status.success(), "`{}`: {}", lines[0], text(&r));
    assert!(!files_in(&there).is_empty(), "unpacked nothing");
}

/// The checkout is the one the current dir is in, as cargo finds its workspace, not the
/// one the binary was built in: a copy of the recipes and toolchains elsewhere, the tool
/// run from a dir inside it, plans into that copy's dist/ and says so; `--dist` is said as
/// given. A LLAMA_FORGE_ROOT without recipes is named, with what to do.
#[test]
fn the_checkout_is_found_from_the_current_dir() {
    let d = tempfile::tempdir().unwrap();
    let co = d.path().join("my checkout");
    for dir in ["recipes", "toolchains"] {
        copy_tree(&repo().join(dir), &co.join(dir));
    }
    let sub = co.join("work/deeper");
    std::fs::create_dir_all(&sub).unwrap();
    let o = xtask(&["plan", "llama.cpp", "--arch", "cpu"], &[])
        .current_dir(&sub)
        .env_remove("LLAMA_FORGE_ROOT")
        .output()
        .unwrap();
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains(&format!("artifact (in {}):", co.join("dist").display())),
        "{t}"
    );
    let o = xtask(
        &["plan", "llama.cpp", "--arch", "cpu", "--dist", "/srv/out"],
        &[],
    )
    .current_dir(&sub)
    .output()
    .unwrap();
    assert!(text(&o).contains("artifact (in /srv/out):"), "{}", text(&o));

    let o = xtask(
        &["plan", "llama.cpp"],
        &[("LLAMA_FORGE_ROOT", "/nonexistent/co")],
    )
    .output()
    .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(
        t.contains("/nonexistent/co/recipes is not a recipe dir (it is not there): run the tool inside a llama-forge checkout"),
        "{t}"
    );
}

/// `--offline` uses only the cache: a plan that needs no download is made, and each kind of
/// network access (a download, the first download of an upstream tag, the package index) is
/// an error naming what is missing, exit 1, before any request. `-j` is `--jobs`.
#[test]
fn offline_uses_only_the_cache_and_names_what_is_missing() {
    let empty = tempfile::tempdir().unwrap();
    let cache = empty.path().to_str().unwrap();
    let run = |args: &[&str]| {
        xtask(args, &[("LLAMA_FORGE_CACHE", cache)])
            .output()
            .unwrap()
    };
    let o = run(&[
        "plan",
        "llama.cpp",
        "--arch",
        "cpu",
        "--offline",
        "-j",
        "3",
        "--json",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let plan: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(plan["plan"]["jobs"]["n"], 3, "{}", plan["plan"]["jobs"]);
    let o = run(&["plan", "llama.cpp", "--version", "b1", "--offline"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = text(&o);
    assert!(
        err.contains("--offline: https://github.com/ggml-org/llama.cpp/archive/refs/tags/b1.tar.gz is not in the cache (no first download of it is recorded in ")
            && err.contains("run once without --offline to download it")
            && !err.contains("is it a release tag"),
        "{err}"
    );
    let o = run(&[
        "plan",
        "llama-cpp-python",
        "--version",
        "latest",
        "--offline",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("--offline: the package index's page of llama-cpp-python (https://pypi.org/simple/llama-cpp-python/) is not read"),
        "{}",
        text(&o)
    );
    // A pinned download: `reproduce` of a manifest given by URL is refused the same way.
    let o = run(&[
        "reproduce",
        "https://127.0.0.1:9/x.manifest.json",
        "--offline",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains(
            "--offline: the manifest https://127.0.0.1:9/x.manifest.json is not downloaded"
        ),
        "{}",
        text(&o)
    );
}

/// `--force` builds again where dist/ is up to date. `clean --dry-run` lists the work dirs
/// and removes nothing; `clean` removes them with the unpacked source at the stable path,
/// and keeps dist/: the next build starts from nothing.
#[test]
fn force_builds_again_and_clean_removes_the_work_dirs() {
    let d = tempfile::tempdir().unwrap();
    let side = d.path().join("side");
    let src = mini_source(d.path());
    let stable = d.path().join("stable");
    let stable_s = stable.display().to_string();
    let envs = [("LLAMA_FORGE_STABLE_DIR", stable_s.as_str())];
    let (dist, _) = build_in_checkout(&side, &src, &[], &envs);
    let (_, again) = build_in_checkout(&side, &src, &[], &envs);
    assert!(again.contains("up to date: "), "{again}");
    let (_, forced) = build_in_checkout(&side, &src, &["--force"], &envs);
    assert!(
        !forced.contains("up to date: ") && forced.contains("building llama.cpp 0.3.36"),
        "{forced}"
    );
    let artifacts = files_in(&dist);
    assert!(
        artifacts.iter().any(|f| f.ends_with(".tar.gz")),
        "{artifacts:?}"
    );
    let work = side.join("work");
    let work_dirs = || -> Vec<String> {
        files_in(&work)
            .into_iter()
            .filter(|n| n.starts_with("llama.cpp-0.3.36-"))
            .collect()
    };
    let sources = || -> Vec<String> {
        files_in(&stable)
            .into_iter()
            .filter(|n| n.starts_with("src-") && !n.ends_with(".lock"))
            .collect()
    };
    assert_eq!(work_dirs().len(), 1, "{:?}", files_in(&work));
    assert_eq!(sources().len(), 1, "{:?}", files_in(&stable));
    let clean = |extra: &[&str]| {
        let mut args = vec!["clean"];
        args.extend_from_slice(extra);
        let o = xtask(&args, &envs)
            .env("LLAMA_FORGE_ROOT", side.join("repo"))
            .env("LLAMA_FORGE_BUILD_DIR", &work)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o));
        text(&o)
    };
    let listed = clean(&["--dry-run"]);
    let dir = work.join(&work_dirs()[0]);
    assert!(
        listed.contains(&format!("would remove {} (", dir.display()))
            && listed.contains("would remove 1 work dir, "),
        "{listed}"
    );
    assert!(
        dir.is_dir() && sources().len() == 1,
        "a dry run removes nothing"
    );
    let removed = clean(&[]);
    assert!(
        removed.contains(&format!("removed {} (", dir.display()))
            && removed.contains("dist/ and the download cache (cargo xtask cache) are kept"),
        "{removed}"
    );
    assert!(work_dirs().is_empty(), "{:?}", files_in(&work));
    assert!(sources().is_empty(), "{:?}", files_in(&stable));
    assert_eq!(files_in(&dist), artifacts, "dist/ is kept");
    let (_, after) = build_in_checkout(&side, &src, &[], &envs);
    assert!(after.contains("building llama.cpp 0.3.36"), "{after}");
}

/// A build dir that fills up during the build (a 1 MiB tmpfs): the build fails saying
/// so, nothing reaches dist/, and once there is room the same build succeeds.
#[test]
fn a_full_build_dir_recovers_once_there_is_room() {
    let d = tempfile::tempdir().unwrap();
    let src = mini_source(d.path());
    let (dist, build) = (d.path().join("dist"), d.path().join("build"));
    let Some(fs) = Tmpfs::mount(&build, 1 << 20) else {
        return;
    };
    let go = || {
        let mut c = mini_build_command(&src, &dist, &[]);
        c.env("LLAMA_FORGE_BUILD_DIR", &build);
        let o = c.output().unwrap();
        eprintln!("{}", text(&o));
        o
    };
    let o = go();
    assert!(!o.status.success(), "the build dir is too small");
    assert!(
        text(&o).contains("No space left on device"),
        "says why: {}",
        text(&o)
    );
    assert!(
        files_in(&dist).is_empty(),
        "nothing in dist/: {:?}",
        files_in(&dist)
    );
    fs.grow(512 << 20);
    let o = go();
    assert!(
        o.status.success(),
        "a rerun with room succeeds: {}",
        text(&o)
    );
    assert!(!files_in(&dist).is_empty());
}

/// Defaults for build options: a `LLAMA_FORGE_<OPTION>` variable, then the user's
/// `llama-forge.toml`; the command line wins over both. A default makes the same plan
/// (the same hash) as the option given, and the plan says where it came from.
#[test]
fn defaults_come_from_the_environment_and_the_config_file() {
    let d = tempfile::tempdir().unwrap();
    let conf = d.path().join("config");
    std::fs::create_dir_all(conf.join("llama-forge")).unwrap();
    let file = conf.join("llama-forge/llama-forge.toml");
    std::fs::write(&file, "[defaults]\narch = \"120\"\njobs = 4\n").unwrap();
    let conf_s = conf.display().to_string();
    let plan = |args: &[&str], envs: &[(&str, &str)]| -> serde_json::Value {
        let mut all = vec!["plan", "llama-cpp-python", "--json"];
        all.extend_from_slice(args);
        let o = run(&all, envs);
        assert!(o.status.success(), "{}", text(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let given = plan(&["--arch", "120"], &[]);
    let cpu = plan(&["--arch", "cpu"], &[]);
    // From the variable.
    let from_var = plan(&[], &[("LLAMA_FORGE_ARCH", "120")]);
    assert_eq!(from_var["plan_hash"], given["plan_hash"]);
    assert_eq!(
        from_var["plan"]["defaults"],
        serde_json::json!([{"option": "--arch", "value": "120", "from": "LLAMA_FORGE_ARCH"}])
    );
    // The command line wins.
    let over = plan(&["--arch", "cpu"], &[("LLAMA_FORGE_ARCH", "120")]);
    assert_eq!(over["plan_hash"], cpu["plan_hash"]);
    assert!(over["plan"].get("defaults").is_none(), "{}", over["plan"]);
    // From the user's file; the variable wins over it.
    let from_file = plan(&[], &[("XDG_CONFIG_HOME", &conf_s)]);
    assert_eq!(from_file["plan_hash"], given["plan_hash"]);
    let f = file.display().to_string();
    assert_eq!(
        from_file["plan"]["defaults"],
        serde_json::json!([
            {"option": "--arch", "value": "120", "from": f},
            {"option": "--jobs", "value": "4", "from": f},
        ])
    );
    let both = plan(
        &[],
        &[("XDG_CONFIG_HOME", &conf_s), ("LLAMA_FORGE_ARCH", "cpu")],
    );
    assert_eq!(both["plan_hash"], cpu["plan_hash"]);
    // Refusals name the value and where it came from: exit 2.
    let o = run(
        &["plan", "llama-cpp-python"],
        &[("LLAMA_FORGE_JOBS", "zero")],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("the default --jobs zero from LLAMA_FORGE_JOBS"),
        "{}",
        text(&o)
    );
    std::fs::write(&file, "[defaults]\nverbose = true\n").unwrap();
    let o = run(
        &["plan", "llama-cpp-python"],
        &[("XDG_CONFIG_HOME", &conf_s)],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains(&format!(
            "{f}: [defaults] `verbose` is not an option a default can be given for"
        )),
        "{}",
        text(&o)
    );
}
