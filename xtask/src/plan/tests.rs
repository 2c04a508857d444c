use super::*;
use crate::detect::toolchain::Tool;
use crate::platform::host::{Compiler, CompilerKind, Origin};
use std::path::Path;

/// The plan of a fixture recipe's newest release, with the fake toolchains and
/// `pythons` (the plan most unit tests of other stages start from).
pub(crate) fn fixture_plan(recipe: &str, pythons: &[&str]) -> Plan {
    let r = crate::recipe::fixture(recipe);
    let o = opts(pythons);
    make(&r, r.release(None).unwrap(), &fake_tools(&o.cache), &o).unwrap()
}

pub(crate) fn fake_tools(cache: &Path) -> Toolchains {
    let tool = |p: &str, v: &str, origin: Origin| Tool {
        path: PathBuf::from(p),
        version: v.parse().unwrap(),
        origin,
    };
    Toolchains {
        cmake: Some(tool(
            &cache
                .join("tools/cmake-4.4.4/cmake/data/bin/cmake")
                .display()
                .to_string(),
            "4.4.4",
            Origin::PackageIndex {
                url: "https://example.invalid/cmake.whl".into(),
                sha256: "ab".repeat(32).parse().unwrap(),
            },
        )),
        ninja: Some(tool("/usr/bin/ninja", "1.11.1", Origin::System)),
        patchelf: None,
        compiler: Some(Compiler {
            kind: CompilerKind::Gcc,
            cc: "/usr/bin/gcc-12".into(),
            cxx: "/usr/bin/g++-12".into(),
            version: "12.2.0".parse().unwrap(),
            origin: Origin::System,
            msvc: None,
            mingw: None,
            pinned: None,
        }),
        cuda: vec![],
    }
}

/// A Windows machine from the recorded outputs: Visual Studio's own CMake and
/// Ninja, and MSVC with `host` as the compiler and `others` installed beside it.
pub(crate) fn fake_windows_tools(
    host: crate::platform::msvc::env::MsvcToolsetEnv,
    others: Vec<crate::platform::msvc::env::MsvcToolsetEnv>,
) -> Toolchains {
    let vs = r"C:\Program Files\Microsoft Visual Studio\18\Community\Common7\IDE\CommonExtensions\Microsoft\CMake";
    let tool = |p: String, v: &str| Tool {
        path: PathBuf::from(p),
        version: v.parse().unwrap(),
        origin: Origin::System,
    };
    Toolchains {
        cmake: Some(tool(format!(r"{vs}\CMake\bin\cmake.exe"), "4.1.1")),
        ninja: Some(tool(format!(r"{vs}\Ninja\ninja.exe"), "1.12.1")),
        patchelf: None,
        compiler: Some(crate::platform::msvc::compiler(
            crate::platform::msvc::env::Msvc { host, others },
            Origin::System,
        )),
        cuda: vec![],
    }
}

/// VS 2026's own toolset (cl 19.50), VS 2022's toolset installed in VS 2026
/// (cl 19.44, the recorded vcvars environment) and VS 2019's in VS 2022 (cl 19.29).
pub(crate) fn vs2026_14_50() -> crate::platform::msvc::env::MsvcToolsetEnv {
    use crate::platform::msvc::tests::{recorded_toolset, VS2026};
    recorded_toolset(
        VS2026,
        "Visual Studio Community 2026",
        "18.0.11205.157",
        "14.50.35717",
        "cl-19.50.35717-x64.txt",
    )
}
pub(crate) fn vs2026_14_44() -> crate::platform::msvc::env::MsvcToolsetEnv {
    use crate::platform::msvc::tests::{recorded_toolset, VS2026};
    recorded_toolset(
        VS2026,
        "Visual Studio Community 2026",
        "18.0.11205.157",
        "14.44.35207",
        "cl-19.44.35211-x64.txt",
    )
}
pub(crate) fn vs2022_14_44() -> crate::platform::msvc::env::MsvcToolsetEnv {
    use crate::platform::msvc::tests::{recorded_toolset, VS2022};
    recorded_toolset(
        VS2022,
        "Visual Studio Community 2022",
        "17.14.36414.22",
        "14.44.35207",
        "cl-19.44.35211-x64.txt",
    )
}
pub(crate) fn vs2022_14_29() -> crate::platform::msvc::env::MsvcToolsetEnv {
    use crate::platform::msvc::tests::{recorded_toolset, VS2022};
    recorded_toolset(
        VS2022,
        "Visual Studio Community 2022",
        "17.14.36414.22",
        "14.29.30133",
        "cl-19.29.30159-x64.txt",
    )
}

pub(crate) fn opts(pythons: &[&str]) -> Options {
    Options {
        target: crate::platform::Target::LINUX_X86_64,
        accelerator: Accelerator::Cpu,
        auto_arch: None,
        cpu_baseline: CpuBaseline::V2,
        pythons: pythons.iter().map(|p| p.parse().unwrap()).collect(),
        source: SourceChoice::Pinned,
        source_facts: Default::default(),
        overlay: None,
        cache: PathBuf::from("/home/someone/checkout/vendor/cache"),
        ptx: false,
        driver: None,
        cuda_release: None,
        cuda_runtime: crate::plan::cuda::RuntimeMode::IndexWheels,
        host_arch: crate::platform::Arch::X86_64,
        defines: Vec::new(),
    }
}

fn recipe(name: &str) -> Recipe {
    crate::recipe::fixture(name)
}

#[test]
fn a_local_copy_of_the_pinned_sdist_plans_like_the_download() {
    let r = recipe("llama-cpp-python");
    let rel = r.release(None).unwrap();
    let mut o = opts(&["311"]);
    let fetched = make(&r, rel, &fake_tools(&o.cache), &o).unwrap();
    o.source = SourceChoice::Local {
        path: "/offline/copy.tar.gz".into(),
        sha256: rel.sources[0].sha256.clone(),
    };
    assert_eq!(
        make(&r, rel, &fake_tools(&o.cache), &o).unwrap().hash(),
        fetched.hash()
    );
    o.source = SourceChoice::Local {
        path: "/offline/patched.tar.gz".into(),
        sha256: crate::digest::sha256_bytes(b"other"),
    };
    let other = make(&r, rel, &fake_tools(&o.cache), &o).unwrap();
    assert_eq!(
        (other.source.kind.as_str(), other.source.location.as_str()),
        ("local", "/offline/patched.tar.gz")
    );
}

/// The pinned source's upstream build reaches CMake (and the manifest); a local
/// source's commit is not known, so neither is claimed for it.
#[test]
fn the_pinned_source_sets_the_upstream_build_info() {
    for (name, pythons) in [("llama.cpp", &[][..]), ("llama-cpp-python", &["311"][..])] {
        let r = recipe(name);
        for rel in &r.releases {
            let mut o = opts(pythons);
            let plan = make(&r, rel, &fake_tools(&o.cache), &o).unwrap();
            let u = rel.upstream.as_ref().unwrap();
            assert_eq!(plan.upstream, Some(PlannedUpstream::Build(u.clone())));
            let get = |p: &Plan, n: &str| {
                p.defines
                    .iter()
                    .find(|d| d.name == n)
                    .map(|d| (d.value.clone(), d.origin))
            };
            assert_eq!(
                get(&plan, "LLAMA_BUILD_NUMBER"),
                Some((u.build.to_string(), SettingOrigin::Recipe)),
                "{name} {}",
                rel.version
            );
            assert_eq!(
                get(&plan, "LLAMA_BUILD_COMMIT"),
                Some((u.commit.as_str()[..9].to_string(), SettingOrigin::Recipe))
            );
            let reason = &plan
                .defines
                .iter()
                .find(|d| d.name == "LLAMA_BUILD_NUMBER")
                .unwrap()
                .reason;
            assert!(
                reason.contains(&format!("ggml-org/llama.cpp@{}", u.commit))
                    && reason.contains("[release.upstream]"),
                "{reason}"
            );
            o.source = SourceChoice::LocalDir {
                path: "/home/someone/llama.cpp".into(),
                tree_sha256: crate::digest::sha256_bytes(b"tree"),
            };
            let local = make(&r, rel, &fake_tools(&o.cache), &o).unwrap();
            assert_eq!(local.upstream, None);
            assert_eq!(get(&local, "LLAMA_BUILD_NUMBER"), None);
            assert_eq!(get(&local, "LLAMA_BUILD_COMMIT"), None);
        }
    }
}

/// Plans from before `upstream` was typed hold a line of text: it reads back as
/// written, so the hash of such a plan holds.
#[test]
fn a_plan_with_the_upstream_as_text_keeps_its_hash() {
    let plan = fixture_plan("llama.cpp", &[]);
    let mut v = serde_json::to_value(&plan).unwrap();
    v["upstream"] = "ggml-org/llama.cpp@0c1e57098 (vendored in llama-cpp-python 0.3.36)".into();
    let text = serde_json::to_vec(&v).unwrap();
    let old: Plan = serde_json::from_slice(&text).unwrap();
    assert_eq!(
        old.upstream,
        Some(PlannedUpstream::Text(
            "ggml-org/llama.cpp@0c1e57098 (vendored in llama-cpp-python 0.3.36)".into()
        ))
    );
    assert_eq!(old.hash(), crate::digest::sha256_bytes(&text));
    let typed: Plan = serde_json::from_slice(&serde_json::to_vec(&plan).unwrap()).unwrap();
    assert_eq!(typed, plan);
}

/// A wheel recipe without `--py` makes one `py3` wheel: the plan says so (`"py3"`),
/// and hashes apart from a plan with Pythons; a plan with a list (every plan from
/// before `py3` wheels) reads back as that list and keeps its hash.
#[test]
fn a_wheel_plan_without_pythons_is_py3_and_hashes_apart() {
    let r = recipe("llama-cpp-python");
    let o = opts(&[]);
    let py3 = make(&r, r.release(None).unwrap(), &fake_tools(&o.cache), &o).unwrap();
    let Package::Wheel { pythons, .. } = &py3.package else {
        panic!("a wheel plan")
    };
    assert_eq!(*pythons, WheelPythons::Py3);
    let json = serde_json::to_value(&py3).unwrap();
    assert_eq!(json["package"]["pythons"], "py3");
    assert_eq!(serde_json::from_value::<Plan>(json.clone()).unwrap(), py3);
    let cp = fixture_plan("llama-cpp-python", &["311"]);
    assert_ne!(py3.hash(), cp.hash());
    let old = serde_json::to_vec(&cp).unwrap();
    assert!(
        String::from_utf8_lossy(&old).contains(r#""pythons":["3.11"]"#),
        "the list as plans always wrote it"
    );
    let read: Plan = serde_json::from_slice(&old).unwrap();
    assert_eq!(read.hash(), crate::digest::sha256_bytes(&old));
    assert_eq!(read.hash(), cp.hash());
    for (bad, says) in [
        (serde_json::json!("py2"), r#"`pythons` is "py2""#),
        (serde_json::json!([]), "an empty list"),
        (serde_json::json!(3), "neither"),
    ] {
        let mut v = json.clone();
        v["package"]["pythons"] = bad;
        let e = serde_json::from_value::<Plan>(v).unwrap_err().to_string();
        assert!(e.contains(says), "{e}");
    }
}

#[test]
fn wheel_plan_snapshot() {
    let r = recipe("llama-cpp-python");
    let o = opts(&["311", "312"]);
    let plan = make(
        &r,
        r.release(Some(&"0.3.16".parse().unwrap())).unwrap(),
        &fake_tools(&o.cache),
        &o,
    )
    .unwrap();
    insta::assert_json_snapshot!("wheel_plan_0_3_16", plan);
}

/// The Windows wheel cross-built with mingw-w64 (0.3.36, with its two mingw-only patches).
#[test]
fn mingw_wheel_plan_snapshot() {
    let r = recipe("llama-cpp-python");
    let mut o = opts(&["311"]);
    o.target = crate::platform::Target::WINDOWS_GNU;
    let plan = make(
        &r,
        r.release(None).unwrap(),
        &fake_mingw_tools(&o.cache),
        &o,
    )
    .unwrap();
    insta::assert_json_snapshot!("wheel_plan_0_3_36_windows_gnu", plan);
}

#[test]
fn archive_plan_snapshot() {
    let r = recipe("llama.cpp");
    let o = opts(&[]);
    let plan = make(
        &r,
        r.release(Some(&"0.3.36".parse().unwrap())).unwrap(),
        &fake_tools(&o.cache),
        &o,
    )
    .unwrap();
    insta::assert_json_snapshot!("archive_plan_0_3_36", plan);
}

#[test]
fn plan_is_independent_of_the_checkout_location() {
    let r = recipe("llama-cpp-python");
    let a = opts(&["311"]);
    let mut b = opts(&["311"]);
    b.cache = PathBuf::from("/elsewhere/vendor/cache");
    let pa = make(&r, r.release(None).unwrap(), &fake_tools(&a.cache), &a).unwrap();
    let pb = make(&r, r.release(None).unwrap(), &fake_tools(&b.cache), &b).unwrap();
    assert_eq!(pa.hash(), pb.hash());
    assert!(!serde_json::to_string(&pa)
        .unwrap()
        .contains("/home/someone"));
}

#[test]
fn every_setting_has_a_reason_and_native_is_off() {
    let r = recipe("llama-cpp-python");
    let o = opts(&["311"]);
    let plan = make(&r, r.release(None).unwrap(), &fake_tools(&o.cache), &o).unwrap();
    assert!(plan
        .defines
        .iter()
        .chain(&plan.env)
        .all(|s| !s.reason.trim().is_empty()));
    let get = |n: &str| {
        plan.defines
            .iter()
            .find(|d| d.name == n)
            .map(|d| d.value.as_str())
    };
    assert_eq!(get("GGML_NATIVE"), Some("OFF"));
    // Runtime dispatch: the variants set their own ISA switches; none is set globally.
    assert_eq!(get("GGML_BACKEND_DL"), Some("ON"));
    assert_eq!(get("GGML_CPU_ALL_VARIANTS"), Some("ON"));
    assert_eq!(get("GGML_AVX2"), None);
    // Each define reaches the configure command exactly once.
    for d in &plan.defines {
        let flag = format!("-D{}=", d.name);
        assert_eq!(
            plan.commands
                .configure
                .iter()
                .filter(|a| a.starts_with(&flag))
                .count(),
            1,
            "{}",
            d.name
        );
    }
}

#[test]
fn baseline_is_the_oldest_variant_shipped_and_names_the_label() {
    let r = recipe("llama-cpp-python");
    let mut o = opts(&["311"]);
    let shipped = |o: &Options| {
        let plan = make(&r, r.release(None).unwrap(), &fake_tools(&o.cache), o).unwrap();
        let Package::Wheel { local, modules, .. } = &plan.package else {
            panic!()
        };
        let names: Vec<String> = plan.cpu_variants.iter().map(|v| v.name.clone()).collect();
        assert_eq!(
            modules,
            &names
                .iter()
                .map(|n| format!("ggml-cpu-{n}"))
                .collect::<Vec<_>>()
        );
        (names, local.to_string())
    };
    let (v2, label) = shipped(&o);
    assert_eq!(
        v2,
        ["sse42", "haswell", "icelake", "alderlake", "sapphirerapids"]
    );
    assert_eq!(label, "cpu");
    o.cpu_baseline = CpuBaseline::V3;
    let (v3, label) = shipped(&o);
    assert_eq!(v3, ["haswell", "icelake", "alderlake", "sapphirerapids"]);
    assert_eq!(label, "cpu.v3");
}

#[test]
fn the_archive_ships_the_variants_beside_the_tools() {
    let r = recipe("llama.cpp");
    let o = opts(&[]);
    let plan = make(&r, r.release(None).unwrap(), &fake_tools(&o.cache), &o).unwrap();
    let Package::Archive { libraries, .. } = &plan.package else {
        panic!()
    };
    assert!(
        libraries.contains(&"ggml-cpu-sse42".to_string()),
        "{libraries:?}"
    );
    assert!(
        !libraries.contains(&"ggml-cpu".to_string()),
        "{libraries:?}"
    );
    let v = &plan.cpu_variants[0];
    assert_eq!(
        (v.file.as_str(), v.loaded_on[0].as_str()),
        ("libggml-cpu-sse42.so", "Nehalem")
    );
}

/// mingw-w64 cross tools as detection reports Debian's.
pub(crate) fn fake_mingw_tools(cache: &Path) -> Toolchains {
    let mut t = fake_tools(cache);
    t.compiler = Some(Compiler {
        kind: CompilerKind::Gcc,
        cc: "/usr/bin/x86_64-w64-mingw32-gcc-posix".into(),
        cxx: "/usr/bin/x86_64-w64-mingw32-g++-posix".into(),
        version: "12.0.0".parse().unwrap(),
        origin: Origin::System,
        msvc: None,
        mingw: Some(crate::platform::mingw::Mingw {
            sysroot: "/usr/x86_64-w64-mingw32".into(),
            windres: "/usr/bin/x86_64-w64-mingw32-windres".into(),
        }),
        pinned: None,
    });
    t
}

/// `--target aarch64-unknown-linux-gnu` on x86-64: the pinned cross toolchain
/// (`toolchains/linux-gcc-aarch64.toml`), CMake told it cross-compiles for aarch64, the
/// six Arm CPU variants GCC 12 builds (the two SME ones skipped with the reason), the
/// archive named for linux-aarch64, the target in the plan. The host's own g++ is refused.
#[test]
fn aarch64_plan_cross_compiles_with_the_pinned_cross_toolchain() {
    let r = recipe("llama.cpp");
    let mut o = opts(&[]);
    o.target = crate::platform::Target::LINUX_AARCH64;
    let mut tools = fake_tools(&o.cache);
    let e = make(&r, &r.releases[0], &tools, &o)
        .unwrap_err()
        .to_string();
    assert_eq!(e, "--target aarch64-unknown-linux-gnu: the compiler found (/usr/bin/g++-12) builds for x86_64-unknown-linux-gnu; leave --host-cc, CC and CXX unset for the pinned toolchain of aarch64-unknown-linux-gnu, or name a compiler for aarch64 (e.g. aarch64-linux-gnu-g++)");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let pinned =
        crate::provision::gcc::Pinned::load_origin(&root, crate::provision::gcc::FILE_AARCH64)
            .unwrap();
    tools.compiler = Some(pinned.compiler(&o.cache));
    let plan = make(&r, &r.releases[0], &tools, &o).unwrap();
    let define = |n: &str| {
        plan.defines
            .iter()
            .find(|d| d.name == n)
            .map(|d| (d.value.clone(), d.reason.clone()))
    };
    assert_eq!(define("CMAKE_SYSTEM_NAME").unwrap().0, "Linux");
    assert_eq!(define("CMAKE_SYSTEM_PROCESSOR").unwrap().0, "aarch64");
    assert!(define("CMAKE_CXX_COMPILER")
        .unwrap()
        .0
        .ends_with("/usr/bin/aarch64-linux-gnu-g++-12"));
    assert!(define("CMAKE_SYSROOT")
        .unwrap()
        .0
        .starts_with("${CACHE}/tools/gcc-12.2.0-aarch64"));
    let names: Vec<&str> = plan.cpu_variants.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "armv8.0_1",
            "armv8.2_1",
            "armv8.2_2",
            "armv8.2_3",
            "armv8.6_1",
            "armv8.6_2"
        ]
    );
    assert_eq!(plan.cpu_variants[0].file, "libggml-cpu-armv8.0_1.so");
    let (_, why) = define("GGML_CPU_ALL_VARIANTS").unwrap();
    assert!(
        why.contains("not built: armv9.2_1: GCC 12") && why.contains("armv9.2_2"),
        "{why}"
    );
    assert_eq!(
        define("LLAMA_FORGE_CPU_VARIANTS").map(|d| d.0),
        Some(names.join(","))
    );
    match &plan.package {
        crate::plan::package::Package::Archive { stem, .. } => {
            assert_eq!(stem, "llama.cpp-0.3.36-cpu-linux-aarch64")
        }
        p => panic!("{p:?}"),
    }
    assert_eq!(
        serde_json::to_value(&plan).unwrap()["target"],
        "aarch64-unknown-linux-gnu"
    );
    // A cross compiler of the system, named for its target, is taken.
    let mut cross = fake_tools(&o.cache);
    if let Some(c) = cross.compiler.as_mut() {
        c.cc = "/usr/bin/aarch64-linux-gnu-gcc-12".into();
        c.cxx = "/usr/bin/aarch64-linux-gnu-g++-12".into();
    }
    let p = make(&r, &r.releases[0], &cross, &o).unwrap();
    assert_eq!(p.cpu_variants.len(), 6);
    // On an aarch64 host the same target is native: no cross defines.
    o.host_arch = crate::platform::Arch::Aarch64;
    let native = make(&r, &r.releases[0], &fake_tools(&o.cache), &o).unwrap();
    assert!(native.defines.iter().all(|d| d.name != "CMAKE_SYSTEM_NAME"));
}

/// The pinned toolchain (`toolchains/linux-gcc.toml`): its compilers and binutils under
/// `${CACHE}`, the sysroot for every compile and link, libstdc++ linked in hidden, and no
/// path of this machine in the plan (PATH is the system dirs only).
#[test]
fn pinned_toolchain_plan_uses_its_sysroot_and_names_no_machine_path() {
    let r = recipe("llama.cpp");
    let o = opts(&[]);
    let mut tools = fake_tools(&o.cache);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let pinned = crate::provision::gcc::Pinned::load(&root).unwrap();
    tools.compiler = Some(pinned.compiler(&o.cache));
    let plan = make(&r, &r.releases[0], &tools, &o).unwrap();
    let define = |n: &str| {
        plan.defines
            .iter()
            .find(|d| d.name == n)
            .map(|d| d.value.clone())
    };
    let tree = format!(
        "${{CACHE}}/tools/{}",
        pinned.tree(&o.cache).file_name().unwrap().to_string_lossy()
    );
    assert_eq!(
        define("CMAKE_CXX_COMPILER"),
        Some(format!("{tree}/usr/bin/x86_64-linux-gnu-g++-12"))
    );
    assert_eq!(
        define("CMAKE_AR"),
        Some(format!("{tree}/usr/bin/x86_64-linux-gnu-ar"))
    );
    assert_eq!(define("CMAKE_SYSROOT"), Some(format!("{tree}/sysroot")));
    for n in [
        "CMAKE_SHARED_LINKER_FLAGS",
        "CMAKE_MODULE_LINKER_FLAGS",
        "CMAKE_EXE_LINKER_FLAGS",
    ] {
        let v = define(n).unwrap();
        assert!(
            v.contains(&format!("--sysroot={tree}/sysroot"))
                && v.contains("-static-libstdc++")
                && v.contains("--exclude-libs,ALL"),
            "{n}: {v}"
        );
    }
    assert!(define("CMAKE_EXE_LINKER_FLAGS")
        .unwrap()
        .contains("--allow-shlib-undefined"));
    assert!(
        define("CMAKE_INSTALL_RPATH").is_some(),
        "still the ELF rules"
    );
    let json = serde_json::to_string(&plan).unwrap();
    assert!(
        !json.contains(&o.cache.display().to_string()),
        "the cache's path is in the plan: {json}"
    );
    let path = plan.env.iter().find(|e| e.name == "PATH").unwrap();
    assert_eq!(path.value, "/usr/bin:/bin");
    assert!(
        matches!(&plan.tools.cxx.origin, Origin::PinnedSet { file, .. } if file == "toolchains/linux-gcc.toml")
    );
    // No patch reads the tools' shared C++ runtime in this recipe: none is planned.
    assert_eq!(define(defines::CXX_RUNTIME), None);
    assert_eq!(plan.shared_cxx_runtime(), None);
}

/// Where a patch links the tools against one shared C++ runtime, a pinned-GCC plan names
/// the static runtime to link it from and its file; a compiler that links the system's
/// libstdc++.so.6 (one runtime already) gets neither, patch or not.
#[test]
fn the_tools_shared_cxx_runtime_is_planned_where_each_library_would_link_its_own() {
    let mut r = recipe("llama.cpp");
    r.patches.push(crate::recipe::Patch {
        file: "CMakeLists.txt".into(),
        find: "a".into(),
        replace: "if (${LLAMA_FORGE_CXX_RUNTIME})".into(),
        reason: "test".into(),
        targets: vec![],
        meta: crate::recipe::PatchMeta {
            provides: vec![crate::recipe::Feature::SharedCxxRuntime],
            ..Default::default()
        },
    });
    let o = opts(&[]);
    let mut tools = fake_tools(&o.cache);
    let system = make(&r, &r.releases[0], &tools, &o).unwrap();
    assert!(system
        .defines
        .iter()
        .all(|d| !d.name.starts_with(defines::CXX_RUNTIME)));
    assert_eq!(system.shared_cxx_runtime(), None);

    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let pinned = crate::provision::gcc::Pinned::load(&root).unwrap();
    tools.compiler = Some(pinned.compiler(&o.cache));
    let plan = make(&r, &r.releases[0], &tools, &o).unwrap();
    let define = |n: &str| plan.defines.iter().find(|d| d.name == n);
    let tree = format!(
        "${{CACHE}}/tools/{}",
        pinned.tree(&o.cache).file_name().unwrap().to_string_lossy()
    );
    assert_eq!(
        define(defines::CXX_RUNTIME).map(|d| d.value.as_str()),
        Some(format!("{tree}/usr/lib/gcc/x86_64-linux-gnu/12/libstdc++.a").as_str())
    );
    assert_eq!(
        define(defines::CXX_RUNTIME_NAME).map(|d| d.value.as_str()),
        Some("llama-forge-stdc++")
    );
    assert!(define(defines::CXX_RUNTIME)
        .unwrap()
        .reason
        .contains("one shared runtime"));
    assert_eq!(
        plan.shared_cxx_runtime().as_deref(),
        Some("libllama-forge-stdc++.so")
    );
}

/// `--target x86_64-pc-windows-gnu`: CMake cross-compiles with the mingw-w64
/// compilers, finds only the sysroot's libraries, links the GCC runtime into
/// every PE file without a timestamp; no ELF settings; DLL names; the target's
/// own patches and no other target's; the target in the plan (and so its hash).
#[test]
fn mingw_plan_cross_builds_windows_dlls_with_the_static_runtime() {
    let mut r = recipe("llama.cpp");
    let only_mingw = crate::recipe::Patch {
        file: "ggml/src/ggml-cpu/ggml-cpu.c".into(),
        find: "a".into(),
        replace: "b".into(),
        reason: "test".into(),
        targets: vec![crate::platform::Target::WINDOWS_GNU],
        meta: Default::default(),
    };
    r.releases[0].patches.push(only_mingw.clone());
    let mut o = opts(&[]);
    o.target = crate::platform::Target::WINDOWS_GNU;
    let tools = fake_mingw_tools(&o.cache);
    let plan = make(&r, &r.releases[0], &tools, &o).unwrap();
    let define = |n: &str| {
        plan.defines
            .iter()
            .find(|d| d.name == n)
            .map(|d| d.value.as_str())
    };
    assert_eq!(define("CMAKE_SYSTEM_NAME"), Some("Windows"));
    assert_eq!(
        define("CMAKE_CXX_COMPILER"),
        Some("/usr/bin/x86_64-w64-mingw32-g++-posix")
    );
    assert_eq!(
        define("CMAKE_FIND_ROOT_PATH"),
        Some("/usr/x86_64-w64-mingw32")
    );
    assert_eq!(define("CMAKE_FIND_ROOT_PATH_MODE_LIBRARY"), Some("ONLY"));
    for n in [
        "CMAKE_EXE_LINKER_FLAGS",
        "CMAKE_SHARED_LINKER_FLAGS",
        "CMAKE_MODULE_LINKER_FLAGS",
    ] {
        let v = define(n).unwrap();
        assert!(
            v.contains("-static-libstdc++")
                && v.contains("--exclude-libs,ALL")
                && v.contains("--no-insert-timestamp"),
            "{n}: {v}"
        );
    }
    assert_eq!(define("GGML_OPENMP"), Some("OFF"));
    for elf in [
        "CMAKE_INSTALL_RPATH",
        "CMAKE_BUILD_WITH_INSTALL_RPATH",
        "CMAKE_BUILD_RPATH_USE_ORIGIN",
        "CMAKE_PLATFORM_NO_VERSIONED_SONAME",
    ] {
        assert_eq!(define(elf), None, "{elf}");
    }
    assert!(plan
        .cpu_variants
        .iter()
        .all(|v| v.file.starts_with("ggml-cpu-") && v.file.ends_with(".dll")));
    let Package::Archive { stem, .. } = &plan.package else {
        panic!()
    };
    assert_eq!(stem, "llama.cpp-0.3.36-cpu-windows-x86_64");
    assert!(plan.source.patches.contains(&only_mingw));
    let json = serde_json::to_value(&plan).unwrap();
    assert_eq!(json["target"], "x86_64-pc-windows-gnu");

    // The Linux plan: no target in its JSON, nor the mingw-only patch.
    let linux = make(
        &r,
        &r.releases[0],
        &fake_tools(&opts(&[]).cache),
        &opts(&[]),
    )
    .unwrap();
    assert!(!linux.source.patches.contains(&only_mingw));
    assert!(serde_json::to_value(&linux)
        .unwrap()
        .get("target")
        .is_none());
    assert_ne!(linux.hash(), plan.hash());

    // Cross tools for a Linux target, or Linux tools for the mingw target: refused.
    let e = make(&r, &r.releases[0], &tools, &opts(&[])).unwrap_err();
    assert_eq!(e.to_string(), "--target x86_64-unknown-linux-gnu: the compiler found (/usr/bin/x86_64-w64-mingw32-g++-posix) builds for x86_64-pc-windows-gnu; leave --host-cc, CC and CXX unset for the pinned toolchain of x86_64-unknown-linux-gnu, or name a compiler for x86_64 (e.g. x86_64-linux-gnu-g++)");
    let e = make(&r, &r.releases[0], &fake_tools(&o.cache), &o).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("--target x86_64-pc-windows-gnu: the compiler found"),
        "{e}"
    );
}

#[test]
fn msvc_cpu_plan_runs_in_the_toolset_environment_without_elf_settings() {
    let r = recipe("llama.cpp");
    let mut o = opts(&[]);
    o.target = crate::platform::Target::WINDOWS_MSVC;
    let plan = make(
        &r,
        r.release(None).unwrap(),
        &fake_windows_tools(vs2026_14_50(), vec![vs2026_14_44()]),
        &o,
    )
    .unwrap();
    let get = |n: &str| {
        plan.defines
            .iter()
            .find(|d| d.name == n)
            .map(|d| d.value.as_str())
    };
    let cl = r"C:\Program Files\Microsoft Visual Studio\18\Community\VC\Tools\MSVC\14.50.35717\bin\HostX64\x64\cl.exe";
    assert_eq!(
        (get("CMAKE_C_COMPILER"), get("CMAKE_CXX_COMPILER")),
        (Some(cl), Some(cl))
    );
    assert_eq!(
        get("CMAKE_CXX_FLAGS"),
        Some("/DWIN32 /D_WINDOWS /EHsc /Brepro /d1trimfile:${SRC}")
    );
    // The C++ runtime is decided (/MT: no Visual C++ Redistributable needed) and the
    // linker is deterministic too.
    assert_eq!(get("CMAKE_MSVC_RUNTIME_LIBRARY"), Some("MultiThreaded"));
    assert_eq!(get("CMAKE_POLICY_DEFAULT_CMP0091"), Some("NEW"));
    assert_eq!(
        (
            get("CMAKE_SHARED_LINKER_FLAGS"),
            get("CMAKE_EXE_LINKER_FLAGS")
        ),
        (Some("/Brepro"), Some("/Brepro"))
    );
    assert_eq!(get("GGML_CUDA"), Some("OFF"));
    for elf in [
        "CMAKE_INSTALL_RPATH",
        "CMAKE_BUILD_WITH_INSTALL_RPATH",
        "CMAKE_BUILD_RPATH_USE_ORIGIN",
        "CMAKE_PLATFORM_NO_VERSIONED_SONAME",
    ] {
        assert_eq!(get(elf), None, "{elf} is ELF-only");
    }
    let env = |n: &str| plan.env.iter().find(|e| e.name == n);
    let ts = env("VCToolsVersion").unwrap();
    assert_eq!(
        ts.value, "14.50.35717",
        "the host toolset: no CUDA, no policy"
    );
    assert_eq!(
        ts.reason,
        "from vcvars64.bat -vcvars_ver=14.50 (Visual Studio Community 2026)"
    );
    assert!(env("LC_ALL").is_none() && env("TZ").is_some() && env("SOURCE_DATE_EPOCH").is_some());
    assert_eq!(plan.tools.cxx.kind, Some(CompilerKind::Msvc));
    assert_eq!(plan.tools.cxx.version.to_string(), "19.50.35717");
    assert_eq!(
        plan.tools.msvc.as_ref().unwrap().toolset.to_string(),
        "14.50.35717"
    );
    let Package::Archive { stem, .. } = &plan.package else {
        panic!()
    };
    assert!(stem.ends_with("-cpu-windows-x86_64"), "{stem}");
    for d in &plan.defines {
        let flag = format!("-D{}=", d.name);
        assert_eq!(
            plan.commands
                .configure
                .iter()
                .filter(|a| a.starts_with(&flag))
                .count(),
            1,
            "{}",
            d.name
        );
    }
    assert!(plan
        .defines
        .iter()
        .chain(&plan.env)
        .all(|s| !s.reason.trim().is_empty()));
}

/// A CUDA 13.0 toolkit at /usr/local/cuda-13.0, as `nvcc --version` describes it.
pub(crate) fn cuda_13_0() -> crate::detect::cuda::Toolkit {
    let out =
        "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 13.0, V13.0.88\n";
    crate::detect::cuda::Toolkit {
        root: "/usr/local/cuda-13.0".into(),
        nvcc: "/usr/local/cuda-13.0/bin/nvcc".into(),
        version: crate::cuda::NvccVersion::from_nvcc_output(out).unwrap(),
        origin: Origin::System,
        cuobjdump: Some((
            "/usr/local/cuda-13.0/bin/cuobjdump".into(),
            "13.0.88".parse().unwrap(),
        )),
        found_by: "test".into(),
        cuda_path_flag: false,
        lacks_target: None,
    }
}

/// Every optional dependency of the audit (docs/optional-dependencies.md) is decided in
/// every plan: both recipes, every release, CPU and CUDA, Linux and MSVC. Each reaches
/// the configure command once, off (or disabled), whoever set it; nothing is left to
/// llama.cpp's defaults or to what the build machine has.
#[test]
fn every_optional_dependency_is_decided_in_every_plan() {
    let mut plans = Vec::new();
    for name in ["llama-cpp-python", "llama.cpp"] {
        let r = recipe(name);
        for rel in &r.releases {
            let mut o = opts(if name == "llama.cpp" { &[] } else { &["311"] });
            plans.push(make(&r, rel, &fake_tools(&o.cache), &o).unwrap());
            o.accelerator = "rtx5060ti".parse().unwrap();
            let mut t = fake_tools(&o.cache);
            t.cuda = vec![cuda_13_0()];
            t.patchelf = t.ninja.clone();
            plans.push(make(&r, rel, &t, &o).unwrap());
        }
        let mut o = opts(if name == "llama.cpp" { &[] } else { &["311"] });
        o.target = crate::platform::Target::WINDOWS_MSVC;
        plans.push(
            make(
                &r,
                r.release(None).unwrap(),
                &fake_windows_tools(vs2026_14_50(), vec![]),
                &o,
            )
            .unwrap(),
        );
    }
    let profile = recipe("llama-cpp-python").profile.unwrap();
    let optional = &profile.defines;
    assert_eq!(
        optional.len(),
        44,
        "GGML_NATIVE, GGML_CCACHE, GGML_BACKEND_DL and 41 more"
    );
    for plan in &plans {
        let at = format!("{} {} {}", plan.recipe, plan.version, plan.accelerator);
        for dep in optional {
            let found: Vec<&Setting> = plan.defines.iter().filter(|d| d.name == dep.name).collect();
            assert_eq!(found.len(), 1, "{at}: {} decided once", dep.name);
            assert_eq!(found[0].value, dep.value, "{at}: {}", dep.name);
            assert!(!found[0].reason.trim().is_empty());
            let flag = format!("-D{}={}", dep.name, dep.value);
            assert_eq!(
                plan.commands
                    .configure
                    .iter()
                    .filter(|a| **a == flag)
                    .count(),
                1,
                "{at}: {flag}"
            );
        }
    }
    // The ones that made the issue: NCCL in CUDA plans, OpenMP, and the build info from git.
    let cuda = plans
        .iter()
        .find(|p| {
            p.cuda.is_some() && p.recipe == "llama-cpp-python" && p.version.to_string() == "0.3.36"
        })
        .unwrap();
    let get = |n: &str| {
        cuda.defines
            .iter()
            .find(|d| d.name == n)
            .map(|d| d.value.as_str())
    };
    assert_eq!(get("GGML_CUDA"), Some("ON"));
    assert_eq!(get("GGML_CUDA_NCCL"), Some("OFF"));
    assert_eq!(get("CMAKE_DISABLE_FIND_PACKAGE_NCCL"), Some("ON"));
    assert_eq!(get("GGML_OPENMP"), Some("OFF"));
    assert_eq!(
        (get("GIT_EXECUTABLE"), get("GIT_EXE")),
        (Some(""), Some(""))
    );
    // The recipes' own reasons win where they decide the same thing.
    let curl = cuda
        .defines
        .iter()
        .find(|d| d.name == "LLAMA_CURL")
        .unwrap();
    assert_eq!(
        (curl.value.as_str(), curl.origin.as_str()),
        ("OFF", "recipe")
    );
}

/// The audit lists every define the plan sets for an optional dependency, and the
/// packaging gate can name the define for each library one would link.
#[test]
fn the_audit_documents_every_decision() {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/optional-dependencies.md"),
    )
    .unwrap();
    let profile = recipe("llama-cpp-python").profile.unwrap();
    let deciding_define = |l: &str| profile.deciding_define(l).map(|d| d.name.clone());
    for dep in &profile.defines {
        assert!(
            doc.contains(&format!("`{}", dep.name)),
            "docs/optional-dependencies.md does not mention {}",
            dep.name
        );
    }
    assert_eq!(
        deciding_define("libnccl.so.2").as_deref(),
        Some("GGML_CUDA_NCCL")
    );
    assert_eq!(
        deciding_define("libgomp.so.1").as_deref(),
        Some("GGML_OPENMP")
    );
    assert_eq!(
        deciding_define("libcrypto.so.3").as_deref(),
        Some("LLAMA_OPENSSL")
    );
    assert_eq!(deciding_define("libfoo.so.1"), None);
}

#[test]
fn errors_name_what_is_missing() {
    let r = recipe("llama-cpp-python");
    let o = opts(&["311"]);
    let mut t = fake_tools(&o.cache);
    t.compiler = None;
    let e = make(&r, r.release(None).unwrap(), &t, &o)
        .unwrap_err()
        .to_string();
    assert!(e.contains("C++ compiler") && e.contains("CXX"), "{e}");
    let a = recipe("llama.cpp");
    let e = make(&a, a.release(None).unwrap(), &fake_tools(&o.cache), &o)
        .unwrap_err()
        .to_string();
    assert!(e.contains("wheels only"), "{e}");
    let mut t = fake_tools(&o.cache);
    t.cmake.as_mut().unwrap().version = "3.16.3".parse().unwrap();
    let e = make(&r, r.release(None).unwrap(), &t, &o)
        .unwrap_err()
        .to_string();
    assert!(e.contains("3.16.3") && e.contains("3.21"), "{e}");
}

/// `--define NAME=VALUE`: in the plan with its reason and origin, in the configure command,
/// in the hash; one the plan sets itself is refused, naming the option that decides it.
#[test]
fn a_define_from_the_command_line_is_planned_and_one_of_the_plans_refused() {
    let r = crate::recipe::fixture("llama-cpp-python");
    let mut o = opts(&[]);
    let plain = make(&r, r.release(None).unwrap(), &fake_tools(&o.cache), &o).unwrap();
    o.defines = vec![("GGML_CUDA_FA_ALL_QUANTS".into(), "ON".into())];
    let p = make(&r, r.release(None).unwrap(), &fake_tools(&o.cache), &o).unwrap();
    let d = p
        .defines
        .iter()
        .find(|d| d.name == "GGML_CUDA_FA_ALL_QUANTS")
        .unwrap();
    assert_eq!(d.value, "ON");
    assert_eq!(d.reason, "asked for on the command line (--define)");
    assert_eq!(d.origin, setting::SettingOrigin::CommandLine);
    assert_ne!(p.hash(), plain.hash());
    let json = serde_json::to_string(&p).unwrap();
    assert!(json.contains("\"command-line\""), "{json}");
    assert!(
        p.commands
            .configure
            .iter()
            .any(|a| a == "-DGGML_CUDA_FA_ALL_QUANTS=ON"),
        "{:?}",
        p.commands
    );

    o.defines = vec![("GGML_NATIVE".into(), "ON".into())];
    let e = make(&r, r.release(None).unwrap(), &fake_tools(&o.cache), &o)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(
            "--define GGML_NATIVE=ON: the plan sets GGML_NATIVE itself (GGML_NATIVE=OFF: "
        ) && e.ends_with("give --cpu-baseline instead"),
        "{e}"
    );
}

#[test]
fn cmake_args_is_named_with_what_does_the_same() {
    assert_eq!(
        defines::cmake_args_warning(" -DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES=120 -DLLAMA_CURL:BOOL=OFF -G Ninja"),
        "CMAKE_ARGS is set (-DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES=120 -DLLAMA_CURL:BOOL=OFF -G Ninja) and not read: the plan decides every CMake define; instead give GGML_CUDA: --arch (120, 90, cpu), CMAKE_CUDA_ARCHITECTURES: --arch (120, 90, cpu), LLAMA_CURL: --define LLAMA_CURL=OFF"
    );
}

/// A recipe without a profile gets none of ggml's policy: no GGML_* define, no optional
/// dependency switched, no CPU variants or CUDA groups; the host compiler, build type and
/// CUDA toolkit are still the plan's.
#[test]
fn a_recipe_without_the_profile_gets_none_of_ggmls_policy() {
    let mut r = recipe("llama-cpp-python");
    let profile = r.profile.take().unwrap();
    for p in r
        .patches
        .iter_mut()
        .chain(r.releases.iter_mut().flat_map(|r| r.patches.iter_mut()))
    {
        p.meta
            .provides
            .retain(|f| *f == crate::recipe::Feature::SharedCxxRuntime);
    }
    let mut o = opts(&["311"]);
    o.accelerator = "120".parse::<Accelerator>().unwrap();
    let mut t = fake_tools(&o.cache);
    t.cuda = vec![crate::plan::cuda::tests::toolkit(
        "/usr/local/cuda-13.0",
        "13.0.88",
    )];
    t.patchelf = t.ninja.clone();
    let plan = make(&r, r.release(None).unwrap(), &t, &o).unwrap();
    let names: Vec<&str> = plan.defines.iter().map(|d| d.name.as_str()).collect();
    for d in &profile.defines {
        // The recipe's own defines stay (LLAMA_CURL is the recipe's as well as the profile's).
        let recipe_sets = r.cmake.defines.iter().any(|c| c.name == d.name);
        assert_eq!(names.contains(&d.name.as_str()), recipe_sets, "{}", d.name);
    }
    for n in [
        "GGML_CUDA",
        "GGML_CPU_ALL_VARIANTS",
        "LLAMA_FORGE_CPU_VARIANTS",
        "LLAMA_FORGE_CUDA_GROUPS",
    ] {
        assert!(!names.contains(&n), "{n} in {names:?}");
    }
    for n in [
        "CMAKE_CUDA_ARCHITECTURES",
        "CMAKE_CUDA_COMPILER",
        "CMAKE_BUILD_TYPE",
    ] {
        assert!(names.contains(&n), "{n} not in {names:?}");
    }
}
