//! The tool itself on Windows: cross-built for x86_64-pc-windows-gnu with mingw-w64
//! and run under wine. It finds no Visual Studio there and says what to install; it
//! verifies a Windows zip as on Linux, and refuses a tampered one.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::*;

/// `Z:\tmp\x`: how a Windows program under wine names the Linux path `/tmp/x`.
fn windows_path(p: &Path) -> String {
    format!("Z:{}", p.display()).replace('/', "\\")
}

#[test]
fn the_tool_runs_on_windows_finds_no_msvc_and_verifies_a_windows_zip() {
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
    let target_dir = repo().join("target/windows");
    sh(Command::new(env!("CARGO"))
        .args([
            "build",
            "-q",
            "-p",
            "xtask",
            "--bin",
            "xtask",
            "--target",
            "x86_64-pc-windows-gnu",
        ])
        .env("CARGO_TARGET_DIR", &target_dir)
        .current_dir(repo()));
    let bin = target_dir.join("x86_64-pc-windows-gnu/debug");
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
        text(&help).contains("Usage: xtask.exe <COMMAND>"),
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
}
