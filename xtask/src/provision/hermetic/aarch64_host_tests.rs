//! The toolkit of an aarch64 host (a DGX Spark building for itself), for real: the pinned
//! CUDA 13.0 aarch64 wheels (without cuBLAS: ~95 MB, in the shared download cache
//! `LLAMA_FORGE_CACHE` or the repo's `vendor/cache`, as tests/it/hermetic_cuda.rs keeps
//! the x86-64 ones) assembled by [`install_native`] for an aarch64 host, and its programs
//! run under qemu-user (`qemu-aarch64 -L /usr/aarch64-linux-gnu`, Debian's arm64 glibc
//! from libc6-arm64-cross, as tests/it/aarch64_tool.rs runs the tool): `nvcc --version`
//! (install asks it) and `ptxas --version`, then nvcc's device steps one by one: `cicc`
//! compiles a kernel (C++ as nvcc's host preprocessing leaves it) to PTX for
//! `compute_121a`, `ptxas` assembles it for `sm_121a` (DGX Spark), `fatbinary` packs both,
//! and [`crate::cuda::fatbin`] reads the fat binary back.
//!
//! Why not `nvcc -c k.cu` under qemu: nvcc starts cicc, ptxas and the host compiler as
//! child processes, and qemu-user hands an aarch64 child to the host kernel, which refuses
//! it without binfmt_misc (not registered on the x86-64 machines this runs on). So each
//! program runs on its own under qemu here, and the host compiler's part (preprocessing,
//! the host object) is left out. The stub is built by Debian's cross gcc (an
//! x86-64 program making aarch64 code); on a Spark it is the Spark's gcc.
// Tests say on stderr why they skip.
#![allow(clippy::print_stderr)]

use std::io::Read;
use std::path::{Path, PathBuf};

use super::install::install_native;
use super::CudaSpec;
use crate::platform::Arch;
use crate::process::{Command, Output, Processes, StartError, System};
use crate::report::Log;

/// Debian's libc6-arm64-cross: the loader and glibc of the aarch64 programs.
const SYSROOT: &str = "/usr/aarch64-linux-gnu";

/// A kernel as cicc reads it: C++ after nvcc's host preprocessing (`.cpp1.ii`), which
/// here needs no header (`__global__` is this attribute in CUDA's headers).
const KERNEL: &str = "extern \"C\" __attribute__((global)) void add_one(int *p) { *p += 1; }\n";

/// cicc's flags as nvcc 13.0 gives them for `-arch=sm_121a` (`nvcc -dryrun`), less the
/// module id and fatbin include file names.
const CICC_FLAGS: &[&str] = &[
    "--c++17",
    "--gnu_version=120200",
    "--orig_src_file_name",
    "k.cu",
    "--allow_managed",
    "-arch",
    "compute_121a",
    "-m64",
    "--no-version-ident",
    "-ftz=0",
    "-prec_div=1",
    "-prec_sqrt=1",
    "-fmad=1",
];

/// Runs aarch64 programs under qemu-aarch64, everything else as it is.
struct Qemu {
    qemu: PathBuf,
}

impl Qemu {
    fn wrap(&self, cmd: &Command) -> Command {
        let mut head = [0u8; 20];
        let aarch64 = std::fs::File::open(&cmd.program)
            .and_then(|mut f| f.read_exact(&mut head))
            .is_ok()
            && head[..4] == *b"\x7fELF"
            && u16::from_le_bytes([head[18], head[19]]) == 183;
        if !aarch64 {
            return cmd.clone();
        }
        let mut args: Vec<std::ffi::OsString> =
            vec!["-L".into(), SYSROOT.into(), cmd.program.clone().into()];
        args.extend(cmd.args.iter().cloned());
        Command {
            program: self.qemu.clone(),
            args,
            ..cmd.clone()
        }
    }
}

impl Processes for Qemu {
    fn output(&self, cmd: &Command) -> Result<Output, StartError> {
        System.output(&self.wrap(cmd))
    }
    fn step(&self, step: &str, cmd: &Command, log: &Path) -> anyhow::Result<()> {
        System.step(step, &self.wrap(cmd), log)
    }
}

/// What this test needs from the machine, or why it cannot run (a failure under CI=true).
fn needs() -> Option<(PathBuf, PathBuf)> {
    let path = std::env::var("PATH").unwrap_or_default();
    let find = |p: &str| crate::detect::toolchain::which(p, &path);
    let why = match (find("qemu-aarch64"), find("aarch64-linux-gnu-gcc")) {
        _ if crate::platform::Arch::host() != Arch::X86_64 => {
            "not an x86-64 host (this test emulates aarch64)".to_string()
        }
        _ if !Path::new(SYSROOT)
            .join("lib/ld-linux-aarch64.so.1")
            .exists() =>
        {
            format!("no {SYSROOT}: apt install libc6-arm64-cross")
        }
        (Some(q), Some(cc)) => return Some((q, cc)),
        (None, _) => "no qemu-aarch64: apt install qemu-user".into(),
        (_, None) => "no aarch64-linux-gnu-gcc: apt install gcc-aarch64-linux-gnu".into(),
    };
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "CI=true, and this test cannot run: {why}"
    );
    eprintln!("skipped: {why}");
    None
}

fn shared_downloads() -> PathBuf {
    std::env::var_os("LLAMA_FORGE_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../vendor/cache"))
        .join("downloads")
}

fn run(procs: &Qemu, cmd: Command) -> String {
    let shown = cmd.arg_strs().join(" ");
    let out = procs
        .output(&cmd.merge_stderr())
        .unwrap_or_else(|e| panic!("{shown}: {e}"));
    assert!(out.success(), "{shown}: {}", out.stdout);
    out.stdout
}

#[test]
fn aarch64_host_toolkit_runs_under_qemu_and_makes_sm_121a_code() {
    let Some((qemu, cross_cc)) = needs() else {
        return;
    };
    let procs = Qemu { qemu };
    // A cache of its own (the root must not replace the x86-64 one at cuda/13.0.88 in the
    // shared cache), downloading into the shared one.
    let d = tempfile::tempdir().unwrap();
    let cache = d.path().join("cache");
    let downloads = shared_downloads();
    std::fs::create_dir_all(&downloads).unwrap();
    std::fs::create_dir_all(&cache).unwrap();
    std::os::unix::fs::symlink(&downloads, cache.join("downloads")).unwrap();
    let toolchains = Path::new(env!("CARGO_MANIFEST_DIR")).join("../toolchains");
    let spec = CudaSpec::load(&toolchains, &"13.0".parse().unwrap())
        .unwrap()
        .without(&["nvidia-cublas"])
        .unwrap();
    let started = std::time::Instant::now();
    let got = install_native(
        &cache,
        &spec,
        &cross_cc,
        &Log::stderr(),
        &procs,
        Arch::Aarch64,
    )
    .unwrap_or_else(|e| panic!("{e:#}"));
    eprintln!("assembled in {:.1?}", started.elapsed());
    let root = cache.join("cuda/13.0.88");
    assert_eq!(got.root, root);
    assert_eq!(got.version.to_string(), "13.0.88");
    assert!(
        got.wheels.iter().all(|w| w.is_aarch64()),
        "{:?}",
        got.wheels
    );
    // Every program of the root is an aarch64 one; the stub too.
    for p in [
        "bin/nvcc",
        "bin/ptxas",
        "bin/fatbinary",
        "bin/nvlink",
        "bin/cudafe++",
        "bin/cuobjdump",
        "nvvm/bin/cicc",
        "lib/libcudart.so.13",
        "lib/stubs/libcuda.so",
    ] {
        let data = std::fs::read(root.join(p)).unwrap();
        let arch = object::File::parse(&*data).map(|f| object::Object::architecture(&f));
        assert_eq!(arch, Ok(object::Architecture::Aarch64), "{p}");
    }
    // nvcc.profile's target dir on aarch64.
    for (link, to) in [
        ("targets/sbsa-linux/include", "../../include"),
        ("targets/sbsa-linux/lib", "../../lib"),
    ] {
        assert_eq!(std::fs::read_link(root.join(link)).unwrap(), Path::new(to));
    }
    assert!(root
        .join("targets/sbsa-linux/include/crt/host_config.h")
        .is_file());
    assert!(root
        .join("targets/sbsa-linux/include/cccl/cuda/std/version")
        .is_file());

    let banner = run(&procs, Command::new(root.join("bin/nvcc")).arg("--version"));
    assert!(banner.contains("release 13.0, V13.0.88"), "{banner}");
    let banner = run(
        &procs,
        Command::new(root.join("bin/ptxas")).arg("--version"),
    );
    assert!(banner.contains("V13.0.88"), "{banner}");

    let work = d.path().join("k");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("k.cpp1.ii"), KERNEL).unwrap();
    let at = |f: &str| work.join(f).display().to_string();
    run(
        &procs,
        Command::new(root.join("nvvm/bin/cicc"))
            .args(CICC_FLAGS)
            .args(["--gen_c_file_name", &at("k.cudafe1.c")])
            .args(["--stub_file_name", &at("k.cudafe1.stub.c")])
            .args(["--gen_device_file_name", &at("k.cudafe1.gpu")])
            .arg(at("k.cpp1.ii"))
            .args(["-o", &at("k.ptx")]),
    );
    let ptx = std::fs::read_to_string(work.join("k.ptx")).unwrap();
    assert!(
        ptx.contains("release 13.0, V13.0.88")
            && ptx.contains(".target sm_121a")
            && ptx.contains(".visible .entry add_one("),
        "{ptx}"
    );
    run(
        &procs,
        Command::new(root.join("bin/ptxas"))
            .args(["-arch=sm_121a", "-o"])
            .arg(work.join("k.cubin"))
            .arg(work.join("k.ptx")),
    );
    let image = |kind: &str, file: &str| {
        format!(
            "--image3=kind={kind},sm=121a,file={}",
            work.join(file).display()
        )
    };
    run(
        &procs,
        Command::new(root.join("bin/fatbinary"))
            .arg(format!("--create={}", work.join("k.fatbin").display()))
            .arg(image("elf", "k.cubin"))
            .arg(image("ptx", "k.ptx")),
    );
    let fatbin = std::fs::read(work.join("k.fatbin")).unwrap();
    let entries = crate::cuda::fatbin::parse(&fatbin).unwrap();
    let names: Vec<String> = entries.iter().map(|e| e.name()).collect();
    assert_eq!(names, ["sm_121a", "compute_121a"]);
    let cubin = crate::cuda::fatbin::payload(&fatbin, &entries[0]).unwrap();
    assert_eq!(cubin, std::fs::read(work.join("k.cubin")).unwrap());
    eprintln!("done in {:.1?}", started.elapsed());
}
