//! Hostile `.tar.gz` artifacts (issue 26): each one is read differently by GNU
//! tar or Python's tarfile than by the `tar` crate, or hides bytes from all of
//! them. The rule, for `verify` and `inspect`: the tool refuses the archive,
//! naming the problem, or what `tar -xzf` and Python's tarfile unpack is, byte
//! for byte, what the tool checked (the manifest's files). This tool refuses
//! every one of them. Each run stays under 256 MB resident.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::common::*;

const BLOCK: usize = 512;
const CHECKED: &[u8] = b"#!/bin/sh\necho the llama-cli that verify checked\n";
const EVIL: &[u8] = b"#!/bin/sh\necho another llama-cli\n";

/// The plan `plan llama.cpp --json` prints: its archive stem, and the manifests' plan.
fn plan() -> &'static xtask::plan::Plan {
    static PLAN: OnceLock<xtask::plan::Plan> = OnceLock::new();
    PLAN.get_or_init(|| {
        let o = run(&["plan", "llama.cpp", "--json"], &[]);
        assert!(o.status.success(), "{}", text(&o));
        // The preview's `plan` (schema llama-forge.plan-preview/1).
        let preview: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        serde_json::from_value(preview["plan"].clone()).unwrap()
    })
}

fn stem() -> String {
    match &plan().package {
        xtask::plan::Package::Archive { stem, .. } => stem.clone(),
        _ => panic!("an archive plan"),
    }
}

/// A GNU tar header, its checksum right; `size` is what the header says.
fn header(name: &[u8], typeflag: u8, size: u64) -> Vec<u8> {
    let mut b = [0u8; BLOCK];
    b[..name.len()].copy_from_slice(name);
    b[100..107].copy_from_slice(if typeflag == b'5' {
        b"0000755"
    } else {
        b"0000644"
    });
    b[108..115].copy_from_slice(b"0000000");
    b[116..123].copy_from_slice(b"0000000");
    b[124..135].copy_from_slice(format!("{size:011o}").as_bytes());
    b[136..147].copy_from_slice(b"00000000000");
    b[156] = typeflag;
    b[257..265].copy_from_slice(b"ustar  \x00");
    b[148..156].copy_from_slice(b"        ");
    let sum: u64 = b.iter().map(|x| *x as u64).sum();
    b[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    b.to_vec()
}

fn pad(mut v: Vec<u8>) -> Vec<u8> {
    v.resize(v.len().next_multiple_of(BLOCK), 0);
    v
}

/// A header saying `size`, then `data` (whatever its length), padded.
fn sized(name: &str, typeflag: u8, size: u64, data: &[u8]) -> Vec<u8> {
    let mut v = header(name.as_bytes(), typeflag, size);
    v.extend_from_slice(data);
    pad(v)
}

fn entry(name: &str, typeflag: u8, data: &[u8]) -> Vec<u8> {
    sized(name, typeflag, data.len() as u64, data)
}

/// Pax records, `<len> <key>=<value>\n` each.
fn pax_data(records: &[(&str, &[u8])]) -> Vec<u8> {
    let mut data = Vec::new();
    for (k, v) in records {
        let body = k.len() + v.len() + 3;
        let mut len = body + 1;
        while len != body + len.to_string().len() {
            len = body + len.to_string().len();
        }
        data.extend_from_slice(format!("{len} {k}=").as_bytes());
        data.extend_from_slice(v);
        data.push(b'\n');
    }
    data
}

/// A pax header ('x') with these records.
fn pax(records: &[(&str, &[u8])]) -> Vec<u8> {
    entry("./PaxHeaders/llama-cli", b'x', &pax_data(records))
}

fn end() -> Vec<u8> {
    vec![0; 2 * BLOCK]
}

fn gz(data: &[u8]) -> Vec<u8> {
    let mut g = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    g.write_all(data).unwrap();
    g.finish().unwrap()
}

/// One archive: `body` between the top dir and the manifest; `after_end`
/// after the end blocks, in a second gzip member; `after_gzip` after the gzip data.
/// `checked`: what the `tar` crate reads from `body` (the manifest lists it).
struct Case {
    name: &'static str,
    body: Vec<u8>,
    after_end: Vec<u8>,
    after_gzip: Vec<u8>,
    checked: BTreeMap<String, Vec<u8>>,
    /// What the refusal must say; `None`: a sound archive, which passes.
    problem: Option<String>,
}

fn checked(files: &[(&str, &[u8])]) -> BTreeMap<String, Vec<u8>> {
    files
        .iter()
        .map(|(p, d)| (p.to_string(), d.to_vec()))
        .collect()
}

/// Writes the case's archive into `dir`, with its manifest inside and beside it.
/// Returns its path and the files (under the top dir) a sound reading unpacks.
fn write(dir: &Path, c: &Case) -> (PathBuf, BTreeMap<String, Vec<u8>>) {
    use xtask::manifest::{ArtifactInfo, FileEntry, Manifest, TargetInfo};
    let stem = stem();
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
    let mut m = Manifest::from_plan(plan(), artifact, target, BTreeMap::new());
    m.files = c
        .checked
        .iter()
        .map(|(p, d)| {
            let e = FileEntry {
                size: d.len() as u64,
                sha256: xtask::digest::sha256_bytes(d),
            };
            (p.clone(), e)
        })
        .collect();
    let inside = m.embedded().to_json();
    let mut tar = entry(&format!("{stem}/"), b'5', b"");
    tar.extend_from_slice(&c.body);
    tar.extend(entry(
        &format!("{stem}/{}", xtask::manifest::ARCHIVE_NAME),
        b'0',
        &inside,
    ));
    tar.extend(end());
    let mut bytes = gz(&tar);
    if !c.after_end.is_empty() {
        bytes.extend(gz(&[c.after_end.clone(), end()].concat()));
    }
    bytes.extend_from_slice(&c.after_gzip);
    let path = dir.join(format!("{stem}.tar.gz"));
    std::fs::write(&path, &bytes).unwrap();
    m.artifact.sha256 = Some(xtask::digest::sha256_file(&path).unwrap());
    m.artifact.size = Some(bytes.len() as u64);
    std::fs::write(
        dir.join(format!("{stem}.tar.gz.manifest.json")),
        m.to_json(),
    )
    .unwrap();
    let mut files = c.checked.clone();
    files.insert(xtask::manifest::ARCHIVE_NAME.into(), inside);
    (path, files)
}

/// `xtask <args>`, measured (tests/it/common): (passed, output, peak KiB).
fn run_measured(args: &[&str]) -> (bool, String, u64) {
    let (o, kib) = measured(args, &[]);
    (o.status.success(), text(&o), kib)
}

/// The regular files under `dir` (relative, `/`-separated), and anything else found.
fn tree(dir: &Path) -> (BTreeMap<String, Vec<u8>>, Vec<String>) {
    let mut files = BTreeMap::new();
    let mut other = Vec::new();
    for e in walkdir::WalkDir::new(dir).min_depth(1) {
        let e = e.unwrap();
        let rel = e
            .path()
            .strip_prefix(dir)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if e.file_type().is_file() {
            files.insert(rel, std::fs::read(e.path()).unwrap());
        } else if !e.file_type().is_dir() {
            other.push(rel);
        }
    }
    (files, other)
}

/// Files by path, or why a reader failed.
type Unpacked = Result<BTreeMap<String, Vec<u8>>, String>;

/// What GNU tar and Python's tarfile unpack from `archive`, each: Err when it fails.
fn extracted(archive: &Path) -> Vec<(&'static str, Unpacked)> {
    let mut out = Vec::new();
    for who in ["GNU tar", "Python's tarfile"] {
        let d = tempfile::tempdir().unwrap();
        let mut c = if who == "GNU tar" {
            let mut c = Command::new("tar");
            c.arg("-xzf").arg(archive).arg("-C").arg(d.path());
            c
        } else {
            let mut c = Command::new("python3");
            c.args([
                "-c",
                "import tarfile,sys; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter='data')",
            ])
            .arg(archive)
            .arg(d.path());
            c
        };
        let o = c.output().unwrap();
        let (files, other) = tree(d.path());
        let res = if !o.status.success() {
            Err(format!("failed: {}", text(&o)))
        } else if !other.is_empty() {
            Err(format!("unpacked other than files and dirs: {other:?}"))
        } else {
            Ok(files)
        };
        out.push((who, res));
    }
    out
}

/// GNU tar and Python's tarfile with its `data` filter, or why this machine lacks them.
fn missing_tools() -> Option<String> {
    let tar = Command::new("tar").arg("--version").output();
    if !tar.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("GNU tar")) {
        return Some("no GNU tar".into());
    }
    let py = Command::new("python3")
        .args(["-c", "import tarfile; tarfile.data_filter"])
        .output();
    if !py.is_ok_and(|o| o.status.success()) {
        return Some("no python3 whose tarfile has extraction filters (3.11.4+)".into());
    }
    None
}

/// The rule, for `verify` and `inspect` on the case's archive.
fn check(c: Case) {
    if let Some(why) = missing_tools() {
        cannot_run_here(&why);
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let (path, files) = write(d.path(), &c);
    let top = stem();
    let want: BTreeMap<String, Vec<u8>> = files
        .iter()
        .map(|(p, d)| (format!("{top}/{p}"), d.clone()))
        .collect();
    let p = path.to_str().unwrap();
    for tool in ["verify", "inspect"] {
        let (passed, out, kib) = run_measured(&[tool, p]);
        assert!(
            kib < 256 * 1024,
            "{}: {tool} peaked at {kib} KiB resident, over 256 MB",
            c.name
        );
        if passed {
            // Passed: every reader must unpack what the tool checked.
            for (who, got) in extracted(&path) {
                match got {
                    Ok(got) => assert!(
                        got == want,
                        "{}: {tool} passed, but {who} unpacks {:?}, not the checked {:?}",
                        c.name,
                        got.keys().map(|k| (k, got[k].len())).collect::<Vec<_>>(),
                        want.keys().map(|k| (k, want[k].len())).collect::<Vec<_>>()
                    ),
                    Err(e) => panic!("{}: {tool} passed, but {who} {e}", c.name),
                }
            }
        } else {
            let problem = c.problem.as_deref().unwrap_or("(a sound archive)");
            assert!(
                out.contains(problem) && out.contains(&format!("{top}.tar.gz")),
                "{}: {tool} refused without naming the archive and `{problem}`:\n{out}",
                c.name
            );
        }
        // This tool's choice: refuse what readers could take differently, even
        // where today's GNU tar and Python agree.
        assert_eq!(
            passed,
            c.problem.is_none(),
            "{}: {tool} {}:\n{out}",
            c.name,
            if passed {
                "passed a hostile archive"
            } else {
                "refused a sound archive"
            }
        );
    }
}

fn case(
    name: &'static str,
    body: Vec<u8>,
    checked: BTreeMap<String, Vec<u8>>,
    problem: impl Into<String>,
) -> Case {
    Case {
        name,
        body,
        after_end: vec![],
        after_gzip: vec![],
        checked,
        problem: Some(problem.into()),
    }
}

#[test]
fn a_sound_archive_passes_and_unpacks_as_checked() {
    let s = stem();
    check(Case {
        name: "sound",
        body: entry(&format!("{s}/llama-cli"), b'0', CHECKED),
        after_end: vec![],
        after_gzip: vec![],
        checked: checked(&[("llama-cli", CHECKED)]),
        problem: None,
    });
}

/// The archive: `size` given twice. The tar crate takes the first: the
/// checked llama-cli, then what looks like a second top dir entry whose data
/// hides the rest. GNU tar and Python take the last: all of it is llama-cli.
#[test]
fn a_pax_size_given_twice_is_refused() {
    let s = stem();
    // A second top dir entry whose size is the hidden bytes: the tar crate skips them.
    let mut hidden = header(format!("{s}/").as_bytes(), b'5', BLOCK as u64);
    hidden.extend(pad(EVIL.to_vec()));
    let mut data = pad(CHECKED.to_vec());
    data.extend(hidden);
    let big = data.len().to_string();
    let body = [
        pax(&[
            ("size", CHECKED.len().to_string().as_bytes()),
            ("size", big.as_bytes()),
        ]),
        sized(&format!("{s}/llama-cli"), b'0', CHECKED.len() as u64, &data),
    ]
    .concat();
    check(case(
        "pax size twice",
        body,
        checked(&[("llama-cli", CHECKED)]),
        "gives `size` 2 times",
    ));
}

/// A pax `path` that names another file than the header does.
#[test]
fn a_pax_path_that_differs_from_the_header_is_refused() {
    let s = stem();
    let body = [
        pax(&[("path", format!("{s}/llama-cli").as_bytes())]),
        entry(&format!("{s}/README.md"), b'0', EVIL),
    ]
    .concat();
    check(case(
        "pax path",
        body,
        checked(&[("llama-cli", EVIL)]),
        format!("says path={s}/llama-cli, but the header's name is {s}/README.md"),
    ));
}

/// A GNU long name and a pax path for one entry: the tar crate and Python take
/// the long name, GNU tar the pax path.
#[test]
fn a_gnu_long_name_mixed_with_pax_is_refused() {
    let s = stem();
    let body = [
        entry("././@LongLink", b'L', format!("{s}/llama-cli\0").as_bytes()),
        pax(&[("path", format!("{s}/README.md").as_bytes())]),
        entry(&format!("{s}/x"), b'0', CHECKED),
    ]
    .concat();
    check(case(
        "long name and pax",
        body,
        checked(&[("llama-cli", CHECKED)]),
        "in an archive that also has the GNU long name ('L')",
    ));
}

/// A global pax header: GNU tar and Python apply it to every later entry, the tar crate hands it out as an entry.
#[test]
fn a_global_pax_header_is_refused() {
    let s = stem();
    let g = entry(
        &format!("{s}/pax_global_header"),
        b'g',
        &pax_data(&[("mtime", b"1")]),
    );
    let body = [g, entry(&format!("{s}/llama-cli"), b'0', CHECKED)].concat();
    check(case(
        "global pax header",
        body,
        checked(&[("llama-cli", CHECKED)]),
        "a global pax header ('g')",
    ));
}

/// A pax key the tar crate ignores and Python's tarfile applies: `GNU.sparse.name` renames.
#[test]
fn a_pax_key_readers_apply_differently_is_refused() {
    let s = stem();
    let body = [
        pax(&[("GNU.sparse.name", format!("{s}/llama-cli").as_bytes())]),
        entry(&format!("{s}/README.md"), b'0', EVIL),
    ]
    .concat();
    check(case(
        "GNU.sparse.name",
        body,
        checked(&[("README.md", EVIL)]),
        "pax key `GNU.sparse.name`",
    ));
}

/// An entry after the end blocks (in a second gzip member): `tar -i` unpacks it.
#[test]
fn an_entry_after_the_end_blocks_is_refused() {
    let s = stem();
    let mut c = case(
        "after the end blocks",
        entry(&format!("{s}/llama-cli"), b'0', CHECKED),
        checked(&[("llama-cli", CHECKED)]),
        "after its end-of-archive block",
    );
    c.after_end = entry(&format!("{s}/llama-cli"), b'0', EVIL);
    check(c);
}

/// Bytes after the gzip data: `gzip -d` skips them with a warning.
#[test]
fn bytes_after_the_gzip_data_are_refused() {
    let s = stem();
    let mut c = case(
        "after the gzip data",
        entry(&format!("{s}/llama-cli"), b'0', CHECKED),
        checked(&[("llama-cli", CHECKED)]),
        "bytes after gzip member 1 that are not gzip data",
    );
    c.after_gzip = b"trailing garbage".to_vec();
    check(c);
}
