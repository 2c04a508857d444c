//! The binaries: each ELF file's CPU and each PE file's imports, against the artifact's platform, and what no library may carry.

use super::*;

/// Every ELF file is code for the CPU the artifact's platform names: the wheel's tag, or
/// else the manifest's platform (an x86-64 library in an aarch64 wheel loads nowhere).
pub(super) fn check_elf_machines(files: &Files, m: Option<&Manifest>, name: &str, r: &mut Report) {
    let tagged = name
        .strip_suffix(".whl")
        .and_then(|n| n.rsplit('-').next())
        .and_then(|t| t.split('.').next())
        .and_then(|t| t.parse::<PlatformTag>().ok());
    let Some(platform) = tagged.or_else(|| m.map(|m| m.target.platform.clone())) else {
        return;
    };
    let arch = platform.arch();
    for (p, seen) in files {
        if let Some(Ok(info)) = seen.elf() {
            if info.arch != Some(arch) {
                r.problem(format!(
                    "{p}: code for {}, but the artifact is {platform} ({arch})",
                    elf::machine_name(info.arch)
                ));
            }
        }
    }
}

/// The file name an archive may carry as its tools' shared C++ runtime: what its plan
/// builds ([`crate::plan::Plan::shared_cxx_runtime`]), and only under the tool's own name
/// for it, so that no manifest can let another library export the runtime. A wheel has none.
pub(super) fn shared_cxx_runtime(name: &str, m: Option<&Manifest>) -> Option<String> {
    if name.ends_with(".whl") {
        return None;
    }
    let file = m?.plan.shared_cxx_runtime()?;
    let ours =
        crate::platform::BinaryFormat::Elf.library_file(crate::plan::defines::CXX_RUNTIME_LIBRARY);
    (file == ours).then_some(file)
}

/// No library twice, no RUNPATH outside `$ORIGIN`, no copy of the C++ runtime exported
/// but the archive's `shared` one ([`shared_cxx_runtime`]).
pub(super) fn check_payload(files: &Files, shared: Option<&str>, r: &mut Report) {
    let mut by_hash: BTreeMap<[u8; 32], Vec<&String>> = BTreeMap::new();
    for (p, seen) in files {
        if seen.binary.is_some() {
            by_hash.entry(seen.digest).or_default().push(p);
        }
        let Some(e) = seen.elf() else { continue };
        match e {
            Ok(info) => {
                let abs = elf::absolute_runpaths(info);
                if !abs.is_empty() {
                    r.problem(format!("{p}: absolute RUNPATH {}", abs.join(":")));
                }
                // The archive's runtime lies in its top dir, beside the tools (an archive's
                // paths are read relative to that dir).
                if let (Some(c), false) = (info.cxx_runtime, Some(p.as_str()) == shared) {
                    r.problem(format!(
                        "{p}: carries its own copy of {} (exports {}): with libstdc++.so.6 or another copy in the same process it crashes; rebuild with a compiler that links libstdc++.so.6",
                        c.library, c.symbol
                    ));
                }
            }
            Err(e) => r.problem(format!("{p}: unreadable ELF file: {e:#}")),
        }
    }
    for paths in by_hash.values().filter(|v| v.len() > 1) {
        let names: Vec<&str> = paths.iter().map(|s| s.as_str()).collect();
        r.problem(format!(
            "duplicate payload: {} are the same file",
            names.join(", ")
        ));
    }
}

/// Windows binaries: each PE file reads, is x86-64, and imports only DLLs beside it
/// (its dir in the artifact: where Windows and llama_cpp's loader look), declared by
/// the plan (dependency wheels) or Windows' own; their machine gives the platform
/// the manifest names.
pub(super) fn check_windows_binaries(files: &Files, m: Option<&Manifest>, r: &mut Report) {
    let mut by_dir: BTreeMap<&str, BTreeMap<String, PeInfo>> = BTreeMap::new();
    for (p, seen) in files {
        match seen.pe() {
            Some(Ok(info)) => {
                let dir = p.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
                by_dir
                    .entry(dir)
                    .or_default()
                    .insert(p.clone(), info.clone());
            }
            Some(Err(e)) => r.problem(format!("{p}: unreadable PE file: {e:#}")),
            None => {}
        }
    }
    if by_dir.is_empty() {
        return;
    }
    let provided = m
        .and_then(|m| m.plan.cuda.as_ref())
        .map(|c| c.provided.clone())
        .unwrap_or_default();
    let mut all = BTreeMap::new();
    for infos in by_dir.values() {
        for p in crate::package::windows::import_problems(infos, &provided) {
            r.problem(p);
        }
        all.extend(infos.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    if let (Some(m), Ok(tag)) = (m, crate::package::windows::platform_tag(&all)) {
        if m.target.platform != tag {
            r.problem(format!(
                "the manifest says platform {}, but the Windows binaries are {tag}",
                m.target.platform
            ));
        }
    }
}
