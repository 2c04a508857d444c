use super::*;

fn toolchains() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../toolchains")
}

fn v(s: &str) -> Version {
    s.parse().unwrap()
}

/// Every pin file: nvcc, driver floor, the cuobjdump (13.0 and 13.1 have none of
/// their own: 13.2.86 reads their output) and the cuBLAS cuda-toolkit pairs with it.
#[test]
fn shipped_pins_parse() {
    let pin = |s: &CudaSpec, n: &str| {
        s.wheels
            .iter()
            .find(|w| w.name == n)
            .unwrap_or_else(|| panic!("{} pins no {n}", s.release))
            .version
            .to_string()
    };
    let want = [
        ("13.0", "13.0.88", "580", "13.2.86", "13.0.2.14"),
        ("13.1", "13.1.115", "580", "13.2.86", "13.1.2.11"),
        ("13.2", "13.2.86", "580", "13.2.86", "13.4.1.3"),
        ("13.3", "13.3.73", "580", "13.3.73", "13.6.0.2"),
        ("13.4", "13.4.92", "580", "13.4.92", "13.8.0.4"),
        ("13.5", "13.5.37", "580", "13.5.37", "13.10.0.20"),
    ];
    let mut pinned = crate::plan::cuda::PINNED_RELEASES;
    pinned.reverse();
    assert_eq!(pinned, want.map(|w| w.0));
    for (release, nvcc, driver, cuobjdump, cublas) in want {
        let spec = CudaSpec::load(&toolchains(), &v(release)).unwrap();
        assert_eq!(
            (
                spec.nvcc_version.to_string().as_str(),
                crate::plan::cuda::driver_floor(
                    &release.parse().unwrap(),
                    crate::platform::Os::Linux
                )
                .unwrap()
                .to_string()
                .as_str(),
                pin(&spec, "nvidia-cuda-cuobjdump").as_str(),
                pin(&spec, "nvidia-cublas").as_str(),
            ),
            (nvcc, driver, cuobjdump, cublas),
            "{release}"
        );
        let slim = spec.without(&["nvidia-cublas"]).unwrap();
        assert!(
            slim.download_size() < 140_000_000 && spec.download_size() > 500_000_000,
            "{release}: {}",
            slim.download_size()
        );
    }
    let s13 = CudaSpec::load(&toolchains(), &v("13.0")).unwrap();
    assert_eq!(
        [
            pin(&s13, "nvidia-cuda-runtime"),
            pin(&s13, "nvidia-cuda-cccl"),
            pin(&s13, "nvidia-cublas")
        ],
        ["13.0.96", "13.0.85", "13.0.2.14"]
    );
}

/// The pin files on disk are exactly `PINNED_RELEASES` (one list), and each pins
/// Linux x86-64, Linux aarch64 and Windows x86-64 wheels, every one a download from
/// files.pythonhosted.org with its sha256 and size; the Windows set names the Linux
/// wheels at the Linux versions (13.1's cuBLAS excepted: 13.1.2.11 has no Windows
/// wheel, 13.1.1.3 of the same release stands in).
#[test]
fn every_pin_file_has_linux_aarch64_and_windows_wheels() {
    let mut on_disk: Vec<String> = std::fs::read_dir(toolchains())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter_map(|n| {
            n.strip_prefix("cuda-")
                .and_then(|r| r.strip_suffix(".toml"))
                .map(str::to_string)
        })
        .collect();
    on_disk.sort_by_key(|r| std::cmp::Reverse(v(r)));
    assert_eq!(on_disk, crate::plan::cuda::PINNED_RELEASES);
    let mut hashes = std::collections::BTreeMap::new();
    for release in crate::plan::cuda::PINNED_RELEASES {
        let spec = CudaSpec::load(&toolchains(), &v(release)).unwrap();
        for (what, wheels, ending) in [
            ("x86-64", &spec.wheels, "_x86_64.whl"),
            ("aarch64", &spec.aarch64_wheels, "_aarch64.whl"),
            ("windows", &spec.windows_wheels, "-win_amd64.whl"),
        ] {
            assert!(!wheels.is_empty(), "{release}: no {what} wheels");
            for w in wheels {
                assert!(
                    w.url
                        .starts_with("https://files.pythonhosted.org/packages/")
                        && w.url.ends_with(ending),
                    "{release} {what} {}: {}",
                    w.name,
                    w.url
                );
                assert!(
                    w.size > 100_000,
                    "{release} {what} {}: size {}",
                    w.name,
                    w.size
                );
                // One hash, one file: a wheel shared by releases (cuobjdump 13.2.86) is the same pin.
                let same = hashes
                    .entry(w.sha256.clone())
                    .or_insert_with(|| w.url.clone());
                assert_eq!(
                    same, &w.url,
                    "{release} {what} {}: its sha256 is another file's",
                    w.name
                );
            }
        }
        let names = |ws: &[CudaWheel]| ws.iter().map(|w| w.name.clone()).collect::<Vec<_>>();
        assert_eq!(
            names(&spec.windows_wheels),
            names(&spec.wheels),
            "{release}"
        );
        for w in &spec.windows_wheels {
            let linux = spec.wheels.iter().find(|l| l.name == w.name).unwrap();
            match (release, w.name.as_str()) {
                ("13.1", "nvidia-cublas") => {
                    assert_eq!(w.version.to_string(), "13.1.1.3");
                    assert_eq!(linux.version.to_string(), "13.1.2.11");
                }
                _ => assert_eq!(w.version, linux.version, "{release} {}", w.name),
            }
        }
    }
}

fn pins_13_0() -> String {
    std::fs::read_to_string(toolchains().join("cuda-13.0.toml")).unwrap()
}

fn parse_err(text: &str) -> String {
    format!(
        "{:#}",
        CudaSpec::parse(text, Path::new("x.toml")).unwrap_err()
    )
}

#[test]
fn unknown_field_is_named_with_file() {
    let e = parse_err(&pins_13_0().replacen("size = ", "bytes = ", 1));
    assert!(e.contains("x.toml") && e.contains("bytes"), "{e}");
    let e = parse_err(&format!("color = 1\n{}", pins_13_0()));
    assert!(e.contains("color"), "{e}");
}

#[test]
fn inconsistent_pins_are_refused() {
    let e = parse_err(&pins_13_0().replacen(
        "nvcc_version = \"13.0.88\"",
        "nvcc_version = \"13.0.48\"",
        1,
    ));
    assert!(e.contains("13.0.48") && e.contains("13.0.88"), "{e}");
    let e = parse_err(&pins_13_0().replacen(
        "name = \"nvidia-nvvm\"",
        "name = \"nvidia-nvjitlink\"",
        1,
    ));
    assert!(e.contains("nvidia-nvjitlink") && e.contains("url"), "{e}");
    let e = parse_err(&pins_13_0().replacen("version = \"13.0.96\"", "version = \"13.1.80\"", 1));
    assert!(e.contains("not from CUDA 13.0"), "{e}");
    let e = parse_err(&pins_13_0().replacen("sha256 = \"", "sha256 = \"zz", 1));
    assert!(e.contains("not a sha256"), "{e}");
    let e = parse_err(&pins_13_0().replacen("release = \"13.0\"", "release = \"12.9\"", 1));
    assert!(e.contains("nvidia-cuda-nvcc-cu12"), "{e}");
    // Driver floors are the support table's, not a pin's.
    let e = parse_err(&pins_13_0().replacen(
        "release = \"13.0\"",
        "release = \"13.0\"\nmin_driver_linux = \"580.65.06\"",
        1,
    ));
    assert!(e.contains("min_driver_linux"), "{e}");
}

/// The Windows wheels of 13.0 are checked as the Linux ones are, for their own
/// platform: a Linux url among them is refused; a release without them says to
/// install CUDA on Windows.
#[test]
fn windows_pins_are_checked_and_asked_for() {
    let text = pins_13_0();
    let spec = CudaSpec::parse(&text, Path::new("cuda-13.0.toml")).unwrap();
    let win = spec.for_windows().unwrap();
    assert!(win.windows_wheels.is_empty());
    assert!(win
        .wheels
        .iter()
        .all(|w| w.url.ends_with("-py3-none-win_amd64.whl")));
    assert_eq!(
        win.wheels.iter().map(|w| &w.name).collect::<Vec<_>>(),
        spec.wheels.iter().map(|w| &w.name).collect::<Vec<_>>()
    );
    let linux_url = spec.wheels[0].url.clone();
    let windows_url = win.wheels[0].url.clone();
    let e = parse_err(&text.replacen(&windows_url, &linux_url, 1));
    assert!(
        e.contains("is not its Windows x86-64 wheel") && e.contains("win_amd64.whl"),
        "{e}"
    );
    let linux_only = CudaSpec {
        windows_wheels: vec![],
        ..spec
    };
    let e = linux_only.for_windows().unwrap_err().to_string();
    assert!(
        e.contains("no Windows wheels pinned") && e.contains("CUDA_PATH"),
        "{e}"
    );
}

/// Every release pins the aarch64 build of each of its wheels at its x86-64 version,
/// with sha256 and size (nvcc, nvvm, crt, CCCL, cuobjdump for an aarch64 host; the
/// runtime and cuBLAS also for cross builds); `for_aarch64` swaps exactly the target
/// libraries in, keeps the x86-64 programs, `for_aarch64_host` takes them all, and a
/// wheel left out stays out whichever comes first.
#[test]
fn aarch64_pins_of_every_release() {
    for release in crate::plan::cuda::PINNED_RELEASES {
        let spec = CudaSpec::load(&toolchains(), &v(release)).unwrap();
        let mut names: Vec<&str> = spec
            .aarch64_wheels
            .iter()
            .map(|w| w.name.as_str())
            .collect();
        assert_eq!(names[..2], AARCH64_TARGET_LIBRARIES[..], "{release}");
        names.sort();
        let mut x86_names: Vec<&str> = spec.wheels.iter().map(|w| w.name.as_str()).collect();
        x86_names.sort();
        assert_eq!(
            names, x86_names,
            "{release}: an aarch64 build of every wheel"
        );
        for a in &spec.aarch64_wheels {
            let x = spec.wheels.iter().find(|w| w.name == a.name).unwrap();
            assert_eq!(a.version, x.version, "{release} {}", a.name);
            assert!(a.is_aarch64() && !x.is_aarch64(), "{}", a.url);
            assert_ne!(a.sha256, x.sha256);
            assert!(a.size > 100_000, "{release} {}: size {}", a.name, a.size);
        }
        let host = spec.for_aarch64_host().unwrap();
        assert!(host.aarch64_wheels.is_empty() && host.windows_wheels.is_empty());
        assert!(host.wheels.iter().all(|w| w.is_aarch64()), "{release}");
        assert_eq!(
            host.wheels.iter().map(|w| &w.name).collect::<Vec<_>>(),
            spec.wheels.iter().map(|w| &w.name).collect::<Vec<_>>()
        );
        assert_eq!(spec.for_host(crate::platform::Arch::Aarch64).unwrap(), host);
        assert_eq!(host.for_host(crate::platform::Arch::Aarch64).unwrap(), host);
        let slim_host = spec
            .without(&["nvidia-cublas"])
            .unwrap()
            .for_aarch64_host()
            .unwrap();
        assert_eq!(
            slim_host,
            host.without(&["nvidia-cublas"]).unwrap(),
            "{release}"
        );
        // Without cuBLAS, an aarch64 host's download is about the x86-64 one's.
        assert!(
            (90_000_000..150_000_000).contains(&slim_host.download_size()),
            "{release}: {}",
            slim_host.download_size()
        );
        let names: Vec<&str> = AARCH64_TARGET_LIBRARIES.to_vec();
        let arm = spec.for_aarch64().unwrap();
        assert!(arm.aarch64_wheels.is_empty() && arm.windows_wheels.is_empty());
        assert_eq!(
            arm.wheels
                .iter()
                .map(|w| (&w.name, w.is_aarch64()))
                .collect::<Vec<_>>(),
            spec.wheels
                .iter()
                .map(|w| (&w.name, names.contains(&w.name.as_str())))
                .collect::<Vec<_>>(),
            "{release}"
        );
        let slim = arm.without(&["nvidia-cublas"]).unwrap();
        let slim_first = spec
            .without(&["nvidia-cublas"])
            .unwrap()
            .for_aarch64()
            .unwrap();
        assert_eq!(slim, slim_first, "{release}");
        assert!(slim.wheels.iter().all(|w| w.name != "nvidia-cublas"));
        // cuBLAS for aarch64 is bigger (~510-560 MB) than for x86-64.
        assert!(
            arm.download_size() > spec.download_size() && slim.download_size() < 140_000_000,
            "{release}: {} {}",
            arm.download_size(),
            slim.download_size()
        );
        // Windows pins carry no aarch64 wheel over.
        if !spec.windows_wheels.is_empty() {
            assert!(spec.for_windows().unwrap().aarch64_wheels.is_empty());
        }
    }
}

/// The aarch64 pins are checked as the others are, and for what they may be.
#[test]
fn aarch64_pins_are_checked() {
    let text = pins_13_0();
    let spec = CudaSpec::parse(&text, Path::new("x.toml")).unwrap();
    let arm_runtime = spec.aarch64_wheels[0].url.clone();
    let x86_runtime = spec
        .wheels
        .iter()
        .find(|w| w.name == "nvidia-cuda-runtime")
        .unwrap()
        .url
        .clone();
    // An x86-64 url among them.
    let e = parse_err(&text.replacen(&arm_runtime, &x86_runtime, 1));
    assert!(
        e.contains("is not its Linux aarch64 wheel") && e.contains("_aarch64.whl"),
        "{e}"
    );
    // Another version than the x86-64 pin's (url and all).
    let moved = text.replace(
        "version = \"13.0.96\"\nurl = \"https://files.pythonhosted.org/packages/87/4f/17d7b9b8e285199c58ce28e31b5c5bbaa4d8271af06a89b6405258245de2/nvidia_cuda_runtime-13.0.96-",
        "version = \"13.0.48\"\nurl = \"https://files.pythonhosted.org/packages/87/4f/17d7b9b8e285199c58ce28e31b5c5bbaa4d8271af06a89b6405258245de2/nvidia_cuda_runtime-13.0.48-",
    );
    assert_ne!(moved, text);
    let e = parse_err(&moved);
    assert!(
        e.contains("13.0.48") && e.contains("the x86-64 one is 13.0.96"),
        "{e}"
    );
    // A wheel twice.
    let nvcc_arm = "[[aarch64_wheel]]\nname = \"nvidia-cuda-nvcc\"\nversion = \"13.0.88\"\n\
        url = \"https://files.pythonhosted.org/x/nvidia_cuda_nvcc-13.0.88-py3-none-manylinux2014_aarch64.manylinux_2_17_aarch64.whl\"\n\
        sha256 = \"ee2ea2a97073e02ee2ea2a97073e02ee2ea2a97073e02ee2ea2a97073e02ee2e\"\nsize = 1\n";
    let e = parse_err(&format!("{text}\n{nvcc_arm}"));
    assert!(
        e.contains("nvidia-cuda-nvcc") && e.contains("listed twice"),
        "{e}"
    );
    // The pins without one [[aarch64_wheel]] (its table up to its `size = ` line).
    let without = |name: &str| {
        let start = text
            .find(&format!("[[aarch64_wheel]]\nname = \"{name}\""))
            .unwrap();
        let end = start + text[start..].find("size = ").unwrap();
        format!(
            "{}{}",
            &text[..start],
            &text[end..].split_once('\n').unwrap().1
        )
    };
    // One a toolkit cannot do without (nvvm: cicc) missing.
    let e = parse_err(&without("nvidia-nvvm"));
    assert!(
        e.contains("[[aarch64_wheel]]") && e.contains("`nvidia-nvvm`"),
        "{e}"
    );
    // No runtime.
    let e = parse_err(&without("nvidia-cuda-runtime"));
    assert!(
        e.contains("no `nvidia-cuda-runtime`") && e.contains("aarch64"),
        "{e}"
    );
    // A release without them says what to do.
    let none = CudaSpec {
        aarch64_wheels: vec![],
        ..spec
    };
    let e = none.for_aarch64().unwrap_err().to_string();
    assert!(
        e.contains("no aarch64 wheels pinned") && e.contains("sbsa-linux"),
        "{e}"
    );
}

/// cuBLAS and CCCL are numbered on their own: any 13.x goes with a 13.x
/// release (the url must still be that version's wheel), another major does not.
#[test]
fn cublas_and_cccl_need_only_the_major() {
    let text = pins_13_0();
    let swap = |from: &str, to: &str| text.replace(from, to);
    for (name, from, to) in [
        ("nvidia_cublas", "13.0.2.14", "13.10.0.20"),
        ("nvidia_cuda_cccl", "13.0.85", "13.3.5.0.6"),
    ] {
        let file = format!("{name}-{from}-");
        assert!(text.contains(&file), "{file}");
        let spec = CudaSpec::parse(&swap(from, to), Path::new("x.toml"))
            .unwrap_or_else(|e| panic!("{name} {to}: {e:#}"));
        assert!(spec.wheels.iter().any(|w| w.version == v(to)), "{name}");
    }
    let e = parse_err(&swap("13.0.2.14", "12.9.1.4"));
    assert!(
        e.contains("nvidia-cublas") && e.contains("not from CUDA 13.0"),
        "{e}"
    );
    let e = parse_err(&swap("13.0.85", "12.9.27"));
    assert!(
        e.contains("nvidia-cuda-cccl") && e.contains("not from CUDA 13.0"),
        "{e}"
    );
}

#[test]
fn missing_required_wheel_is_named() {
    let text = pins_13_0();
    let start = text.find("[[wheel]]\nname = \"nvidia-cuda-crt\"").unwrap();
    let end = start + text[start..].find("size = ").unwrap();
    let cut = format!(
        "{}{}",
        &text[..start],
        &text[end..].split_once('\n').unwrap().1
    );
    let e = parse_err(&cut);
    assert!(e.contains("nvidia-cuda-crt"), "{e}");
}

#[test]
fn cuda_12_needs_a_system_install() {
    for r in ["12.8", "12.9"] {
        let e = toolkit_file(&v(r)).unwrap_err().to_string();
        assert!(
            e.contains("nvidia-cuda-nvcc-cu12") && e.contains("no nvcc driver"),
            "{e}"
        );
        assert!(
            e.contains("cuda-toolkit-archive")
                && e.contains(&format!("cuda-toolkit-{}", r.replace('.', "-"))),
            "{e}"
        );
        assert!(!e.contains("sm_120"), "{e}");
        assert!(
            e.contains("ask for CUDA 13.0, 13.1, 13.2, 13.3, 13.4 or 13.5"),
            "{e}"
        );
    }
    let e = toolkit_file(&v("12.4")).unwrap_err().to_string();
    assert!(e.contains("sm_120 needs 12.8"), "{e}");
    assert!(matches!(
        toolkit_file(&v("11.8")),
        Err(NotFromIndex::TooOld(_))
    ));
    let e = CudaSpec::load(&toolchains(), &v("12.9"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("system"), "{e}");
}

#[test]
fn release_must_be_pinned_and_major_minor() {
    assert_eq!(toolkit_file(&v("13.0")).as_deref(), Ok("cuda-13.0.toml"));
    assert_eq!(toolkit_file(&v("13.1")).as_deref(), Ok("cuda-13.1.toml"));
    assert_eq!(toolkit_file(&v("13.5")).as_deref(), Ok("cuda-13.5.toml"));
    let e = toolkit_file(&v("13.6")).unwrap_err().to_string();
    assert!(
        e.contains("pinned are 13.0, 13.1, 13.2, 13.3, 13.4 and 13.5")
            && e.contains("install CUDA 13.6 from NVIDIA")
            && !e.contains("PINNED_RELEASES"),
        "{e}"
    );
    assert!(matches!(
        toolkit_file(&v("13")),
        Err(NotFromIndex::NotARelease(_))
    ));
    assert!(matches!(
        toolkit_file(&v("13.0.88")),
        Err(NotFromIndex::NotARelease(_))
    ));
}

#[test]
fn without_keeps_required_wheels() {
    let spec = CudaSpec::load(&toolchains(), &v("13.0")).unwrap();
    let e = spec.without(&["nvidia-cuda-nvcc"]).unwrap_err().to_string();
    assert!(e.contains("cannot be left out"), "{e}");
    let e = spec.without(&["nvidia-cufft"]).unwrap_err().to_string();
    assert!(
        e.contains("nvidia-cufft") && e.contains("nvidia-cublas"),
        "{e}"
    );
    let slim = spec.without(&["nvidia-cublas"]).unwrap();
    assert_eq!(slim.wheels.len(), spec.wheels.len() - 1);
}
