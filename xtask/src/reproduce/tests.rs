use super::*;
use crate::plan::tests::{fake_tools, opts};
use crate::recipe::Recipe;

fn recipe(name: &str) -> Recipe {
    crate::recipe::fixture(name)
}

fn archive_plan(tools: &crate::detect::toolchain::Toolchains) -> Plan {
    let r = recipe("llama.cpp");
    let o = opts(&[]);
    crate::plan::make(&r, r.release(None).unwrap(), tools, &o).unwrap()
}

fn lines(d: &[Drift]) -> Vec<String> {
    d.iter().map(|d| d.to_string()).collect()
}

#[test]
fn equal_plans_do_not_drift() {
    let o = opts(&[]);
    let p = archive_plan(&fake_tools(&o.cache));
    assert_eq!(plan_drift(&p, &p.clone()), vec![]);
}

#[test]
fn one_changed_define_is_reported_alone() {
    let o = opts(&[]);
    let a = archive_plan(&fake_tools(&o.cache));
    let mut r = recipe("llama.cpp");
    r.cmake
        .defines
        .iter_mut()
        .find(|d| d.name == "LLAMA_BUILD_SERVER")
        .unwrap()
        .value = "OFF".into();
    let b = crate::plan::make(&r, r.release(None).unwrap(), &fake_tools(&o.cache), &o).unwrap();
    assert_ne!(a.hash(), b.hash());
    assert_eq!(
        lines(&plan_drift(&a, &b)),
        ["define LLAMA_BUILD_SERVER: ON (manifest) vs OFF (here)"]
    );
}

#[test]
fn a_reworded_reason_and_a_new_define_are_named() {
    let o = opts(&[]);
    let a = archive_plan(&fake_tools(&o.cache));
    let mut b = a.clone();
    b.defines
        .iter_mut()
        .find(|d| d.name == "LLAMA_CURL")
        .unwrap()
        .reason = "no curl".into();
    b.defines.push(Setting {
        name: "GGML_LTO".into(),
        value: "ON".into(),
        reason: "smaller".into(),
        origin: crate::plan::SettingOrigin::Recipe,
    });
    let l = lines(&plan_drift(&a, &b));
    assert_eq!(l[0], "define LLAMA_CURL reason: no libcurl dependency: models are given as local files (manifest) vs no curl (here)");
    assert_eq!(l[1], "define GGML_LTO: (not set) (manifest) vs ON (here)");
    // The configure command is the defines: not reported again.
    assert_eq!(l.len(), 2, "{l:#?}");
}

#[test]
fn a_newer_compiler_is_one_version_and_one_path_drift() {
    let o = opts(&[]);
    let a = archive_plan(&fake_tools(&o.cache));
    let mut t = fake_tools(&o.cache);
    let c = t.compiler.as_mut().unwrap();
    c.version = "14.2.0".parse().unwrap();
    c.cc = "/usr/bin/gcc-14".into();
    c.cxx = "/usr/bin/g++-14".into();
    let b = archive_plan(&t);
    let d = plan_drift(&a, &b);
    assert_eq!(
        lines(&d),
        [
            "cc (gcc): 12.2.0 (manifest) vs 14.2.0 (here)",
            "cc path: /usr/bin/gcc-12 (manifest) vs /usr/bin/gcc-14 (here)",
            "cxx (gcc): 12.2.0 (manifest) vs 14.2.0 (here)",
            "cxx path: /usr/bin/g++-12 (manifest) vs /usr/bin/g++-14 (here)",
        ],
        "CMAKE_C(XX)_COMPILER are the tool paths: not repeated"
    );
    assert!(d.iter().all(|d| d.area == Area::Toolchain));
}

#[test]
fn cmake_origin_and_env_and_other_parts_are_classified() {
    let o = opts(&[]);
    let a = archive_plan(&fake_tools(&o.cache));
    let mut b = a.clone();
    b.tools.cmake.version = "3.31.6".parse().unwrap();
    b.tools.cmake.origin = crate::platform::host::Origin::System;
    b.tools.cmake.path = "/usr/bin/cmake".into();
    for c in [&mut b.commands.configure, &mut b.commands.build] {
        c[0] = "/usr/bin/cmake".into();
    }
    b.env.iter_mut().find(|e| e.name == "TZ").unwrap().value = "Europe/Paris".into();
    b.commands.build.push("--verbose".into());
    b.source_date_epoch += 1;
    let d = plan_drift(&a, &b);
    let l = lines(&d);
    assert_eq!(l[0], "cmake: 4.4.4 (manifest) vs 3.31.6 (here)");
    assert!(
        l[1].starts_with("cmake path: ${CACHE}/tools/cmake-4.4.4/"),
        "{l:?}"
    );
    assert!(l[2].starts_with("cmake origin: pinned wheel cmake.whl (sha256 abababababab) (manifest) vs system (here)"), "{l:?}");
    assert_eq!(l[3], "env TZ: UTC (manifest) vs Europe/Paris (here)");
    assert_eq!(d[3].area, Area::Env);
    assert!(
        l.contains(&format!(
            "source_date_epoch: {} (manifest) vs {} (here)",
            a.source_date_epoch, b.source_date_epoch
        )),
        "{l:?}"
    );
    assert!(
        l.iter().any(|x| x.starts_with("commands.build: ")),
        "argv lengths differ: the whole command: {l:?}"
    );
    assert!(
        !l.iter().any(|x| x.starts_with("commands.configure")),
        "argv[0] is the cmake path, reported above: {l:?}"
    );
    // The SOURCE_DATE_EPOCH env var follows source_date_epoch in real plans; here only the field moved.
    assert_eq!(
        d.iter().filter(|d| d.area == Area::Other).count(),
        2,
        "{l:?}"
    );
}

/// A GPU plan for `arch` with one system toolkit of `nvcc_version`.
fn gpu_plan(arch: &str, nvcc_version: &str, tweak: impl Fn(&mut crate::plan::Options)) -> Plan {
    let release = &nvcc_version[..nvcc_version.rfind('.').unwrap()];
    let root = format!("/usr/local/cuda-{release}");
    let out = format!("Cuda compilation tools, release {release}, V{nvcc_version}\n");
    let tk = crate::detect::cuda::Toolkit {
        nvcc: format!("{root}/bin/nvcc").into(),
        cuobjdump: Some((
            format!("{root}/bin/cuobjdump").into(),
            nvcc_version.parse().unwrap(),
        )),
        root: root.into(),
        version: crate::cuda::NvccVersion::from_nvcc_output(&out).unwrap(),
        origin: crate::platform::host::Origin::System,
        found_by: "test".into(),
        cuda_path_flag: false,
        lacks_target: None,
    };
    let r = recipe("llama.cpp");
    let mut o = opts(&[]);
    o.accelerator = arch.parse().unwrap();
    tweak(&mut o);
    let mut t = fake_tools(&o.cache);
    t.cuda = vec![tk];
    t.patchelf = t.ninja.clone();
    crate::plan::make(&r, r.release(None).unwrap(), &t, &o).unwrap()
}

#[test]
fn another_cuda_release_is_named_as_nvcc_and_cuda_policy() {
    let a = gpu_plan("120", "13.0.88", |_| {});
    let b = gpu_plan("120", "13.1.115", |_| {});
    let d = plan_drift(&a, &b);
    let l = lines(&d);
    for want in [
        "nvcc: 13.0.88 (manifest) vs 13.1.115 (here)",
        "nvcc path: /usr/local/cuda-13.0/bin/nvcc (manifest) vs /usr/local/cuda-13.1/bin/nvcc (here)",
        "cuobjdump: 13.0.88 (manifest) vs 13.1.115 (here)",
        "cuda.root: /usr/local/cuda-13.0 (manifest) vs /usr/local/cuda-13.1 (here)",
        "cuda.release: 13.0 (manifest) vs 13.1 (here)",
        "cuda.label: cu130 (manifest) vs cu131 (here)",
    ] {
        assert!(l.contains(&want.to_string()), "{want}: {l:#?}");
    }
    assert!(d.iter().any(|d| d.area == Area::Cuda));
    // CMAKE_CUDA_COMPILER and CUDAToolkit_ROOT are those paths: not repeated as defines.
    assert!(
        !l.iter()
            .any(|x| x.starts_with("define CMAKE_CUDA_COMPILER:")
                || x.starts_with("define CUDAToolkit_ROOT:")),
        "{l:#?}"
    );
}

#[test]
fn cpu_against_gpu_reports_the_cuda_section_and_defines() {
    let o = opts(&[]);
    let cpu = archive_plan(&fake_tools(&o.cache));
    let gpu = gpu_plan("120", "13.0.88", |_| {});
    let l = lines(&plan_drift(&gpu, &cpu));
    for want in [
        "nvcc: 13.0.88 (manifest) vs none (here)",
        "define GGML_CUDA: ON (manifest) vs OFF (here)",
        "accelerator: 120 (manifest) vs cpu (here)",
    ] {
        assert!(l.contains(&want.to_string()), "{want}: {l:#?}");
    }
    assert!(
        l.iter().any(|x| x
            == "cuda: CUDA 13.0 for 120a-real, runtime index-wheels (manifest) vs none (here)"),
        "{l:#?}"
    );
}

#[test]
fn json_diff_names_paths() {
    let a = serde_json::json!({"a": {"b": [1, 2, 3]}, "c": "x", "d": [1]});
    let b = serde_json::json!({"a": {"b": [1, 5, 3]}, "c": "y", "d": [1, 2], "e": true});
    let mut out = Vec::new();
    json_diff("", &a, &b, &mut out);
    let want: Vec<(String, String, String)> = [
        ("a.b[1]", "2", "5"),
        ("c", "x", "y"),
        ("d", "[1]", "[1,2]"),
        ("e", "none", "true"),
    ]
    .into_iter()
    .map(|(p, x, y)| (p.to_string(), x.to_string(), y.to_string()))
    .collect();
    assert_eq!(out, want);
}

#[test]
fn build_request_follows_the_recorded_plan() {
    let r = recipe("llama-cpp-python");
    let mut o = opts(&["311", "312"]);
    o.cpu_baseline = crate::request::CpuBaseline::V3;
    let p = crate::plan::make(
        &r,
        r.release(Some(&"0.3.16".parse().unwrap())).unwrap(),
        &fake_tools(&o.cache),
        &o,
    )
    .unwrap();
    let a = build_request(&p, None, Some("/tmp/d".into()), None).unwrap();
    assert_eq!(
        (a.recipe.as_str(), a.release.as_ref().map(|v| v.to_string())),
        ("llama-cpp-python", Some("0.3.16".to_string()))
    );
    assert_eq!(
        a.pythons.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
        ["3.11", "3.12"]
    );
    assert_eq!(a.cpu_baseline, crate::request::CpuBaseline::V3);
    assert!(!a.ptx && a.cuda.is_none() && !a.bundle_cuda_runtime && a.source.is_none());
    assert!(
        build_request(&p, Some("/x/src.tar.gz".into()), None, None)
            .unwrap()
            .source
            .is_some(),
        "an offline copy of the pinned sdist"
    );

    let mut local = p.clone();
    local.source.kind = crate::plan::SourceKind::Local;
    local.source.location = "/home/ann/llama.cpp".into();
    let e = build_request(&local, None, None, None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("/home/ann/llama.cpp") && e.contains("--source"),
        "{e}"
    );
    assert!(
        build_request(&local, Some("/elsewhere/llama.cpp".into()), None, None)
            .unwrap()
            .source
            .is_some()
    );

    for bad in ["../../etc/x", "/etc/x", "..", ""] {
        let mut hostile = p.clone();
        hostile.recipe = bad.into();
        let e = build_request(&hostile, None, None, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains(&format!("recipe is {bad:?}")), "{e}");
    }
}

#[test]
fn build_request_for_gpu_plans_name_release_ptx_and_runtime() {
    let p = gpu_plan("rtx5090", "13.0.88", |_| {});
    let a = build_request(&p, None, None, None).unwrap();
    assert_eq!(a.cuda.map(|c| c.to_string()).as_deref(), Some("13.0"));
    assert_eq!(a.accelerator.to_string(), "rtx5090");
    assert!(!a.ptx && !a.bundle_cuda_runtime);
    let p = gpu_plan("120", "13.0.88", |o| {
        o.ptx = true;
        o.cuda_runtime = crate::plan::cuda::RuntimeMode::Bundled;
    });
    let a = build_request(&p, None, None, None).unwrap();
    assert!(
        a.ptx && a.bundle_cuda_runtime,
        "{}",
        p.cuda.as_ref().unwrap().architectures
    );
}

#[test]
fn file_diffs_sizes_and_bytes() {
    let e = |size: u64, c: char| FileEntry {
        size,
        sha256: c.to_string().repeat(64).parse().unwrap(),
    };
    let rec: BTreeMap<String, FileEntry> = [
        ("libllama.so", e(100, 'a')),
        ("libggml.so", e(50, 'b')),
        ("old.txt", e(3, 'c')),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let new: BTreeMap<String, FileEntry> = [
        ("libllama.so", e(108, 'd')),
        ("libggml.so", e(50, 'b')),
        ("new.txt", e(4, 'e')),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let mut d = diff_files(&rec, &new);
    assert_eq!(
        d.iter().map(|d| d.path.as_str()).collect::<Vec<_>>(),
        ["libllama.so", "new.txt", "old.txt"]
    );
    assert_eq!(
        differing_bytes(b"abcdef", b"abXdeY"),
        2,
        "same size: bytes at the same offset"
    );
    assert_eq!(
        differing_bytes(b"abcdef", b"abcXYZdef"),
        3,
        "an insertion: the span inserted"
    );
    assert_eq!(differing_bytes(b"abcdef", b"abc"), 3);
    assert_eq!(
        differing_bytes(b"aaaa", b"aaaaaa"),
        2,
        "prefix and suffix may not overlap"
    );
    d[0].differing_bytes = Some(differing_bytes(b"abcdef", b"abXdefgh"));
    assert_eq!(d[0].differing_bytes, Some(6));
    assert_eq!(
        table(&d),
        "file         manifest  rebuilt          delta  differing bytes\n\
         libllama.so       100      108             +8                6\n\
         new.txt             -        4   only rebuilt                -\n\
         old.txt             3        -  only manifest                -\n"
    );
}

#[test]
fn the_artifact_name_must_be_a_plain_wheel_or_archive_name() {
    for ok in [
        "llama.cpp-0.3.36-cpu-linux-x86_64.tar.gz",
        "llama.cpp-0.3.36-cpu-windows-x86_64.zip",
        "llama_cpp_python-0.3.36+cpu-cp312-cp312-manylinux_2_35_x86_64.whl",
    ] {
        check_artifact_name(ok).unwrap();
    }
    for bad in [
        "../../etc/passwd",
        "/etc/passwd",
        "sub/llama.cpp-0.3.36-cpu-linux-x86_64.tar.gz",
        "../llama.cpp-0.3.36-cpu-linux-x86_64.tar.gz",
        "..",
        ".",
        "",
        ".hidden.tar.gz",
        ".tar.gz",
        "x\\..\\y.tar.gz",
        "llama.cpp-0.3.36.rar",
        "sub/llama.cpp-0.3.36-cpu-windows-x86_64.zip",
        ".zip",
        "not-a-wheel.whl",
        "a b.tar.gz",
    ] {
        let e = check_artifact_name(bad).unwrap_err().to_string();
        assert!(
            e.contains(&format!("{bad:?}")) && e.contains("never a path"),
            "{bad}: {e}"
        );
    }
}

#[test]
fn picks_the_same_name_else_the_same_python() {
    let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let rebuilt = names(&[
        "llama_cpp_python-0.3.36+cpu-cp311-cp311-manylinux_2_35_x86_64.whl",
        "llama_cpp_python-0.3.36+cpu-cp312-cp312-manylinux_2_35_x86_64.whl",
    ]);
    assert_eq!(
        pick_artifact(
            "llama_cpp_python-0.3.36+cpu-cp312-cp312-manylinux_2_35_x86_64.whl",
            &rebuilt
        ),
        Some(1)
    );
    assert_eq!(
        pick_artifact(
            "llama_cpp_python-0.3.36+cpu-cp312-cp312-manylinux_2_34_x86_64.whl",
            &rebuilt
        ),
        Some(1)
    );
    assert_eq!(
        pick_artifact(
            "llama_cpp_python-0.3.36+cpu-cp313-cp313-manylinux_2_34_x86_64.whl",
            &rebuilt
        ),
        None
    );
    assert_eq!(
        pick_artifact(
            "llama.cpp-0.3.36-cpu-linux-x86_64.tar.gz",
            &names(&["llama.cpp-0.3.36-cpu.v3-linux-x86_64.tar.gz"])
        ),
        Some(0)
    );
}

/// A manifest from another commit of the tool is named with how to check it out; from this
/// one, nothing (unless its tree was dirty); a commit that is not an id is not repeated.
#[test]
fn a_manifest_from_another_commit_is_named() {
    use crate::manifest::ToolInfo;
    let tool = |commit: Option<&str>, dirty: Option<bool>| ToolInfo {
        name: "llama-forge (cargo xtask)".into(),
        version: "0.1.0".into(),
        commit: commit.map(str::to_string),
        dirty,
    };
    let this = tool(Some("c089832abcde"), Some(false));
    assert_eq!(super::tool_note(&tool(None, None), &this), None);
    assert_eq!(
        super::tool_note(&tool(Some("c089832abcde"), Some(false)), &this),
        None
    );
    let n = super::tool_note(&tool(Some("148b86c00000"), Some(false)), &this).unwrap();
    assert!(
        n.starts_with(
            "the manifest was made by llama-forge at commit 148b86c00000; this is c089832abcde."
        ) && n.contains("`git fetch && git checkout 148b86c00000`"),
        "{n}"
    );
    let n = super::tool_note(&tool(Some("c089832abcde"), Some(true)), &this).unwrap();
    assert!(n.contains("with changes not committed"), "{n}");
    let n = super::tool_note(&tool(Some("$(rm -rf ~)"), None), &this).unwrap();
    assert!(!n.contains("rm"), "{n}");
}
