//! The tool itself on Windows: cross-built for x86_64-pc-windows-gnu with mingw-w64
//! and run under wine. It finds no Visual Studio there and says what to install; it
//! verifies a Windows zip as on Linux, and refuses a tampered one; it unpacks the pinned
//! Windows CMake and Ninja into a cache under a user name with a space, and they run.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

use common::*;

/// `Z:\tmp\x`: how a Windows program under wine names the Linux path `/tmp/x`.
fn windows_path(p: &Path) -> String {
    format!("Z:{}", p.display()).replace('/', "\\")
}

#[test]
fn the_tool_runs_on_windows_verifies_a_zip_and_unpacks_its_pinned_cmake() {
    let path = std::env::var("PATH").unwrap_or_default();
    for (program, package) in [
        ("x86_64-w64-mingw32-gcc-posix", "apt install mingw-w64"),
        ("wine", "apt install wine"),
        ("rustup", "install Rust with rustup"),
    ] {
        if xtask::detect::toolchain::which(program, &path).is_none() {
            return cannot_run_here(&format!("no {program}: {package}"));
        }
    }
    let targets = sh(Command::new("rustup").args(["target", "list", "--installed"]));
    if !targets.contains("x86_64-pc-windows-gnu") {
        return cannot_run_here("no Rust target x86_64-pc-windows-gnu: rustup target add x86_64-pc-windows-gnu (.ci/run does)");
    }
    let bin = cross_build_tool("x86_64-pc-windows-gnu", HotCrates::Unoptimised);
    let exe = bin.join("xtask.exe");
    sh(Command::new("x86_64-w64-mingw32-gcc-posix")
        .args(["-shared", "-s", "-o"])
        .arg(bin.join("bcryptprimitives.dll"))
        .arg(repo().join("tests/fixtures/wine/bcryptprimitives.c"))
        .arg("-ladvapi32"));
    let d = tempfile::tempdir().unwrap();
    let wine = |args: &[&str]| -> Output {
        let o = Command::new("wine")
            .arg(&exe)
            .args(args)
            .env("WINEDEBUG", "-all")
            .env("WINEPREFIX", d.path().join("wine"))
            .env_remove("CC")
            .env_remove("CXX")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        eprintln!("$ wine xtask.exe {}\n{}", args.join(" "), text(&o));
        o
    };
    let help = wine(&["--help"]);
    assert!(help.status.success());
    assert!(
        text(&help).contains("Usage: xtask.exe [OPTIONS] <COMMAND>"),
        "{}",
        text(&help)
    );

    // No Visual Studio under wine: the plan says where it looked and what to install.
    let plan = wine(&["plan", "llama.cpp", "--arch", "cpu"]);
    assert!(!plan.status.success());
    let t = text(&plan);
    assert!(
        t.contains("no Visual Studio found")
            && t.contains("vswhere.exe does not exist")
            && t.contains("Desktop development with C++"),
        "{t}"
    );

    // A Windows zip of the mini project, made on Linux, verified on Windows.
    let src = mini_windows_source(d.path());
    let dist = d.path().join("dist");
    let o = run(
        &[
            "build",
            "llama.cpp",
            "--target",
            "x86_64-pc-windows-gnu",
            "--version",
            "0.3.36",
            "--source",
            &src.display().to_string(),
            "--dist",
            &dist.display().to_string(),
        ],
        &[(
            "LLAMA_FORGE_BUILD_DIR",
            d.path().join("build").to_str().unwrap(),
        )],
    );
    assert!(o.status.success(), "{}", text(&o));
    let zip = dist.join("llama.cpp-0.3.36-cpu-windows-x86_64.zip");
    let ok = wine(&["verify", &windows_path(&zip)]);
    assert!(ok.status.success(), "{}", text(&ok));
    assert!(text(&ok).contains("ok: Z:\\"), "{}", text(&ok));

    // Its manifest beside it altered: refused there too.
    let manifest = dist.join("llama.cpp-0.3.36-cpu-windows-x86_64.zip.manifest.json");
    let m = std::fs::read_to_string(&manifest).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&m).unwrap();
    v["artifact"]["size"] = serde_json::json!(1);
    std::fs::write(&manifest, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    let bad = wine(&["verify", &windows_path(&zip)]);
    assert!(!bad.status.success(), "{}", text(&bad));
    assert!(text(&bad).contains("differs from"), "{}", text(&bad));

    // The pinned CMake and Ninja of Windows, unpacked by the tool under wine into a cache
    // in a user's profile with a space in its name, and run from there. The wheels are
    // fetched (checked) into the tests' cache first: under wine there is no network.
    let pins = xtask::detect::toolchain::PinnedTools::load(
        &repo().join("toolchains/build-tools.toml"),
        xtask::platform::Os::Windows,
        xtask::platform::Arch::X86_64,
    )
    .unwrap();
    let profile = d.path().join("Users/John Smith/AppData/Local/llama-forge");
    for (name, pin) in [("cmake", &pins.cmake), ("ninja", &pins.ninja)] {
        let log = xtask::report::Log::stderr();
        let wheel = xtask::provision::fetch::fetch(&cache(), &pin.url, &pin.sha256, &log).unwrap();
        let at = xtask::provision::fetch::cache_path(&profile, &pin.url, &pin.sha256);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::copy(&wheel, &at).unwrap();
        let o = Command::new("wine")
            .arg(&exe)
            .args(["toolchains", "install", name])
            .env("WINEDEBUG", "-all")
            .env("WINEPREFIX", d.path().join("wine"))
            .env("LLAMA_FORGE_CACHE", windows_path(&profile))
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let t = text(&o);
        eprintln!("$ wine xtask.exe toolchains install {name}\n{t}");
        assert!(o.status.success(), "{t}");
        let dir = format!("{name}-{}-windows-x86_64", pin.version);
        let program = windows_path(&profile.join("tools").join(&dir).join(&pin.bin));
        assert!(
            t.contains(&format!("{name} {} at {program}", pin.version)),
            "{t}"
        );
        let v = Command::new("wine")
            .arg(&program)
            .arg("--version")
            .env("WINEDEBUG", "-all")
            .env("WINEPREFIX", d.path().join("wine"))
            .output()
            .unwrap();
        assert!(
            text(&v).contains(&pin.version.to_string()),
            "{program} --version: {}",
            text(&v)
        );
    }
}

/// The Windows import hook of GPU wheels (the llama-cpp-python recipe's patch for
/// x86_64-pc-windows-msvc), run by Python as llama_cpp would run it, with
/// `sys.platform` set to `win32` and `os.add_dll_directory` recorded (Linux has none):
/// each runtime wheel dir that exists in the wheel's site-packages goes first on PATH
/// and is added as a DLL dir, a missing one is left out, and on Linux nothing changes.
#[test]
fn the_windows_import_hook_puts_the_runtime_wheels_dll_dirs_first_on_path() {
    let recipe = xtask::recipe::Recipe::find(&repo().join("recipes"), "llama-cpp-python").unwrap();
    let hooks: Vec<_> = recipe
        .patches
        .iter()
        .filter(|p| p.targets == [xtask::platform::Target::WINDOWS_MSVC])
        .collect();
    assert_eq!(hooks.len(), 1, "one patch for the msvc target");
    let hook = hooks[0];
    assert_eq!(hook.file, "llama_cpp/llama_cpp.py");
    // The hook without the call that loads the backends, in a module at llama_cpp/.
    let body = hook
        .replace
        .replace("_load_ggml_backends(_base_path)\n", "");
    let d = tempfile::tempdir().unwrap();
    let site = d.path().join("site-packages");
    std::fs::create_dir_all(site.join("llama_cpp")).unwrap();
    std::fs::create_dir_all(site.join("nvidia/cu13/bin/x86_64")).unwrap();
    std::fs::write(
        site.join("llama_cpp/hook.py"),
        format!("import pathlib\n{body}"),
    )
    .unwrap();
    let probe = |platform: &str| -> serde_json::Value {
        let script = format!(
            r#"
import json, os, sys
added = []
os.add_dll_directory = added.append
sys.platform = "{platform}"
os.environ["PATH"] = "/usr/bin"
sys.path.insert(0, sys.argv[1])
import llama_cpp.hook
print(json.dumps({{"path": os.environ["PATH"], "added": added}}))
"#
        );
        let out = sh(Command::new("python3").arg("-c").arg(script).arg(&site));
        let last = out.lines().last().unwrap_or_default();
        serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {out}"))
    };
    let dir = site
        .join("nvidia/cu13/bin/x86_64")
        .canonicalize()
        .unwrap()
        .display()
        .to_string();
    let win = probe("win32");
    assert_eq!(win["path"], format!("{dir}:/usr/bin"), "{win}");
    assert_eq!(win["added"], serde_json::json!([dir]), "{win}");
    let linux = probe("linux");
    assert_eq!(linux["path"], "/usr/bin", "{linux}");
    assert_eq!(linux["added"], serde_json::json!([]), "{linux}");
}
