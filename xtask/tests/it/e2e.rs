//! End to end, for real: build each recipe from its pinned sdist (CPU), verify
//! it, install/unpack it somewhere else, load a tiny generated GGUF model and
//! generate tokens greedily. Slow (minutes on 2 cores): these are the tests that
//! prove a build works.
// Tests say on stderr why they skip and where a long build is.
#![allow(clippy::print_stderr)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// Work dirs shared by the e2e tests, kept under target/ so reruns resume.
fn e2e_dir() -> PathBuf {
    let d = repo().join("target/e2e");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A real build of `recipe` into its own dist dir under target/e2e. Every real build of
/// the suite (these and release.rs's) runs with `--launcher ccache` and one cache (the
/// tests' tool cache): llama.cpp's archive and llama-cpp-python's wheel compile the same
/// tree at the same paths, so the second of a pair takes the first's objects (ggml, the
/// CPU variants, llama, mtmd) from the cache. A launcher changes no byte of an artifact
/// (sccache.rs proves it for both launchers) and no plan hash.
fn build(cmd: &str, recipe: &str, extra: &[&str]) -> Vec<PathBuf> {
    let dist = e2e_dir().join(format!("dist-{recipe}{}", extra.join("")));
    let _ = std::fs::remove_dir_all(&dist);
    let mut args = vec![cmd, recipe, "--dist"];
    let dist_s = dist.display().to_string();
    args.push(&dist_s);
    args.extend_from_slice(&["--launcher", "ccache"]);
    args.extend_from_slice(extra);
    let build_dir = real_build_dir().display().to_string();
    let o = run(&args, &[("LLAMA_FORGE_BUILD_DIR", &build_dir)]);
    assert!(o.status.success(), "{cmd} {recipe} failed");
    // dist/ holds the artifacts, each with its manifest, and the dist lock: nothing else.
    let names = files_in(&dist);
    let artifacts: Vec<&String> = names
        .iter()
        .filter(|n| n.ends_with(".whl") || n.ends_with(".tar.gz") || n.ends_with(".zip"))
        .collect();
    for a in &artifacts {
        assert!(
            names.contains(&format!("{a}.manifest.json")),
            "{a} has its manifest: {names:?}"
        );
    }
    assert_eq!(
        names.len(),
        2 * artifacts.len() + 1,
        "artifacts, manifests and .lock only: {names:?}"
    );
    assert!(names.contains(&".lock".to_string()), "{names:?}");
    artifacts.into_iter().map(|f| dist.join(f)).collect()
}

fn tiny_model(python: &Path) -> PathBuf {
    common::tiny_model(python, &e2e_dir().join("tiny.gguf"))
}

fn venv(name: &str) -> PathBuf {
    common::venv(&e2e_dir().join(name))
}

fn tamper_checks(artifact: &Path) {
    let d = tempfile::tempdir().unwrap();
    let name = artifact.file_name().unwrap();
    // A changed byte in a library.
    let copy = d.path().join(name);
    let mut data = std::fs::read(artifact).unwrap();
    if artifact.extension().is_some_and(|e| e == "whl") {
        let dir = tempfile::tempdir().unwrap();
        sh(Command::new("unzip")
            .arg("-q")
            .arg(artifact)
            .arg("-d")
            .arg(dir.path()));
        let lib = walk_find(dir.path(), "libggml-base.so");
        let mut bytes = std::fs::read(&lib).unwrap();
        let n = bytes.len();
        bytes[n / 2] ^= 0xff;
        std::fs::write(&lib, bytes).unwrap();
        rezip(dir.path(), &copy);
        let v = run(&["verify", &copy.display().to_string()], &[]);
        assert!(
            !v.status.success() && text(&v).contains("libggml-base.so: sha256 differs from RECORD"),
            "{}",
            text(&v)
        );
        // A RECORD line removed.
        let dir2 = tempfile::tempdir().unwrap();
        sh(Command::new("unzip")
            .arg("-q")
            .arg(artifact)
            .arg("-d")
            .arg(dir2.path()));
        let record = walk_find(dir2.path(), "RECORD");
        let kept: Vec<String> = std::fs::read_to_string(&record)
            .unwrap()
            .lines()
            .filter(|l| !l.contains("libllama.so"))
            .map(str::to_string)
            .collect();
        std::fs::write(&record, kept.join("\n") + "\n").unwrap();
        let copy2 = d.path().join("norecord").join(name);
        std::fs::create_dir_all(copy2.parent().unwrap()).unwrap();
        rezip(dir2.path(), &copy2);
        let v = run(&["verify", &copy2.display().to_string()], &[]);
        assert!(
            !v.status.success() && text(&v).contains("libllama.so: in the wheel but not in RECORD"),
            "{}",
            text(&v)
        );
    } else {
        let n = data.len();
        data[n / 2] ^= 0xff;
        std::fs::write(&copy, &data).unwrap();
        let v = run(&["verify", &copy.display().to_string()], &[]);
        assert!(!v.status.success(), "a corrupted archive must fail verify");
    }
}

fn walk_find(dir: &Path, name: &str) -> PathBuf {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .find(|e| e.file_name() == name)
        .unwrap_or_else(|| panic!("no {name}"))
        .into_path()
}

/// Zips `dir` into `out` with RECORD (if given) last, as a wheel must be.
fn rezip(dir: &Path, out: &Path) {
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .map(|e| e.into_path())
        .collect();
    files.sort_by_key(|p| (p.file_name().is_some_and(|n| n == "RECORD"), p.clone()));
    let f = std::fs::File::create(out).unwrap();
    let mut z = zip::ZipWriter::new(f);
    for p in files {
        let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
        z.start_file(rel, zip::write::SimpleFileOptions::default())
            .unwrap();
        std::io::copy(&mut std::fs::File::open(&p).unwrap(), &mut z).unwrap();
    }
    z.finish().unwrap();
}

#[test]
fn wheel_builds_installs_and_generates() {
    // No --py: one py3-none wheel, for every Python the package allows.
    let wheels = build("wheel", "llama-cpp-python", &[]);
    assert_eq!(wheels.len(), 1, "{wheels:?}");
    let wheel = &wheels[0];
    let name = wheel.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with("llama_cpp_python-0.3.36+cpu-py3-none-manylinux_2_"),
        "{name}"
    );
    // The default host toolchain (the pinned GCC, with a glibc 2.28 sysroot): installs on RHEL 8,
    // Debian 11, Ubuntu 20.04; no libstdc++ needed at all.
    let glibc: u32 = name
        .rsplit("manylinux_2_")
        .next()
        .and_then(|t| t.split('_').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(u32::MAX);
    assert!(glibc <= 28, "manylinux_2_28 or lower: {name}");

    let v = run(&["verify", &wheel.display().to_string()], &[]);
    assert!(v.status.success(), "verify accepts the fresh wheel");
    tamper_checks(wheel);

    // Each library exactly once, under llama_cpp/lib: the CPU code as the runtime-dispatched
    // variants the manifest names, no single libggml-cpu.so.
    let manifest = manifest_of(wheel);
    let variants = variant_files(&manifest);
    assert_eq!(variants.len(), 5, "{variants:?}");
    let listing = sh(Command::new("unzip").arg("-Z1").arg(wheel));
    let libs: Vec<&str> = listing.lines().filter(|l| l.contains(".so")).collect();
    assert!(
        libs.iter()
            .all(|l| l.starts_with("llama_cpp/lib/lib") && l.ends_with(".so")),
        "{libs:?}"
    );
    for l in ["libllama.so", "libggml.so", "libggml-base.so", "libmtmd.so"]
        .iter()
        .map(|s| s.to_string())
        .chain(variants.clone())
    {
        assert_eq!(
            libs.iter()
                .filter(|x| x.ends_with(&format!("/{l}")))
                .count(),
            1,
            "{l} once: {libs:?}"
        );
    }
    assert!(
        !libs.iter().any(|l| l.ends_with("/libggml-cpu.so")),
        "{libs:?}"
    );
    // The recipe's hidden visibility: libllama exports its API (llama_model_load_from_file
    // and the rest), not its internals (llama_model_loader's 36 methods were exported).
    let exported = exported_functions(wheel, "llama_cpp/lib/libllama.so");
    assert!(
        exported.iter().any(|s| s == "llama_model_load_from_file"),
        "{} exported",
        exported.len()
    );
    let internal: Vec<_> = exported
        .iter()
        .filter(|s| s.starts_with("_ZN18llama_model_loader"))
        .collect();
    assert!(internal.is_empty(), "exported internals: {internal:?}");
    // The recipe's c-api-libraries-keep-their-std: no library of the wheel exports the
    // std:: template instances it compiled (libllama exported 399), so none runs
    // another's against that library's copy of the C++ runtime.
    for lib in &libs {
        let std = std_exports(&wheel_member(wheel, lib));
        assert!(
            std.is_empty(),
            "{lib} exports {}: {:?}",
            std.len(),
            &std[..std.len().min(5)]
        );
    }

    // A fresh venv: pip install, import, load the model, generate.
    let python = venv("venv-wheel");
    sh(Command::new(&python)
        .args(["-m", "pip", "install", "-q"])
        .arg(wheel)
        .arg("auditwheel"));
    let shown = sh(Command::new(python.parent().unwrap().join("auditwheel"))
        .arg("show")
        .arg(wheel));
    let tag = name.rsplit('-').next().unwrap().trim_end_matches(".whl");
    assert!(
        shown.contains(&format!(
            "consistent with the following platform tag: \"{tag}\""
        )),
        "auditwheel agrees on {tag}:\n{shown}"
    );
    let model = tiny_model(&python);
    let out = sh(Command::new(&python)
        .arg(repo().join("tests/e2e/smoke_llama_cpp_python.py"))
        .arg(&model)
        .args(["--tokens", "16"])
        .current_dir(e2e_dir()));
    assert!(
        out.contains("venv-wheel"),
        "imported from the venv, not the source tree:\n{out}"
    );
    let toks = tokens(&out);
    assert_eq!(toks.len(), 16);
    std::fs::write(e2e_dir().join("wheel-tokens.txt"), format!("{toks:?}")).unwrap();
    // The import loaded the variant ggml picks for this CPU, as the manifest's table says.
    assert_eq!(ggml_modules(&out), [variant_for_host(&manifest)], "{out}");

    // Old CPUs, for real: the same generation under qemu as a Nehalem (SSE4.2, the
    // x86-64-v2 floor) and a Haswell (AVX2): no illegal instruction, the variant the
    // manifest names for that CPU, the same tokens.
    let Some(qemu) = qemu() else { return };
    for cpu in ["Nehalem", "Haswell"] {
        let out = sh(on_cpu(Some((&qemu, cpu)), &python)
            .arg(repo().join("tests/e2e/smoke_llama_cpp_python.py"))
            .arg(&model)
            .args(["--tokens", "16"])
            .current_dir(e2e_dir()));
        assert_eq!(
            ggml_modules(&out),
            [variant_for_model(&manifest, cpu)],
            "{cpu}: {out}"
        );
        assert_eq!(tokens(&out), toks, "{cpu}: the tokens of the native run");
    }
}

/// What the manifest of a wheel of 0.3.35, a release the recipe does not pin, says of its
/// source: the version, the sdist's sha256 from the package index (and that it came from
/// there), the index's upload time as SOURCE_DATE_EPOCH, and every patch checked against its
/// tree: none left out, the security patch in its 0.3.17-0.3.35 text.
fn check_unpinned_0_3_35(manifest: &serde_json::Value) {
    let plan = &manifest["plan"];
    assert_eq!(plan["version"], "0.3.35");
    assert!(
        plan["source"]["hash_from"]
            .as_str()
            .unwrap()
            .contains("https://pypi.org/simple/llama-cpp-python/"),
        "{:#}",
        plan["source"]
    );
    assert_eq!(
        plan["source_date_epoch"], 1786959694u64,
        "the index's upload time"
    );
    let skipped: Vec<&str> = plan["source"]["skipped_patches"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert!(skipped.is_empty(), "every patch fits 0.3.35: {skipped:?}");
    assert!(
        plan["source"]["patches"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["find"].as_str().unwrap().contains("fs::current_path()")),
        "the security patch in 0.3.35's text"
    );
}

/// A symbol of libstdc++'s namespaces, `std` or `__gnu_cxx` (a template instance, its
/// static data or guard variable, a typeinfo, name or vtable), by its mangled name.
fn is_std_symbol(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("_Z") else {
        return false;
    };
    let rest = ["TI", "TS", "TV", "GVZ", "Z"]
        .iter()
        .find_map(|p| rest.strip_prefix(p))
        .unwrap_or(rest);
    let rest = rest.strip_prefix('N').unwrap_or(rest);
    let rest = rest.strip_prefix('K').unwrap_or(rest);
    rest.starts_with("St") || rest.starts_with("9__gnu_cxx")
}

/// The std:: symbols an ELF library defines and exports to the loader.
fn std_exports(elf: &[u8]) -> Vec<String> {
    use object::{Object, ObjectSymbol};
    object::File::parse(elf)
        .unwrap()
        .dynamic_symbols()
        .filter(|s| s.is_definition())
        .filter_map(|s| s.name().ok().map(str::to_string))
        .filter(|n| is_std_symbol(n))
        .collect()
}

/// The bytes of the file `member` (a path inside the wheel).
fn wheel_member(wheel: &Path, member: &str) -> Vec<u8> {
    use std::io::Read;
    let mut z = zip::ZipArchive::new(std::fs::File::open(wheel).unwrap()).unwrap();
    let mut data = Vec::new();
    z.by_name(member).unwrap().read_to_end(&mut data).unwrap();
    data
}

/// The names of the functions `lib` (a path inside the wheel) exports to the loader.
fn exported_functions(wheel: &Path, lib: &str) -> Vec<String> {
    use object::{Object, ObjectSymbol, SymbolKind};
    let data = wheel_member(wheel, lib);
    let file = object::File::parse(&*data).unwrap();
    file.dynamic_symbols()
        .filter(|s| s.is_definition() && s.kind() == SymbolKind::Text)
        .filter_map(|s| s.name().ok().map(str::to_string))
        .collect()
}

fn manifest_of(artifact: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(format!("{}.manifest.json", artifact.display())).unwrap())
        .unwrap()
}

fn variant_files(manifest: &serde_json::Value) -> Vec<String> {
    manifest["plan"]["cpu_variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["file"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn archive_builds_unpacks_and_generates() {
    let archives = build("build", "llama.cpp", &[]);
    assert_eq!(archives.len(), 1, "{archives:?}");
    let archive = &archives[0];
    let v = run(&["verify", &archive.display().to_string()], &[]);
    assert!(v.status.success(), "verify accepts the fresh archive");
    tamper_checks(archive);

    let elsewhere = tempfile::tempdir().unwrap();
    sh(Command::new("tar")
        .arg("xzf")
        .arg(archive)
        .arg("-C")
        .arg(elsewhere.path()));
    let top = std::fs::read_dir(elsewhere.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    for b in [
        "llama-cli",
        "llama-server",
        "llama-quantize",
        "llama-bench",
        "libllama.so",
        "manifest.json",
    ] {
        assert!(top.join(b).is_file(), "{b} in the archive");
    }
    // The tools report the upstream build the recipe names, not `unknown (0)`: the source
    // is no git checkout, so the plan sets LLAMA_BUILD_NUMBER and LLAMA_BUILD_COMMIT.
    let manifest = manifest_of(archive);
    let upstream = &manifest["plan"]["upstream"];
    let number = upstream["build"]
        .as_u64()
        .expect("the plan names the upstream build")
        .to_string();
    let commit = &upstream["commit"].as_str().unwrap()[..9];
    let o = Command::new(top.join("llama-cli"))
        .arg("--version")
        .output()
        .unwrap();
    let version = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        o.status.success() && version.contains(&number) && version.contains(commit),
        "llama-cli --version, expected build {number} and commit {commit}: {version}"
    );
    let bindings = bench_bindings(&top);
    keep_their_std(&top, &bindings);
    one_cxx_runtime(&top, &manifest, &bindings);
    let python = venv("venv-archive");
    sh(Command::new(&python).args(["-m", "pip", "install", "-q", "numpy"]));
    let model = tiny_model(&python);
    let out = sh(Command::new(&python)
        .arg(repo().join("tests/e2e/smoke_llama_cli.py"))
        .arg(&top)
        .arg(&model)
        .args(["--tokens", "16"]));
    assert_eq!(tokens(&out).len(), 16);

    // The archive ships the manifest's CPU variants beside the tools; this CPU loads the
    // one the manifest's table gives it.
    for v in variant_files(&manifest) {
        assert!(top.join(&v).is_file(), "{v} in the archive");
    }
    // `python ggml_modules.py DIR`, as a given CPU under qemu or natively.
    let modules = |qemu_cpu: Option<(&Path, &str)>| {
        let mut c = on_cpu(qemu_cpu, &python);
        c.arg(repo().join("tests/e2e/ggml_modules.py")).arg(&top);
        ggml_modules(&sh(&mut c))
    };
    assert_eq!(modules(None), [variant_for_host(&manifest)]);

    // The tools on an old CPU, for real: llama-completion under qemu as a Nehalem (the
    // x86-64-v2 floor) generates what it generates natively, with the sse42 variant.
    let Some(qemu) = qemu() else { return };
    let generate = |qemu_cpu: Option<&str>| {
        let mut c = on_cpu(
            qemu_cpu.map(|cpu| (qemu.as_path(), cpu)),
            &top.join("llama-completion"),
        );
        c.arg("-m")
            .arg(&model)
            .args([
                "-p",
                "The quick brown fox",
                "-n",
                "16",
                "-t",
                "1",
                "--temp",
                "0",
                "--top-k",
                "1",
                "--seed",
                "0",
                "-no-cnv",
                "--no-display-prompt",
                "--simple-io",
                "--ignore-eos",
            ])
            .stdin(std::process::Stdio::null());
        // llama-completion prints its text through llama.cpp's log thread, which
        // does not always drain before the process exits (a CI run lost all 16
        // tokens so): a complete run ends with "\n\n", a cut one runs again, as
        // tests/e2e/smoke_llama_cli.py does. Thirty times: with both cores busy, 3 runs
        // of 10 ended complete on the development machine (2026-12-02), so ten tries
        // failed about one time in 35.
        let mut last = String::new();
        for _ in 0..30 {
            let o = c.output().unwrap();
            let err = String::from_utf8_lossy(&o.stderr).into_owned();
            assert!(
                o.status.success(),
                "llama-completion on {qemu_cpu:?}: {err}"
            );
            let out = String::from_utf8_lossy(&o.stdout).into_owned();
            if out.ends_with("\n\n") {
                return (out, err);
            }
            last = out;
        }
        panic!("llama-completion on {qemu_cpu:?}: output cut short 30 times, last {last:?}")
    };
    let (native, _) = generate(None);
    assert!(
        !native.trim().is_empty(),
        "native llama-completion generated nothing"
    );
    let (old, err) = generate(Some("Nehalem"));
    assert_eq!(old, native, "Nehalem under qemu: {err}");
    assert_eq!(
        modules(Some((&qemu, "Nehalem"))),
        [variant_for_model(&manifest, "Nehalem")]
    );
}

/// `llama-completion` of an unpacked archive on the tiny model, greedy, one thread
/// (wine is slow with more): its text, CRLF line ends made LF. `wine`: run it so.
fn completion_text(top: &Path, exe: &str, model: &Path, wine: Option<&Path>) -> String {
    let mut c = match wine {
        Some(prefix) => {
            let mut c = Command::new("wine");
            c.arg(top.join(exe))
                .env("WINEDEBUG", "-all")
                .env("WINEPREFIX", prefix);
            c
        }
        None => Command::new(top.join(exe)),
    };
    c.arg("-m").arg(model).args([
        "-p",
        "The quick brown fox jumps over the lazy dog. Once upon a time",
        "-n",
        "16",
        "-c",
        "128",
        "-t",
        "1",
        "--temp",
        "0",
        "--top-k",
        "1",
        "--seed",
        "0",
        "--ignore-eos",
        "-no-cnv",
        "--no-display-prompt",
        "--simple-io",
    ]);
    c.stdin(std::process::Stdio::null());
    // The log thread may not drain before exit (see the archive test): a complete run ends
    // with an empty line.
    for _ in 0..30 {
        let o = c.output().unwrap();
        assert!(o.status.success(), "{c:?}: {}", text(&o));
        let out = String::from_utf8_lossy(&o.stdout).replace("\r\n", "\n");
        if out.ends_with("\n\n") {
            return out;
        }
    }
    panic!("{c:?}: output cut short 30 times")
}

/// The llama.cpp archive for Windows, cross-built with mingw-w64 (`--target
/// x86_64-pc-windows-gnu`): a `.zip` that verify passes, with the tools and the
/// shipped CPU variants as DLLs, whose `llama-completion.exe` under wine writes what
/// the Linux archive's `llama-completion` writes on the same seeded model.
///
/// In the full tier (`.ci/run --full`), not in every CI run: a second full mingw-w64 build
/// (the tools too, about 14 min on CI's two cores) took CI past its time limit. Every CI
/// run has the Windows wheel's build and generation under wine, and the mini project's
/// Windows zip (tests/it/cli.rs); run this one (`cargo test --test it -- --ignored
/// e2e::windows_archive`, or the full tier) when the Windows tools or patches change.
#[test]
#[ignore = "full tier (.ci/run --full): a second full mingw-w64 build (see the doc comment)"]
fn windows_archive_cross_builds_and_generates_under_wine() {
    if !have_mingw_and_wine() {
        return;
    }
    let zips = build("build", "llama.cpp", &["--target", "x86_64-pc-windows-gnu"]);
    assert_eq!(zips.len(), 1, "{zips:?}");
    let zip = &zips[0];
    assert!(
        zip.to_string_lossy()
            .ends_with("llama.cpp-0.3.36-cpu-windows-x86_64.zip"),
        "{zip:?}"
    );
    let v = run(&["verify", &zip.display().to_string()], &[]);
    assert!(v.status.success(), "verify accepts the fresh zip");
    let elsewhere = tempfile::tempdir().unwrap();
    zip::ZipArchive::new(std::fs::File::open(zip).unwrap())
        .unwrap()
        .extract(elsewhere.path())
        .unwrap();
    let top = elsewhere.path().join("llama.cpp-0.3.36-cpu-windows-x86_64");
    let manifest = manifest_of(zip);
    assert_eq!(manifest["target"]["platform"], "win_amd64");
    for f in [
        "llama-cli.exe",
        "llama-server.exe",
        "llama-completion.exe",
        "libllama.dll",
        "ggml-base.dll",
        "manifest.json",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain(variant_files(&manifest))
    {
        assert!(top.join(&f).is_file(), "{f} in the zip");
    }

    // The Linux archive of the same release, the reference (the archive test built it:
    // its build dir is reused).
    let linux = build("build", "llama.cpp", &[]);
    let here = tempfile::tempdir().unwrap();
    sh(Command::new("tar")
        .arg("xzf")
        .arg(&linux[0])
        .arg("-C")
        .arg(here.path()));
    let linux_top = here.path().join("llama.cpp-0.3.36-cpu-linux-x86_64");
    let python = venv("venv-windows");
    sh(Command::new(&python).args(["-m", "pip", "install", "-q", "numpy"]));
    let model = tiny_model(&python);
    let want = completion_text(&linux_top, "llama-completion", &model, None);
    let got = completion_text(
        &top,
        "llama-completion.exe",
        &model,
        Some(&elsewhere.path().join("wine")),
    );
    assert!(!want.trim().is_empty());
    assert_eq!(got, want, "wine and Linux, same model, same greedy text");
}

/// llama-cpp-python for Windows, cross-built with mingw-w64: a `win_amd64` wheel that
/// verify passes, with its DLLs once each under llama_cpp/lib, that pip installs for
/// Windows (`--platform win_amd64`). No Windows CPython runs here, so a C harness
/// loads the installed DLLs the way llama_cpp does (lib dir first on PATH, the
/// library by full path, then the backends from that dir) and generates under wine;
/// its tokens equal the same harness's on the Linux wheel, which equal llama_cpp's own.
#[test]
fn windows_wheel_cross_builds_installs_and_generates_under_wine() {
    if !have_mingw_and_wine() {
        return;
    }
    let py = host_python();
    let wheels = build(
        "wheel",
        "llama-cpp-python",
        &["--py", &py, "--target", "x86_64-pc-windows-gnu"],
    );
    assert_eq!(wheels.len(), 1, "{wheels:?}");
    let wheel = &wheels[0];
    let name = wheel.file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(
        name,
        format!("llama_cpp_python-0.3.36+cpu-cp{py}-cp{py}-win_amd64.whl")
    );
    let v = run(&["verify", &wheel.display().to_string()], &[]);
    assert!(v.status.success(), "verify accepts the fresh wheel");
    let manifest = manifest_of(wheel);
    assert_eq!(manifest["target"]["platform"], "win_amd64");

    // Each DLL once, under llama_cpp/lib: the libraries, and the CPU variants as ggml's
    // loader on Windows names them; no import library, nothing Linux.
    let listing = sh(Command::new("unzip").arg("-Z1").arg(wheel));
    let libs: Vec<&str> = listing
        .lines()
        .filter(|l| l.starts_with("llama_cpp/lib/"))
        .collect();
    let mut want: Vec<String> = ["libllama.dll", "ggml.dll", "ggml-base.dll", "libmtmd.dll"]
        .iter()
        .map(|s| s.to_string())
        .chain(variant_files(&manifest))
        .map(|f| format!("llama_cpp/lib/{f}"))
        .collect();
    want.sort();
    let mut got: Vec<String> = libs.iter().map(|s| s.to_string()).collect();
    got.sort();
    assert_eq!(got, want);
    assert!(
        want.iter()
            .any(|f| f.contains("/ggml-cpu-") && f.ends_with(".dll")),
        "{want:?}"
    );

    // pip installs it for Windows, as a user's pip would pick it.
    let python = venv("venv-windows-wheel");
    let site = e2e_dir().join("windows-site");
    let _ = std::fs::remove_dir_all(&site);
    sh(Command::new(&python)
        .args(["-m", "pip", "install", "-q", "--platform", "win_amd64"])
        .args([
            "--python-version",
            &py,
            "--only-binary=:all:",
            "--no-deps",
            "--target",
        ])
        .arg(&site)
        .arg(wheel));
    let lib_dir = site.join("llama_cpp/lib");
    assert!(lib_dir.join("libllama.dll").is_file());
    let bindings = std::fs::read_to_string(site.join("llama_cpp/llama_cpp.py")).unwrap();
    assert!(
        bindings.contains("_load_ggml_backends(_base_path)"),
        "the recorded import-time backend loading is in the installed package"
    );

    // The reference: the Linux wheel of the same release (the wheel test built it: its
    // build dir is reused), through the same harness and through llama_cpp itself.
    let linux = build("wheel", "llama-cpp-python", &[]);
    sh(Command::new(&python)
        .args(["-m", "pip", "install", "-q", "numpy"])
        .arg(&linux[0]));
    let model = tiny_model(&python);
    let smoke = sh(Command::new(&python)
        .arg(repo().join("tests/e2e/smoke_llama_cpp_python.py"))
        .arg(&model)
        .args(["--tokens", "16", "--no-highlevel-check"])
        .current_dir(e2e_dir()));
    let linux_lib = Path::new(&python)
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join(format!(
            "lib/python{}.{}/site-packages/llama_cpp/lib",
            &py[..1],
            &py[1..]
        ));
    let headers = harness_headers();
    let native = e2e_dir().join("llama_harness");
    sh(Command::new("gcc")
        .args(["-O1", "-o"])
        .arg(&native)
        .arg(repo().join("tests/e2e/llama_harness.c"))
        .args(
            headers
                .iter()
                .flat_map(|h| ["-I".into(), h.display().to_string()]),
        )
        .args(["-ldl", "-lm"]));
    let reference = tokens(&sh(Command::new(&native)
        .arg(&linux_lib)
        .arg(&model)
        .arg("16")));
    assert_eq!(
        reference,
        tokens(&smoke),
        "the harness generates as llama_cpp does"
    );

    let exe = e2e_dir().join("llama_harness.exe");
    sh(Command::new("x86_64-w64-mingw32-gcc-posix")
        .args(["-O1", "-o"])
        .arg(&exe)
        .arg(repo().join("tests/e2e/llama_harness.c"))
        .args(
            headers
                .iter()
                .flat_map(|h| ["-I".into(), h.display().to_string()]),
        ));
    // Windows paths, as llama_cpp passes them (wine maps the Linux root to Z:).
    let windows_path = |p: &Path| format!("Z:{}", p.display()).replace('/', "\\");
    let prefix = e2e_dir().join("wine");
    let out = sh(Command::new("wine")
        .arg(&exe)
        .arg(windows_path(&lib_dir))
        .arg(windows_path(&model))
        .arg("16")
        .env("WINEDEBUG", "-all")
        .env("WINEPREFIX", &prefix)
        .stdin(std::process::Stdio::null()));
    let got = tokens(&out.replace("\r\n", "\n"));
    assert_eq!(got.len(), 16);
    assert_eq!(
        got, reference,
        "wine and Linux, same model, same greedy tokens"
    );
}

/// Whether Debian's mingw-w64 and wine are here (`.ci/run` installs them; under
/// CI=true their absence fails the test).
fn have_mingw_and_wine() -> bool {
    for (program, package) in [
        ("x86_64-w64-mingw32-g++-posix", "mingw-w64"),
        ("x86_64-w64-mingw32-gcc-posix", "mingw-w64"),
        ("wine", "wine"),
    ] {
        let path = std::env::var("PATH").unwrap_or_default();
        if xtask::detect::toolchain::which(program, &path).is_none() {
            cannot_run_here(&format!("no {program}: apt install {package}"));
            return false;
        }
    }
    true
}

/// The dirs of llama.h and ggml-backend.h of the pinned release's tree (every e2e build
/// but the unpinned one's has the same llama.cpp: 0.3.36's).
fn harness_headers() -> Vec<PathBuf> {
    let llama_cpp = common::gguf_py().parent().unwrap().to_path_buf();
    let (include, ggml) = (llama_cpp.join("include"), llama_cpp.join("ggml/include"));
    assert!(include.join("llama.h").is_file(), "{}", include.display());
    assert!(ggml.join("ggml-backend.h").is_file(), "{}", ggml.display());
    vec![include, ggml]
}

const AARCH64: &str = "aarch64-unknown-linux-gnu";

/// The CPU variants an aarch64 artifact ships: ggml's Arm variants that GCC 12 builds
/// (the armv9.2 ones need SME, which it rejects).
const AARCH64_VARIANTS: [&str; 6] = [
    "armv8.0_1",
    "armv8.2_1",
    "armv8.2_2",
    "armv8.2_3",
    "armv8.6_1",
    "armv8.6_2",
];

/// The qemu-aarch64 CPUs the aarch64 artifacts run as, and the variant ggml loads on
/// each: Cortex-A57 (ARMv8.0, the floor) and qemu's `max` (SVE2, I8MM, ...: the top).
const AARCH64_CPUS: [(&str, &str); 2] = [("cortex-a57", "armv8.0_1"), ("max", "armv8.6_2")];

/// The variants a manifest's plan ships, by name.
fn variant_names(manifest: &serde_json::Value) -> Vec<String> {
    manifest["plan"]["cpu_variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap().to_string())
        .collect()
}

/// `manylinux_2_28_aarch64` -> (28, "aarch64").
fn manylinux_tag(tag: &str) -> (u32, &str) {
    let (minor, arch) = tag
        .strip_prefix("manylinux_2_")
        .and_then(|t| t.split_once('_'))
        .unwrap_or_else(|| panic!("not a manylinux_2_X_ARCH tag: {tag}"));
    (minor.parse().unwrap(), arch)
}

/// What every aarch64 artifact's manifest says: the target, an aarch64 platform tag of
/// glibc 2.28 or lower (the pinned cross GCC's sysroot), the six Arm CPU variants.
fn check_aarch64_manifest(manifest: &serde_json::Value) {
    assert_eq!(manifest["plan"]["target"], AARCH64);
    let platform = manifest["target"]["platform"].as_str().unwrap();
    let (glibc, arch) = manylinux_tag(platform);
    assert!(glibc <= 28 && arch == "aarch64", "{platform}");
    assert_eq!(variant_names(manifest), AARCH64_VARIANTS);
}

/// Every ELF file under `dir` is AArch64, as its `e_machine` says (read by the `object`
/// crate and by the tool's own reader); returns their paths relative to `dir`.
fn all_aarch64(dir: &Path) -> Vec<String> {
    let elves = elf_machines(dir);
    assert!(!elves.is_empty(), "no ELF file under {}", dir.display());
    for (f, machine) in &elves {
        assert_eq!(*machine, object::Architecture::Aarch64, "{f}");
        let info = xtask::binary::elf::read(&dir.join(f)).unwrap();
        assert_eq!(info.arch, Some(xtask::platform::Arch::Aarch64), "{f}");
    }
    elves.into_iter().map(|(f, _)| f).collect()
}

/// Unpacks a `.tar.gz` archive into `into`; returns its one top dir.
fn unpack(archive: &Path, into: &Path) -> PathBuf {
    sh(Command::new("tar")
        .arg("xzf")
        .arg(archive)
        .arg("-C")
        .arg(into));
    let tops: Vec<PathBuf> = std::fs::read_dir(into)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(tops.len(), 1, "one top dir: {tops:?}");
    tops[0].clone()
}

/// The tool libraries share the one C++ runtime the plan builds (the pinned GCC links a
/// hidden copy into every library otherwise): it is in the archive, and each tool library
/// needs it. Returns its file name.
fn shared_cxx_runtime(top: &Path, manifest: &serde_json::Value) -> String {
    let name = manifest["plan"]["defines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "LLAMA_FORGE_CXX_RUNTIME_NAME")
        .and_then(|d| d["value"].as_str())
        .expect("the plan of a pinned-GCC archive builds the tools' C++ runtime");
    let runtime = format!("lib{name}.so");
    assert!(top.join(&runtime).is_file(), "{runtime} in the archive");
    let tools: Vec<String> = files_in(top)
        .into_iter()
        .filter(|n| n.starts_with("libllama-") && n.ends_with(".so") && *n != runtime)
        .collect();
    assert!(
        tools.len() >= 5,
        "llama-common and the -impl libraries: {tools:?}"
    );
    for t in &tools {
        let needed = xtask::binary::elf::read(&top.join(t)).unwrap().needed;
        assert!(needed.contains(&runtime), "{t} needs {runtime}: {needed:?}");
    }
    runtime
}

/// [`shared_cxx_runtime`], and llama-bench's tool libraries bind the runtime's own
/// functions there (a library with a copy of its own binds them inside itself, out of
/// LD_DEBUG's sight). `bindings`: [`bench_bindings`].
fn one_cxx_runtime(top: &Path, manifest: &serde_json::Value, bindings: &[Binding]) {
    let runtime = shared_cxx_runtime(top, manifest);
    for lib in ["libllama-common.so", "libllama-bench-impl.so"] {
        let n = bindings
            .iter()
            .filter(|b| b.from == lib && b.to == runtime)
            .filter(|b| b.symbol.starts_with("_ZNSt") || b.symbol.starts_with("_ZNKSt"))
            .count();
        assert!(n > 10, "{lib} binds {n} std:: functions to {runtime}");
    }
}

/// One line of `LD_DEBUG=bindings`, `binding file <from> [0] to <to> [0]: normal symbol
/// `<symbol>'`, with the two files by name.
#[derive(Debug)]
struct Binding {
    from: String,
    to: String,
    symbol: String,
}

/// What the loader binds where for `llama-bench --help` of the unpacked archive `top`,
/// every symbol bound at start (`LD_BIND_NOW`).
fn bench_bindings(top: &Path) -> Vec<Binding> {
    let o = Command::new(top.join("llama-bench"))
        .arg("--help")
        .env("LD_BIND_NOW", "1")
        .env("LD_DEBUG", "bindings")
        .output()
        .unwrap();
    let file = |p: &str| p.rsplit('/').next().unwrap_or(p).to_string();
    String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter_map(|l| {
            let from = l.split("binding file ").nth(1)?.split(' ').next()?;
            let to = l.split(" to ").nth(1)?.split(' ').next()?;
            let symbol = l.split('`').nth(1)?.split('\'').next()?;
            Some(Binding {
                from: file(from),
                to: file(to),
                symbol: symbol.to_string(),
            })
        })
        .collect()
}

/// The archive recipe's c-api-libraries-keep-their-std, in an unpacked archive `top`:
/// the libraries with a C API (ggml's, llama, mtmd) export no std:: symbol (libllama
/// exported 399), the tool libraries still do (so the check sees them), and with every
/// symbol bound at start (`LD_BIND_NOW`), `LD_DEBUG=bindings` of `llama-bench --help`
/// shows no std:: symbol used by one of those libraries bound to another file (there
/// were 192 such bindings, among them libllama running libllama-bench-impl's std::regex
/// compiler with that library's copy of the C++ runtime).
fn keep_their_std(top: &Path, bindings: &[Binding]) {
    let c_api = |n: &str| n.starts_with("libggml") || n == "libllama.so" || n == "libmtmd.so";
    let mut tool_std = 0;
    for name in files_in(top).into_iter().filter(|n| n.ends_with(".so")) {
        let std = std_exports(&std::fs::read(top.join(&name)).unwrap());
        if c_api(&name) {
            assert!(
                std.is_empty(),
                "{name} exports {}: {:?}",
                std.len(),
                &std[..std.len().min(5)]
            );
        } else {
            tool_std += std.len();
        }
    }
    assert!(
        tool_std > 0,
        "the tool libraries export std:: symbols: the check sees them"
    );
    assert!(
        bindings.len() > 100,
        "LD_DEBUG printed bindings: {}",
        bindings.len()
    );
    let crossing: Vec<&Binding> = bindings
        .iter()
        .filter(|b| c_api(&b.from) && b.from != b.to && is_std_symbol(&b.symbol))
        .collect();
    assert!(
        crossing.is_empty(),
        "{} std:: bindings leave a C-API library: {:?}",
        crossing.len(),
        &crossing[..crossing.len().min(5)]
    );
}

/// The x86-64 Linux archive of llama.cpp, the reference the aarch64 artifacts generate
/// against: the one `archive_builds_unpacks_and_generates` left in its dist dir where it
/// is of the plan this checkout makes (in a CI run, where that test runs first), else
/// built now through the same [`build`]. The work dir is keyed by the source, which
/// llama.cpp's x86-64 and aarch64 builds share, so each recompiles the objects both have
/// (ggml-base, llama, the tools) that the other compiled last: ccache gives them back.
fn x86_archive() -> PathBuf {
    let o = xtask(&["plan", "llama.cpp", "--json"], &[])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let plan: xtask::plan::Plan = serde_json::from_value(
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["plan"].clone(),
    )
    .unwrap();
    let want = plan.hash();
    let dist = e2e_dir().join("dist-llama.cpp");
    let left = files_in(&dist)
        .into_iter()
        .filter(|n| n.ends_with("-cpu-linux-x86_64.tar.gz"))
        .map(|n| dist.join(n))
        .find(|a| {
            Path::new(&format!("{}.manifest.json", a.display())).is_file()
                && manifest_of(a)["plan_hash"].as_str() == Some(want.as_str())
        });
    let archive = match left {
        Some(a) => {
            eprintln!("the x86-64 reference: {} (plan {want})", a.display());
            a
        }
        None => {
            eprintln!(
                "no x86-64 archive of plan {want} in {}: building it",
                dist.display()
            );
            let built = build("build", "llama.cpp", &[]);
            assert_eq!(built.len(), 1, "{built:?}");
            built[0].clone()
        }
    };
    let v = run(&["verify", &archive.display().to_string()], &[]);
    assert!(v.status.success(), "verify accepts the x86-64 archive");
    archive
}

/// `smoke_llama_cli.py` on an unpacked archive, on one thread, `--strict` (the
/// completion's text is the server's): the server's token ids and the completion's text.
/// `run_with`: what the tools run through; `all`: also llama-quantize (and a generation
/// with the quantized model) and llama-bench, else only llama-completion and llama-server.
fn smoke_cli(
    python: &Path,
    top: &Path,
    model: &Path,
    run_with: Option<&str>,
    all: bool,
) -> (Vec<u32>, String) {
    let mut c = Command::new(python);
    c.arg(repo().join("tests/e2e/smoke_llama_cli.py"))
        .arg(top)
        .arg(model)
        .args(["--tokens", "16", "--threads", "1", "--strict"]);
    if !all {
        c.args(["--skip-quantize", "--skip-bench"]);
    }
    if let Some(prefix) = run_with {
        c.args(["--run-with", prefix]);
    }
    let out = sh(&mut c);
    let toks = tokens(&out);
    assert_eq!(toks.len(), 16, "{out}");
    (toks, smoke_value(&out, "CLI_TEXT").to_string())
}

/// llama.cpp for aarch64 Linux, cross-built on x86-64 (`--target aarch64-unknown-linux-gnu`:
/// the pinned cross GCC 12.2, a glibc 2.28 sysroot): the archive verify passes, every ELF
/// file in it AArch64, the manifest with the target and the six Arm CPU variants; its tools
/// under qemu-aarch64 as a Cortex-A57 (ARMv8.0) and as qemu's `max` CPU generate the x86-64
/// archive's greedy tokens and text on the seeded tiny model, and ggml loads the variant
/// the manifest names for that CPU (armv8.0_1, armv8.6_2).
///
/// In the full tier (`.ci/run --full`), not in every CI run: what it adds to the aarch64
/// wheel's test (which compiles ggml, the six CPU variants, llama and mtmd for aarch64 with
/// the same cross GCC and generates with them under qemu as both CPUs) is llama-common,
/// the tools and cpp-httplib compiled for aarch64: 40% of its build, about 11 of a
/// clean-clone CI run's 96 CPU-minutes on two cores (BENCHMARKS.md, "CI in tiers"). The
/// x86-64 archive's test runs the same tools' code; the aarch64 archive's packaging runs in
/// every CI run on the mini project (tests/it/aarch64_tool.rs, and the GB10 archive of
/// tests/it/hermetic_cuda.rs). Run it (`cargo test --test it -- --ignored
/// e2e::linux_aarch64_archive`, or the full tier) when the aarch64 toolchain, a recipe's
/// patches or the tools change, and before a release.
#[test]
#[ignore = "full tier (.ci/run --full): a second build of llama.cpp's tools, for aarch64 (see the doc comment)"]
fn linux_aarch64_archive_cross_builds_and_generates_under_qemu() {
    let Some(arm) = arm64_python() else { return };
    let t = std::time::Instant::now();
    let archives = build(
        "build",
        "llama.cpp",
        &["--arch", "cpu", "--target", AARCH64],
    );
    eprintln!("timing: the aarch64 archive's build: {:.1?}", t.elapsed());
    assert_eq!(archives.len(), 1, "{archives:?}");
    let archive = &archives[0];
    let manifest = manifest_of(archive);
    let version = manifest["plan"]["version"].as_str().unwrap();
    let stem = format!("llama.cpp-{version}-cpu-linux-aarch64");
    assert_eq!(
        archive.file_name().unwrap().to_string_lossy(),
        format!("{stem}.tar.gz")
    );
    let v = run(&["verify", &archive.display().to_string()], &[]);
    assert!(v.status.success(), "verify accepts the fresh archive");
    check_aarch64_manifest(&manifest);

    let elsewhere = tempfile::tempdir().unwrap();
    let top = unpack(archive, elsewhere.path());
    assert_eq!(top.file_name().unwrap().to_string_lossy(), stem);
    let variants = variant_files(&manifest);
    for f in [
        "llama-cli",
        "llama-server",
        "llama-quantize",
        "llama-bench",
        "llama-completion",
        "libllama.so",
        "libggml.so",
        "libggml-base.so",
        "manifest.json",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain(variants.clone())
    {
        assert!(top.join(&f).is_file(), "{f} in the archive");
    }
    shared_cxx_runtime(&top, &manifest);
    assert!(!top.join("libggml-cpu.so").exists());
    // Every ELF file is AArch64, and they are the ones the manifest describes.
    let elves = all_aarch64(&top);
    let described: Vec<String> = manifest["binaries"]
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.trim_start_matches(&format!("{stem}/")).to_string())
        .collect();
    assert_eq!(
        elves, described,
        "the ELF files are the manifest's binaries"
    );

    // The upstream build the recipe names, as the x86-64 test checks it.
    let upstream = &manifest["plan"]["upstream"];
    let number = upstream["build"].as_u64().unwrap().to_string();
    let commit = &upstream["commit"].as_str().unwrap()[..9];
    let o = arm
        .on_cpu("cortex-a57", &top.join("llama-cli"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(
        o.status.success() && text(&o).contains(&number) && text(&o).contains(commit),
        "llama-cli --version under qemu, expected build {number} and commit {commit}: {}",
        text(&o)
    );

    // The reference: the x86-64 archive's tokens and text on the same model and prompt.
    let python = venv("venv-aarch64-archive");
    sh(Command::new(&python).args(["-m", "pip", "install", "-q", "numpy"]));
    let model = tiny_model(&python);
    let x86 = x86_archive();
    let here = tempfile::tempdir().unwrap();
    let (want, want_text) = smoke_cli(&python, &unpack(&x86, here.path()), &model, None, false);
    eprintln!("x86-64 reference: TOKENS {want:?}, text {want_text}");

    for (cpu, variant) in AARCH64_CPUS {
        let t = std::time::Instant::now();
        // As the top CPU, every tool: llama-quantize and llama-bench too.
        let all = cpu == "max";
        let prefix = arm.on_cpu_prefix(cpu);
        let (got, got_text) = smoke_cli(&python, &top, &model, Some(&prefix), all);
        assert_eq!(got, want, "{cpu}: the x86-64 archive's tokens");
        assert_eq!(got_text, want_text, "{cpu}: the x86-64 archive's text");
        eprintln!(
            "timing: smoke_llama_cli.py as {cpu} (all tools: {all}): {:.1?}",
            t.elapsed()
        );
        // ggml's loader, in an aarch64 process as that CPU, keeps the manifest's variant.
        let t = std::time::Instant::now();
        let out = sh(arm
            .python_on_cpu(&arm.python(), cpu)
            .arg(repo().join("tests/e2e/ggml_modules.py"))
            .arg(&top));
        let loaded = ggml_modules(&out);
        assert_eq!(loaded, [variant_for_model(&manifest, cpu)], "{cpu}");
        assert_eq!(loaded, [format!("libggml-cpu-{variant}.so")], "{cpu}");
        eprintln!("timing: ggml_modules.py as {cpu}: {:.1?}", t.elapsed());
    }
}

/// llama-cpp-python for aarch64 Linux, cross-built on x86-64, of a release the recipe does
/// not pin (`--version 0.3.35`, resolved from the package index: the x86-64 wheel test builds
/// the pinned one, so one CI lane proves both without a third full build): a
/// `manylinux_2_28_aarch64` (or lower) cp311 wheel named 0.3.35 that verify passes, its
/// manifest saying where the sdist's hash came from, every ELF file in it AArch64, the manifest
/// with the target and the six Arm CPU variants; `pip install --no-index` puts it into a
/// venv of Debian 12's arm64 CPython under qemu-aarch64 (its dependencies' aarch64 wheels
/// downloaded beforehand on the host), and there, as qemu's `max` CPU and as a Cortex-A57,
/// llama_cpp generates the x86-64 archive's greedy tokens on the seeded tiny model with the
/// variant the manifest names for that CPU (armv8.6_2, armv8.0_1).
#[test]
fn linux_aarch64_wheel_cross_builds_installs_and_generates_under_qemu() {
    let Some(arm) = arm64_python() else { return };
    let t = std::time::Instant::now();
    let wheels = build(
        "wheel",
        "llama-cpp-python",
        &[
            "--version",
            "0.3.35",
            "--arch",
            "cpu",
            "--py",
            "311",
            "--target",
            AARCH64,
        ],
    );
    eprintln!("timing: the aarch64 wheel's build: {:.1?}", t.elapsed());
    assert_eq!(wheels.len(), 1, "{wheels:?}");
    let wheel = &wheels[0];
    let manifest = manifest_of(wheel);
    check_unpinned_0_3_35(&manifest);
    let name = wheel.file_name().unwrap().to_string_lossy().into_owned();
    let tag = name.rsplit('-').next().unwrap().trim_end_matches(".whl");
    assert_eq!(
        name,
        format!("llama_cpp_python-0.3.35+cpu-cp311-cp311-{tag}.whl")
    );
    let (glibc, arch) = manylinux_tag(tag);
    assert!(
        glibc <= 28 && arch == "aarch64",
        "manylinux_2_28_aarch64 or lower: {name}"
    );
    let v = run(&["verify", &wheel.display().to_string()], &[]);
    assert!(v.status.success(), "verify accepts the fresh wheel");
    check_aarch64_manifest(&manifest);
    assert_eq!(manifest["target"]["platform"], tag);

    // Every ELF file AArch64: the libraries once each under llama_cpp/lib, the variants
    // the manifest names among them.
    let unzipped = tempfile::tempdir().unwrap();
    zip::ZipArchive::new(std::fs::File::open(wheel).unwrap())
        .unwrap()
        .extract(unzipped.path())
        .unwrap();
    let elves = all_aarch64(unzipped.path());
    let mut want_libs: Vec<String> = ["libllama.so", "libggml.so", "libggml-base.so", "libmtmd.so"]
        .iter()
        .map(|s| s.to_string())
        .chain(variant_files(&manifest))
        .map(|f| format!("llama_cpp/lib/{f}"))
        .collect();
    want_libs.sort();
    assert_eq!(elves, want_libs);

    // What pip needs besides the wheel: its Requires-Dist (the index's aarch64 wheels of
    // numpy, MarkupSafe and the pure-Python ones), downloaded by the host's pip for
    // Debian 12's arm64 CPython 3.11 (glibc 2.36), then installed from there.
    let metadata = std::fs::read_to_string(walk_find(unzipped.path(), "METADATA")).unwrap();
    let requires: Vec<&str> = metadata
        .lines()
        .filter_map(|l| l.strip_prefix("Requires-Dist: "))
        .filter(|r| !r.contains("extra =="))
        .collect();
    eprintln!("Requires-Dist: {requires:?}");
    let host = venv("venv-aarch64-wheel-host");
    let wheelhouse = e2e_dir().join("aarch64-wheelhouse");
    let t = std::time::Instant::now();
    let mut download = Command::new(&host);
    download
        .args(["-m", "pip", "download", "-q", "--only-binary=:all:"])
        .args([
            "--python-version",
            "3.11",
            "--implementation",
            "cp",
            "--abi",
            "cp311",
        ])
        .arg("--platform")
        .arg("manylinux2014_aarch64");
    for minor in 17..=36 {
        download
            .arg("--platform")
            .arg(format!("manylinux_2_{minor}_aarch64"));
    }
    sh(download.arg("-d").arg(&wheelhouse).args(&requires));
    eprintln!(
        "timing: pip download of the aarch64 dependencies: {:.1?}",
        t.elapsed()
    );
    let t = std::time::Instant::now();
    let python = arm.venv(&e2e_dir().join("venv-aarch64-wheel"));
    sh(Command::new(&python)
        .args(["-m", "pip", "install", "-q", "--no-index", "--find-links"])
        .arg(&wheelhouse)
        .arg(wheel));
    eprintln!(
        "timing: arm64 venv and pip install --no-index: {:.1?}",
        t.elapsed()
    );

    // The reference: the x86-64 archive's tokens on the same model and prompt.
    sh(Command::new(&host).args(["-m", "pip", "install", "-q", "numpy"]));
    let model = tiny_model(&host);
    let here = tempfile::tempdir().unwrap();
    let (want, _) = smoke_cli(
        &host,
        &unpack(&x86_archive(), here.path()),
        &model,
        None,
        false,
    );

    // numpy's C extension links libstdc++.so.6, which a Debian machine has (libstdc++6)
    // and the Python root has not.
    let libstdcxx = arm64_packages(&["libstdc++6:arm64"]);
    // As qemu's `max` CPU (and, as cheap, as a Cortex-A57): llama_cpp imported from the
    // venv, the variant the manifest names for that CPU, the x86-64 archive's tokens.
    for (cpu, variant) in AARCH64_CPUS {
        let t = std::time::Instant::now();
        let mut smoke = arm.python_on_cpu(&python, cpu);
        arm.guest_library_path(&mut smoke, &libstdcxx);
        let out = sh(smoke
            .arg(repo().join("tests/e2e/smoke_llama_cpp_python.py"))
            .arg(&model)
            .args(["--tokens", "16"])
            .current_dir(e2e_dir()));
        eprintln!(
            "timing: smoke_llama_cpp_python.py as {cpu}: {:.1?}",
            t.elapsed()
        );
        assert!(
            smoke_value(&out, "LLAMA_CPP_FILE").contains("venv-aarch64-wheel/"),
            "{cpu}: imported from the arm64 venv:\n{out}"
        );
        assert!(out.contains("LLAMA_CPP_VERSION: 0.3.35"), "{out}");
        assert_eq!(tokens(&out), want, "{cpu}: the x86-64 archive's tokens");
        let loaded = ggml_modules(&out);
        assert_eq!(loaded, [variant_for_model(&manifest, cpu)], "{cpu}");
        assert_eq!(loaded, [format!("libggml-cpu-{variant}.so")], "{cpu}");
    }
}
