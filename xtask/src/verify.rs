//! `verify`: re-checks an artifact against its RECORD and manifests.
//! Every problem is one line; none means the artifact is sound.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::Result;

use crate::elf;
use crate::manifest::{self, FileEntry, Manifest};
use crate::manylinux::Policies;
use crate::tags::{PlatformTag, WheelFilename};

/// What `verify` found.
#[derive(Debug, Default)]
pub struct Report {
    pub problems: Vec<String>,
    /// Checks that could not run, and why.
    pub notes: Vec<String>,
    pub checked_files: usize,
}

impl Report {
    fn problem(&mut self, p: impl Into<String>) {
        self.problems.push(p.into());
    }
}

/// `cuobjdump`, when given, re-runs the CUDA code gate on GPU artifacts.
pub fn verify(path: &Path, cuobjdump: Option<&Path>) -> Result<Report> {
    verify_with(path, cuobjdump, &[])
}

/// [`verify`], also flagging `build_paths` (the directories of the build that
/// just ran: work dir, checkout) wherever they appear inside a binary.
pub fn verify_with(path: &Path, cuobjdump: Option<&Path>, build_paths: &[String]) -> Result<Report> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
    let mut r = Report::default();
    let (files, embedded) = if name.ends_with(".whl") {
        verify_wheel(path, &name, &mut r)?
    } else if let Some(stem) = name.strip_suffix(".tar.gz") {
        verify_archive(path, stem, &mut r)?
    } else {
        r.problem(format!("{name}: not a wheel (.whl) or archive (.tar.gz)"));
        return Ok(r);
    };
    r.checked_files = files.len();
    check_payload(&files, &mut r);
    match embedded {
        Some(m) => {
            check_build_paths(&files, &build_path_needles(&m, build_paths), &mut r);
            check_manifests(path, &name, &files, &m, &mut r)?;
            if m.cuda.is_some() {
                check_cuda_code(&files, &m, cuobjdump, &mut r)?;
            }
        }
        None => r.problem("no manifest inside the artifact"),
    }
    Ok(r)
}

/// Re-runs the cuobjdump gate on every library with device code.
fn check_cuda_code(files: &Files, m: &Manifest, cuobjdump: Option<&Path>, r: &mut Report) -> Result<()> {
    let c = m.cuda.as_ref().expect("checked by caller");
    let Some(cuobjdump) = cuobjdump else {
        r.notes.push("GPU code not re-checked: no cuobjdump found (pass --cuobjdump PATH)".into());
        return Ok(());
    };
    let expected: crate::cuda::ArchList = match c.architectures.parse() {
        Ok(a) => a,
        Err(e) => {
            r.problem(format!("manifest's CUDA architectures `{}`: {e}", c.architectures));
            return Ok(());
        }
    };
    let dir = tempfile::tempdir()?;
    let mut libs = Vec::new();
    for (p, (data, _)) in files {
        if elf::is_elf(data) && p.contains(".so") {
            let out = dir.path().join(p.rsplit('/').next().unwrap_or(p));
            std::fs::write(&out, data)?;
            if crate::cudapkg::has_device_code(&out)? {
                libs.push((p.clone(), out));
            }
        }
    }
    match crate::cudapkg::gate(libs.iter().map(|(n, p)| (n, p.as_path())), &expected, cuobjdump) {
        Ok(found) => {
            let recorded: BTreeMap<String, Vec<String>> =
                m.cuda_code.iter().map(|(k, v)| (k.rsplit('/').next().unwrap_or(k).to_string(), v.clone())).collect();
            let seen: BTreeMap<String, Vec<String>> =
                found.into_iter().map(|(k, v)| (k.rsplit('/').next().unwrap_or(&k).to_string(), v)).collect();
            if recorded != seen {
                r.problem(format!("GPU code differs from the manifest: found {seen:?}, manifest says {recorded:?}"));
            }
        }
        Err(e) => r.problem(format!("{e:#}")),
    }
    Ok(())
}

type Files = BTreeMap<String, (Vec<u8>, u32)>;

fn verify_wheel(path: &Path, name: &str, r: &mut Report) -> Result<(Files, Option<Manifest>)> {
    let parsed: Option<WheelFilename> = match name.parse::<WheelFilename>() {
        Ok(w) if w.to_string() == name => Some(w),
        Ok(w) => {
            r.problem(format!("filename does not round-trip through the tag types: {name} reads back as {w}"));
            None
        }
        Err(e) => {
            r.problem(format!("filename: {e}"));
            None
        }
    };
    let entries = crate::wheel::read_entries(path)?;
    let mut files: Files = BTreeMap::new();
    for (p, data, mode) in &entries {
        if files.insert(p.clone(), (data.clone(), *mode)).is_some() {
            r.problem(format!("{p}: stored twice in the zip"));
        }
    }
    let dist_info = match &parsed {
        Some(w) => w.dist_info_dir(),
        None => entries.iter().find_map(|(p, ..)| p.split_once(".dist-info/").map(|(d, _)| format!("{d}.dist-info"))).unwrap_or_default(),
    };
    let record_path = format!("{dist_info}/RECORD");
    match entries.last() {
        Some((p, ..)) if *p == record_path => {}
        _ => r.problem(format!("{record_path} is not the last entry")),
    }
    let Some((record, _)) = files.get(&record_path) else {
        r.problem(format!("{record_path} is missing"));
        return Ok((files, None));
    };
    let record = String::from_utf8_lossy(record).into_owned();
    let mut listed = BTreeSet::new();
    for (n, line) in record.lines().enumerate() {
        let cols: Vec<&str> = line.rsplitn(3, ',').collect();
        let [size, hash, p] = cols.as_slice() else {
            r.problem(format!("RECORD line {}: malformed: {line}", n + 1));
            continue;
        };
        listed.insert(p.to_string());
        if *p == record_path {
            continue;
        }
        match files.get(*p) {
            None => r.problem(format!("RECORD lists {p}, which is not in the wheel")),
            Some((data, _)) => {
                if *hash != crate::wheel::record_hash(data) {
                    r.problem(format!("{p}: sha256 differs from RECORD"));
                }
                if size.parse::<usize>().ok() != Some(data.len()) {
                    r.problem(format!("{p}: size {} differs from RECORD's {size}", data.len()));
                }
            }
        }
    }
    for p in files.keys() {
        if !listed.contains(p) {
            r.problem(format!("{p}: in the wheel but not in RECORD"));
        }
    }
    if let Some(w) = &parsed {
        check_wheel_tag(w, &files, r)?;
    }
    let manifest_path = format!("{dist_info}/{}", manifest::WHEEL_NAME);
    let embedded = match files.get(&manifest_path) {
        Some((data, _)) => match Manifest::parse(data) {
            Ok(m) => Some(m),
            Err(e) => {
                r.problem(format!("{manifest_path}: {e}"));
                None
            }
        },
        None => None,
    };
    // The manifest describes everything except itself and RECORD.
    files.remove(&manifest_path);
    files.remove(&record_path);
    Ok((files, embedded))
}

fn check_wheel_tag(w: &WheelFilename, files: &Files, r: &mut Report) -> Result<()> {
    let infos: Vec<_> = files.values().filter(|(d, _)| elf::is_elf(d)).filter_map(|(d, _)| elf::parse(d).ok()).collect();
    let bundled: BTreeSet<String> = files.keys().filter_map(|p| p.rsplit('/').next()).map(str::to_string).collect();
    if let (PlatformTag::Manylinux { glibc_minor, .. }, Ok(PlatformTag::Manylinux { glibc_minor: needed, .. })) =
        (&w.platform, Policies::builtin().tag_for(&infos, &bundled))
    {
        if needed > *glibc_minor {
            r.problem(format!("tagged {} but its libraries need manylinux_2_{needed}", w.platform));
        }
    }
    Ok(())
}

fn verify_archive(path: &Path, stem: &str, r: &mut Report) -> Result<(Files, Option<Manifest>)> {
    let (top, entries) = crate::archive::read_entries(path)?;
    if top != stem {
        r.problem(format!("top dir is `{top}`, expected `{stem}`"));
    }
    let mut files: Files = BTreeMap::new();
    for (p, data, mode) in entries {
        if files.insert(p.clone(), (data, mode)).is_some() {
            r.problem(format!("{p}: stored twice in the archive"));
        }
    }
    let embedded = files.remove(manifest::ARCHIVE_NAME).and_then(|(d, _)| match Manifest::parse(&d) {
        Ok(m) => Some(m),
        Err(e) => {
            r.problem(format!("{}: {e}", manifest::ARCHIVE_NAME));
            None
        }
    });
    Ok((files, embedded))
}

/// No library twice, no RUNPATH outside `$ORIGIN`.
fn check_payload(files: &Files, r: &mut Report) {
    let mut by_hash: BTreeMap<crate::recipe::Sha256Hex, Vec<&String>> = BTreeMap::new();
    for (p, (data, _)) in files {
        if !elf::is_elf(data) {
            continue;
        }
        by_hash.entry(crate::fetch::sha256_bytes(data)).or_default().push(p);
        match elf::parse(data) {
            Ok(info) => {
                let abs = elf::absolute_runpaths(&info);
                if !abs.is_empty() {
                    r.problem(format!("{p}: absolute RUNPATH {}", abs.join(":")));
                }
            }
            Err(e) => r.problem(format!("{p}: unreadable ELF file: {e}")),
        }
    }
    for paths in by_hash.values().filter(|v| v.len() > 1) {
        let names: Vec<&str> = paths.iter().map(|s| s.as_str()).collect();
        r.problem(format!("duplicate payload: {} are the same file", names.join(", ")));
    }
}

/// The absolute paths that must never be inside a shipped binary: the stable
/// build path every build compiles under (`/tmp/llama-forge/`), the local
/// source dir the manifest names, and `extra` (the caller's own build dirs).
/// Paths of fewer than two components (`/src`, `/build`: the targets of the
/// build's `-ffile-prefix-map`) are not searched for.
pub fn build_path_needles(m: &Manifest, extra: &[String]) -> Vec<String> {
    let mut out = vec![format!("{}/", crate::build::ALIAS_DIR)];
    let local = (m.source.kind == "local").then(|| m.source.location.clone());
    for p in local.into_iter().chain(extra.iter().cloned()) {
        let p = p.trim_end_matches('/').to_string();
        let deep = Path::new(&p).is_absolute() && Path::new(&p).components().count() > 2;
        if deep && !out.iter().any(|n| p.starts_with(n.trim_end_matches('/'))) {
            out.push(p);
        }
    }
    out
}

/// Every ELF file is searched for each needle; a hit names the file and the
/// whole path found (up to the next byte that cannot be part of a path).
fn check_build_paths(files: &Files, needles: &[String], r: &mut Report) {
    let pattern = needles.iter().map(|n| regex::escape(n)).collect::<Vec<_>>().join("|");
    let re = regex::bytes::Regex::new(&format!("(?-u)(?:{pattern})[^\\x00-\\x20\\x7f-\\xff\"']*")).expect("escaped literals");
    for (p, (data, _)) in files {
        if !elf::is_elf(data) {
            continue;
        }
        let mut hits = re.find_iter(data).map(|m| String::from_utf8_lossy(m.as_bytes()).into_owned());
        if let Some(first) = hits.next() {
            let more = hits.count();
            let tail = if more > 0 { format!(" (and {more} more)") } else { String::new() };
            r.problem(format!("{p}: contains the build path {first}{tail}: a build-machine path must not reach the artifact"));
        }
    }
}

fn check_manifests(path: &Path, name: &str, files: &Files, m: &Manifest, r: &mut Report) -> Result<()> {
    if m.artifact.filename != name {
        r.problem(format!("manifest is for {}, not {name}", m.artifact.filename));
    }
    let planned = m.plan.hash();
    if planned != m.plan_hash {
        r.problem(format!("the manifest's plan hashes to {planned}, but its plan_hash is {}: the manifest was edited", m.plan_hash));
    }
    let actual: BTreeMap<String, FileEntry> = files
        .iter()
        .map(|(p, (d, _))| (p.clone(), FileEntry { size: d.len() as u64, sha256: crate::fetch::sha256_bytes(d) }))
        .collect();
    for (p, e) in &actual {
        match m.files.get(p) {
            None => r.problem(format!("{p}: not in the manifest")),
            Some(want) if want != e => r.problem(format!("{p}: sha256 {} differs from the manifest's {}", e.sha256, want.sha256)),
            _ => {}
        }
    }
    for p in m.files.keys().filter(|p| !actual.contains_key(*p)) {
        r.problem(format!("{p}: in the manifest but not in the artifact"));
    }
    let external = path.with_file_name(format!("{name}.manifest.json"));
    if external.is_file() {
        let ext = Manifest::read(&external)?;
        let sha = crate::fetch::sha256_file(path)?;
        if ext.artifact.sha256.as_ref() != Some(&sha) {
            r.problem(format!(
                "sha256 {sha} differs from {}'s {}",
                external.display(),
                ext.artifact.sha256.as_ref().map(|s| s.to_string()).unwrap_or_else(|| "(none)".into())
            ));
        }
        if ext.embedded() != *m {
            r.problem(format!("{} and the manifest inside the artifact differ", external.display()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(source_kind: &str, location: &str) -> Manifest {
        let r = crate::recipe::Recipe::find(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../recipes"), "llama.cpp").unwrap();
        let o = crate::plan::tests::opts(&[]);
        let mut plan = crate::plan::make(&r, r.release(None).unwrap(), &crate::plan::tests::fake_tools(&o.cache), &o).unwrap();
        plan.source.kind = source_kind.into();
        plan.source.location = location.into();
        let artifact = manifest::ArtifactInfo { kind: crate::recipe::ArtifactKind::Archive, filename: "x.tar.gz".into(), sha256: None, size: None };
        let target = manifest::TargetInfo { accelerator: "cpu".into(), cpu_baseline: "x86-64-v2".into(), platform: "linux-x86_64".into(), wheel_tag: None };
        Manifest::from_plan(&plan, artifact, target, BTreeMap::new())
    }

    /// An ELF header followed by `body`: enough for `is_elf`.
    fn elf_with(body: &[u8]) -> Vec<u8> {
        let mut v = b"\x7fELF\x02\x01\x01".to_vec();
        v.resize(64, 0);
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn needles_are_the_alias_the_local_source_and_deep_extra_paths() {
        let m = manifest("local", "/home/ann/src/llama.cpp");
        let n = build_path_needles(&m, &["/work/co/.build".into(), "/src".into(), "relative/dir".into(), "/tmp/llama-forge/x".into()]);
        assert_eq!(n, ["/tmp/llama-forge/", "/home/ann/src/llama.cpp", "/work/co/.build"]);
        let pinned = manifest("sdist", "https://files.pythonhosted.org/x.tar.gz");
        assert_eq!(build_path_needles(&pinned, &[]), ["/tmp/llama-forge/"]);
    }

    #[test]
    fn a_build_path_inside_a_library_is_named_with_the_file() {
        let needles = build_path_needles(&manifest("local", "/home/ann/src/llama.cpp"), &[]);
        let mut files: Files = BTreeMap::new();
        files.insert("libggml-base.so".into(), (elf_with(b"ggml-base\0/tmp/llama-forge/llama.cpp-0.3.36-0123/src/ggml/src/ggml.c\0x\0"), 0o755));
        files.insert("libllama.so".into(), (elf_with(b"\0/home/ann/src/llama.cpp/src/llama.cpp\0/home/ann/src/llama.cpp/x.h\0"), 0o755));
        // Remapped paths and non-ELF files are fine.
        files.insert("libggml.so".into(), (elf_with(b"/src/ggml/src/ggml.c\0/build/x\0"), 0o755));
        files.insert("README.md".into(), (b"built in /tmp/llama-forge/abc".to_vec(), 0o644));
        let mut r = Report::default();
        check_build_paths(&files, &needles, &mut r);
        assert_eq!(
            r.problems,
            [
                "libggml-base.so: contains the build path /tmp/llama-forge/llama.cpp-0.3.36-0123/src/ggml/src/ggml.c: a build-machine path must not reach the artifact",
                "libllama.so: contains the build path /home/ann/src/llama.cpp/src/llama.cpp (and 1 more): a build-machine path must not reach the artifact",
            ]
        );
    }

    #[test]
    fn an_edited_plan_no_longer_matches_its_hash() {
        let mut m = manifest("sdist", "https://x.invalid/a.tar.gz");
        let files: Files = BTreeMap::new();
        let mut r = Report::default();
        check_manifests(Path::new("/nonexistent/x.tar.gz"), "x.tar.gz", &files, &m, &mut r).unwrap();
        assert!(r.problems.is_empty(), "{:?}", r.problems);
        m.plan.defines[0].value = "Debug".into();
        check_manifests(Path::new("/nonexistent/x.tar.gz"), "x.tar.gz", &files, &m, &mut r).unwrap();
        assert!(r.problems.iter().any(|p| p.contains("plan hashes to") && p.contains("edited")), "{:?}", r.problems);
    }
}
