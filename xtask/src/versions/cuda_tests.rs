use super::*;

const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/toolchains/");

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{FIX}{name}")).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn parses_and_displays_versions() {
    for (s, major, minor, patch) in [
        ("13.0", 13, 0, None),
        ("12.8.93", 12, 8, Some(93)),
        (" 13.1 ", 13, 1, None),
    ] {
        let v: CudaVersion = s.parse().unwrap();
        assert_eq!((v.major, v.minor, v.patch), (major, minor, patch), "{s}");
        assert_eq!(v.to_string(), s.trim());
    }
    for bad in ["13", "13.", "v13.0", "13.0.1.2", "13.x", "", "-1.0", "+1.0"] {
        let e = bad.parse::<CudaVersion>().unwrap_err();
        assert!(e.to_string().contains(&format!("`{bad}`")), "{e}");
    }
}

#[test]
fn orders_by_number_not_text() {
    let v = |s: &str| s.parse::<CudaVersion>().unwrap();
    assert!(v("12.10") > v("12.9"));
    assert!(v("13.0") > v("12.9"));
    assert!(v("13.0.88") > v("13.0"));
    assert_eq!(v("13.0.88").release(), v("13.0"));
}

#[test]
fn parses_recorded_nvcc_outputs() {
    for (file, release, nvcc) in [
        ("nvcc-12.8.93-version.txt", "12.8", "12.8.93"),
        ("nvcc-12.9.86-version.txt", "12.9", "12.9.86"),
        ("nvcc-13.0.88-version.txt", "13.0", "13.0.88"),
        ("nvcc-13.1.115-version.txt", "13.1", "13.1.115"),
        ("nvcc-13.2.86-version.txt", "13.2", "13.2.86"),
    ] {
        let v = NvccVersion::from_nvcc_output(&fixture(file)).unwrap();
        assert_eq!(v.release.to_string(), release, "{file}");
        assert_eq!(v.nvcc.to_string(), nvcc, "{file}");
    }
}

#[test]
fn rejects_output_that_is_not_nvcc() {
    let e = NvccVersion::from_nvcc_output("gcc (Debian 12.2.0-14+deb12u1) 12.2.0\n").unwrap_err();
    assert_eq!(
        e,
        NvccVersionError::NoReleaseLine {
            head: "gcc (Debian 12.2.0-14+deb12u1) 12.2.0".into()
        }
    );
    assert!(e.to_string().contains("is this nvcc?"));
}

#[test]
fn parses_version_json() {
    let v = NvccVersion::from_version_json(&fixture("cuda-12.8.1-version.json")).unwrap();
    assert_eq!(v.release, CudaVersion::new(12, 8));
    assert_eq!(v.nvcc.to_string(), "12.8.93");
    assert_eq!(v.to_string(), "CUDA 12.8 (nvcc 12.8.93)");
}

#[test]
fn version_json_errors_say_what_is_missing() {
    let no_nvcc = r#"{"cuda": {"name": "CUDA SDK", "version": "12.8.1"}}"#;
    assert_eq!(
        NvccVersion::from_version_json(no_nvcc).unwrap_err(),
        NvccVersionError::NoNvccInJson
    );
    let bad = r#"{"cuda": {"version": "twelve"}, "cuda_nvcc": {"version": "12.8.93"}}"#;
    assert!(NvccVersion::from_version_json(bad)
        .unwrap_err()
        .to_string()
        .contains("`twelve`"));
    let e = NvccVersion::from_version_json("[]").unwrap_err();
    assert!(matches!(e, NvccVersionError::BadVersionJson { .. }), "{e}");
}
