use super::*;

const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/toolchains/");

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{FIX}{name}")).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn t(s: &str) -> MsvcToolset {
    s.parse().unwrap()
}

#[test]
fn toolset_maps_to_cl_msc_ver_and_visual_studio() {
    for (dir, vcvars, cl, msc, vs) in [
        ("14.44.35207", "14.44", "19.44", 1944, "VS 2022"),
        ("14.50.35717", "14.50", "19.50", 1950, "VS 2026"),
        ("14.29.30133", "14.29", "19.29", 1929, "VS 2019"),
        ("14.16.27023", "14.16", "19.16", 1916, "VS 2017"),
        ("14.30", "14.30", "19.30", 1930, "VS 2022"),
    ] {
        let ts = t(dir);
        assert_eq!(ts.to_string(), dir);
        assert_eq!(
            (
                ts.vcvars_ver(),
                ts.cl_version().to_string(),
                ts.msc_ver(),
                ts.visual_studio()
            ),
            (vcvars.into(), cl.into(), msc, vs),
            "{dir}"
        );
    }
}

#[test]
fn toolset_rejects_other_names() {
    for bad in [
        "",
        "14",
        "15.0.1",
        "14.x",
        "14.44.35207.1",
        "v143",
        "14.100",
        "14..1",
    ] {
        let e = bad.parse::<MsvcToolset>().unwrap_err();
        assert!(e.to_string().contains(&format!("`{bad}`")), "{e}");
    }
}

#[test]
fn dir_names_give_toolsets_newest_first() {
    let got = toolsets_from_dir_names([
        "14.44.35207",
        "desktop.ini",
        "14.50.35717",
        "14.38.33130",
        "14.44.35207",
    ]);
    let shown: Vec<String> = got.iter().map(ToString::to_string).collect();
    assert_eq!(shown, ["14.50.35717", "14.44.35207", "14.38.33130"]);
}

#[test]
fn lists_toolset_directories_only() {
    let tmp = tempfile::tempdir().unwrap();
    for d in ["14.44.35207", "14.50.35717"] {
        std::fs::create_dir(tmp.path().join(d)).unwrap();
    }
    std::fs::write(tmp.path().join("14.99.1"), "a file, not a toolset").unwrap();
    let got = list_toolsets(tmp.path()).unwrap();
    assert_eq!(got, vec![t("14.50.35717"), t("14.44.35207")]);
    assert!(list_toolsets(&tmp.path().join("missing")).is_err());
}

#[test]
fn parses_vswhere_json() {
    let got = parse_vswhere(&fixture("vswhere-vs2022-vs2026.json")).unwrap();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].display_name, "Visual Studio Community 2022");
    assert_eq!(got[1].installation_version, "18.0.11205.157");
    assert!(!got[1].is_prerelease);
    assert_eq!(
        got[1].msvc_tools_dir(),
        PathBuf::from(r"C:\Program Files\Microsoft Visual Studio\18\Community\VC\Tools\MSVC")
    );
    assert_eq!(
        got[0].vcvars64(),
        PathBuf::from(
            r"C:\Program Files\Microsoft Visual Studio\2022\Community\VC\Auxiliary\Build\vcvars64.bat"
        )
    );
    assert!(parse_vswhere("[]").unwrap().is_empty());
    let e = parse_vswhere("not json").unwrap_err();
    assert!(
        e.to_string()
            .contains("vswhere.exe -products * -format json"),
        "{e}"
    );
}

#[test]
fn vcvars_call_line() {
    let call = VcvarsCall {
        script: PathBuf::from(r"C:\VS\18\Community\VC\Auxiliary\Build\vcvars64.bat"),
        toolset: t("14.44.35207"),
    };
    assert_eq!(
        call.to_string(),
        r#"call "C:\VS\18\Community\VC\Auxiliary\Build\vcvars64.bat" -vcvars_ver=14.44 >nul && set"#
    );
}

#[test]
fn parses_the_vcvars_environment() {
    let env = VcvarsEnv::parse(&fixture("vcvars64-14.44-on-vs2026-set.txt"));
    assert_eq!(env.get("VCToolsVersion"), Some("14.44.35207"));
    assert_eq!(env.get("vctoolsversion"), Some("14.44.35207"));
    assert_eq!(env.get("VSCMD_ARG_TGT_ARCH"), Some("x64"));
    assert_eq!(env.get("PROMPT"), Some("$P$G"));
    assert!(env.get("PATH").unwrap().starts_with(r"C:\Program Files\Microsoft Visual Studio\18\Community\VC\Tools\MSVC\14.44.35207\bin\HostX64\x64;"));
    assert!(env.vars.values().all(|v| !v.ends_with('\r')));
    assert_eq!(env.check_toolset(&t("14.44")), Ok(()));
    assert_eq!(env.check_toolset(&t("14.44.35207")), Ok(()));
    let e = env.check_toolset(&t("14.50")).unwrap_err();
    assert_eq!(
        e,
        VcvarsError::Mismatch {
            wanted: t("14.50"),
            got: "14.44.35207".into()
        }
    );
    assert!(
        e.to_string()
            .contains("-vcvars_ver=14.50 set up toolset 14.44.35207"),
        "{e}"
    );
}

#[test]
fn vcvars_env_edge_cases() {
    let env = VcvarsEnv::parse("A=b=c\r\nno equals sign\n=C:=C:\\\nEMPTY=\n");
    assert_eq!(env.get("a"), Some("b=c"));
    assert_eq!(env.get("EMPTY"), Some(""));
    assert_eq!(env.vars.len(), 2);
    assert_eq!(
        env.check_toolset(&t("14.44")),
        Err(VcvarsError::NotSet { wanted: t("14.44") })
    );
}
