//! `verify` on artifacts made here, without a build: memory stays bounded on a
//! 1 GiB entry and on a 1 GiB bomb, and a missing manifest beside the artifact
//! is said.

use crate::common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use common::*;

const WHEEL: &str = "llama_cpp_python-0.3.36+cpu-cp311-cp311-linux_x86_64.whl";

/// `<dir>/<stem>.tar.gz` holding one entry of `size` zeros, compressed at `level`.
fn zeros_archive(dir: &Path, stem: &str, size: u64, level: flate2::Compression) -> PathBuf {
    let path = dir.join(format!("{stem}.tar.gz"));
    let f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let mut tar = tar::Builder::new(flate2::write::GzEncoder::new(f, level));
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(tar::EntryType::Regular);
    h.set_mode(0o644);
    h.set_size(size);
    tar.append_data(
        &mut h,
        format!("{stem}/zeros.bin"),
        std::io::repeat(0).take(size),
    )
    .unwrap();
    tar.into_inner().unwrap().finish().unwrap().flush().unwrap();
    path
}

/// `<dir>/<WHEEL>` holding `llama_cpp/zeros.bin`: `size` zeros, deflated.
fn zeros_wheel(dir: &Path, size: u64) -> PathBuf {
    let path = dir.join(WHEEL);
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .large_file(true);
    zip.start_file("llama_cpp/zeros.bin", opts).unwrap();
    std::io::copy(&mut std::io::repeat(0).take(size), &mut zip).unwrap();
    zip.finish().unwrap();
    path
}

/// Before streaming, verify held every entry in memory, twice: about 2 GiB
/// for either of these. Now it reads a chunk at a time, and refuses the bomb.
#[test]
fn a_1gib_entry_streams_and_a_1gib_bomb_is_refused_in_bounded_memory() {
    let d = tempfile::tempdir().unwrap();
    let stored = zeros_archive(
        d.path(),
        "llama.cpp-0.3.36-cpu-linux-x86_64",
        1 << 30,
        flate2::Compression::none(),
    );
    assert!(
        std::fs::metadata(&stored).unwrap().len() > 1 << 30,
        "stored, not compressed"
    );
    let bomb = zeros_wheel(d.path(), 1 << 30);
    assert!(
        std::fs::metadata(&bomb).unwrap().len() < 4 << 20,
        "a bomb: 1 GiB in a few MiB"
    );

    // Each run measured on its own (`measured`: a fresh parent's RUSAGE_CHILDREN): this
    // test binary's own children include the real builds of the tests before it.
    let (o, stored_peak) = measured(&["verify", stored.to_str().unwrap()], &[]);
    let t = text(&o);
    // No manifest: anyone's archive, given the generic checks, which read all of it.
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains("not a llama-forge artifact") && !t.contains("unpacks to more than"),
        "read whole:\n{t}"
    );
    let (o, bomb_peak) = measured(&["verify", bomb.to_str().unwrap()], &[]);
    let t = text(&o);
    assert!(!o.status.success());
    assert!(
        t.contains(&format!(
            "FAIL {}: llama_cpp/zeros.bin: unpacks to more than 100x its compressed size",
            bomb.display()
        )),
        "{t}"
    );

    let peak = stored_peak.max(bomb_peak) / 1024;
    eprintln!("peak RSS of the verify runs: {peak} MiB");
    assert!(peak < 128, "verify held {peak} MiB: it should stream");
}

/// A sound archive, made with the tool's own writer from the plan `plan --json`
/// prints: without its manifest beside it, verify passes and says that the
/// hash was checked against nothing independent; with it, it says nothing.
#[test]
fn verify_warns_when_the_manifest_beside_is_missing() {
    use xtask::manifest::{ArtifactInfo, Manifest, TargetInfo};
    let d = tempfile::tempdir().unwrap();
    let o = run(&["plan", "llama.cpp", "--json"], &[]);
    assert!(o.status.success());
    let plan: xtask::plan::Plan = serde_json::from_value(
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["plan"].clone(),
    )
    .unwrap();
    let xtask::plan::Package::Archive { stem, .. } = &plan.package else {
        panic!("an archive plan")
    };
    let mut payload = xtask::package::payload::Payload::default();
    payload
        .add("README.md".into(), b"hello\n".to_vec(), false)
        .unwrap();
    let artifact = ArtifactInfo {
        kind: xtask::recipe::ArtifactKind::Archive,
        filename: format!("{stem}.tar.gz"),
        sha256: None,
        size: None,
    };
    let target = TargetInfo {
        platform: "linux_x86_64".parse().unwrap(),
        wheel_tag: None,
    };
    let mut m = Manifest::from_plan(&plan, artifact, target, BTreeMap::new());
    m.files = payload.entries();
    let extra = vec![(
        xtask::manifest::ARCHIVE_NAME.to_string(),
        m.embedded().to_json(),
    )];
    let path = xtask::package::archive::write(d.path(), stem, &payload, &extra, 0).unwrap();

    let o = run(&["verify", path.to_str().unwrap()], &[]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    let beside = d.path().join(format!("{stem}.tar.gz.manifest.json"));
    let warning = format!("WARNING {}: no {} beside it: the artifact's sha256 was checked against nothing independent", path.display(), beside.display());
    assert!(t.contains(&warning), "`{warning}` not in:\n{t}");

    m.artifact.sha256 = Some(xtask::digest::sha256_file(&path).unwrap());
    m.artifact.size = Some(std::fs::metadata(&path).unwrap().len());
    std::fs::write(&beside, m.to_json()).unwrap();
    let o = run(&["verify", path.to_str().unwrap()], &[]);
    let t = text(&o);
    assert!(o.status.success() && !t.contains("WARNING"), "{t}");
}

/// Names from an artifact reach the terminal escaped: a wheel whose entries' names
/// carry ANSI sequences (clear the screen, move the cursor, print a fake `ok:`), a
/// carriage return, a newline and a bidi override. `verify` and `inspect` print each
/// as `\x1b`, `\r`, `\n`, `\u{202e}`: no raw control byte reaches stdout or stderr,
/// and verify's findings stay one per line.
#[test]
fn names_from_an_artifact_are_escaped_on_the_terminal() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join(WHEEL);
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    let opts = zip::write::SimpleFileOptions::default();
    let evil = [
        "llama_cpp/lib/\x1b[2J\x1b[Hok: all fine\x1b[8m.so",
        "llama_cpp/lib/a\rFAIL\nok: fake.so",
        "llama_cpp/lib/\u{202e}os.bil.so",
    ];
    for name in evil {
        zip.start_file(name, opts).unwrap();
        zip.write_all(b"\x7fELF not really").unwrap();
    }
    zip.finish().unwrap();
    let p = path.display().to_string();
    for args in [vec!["verify", p.as_str()], vec!["inspect", p.as_str()]] {
        let o = run(&args, &[]);
        let all = [o.stdout.as_slice(), o.stderr.as_slice()].concat();
        let shown = String::from_utf8_lossy(&all).into_owned();
        assert!(
            !all.iter().any(|b| *b == 0x1b || *b == b'\r') && !shown.contains('\u{202e}'),
            "{args:?} printed raw control characters: {shown:?}"
        );
        assert!(
            shown.contains("\\x1b[2J\\x1b[Hok: all fine") || shown.contains("\\u{202e}os.bil.so"),
            "{args:?}: the names are shown escaped: {shown}"
        );
        if args[0] == "verify" {
            assert!(!o.status.success(), "{shown}");
            assert!(
                !String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .any(|l| l.starts_with("ok:")),
                "no line of verify's starts with ok: {shown}"
            );
        }
    }
}

/// Other publishers' wheels from the package index (pinned by hash): ctranslate2's
/// compressed tag sets (`manylinux_2_27_x86_64.manylinux_2_28_x86_64`, aarch64 too) and
/// Windows wheel, bitsandbytes' CUDA libraries for Linux and Windows, NVIDIA's CUDA runtime
/// for both, and two pure wheels. None carries this tool's manifest: each gets the
/// generic checks, passes them, and is told that only those ran. (ctranslate2's gave
/// 10 FAILs, all false, when our own artifacts' rules were applied to it.) The same
/// checks still fail one of them once a byte RECORD vouches for is changed, or once its
/// name claims another CPU than its binaries are for.
#[test]
fn verify_passes_third_party_wheels_with_the_generic_checks_and_says_so() {
    const FILES: &str = "https://files.pythonhosted.org/packages";
    const WHEELS: [(&str, &str); 9] = [
        (
            "bb/84/e1c6a2ecfb7cd53c5fd1343772cf49cd1aba62048af1d7ecb87a73b201f4/ctranslate2-4.8.5-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
            "86876e8b579ef61e4d1402002f7728fca40967fe79ac2ef71a65d1b8dc5a18ee",
        ),
        (
            "41/d3/af67dd1d68ce4816245a80779107b03ce940214404079e0fb34a12a73bd9/ctranslate2-4.8.5-cp312-cp312-manylinux_2_27_aarch64.manylinux_2_28_aarch64.whl",
            "6e0c0d618b5c64b044fd190ffd53d2e62122c4b68ce6a7353fcf0fb981c4b717",
        ),
        (
            "cb/84/6a2f815ca1f6f29c3f176902e4b9ddaf7a105e07a822d7740858f331e417/ctranslate2-4.8.5-cp312-cp312-win_amd64.whl",
            "16b1478f9dccd3c6eedb7a1b2e23cb2a41f03976266b71afa1bd9019df7c7014",
        ),
        (
            "a5/6e/e4e8b75716dbe5e50964f070266e06f4e6806ce051bfb97f52ee162b9310/bitsandbytes-0.50.2-py3-none-manylinux_2_24_x86_64.whl",
            "55348a9a4a21bfd99cf8c7b32fe67b4030ae5c2a05738e03c1747f65fa6ec283",
        ),
        (
            "72/82/742dc27a1feab90c8f87f2ed14e6d72d05f9e1cf764b4d2ba30aa9b4a2cb/bitsandbytes-0.50.2-py3-none-win_amd64.whl",
            "c697963c8fda3dcd0d7ebd9b5211ae4067feef7cd06e0350d4e816a434fe683d",
        ),
        (
            "0b/7c/14b8f5518f8951e9dca57ea80f44f8ea8bcc8671812e6cc38009f3205e57/nvidia_cuda_runtime-13.5.37-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
            "df2b79a8852f10d1fef8c848489c49eebb5754051bf870202a862831412b179d",
        ),
        (
            "35/99/e07dd9565d2e0317c1a62ff39ae9fc0542c048f74bcfc777c8be97710347/nvidia_cuda_runtime-13.5.37-py3-none-win_amd64.whl",
            "f225d3fa5ea6bfbb58fc4979ef72375cbe661d9107f0d8a4ff22cc151525e4a9",
        ),
        (
            "b7/ce/149a00dd41f10bc29e5921b496af8b574d8413afcd5e30dfa0ed46c2cc5e/six-1.17.0-py2.py3-none-any.whl",
            "4721f391ed90541fddacab5acf947aa0d3dc7d27b2e1e8eda2be8970586c3274",
        ),
        (
            "ba/7b/5504f91c9c2733f693d7759e50ede5d27119d4da7e5836c46d3b5ff81d56/packaging-26.4-py3-none-any.whl",
            "81383611a09c1bc0b08b76e0fd5829d7c6824c65b27a6aee339da133f4233ea2",
        ),
    ];
    let log = xtask::report::Log::stderr();
    let d = tempfile::tempdir().unwrap();
    let mut fetched = BTreeMap::new();
    for (path, sha) in WHEELS {
        let url = format!("{FILES}/{path}");
        let whl = xtask::provision::fetch::fetch(&cache(), &url, &sha.parse().unwrap(), &log)
            .unwrap_or_else(|e| panic!("{url}: {e:#}"));
        // Under its own name (the cache names a download by its hash), alone in a dir:
        // nothing beside it.
        let name = path.rsplit('/').next().unwrap();
        let here = d.path().join(name);
        std::fs::copy(&whl, &here).unwrap();
        let o = run(&["verify", here.to_str().unwrap()], &[]);
        let t = text(&o);
        assert!(o.status.success() && !t.contains("FAIL"), "{name}:\n{t}");
        assert!(
            t.contains(&format!("{name}: not a llama-forge artifact"))
                && t.contains("only the generic checks ran"),
            "{name}:\n{t}"
        );
        // The first of each project's: ctranslate2's x86-64 wheel.
        fetched
            .entry(name.split('-').next().unwrap().to_string())
            .or_insert(here);
    }

    // six with one byte of six.py changed, RECORD as it was.
    let six = &fetched["six"];
    let tampered = d.path().join("tampered").join(six.file_name().unwrap());
    std::fs::create_dir_all(tampered.parent().unwrap()).unwrap();
    {
        let mut from = zip::ZipArchive::new(std::fs::File::open(six).unwrap()).unwrap();
        let mut to = zip::ZipWriter::new(std::fs::File::create(&tampered).unwrap());
        for i in 0..from.len() {
            let mut e = from.by_index(i).unwrap();
            let name = e.name().unwrap().to_string();
            let mut bytes = Vec::new();
            e.read_to_end(&mut bytes).unwrap();
            if name == "six.py" {
                bytes[0] ^= 1;
            }
            to.start_file(name, zip::write::SimpleFileOptions::default())
                .unwrap();
            to.write_all(&bytes).unwrap();
        }
        to.finish().unwrap();
    }
    let o = run(&["verify", tampered.to_str().unwrap()], &[]);
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    assert!(t.contains("FAIL") && t.contains("six.py"), "{t}");

    // six under a name only this tool gives (`+cu135.sm120a`): one of ours whose manifest
    // is gone, not anyone's wheel, so every rule holds and it fails.
    let renamed = d
        .path()
        .join("six-1.17.0+cu135.sm120a-py2.py3-none-any.whl");
    std::fs::copy(six, &renamed).unwrap();
    let o = run(&["verify", renamed.to_str().unwrap()], &[]);
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    assert!(
        t.contains("no manifest inside the artifact") && !t.contains("not a llama-forge"),
        "{t}"
    );

    // ctranslate2's x86-64 wheel under an aarch64 name: its binaries are not for that CPU.
    let x86 = &fetched["ctranslate2"];
    let liar = d
        .path()
        .join("ctranslate2-4.8.5-cp312-cp312-manylinux_2_28_aarch64.whl");
    assert!(x86.to_str().unwrap().contains("x86_64"), "{x86:?}");
    std::fs::copy(x86, &liar).unwrap();
    let o = run(&["verify", liar.to_str().unwrap()], &[]);
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    assert!(
        t.contains("code for x86_64, but the wheel's platform tag is manylinux_2_28_aarch64"),
        "{t}"
    );
}

/// Issue 48: names that are not one file on every OS. Each case is stored in a wheel, a
/// `.zip` and a `.tar.gz` (real ones, made here, of a Linux target: anyone's, with no
/// manifest, so only the generic checks run) beside fine names; `verify` fails each,
/// naming the entry and what is wrong. The same artifacts without the bad names pass.
#[test]
fn names_that_are_not_one_file_on_every_os_fail_verify() {
    const STEM: &str = "demo-1.0-linux-x86_64";
    const WHEEL: &str = "demo-1.0-py3-none-linux_x86_64.whl";
    let long = "a".repeat(256);
    let deep = format!("{}/x.py", ["d"; 2100].join("/"));
    let case = "on a case-insensitive file system (Windows, macOS)";
    // (the bad entries, the one they fail, what is said of it).
    let cases: Vec<(Vec<String>, String, String)> = [
        (vec!["demo/Lib.so", "demo/lib.so"], "demo/lib.so", format!("collides with `{{}}demo/Lib.so` {case}")),
        (vec!["demo/caf\u{e9}.py", "demo/cafe\u{301}.py"], "demo/cafe\u{301}.py", "collides with `{}demo/caf\u{e9}.py` on macOS: the same name once Unicode-normalised (NFC)".to_string()),
        (vec!["demo/Sub", "demo/sub/x.py"], "demo/sub/x.py", format!("its dir `{{}}demo/sub` collides with `{{}}demo/Sub` {case}")),
        (vec!["demo/llama-cli."], "demo/llama-cli.", "its component `llama-cli.` ends in a dot or a space, which Windows drops".to_string()),
        (vec!["demo/llama-cli "], "demo/llama-cli ", "its component `llama-cli ` ends in a dot or a space".to_string()),
        (vec!["demo/llama-cli:x"], "demo/llama-cli:x", "holds `:`, which on Windows names an NTFS alternate data stream".to_string()),
        (vec!["demo/CON"], "demo/CON", "its component `CON` is a Windows device name".to_string()),
        (vec!["demo/aux.dll"], "demo/aux.dll", "its component `aux.dll` is a Windows device name".to_string()),
        (vec!["demo/com1.txt"], "demo/com1.txt", "its component `com1.txt` is a Windows device name".to_string()),
        (vec!["demo/Nul"], "demo/Nul", "its component `Nul` is a Windows device name".to_string()),
        (vec!["demo/lpt9.so"], "demo/lpt9.so", "its component `lpt9.so` is a Windows device name".to_string()),
        (vec!["demo/a<b"], "demo/a<b", "holds `<`, which Windows refuses in a name".to_string()),
        (vec!["demo/a>b"], "demo/a>b", "holds `>`".to_string()),
        (vec!["demo/a\"b"], "demo/a\"b", "holds `\"`".to_string()),
        (vec!["demo/a|b"], "demo/a|b", "holds `|`".to_string()),
        (vec!["demo/a?b"], "demo/a?b", "holds `?`".to_string()),
        (vec!["demo/a*b"], "demo/a*b", "holds `*`".to_string()),
        (vec!["demo/a\\b"], "demo/a\\b", "its name holds a backslash".to_string()),
        (vec!["demo/a\u{1}b"], "demo/a\u{1}b", "its name holds a control character".to_string()),
        (vec![&format!("demo/{long}") as &str], &format!("demo/{long}") as &str, "a component is 256 bytes long, over the 255 that file systems allow".to_string()),
        (vec![&format!("demo/{deep}") as &str], &format!("demo/{deep}") as &str, "the path is {n} bytes long, over the 4096 allowed".to_string()),
    ]
    .into_iter()
    .map(|(names, bad, why)| (names.into_iter().map(String::from).collect(), bad.to_string(), why))
    .collect();
    let fine = [
        "demo/__init__.py",
        "demo/lib/libggml-cuda.so",
        "demo/données.txt",
        "demo/x+y~1.py",
    ];

    for (bad, failing, why) in &cases {
        for kind in ["whl", "zip", "tar.gz"] {
            let d = tempfile::tempdir().unwrap();
            let names: Vec<&str> = fine
                .iter()
                .copied()
                .chain(bad.iter().map(String::as_str))
                .collect();
            for with_bad in [false, true] {
                let these = if with_bad { &names[..] } else { &fine[..] };
                let path = match kind {
                    "whl" => foreign_wheel(d.path(), WHEEL, these),
                    "zip" => foreign_zip(d.path(), STEM, these),
                    _ => foreign_tar_gz(d.path(), STEM, these),
                };
                let o = run(&["verify", path.to_str().unwrap()], &[]);
                let t = text(&o);
                if !with_bad {
                    assert!(
                        o.status.success() && !t.contains("FAIL"),
                        "{kind} of fine names:\n{t}"
                    );
                    continue;
                }
                let top = if kind == "whl" {
                    String::new()
                } else {
                    format!("{STEM}/")
                };
                let entry = format!("{top}{failing}");
                let why = why.replace("{n}", &entry.len().to_string());
                // Shown as verify shows a name with a control character: quoted, escaped.
                let entry = if entry.chars().any(char::is_control) {
                    format!("{entry:?}")
                } else {
                    entry
                };
                let line = format!(
                    "FAIL {}: {entry}: {}",
                    path.display(),
                    why.replace("{}", &top)
                );
                assert!(!o.status.success(), "{kind} with {bad:?}:\n{t}");
                assert!(
                    t.contains(&line),
                    "{kind} with {bad:?}: `{line}` not in\n{t}"
                );
            }
        }
    }
}

/// `<dir>/<name>`: a wheel of anyone's (no manifest) holding `files` (each its name as
/// data), its WHEEL and METADATA, and a RECORD that lists them all.
fn foreign_wheel(dir: &Path, name: &str, files: &[&str]) -> PathBuf {
    let w: xtask::tags::AnyWheelFilename = name.parse().unwrap();
    let di = format!("{}-{}.dist-info", w.distribution, w.version);
    let tag = name.trim_end_matches(".whl").splitn(3, '-').nth(2).unwrap();
    let meta = [
        (
            format!("{di}/METADATA"),
            format!(
                "Metadata-Version: 2.1\nName: {}\nVersion: {}\n",
                w.distribution, w.version
            ),
        ),
        (
            format!("{di}/WHEEL"),
            format!("Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: {tag}\n"),
        ),
    ];
    let path = dir.join(name);
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    let opts = zip::write::SimpleFileOptions::default();
    let mut record = String::new();
    let entries = files
        .iter()
        .map(|f| (f.to_string(), f.to_string()))
        .chain(meta);
    for (n, data) in entries {
        zip.start_file(n.as_str(), opts).unwrap();
        zip.write_all(data.as_bytes()).unwrap();
        let hash = xtask::package::wheel::record_hash(data.as_bytes());
        let quoted = if n.contains([',', '"']) {
            format!("\"{}\"", n.replace('"', "\"\""))
        } else {
            n.clone()
        };
        record.push_str(&format!("{quoted},{hash},{}\n", data.len()));
    }
    record.push_str(&format!("{di}/RECORD,,\n"));
    zip.start_file(format!("{di}/RECORD"), opts).unwrap();
    zip.write_all(record.as_bytes()).unwrap();
    zip.finish().unwrap();
    path
}

/// `<dir>/<stem>.zip`: `files` under `<stem>/`, anyone's (no manifest).
fn foreign_zip(dir: &Path, stem: &str, files: &[&str]) -> PathBuf {
    let path = dir.join(format!("{stem}.zip"));
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    let opts = zip::write::SimpleFileOptions::default();
    for f in files {
        zip.start_file(format!("{stem}/{f}"), opts).unwrap();
        zip.write_all(f.as_bytes()).unwrap();
    }
    zip.finish().unwrap();
    path
}

/// `<dir>/<stem>.tar.gz`: its top dir, then `files` under it, anyone's (no manifest);
/// long names as GNU long-name entries.
fn foreign_tar_gz(dir: &Path, stem: &str, files: &[&str]) -> PathBuf {
    let path = dir.join(format!("{stem}.tar.gz"));
    let f = std::fs::File::create(&path).unwrap();
    let mut tar = tar::Builder::new(flate2::write::GzEncoder::new(
        f,
        flate2::Compression::default(),
    ));
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(tar::EntryType::Directory);
    h.set_mode(0o755);
    h.set_size(0);
    tar.append_data(&mut h, format!("{stem}/"), std::io::empty())
        .unwrap();
    for f in files {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Regular);
        h.set_mode(0o644);
        h.set_size(f.len() as u64);
        tar.append_data(&mut h, format!("{stem}/{f}"), f.as_bytes())
            .unwrap();
    }
    tar.into_inner().unwrap().finish().unwrap().flush().unwrap();
    path
}
