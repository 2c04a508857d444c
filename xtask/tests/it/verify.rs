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
    assert!(!o.status.success());
    assert!(
        t.contains("no manifest inside the artifact") && !t.contains("unpacks to more than"),
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
