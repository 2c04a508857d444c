use super::*;
use crate::cuda::gpu::Gpu;

fn resolve(s: &str, ptx: bool) -> ArchSelection {
    s.parse::<ArchRequest>().unwrap().resolve(ptx)
}

#[test]
fn gpu_names_map_to_their_targets() {
    for (name, list) in [
        ("rtx5090", "120a-real"),
        ("RTX5080", "120a-real"),
        ("rtx5070ti", "120a-real"),
        ("RTX 5070 Ti", "120a-real"),
        ("rtx5070", "120a-real"),
        ("rtx5060ti", "120a-real"),
        ("rtx5060", "120a-real"),
        ("rtx5050", "120a-real"),
        ("rtxpro6000", "120a-real"),
        ("gb10", "121a-real"),
        ("DGX-Spark", "121a-real"),
        ("b200", "100a-real"),
        ("gb200", "100a-real"),
        ("b300", "103a-real"),
        ("GB300", "103a-real"),
        ("thor", "110a-real"),
        ("h100", "90-real"),
        ("H200", "90-real"),
        ("gh200", "90-real"),
        ("l40s", "89-real"),
        ("rtx4090", "89-real"),
        ("a100", "80-real"),
        ("rtx3090", "86-real"),
    ] {
        let sel = resolve(name, false);
        assert_eq!(sel.targets.to_string(), list, "{name}");
        assert!(sel.warnings.is_empty(), "{name}: {:?}", sel.warnings);
    }
    assert!(Gpu::names().count() > 80, "the whole table");
}

#[test]
fn numbers_follow_the_blackwell_policy() {
    assert_eq!(resolve("120", false).targets.to_string(), "120a-real");
    assert_eq!(
        resolve("120,121", false).targets.to_string(),
        "120a-real;121a-real"
    );
    assert_eq!(
        resolve("90,86", false).targets.to_string(),
        "86-real;90-real"
    );
    assert_eq!(resolve("120f", false).targets.to_string(), "120f-real");
    assert_eq!(resolve("90a", false).targets.to_string(), "90a-real");
    assert_eq!(
        resolve("rtx5090,rtx5080,120", false).targets.to_string(),
        "120a-real"
    );
}

#[test]
fn reason_names_the_gpu_the_target_and_ptx() {
    let sel = resolve("rtx5060ti", false);
    assert_eq!(
        sel.reasons[0].to_string(),
        "rtx5060ti is compute capability 12.0 (RTX 50 series / RTX PRO 6000 Blackwell); \
         120a-real: arch-specific SASS, needed for the FP4/MXFP4 mma paths; no PTX (--ptx adds it)"
    );
    let sel = resolve("h100", false);
    assert!(
        sel.reasons[0]
            .text
            .contains("90-real: SASS for this compute capability"),
        "{}",
        sel.reasons[0]
    );
}

#[test]
fn ptx_adds_plain_virtual_for_the_highest_arch_only() {
    let sel = resolve("90,rtx5090,gb10", true);
    assert_eq!(
        sel.targets.to_string(),
        "90-real;120a-real;121-virtual;121a-real"
    );
    let last = sel.reasons.last().unwrap();
    assert_eq!(
        last.requested,
        ArchSpec::Gpu("gb10".parse::<Gpu>().unwrap())
    );
    assert!(last.text.starts_with("--ptx: 121-virtual"), "{last}");
    assert!(sel.reasons[0]
        .text
        .ends_with("PTX only for the highest arch"));
    assert_eq!(resolve("90", true).targets.to_string(), "90");
}

#[test]
fn sm_100_by_number_warns_but_still_builds() {
    for s in ["100", "100a", "sm_100", "120,100a"] {
        let sel = resolve(s, false);
        assert_eq!(sel.warnings.len(), 1, "{s}");
        let w = sel.warnings[0].to_string();
        assert!(
            w.contains("not an RTX 50 card") && w.contains("--arch 120"),
            "{w}"
        );
        assert!(sel.targets.to_string().contains("100a-real"), "{s}");
    }
    assert!(resolve("b200", false).warnings.is_empty());
    assert!(resolve("103", false).warnings.is_empty());
}

#[test]
fn bad_values_say_what_is_accepted() {
    let e = "rtx5095".parse::<ArchRequest>().unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("`rtx5095`")
            && msg.contains("did you mean `rtx5090`")
            && msg.contains("--arch 120"),
        "{msg}"
    );
    assert_eq!(
        " , ".parse::<ArchRequest>().unwrap_err(),
        ArchSpecError::Empty
    );
    assert!("120,bogus".parse::<ArchRequest>().is_err());
    assert_eq!(
        "RTX5090, 121".parse::<ArchRequest>().unwrap().to_string(),
        "rtx5090,121"
    );
}

#[test]
fn bad_arch_messages() {
    let msg = |s: &str| s.parse::<ArchRequest>().unwrap_err().to_string();
    insta::assert_snapshot!("unknown_arch", msg("rtx9090"));
    insta::assert_snapshot!("empty_arch", msg(" , "));
}
