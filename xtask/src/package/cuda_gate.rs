//! CUDA-specific packaging: RUNPATHs that find the runtime wheels, bundled
//! runtime libraries, and the gate on what nvcc really emitted (read by the fat
//! binary reader, [`crate::cuda::fatbin`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::binary::elf::{self, ElfInfo};
use crate::cuda::{self, ArchList};
use crate::plan::cuda::PlannedCuda;
use crate::platform::ORIGIN;

use crate::package::payload::Libs;
use crate::process::{Command, Processes};

/// The RUNPATH a library should have: the runtime dirs if it loads the CUDA
/// runtime, `$ORIGIN` ([`ORIGIN`]) otherwise.
fn wanted_runpath(info: &ElfInfo, cuda: &PlannedCuda) -> Vec<String> {
    let loads_runtime = info
        .needed
        .iter()
        .any(|n| cuda.provided.contains(n) && n != "libcuda.so.1");
    if loads_runtime {
        cuda.runpath.clone()
    } else {
        vec![ORIGIN.to_string()]
    }
}

/// Rewrites RUNPATHs that differ from the plan's, on copies in `scratch` (the
/// build's own files stay as CMake left them).
pub fn fix_runpaths(
    libs: &mut Libs,
    cuda: &PlannedCuda,
    patchelf: &Path,
    scratch: &Path,
    procs: &dyn Processes,
) -> Result<()> {
    fs_err::create_dir_all(scratch)?;
    for (name, (path, info)) in libs.iter_mut() {
        let want = wanted_runpath(info, cuda);
        if info.runpath == want {
            continue;
        }
        let copy = scratch.join(name);
        fs_err::copy(&*path, &copy).with_context(|| format!("cannot copy {}", path.display()))?;
        let out = procs.output(
            &Command::new(patchelf)
                .arg("--set-rpath")
                .arg(want.join(":"))
                .arg(&copy)
                .merge_stderr(),
        )?;
        if !out.success() {
            bail!("patchelf could not set RUNPATH of {name}: {}", out.stdout);
        }
        *info = elf::read(&copy)?;
        if info.runpath != want {
            bail!(
                "{name}: RUNPATH is {:?} after patchelf, expected {:?}",
                info.runpath,
                want
            );
        }
        *path = copy;
    }
    Ok(())
}

/// The runtime libraries to bundle, found in the toolkit (`--bundle-cuda-runtime`).
pub fn bundled(cuda: &PlannedCuda, root: &Path) -> Result<Vec<(String, PathBuf)>> {
    // Linux toolkits keep them in lib64 (or targets/x86_64-linux/lib), Windows ones in
    // bin (12.x) or bin\x64 (13.x installers; bin/x86_64 from the index's wheels).
    let subdirs = [
        "lib64",
        "lib",
        "targets/x86_64-linux/lib",
        "bin/x86_64",
        "bin/x64",
        "bin",
    ];
    cuda.bundle
        .iter()
        .map(|name| {
            let p = subdirs
                .iter()
                .map(|d| root.join(d).join(name))
                .find(|p| p.is_file())
                .with_context(|| {
                    format!(
                        "--bundle-cuda-runtime: {name} is not in {} ({})",
                        root.display(),
                        subdirs.join(", ")
                    )
                })?;
            Ok((name.clone(), p.canonicalize()?))
        })
        .collect()
}

/// The SASS and PTX one library carries where the CUDA runtime loads them
/// (`.nv_fatbin`), read by [`crate::cuda::fatbin`]: the `a`/`f` suffixes kept. None
/// when it has no device code section at all (neither `.nv_fatbin` nor `__nv_relfatbin`;
/// in a PE DLL `.nv_fatb` and `__nv_rel`, [`crate::binary::pe::device_code`]).
pub fn embedded(lib: &Path) -> Result<Option<BTreeSet<cuda::EmbeddedCode>>> {
    let file = fs_err::File::open(lib)?;
    let mut magic = [0u8; 2];
    std::io::Read::read_exact(&mut file.file(), &mut magic)
        .with_context(|| format!("{}: too short for a library", lib.display()))?;
    let dc = if crate::binary::pe::is_pe(&magic) {
        crate::binary::pe::device_code_file(file.file())
    } else {
        elf::device_code_file(file.file())
    }
    .with_context(|| format!("{}: cannot read its device code", lib.display()))?;
    Ok(dc.present.then(|| cuda::fatbin::codes(&dc.entries)))
}

/// Runs the gate on every library with device code. Returns, per library, the
/// targets found (`SASS sm_120a`); fails if any is unexpected or missing.
pub fn gate<'a>(
    libs: impl IntoIterator<Item = (&'a String, &'a Path)>,
    expected: &ArchList,
) -> Result<BTreeMap<String, Vec<String>>> {
    let mut found = BTreeMap::new();
    let mut problems = Vec::new();
    for (name, path) in libs {
        let Some(codes) = embedded(path)? else {
            continue;
        };
        if let Err(ps) = cuda::gate(expected, &codes) {
            problems.extend(ps.into_iter().map(|p| format!("{name}: {p}")));
        }
        found.insert(name.clone(), codes.iter().map(|c| c.to_string()).collect());
    }
    if found.is_empty() {
        problems.push(format!(
            "no library has CUDA device code: expected {expected}"
        ));
    }
    if !problems.is_empty() {
        bail!(
            "CUDA code gate failed (asked for {expected}):\n  {}",
            problems.join("\n  ")
        );
    }
    Ok(found)
}
