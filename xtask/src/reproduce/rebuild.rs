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
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

use super::FileDiff;
use crate::detect::{prepare, Env};
use crate::manifest::Manifest;
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
            return Ok(ExitCode::from(2));
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
    let work = renv.work_dir(&here);
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
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(std::time::Duration::from_secs(30))
            .timeout(std::time::Duration::from_secs(120))
            .build();
        let resp = agent
            .get(arg)
            .call()
            .with_context(|| format!("cannot download {arg}"))?;
        let max = crate::manifest::MAX_BYTES;
        let mut data = Vec::new();
        resp.into_reader()
            .take(max + 1)
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

/// Every entry of a wheel or archive, by path.
fn entries(p: &Path) -> Result<BTreeMap<String, Vec<u8>>> {
    let list = if p.to_string_lossy().ends_with(".whl") {
        crate::package::wheel::read_entries(p)?
    } else {
        crate::package::archive::read_entries(p)?.1
    };
    Ok(list
        .into_iter()
        .map(|(path, data, _)| (path, data))
        .collect())
}

/// With the recorded artifact at hand: counts the differing bytes of each
/// differing file, and adds the entries the manifest does not list (the
/// manifest inside the artifact, RECORD) when they differ. False when the file
/// beside the manifest is not the recorded artifact.
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
    let (a, b) = (entries(theirs)?, entries(ours)?);
    for d in diffs.iter_mut() {
        if let (Some(x), Some(y)) = (a.get(&d.path), b.get(&d.path)) {
            d.differing_bytes = Some(super::differing_bytes(x, y));
        }
    }
    let listed: std::collections::BTreeSet<String> = diffs
        .iter()
        .map(|d| d.path.clone())
        .chain(m.files.keys().cloned())
        .collect();
    for p in a
        .keys()
        .chain(b.keys())
        .filter(|p| !listed.contains(*p))
        .cloned()
        .collect::<std::collections::BTreeSet<_>>()
    {
        let (x, y) = (a.get(&p), b.get(&p));
        if x != y {
            diffs.push(FileDiff {
                path: p,
                recorded: x.map(|v| v.len() as u64),
                rebuilt: y.map(|v| v.len() as u64),
                differing_bytes: match (x, y) {
                    (Some(x), Some(y)) => Some(super::differing_bytes(x, y)),
                    _ => None,
                },
            });
        }
    }
    diffs.sort_by(|x, y| x.path.cmp(&y.path));
    Ok(true)
}
