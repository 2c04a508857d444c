use super::*;

fn manifest(source_kind: &str, location: &str) -> Manifest {
    let plan = crate::plan::tests::fixture_plan("llama.cpp", &[]);
    plan_manifest(plan_with_source(plan, source_kind, location))
}

fn plan_with_source(
    mut plan: crate::plan::Plan,
    source_kind: &str,
    location: &str,
) -> crate::plan::Plan {
    plan.source.kind = source_kind.parse().unwrap();
    plan.source.location = location.into();
    plan
}

/// A plan of `recipe` from fake tools (a CUDA 13.0 toolkit among them, for `arch` other than cpu).
fn plan_of(recipe: &str, pythons: &[&str], arch: &str) -> crate::plan::Plan {
    let r = crate::recipe::fixture(recipe);
    let mut o = crate::plan::tests::opts(pythons);
    o.accelerator = arch.parse().unwrap();
    let mut t = crate::plan::tests::fake_tools(&o.cache);
    t.cuda = vec![crate::plan::tests::cuda_13_0()];
    t.compiler.as_mut().unwrap().version = "12.2.0".parse().unwrap();
    t.patchelf = t.ninja.clone();
    crate::plan::make(&r, r.release(None).unwrap(), &t, &o).unwrap()
}

/// The PKG-INFO of the test wheels' source, and that source's dir (PKG-INFO, no pyproject).
const PKG_INFO: &str = "Metadata-Version: 2.1\nName: llama_cpp_python\nVersion: 0.3.36\nRequires-Dist: numpy>=1.20.0\n\nbody\n";

fn test_source() -> &'static Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("PKG-INFO"), PKG_INFO).unwrap();
        d
    })
    .path()
}

/// The fixture recipes, and the test source.
fn checkout() -> Checkout<'static> {
    static RECIPES: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    Checkout {
        recipes: RECIPES.get_or_init(crate::recipe::fixture_dir),
        cache: Path::new("/nonexistent/llama-forge-test-cache"),
        source: Some(test_source()),
    }
}

fn plan_manifest(plan: crate::plan::Plan) -> Manifest {
    let artifact = manifest::ArtifactInfo {
        kind: crate::recipe::ArtifactKind::Archive,
        filename: "x.tar.gz".into(),
        sha256: None,
        size: None,
    };
    let target = manifest::TargetInfo {
        platform: "linux_x86_64".parse().unwrap(),
        wheel_tag: None,
    };
    Manifest::from_plan(&plan, artifact, target, BTreeMap::new())
}

/// The files as [`Collector`] reads them, copies in `dir`.
fn files_of(dir: &Path, list: &[(&str, Vec<u8>)]) -> Files {
    let mut col = Collector::new(dir);
    list.iter()
        .map(|(n, d)| (n.to_string(), col.take(n, false, &mut &d[..]).unwrap()))
        .collect()
}

/// An ELF header followed by `body`: enough for `is_elf`.
fn elf_with(body: &[u8]) -> Vec<u8> {
    let mut v = b"\x7fELF\x02\x01\x01".to_vec();
    v.resize(64, 0);
    v.extend_from_slice(body);
    v
}

#[test]
fn needles_are_the_alias_the_local_source_and_deep_extra_paths() {
    let m = manifest("local", "/home/ann/src/llama.cpp");
    let n = build_path_needles(
        &m,
        &[
            "/work/co/.build".into(),
            "/src".into(),
            "relative/dir".into(),
            "/tmp/llama-forge/x".into(),
        ],
    );
    assert_eq!(
        n,
        [
            "/tmp/llama-forge/",
            "/home/ann/src/llama.cpp",
            "/work/co/.build"
        ]
    );
    let pinned = manifest("sdist", "https://files.pythonhosted.org/x.tar.gz");
    assert_eq!(build_path_needles(&pinned, &[]), ["/tmp/llama-forge/"]);
}

#[test]
fn a_build_path_inside_a_library_is_named_with_the_file() {
    let needles = build_path_needles(&manifest("local", "/home/ann/src/llama.cpp"), &[]);
    let dir = tempfile::tempdir().unwrap();
    let files = files_of(
        dir.path(),
        &[
            (
                "libggml-base.so",
                elf_with(
                    b"ggml-base\0/tmp/llama-forge/llama.cpp-0.3.36-0123/src/ggml/src/ggml.c\0x\0",
                ),
            ),
            (
                "libllama.so",
                elf_with(b"\0/home/ann/src/llama.cpp/src/llama.cpp\0/home/ann/src/llama.cpp/x.h\0"),
            ),
            // Remapped paths and non-ELF files are fine.
            ("libggml.so", elf_with(b"/src/ggml/src/ggml.c\0/build/x\0")),
            ("README.md", b"built in /tmp/llama-forge/abc".to_vec()),
        ],
    );
    let mut r = Report::default();
    check_build_paths(&files, &needles, &mut r).unwrap();
    assert_eq!(
        r.problems,
        [
            "libggml-base.so: contains the build path /tmp/llama-forge/llama.cpp-0.3.36-0123/src/ggml/src/ggml.c: a build-machine path must not reach the artifact",
            "libllama.so: contains the build path /home/ann/src/llama.cpp/src/llama.cpp (and 1 more): a build-machine path must not reach the artifact",
        ]
    );
}

#[test]
fn an_edited_plan_no_longer_matches_its_hash() {
    let mut m = manifest("sdist", "https://x.invalid/a.tar.gz");
    let files: Files = BTreeMap::new();
    let mut r = Report::default();
    check_manifests(
        Path::new("/nonexistent/x.tar.gz"),
        "x.tar.gz",
        &files,
        &m,
        &mut r,
    )
    .unwrap();
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    m.plan.defines[0].value = "Debug".into();
    check_manifests(
        Path::new("/nonexistent/x.tar.gz"),
        "x.tar.gz",
        &files,
        &m,
        &mut r,
    )
    .unwrap();
    assert!(
        r.problems
            .iter()
            .any(|p| p.contains("plan hashes to") && p.contains("edited")),
        "{:?}",
        r.problems
    );
}

#[test]
fn a_build_path_cut_by_a_chunk_end_is_found_whole() {
    let re = regex::bytes::Regex::new(
        "(?-u)(?:/tmp/llama-forge/|/home/ann/src)[^\\x00-\\x20\\x7f-\\xff\"']*",
    )
    .unwrap();
    let data =
        b"xx\0/tmp/llama-forge/a/b.c\0yy/home/ann/src/llama.cpp/x.h\0/tmp/llama-forge/zz".repeat(3);
    let whole = find_paths(&data[..], &re, 17, data.len() + 1).unwrap();
    assert_eq!(whole, (Some("/tmp/llama-forge/a/b.c".to_string()), 9));
    for chunk in 1..40 {
        assert_eq!(
            find_paths(&data[..], &re, 17, chunk).unwrap(),
            whole,
            "chunk {chunk}"
        );
    }
}

/// Artifacts made by hand, hostile in one way each, and otherwise
/// consistent: RECORD and both manifests vouch for every file, so that only
/// the check named in each test can catch them.
mod hostile {
    use super::*;

    const STEM: &str = "llama.cpp-0.3.36-cpu-linux-x86_64";
    const WHEEL: &str = "llama_cpp_python-0.3.36+cpu-cp311-cp311-linux_x86_64.whl";

    /// One tar entry as stored: any name, any type.
    struct T {
        name: Vec<u8>,
        kind: tar::EntryType,
        data: Vec<u8>,
        link: &'static str,
        /// The mode and uid stored: as the writer writes them unless a test says otherwise.
        mode: u32,
        uid: u64,
    }

    fn file(name: &str, data: &[u8]) -> T {
        T {
            name: name.as_bytes().to_vec(),
            kind: tar::EntryType::Regular,
            data: data.to_vec(),
            link: "",
            mode: 0o644,
            uid: 0,
        }
    }

    fn special(name: &str, kind: tar::EntryType, link: &'static str) -> T {
        T {
            name: name.as_bytes().to_vec(),
            kind,
            data: vec![],
            link,
            mode: if kind == tar::EntryType::Directory {
                0o755
            } else {
                0o644
            },
            uid: 0,
        }
    }

    /// Tar blocks for `entries`, names written as they are (the tar crate's
    /// builder refuses `..` and absolute names); no end-of-archive blocks.
    fn tar_blocks(entries: &[T]) -> Vec<u8> {
        let mut out = Vec::new();
        for e in entries {
            let mut h = tar::Header::new_gnu();
            let gnu = h.as_gnu_mut().unwrap();
            gnu.name[..e.name.len()].copy_from_slice(&e.name);
            gnu.linkname[..e.link.len()].copy_from_slice(e.link.as_bytes());
            h.set_entry_type(e.kind);
            h.set_mode(e.mode);
            h.set_uid(e.uid);
            h.set_gid(0);
            h.set_size(e.data.len() as u64);
            h.set_mtime(0);
            h.set_cksum();
            out.extend_from_slice(h.as_bytes());
            out.extend_from_slice(&e.data);
            out.resize(out.len().next_multiple_of(512), 0);
        }
        out
    }

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut g = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        g.write_all(data).unwrap();
        g.finish().unwrap()
    }

    fn sha(data: &[u8]) -> FileEntry {
        FileEntry {
            size: data.len() as u64,
            sha256: crate::digest::sha256_bytes(data),
        }
    }

    /// Writes the manifest beside `artifact`, with the artifact's hash.
    fn beside(artifact: &Path, m: &Manifest) {
        let mut ext = m.clone();
        ext.artifact.sha256 = Some(crate::digest::sha256_file(artifact).unwrap());
        ext.artifact.size = Some(std::fs::metadata(artifact).unwrap().len());
        let name = artifact.file_name().unwrap().to_str().unwrap();
        std::fs::write(
            artifact.with_file_name(format!("{name}.manifest.json")),
            ext.to_json(),
        )
        .unwrap();
    }

    fn archive_manifest(m: Option<Manifest>) -> Manifest {
        let mut m = m.unwrap_or_else(|| manifest("sdist", "https://x.invalid/a.tar.gz"));
        m.artifact.filename = format!("{STEM}.tar.gz");
        m
    }

    /// `<dir>/<STEM>.tar.gz`: its top dir, `entries`, then the manifest,
    /// which lists every regular file under the top dir, in one gzip
    /// member; the entries from `split` on (not in the manifest) in a
    /// second. The manifest goes beside it too.
    fn archive_in(
        dir: &Path,
        m: Option<Manifest>,
        entries: Vec<T>,
        split: Option<usize>,
    ) -> PathBuf {
        let mut m = archive_manifest(m);
        let top = format!("{STEM}/");
        let (head, tail) = entries.split_at(split.unwrap_or(entries.len()));
        for e in head.iter().filter(|e| e.kind == tar::EntryType::Regular) {
            if let Some(rel) = String::from_utf8_lossy(&e.name).strip_prefix(&top) {
                m.files.insert(rel.to_string(), sha(&e.data));
            }
        }
        let mut all = vec![special(&top, tar::EntryType::Directory, "")];
        all.extend(head.iter().map(|e| T {
            name: e.name.clone(),
            kind: e.kind,
            data: e.data.clone(),
            link: e.link,
            mode: e.mode,
            uid: e.uid,
        }));
        all.push(file(
            &format!("{top}{}", manifest::ARCHIVE_NAME),
            &m.embedded().to_json(),
        ));
        let mut bytes = gz(&tar_blocks(&all));
        let mut rest = tar_blocks(tail);
        rest.extend_from_slice(&[0; 1024]);
        bytes.extend(gz(&rest));
        let path = dir.join(format!("{STEM}.tar.gz"));
        std::fs::write(&path, bytes).unwrap();
        beside(&path, &m);
        path
    }

    fn archive(dir: &Path, entries: Vec<T>) -> PathBuf {
        archive_in(dir, None, entries, None)
    }

    /// One zip entry: a file, or a symlink whose data is its target;
    /// `listed`: in RECORD and the manifests.
    struct Z {
        name: String,
        data: Vec<u8>,
        symlink: bool,
        listed: bool,
    }

    fn z(name: &str, data: &[u8]) -> Z {
        Z {
            name: name.into(),
            data: data.to_vec(),
            symlink: false,
            listed: true,
        }
    }

    /// `<dir>/<WHEEL>`: `entries`, the WHEEL file, the manifest and RECORD, both
    /// listing every entry; the manifest goes beside it too.
    fn wheel(dir: &Path, entries: Vec<Z>) -> PathBuf {
        wheel_as(dir, WHEEL, &["311"], None, entries)
    }

    /// [`wheel`] named `name`, from a plan with `pythons` (none: py3), with
    /// `tag` on the WHEEL file's Tag line (the filename's when `None`).
    fn wheel_as(
        dir: &Path,
        name: &str,
        pythons: &[&str],
        tag: Option<&str>,
        entries: Vec<Z>,
    ) -> PathBuf {
        wheel_edited(dir, name, pythons, tag, |_| {}, entries)
    }

    /// [`wheel_as`] with the manifest's plan changed by `edit` (as whoever rewrote it would).
    fn wheel_edited(
        dir: &Path,
        name: &str,
        pythons: &[&str],
        tag: Option<&str>,
        edit: impl FnOnce(&mut crate::plan::Plan),
        mut entries: Vec<Z>,
    ) -> PathBuf {
        let w: WheelFilename = name.parse().unwrap();
        let di = w.dist_info_dir();
        let mut plan = plan_of("llama-cpp-python", pythons, "cpu");
        edit(&mut plan);
        let mut m = plan_manifest(plan);
        m.artifact = manifest::ArtifactInfo {
            kind: crate::recipe::ArtifactKind::Wheel,
            filename: name.into(),
            sha256: None,
            size: None,
        };
        m.target.wheel_tag = Some(w.tag());
        let wheel_file = crate::package::wheel::wheel_file(&w);
        let wheel_file = match tag {
            Some(t) => wheel_file.replace(&w.tag().to_string(), t),
            None => wheel_file,
        };
        if !entries.iter().any(|e| e.name == format!("{di}/WHEEL")) {
            entries.push(z(&format!("{di}/WHEEL"), wheel_file.as_bytes()));
        }
        if !entries.iter().any(|e| e.name == format!("{di}/METADATA")) {
            let version = format!("{}+{}", w.version, w.local.as_ref().unwrap());
            let metadata =
                crate::package::wheel::metadata_from_pkg_info(PKG_INFO, &version, &[]).unwrap();
            entries.push(z(&format!("{di}/METADATA"), metadata.as_bytes()));
        }
        for e in entries.iter().filter(|e| e.listed) {
            m.files.insert(e.name.clone(), sha(&e.data));
        }
        let manifest_json = m.embedded().to_json();
        let path = dir.join(name);
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        let mut record = String::new();
        let manifest_entry = z(&format!("{di}/{}", manifest::WHEEL_NAME), &manifest_json);
        for e in entries.iter().chain([&manifest_entry]) {
            if e.symlink {
                zip.add_symlink(
                    e.name.clone(),
                    String::from_utf8(e.data.clone()).unwrap(),
                    opts,
                )
                .unwrap();
            } else {
                zip.start_file(e.name.clone(), opts.unix_permissions(0o644))
                    .unwrap();
                zip.write_all(&e.data).unwrap();
            }
            if e.listed {
                record.push_str(&format!(
                    "{},{},{}\n",
                    e.name,
                    crate::package::wheel::record_hash(&e.data),
                    e.data.len()
                ));
            }
        }
        record.push_str(&format!("{di}/RECORD,,\n"));
        zip.start_file(format!("{di}/RECORD"), opts).unwrap();
        zip.write_all(record.as_bytes()).unwrap();
        zip.finish().unwrap();
        beside(&path, &m);
        path
    }

    fn problems(path: &Path) -> Vec<String> {
        let r = verify(path, &checkout()).unwrap();
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        r.problems
    }

    #[test]
    fn sound_artifacts_pass() {
        let d = tempfile::tempdir().unwrap();
        let a = archive(d.path(), vec![file(&format!("{STEM}/README.md"), b"hello")]);
        assert_eq!(problems(&a), Vec::<String>::new());
        let w = wheel(
            d.path(),
            vec![
                z("llama_cpp/__init__.py", b"x = 1\n"),
                z("llama_cpp/lib/README", b"libs"),
            ],
        );
        assert_eq!(problems(&w), Vec::<String>::new());
    }

    /// Names that are not one file on every OS are problems in every kind of artifact,
    /// a Linux one too, each naming the entry and what is wrong with it.
    #[test]
    fn names_that_are_not_one_file_on_every_os_are_problems() {
        let why = ": a name must be one file on every OS";
        let case = "on a case-insensitive file system (Windows, macOS)";
        let d = tempfile::tempdir().unwrap();
        let a = archive(
            d.path(),
            vec![
                file(&format!("{STEM}/lib/Lib.so"), b"a"),
                file(&format!("{STEM}/lib/lib.so"), b"b"),
                file(&format!("{STEM}/bin/llama-cli."), b"c"),
            ],
        );
        assert_eq!(
            problems(&a),
            [
                format!("{STEM}/lib/lib.so: collides with `{STEM}/lib/Lib.so` {case}{why}"),
                format!("{STEM}/bin/llama-cli.: its component `llama-cli.` ends in a dot or a space, which Windows drops{why}"),
            ]
        );
        let d = tempfile::tempdir().unwrap();
        let readme = format!("{STEM}/README.md");
        let con = format!("{STEM}/CON.txt");
        let stream = format!("{STEM}/readme.md:x");
        let a = zip_archive(
            d.path(),
            &[
                (&readme, b"hello", true),
                (&con, b"x", true),
                (&stream, b"x", true),
            ],
        );
        assert_eq!(
            problems(&a),
            [
                format!("{con}: its component `CON.txt` is a Windows device name: opening it opens the device{why}"),
                format!("{stream}: holds `:`, which on Windows names an NTFS alternate data stream of the file before it{why}"),
            ]
        );
        let d = tempfile::tempdir().unwrap();
        let w = wheel(
            d.path(),
            vec![
                z("llama_cpp/caf\u{e9}.py", b"x"),
                z("llama_cpp/cafe\u{301}.py", b"y"),
                z("llama_cpp/Lib", b"z"),
                z("llama_cpp/lib/x.so", b"w"),
                z("llama_cpp/a?.py", b"v"),
            ],
        );
        assert_eq!(
            problems(&w),
            [
                format!("llama_cpp/cafe\u{301}.py: collides with `llama_cpp/caf\u{e9}.py` on macOS: the same name once Unicode-normalised (NFC){why}"),
                format!("llama_cpp/lib/x.so: its dir `llama_cpp/lib` collides with `llama_cpp/Lib` {case}{why}"),
                format!("llama_cpp/a?.py: holds `?`, which Windows refuses in a name{why}"),
            ]
        );
    }

    /// `<dir>/<STEM>.zip`: `entries` (name, data, listed in the manifest), then the
    /// manifest under the top dir; the manifest goes beside it too.
    fn zip_archive(dir: &Path, entries: &[(&str, &[u8], bool)]) -> PathBuf {
        zip_archive_for(dir, entries, PlatformTag::WinAmd64)
    }

    /// [`zip_archive`], its manifest saying `platform`.
    fn zip_archive_for(
        dir: &Path,
        entries: &[(&str, &[u8], bool)],
        platform: PlatformTag,
    ) -> PathBuf {
        let mut m = archive_manifest(None);
        m.artifact.filename = format!("{STEM}.zip");
        m.target.platform = platform;
        let top = format!("{STEM}/");
        for (name, data, listed) in entries {
            if let (Some(rel), true) = (name.strip_prefix(&top), listed) {
                m.files.insert(rel.to_string(), sha(data));
            }
        }
        let path = dir.join(format!("{STEM}.zip"));
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
        let opts = zip::write::SimpleFileOptions::default();
        let manifest_json = m.embedded().to_json();
        let manifest_name = format!("{top}{}", manifest::ARCHIVE_NAME);
        for (name, data) in entries
            .iter()
            .map(|(n, d, _)| (n.to_string(), d.to_vec()))
            .chain([(manifest_name, manifest_json)])
        {
            zip.start_file(name, opts).unwrap();
            zip.write_all(&data).unwrap();
        }
        zip.finish().unwrap();
        beside(&path, &m);
        path
    }

    /// A Windows `.zip` archive gets the tar.gz archive's checks: one top dir,
    /// every file as the manifest says, nothing unlisted.
    #[test]
    fn zip_archives_are_checked_like_tar_ones() {
        let d = tempfile::tempdir().unwrap();
        let readme = format!("{STEM}/README.md");
        let a = zip_archive(d.path(), &[(&readme, b"hello", true)]);
        assert_eq!(problems(&a), Vec::<String>::new());
        let d = tempfile::tempdir().unwrap();
        let dll = format!("{STEM}/evil.dll");
        let a = zip_archive(
            d.path(),
            &[
                (&readme, b"hello", true),
                ("elsewhere/x.dll", b"MZ", false),
                (&dll, b"MZ", false),
            ],
        );
        let p = problems(&a);
        assert!(
            p.iter()
                .any(|p| p.contains("elsewhere/x.dll: outside the top dir"))
                && p.iter().any(|p| p.contains("evil.dll")),
            "{p:?}"
        );
    }

    /// Real mingw-w64 files: an EXE and the DLL it imports. Beside each other in a
    /// win_amd64 archive they pass; the DLL left out or in another dir, the import
    /// is a problem, as are a manifest that says another platform and a file
    /// that starts like a PE file and is not one.
    #[test]
    fn windows_binaries_import_only_what_is_beside_them() {
        let d = tempfile::tempdir().unwrap();
        let Some((dll, exe)) = crate::binary::pe::test_libs::mingw_pair(d.path()) else {
            return;
        };
        let (exe_name, dll_name) = (format!("{STEM}/main.exe"), format!("{STEM}/mini.dll"));
        let at = |name: &str| {
            let dir = d.path().join(name).join("x");
            std::fs::create_dir_all(&dir).unwrap();
            dir
        };
        let both = [
            (exe_name.as_str(), &exe[..], true),
            (&dll_name, &dll[..], true),
        ];
        let a = zip_archive(at("a").parent().unwrap(), &both);
        assert_eq!(problems(&a), Vec::<String>::new());

        let only_exe = zip_archive(at("b").parent().unwrap(), &both[..1]);
        assert_eq!(
            problems(&only_exe),
            ["mini.dll imported by main.exe: not in the artifact, not a Windows DLL and not the CUDA runtime's or driver's; a GCC runtime DLL (libstdc++-6, libgcc_s_seh-1, libwinpthread-1, libgomp-1) means the static runtime flags did not reach that link; anything else, decide the CMake option that links it in the plan (see docs/optional-dependencies.md)"]
        );
        let elsewhere = format!("{STEM}/lib/mini.dll");
        let apart = zip_archive(
            at("c").parent().unwrap(),
            &[both[0], (&elsewhere, &dll[..], true)],
        );
        assert!(
            problems(&apart)
                .iter()
                .any(|p| p.starts_with("mini.dll imported by main.exe: not in the artifact")),
            "{:?}",
            problems(&apart)
        );
        let linux = zip_archive_for(
            at("d").parent().unwrap(),
            &both,
            PlatformTag::Linux {
                arch: crate::platform::Arch::X86_64,
            },
        );
        assert_eq!(
            problems(&linux),
            ["the manifest says platform linux_x86_64, but the Windows binaries are win_amd64"]
        );
        let fake = format!("{STEM}/fake.dll");
        let bad = zip_archive(
            at("e").parent().unwrap(),
            &[both[0], both[1], (&fake, b"MZ but no more", true)],
        );
        let p = problems(&bad);
        assert!(
            p.len() == 1 && p[0].starts_with("fake.dll: unreadable PE file"),
            "{p:?}"
        );
    }

    #[test]
    fn a_library_with_its_own_copy_of_libstdcxx_is_a_problem() {
        let d = tempfile::tempdir().unwrap();
        use crate::binary::elf::test_libs::cxx_library;
        let shared = cxx_library(d.path(), "shared", false);
        let own = cxx_library(d.path(), "own", true);
        assert_eq!(
            crate::binary::elf::parse(&shared).unwrap().cxx_runtime,
            None
        );
        let w = wheel(
            d.path(),
            vec![
                z("llama_cpp/lib/libllama.so", &shared),
                z("llama_cpp/lib/libggml.so", &own),
            ],
        );
        assert_eq!(
            problems(&w),
            ["llama_cpp/lib/libggml.so: carries its own copy of libstdc++ (exports _ZNSt6locale7classicEv): with libstdc++.so.6 or another copy in the same process it crashes; rebuild with a compiler that links libstdc++.so.6"]
        );
    }

    /// An archive's manifest may name its tools' shared C++ runtime, and only by the
    /// tool's own name for it: a manifest naming another library (or a wheel's) lets
    /// nothing through.
    #[test]
    fn only_an_archive_s_own_shared_cxx_runtime_may_export_it() {
        let named = |value: &str| {
            let mut plan = crate::plan::tests::fixture_plan("llama.cpp", &[]);
            plan.defines.push(crate::plan::setting::policy(
                crate::plan::defines::CXX_RUNTIME_NAME,
                value,
                "test",
            ));
            plan_manifest(plan)
        };
        let ours = named("llama-forge-stdc++");
        assert_eq!(
            binaries::shared_cxx_runtime("x.tar.gz", Some(&ours)).as_deref(),
            Some("libllama-forge-stdc++.so")
        );
        assert_eq!(binaries::shared_cxx_runtime("x.whl", Some(&ours)), None);
        assert_eq!(binaries::shared_cxx_runtime("x.tar.gz", None), None);
        let other = named("llama");
        assert_eq!(binaries::shared_cxx_runtime("x.tar.gz", Some(&other)), None);
        let plain = manifest("sdist", "x");
        assert_eq!(binaries::shared_cxx_runtime("x.tar.gz", Some(&plain)), None);

        // Let through in the archive's top dir only (an archive's paths are read relative to it): a second copy under that name in a
        // subdir, and any other library with its own copy, are problems.
        let d = tempfile::tempdir().unwrap();
        let own = crate::binary::elf::test_libs::cxx_library(d.path(), "own", true);
        let copies = d.path().join("copies");
        std::fs::create_dir(&copies).unwrap();
        let files = files_of(
            &copies,
            &[
                ("libllama-forge-stdc++.so", own.clone()),
                ("sub/libllama-forge-stdc++.so", own.clone()),
                ("libggml.so", own),
            ],
        );
        let mut r = Report::default();
        binaries::check_payload(&files, Some("libllama-forge-stdc++.so"), &mut r);
        let named: Vec<&str> = r
            .problems
            .iter()
            .filter(|p| p.contains("carries its own copy"))
            .filter_map(|p| p.split(':').next())
            .collect();
        assert_eq!(
            named,
            ["libggml.so", "sub/libllama-forge-stdc++.so"],
            "{:?}",
            r.problems
        );
    }

    #[test]
    fn archive_entries_that_leave_the_top_dir_are_problems() {
        let cases = [
            (format!("{STEM}/../evil.txt"), vec![format!("{STEM}/../evil.txt: it climbs out with `..`: an entry must be a plain relative path")]),
            (format!("{STEM}/sub\\..\\..\\evil.txt"), vec![format!("{STEM}/sub\\..\\..\\evil.txt: its name holds a backslash (a path separator on Windows): an entry must be a plain relative path")]),
            (format!("{STEM}//evil.txt"), vec![format!("{STEM}//evil.txt: it has an empty or `.` path component: an entry must be a plain relative path")]),
            (format!("{STEM}/a\nb"), vec![format!("{:?}: its name holds a control character: an entry must be a plain relative path", format!("{STEM}/a\nb"))]),
            (
                "/tmp/evil.txt".to_string(),
                vec![
                    "/tmp/evil.txt: it is an absolute path: an entry must be a plain relative path".to_string(),
                    format!("/tmp/evil.txt: outside the top dir {STEM}/: an archive holds one dir, named after it"),
                ],
            ),
            ("other/evil.txt".to_string(), vec![format!("other/evil.txt: outside the top dir {STEM}/: an archive holds one dir, named after it")]),
        ];
        for (name, want) in cases {
            let d = tempfile::tempdir().unwrap();
            let a = archive(
                d.path(),
                vec![
                    file(&format!("{STEM}/README.md"), b"hello"),
                    file(&name, b"evil"),
                ],
            );
            assert_eq!(problems(&a), want, "{name:?}");
        }
        let d = tempfile::tempdir().unwrap();
        let mut name = format!("{STEM}/x").into_bytes();
        name.push(0xff);
        let a = archive(
            d.path(),
            vec![T {
                name,
                ..file("", b"x")
            }],
        );
        assert_eq!(
            problems(&a),
            [format!(
                "{STEM}/x\u{fffd}: its name is not UTF-8: an entry must be a plain relative path"
            )]
        );
    }

    #[test]
    fn archive_entries_other_than_files_are_problems() {
        use tar::EntryType as E;
        let readme = || file(&format!("{STEM}/README.md"), b"hello");
        let cases = [
            (
                special(&format!("{STEM}/lib.so"), E::Symlink, "/etc/passwd"),
                "a symlink entry to /etc/passwd",
            ),
            (
                special(&format!("{STEM}/lib.so"), E::Link, "etc/passwd"),
                "a hard link entry to etc/passwd",
            ),
            (
                special(&format!("{STEM}/fifo"), E::Fifo, ""),
                "a FIFO entry",
            ),
            (
                special(&format!("{STEM}/tty"), E::Char, ""),
                "a character device entry",
            ),
            (
                special(&format!("{STEM}/sda"), E::Block, ""),
                "a block device entry",
            ),
        ];
        for (entry, what) in cases {
            let name = String::from_utf8(entry.name.clone()).unwrap();
            let d = tempfile::tempdir().unwrap();
            let a = archive(d.path(), vec![readme(), entry]);
            assert_eq!(problems(&a), [format!("{name}: {what}: an archive holds regular files only, and unpacking it would create it")]);
        }
        // A symlink after the real file of the same name: `tar xzf` leaves the symlink.
        let d = tempfile::tempdir().unwrap();
        let a = archive(
            d.path(),
            vec![
                readme(),
                special(&format!("{STEM}/README.md"), E::Symlink, "/etc/shadow"),
            ],
        );
        assert_eq!(
            problems(&a),
            [
                "README.md: stored twice in the archive".to_string(),
                format!("{STEM}/README.md: a symlink entry to /etc/shadow: an archive holds regular files only, and unpacking it would create it"),
            ]
        );
    }

    /// One top dir entry, first: a second one (what the tar crate sees in
    /// an archive whose pax `size` readers take differently), or none, is a problem.
    #[test]
    fn the_top_dir_is_stored_once_and_first() {
        let readme = || file(&format!("{STEM}/README.md"), b"hello");
        let top = || special(&format!("{STEM}/"), tar::EntryType::Directory, "");
        let d = tempfile::tempdir().unwrap();
        let a = archive(d.path(), vec![readme(), top()]);
        assert_eq!(
            problems(&a),
            [format!("{STEM}/: the top dir is stored 2 times (entries 1, 3): an archive holds one top dir")]
        );
        // Without its top dir entry (the tar crate's writer, entries under the top dir).
        let mut m = archive_manifest(None);
        m.files.insert("README.md".into(), sha(b"hello"));
        let mut b = tar::Builder::new(Vec::new());
        for (name, data) in [
            ("README.md".to_string(), b"hello".to_vec()),
            (manifest::ARCHIVE_NAME.to_string(), m.embedded().to_json()),
        ] {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            b.append_data(&mut h, format!("{STEM}/{name}"), &data[..])
                .unwrap();
        }
        let path = d.path().join(format!("{STEM}.tar.gz"));
        std::fs::write(&path, gz(&b.into_inner().unwrap())).unwrap();
        beside(&path, &m);
        assert_eq!(
            problems(&path),
            [format!("no entry for the top dir {STEM}/: an archive of this tool starts with it, and holds everything under it")]
        );
    }

    /// `gzip -d` reads every member, so `tar xzf` unpacks what a second
    /// member holds: so does verify.
    /// The builder's own files repacked with a setuid `llama-cli`, a library anyone may
    /// write and a foreign owner: each a problem (issue 48's hostile round: they passed).
    #[test]
    fn modes_and_owners_are_what_the_writer_writes() {
        let d = tempfile::tempdir().unwrap();
        let a = archive(
            d.path(),
            vec![
                T {
                    mode: 0o4755,
                    ..file(&format!("{STEM}/llama-cli"), b"x")
                },
                T {
                    mode: 0o777,
                    ..file(&format!("{STEM}/libllama.so"), b"y")
                },
                T {
                    uid: 1000,
                    ..file(&format!("{STEM}/README.md"), b"z")
                },
                T {
                    mode: 0o600,
                    ..file(&format!("{STEM}/LICENSE"), b"w")
                },
            ],
        );
        let p = problems(&a);
        for want in [
            format!("{STEM}/llama-cli: mode 4755 has the setuid, setgid or sticky bit"),
            format!("{STEM}/libllama.so: mode 0777: group or other users could change it"),
            format!("{STEM}/README.md: owned by uid 1000, gid 0, where the writer writes 0 and 0"),
            format!("{STEM}/LICENSE: mode 0600, where the writer writes 0644 or 0755"),
        ] {
            assert!(
                p.iter().any(|l| l.starts_with(&want)),
                "`{want}` not in {p:#?}"
            );
        }
    }

    #[test]
    fn a_second_gzip_member_is_read() {
        let d = tempfile::tempdir().unwrap();
        let extra = T {
            name: format!("{STEM}/extra.sh").into_bytes(),
            ..file("", b"#!/bin/sh\n")
        };
        let a = archive_in(
            d.path(),
            None,
            vec![file(&format!("{STEM}/README.md"), b"hello"), extra],
            Some(1),
        );
        let listed = std::process::Command::new("tar")
            .arg("tzf")
            .arg(&a)
            .output()
            .unwrap();
        assert!(
            String::from_utf8_lossy(&listed.stdout).contains("extra.sh"),
            "tar sees the second member"
        );
        assert_eq!(problems(&a), ["extra.sh: not in the manifest"]);
    }

    /// A py3 wheel (the default) is accepted; its WHEEL file's Tag, the manifest's
    /// tag and the plan's Pythons must all be the filename's.
    #[test]
    fn a_py3_wheel_passes_and_its_tags_must_agree() {
        const PY3: &str = "llama_cpp_python-0.3.36+cpu-py3-none-linux_x86_64.whl";
        let init = || vec![z("llama_cpp/__init__.py", b"x = 1\n")];
        let d = tempfile::tempdir().unwrap();
        let ok = wheel_as(d.path(), PY3, &[], None, init());
        assert_eq!(problems(&ok), Vec::<String>::new());
        let d = tempfile::tempdir().unwrap();
        let cp = wheel_as(d.path(), WHEEL, &["311"], None, init());
        assert_eq!(problems(&cp), Vec::<String>::new());
        let d = tempfile::tempdir().unwrap();
        let other_tag = wheel_as(d.path(), PY3, &[], Some("cp311-cp311-linux_x86_64"), init());
        // A py3 plan's wheel renamed cp311 (manifest and all): the plan makes py3 only.
        let d = tempfile::tempdir().unwrap();
        let renamed = wheel_as(d.path(), WHEEL, &[], None, init());
        let mut seen = problems(&other_tag);
        seen.extend(problems(&renamed));
        insta::assert_snapshot!("wheel_tags_disagree", seen.join("\n"));
    }

    #[test]
    fn wheel_entries_outside_its_dirs_are_problems() {
        let di = WHEEL.parse::<WheelFilename>().unwrap().dist_info_dir();
        let dirs = format!("{di}/, llama_cpp/, llama_cpp/lib/");
        let cases = [
            ("llama_cpp/../../evil.py", vec!["llama_cpp/../../evil.py: it climbs out with `..`: an entry must be a plain relative path".to_string()]),
            ("llama_cpp/x\\..\\evil.py", vec!["llama_cpp/x\\..\\evil.py: its name holds a backslash (a path separator on Windows): an entry must be a plain relative path".to_string()]),
            (
                "/tmp/evil.py",
                vec![
                    "/tmp/evil.py: it is an absolute path: an entry must be a plain relative path".to_string(),
                    format!("/tmp/evil.py: outside the wheel's dirs ({dirs}): not part of this package"),
                ],
            ),
            (
                "C:/evil.py",
                vec![
                    "C:/evil.py: it starts with a drive letter: an entry must be a plain relative path".to_string(),
                    format!("C:/evil.py: outside the wheel's dirs ({dirs}): not part of this package"),
                ],
            ),
            ("evil/__init__.py", vec![format!("evil/__init__.py: outside the wheel's dirs ({dirs}): not part of this package")]),
        ];
        for (name, want) in cases {
            let d = tempfile::tempdir().unwrap();
            let w = wheel(
                d.path(),
                vec![z("llama_cpp/__init__.py", b"x = 1\n"), z(name, b"evil")],
            );
            assert_eq!(problems(&w), want, "{name}");
        }
    }

    /// What a wheel's own manifest claims does not decide what it may install: package
    /// dirs, requirements, WHEEL's fields, the .dist-info files and the scripts are held to
    /// the recipe and the packager (issue 48's hostile round: each passed before).
    #[test]
    fn a_wheel_is_judged_against_the_recipe_not_its_own_manifest() {
        let di = WHEEL.parse::<WheelFilename>().unwrap().dist_info_dir();
        let data = di.replace(".dist-info", ".data");
        let version = "0.3.36+cpu";
        let metadata = |extra: &[String]| {
            crate::package::wheel::metadata_from_pkg_info(PKG_INFO, version, extra).unwrap()
        };
        type Edit = fn(&mut crate::plan::Plan);
        let cases: Vec<(&str, Edit, Vec<Z>, &str)> = vec![
            (
                "a .data dir listed as a package dir",
                |p| {
                    let d = WHEEL.parse::<WheelFilename>().unwrap().dist_info_dir();
                    if let crate::plan::Package::Wheel { packages, .. } = &mut p.package {
                        packages.push(d.replace(".dist-info", ".data"));
                    }
                },
                vec![
                    z(&format!("{data}/scripts/evil"), b"#!/bin/sh\n"),
                    z(&format!("{data}/purelib/evil.pth"), b"import os\n"),
                ],
                "the manifest's plan gives the package dirs as llama_cpp, llama_cpp_python-0.3.36+cpu.data, but recipe llama-cpp-python makes llama_cpp",
            ),
            (
                "numpy listed as a package dir",
                |p| {
                    if let crate::plan::Package::Wheel { packages, .. } = &mut p.package {
                        packages.push("numpy".into());
                    }
                },
                vec![z("numpy/__init__.py", b"evil\n")],
                "package dirs as llama_cpp, numpy, but recipe llama-cpp-python makes llama_cpp",
            ),
            (
                "a requirement the plan adds",
                |p| {
                    if let crate::plan::Package::Wheel { requires, .. } = &mut p.package {
                        requires.push("llama-cpp-helper-evil".into());
                    }
                },
                vec![],
                "the manifest's plan gives the extra requirements as llama-cpp-helper-evil, but",
            ),
            (
                "a requirement METADATA adds",
                |_| {},
                vec![z(&format!("{di}/METADATA"), metadata(&["llama-cpp-helper-evil".into()]).as_bytes())],
                "METADATA is not what the packager makes from the source: line 5 is Requires-Dist: llama-cpp-helper-evil",
            ),
            (
                "a console script named pip",
                |_| {},
                vec![z(&format!("{di}/entry_points.txt"), b"[console_scripts]\npip = evil:main\n")],
                "entry_points.txt: the script pip would replace the environment's pip when pip installs the wheel: refused",
            ),
            (
                "a file the packager does not write",
                |_| {},
                vec![z(&format!("{di}/INSTALLER"), b"evil\n")],
                "INSTALLER: the packager writes no such file into .dist-info",
            ),
            (
                "Root-Is-Purelib: true",
                |_| {},
                vec![z(
                    &format!("{di}/WHEEL"),
                    crate::package::wheel::wheel_file(&WHEEL.parse().unwrap())
                        .replace("Root-Is-Purelib: false", "Root-Is-Purelib: true")
                        .as_bytes(),
                )],
                "WHEEL is not what the packager writes for llama_cpp_python-0.3.36+cpu-cp311-cp311-linux_x86_64.whl: Root-Is-Purelib: true where the packager writes Root-Is-Purelib: false",
            ),
        ];
        for (what, edit, entries, want) in cases {
            let d = tempfile::tempdir().unwrap();
            let w = wheel_edited(d.path(), WHEEL, &["311"], None, edit, entries);
            let p = verify(&w, &checkout()).unwrap().problems;
            assert!(
                p.iter().any(|l| l.contains(want)),
                "{what}: `{want}` not in {p:#?}"
            );
        }
        // The same wheel as the packager makes it passes.
        let d = tempfile::tempdir().unwrap();
        let w = wheel_edited(d.path(), WHEEL, &["311"], None, |_| {}, vec![]);
        let good = problems(&w);
        assert!(good.is_empty(), "{good:?}");
    }

    /// Any wheel, not only ours: a script that would replace the venv's Python or pip.
    #[test]
    fn a_script_named_like_python_is_refused_in_anyones_wheel() {
        let d = tempfile::tempdir().unwrap();
        let di = WHEEL.parse::<WheelFilename>().unwrap().dist_info_dir();
        let w = wheel(
            d.path(),
            vec![z(
                &format!("{di}/entry_points.txt"),
                b"[console_scripts]\npython3 = evil:main\n",
            )],
        );
        // The rule is one of any wheel (wheel.rs), not only of ours: it holds without the manifest beside.
        std::fs::remove_file(w.with_file_name(format!("{WHEEL}.manifest.json"))).unwrap();
        let r = verify(&w, &checkout()).unwrap();
        assert!(
            r.problems.iter().any(|l| l
                .contains("the script python3 would replace the environment's Python interpreter")),
            "{:?}",
            r.problems
        );
    }

    #[test]
    fn a_zip_symlink_is_a_problem() {
        let d = tempfile::tempdir().unwrap();
        let link = Z {
            symlink: true,
            ..z("llama_cpp/lib/libllama.so", b"/etc/passwd")
        };
        let w = wheel(d.path(), vec![z("llama_cpp/__init__.py", b"x = 1\n"), link]);
        assert_eq!(
            problems(&w),
            ["llama_cpp/lib/libllama.so: a symlink entry: a wheel holds regular files only"]
        );
    }

    /// Two entries of one name: the zip crate reads one, pip the other, so
    /// the zip is refused before any entry is read (`package::zip_layout`),
    /// though the copies are the same bytes, and RECORD and the manifests
    /// agree whichever one is read.
    #[test]
    fn a_name_stored_twice_in_a_zip_is_a_problem() {
        let d = tempfile::tempdir().unwrap();
        // The zip writer refuses a name twice: b.py (in neither RECORD nor
        // the manifests) is renamed a.py in the zip's bytes.
        let copy = Z {
            listed: false,
            ..z("llama_cpp/b.py", b"same")
        };
        let w = wheel(
            d.path(),
            vec![
                z("llama_cpp/__init__.py", b"x = 1\n"),
                z("llama_cpp/a.py", b"same"),
                copy,
            ],
        );
        let (patched, n) = replace_all(
            &std::fs::read(&w).unwrap(),
            b"llama_cpp/b.py",
            b"llama_cpp/a.py",
        );
        assert_eq!(n, 2, "local header and central directory");
        std::fs::write(&w, patched).unwrap();
        beside(
            &w,
            &Manifest::read(&w.with_file_name(format!("{WHEEL}.manifest.json"))).unwrap(),
        );
        assert_eq!(
            problems(&w),
            ["llama_cpp/a.py: stored 2 times in the zip's central directory: zip tools unpack one of the copies, not all the same one: an ambiguous zip (zip tools could read different contents from it), not one this tool wrote; not read"]
        );
    }

    fn replace_all(data: &[u8], from: &[u8], to: &[u8]) -> (Vec<u8>, usize) {
        let (mut out, mut n, mut i) = (Vec::new(), 0, 0);
        while i < data.len() {
            if data[i..].starts_with(from) {
                out.extend_from_slice(to);
                (i, n) = (i + from.len(), n + 1);
            } else {
                out.push(data[i]);
                i += 1;
            }
        }
        (out, n)
    }

    #[test]
    fn entries_the_zip_crate_does_not_read_are_a_problem() {
        let listing = crate::package::wheel::ZipListing {
            names: vec!["a".into(), "b".into(), "c".into()],
            read: 2,
        };
        let mut r = Report::default();
        check_central_directory(&listing, &mut r);
        assert_eq!(r.problems, ["the zip's central directory holds 3 entries (3 distinct names), but reads as 2: some zip tools see entries that others do not"]);
    }

    #[test]
    fn decompression_bombs_are_refused_naming_the_entry() {
        let d = tempfile::tempdir().unwrap();
        let zeros = vec![0u8; 64 << 20];
        let a = archive(d.path(), vec![file(&format!("{STEM}/zeros.bin"), &zeros)]);
        let p = problems(&a);
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(
            p[0].starts_with(&format!(
                "{STEM}/zeros.bin: unpacks to more than 100x its compressed size"
            )),
            "{p:?}"
        );
        let w = wheel(d.path(), vec![z("llama_cpp/zeros.bin", &zeros)]);
        let p = problems(&w);
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(
            p[0].starts_with("llama_cpp/zeros.bin: unpacks to more than 100x its compressed size"),
            "{p:?}"
        );
        // The whole artifact is bounded too.
        let small = Limits {
            total: 32 << 20,
            ..Limits::ARTIFACT
        };
        let noise: Vec<u8> = (0..40u32 << 20)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        let w = wheel(d.path(), vec![z("llama_cpp/noise.bin", &noise)]);
        let r = verify_within(&w, Some(&[]), &checkout(), &small).unwrap();
        assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
        assert!(
            r.problems[0]
                .starts_with("llama_cpp/noise.bin: the artifact unpacks to more than 32 MiB"),
            "{:?}",
            r.problems
        );
    }

    #[test]
    fn no_manifest_beside_is_a_warning() {
        let d = tempfile::tempdir().unwrap();
        let a = archive(d.path(), vec![file(&format!("{STEM}/README.md"), b"hello")]);
        std::fs::remove_file(a.with_file_name(format!("{STEM}.tar.gz.manifest.json"))).unwrap();
        let r = verify(&a, &checkout()).unwrap();
        assert!(r.problems.is_empty(), "{:?}", r.problems);
        assert_eq!(r.warnings.len(), 1);
        assert!(
            r.warnings[0].contains("the artifact's sha256 was checked against nothing independent"),
            "{:?}",
            r.warnings
        );
    }

    /// A GPU artifact whose libraries carry no device code at all fails the gate,
    /// read without any CUDA toolkit.
    #[test]
    fn a_gpu_artifact_without_device_code_fails() {
        let d = tempfile::tempdir().unwrap();
        let m = plan_manifest(plan_of("llama.cpp", &[], "120"));
        assert!(m.plan.cuda.is_some());
        let a = archive_in(
            d.path(),
            Some(m),
            vec![file(&format!("{STEM}/README.md"), b"hello")],
            None,
        );
        let p = problems(&a);
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(
            p[0].contains("CUDA code gate failed")
                && p[0].contains("no library has CUDA device code"),
            "{p:?}"
        );
    }
}
