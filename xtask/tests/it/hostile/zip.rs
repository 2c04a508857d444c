//! Zips that zip tools read differently (issue 26): `verify` and `inspect`
//! either refuse them, naming the problem, or what they checked is what
//! Python's zipfile (so pip) and `unzip` extract. Each run stays under 256 MB
//! resident, a bomb of 1 GiB from about 1 MB included.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

const WHEEL: &str = "llama_cpp_python-0.3.36+cpu-cp311-cp311-linux_x86_64.whl";

/// A zip of `(name, data)`, deflated, written by the zip crate.
fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, data) in entries {
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        zip.start_file(*name, opts).unwrap();
        zip.write_all(data).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

fn clean() -> Vec<u8> {
    zip_of(&[
        ("llama_cpp/__init__.py", b"x = 1\n"),
        ("llama_cpp/a.py", b"print('a')\n"),
        ("llama_cpp/b.py", b"print('b')\n"),
    ])
}

fn layout(bytes: &[u8]) -> xtask::package::zip_layout::Layout {
    xtask::package::zip_layout::read(&mut std::io::Cursor::new(bytes), 1000).unwrap()
}

fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// Where each central directory record starts.
fn central_records(bytes: &[u8]) -> Vec<usize> {
    let l = layout(bytes);
    let mut at = l.directory as usize;
    let mut out = Vec::new();
    for _ in &l.entries {
        out.push(at);
        let len = |o: usize| usize::from(u16::from_le_bytes([bytes[at + o], bytes[at + o + 1]]));
        at += 46 + len(28) + len(30) + len(32);
    }
    out
}

fn write(dir: &Path, bytes: &[u8]) -> PathBuf {
    let path = dir.join(WHEEL);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// Python 3 and unzip, or why this machine cannot run these tests.
fn tools() -> bool {
    for (tool, arg) in [("python3", "--version"), ("unzip", "-v")] {
        if Command::new(tool).arg(arg).output().is_err() {
            cannot_run_here(&format!("no {tool} on this machine"));
            return false;
        }
    }
    true
}

/// Each entry's sha256, as Python's zipfile (so pip) reads it, streaming; None
/// when it refuses the zip.
fn python_reads(path: &Path) -> Option<BTreeMap<String, String>> {
    let o = Command::new("python3")
        .args([
            "-c",
            "import hashlib, sys, zipfile\nz = zipfile.ZipFile(sys.argv[1])\nfor i in z.infolist():\n    h = hashlib.sha256()\n    with z.open(i) as f:\n        for b in iter(lambda: f.read(1 << 20), b''):\n            h.update(b)\n    print(h.hexdigest(), i.filename)",
        ])
        .arg(path)
        .output()
        .unwrap();
    if !o.status.success() {
        eprintln!("python refused: {}", String::from_utf8_lossy(&o.stderr));
        return None;
    }
    Some(
        String::from_utf8(o.stdout)
            .unwrap()
            .lines()
            .map(|l| {
                let (h, n) = l.split_once(' ').unwrap();
                (n.to_string(), h.to_string())
            })
            .collect(),
    )
}

fn sha256_of(r: &mut dyn Read) -> String {
    use sha2::Digest;
    let mut h = digest_io::IoWrapper(sha2::Sha256::new());
    std::io::copy(r, &mut h).unwrap();
    hex::encode(h.0.finalize())
}

/// Each entry's sha256, as `unzip` extracts it; None when it fails.
fn unzip_reads(path: &Path) -> Option<BTreeMap<String, String>> {
    let o = Command::new("unzip").arg("-Z1").arg(path).output().unwrap();
    if !o.status.success() {
        eprintln!("unzip failed: {}", String::from_utf8_lossy(&o.stderr));
        return None;
    }
    let mut out = BTreeMap::new();
    for name in String::from_utf8(o.stdout).unwrap().lines() {
        let mut c = Command::new("unzip")
            .arg("-p")
            .arg(path)
            .arg(name)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let h = sha256_of(c.stdout.as_mut().unwrap());
        if !c.wait().unwrap().success() {
            return None;
        }
        out.insert(name.to_string(), h);
    }
    Some(out)
}

/// Each entry's sha256 as the tool's zip reader hands it out, without its bounds.
fn tool_reads(path: &Path) -> BTreeMap<String, String> {
    let unbounded = xtask::package::entries::Limits {
        total: u64::MAX,
        entries: 100_000,
        ratio: u64::MAX,
        ratio_from: u64::MAX,
        header: u64::MAX,
    };
    let mut out = BTreeMap::new();
    xtask::package::wheel::stream_entries(path, &unbounded, |head, data| {
        out.insert(head.name.clone(), sha256_of(data));
        Ok(())
    })
    .unwrap();
    out
}

/// `xtask <args>`, measured (tests/it/common): the output and the peak resident set, in KiB.
fn run_measured(args: &[&str]) -> (std::process::Output, i64) {
    let (o, kib) = measured(args, &[]);
    (o, kib as i64)
}

/// The rule, for `verify` and `inspect` on `path`: each refuses it, naming the
/// problem (`says`), or what the tool read is what Python and unzip extract.
/// Either way each run stays under 256 MB.
fn refused_or_read_alike(path: &Path, says: &str) {
    for cmd in ["verify", "inspect"] {
        let (o, kib) = run_measured(&[cmd, path.to_str().unwrap()]);
        assert!(kib < 256 << 10, "{cmd} held {} MiB", kib >> 10);
        let t = text(&o);
        if !o.status.success() {
            assert!(t.contains(says), "{cmd}: `{says}` not in:\n{t}");
            continue;
        }
        // Accepted: the tool's reader must see what pip and unzip unpack.
        let ours = tool_reads(path);
        assert_eq!(
            python_reads(path).as_ref(),
            Some(&ours),
            "{cmd} accepted it, Python reads otherwise"
        );
        assert_eq!(
            unzip_reads(path).as_ref(),
            Some(&ours),
            "{cmd} accepted it, unzip reads otherwise"
        );
    }
}

/// A clean wheel with an evil one appended, its end record on "disk 1": the zip
/// crate reads the clean directory, Python (so pip) the evil one.
#[test]
fn a_second_end_record_is_refused() {
    if !tools() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let mut evil = zip_of(&[("llama_cpp/__init__.py", b"import os; os.system('evil')\n")]);
    let end = evil.len() - 22;
    put16(&mut evil, end + 4, 1);
    let mut bytes = clean();
    bytes.extend_from_slice(&evil);
    let path = write(d.path(), &bytes);
    // The ambiguity is real.
    let mut z = zip::ZipArchive::new(std::fs::File::open(&path).unwrap()).unwrap();
    let mut init = String::new();
    z.by_name("llama_cpp/__init__.py")
        .unwrap()
        .read_to_string(&mut init)
        .unwrap();
    assert_eq!(init, "x = 1\n", "the zip crate reads the clean wheel");
    let py = python_reads(&path).expect("Python reads the appended wheel");
    assert_eq!(
        py["llama_cpp/__init__.py"],
        sha256_of(&mut &b"import os; os.system('evil')\n"[..]),
        "Python reads the evil wheel"
    );
    refused_or_read_alike(&path, "2 end-of-central-directory records");
}

#[test]
fn trailing_bytes_are_refused() {
    if !tools() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let mut bytes = clean();
    bytes.extend_from_slice(b"#trailing");
    let path = write(d.path(), &bytes);
    refused_or_read_alike(&path, "9 bytes after the end record's comment");
}

/// The local header of llama_cpp/a.py names it llama_cpp/x.py.
#[test]
fn a_local_name_other_than_the_central_one_is_refused() {
    if !tools() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let mut bytes = clean();
    let a = layout(&bytes).entries[1].header as usize;
    bytes[a + 30..a + 44].copy_from_slice(b"llama_cpp/x.py");
    let path = write(d.path(), &bytes);
    refused_or_read_alike(&path, "llama_cpp/a.py: its local header (at");
}

/// b.py's directory record points at a.py's local header and data.
#[test]
fn overlapping_entries_are_refused() {
    if !tools() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let mut bytes = clean();
    let a = layout(&bytes).entries[1].header as u32;
    let rec = central_records(&bytes)[2];
    put32(&mut bytes, rec + 42, a);
    let path = write(d.path(), &bytes);
    refused_or_read_alike(&path, "overlapping entries");
}

/// 1 GiB of zeros deflated (about 1 MB), as a deflated entry with the zeros'
/// CRC and size, and `padding` bytes after the deflate stream inside the entry.
fn bomb(padding: usize) -> (Vec<u8>, xtask::package::zip_layout::Layout) {
    let size = 1u64 << 30;
    let mut enc = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
    let mut crc = flate2::Crc::new();
    let chunk = vec![0u8; 16 << 20];
    for _ in 0..size / chunk.len() as u64 {
        enc.write_all(&chunk).unwrap();
        crc.update(&chunk);
    }
    let mut data = enc.finish().unwrap();
    data.extend(std::iter::repeat_n(0x55u8, padding));
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    zip.start_file("llama_cpp/lib/libzeros.so", opts).unwrap();
    zip.write_all(&data).unwrap();
    let mut bytes = zip.finish().unwrap().into_inner();
    let l = layout(&bytes);
    let (local, central) = (l.entries[0].header as usize, l.directory as usize);
    for (method, crc_at, size_at) in [
        (local + 8, local + 14, local + 22),
        (central + 10, central + 16, central + 24),
    ] {
        put16(&mut bytes, method, 8);
        put32(&mut bytes, crc_at, crc.sum());
        put32(&mut bytes, size_at, size as u32);
    }
    (bytes, l)
}

/// A 1 MB zip whose entry claims 100 MB compressed, in both its headers: against
/// the claim, 1 GiB passed the 100:1 limit, and inspect held about 1 GiB.
#[test]
fn a_lying_compressed_size_is_refused_in_bounded_memory() {
    if !tools() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let (mut bytes, l) = bomb(0);
    assert!(bytes.len() < 2 << 20, "{} bytes", bytes.len());
    let (local, central) = (l.entries[0].header as usize, l.directory as usize);
    for at in [local + 18, central + 20] {
        put32(&mut bytes, at, 100 << 20);
    }
    let path = write(d.path(), &bytes);
    refused_or_read_alike(
        &path,
        "llama_cpp/lib/libzeros.so: its 104857600 compressed bytes",
    );

    // The claim made true with 10 MB of padding after the deflate stream, which
    // no decompressor reads: the ratio counts the bytes read.
    // inspect reads a library's headers only: it may pass this one, reading
    // little, and then what it read must be what pip unpacks.
    let (bytes, _) = bomb(10 << 20);
    let path = write(d.path(), &bytes);
    refused_or_read_alike(
        &path,
        "llama_cpp/lib/libzeros.so: unpacks to more than 100x its compressed size",
    );
}
