use super::*;

const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/toolchains/");

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{FIX}{name}")).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Found codes of the fixtures, concatenated, as short strings.
fn listed(files: &[&str]) -> (BTreeSet<EmbeddedCode>, Vec<String>) {
    let text: String = files
        .iter()
        .map(|f| fixture(f))
        .collect::<Vec<_>>()
        .join("\n");
    let set = parse_list(&text).unwrap();
    let shown = set.iter().map(ToString::to_string).collect();
    (set, shown)
}

fn list(s: &str) -> ArchList {
    s.parse().unwrap()
}

fn problems(expected: &str, found: &BTreeSet<EmbeddedCode>) -> Vec<String> {
    match gate(&list(expected), found) {
        Ok(()) => Vec::new(),
        Err(p) => p.iter().map(ToString::to_string).collect(),
    }
}

#[test]
fn parses_recorded_listings() {
    let (_, shown) = listed(&[
        "cuobjdump-list-elf-120a-90.txt",
        "cuobjdump-list-ptx-120.txt",
    ]);
    assert_eq!(shown, ["SASS sm_90", "SASS sm_120a", "PTX compute_120"]);
    let (_, shown) = listed(&["cuobjdump-list-elf-4arch.txt"]);
    assert_eq!(
        shown,
        ["SASS sm_86", "SASS sm_89", "SASS sm_90", "SASS sm_120"]
    );
    let (set, _) = listed(&[
        "cuobjdump-list-elf-no-device-code.txt",
        "cuobjdump-list-ptx-none.txt",
    ]);
    assert!(set.is_empty());
}

#[test]
fn unknown_lines_are_errors() {
    let e =
        parse_list("ELF file    1: libggml-cuda.1.sm_120a.cubin\nsomething else\n").unwrap_err();
    assert_eq!((e.line_no, e.line.as_str()), (2, "something else"));
    assert!(e.to_string().contains("`something else`"), "{e}");
    assert!(parse_list("ELF file    1: x.1.sm_120.ptx").is_err());
    assert!(parse_list("PTX file    1: x.1.sm_12z.ptx").is_err());
}

#[test]
fn dump_headers_keep_the_family_suffix() {
    let (_, list_view) = listed(&[
        "cuobjdump-list-elf-120f-121a.txt",
        "cuobjdump-list-ptx-120a.txt",
    ]);
    assert_eq!(
        list_view,
        ["SASS sm_120", "SASS sm_121a", "PTX compute_120a"]
    );
    let dump = parse_dump(&fixture("cuobjdump-ptx-dump-120f-121a-120a.txt")).unwrap();
    let shown: Vec<String> = dump.iter().map(ToString::to_string).collect();
    assert_eq!(shown, ["SASS sm_120f", "SASS sm_121a", "PTX compute_120a"]);
    assert_eq!(
        gate(&list("120f-real;121a-real;120a-virtual"), &dump),
        Ok(())
    );
    let e = parse_dump("Fatbin elf code:\n================\n").unwrap_err();
    assert_eq!(e.line_no, 1);
}

#[test]
fn exact_match_passes() {
    let (found, _) = listed(&[
        "cuobjdump-list-elf-120a-90.txt",
        "cuobjdump-list-ptx-120.txt",
    ]);
    assert_eq!(gate(&list("90-real;120a-real;120-virtual"), &found), Ok(()));
    let (found, _) = listed(&["cuobjdump-list-elf-4arch.txt"]);
    assert_eq!(
        gate(&list("86-real;89-real;90-real;120-real"), &found),
        Ok(())
    );
}

#[test]
fn reports_missing_and_unexpected_with_hints() {
    let (found, _) = listed(&[
        "cuobjdump-list-elf-120a-90.txt",
        "cuobjdump-list-ptx-120.txt",
    ]);
    assert_eq!(
        problems("120a-real;121a-real", &found),
        [
            "SASS sm_121a: missing (asked for by 120a-real;121a-real)",
            "SASS sm_90: not asked for",
            "PTX compute_120: not asked for (--ptx was not given; PTX makes the library much larger)",
        ]
    );
}

#[test]
fn hints_name_the_known_mistakes() {
    let code = |s: &str| -> BTreeSet<EmbeddedCode> { parse_list(s).unwrap() };
    let p = problems("120a-real", &code("ELF file    1: l.1.sm_100.cubin"));
    assert!(
        p[1].contains("sm_100 is B200/GB200 code and does not run on RTX 50"),
        "{p:?}"
    );
    let p = problems("120a-real", &code("ELF file    1: l.1.sm_120.cubin"));
    assert!(
        p[1].contains("plain sm_120 where sm_120a was asked"),
        "{p:?}"
    );
    let p = problems("120f-real", &code("ELF file    1: l.1.sm_120.cubin"));
    assert!(
        p[1].contains("plain sm_120 where sm_120f was asked: the f did not reach nvcc"),
        "{p:?}"
    );
    let p = problems(
        "120-real",
        &code("PTX file    1: l.1.sm_120.ptx\nELF file    1: l.1.sm_120.cubin"),
    );
    assert_eq!(p, ["PTX compute_120: not asked for (PTX beside the sm_120 cubin: the arch was given without -real, so CMake added PTX)"]);
    let (found, _) = listed(&["cuobjdump-list-elf-default-arch-link.txt"]);
    let p = problems("120a-real", &found);
    assert_eq!(p.len(), 1);
    assert!(
        p[0].starts_with("SASS sm_75: not asked for (sm_75 is nvcc's default arch"),
        "{p:?}"
    );
}
