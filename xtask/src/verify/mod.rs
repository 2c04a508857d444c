//! `verify`: re-checks an artifact against its RECORD and manifests.
//! Every problem is one line; none means the artifact is sound.
//!
//! Anyone's artifact gets the generic checks: the zip's or tar's layout, the sizes, the
//! entries' names and types, a wheel's RECORD, WHEEL and tags (PEP 425, 427), and that
//! its binaries are code for the CPU its platform tag names. The rules of this tool's own
//! artifacts (RECORD last, no directory entries, one top dir, the manifests, RUNPATH, no
//! own C++ runtime, imports, build paths, device code) apply to an artifact that says it
//! is one: its manifest inside or beside it, or a build of this tool's just made
//! ([`verify_with`]). Without a manifest, the report says so in a note.
//!
//! The artifact is read once, as a stream, within [`Limits::ARTIFACT`]: each
//! entry is hashed as it goes by; ELF files are copied into a temp dir, where
//! their headers are parsed, build paths searched for and device code read; only
//! RECORD and the manifest are kept in memory. Memory stays at a few MiB
//! whatever the artifact holds, but for a GPU library's `.nv_fatbin` section, which
//! the gate reads whole (about 20 MB for libggml-cuda at sm_120a).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::Result;
use sha2::{Digest, Sha256};

use crate::binary::elf::{self, ElfInfo};
use crate::binary::pe::{self, PeInfo};
use crate::digest::Sha256Hex;
use crate::manifest::{self, FileEntry, Manifest};
use crate::package::entries::{EntryKind, Head, Limits, Refused};
use crate::package::manylinux::Policies;
use crate::platform::BinaryFormat;
use crate::tags::{PlatformTag, WheelFilename};

mod archive;
mod binaries;
mod manifests;
mod paths;
mod recipe;
#[cfg(test)]
mod tests;
mod wheel;

use archive::*;
use binaries::*;
use manifests::*;
pub use paths::build_path_needles;
use paths::*;
pub use recipe::Checkout;
use wheel::*;

/// What `verify` found.
#[derive(Debug, Default)]
pub struct Report {
    pub problems: Vec<String>,
    /// Checks that could not run, and why.
    pub notes: Vec<String>,
    /// What the checks could not vouch for, though nothing failed.
    pub warnings: Vec<String>,
    pub checked_files: usize,
    /// Which of `problems` broke a rule of this tool's own artifacts only: they stand
    /// once the artifact turns out to be one ([`Report::settle`]), and go otherwise.
    ours_only: Vec<usize>,
}

impl Report {
    /// A problem for any artifact: the wheel spec, the zip or tar format, safety.
    fn problem(&mut self, p: impl Into<String>) {
        self.problems.push(p.into());
    }

    /// A problem under a rule of this tool's own artifacts only.
    fn ours(&mut self, p: impl Into<String>) {
        self.ours_only.push(self.problems.len());
        self.problems.push(p.into());
    }

    /// Keeps the problems of [`Report::ours`] when the artifact is one of this tool's
    /// (`ours`), and drops them when it is anyone else's.
    fn settle(&mut self, ours: bool) {
        let only = std::mem::take(&mut self.ours_only);
        if !ours {
            let mut i = 0;
            self.problems.retain(|_| {
                i += 1;
                !only.contains(&(i - 1))
            });
        }
    }
}

/// Any artifact: one of this tool's (its manifest inside or beside it) gets every rule,
/// anyone else's the generic ones and a note that says so. A GPU artifact's device code
/// is checked again with the build's gate (the fat binary reader: no CUDA toolkit needed).
/// A wheel of ours is also judged against `co`'s recipe and packager (see [`recipe`]).
pub fn verify(path: &Path, co: &Checkout) -> Result<Report> {
    verify_within(path, None, co, &Limits::ARTIFACT)
}

/// An artifact a build of this tool just made: every rule applies (a missing manifest is a
/// problem, not a sign of anyone else's artifact), and `build_paths` (the directories of
/// the build that just ran: work dir, checkout) are flagged wherever they appear inside a binary.
pub fn verify_with(path: &Path, build_paths: &[String], co: &Checkout) -> Result<Report> {
    verify_within(path, Some(build_paths), co, &Limits::ARTIFACT)
}

/// [`verify`] (`build_paths` None) or [`verify_with`], within `limits` (what the
/// artifact may unpack to).
pub fn verify_within(
    path: &Path,
    build_paths: Option<&[String]>,
    co: &Checkout,
    limits: &Limits,
) -> Result<Report> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    let mut r = Report::default();
    let copies = tempfile::Builder::new()
        .prefix("llama-forge-verify-")
        .tempdir()?;
    let mut col = Collector::new(copies.path());
    let read = if name.ends_with(".whl") {
        verify_wheel(path, &name, limits, &mut col, &mut r)
    } else if let Some(stem) = name.strip_suffix(".tar.gz") {
        verify_archive(path, stem, false, limits, &mut col, &mut r)
    } else if let Some(stem) = name.strip_suffix(".zip") {
        verify_archive(path, stem, true, limits, &mut col, &mut r)
    } else {
        r.problem(format!(
            "{name}: not a wheel (.whl) or archive (.tar.gz, .zip)"
        ));
        return Ok(r);
    };
    let Found {
        mut files,
        embedded,
        claims,
        theirs,
    } = match read {
        Ok(read) => read,
        Err(e) => match e.downcast_ref::<Refused>() {
            Some(refused) => {
                r.problem(refused.to_string());
                return Ok(r);
            }
            None => return Err(e),
        },
    };
    let beside = path.with_file_name(format!("{name}.manifest.json"));
    let ours = build_paths.is_some() || claims || fs_err::symlink_metadata(&beside).is_ok();
    r.settle(ours);
    if !ours {
        files.extend(theirs);
        r.checked_files = files.len();
        check_foreign_binaries(&files, &name, &mut r);
        let inside = if name.ends_with(".whl") {
            format!(".dist-info/{}", manifest::WHEEL_NAME)
        } else {
            manifest::ARCHIVE_NAME.to_string()
        };
        r.notes.push(format!(
            "not a llama-forge artifact (no {inside} inside it, no {} beside it): only the generic checks ran ({})",
            beside.display(),
            if name.ends_with(".whl") {
                "the zip's layout, entry names and types, sizes, RECORD's hashes, WHEEL and the tags, the binaries' CPU against the platform tag"
            } else {
                "the archive's layout, entry names and types, sizes"
            }
        ));
        return Ok(r);
    }
    r.checked_files = files.len();
    let shared = shared_cxx_runtime(&name, embedded.as_ref());
    check_payload(&files, shared.as_deref(), &mut r);
    check_windows_binaries(&files, embedded.as_ref(), &mut r);
    check_elf_machines(&files, embedded.as_ref(), &name, &mut r);
    match embedded {
        Some(m) => {
            let extra = build_paths.unwrap_or_default();
            check_build_paths(&files, &build_path_needles(&m, extra), &mut r)?;
            check_manifests(path, &name, &files, &m, &mut r)?;
            if let Some((wheel, dist_info)) = wheel_of(&name) {
                // The copy beside it, where it is this one's, also says where a local
                // source lay (the copy inside leaves that out).
                let located = crate::manifest::Manifest::read(&beside)
                    .ok()
                    .filter(|ext| ext.embedded() == m);
                let m = located.as_ref().unwrap_or(&m);
                recipe::check_wheel_against_recipe(m, &wheel, &dist_info, &files, co, &mut r);
            }
            if m.plan.cuda.is_some() {
                check_cuda_code(&files, &m, &mut r)?;
            }
        }
        None => r.problem("no manifest inside the artifact"),
    }
    Ok(r)
}

/// A wheel's parsed file name and its `.dist-info` dir, where `name` is one of ours.
fn wheel_of(name: &str) -> Option<(WheelFilename, String)> {
    let w = name.parse::<WheelFilename>().ok()?;
    let d = w.dist_info_dir();
    Some((w, d))
}

/// What reading an artifact found.
struct Found {
    /// The files this tool's rules judge: a wheel's less RECORD and the manifest; an
    /// archive's under its top dir, less the manifest, by their path there.
    files: Files,
    /// The manifest inside, where it reads as one.
    embedded: Option<Manifest>,
    /// Whether it says it is one of this tool's artifacts: a file where this tool puts
    /// its manifest (`.dist-info/llama-forge.json`; an archive's `manifest.json` that
    /// reads as one, or names a `schema`), readable or not.
    claims: bool,
    /// More files of anyone else's artifact (an archive's outside its top dir, by their
    /// whole name): counted and checked only when it is not one of this tool's.
    theirs: Files,
}

/// Re-runs the build's gate on every library with device code (read by the fat
/// binary reader, as the build's gate reads it): ELF libraries and PE DLLs, less the
/// CUDA runtime a `--bundle-cuda-runtime` artifact carries (NVIDIA's code for every GPU).
fn check_cuda_code(files: &Files, m: &Manifest, r: &mut Report) -> Result<()> {
    let c = m.plan.cuda.as_ref().expect("checked by caller");
    let expected = &c.architectures;
    let mut libs = Vec::new();
    for (p, seen) in files {
        let base = p.rsplit('/').next().unwrap_or(p);
        let library = (seen.elf().is_some() && p.contains(".so"))
            || (seen.pe().is_some() && base.to_ascii_lowercase().ends_with(".dll"));
        if let (true, false, Some(copy)) =
            (library, c.bundle.iter().any(|b| b == base), seen.copy())
        {
            libs.push((p.clone(), copy.to_path_buf()));
        }
    }
    match crate::package::cuda_gate::gate(libs.iter().map(|(n, p)| (n, p.as_path())), expected) {
        Ok(found) => {
            let recorded: BTreeMap<String, Vec<String>> = m
                .cuda_code
                .iter()
                .map(|(k, v)| (k.rsplit('/').next().unwrap_or(k).to_string(), v.clone()))
                .collect();
            let seen: BTreeMap<String, Vec<String>> = found
                .into_iter()
                .map(|(k, v)| (k.rsplit('/').next().unwrap_or(&k).to_string(), v))
                .collect();
            if recorded != seen {
                r.problem(format!("GPU code differs from the manifest: found {seen:?}, manifest says {recorded:?}"));
            }
        }
        Err(e) => r.problem(format!("{e:#}")),
    }
    Ok(())
}

/// What is kept of one file: its size and hash, its copy when it is an ELF or
/// PE file, its bytes when it is RECORD or the manifest.
#[derive(Debug)]
struct Seen {
    size: u64,
    digest: [u8; 32],
    binary: Option<BinaryCopy>,
    /// The bytes, for the files read whole ([`Collector::take`]'s `keep`);
    /// None when over [`KEEP_MAX`].
    text: Option<Vec<u8>>,
}

impl Seen {
    fn sha256(&self) -> Sha256Hex {
        hex::encode(self.digest).parse().expect("hex digest")
    }

    /// An ELF file's facts (or why they could not be read).
    fn elf(&self) -> Option<&Result<ElfInfo, anyhow::Error>> {
        match &self.binary.as_ref()?.info {
            BinaryInfo::Elf(i) => Some(i),
            BinaryInfo::Pe(_) => None,
        }
    }

    /// A PE file's facts (or why they could not be read).
    fn pe(&self) -> Option<&Result<PeInfo, anyhow::Error>> {
        match &self.binary.as_ref()?.info {
            BinaryInfo::Pe(i) => Some(i),
            BinaryInfo::Elf(_) => None,
        }
    }

    /// The copy of a binary (ELF or PE), on disk.
    fn copy(&self) -> Option<&Path> {
        self.binary.as_ref().map(|b| b.copy.as_path())
    }
}

#[derive(Debug)]
struct BinaryCopy {
    copy: PathBuf,
    info: BinaryInfo,
}

/// A binary's facts by format; the parse error is shown with its causes (`{:#}`).
#[derive(Debug)]
enum BinaryInfo {
    Elf(Result<ElfInfo, anyhow::Error>),
    Pe(Result<PeInfo, anyhow::Error>),
}

/// The files, by path inside the artifact (archives: below the top dir).
type Files = BTreeMap<String, Seen>;

/// The most of a file kept in memory (RECORD, the manifest: ours are well under 1 MiB).
const KEEP_MAX: u64 = 16 << 20;

/// Reads each file once: hashes it, and copies ELF and PE files into `dir`.
struct Collector {
    dir: PathBuf,
    copies: usize,
}

impl Collector {
    fn new(dir: &Path) -> Collector {
        Collector {
            dir: dir.to_path_buf(),
            copies: 0,
        }
    }

    /// Reads `data` to the end; `keep`: also keep its bytes (up to [`KEEP_MAX`]).
    fn take(&mut self, name: &str, keep: bool, data: &mut dyn Read) -> Result<Seen> {
        let mut buf = vec![0u8; 256 << 10];
        // The first bytes say whether it is an ELF or PE file.
        let mut n = 0;
        while n < 4 {
            match data.read(&mut buf[n..4])? {
                0 => break,
                got => n += got,
            }
        }
        let format = if elf::is_elf(&buf[..n]) {
            Some(BinaryFormat::Elf)
        } else if pe::is_pe(&buf[..n]) {
            Some(BinaryFormat::Pe)
        } else {
            None
        };
        let mut copy = match format.is_some() {
            true => {
                self.copies += 1;
                let base: String = name
                    .rsplit('/')
                    .next()
                    .unwrap_or_default()
                    .chars()
                    .take(100)
                    .map(|c| {
                        if c.is_ascii_alphanumeric() || "._+-".contains(c) {
                            c
                        } else {
                            '_'
                        }
                    })
                    .collect();
                let path = self.dir.join(format!("{}-{base}", self.copies));
                Some((std::io::BufWriter::new(fs_err::File::create(&path)?), path))
            }
            false => None,
        };
        let (mut hasher, mut size, mut text) = (Sha256::new(), 0u64, keep.then(Vec::new));
        while n > 0 {
            let chunk = &buf[..n];
            hasher.update(chunk);
            size += n as u64;
            if let Some((w, _)) = &mut copy {
                w.write_all(chunk)?;
            }
            if let Some(t) = &mut text {
                if size <= KEEP_MAX {
                    t.extend_from_slice(chunk);
                } else {
                    text = None;
                }
            }
            n = data.read(&mut buf)?;
        }
        let binary = match (copy, format) {
            (Some((w, path)), Some(format)) => {
                // A throwaway copy to parse: flushed, not written to the disk.
                drop(w.into_inner().map_err(|e| e.into_error())?);
                let info = match format {
                    BinaryFormat::Elf => {
                        BinaryInfo::Elf(elf::parse_file(fs_err::File::open(&path)?.file()))
                    }
                    BinaryFormat::Pe => BinaryInfo::Pe(pe::read(&path)),
                };
                Some(BinaryCopy { copy: path, info })
            }
            _ => None,
        };
        Ok(Seen {
            size,
            digest: hasher.finalize().into(),
            binary,
            text,
        })
    }
}

/// Why an entry's name is not a plain relative path, if it is not one.
fn bad_name(head: &Head) -> Option<&'static str> {
    let n = head.name.as_str();
    let body = if head.kind == EntryKind::Dir {
        n.strip_suffix('/').unwrap_or(n)
    } else {
        n
    };
    if !head.utf8 {
        Some("its name is not UTF-8")
    } else {
        crate::relative_path_problem(body)
    }
}

/// An entry's name as a message shows it: quoted and escaped when it holds control characters.
fn shown(name: &str) -> String {
    if name.chars().any(char::is_control) {
        format!("{name:?}")
    } else {
        name.to_string()
    }
}

/// An entry's mode and owner. Any tar: no setuid, setgid or sticky bit, and nothing group
/// or others may write (`sudo tar x` keeps modes: a setuid-root program, a library anyone
/// can change; Python's tarfile data filter clears the same bits). pip and unzip keep
/// none of these bits from a zip, so there only our own rule holds. Ours, tar and zip, as
/// the writer writes them: files 0644 or 0755, dirs 0755, owned by uid 0 and gid 0.
fn check_mode(head: &Head, tar: bool, r: &mut Report) {
    let bits = head.mode & 0o7777;
    if head.mode == 0 || head.kind == EntryKind::Symlink {
        // No unix mode (a zip made on Windows), or a link's (ignored by every extractor).
        return;
    }
    let name = shown(&head.name);
    let problem = |r: &mut Report, p: String| if tar { r.problem(p) } else { r.ours(p) };
    if bits & 0o7000 != 0 {
        problem(r, format!(
            "{name}: mode {bits:04o} has the setuid, setgid or sticky bit: unpacked as root it would run as its owner; an artifact's files never need it"
        ));
    } else if bits & 0o022 != 0 {
        problem(
            r,
            format!("{name}: mode {bits:04o}: group or other users could change it once unpacked"),
        );
    }
    let want: &[u32] = match head.kind {
        EntryKind::Dir => &[0o755],
        _ => &[0o644, 0o755],
    };
    if !want.contains(&bits) {
        r.ours(format!(
            "{name}: mode {bits:04o}, where the writer writes {}",
            want.iter()
                .map(|m| format!("{m:04o}"))
                .collect::<Vec<_>>()
                .join(" or ")
        ));
    }
    if let Some((uid, gid)) = head.owner.filter(|o| *o != (0, 0)) {
        r.ours(format!(
            "{name}: owned by uid {uid}, gid {gid}, where the writer writes 0 and 0: `sudo tar x` would give the files to that user"
        ));
    }
}

/// An entry's name: a plain relative path ([`bad_name`]), and one file on every OS,
/// alone and with the names before it in `names` ([`crate::portable`]): for any
/// artifact of any target, as any may be unpacked onto Windows or macOS.
fn check_name(head: &Head, names: &mut crate::portable::Names, r: &mut Report) {
    if let Some(why) = bad_name(head) {
        r.problem(format!(
            "{}: {why}: an entry must be a plain relative path",
            shown(&head.name)
        ));
        return;
    }
    let (body, dir) = match head.kind {
        EntryKind::Dir => (head.name.trim_end_matches('/'), true),
        _ => (head.name.as_str(), false),
    };
    let mut found: Vec<_> = crate::portable::name_problem(body).into_iter().collect();
    found.extend(if dir {
        names.dir(body)
    } else {
        names.file(body)
    });
    for why in found {
        r.problem(format!(
            "{}: {why}: a name must be one file on every OS",
            shown(&head.name)
        ));
    }
}
