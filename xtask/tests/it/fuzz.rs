//! Fuzzing on stable Rust (issue 26): property tests of every reader of untrusted
//! bytes, run by `cargo test --test it fuzz::` like any other test.
//!
//! The readers: the fat binary reader (`cuda::fatbin::parse` and `payload`), the ELF
//! reader (`binary::elf::parse`, `device_code`, and on a file `parse_file`,
//! `device_code_file`), the PE reader (`binary::pe::parse`, `device_code`), the zip
//! reader (`package::wheel::stream_entries`, which reads `package::zip_layout` first),
//! the tar.gz reader (`package::archive::stream_entries`, through
//! `package::tar_layout`) and the Debian package reader (`provision::unpack::unpack_deb`:
//! the `ar` archive, its data.tar.xz, unpacked into a temp dir), and the rule for entry
//! names (`portable`), fed names of arbitrary bytes and of the characters that case
//! folding and normalisation treat specially: it never panics, and a name's NFC, NFD
//! and ASCII-case twins are always caught.
//!
//! Each is fed arbitrary bytes (some starting with the format's magic, to get past
//! the first check), and mutations of valid inputs built here (with the crate's own
//! writers where it has them, else by hand: the ELF and PE files, the fat binaries,
//! the `ar` archive): bytes flipped or set to edge values (0, 0xff, 2^31, u64::MAX,
//! ... as 1, 2, 4 or 8 bytes), truncations, deletions, duplicated and spliced ranges,
//! inserted bytes. For tar.gz and .deb the tar inside is mutated too, then compressed
//! again, so that the mutations reach the tar layout past the gzip and xz checks. The
//! property, for every case: the reader returns Ok or Err, and
//! - never panics (proptest catches the panic, shrinks the input and prints it);
//! - takes under [`CASE_CPU`] of CPU time (the thread's, so a loaded machine does not
//!   fail it), and a watchdog ends the whole run, naming the reader, if one case runs
//!   [`HANG`] of wall time (a hang);
//! - allocates at most [`HEAP`] of live heap at once (counted per thread by this
//!   binary's global allocator), more only where the reader documents a bound: the
//!   fat binary's `payload` may allocate the entry's stated size, up to
//!   `fatbin::MAX_ENTRY_SIZE`. The archive readers run within [`limits`], a small
//!   `entries::Limits`.
//!
//! Deterministic and bounded: proptest's ChaCha generator from a fixed seed, no
//! failure persistence files, a fixed number of cases per property. Environment:
//! - `FUZZ_CASES`: cases per property of the tar.gz and .deb readers, and [`FAST`]
//!   times that for the others, which take far less a case (default [`DEFAULT_CASES`],
//!   which keeps the whole file near 20 s on 2 cores in a debug build, wherever it
//!   runs; raise it for a longer local run, e.g. `FUZZ_CASES=20000 cargo test --release
//!   --test it fuzz::`);
//! - `FUZZ_SEED`: the seed (a u64; default [`DEFAULT_SEED`]): another seed explores
//!   other inputs. A failure names the seed and the property, and writes the shrunk
//!   input to `target/tmp/fuzz-<property>.bin`;
//! - `FUZZ_REPLAY=<file>`: each property of the tests run reads that file as its one
//!   input (`FUZZ_REPLAY=target/tmp/fuzz-deb_mutated.bin cargo test --test it
//!   fuzz::deb_mutated`).
//!
//! Nothing here skips itself: it needs no tool, network or GPU.
// Tests say on stderr why they skip and where a long build is.
#![allow(clippy::print_stderr)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, RngAlgorithm, RngSeed, TestCaseError, TestError, TestRunner};

use xtask::binary::{elf, pe};
use xtask::cuda::fatbin;
use xtask::package::entries::Limits;
use xtask::package::{archive, wheel};

const DEFAULT_CASES: u32 = 400;
const DEFAULT_SEED: u64 = 0x1a3a_f022_2026_0026;
/// CPU time one case may take (they take milliseconds).
const CASE_CPU: Duration = Duration::from_secs(2);
/// Wall time after which a case is taken to hang and the run is ended.
const HANG: Duration = Duration::from_secs(60);
/// Live heap one case may hold at once, beyond what it held when it started.
const HEAP: u64 = 64 << 20;
/// The largest input made: mutations of valid inputs stay near their size.
const MAX_ARBITRARY: usize = 4096;

// ---------------------------------------------------------------------------------
// The allocator: counts each thread's live heap and its peak.

struct Counting;

thread_local! {
    static LIVE: Cell<i64> = const { Cell::new(0) };
    static PEAK: Cell<i64> = const { Cell::new(0) };
    /// Cases run, and read without error, by the property running on this thread.
    static RAN: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

fn grew(n: usize) {
    let _ = LIVE.try_with(|live| {
        let now = live.get().wrapping_add(n as i64);
        live.set(now);
        let _ = PEAK.try_with(|peak| {
            if now > peak.get() {
                peak.set(now)
            }
        });
    });
}

fn shrank(n: usize) {
    let _ = LIVE.try_with(|live| live.set(live.get().wrapping_sub(n as i64)));
}

// SAFETY: every call goes to `System` with the same arguments; the counters are
// thread-local cells with const initialisers (no allocation, no destructor).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            grew(l.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(l) };
        if !p.is_null() {
            grew(l.size());
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        shrank(l.size());
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            shrank(l.size());
            grew(new);
        }
        q
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The CPU time this thread has used.
fn thread_cpu() -> Duration {
    #[cfg(target_os = "linux")]
    {
        use nix::sys::resource::{getrusage, UsageWho};
        if let Ok(u) = getrusage(UsageWho::RUSAGE_THREAD) {
            let t = |v: nix::sys::time::TimeVal| {
                Duration::new(v.tv_sec() as u64, v.tv_usec() as u32 * 1000)
            };
            return t(u.user_time()) + t(u.system_time());
        }
    }
    // Elsewhere: wall time, from a fixed start.
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed()
}

// ---------------------------------------------------------------------------------
// The watchdog: a case that runs past HANG ends the run, naming it.

struct Running {
    id: u64,
    what: String,
    since: Instant,
}

static RUNNING: Mutex<Vec<Running>> = Mutex::new(Vec::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

fn watchdog() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        std::thread::spawn(|| loop {
            std::thread::sleep(Duration::from_millis(200));
            let running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(r) = running.iter().find(|r| r.since.elapsed() > HANG) {
                eprintln!(
                    "fuzz: {} ran {:?} on one input: it hangs (seed {})",
                    r.what,
                    r.since.elapsed(),
                    seed()
                );
                std::process::exit(3);
            }
        });
    });
}

/// Runs one case of `what`: the reader must return (no panic: proptest catches it),
/// within [`CASE_CPU`], holding at most `heap` bytes more than before at any time.
/// `run` says whether the reader read the input without error (counted for the
/// summary each property prints).
fn case(what: &str, heap: u64, run: impl FnOnce() -> bool) -> Result<(), TestCaseError> {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    RUNNING
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Running {
            id,
            what: what.to_string(),
            since: Instant::now(),
        });
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let cpu = thread_cpu();
    // Unwinding past here (a panic) leaves the entry behind; the failure is reported
    // and the run ends before the watchdog could mind it.
    let ok = run();
    RAN.with(|r| {
        let (n, k) = r.get();
        r.set((n + 1, k + ok as u64))
    });
    let cpu = thread_cpu().saturating_sub(cpu);
    let peak = PEAK.with(Cell::get).saturating_sub(base).max(0) as u64;
    RUNNING
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|r| r.id != id);
    prop_assert!(cpu < CASE_CPU, "{what} took {cpu:?} of CPU on one input");
    prop_assert!(
        peak <= heap,
        "{what} held {peak} bytes of heap at once (at most {heap})"
    );
    Ok(())
}

// ---------------------------------------------------------------------------------
// The runner: fixed seed, fixed cases, no persistence files.

fn cases() -> u32 {
    match std::env::var("FUZZ_CASES") {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("FUZZ_CASES={v}: not a number of cases")),
        Err(_) => DEFAULT_CASES,
    }
}

/// The readers that do not compress each case (fat binary, ELF, PE, zip) take well
/// under a millisecond a case: they run this many times [`cases`].
const FAST: u32 = 8;

/// Cases for the property `name`: [`cases`] for the tar.gz and .deb readers (each case
/// is gzip- or xz-compressed first), [`FAST`] times that for the others.
fn cases_of(name: &str) -> u32 {
    if name.starts_with("tar_gz") || name.starts_with("deb") {
        cases()
    } else {
        cases().saturating_mul(FAST)
    }
}

fn seed() -> u64 {
    match std::env::var("FUZZ_SEED") {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("FUZZ_SEED={v}: not a u64")),
        Err(_) => DEFAULT_SEED,
    }
}

/// Runs `test` on [`cases`] inputs of `strategy`, from [`seed`] mixed with the
/// property's name (each property sees its own sequence, the same every run). A
/// failing input, shrunk, is written to `<target>/tmp/fuzz-<name>.bin`; with
/// `FUZZ_REPLAY=<that file>`, `cargo test --test it fuzz::<test>` runs it alone again.
fn fuzz(
    name: &str,
    strategy: impl Strategy<Value = Vec<u8>>,
    test: impl Fn(Vec<u8>) -> Result<(), TestCaseError>,
) {
    watchdog();
    if let Ok(replay) = std::env::var("FUZZ_REPLAY") {
        let input = fs_err::read(&replay).unwrap();
        if let Err(e) = test(input) {
            panic!("{name} on {replay}: {e}");
        }
        return;
    }
    let mixed = name
        .bytes()
        .fold(seed(), |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
    let config = Config {
        cases: cases_of(name),
        failure_persistence: None,
        rng_algorithm: RngAlgorithm::ChaCha,
        rng_seed: RngSeed::Fixed(mixed),
        max_shrink_iters: 2048,
        max_shrink_time: 60_000,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    RAN.with(|r| r.set((0, 0)));
    match runner.run(&strategy, test) {
        Ok(()) => {
            let (n, ok) = RAN.with(Cell::get);
            eprintln!("{name}: {n} cases, {ok} read without error");
        }
        Err(TestError::Fail(why, input)) => {
            let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("fuzz-{name}.bin"));
            fs_err::write(&path, &input).unwrap();
            panic!(
                "{name} (FUZZ_SEED={}): {why}; the input ({} bytes, shrunk) is in {}: FUZZ_REPLAY={} runs it again",
                seed(),
                input.len(),
                path.display(),
                path.display()
            );
        }
        Err(e) => panic!("{name} (FUZZ_SEED={}): {e}", seed()),
    }
}

// ---------------------------------------------------------------------------------
// Mutations.

#[derive(Debug, Clone)]
enum Op {
    /// XOR one byte with a nonzero value.
    Flip(Index, u8),
    /// Write an edge value, little-endian, as 1, 2, 4 or 8 bytes.
    Set(Index, u64, usize),
    Truncate(Index),
    Delete(Index, usize),
    /// Insert a copy of a range right after it.
    Duplicate(Index, usize),
    /// Copy a range over another place.
    Splice(Index, Index, usize),
    Insert(Index, Vec<u8>),
}

fn edge_value() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        Just(1),
        Just(0x7f),
        Just(0x80),
        Just(0xff),
        Just(0x100),
        Just(0x7fff),
        Just(0xffff),
        Just(0x7fff_ffff),
        Just(0x8000_0000),
        Just(0xffff_ffff),
        Just(1 << 30),
        Just(1 << 40),
        Just(u64::MAX),
        Just(u64::MAX / 2),
        0u64..4096,
        any::<u64>(),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (any::<Index>(), 1u8..=255).prop_map(|(i, x)| Op::Flip(i, x)),
        4 => (any::<Index>(), edge_value(), prop::sample::select(vec![1usize, 2, 4, 8]))
            .prop_map(|(i, v, w)| Op::Set(i, v, w)),
        1 => any::<Index>().prop_map(Op::Truncate),
        1 => (any::<Index>(), 1usize..64).prop_map(|(i, n)| Op::Delete(i, n)),
        1 => (any::<Index>(), 1usize..600).prop_map(|(i, n)| Op::Duplicate(i, n)),
        1 => (any::<Index>(), any::<Index>(), 1usize..600).prop_map(|(a, b, n)| Op::Splice(a, b, n)),
        1 => (any::<Index>(), prop::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(i, b)| Op::Insert(i, b)),
    ]
}

fn apply(mut data: Vec<u8>, ops: &[Op]) -> Vec<u8> {
    for op in ops {
        let len = data.len();
        if len == 0 {
            if let Op::Insert(_, b) = op {
                data.extend_from_slice(b);
            }
            continue;
        }
        match op {
            Op::Flip(i, x) => data[i.index(len)] ^= x,
            Op::Set(i, v, w) => {
                let at = i.index(len);
                let end = (at + w).min(len);
                data[at..end].copy_from_slice(&v.to_le_bytes()[..end - at]);
            }
            Op::Truncate(i) => data.truncate(i.index(len)),
            Op::Delete(i, n) => {
                let at = i.index(len);
                data.drain(at..(at + n).min(len));
            }
            Op::Duplicate(i, n) => {
                let at = i.index(len);
                let copy = data[at..(at + n).min(len)].to_vec();
                let end = at + copy.len();
                data.splice(end..end, copy);
            }
            Op::Splice(a, b, n) => {
                let (from, to) = (a.index(len), b.index(len));
                let n = (*n).min(len - from).min(len - to);
                data.copy_within(from..from + n, to);
            }
            Op::Insert(i, b) => {
                let at = i.index(len + 1);
                data.splice(at..at, b.iter().copied());
            }
        }
    }
    data
}

/// Mutations of one of `seeds` (1 to 6 operations).
fn mutated(seeds: Vec<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
    (
        prop::sample::select(seeds),
        prop::collection::vec(op(), 1..6),
    )
        .prop_map(|(seed, ops)| apply(seed, &ops))
}

/// Arbitrary bytes, a third of them after one of `magics`.
fn arbitrary(magics: &[&[u8]]) -> impl Strategy<Value = Vec<u8>> {
    let magics: Vec<Vec<u8>> = magics.iter().map(|m| m.to_vec()).collect();
    prop_oneof![
        1 => prop::collection::vec(any::<u8>(), 0..MAX_ARBITRARY),
        2 => (prop::sample::select(magics), prop::collection::vec(any::<u8>(), 0..MAX_ARBITRARY))
            .prop_map(|(mut m, rest)| { m.extend(rest); m }),
    ]
}

// ---------------------------------------------------------------------------------
// Valid inputs.

fn put16(b: &mut Vec<u8>, v: u16) {
    b.extend_from_slice(&v.to_le_bytes());
}
fn put32(b: &mut Vec<u8>, v: u32) {
    b.extend_from_slice(&v.to_le_bytes());
}
fn put64(b: &mut Vec<u8>, v: u64) {
    b.extend_from_slice(&v.to_le_bytes());
}

const FLAG_LZ4: u64 = 0x2000;
const FLAG_ZSTD: u64 = 0x8000;
const FLAG_A: u64 = 0x10_0000;
const FLAG_F: u64 = 0x20_0000;

/// A fat binary entry (the layout in `cuda/fatbin.rs`'s top comment): a 64-byte
/// header, then `payload` padded to 8.
fn fatbin_entry(kind: u16, arch: u32, flags: u64, payload: &[u8], uncompressed: u64) -> Vec<u8> {
    let padded = payload.len().div_ceil(8) * 8;
    let mut h = Vec::new();
    put16(&mut h, kind);
    put16(&mut h, 0x0101);
    put32(&mut h, 64);
    put64(&mut h, padded as u64);
    put32(&mut h, payload.len() as u32);
    put32(&mut h, 0);
    put16(&mut h, 8); // code version 8.x
    put16(&mut h, 1);
    put32(&mut h, arch);
    h.resize(40, 0);
    put64(&mut h, flags | 0x11);
    h.resize(56, 0);
    put64(&mut h, uncompressed);
    h.extend_from_slice(payload);
    h.resize(64 + padded, 0);
    h
}

fn fatbin_container(entries: &[Vec<u8>]) -> Vec<u8> {
    let body = entries.concat();
    let mut c = Vec::new();
    put32(&mut c, 0xBA55_ED50);
    put16(&mut c, 1);
    put16(&mut c, 16);
    put64(&mut c, body.len() as u64);
    c.extend(body);
    c
}

/// Fat binaries of plain, `a` and `f` cubins and PTX, stored, LZ4 and zstd.
fn fatbins() -> Vec<Vec<u8>> {
    let cubin = b"\x7fELF\x02\x01\x01\x33 a pretend cubin, long enough to compress: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    let ptx = b".version 8.8\n.target sm_100f\n.address_size 64\n";
    let zstd =
        ruzstd::encoding::compress_to_vec(&cubin[..], ruzstd::encoding::CompressionLevel::Fastest);
    let lz4 = lz4_flex::block::compress(cubin);
    let n = cubin.len() as u64;
    let mut two = fatbin_container(&[
        fatbin_entry(2, 120, FLAG_A | FLAG_ZSTD, &zstd, n),
        fatbin_entry(1, 100, FLAG_F, ptx, 0),
    ]);
    two.extend_from_slice(&[0; 8]);
    two.extend(fatbin_container(&[fatbin_entry(2, 90, FLAG_LZ4, &lz4, n)]));
    vec![
        two,
        fatbin_container(&[fatbin_entry(2, 86, 0, cubin, 0)]),
        fatbin_container(&[
            fatbin_entry(
                1,
                75,
                FLAG_LZ4,
                &lz4_flex::block::compress(ptx),
                ptx.len() as u64,
            ),
            fatbin_entry(2, 75, FLAG_ZSTD, &zstd, n),
        ]),
    ]
}

struct Section {
    name: &'static str,
    ty: u32,
    link: u32,
    info: u32,
    entsize: u64,
    data: Vec<u8>,
}

/// A 64-bit little-endian x86-64 shared library, by hand (the `object` crate here
/// reads only): DT_NEEDED, DT_SONAME, DT_RUNPATH, one version need, a dynamic symbol
/// (libstdc++'s `std::locale::classic()`, defined), and device code in `.nv_fatbin`
/// and `__nv_relfatbin`.
fn elf_file(fatbin: &[u8], relfatbin: &[u8]) -> Vec<u8> {
    let mut dynstr = vec![0u8];
    let mut add = |s: &str| {
        let at = dynstr.len() as u32;
        dynstr.extend_from_slice(s.as_bytes());
        dynstr.push(0);
        at
    };
    let needed = [add("libcudart.so.13"), add("libstdc++.so.6")];
    let soname = add("libggml-cuda.so");
    let runpath = add("$ORIGIN:$ORIGIN/../nvidia/cu13/lib");
    let version = add("GLIBCXX_3.4.29");
    let marker = add("_ZNSt6locale7classicEv");
    let mut dynsym = vec![0u8; 24];
    put32(&mut dynsym, marker);
    dynsym.push((1 << 4) | 2); // STB_GLOBAL, STT_FUNC
    dynsym.push(0);
    put16(&mut dynsym, 5); // defined in .nv_fatbin's index: anything but SHN_UNDEF
    put64(&mut dynsym, 0x1000);
    put64(&mut dynsym, 16);
    let mut dynamic = Vec::new();
    for (tag, val) in [
        (1u64, needed[0]),
        (1, needed[1]),
        (14, soname),
        (29, runpath),
        (0, 0),
    ] {
        put64(&mut dynamic, tag);
        put64(&mut dynamic, val as u64);
    }
    let mut verneed = Vec::new();
    put16(&mut verneed, 1); // vn_version
    put16(&mut verneed, 1); // vn_cnt
    put32(&mut verneed, needed[1]); // vn_file
    put32(&mut verneed, 16); // vn_aux
    put32(&mut verneed, 0); // vn_next
    put32(&mut verneed, 0x08922e49); // vna_hash
    put16(&mut verneed, 0);
    put16(&mut verneed, 2);
    put32(&mut verneed, version);
    put32(&mut verneed, 0);
    let sections = [
        Section {
            name: "",
            ty: 0,
            link: 0,
            info: 0,
            entsize: 0,
            data: vec![],
        },
        Section {
            name: ".dynstr",
            ty: 3,
            link: 0,
            info: 0,
            entsize: 0,
            data: dynstr,
        },
        Section {
            name: ".dynsym",
            ty: 11,
            link: 1,
            info: 1,
            entsize: 24,
            data: dynsym,
        },
        Section {
            name: ".dynamic",
            ty: 6,
            link: 1,
            info: 0,
            entsize: 16,
            data: dynamic,
        },
        Section {
            name: ".gnu.version_r",
            ty: 0x6fff_fffe,
            link: 1,
            info: 1,
            entsize: 0,
            data: verneed,
        },
        Section {
            name: ".nv_fatbin",
            ty: 1,
            link: 0,
            info: 0,
            entsize: 0,
            data: fatbin.to_vec(),
        },
        Section {
            name: "__nv_relfatbin",
            ty: 1,
            link: 0,
            info: 0,
            entsize: 0,
            data: relfatbin.to_vec(),
        },
        Section {
            name: ".shstrtab",
            ty: 3,
            link: 0,
            info: 0,
            entsize: 0,
            data: vec![],
        },
    ];
    let mut shstrtab = vec![0u8];
    let names: Vec<u32> = sections
        .iter()
        .map(|s| {
            if s.name.is_empty() {
                return 0;
            }
            let at = shstrtab.len() as u32;
            shstrtab.extend_from_slice(s.name.as_bytes());
            shstrtab.push(0);
            at
        })
        .collect();
    let shstrndx = sections.len() - 1;
    let mut out = vec![0u8; 64];
    let mut placed = Vec::new();
    for (i, s) in sections.iter().enumerate() {
        let data = if i == shstrndx { &shstrtab } else { &s.data };
        out.resize(out.len().div_ceil(8) * 8, 0);
        placed.push((out.len() as u64, data.len() as u64));
        out.extend_from_slice(data);
    }
    out.resize(out.len().div_ceil(8) * 8, 0);
    let shoff = out.len() as u64;
    for (i, s) in sections.iter().enumerate() {
        let (off, size) = if i == 0 { (0, 0) } else { placed[i] };
        put32(&mut out, names[i]);
        put32(&mut out, s.ty);
        put64(&mut out, if s.ty == 11 || s.ty == 6 { 2 } else { 0 }); // SHF_ALLOC
        put64(&mut out, 0);
        put64(&mut out, off);
        put64(&mut out, size);
        put32(&mut out, s.link);
        put32(&mut out, s.info);
        put64(&mut out, 8);
        put64(&mut out, s.entsize);
    }
    let mut h = b"\x7fELF\x02\x01\x01\x00".to_vec();
    h.resize(16, 0);
    put16(&mut h, 3); // ET_DYN
    put16(&mut h, 62); // EM_X86_64
    put32(&mut h, 1);
    put64(&mut h, 0); // e_entry
    put64(&mut h, 0); // e_phoff
    put64(&mut h, shoff);
    put32(&mut h, 0);
    put16(&mut h, 64);
    put16(&mut h, 56);
    put16(&mut h, 0);
    put16(&mut h, 64);
    put16(&mut h, sections.len() as u16);
    put16(&mut h, shstrndx as u16);
    out[..64].copy_from_slice(&h);
    out
}

/// A 64-bit x86-64 DLL, by hand: two load-time imports, one delay-load import, and
/// device code in `.nv_fatb` and `__nv_rel` (as nvcc with MSVC names them).
fn pe_file(fatbin: &[u8], relfatbin: &[u8]) -> Vec<u8> {
    const FILE_ALIGN: usize = 0x200;
    const SECTION_ALIGN: u32 = 0x1000;
    // .idata: import descriptors at 0, delay-load ones at 0x100, names after each.
    let idata_rva = SECTION_ALIGN;
    let mut idata = Vec::new();
    let imports = ["KERNEL32.dll", "cudart64_13.dll"];
    for (i, _) in imports.iter().enumerate() {
        put32(&mut idata, 0); // OriginalFirstThunk
        put32(&mut idata, 0);
        put32(&mut idata, 0);
        put32(&mut idata, idata_rva + 0x80 + 0x20 * i as u32); // Name
        put32(&mut idata, idata_rva + 0x1c0); // FirstThunk: a null thunk
    }
    idata.resize(idata.len() + 20, 0);
    let import_dir_size = idata.len() as u32;
    idata.resize(0x80, 0);
    for name in imports {
        let mut n = name.as_bytes().to_vec();
        n.resize(0x20, 0);
        idata.extend(n);
    }
    idata.resize(0x100, 0);
    put32(&mut idata, 1); // Attributes: RVA based
    put32(&mut idata, idata_rva + 0x180); // DllNameRVA
    for _ in 0..6 {
        put32(&mut idata, idata_rva + 0x1c0);
    }
    idata.resize(idata.len() + 32, 0);
    let delay_dir_size = 64;
    idata.resize(0x180, 0);
    idata.extend_from_slice(b"nvcuda.dll\0");
    idata.resize(0x200, 0);
    let sections: [(&[u8; 8], &[u8], u32); 3] = [
        (b".idata\0\0", &idata, 0xc000_0040),
        (b".nv_fatb", fatbin, 0x4000_0040),
        (b"__nv_rel", relfatbin, 0x4000_0040),
    ];
    let headers = 0x40 + 4 + 20 + 240 + 40 * sections.len();
    let size_of_headers = headers.div_ceil(FILE_ALIGN) * FILE_ALIGN;
    let mut table = Vec::new();
    let mut body = Vec::new();
    let mut rva = SECTION_ALIGN;
    for (name, data, chars) in sections {
        let raw = data.len().div_ceil(FILE_ALIGN) * FILE_ALIGN;
        table.extend_from_slice(name);
        put32(&mut table, data.len() as u32); // VirtualSize
        put32(&mut table, rva);
        put32(&mut table, raw as u32);
        put32(&mut table, (size_of_headers + body.len()) as u32);
        put32(&mut table, 0);
        put32(&mut table, 0);
        put16(&mut table, 0);
        put16(&mut table, 0);
        put32(&mut table, chars);
        body.extend_from_slice(data);
        body.resize(body.len().div_ceil(FILE_ALIGN) * FILE_ALIGN, 0);
        rva += (data.len().max(1) as u32).div_ceil(SECTION_ALIGN) * SECTION_ALIGN;
    }
    let mut out = b"MZ".to_vec();
    out.resize(0x3c, 0);
    put32(&mut out, 0x40);
    out.extend_from_slice(b"PE\0\0");
    put16(&mut out, 0x8664); // Machine
    put16(&mut out, sections.len() as u16);
    put32(&mut out, 0); // TimeDateStamp
    put32(&mut out, 0);
    put32(&mut out, 0);
    put16(&mut out, 240); // SizeOfOptionalHeader
    put16(&mut out, 0x2022); // EXECUTABLE_IMAGE | LARGE_ADDRESS_AWARE | DLL
    put16(&mut out, 0x20b); // PE32+
    out.extend_from_slice(&[14, 0]);
    put32(&mut out, 0); // SizeOfCode
    put32(&mut out, body.len() as u32);
    put32(&mut out, 0);
    put32(&mut out, 0); // AddressOfEntryPoint
    put32(&mut out, 0); // BaseOfCode
    put64(&mut out, 0x1_8000_0000); // ImageBase
    put32(&mut out, SECTION_ALIGN);
    put32(&mut out, FILE_ALIGN as u32);
    for v in [6u16, 0, 0, 0, 6, 0] {
        put16(&mut out, v);
    }
    put32(&mut out, 0); // Win32VersionValue
    put32(&mut out, rva); // SizeOfImage
    put32(&mut out, size_of_headers as u32);
    put32(&mut out, 0); // CheckSum
    put16(&mut out, 3); // console
    put16(&mut out, 0x160); // DllCharacteristics
    for v in [0x10_0000u64, 0x1000, 0x10_0000, 0x1000] {
        put64(&mut out, v);
    }
    put32(&mut out, 0); // LoaderFlags
    put32(&mut out, 16); // NumberOfRvaAndSizes
    for i in 0..16 {
        let (rva, size) = match i {
            1 => (idata_rva, import_dir_size),
            13 => (idata_rva + 0x100, delay_dir_size),
            _ => (0, 0),
        };
        put32(&mut out, rva);
        put32(&mut out, size);
    }
    out.extend(table);
    out.resize(size_of_headers, 0);
    out.extend(body);
    out
}

fn payload() -> xtask::package::payload::Payload {
    let mut p = xtask::package::payload::Payload::default();
    p.add(
        "bin/llama-cli".into(),
        b"\x7fELF pretend tool".repeat(20),
        true,
    )
    .unwrap();
    p.add(
        "lib/libggml.so".into(),
        (0..3000u32).map(|i| (i * 7 % 251) as u8).collect(),
        false,
    )
    .unwrap();
    p.add("README.md".into(), b"# hello\n".to_vec(), false)
        .unwrap();
    p.add(
        format!("lib/{}/long-name.txt", "d".repeat(120)),
        b"long".to_vec(),
        false,
    )
    .unwrap();
    p.add("empty".into(), Vec::new(), false).unwrap();
    p
}

/// Zips: the crate's archive writer (deflated), and the same entries stored, with a
/// directory entry.
fn zips(dir: &Path) -> Vec<Vec<u8>> {
    let p = payload();
    let extra = [("manifest.json".to_string(), b"{\"schema\": 1}".to_vec())];
    let written = archive::write_zip(dir, "llama-win", &p, &extra, 1_700_000_000).unwrap();
    let mut stored = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .last_modified_time(wheel::zip_time(1_700_000_000))
        .unix_permissions(0o644);
    stored.add_directory("pkg/", opts).unwrap();
    for (path, e) in &p.files {
        stored.start_file(format!("pkg/{path}"), opts).unwrap();
        stored.write_all(&e.data).unwrap();
    }
    vec![
        fs_err::read(written).unwrap(),
        stored.finish().unwrap().into_inner(),
    ]
}

/// The tar inside the crate's own tar.gz (GNU headers, a long name), and one with
/// links and a pax header, made with the `tar` crate.
fn tars(dir: &Path) -> Vec<Vec<u8>> {
    let written = archive::write(dir, "llama-linux", &payload(), &[], 1_700_000_000).unwrap();
    let mut tar = Vec::new();
    flate2::read::GzDecoder::new(fs_err::File::open(written).unwrap())
        .read_to_end(&mut tar)
        .unwrap();
    let mut b = tar::Builder::new(Vec::new());
    let mut h = tar::Header::new_ustar();
    h.set_entry_type(tar::EntryType::Directory);
    h.set_mode(0o755);
    h.set_size(0);
    b.append_data(&mut h, "pkg/", std::io::empty()).unwrap();
    let mut h = tar::Header::new_ustar();
    h.set_mode(0o644);
    h.set_size(5);
    b.append_pax_extensions([("mtime", b"1700000000.5".as_slice())])
        .unwrap();
    b.append_data(&mut h, "pkg/a.txt", &b"hello"[..]).unwrap();
    let mut h = tar::Header::new_ustar();
    h.set_entry_type(tar::EntryType::Symlink);
    h.set_mode(0o777);
    h.set_size(0);
    b.append_link(&mut h, "pkg/lib.so", "a.txt").unwrap();
    let mut h = tar::Header::new_ustar();
    h.set_entry_type(tar::EntryType::Link);
    h.set_mode(0o644);
    h.set_size(0);
    b.append_link(&mut h, "pkg/b.txt", "pkg/a.txt").unwrap();
    vec![tar, b.into_inner().unwrap()]
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut gz = flate2::GzBuilder::new()
        .mtime(0)
        .write(Vec::new(), flate2::Compression::new(6));
    gz.write_all(data).unwrap();
    gz.finish().unwrap()
}

fn xz(data: &[u8]) -> Vec<u8> {
    liblzma::encode_all(data, 6).unwrap()
}

/// The tar of a Debian package's data.tar.xz: dirs, files, a symlink, a hard link.
fn deb_tar() -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    let dir = |b: &mut tar::Builder<Vec<u8>>, name: &str| {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Directory);
        h.set_mode(0o755);
        h.set_size(0);
        b.append_data(&mut h, name, std::io::empty()).unwrap();
    };
    dir(&mut b, "./");
    dir(&mut b, "./usr/");
    dir(&mut b, "./usr/bin/");
    dir(&mut b, "./usr/lib/");
    let mut h = tar::Header::new_gnu();
    h.set_mode(0o755);
    h.set_size(40);
    b.append_data(&mut h, "./usr/bin/x86_64-linux-gnu-as", &[0x90u8; 40][..])
        .unwrap();
    let mut h = tar::Header::new_gnu();
    h.set_mode(0o644);
    h.set_size(3000);
    let lib: Vec<u8> = (0..3000u32).map(|i| (i * 13 % 253) as u8).collect();
    b.append_data(&mut h, "./usr/lib/libbfd.so.2", &lib[..])
        .unwrap();
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(tar::EntryType::Symlink);
    h.set_mode(0o777);
    h.set_size(0);
    b.append_link(&mut h, "./usr/lib/libbfd.so", "libbfd.so.2")
        .unwrap();
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(tar::EntryType::Link);
    h.set_mode(0o755);
    h.set_size(0);
    b.append_link(&mut h, "./usr/bin/as", "./usr/bin/x86_64-linux-gnu-as")
        .unwrap();
    b.into_inner().unwrap()
}

/// An `ar` archive of `members`, as dpkg-deb writes a .deb.
fn ar(members: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = b"!<arch>\n".to_vec();
    for (name, data) in members {
        out.extend_from_slice(
            format!(
                "{:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
                name,
                1_700_000_000,
                0,
                0,
                100644,
                data.len()
            )
            .as_bytes(),
        );
        out.extend_from_slice(data);
        if data.len() % 2 == 1 {
            out.push(b'\n');
        }
    }
    out
}

fn deb(data_tar_xz: &[u8]) -> Vec<u8> {
    ar(&[
        ("debian-binary", b"2.0\n"),
        ("control.tar.xz", &xz(b"")),
        ("data.tar.xz", data_tar_xz),
    ])
}

/// Limits for the archive readers: small, so that a case cannot unpack much.
fn limits() -> Limits {
    Limits {
        total: 16 << 20,
        entries: 1000,
        ratio: 100,
        ratio_from: 1 << 20,
        header: 64 << 10,
    }
}

// ---------------------------------------------------------------------------------
// The readers, each on one input.

/// Parses the fat binary and decompresses each entry, which may hold the entry's
/// stated size (at most `MAX_ENTRY_SIZE`) on top of [`HEAP`].
fn read_fatbin(data: &[u8]) -> Result<(), TestCaseError> {
    case(
        "cuda::fatbin",
        HEAP + fatbin::MAX_ENTRY_SIZE,
        || match fatbin::parse(data) {
            Ok(entries) => {
                entries
                    .iter()
                    // Every payload decoded (no short cut: each one is exercised).
                    .filter(|e| fatbin::payload(data, e).is_err())
                    .count()
                    == 0
            }
            Err(_) => false,
        },
    )
}

/// Whether the second reader read what the first read, where the first read it.
fn same<T: PartialEq>(first: Option<T>, second: Option<T>) -> bool {
    first.is_none() || first == second
}

/// The device code a reader found, or its error as text: what the two readers compare.
fn entries(d: &anyhow::Result<elf::DeviceCode>) -> Result<Vec<fatbin::FatbinEntry>, String> {
    d.as_ref()
        .map(|d| d.entries.clone())
        .map_err(|e| format!("{e:#}"))
}

fn read_elf(data: &[u8], dir: &Path) -> Result<(), TestCaseError> {
    let path = dir.join("lib.so");
    fs_err::write(&path, data).unwrap();
    let mut differ = None;
    case("binary::elf", HEAP, || {
        let info = elf::parse(data);
        let dc = elf::device_code(data);
        let file = std::fs::File::open(&path).unwrap();
        let info_file = elf::parse_file(&file);
        let dc_file = elf::device_code_file(&file);
        // What the readers of bytes read, the file readers read alike. (Not the other
        // way: through object's ReadCache an empty section is read as empty wherever
        // its offset points, where the readers of bytes refuse an offset past the end.)
        if !same(info.as_ref().ok(), info_file.as_ref().ok())
            || !same(entries(&dc).ok(), entries(&dc_file).ok())
        {
            differ = Some(format!(
                "in memory: {:?}, {:?}; from the file: {:?}, {:?}",
                info.as_ref().map_err(|e| format!("{e:#}")),
                entries(&dc),
                info_file.as_ref().map_err(|e| format!("{e:#}")),
                entries(&dc_file)
            ));
        }
        info.is_ok() && dc.is_ok()
    })?;
    if let Some(d) = differ {
        prop_assert!(
            false,
            "the ELF file readers read other than the readers of bytes: {d}"
        );
    }
    Ok(())
}

fn read_pe(data: &[u8], dir: &Path) -> Result<(), TestCaseError> {
    let path = dir.join("lib.dll");
    fs_err::write(&path, data).unwrap();
    let mut differ = None;
    case("binary::pe", HEAP, || {
        let info = pe::parse(data);
        let dc = pe::device_code(data);
        let _ = pe::exports(data);
        let file = std::fs::File::open(&path).unwrap();
        let dc_file = pe::device_code_file(&file);
        // As for ELF: what the reader of bytes reads, the file reader reads alike.
        if !same(entries(&dc).ok(), entries(&dc_file).ok()) {
            differ = Some(format!(
                "in memory: {:?}; from the file: {:?}",
                entries(&dc),
                entries(&dc_file)
            ));
        }
        info.is_ok() && dc.is_ok()
    })?;
    if let Some(d) = differ {
        prop_assert!(
            false,
            "pe::device_code_file read other than pe::device_code: {d}"
        );
    }
    Ok(())
}

/// Reads every entry to the end (so that the limits are what stops a bomb), keeping
/// nothing.
fn drain(_: &xtask::package::entries::Head, r: &mut dyn Read) -> anyhow::Result<()> {
    std::io::copy(r, &mut std::io::sink())?;
    Ok(())
}

fn read_zip(data: &[u8], dir: &Path) -> Result<(), TestCaseError> {
    let path = dir.join("case.zip");
    fs_err::write(&path, data).unwrap();
    case("package::wheel::stream_entries", HEAP, || {
        wheel::stream_entries(&path, &limits(), drain).is_ok()
    })
}

fn read_tar_gz(data: &[u8], dir: &Path) -> Result<(), TestCaseError> {
    let path = dir.join("case.tar.gz");
    fs_err::write(&path, data).unwrap();
    case("package::archive::stream_entries", HEAP, || {
        archive::stream_entries(&path, &limits(), drain).is_ok()
    })
}

fn read_deb(data: &[u8], dir: &Path, heap: u64) -> Result<(), TestCaseError> {
    let path = dir.join("case.deb");
    fs_err::write(&path, data).unwrap();
    let root = tempfile::tempdir_in(dir).unwrap();
    let dest = root.path().join("root");
    case("provision::unpack::unpack_deb", heap, || {
        xtask::provision::unpack::unpack_deb(&path, &dest).is_ok()
    })
}

/// The characters case folding and Unicode normalisation treat specially (final and
/// capital sigma, sharp s, Kelvin sign, Å and the ring above, dotted and dotless i, the
/// `ǅ` digraph, the `ﬀ` ligature, a Cherokee letter, combining marks, Hangul), and those
/// the per-name rule looks for.
const NAME_CHARS: &[char] = &[
    'a', 'A', 'e', 'E', 'k', 'K', 's', 'S', 'i', 'I', 'c', 'C', 'o', 'O', 'n', 'N', '1', '$', '/',
    '.', ' ', ':', '<', '\\', '\0', '\u{1f}', '\u{e9}', '\u{c9}', '\u{301}', '\u{300}', '\u{3a3}',
    '\u{3c3}', '\u{3c2}', '\u{df}', '\u{1e9e}', '\u{212a}', '\u{c5}', '\u{212b}', '\u{30a}',
    '\u{130}', '\u{131}', '\u{1c5}', '\u{fb00}', '\u{13a0}', '\u{ab70}', '\u{ac00}', '\u{1100}',
    '\u{1161}', '\u{b9}',
];

/// Names: lines of arbitrary bytes (read as lossy UTF-8), or of [`NAME_CHARS`].
fn names_input() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        1 => prop::collection::vec(any::<u8>(), 0..MAX_ARBITRARY),
        3 => prop::collection::vec(
            prop_oneof![
                8 => prop::sample::select(NAME_CHARS),
                1 => Just('\n'),
                1 => any::<char>(),
            ],
            0..400,
        )
        .prop_map(|cs| cs.into_iter().collect::<String>().into_bytes()),
    ]
}

/// `name`'s twins by construction: the same name once normalised and case-folded.
fn twins_of(name: &str) -> Vec<String> {
    use unicode_normalization::UnicodeNormalization;
    let swap = |s: &str| -> String {
        s.chars()
            .map(|c| match c {
                c if c.is_ascii_lowercase() => c.to_ascii_uppercase(),
                c => c.to_ascii_lowercase(),
            })
            .collect()
    };
    vec![
        name.nfc().collect(),
        name.nfd().collect(),
        swap(name),
        swap(&name.nfd().collect::<String>()),
    ]
}

/// The rule for entry names on `data`'s lines: it returns, and each line's twins are
/// caught, as "collides with" the line, exactly when they differ from it.
fn check_names(data: &[u8]) -> Result<(), TestCaseError> {
    let text = String::from_utf8_lossy(data);
    let names: Vec<&str> = text.split('\n').take(64).collect();
    let mut missed = Vec::new();
    case("portable", HEAP, || {
        let all = xtask::portable::problems(names.iter().copied());
        for n in &names {
            for t in twins_of(n) {
                let said = xtask::portable::problems([*n, t.as_str()]);
                let caught = said.iter().any(|p| p.contains("collides with"));
                if caught != (t != *n) {
                    missed.push(format!("{n:?} and {t:?}: {said:?}"));
                }
            }
        }
        all.is_empty()
    })?;
    prop_assert!(missed.is_empty(), "twins judged wrong: {missed:?}");
    Ok(())
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

// ---------------------------------------------------------------------------------
// The valid inputs read as they should: the mutations start from real files.

#[test]
fn the_valid_inputs_are_read() {
    let section = &fatbins()[0];
    let entries = fatbin::parse(section).unwrap();
    let names: Vec<_> = entries.iter().map(|e| e.name()).collect();
    assert_eq!(names, ["sm_120a", "compute_100f", "sm_90"]);
    for e in &entries {
        fatbin::payload(section, e).unwrap();
    }

    let rel = &fatbins()[1];
    let so = elf_file(section, rel);
    let info = elf::parse(&so).unwrap();
    assert_eq!(info.needed, ["libcudart.so.13", "libstdc++.so.6"]);
    assert_eq!(info.soname.as_deref(), Some("libggml-cuda.so"));
    assert_eq!(info.runpath, ["$ORIGIN", "$ORIGIN/../nvidia/cu13/lib"]);
    assert_eq!(
        info.version_needs["libstdc++.so.6"]
            .iter()
            .collect::<Vec<_>>(),
        ["GLIBCXX_3.4.29"]
    );
    assert_eq!(info.cxx_runtime.map(|c| c.library), Some("libstdc++"));
    let dc = elf::device_code(&so).unwrap();
    assert_eq!((dc.entries.len(), dc.relfatbin.len()), (3, 1));
    let dir = tmp();
    let path = dir.path().join("lib.so");
    fs_err::write(&path, &so).unwrap();
    let file = std::fs::File::open(&path).unwrap();
    assert_eq!(elf::parse_file(&file).unwrap(), info);
    assert_eq!(elf::device_code_file(&file).unwrap().entries, dc.entries);

    let dll = pe_file(section, rel);
    let info = pe::parse(&dll).unwrap();
    assert_eq!(info.machine, pe::PeMachine::X86_64);
    assert!(info.dll);
    assert_eq!(
        info.imports,
        ["KERNEL32.dll", "cudart64_13.dll", "nvcuda.dll"]
    );
    let dc = pe::device_code(&dll).unwrap();
    assert_eq!((dc.entries.len(), dc.relfatbin.len()), (3, 1));

    for z in zips(dir.path()) {
        let path = dir.path().join("ok.zip");
        fs_err::write(&path, &z).unwrap();
        let listing = wheel::stream_entries(&path, &limits(), drain).unwrap();
        assert!(listing.names.len() >= 6, "{listing:?}");
    }
    for t in tars(dir.path()) {
        let path = dir.path().join("ok.tar.gz");
        fs_err::write(&path, gzip(&t)).unwrap();
        let mut n = 0;
        archive::stream_entries(&path, &limits(), |h, r| {
            n += 1;
            drain(h, r)
        })
        .unwrap();
        assert!(n >= 4, "{n} entries");
    }
    let path = dir.path().join("ok.deb");
    fs_err::write(&path, deb(&xz(&deb_tar()))).unwrap();
    let dest = dir.path().join("deb-root");
    xtask::provision::unpack::unpack_deb(&path, &dest).unwrap();
    assert!(dest.join("usr/lib/libbfd.so.2").is_file());
    assert!(dest.join("usr/bin/as").is_file());
}

// ---------------------------------------------------------------------------------
// The properties.

#[test]
fn fatbin_arbitrary() {
    fuzz(
        "fatbin_arbitrary",
        arbitrary(&[b"\x50\xed\x55\xba\x01\x00\x10\x00"]),
        |b| read_fatbin(&b),
    );
}

#[test]
fn fatbin_mutated() {
    fuzz("fatbin_mutated", mutated(fatbins()), |b| read_fatbin(&b));
}

#[test]
fn elf_arbitrary() {
    let dir = tmp();
    fuzz(
        "elf_arbitrary",
        arbitrary(&[b"\x7fELF\x02\x01\x01\x00"]),
        |b| read_elf(&b, dir.path()),
    );
}

#[test]
fn elf_mutated() {
    let dir = tmp();
    let f = fatbins();
    let seeds = vec![
        elf_file(&f[0], &f[1]),
        elf_file(&f[2], &[]),
        elf_file(&[], &[]),
    ];
    fuzz("elf_mutated", mutated(seeds), |b| read_elf(&b, dir.path()));
}

#[test]
fn pe_arbitrary() {
    let dir = tmp();
    let mut dos = b"MZ".to_vec();
    dos.resize(0x3c, 0);
    dos.extend_from_slice(&[0x40, 0, 0, 0, b'P', b'E', 0, 0, 0x64, 0x86]);
    fuzz("pe_arbitrary", arbitrary(&[b"MZ", &dos]), |b| {
        read_pe(&b, dir.path())
    });
}

#[test]
fn pe_mutated() {
    let dir = tmp();
    let f = fatbins();
    let seeds = vec![pe_file(&f[0], &f[1]), pe_file(&f[2], &[])];
    fuzz("pe_mutated", mutated(seeds), |b| read_pe(&b, dir.path()));
}

#[test]
fn zip_arbitrary() {
    let dir = tmp();
    fuzz(
        "zip_arbitrary",
        arbitrary(&[b"PK\x03\x04", b"PK\x05\x06"]),
        |b| read_zip(&b, dir.path()),
    );
}

#[test]
fn zip_mutated() {
    let dir = tmp();
    let seeds = zips(dir.path());
    fuzz("zip_mutated", mutated(seeds), |b| read_zip(&b, dir.path()));
}

#[test]
fn tar_gz_arbitrary() {
    let dir = tmp();
    fuzz(
        "tar_gz_arbitrary",
        arbitrary(&[b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"]),
        |b| read_tar_gz(&b, dir.path()),
    );
    // Arbitrary bytes as the tar inside a valid gzip stream.
    fuzz("tar_gz_arbitrary_tar", arbitrary(&[b"ustar"]), |b| {
        read_tar_gz(&gzip(&b), dir.path())
    });
}

#[test]
fn tar_gz_mutated() {
    let dir = tmp();
    let tars = tars(dir.path());
    let gz: Vec<Vec<u8>> = tars.iter().map(|t| gzip(t)).collect();
    fuzz("tar_gz_mutated", mutated(gz), |b| {
        read_tar_gz(&b, dir.path())
    });
    // The tar mutated, then compressed: the mutations reach the tar layout.
    fuzz("tar_gz_mutated_tar", mutated(tars), |b| {
        read_tar_gz(&gzip(&b), dir.path())
    });
}

#[test]
fn deb_arbitrary() {
    let dir = tmp();
    fuzz("deb_arbitrary", arbitrary(&[b"!<arch>\n"]), |b| {
        read_deb(&b, dir.path(), HEAP)
    });
}

#[test]
fn deb_mutated() {
    let dir = tmp();
    let tar = deb_tar();
    fuzz("deb_mutated", mutated(vec![deb(&xz(&tar))]), |b| {
        read_deb(&b, dir.path(), HEAP)
    });
    // The tar mutated, then packed: the mutations reach the tar unpacking.
    fuzz("deb_mutated_tar", mutated(vec![tar]), |b| {
        read_deb(&deb(&xz(&b)), dir.path(), HEAP)
    });
    let bomb =
        fs_err::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/deb/bomb.deb"))
            .unwrap();
    // `unpack_deb` stops data.tar.xz at 64 times its packed size as it decodes, so
    // mutations of the bomb (10 kB, 64 MiB of zeros) are held to the same heap as every
    // other case. The decoder's own memory (liblzma, C: not counted here) is bounded by
    // its memory limit instead.
    fuzz("deb_mutated_bomb", mutated(vec![bomb]), |b| {
        read_deb(&b, dir.path(), HEAP)
    });
}

#[test]
fn names_arbitrary() {
    fuzz("names_arbitrary", names_input(), |b| check_names(&b));
}

/// A wheel whose `.dist-info` texts (WHEEL, METADATA, entry_points.txt: the input split at
/// 0xff bytes) are mutated, with a RECORD that vouches for them: `verify` reads them to
/// the end and answers (pass or problems), never an error, a panic or a hang.
fn check_dist_info(data: &[u8], dir: &Path) -> Result<(), TestCaseError> {
    let mut parts = data.split(|b| *b == 0xff);
    let (wheel_file, metadata, entry_points) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
        parts.next(),
    );
    let di = "llama_cpp_python-0.3.36+cpu.dist-info";
    let mut files: Vec<(String, &[u8])> = vec![
        ("llama_cpp/__init__.py".into(), b"x = 1\n"),
        (format!("{di}/WHEEL"), wheel_file),
        (format!("{di}/METADATA"), metadata),
    ];
    if let Some(ep) = entry_points {
        files.push((format!("{di}/entry_points.txt"), ep));
    }
    let path = dir.join("llama_cpp_python-0.3.36+cpu-py3-none-linux_x86_64.whl");
    let mut z = zip::ZipWriter::new(fs_err::File::create(&path).unwrap());
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .unix_permissions(0o644);
    let mut record = String::new();
    for (name, bytes) in &files {
        z.start_file(name.as_str(), opts).unwrap();
        z.write_all(bytes).unwrap();
        record.push_str(&format!(
            "{name},{},{}\n",
            wheel::record_hash(bytes),
            bytes.len()
        ));
    }
    record.push_str(&format!("{di}/RECORD,,\n"));
    z.start_file(format!("{di}/RECORD"), opts).unwrap();
    z.write_all(record.as_bytes()).unwrap();
    z.finish().unwrap();
    let recipes = crate::common::repo().join("recipes");
    let co = xtask::verify::Checkout {
        recipes: &recipes,
        cache: Path::new("/nonexistent/llama-forge-fuzz-cache"),
        source: None,
    };
    case("verify::verify (dist-info texts)", HEAP, || {
        xtask::verify::verify(&path, &co).is_ok()
    })
}

#[test]
fn dist_info_texts_mutated() {
    let dir = tempfile::tempdir().unwrap();
    let seed = [
        &b"Wheel-Version: 1.0\nGenerator: llama-forge 0.1.0\nRoot-Is-Purelib: false\nTag: py3-none-linux_x86_64\n"[..],
        b"\xff",
        b"Metadata-Version: 2.1\nName: llama_cpp_python\nVersion: 0.3.36+cpu\nRequires-Dist: numpy>=1.20.0\n\nbody\n",
        b"\xff",
        b"[console_scripts]\nllama = llama_cpp.cli:main\npip3.12 = evil:main\n\n[gui_scripts]\nPythonW = evil:main\n",
    ]
    .concat();
    fuzz("dist_info_texts_mutated", mutated(vec![seed]), |b| {
        check_dist_info(&b, dir.path())
    });
}
