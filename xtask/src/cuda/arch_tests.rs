use super::*;

#[test]
fn parses_compute_capabilities() {
    for (input, major, minor, variant, shown) in [
        ("120", 12, 0, ArchVariant::Plain, "120"),
        ("120a", 12, 0, ArchVariant::ArchSpecific, "120a"),
        ("120F", 12, 0, ArchVariant::Family, "120f"),
        ("86", 8, 6, ArchVariant::Plain, "86"),
        ("sm_121a", 12, 1, ArchVariant::ArchSpecific, "121a"),
        ("compute_90", 9, 0, ArchVariant::Plain, "90"),
        ("12.0", 12, 0, ArchVariant::Plain, "120"),
        ("8.6", 8, 6, ArchVariant::Plain, "86"),
        ("10.3a", 10, 3, ArchVariant::ArchSpecific, "103a"),
    ] {
        let a: CudaArch = input.parse().unwrap();
        assert_eq!(
            (a.major(), a.minor(), a.variant()),
            (major, minor, variant),
            "{input}"
        );
        assert_eq!(a.to_string(), shown);
    }
    assert_eq!("120a".parse::<CudaArch>().unwrap().sm_name(), "sm_120a");
    assert_eq!("103".parse::<CudaArch>().unwrap().number(), 103);
}

#[test]
fn rejects_bad_compute_capabilities() {
    for bad in [
        "", "1", "1200", "12.10", "120b", "a", "sm_", "rtx5090", "120aa", "05", "12.",
    ] {
        let e = bad.parse::<CudaArch>().unwrap_err();
        assert_eq!(e.value, bad);
        assert!(
            e.to_string().contains("expected digits like 86, 90, 120"),
            "{e}"
        );
    }
}

#[test]
fn orders_by_capability_then_variant() {
    let a = |s: &str| s.parse::<CudaArch>().unwrap();
    assert!(a("90") < a("100"));
    assert!(a("100") < a("120"));
    assert!(a("120") < a("120a"));
    assert!(a("120a") < a("120f"));
    assert!(a("120f") < a("121"));
    assert!(a("100").is_blackwell() && a("121a").is_blackwell() && !a("90a").is_blackwell());
}

#[test]
fn targets_round_trip_cmake_syntax() {
    for s in ["120a-real", "90-real", "120a-virtual", "120", "121f-real"] {
        assert_eq!(s.parse::<ArchTarget>().unwrap().to_string(), s);
    }
    let t: ArchTarget = "120a-real".parse().unwrap();
    assert_eq!(t, ArchTarget::real("120a".parse().unwrap()));
    assert!(t.kind.has_sass() && !t.kind.has_ptx());
}

#[test]
fn list_sorts_dedups_and_merges() {
    let l: ArchList = "120a-real;90-real;120a-real, 86-real;90-virtual"
        .parse()
        .unwrap();
    assert_eq!(l.to_string(), "86-real;90;120a-real");
    assert_eq!(
        l.sass().map(|a| a.to_string()).collect::<Vec<_>>(),
        ["86", "90", "120a"]
    );
    assert_eq!(l.ptx().map(|a| a.to_string()).collect::<Vec<_>>(), ["90"]);
    assert_eq!(l.to_string().parse::<ArchList>().unwrap(), l);
}

#[test]
fn list_rejects_empty_special_and_bad_entries() {
    assert_eq!("".parse::<ArchList>().unwrap_err(), ArchListError::Empty);
    assert_eq!(" ; ".parse::<ArchList>().unwrap_err(), ArchListError::Empty);
    let e = "native".parse::<ArchList>().unwrap_err();
    assert!(
        e.to_string().contains("only the build machine's GPU"),
        "{e}"
    );
    assert!(matches!(
        "all-major".parse::<ArchList>(),
        Err(ArchListError::Special { .. })
    ));
    let e = "120a-real;12x-real".parse::<ArchList>().unwrap_err();
    assert!(e.to_string().contains("`12x`"), "{e}");
}
