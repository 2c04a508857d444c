//! NVIDIA fat binaries (the bytes of an ELF's `.nv_fatbin` section), read in Rust:
//! which cubins (SASS) and PTX a library carries, for which arch, with the `a`/`f`
//! suffixes kept (`cuobjdump --list-elf` drops the `f`), and whether they are
//! compressed. Pure: bytes in, entries out; nothing is run.
//!
//! The layout, as found on CUDA 13.5's own output (nvcc, fatbinary) and as the public
//! reverse-engineered descriptions give it, all little-endian:
//! - a section holds containers back to back (zero padding may sit between them);
//!   a container is a 16-byte header, `magic 0xBA55ED50: u32, version 1: u16,
//!   header size 16: u16, size of what follows: u64`, then its entries;
//! - an entry header is `kind: u16 (1 PTX, 2 ELF), version: u16, header size: u32,
//!   payload size (padded to 8): u64`, then at 16 the stored (compressed) size `u32`,
//!   at 24 the code version `minor: u16, major: u16`, at 28 the arch `u32` (120), at
//!   40 the flags `u64`, at 56 the uncompressed size `u64` (when compressed). The header
//!   grows with newer archs (64, 80, 96, 120 bytes): its size field says where the
//!   payload starts, and the payload size where the next entry does.
//! - flags: `0x2000` LZ4 (a raw block), `0x8000` zstd (a frame), `0x100000` the arch is
//!   `a` (sm_120a), `0x200000` it is `f` (sm_100f).
//!
//! Malformed input (a size past the end, an unknown kind, a compressed entry that does
//! not decompress to its stated size) is an error naming the offset, never a panic.

use std::collections::BTreeSet;
use std::fmt;

use super::arch::{ArchVariant, CudaArch};
use super::cuobjdump::{CodeKind, EmbeddedCode};

const MAGIC: u32 = 0xBA55_ED50;
const CONTAINER_HEADER: usize = 16;
const ENTRY_MIN_HEADER: usize = 64;
const FLAG_LZ4: u64 = 0x2000;
const FLAG_ZSTD: u64 = 0x8000;
pub(crate) const FLAG_ARCH_SPECIFIC: u64 = 0x10_0000;
const FLAG_FAMILY: u64 = 0x20_0000;
/// No cubin or PTX is anywhere near this; a larger stated size is refused before
/// anything is allocated for it.
pub const MAX_ENTRY_SIZE: u64 = 1 << 30;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    None,
    Lz4,
    Zstd,
}

/// One entry of a fat binary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FatbinEntry {
    pub code: EmbeddedCode,
    pub compression: Compression,
    /// The entry's offset in the section (its header's first byte).
    pub offset: usize,
    /// Where its payload is in the section, and how many bytes are stored there.
    pub payload: std::ops::Range<usize>,
    /// The payload's size once decompressed (the stored size when not compressed).
    pub size: u64,
}

impl FatbinEntry {
    /// `sm_120a` for a cubin, `compute_120a` for PTX.
    pub fn name(&self) -> String {
        match self.code.kind {
            CodeKind::Sass => self.code.arch.sm_name(),
            CodeKind::Ptx => format!("compute_{}", self.code.arch),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("fat binary at byte {offset}: {what}")]
pub struct FatbinError {
    pub offset: usize,
    pub what: String,
}

fn err(offset: usize, what: impl fmt::Display) -> FatbinError {
    FatbinError {
        offset,
        what: what.to_string(),
    }
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Every entry of every container in `section` (a `.nv_fatbin` section's bytes).
pub fn parse(section: &[u8]) -> Result<Vec<FatbinEntry>, FatbinError> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < section.len() {
        if section[at] == 0 {
            at += 1; // padding between containers
            continue;
        }
        let magic = u32_at(section, at).ok_or_else(|| err(at, "truncated container header"))?;
        if magic != MAGIC {
            return Err(err(at, format!("magic {magic:#x}, not {MAGIC:#x}")));
        }
        let header = u16_at(section, at + 6).unwrap_or(0) as usize;
        let size = u64_at(section, at + 8).ok_or_else(|| err(at, "truncated container header"))?;
        if header < CONTAINER_HEADER {
            return Err(err(at, format!("container header size {header}")));
        }
        let end = usize::try_from(size)
            .ok()
            .and_then(|s| (at + header).checked_add(s))
            .filter(|&e| e <= section.len())
            .ok_or_else(|| {
                err(
                    at,
                    format!(
                        "container of {size} bytes runs past the section's {} bytes",
                        section.len()
                    ),
                )
            })?;
        let mut e = at + header;
        while e < end {
            let entry = entry(section, e, end)?;
            e = entry.payload.start + padded(section, e)?;
            out.push(entry);
        }
        at = end;
    }
    Ok(out)
}

/// The padded payload size of the entry at `e` (where the next entry starts, from
/// its payload's start).
fn padded(section: &[u8], e: usize) -> Result<usize, FatbinError> {
    let p = u64_at(section, e + 8).ok_or_else(|| err(e, "truncated entry header"))?;
    usize::try_from(p).map_err(|_| err(e, format!("payload size {p}")))
}

fn entry(section: &[u8], e: usize, end: usize) -> Result<FatbinEntry, FatbinError> {
    let h = section
        .get(e..end)
        .filter(|h| h.len() >= ENTRY_MIN_HEADER)
        .ok_or_else(|| err(e, "truncated entry header"))?;
    let kind = match u16_at(h, 0).unwrap_or(0) {
        1 => CodeKind::Ptx,
        2 => CodeKind::Sass,
        k => return Err(err(e, format!("entry kind {k} (1 is PTX, 2 a cubin)"))),
    };
    let header = u32_at(h, 4).unwrap_or(0) as usize;
    let padded = padded(section, e)?;
    let stored = u32_at(h, 16).unwrap_or(0) as usize;
    let arch_number = u32_at(h, 28).unwrap_or(0);
    let flags = u64_at(h, 40).unwrap_or(0);
    let uncompressed = u64_at(h, 56).unwrap_or(0);
    if header < ENTRY_MIN_HEADER || header > h.len() {
        return Err(err(e, format!("entry header size {header}")));
    }
    let start = e + header;
    if padded > end - start {
        return Err(err(
            e,
            format!("payload of {padded} bytes runs past its container"),
        ));
    }
    let compression = match (flags & FLAG_LZ4 != 0, flags & FLAG_ZSTD != 0) {
        (false, false) => Compression::None,
        (true, false) => Compression::Lz4,
        (false, true) => Compression::Zstd,
        (true, true) => return Err(err(e, "both LZ4 and zstd flags set")),
    };
    // Stored size: the compressed size when compressed; the payload otherwise (PTX
    // may state its exact size there too).
    let stored = match compression {
        Compression::None if stored == 0 || stored > padded => padded,
        _ => stored,
    };
    if stored > padded {
        return Err(err(
            e,
            format!("stored size {stored} exceeds its payload of {padded} bytes"),
        ));
    }
    let size = match compression {
        Compression::None => stored as u64,
        _ => uncompressed,
    };
    if size > MAX_ENTRY_SIZE {
        return Err(err(
            e,
            format!("states an uncompressed size of {size} bytes"),
        ));
    }
    let variant = match (flags & FLAG_ARCH_SPECIFIC != 0, flags & FLAG_FAMILY != 0) {
        (false, false) => ArchVariant::Plain,
        (true, false) => ArchVariant::ArchSpecific,
        (false, true) => ArchVariant::Family,
        (true, true) => return Err(err(e, "both the `a` and the `f` flags set")),
    };
    let (major, minor) = (arch_number / 10, arch_number % 10);
    if !(1..=25).contains(&major) {
        return Err(err(e, format!("arch {arch_number}")));
    }
    Ok(FatbinEntry {
        code: EmbeddedCode {
            kind,
            arch: CudaArch::new(major as u8, minor as u8, variant),
        },
        compression,
        offset: e,
        payload: start..start + stored,
        size,
    })
}

/// The entry's payload, decompressed: a cubin (an ELF file) or PTX text.
pub fn payload(section: &[u8], entry: &FatbinEntry) -> Result<Vec<u8>, FatbinError> {
    let stored = section
        .get(entry.payload.clone())
        .ok_or_else(|| err(entry.offset, "payload outside the section"))?;
    let size = entry.size as usize;
    let out = match entry.compression {
        Compression::None => stored.to_vec(),
        // An LZ4 block expands at most 255 times: a header that says more is refused
        // before the output is allocated.
        Compression::Lz4 if size > stored.len().saturating_mul(255).saturating_add(64) => {
            return Err(err(
                entry.offset,
                format!(
                    "LZ4 payload of {} bytes cannot decompress to the {size} its header says",
                    stored.len()
                ),
            ))
        }
        Compression::Lz4 => lz4_flex::block::decompress(stored, size)
            .map_err(|x| err(entry.offset, format!("LZ4 payload: {x}")))?,
        Compression::Zstd => zstd_frames(stored, size)
            .map_err(|x| err(entry.offset, format!("zstd payload: {x}")))?,
    };
    if out.len() != size {
        return Err(err(
            entry.offset,
            format!(
                "payload decompressed to {} bytes, its header says {size}",
                out.len()
            ),
        ));
    }
    Ok(out)
}

/// The zstd frames of `stored`, one after another as zstd's own decoder reads them
/// (skippable frames skipped, each frame's checksum checked where it has one), decoded
/// until one byte past `size`: more is an error, not a bomb. The output grows as it is
/// written, never reserved from the header's word alone; a frame's window is at most
/// ruzstd's default of 128 MiB (zstd's own limit).
fn zstd_frames(mut stored: &[u8], size: usize) -> Result<Vec<u8>, String> {
    use ruzstd::decoding::errors::{FrameDecoderError, ReadFrameHeaderError};
    use std::io::Read;
    let limit = size as u64 + 1;
    let mut out = Vec::with_capacity(size.min(stored.len().saturating_mul(4)));
    while !stored.is_empty() && (out.len() as u64) < limit {
        let mut dec = match ruzstd::decoding::StreamingDecoder::new(&mut stored) {
            Ok(dec) => dec,
            Err(FrameDecoderError::ReadFrameHeaderError(ReadFrameHeaderError::SkipFrame {
                length,
                ..
            })) => {
                let skip = usize::try_from(length).unwrap_or(usize::MAX);
                stored = stored
                    .get(skip..)
                    .ok_or("a skippable frame runs past the end")?;
                continue;
            }
            Err(x) => return Err(x.to_string()),
        };
        let before = out.len();
        (&mut dec)
            .take(limit - before as u64)
            .read_to_end(&mut out)
            .map_err(|x| x.to_string())?;
        if (out.len() as u64) < limit && !dec.decoder.is_finished() {
            return Err(format!(
                "a frame ends early, after {} bytes",
                out.len() - before
            ));
        }
        if let (Some(stated), Some(computed)) = (
            dec.decoder.get_checksum_from_data(),
            dec.decoder.get_calculated_checksum(),
        ) {
            if stated != computed && dec.decoder.is_finished() {
                return Err(format!(
                    "a frame's checksum is {stated:#010x}, its content's {computed:#010x}"
                ));
            }
        }
    }
    Ok(out)
}

/// The device code `entries` hold, as the cuobjdump gate compares it.
pub fn codes(entries: &[FatbinEntry]) -> BTreeSet<EmbeddedCode> {
    entries.iter().map(|e| e.code).collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A payload whose header claims more than its compression can give is refused
    /// before anything of that size is allocated: LZ4 at most 255 times what is stored.
    #[test]
    fn an_lz4_size_beyond_what_lz4_can_expand_is_refused_unallocated() {
        let stored = [0u8; 100];
        let entry = FatbinEntry {
            code: EmbeddedCode {
                kind: CodeKind::Sass,
                arch: "120a".parse().unwrap(),
            },
            compression: Compression::Lz4,
            offset: 0,
            payload: 0..stored.len(),
            size: MAX_ENTRY_SIZE,
        };
        let e = payload(&stored, &entry).unwrap_err().to_string();
        assert!(
            e.contains("LZ4 payload of 100 bytes cannot decompress to the 1073741824"),
            "{e}"
        );
    }

    /// An entry header of 64 bytes with `payload` (padded to 8) after it.
    pub(crate) fn entry_bytes(
        kind: u16,
        arch: u32,
        flags: u64,
        payload: &[u8],
        uncompressed: u64,
    ) -> Vec<u8> {
        let padded = payload.len().div_ceil(8) * 8;
        let mut h = vec![0u8; 64];
        h[0..2].copy_from_slice(&kind.to_le_bytes());
        h[2..4].copy_from_slice(&0x0101u16.to_le_bytes());
        h[4..8].copy_from_slice(&64u32.to_le_bytes());
        h[8..16].copy_from_slice(&(padded as u64).to_le_bytes());
        h[16..20].copy_from_slice(&(payload.len() as u32).to_le_bytes());
        h[28..32].copy_from_slice(&arch.to_le_bytes());
        h[40..48].copy_from_slice(&(flags | 0x11).to_le_bytes());
        h[56..64].copy_from_slice(&uncompressed.to_le_bytes());
        h.extend_from_slice(payload);
        h.resize(64 + padded, 0);
        h
    }

    pub(crate) fn container(entries: &[Vec<u8>]) -> Vec<u8> {
        let body: Vec<u8> = entries.concat();
        let mut c = Vec::new();
        c.extend_from_slice(&MAGIC.to_le_bytes());
        c.extend_from_slice(&1u16.to_le_bytes());
        c.extend_from_slice(&16u16.to_le_bytes());
        c.extend_from_slice(&(body.len() as u64).to_le_bytes());
        c.extend_from_slice(&body);
        c
    }

    #[test]
    fn entries_of_two_containers_with_suffixes_and_compression() {
        let cubin = b"\x7fELF pretend cubin";
        let zstd = ruzstd::encoding::compress_to_vec(
            &cubin[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        let lz4 = lz4_flex::block::compress(cubin);
        let mut section = container(&[
            entry_bytes(
                2,
                120,
                FLAG_ARCH_SPECIFIC | FLAG_ZSTD,
                &zstd,
                cubin.len() as u64,
            ),
            entry_bytes(1, 100, FLAG_FAMILY, b".target sm_100f", 0),
        ]);
        section.extend_from_slice(&[0; 8]); // padding between containers
        section.extend(container(&[entry_bytes(
            2,
            90,
            FLAG_LZ4,
            &lz4,
            cubin.len() as u64,
        )]));
        let entries = parse(&section).unwrap();
        let names: Vec<_> = entries.iter().map(|e| (e.name(), e.compression)).collect();
        assert_eq!(
            names,
            [
                ("sm_120a".to_string(), Compression::Zstd),
                ("compute_100f".to_string(), Compression::None),
                ("sm_90".to_string(), Compression::Lz4),
            ]
        );
        assert_eq!(payload(&section, &entries[0]).unwrap(), cubin);
        assert_eq!(payload(&section, &entries[1]).unwrap(), b".target sm_100f");
        assert_eq!(payload(&section, &entries[2]).unwrap(), cubin);
    }

    /// One zstd frame by hand: single segment, a one-byte content size, one raw block,
    /// and a content checksum of `checksum` where given.
    fn raw_frame(content: &[u8], checksum: Option<u32>) -> Vec<u8> {
        let mut f = 0xFD2F_B528u32.to_le_bytes().to_vec();
        f.push(if checksum.is_some() { 0x24 } else { 0x20 });
        f.push(content.len() as u8);
        let block = ((content.len() as u32) << 3) | 1;
        f.extend_from_slice(&block.to_le_bytes()[..3]);
        f.extend_from_slice(content);
        if let Some(c) = checksum {
            f.extend_from_slice(&c.to_le_bytes());
        }
        f
    }

    #[test]
    fn zstd_payloads_are_read_frame_by_frame_as_zstd_does() {
        let frame = |s: &[u8]| {
            ruzstd::encoding::compress_to_vec(s, ruzstd::encoding::CompressionLevel::Fastest)
        };
        // Two frames, one after another: their contents, concatenated.
        let two = [frame(b"first half, "), frame(b"second half")].concat();
        assert_eq!(zstd_frames(&two, 23).unwrap(), b"first half, second half");
        // A skippable frame (magic 0x184D2A5?, a length, that many bytes) is skipped.
        let mut skip = 0x184D_2A53u32.to_le_bytes().to_vec();
        skip.extend_from_slice(&3u32.to_le_bytes());
        skip.extend_from_slice(b"abc");
        let skipped = [skip.clone(), raw_frame(b"code", None)].concat();
        assert_eq!(zstd_frames(&skipped, 4).unwrap(), b"code");
        let past_end = &skip[..skip.len() - 1];
        assert!(zstd_frames(past_end, 4)
            .unwrap_err()
            .contains("past the end"));
        // A frame cut short, and a frame whose checksum is not its content's.
        let whole = raw_frame(b"some device code", None);
        let e = zstd_frames(&whole[..whole.len() - 4], 16).unwrap_err();
        assert!(!e.is_empty(), "a cut frame is refused");
        let e = zstd_frames(&raw_frame(b"code", Some(0)), 4).unwrap_err();
        assert!(e.contains("checksum is 0x00000000"), "{e}");
        // Not a zstd frame at all.
        assert!(zstd_frames(b"not zstd", 8).is_err());
    }

    /// Hostile or broken input is an error naming the offset, never a panic or a
    /// large allocation.
    #[test]
    fn malformed_fat_binaries_are_refused() {
        let good = entry_bytes(2, 120, 0, b"\x7fELF", 0);
        let refused = |section: &[u8], want: &str| {
            let e = parse(section).unwrap_err().to_string();
            assert!(e.contains(want), "{want}: {e}");
        };
        refused(b"\x50\xed\x55", "truncated container header");
        refused(&[0x50, 0xed, 0x55, 0xbb, 1, 0, 16, 0], "magic 0xbb55ed50");
        let mut c = container(std::slice::from_ref(&good));
        c[8] = c[8].wrapping_add(100); // container longer than the section
        refused(&c, "runs past the section");
        let mut bad = good.clone();
        bad[0] = 7;
        refused(&container(&[bad]), "entry kind 7");
        let mut bad = good.clone();
        bad[8..16].copy_from_slice(&(1u64 << 40).to_le_bytes());
        refused(&container(&[bad]), "runs past its container");
        let mut bad = good.clone();
        bad[4..8].copy_from_slice(&8u32.to_le_bytes());
        refused(&container(&[bad]), "entry header size 8");
        refused(&container(&[good[..40].to_vec()]), "truncated entry header");
        refused(
            &container(&[entry_bytes(2, 120, FLAG_LZ4 | FLAG_ZSTD, b"x", 1)]),
            "both LZ4 and zstd",
        );
        refused(
            &container(&[entry_bytes(2, 120, FLAG_ZSTD, b"x", 1 << 40)]),
            "uncompressed size of 1099511627776",
        );
        refused(
            &container(&[entry_bytes(
                2,
                120,
                FLAG_ARCH_SPECIFIC | FLAG_FAMILY,
                b"x",
                0,
            )]),
            "both the `a` and the `f`",
        );
        refused(&container(&[entry_bytes(2, 3, 0, b"x", 0)]), "arch 3");
        // A zstd payload that decompresses to more than its header says (a bomb, or a
        // lie): refused after reading one byte past the stated size.
        let big = ruzstd::encoding::compress_to_vec(
            &vec![0u8; 1 << 20][..],
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        let section = container(&[entry_bytes(2, 120, FLAG_ZSTD, &big, 10)]);
        let entries = parse(&section).unwrap();
        let e = payload(&section, &entries[0]).unwrap_err().to_string();
        assert!(
            e.contains("decompressed to 11 bytes, its header says 10"),
            "{e}"
        );
        let lz4 = container(&[entry_bytes(2, 120, FLAG_LZ4, b"\xff\xff", 10)]);
        let entries = parse(&lz4).unwrap();
        assert!(payload(&lz4, &entries[0])
            .unwrap_err()
            .to_string()
            .contains("LZ4 payload"));
    }
}
