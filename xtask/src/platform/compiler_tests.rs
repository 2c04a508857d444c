use super::*;

const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/toolchains/");

fn parse_fixture(name: &str, path: &str) -> Result<HostCompiler, HostCompilerParseError> {
    let text =
        std::fs::read_to_string(format!("{FIX}{name}")).unwrap_or_else(|e| panic!("{name}: {e}"));
    HostCompiler::parse(&text, path)
}

#[test]
fn parses_recorded_outputs() {
    use HostCompilerKind::*;
    for (file, kind, version, msc) in [
        ("gcc-12.2.0-debian12.txt", Gcc, "12.2.0", None),
        ("gcc-13.3.0-ubuntu24.04.txt", Gcc, "13.3.0", None),
        ("gcc-14.2.0-mingw-msys2.txt", Gcc, "14.2.0", None),
        ("gcc-15.1.1-fedora42.txt", Gcc, "15.1.1", None),
        ("gxx-15.1.1-fedora42.txt", Gcc, "15.1.1", None),
        ("clang-14.0.6-debian12.txt", Clang, "14.0.6", None),
        ("clang-18.1.3-ubuntu24.04.txt", Clang, "18.1.3", None),
        ("clang-20.1.8-fedora42.txt", Clang, "20.1.8", None),
        ("clang-16.0.0-apple.txt", AppleClang, "16.0.0", None),
        ("cl-19.44.35211-x64.txt", Msvc, "19.44.35211", Some(1944)),
        ("cl-19.50.35717-x64.txt", Msvc, "19.50.35717", Some(1950)),
        ("cl-19.29.30159-x64.txt", Msvc, "19.29.30159", Some(1929)),
    ] {
        let h = parse_fixture(file, "/usr/bin/cc").unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(
            (h.kind, h.version.to_string(), h.msc_ver()),
            (kind, version.to_string(), msc),
            "{file}"
        );
    }
}

#[test]
fn display_names_kind_version_and_path() {
    let h = parse_fixture("cl-19.50.35717-x64.txt", r"C:\VS\cl.exe").unwrap();
    assert_eq!(
        h.to_string(),
        r"MSVC 19.50.35717 (_MSC_VER 1950) at C:\VS\cl.exe"
    );
    let h = parse_fixture("gcc-12.2.0-debian12.txt", "/usr/bin/gcc").unwrap();
    assert_eq!(h.to_string(), "gcc 12.2.0 at /usr/bin/gcc");
}

#[test]
fn unknown_output_is_an_error_that_quotes_it() {
    let e = parse_fixture("nvcc-13.0.88-version.txt", "/usr/bin/nvcc").unwrap_err();
    assert_eq!(e.first_line, "nvcc: NVIDIA (R) Cuda compiler driver");
    assert!(e.to_string().contains("/usr/bin/nvcc"), "{e}");
    assert!(HostCompiler::parse("", "x").is_err());
    // A gcc-looking line without the FSF notice is not trusted.
    assert!(HostCompiler::parse("cc (Foo) 1.2.3\n", "cc").is_err());
}

#[test]
fn compiler_versions_parse_strictly() {
    assert_eq!(
        "19.44".parse::<CompilerVersion>().unwrap().to_string(),
        "19.44"
    );
    assert!("19"
        .parse::<CompilerVersion>()
        .unwrap_err()
        .to_string()
        .contains("`19`"));
    assert!("19.44.x".parse::<CompilerVersion>().is_err());
}
