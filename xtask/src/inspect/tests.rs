use super::*;

/// Libraries named `<stem>_cuda<NNN>` side by side are alternatives; one of a kind
/// or in another dir is not.
#[test]
fn alternatives_are_libraries_per_cuda_runtime_side_by_side() {
    assert_eq!(
        alternative_of("bitsandbytes/libbitsandbytes_cuda128.so"),
        Some(("bitsandbytes/libbitsandbytes".into(), 128))
    );
    assert_eq!(
        alternative_of("bitsandbytes\\libbitsandbytes_cuda130.dll").map(|a| a.1),
        Some(130)
    );
    for not in [
        "lib/libggml-cuda.so",
        "libfoo_cudart.so",
        "x_cuda12.txt",
        "_cuda12.so",
    ] {
        assert_eq!(alternative_of(not), None, "{not}");
    }
    let stems = alternative_stems(&[
        "a/libx_cuda118.so",
        "a/libx_cuda128.so",
        "b/libx_cuda128.so",
    ]);
    assert_eq!(stems.into_iter().collect::<Vec<_>>(), ["a/libx"]);
    let code = |a: &str| -> BTreeSet<EmbeddedCode> {
        [EmbeddedCode {
            kind: CodeKind::Sass,
            arch: a.parse().unwrap(),
        }]
        .into()
    };
    let (old, new, base) = (code("90"), code("120"), code("120"));
    let libs = [("a/libx_cuda118.so", &old), ("a/libx_cuda128.so", &new)];
    let split = Alternatives::split(&libs);
    assert_eq!(
        split.runs_on(CudaArch::plain(12, 0)),
        (Runs::Natively, vec!["libx_cuda128.so".into()])
    );
    assert_eq!(split.runs_on(CudaArch::plain(8, 0)).0, Runs::No);
    // A library always loaded still decides: it has no sm_90.
    let libs = [
        ("a/libx_cuda118.so", &old),
        ("a/libx_cuda128.so", &new),
        ("a/libcore.so", &base),
    ];
    assert_eq!(
        Alternatives::split(&libs).runs_on(CudaArch::plain(9, 0)).0,
        Runs::No
    );
}

/// A package dir with a real CPU library stored twice and one file that only looks
/// like a library: no device code, so no GPU verdicts and "CPU only"; the copy is
/// named as a duplicate; the impostor is skipped.
#[test]
fn a_cpu_package_dir_with_a_duplicate() {
    let d = tempfile::tempdir().unwrap();
    let lib = elf::test_libs::cxx_library(d.path(), "digits", false);
    let pkg = d.path().join("pkg");
    fs_err::create_dir_all(pkg.join("lib")).unwrap();
    fs_err::write(pkg.join("lib/libdigits.so"), &lib).unwrap();
    fs_err::create_dir_all(pkg.join("more")).unwrap();
    fs_err::write(pkg.join("more/libdigits.so"), &lib).unwrap();
    fs_err::write(pkg.join("lib/libfake.so"), b"not an ELF file").unwrap();
    let r = inspect(&pkg).unwrap();
    let paths: Vec<_> = r.libraries.iter().map(|l| l.path.as_str()).collect();
    assert_eq!(paths, ["lib/libdigits.so", "more/libdigits.so"]);
    assert!(r.gpus.is_empty());
    assert_eq!(r.duplicates["libdigits.so"].len(), 2);
    // It needs only libstdc++'s symbol versions (GLIBCXX_3.4.*), no glibc one.
    assert_eq!(r.libraries[0].glibc, None);
    // The manylinux tag its GLIBCXX versions imply: the one packaging gives the same library.
    let packaged = crate::package::manylinux::Policies::builtin()
        .tag_for(&[elf::parse(&lib).unwrap()], &BTreeSet::new())
        .unwrap()
        .to_string();
    assert!(packaged.starts_with("manylinux_2_"), "{packaged}");
    assert_eq!(r.libraries[0].manylinux.as_deref(), Some(packaged.as_str()));
    let t = text(&r);
    assert!(t.contains(&format!("manylinux: {packaged}")), "{t}");
    assert!(
        t.contains("no CUDA device code: runs on the CPU only"),
        "{t}"
    );
    assert!(t.contains("duplicate: libdigits.so stored 2 times"), "{t}");
    // The same library in a wheel (zip) and in a .tar.gz: read as streams.
    let whl = d.path().join("x-1-py3-none-any.whl");
    let mut z = zip::ZipWriter::new(fs_err::File::create(&whl).unwrap());
    z.start_file(
        "x/lib/libdigits.so",
        zip::write::SimpleFileOptions::default(),
    )
    .unwrap();
    std::io::Write::write_all(&mut z, &lib).unwrap();
    z.finish().unwrap();
    let tgz = d.path().join("x.tar.gz");
    let gz = flate2::write::GzEncoder::new(
        fs_err::File::create(&tgz).unwrap(),
        flate2::Compression::default(),
    );
    let mut t = tar::Builder::new(gz);
    let mut h = tar::Header::new_gnu();
    h.set_size(lib.len() as u64);
    h.set_mode(0o644);
    h.set_cksum();
    t.append_data(&mut h, "x/lib/libdigits.so", &lib[..])
        .unwrap();
    t.into_inner().unwrap().finish().unwrap();
    for a in [&whl, &tgz] {
        let r = inspect(a).unwrap();
        let paths: Vec<_> = r.libraries.iter().map(|l| l.path.as_str()).collect();
        assert_eq!(paths, ["x/lib/libdigits.so"], "{}", a.display());
    }
    // A file that is none of the kinds inspect reads: an error saying what it takes.
    let e = format!("{:#}", inspect(&pkg.join("lib/libfake.so")).unwrap_err());
    assert!(
        e.contains("not a wheel, an archive, a directory, an ELF shared library or a Windows DLL"),
        "{e}"
    );
}

/// A CUDA library (an `sm_120a` cubin, needing `libcudart.so.12`): it runs on 12.0
/// only, and needs the CUDA 12 driver floor; in a wheel whose manifest names a
/// minimum driver, the manifest's number is the one reported.
#[test]
fn min_driver_from_the_runtime_or_the_manifest() {
    use crate::cuda::fatbin::tests::{container, entry_bytes};
    use crate::cuda::fatbin::FLAG_ARCH_SPECIFIC;
    let d = tempfile::tempdir().unwrap();
    let fatbin = container(&[entry_bytes(2, 120, FLAG_ARCH_SPECIFIC, b"\x7fELF cubin", 0)]);
    let lib = elf::test_libs::cuda_library(d.path(), "ggml-cuda", &fatbin, Some(12));
    let so = d.path().join("libggml-cuda.so");
    let r = inspect(&so).unwrap();
    assert_eq!(r.libraries[0].sass, ["sm_120a"]);
    assert_eq!(r.libraries[0].cuda_libraries, ["libcudart.so.12"]);
    let cc = |s: &str| s.parse::<CudaArch>().unwrap();
    assert_eq!(r.runs_on(cc("120")), Some(Runs::Natively));
    assert_eq!(r.runs_on(cc("121")), Some(Runs::No));
    assert_eq!(r.runs_on(cc("90")), Some(Runs::No));
    let m = r.min_driver.clone().unwrap();
    assert_eq!(
        (m.linux.to_string(), m.from.as_str()),
        (
            "525.60.13".into(),
            "libcudart.so.12 (any CUDA 12.x runtime)"
        )
    );
    assert!(
        text(&r).contains(
            "minimum NVIDIA driver: 525.60.13 on Linux, 527.41 on Windows and WSL2, from libcudart.so.12 (any CUDA 12.x runtime)"
        ),
        "{}",
        text(&r)
    );
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["min_driver"]["linux"], "525.60.13");

    let whl = d
        .path()
        .join("llama_cpp_python-0.3.16-cp312-cp312-linux_x86_64.whl");
    let mut z = zip::ZipWriter::new(fs_err::File::create(&whl).unwrap());
    let o = zip::write::SimpleFileOptions::default();
    z.start_file("llama_cpp/lib/libggml-cuda.so", o).unwrap();
    std::io::Write::write_all(&mut z, &lib).unwrap();
    z.start_file("llama_cpp_python-0.3.16.dist-info/llama-forge.json", o)
        .unwrap();
    std::io::Write::write_all(
        &mut z,
        br#"{"plan": {"cuda": {"release": "13.0", "min_driver": "580.65.06"}}}"#,
    )
    .unwrap();
    z.finish().unwrap();
    let m = inspect(&whl).unwrap().min_driver.unwrap();
    assert_eq!(
        (m.linux.to_string(), m.from.as_str()),
        (
            "580.65.06".into(),
            "manifest (plan.cuda.min_driver, CUDA 13.0)"
        )
    );
    // A CPU library: no runtime, no floor, no verdicts.
    elf::test_libs::cxx_library(d.path(), "digits", false);
    let r = inspect(&d.path().join("libdigits.so")).unwrap();
    assert_eq!((r.min_driver.clone(), r.runs_on(cc("120"))), (None, None));
}
