use super::*;
use crate::cuda::NvccVersion;
use crate::plan::{
    make,
    tests::{fake_tools, opts},
    Package,
};
use crate::recipe::Recipe;
use crate::request::Accelerator;

pub(crate) fn toolkit(root: &str, nvcc_version: &str) -> Toolkit {
    let out = format!("nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release {}, V{nvcc_version}\n", &nvcc_version[..nvcc_version.rfind('.').unwrap()]);
    Toolkit {
        root: root.into(),
        nvcc: format!("{root}/bin/nvcc").into(),
        version: NvccVersion::from_nvcc_output(&out).unwrap(),
        origin: Origin::System,
        cuobjdump: Some((
            format!("{root}/bin/cuobjdump").into(),
            nvcc_version.parse().unwrap(),
        )),
        found_by: "test".into(),
        cuda_path_flag: false,
        lacks_target: None,
    }
}

fn plan_for(
    arch: &str,
    toolkits: Vec<Toolkit>,
    gcc: &str,
    tweak: impl Fn(&mut crate::plan::Options),
) -> Result<crate::plan::Plan, PlanError> {
    let r = crate::recipe::fixture("llama-cpp-python");
    let mut o = opts(&["311"]);
    o.accelerator = arch.parse::<Accelerator>().unwrap();
    tweak(&mut o);
    let mut t = fake_tools(&o.cache);
    t.cuda = toolkits;
    t.compiler.as_mut().unwrap().version = gcc.parse().unwrap();
    t.patchelf = t.ninja.clone();
    make(&r, snapshot_release(&r), &t, &o)
}

fn define<'a>(p: &'a crate::plan::Plan, name: &str) -> &'a str {
    &p.defines
        .iter()
        .find(|d| d.name == name)
        .unwrap_or_else(|| panic!("no {name}"))
        .value
}

#[test]
fn rtx50_gets_120a_real_and_runtime_wheels() {
    let p = plan_for(
        "rtx5060ti",
        vec![toolkit("/usr/local/cuda-13.0", "13.0.88")],
        "12.2.0",
        |_| {},
    )
    .unwrap();
    assert_eq!(define(&p, "CMAKE_CUDA_ARCHITECTURES"), "120a-real");
    assert_eq!(define(&p, "GGML_CUDA"), "ON");
    assert_eq!(define(&p, "CUDAToolkit_ROOT"), "/usr/local/cuda-13.0");
    assert!(!define(&p, "CMAKE_CUDA_FLAGS").contains("allow-unsupported"));
    let c = p.cuda.as_ref().unwrap();
    assert_eq!(c.waiver, None);
    assert_eq!(
        c.requires,
        ["nvidia-cuda-runtime>=13.0,<14", "nvidia-cublas>=13.0,<14"]
    );
    assert_eq!(c.runpath, ["$ORIGIN", "$ORIGIN/../../nvidia/cu13/lib"]);
    assert_eq!(
        c.min_driver.as_ref().map(|d| d.to_string()).as_deref(),
        Some("580")
    );
    let Package::Wheel {
        local,
        libraries,
        requires,
        ..
    } = &p.package
    else {
        panic!()
    };
    assert_eq!(local.to_string(), "cu130.sm120a");
    assert!(libraries.contains(&"ggml-cuda".to_string()));
    assert_eq!(requires, &c.requires);
    insta::assert_json_snapshot!("cuda_plan_rtx5060ti", c);
}

#[test]
fn newer_gcc_than_nvcc_accepts_gets_a_recorded_waiver() {
    let p = plan_for(
        "120",
        vec![toolkit("/usr/local/cuda-12.9", "12.9.86")],
        "15.1.0",
        |_| {},
    )
    .unwrap();
    assert!(define(&p, "CMAKE_CUDA_FLAGS").starts_with("-allow-unsupported-compiler "));
    assert!(p
        .cuda
        .as_ref()
        .unwrap()
        .waiver
        .as_ref()
        .unwrap()
        .contains("15"));
    let p = plan_for(
        "120",
        vec![toolkit("/usr/local/cuda-13.0", "13.0.88")],
        "15.1.0",
        |_| {},
    )
    .unwrap();
    assert!(
        p.cuda.as_ref().unwrap().waiver.is_none(),
        "gcc 15 is in range for 13.0"
    );
}

#[test]
fn targets_the_nvcc_cannot_emit_are_refused_with_the_versions_that_can() {
    let e = plan_for(
        "120",
        vec![toolkit("/usr/local/cuda-12.6", "12.6.85")],
        "12.2.0",
        |_| {},
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("12.8") && e.contains("12.6"), "{e}");
    let e = plan_for(
        "61",
        vec![toolkit("/usr/local/cuda-13.0", "13.0.88")],
        "12.2.0",
        |_| {},
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("sm_61") && e.contains("13.0"), "{e}");
}

#[test]
fn sm100_for_an_rtx50_is_warned_about() {
    let p = plan_for(
        "100",
        vec![toolkit("/usr/local/cuda-13.0", "13.0.88")],
        "12.2.0",
        |_| {},
    )
    .unwrap();
    let c = p.cuda.unwrap();
    assert_eq!(c.architectures.to_string(), "100a-real");
    assert!(
        c.warnings.iter().any(|w| w.contains("not an RTX 50")),
        "{:?}",
        c.warnings
    );
}

#[test]
fn cuda_flag_picks_among_several_toolkits() {
    let tks = vec![
        toolkit("/usr/local/cuda-13.0", "13.0.88"),
        toolkit("/usr/local/cuda-12.8", "12.8.93"),
    ];
    let p = plan_for("120", tks.clone(), "12.2.0", |o| {
        o.cuda_release = Some("12.8".parse().unwrap())
    })
    .unwrap();
    let c = p.cuda.unwrap();
    assert_eq!(c.release.to_string(), "12.8");
    assert_eq!(
        c.requires,
        [
            "nvidia-cuda-runtime-cu12>=12.8,<13",
            "nvidia-cublas-cu12>=12.8,<13"
        ]
    );
    let e = plan_for("120", tks, "12.2.0", |o| {
        o.cuda_release = Some("12.9".parse().unwrap())
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("--cuda 12.9") && e.contains("13.0.88"), "{e}");
    let e = plan_for("120", vec![], "12.2.0", |_| {})
        .unwrap_err()
        .to_string();
    assert!(e.contains("no nvcc found"), "{e}");
}

/// `toolkit`, given with `--cuda-path`.
fn given(root: &str, nvcc_version: &str) -> Toolkit {
    Toolkit {
        cuda_path_flag: true,
        found_by: "--cuda-path".into(),
        ..toolkit(root, nvcc_version)
    }
}

/// `toolkit`, offered from the pinned wheels (not installed on this machine).
fn offer(release: &str, nvcc_version: &str) -> Toolkit {
    let origin = Origin::PinnedSet {
        file: format!("toolchains/cuda-{release}.toml"),
        sha256: "ab".repeat(32).parse().unwrap(),
    };
    Toolkit {
        origin,
        found_by: "pinned wheels".into(),
        ..toolkit(&format!("/cache/cuda/{nvcc_version}"), nvcc_version)
    }
}

#[test]
fn cuda_path_is_binding_and_its_refusal_says_what_it_emits_and_what_to_use() {
    // A 12.6 for sm_120: refused, not swapped for the 13.0 that could be provisioned.
    let e = plan_for(
        "120",
        vec![given("/opt/cuda-12.6", "12.6.85"), offer("13.0", "13.0.88")],
        "12.2.0",
        |_| {},
    )
    .unwrap_err()
    .to_string();
    for want in [
        "--cuda-path /opt/cuda-12.6: nvcc 12.6.85 at /opt/cuda-12.6/bin/nvcc cannot build --arch 120",
        "CUDA 12.6 cannot emit sm_120a: needs CUDA >= 12.8",
        "nvcc 12.6 emits at most sm_50 to sm_90",
        "no other is tried",
        "use CUDA 12.8, 12.9, 13.0, 13.1, 13.2, 13.3, 13.4 or 13.5",
        "`cargo xtask toolchains install cuda 13.5`",
    ] {
        assert!(e.contains(want), "{want}: {e}");
    }
    // A 12.8 for sm_121 (GB10): the same, with 12.8's own targets.
    let e = plan_for(
        "121",
        vec![
            given("/opt/cuda-12.8", "12.8.93"),
            toolkit("/usr/local/cuda-13.0", "13.0.88"),
        ],
        "12.2.0",
        |_| {},
    )
    .unwrap_err()
    .to_string();
    for want in [
        "--cuda-path /opt/cuda-12.8: nvcc 12.8.93",
        "needs CUDA >= 12.9",
        "nvcc 12.8 emits sm_50 to sm_120 (",
        "use CUDA 12.9, 13.0, 13.1, 13.2, 13.3, 13.4 or 13.5",
    ] {
        assert!(e.contains(want), "{want}: {e}");
    }
    // --cuda naming another release than the toolkit given: both are binding, so they disagree.
    let e = plan_for(
        "120",
        vec![
            given("/opt/cuda-13.1", "13.1.115"),
            toolkit("/usr/local/cuda-13.0", "13.0.88"),
        ],
        "12.2.0",
        |o| o.cuda_release = Some("13.0".parse().unwrap()),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains(
            "--cuda 13.0 and --cuda-path /opt/cuda-13.1 (nvcc 13.1.115, CUDA 13.1) disagree"
        ),
        "{e}"
    );
    // One that can: used, even after another in the list.
    let p = plan_for(
        "120",
        vec![
            toolkit("/usr/local/cuda-13.1", "13.1.115"),
            given("/opt/cuda-13.0", "13.0.88"),
        ],
        "12.2.0",
        |_| {},
    )
    .unwrap();
    let c = p.cuda.unwrap();
    assert_eq!(
        (c.root.as_str(), c.release.to_string().as_str()),
        ("/opt/cuda-13.0", "13.0")
    );
    assert_eq!(c.skipped.len(), 1);
    assert_eq!(c.skipped[0].reason, "--cuda-path /opt/cuda-13.0 was given");
}

#[test]
fn cuda_release_is_binding_and_its_refusal_names_the_releases_that_can() {
    let tks = vec![
        toolkit("/usr/local/cuda-12.8", "12.8.93"),
        offer("13.0", "13.0.88"),
        offer("13.1", "13.1.115"),
    ];
    let e = plan_for("121", tks, "12.2.0", |o| {
        o.cuda_release = Some("12.8".parse().unwrap())
    })
    .unwrap_err()
    .to_string();
    for want in [
        "--cuda 12.8: nvcc 12.8.93 at /usr/local/cuda-12.8/bin/nvcc cannot build --arch 121",
        "needs CUDA >= 12.9",
        "nvcc 12.8 emits sm_50 to sm_120",
        "ask for --cuda 13.1 or 13.0",
        "or leave --cuda out",
    ] {
        assert!(e.contains(want), "{want}: {e}");
    }
    // Nothing here can: the support table says which release to get.
    let e = plan_for(
        "121",
        vec![toolkit("/usr/local/cuda-12.8", "12.8.93")],
        "12.2.0",
        |o| o.cuda_release = Some("12.8".parse().unwrap()),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("use CUDA 12.9, 13.0, 13.1, 13.2, 13.3, 13.4 or 13.5 (CUDA 13.5 can come from the package index"),
        "{e}"
    );
}

#[test]
fn skipped_toolkits_are_named_with_their_reason_but_not_hashed() {
    let tks = vec![
        toolkit("/usr/local/cuda-12.8", "12.8.93"),
        toolkit("/usr/local/cuda-12.9", "12.9.86"),
        toolkit("/usr/local/cuda-13.0", "13.0.88"),
        offer("13.1", "13.1.115"),
    ];
    let p = plan_for("121", tks.clone(), "12.2.0", |_| {}).unwrap();
    let c = p.cuda.as_ref().unwrap();
    assert_eq!(c.release.to_string(), "12.9");
    let skipped: Vec<(&str, &str)> = c
        .skipped
        .iter()
        .map(|s| (s.root.as_str(), s.reason.as_str()))
        .collect();
    assert_eq!(
        skipped.len(),
        2,
        "the pinned offer was not found here: not listed: {skipped:#?}"
    );
    assert_eq!(
        skipped[0],
        (
            "/usr/local/cuda-12.8",
            "CUDA 12.8 cannot emit sm_121a: needs CUDA >= 12.9 (12.9, 13.0, 13.1, 13.2, 13.3, 13.4, 13.5 can)"
        )
    );
    assert_eq!(skipped[1].0, "/usr/local/cuda-13.0");
    assert!(skipped[1].1.starts_with("found after the one used (nvcc 12.9.86 at /usr/local/cuda-12.9, found by test); give --cuda-path /usr/local/cuda-13.0"), "{skipped:#?}");
    assert_eq!(c.skipped[0].nvcc.to_string(), "12.8.93");
    // Printed as warnings by plan/wheel/build; in the plan JSON.
    let w = crate::commands::build::plan_warnings(&p);
    assert!(w.contains(&"CUDA toolkit skipped: nvcc 12.8.93 at /usr/local/cuda-12.8 (found by test): CUDA 12.8 cannot emit sm_121a: needs CUDA >= 12.9 (12.9, 13.0, 13.1, 13.2, 13.3, 13.4, 13.5 can)".to_string()), "{w:#?}");
    let json = serde_json::to_value(&p).unwrap();
    assert_eq!(json["cuda"]["skipped"][0]["root"], "/usr/local/cuda-12.8");
    // What else is installed changes neither the hash nor what the artifact records.
    let alone = plan_for(
        "121",
        vec![toolkit("/usr/local/cuda-12.9", "12.9.86")],
        "12.2.0",
        |_| {},
    )
    .unwrap();
    assert!(alone.cuda.as_ref().unwrap().skipped.is_empty());
    assert_eq!(p.hash(), alone.hash());
    assert_eq!(p.recorded(), alone.recorded());
    assert!(
        serde_json::to_value(alone.cuda.as_ref().unwrap())
            .unwrap()
            .get("skipped")
            .is_none(),
        "not written when empty"
    );
    // --cuda: the other releases are skipped for that reason.
    let p = plan_for("120", tks, "12.2.0", |o| {
        o.cuda_release = Some("13.0".parse().unwrap())
    })
    .unwrap();
    let c = p.cuda.unwrap();
    assert_eq!(c.root, "/usr/local/cuda-13.0");
    assert_eq!(
        c.skipped
            .iter()
            .map(|s| s.reason.as_str())
            .collect::<Vec<_>>(),
        [
            "not CUDA 13.0 (--cuda 13.0 was given)",
            "not CUDA 13.0 (--cuda 13.0 was given)"
        ]
    );
}

/// A CUDA install as the Windows installer lays it out; nvcc's version output is recorded.
fn windows_toolkit(release: &str, nvcc_fixture: &str) -> Toolkit {
    let root = format!(r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v{release}");
    let out = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/toolchains")
            .join(nvcc_fixture),
    )
    .unwrap();
    let version = NvccVersion::from_nvcc_output(&out).unwrap();
    Toolkit {
        nvcc: format!(r"{root}\bin\nvcc.exe").into(),
        cuobjdump: Some((
            format!(r"{root}\bin\cuobjdump.exe").into(),
            version.nvcc.into(),
        )),
        root: root.into(),
        version,
        origin: Origin::System,
        found_by: "CUDA_PATH".into(),
        cuda_path_flag: false,
        lacks_target: None,
    }
}

/// A fixed release, not the newest: the snapshots stay put when a recipe gains a release.
fn snapshot_release(r: &Recipe) -> &crate::recipe::Release {
    r.release(Some(&"0.3.36".parse().unwrap())).unwrap()
}

fn windows_plan(
    toolkit: Toolkit,
    host: crate::platform::msvc::env::MsvcToolsetEnv,
    others: Vec<crate::platform::msvc::env::MsvcToolsetEnv>,
) -> crate::plan::Plan {
    use crate::plan::tests::fake_windows_tools;
    let r = crate::recipe::fixture("llama-cpp-python");
    let mut o = opts(&["311"]);
    o.accelerator = "120".parse::<Accelerator>().unwrap();
    o.target = crate::platform::Target::WINDOWS_MSVC;
    let mut t = fake_windows_tools(host, others);
    t.cuda = vec![toolkit];
    make(&r, snapshot_release(&r), &t, &o).unwrap()
}

/// What the host compiler policy decided and everything it touched.
fn policy_view(p: &crate::plan::Plan) -> serde_json::Value {
    let c = p.cuda.as_ref().unwrap();
    let env = |n: &str| {
        p.env
            .iter()
            .find(|e| e.name == n)
            .map(|e| serde_json::json!([e.value, e.reason]))
    };
    serde_json::json!({
        "cxx": p.tools.cxx,
        "msvc": p.tools.msvc,
        "host_policy": c.host_policy,
        "waiver": c.waiver,
        "flags": c.flags,
        "CMAKE_CUDA_FLAGS": define(p, "CMAKE_CUDA_FLAGS"),
        "CMAKE_CUDA_HOST_COMPILER": define(p, "CMAKE_CUDA_HOST_COMPILER"),
        "CMAKE_CXX_COMPILER": define(p, "CMAKE_CXX_COMPILER"),
        "VCToolsVersion": env("VCToolsVersion"),
    })
}

#[test]
fn windows_cuda_13_0_with_vs2026_switches_to_the_installed_14_44_toolset() {
    use crate::plan::tests::{vs2022_14_29, vs2026_14_44, vs2026_14_50};
    let p = windows_plan(
        windows_toolkit("13.0", "nvcc-13.0.88-version.txt"),
        vs2026_14_50(),
        vec![vs2026_14_44(), vs2022_14_29()],
    );
    let c = p.cuda.as_ref().unwrap();
    assert!(
        c.host_policy
            .starts_with("use MSVC toolset 14.44.35207: MSVC 19.50.35717 (_MSC_VER 1950)"),
        "{}",
        c.host_policy
    );
    assert_eq!(c.waiver, None);
    let cl = r"C:\Program Files\Microsoft Visual Studio\18\Community\VC\Tools\MSVC\14.44.35207\bin\HostX64\x64\cl.exe";
    assert_eq!(
        (
            define(&p, "CMAKE_CXX_COMPILER"),
            define(&p, "CMAKE_CUDA_HOST_COMPILER")
        ),
        (cl, cl)
    );
    assert_eq!(
        (p.tools.cxx.path.as_str(), p.tools.cxx.version.to_string()),
        (cl, "19.44.35211".into())
    );
    let flags = define(&p, "CMAKE_CUDA_FLAGS");
    assert_eq!(flags, "-D_WINDOWS -Xcompiler=/EHsc -Xcompiler=/Zc:preprocessor -objtemp -Xcompiler=/Brepro -Xcompiler=/d1trimfile:${SRC}");
    let env = |n: &str| p.env.iter().find(|e| e.name == n).unwrap();
    assert_eq!(env("VCToolsVersion").value, "14.44.35207");
    assert_eq!(
        env("INCLUDE").reason,
        "from vcvars64.bat -vcvars_ver=14.44 (Visual Studio Community 2026)"
    );
    assert!(env("LIB").value.contains(r"MSVC\14.44.35207\lib\x64"));
    assert_eq!(c.launcher, None);
    assert!(c.runpath.is_empty());
    assert!(
        c.warnings.iter().any(|w| w.contains("--frandom-seed")),
        "{:?}",
        c.warnings
    );
    assert_eq!(p.tools.patchelf, None);
    let json = serde_json::to_string(&p).unwrap();
    for linux in [
        "ffile-prefix-map",
        "${REPO}/toolchains/nvcc-seed.sh",
        "$ORIGIN",
        "LC_ALL",
        "/usr/bin",
    ] {
        assert!(!json.contains(linux), "{linux} in a Windows plan");
    }
    insta::assert_json_snapshot!("windows_cuda_plan_use_toolset", p);
}

#[test]
fn windows_without_an_in_range_toolset_gets_a_recorded_waiver() {
    use crate::plan::tests::vs2026_14_50;
    let p = windows_plan(
        windows_toolkit("13.0", "nvcc-13.0.88-version.txt"),
        vs2026_14_50(),
        vec![],
    );
    let c = p.cuda.as_ref().unwrap();
    assert!(define(&p, "CMAKE_CUDA_FLAGS").starts_with("-allow-unsupported-compiler -D_WINDOWS "));
    let w = c.waiver.as_ref().unwrap();
    assert!(
        w.contains("_MSC_VER 1950")
            && w.contains("install an in-range MSVC toolset")
            && w.contains("or use CUDA 13.2"),
        "{w}"
    );
    assert_eq!(
        crate::commands::build::plan_warnings(&p)[0],
        format!("host compiler waiver (recorded in the manifest): {w}")
    );
    insta::assert_json_snapshot!("windows_cuda_plan_waiver", policy_view(&p));
}

#[test]
fn windows_in_range_injects_nothing_and_keeps_the_host_toolset() {
    use crate::plan::tests::{vs2026_14_44, vs2026_14_50};
    // CUDA 13.2 takes VS 2026: the 14.44 toolset beside it does not matter.
    let p = windows_plan(
        windows_toolkit("13.2", "nvcc-13.2.86-version.txt"),
        vs2026_14_50(),
        vec![vs2026_14_44()],
    );
    let c = p.cuda.as_ref().unwrap();
    assert_eq!(
        c.host_policy,
        "MSVC 19.50.35717 is supported by nvcc 13.2: nothing injected"
    );
    assert_eq!(c.waiver, None);
    assert!(!define(&p, "CMAKE_CUDA_FLAGS").contains("allow-unsupported"));
    assert_eq!(
        p.tools.msvc.as_ref().unwrap().toolset.to_string(),
        "14.50.35717"
    );
    insta::assert_json_snapshot!("windows_cuda_plan_in_range", policy_view(&p));
}

/// The MSVC matrix the Windows release job builds: VS 2022 (its 14.44 toolset) and
/// VS 2026 (14.50, alone or with VS 2022's 14.44 toolset installed beside it) against
/// CUDA 12.8, 12.9, 13.0 and 13.1: which cl.exe nvcc gets, and whether the plan
/// switches toolset, injects the waiver, or nothing. Recorded vswhere/vcvars/cl/nvcc
/// outputs, not a build: no Windows machine ran these plans.
#[test]
fn windows_msvc_matrix_vs2022_vs2026_cuda_12_8_to_13_1() {
    use crate::plan::tests::{vs2022_14_29, vs2022_14_44, vs2026_14_44, vs2026_14_50};
    let cudas = [
        ("12.8", "nvcc-12.8.93-version.txt"),
        ("12.9", "nvcc-12.9.86-version.txt"),
        ("13.0", "nvcc-13.0.88-version.txt"),
        ("13.1", "nvcc-13.1.115-version.txt"),
    ];
    // The host toolset first, then the others installed.
    let hosts = [
        (
            "VS 2022 14.44 (14.29 beside)",
            [vs2022_14_44(), vs2022_14_29()].to_vec(),
        ),
        ("VS 2026 14.50 alone", [vs2026_14_50()].to_vec()),
        (
            "VS 2026 14.50 (14.44 beside)",
            [vs2026_14_50(), vs2026_14_44()].to_vec(),
        ),
    ];
    let mut all = serde_json::Map::new();
    for (host, toolsets) in hosts {
        for (cuda, fixture) in cudas {
            let mut t = toolsets.clone();
            let first = t.remove(0);
            let p = windows_plan(windows_toolkit(cuda, fixture), first, t);
            let c = p.cuda.as_ref().unwrap();
            // The waiver flag is in the flags exactly when a waiver is recorded.
            assert_eq!(
                define(&p, "CMAKE_CUDA_FLAGS").contains("-allow-unsupported-compiler"),
                c.waiver.is_some(),
                "{host} / CUDA {cuda}"
            );
            assert_eq!(
                define(&p, "CMAKE_CUDA_HOST_COMPILER"),
                define(&p, "CMAKE_CXX_COMPILER")
            );
            all.insert(
                format!("{host} / CUDA {cuda}"),
                serde_json::json!({
                    "host_policy": c.host_policy,
                    "waiver": c.waiver.is_some(),
                    "cl": p.tools.cxx.version.to_string(),
                    "VCToolsVersion": p.env.iter().find(|e| e.name == "VCToolsVersion").map(|e| e.value.clone()),
                    "CMAKE_CUDA_FLAGS": define(&p, "CMAKE_CUDA_FLAGS"),
                }),
            );
        }
    }
    insta::assert_json_snapshot!("windows_msvc_matrix", all);
}

#[test]
fn bundled_runtime_has_no_requirements_and_origin_only_runpath() {
    let p = plan_for(
        "120,121",
        vec![toolkit("/usr/local/cuda-13.1", "13.1.115")],
        "12.2.0",
        |o| o.cuda_runtime = RuntimeMode::Bundled,
    )
    .unwrap();
    let c = p.cuda.as_ref().unwrap();
    assert!(c.requires.is_empty());
    assert_eq!(c.runpath, ["$ORIGIN"]);
    assert_eq!(
        c.bundle,
        ["libcudart.so.13", "libcublas.so.13", "libcublasLt.so.13"]
    );
    assert!(
        !c.bundle.iter().any(|b| b.starts_with("libcuda.")),
        "never libcuda"
    );
    assert_eq!(c.architectures.to_string(), "120a-real;121a-real");
    let Package::Wheel { local, .. } = &p.package else {
        panic!()
    };
    assert_eq!(local.to_string(), "cu131.sm120a.sm121a");
}

/// The typed fields (architectures, release, min_driver) serialise as the text
/// they were before, and a plan read back is the same plan, byte for byte.
#[test]
fn typed_cuda_fields_serialise_as_their_text_and_round_trip() {
    let p = plan_for(
        "120,121",
        vec![toolkit("/usr/local/cuda-13.1", "13.1.115")],
        "12.2.0",
        |_| {},
    )
    .unwrap();
    let json = serde_json::to_value(p.cuda.as_ref().unwrap()).unwrap();
    assert_eq!(json["architectures"], "120a-real;121a-real");
    assert_eq!(json["release"], "13.1");
    assert_eq!(
        json["min_driver"], "580",
        "13.1's SASS runs on 13.x's floor"
    );
    let text = serde_json::to_string(&p).unwrap();
    let back: crate::plan::Plan = serde_json::from_str(&text).unwrap();
    assert_eq!(back, p);
    assert_eq!(serde_json::to_string(&back).unwrap(), text);
}

/// Every release offered from the package index has its pin file; newest first.
/// The one suggested is the newest that passed the GPU check.
#[test]
fn pinned_releases_are_the_pin_files_newest_first() {
    let all: Vec<CudaVersion> = PINNED_RELEASES.iter().map(|r| r.parse().unwrap()).collect();
    assert!(all.windows(2).all(|w| w[0] > w[1]), "{all:?}");
    for r in PINNED_RELEASES {
        let file = format!("cuda-{r}.toml");
        assert_eq!(
            crate::provision::hermetic::toolkit_file(&r.parse().unwrap()),
            Ok(file)
        );
    }
    assert_eq!(pinned_list("and"), "13.0, 13.1, 13.2, 13.3, 13.4 and 13.5");
    let e = plan_for("120", vec![], "12.2.0", |o| {
        o.cuda_release = Some("13.6".parse().unwrap())
    })
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("(CUDA 13.0, 13.1, 13.2, 13.3, 13.4 and 13.5 can also come from the package index: `cargo xtask toolchains install cuda 13.5`)"),
        "{e}"
    );
    // CUDA 12 is never offered from the index: the message says why and what to do.
    let e = plan_for("120", vec![], "12.2.0", |o| {
        o.cuda_release = Some("12.9".parse().unwrap())
    })
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("--cuda 12.9: no toolkit of that release here (found: none installed); CUDA 12 cannot come from the package index (NVIDIA's nvidia-cuda-nvcc-cu12 wheels hold ptxas and libnvvm, no nvcc): install the CUDA 12.9 toolkit from NVIDIA, which runs on driver 525.60.13 or newer, and give --cuda-path DIR if it is not found; or leave --cuda out for CUDA 13.5 from the package index, which runs on driver 580 or newer (pinned there: 13.0, 13.1, 13.2, 13.3, 13.4 and 13.5)"),
        "{e}"
    );
}

/// No toolkit installed: of the pinned offers (in `hermetic_offers` order: the
/// GPU-checked first), the newest GPU-checked release is taken (13.5), for sm_120,
/// sm_121 and sm_107. `--cuda` naming a release that has not passed the GPU check
/// (13.4) gets a warning saying so; naming a checked one (13.0) does not.
#[test]
fn without_an_installed_toolkit_the_newest_gpu_checked_release_is_taken() {
    assert_eq!(default_release(), "13.5");
    assert_eq!(
        offer_order().collect::<Vec<_>>(),
        ["13.5", "13.0", "13.4", "13.3", "13.2", "13.1"]
    );
    let offers = || {
        vec![
            offer("13.5", "13.5.37"),
            offer("13.0", "13.0.88"),
            offer("13.4", "13.4.92"),
            offer("13.3", "13.3.73"),
            offer("13.2", "13.2.86"),
            offer("13.1", "13.1.115"),
        ]
    };
    let unchecked = |c: &PlannedCuda| {
        c.warnings
            .iter()
            .filter(|w| w.contains("has not passed the GPU token check"))
            .cloned()
            .collect::<Vec<_>>()
    };
    for arch in ["120", "121", "107"] {
        let p = plan_for(arch, offers(), "12.2.0", |_| {}).unwrap();
        let c = p.cuda.as_ref().unwrap();
        assert_eq!(
            (c.release.to_string().as_str(), c.root.as_str()),
            ("13.5", "/cache/cuda/13.5.37"),
            "{arch}"
        );
        assert!(c.skipped.is_empty(), "offers are not listed as skipped");
        assert_eq!(unchecked(c), Vec::<String>::new(), "{arch}");
    }
    let named = |release: &str| {
        let p = plan_for("120", offers(), "12.2.0", |o| {
            o.cuda_release = Some(release.parse().unwrap())
        })
        .unwrap();
        unchecked(p.cuda.as_ref().unwrap())
    };
    assert_eq!(
        named("13.4"),
        ["CUDA 13.4 from the package index has not passed the GPU token check (that a wheel built with it gives the CPU's tokens on a GPU; passed: 13.5 and 13.0): check the artifact on a GPU before you ship it"]
    );
    assert_eq!(named("13.0"), Vec::<String>::new());
    // An installed toolkit that can comes first, and is not warned about: it is
    // the user's own.
    let mut tks = vec![toolkit("/usr/local/cuda-13.1", "13.1.115")];
    tks.extend(offers());
    let p = plan_for("120", tks, "12.2.0", |_| {}).unwrap();
    assert_eq!(p.cuda.as_ref().unwrap().release.to_string(), "13.1");
    assert_eq!(unchecked(p.cuda.as_ref().unwrap()), Vec::<String>::new());
}

/// A wheel built with CUDA 13.N requires the unsuffixed runtime wheels, each from
/// what 13.N ships up to 14: the runtime by the CUDA release, cuBLAS by its own
/// number (13.10 with 13.5). The pinned 13.5 from the index and a system 13.5 alike.
#[test]
fn requires_name_the_runtime_wheels_of_the_release() {
    let want = |cuda: &str, cublas: &str| {
        vec![
            format!("nvidia-cuda-runtime>={cuda},<14"),
            format!("nvidia-cublas>={cublas},<14"),
        ]
    };
    for tk in [
        offer("13.5", "13.5.37"),
        toolkit("/usr/local/cuda-13.5", "13.5.37"),
    ] {
        let p = plan_for("120", vec![tk], "12.2.0", |_| {}).unwrap();
        let c = p.cuda.as_ref().unwrap();
        assert_eq!(c.release.to_string(), "13.5");
        assert_eq!(c.requires, want("13.5", "13.10"));
        let Package::Wheel {
            local, requires, ..
        } = &p.package
        else {
            panic!()
        };
        assert_eq!(local.to_string(), "cu135.sm120a");
        assert_eq!(requires, &c.requires);
    }
    for (nvcc, cuda, cublas) in [
        ("13.0.88", "13.0", "13.0"),
        ("13.1.115", "13.1", "13.1"),
        ("13.2.86", "13.2", "13.4"),
        ("13.3.73", "13.3", "13.6"),
        ("13.4.92", "13.4", "13.8"),
        ("13.6.20", "13.6", "13.6"),
    ] {
        let p = plan_for("120", vec![toolkit("/opt/cuda", nvcc)], "12.2.0", |_| {}).unwrap();
        assert_eq!(p.cuda.unwrap().requires, want(cuda, cublas), "{nvcc}");
    }
    let p = plan_for(
        "120",
        vec![toolkit("/usr/local/cuda-12.9", "12.9.86")],
        "12.2.0",
        |_| {},
    )
    .unwrap();
    assert_eq!(
        p.cuda.unwrap().requires,
        [
            "nvidia-cuda-runtime-cu12>=12.9,<13",
            "nvidia-cublas-cu12>=12.9,<13"
        ]
    );
}

/// The floors agree with the pins: each pinned runtime and cuBLAS wheel has the
/// major.minor its requirement starts at, so the wheels the toolkit was built from
/// satisfy what the artifact requires.
#[test]
fn requires_floors_are_the_pinned_wheels() {
    let toolchains = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../toolchains");
    for r in PINNED_RELEASES {
        let cuda: CudaVersion = r.parse().unwrap();
        let spec =
            crate::provision::hermetic::CudaSpec::load(&toolchains, &r.parse().unwrap()).unwrap();
        let major_minor = |name: &str| {
            let w = spec.wheels.iter().find(|w| w.name == name).unwrap();
            let p = w.version.parts();
            CudaVersion::new(p[0] as u32, p[1] as u32)
        };
        assert_eq!(major_minor("nvidia-cuda-runtime"), cuda, "{r}");
        assert_eq!(major_minor("nvidia-cublas"), cublas_release(&cuda), "{r}");
    }
}

/// `--arch gb10` for linux-aarch64, cross-built on x86-64 with the pinned cross toolchain
/// and an aarch64 toolkit: 121a-real only, the runtime wheels as for x86 (NVIDIA builds
/// them for aarch64 too), nvcc's host passes in the aarch64 sysroot, and every link
/// finds the aarch64 CUDA libraries through -rpath-link (never written into a file).
#[test]
fn gb10_cross_builds_121a_for_aarch64_against_the_sbsa_runtime() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let pinned =
        crate::provision::gcc::Pinned::load_origin(&root, crate::provision::gcc::FILE_AARCH64)
            .unwrap();
    let r = crate::recipe::fixture("llama-cpp-python");
    let mut o = opts(&["312"]);
    o.accelerator = "gb10".parse::<Accelerator>().unwrap();
    o.target = crate::platform::Target::LINUX_AARCH64;
    let mut t = fake_tools(&o.cache);
    t.cuda = vec![toolkit("/c/cuda/13.0.88-aarch64", "13.0.88")];
    t.compiler = Some(pinned.compiler(&o.cache));
    t.patchelf = t.ninja.clone();
    let p = make(&r, snapshot_release(&r), &t, &o).unwrap();
    assert_eq!(define(&p, "CMAKE_CUDA_ARCHITECTURES"), "121a-real");
    assert_eq!(define(&p, "CMAKE_SYSTEM_PROCESSOR"), "aarch64");
    assert!(define(&p, "CMAKE_CUDA_HOST_COMPILER").ends_with("aarch64-linux-gnu-g++-12"));
    assert!(define(&p, "CMAKE_CUDA_FLAGS")
        .contains("-Xcompiler=--sysroot=${CACHE}/tools/gcc-12.2.0-aarch64"));
    for n in [
        "CMAKE_SHARED_LINKER_FLAGS",
        "CMAKE_MODULE_LINKER_FLAGS",
        "CMAKE_EXE_LINKER_FLAGS",
    ] {
        assert!(
            define(&p, n)
                .ends_with("-Wl,-rpath-link,/c/cuda/13.0.88-aarch64/targets/sbsa-linux/lib"),
            "{n}: {}",
            define(&p, n)
        );
    }
    let c = p.cuda.as_ref().unwrap();
    assert_eq!(
        c.requires,
        ["nvidia-cuda-runtime>=13.0,<14", "nvidia-cublas>=13.0,<14"]
    );
    assert!(c
        .runpath
        .iter()
        .any(|r| r == "$ORIGIN/../../nvidia/cu13/lib"));
    assert_eq!(c.label, "cu130");
    // An x86-64 build of the same plan has no -rpath-link.
    let mut x86 = o.clone();
    x86.target = crate::platform::Target::LINUX_X86_64;
    let mut t86 = fake_tools(&x86.cache);
    t86.cuda = vec![toolkit("/usr/local/cuda-13.0", "13.0.88")];
    t86.patchelf = t86.ninja.clone();
    let p86 = make(&r, snapshot_release(&r), &t86, &x86).unwrap();
    assert!(p86.defines.iter().all(|d| !d.value.contains("rpath-link")));
}

#[test]
fn a_cuda_release_not_here_lists_installed_toolkits_apart_from_the_index_offers() {
    let tks = vec![offer("13.0", "13.0.88"), offer("13.5", "13.5.37")];
    let e = plan_for("120", tks, "12.2.0", |o| {
        o.cuda_release = Some("12.8".parse().unwrap())
    })
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("--cuda 12.8: no toolkit of that release here (found: none installed; pinned on the package index: 13.0.88, 13.5.37)"),
        "{e}"
    );
    let tks = vec![
        toolkit("/usr/local/cuda-13.0", "13.0.88"),
        offer("13.5", "13.5.37"),
    ];
    let e = plan_for("120", tks, "12.2.0", |o| {
        o.cuda_release = Some("12.8".parse().unwrap())
    })
    .unwrap_err()
    .to_string();
    assert!(
        e.contains(
            "(found: 13.0.88 at /usr/local/cuda-13.0; pinned on the package index: 13.5.37)"
        ),
        "{e}"
    );
}

/// The driver seen on this machine picks the default release (issue 30): the first
/// toolkit, in discovery order, that builds the targets and that the driver runs
/// (the release's minimum driver: 12.8 570.26, 12.9 575.51.03, 13.0 580.65.06, 13.2 to
/// 13.5 580); with no driver seen, the first that builds them. The reason is in
/// `cuda.driver`, which, like `cuda.skipped`, is not hashed: the same build chosen
/// with and without a driver is one plan.
#[test]
fn the_driver_seen_here_picks_the_release_it_runs() {
    let tks = || {
        vec![
            toolkit("/usr/local/cuda-13.0", "13.0.88"),
            toolkit("/usr/local/cuda-12.9", "12.9.86"),
            toolkit("/usr/local/cuda-12.8", "12.8.93"),
            offer("13.5", "13.5.37"),
        ]
    };
    let with = |driver: Option<&str>, tks: Vec<Toolkit>| {
        plan_for("120", tks, "12.2.0", |o| {
            o.driver = driver.map(|d| d.parse().unwrap())
        })
        .unwrap()
    };
    let release = |p: &crate::plan::Plan| p.cuda.as_ref().unwrap().release.to_string();
    let floor = |p: &crate::plan::Plan| {
        p.cuda
            .as_ref()
            .unwrap()
            .min_driver
            .as_ref()
            .unwrap()
            .to_string()
    };
    let note = |p: &crate::plan::Plan| p.cuda.as_ref().unwrap().driver.clone();

    // No driver (a build box): the first found, and the plan names its floor.
    let none = with(None, tks());
    assert_eq!(
        (release(&none), floor(&none)),
        ("13.0".into(), "580".into())
    );
    assert_eq!(note(&none), None);

    // 580: 13.0 runs there; nothing passed over.
    let d580 = with(Some("580.65.06"), tks());
    assert_eq!(release(&d580), "13.0");
    let n = note(&d580).unwrap();
    assert_eq!(
        n.choice,
        "driver 580.65.06 runs CUDA <= 13.5: using CUDA 13.0 (nvcc 13.0.88, test)"
    );
    assert_eq!(n.warning, None);
    assert_eq!(d580.hash(), none.hash(), "the driver is not hashed");
    assert_eq!(d580.recorded(), none.recorded());

    // 575: 13.x needs 580, so 12.9, with the cu12 runtime wheels and their dirs.
    let d575 = with(Some("575.64.03"), tks());
    assert_eq!(
        (release(&d575), floor(&d575)),
        ("12.9".into(), "525.60.13".into())
    );
    let c = d575.cuda.as_ref().unwrap();
    assert_eq!(
        c.requires,
        [
            "nvidia-cuda-runtime-cu12>=12.9,<13",
            "nvidia-cublas-cu12>=12.9,<13"
        ]
    );
    assert_eq!(
        c.runpath,
        [
            "$ORIGIN",
            "$ORIGIN/../../nvidia/cuda_runtime/lib",
            "$ORIGIN/../../nvidia/cublas/lib"
        ]
    );
    assert_eq!(c.label, "cu129");
    assert_eq!(
        note(&d575).unwrap().choice,
        "driver 575.64.03 runs CUDA <= 12.9: using CUDA 12.9 (nvcc 12.9.86, test); CUDA 13.0 (test) needs driver 580 or newer"
    );
    assert_eq!(note(&d575).unwrap().warning, None);
    assert!(
        c.skipped.iter().any(|s| s.root == "/usr/local/cuda-13.0"),
        "{:?}",
        c.skipped
    );

    // 570: every 12.x runs there (12.x's floor 525.60.13), so the newest, 12.9.
    let d570 = with(Some("570.133.07"), tks());
    assert_eq!(
        (release(&d570), floor(&d570)),
        ("12.9".into(), "525.60.13".into())
    );
    assert_eq!(
        note(&d570).unwrap().choice,
        "driver 570.133.07 runs CUDA <= 12.9: using CUDA 12.9 (nvcc 12.9.86, test); CUDA 13.0 (test) needs driver 580 or newer"
    );
    assert_eq!(d570.cuda.as_ref().unwrap().label, "cu129");

    // 570 with only the package index's releases (all 13.x): 13.5 is still planned, with
    // a warning naming both fixes; so is a --cuda the driver cannot run.
    let offers_only = with(Some("570.133.07"), vec![offer("13.5", "13.5.37")]);
    assert_eq!(release(&offers_only), "13.5");
    let n = note(&offers_only).unwrap();
    assert_eq!(
        n.choice,
        "driver 570.133.07 runs CUDA <= 12.9: no toolkit here or on the package index that builds --arch 120 is one it runs: using CUDA 13.5 (nvcc 13.5.37, pinned wheels)"
    );
    let w = n.warning.unwrap();
    assert!(
        w.contains("driver 570.133.07 cannot run what this builds (CUDA 13.5 needs 580 or newer)")
            && w.contains("update the NVIDIA driver to 580 or newer; or build for this driver with CUDA 12.9 (`--cuda 12.9`): install the CUDA 12.9 toolkit from NVIDIA"),
        "{w}"
    );
    assert!(crate::pipeline::plan_warnings(&offers_only).contains(&w));
    assert_eq!(
        offers_only.hash(),
        with(None, vec![offer("13.5", "13.5.37")]).hash()
    );
    let given = plan_for("120", tks(), "12.2.0", |o| {
        o.driver = Some("575.64.03".parse().unwrap());
        o.cuda_release = Some("13.0".parse().unwrap());
    })
    .unwrap();
    assert_eq!(release(&given), "13.0");
    let n = note(&given).unwrap();
    assert!(n.choice.contains("--cuda 13.0 was given"), "{}", n.choice);
    assert!(
        n.warning
            .as_deref()
            .unwrap()
            .contains("or build for this driver with CUDA 12.9 (`--cuda 12.9`)"),
        "{n:?}"
    );
}

/// A version's local label names its CUDA release as `label` writes it, and the one
/// table gives the floors: `+cu130` 580.65.06, `+cu128` 570.26; 575.64.03 runs up to
/// 12.9, 572.16 up to 12.8, 560.35.03 nothing the table has.
#[test]
fn label_release_reads_labels_back() {
    let rel = |v: &str| label_release(v).map(|r| r.to_string());
    assert_eq!(rel("0.3.16+cu130.sm120a").as_deref(), Some("13.0"));
    assert_eq!(rel("0.3.4+cu128").as_deref(), Some("12.8"));
    assert_eq!(rel("0.2.90+cpu.v3_cu92").as_deref(), Some("9.2"));
    assert_eq!(rel("0.3.16+cpu.v3"), None);
    assert_eq!(rel("0.3.16"), None);
    assert_eq!(rel("0.3.16+cuda"), None);
    for r in ["12.8", "13.0", "13.5"] {
        let r: CudaVersion = r.parse().unwrap();
        assert_eq!(label_release(&format!("1.0+{}.sm90", label(r))), Some(r));
    }
    let floor = |v: &str| {
        label_release(v)
            .and_then(|r| driver_floor(&r, Os::Linux))
            .map(|d| d.to_string())
    };
    // Every release of a major runs on its minor-version compatibility floor.
    assert_eq!(floor("0.3.16+cu130.sm120a").as_deref(), Some("580"));
    assert_eq!(floor("0.3.16+cu131.sm120a").as_deref(), Some("580"));
    assert_eq!(floor("0.3.4+cu128").as_deref(), Some("525.60.13"));
    assert_eq!(
        label_release("0.3.4+cu128")
            .and_then(|r| driver_floor(&r, Os::Windows))
            .map(|d| d.to_string())
            .as_deref(),
        Some("527.41")
    );
    let newest = |d: &str, os| newest_release_for(&d.parse().unwrap(), os).map(|r| r.to_string());
    assert_eq!(newest("575.64.03", Os::Linux).as_deref(), Some("12.9"));
    assert_eq!(newest("585.05", Os::Linux).as_deref(), Some("13.5"));
    assert_eq!(newest("526.98", Os::Linux).as_deref(), Some("12.9"));
    assert_eq!(newest("526.98", Os::Windows), None);
    assert_eq!(newest("520.61.05", Os::Linux), None);
}

/// ggml-cuda's template instances and short op files are compiled in groups (the plan's
/// `LLAMA_FORGE_CUDA_GROUPS`, read by the recipe's patch) only for a CUDA build whose
/// source has that patch; a CPU build or a release without the patch compiles each file
/// alone.
#[test]
fn cuda_instance_groups_need_cuda_and_the_patch() {
    const CUDA_GROUPS: &str = "LLAMA_FORGE_CUDA_GROUPS";
    let has = |p: &crate::plan::Plan| {
        p.defines
            .iter()
            .find(|d| d.name == CUDA_GROUPS)
            .map(|d| d.value.clone())
    };
    let cuda = || vec![toolkit("/usr/local/cuda-13.0", "13.0.88")];
    let p = plan_for("120", cuda(), "12.2.0", |_| {}).unwrap();
    assert_eq!(
        has(&p).as_deref(),
        Some("mmq:2,mmf:4,fattn-vec:4,fattn-mma-f16:2,fattn-tile:2,ops:7")
    );
    let patched = |p: &crate::plan::Plan| {
        crate::recipe::profile::provided(&p.source.patches, crate::recipe::Feature::CudaGroups)
    };
    assert!(patched(&p));

    let cpu = plan_for("cpu", vec![], "12.2.0", |_| {}).unwrap();
    assert_eq!(has(&cpu), None, "a CPU build compiles no CUDA");

    let r = crate::recipe::fixture("llama-cpp-python");
    let mut o = opts(&["311"]);
    o.accelerator = "120".parse::<Accelerator>().unwrap();
    let mut t = fake_tools(&o.cache);
    t.cuda = cuda();
    t.patchelf = t.ninja.clone();
    let older = r.release(Some(&"0.3.16".parse().unwrap())).unwrap();
    let p16 = make(&r, older, &t, &o).unwrap();
    assert!(!patched(&p16));
    assert_eq!(has(&p16), None, "0.3.16's recipe has no such patch");
}
