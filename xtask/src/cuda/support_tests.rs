use super::*;

fn v(s: &str) -> CudaVersion {
    s.parse().unwrap()
}

fn nums(archs: &[CudaArch]) -> Vec<u32> {
    archs.iter().map(CudaArch::number).collect()
}

#[test]
fn builtin_table_lists_the_expected_releases() {
    let t = SupportTable::builtin();
    let names: Vec<String> = t.releases.iter().map(|r| r.cuda.to_string()).collect();
    assert_eq!(
        names,
        ["12.8", "12.9", "13.0", "13.1", "13.2", "13.3", "13.4", "13.5"]
    );
    assert_eq!(t.range(), "12.8..13.5");
}

/// FIELD-NOTES section 2 (checked against crt/host_config.h of each release; 13.3 to
/// 13.5 read from the nvidia-cuda-crt wheels 13.3.73, 13.4.92, 13.5.37).
#[test]
fn builtin_host_compiler_limits() {
    let t = SupportTable::builtin();
    let rows: Vec<(String, u32, u32, u32, u32)> = t
        .releases
        .iter()
        .map(|r| {
            (
                r.cuda.to_string(),
                r.max_gcc,
                r.max_clang,
                r.msvc.min,
                r.msvc.max,
            )
        })
        .collect();
    let want = [
        ("12.8", 14, 19, 1910, 1949),
        ("12.9", 14, 19, 1910, 1949),
        ("13.0", 15, 20, 1920, 1949),
        ("13.1", 15, 21, 1920, 1949),
        ("13.2", 15, 21, 1920, 1959),
        ("13.3", 15, 21, 1920, 1959),
        ("13.4", 16, 22, 1920, 1959),
        ("13.5", 16, 22, 1920, 1959),
    ];
    assert_eq!(
        rows,
        want.map(|(c, g, cl, lo, hi)| (c.to_string(), g, cl, lo, hi))
    );
}

#[test]
fn builtin_drivers() {
    let t = SupportTable::builtin();
    let d = |c: &str| match t.lookup(&v(c)) {
        ReleaseMatch::Exact(r) => (
            r.min_linux_driver.as_ref().map(ToString::to_string),
            r.min_windows_driver.as_ref().map(ToString::to_string),
        ),
        other => panic!("{c}: {other:?}"),
    };
    let s = |v: &str| Some(v.to_string());
    assert_eq!(d("12.8"), (s("570.26"), s("570.65")));
    assert_eq!(d("12.9"), (s("575.51.03"), s("576.02")));
    assert_eq!(d("13.0"), (s("580.65.06"), None));
    assert_eq!(d("13.1"), (s("590.44.01"), None));
    for c in ["13.2", "13.3", "13.4", "13.5"] {
        assert_eq!(d(c), (None, None), "{c}: the GA driver is not recorded");
    }
    assert!("575.51.03".parse::<DriverVersion>().unwrap() > "570.124.06".parse().unwrap());
    assert!("abc"
        .parse::<DriverVersion>()
        .unwrap_err()
        .to_string()
        .contains("`abc`"));
}

/// Each row's lists agree with each other and with the previous row.
#[test]
fn builtin_rows_are_consistent() {
    let t = SupportTable::builtin();
    for (i, r) in t.releases.iter().enumerate() {
        let c = r.cuda;
        assert_eq!(Some(&r.oldest), r.targets.iter().min(), "{c}: oldest");
        for list in [&r.arch_specific, &r.family, &r.added] {
            assert!(
                list.iter().all(|a| r.targets.contains(a)),
                "{c}: {list:?} not all in targets"
            );
        }
        let Some(prev) = i.checked_sub(1).map(|j| &t.releases[j]) else {
            continue;
        };
        let gone: Vec<u32> = prev
            .targets
            .iter()
            .filter(|a| !r.targets.contains(a))
            .map(CudaArch::number)
            .collect();
        let new: Vec<u32> = r
            .targets
            .iter()
            .filter(|a| !prev.targets.contains(a))
            .map(CudaArch::number)
            .collect();
        assert_eq!(nums(&r.removed), gone, "{c}: removed");
        assert_eq!(nums(&r.added), new, "{c}: added");
        for n in &r.renamed {
            assert!(
                r.removed.contains(&n.from) && r.added.contains(&n.to),
                "{c}: rename {n:?}"
            );
        }
    }
}

#[test]
fn builtin_targets_match_field_notes() {
    let t = SupportTable::builtin();
    let row = |c: &str| match t.lookup(&v(c)) {
        ReleaseMatch::Exact(r) => r,
        other => panic!("{c}: {other:?}"),
    };
    let a = |s: &str| s.parse::<CudaArch>().unwrap();
    let yes = |c: &str, s: &str| assert!(row(c).emits(&a(s)), "{c} should emit {s}");
    let no = |c: &str, s: &str| assert!(!row(c).emits(&a(s)), "{c} should not emit {s}");
    for c in [
        "12.8", "12.9", "13.0", "13.1", "13.2", "13.3", "13.4", "13.5",
    ] {
        yes(c, "120");
        yes(c, "120a");
        no(c, "86a");
    }
    for s in ["120f", "121", "121a", "103"] {
        no("12.8", s);
        yes("12.9", s);
        yes("13.0", s);
    }
    no("12.9", "110");
    yes("13.0", "110a");
    yes("12.8", "101a");
    no("13.0", "101");
    yes("12.9", "50");
    no("13.0", "50");
    // sm_107 (plain, a and f) is new in 13.4 (ptxas --help of 13.4.92 and 13.5.37).
    for s in ["107", "107a", "107f"] {
        no("13.3", s);
        yes("13.4", s);
        yes("13.5", s);
    }
    assert_eq!(nums(&row("13.4").added), [107]);
    assert_eq!(row("12.8").oldest.number(), 50);
    assert_eq!(row("13.0").oldest.number(), 75);
}

#[test]
fn lookup_places_versions() {
    let t = SupportTable::builtin();
    assert!(matches!(t.lookup(&v("13.0.88")), ReleaseMatch::Exact(r) if r.cuda == v("13.0")));
    assert!(matches!(t.lookup(&v("14.1")), ReleaseMatch::Untested(r) if r.cuda == v("13.5")));
    assert!(matches!(t.lookup(&v("13.6")), ReleaseMatch::Untested(r) if r.cuda == v("13.5")));
    assert!(matches!(t.lookup(&v("13.5.37")), ReleaseMatch::Exact(r) if r.cuda == v("13.5")));
    assert_eq!(t.lookup(&v("12.6")), ReleaseMatch::OlderThanTable);
}

#[test]
fn bad_tables_are_rejected_with_the_reason() {
    let row = |cuda: &str, msvc: &str| {
        format!(
            "[[release]]\ncuda = \"{cuda}\"\noldest = 75\ntargets = [75]\narch_specific = []\nfamily = []\nadded = []\n\
             removed = []\nrenamed = []\nmax_gcc = 15\nmax_clang = 20\nmsvc = {msvc}\n\n\
             [[major]]\ncuda = 13\nlinux = \"580\"\nwindows = \"580\"\n"
        )
    };
    assert!(SupportTable::parse(&row("13.0", "[1920, 1949]")).is_ok());
    let e = SupportTable::parse(&row("13.0", "[1949, 1920]")).unwrap_err();
    assert!(e.to_string().contains("release 13.0: msvc range"), "{e}");
    let e = SupportTable::parse(&row("13.0.1", "[1920, 1949]")).unwrap_err();
    assert!(e.to_string().contains("MAJOR.MINOR"), "{e}");
    let two = format!(
        "{}{}",
        row("13.1", "[1920, 1949]"),
        row("13.0", "[1920, 1949]")
    );
    assert_eq!(
        SupportTable::parse(&two).unwrap_err(),
        SupportTableError::Order {
            prev: v("13.1"),
            next: v("13.0")
        }
    );
    let e = SupportTable::parse(&row("13.0", "[1920, 1949]").replace("max_gcc", "max_gnu"))
        .unwrap_err();
    assert!(matches!(e, SupportTableError::Toml(_)), "{e}");
    assert!(SupportTable::parse("").is_err());
}

#[test]
fn min_driver_per_cuda_major_is_the_compatibility_floor() {
    let t = SupportTable::builtin();
    use crate::platform::Os::{Linux, Windows};
    let d = |m, os| t.driver_floor(m, os).map(|d| d.to_string());
    assert_eq!(d(12, Linux).as_deref(), Some("525.60.13"));
    assert_eq!(d(12, Windows).as_deref(), Some("527.41"));
    assert_eq!(d(13, Linux).as_deref(), Some("580"));
    assert_eq!(d(13, Windows).as_deref(), Some("580"));
    assert_eq!(d(11, Linux), None);
    // Every release's major has its floor, or the table is refused.
    let no_major = SupportTable::parse(
        "major = []\n[[release]]\ncuda = \"14.0\"\noldest = 75\ntargets = [75]\narch_specific = []\nfamily = []\n\
         added = []\nremoved = []\nrenamed = []\nmax_gcc = 15\nmax_clang = 20\nmsvc = [1920, 1949]\n",
    )
    .unwrap_err();
    assert!(
        no_major.to_string().contains("CUDA 14.0 has no [[major]]"),
        "{no_major}"
    );
}
