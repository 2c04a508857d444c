//! The one strict reading of a zip's layout, before any entry is read: the
//! whole file must be local entries back to back from offset 0, then the
//! central directory, then the end records (zip64's, if any, then the classic
//! one, whose comment ends the file), with one end record, on disk 0, and
//! every local header saying what its central directory entry says.
//!
//! Anything else is a zip that zip tools may read differently (the zip crate
//! the first end record it can use, Python's zipfile, so pip, and `unzip` the
//! last one; each its own copy of a name stored twice; what a central entry
//! says, or what its local header says): it is refused, the error's root an
//! [`entries::Refused`](crate::package::entries::Refused). Only the layout is
//! read here, field by field, little-endian, every offset and size checked
//! against the file's size before it is used; the zip crate decompresses.

use std::collections::BTreeMap;
use std::io::{self, Read, Seek, SeekFrom};

use anyhow::Result;

use crate::package::entries::Refused;

const LOCAL: [u8; 4] = *b"PK\x03\x04";
const CENTRAL: [u8; 4] = *b"PK\x01\x02";
const END: [u8; 4] = *b"PK\x05\x06";
const END64: [u8; 4] = *b"PK\x06\x06";
const LOCATOR: [u8; 4] = *b"PK\x06\x07";
const DESCRIPTOR: [u8; 4] = *b"PK\x07\x08";
/// A 32-bit field that says "see the zip64 extra field / end record".
const MAX32: u64 = 0xFFFF_FFFF;
const MAX16: u64 = 0xFFFF;
/// Sizes of the fixed parts of the records.
const LOCAL_LEN: u64 = 30;
const CENTRAL_LEN: usize = 46;
const END_LEN: u64 = 22;
const END64_LEN: u64 = 56;
const LOCATOR_LEN: u64 = 20;
/// The longest comment an end record can carry: where its signature may hide.
const COMMENT_MAX: u64 = 0xFFFF;
/// General purpose bit 3: sizes and CRC in a data descriptor after the data.
const BIT3: u16 = 1 << 3;
/// The most a central directory may take: 100 000 entries of 600-byte names.
pub const DIRECTORY_MAX: u64 = 64 << 20;

/// One entry, as its central directory record and local header (which agree) say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The name as stored.
    pub name: Vec<u8>,
    /// General purpose flags of the central record.
    pub flags: u16,
    pub method: u16,
    pub crc: u32,
    pub compressed: u64,
    pub uncompressed: u64,
    /// Where its local header starts.
    pub header: u64,
    /// Where its data starts.
    pub data: u64,
    /// Where it ends: after its data and data descriptor; the next entry starts there.
    pub end: u64,
}

/// A zip whose every byte is accounted for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// In central directory order.
    pub entries: Vec<Entry>,
    /// Where the central directory starts (where the last entry ends).
    pub directory: u64,
    /// The file's size.
    pub len: u64,
}

/// What is wrong, refused: every refusal says the zip is ambiguous.
fn bad<T>(what: impl std::fmt::Display) -> Result<T> {
    Err(Refused(format!(
        "{what}: an ambiguous zip (zip tools could read different contents from it), not one this tool wrote; not read"
    ))
    .into())
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// `len` bytes at `at`, which the caller has checked lie inside the file.
fn read_at<R: Read + Seek>(f: &mut R, at: u64, len: u64) -> Result<Vec<u8>> {
    f.seek(SeekFrom::Start(at))?;
    let mut buf = vec![0; usize::try_from(len)?];
    match f.read_exact(&mut buf) {
        Ok(()) => Ok(buf),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => bad(format!(
            "truncated at {at}+{len} (the file changed while read?)"
        )),
        Err(e) => Err(e.into()),
    }
}

fn shown(name: &[u8]) -> String {
    String::from_utf8_lossy(name).escape_debug().to_string()
}

/// Reads and checks the layout of the zip `f`, which may list at most `max_entries`.
pub fn read<R: Read + Seek>(f: &mut R, max_entries: u64) -> Result<Layout> {
    let len = f.seek(SeekFrom::End(0))?;
    if len < END_LEN {
        return bad(format!("{len} bytes, too short for a zip's end record"));
    }
    let tail_start = len - (END_LEN + COMMENT_MAX).min(len);
    let tail = read_at(f, tail_start, len - tail_start)?;
    let ends: Vec<u64> = tail
        .windows(4)
        .enumerate()
        .filter(|(_, w)| *w == END)
        .map(|(i, _)| tail_start + i as u64)
        .collect();
    let Some(&end) = ends.last() else {
        return bad("no end-of-central-directory record in the file's last 64 KiB");
    };
    let several = |others: &[u64]| {
        format!(
            "{} end-of-central-directory records (at offsets {}): zip tools differ on which one they read (the zip crate the first it can use, Python's zipfile, so pip, and unzip the last)",
            others.len(),
            crate::listed(others, "and")
        )
    };
    match walk(
        f,
        len,
        end,
        &tail[(end - tail_start) as usize..],
        max_entries,
    ) {
        Ok(layout) => {
            // An end record's signature inside an entry's compressed data is data;
            // anywhere else (a comment, a name, between records) it is a second record.
            let stray = ends.iter().any(|&at| {
                at != end
                    && !layout
                        .entries
                        .iter()
                        .any(|e| at >= e.data && at + 4 <= e.data + e.compressed)
            });
            if stray {
                return bad(several(&ends));
            }
            Ok(layout)
        }
        Err(e) if ends.len() > 1 && e.downcast_ref::<Refused>().is_some() => bad(several(&ends)),
        Err(e) => Err(e),
    }
}

/// The layout from the end record at `end` (`rec`: from there to the end of the file).
fn walk<R: Read + Seek>(
    f: &mut R,
    len: u64,
    end: u64,
    rec: &[u8],
    max_entries: u64,
) -> Result<Layout> {
    if rec.len() < END_LEN as usize {
        return bad(format!(
            "the end record at {end} is cut off by the end of the file"
        ));
    }
    let comment = u64::from(u16_at(rec, 20));
    let rec_end = end + END_LEN + comment;
    if rec_end != len {
        return bad(if rec_end < len {
            format!(
                "{} bytes after the end record's comment (the comment ends at {rec_end}, the file at {len}): trailing bytes",
                len - rec_end
            )
        } else {
            format!(
                "the end record's comment runs {} bytes past the end of the file",
                rec_end - len
            )
        });
    }
    let (disk, cd_disk) = (u64::from(u16_at(rec, 4)), u64::from(u16_at(rec, 6)));
    let (n_disk, n_total) = (u64::from(u16_at(rec, 8)), u64::from(u16_at(rec, 10)));
    let (cd_size, cd_off) = (u64::from(u32_at(rec, 12)), u64::from(u32_at(rec, 16)));

    let zip64 = end >= LOCATOR_LEN && read_at(f, end - LOCATOR_LEN, 4)? == LOCATOR;
    let (count, cd_size, cd_off, dir_end) = if zip64 {
        let locator_at = end - LOCATOR_LEN;
        let loc = read_at(f, locator_at, LOCATOR_LEN)?;
        let (loc_disk, at, disks) = (u32_at(&loc, 4), u64_at(&loc, 8), u32_at(&loc, 16));
        if loc_disk != 0 || disks > 1 {
            return bad(format!(
                "the zip64 locator names disk {loc_disk} of {disks}: disk numbers must be 0 (one disk)"
            ));
        }
        if at.checked_add(END64_LEN).is_none_or(|e| e > locator_at) {
            return bad(format!(
                "the zip64 locator points at {at}, outside the file before it (at {locator_at})"
            ));
        }
        let r = read_at(f, at, END64_LEN)?;
        if r[..4] != END64 {
            return bad(format!(
                "no zip64 end record at {at}, where the zip64 locator points"
            ));
        }
        let size = u64_at(&r, 4);
        if size < END64_LEN - 12 || at + 12 + size.min(len) != locator_at {
            return bad(format!(
                "the zip64 end record at {at} says it is {size} bytes long, but the locator starts at {locator_at}: bytes unaccounted for"
            ));
        }
        let (disk64, cd_disk64) = (u64::from(u32_at(&r, 16)), u64::from(u32_at(&r, 20)));
        let (n_disk64, n_total64) = (u64_at(&r, 24), u64_at(&r, 32));
        let (cd_size64, cd_off64) = (u64_at(&r, 40), u64_at(&r, 48));
        if disk64 != 0 || cd_disk64 != 0 {
            return bad(format!(
                "the zip64 end record names disks {disk64} and {cd_disk64}: disk numbers must be 0"
            ));
        }
        if n_disk64 != n_total64 {
            return bad(format!(
                "the zip64 end record counts {n_disk64} entries on this disk but {n_total64} in all"
            ));
        }
        let agree = |classic: u64, sentinel: u64, wide: u64| classic == sentinel || classic == wide;
        for (what, classic, sentinel, wide) in [
            ("disk number", disk, MAX16, 0),
            ("directory's disk number", cd_disk, MAX16, 0),
            ("entries on this disk", n_disk, MAX16, n_disk64),
            ("entries", n_total, MAX16, n_total64),
            ("directory size", cd_size, MAX32, cd_size64),
            ("directory offset", cd_off, MAX32, cd_off64),
        ] {
            if !agree(classic, sentinel, wide) {
                return bad(format!(
                    "the end record's {what} ({classic}) differs from the zip64 end record's ({wide})"
                ));
            }
        }
        (n_total64, cd_size64, cd_off64, at)
    } else {
        if disk != 0 || cd_disk != 0 {
            return bad(format!(
                "the end record names disks {disk} and {cd_disk}: disk numbers must be 0"
            ));
        }
        if n_disk != n_total {
            return bad(format!(
                "the end record counts {n_disk} entries on this disk but {n_total} in all"
            ));
        }
        (n_total, cd_size, cd_off, end)
    };
    if cd_off.checked_add(cd_size) != Some(dir_end) {
        return bad(format!(
            "the central directory ({cd_size} bytes at {cd_off}) does not end where the end record starts ({dir_end})"
        ));
    }
    if count > max_entries {
        return Err(Refused(format!(
            "{count} entries (limit {max_entries}): not an artifact of this tool; not read"
        ))
        .into());
    }
    if cd_size > DIRECTORY_MAX {
        return bad(format!(
            "a central directory of {} MiB (limit {} MiB)",
            cd_size >> 20,
            DIRECTORY_MAX >> 20
        ));
    }
    let dir = read_at(f, cd_off, cd_size)?;
    let mut entries = Vec::new();
    let mut pos = 0usize;
    while pos < dir.len() {
        let at = cd_off + pos as u64;
        if entries.len() as u64 >= count {
            return bad(format!(
                "the central directory holds more than the {count} entries the end record counts (bytes at {at})"
            ));
        }
        let r = &dir[pos..];
        if r.len() < CENTRAL_LEN || r[..4] != CENTRAL {
            return bad(format!(
                "the bytes at {at} in the central directory are not a directory record"
            ));
        }
        let (n, e, c) = (
            usize::from(u16_at(r, 28)),
            usize::from(u16_at(r, 30)),
            usize::from(u16_at(r, 32)),
        );
        let rec_len = CENTRAL_LEN + n + e + c;
        if rec_len > r.len() {
            return bad(format!(
                "the directory record at {at} runs past the central directory's end"
            ));
        }
        let name = r[CENTRAL_LEN..CENTRAL_LEN + n].to_vec();
        let extra = &r[CENTRAL_LEN + n..CENTRAL_LEN + n + e];
        let mut uncompressed = u64::from(u32_at(r, 24));
        let mut compressed = u64::from(u32_at(r, 20));
        let mut header = u64::from(u32_at(r, 42));
        let mut disk = u64::from(u16_at(r, 34));
        if [uncompressed, compressed, header].contains(&MAX32) || disk == MAX16 {
            let wide = zip64_extra(extra, &name)?;
            let mut next = wide.chunks_exact(8).map(|c| u64_at(c, 0));
            let mut take = |v: &mut u64| {
                if *v == MAX32 {
                    *v = next.next().ok_or(())?;
                }
                Ok::<(), ()>(())
            };
            let ok = take(&mut uncompressed).is_ok()
                && take(&mut compressed).is_ok()
                && take(&mut header).is_ok();
            let used = [u32_at(r, 24), u32_at(r, 20), u32_at(r, 42)]
                .iter()
                .filter(|narrow| u64::from(**narrow) == MAX32)
                .count()
                * 8;
            if !ok {
                return bad(format!(
                    "{}: its zip64 extra field lacks the sizes or offset its directory record defers to it",
                    shown(&name)
                ));
            }
            if disk == MAX16 {
                disk = match wide.get(used..used + 4) {
                    Some(d) => u64::from(u32_at(d, 0)),
                    None => {
                        return bad(format!(
                            "{}: its zip64 extra field lacks the disk number its directory record defers to it",
                            shown(&name)
                        ))
                    }
                };
            }
        }
        if disk != 0 {
            return bad(format!(
                "{}: on disk {disk}: disk numbers must be 0",
                shown(&name)
            ));
        }
        entries.push(Entry {
            name,
            flags: u16_at(r, 8),
            method: u16_at(r, 10),
            crc: u32_at(r, 16),
            compressed,
            uncompressed,
            header,
            data: 0,
            end: 0,
        });
        pos += rec_len;
    }
    if entries.len() as u64 != count {
        return bad(format!(
            "the central directory holds {} entries, the end record counts {count}",
            entries.len()
        ));
    }
    let mut times: BTreeMap<&[u8], usize> = BTreeMap::new();
    for e in &entries {
        *times.entry(&e.name).or_default() += 1;
    }
    if let Some((name, n)) = times.iter().find(|(_, n)| **n > 1) {
        return bad(format!(
            "{}: stored {n} times in the zip's central directory: zip tools unpack one of the copies, not all the same one",
            shown(name)
        ));
    }

    // The local entries, in the file's order, back to back from 0 to the directory.
    let mut order: Vec<usize> = (0..entries.len()).collect();
    order.sort_by_key(|&i| entries[i].header);
    let mut expected = 0u64;
    let mut prev: Option<usize> = None;
    for (k, &i) in order.iter().enumerate() {
        let e = &entries[i];
        let name = shown(&e.name);
        if e.header < expected {
            let p = prev.map(|p| shown(&entries[p].name)).unwrap_or_default();
            return bad(format!(
                "{name}: its local header at {} overlaps {p}, which ends at {expected}: overlapping entries",
                e.header
            ));
        }
        if e.header > expected {
            return bad(format!(
                "{} bytes at {expected} before {name}'s local header (at {}) that no entry accounts for",
                e.header - expected,
                e.header
            ));
        }
        if e.header + LOCAL_LEN > cd_off {
            return bad(format!(
                "{name}: its local header at {} runs into the central directory",
                e.header
            ));
        }
        let h = read_at(f, e.header, LOCAL_LEN)?;
        if h[..4] != LOCAL {
            return bad(format!(
                "{name}: no local header at {}, where its directory record points",
                e.header
            ));
        }
        let (n, x) = (u64::from(u16_at(&h, 26)), u64::from(u16_at(&h, 28)));
        let data = e.header + LOCAL_LEN + n + x;
        if data > cd_off {
            return bad(format!(
                "{name}: its local header at {} runs into the central directory",
                e.header
            ));
        }
        let vars = read_at(f, e.header + LOCAL_LEN, n + x)?;
        let (local_name, local_extra) = vars.split_at(n as usize);
        if local_name != e.name.as_slice() {
            return bad(format!(
                "{name}: its local header (at {}) names it {}: zip tools differ on which name they use",
                e.header,
                shown(local_name)
            ));
        }
        let local_flags = u16_at(&h, 6);
        if (local_flags ^ e.flags) & !BIT3 != 0 {
            return bad(format!(
                "{name}: its local header's flags ({local_flags:#06x}) differ from its directory record's ({:#06x})",
                e.flags
            ));
        }
        let method = u16_at(&h, 8);
        if method != e.method {
            return bad(format!(
                "{name}: its local header's compression method ({method}) differs from its directory record's ({})",
                e.method
            ));
        }
        if local_flags & BIT3 == 0 {
            let mut sizes = (u64::from(u32_at(&h, 22)), u64::from(u32_at(&h, 18)));
            if sizes.0 == MAX32 || sizes.1 == MAX32 {
                let wide = zip64_extra(local_extra, &e.name)?;
                let mut next = wide.chunks_exact(8).map(|c| u64_at(c, 0));
                for v in [&mut sizes.0, &mut sizes.1] {
                    if *v == MAX32 {
                        match next.next() {
                            Some(w) => *v = w,
                            None => {
                                return bad(format!(
                                    "{name}: its local header's zip64 extra field lacks the sizes it defers to it"
                                ))
                            }
                        }
                    }
                }
            }
            let crc = u32_at(&h, 14);
            if (crc, sizes.1, sizes.0) != (e.crc, e.compressed, e.uncompressed) {
                return bad(format!(
                    "{name}: its local header says crc {crc:08x}, {} bytes compressed, {} uncompressed; its directory record crc {:08x}, {}, {}",
                    sizes.1, sizes.0, e.crc, e.compressed, e.uncompressed
                ));
            }
        }
        let data_end = match data.checked_add(e.compressed) {
            Some(d) if d <= cd_off => d,
            _ => {
                return bad(format!(
                    "{name}: its {} compressed bytes at {data} run past the start of the central directory ({cd_off})",
                    e.compressed
                ))
            }
        };
        let next_start = order
            .get(k + 1)
            .map(|&j| entries[j].header)
            .unwrap_or(cd_off)
            .max(data_end);
        let end = if local_flags & BIT3 != 0 {
            let d_len = (next_start - data_end).min(24);
            let d = read_at(f, data_end, d_len)?;
            let fields = match (d_len, d.get(..4) == Some(&DESCRIPTOR[..])) {
                (16, true) => Some((
                    u32_at(&d, 4),
                    u64::from(u32_at(&d, 8)),
                    u64::from(u32_at(&d, 12)),
                )),
                (24, true) => Some((u32_at(&d, 4), u64_at(&d, 8), u64_at(&d, 16))),
                (12, _) => Some((
                    u32_at(&d, 0),
                    u64::from(u32_at(&d, 4)),
                    u64::from(u32_at(&d, 8)),
                )),
                (20, _) => Some((u32_at(&d, 0), u64_at(&d, 4), u64_at(&d, 12))),
                _ => None,
            };
            if fields != Some((e.crc, e.compressed, e.uncompressed)) {
                return bad(format!(
                    "{name}: no data descriptor matching its directory record after its data (at {data_end})"
                ));
            }
            data_end + d_len
        } else {
            data_end
        };
        entries[i].data = data;
        entries[i].end = end;
        expected = end;
        prev = Some(i);
    }
    if expected != cd_off {
        return bad(format!(
            "{} bytes at {expected} before the central directory (at {cd_off}) that no entry accounts for",
            cd_off.saturating_sub(expected)
        ));
    }
    Ok(Layout {
        entries,
        directory: cd_off,
        len,
    })
}

/// The data of the zip64 extra field (id 1) among `extra`'s fields.
fn zip64_extra<'a>(extra: &'a [u8], name: &[u8]) -> Result<&'a [u8]> {
    let mut found = None;
    let mut rest = extra;
    while rest.len() >= 4 {
        let (id, size) = (u16_at(rest, 0), usize::from(u16_at(rest, 2)));
        let Some(data) = rest.get(4..4 + size) else {
            return bad(format!(
                "{}: its extra field {id:#06x} runs past the extra data",
                shown(name)
            ));
        };
        if id == 1 {
            if found.is_some() {
                return bad(format!("{}: two zip64 extra fields", shown(name)));
            }
            found = Some(data);
        }
        rest = &rest[4 + size..];
    }
    match found {
        Some(d) => Ok(d),
        None => bad(format!(
            "{}: sizes or offsets deferred to a zip64 extra field it does not have",
            shown(name)
        )),
    }
}

#[cfg(test)]
#[path = "zip_layout_tests.rs"]
mod tests;
