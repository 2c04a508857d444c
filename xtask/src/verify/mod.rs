//! `verify`: re-checks an artifact against its RECORD and manifests.
//! Every problem is one line; none means the artifact is sound.
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
#[cfg(test)]
mod tests;
mod wheel;

use archive::*;
use binaries::*;
use manifests::*;
pub use paths::build_path_needles;
use paths::*;
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
}

impl Report {
    fn problem(&mut self, p: impl Into<String>) {
        self.problems.push(p.into());
    }
}

/// A GPU artifact's device code is checked again with the build's gate (the fat
/// binary reader: no CUDA toolkit needed).
pub fn verify(path: &Path) -> Result<Report> {
    verify_with(path, &[])
}

/// [`verify`], also flagging `build_paths` (the directories of the build that
/// just ran: work dir, checkout) wherever they appear inside a binary.
pub fn verify_with(path: &Path, build_paths: &[String]) -> Result<Report> {
    verify_within(path, build_paths, &Limits::ARTIFACT)
}

/// [`verify_with`] within `limits` (what the artifact may unpack to).
pub fn verify_within(path: &Path, build_paths: &[String], limits: &Limits) -> Result<Report> {
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
    let (files, embedded) = match read {
        Ok(read) => read,
        Err(e) => match e.downcast_ref::<Refused>() {
            Some(refused) => {
                r.problem(refused.to_string());
                return Ok(r);
            }
            None => return Err(e),
        },
    };
    r.checked_files = files.len();
    let shared = shared_cxx_runtime(&name, embedded.as_ref());
    check_payload(&files, shared.as_deref(), &mut r);
    check_windows_binaries(&files, embedded.as_ref(), &mut r);
    check_elf_machines(&files, embedded.as_ref(), &name, &mut r);
    match embedded {
        Some(m) => {
            check_build_paths(&files, &build_path_needles(&m, build_paths), &mut r)?;
            check_manifests(path, &name, &files, &m, &mut r)?;
            if m.plan.cuda.is_some() {
                check_cuda_code(&files, &m, &mut r)?;
            }
        }
        None => r.problem("no manifest inside the artifact"),
    }
    Ok(r)
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
                w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
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

fn check_name(head: &Head, r: &mut Report) {
    if let Some(why) = bad_name(head) {
        r.problem(format!(
            "{}: {why}: an entry must be a plain relative path",
            shown(&head.name)
        ));
    }
}
