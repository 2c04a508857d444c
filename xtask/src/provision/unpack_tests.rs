use super::*;
use std::io::Write;
use tar::EntryType as T;

fn tar_gz(entries: &[(&str, tar::EntryType, &[u8], Option<&str>)]) -> tempfile::NamedTempFile {
    let f = tempfile::NamedTempFile::new().unwrap();
    let gz = flate2::write::GzEncoder::new(f.reopen().unwrap(), flate2::Compression::fast());
    let mut b = tar::Builder::new(gz);
    for (path, kind, data, link) in entries {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(*kind);
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(1_700_000_000);
        // Write the raw name so that hostile paths reach the reader unchanged.
        let name = path.as_bytes();
        h.as_old_mut().name[..name.len()].copy_from_slice(name);
        if let Some(l) = link {
            h.set_link_name(l).unwrap();
        }
        h.set_cksum();
        b.append(&h, *data).unwrap();
    }
    b.into_inner().unwrap().finish().unwrap();
    f
}

/// A Debian package: an ar archive of `debian-binary`, `control.tar.xz` and `data`
/// (named `data_name`), the tar of `entries` compressed with xz.
fn deb(
    entries: &[(&str, tar::EntryType, &[u8], Option<&str>)],
    data_name: &str,
) -> tempfile::NamedTempFile {
    let gz = tar_gz(entries);
    let mut tar = Vec::new();
    io::copy(
        &mut flate2::read::GzDecoder::new(fs::File::open(gz.path()).unwrap()),
        &mut tar,
    )
    .unwrap();
    let xz = liblzma::encode_all(&tar[..], 6).unwrap();
    let mut ar = b"!<arch>\n".to_vec();
    for (name, data) in [
        ("debian-binary", &b"2.0\n"[..]),
        ("control.tar.xz", b""),
        (data_name, &xz),
    ] {
        ar.extend(
            format!(
                "{:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
                name,
                0,
                0,
                0,
                100644,
                data.len()
            )
            .as_bytes(),
        );
        ar.extend_from_slice(data);
        if data.len() % 2 == 1 {
            ar.push(b'\n');
        }
    }
    let f = tempfile::NamedTempFile::new().unwrap();
    fs::write(f.path(), ar).unwrap();
    f
}

#[test]
fn debian_packages_unpack_into_one_tree_and_never_over_each_other() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("root");
    let gcc = deb(
        &[
            ("./usr/", T::Directory, b"", None),
            ("./usr/bin/gcc-12", T::Regular, b"gcc", None),
            (
                "./usr/bin/x86_64-linux-gnu-gcc-12",
                T::Symlink,
                b"",
                Some("gcc-12"),
            ),
        ],
        "data.tar.xz",
    );
    let lib = deb(
        &[("./usr/lib/libisl.so.23", T::Regular, b"isl", None)],
        "data.tar.xz",
    );
    unpack_deb(gcc.path(), &root).unwrap();
    unpack_deb(lib.path(), &root).unwrap();
    assert_eq!(
        fs::read(root.join("usr/bin/x86_64-linux-gnu-gcc-12")).unwrap(),
        b"gcc"
    );
    assert_eq!(fs::read(root.join("usr/lib/libisl.so.23")).unwrap(), b"isl");
    // A file another package unpacked already: refused, as dpkg refuses it.
    let clash = deb(
        &[("./usr/bin/gcc-12", T::Regular, b"evil", None)],
        "data.tar.xz",
    );
    let e = format!("{:#}", unpack_deb(clash.path(), &root).unwrap_err());
    assert!(
        e.contains("`./usr/bin/gcc-12`") && e.contains("already made"),
        "{e}"
    );
    assert_eq!(fs::read(root.join("usr/bin/gcc-12")).unwrap(), b"gcc");
    // Through a link of another package, or outside: refused.
    let through = deb(
        &[(
            "./usr/bin/x86_64-linux-gnu-gcc-12/x",
            T::Regular,
            b"x",
            None,
        )],
        "data.tar.xz",
    );
    assert!(format!("{:#}", unpack_deb(through.path(), &root).unwrap_err()).contains("symlink"));
    let out = deb(
        &[("./usr/lib/up", T::Symlink, b"", Some("../../.."))],
        "data.tar.xz",
    );
    assert!(format!("{:#}", unpack_deb(out.path(), &root).unwrap_err()).contains("outside"));
    // Another compression, and a file that is no package at all.
    let zst = deb(&[("./a", T::Regular, b"a", None)], "data.tar.zst");
    assert!(
        format!("{:#}", unpack_deb(zst.path(), &root).unwrap_err()).contains("only data.tar.xz")
    );
    let not = tempfile::NamedTempFile::new().unwrap();
    fs::write(not.path(), b"PK\x03\x04").unwrap();
    assert!(format!("{:#}", unpack_deb(not.path(), &root).unwrap_err())
        .contains("not a Debian package"));
}

#[test]
fn a_debian_package_that_unpacks_to_far_more_than_it_holds_is_refused() {
    // 64 MiB of zeros as one file, xz -9 (made with Python's lzma): a few kB that would
    // unpack to 64 MiB.
    let bomb = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/deb/bomb.deb");
    assert!(fs::metadata(&bomb).unwrap().len() < 64 << 10);
    let d = tempfile::tempdir().unwrap();
    let e = format!(
        "{:#}",
        unpack_deb(&bomb, &d.path().join("root")).unwrap_err()
    );
    assert!(e.contains("unpacks to more than"), "{e}");
}

#[test]
fn a_debian_package_whose_xz_needs_too_much_memory_is_refused() {
    // The LZMA2 dictionary in the block header raised to 1 GiB (the header's CRC32 made
    // again): the decoder would allocate that much, and its memory limit refuses it first.
    let deb = deb(&[("./a", T::Regular, b"a", None)], "data.tar.xz");
    let mut bytes = fs::read(deb.path()).unwrap();
    let xz = bytes.windows(6).position(|w| w == b"\xFD7zXZ\x00").unwrap();
    let block = xz + 12;
    let size = (bytes[block] as usize + 1) * 4;
    assert_eq!(
        bytes[block + 1] & 0xC3,
        0,
        "one filter, no sizes in the header"
    );
    assert_eq!(
        bytes[block + 2..block + 4],
        [0x21, 0x01],
        "LZMA2, one property byte"
    );
    bytes[block + 4] = 36;
    let mut crc = flate2::Crc::new();
    crc.update(&bytes[block..block + size - 4]);
    bytes[block + size - 4..block + size].copy_from_slice(&crc.sum().to_le_bytes());
    fs::write(deb.path(), &bytes).unwrap();
    let d = tempfile::tempdir().unwrap();
    let e = format!(
        "{:#}",
        unpack_deb(deb.path(), &d.path().join("root")).unwrap_err()
    );
    assert!(e.contains("would need more than 128 MiB"), "{e}");
    assert!(e.contains("memory limit reached"), "{e}");
}

/// Everything under `d` that is not a dir: what an unpack left behind.
pub(crate) fn leftovers(d: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(d)
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| !e.file_type().is_dir())
        .map(|e| e.into_path())
        .collect()
}

/// Unpacks `archive` with `unpack` into `<tmp>/w/x/<dir>`, three levels below the temp
/// dir, expecting a refusal; returns the message after checking that it names the
/// archive and `entry`, and that nothing at all is left in the temp dir.
fn refused_by(
    archive: &Path,
    entry: &str,
    dir: &str,
    unpack: impl FnOnce(&Path, &Path) -> Result<()>,
) -> String {
    let d = tempfile::tempdir().unwrap();
    let dest = d.path().join("w/x").join(dir);
    fs::create_dir_all(dest.parent().unwrap()).unwrap();
    let e = format!("{:#}", unpack(archive, &dest).unwrap_err());
    assert!(
        e.contains(&archive.display().to_string()),
        "names the archive: {e}"
    );
    assert!(
        e.contains(&format!("`{entry}`")),
        "names the entry {entry}: {e}"
    );
    assert!(!dest.exists(), "a refused unpack removes what it made");
    assert_eq!(leftovers(d.path()), Vec::<PathBuf>::new(), "{e}");
    e
}

/// [`refused_by`] for a `.tar.gz` of `entries` (under `pkg-1/`), into `src`.
fn refused(entries: &[(&str, tar::EntryType, &[u8], Option<&str>)], entry: &str) -> String {
    let a = tar_gz(entries);
    refused_by(a.path(), entry, "src", |a, dest| {
        unpack_tar_gz(a, "pkg-1", dest).map(drop)
    })
}

#[test]
fn unpacks_under_strip_prefix() {
    let a = tar_gz(&[
        (
            "pax_global_header",
            T::XGlobalHeader,
            b"52 comment=0000000000000000000000000000000000000000\n",
            None,
        ),
        ("pkg-1/a.txt", T::Regular, b"hi", None),
        ("pkg-1/sub/b.txt", T::Regular, b"yo", None),
        ("other/c.txt", T::Regular, b"no", None),
        ("pkg-1/sub/ok", T::Symlink, b"", Some("../a.txt")),
        ("pkg-1/sub/dir", T::Symlink, b"", Some(".")),
        ("pkg-1/sub/chain", T::Symlink, b"", Some("dir/dir/b.txt")),
        ("pkg-1/hard.txt", T::Link, b"", Some("pkg-1/sub/b.txt")),
    ]);
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("src");
    assert_eq!(
        unpack_tar_gz(a.path(), "pkg-1", &out).unwrap(),
        1_700_000_000
    );
    assert_eq!(fs::read(out.join("sub/b.txt")).unwrap(), b"yo");
    assert_eq!(fs::read(out.join("sub/ok")).unwrap(), b"hi");
    assert_eq!(fs::read(out.join("sub/chain")).unwrap(), b"yo");
    assert!(!out.join("other").exists() && !d.path().join("c.txt").exists());
    // A hard link inside the tree is made as a copy of the file it names.
    let hard = fs::symlink_metadata(out.join("hard.txt")).unwrap();
    assert!(hard.is_file() && fs::read(out.join("hard.txt")).unwrap() == b"yo");
    use std::os::unix::fs::MetadataExt;
    assert_eq!(hard.nlink(), 1, "a copy, not a link");
}

#[test]
fn refuses_path_escape() {
    let e = refused(
        &[("pkg-1/../../evil.txt", T::Regular, b"x", None)],
        "pkg-1/../../evil.txt",
    );
    assert!(e.contains("outside"), "{e}");
    // `..` is refused outside `strip/` too, though nothing there is unpacked.
    refused(
        &[
            ("pkg-1/a.txt", T::Regular, b"x", None),
            ("../evil.txt", T::Regular, b"x", None),
        ],
        "../evil.txt",
    );
}

#[test]
fn refuses_absolute_paths() {
    let d = tempfile::tempdir().unwrap();
    let target = d.path().join("evil.txt");
    let name = target.to_str().unwrap();
    let e = refused(
        &[
            ("pkg-1/a.txt", T::Regular, b"x", None),
            (name, T::Regular, b"x", None),
        ],
        name,
    );
    assert!(e.contains("absolute"), "{e}");
    assert!(!target.exists());
}

#[test]
fn refuses_symlink_escape() {
    for target in ["../../etc/passwd", "/etc/passwd", "sub/../.."] {
        let e = refused(
            &[("pkg-1/link", T::Symlink, b"", Some(target))],
            "pkg-1/link",
        );
        assert!(e.contains("points outside"), "{target}: {e}");
    }
}

/// The chain from the issue: `a/up -> ..`, then `a/up/a/up/esc -> ../../..`, then a
/// file under `esc/`, which landed outside the work dir.
#[test]
fn refuses_a_chain_of_symlinks() {
    let e = refused(
        &[
            ("pkg-1/a/up", T::Symlink, b"", Some("..")),
            ("pkg-1/a/up/a/up/esc", T::Symlink, b"", Some("../../..")),
            ("pkg-1/a/up/a/up/esc/pwned.txt", T::Regular, b"pwned", None),
        ],
        "pkg-1/a/up/a/up/esc",
    );
    assert!(e.contains("goes through the symlink `a/up`"), "{e}");
    // The same escape, with the link's target going through the first link.
    let e = refused(
        &[
            ("pkg-1/a/up", T::Symlink, b"", Some("..")),
            ("pkg-1/esc", T::Symlink, b"", Some("a/up/..")),
        ],
        "pkg-1/esc",
    );
    assert!(e.contains("points outside"), "{e}");
    // A link that was inside when made, and leads outside through a link made after it.
    let e = refused(
        &[
            ("pkg-1/y", T::Symlink, b"", Some("a/..")),
            ("pkg-1/a", T::Symlink, b"", Some(".")),
        ],
        "pkg-1/y",
    );
    assert!(e.contains("points outside"), "{e}");
    let e = refused(
        &[("pkg-1/loop", T::Symlink, b"", Some("loop/x"))],
        "pkg-1/loop",
    );
    assert!(e.contains("loop"), "{e}");
}

#[test]
fn never_writes_through_a_link() {
    // A link to a dir inside the tree, then a file under it.
    let e = refused(
        &[
            ("pkg-1/sub/", T::Directory, b"", None),
            ("pkg-1/d", T::Symlink, b"", Some("sub")),
            ("pkg-1/d/f.txt", T::Regular, b"x", None),
        ],
        "pkg-1/d/f.txt",
    );
    assert!(e.contains("goes through the symlink `d`"), "{e}");
    // A link replaced later by a dir, a file or another link of the same name.
    for (kind, link) in [
        (T::Directory, None),
        (T::Regular, None),
        (T::Symlink, Some("b")),
    ] {
        let e = refused(
            &[
                ("pkg-1/s", T::Symlink, b"", Some("sub")),
                ("pkg-1/s", kind, b"", link),
            ],
            "pkg-1/s",
        );
        assert!(
            e.contains("symlink `s`") || e.contains("already made"),
            "{kind:?}: {e}"
        );
    }
    // A file given twice, and a file replaced by a link.
    let e = refused(
        &[
            ("pkg-1/f", T::Regular, b"1", None),
            ("pkg-1/f", T::Regular, b"2", None),
        ],
        "pkg-1/f",
    );
    assert!(e.contains("already made"), "{e}");
    refused(
        &[
            ("pkg-1/f", T::Regular, b"1", None),
            ("pkg-1/f", T::Symlink, b"", Some("g")),
        ],
        "pkg-1/f",
    );
    // A file where a dir is needed.
    let e = refused(
        &[
            ("pkg-1/f", T::Regular, b"1", None),
            ("pkg-1/f/g", T::Regular, b"2", None),
        ],
        "pkg-1/f/g",
    );
    assert!(e.contains("not a directory"), "{e}");
}

#[test]
fn refuses_hard_links_that_are_not_copies_of_files_inside() {
    for target in [
        "/etc/passwd",
        "other/x",
        "pkg-1/../../x",
        "pkg-1/missing",
        "pkg-1/sub",
        "pkg-1/l/x",
        "pkg-1/l",
    ] {
        let e = refused(
            &[
                ("pkg-1/sub/x", T::Regular, b"x", None),
                ("pkg-1/l", T::Symlink, b"", Some("sub")),
                ("pkg-1/h", T::Link, b"", Some(target)),
            ],
            "pkg-1/h",
        );
        assert!(
            e.contains("hard link") || e.contains("symlink `l`"),
            "{target}: {e}"
        );
    }
}

#[test]
fn refuses_devices_and_fifos() {
    for (kind, what) in [
        (T::Char, "character device"),
        (T::Block, "block device"),
        (T::Fifo, "FIFO"),
    ] {
        let e = refused(
            &[
                ("pkg-1/a.txt", T::Regular, b"x", None),
                ("pkg-1/dev", kind, b"", None),
            ],
            "pkg-1/dev",
        );
        assert!(e.contains(what), "{kind:?}: {e}");
    }
}

/// A zip made with the zip crate, then edited the way a hostile one would be:
/// `rename` replaces a name's bytes everywhere, `modes` sets an entry's Unix mode.
fn zip_file(
    files: &[(&str, &[u8])],
    symlinks: &[(&str, &str)],
    rename: &[(&str, &str)],
    modes: &[(&str, u32)],
) -> tempfile::NamedTempFile {
    let mut w = zip::ZipWriter::new(io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .unix_permissions(0o644);
    for (name, data) in files {
        if name.ends_with('/') {
            w.add_directory(*name, opts).unwrap();
        } else {
            w.start_file(*name, opts).unwrap();
            w.write_all(data).unwrap();
        }
    }
    for (name, target) in symlinks {
        w.add_symlink(*name, *target, opts).unwrap();
    }
    let mut bytes = w.finish().unwrap().into_inner();
    for (from, to) in rename {
        assert_eq!(from.len(), to.len());
        let n = bytes
            .windows(from.len())
            .filter(|w| *w == from.as_bytes())
            .count();
        assert!(n > 0);
        for i in 0..bytes.len() - from.len() {
            if &bytes[i..i + from.len()] == from.as_bytes() {
                bytes[i..i + from.len()].copy_from_slice(to.as_bytes());
            }
        }
    }
    for (name, mode) in modes {
        // Central header: external attributes at 38 (Unix mode in the upper half), name at 46.
        let at = (0..bytes.len() - 46)
            .find(|&i| {
                bytes[i..i + 4] == [0x50, 0x4b, 0x01, 0x02]
                    && bytes[i + 46..].starts_with(name.as_bytes())
            })
            .unwrap();
        bytes[at + 38..at + 42].copy_from_slice(&(mode << 16).to_le_bytes());
        bytes[at + 5] = 3; // made by Unix
    }
    let f = tempfile::NamedTempFile::new().unwrap();
    fs::write(f.path(), bytes).unwrap();
    f
}

/// [`refused_by`] for a zip, into `wheel`.
fn zip_refused(z: &tempfile::NamedTempFile, entry: &str) -> String {
    refused_by(z.path(), entry, "wheel", unpack_zip)
}

#[test]
fn refuses_a_target_dir_that_is_a_link() {
    let a = tar_gz(&[("pkg-1/a.txt", T::Regular, b"x", None)]);
    let d = tempfile::tempdir().unwrap();
    fs::create_dir(d.path().join("elsewhere")).unwrap();
    std::os::unix::fs::symlink("elsewhere", d.path().join("src")).unwrap();
    let e = format!(
        "{:#}",
        unpack_tar_gz(a.path(), "pkg-1", &d.path().join("src")).unwrap_err()
    );
    assert!(
        e.contains(&d.path().join("src").display().to_string()) && e.contains("is a link"),
        "{e}"
    );
    let z = zip_file(&[("a.txt", b"x")], &[], &[], &[]);
    let e = format!(
        "{:#}",
        unpack_zip(z.path(), &d.path().join("src")).unwrap_err()
    );
    assert!(e.contains("is a link"), "{e}");
    assert_eq!(
        leftovers(&d.path().join("elsewhere")),
        Vec::<PathBuf>::new()
    );
}

#[test]
fn unpacks_a_wheel() {
    let z = zip_file(
        &[
            ("pkg/", b""),
            ("pkg/bin/tool", b"#!/bin/sh\n"),
            ("pkg-1.0.dist-info/RECORD", b"r"),
        ],
        &[],
        &[],
        &[("pkg/bin/tool", 0o100755)],
    );
    let d = tempfile::tempdir().unwrap();
    unpack_zip(z.path(), d.path()).unwrap();
    assert_eq!(
        fs::read(d.path().join("pkg/bin/tool")).unwrap(),
        b"#!/bin/sh\n"
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        fs::metadata(d.path().join("pkg/bin/tool"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o755
    );
    assert_eq!(
        fs::metadata(d.path().join("pkg-1.0.dist-info/RECORD"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o644
    );
}

#[test]
fn refuses_hostile_wheels() {
    let e = zip_refused(
        &zip_file(&[("../../evil.txt", b"x")], &[], &[], &[]),
        "../../evil.txt",
    );
    assert!(e.contains("outside"), "{e}");
    let e = zip_refused(
        &zip_file(&[("/tmp/evil.txt", b"x")], &[], &[], &[]),
        "/tmp/evil.txt",
    );
    assert!(e.contains("absolute"), "{e}");
    let e = zip_refused(
        &zip_file(&[("pkg\\..\\..\\evil.txt", b"x")], &[], &[], &[]),
        "pkg\\..\\..\\evil.txt",
    );
    assert!(e.contains("`\\`"), "{e}");
    // A symlink entry, out or in: a wheel holds files only.
    for target in ["../../..", "a.txt"] {
        let e = zip_refused(
            &zip_file(&[("a.txt", b"x")], &[("pkg/esc", target)], &[], &[]),
            "pkg/esc",
        );
        assert!(e.contains("symlink"), "{e}");
    }
    for (mode, what) in [
        (0o010644, "FIFO"),
        (0o020644, "character device"),
        (0o060644, "block device"),
        (0o140644, "file type"),
    ] {
        let e = zip_refused(
            &zip_file(
                &[("a.txt", b"x"), ("pkg/dev", b"")],
                &[],
                &[],
                &[("pkg/dev", mode)],
            ),
            "pkg/dev",
        );
        assert!(e.contains(what), "{mode:o}: {e}");
    }
    // The same name twice (the zip reader would keep one of them, silently), and twice after normalising.
    let e = zip_refused(
        &zip_file(
            &[("pkg/a.txt", b"good"), ("pkg/b.txt", b"evil")],
            &[],
            &[("pkg/b.txt", "pkg/a.txt")],
            &[],
        ),
        "pkg/a.txt",
    );
    assert!(e.contains("twice"), "{e}");
    let e = zip_refused(
        &zip_file(
            &[("pkg/a.txt", b"good"), ("pkg/./a.txt", b"evil")],
            &[],
            &[],
            &[],
        ),
        "pkg/./a.txt",
    );
    assert!(e.contains("again"), "{e}");
    // A file where a dir is needed.
    let e = zip_refused(
        &zip_file(&[("pkg", b"file"), ("pkg/a.txt", b"x")], &[], &[], &[]),
        "pkg/a.txt",
    );
    assert!(e.contains("not a directory"), "{e}");
}

/// The message of a refused entry, as users read it (the temp archive's path replaced).
#[test]
fn refused_entry_message() {
    let a = tar_gz(&[("pkg-1/../../evil.txt", T::Regular, b"x", None)]);
    let d = tempfile::tempdir().unwrap();
    let e = format!(
        "{:#}",
        unpack_tar_gz(a.path(), "pkg-1", &d.path().join("src")).unwrap_err()
    );
    insta::assert_snapshot!(
        "refused_entry",
        e.replace(&a.path().display().to_string(), "/cache/pkg-1.tar.gz")
            .replace(&d.path().display().to_string(), "/work")
    );
}
