//! Rebuilding a recorded artifact: compare this machine with the recorded
//! build, rebuild the recorded plan from scratch, and say whether the artifact
//! came out identical, or which files differ and by how much.
//!
//! A manifest is untrusted input: the tools are resolved here (as `build` would),
//! and the paths the manifest records (compilers, CMake, CUDA root, source
//! location) are only compared, never run or opened. The one file read because
//! the manifest names it is the recorded artifact beside it, and its name must
//! be a plain wheel or archive file name.

use crate::report::Log;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

use super::FileDiff;
use crate::detect::Env;
use crate::manifest::Manifest;
use crate::package::entries::{EntryKind, Limits};
use crate::pipeline::prepare;
use crate::plan::Plan;

/// What `reproduce` is asked (the `reproduce` command's options).
#[derive(Debug, Clone)]
pub struct Request {
    /// The manifest: a path, or an http(s) URL.
    pub manifest: String,
    /// Refuse to build when this machine's plan differs from the recorded one.
    pub strict: bool,
    /// The source, when the recorded build was made from a local archive or directory.
    pub source: Option<PathBuf>,
    /// Where the rebuilt artifacts go (`dist/reproduce/` when `None`).
    pub dist: Option<PathBuf>,
    /// The CUDA toolkit root to use (binding).
    pub cuda_path: Option<PathBuf>,
    /// The C++ host compiler (this machine's, as `build` finds it, when `None`).
    pub host_cc: Option<PathBuf>,
}

/// Exit codes: 0 identical, 1 differs (or an error), 2 drift under `--strict`.
pub fn run(a: &Request, env: &Env) -> Result<ExitCode> {
    // The report to stdout, progress and warnings to stderr, as every command.
    let log = Log::stderr();
    let (m, beside) = load(&a.manifest)?;
    let recorded = &m.plan;
    let hash = recorded.hash();
    if hash != m.plan_hash {
        bail!("{}: the recorded plan hashes to {hash}, but plan_hash says {}: the manifest was edited or damaged", a.manifest, m.plan_hash);
    }
    log.out(format_args!(
        "reproducing {} ({} {}, plan {}) from {}",
        m.artifact.filename,
        m.plan.recipe,
        m.plan.version,
        short(&hash),
        a.manifest
    ));
    if let Some(note) = super::tool_note(&m.tool, &crate::manifest::ToolInfo::this()) {
        log.out(format_args!("note: {note}"));
    }
    let dist = a
        .dist
        .clone()
        .unwrap_or_else(|| env.root.join("dist/reproduce"));
    if let Some(dir) = &beside {
        let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        if canon(dir) == canon(&dist) {
            bail!("the rebuild would go where the recorded manifest is ({}) and replace it: give another --dist", dir.display());
        }
    }
    if let Some(src) = &a.source {
        check_source(recorded, src, &log)?;
    }
    let mut args =
        super::build_request(recorded, a.source.clone(), Some(dist), a.cuda_path.clone())?;
    args.host_cc = a.host_cc.clone();
    let here = prepare(&args, env, &log)?.plan;
    let drifts = super::plan_drift(recorded, &here);
    if drifts.is_empty() {
        log.out(format_args!("no drift: plan {hash} identical"));
    } else {
        log.out(format_args!(
            "plan {} (manifest) vs {} (here): {} drift{}",
            short(&hash),
            short(&here.hash()),
            drifts.len(),
            if drifts.len() == 1 { "" } else { "s" }
        ));
        for d in &drifts {
            log.out(format_args!("drift: {d}"));
        }
        if a.strict {
            log.out(format_args!("refusing to build (--strict): this machine does not make the recorded plan (drift above)"));
            return Ok(crate::exit::Exit::CannotCheck.into());
        }
        log.warning(format_args!(
            "building anyway (no --strict): the drift above may make the artifact differ"
        ));
    }

    // A clean rebuild: a build root of its own, and this plan's work dir and unpacked source cleared first,
    // so nothing compiled earlier (by `build`, or another reproduce) is reused.
    let renv = Env {
        build_root: env.build_root.join("reproduce"),
        ..env.clone()
    };
    let work = crate::build::WorkDir::of(&renv, &here);
    work.clear(&log)?;
    let built = crate::pipeline::build_artifacts(&args, &renv, recorded.artifact, &log)?;
    if built.plan_hash != here.hash() {
        log.warning(format_args!(
            "the plan changed while building ({} -> {}): tools changed under it?",
            short(&here.hash()),
            short(&built.plan_hash)
        ));
    }
    let names: Vec<String> = built.artifacts.iter().map(|x| file_name(&x.path)).collect();
    let Some(i) = super::pick_artifact(&m.artifact.filename, &names) else {
        bail!(
            "the rebuild made {}, none of which corresponds to {}",
            names.join(", "),
            m.artifact.filename
        );
    };
    let new = &built.artifacts[i];
    let rebuilt = Manifest::read(&new.manifest_path)?;
    let same_name = names[i] == m.artifact.filename;
    let mut diffs = super::diff_files(&m.files, &rebuilt.files);
    match &m.artifact.sha256 {
        Some(sha) if same_name && *sha == new.sha256 => {
            log.out(format_args!(
                "identical: {} sha256 {}",
                new.path.display(),
                new.sha256
            ));
            return Ok(ExitCode::SUCCESS);
        }
        None if same_name && diffs.is_empty() => {
            log.out(format_args!("identical: {} sha256 {} (every file matches; the manifest records no artifact sha256 to compare)", new.path.display(), new.sha256));
            return Ok(ExitCode::SUCCESS);
        }
        _ => {}
    }
    log.out(format_args!("differs: {}", new.path.display()));
    if !same_name {
        log.out(format_args!(
            "  name: {} (manifest) vs {} (rebuilt)",
            m.artifact.filename, names[i]
        ));
    }
    let recorded_sha = m
        .artifact
        .sha256
        .as_ref()
        .map(|s| s.to_string())
        .unwrap_or_else(|| "not recorded".into());
    log.out(format_args!(
        "  sha256: {recorded_sha} (manifest) vs {} (rebuilt)",
        new.sha256
    ));
    // A regular file only: a symlink beside the manifest is not followed.
    let theirs = beside
        .map(|d| d.join(&m.artifact.filename))
        .filter(|p| fs_err::symlink_metadata(p).is_ok_and(|md| md.file_type().is_file()));
    let compared = match &theirs {
        Some(p) => byte_counts(p, &m, &new.path, &mut diffs, &log)?,
        None => false,
    };
    if diffs.is_empty() {
        log.out(format_args!("  every file matches the manifest's list: the difference is in the container or in the manifest inside it"));
    } else {
        log.out(format_args!(
            "  {} file{} differ:",
            diffs.len(),
            if diffs.len() == 1 { "" } else { "s" }
        ));
        for line in super::table(&diffs).lines() {
            log.out(format_args!("    {line}"));
        }
    }
    if !compared {
        log.out(format_args!("  (differing bytes are counted when the recorded artifact, {}, is beside the manifest)", m.artifact.filename));
    }
    Ok(ExitCode::from(1))
}

fn short(h: &crate::digest::Sha256Hex) -> &str {
    &h.as_str()[..16]
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The manifest, and the dir it came from (where the recorded artifact may sit).
fn load(arg: &str) -> Result<(Manifest, Option<PathBuf>)> {
    if arg.starts_with("http://") || arg.starts_with("https://") {
        crate::provision::fetch::refuse_offline(&format!(
            "the manifest {arg} is not downloaded: give a local copy"
        ))?;
        let max = crate::manifest::MAX_BYTES;
        let resp = crate::provision::http::get(arg, None, Some(max))
            .with_context(|| format!("cannot download {arg}"))?;
        let mut data = Vec::new();
        resp.take(max + 1)
            .read_to_end(&mut data)
            .with_context(|| format!("download of {arg} broke off"))?;
        if data.len() as u64 > max {
            bail!(
                "{arg} serves more than {} MiB, the most a manifest may hold (a real one is well under 1 MiB): it is not a manifest of this tool, and the download was stopped. Give the URL of the `<artifact>.manifest.json` published with the artifact",
                max >> 20
            );
        }
        let m = Manifest::parse(&data)
            .with_context(|| format!("{arg} is not a manifest this tool can read"))?;
        super::check_artifact_name(&m.artifact.filename)
            .with_context(|| format!("refusing the manifest {arg}"))?;
        return Ok((m, None));
    }
    let p = Path::new(arg);
    if [".whl", ".tar.gz", ".zip"].iter().any(|x| arg.ends_with(x)) && p.is_file() {
        bail!("{arg} is an artifact: give its manifest, {arg}.manifest.json");
    }
    let m = Manifest::read(p)?;
    super::check_artifact_name(&m.artifact.filename)
        .with_context(|| format!("refusing the manifest {arg}"))?;
    Ok((
        m,
        p.parent().map(|d| {
            if d.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                d.to_path_buf()
            }
        }),
    ))
}

/// A local archive must be the one recorded (same sha256); a directory cannot be checked.
fn check_source(recorded: &Plan, src: &Path, log: &Log) -> Result<()> {
    let want = recorded.source.sha256.as_ref();
    match (want, src.is_file(), src.is_dir()) {
        (Some(want), true, _) => {
            let got = crate::digest::sha256_file(src)?;
            if &got != want {
                bail!("--source {} has sha256 {got}, but the recorded source ({}) has {want}: not the same source", src.display(), recorded.source.location);
            }
        }
        (Some(want), false, true) => {
            bail!("--source {} is a directory, but the recorded source was an archive ({}, sha256 {want}): give that archive", src.display(), recorded.source.location)
        }
        (None, _, true) => match &recorded.source.tree_sha256 {
            Some(want) => {
                let got = crate::provision::tree::digest(src, crate::provision::tree::Scope::Source)?;
                if &got != want {
                    bail!(
                        "--source {} has tree sha256 {got}, but the recorded source dir ({}) had {want}: not the same tree (.git, __pycache__ and CMake build dirs are left out of both)",
                        src.display(),
                        recorded.source.location
                    );
                }
            }
            None => log.line(format_args!(
                "note: the recorded source was a directory ({}) whose contents the manifest does not hash (an older manifest), so only the rebuilt files can tell whether {} holds the same",
                recorded.source.location,
                src.display()
            )),
        },
        (_, false, false) => match fs_err::metadata(src) {
            // A FIFO, a device, a socket (or a link to one): refused by name.
            Ok(_) => {
                crate::manifest::open_regular(src).context("--source")?;
                bail!("--source {}: not a file or a directory", src.display())
            }
            Err(_) => bail!("--source {}: no such file or directory", src.display()),
        },
        (None, true, _) => {}
    }
    Ok(())
}

/// Hands each file of a wheel (every entry) or an archive (its regular files, their
/// paths without the top dir) to `visit` in stored order, as a stream read within
/// [`Limits::ARTIFACT`] by the bounded readers: nothing is held whole.
fn each_file(p: &Path, mut visit: impl FnMut(&str, &mut dyn Read) -> Result<()>) -> Result<()> {
    let limits = Limits::ARTIFACT;
    if p.to_string_lossy().ends_with(".whl") {
        crate::package::wheel::stream_entries(p, &limits, |head, data| visit(&head.name, data))?;
    } else {
        crate::package::archive::stream_entries(p, &limits, |head, data| {
            if head.kind == EntryKind::File {
                let rest = head.name.split_once('/').map_or("", |(_, rest)| rest);
                visit(rest, data)?;
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// One file of an artifact: its size and sha256.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Sum {
    size: u64,
    sha256: [u8; 32],
}

/// Each file's path, size and sha256, in stored order, streamed.
fn summaries(p: &Path) -> Result<Vec<(String, Sum)>> {
    use sha2::Digest;
    let mut out = Vec::new();
    each_file(p, |name, data| {
        let mut h = digest_io::IoWrapper(sha2::Sha256::new());
        let size = std::io::copy(data, &mut h)?;
        let h = h.0;
        out.push((
            name.to_string(),
            Sum {
                size,
                sha256: h.finalize().into(),
            },
        ));
        Ok(())
    })?;
    Ok(out)
}

/// Path -> index of its (last) file in `sums`, as the whole-entry maps had it.
fn by_path(sums: &[(String, Sum)]) -> BTreeMap<&str, usize> {
    sums.iter()
        .enumerate()
        .map(|(i, (p, _))| (p.as_str(), i))
        .collect()
}

/// With the recorded artifact at hand: counts the differing bytes of each
/// differing file, and adds the entries the manifest does not list (the
/// manifest inside the artifact, RECORD) when they differ. False when the file
/// beside the manifest is not the recorded artifact.
///
/// Both artifacts are streamed, never held: first each file's size and sha256,
/// then, for the files that differ in both, the two entries side by side
/// ([`count_pairs`]).
fn byte_counts(
    theirs: &Path,
    m: &Manifest,
    ours: &Path,
    diffs: &mut Vec<FileDiff>,
    log: &Log,
) -> Result<bool> {
    let sha = crate::digest::sha256_file(theirs)?;
    if m.artifact.sha256.as_ref().is_some_and(|want| *want != sha) {
        log.out(format_args!("  note: {} beside the manifest has sha256 {sha}, not the recorded one: not compared byte by byte", theirs.display()));
        return Ok(false);
    }
    let (a, b) = (summaries(theirs)?, summaries(ours)?);
    let (ia, ib) = (by_path(&a), by_path(&b));
    // (index in theirs, index in ours) of the files to count byte by byte.
    let mut wanted: Vec<(usize, usize)> = Vec::new();
    for d in diffs.iter_mut() {
        if let (Some(&i), Some(&j)) = (ia.get(d.path.as_str()), ib.get(d.path.as_str())) {
            if a[i].1 == b[j].1 {
                d.differing_bytes = Some(0);
            } else {
                wanted.push((i, j));
            }
        }
    }
    let listed: BTreeSet<String> = diffs
        .iter()
        .map(|d| d.path.clone())
        .chain(m.files.keys().cloned())
        .collect();
    let unlisted: BTreeSet<&str> = ia
        .keys()
        .chain(ib.keys())
        .filter(|p| !listed.contains(**p))
        .copied()
        .collect();
    for p in unlisted {
        let (x, y) = (ia.get(p).map(|&i| &a[i].1), ib.get(p).map(|&j| &b[j].1));
        if x != y {
            diffs.push(FileDiff {
                path: p.to_string(),
                recorded: x.map(|s| s.size),
                rebuilt: y.map(|s| s.size),
                differing_bytes: None,
            });
            if let (Some(&i), Some(&j)) = (ia.get(p), ib.get(p)) {
                wanted.push((i, j));
            }
        }
    }
    if !wanted.is_empty() {
        match count_pairs(theirs, ours, &a, &b, wanted) {
            Ok(counted) => {
                for d in diffs.iter_mut() {
                    if let Some(n) = counted.get(&d.path) {
                        d.differing_bytes = Some(*n);
                    }
                }
            }
            Err(e) => log.out(format_args!("  note: differing bytes not counted: {e:#}")),
        }
    }
    diffs.sort_by(|x, y| x.path.cmp(&y.path));
    Ok(true)
}

/// What the thread that reads the rebuilt artifact hands over.
enum Fed {
    /// The file at this index (of [`summaries`]) starts.
    Start(usize),
    Chunk(Vec<u8>),
    End,
}

/// The bytes one streamed file is read in, and handed between the threads in.
const CHUNK: usize = 256 << 10;

/// The differing bytes of each pair of files (index in `theirs`, index in `ours`):
/// `theirs` is streamed here, `ours` on a thread of its own, which hands over the
/// paired files' bytes in chunks through a channel of a few chunks, so both are read
/// side by side, each once, in stored order. Pairs out of both orders are left
/// uncounted (an artifact of this tool stores its files in one order). A file whose
/// count needs more than [`TAIL_MAX`] held ([`differing_streamed`]) is left out.
fn count_pairs(
    theirs: &Path,
    ours: &Path,
    a: &[(String, Sum)],
    b: &[(String, Sum)],
    mut wanted: Vec<(usize, usize)>,
) -> Result<BTreeMap<String, u64>> {
    use std::sync::mpsc;
    wanted.sort();
    let mut pairs: BTreeMap<usize, usize> = BTreeMap::new();
    for (i, j) in wanted {
        if pairs.values().next_back().is_none_or(|last| j > *last) {
            pairs.insert(i, j);
        }
    }
    let want_b: BTreeSet<usize> = pairs.values().copied().collect();
    std::thread::scope(|s| {
        let (tx, rx) = mpsc::sync_channel::<Fed>(4);
        let feeder = s.spawn(move || -> Result<()> {
            let mut k = 0usize;
            let gone = || anyhow::anyhow!("the comparison stopped");
            each_file(ours, |_, data| {
                let at = k;
                k += 1;
                if !want_b.contains(&at) {
                    return Ok(());
                }
                tx.send(Fed::Start(at)).map_err(|_| gone())?;
                loop {
                    let mut buf = vec![0u8; CHUNK];
                    let n = read_full(data, &mut buf)?;
                    if n == 0 {
                        break;
                    }
                    buf.truncate(n);
                    tx.send(Fed::Chunk(buf)).map_err(|_| gone())?;
                }
                tx.send(Fed::End).map_err(|_| gone())?;
                Ok(())
            })
        });
        // `rx` is dropped when this returns, so the feeder never waits on it after.
        let counted = (move || -> Result<BTreeMap<String, u64>> {
            let mut out = BTreeMap::new();
            let mut k = 0usize;
            each_file(theirs, |name, data| {
                let at = k;
                k += 1;
                let Some(&j) = pairs.get(&at) else {
                    return Ok(());
                };
                match rx.recv() {
                    Ok(Fed::Start(x)) if x == j => {}
                    _ => bail!("{}: not where the first reading had it", b[j].0),
                }
                let mut other = FedReader {
                    rx: &rx,
                    chunk: Vec::new(),
                    at: 0,
                    ended: false,
                };
                let n = differing_streamed(data, a[at].1.size, &mut other, b[j].1.size)?;
                std::io::copy(&mut other, &mut std::io::sink())?;
                if let Some(n) = n {
                    out.insert(name.to_string(), n);
                }
                Ok(())
            })?;
            Ok(out)
        })();
        let fed = feeder
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the reading thread panicked")));
        // The feeder's error is the cause when it broke off first.
        match (counted, fed) {
            (Ok(c), Ok(())) => Ok(c),
            (Ok(_) | Err(_), Err(e)) => Err(e.context(ours.display().to_string())),
            (Err(e), Ok(())) => Err(e.context(theirs.display().to_string())),
        }
    })
}

/// One file's bytes as the feeder of [`count_pairs`] hands them over.
struct FedReader<'a> {
    rx: &'a std::sync::mpsc::Receiver<Fed>,
    chunk: Vec<u8>,
    at: usize,
    ended: bool,
}

impl Read for FedReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.chunk.len() {
            if self.ended {
                return Ok(0);
            }
            match self.rx.recv() {
                Ok(Fed::Chunk(c)) => {
                    self.chunk = c;
                    self.at = 0;
                }
                Ok(Fed::End) => self.ended = true,
                Ok(Fed::Start(_)) | Err(_) => {
                    return Err(std::io::Error::other(
                        "the rebuilt artifact's file broke off",
                    ))
                }
            }
        }
        let n = buf.len().min(self.chunk.len() - self.at);
        buf[..n].copy_from_slice(&self.chunk[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// Reads until `buf` is full or the stream ends: how many bytes it holds.
fn read_full(r: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// The most of the shorter of two files of different sizes held to match their ends
/// ([`differing_streamed`]): a difference in size of up to this much (or a shorter
/// file of up to this much) is counted exactly.
const TAIL_MAX: u64 = 64 << 20;

/// [`super::differing_bytes`] of two streams of `la` and `lb` bytes, read side by
/// side in chunks: the bytes at the same offset, and the first that differ. For
/// files of different sizes the common suffix pairs the shorter's byte `j` with the
/// longer's `j + d` (`d` the difference in size), so the shorter is held back by `d`
/// bytes, at most [`TAIL_MAX`]: past that the count is known only when the shorter is
/// a prefix of the longer, else `None`. `None` too when the streams are not of the
/// sizes given.
fn differing_streamed(
    a: &mut dyn Read,
    la: u64,
    b: &mut dyn Read,
    lb: u64,
) -> std::io::Result<Option<u64>> {
    differing_streamed_in(a, la, b, lb, CHUNK, TAIL_MAX)
}

fn differing_streamed_in(
    a: &mut dyn Read,
    la: u64,
    b: &mut dyn Read,
    lb: u64,
    chunk: usize,
    tail_max: u64,
) -> std::io::Result<Option<u64>> {
    let (shorter, longer) = (la.min(lb), la.max(lb));
    let d = longer - shorter;
    let tail = la != lb && d.min(shorter) <= tail_max;
    let mut held: std::collections::VecDeque<u8> =
        std::collections::VecDeque::with_capacity(if tail {
            d.min(shorter) as usize + chunk
        } else {
            0
        });
    let (mut ba, mut bb) = (vec![0u8; chunk], vec![0u8; chunk]);
    let mut tmp = Vec::new();
    // Bytes read of the longer so far (the shorter: as many, or all of it).
    let mut pos = 0u64;
    let (mut read_a, mut read_b) = (0u64, 0u64);
    let mut same_offset = 0u64;
    let mut prefix: Option<u64> = None;
    // Trailing matches of shorter[j] against longer[j + d].
    let mut run = 0u64;
    loop {
        let na = read_full(a, &mut ba)?;
        let nb = read_full(b, &mut bb)?;
        if na == 0 && nb == 0 {
            break;
        }
        read_a += na as u64;
        read_b += nb as u64;
        if read_a > la || read_b > lb {
            return Ok(None);
        }
        let (xa, xb) = (&ba[..na], &bb[..nb]);
        let common = na.min(nb);
        if xa[..common] != xb[..common] {
            let mut differ = xa[..common]
                .iter()
                .zip(&xb[..common])
                .enumerate()
                .filter(|(_, (x, y))| x != y);
            if let Some((first, _)) = differ.next() {
                prefix.get_or_insert(pos + first as u64);
            }
            same_offset += 1 + differ.count() as u64;
        }
        if na != nb {
            // One ended here: what came before is the common prefix, if nothing differed.
            prefix.get_or_insert(pos + common as u64);
        }
        if tail {
            let (xs, xl) = if la <= lb { (xa, xb) } else { (xb, xa) };
            held.extend(xs);
            // The longer's bytes from offset `d` on meet the shorter's from 0 on.
            let from = d.saturating_sub(pos).min(xl.len() as u64) as usize;
            let meet = &xl[from..];
            if !meet.is_empty() {
                if held.len() < meet.len() {
                    return Ok(None); // the shorter ended before its size
                }
                tmp.clear();
                tmp.extend(held.drain(..meet.len()));
                match tmp.iter().zip(meet).rposition(|(x, y)| x != y) {
                    Some(k) => run = (meet.len() - k - 1) as u64,
                    None => run += meet.len() as u64,
                }
            }
        }
        pos += na.max(nb) as u64;
    }
    if read_a != la || read_b != lb {
        return Ok(None);
    }
    if la == lb {
        return Ok(Some(same_offset));
    }
    let prefix = prefix.unwrap_or(shorter);
    if tail {
        Ok(Some(longer - prefix - run.min(shorter - prefix)))
    } else if prefix == shorter {
        Ok(Some(longer - shorter))
    } else {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn streamed(a: &[u8], b: &[u8], chunk: usize, tail_max: u64) -> Option<u64> {
        differing_streamed_in(
            &mut &a[..],
            a.len() as u64,
            &mut &b[..],
            b.len() as u64,
            chunk,
            tail_max,
        )
        .unwrap()
    }

    /// Read side by side in chunks of any size, two files' differing bytes are what
    /// `differing_bytes` counts of them whole; past the tail held, only a prefix is.
    #[test]
    fn differing_bytes_streamed_are_those_counted_whole() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut cases: Vec<(Vec<u8>, Vec<u8>)> = vec![
            (b"abcdef".to_vec(), b"abXdeY".to_vec()),
            (b"abcdef".to_vec(), b"abcXYZdef".to_vec()),
            (b"abcdef".to_vec(), b"abc".to_vec()),
            (b"aaaa".to_vec(), b"aaaaaa".to_vec()),
            (b"abcdef".to_vec(), b"abXdefgh".to_vec()),
            (Vec::new(), b"xyz".to_vec()),
            (Vec::new(), Vec::new()),
        ];
        for _ in 0..300 {
            // Few symbols, so prefixes and suffixes match often.
            let len = (next() % 40) as usize;
            let a: Vec<u8> = (0..len).map(|_| b"ab"[(next() % 2) as usize]).collect();
            let mut b = a.clone();
            for _ in 0..next() % 4 {
                let at = (next() as usize) % (b.len() + 1);
                match next() % 3 {
                    0 => b.insert(at, b'c'),
                    1 if at < b.len() => {
                        b.remove(at);
                    }
                    _ if at < b.len() => b[at] = b'c',
                    _ => {}
                }
            }
            cases.push((a, b));
        }
        for (a, b) in &cases {
            let whole = crate::reproduce::differing_bytes(a, b);
            for chunk in [1, 2, 3, 7, 64] {
                assert_eq!(
                    streamed(a, b, chunk, 1 << 20),
                    Some(whole),
                    "{a:?} {b:?} chunk {chunk}"
                );
                assert_eq!(
                    streamed(b, a, chunk, 1 << 20),
                    Some(whole),
                    "{b:?} {a:?} chunk {chunk}"
                );
                // Nothing held: exact for one size, or where one is a prefix of the other.
                let prefix_only = a.len() == b.len() || a.starts_with(b) || b.starts_with(a);
                assert_eq!(
                    streamed(a, b, chunk, 0).is_some(),
                    prefix_only || a.len().min(b.len()) == 0,
                    "{a:?} {b:?} chunk {chunk}"
                );
                if let Some(n) = streamed(a, b, chunk, 0) {
                    assert_eq!(n, whole);
                }
            }
        }
    }

    /// Streams that are not of the sizes given: no count, and no panic.
    #[test]
    fn streams_of_other_sizes_are_not_counted() {
        for (la, lb) in [(3, 6), (9, 6), (6, 3), (6, 9), (2, 2)] {
            let (a, b) = (b"abcdef", b"abcxyz");
            let r = differing_streamed_in(&mut &a[..], la, &mut &b[..], lb, 2, 1 << 20).unwrap();
            assert_eq!(r, None, "{la} {lb}");
        }
    }
}
