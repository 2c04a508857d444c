//! CUDA-specific packaging: RUNPATHs that find the runtime wheels, bundled
//! runtime libraries, and the cuobjdump gate on what nvcc really emitted.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::cuda::{self, ArchList};
use crate::package::elf::{self, ElfInfo};
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
    let dirs = [
        root.join("lib64"),
        root.join("lib"),
        root.join("targets/x86_64-linux/lib"),
    ];
    cuda.bundle
        .iter()
        .map(|name| {
            let p = dirs.iter().map(|d| d.join(name)).find(|p| p.exists()).with_context(|| {
                format!("--bundle-cuda-runtime: {name} is not in {} (lib64, lib or targets/x86_64-linux/lib)", root.display())
            })?;
            Ok((name.clone(), p.canonicalize()?))
        })
        .collect()
}

/// Whether an ELF file carries CUDA device code.
pub fn has_device_code(path: &Path) -> Result<bool> {
    use object::{Object, ObjectSection};
    // Headers and section names only: a library of any size is not read whole.
    let data = object::ReadCache::new(fs_err::File::open(path)?);
    let file = object::File::parse(&data)
        .with_context(|| format!("{} is not an object file", path.display()))?;
    Ok(file.sections().any(|s| {
        s.name()
            .map(|n| n == ".nv_fatbin" || n == "__nv_relfatbin")
            .unwrap_or(false)
    }))
}

/// What cuobjdump sees in one library: SASS and PTX targets.
pub fn embedded(
    cuobjdump: &Path,
    lib: &Path,
    procs: &dyn Processes,
) -> Result<BTreeSet<cuda::EmbeddedCode>> {
    let mut all = BTreeSet::new();
    for flag in ["--list-elf", "--list-ptx"] {
        let out = procs.output(&Command::new(cuobjdump).arg(flag).arg(lib).merge_stderr())?;
        let text = out.stdout;
        if !out.status.success() && !text.contains("does not contain") {
            bail!(
                "{} {flag} {} failed: {text}",
                cuobjdump.display(),
                lib.display()
            );
        }
        all.extend(cuda::parse_list(&text).map_err(|e| anyhow::anyhow!("{}: {e}", lib.display()))?);
    }
    Ok(all)
}

/// Runs the gate on every library with device code. Returns, per library, the
/// targets found (`SASS sm_120a`); fails if any is unexpected or missing.
pub fn gate<'a>(
    libs: impl IntoIterator<Item = (&'a String, &'a Path)>,
    expected: &ArchList,
    cuobjdump: &Path,
    procs: &dyn Processes,
) -> Result<BTreeMap<String, Vec<String>>> {
    let mut found = BTreeMap::new();
    let mut problems = Vec::new();
    for (name, path) in libs {
        if !has_device_code(path)? {
            continue;
        }
        let codes = embedded(cuobjdump, path, procs)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::{Output, Recorder};

    fn fixture(name: &str) -> String {
        std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../tests/fixtures/toolchains")
                .join(name),
        )
        .unwrap()
    }

    /// cuobjdump runs through the process seam, once per listing; its recorded
    /// output gives the targets the gate checks.
    #[test]
    fn embedded_code_is_read_from_cuobjdump_through_the_process_seam() {
        let elf = fixture("cuobjdump-list-elf-120a-90.txt");
        let ptx = fixture("cuobjdump-list-ptx-none.txt");
        let procs = Recorder::replying(move |c| {
            Ok(match c.arg_strs()[0].as_str() {
                "--list-elf" => Output::ok(&elf, ""),
                _ => Output::ok(&ptx, ""),
            })
        });
        let found = embedded(
            Path::new("/cuda/bin/cuobjdump"),
            Path::new("/w/libggml-cuda.so"),
            &procs,
        )
        .unwrap();
        assert_eq!(
            procs.commands(),
            [
                "/cuda/bin/cuobjdump --list-elf /w/libggml-cuda.so",
                "/cuda/bin/cuobjdump --list-ptx /w/libggml-cuda.so"
            ]
        );
        assert!(procs.calls.borrow().iter().all(|c| c.cmd.merge_stderr));
        let found: Vec<String> = found.iter().map(|c| c.to_string()).collect();
        assert_eq!(found, ["SASS sm_90", "SASS sm_120a"]);
    }
}
