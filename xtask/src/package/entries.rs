//! Reading an artifact's entries (zip or tar.gz) as streams, within bounds: a
//! decompression bomb is refused, naming its entry, before it fills memory or
//! disk. The readers are [`crate::package::wheel::stream_entries`] and
//! [`crate::package::archive::stream_entries`].
//!
//! The bounds count real bytes: what the decompressor produced, against the
//! bytes it actually read from the file (a [`CountIn`] under it), never against
//! the sizes a header claims (a zip entry may claim any compressed size).

use std::cell::{Cell, RefCell};
use std::io::{self, Read, Seek, SeekFrom};
use std::rc::Rc;

/// How much an artifact may unpack to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Uncompressed bytes in the whole artifact.
    pub total: u64,
    /// Entries in the artifact.
    pub entries: u64,
    /// Uncompressed bytes per compressed byte, for one entry...
    pub ratio: u64,
    /// ...once that entry is past this many uncompressed bytes.
    pub ratio_from: u64,
    /// Bytes a tar may put between two entries (headers, long names, pax records).
    pub header: u64,
}

impl Limits {
    /// What a llama-forge artifact may hold.
    ///
    /// - 8 GiB in all: the largest artifact built here (CUDA for every
    ///   architecture, with the runtime libraries bundled) unpacks to about
    ///   2 GiB, so 8 GiB is room to grow, and still refuses the classic bombs.
    /// - 100 000 entries: a wheel or archive holds about a hundred files.
    /// - 100:1 per entry past 1 MiB: what artifacts carry (libraries, CUDA
    ///   code, Python, text) comes out between 2:1 and 20:1, while a bomb's
    ///   zeros come out at 1032:1 (deflate's best), and still 229:1 at zlib's
    ///   fastest level. Small entries are not held to it: a small file of
    ///   repeated bytes is normal, and costs nothing.
    /// - 1 MiB between tar entries: our headers and names are a few hundred bytes.
    pub const ARTIFACT: Limits = Limits {
        total: 8 << 30,
        entries: 100_000,
        ratio: 100,
        ratio_from: 1 << 20,
        header: 1 << 20,
    };
}

/// Why reading stopped: the entry and the limit it went past. Readers return it
/// as the root of their error, so that callers can tell it from a broken file.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// What an entry is. Artifacts hold regular files (and, in archives, their top dir).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Dir,
    Symlink,
    Hardlink,
    /// FIFO, device, sparse file, ...: the tar type or zip mode, in words.
    Other(String),
}

impl std::fmt::Display for EntryKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EntryKind::File => f.write_str("regular file"),
            EntryKind::Dir => f.write_str("directory"),
            EntryKind::Symlink => f.write_str("symlink"),
            EntryKind::Hardlink => f.write_str("hard link"),
            EntryKind::Other(s) => f.write_str(s),
        }
    }
}

/// One entry's header.
#[derive(Debug, Clone)]
pub struct Head {
    /// The name as stored (lossily decoded when it is not UTF-8).
    pub name: String,
    /// False when the stored name is not UTF-8.
    pub utf8: bool,
    pub kind: EntryKind,
    pub mode: u32,
    /// Where a symlink or hard link points.
    pub link: Option<String>,
    /// A tar entry's owner, uid and gid (a zip records none).
    pub owner: Option<(u64, u64)>,
}

/// Counts what a decompressor produces, against [`Limits`]. Shared (through
/// `Rc`) by the reader that wraps the decompressor and the code that walks the
/// entries, which marks where each entry starts.
#[derive(Debug)]
pub struct Meter {
    limits: Limits,
    out: Cell<u64>,
    /// Compressed bytes read from the file so far (counted by a [`CountIn`]
    /// under the decompressor).
    input: Cell<u64>,
    entry: RefCell<String>,
    entry_out: Cell<u64>,
    entry_in: Cell<u64>,
    /// Between tar entries: only headers may be read.
    in_header: Cell<bool>,
    /// Slack for the decompressor's read-ahead: input it took but has not used yet.
    slack: u64,
    refused: RefCell<Option<Refused>>,
}

impl Meter {
    pub fn new(limits: Limits, slack: u64) -> Rc<Meter> {
        Rc::new(Meter {
            limits,
            out: Cell::new(0),
            input: Cell::new(0),
            entry: RefCell::new(String::new()),
            entry_out: Cell::new(0),
            entry_in: Cell::new(0),
            in_header: Cell::new(true),
            slack,
            refused: RefCell::new(None),
        })
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// An entry starts: its data is measured from here.
    pub fn start_entry(&self, name: &str) {
        *self.entry.borrow_mut() = name.to_string();
        self.entry_out.set(0);
        self.entry_in.set(self.input.get());
        self.in_header.set(false);
    }

    /// The entry's data is read: what follows, up to the next entry, is headers.
    pub fn end_entry(&self) {
        self.entry_out.set(0);
        self.in_header.set(true);
    }

    /// Compressed bytes read (by a [`CountIn`] under the decompressor).
    fn consumed(&self, n: u64) {
        self.input.set(self.input.get() + n);
    }

    /// Why reading stopped, if a limit did it.
    pub fn refused(&self) -> Option<Refused> {
        self.refused.borrow().clone()
    }

    fn produced(&self, n: u64) -> io::Result<()> {
        let out = self.out.get() + n;
        self.out.set(out);
        let entry_out = self.entry_out.get() + n;
        self.entry_out.set(entry_out);
        let l = &self.limits;
        let entry = self.entry.borrow().clone();
        let why = if out > l.total {
            Some(format!(
                "{}: the artifact unpacks to more than {} MiB: a decompression bomb, or not an artifact of this tool; not read further",
                entry_or_start(&entry),
                l.total >> 20
            ))
        } else if self.in_header.get() && entry_out > l.header {
            Some(format!(
                "{}: more than {} KiB of tar headers (long names, pax records) before the next entry: not an artifact of this tool; not read further",
                after(&entry),
                l.header >> 10
            ))
        } else {
            let took = self.input.get().saturating_sub(self.entry_in.get()) + self.slack;
            (!self.in_header.get() && entry_out > l.ratio_from && entry_out > l.ratio.saturating_mul(took)).then(|| {
                format!(
                    "{entry}: unpacks to more than {}x its compressed size ({} MiB so far): a decompression bomb; not read further (limit {}:1 past {} MiB)",
                    l.ratio,
                    entry_out >> 20,
                    l.ratio,
                    l.ratio_from >> 20
                )
            })
        };
        match why {
            Some(w) => {
                let r = Refused(w);
                *self.refused.borrow_mut() = Some(r.clone());
                Err(io::Error::other(r))
            }
            None => Ok(()),
        }
    }
}

fn entry_or_start(entry: &str) -> String {
    if entry.is_empty() {
        "at the start".into()
    } else {
        entry.to_string()
    }
}

fn after(entry: &str) -> String {
    if entry.is_empty() {
        "at the start".into()
    } else {
        format!("after {entry}")
    }
}

/// Counts the compressed bytes a decompressor reads: the bytes that come out of
/// the file, whatever the entry's header claims. Seeking counts nothing.
pub struct CountIn<R> {
    inner: R,
    meter: Rc<Meter>,
}

impl<R> CountIn<R> {
    pub fn new(inner: R, meter: Rc<Meter>) -> Self {
        CountIn { inner, meter }
    }
}

impl<R: Read> Read for CountIn<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.meter.consumed(n as u64);
        Ok(n)
    }
}

impl<R: Seek> Seek for CountIn<R> {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.inner.seek(pos)
    }
}

/// Counts what a decompressor produces, and fails past the limits.
pub struct Metered<R> {
    inner: R,
    meter: Rc<Meter>,
}

impl<R> Metered<R> {
    pub fn new(inner: R, meter: Rc<Meter>) -> Self {
        Metered { inner, meter }
    }
}

impl<R: Read> Read for Metered<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(r) = self.meter.refused() {
            return Err(io::Error::other(r));
        }
        let n = self.inner.read(buf)?;
        self.meter.produced(n as u64)?;
        Ok(n)
    }
}

/// The error to return once `meter` has refused, whatever error the reader
/// built around it: its root is [`Refused`].
pub fn refusal(meter: &Meter) -> Option<anyhow::Error> {
    meter.refused().map(anyhow::Error::new)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            total: 10 << 20,
            entries: 10,
            ratio: 10,
            ratio_from: 1 << 20,
            header: 4096,
        }
    }

    fn drain(r: &mut impl Read) -> io::Result<u64> {
        io::copy(r, &mut io::sink())
    }

    /// `name` starts, and the decompressor reads `input` bytes from the file.
    fn entry_reading(m: &Rc<Meter>, name: &str, input: u64) {
        m.start_entry(name);
        drain(&mut CountIn::new(io::repeat(7).take(input), m.clone())).unwrap();
    }

    #[test]
    fn an_entry_past_the_ratio_is_refused_with_its_name() {
        let m = Meter::new(limits(), 0);
        // 2 MiB from 100 KiB read: 20:1.
        entry_reading(&m, "lib/bomb.so", 100 << 10);
        let err = drain(&mut Metered::new(io::repeat(0).take(2 << 20), m.clone())).unwrap_err();
        assert!(
            err.to_string()
                .contains("lib/bomb.so: unpacks to more than 10x its compressed size"),
            "{err}"
        );
        assert!(m.refused().is_some());
        // 2 MiB from 1 MiB is fine, and so is a small entry of any ratio.
        let m = Meter::new(limits(), 0);
        entry_reading(&m, "a", 1 << 20);
        assert_eq!(
            drain(&mut Metered::new(io::repeat(0).take(2 << 20), m.clone())).unwrap(),
            2 << 20
        );
        entry_reading(&m, "b", 1);
        assert_eq!(
            drain(&mut Metered::new(io::repeat(0).take(1 << 20), m.clone())).unwrap(),
            1 << 20
        );
    }

    /// What an earlier entry read does not count for the next one.
    #[test]
    fn each_entry_has_only_its_own_input() {
        let m = Meter::new(limits(), 0);
        entry_reading(&m, "big", 10 << 20);
        entry_reading(&m, "lib/bomb.so", 100 << 10);
        let err = drain(&mut Metered::new(io::repeat(0).take(2 << 20), m.clone())).unwrap_err();
        assert!(
            err.to_string()
                .contains("lib/bomb.so: unpacks to more than 10x"),
            "{err}"
        );
    }

    #[test]
    fn the_whole_artifact_is_bounded() {
        let m = Meter::new(limits(), 0);
        for i in 0..3 {
            entry_reading(&m, &format!("f{i}"), 4 << 20);
            let r = drain(&mut Metered::new(io::repeat(1).take(4 << 20), m.clone()));
            assert_eq!(r.is_ok(), i < 2, "{r:?}");
        }
        assert!(
            m.refused()
                .unwrap()
                .0
                .starts_with("f2: the artifact unpacks to more than"),
            "{:?}",
            m.refused()
        );
    }

    #[test]
    fn headers_between_tar_entries_are_bounded() {
        let m = Meter::new(limits(), 0);
        let err = drain(&mut Metered::new(io::repeat(0).take(8192), m.clone())).unwrap_err();
        assert!(
            err.to_string()
                .contains("at the start: more than 4 KiB of tar headers"),
            "{err}"
        );
    }

    #[test]
    fn counted_input_sets_the_ratio() {
        // A stream of 1 MiB + 1 byte produced from 10 KiB of input: refused; from 200 KiB: fine.
        for (input, ok) in [(10u64 << 10, false), (200 << 10, true)] {
            let m = Meter::new(limits(), 0);
            drain(&mut CountIn::new(io::repeat(7).take(3), m.clone())).unwrap();
            m.start_entry("x");
            drain(&mut CountIn::new(io::repeat(7).take(input), m.clone())).unwrap();
            let r = drain(&mut Metered::new(
                io::repeat(0).take((1 << 20) + 1),
                m.clone(),
            ));
            assert_eq!(r.is_ok(), ok, "{r:?}");
        }
    }
}
