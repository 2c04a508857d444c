use std::collections::BTreeSet;

use super::*;
use crate::cuda::{CodeKind, EmbeddedCode};
use crate::inspect::{FloorSource, Library, MinDriver};

fn fixture(name: &str) -> String {
    fs_err::read_to_string(crate::repo_root().join("tests/fixtures/doctor").join(name)).unwrap()
}

/// The machine as nvidia-smi reports it, from the recorded fixtures.
fn machine(gpu: &str) -> Machine {
    let (gpus, driver) = gpus::parse_query(&fixture(&format!("{gpu}.query.csv"))).unwrap();
    Machine {
        source: "nvidia-smi (/usr/bin/nvidia-smi)".into(),
        gpus,
        driver,
        max_cuda: gpus::parse_banner_cuda(&fixture(&format!("{gpu}.banner.txt"))),
        driver_os: crate::platform::Os::Linux,
    }
}

/// A package dir as inspect reads it: one library with these cubins.
fn package(sass: &[&str], cudart: Option<u32>) -> crate::inspect::Report {
    let codes: BTreeSet<EmbeddedCode> = sass
        .iter()
        .map(|a| EmbeddedCode {
            kind: CodeKind::Sass,
            arch: a.parse().unwrap(),
        })
        .collect();
    crate::inspect::Report {
        path: "/v/lib/python3.12/site-packages/llama_cpp".into(),
        libraries: vec![Library {
            path: "lib/libggml-cuda.so".into(),
            size: 1,
            sass: sass.iter().map(|a| format!("sm_{a}")).collect(),
            ptx: vec![],
            compression: vec![],
            relocatable_only: vec![],
            cuda_libraries: cudart
                .map(|m| vec![format!("libcudart.so.{m}")])
                .unwrap_or_default(),
            glibc: None,
            manylinux: None,
            runpath: vec![],
            arch: Some(crate::platform::Arch::X86_64),
            codes,
        }],
        duplicates: Default::default(),
        gpus: vec![],
        min_driver: cudart.map(|m| MinDriver {
            linux: if m == 13 { "580" } else { "525.60.13" }.parse().unwrap(),
            windows: if m == 13 { "580" } else { "527.41" }.parse().unwrap(),
            from: format!("libcudart.so.{m} (any CUDA {m}.x runtime)"),
            source: FloorSource::CudaRuntime,
        }),
    }
}

fn env(torch: Option<python::Torch>) -> PythonEnv {
    PythonEnv {
        version: [3, 12],
        executable: "/v/bin/python".into(),
        platform: "Linux-6.8.0-x86_64-with-glibc2.39".into(),
        machine: Some("x86_64".into()),
        llama_cpp: Some(python::Package {
            dir: "/v/lib/python3.12/site-packages/llama_cpp".into(),
            version: Some("0.3.16".into()),
            manifest: None,
        }),
        bitsandbytes: None,
        torch,
    }
}

fn torch(cuda: &str, archs: &[&str]) -> python::Torch {
    python::Torch {
        version: Some(format!("2.7.0+cu{}", cuda.replace('.', ""))),
        cuda: Some(cuda.into()),
        arch_list: archs.iter().map(|a| a.to_string()).collect(),
        error: None,
    }
}

fn facts(
    m: Option<Machine>,
    gpu: Option<&str>,
    e: PythonEnv,
    llama: crate::inspect::Report,
) -> Facts {
    Facts {
        machine: m.ok_or_else(|| vec!["nvidia-smi: not on PATH, nor in /usr/lib/wsl/lib".into()]),
        toolkits: vec![ToolkitLine {
            nvcc: "13.0.88".into(),
            root: "/usr/local/cuda-13.0".into(),
            found_by: "/usr/local/cuda-13.0".into(),
        }],
        gpu: gpu.map(|g| g.parse().unwrap()),
        python: "/v/bin/python".into(),
        env: Ok(e),
        llama_cpp: Some(Ok(llama)),
        bitsandbytes: None,
    }
}

const CU126: &[&str] = &[
    "sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90",
];
const CU128: &[&str] = &[
    "sm_75",
    "sm_80",
    "sm_86",
    "sm_90",
    "sm_100",
    "sm_120",
    "compute_120",
];

/// Our RTX 5090 wheel and a cu126 torch on the H100: the wheel cannot run (rebuild
/// with --arch 90), torch runs natively. Exit 1.
#[test]
fn h100_with_a_blackwell_wheel() {
    let r = assess(facts(
        Some(machine("h100")),
        None,
        env(Some(torch("12.6", CU126))),
        package(&["120a"], Some(13)),
    ));
    assert_eq!(r.outcome, Outcome::Problems);
    insta::assert_snapshot!(text(&r));
}

/// On the RTX 5090 (driver 570, CUDA 12.8): a CUDA 13 wheel needs a newer driver; a
/// cu126 torch has no sm_120.
#[test]
fn rtx5090_driver_too_old_and_old_torch() {
    let r = assess(facts(
        Some(machine("rtx5090")),
        None,
        env(Some(torch("12.6", CU126))),
        package(&["120a"], Some(13)),
    ));
    assert_eq!((r.outcome, r.problems), (Outcome::Problems, 2));
    insta::assert_snapshot!(text(&r));
}

/// GB10 (12.1, unified memory), a cu128 torch (sm_120 covers 12.1) and a wheel built
/// for 12.1: all fine. The JSON, with its stable field names.
#[test]
fn gb10_all_fine_as_json() {
    let r = assess(facts(
        Some(machine("gb10")),
        None,
        env(Some(torch("12.8", CU128))),
        package(&["121a"], Some(13)),
    ));
    assert_eq!(r.outcome, Outcome::Ok);
    insta::assert_json_snapshot!(r);
}

/// No GPU here and no --gpu: exit 2, saying to give --gpu. With --gpu rtx5090 the
/// check runs (no driver checks: that box's driver is not known here); a CPU-only
/// llama_cpp and no torch.
#[test]
fn no_gpu_needs_the_gpu_option() {
    let r = assess(facts(None, None, env(None), package(&[], None)));
    assert_eq!(r.outcome, Outcome::CannotCheck);
    assert_eq!(r.outcome.exit_code(), 3);
    insta::assert_snapshot!("no_gpu", text(&r));
    let r = assess(facts(None, Some("rtx5090"), env(None), package(&[], None)));
    assert_eq!(r.outcome, Outcome::Problems);
    insta::assert_snapshot!("cpu_only_for_rtx5090", text(&r));
}

#[test]
fn gpu_option_takes_names_and_capabilities() {
    let g = |s: &str| s.parse::<GpuChoice>().map(|g| (g.name, g.arch.to_string()));
    assert_eq!(g("rtx5090"), Ok(("rtx5090".into(), "120".into())));
    assert_eq!(g("DGX Spark"), Ok(("gb10".into(), "121".into())));
    assert_eq!(g("12.0"), Ok(("12.0".into(), "120".into())));
    assert_eq!(g("90"), Ok(("9.0".into(), "90".into())));
    let e = g("rtx9090").unwrap_err();
    assert!(
        e.contains("unknown GPU `rtx9090`") && e.contains("12.0 or 120"),
        "{e}"
    );
    insta::assert_snapshot!("unknown_gpu_choice", e);
    // As nvidia-smi prints them, for a box read off another machine's `nvidia-smi -L`.
    assert_eq!(
        g("NVIDIA GeForce RTX 4060 Laptop GPU"),
        Ok(("rtx4060".into(), "89".into()))
    );
    assert_eq!(g("Tesla T4"), Ok(("t4".into(), "75".into())));
}

/// A package dir without any library (a broken install): not called CPU-only, but
/// said to be unchecked, and the outcome is "could not check".
#[test]
fn a_package_without_libraries_is_not_checked() {
    let mut empty = package(&[], None);
    empty.libraries.clear();
    let r = assess(facts(None, Some("rtx5090"), env(None), empty));
    assert_eq!(r.outcome, Outcome::CannotCheck);
    assert!(r.packages[0].gpus.is_empty());
    assert!(
        text(&r).contains("llama_cpp: no shared library (.so or .dll) found in /v/lib/python3.12/site-packages/llama_cpp; reinstall the package"),
        "{}",
        text(&r)
    );
}

/// Nothing installed: exit 0, but said plainly, not just "all fine".
#[test]
fn nothing_installed_says_so() {
    let mut e = env(None);
    e.llama_cpp = None;
    let mut f = facts(None, Some("h100"), e, package(&[], None));
    f.llama_cpp = None;
    let r = assess(f);
    assert_eq!(r.outcome, Outcome::Ok);
    assert!(
        text(&r).ends_with("all fine: nothing to check (llama_cpp, torch and bitsandbytes are not installed in this Python)\n"),
        "{}",
        text(&r)
    );
}

/// bitsandbytes: the library for torch's CUDA decides (`libbitsandbytes_cuda128.so`
/// for 12.8); without torch's CUDA, the best library; no device code: CPU-only.
#[test]
fn bitsandbytes_follows_torchs_cuda() {
    let lib = |name: &str, sass: &[&str]| {
        let mut r = package(sass, None);
        r.libraries[0].path = format!("bitsandbytes/{name}");
        r.libraries.remove(0)
    };
    let mut bnb = package(&[], None);
    bnb.libraries = vec![
        lib("libbitsandbytes_cuda118.so", &["80", "86", "90"]),
        lib("libbitsandbytes_cuda128.so", &["90", "100", "120"]),
        lib("libbitsandbytes_cpu.so", &[]),
    ];
    let v = |cuda: Option<&str>, gpu: &str| {
        let got = verdict::bitsandbytes(&bnb, cuda, gpu.parse().unwrap());
        serde_json::to_value(got).unwrap()["verdict"].clone()
    };
    assert_eq!(v(Some("12.8"), "120"), "natively");
    assert_eq!(v(Some("11.8"), "120"), "no_kernel_image");
    assert_eq!(v(Some("11.8"), "90"), "natively");
    assert_eq!(v(None, "120"), "natively", "the best library");
    assert_eq!(
        v(Some("12.6"), "120"),
        "natively",
        "no cuda126 library: the best"
    );
    let mut cpu = package(&[], None);
    cpu.libraries[0].path = "bitsandbytes/libbitsandbytes_cpu.so".into();
    let got = verdict::bitsandbytes(&cpu, Some("12.8"), "120".parse().unwrap());
    assert_eq!(got, Verdict::CpuOnly);
    // Through assess: its fix is pip's.
    let mut e = env(Some(torch("11.8", &["sm_80", "sm_86", "sm_90"])));
    e.bitsandbytes = Some(python::Package {
        dir: "/v/lib/python3.12/site-packages/bitsandbytes".into(),
        version: Some("0.44.1".into()),
        manifest: None,
    });
    let mut f = facts(None, Some("rtx5090"), e, package(&["120a"], Some(12)));
    f.bitsandbytes = Some(Ok(bnb.clone()));
    let r = assess(f);
    let b = &r.packages[2];
    assert_eq!(b.name, "bitsandbytes");
    assert_eq!(b.gpus[0].verdict, Verdict::NoKernelImage);
    assert_eq!(
        b.gpus[0].fix,
        ["/v/bin/python -m pip install -U bitsandbytes"]
    );
}

/// A package's libraries for another CPU than must load them. From an x86-64 box with an
/// x86-64 sm_121a wheel, `--gpu gb10`: every DGX Spark is aarch64, so it would not load
/// there; the fix builds with `--arch gb10` (an aarch64 wheel) and installs it there.
/// On the Spark itself (Python aarch64): the same x86-64 wheel is refused for this Python,
/// and an aarch64 sm_121a one runs natively.
#[test]
fn a_package_for_another_cpu_is_refused_by_name() {
    let x86 = package(&["121a"], Some(13));
    let r = assess(facts(None, Some("dgx-spark"), env(None), x86.clone()));
    assert_eq!(r.outcome, Outcome::Problems);
    let t = text(&r);
    for want in [
        "will not load: its libraries are x86_64 code, and every DGX Spark (GB10) is aarch64",
        "cargo xtask wheel llama-cpp-python --arch gb10 --cuda 13.5",
        "on the aarch64 machine: python -m pip install --force-reinstall llama_cpp_python-*+cu135.sm121a-py3-none-*_aarch64.whl",
    ] {
        assert!(t.contains(want), "{want}\n{t}");
    }
    let spark = || PythonEnv {
        platform: "Linux-6.11.0-1016-nvidia-aarch64-with-glibc2.39".into(),
        machine: Some("aarch64".into()),
        ..env(None)
    };
    let r = assess(facts(Some(machine("gb10")), None, spark(), x86));
    assert_eq!(r.outcome, Outcome::Problems);
    assert!(
        text(&r)
            .contains("will not load: its libraries are x86_64 code, and this Python is aarch64"),
        "{}",
        text(&r)
    );
    let mut arm = package(&["121a"], Some(13));
    arm.libraries[0].arch = Some(crate::platform::Arch::Aarch64);
    let r = assess(facts(Some(machine("gb10")), None, spark(), arm.clone()));
    assert_eq!(r.outcome, Outcome::Ok, "{}", text(&r));
    // And `--gpu gb10` from anywhere accepts the aarch64 wheel.
    let r = assess(facts(None, Some("gb10"), env(None), arm));
    assert_eq!(r.outcome, Outcome::Ok, "{}", text(&r));
}

/// What the Python says (a package's version, an import error) cannot add a line or an
/// escape sequence to doctor's text: each value is escaped.
#[test]
fn the_pythons_words_are_escaped() {
    let mut e = env(Some(python::Torch {
        error: Some("ImportError\n    ok on 9.0: fake\x1b[2K".into()),
        ..torch("12.8", CU128)
    }));
    e.llama_cpp.as_mut().unwrap().version = Some("0.3.16\r\x1b[1A".into());
    let t = text(&assess(facts(
        None,
        Some("rtx5090"),
        e,
        package(&["120a"], Some(13)),
    )));
    assert!(!t.contains('\x1b') && !t.contains('\r'), "{t:?}");
    assert!(
        t.contains("ImportError\\n    ok on 9.0: fake\\x1b[2K") && t.contains("0.3.16\\r\\x1b[1A"),
        "{t}"
    );
    assert!(
        !t.lines()
            .any(|l| l.trim_start().starts_with("ok on 9.0: fake")),
        "{t}"
    );
}

/// The RTX 5090 with another driver (`max_cuda`: what its banner would say).
fn rtx5090_with_driver(driver: &str, max_cuda: &str) -> Machine {
    Machine {
        driver: Some(driver.parse().unwrap()),
        max_cuda: Some(max_cuda.into()),
        ..machine("rtx5090")
    }
}

/// A wheel installed without our manifest, its CUDA release in its version's label.
fn labelled(version: &str) -> PythonEnv {
    let mut e = env(None);
    e.llama_cpp.as_mut().unwrap().version = Some(version.into());
    e
}

/// Driver 575 and a cu130 wheel with no manifest: the floor is CUDA 13.0's (580.65.06,
/// from the label, not libcudart.so.13's 580), named in the text and the JSON; the fixes
/// are both: the 580 branch, or a CUDA 12.9 build (the newest 575 runs), installed from
/// NVIDIA first.
#[test]
fn driver_575_with_a_cu130_wheel() {
    let r = assess(facts(
        Some(rtx5090_with_driver("575.64.03", "12.9")),
        None,
        labelled("0.3.16+cu130.sm120a"),
        package(&["120a"], Some(13)),
    ));
    assert_eq!((r.outcome, r.problems), (Outcome::Problems, 1));
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(
        json["packages"][0]["driver_floor"],
        serde_json::json!({
            "linux": "580",
            "windows": "580",
            "from": "its version's label cu130 (CUDA 13.0; no llama-forge manifest)",
            "source": "version_label"
        })
    );
    insta::assert_snapshot!(text(&r));
}

/// The fixes by driver, for a cu130 wheel on the RTX 5090: 572 builds with CUDA 12.8,
/// 560 runs no release this tool builds with (update only), 580.95 runs it (fine).
#[test]
fn driver_fixes_follow_the_newest_release_it_runs() {
    let fixes = |driver: &str, max: &str| {
        let r = assess(facts(
            Some(rtx5090_with_driver(driver, max)),
            None,
            labelled("0.3.16+cu130.sm120a"),
            package(&["120a"], Some(13)),
        ));
        (r.outcome, r.packages[0].gpus[0].fix.clone())
    };
    let (outcome, fix) = fixes("572.16", "12.8");
    assert_eq!(outcome, Outcome::Problems);
    assert_eq!(
        fix,
        [
            "update the NVIDIA driver to 580 or newer",
            "or build for this driver with CUDA 12.9, the newest release driver 572.16 runs; CUDA 12.9 cannot come from the package index (NVIDIA's nvidia-cuda-nvcc-cu12 wheels hold no nvcc): install the CUDA 12.9 toolkit from NVIDIA first; `--cuda 12.9` then finds it (or add --cuda-path DIR):",
            "cargo xtask wheel llama-cpp-python --arch 120 --cuda 12.9",
            "/v/bin/python -m pip install --force-reinstall dist/llama_cpp_python-*+cu129.sm120a-py3-none-*.whl",
        ]
    );
    let (outcome, fix) = fixes("560.35.03", "12.6");
    assert_eq!(outcome, Outcome::Problems);
    assert_eq!(
        fix,
        [
            "update the NVIDIA driver to 580 or newer",
            "no build runs on driver 560.35.03 with this GPU: the first NVIDIA driver for compute capability 12.0 is 570.26 (CUDA 12.8's, the first release that builds for it)",
        ]
    );
    let (outcome, fix) = fixes("580.95.05", "13.0");
    assert_eq!((outcome, fix), (Outcome::Ok, vec![]));
}

/// Our manifest's floor wins over the label and the runtime; the label over the
/// runtime; a version without a CUDA label keeps what inspect read.
#[test]
fn the_manifest_then_the_label_then_the_runtime() {
    let min = |linux: &str, source| MinDriver {
        linux: linux.parse().unwrap(),
        windows: linux.parse().unwrap(),
        from: "x".into(),
        source,
    };
    let manifest = min("570.26", FloorSource::Manifest);
    let runtime = min("580", FloorSource::CudaRuntime);
    let floor = |read: Option<&MinDriver>, v: &str| {
        verdict::driver_floor(read, Some(v)).map(|m| (m.linux.to_string(), m.source))
    };
    let label = ("580".to_string(), FloorSource::VersionLabel);
    assert_eq!(
        floor(Some(&manifest), "0.3.16+cu130.sm120a"),
        Some(("570.26".into(), FloorSource::Manifest))
    );
    assert_eq!(
        floor(Some(&runtime), "0.3.16+cu130.sm120a"),
        Some(label.clone())
    );
    assert_eq!(floor(None, "0.3.16+cu130"), Some(label));
    assert_eq!(
        floor(Some(&runtime), "0.3.16"),
        Some(("580".into(), FloorSource::CudaRuntime))
    );
    assert_eq!(floor(None, "0.3.16+cpu"), None);
}
