//! The block layout of an artifact's tar stream, walked as the bytes go by, so
//! that every tar reader unpacks what `verify` checked.
//!
//! Readers disagree on ambiguous archives: a pax header giving `size` twice is
//! read with the first value by the `tar` crate and with the last by GNU tar and
//! Python's tarfile, so the bytes the crate takes for a second entry are, to the
//! others, the rest of a different `llama-cli`. [`Checked`] sits between the
//! decompressor and the `tar` crate, parses each 512-byte header itself (octal
//! and base-256 numbers, pax records, GNU long names) before the crate sees it,
//! and refuses, with a [`Refused`] naming the entry and the problem, whatever
//! two readers could read differently:
//!
//! - a pax key given twice, a key other than those every reader applies alike,
//!   a global pax header ('g'), a malformed pax record;
//! - a pax `path`, `linkpath` or `size` that differs from the header's own field;
//! - GNU long names or links ('L', 'K') in an archive that also has pax
//!   headers, or not followed by an entry's header;
//! - a header checksum error, a number field that readers parse differently, a
//!   header that is neither ustar nor GNU, an entry type outside the common set,
//!   a non-regular entry with data (Python's tarfile skips no data for them);
//! - anything but zeros after the first end-of-archive block, and an archive
//!   without its end blocks.
//!
//! It streams: it keeps one header block and, for a pax header or long name, at
//! most [`META_MAX`] bytes of its data; entries' data only goes past it.

use std::cell::RefCell;
use std::collections::{BTreeSet, VecDeque};
use std::io::{self, Read};
use std::rc::Rc;

use crate::package::entries::Refused;

pub const BLOCK: usize = 512;

/// The most a pax header, GNU long name or long link may hold (as much as
/// [`crate::package::entries::Limits::ARTIFACT`] allows between two entries).
pub const META_MAX: u64 = 1 << 20;

/// The pax keys every reader applies alike, or that change nothing unpacked
/// (times, owners). `path`, `linkpath` and `size` must repeat the header.
const PAX_KEYS: [&str; 10] = [
    "path", "linkpath", "size", "mtime", "atime", "ctime", "uid", "gid", "uname", "gname",
];

/// One entry as its headers read: what the `tar` crate must hand out for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    pub name: Vec<u8>,
    pub link: Option<Vec<u8>>,
    pub size: u64,
    pub typeflag: u8,
}

impl std::fmt::Display for Expected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (type {}, {} bytes",
            shown(&self.name),
            shown(&[self.typeflag]),
            self.size
        )?;
        if let Some(l) = &self.link {
            write!(f, ", link {}", shown(l))?;
        }
        f.write_str(")")
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Meta {
    Pax,
    LongName,
    LongLink,
}

impl Meta {
    fn what(self) -> &'static str {
        match self {
            Meta::Pax => "pax header",
            Meta::LongName => "GNU long name ('L')",
            Meta::LongLink => "GNU long link ('K')",
        }
    }
}

#[derive(Debug)]
enum State {
    Header,
    Data {
        left: u64,
        pad: u64,
        meta: Option<Meta>,
    },
    /// Past the first zero block: `zeros` bytes, all zero so far.
    End {
        zeros: u64,
    },
}

/// What a meta entry said about the entry that follows it.
#[derive(Debug)]
struct Pending {
    /// Where the meta entry was: for messages.
    at: String,
    pax: Option<Vec<(String, Vec<u8>)>>,
    long_name: Option<Vec<u8>>,
    long_link: Option<Vec<u8>>,
}

/// The walk's state, shared by the [`Checked`] reader and the code that takes
/// entries from the `tar` crate.
#[derive(Debug)]
pub struct Walk {
    archive: String,
    /// Decompressed bytes seen.
    offset: u64,
    block: Vec<u8>,
    state: State,
    /// The data of the meta entry being read, and where it started.
    meta: Vec<u8>,
    meta_at: String,
    pending: Option<Pending>,
    /// Where the first pax header and the first GNU long name or link were.
    pax_seen: Option<String>,
    gnu_seen: Option<String>,
    /// The last entry's name, for messages.
    previous: Option<String>,
    expected: VecDeque<Expected>,
    refused: Option<Refused>,
}

impl Walk {
    fn new(archive: &str) -> Walk {
        Walk {
            archive: archive.to_string(),
            offset: 0,
            block: Vec::with_capacity(BLOCK),
            state: State::Header,
            meta: Vec::new(),
            meta_at: String::new(),
            pending: None,
            pax_seen: None,
            gnu_seen: None,
            previous: None,
            expected: VecDeque::new(),
            refused: None,
        }
    }

    /// Why the walk refused the archive, if it did.
    pub fn refused(&self) -> Option<Refused> {
        self.refused.clone()
    }

    /// The next entry's headers as the walk read them (in stored order).
    pub fn next_expected(&mut self) -> Option<Expected> {
        self.expected.pop_front()
    }

    /// Refuses from outside the walk (the entry the `tar` crate handed out is
    /// not the one the headers say): the error to return.
    pub fn refuse(&mut self, why: String) -> Refused {
        let r = Refused(format!("{}: {why}; not read further", self.archive));
        self.refused = Some(r.clone());
        r
    }

    fn after(&self) -> String {
        match &self.previous {
            Some(p) => format!("after {}", shown(p.as_bytes())),
            None => "at the start".into(),
        }
    }

    /// Takes `bytes`, the next ones of the stream.
    fn feed(&mut self, mut bytes: &[u8]) -> Result<(), String> {
        while !bytes.is_empty() {
            match &mut self.state {
                State::Header => {
                    let take = (BLOCK - self.block.len()).min(bytes.len());
                    self.block.extend_from_slice(&bytes[..take]);
                    bytes = &bytes[take..];
                    self.offset += take as u64;
                    if self.block.len() == BLOCK {
                        let block = std::mem::take(&mut self.block);
                        self.header(&block)?;
                        self.block = block;
                        self.block.clear();
                    }
                }
                State::Data { left, meta, .. } => {
                    let in_data = (*left).min(bytes.len() as u64) as usize;
                    if in_data > 0 {
                        if meta.is_some() {
                            self.meta.extend_from_slice(&bytes[..in_data]);
                        }
                        *left -= in_data as u64;
                        bytes = &bytes[in_data..];
                        self.offset += in_data as u64;
                    }
                    if *left == 0 {
                        if let Some(m) = meta.take() {
                            self.meta_done(m)?;
                        }
                    }
                    let State::Data { left, pad, .. } = &mut self.state else {
                        unreachable!()
                    };
                    if *left == 0 {
                        let in_pad = (*pad).min(bytes.len() as u64) as usize;
                        *pad -= in_pad as u64;
                        bytes = &bytes[in_pad..];
                        self.offset += in_pad as u64;
                        if *pad == 0 {
                            self.state = State::Header;
                        }
                    }
                }
                State::End { zeros } => {
                    if let Some(i) = bytes.iter().position(|b| *b != 0) {
                        return Err(format!(
                            "non-zero bytes at byte {} of the tar stream, after its end-of-archive block at byte {} ({}): \
                             GNU tar and Python's tarfile stop at that block, so what follows is hidden from them \
                             (a second archive, an entry smuggled past the check); an artifact of this tool ends with zeros",
                            self.offset + i as u64,
                            self.offset - *zeros,
                            self.after()
                        ));
                    }
                    *zeros += bytes.len() as u64;
                    self.offset += bytes.len() as u64;
                    bytes = &[];
                }
            }
        }
        Ok(())
    }

    /// The stream ended.
    fn eof(&mut self) -> Result<(), String> {
        match &self.state {
            State::End { zeros } if *zeros >= 2 * BLOCK as u64 => Ok(()),
            State::End { .. } => Err(format!(
                "one end-of-archive block at byte {}, not two: the archive is truncated",
                self.offset - BLOCK as u64
            )),
            State::Header if self.block.is_empty() => Err(format!(
                "the tar stream ends at byte {} without its end-of-archive blocks ({}): the archive is truncated",
                self.offset,
                self.after()
            )),
            State::Header => Err(format!(
                "the tar stream ends inside a header, at byte {} ({}): the archive is truncated",
                self.offset,
                self.after()
            )),
            State::Data { meta, .. } => Err(format!(
                "the tar stream ends inside the data of {}: the archive is truncated",
                match meta {
                    Some(m) => format!("the {} at byte {}", m.what(), self.meta_at),
                    None => self
                        .previous
                        .as_deref()
                        .map(|p| shown(p.as_bytes()))
                        .unwrap_or_default(),
                }
            )),
        }
    }

    /// A header block, complete.
    fn header(&mut self, b: &[u8]) -> Result<(), String> {
        let at = self.offset - BLOCK as u64;
        if b.iter().all(|x| *x == 0) {
            if let Some(p) = &self.pending {
                return Err(format!(
                    "{}: not followed by the header of an entry but by the end of the archive",
                    p.at
                ));
            }
            self.state = State::End {
                zeros: BLOCK as u64,
            };
            return Ok(());
        }
        let raw_name = nts(&b[0..100]);
        let here = format!(
            "the header at byte {at} named {} ({})",
            shown(raw_name),
            self.after()
        );
        let magic = &b[257..265];
        let ustar = magic == b"ustar\x0000";
        let gnu = magic == b"ustar  \x00";
        if !ustar && !gnu {
            return Err(format!(
                "{here}: neither a ustar nor a GNU tar header (magic {}): readers differ on older formats",
                shown(magic)
            ));
        }
        let stored = octal(&b[148..156]).map_err(|e| format!("{here}: checksum field {e}"))?;
        let sum: u64 = b[..148]
            .iter()
            .chain(&b[156..])
            .map(|x| *x as u64)
            .sum::<u64>()
            + 8 * 32;
        if stored != sum {
            return Err(format!(
                "{here}: header checksum {stored} (octal {stored:o}), but the header sums to {sum} (octal {sum:o}): a damaged or altered header"
            ));
        }
        // Python's tarfile reads a ustar prefix there whatever the magic says.
        let prefix = nts(&b[345..500]);
        if gnu && !prefix.is_empty() {
            return Err(format!(
                "{here}: a GNU header with bytes where ustar keeps a name prefix: Python's tarfile prepends them to the name, the tar crate and GNU tar do not"
            ));
        }
        let size = size_field(&b[124..136]).map_err(|e| format!("{here}: size field {e}"))?;
        let typeflag = b[156];
        let meta = match typeflag {
            b'x' => Some(Meta::Pax),
            b'L' => Some(Meta::LongName),
            b'K' => Some(Meta::LongLink),
            b'g' => {
                return Err(format!(
                    "{here}: a global pax header ('g'): it would apply to every later entry, and readers differ in how; this tool never writes one"
                ))
            }
            _ => None,
        };
        if let Some(m) = meta {
            let mixed = match m {
                Meta::Pax => self.gnu_seen.as_ref(),
                _ => self.pax_seen.as_ref(),
            };
            if let Some(other) = mixed {
                return Err(format!(
                    "{here}: a {} in an archive that also has {other}: readers differ in which name wins",
                    m.what()
                ));
            }
            let at_desc = format!("the {} at byte {at} ({})", m.what(), self.after());
            match m {
                Meta::Pax => self.pax_seen.get_or_insert_with(|| at_desc.clone()),
                _ => self.gnu_seen.get_or_insert_with(|| at_desc.clone()),
            };
            if let Some(p) = &self.pending {
                let twice = match m {
                    Meta::Pax => p.pax.is_some(),
                    Meta::LongName => p.long_name.is_some(),
                    Meta::LongLink => p.long_link.is_some(),
                };
                if twice {
                    return Err(format!(
                        "{at_desc}: a second {} for one entry, after {}: readers differ in which one applies",
                        m.what(),
                        p.at
                    ));
                }
            }
            if size > META_MAX {
                return Err(format!(
                    "{at_desc}: {size} bytes, over {} KiB: not an artifact of this tool",
                    META_MAX >> 10
                ));
            }
            self.meta.clear();
            self.meta_at = format!("{at}");
            self.pending.get_or_insert(Pending {
                at: at_desc,
                pax: None,
                long_name: None,
                long_link: None,
            });
            self.state = State::Data {
                left: size,
                pad: padding(size),
                meta: Some(m),
            };
            if size == 0 {
                // No data: done at once.
                self.meta_done(m)?;
                self.state = State::Header;
            }
            return Ok(());
        }
        let kind = match typeflag {
            b'0' | b'\0' | b'7' => None,
            b'1' => Some("hard link"),
            b'2' => Some("symlink"),
            b'3' => Some("character device"),
            b'4' => Some("block device"),
            b'5' => Some("directory"),
            b'6' => Some("FIFO"),
            other => {
                return Err(format!(
                    "{here}: entry type {}: not one that GNU tar, Python's tarfile and the tar crate read alike (sparse files, volume labels, vendor types); an artifact of this tool holds regular files and its top dir",
                    shown(&[other])
                ))
            }
        };
        let mut name = if ustar && !prefix.is_empty() {
            [prefix, b"/", raw_name].concat()
        } else {
            raw_name.to_vec()
        };
        let header_link = nts(&b[157..257]);
        let pending = self.pending.take();
        let mut link = (!header_link.is_empty()).then(|| header_link.to_vec());
        if let Some(p) = &pending {
            if let Some(records) = &p.pax {
                for (k, v) in records {
                    let (field, own) = match k.as_str() {
                        "path" => ("name", name.clone()),
                        "linkpath" => ("link name", header_link.to_vec()),
                        "size" => ("size", size.to_string().into_bytes()),
                        _ => continue,
                    };
                    if *v != own {
                        return Err(format!(
                            "{}: {} says {k}={}, but the header's {field} is {}: readers that take one or the other unpack different entries; an artifact of this tool repeats the header in pax, or has no pax",
                            shown(&name),
                            p.at,
                            shown(v),
                            shown(&own)
                        ));
                    }
                    if k == "linkpath" {
                        link = Some(v.clone());
                    }
                }
            }
            if let Some(n) = &p.long_name {
                name = n.clone();
            }
            if let Some(l) = &p.long_link {
                link = Some(l.clone());
            }
        }
        let shown_name = shown(&name);
        if let Some(kind) = kind {
            if size != 0 {
                return Err(format!(
                    "{shown_name}: a {kind} entry with {size} bytes of data: Python's tarfile reads no data for it and takes those bytes for headers, GNU tar and the tar crate skip them"
                ));
            }
        } else if name.ends_with(b"/") {
            return Err(format!(
                "{shown_name}: a regular file whose name ends with `/`: Python's tarfile and GNU tar may take it for a directory and read its data as headers"
            ));
        }
        self.previous = Some(String::from_utf8_lossy(&name).into_owned());
        self.expected.push_back(Expected {
            name,
            link,
            size,
            // The tar crate reads an old-style regular file ('\0') as '0'.
            typeflag: if typeflag == b'\0' { b'0' } else { typeflag },
        });
        self.state = State::Data {
            left: size,
            pad: padding(size),
            meta: None,
        };
        Ok(())
    }

    /// A meta entry's data is complete.
    fn meta_done(&mut self, m: Meta) -> Result<(), String> {
        let data = std::mem::take(&mut self.meta);
        let p = self.pending.as_mut().expect("a meta header set pending");
        let at = p.at.clone();
        match m {
            Meta::Pax => {
                let records = pax_records(&data).map_err(|e| format!("{at}: {e}"))?;
                let mut keys = BTreeSet::new();
                for (k, v) in &records {
                    if !keys.insert(k.as_str()) {
                        let values: Vec<String> = records
                            .iter()
                            .filter(|(k2, _)| k2 == k)
                            .map(|(_, v)| shown(v))
                            .collect();
                        return Err(format!(
                            "{at}: gives `{k}` {} times ({}): the tar crate takes the first, GNU tar and Python's tarfile the last, so they unpack different entries",
                            values.len(),
                            values.join(", ")
                        ));
                    }
                    if !PAX_KEYS.contains(&k.as_str()) {
                        return Err(format!(
                            "{at}: pax key `{k}`: not one that GNU tar, Python's tarfile and the tar crate apply alike (this tool reads {})",
                            PAX_KEYS.join(", ")
                        ));
                    }
                    if k == "size"
                        && (v.is_empty() || !v.iter().all(u8::is_ascii_digit) || v.len() > 19)
                    {
                        return Err(format!(
                            "{at}: size={}: not a plain decimal number, which readers parse differently",
                            shown(v)
                        ));
                    }
                }
                p.pax = Some(records);
            }
            Meta::LongName | Meta::LongLink => {
                let nul = data.iter().position(|b| *b == 0);
                if data.len() < 2 || nul != Some(data.len() - 1) {
                    return Err(format!(
                        "{at}: holds {}: a GNU long name is a name and one NUL at its end (the tar crate drops the last byte, GNU tar and Python's tarfile cut at the first NUL)",
                        shown(&data)
                    ));
                }
                let name = data[..data.len() - 1].to_vec();
                if m == Meta::LongName {
                    p.long_name = Some(name);
                } else {
                    p.long_link = Some(name);
                }
            }
        }
        Ok(())
    }
}

fn padding(size: u64) -> u64 {
    (BLOCK as u64 - size % BLOCK as u64) % BLOCK as u64
}

/// A NUL-terminated field: up to its first NUL.
fn nts(field: &[u8]) -> &[u8] {
    match field.iter().position(|b| *b == 0) {
        Some(i) => &field[..i],
        None => field,
    }
}

/// Bytes as a message shows them: text as it is, anything else escaped.
fn shown(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) if !s.chars().any(char::is_control) => s.to_string(),
        _ => format!("{:?}", bytes.escape_ascii().to_string()),
    }
}

/// An octal number field as every reader parses it alike: optional leading
/// spaces, octal digits, then only NULs and spaces.
fn octal(field: &[u8]) -> Result<u64, String> {
    let start = field.iter().position(|b| *b != b' ').unwrap_or(field.len());
    let digits = field[start..]
        .iter()
        .take_while(|b| (b'0'..=b'7').contains(*b))
        .count();
    let rest = &field[start + digits..];
    if digits == 0 || !rest.iter().all(|b| *b == 0 || *b == b' ') || digits > 21 {
        return Err(format!(
            "{}: not an octal number that readers parse alike",
            shown(field)
        ));
    }
    Ok(field[start..start + digits]
        .iter()
        .fold(0u64, |n, d| (n << 3) | u64::from(d - b'0')))
}

/// The 12-byte size field: octal, or base-256 (GNU's, for 8 GiB and more) with
/// the 0x80 marker and a value within 64 bits, which every reader reads alike.
fn size_field(field: &[u8]) -> Result<u64, String> {
    if field[0] & 0x80 == 0 {
        return octal(field);
    }
    let high = &field[1..field.len() - 8];
    if field[0] != 0x80 || high.iter().any(|b| *b != 0) {
        return Err(format!(
            "{}: a base-256 number that readers parse differently (a sign, or more than 64 bits)",
            shown(field)
        ));
    }
    Ok(field[field.len() - 8..]
        .iter()
        .fold(0u64, |n, b| (n << 8) | u64::from(*b)))
}

/// Pax records, `<length> <key>=<value>\n` each, covering `data` exactly: the
/// length in decimal without leading zeros, the key UTF-8 without `=` or NUL.
fn pax_records(data: &[u8]) -> Result<Vec<(String, Vec<u8>)>, String> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < data.len() {
        let rec = &data[pos..];
        let digits = rec.iter().take_while(|b| b.is_ascii_digit()).count();
        let bad = |why: &str| {
            format!(
                "malformed pax record at offset {pos} ({}): {why}; readers recover from it differently",
                shown(&rec[..rec.len().min(40)])
            )
        };
        if digits == 0 || digits > 9 || rec[0] == b'0' || rec.get(digits) != Some(&b' ') {
            return Err(bad("no decimal length and space"));
        }
        let len: usize = std::str::from_utf8(&rec[..digits])
            .expect("digits")
            .parse()
            .expect("at most 9 digits");
        if len > rec.len() || len < digits + 3 || rec[len - 1] != b'\n' {
            return Err(bad(&format!(
                "its length says {len} bytes, which do not end with a newline inside the header"
            )));
        }
        let body = &rec[digits + 1..len - 1];
        let Some(eq) = body.iter().position(|b| *b == b'=') else {
            return Err(bad("no `=`"));
        };
        let key = std::str::from_utf8(&body[..eq])
            .ok()
            .filter(|k| !k.is_empty() && !k.contains(['\0', '\n']))
            .ok_or_else(|| bad("its key is empty or not UTF-8"))?;
        out.push((key.to_string(), body[eq + 1..].to_vec()));
        pos += len;
    }
    Ok(out)
}

/// Reads `inner` (a decompressed tar stream) through the [`Walk`]: refuses, as
/// an I/O error whose inner error is [`Refused`], the read that completes a
/// header it refuses, so the `tar` crate never sees it.
pub struct Checked<R> {
    inner: R,
    walk: Rc<RefCell<Walk>>,
}

/// `inner` read through a walk; `archive` names it in messages.
pub fn checked<R: Read>(inner: R, archive: &str) -> (Checked<R>, Rc<RefCell<Walk>>) {
    let walk = Rc::new(RefCell::new(Walk::new(archive)));
    (
        Checked {
            inner,
            walk: walk.clone(),
        },
        walk,
    )
}

impl<R: Read> Read for Checked<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(r) = self.walk.borrow().refused() {
            return Err(io::Error::other(r));
        }
        if buf.is_empty() {
            return Ok(0);
        }
        let n = self.inner.read(buf)?;
        let mut w = self.walk.borrow_mut();
        let res = if n == 0 { w.eof() } else { w.feed(&buf[..n]) };
        match res {
            Ok(()) => Ok(n),
            Err(why) => Err(io::Error::other(w.refuse(why))),
        }
    }
}

#[cfg(test)]
#[path = "tar_layout_tests.rs"]
pub(crate) mod tests;
