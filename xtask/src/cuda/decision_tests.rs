use super::*;
use std::path::PathBuf;

fn v(s: &str) -> CudaVersion {
    s.parse().unwrap()
}

fn host(kind: HostCompilerKind, version: &str) -> HostCompiler {
    HostCompiler {
        kind,
        version: version.parse().unwrap(),
        path: PathBuf::from("/usr/bin/cc"),
    }
}

fn ts(s: &str) -> MsvcToolset {
    s.parse().unwrap()
}

/// Short form of a decision for table rows: "in", "waiver", "toolset 14.44", "error".
fn decide(cuda: &str, kind: HostCompilerKind, version: &str, toolsets: &[&str]) -> String {
    let toolsets: Vec<MsvcToolset> = toolsets.iter().map(|t| ts(t)).collect();
    match host_compiler_decision(&v(cuda), &host(kind, version), &toolsets) {
        Ok(HostDecision::InRange) => "in".into(),
        Ok(HostDecision::Waiver { flag, .. }) => {
            assert_eq!(flag, "-allow-unsupported-compiler");
            "waiver".into()
        }
        Ok(HostDecision::UseToolset { toolset, .. }) => format!("toolset {}", toolset.vcvars_ver()),
        Err(_) => "error".into(),
    }
}

#[test]
fn every_boundary_of_the_table() {
    use HostCompilerKind::*;
    for (cuda, kind, version, want) in [
        ("12.9", Gcc, "14.2.0", "in"),
        ("12.9", Gcc, "15.1.1", "waiver"),
        ("12.8", Gcc, "14.3.0", "in"),
        ("12.8", Gcc, "15.1.1", "waiver"),
        ("13.0", Gcc, "15.1.1", "in"),
        ("13.0", Gcc, "16.0.1", "waiver"),
        ("13.2", Gcc, "15.2.0", "in"),
        ("13.2", Gcc, "16.0.1", "waiver"),
        ("12.8", Clang, "19.1.7", "in"),
        ("12.8", Clang, "20.1.8", "waiver"),
        ("12.9", Clang, "20.1.8", "waiver"),
        ("13.0", Clang, "20.1.8", "in"),
        ("13.0", Clang, "21.1.0", "waiver"),
        ("13.1", Clang, "21.1.0", "in"),
        ("13.1", Clang, "22.1.0", "waiver"),
        ("13.2", Clang, "22.1.0", "waiver"),
        ("13.3", Gcc, "15.2.0", "in"),
        ("13.3", Gcc, "16.0.1", "waiver"),
        ("13.3", Clang, "21.1.0", "in"),
        ("13.3", Clang, "22.1.0", "waiver"),
        ("13.4", Gcc, "16.0.1", "in"),
        ("13.4", Gcc, "17.0.1", "waiver"),
        ("13.4", Clang, "22.1.0", "in"),
        ("13.4", Clang, "23.1.0", "waiver"),
        ("13.5", Gcc, "16.0.1", "in"),
        ("13.5", Gcc, "17.0.1", "waiver"),
        ("13.5", Clang, "22.1.0", "in"),
        ("13.5", Clang, "23.1.0", "waiver"),
        ("13.5", Msvc, "19.59.0", "in"),
        ("13.5", Msvc, "19.60.0", "waiver"),
        ("12.9", Msvc, "19.49.0", "in"),
        ("12.9", Msvc, "19.50.35717", "waiver"),
        ("12.9", Msvc, "19.10.25017", "in"),
        ("12.8", Msvc, "19.0.24215", "error"),
        ("13.0", Msvc, "19.10.25017", "error"),
        ("13.0", Msvc, "19.19.27043", "error"),
        ("13.0", Msvc, "19.20.27508", "in"),
        ("13.1", Msvc, "19.49.0", "in"),
        ("13.1", Msvc, "19.50.35717", "waiver"),
        ("13.2", Msvc, "19.49.0", "in"),
        ("13.2", Msvc, "19.50.35717", "in"),
        ("13.2", Msvc, "19.59.0", "in"),
        ("13.2", Msvc, "19.60.0", "waiver"),
        ("13.2", Msvc, "19.19.0", "error"),
    ] {
        assert_eq!(
            decide(cuda, kind, version, &[]),
            want,
            "CUDA {cuda} + {kind} {version}"
        );
    }
}

#[test]
fn an_installed_in_range_toolset_beats_the_waiver() {
    use HostCompilerKind::Msvc;
    let installed = ["14.50.35717", "14.38.33130", "14.44.35207"];
    assert_eq!(
        decide("13.1", Msvc, "19.50.35717", &installed),
        "toolset 14.44"
    );
    assert_eq!(
        decide("13.0", Msvc, "19.10.25017", &["14.29.30133"]),
        "toolset 14.29"
    );
    // Only out-of-range toolsets installed: still a waiver.
    assert_eq!(
        decide("13.1", Msvc, "19.50.35717", &["14.50.35717", "14.51.1"]),
        "waiver"
    );
    // In range: the other toolsets do not matter.
    assert_eq!(decide("13.2", Msvc, "19.50.35717", &installed), "in");
    let got = host_compiler_decision(&v("13.1"), &host(Msvc, "19.50.35717"), &[ts("14.44.35207")])
        .unwrap();
    let HostDecision::UseToolset { reason, .. } = got else {
        panic!("{got:?}")
    };
    assert!(
        reason.contains("_MSC_VER 1920..1949, VS 2019-2022")
            && reason.contains("-vcvars_ver=14.44"),
        "{reason}"
    );
}

#[test]
fn waiver_reasons_say_what_would_be_better() {
    let reason = |cuda: &str, kind, version: &str| match host_compiler_decision(
        &v(cuda),
        &host(kind, version),
        &[],
    ) {
        Ok(HostDecision::Waiver { reason, .. }) => reason,
        other => panic!("{other:?}"),
    };
    let r = reason("12.9", HostCompilerKind::Gcc, "15.1.1");
    assert!(
        r.contains("(gcc <= 14)")
            && r.contains(
                "use a host compiler within gcc <= 14 (CUDAHOSTCXX / -ccbin), or CUDA 13.0"
            ),
        "{r}"
    );
    let r = reason("13.0", HostCompilerKind::Gcc, "16.0.1");
    assert!(
        r.contains("within gcc <= 15 (CUDAHOSTCXX / -ccbin), or CUDA 13.4"),
        "{r}"
    );
    let r = reason("13.5", HostCompilerKind::Gcc, "17.0.1");
    assert!(
        r.contains("within gcc <= 16 (CUDAHOSTCXX / -ccbin)") && !r.contains("or CUDA"),
        "{r}"
    );
    let r = reason("13.1", HostCompilerKind::Msvc, "19.50.35717");
    assert!(
        r.contains("or use CUDA 13.2") && r.contains("skips only nvcc's version check"),
        "{r}"
    );
    let r = reason("13.6", HostCompilerKind::Clang, "23.1.0");
    assert!(r.contains("untested"), "{r}");
}

#[test]
fn errors_explain_and_suggest() {
    let e = host_compiler_decision(
        &v("13.0"),
        &host(HostCompilerKind::Msvc, "19.10.25017"),
        &[],
    )
    .unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("_MSC_VER 1910")
            && msg.contains("VS 2019 or newer (MSVC toolset 14.20 or later)"),
        "{msg}"
    );
    let e = host_compiler_decision(
        &v("13.0"),
        &host(HostCompilerKind::AppleClang, "16.0.0"),
        &[],
    )
    .unwrap_err();
    assert!(
        matches!(e, HostCompilerError::AppleClang { .. }) && e.to_string().contains("no macOS"),
        "{e}"
    );
    let e = host_compiler_decision(&v("12.6"), &host(HostCompilerKind::Gcc, "12.2.0"), &[])
        .unwrap_err();
    assert_eq!(
        e,
        HostCompilerError::CudaTooOld {
            cuda: v("12.6"),
            table: "12.8..13.5".into(),
            oldest: v("12.8")
        }
    );
}

#[test]
fn zc_preprocessor_only_for_msvc_with_cuda_13() {
    use HostCompilerKind::*;
    let flags = extra_cuda_flags(&v("13.0.88"), &host(Msvc, "19.44.35211"));
    assert_eq!(flags.len(), 1);
    assert_eq!(flags[0].flag, "-Xcompiler=/Zc:preprocessor");
    assert!(
        flags[0].to_string().contains("CUDA 13.0 CCCL"),
        "{}",
        flags[0]
    );
    assert!(extra_cuda_flags(&v("12.9"), &host(Msvc, "19.44.35211")).is_empty());
    assert!(extra_cuda_flags(&v("13.1"), &host(Gcc, "13.3.0")).is_empty());
    assert!(extra_cuda_flags(&v("13.1"), &host(Clang, "20.1.8")).is_empty());
}
