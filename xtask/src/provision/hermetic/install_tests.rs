use super::*;

/// The assembled nvcc's version comes from `nvcc --version` run through the
/// process seam; a failing one names nvcc.
#[test]
fn nvcc_version_reads_the_recorded_banner() {
    use crate::process::{Output, Recorder};
    let banner = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/toolchains/nvcc-13.0.88-version.txt"),
    )
    .unwrap();
    let procs = Recorder::replying(move |_| Ok(Output::ok(&banner, "")));
    let v = nvcc_version(Path::new("/c/bin/nvcc"), &procs).unwrap();
    assert_eq!(v.to_string(), "13.0.88");
    assert_eq!(procs.commands(), ["/c/bin/nvcc --version"]);
    let failing = Recorder::replying(|_| Ok(Output::failed(1)));
    let e = nvcc_version(Path::new("/c/bin/nvcc"), &failing)
        .unwrap_err()
        .to_string();
    assert!(e.contains("/c/bin/nvcc does not run"), "{e}");
}

fn spec() -> CudaSpec {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../toolchains");
    CudaSpec::load(&p, &"13.0".parse().unwrap()).unwrap()
}

#[test]
fn covers_needs_every_wheel_with_its_hash() {
    let full = spec();
    let slim = full.without(&["nvidia-cublas"]).unwrap();
    assert!(covers(&full, &slim) && covers(&full, &full));
    assert!(
        !covers(&slim, &full),
        "a root without cublas does not serve a cublas build"
    );
    let mut moved = full.clone();
    moved.wheels[0].sha256 = "00".repeat(32).parse().unwrap();
    assert!(!covers(&moved, &slim), "a changed pin means a reinstall");
}

#[test]
fn layout_links_like_a_system_toolkit() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    for f in [
        "bin/nvcc",
        "bin/nvcc.profile",
        "nvvm/bin/cicc",
        "lib/libcudart.so.13",
        "lib/libnvvm.so.4",
        "lib/libcudadevrt.a",
    ] {
        fs::create_dir_all(root.join(f).parent().unwrap()).unwrap();
        fs::write(root.join(f), b"x").unwrap();
    }
    lay_out(root, Arch::X86_64).unwrap();
    assert_eq!(
        fs::read_link(root.join("lib/libcudart.so")).unwrap(),
        Path::new("libcudart.so.13")
    );
    assert_eq!(
        fs::read_link(root.join("lib/libnvvm.so")).unwrap(),
        Path::new("libnvvm.so.4")
    );
    assert!(
        root.join("targets/x86_64-linux/lib/libcudart.so.13")
            .is_file()
            && root.join("lib64/libcudart.so").exists()
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        fs::metadata(root.join("nvvm/bin/cicc"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o755
    );
    assert_eq!(
        fs::metadata(root.join("bin/nvcc.profile"))
            .unwrap()
            .permissions()
            .mode()
            & 0o111,
        0
    );
}

#[test]
fn a_root_is_taken_only_while_its_files_match_their_record() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("cuda/13.0.88");
    for f in ["bin/nvcc", "lib/libcudart.so.13"] {
        fs::create_dir_all(root.join(f).parent().unwrap()).unwrap();
        fs::write(root.join(f), b"x").unwrap();
    }
    fs::write(root.join(MARKER), serde_json::to_string(&spec()).unwrap()).unwrap();
    assert!(
        installed(&root, Some(&Log::stderr())).is_none(),
        "a root without a record (an older install) is assembled again"
    );
    crate::provision::tree::write(&root).unwrap();
    assert!(installed(&root, Some(&Log::stderr())).is_some_and(|have| covers(&have, &spec())));
    fs::write(root.join("bin/nvcc"), b"#!/bin/sh\nevil\n").unwrap();
    assert!(
        installed(&root, Some(&Log::stderr())).is_none(),
        "a changed nvcc is found"
    );
    let e = format!("{:#}", crate::provision::tree::check(&root).unwrap_err());
    assert!(
        e.contains(&root.join("bin/nvcc").display().to_string()),
        "{e}"
    );
    // The marker is part of what is recorded: more wheels cannot be claimed.
    crate::provision::tree::write(&root).unwrap();
    let mut more = spec();
    more.wheels[0].sha256 = "00".repeat(32).parse().unwrap();
    fs::write(root.join(MARKER), serde_json::to_string(&more).unwrap()).unwrap();
    assert!(
        installed(&root, Some(&Log::stderr())).is_none(),
        "a changed marker is found"
    );
}

/// A wheel of `files` (paths under nvidia/cu13/) placed in `cache` as its download.
fn fake_wheel(cache: &Path, name: &str, version: &str, arch: &str, files: &[&str]) -> CudaWheel {
    use std::io::Write;
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for f in files {
        w.start_file(
            format!("{WHEEL_ROOT}/{f}"),
            zip::write::SimpleFileOptions::default(),
        )
        .unwrap();
        w.write_all(format!("{name} {arch} {f}").as_bytes())
            .unwrap();
    }
    let bytes = w.finish().unwrap().into_inner();
    let sha256 = crate::digest::sha256_bytes(&bytes);
    let url = format!(
        "https://example.invalid/{}-{version}-py3-none-manylinux2014_{arch}.whl",
        name.replace('-', "_")
    );
    let at = fetch::cache_path(cache, &url, &sha256);
    fs::create_dir_all(at.parent().unwrap()).unwrap();
    fs::write(&at, &bytes).unwrap();
    CudaWheel {
        name: name.into(),
        version: version.parse().unwrap(),
        url,
        sha256,
        size: bytes.len() as u64,
    }
}

/// The 13.0 pins with fake wheels of the same names in `cache`: x86-64 ones, and
/// aarch64 ones of each (the runtime and cuBLAS first, as the pin files list them).
fn fake_spec(cache: &Path) -> CudaSpec {
    let x86 = |name, version, files: &[&str]| fake_wheel(cache, name, version, "x86_64", files);
    let arm = |name, version, files: &[&str]| fake_wheel(cache, name, version, "aarch64", files);
    let runtime_files = [
        "include/cuda.h",
        "include/cuda_runtime.h",
        "lib/libcudart.so.13",
        "lib/libcudadevrt.a",
    ];
    let cublas_files = [
        "include/cublas_v2.h",
        "lib/libcublas.so.13",
        "lib/libcublasLt.so.13",
    ];
    let nvcc_files = [
        "bin/nvcc",
        "bin/nvcc.profile",
        "bin/ptxas",
        "bin/nvlink",
        "bin/fatbinary",
        "bin/cudafe++",
    ];
    let nvvm_files = [
        "nvvm/bin/cicc",
        "nvvm/libdevice/libdevice.10.bc",
        "lib/libnvvm.so.4",
    ];
    let cccl_files = [
        "include/cccl/cuda/std/version",
        "lib/cmake/cccl/cccl-config.cmake",
    ];
    let all: [(&str, &str, &[&str]); 7] = [
        ("nvidia-cuda-nvcc", "13.0.88", &nvcc_files),
        ("nvidia-nvvm", "13.0.88", &nvvm_files),
        ("nvidia-cuda-crt", "13.0.88", &["include/crt/host_config.h"]),
        ("nvidia-cuda-runtime", "13.0.96", &runtime_files),
        ("nvidia-cuda-cccl", "13.0.85", &cccl_files),
        ("nvidia-cublas", "13.0.2.14", &cublas_files),
        ("nvidia-cuda-cuobjdump", "13.2.86", &["bin/cuobjdump"]),
    ];
    let mut aarch64_wheels: Vec<CudaWheel> = all.iter().map(|(n, v, f)| arm(n, v, f)).collect();
    aarch64_wheels
        .sort_by_key(|w| !super::super::AARCH64_TARGET_LIBRARIES.contains(&w.name.as_str()));
    CudaSpec {
        wheels: all.iter().map(|(n, v, f)| x86(n, v, f)).collect(),
        windows_wheels: vec![],
        aarch64_wheels,
        ..spec()
    }
}

/// Answers what install runs: `nvcc --version`, and the C compiler's `-E` (a
/// cuda.h) and `-shared -o <stub>` (writes an ELF header of machine `machine`).
fn fake_tools(machine: u16) -> crate::process::Recorder {
    use crate::process::{Output, Recorder};
    Recorder::replying(move |c| {
        let args = c.arg_strs();
        if args == ["--version"] {
            return Ok(Output::ok(
                "Cuda compilation tools, release 13.0, V13.0.88\n",
                "",
            ));
        }
        if args.iter().any(|a| a == "-E") {
            return Ok(Output::ok(
                "int cuInit(unsigned);\nint cuMemAlloc_v2(void **, unsigned long);\n",
                "",
            ));
        }
        let out = args
            .iter()
            .position(|a| a == "-o")
            .map(|i| &args[i + 1])
            .unwrap();
        let mut elf = vec![0u8; 64];
        elf[..7].copy_from_slice(b"\x7fELF\x02\x01\x01");
        elf[16] = 3; // ET_DYN
        elf[18..20].copy_from_slice(&machine.to_le_bytes());
        elf[20] = 1;
        elf[52] = 64;
        std::fs::write(out, elf).unwrap();
        Ok(Output::ok("", ""))
    })
}

/// Each aarch64 wheel's `lib/` goes to the target's lib dir, everything else
/// (headers, x86-64 wheels' files) where it is in the wheel.
#[test]
fn aarch64_wheels_put_their_libraries_in_the_target_dir() {
    let d = tempfile::tempdir().unwrap();
    let spec = fake_spec(d.path()).for_aarch64().unwrap();
    let arm = spec
        .wheels
        .iter()
        .find(|w| w.name == "nvidia-cuda-runtime")
        .unwrap();
    let nvvm = spec
        .wheels
        .iter()
        .find(|w| w.name == "nvidia-nvvm")
        .unwrap();
    assert!(arm.is_aarch64() && !nvvm.is_aarch64());
    let at = |w, p: &str, a| place(w, Path::new(p), a);
    let cross = Layout::CrossAarch64;
    assert_eq!(
        at(arm, "lib/libcudart.so.13", cross),
        Path::new("targets/sbsa-linux/lib/libcudart.so.13")
    );
    assert_eq!(
        at(arm, "include/cuda.h", cross),
        Path::new("include/cuda.h")
    );
    assert_eq!(
        at(nvvm, "lib/libnvvm.so.4", cross),
        Path::new("lib/libnvvm.so.4")
    );
    // On an aarch64 host every wheel is aarch64, and lib/ is the toolkit's own.
    for host in [Arch::X86_64, Arch::Aarch64] {
        assert_eq!(
            at(arm, "lib/libcudart.so.13", Layout::Native(host)),
            Path::new("lib/libcudart.so.13")
        );
        assert_eq!(
            root_dir(Path::new("/c"), &spec.nvcc_version, Layout::Native(host)),
            Path::new("/c/cuda/13.0.88")
        );
    }
    assert_eq!(
        root_dir(Path::new("/c"), &spec.nvcc_version, cross),
        Path::new("/c/cuda/13.0.88-aarch64")
    );
}

/// A whole aarch64 install from fake wheels (no network): the layout, the stub
/// in the target dir, the record; the x86-64 install of the same pins beside it
/// is unchanged and records no aarch64 wheel.
#[test]
fn aarch64_toolkit_from_fake_wheels() {
    let d = tempfile::tempdir().unwrap();
    let cache = d.path();
    let pins = fake_spec(cache);
    let log = Log::stderr();
    let arm = install_aarch64_with(
        cache,
        &pins.for_aarch64().unwrap(),
        Path::new("aarch64-linux-gnu-gcc"),
        &log,
        &fake_tools(183),
    )
    .unwrap();
    let root = cache.join("cuda/13.0.88-aarch64");
    assert_eq!(arm.root, root);
    assert_eq!(arm.nvcc, root.join("bin/nvcc"));
    assert_eq!(arm.target_lib, root.join("targets/sbsa-linux/lib"));
    assert_eq!(
        arm.driver_stub,
        root.join("targets/sbsa-linux/lib/stubs/libcuda.so")
    );
    let text = |p: &str| fs::read_to_string(root.join(p)).unwrap();
    assert_eq!(
        text("targets/sbsa-linux/lib/libcudart.so.13"),
        "nvidia-cuda-runtime aarch64 lib/libcudart.so.13"
    );
    assert_eq!(
        text("targets/sbsa-linux/lib/libcublasLt.so"),
        "nvidia-cublas aarch64 lib/libcublasLt.so.13"
    );
    assert_eq!(
        text("targets/sbsa-linux/include/cuda.h"),
        "nvidia-cuda-runtime aarch64 include/cuda.h"
    );
    assert_eq!(
        text("targets/x86_64-linux/include/crt/host_config.h"),
        "nvidia-cuda-crt x86_64 include/crt/host_config.h"
    );
    assert_eq!(
        text("lib64/libnvvm.so"),
        "nvidia-nvvm x86_64 lib/libnvvm.so.4"
    );
    assert_eq!(
        fs::read_link(root.join("targets/sbsa-linux/lib/libcudart.so")).unwrap(),
        Path::new("libcudart.so.13")
    );
    assert!(fs::symlink_metadata(root.join("targets/sbsa-linux/lib"))
        .unwrap()
        .is_dir());
    assert!(!root.join("lib/libcudart.so.13").exists() && !root.join("lib/stubs").exists());
    assert!(
        !root.join("targets/sbsa-linux/lib/libcuda.so.1").exists(),
        "the stub is never loaded"
    );
    let stub = fs::read(&arm.driver_stub).unwrap();
    assert_eq!(u16::from_le_bytes([stub[18], stub[19]]), 183);
    let names = |ws: &[CudaWheel]| {
        ws.iter()
            .map(|w| format!("{} {}", w.name, w.is_aarch64()))
            .collect::<Vec<_>>()
    };
    assert!(names(&arm.wheels).contains(&"nvidia-cublas true".to_string()));
    assert!(crate::provision::tree::check(&root).is_ok());
    // Asked again: reused.
    let again = install_aarch64_with(
        cache,
        &pins.for_aarch64().unwrap(),
        Path::new("cc"),
        &log,
        &fake_tools(183),
    )
    .unwrap();
    assert_eq!(again, arm);

    let x86 = install_with(cache, &pins, Path::new("cc"), &log, &fake_tools(62)).unwrap();
    assert_eq!(x86.root, cache.join("cuda/13.0.88"));
    assert_eq!(x86.target_lib, x86.root.join("lib"));
    assert_eq!(x86.driver_stub, x86.root.join("lib/stubs/libcuda.so"));
    assert_eq!(
        fs::read_to_string(x86.root.join("lib/libcudart.so.13")).unwrap(),
        "nvidia-cuda-runtime x86_64 lib/libcudart.so.13"
    );
    assert!(!x86.root.join("targets/sbsa-linux").exists());
    let marker = fs::read_to_string(x86.root.join(MARKER)).unwrap();
    assert!(!marker.contains("aarch64"), "{marker}");
    assert!(x86.wheels.iter().all(|w| !w.is_aarch64()));
}

/// On an aarch64 host (a DGX Spark) the whole toolkit is the aarch64 wheels' at
/// `<cache>/cuda/<nvcc>`, laid out with nvcc's own target dir there, `targets/sbsa-linux`;
/// its stub is an aarch64 library, and one of another arch is refused.
#[test]
fn aarch64_host_toolkit_from_fake_wheels() {
    let d = tempfile::tempdir().unwrap();
    let cache = d.path();
    let pins = fake_spec(cache).without(&["nvidia-cublas"]).unwrap();
    let log = Log::stderr();
    let e = format!(
        "{:#}",
        install_native(
            cache,
            &pins,
            Path::new("cc"),
            &log,
            &fake_tools(62),
            Arch::Aarch64
        )
        .unwrap_err()
    );
    assert!(
        e.contains("not an aarch64 library") && e.contains("aarch64-linux-gnu-gcc"),
        "{e}"
    );
    assert!(!cache.join("cuda/13.0.88").exists());
    let got = install_native(
        cache,
        &pins,
        Path::new("cc"),
        &log,
        &fake_tools(183),
        Arch::Aarch64,
    )
    .unwrap();
    let root = cache.join("cuda/13.0.88");
    assert_eq!(got.root, root);
    assert_eq!(got.nvcc, root.join("bin/nvcc"));
    assert_eq!(got.target_lib, root.join("lib"));
    assert_eq!(got.driver_stub, root.join("lib/stubs/libcuda.so"));
    let text = |p: &str| fs::read_to_string(root.join(p)).unwrap();
    for (file, from) in [
        ("bin/nvcc", "nvidia-cuda-nvcc aarch64 bin/nvcc"),
        ("nvvm/bin/cicc", "nvidia-nvvm aarch64 nvvm/bin/cicc"),
        (
            "bin/cuobjdump",
            "nvidia-cuda-cuobjdump aarch64 bin/cuobjdump",
        ),
        (
            "targets/sbsa-linux/lib/libcudart.so",
            "nvidia-cuda-runtime aarch64 lib/libcudart.so.13",
        ),
        (
            "targets/sbsa-linux/include/crt/host_config.h",
            "nvidia-cuda-crt aarch64 include/crt/host_config.h",
        ),
        ("lib64/libnvvm.so", "nvidia-nvvm aarch64 lib/libnvvm.so.4"),
    ] {
        assert_eq!(text(file), from, "{file}");
    }
    assert_eq!(
        fs::read_link(root.join("targets/sbsa-linux/lib")).unwrap(),
        Path::new("../../lib")
    );
    assert!(!root.join("targets/x86_64-linux").exists());
    assert!(
        !root.join("lib/libcublas.so.13").exists(),
        "left out stays out"
    );
    let stub = fs::read(&got.driver_stub).unwrap();
    assert_eq!(u16::from_le_bytes([stub[18], stub[19]]), 183);
    assert!(got.wheels.iter().all(|w| w.is_aarch64()) && got.wheels.len() == 6);
    let marker = fs::read_to_string(root.join(MARKER)).unwrap();
    assert!(!marker.contains("x86_64"), "{marker}");
    assert!(crate::provision::tree::check(&root).is_ok());
    // Asked again, with the pins already made for aarch64: reused.
    let again = install_native(
        cache,
        &pins.for_aarch64_host().unwrap(),
        Path::new("cc"),
        &log,
        &fake_tools(183),
        Arch::Aarch64,
    )
    .unwrap();
    assert_eq!(again, got);
    // A cross build's pins (x86-64 programs) are not an aarch64 host's.
    let e = install_native(
        cache,
        &pins.for_aarch64().unwrap(),
        Path::new("cc"),
        &log,
        &fake_tools(183),
        Arch::Aarch64,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("mix x86-64 and aarch64 wheels"), "{e}");
}

/// Each install takes only its own pins; an x86-64 C compiler does not make the
/// aarch64 stub.
#[test]
fn installs_refuse_the_other_architectures_pins_and_compiler() {
    let d = tempfile::tempdir().unwrap();
    let cache = d.path();
    let pins = fake_spec(cache);
    let log = Log::stderr();
    let e = install_with(
        cache,
        &pins.for_aarch64().unwrap(),
        Path::new("cc"),
        &log,
        &fake_tools(62),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("aarch64 wheel nvidia-cuda-runtime")
            && e.contains("assembled from the `[[aarch64_wheel]]`s apart"),
        "{e}"
    );
    let e = install_aarch64_with(cache, &pins, Path::new("cc"), &log, &fake_tools(183))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no aarch64 nvidia-cuda-runtime wheel") && e.contains("toolchains/cuda-"),
        "{e}"
    );
    let e = format!(
        "{:#}",
        install_aarch64_with(
            cache,
            &pins.for_aarch64().unwrap(),
            Path::new("cc"),
            &log,
            &fake_tools(62)
        )
        .unwrap_err()
    );
    assert!(
        e.contains("not an aarch64 library") && e.contains("aarch64-linux-gnu-gcc"),
        "{e}"
    );
    assert!(!cache.join("cuda/13.0.88-aarch64").exists());
}

#[test]
fn a_root_without_marker_is_not_taken() {
    let d = tempfile::tempdir().unwrap();
    fs::create_dir_all(d.path().join("cuda/13.0.88/bin")).unwrap();
    assert!(read_marker(&d.path().join("cuda/13.0.88")).is_none());
}
