use super::*;

/// A header block: `name` as stored, GNU magic unless `ustar`, a valid checksum.
pub(crate) fn header(name: &[u8], typeflag: u8, size: u64) -> [u8; BLOCK] {
    let mut b = [0u8; BLOCK];
    b[..name.len()].copy_from_slice(name);
    b[100..107].copy_from_slice(b"0000644");
    b[108..115].copy_from_slice(b"0000000");
    b[116..123].copy_from_slice(b"0000000");
    b[124..135].copy_from_slice(format!("{size:011o}").as_bytes());
    b[136..147].copy_from_slice(b"00000000000");
    b[156] = typeflag;
    b[257..265].copy_from_slice(b"ustar  \x00");
    checksum(&mut b);
    b
}

pub(crate) fn checksum(b: &mut [u8; BLOCK]) {
    b[148..156].copy_from_slice(b"        ");
    let sum: u64 = b.iter().map(|x| *x as u64).sum();
    b[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
}

/// One entry: its header, then `data` padded to a block.
pub(crate) fn entry(name: &[u8], typeflag: u8, data: &[u8]) -> Vec<u8> {
    let mut out = header(name, typeflag, data.len() as u64).to_vec();
    out.extend_from_slice(data);
    out.resize(out.len().next_multiple_of(BLOCK), 0);
    out
}

/// A file entry whose header says `size` (its data is `data`, whatever its length).
pub(crate) fn file_sized(name: &str, size: u64, data: &[u8]) -> Vec<u8> {
    let mut out = header(name.as_bytes(), b'0', size).to_vec();
    out.extend_from_slice(data);
    out.resize(out.len().next_multiple_of(BLOCK), 0);
    out
}

/// Pax records as written: `<len> <key>=<value>\n`.
pub(crate) fn pax(records: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for (k, v) in records {
        let body = k.len() + v.len() + 3;
        let mut len = body + 1;
        while len != body + len.to_string().len() {
            len = body + len.to_string().len();
        }
        out.extend_from_slice(format!("{len} {k}=").as_bytes());
        out.extend_from_slice(v);
        out.push(b'\n');
    }
    out
}

pub(crate) fn pax_entry(records: &[(&str, &[u8])]) -> Vec<u8> {
    entry(b"./PaxHeaders/x", b'x', &pax(records))
}

pub(crate) fn end() -> Vec<u8> {
    vec![0; 2 * BLOCK]
}

/// Reads `bytes` through the walk as the archive reader does; the names of
/// the entries the walk let through, or why it refused.
fn walk(bytes: &[u8]) -> Result<Vec<String>, String> {
    let (mut r, w) = checked(bytes, "a.tar.gz");
    let res = io::copy(&mut r, &mut io::sink());
    let mut w = w.borrow_mut();
    match (res, w.refused()) {
        (_, Some(r)) => Err(r.0),
        (Err(e), None) => panic!("an I/O error without a refusal: {e}"),
        (Ok(_), None) => Ok(std::iter::from_fn(|| w.next_expected())
            .map(|e| String::from_utf8_lossy(&e.name).into_owned())
            .collect()),
    }
}

fn refused(bytes: &[u8], needle: &str) {
    match walk(bytes) {
        Ok(names) => panic!("not refused; entries {names:?}"),
        Err(e) => {
            assert!(e.starts_with("a.tar.gz: "), "{e}");
            assert!(e.contains(needle), "`{needle}` not in: {e}");
        }
    }
}

fn cat(parts: &[Vec<u8>]) -> Vec<u8> {
    parts.concat()
}

#[test]
fn a_plain_archive_and_pax_that_repeats_the_header_pass() {
    let a = cat(&[
        entry(b"top/", b'5', b""),
        entry(b"top/a", b'0', b"hello"),
        pax_entry(&[("path", b"top/b"), ("size", b"3"), ("mtime", b"1.5")]),
        entry(b"top/b", b'0', b"abc"),
        end(),
        vec![0; 4096],
    ]);
    assert_eq!(walk(&a).unwrap(), ["top/", "top/a", "top/b"]);
    // The tar crate's own writer, with a long name (GNU 'L').
    let mut b = tar::Builder::new(Vec::new());
    let long = format!("top/{}", "n".repeat(150));
    let mut h = tar::Header::new_gnu();
    h.set_size(2);
    b.append_data(&mut h, &long, &b"hi"[..]).unwrap();
    assert_eq!(walk(&b.into_inner().unwrap()).unwrap(), [long]);
}

/// The archive: `size` twice; the tar crate reads 5 bytes of
/// llama-cli, then a directory entry; GNU tar reads all as llama-cli.
#[test]
fn a_pax_key_given_twice_is_refused() {
    let hidden = entry(b"top/", b'5', b"");
    let mut data = b"good!".to_vec();
    data.resize(BLOCK, 0);
    data.extend_from_slice(&hidden);
    let big = data.len().to_string();
    let a = cat(&[
        pax_entry(&[("size", b"5"), ("size", big.as_bytes())]),
        file_sized("top/llama-cli", 5, &data),
        end(),
    ]);
    refused(&a, &format!("gives `size` 2 times (5, {big}): the tar crate takes the first, GNU tar and Python's tarfile the last"));
    refused(
        &cat(&[
            pax_entry(&[("mtime", b"1"), ("mtime", b"2")]),
            entry(b"top/a", b'0', b""),
            end(),
        ]),
        "gives `mtime` 2 times",
    );
}

#[test]
fn pax_fields_that_differ_from_the_header_are_refused() {
    for (records, needle) in [
        (
            vec![("path", &b"top/evil"[..])],
            "top/a: the pax header at byte 0 (at the start) says path=top/evil, but the header's name is top/a",
        ),
        (vec![("size", &b"4"[..])], "says size=4, but the header's size is 3"),
        (vec![("linkpath", &b"/etc"[..])], "says linkpath=/etc, but the header's link name is"),
        (vec![("size", &b"+3"[..])], "size=+3: not a plain decimal number"),
        (vec![("GNU.sparse.size", &b"3"[..])], "pax key `GNU.sparse.size`: not one"),
    ] {
        let a = cat(&[pax_entry(&records), entry(b"top/a", b'0', b"abc"), end()]);
        refused(&a, needle);
    }
}

#[test]
fn gnu_long_names_mixed_with_pax_or_left_dangling_are_refused() {
    let long = || entry(b"././@LongLink", b'L', b"top/long-name\0");
    refused(
        &cat(&[
            pax_entry(&[("mtime", b"1")]),
            entry(b"top/a", b'0', b""),
            long(),
            entry(b"top/l", b'0', b""),
            end(),
        ]),
        "a GNU long name ('L') in an archive that also has the pax header at byte 0",
    );
    refused(
        &cat(&[
            long(),
            pax_entry(&[("mtime", b"1")]),
            entry(b"top/a", b'0', b""),
            end(),
        ]),
        "a pax header in an archive that also has the GNU long name",
    );
    refused(
        &cat(&[long(), end()]),
        "not followed by the header of an entry but by the end of the archive",
    );
    refused(
        &cat(&[long(), long(), entry(b"top/a", b'0', b""), end()]),
        "a second GNU long name ('L') for one entry",
    );
    refused(
        &cat(&[
            entry(b"././@LongLink", b'L', b"top/a\0b\0"),
            entry(b"top/a", b'0', b""),
            end(),
        ]),
        "a GNU long name is a name and one NUL at its end",
    );
    // 'K' then 'L' before one entry is how GNU tar writes a long link to a long name.
    let ok = cat(&[
        entry(b"././@LongLink", b'K', b"top/target\0"),
        long(),
        entry(b"top/x", b'1', b""),
        end(),
    ]);
    assert_eq!(walk(&ok).unwrap(), ["top/long-name"]);
}

#[test]
fn global_pax_headers_are_refused() {
    let a = cat(&[
        entry(b"pax_global_header", b'g', &pax(&[("path", b"top/x")])),
        entry(b"top/a", b'0', b""),
        end(),
    ]);
    refused(&a, "a global pax header ('g')");
}

#[test]
fn malformed_pax_records_are_refused() {
    for (data, needle) in [
        (&b"30 path=top/a\n"[..], "its length says 30 bytes"),
        (b"12 path=top/a\n", "which do not end with a newline"),
        (b"14 path=top/a\nx", "no decimal length"),
        (b"014 path=top/a\n", "no decimal length"),
        (b"8 pathx\n", "no `=`"),
        (b"10 \xff\xfe=abc\n", "its key is empty or not UTF-8"),
    ] {
        let a = cat(&[
            entry(b"./PaxHeaders/x", b'x', data),
            entry(b"top/a", b'0', b""),
            end(),
        ]);
        refused(&a, needle);
    }
}

#[test]
fn header_checksums_and_odd_numbers_are_refused() {
    let mut h = header(b"top/a", b'0', 0);
    h[0] = b'T';
    refused(&cat(&[h.to_vec(), end()]), "header checksum");
    // Base-256 with a sign bit (negative for Python, huge for the tar crate).
    let mut h = header(b"top/a", b'0', 0);
    h[124..136].copy_from_slice(&[0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    checksum(&mut h);
    refused(
        &cat(&[h.to_vec(), end()]),
        "a base-256 number that readers parse differently",
    );
    // Octal with garbage after a space.
    let mut h = header(b"top/a", b'0', 0);
    h[124..136].copy_from_slice(b"00000000 1x\0");
    checksum(&mut h);
    refused(&cat(&[h.to_vec(), end()]), "size field");
    // A GNU header with a "prefix" Python would prepend.
    let mut h = header(b"a", b'0', 0);
    h[345..349].copy_from_slice(b"evil");
    checksum(&mut h);
    refused(
        &cat(&[h.to_vec(), end()]),
        "Python's tarfile prepends them to the name",
    );
    // No magic: a v7 header.
    let mut h = header(b"top/a", b'0', 0);
    h[257..265].fill(0);
    checksum(&mut h);
    refused(
        &cat(&[h.to_vec(), end()]),
        "neither a ustar nor a GNU tar header",
    );
    // GNU base-256 sizes within 64 bits are read.
    let mut h = header(b"top/a", b'0', 0);
    h[124..136].copy_from_slice(&[0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3]);
    checksum(&mut h);
    let mut a = h.to_vec();
    a.extend_from_slice(&[b'x'; BLOCK]);
    a.extend(end());
    assert_eq!(walk(&a).unwrap(), ["top/a"]);
}

#[test]
fn a_non_regular_entry_with_data_is_refused() {
    let mut a = header(b"top/d/", b'5', 512).to_vec();
    a.extend(entry(b"top/hidden", b'0', b"x"));
    a.extend(end());
    refused(&a, "top/d/: a directory entry with 512 bytes of data");
    refused(
        &cat(&[entry(b"top/d/", b'0', b""), end()]),
        "a regular file whose name ends with `/`",
    );
    refused(
        &cat(&[entry(b"top/s", b'S', b""), end()]),
        "entry type S: not one that GNU tar",
    );
}

#[test]
fn anything_after_the_end_blocks_is_refused() {
    let good = cat(&[entry(b"top/a", b'0', b"abc"), end()]);
    let mut a = good.clone();
    a.extend(entry(b"top/hidden", b'0', b"evil"));
    refused(&a, "non-zero bytes at byte 2048 of the tar stream, after its end-of-archive block at byte 1024");
    // A lone zero block, then an entry: GNU tar and Python stop at it too.
    let a = cat(&[
        entry(b"top/a", b'0', b"abc"),
        vec![0; BLOCK],
        entry(b"top/hidden", b'0', b"evil"),
        end(),
    ]);
    refused(&a, "non-zero bytes");
    // Truncated: no end blocks, one end block, inside data.
    refused(
        &entry(b"top/a", b'0', b"abc"),
        "without its end-of-archive blocks",
    );
    refused(
        &cat(&[entry(b"top/a", b'0', b"abc"), vec![0; BLOCK]]),
        "one end-of-archive block",
    );
    refused(&good[..700], "ends inside the data of top/a");
}
