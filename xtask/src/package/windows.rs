//! Windows artifacts: archives (`.zip`: the programs, and every DLL they load,
//! beside each other) and the libraries of `win_amd64` wheels (every DLL in one
//! lib dir, which llama_cpp's loader puts first on PATH). The import check: each
//! DLL or EXE imports only DLLs of the artifact or of Windows itself; anything else
//! would load only where the build machine's copy is installed, and fails the
//! build. The platform tag comes from the files' PE machine.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::binary::pe::{self, PeInfo, PeMachine};
use crate::build::WorkDir;
use crate::manifest::{ArtifactInfo, Manifest, TargetInfo};
use crate::package::payload::Payload;
use crate::package::writer::{self, ArtifactWriter};
use crate::package::Artifact;
use crate::plan::{Package, Plan};
use crate::recipe::ArtifactKind;
use crate::tags::PlatformTag;

/// DLLs every Windows (10 and later) has, that an artifact may import without
/// shipping them: the kernel, the C runtime the GCC runtime uses (msvcrt) and the
/// Universal CRT, and the system services llama.cpp's tools call (registry, sockets,
/// shell, crypto). Matched without regard to case; `api-ms-win-*` sets are Windows' own.
pub const SYSTEM_DLLS: &[&str] = &[
    "kernel32.dll",
    "ntdll.dll",
    "msvcrt.dll",
    "ucrtbase.dll",
    "advapi32.dll",
    "ws2_32.dll",
    "shell32.dll",
    "user32.dll",
    "ole32.dll",
    "oleaut32.dll",
    "bcrypt.dll",
    "crypt32.dll",
    "secur32.dll",
];

fn is_system(dll: &str) -> bool {
    let l = dll.to_ascii_lowercase();
    SYSTEM_DLLS.contains(&l.as_str()) || l.starts_with("api-ms-win-")
}

/// The plan's Windows archive: the binaries, the libraries and modules it names, and
/// every DLL of the build they import, checked and written as `<stem>.zip`.
pub fn archive(
    plan: &Plan,
    work: &WorkDir,
    out: &std::path::Path,
    flags: BTreeMap<String, String>,
) -> Result<Artifact> {
    let Package::Archive {
        stem,
        format,
        collect_from,
        binaries,
        optional_binaries,
        libraries,
        docs,
    } = &plan.package
    else {
        unreachable!("archive plans only")
    };
    let dir = PathBuf::from(work.resolve(collect_from));
    let in_dir = dlls_by_name(&dir)?;
    let mut queue: Vec<String> = Vec::new();
    for b in binaries.iter().chain(optional_binaries) {
        match in_dir.get(&b.to_ascii_lowercase()) {
            Some(found) => queue.push(found.clone()),
            None if binaries.contains(b) => bail!(
                "the build did not produce {}: see {}",
                dir.join(b).display(),
                work.logs().join("build.log").display()
            ),
            None => {}
        }
    }
    queue.extend(required(plan, libraries, &in_dir, &dir)?);
    let mut infos: BTreeMap<String, PeInfo> = BTreeMap::new();
    while let Some(f) = queue.pop() {
        if infos.contains_key(&f) {
            continue;
        }
        let info = read_regular(&dir.join(&f))?;
        queue.extend(
            info.imports
                .iter()
                .filter_map(|i| in_dir.get(&i.to_ascii_lowercase()).cloned()),
        );
        infos.insert(f, info);
    }
    let mut files: BTreeMap<String, PathBuf> =
        infos.keys().map(|n| (n.clone(), dir.join(n))).collect();
    let cuda_code = gate(plan, &files)?;
    for (name, path) in super::bundle(plan, work)? {
        infos.insert(name.clone(), read_regular(&path)?);
        files.insert(name, path);
    }
    check_imports(&infos, &super::provided(plan))?;
    let platform = platform_tag(&infos)?;
    let mut payload = Payload::default();
    for (name, path) in &files {
        payload.add(name.clone(), fs_err::read(path)?, true)?;
    }
    for d in docs {
        let p = work.project().join(d);
        payload.add(
            d.clone(),
            fs_err::read(&p).with_context(|| format!("the source has no {}", p.display()))?,
            false,
        )?;
    }
    let writer = writer::Archive {
        stem: stem.clone(),
        format: *format,
    };
    let mut m = Manifest::from_plan(
        plan,
        ArtifactInfo {
            kind: ArtifactKind::Archive,
            filename: writer.filename(),
            sha256: None,
            size: None,
        },
        TargetInfo {
            platform,
            wheel_tag: None,
        },
        flags,
    );
    m.cuda_code = cuda_code;
    writer::emit(&writer, out, &payload, m, plan.source_date_epoch)
}

/// A `win_amd64` wheel's libraries: every DLL the package's install step put in
/// `collect_from` (import libraries `*.dll.a`/`*.lib` are left out), and the CPU
/// backend modules from `modules_from`, each under `lib_dir/`; checked as one
/// dir, since llama_cpp's loader puts that dir first on PATH before it loads them.
/// A GPU build's CUDA runtime DLLs come from the runtime wheels (the plan's
/// `cuda.provided`) or are bundled (`--bundle-cuda-runtime`); its device code is gated.
/// Returns the platform tag and the device code found, per DLL.
pub fn wheel_libraries(
    plan: &Plan,
    work: &WorkDir,
    payload: &mut Payload,
) -> Result<(PlatformTag, BTreeMap<String, Vec<String>>)> {
    let Package::Wheel {
        lib_dir,
        collect_from,
        libraries,
        modules_from,
        modules,
        ..
    } = &plan.package
    else {
        unreachable!("wheel plans only")
    };
    let dir = PathBuf::from(work.resolve(collect_from));
    let in_dir = dlls_by_name(&dir)?;
    required(plan, libraries, &in_dir, &dir)?;
    let mut infos: BTreeMap<String, (PathBuf, PeInfo)> = BTreeMap::new();
    // The lib dir holds DLLs only: an EXE there would be shipped and never run.
    for name in in_dir
        .values()
        .filter(|n| n.to_ascii_lowercase().ends_with(".dll"))
    {
        let p = dir.join(name);
        infos.insert(name.clone(), (p.clone(), read_regular(&p)?));
    }
    let module_dir = PathBuf::from(work.resolve(modules_from));
    let module_files = dlls_by_name(&module_dir)?;
    for m in modules {
        let file = plan.target.library_file(m);
        let Some(found) = module_files.get(&file.to_ascii_lowercase()) else {
            bail!(
                "the build did not produce the CPU backend variant {file} in {}: the plan ships it (cpu_variants)",
                module_dir.display()
            );
        };
        let p = module_dir.join(found);
        if infos
            .insert(found.clone(), (p.clone(), read_regular(&p)?))
            .is_some()
        {
            bail!(
                "{found} was collected twice (from the install step and from {})",
                module_dir.display()
            );
        }
    }
    let files: BTreeMap<String, PathBuf> = infos
        .iter()
        .map(|(n, (p, _))| (n.clone(), p.clone()))
        .collect();
    let cuda_code = gate(plan, &files)?;
    for (name, path) in super::bundle(plan, work)? {
        let info = read_regular(&path)?;
        infos.insert(name, (path, info));
    }
    let pe: BTreeMap<String, PeInfo> = infos
        .iter()
        .map(|(n, (_, i))| (n.clone(), i.clone()))
        .collect();
    check_imports(&pe, &super::provided(plan))?;
    for (name, (path, _)) in &infos {
        payload.add(format!("{lib_dir}/{name}"), fs_err::read(path)?, true)?;
    }
    Ok((platform_tag(&pe)?, cuda_code))
}

/// A GPU build: the device code gate on the build's own DLLs (not the bundled
/// runtime's, which carries NVIDIA's code for every GPU), as on Linux.
fn gate(plan: &Plan, files: &BTreeMap<String, PathBuf>) -> Result<BTreeMap<String, Vec<String>>> {
    match &plan.cuda {
        Some(c) => crate::package::cuda_gate::gate(
            files.iter().map(|(n, p)| (n, p.as_path())),
            &c.architectures,
        ),
        None => Ok(BTreeMap::new()),
    }
}

/// The DLLs and EXEs of `dir`, by lower-case name (Windows finds DLLs without regard to case).
fn dlls_by_name(dir: &Path) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    let rd = fs_err::read_dir(dir)
        .with_context(|| format!("the build left no dir {}", dir.display()))?;
    for e in rd {
        let name = e?.file_name().to_string_lossy().into_owned();
        let lower = name.to_ascii_lowercase();
        if lower.ends_with(".dll") || lower.ends_with(".exe") {
            out.insert(lower, name);
        }
    }
    Ok(out)
}

/// The files of the libraries the recipe names (`llama` is `libllama.dll` with mingw-w64):
/// each must be in `dir`.
fn required(
    plan: &Plan,
    libraries: &[String],
    in_dir: &BTreeMap<String, String>,
    dir: &Path,
) -> Result<Vec<String>> {
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for l in libraries {
        let file = plan.target.library_file(l);
        match in_dir.get(&file.to_ascii_lowercase()) {
            Some(f) => found.push(f.clone()),
            None => missing.push(file),
        }
    }
    if !missing.is_empty() {
        bail!(
            "the build did not produce {} in {}",
            missing.join(", "),
            dir.display()
        );
    }
    Ok(found)
}

/// A regular file's PE facts: a link would be stored as the file it points to, twice.
fn read_regular(p: &Path) -> Result<PeInfo> {
    if fs_err::symlink_metadata(p)?.file_type().is_symlink() {
        bail!(
            "{} is a symlink: an artifact holds regular files only",
            p.display()
        );
    }
    pe::read(p)
}

/// The platform tag the files' machine gives (`win_amd64` for x86-64): one for all.
pub fn platform_tag(infos: &BTreeMap<String, PeInfo>) -> Result<PlatformTag> {
    let machines: BTreeSet<String> = infos.values().map(|i| format!("{:?}", i.machine)).collect();
    match infos.values().next().map(|i| i.machine) {
        Some(PeMachine::X86_64) if machines.len() == 1 => Ok(PlatformTag::WinAmd64),
        Some(_) => bail!(
            "the Windows artifact's files are built for {}: only x86-64 (win_amd64) is made",
            machines.into_iter().collect::<Vec<_>>().join(", ")
        ),
        None => bail!("the Windows artifact holds no DLL or EXE"),
    }
}

/// Every file is x86-64, and every DLL it imports is in the artifact, `provided`
/// (by declared dependency wheels) or Windows' own: else the build fails, naming
/// the DLL, what imports it and what to do.
pub fn check_imports(infos: &BTreeMap<String, PeInfo>, provided: &[String]) -> Result<()> {
    let problems = import_problems(infos, provided);
    if problems.is_empty() {
        return Ok(());
    }
    bail!(
        "the Windows artifact would not load as built; nothing was written to dist/:\n  {}",
        problems.join("\n  ")
    )
}

/// What [`check_imports`] finds wrong, one line each; the files of `infos` are one
/// dir (named by path or by file name), where Windows looks for the DLLs they import.
pub fn import_problems(infos: &BTreeMap<String, PeInfo>, provided: &[String]) -> Vec<String> {
    let shipped: BTreeSet<String> = infos
        .keys()
        .map(|k| k.rsplit('/').next().unwrap_or(k).to_ascii_lowercase())
        .chain(provided.iter().map(|p| p.to_ascii_lowercase()))
        .collect();
    let mut problems = Vec::new();
    for (file, info) in infos {
        if info.machine != PeMachine::X86_64 {
            problems.push(format!("{file}: built for {:?}, not x86-64", info.machine));
        }
    }
    let mut unsupplied: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for (file, info) in infos {
        for i in &info.imports {
            if !is_system(i) && !shipped.contains(&i.to_ascii_lowercase()) {
                unsupplied.entry(i.clone()).or_default().push(file);
            }
        }
    }
    for (dll, by) in unsupplied {
        problems.push(format!(
            "{dll} imported by {}: not in the artifact, not a Windows DLL and not the CUDA runtime's or driver's; a GCC runtime DLL (libstdc++-6, libgcc_s_seh-1, libwinpthread-1, libgomp-1) means the static runtime flags did not reach that link; anything else, decide the CMake option that links it in the plan (see docs/optional-dependencies.md)",
            by.join(", ")
        ));
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(imports: &[&str]) -> PeInfo {
        PeInfo {
            machine: PeMachine::X86_64,
            dll: true,
            imports: imports.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn imports_resolve_in_the_artifact_or_windows_else_the_build_fails() {
        let mut infos = BTreeMap::new();
        infos.insert(
            "llama-cli.exe".to_string(),
            info(&[
                "LIBLLAMA.dll",
                "KERNEL32.dll",
                "api-ms-win-crt-runtime-l1-1-0.dll",
            ]),
        );
        infos.insert(
            "libllama.dll".to_string(),
            info(&["ggml.dll", "msvcrt.dll"]),
        );
        infos.insert("ggml.dll".to_string(), info(&["ADVAPI32.dll"]));
        check_imports(&infos, &[]).unwrap();
        infos.insert(
            "ggml-base.dll".to_string(),
            info(&["libstdc++-6.dll", "libgomp-1.dll"]),
        );
        infos.insert(
            "x.dll".to_string(),
            PeInfo {
                machine: PeMachine::Arm64,
                ..info(&["libstdc++-6.dll"])
            },
        );
        let e = check_imports(&infos, &[]).unwrap_err().to_string();
        for want in [
            "nothing was written to dist/",
            "x.dll: built for Arm64, not x86-64",
            "libstdc++-6.dll imported by ggml-base.dll, x.dll: not in the artifact",
            "libgomp-1.dll imported by ggml-base.dll",
            "static runtime flags",
        ] {
            assert!(e.contains(want), "{want}: {e}");
        }
    }
}
