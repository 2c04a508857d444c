use super::*;
use std::io::{Cursor, Write};

/// A zip written by the zip crate: `(name, data, deflated)`.
fn zip_of(entries: &[(&str, &[u8], bool)]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for (name, data, deflated) in entries {
        let method = if *deflated {
            zip::CompressionMethod::Deflated
        } else {
            zip::CompressionMethod::Stored
        };
        let opts = zip::write::SimpleFileOptions::default().compression_method(method);
        zip.start_file(*name, opts).unwrap();
        zip.write_all(data).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

fn sound() -> Vec<u8> {
    zip_of(&[
        ("pkg/__init__.py", b"x = 1\n", true),
        ("pkg/a.py", b"print('hello')\n", false),
        ("pkg/b.py", &[b'b'; 3000], true),
    ])
}

fn layout(bytes: &[u8]) -> Result<Layout> {
    read(&mut Cursor::new(bytes), 1000)
}

/// The refusal's text, which must say the zip is ambiguous.
fn refused(bytes: &[u8]) -> String {
    let e = layout(bytes).unwrap_err();
    let r = e
        .downcast_ref::<Refused>()
        .unwrap_or_else(|| panic!("not refused: {e:#}"));
    r.0.clone()
}

fn assert_refused(bytes: &[u8], says: &str) {
    let r = refused(bytes);
    assert!(r.contains(says), "`{says}` not in: {r}");
    assert!(r.contains("an ambiguous zip"), "{r}");
}

fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// Where the central directory's records start, in order.
fn central_records(bytes: &[u8]) -> Vec<usize> {
    let l = layout(bytes).unwrap();
    let mut at = l.directory as usize;
    let mut out = Vec::new();
    for _ in &l.entries {
        out.push(at);
        let r = &bytes[at..];
        at += CENTRAL_LEN
            + usize::from(u16_at(r, 28))
            + usize::from(u16_at(r, 30))
            + usize::from(u16_at(r, 32));
    }
    out
}

fn end_record(bytes: &[u8]) -> usize {
    bytes.len() - END_LEN as usize
}

#[test]
fn a_zip_of_the_zip_crate_is_read_whole() {
    let z = sound();
    let l = layout(&z).unwrap();
    let names: Vec<&[u8]> = l.entries.iter().map(|e| e.name.as_slice()).collect();
    assert_eq!(names, [&b"pkg/__init__.py"[..], b"pkg/a.py", b"pkg/b.py"]);
    assert_eq!(l.entries[0].header, 0);
    for w in l.entries.windows(2) {
        assert_eq!(w[0].end, w[1].header);
    }
    assert_eq!(l.entries[2].end, l.directory);
    assert_eq!(l.entries[1].method, 0);
    assert_eq!(l.entries[1].uncompressed, 15);
    assert_eq!(l.len, z.len() as u64);
    // An empty zip, and zip64 sizes in the local headers (large_file).
    assert!(layout(&zip_of(&[])).unwrap().entries.is_empty());
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default().large_file(true);
    zip.start_file("big", opts).unwrap();
    zip.write_all(&[0; 5000]).unwrap();
    let z = zip.finish().unwrap().into_inner();
    assert_eq!(layout(&z).unwrap().entries[0].uncompressed, 5000);
}

/// The evil wheel appended to a clean one: the zip crate reads the first
/// directory, pip and unzip the last.
#[test]
fn two_end_records_are_refused() {
    let clean = sound();
    let mut evil = zip_of(&[("pkg/__init__.py", b"import os; os.system('evil')\n", true)]);
    let at = end_record(&evil);
    put16(&mut evil, at + 4, 1);
    let mut both = clean.clone();
    both.extend_from_slice(&evil);
    assert_refused(&both, "2 end-of-central-directory records");
    // The same with disk 0 in the second record, and with the second hidden
    // in the first one's comment (Python's zipfile takes the last signature).
    put16(&mut evil, at + 4, 0);
    let mut both = clean.clone();
    both.extend_from_slice(&evil);
    assert_refused(&both, "2 end-of-central-directory records");
    let mut commented = clean.clone();
    let at = end_record(&commented);
    put16(&mut commented, at + 20, 22);
    commented.extend_from_slice(&clean[at..]);
    assert_refused(&commented, "2 end-of-central-directory records");
}

/// The signature inside an entry's data is only data.
#[test]
fn an_end_signature_in_stored_data_is_data() {
    let mut data = b"PK\x05\x06".to_vec();
    data.extend_from_slice(&[0; 18]);
    let z = zip_of(&[("pkg/data.bin", &data, false)]);
    assert_eq!(layout(&z).unwrap().entries.len(), 1);
}

#[test]
fn trailing_bytes_are_refused() {
    let mut z = sound();
    z.extend_from_slice(b"trailing");
    assert_refused(&z, "8 bytes after the end record's comment");
    // A comment said longer than what is there.
    let mut z = sound();
    let at = end_record(&z);
    put16(&mut z, at + 20, 10);
    assert_refused(&z, "runs 10 bytes past the end of the file");
}

#[test]
fn disks_other_than_0_are_refused() {
    for field in [4, 6] {
        let mut z = sound();
        let at = end_record(&z);
        put16(&mut z, at + field, 1);
        assert_refused(&z, "disk numbers must be 0");
    }
    let mut z = sound();
    let rec = central_records(&z)[1];
    put16(&mut z, rec + 34, 2);
    assert_refused(&z, "pkg/a.py: on disk 2");
}

/// The zip crate's zip with a zip64 end record and locator put in before its
/// end record, as Python writes them.
fn zip64(bytes: &[u8], edit: impl Fn(&mut Vec<u8>, &mut Vec<u8>)) -> Vec<u8> {
    let l = layout(bytes).unwrap();
    let end = end_record(bytes);
    let n = l.entries.len() as u64;
    let mut rec = b"PK\x06\x06".to_vec();
    rec.extend_from_slice(&44u64.to_le_bytes());
    rec.extend_from_slice(&45u16.to_le_bytes());
    rec.extend_from_slice(&45u16.to_le_bytes());
    rec.extend_from_slice(&[0; 8]);
    rec.extend_from_slice(&n.to_le_bytes());
    rec.extend_from_slice(&n.to_le_bytes());
    rec.extend_from_slice(&(end as u64 - l.directory).to_le_bytes());
    rec.extend_from_slice(&l.directory.to_le_bytes());
    let mut loc = b"PK\x06\x07".to_vec();
    loc.extend_from_slice(&0u32.to_le_bytes());
    loc.extend_from_slice(&(end as u64).to_le_bytes());
    loc.extend_from_slice(&1u32.to_le_bytes());
    edit(&mut rec, &mut loc);
    let mut out = bytes[..end].to_vec();
    out.extend_from_slice(&rec);
    out.extend_from_slice(&loc);
    out.extend_from_slice(&bytes[end..]);
    out
}

#[test]
fn a_zip64_end_record_must_agree_with_the_classic_one() {
    let z = sound();
    assert_eq!(layout(&zip64(&z, |_, _| {})).unwrap().entries.len(), 3);
    // The classic record may defer to it.
    let mut deferred = zip64(&z, |_, _| {});
    let at = end_record(&deferred);
    put32(&mut deferred, at + 16, u32::MAX);
    put16(&mut deferred, at + 10, u16::MAX);
    put16(&mut deferred, at + 8, u16::MAX);
    assert_eq!(layout(&deferred).unwrap().entries.len(), 3);
    let counts = zip64(&z, |rec, _| {
        rec[24..32].copy_from_slice(&2u64.to_le_bytes());
        rec[32..40].copy_from_slice(&2u64.to_le_bytes());
    });
    assert_refused(
        &counts,
        "the end record's entries on this disk (3) differs from the zip64 end record's (2)",
    );
    let offset = zip64(&z, |rec, _| {
        let off = u64_at(rec, 48) + 1;
        rec[48..56].copy_from_slice(&off.to_le_bytes());
    });
    assert_refused(&offset, "directory offset");
    let outside = zip64(&z, |_, loc| {
        loc[8..16].copy_from_slice(&(1u64 << 40).to_le_bytes())
    });
    assert_refused(
        &outside,
        "the zip64 locator points at 1099511627776, outside the file",
    );
    let disk = zip64(&z, |_, loc| loc[4..8].copy_from_slice(&1u32.to_le_bytes()));
    assert_refused(&disk, "disk numbers must be 0");
    let longer = zip64(&z, |rec, _| {
        rec[4..12].copy_from_slice(&60u64.to_le_bytes())
    });
    assert_refused(&longer, "bytes unaccounted for");
}

#[test]
fn the_directory_ends_where_the_end_record_starts_and_counts_as_it_says() {
    let z = sound();
    let end = end_record(&z);
    let mut gap = z[..end].to_vec();
    gap.extend_from_slice(b"gap!");
    gap.extend_from_slice(&z[end..]);
    assert_refused(&gap, "does not end where the end record starts");
    // One entry fewer counted than the directory holds, and one more.
    for (n, says) in [
        (2, "holds more than the 2 entries the end record counts"),
        (4, "holds 3 entries, the end record counts 4"),
    ] {
        let mut z = z.clone();
        put16(&mut z, end + 8, n);
        put16(&mut z, end + 10, n);
        assert_refused(&z, says);
    }
    let mut z = z.clone();
    put16(&mut z, end + 8, 2);
    assert_refused(&z, "counts 2 entries on this disk but 3 in all");
}

#[test]
fn a_local_header_must_say_what_its_directory_record_says() {
    let z = sound();
    let l = layout(&z).unwrap();
    let a = l.entries[1].header as usize;
    let mut renamed = z.clone();
    renamed[a + 30..a + 38].copy_from_slice(b"pkg/x.py");
    assert_refused(&renamed, "pkg/a.py: its local header (at");
    assert_refused(&renamed, "names it pkg/x.py");
    let mut method = z.clone();
    put16(&mut method, a + 8, 8);
    assert_refused(
        &method,
        "pkg/a.py: its local header's compression method (8)",
    );
    let mut flags = z.clone();
    let f = u16_at(&flags, a + 6) ^ (1 << 11);
    put16(&mut flags, a + 6, f);
    assert_refused(&flags, "pkg/a.py: its local header's flags");
    // CRC, compressed size, uncompressed size.
    for field in [14, 18, 22] {
        let mut z = z.clone();
        let v = u32_at(&z, a + field) ^ 1;
        put32(&mut z, a + field, v);
        assert_refused(&z, "pkg/a.py: its local header says crc");
    }
    let mut not_local = z.clone();
    not_local[a + 2] = b'X';
    assert_refused(&not_local, "pkg/a.py: no local header at");
}

/// The last entry given a data descriptor (bit 3), sizes zeroed in its local header.
#[test]
fn a_data_descriptor_must_match_the_directory() {
    let z = sound();
    let l = layout(&z).unwrap();
    let e = &l.entries[2];
    let with = |desc: &[u8]| {
        let mut out = z[..e.end as usize].to_vec();
        let h = e.header as usize;
        let f = u16_at(&out, h + 6) | BIT3;
        put16(&mut out, h + 6, f);
        for field in [14, 18, 22] {
            put32(&mut out, h + field, 0);
        }
        out.extend_from_slice(desc);
        out.extend_from_slice(&z[e.end as usize..]);
        let rec =
            l.directory as usize + desc.len() + (central_records(&z)[2] - l.directory as usize);
        let f = u16_at(&out, rec + 8) | BIT3;
        put16(&mut out, rec + 8, f);
        let end = end_record(&out);
        put32(
            &mut out,
            end + 16,
            (l.directory as usize + desc.len()) as u32,
        );
        out
    };
    let mut desc = b"PK\x07\x08".to_vec();
    desc.extend_from_slice(&e.crc.to_le_bytes());
    desc.extend_from_slice(&(e.compressed as u32).to_le_bytes());
    desc.extend_from_slice(&(e.uncompressed as u32).to_le_bytes());
    let ok = with(&desc);
    let read = layout(&ok).unwrap();
    assert_eq!(read.entries[2].end, e.end + 16);
    assert_eq!(read.directory, l.directory + 16);
    assert!(zip::ZipArchive::new(Cursor::new(&ok)).is_ok());
    // Without its signature, it is 12 bytes.
    assert_eq!(layout(&with(&desc[4..])).unwrap().entries.len(), 3);
    let mut wrong = desc.clone();
    wrong[8] ^= 1;
    assert_refused(
        &with(&wrong),
        "pkg/b.py: no data descriptor matching its directory record",
    );
    assert_refused(&with(&desc[..10]), "pkg/b.py: no data descriptor matching");
}

#[test]
fn overlapping_entries_are_refused() {
    // b.py's directory record points at a.py's local header: both names
    // then read a.py's data.
    let mut z = sound();
    let l = layout(&z).unwrap();
    let rec = central_records(&z)[2];
    put32(&mut z, rec + 42, l.entries[1].header as u32);
    assert_refused(&z, "overlapping entries");
}

#[test]
fn bytes_no_entry_accounts_for_are_refused() {
    // Something before the first entry (as a self-extracting zip has), every
    // offset moved past it: the zip crate would read it.
    let z = sound();
    let mut moved = b"#!/bin/sh\nexec evil\n".to_vec();
    let n = moved.len() as u32;
    moved.extend_from_slice(&z);
    for rec in central_records(&z) {
        let at = rec + n as usize;
        let v = u32_at(&moved, at + 42) + n;
        put32(&mut moved, at + 42, v);
    }
    let end = end_record(&moved);
    let v = u32_at(&moved, end + 16) + n;
    put32(&mut moved, end + 16, v);
    assert!(zip::ZipArchive::new(Cursor::new(&moved)).is_ok());
    assert_refused(
        &moved,
        "20 bytes at 0 before pkg/__init__.py's local header",
    );
    // Between the last entry and the directory.
    let l = layout(&z).unwrap();
    let d = l.directory as usize;
    let mut gap = z[..d].to_vec();
    gap.extend_from_slice(b"hidden");
    gap.extend_from_slice(&z[d..]);
    let end = end_record(&gap);
    put32(&mut gap, end + 16, (d + 6) as u32);
    assert_refused(&gap, "6 bytes at");
    assert_refused(&gap, "before the central directory");
    // A compressed size that lies: it runs into the next entry.
    let mut lying = z.clone();
    let a = l.entries[1].header as usize;
    let rec = central_records(&z)[1];
    for at in [a + 18, rec + 20] {
        put32(&mut lying, at, 1 << 20);
    }
    assert_refused(&lying, "pkg/a.py: its 1048576 compressed bytes");
}

#[test]
fn a_name_stored_twice_is_refused() {
    // b.py renamed a.py, in its local header and its directory record.
    let mut z = sound();
    let mut n = 0;
    while let Some(p) = z.windows(8).position(|w| w == b"pkg/b.py") {
        z[p + 4] = b'a';
        n += 1;
    }
    assert_eq!(n, 2);
    assert_refused(
        &z,
        "pkg/a.py: stored 2 times in the zip's central directory",
    );
}

#[test]
fn too_many_entries_are_refused_before_the_directory_is_read() {
    let e = read(&mut Cursor::new(sound()), 2).unwrap_err();
    assert_eq!(
        e.downcast_ref::<Refused>().unwrap().0,
        "3 entries (limit 2): not an artifact of this tool; not read"
    );
    assert_refused(b"PK\x05\x06", "too short");
    assert_refused(&[0; 100], "no end-of-central-directory record");
}
