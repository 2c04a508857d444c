//! Debian 12's arm64 CPython 3.11 under qemu-user (tests/it/common: `arm64_python`), where the
//! aarch64 wheels are to be installed and imported: it says it is aarch64, makes a venv,
//! pip-installs a wheel into it with `--no-index` and imports it; a subprocess of
//! `sys.executable` is aarch64 too; pip takes aarch64 manylinux wheels; and the host's
//! `xtask doctor` asks that venv's Python as any other.
#![cfg(unix)]

use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use common::*;

/// A pure-Python wheel, `tiny_arm` 0.1, whose module records `platform.machine()`.
fn tiny_wheel(dir: &Path) -> PathBuf {
    let path = dir.join("tiny_arm-0.1-py3-none-any.whl");
    let mut z = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    let o = zip::write::SimpleFileOptions::default();
    let di = "tiny_arm-0.1.dist-info";
    let files: Vec<(String, &[u8])> = vec![
        (
            "tiny_arm/__init__.py".into(),
            b"import platform\nMACHINE = platform.machine()\n",
        ),
        (
            format!("{di}/METADATA"),
            b"Metadata-Version: 2.1\nName: tiny-arm\nVersion: 0.1\n",
        ),
        (
            format!("{di}/WHEEL"),
            b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        ),
    ];
    let mut record = String::new();
    for (name, data) in &files {
        z.start_file(name.as_str(), o).unwrap();
        z.write_all(data).unwrap();
        record.push_str(&format!("{name},,\n"));
    }
    record.push_str(&format!("{di}/RECORD,,\n"));
    z.start_file(format!("{di}/RECORD"), o).unwrap();
    z.write_all(record.as_bytes()).unwrap();
    z.finish().unwrap();
    path
}

/// The last line of `out`.
fn last(out: &str) -> &str {
    out.lines().last().unwrap_or_default().trim()
}

#[test]
fn arm64_python_under_qemu_makes_a_venv_and_pip_installs_and_imports_a_wheel() {
    let t = Instant::now();
    let Some(py) = arm64_python() else { return };
    eprintln!("arm64_python(): {:.1?}", t.elapsed());
    let out = sh(py.command().args([
        "-c",
        "import platform, sys; print(platform.machine(), sys.version_info[0], sys.version_info[1])",
    ]));
    assert_eq!(last(&out), "aarch64 3 11");

    let d = tempfile::tempdir().unwrap();
    let venv = d.path().join("venv");
    let t = Instant::now();
    let python = py.venv(&venv);
    eprintln!("venv: {:.1?}", t.elapsed());
    let t = Instant::now();
    sh(Command::new(&python)
        .args(["-m", "pip", "install", "--no-index", "--no-deps"])
        .arg(tiny_wheel(d.path())));
    eprintln!("pip install: {:.1?}", t.elapsed());
    let t = Instant::now();
    let out = sh(Command::new(&python).args([
        "-c",
        "import subprocess, sys, tiny_arm\n\
         print(tiny_arm.MACHINE)\n\
         print(tiny_arm.__file__)\n\
         print(sys.prefix)\n\
         print(subprocess.run([sys.executable, '-c', 'import platform; print(platform.machine())'], \
               check=True, capture_output=True, text=True).stdout.strip())",
    ]));
    eprintln!("import and a subprocess: {:.1?}", t.elapsed());
    let lines: Vec<&str> = out.lines().rev().take(4).collect();
    let [child, prefix, file, machine] = lines[..] else {
        panic!("four lines: {out}")
    };
    assert_eq!(machine, "aarch64");
    let venv = venv.canonicalize().unwrap();
    assert_eq!(
        Path::new(file),
        venv.join("lib/python3.11/site-packages/tiny_arm/__init__.py")
    );
    assert_eq!(Path::new(prefix), venv);
    assert_eq!(child, "aarch64", "sys.executable runs under qemu too");

    // The wheels pip takes here: aarch64 ones, up to Debian 12's glibc 2.36.
    // (Not through `sh`: it prints hundreds of tags.)
    let o = Command::new(&python)
        .args([
            "-c",
            "from pip._vendor.packaging.tags import sys_tags; print(' '.join(str(t) for t in sys_tags()))",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let tags = String::from_utf8(o.stdout).unwrap();
    eprintln!(
        "pip's tags, the first of {}: {}",
        tags.split(' ').count(),
        &tags[..tags.len().min(200)]
    );
    let tags: Vec<&str> = last(&tags).split(' ').collect();
    assert_eq!(tags[0], "cp311-cp311-manylinux_2_36_aarch64");
    assert!(tags.contains(&"cp311-cp311-manylinux_2_17_aarch64"));
    assert!(!tags.iter().any(|t| t.contains("x86_64")), "{tags:?}");
}

/// The host's `xtask doctor --python` runs the arm64 venv's `bin/python` (a script that
/// runs qemu) as any Python, and reports its aarch64 platform.
#[test]
fn the_host_doctor_asks_the_arm64_venv_python() {
    let Some(py) = arm64_python() else { return };
    let d = tempfile::tempdir().unwrap();
    let python = py.venv(&d.path().join("venv"));
    let o = run(
        &[
            "doctor",
            "--python",
            python.to_str().unwrap(),
            "--gpu",
            "12.1",
        ],
        &[],
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    let line = t
        .lines()
        .find(|l| l.starts_with(&format!("Python {} (3.11, Linux-", python.display())))
        .unwrap_or_else(|| panic!("no Python line in:\n{t}"));
    assert!(line.ends_with("-aarch64-with-glibc2.36)"), "{line}");
    assert!(
        t.contains("all fine: nothing to check (llama_cpp, torch and bitsandbytes are not installed in this Python)"),
        "{t}"
    );
}
