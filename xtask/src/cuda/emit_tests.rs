use super::*;

fn v(s: &str) -> CudaVersion {
    s.parse().unwrap()
}

fn a(s: &str) -> CudaArch {
    s.parse().unwrap()
}

fn err(cuda: &str, arch: &str) -> String {
    match can_emit(&v(cuda), &a(arch)) {
        Err(e) => e.to_string(),
        Ok(ok) => panic!("CUDA {cuda} + {arch}: expected an error, got {ok:?}"),
    }
}

#[test]
fn known_targets_are_ok() {
    for (cuda, arch) in [
        ("12.8", "120a"),
        ("12.8.93", "120"),
        ("12.9", "121a"),
        ("12.9", "120f"),
        ("13.0", "110a"),
        ("13.0", "88"),
        ("13.2", "121f"),
        ("13.4", "107a"),
        ("13.5", "107f"),
        ("12.8", "50"),
        ("12.9", "101f"),
    ] {
        assert_eq!(
            can_emit(&v(cuda), &a(arch)),
            Ok(EmitSupport::Known),
            "{cuda} {arch}"
        );
    }
}

#[test]
fn too_old_cuda_names_the_releases_that_can() {
    assert_eq!(
        err("12.6", "120"),
        "CUDA 12.6 cannot emit sm_120: needs CUDA >= 12.8 (12.8, 12.9, 13.0, 13.1, 13.2, 13.3, 13.4, 13.5 can)"
    );
    assert_eq!(
        err("12.8", "121a"),
        "CUDA 12.8 cannot emit sm_121a: needs CUDA >= 12.9 (12.9, 13.0, 13.1, 13.2, 13.3, 13.4, 13.5 can)"
    );
    assert_eq!(
        err("12.8", "120f"),
        "CUDA 12.8 cannot emit sm_120f: needs CUDA >= 12.9 (12.9, 13.0, 13.1, 13.2, 13.3, 13.4, 13.5 can)"
    );
    assert_eq!(
        err("12.9", "88"),
        "CUDA 12.9 cannot emit sm_88: needs CUDA >= 13.0 (13.0, 13.1, 13.2, 13.3, 13.4, 13.5 can)"
    );
}

#[test]
fn thor_under_cuda_12_points_at_the_old_name() {
    assert_eq!(
        err("12.9", "110a"),
        "CUDA 12.9 cannot emit sm_110a: needs CUDA >= 13.0 (13.0, 13.1, 13.2, 13.3, 13.4, 13.5 can); CUDA 12.9 calls this GPU sm_101a"
    );
    // 12.6 has no sm_101 either, so no hint.
    assert_eq!(
        err("12.6", "110"),
        "CUDA 12.6 cannot emit sm_110: needs CUDA >= 13.0 (13.0, 13.1, 13.2, 13.3, 13.4, 13.5 can)"
    );
}

#[test]
fn dropped_targets_say_which_release_still_has_them() {
    assert_eq!(
        err("13.0", "61"),
        "sm_61 was dropped in CUDA 13.0 (oldest is sm_75); use CUDA 12.9 or older"
    );
    assert_eq!(err("13.1", "70"), "CUDA 13.1 cannot emit sm_70: it was dropped in CUDA 13.0 (oldest is sm_75); use CUDA 12.9 or older");
    assert_eq!(
        err("14.0", "50"),
        "CUDA 14.0 cannot emit sm_50: it was dropped in CUDA 13.0 (oldest is sm_75); use CUDA 12.9 or older"
    );
}

#[test]
fn renamed_targets_point_at_the_new_name() {
    assert_eq!(
        err("13.0", "101a"),
        "CUDA 13.0 cannot emit sm_101a: it was renamed sm_110a in CUDA 13.0; ask for 110a, or use CUDA 12.9 or older for sm_101a"
    );
    assert!(err("13.2", "101").contains("renamed sm_110 in CUDA 13.0"));
}

#[test]
fn impossible_variants_list_where_the_suffix_exists() {
    assert_eq!(
        err("13.0", "86a"),
        "CUDA 13.0 cannot emit sm_86a: no CUDA release in the nvcc support table (12.8..13.5) can; \
         the `a` suffix exists only for 90, 100, 101, 103, 107, 110, 120, 121"
    );
    assert!(err("13.0", "90f")
        .ends_with("the `f` suffix exists only for 100, 101, 103, 107, 110, 120, 121"));
    assert!(err("13.0", "95").ends_with("check the compute capability"));
}

#[test]
fn newer_cuda_is_allowed_but_untested() {
    let got = can_emit(&v("13.6"), &a("120a")).unwrap();
    assert_eq!(
        got,
        EmitSupport::Untested(Untested::NotInTable {
            cuda: v("13.6"),
            like: v("13.5")
        })
    );
    let EmitSupport::Untested(u) = got else {
        unreachable!()
    };
    assert!(
        u.to_string()
            .contains("assuming it emits what CUDA 13.5 does (untested"),
        "{u}"
    );
    let got = can_emit(&v("14.0"), &a("130")).unwrap();
    assert!(
        matches!(got, EmitSupport::Untested(Untested::UnknownArch { .. })),
        "{got:?}"
    );
}

#[test]
fn older_cuda_is_untested_for_old_archs_only() {
    let got = can_emit(&v("12.6"), &a("86")).unwrap();
    assert_eq!(
        got,
        EmitSupport::Untested(Untested::OlderThanTable {
            cuda: v("12.6"),
            oldest: v("12.8"),
            arch: a("86")
        })
    );
    assert!(can_emit(&v("12.4"), &a("90a")).is_ok());
    assert!(can_emit(&v("12.4"), &a("100a")).is_err());
}
