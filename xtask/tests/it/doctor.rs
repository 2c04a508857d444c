//! `cargo xtask doctor`, the real binary: a real venv with a stub torch (its arch list
//! ours to choose) and a hand-made llama_cpp wheel (a library with an `sm_120a` cubin
//! in `.nv_fatbin`, needing `libcudart.so.12`) installed by pip; a fake `nvidia-smi`
//! on PATH printing the recorded outputs in tests/fixtures/doctor. NVML is left out
//! (`--no-nvml`), so a GPU on the machine running the tests changes nothing.
#![cfg(unix)]

use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// A fat binary holding one cubin for `arch` (`120`), arch-specific (`sm_120a`).
fn fatbin(arch: u32) -> Vec<u8> {
    let payload = b"\x7fELF not a real cubin\0\0\0";
    let mut e = vec![0u8; 64];
    e[0..2].copy_from_slice(&2u16.to_le_bytes()); // a cubin
    e[2..4].copy_from_slice(&0x0101u16.to_le_bytes());
    e[4..8].copy_from_slice(&64u32.to_le_bytes());
    e[8..16].copy_from_slice(&(payload.len() as u64).to_le_bytes());
    e[16..20].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    e[28..32].copy_from_slice(&arch.to_le_bytes());
    e[40..48].copy_from_slice(&(0x10_0000u64 | 0x11).to_le_bytes()); // `a`
    e.extend_from_slice(payload);
    let mut c = Vec::new();
    c.extend_from_slice(&0xBA55_ED50u32.to_le_bytes());
    c.extend_from_slice(&1u16.to_le_bytes());
    c.extend_from_slice(&16u16.to_le_bytes());
    c.extend_from_slice(&(e.len() as u64).to_le_bytes());
    c.extend(e);
    c
}

/// `libggml-cuda.so`: with `fatbin` as its `.nv_fatbin` and a DT_NEEDED on
/// libcudart.so.12 (a stub beside it), or a plain CPU library.
fn library(dir: &Path, fatbin: Option<&[u8]>) -> Vec<u8> {
    let src = dir.join("ggml.c");
    let out = dir.join("libggml-cuda.so");
    let mut c = Command::new("gcc");
    c.args(["-shared", "-fPIC", "-o"]).arg(&out).arg(&src);
    let mut code = String::from("int ggml_kernel(void) { return 1; }\n");
    if let Some(f) = fatbin {
        let bytes: Vec<String> = f.iter().map(|b| b.to_string()).collect();
        code.push_str(&format!(
            "__attribute__((section(\".nv_fatbin\"), used, aligned(8))) const unsigned char fatbin[] = {{{}}};\n",
            bytes.join(",")
        ));
        std::fs::write(dir.join("cudart.c"), "int cudaStub(void) { return 0; }\n").unwrap();
        sh(Command::new("gcc")
            .args(["-shared", "-fPIC", "-Wl,-soname,libcudart.so.12", "-o"])
            .arg(dir.join("libcudart.so.12"))
            .arg(dir.join("cudart.c")));
        c.arg("-Wl,--no-as-needed").arg(dir.join("libcudart.so.12"));
    }
    std::fs::write(&src, code).unwrap();
    sh(&mut c);
    std::fs::read(&out).unwrap()
}

/// A llama_cpp_python wheel holding `lib` as llama_cpp/lib/libggml-cuda.so.
fn wheel(dir: &Path, version: &str, lib: &[u8]) -> PathBuf {
    let path = dir.join(format!("llama_cpp_python-{version}-py3-none-any.whl"));
    let mut z = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    let o = zip::write::SimpleFileOptions::default();
    let di = format!("llama_cpp_python-{version}.dist-info");
    let files: Vec<(String, Vec<u8>)> = vec![
        (
            "llama_cpp/__init__.py".into(),
            b"raise ImportError('not for import')\n".to_vec(),
        ),
        ("llama_cpp/lib/libggml-cuda.so".into(), lib.to_vec()),
        (
            format!("{di}/METADATA"),
            format!("Metadata-Version: 2.1\nName: llama_cpp_python\nVersion: {version}\n")
                .into_bytes(),
        ),
        (
            format!("{di}/WHEEL"),
            b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
                .to_vec(),
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

/// A stub torch: `__version__`, `version.cuda` and `cuda.get_arch_list()` as given.
fn stub_torch(site: &Path, cuda: &str, archs: &[&str]) {
    let t = site.join("torch");
    std::fs::create_dir_all(&t).unwrap();
    std::fs::write(
        t.join("__init__.py"),
        format!(
            "__version__ = '2.7.0+cu{}'\nclass version:\n    cuda = '{cuda}'\nclass cuda:\n    @staticmethod\n    def get_arch_list():\n        return {archs:?}\n",
            cuda.replace('.', "")
        ),
    )
    .unwrap();
}

/// A fake nvidia-smi printing the recorded outputs of `gpu` (h100, rtx5090, gb10).
fn fake_smi(bin: &Path, gpu: &str) {
    let fx = repo().join("tests/fixtures/doctor");
    std::fs::create_dir_all(bin).unwrap();
    let smi = bin.join("nvidia-smi");
    std::fs::write(
        &smi,
        format!(
            "#!/bin/sh\ncase \"$1\" in\n  --query-gpu=*) exec /bin/cat '{}' ;;\n  *) exec /bin/cat '{}' ;;\nesac\n",
            fx.join(format!("{gpu}.query.csv")).display(),
            fx.join(format!("{gpu}.banner.txt")).display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&smi, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn doctor(python: &Path, bin: &Path, wsl: &Path, extra: &[&str]) -> (i32, String) {
    let mut args = vec![
        "doctor",
        "--no-nvml",
        "--python",
        python.to_str().unwrap(),
        "--wsl-lib",
        wsl.to_str().unwrap(),
    ];
    args.extend(extra);
    let path = bin.display().to_string();
    let o = run(&args, &[("PATH", &path), ("VIRTUAL_ENV", "")]);
    (o.status.code().unwrap(), text(&o))
}

#[test]
fn doctor_on_a_venv_with_fixture_gpus() {
    let d = tempfile::tempdir().unwrap();
    let python = venv(&d.path().join("venv"));
    let site = PathBuf::from(
        sh(Command::new(&python).args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ]))
        .trim(),
    );
    let libs = d.path().join("libs");
    std::fs::create_dir_all(&libs).unwrap();
    let cuda = wheel(d.path(), "0.3.16", &library(&libs, Some(&fatbin(120))));
    sh(Command::new(&python)
        .args(["-m", "pip", "install", "--no-deps", "--no-index", "--quiet"])
        .arg(&cuda));
    let wsl = d.path().join("no-wsl");
    let none = d.path().join("empty-bin");
    std::fs::create_dir_all(&none).unwrap();

    // The RTX 5090, as --gpu; torch built for sm_90 at most: no kernel image, cu128.
    stub_torch(&site, "12.6", &["sm_80", "sm_86", "sm_90"]);
    let (code, out) = doctor(&python, &none, &wsl, &["--gpu", "rtx5090"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("Checked against: rtx5090 (compute capability 12.0"),
        "{out}"
    );
    assert!(out.contains("llama_cpp 0.3.16"), "{out}");
    assert!(
        out.contains("    lib/libggml-cuda.so: sm_120a; needs libcudart.so.12"),
        "{out}"
    );
    assert!(
        out.contains("minimum NVIDIA driver: 525.60.13 on Linux, 527.41 on Windows and WSL2"),
        "{out}"
    );
    assert!(out.contains("ok on 12.0: runs natively"), "{out}");
    assert!(
        out.contains("PROBLEM on 12.0: will fail: \"no kernel image is available"),
        "{out}"
    );
    assert!(
        out.contains("-m pip install --force-reinstall torch --index-url https://download.pytorch.org/whl/cu128"),
        "{out}"
    );
    assert!(out.contains("bitsandbytes: not installed"), "{out}");
    // The same as JSON.
    let (code, json) = doctor(&python, &none, &wsl, &["--gpu", "12.0", "--json"]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&json[..json.rfind('}').unwrap() + 1]).unwrap();
    assert_eq!(v["outcome"], "problems");
    assert_eq!(v["packages"][0]["name"], "llama_cpp");
    assert_eq!(v["packages"][0]["gpus"][0]["verdict"], "natively");
    assert_eq!(v["packages"][1]["gpus"][0]["verdict"], "no_kernel_image");

    // torch with sm_120: all fine.
    stub_torch(&site, "12.8", &["sm_90", "sm_100", "sm_120"]);
    let (code, out) = doctor(&python, &none, &wsl, &["--gpu", "rtx5090"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.ends_with("all fine\n"), "{out}");

    // This machine is an H100 (nvidia-smi's recorded output): the sm_120a wheel
    // cannot run on it; the fix builds for 9.0 with this Python.
    let bin = d.path().join("bin");
    fake_smi(&bin, "h100");
    let (code, out) = doctor(&python, &bin, &wsl, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("NVIDIA H100 80GB HBM3, compute capability 9.0"),
        "{out}"
    );
    assert!(
        out.contains("driver 580.95.05, runs CUDA up to 13.0"),
        "{out}"
    );
    assert!(
        out.contains("PROBLEM on 9.0: will fail: \"no kernel image"),
        "{out}"
    );
    assert!(
        out.contains("fix: cargo xtask wheel llama-cpp-python --arch 90 --cuda 13.5")
            && out.contains(
                "-m pip install --force-reinstall dist/llama_cpp_python-*+cu135.sm90-py3-none-*.whl"
            ),
        "the build and its one py3 wheel: {out}"
    );
    assert!(
        out.contains("ok on 9.0: runs natively"),
        "torch has sm_90: {out}"
    );

    // A GB10: unified memory, no memory.total; the sm_120a cubin is 12.0's only.
    fake_smi(&bin, "gb10");
    let (code, out) = doctor(&python, &bin, &wsl, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(
            "NVIDIA GB10, compute capability 12.1 (DGX Spark / GB10), memory not reported"
        ),
        "{out}"
    );
    assert!(out.contains("--arch 121"), "{out}");

    // WSL2: no nvidia-smi on PATH, one in the WSL driver dir.
    fake_smi(&wsl, "rtx5090");
    let (code, out) = doctor(&python, &none, &wsl, &[]);
    assert!(
        out.contains(&format!(
            "nvidia-smi ({})",
            wsl.join("nvidia-smi").display()
        )),
        "{out}"
    );
    assert!(out.contains("NVIDIA GeForce RTX 5090"), "{out}");
    assert_eq!(code, 0, "{out}");
    std::fs::remove_file(wsl.join("nvidia-smi")).unwrap();

    // Our CPU wheel: a CPU-only build, with the command that builds the CUDA one.
    let cpu_libs = d.path().join("cpu-libs");
    std::fs::create_dir_all(&cpu_libs).unwrap();
    let cpu = wheel(d.path(), "0.3.17", &library(&cpu_libs, None));
    sh(Command::new(&python)
        .args(["-m", "pip", "install", "--no-deps", "--no-index", "--quiet"])
        .arg(&cpu));
    let (code, out) = doctor(&python, &none, &wsl, &["--gpu", "rtx5090"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("PROBLEM on 12.0: CPU-only build"), "{out}");
    assert!(
        out.contains("fix: cargo xtask wheel llama-cpp-python --arch 120 --cuda 13.5"),
        "{out}"
    );
    assert!(!out.contains("serves this wheel"), "{out}");

    // A substituter that holds the fix's wheel (its plan's signed listing): doctor says so
    // under the fix, which then fetches it.
    let path = none.display().to_string();
    let o = run(
        &[
            "plan",
            "llama-cpp-python",
            "--arch",
            "120",
            "--cuda",
            "13.5",
            "--json",
        ],
        &[("PATH", &path), ("VIRTUAL_ENV", "")],
    );
    assert!(o.status.success(), "{}", text(&o));
    let plan: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let plan = plan["plan_hash"].as_str().unwrap();
    let (secret, public) = xtask::substitute::keys::Signer::generate().unwrap();
    let signer = xtask::substitute::keys::Signer::from_text(&secret, None, "key").unwrap();
    let file = |name: &str, size| xtask::substitute::listing::File {
        sha256: "a".repeat(64).parse().unwrap(),
        size,
        name: name.into(),
    };
    let wheel_name = "llama_cpp_python-0.3.36+cu135.sm120a-py3-none-manylinux_2_28_x86_64.whl";
    let listing = xtask::substitute::listing::Listing {
        plan: plan.parse().unwrap(),
        built: "2026-12-04T05:00:00Z".into(),
        pairs: vec![xtask::substitute::listing::Pair {
            artifact: file(wheel_name, 26_400_000),
            manifest: file(&format!("{wheel_name}.manifest.json"), 70_000),
        }],
    }
    .render();
    let tree = d.path().join("substituter");
    std::fs::create_dir_all(tree.join(plan)).unwrap();
    std::fs::write(tree.join(plan).join("artifacts"), &listing).unwrap();
    std::fs::write(
        tree.join(plan).join("artifacts.minisig"),
        signer.sign(listing.as_bytes(), "x").unwrap(),
    )
    .unwrap();
    let key = public.lines().nth(1).unwrap();
    let from = format!("{}={key}", tree.display());
    let (code, out) = doctor(
        &python,
        &none,
        &wsl,
        &["--gpu", "rtx5090", "--cache-from", &from],
    );
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!(
            "# {} serves this wheel (signed by key {}, built 2026-12-04T05:00:00Z)",
            tree.display(),
            signer.id()
        )),
        "{out}"
    );

    // No GPU here and no --gpu: exit 3 (could not check), saying what to give.
    let (code, out) = doctor(&python, &none, &wsl, &[]);
    assert_eq!(code, 3, "{out}");
    assert!(
        out.contains("no GPU found here: give the GPU to check against with --gpu"),
        "{out}"
    );

    // A Python that is not there: exit 3, naming it.
    let (code, out) = doctor(
        &d.path().join("nope/python"),
        &none,
        &wsl,
        &["--gpu", "h100"],
    );
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("nope/python"), "{out}");
}

/// An x86-64 wheel with 12.1's own code (sm_121a) and a DGX Spark, whose GB10 is 12.1 and
/// whose CPU is aarch64: doctor (`--gpu gb10` and `--gpu 12.1`) and `inspect` of the same
/// wheel say the same, that it does not run there. (`inspect` said "runs natively on 12.1
/// (DGX Spark)", judging the device code alone.)
#[test]
fn doctor_and_inspect_agree_that_an_x86_64_wheel_does_not_run_on_a_dgx_spark() {
    let d = tempfile::tempdir().unwrap();
    let python = venv(&d.path().join("venv"));
    let libs = d.path().join("libs");
    std::fs::create_dir_all(&libs).unwrap();
    let whl = wheel(d.path(), "0.3.16", &library(&libs, Some(&fatbin(121))));
    sh(Command::new(&python)
        .args(["-m", "pip", "install", "--no-deps", "--no-index", "--quiet"])
        .arg(&whl));
    let wsl = d.path().join("no-wsl");
    let none = d.path().join("empty-bin");
    std::fs::create_dir_all(&none).unwrap();
    for gpu in ["gb10", "12.1"] {
        let (code, out) = doctor(&python, &none, &wsl, &["--gpu", gpu]);
        assert_eq!(code, 1, "{gpu}: {out}");
        assert!(
            out.contains("will not load: its libraries are x86_64 code, and every DGX Spark (GB10) is aarch64"),
            "{gpu}: {out}"
        );
    }

    let o = run(&["inspect", whl.to_str().unwrap()], &[]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains("cannot run (a x86_64 artifact, another machine) on: 12.1 (DGX Spark / GB10; every one is in an aarch64 machine)"),
        "{t}"
    );
    assert!(
        !t.lines()
            .any(|l| l.contains("runs natively") && l.contains("12.1")),
        "{t}"
    );
    let o = run(&["inspect", "--json", whl.to_str().unwrap()], &[]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let g = v["results"][0]["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["compute_capability"] == "12.1")
        .unwrap()
        .clone();
    // The machine does not run it; the device code alone would.
    assert_eq!(g["runs"], "no", "{g}");
    assert_eq!(g["code_runs"], "natively", "{g}");
    assert_eq!(g["only_in"], "aarch64", "{g}");
}
