//! Hostile inputs in bounded memory: each `xtask` run here stays under 256 MB resident
//! and ends, with an error naming what was wrong where it must refuse.
//!
//! - `inspect` (issue 26, item 5): a sparse 1.5 GB library or DLL in a directory is
//!   parsed from its headers, not read whole; an ELF or PE file whose headers claim a
//!   1.4 GB section, or more sections than a linker makes, is refused before reading them; an argument
//!   that is a FIFO or a link to /dev/zero is refused by name (it used to hang, or to
//!   grow until memory ran out).
//! - manifests (item 7): a 60 MB manifest file, and a URL serving 64 MiB, are refused
//!   past the 4 MiB a manifest may hold, before they are parsed.
//! - `reproduce`'s comparison with the recorded artifact beside the manifest: a 600 MB
//!   file in it is streamed (sizes, sha256, then both archives side by side), never
//!   held.
//! - `doctor --python` (item 9): a Python that prints without end is stopped past
//!   1 MiB of output.
//!
//! Each run is measured by a fresh `python3` parent that reports only its own
//! children's peak (`RUSAGE_CHILDREN`), under an address-space limit of 4 GiB and a time
//! limit, so the code before the fixes fails the test instead of the machine.
#![cfg(target_os = "linux")]

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Output};

use crate::common::*;

fn refused(o: &Output, needles: &[&str]) {
    let t = text(o);
    assert!(!o.status.success(), "expected a refusal:\n{t}");
    for n in needles {
        assert!(t.contains(n), "`{n}` not in:\n{t}");
    }
}

const SPARSE: u64 = 1_500_000_000;

/// A 64-bit little-endian x86-64 ELF shared object's header: `shnum` section headers
/// at offset 64 (`e_shnum`, 0 when `shnum` does not fit: then section 0's `sh_size`
/// says), no section names.
fn elf_header(shnum: u64) -> Vec<u8> {
    let mut h = vec![0u8; 64];
    h[..7].copy_from_slice(b"\x7fELF\x02\x01\x01");
    h[16..18].copy_from_slice(&3u16.to_le_bytes()); // ET_DYN
    h[18..20].copy_from_slice(&62u16.to_le_bytes()); // EM_X86_64
    h[20..24].copy_from_slice(&1u32.to_le_bytes());
    h[40..48].copy_from_slice(&64u64.to_le_bytes()); // e_shoff
    h[52..54].copy_from_slice(&64u16.to_le_bytes());
    h[54..56].copy_from_slice(&56u16.to_le_bytes());
    h[58..60].copy_from_slice(&64u16.to_le_bytes());
    let e_shnum = u16::try_from(shnum)
        .ok()
        .filter(|n| *n < 0xff00)
        .unwrap_or(0);
    h[60..62].copy_from_slice(&e_shnum.to_le_bytes());
    h[62..64].copy_from_slice(&1u16.to_le_bytes()); // e_shstrndx: names from section 1
    h
}

/// A section header.
fn section(ty: u32, offset: u64, size: u64) -> Vec<u8> {
    let mut s = vec![0u8; 64];
    s[4..8].copy_from_slice(&ty.to_le_bytes());
    s[24..32].copy_from_slice(&offset.to_le_bytes());
    s[32..40].copy_from_slice(&size.to_le_bytes());
    s[48..56].copy_from_slice(&8u64.to_le_bytes());
    s[56..64].copy_from_slice(&24u64.to_le_bytes());
    s
}

/// `bytes`, then zeros up to [`SPARSE`] bytes that take no disk (`set_len`).
fn sparse(path: &Path, bytes: &[u8]) {
    let mut f = std::fs::File::create(path).unwrap();
    f.write_all(bytes).unwrap();
    f.set_len(SPARSE).unwrap();
}

/// A real shared library padded to 1.5 GB (sparse), beside a FIFO and a link to
/// /dev/zero named like libraries: the library is listed, read from its headers; the
/// others are not read. Before: the whole file was read, then hashed from memory.
#[test]
fn inspect_parses_a_sparse_library_without_reading_it_whole() {
    let d = tempfile::tempdir().unwrap();
    let pkg = d.path().join("pkg");
    std::fs::create_dir(&pkg).unwrap();
    std::fs::write(d.path().join("a.c"), "int a(void) { return 1; }\n").unwrap();
    let so = d.path().join("liba.so");
    sh(Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&so)
        .arg(d.path().join("a.c")));
    sparse(&pkg.join("libbig.so"), &std::fs::read(&so).unwrap());
    // Zeros named like a library: not ELF, not read past its first bytes.
    sparse(&pkg.join("libzeros.so"), b"");
    nix::unistd::mkfifo(
        &pkg.join("libfifo.so"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .unwrap();
    std::os::unix::fs::symlink("/dev/zero", pkg.join("libzero.so")).unwrap();
    let (o, peak) = measured(&["inspect", "--json", pkg.to_str().unwrap()], &[]);
    assert!(o.status.success(), "{}", text(&o));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let libs: Vec<(&str, u64)> = r["results"][0]["libraries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["path"].as_str().unwrap(), l["size"].as_u64().unwrap()))
        .collect();
    assert_eq!(libs, [("libbig.so", SPARSE)]);
    bounded("inspect of a dir with a sparse 1.5 GB library", peak);
}

/// ELF headers that claim a 1.4 GB symbol table, or 50 million sections: refused before
/// either is read, naming the file and the limit.
#[test]
fn inspect_refuses_elf_headers_that_claim_too_much() {
    let d = tempfile::tempdir().unwrap();
    let big = d.path().join("big");
    std::fs::create_dir(&big).unwrap();
    let mut elf = elf_header(2);
    elf.extend(section(0, 0, 0));
    elf.extend(section(2, 4096, 1_400_000_000)); // SHT_SYMTAB
    sparse(&big.join("libsymtab.so"), &elf);
    let (o, peak) = measured(&["inspect", big.to_str().unwrap()], &[]);
    refused(
        &o,
        &[
            &big.join("libsymtab.so").display().to_string(),
            "reading it would take 1400000128 bytes, over the 1024 MiB inspect reads of one library",
        ],
    );
    bounded("inspect of a library claiming a 1.4 GB section", peak);

    let many = d.path().join("many");
    std::fs::create_dir(&many).unwrap();
    let mut elf = elf_header(50_000_000);
    elf.extend(section(0, 0, 50_000_000));
    sparse(&many.join("libmany.so"), &elf);
    let (o, peak) = measured(&["inspect", many.to_str().unwrap()], &[]);
    refused(
        &o,
        &[
            &many.join("libmany.so").display().to_string(),
            "its headers list 50000000 sections",
        ],
    );
    bounded("inspect of a library claiming 50 million sections", peak);
}

/// An argument that is a FIFO (a read waits for a writer forever), a link to
/// /dev/zero (never ends), or a FIFO named like a wheel: refused by name, at once.
#[test]
fn inspect_and_verify_refuse_a_fifo_or_a_device() {
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("libggml.so");
    let wheel_fifo = d.path().join("x-1-py3-none-any.whl");
    for f in [&fifo, &wheel_fifo] {
        nix::unistd::mkfifo(f, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    }
    let zero = d.path().join("libzero.so");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    for (p, kind) in [
        (&fifo, "a FIFO (named pipe)"),
        (&wheel_fifo, "a FIFO (named pipe)"),
        (&zero, "a character device"),
    ] {
        let (o, peak) = measured(&["inspect", p.to_str().unwrap()], &[]);
        refused(
            &o,
            &[&format!(
                "{} is {kind}, not a regular file: only regular files are read",
                p.display()
            )],
        );
        bounded(&format!("inspect {}", p.display()), peak);
    }
    // verify, given a FIFO named like a wheel or an archive, or a link to /dev/zero so named.
    let archive_fifo = d.path().join("llama.cpp-0.3.36-cpu-linux-x86_64.tar.gz");
    nix::unistd::mkfifo(
        &archive_fifo,
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .unwrap();
    let zero_wheel = d.path().join("zero-1-py3-none-any.whl");
    std::os::unix::fs::symlink("/dev/zero", &zero_wheel).unwrap();
    for (p, kind) in [
        (&wheel_fifo, "a FIFO (named pipe)"),
        (&archive_fifo, "a FIFO (named pipe)"),
        (&zero_wheel, "a character device"),
    ] {
        let (o, peak) = measured(&["verify", p.to_str().unwrap()], &[]);
        refused(
            &o,
            &[&format!("{} is {kind}, not a regular file", p.display())],
        );
        bounded(&format!("verify {}", p.display()), peak);
    }
}

/// `[0,0,0,...]` of `bytes` bytes (an odd number): valid JSON that costs many times its
/// size once parsed.
fn json_numbers(bytes: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(bytes);
    v.push(b'[');
    v.extend(b"0,".repeat((bytes - 3) / 2));
    v.extend_from_slice(b"0]");
    assert_eq!(v.len(), bytes);
    v
}

/// A 60 MB manifest (real JSON), and a link to /dev/zero as the manifest: refused
/// before parsing, by its size or its kind. Before: 60 MB of JSON cost 1.5 GB.
#[test]
fn reproduce_refuses_a_huge_manifest_file() {
    let d = tempfile::tempdir().unwrap();
    let m = d.path().join("x.tar.gz.manifest.json");
    std::fs::write(&m, json_numbers(60_000_001)).unwrap();
    let (o, peak) = measured(&["reproduce", m.to_str().unwrap()], &[]);
    refused(
        &o,
        &[&format!(
            "{} is 60000001 bytes, over the 4 MiB a manifest may hold",
            m.display()
        )],
    );
    bounded("reproduce of a 60 MB manifest", peak);

    let zero = d.path().join("zero.manifest.json");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let (o, peak) = measured(&["reproduce", zero.to_str().unwrap()], &[]);
    refused(&o, &[&format!("{} is a character device", zero.display())]);
    bounded("reproduce of /dev/zero", peak);
}

/// A URL serving 64 MiB of JSON: the download stops past 4 MiB and says so.
#[test]
fn reproduce_stops_a_huge_manifest_download() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "http://{}/x.tar.gz.manifest.json",
        listener.local_addr().unwrap()
    );
    std::thread::spawn(move || {
        let Ok((mut s, _)) = listener.accept() else {
            return;
        };
        let mut req = [0u8; 4096];
        let _ = s.read(&mut req);
        let _ = s.write_all(
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                (64 << 20) + 1
            )
            .as_bytes(),
        );
        let body = json_numbers((64 << 20) + 1);
        let _ = s.write_all(&body);
    });
    let (o, peak) = measured(&["reproduce", &url], &[]);
    refused(
        &o,
        &[&format!(
            "{url} serves more than 4 MiB, the most a manifest may hold"
        )],
    );
    bounded("reproduce of a URL serving 64 MiB", peak);
}

/// A "Python" that prints without end: doctor stops it past 1 MiB and says the probe
/// printed too much. Before: its output was read until memory ran out (or 120 s).
#[test]
fn doctor_stops_a_python_that_prints_without_end() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let python = d.path().join("python");
    std::fs::write(
        &python,
        "#!/bin/sh\nexec yes 'LLAMA_FORGE_DOCTOR garbage'\n",
    )
    .unwrap();
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (o, peak) = measured(
        &[
            "doctor",
            "--no-nvml",
            "--gpu",
            "h100",
            "--python",
            python.to_str().unwrap(),
        ],
        &[("VIRTUAL_ENV", "")],
    );
    refused(
        &o,
        &[
            &format!(
                "{} printed too much on the doctor's probe",
                python.display()
            ),
            "more than 1 MiB on stdout",
        ],
    );
    bounded("doctor with a Python printing without end", peak);
}

/// A 64-bit x86-64 PE DLL's headers (PE32+), `sections` section headers of which the
/// first, `.text`, holds the import directory and claims `text_size` bytes of data at
/// offset 0x400 (the rest: zeros); no imports, no symbol table.
fn pe_dll(sections: u16, text_size: u32) -> Vec<u8> {
    let mut h = vec![0u8; 0x400];
    h[..2].copy_from_slice(b"MZ");
    h[0x3c..0x40].copy_from_slice(&64u32.to_le_bytes()); // e_lfanew
    h[64..68].copy_from_slice(b"PE\0\0");
    let f = 68; // the COFF file header
    h[f..f + 2].copy_from_slice(&0x8664u16.to_le_bytes()); // AMD64
    h[f + 2..f + 4].copy_from_slice(&sections.to_le_bytes());
    h[f + 16..f + 18].copy_from_slice(&240u16.to_le_bytes()); // SizeOfOptionalHeader
    h[f + 18..f + 20].copy_from_slice(&0x2022u16.to_le_bytes()); // DLL, executable
    let o = f + 20; // the optional header
    h[o..o + 2].copy_from_slice(&0x20bu16.to_le_bytes()); // PE32+
    h[o + 32..o + 36].copy_from_slice(&0x1000u32.to_le_bytes()); // SectionAlignment
    h[o + 36..o + 40].copy_from_slice(&0x200u32.to_le_bytes()); // FileAlignment
    h[o + 56..o + 60].copy_from_slice(&0x2000u32.to_le_bytes()); // SizeOfImage
    h[o + 60..o + 64].copy_from_slice(&0x400u32.to_le_bytes()); // SizeOfHeaders
    h[o + 108..o + 112].copy_from_slice(&16u32.to_le_bytes()); // NumberOfRvaAndSizes
                                                               // The import directory (entry 1) at 0x1000, in .text: an empty one (zeros).
    h[o + 120..o + 124].copy_from_slice(&0x1000u32.to_le_bytes());
    h[o + 124..o + 128].copy_from_slice(&20u32.to_le_bytes());
    let s = o + 240; // the section table
    h[s..s + 8].copy_from_slice(b".text\0\0\0");
    h[s + 8..s + 12].copy_from_slice(&text_size.to_le_bytes()); // VirtualSize
    h[s + 12..s + 16].copy_from_slice(&0x1000u32.to_le_bytes()); // VirtualAddress
    h[s + 16..s + 20].copy_from_slice(&text_size.to_le_bytes()); // SizeOfRawData
    h[s + 20..s + 24].copy_from_slice(&0x400u32.to_le_bytes()); // PointerToRawData
    h[s + 36..s + 40].copy_from_slice(&0x6000_0020u32.to_le_bytes()); // code, read, execute
    h
}

/// A DLL padded to 1.5 GB (sparse) in a directory: parsed from its headers and the
/// section its import directory is in, not read whole. Headers that claim a 1.4 GB
/// section there, or 5000 sections: refused before either is read. Before: a DLL on
/// disk was read whole (up to the 1 GiB cap), then parsed and hashed from memory.
#[test]
fn inspect_parses_a_sparse_dll_without_reading_it_whole() {
    let d = tempfile::tempdir().unwrap();
    let pkg = d.path().join("pkg");
    std::fs::create_dir(&pkg).unwrap();
    sparse(&pkg.join("x.dll"), &pe_dll(1, 0x200));
    let start = std::time::Instant::now();
    let (o, peak) = measured(&["inspect", "--json", pkg.to_str().unwrap()], &[]);
    assert!(o.status.success(), "{}", text(&o));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let libs = r["results"][0]["libraries"].as_array().unwrap();
    assert_eq!(libs.len(), 1, "{r}");
    assert_eq!(libs[0]["path"], "x.dll");
    assert_eq!(libs[0]["size"].as_u64(), Some(SPARSE));
    assert_eq!(libs[0]["arch"], "x86_64");
    bounded("inspect of a dir with a sparse 1.5 GB DLL", peak);
    assert!(
        start.elapsed() < std::time::Duration::from_secs(60),
        "{:?}",
        start.elapsed()
    );

    for (name, dll, needle) in [
        (
            "big",
            pe_dll(1, 1_400_000_000),
            "reading it would take 1400000",
        ),
        (
            "many",
            pe_dll(5000, 0x200),
            "its headers list 5000 sections",
        ),
    ] {
        let dir = d.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        sparse(&dir.join("x.dll"), &dll);
        let (o, peak) = measured(&["inspect", dir.to_str().unwrap()], &[]);
        refused(&o, &[&dir.join("x.dll").display().to_string(), needle]);
        bounded(&format!("inspect of a DLL with {name} headers"), peak);
    }
}

/// `n` bytes that deflate about 25:1, well within the 100:1 a real entry may have: in
/// each 4 KiB, 128 pseudo-random bytes, then zeros.
struct Compressible {
    left: u64,
    at: u64,
    state: u64,
}

impl Read for Compressible {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.left as usize);
        for b in &mut buf[..n] {
            *b = if self.at % 4096 < 128 {
                self.state ^= self.state << 13;
                self.state ^= self.state >> 7;
                self.state ^= self.state << 17;
                self.state as u8
            } else {
                0
            };
            self.at += 1;
        }
        self.left -= n as u64;
        Ok(n)
    }
}

const LARGE: u64 = 600_000_000;

/// The recorded artifact beside the manifest holds a large file (a real build's
/// library with 600 MB appended, compressed within the ratio: a valid artifact, not a
/// bomb), and the manifest lists it so: reproduce rebuilds, finds that file differs,
/// and counts its differing bytes by streaming both archives side by side. Before:
/// every entry of both was read into memory.
#[test]
fn reproduce_compares_a_large_recorded_artifact_as_streams() {
    use sha2::Digest;
    let d = tempfile::tempdir().unwrap();
    let src = mini_source(d.path());
    let (dist, _) = build_in_checkout(&d.path().join("a"), &src, &[], &[]);
    let archive = files_in(&dist)
        .into_iter()
        .find(|f| f.ends_with(".tar.gz"))
        .unwrap();
    let mut m: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dist.join(format!("{archive}.manifest.json"))).unwrap(),
    )
    .unwrap();
    let files = m["files"].as_object().unwrap();
    let grown = files
        .keys()
        .find(|k| k.contains("libllama"))
        .or_else(|| files.keys().next())
        .unwrap()
        .clone();

    // The recorded artifact: the same entries, `grown` with LARGE bytes appended.
    let rec = d.path().join("recorded");
    std::fs::create_dir(&rec).unwrap();
    let mut input = tar::Archive::new(flate2::read::GzDecoder::new(
        std::fs::File::open(dist.join(&archive)).unwrap(),
    ));
    let gz = flate2::GzBuilder::new().mtime(0).write(
        std::fs::File::create(rec.join(&archive)).unwrap(),
        flate2::Compression::fast(),
    );
    let mut out = tar::Builder::new(gz);
    let mut grown_entry = None;
    for e in input.entries().unwrap() {
        let mut e = e.unwrap();
        let path = e.path().unwrap().to_string_lossy().into_owned();
        let mut h = e.header().clone();
        let mut data = Vec::new();
        e.read_to_end(&mut data).unwrap();
        if path.split_once('/').map(|(_, p)| p) == Some(grown.as_str()) {
            let size = data.len() as u64 + LARGE;
            h.set_size(size);
            let mut sha = digest_io::IoWrapper(sha2::Sha256::new());
            sha.0.update(&data);
            std::io::copy(&mut large(), &mut sha).unwrap();
            grown_entry = Some((size, hex::encode(sha.0.finalize())));
            out.append_data(&mut h, &path, (&data[..]).chain(large()))
                .unwrap();
        } else {
            out.append_data(&mut h, &path, &data[..]).unwrap();
        }
    }
    out.into_inner().unwrap().finish().unwrap();
    let (size, sha) = grown_entry.expect("the file is in the archive");
    m["files"][&grown]["size"] = size.into();
    m["files"][&grown]["sha256"] = sha.into();
    let recorded = std::fs::read(rec.join(&archive)).unwrap();
    m["artifact"]["sha256"] = hex::encode(sha2::Sha256::digest(&recorded)).into();
    m["artifact"]["size"] = (recorded.len() as u64).into();
    drop(recorded);
    let manifest = rec.join(format!("{archive}.manifest.json"));
    std::fs::write(&manifest, serde_json::to_vec_pretty(&m).unwrap()).unwrap();

    let b = d.path().join("b");
    checkout(&b.join("repo"));
    let (o, peak) = measured(
        &[
            "reproduce",
            manifest.to_str().unwrap(),
            "--source",
            src.to_str().unwrap(),
        ],
        &[
            ("LLAMA_FORGE_ROOT", b.join("repo").to_str().unwrap()),
            ("LLAMA_FORGE_BUILD_DIR", b.join("work").to_str().unwrap()),
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let rows: Vec<Vec<&str>> = out
        .lines()
        .skip_while(|l| !l.contains("differing bytes"))
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 1, "{out}");
    assert_eq!(rows[0][0], grown, "{out}");
    assert_eq!(rows[0][4], LARGE.to_string(), "the bytes appended: {out}");
    bounded(
        "reproduce comparing a recorded artifact with a 600 MB file",
        peak,
    );
}

fn large() -> Compressible {
    Compressible {
        left: LARGE,
        at: 0,
        state: 0x9e37_79b9_7f4a_7c15,
    }
}
