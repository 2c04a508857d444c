//! The link-time `libcuda.so` stub that a full CUDA toolkit has in `lib64/stubs/` and
//! the wheels lack. It lets `CUDA::cuda_driver` link on a machine without a driver;
//! at run time the driver's own `libcuda.so.1` is loaded (the stub has that SONAME,
//! and there is no `libcuda.so.1` file beside it, so it is never loaded itself).

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{bail, Context, Result};

use crate::process::{Command, Processes};

/// Symbols that must be found, or the header was not read right: a plain one, and
/// one that exists only through a `#define cuXxx cuXxx_v2` alias.
const MUST_HAVE: &[&str] = &["cuInit", "cuMemAlloc_v2"];

/// Driver API function names declared in preprocessed `cuda.h` text.
pub(crate) fn driver_symbols(preprocessed: &str) -> BTreeSet<String> {
    let re = regex::Regex::new(r"\b(cu[A-Z][A-Za-z0-9_]*)\s*\(").expect("static regex");
    re.captures_iter(preprocessed)
        .map(|c| c[1].to_string())
        .collect()
}

/// Runs the C preprocessor of `host_cc` over `<root>/include/cuda.h`, so that
/// versioned aliases (`cuMemAlloc` -> `cuMemAlloc_v2`) resolve as in real code.
fn preprocess(
    root: &Path,
    host_cc: &Path,
    defines: &[&str],
    flags: &[String],
    procs: &dyn Processes,
) -> Result<String> {
    let header = root.join("include/cuda.h");
    let mut args: Vec<String> = flags.to_vec();
    args.extend(["-E".into(), "-P".into(), "-x".into(), "c".into()]);
    args.extend(defines.iter().map(|d| format!("-D{d}")));
    args.push(format!("-I{}", root.join("include").display()));
    args.push(header.display().to_string());
    let out = procs
        .output(&Command::new(host_cc).args(&args))
        .map_err(anyhow::Error::from)
        .with_context(|| {
            format!(
                "cannot run the host C compiler {} to read {}: set CC to a working C compiler",
                host_cc.display(),
                header.display()
            )
        })?;
    if !out.status.success() {
        bail!(
            "`{} -E {}` failed ({}): {}",
            host_cc.display(),
            header.display(),
            out.status,
            out.stderr.lines().take(5).collect::<Vec<_>>().join(" | ")
        );
    }
    Ok(out.stdout)
}

/// Builds `<root>/lib/stubs/libcuda.so` (SONAME `libcuda.so.1`) exporting every
/// driver API function of the toolkit's `cuda.h`, in both default-stream flavours.
/// `work` holds the generated C source. Returns the number of symbols.
#[cfg(test)]
pub(crate) fn build(
    root: &Path,
    host_cc: &Path,
    work: &Path,
    procs: &dyn Processes,
) -> Result<usize> {
    build_with_flags(root, host_cc, &[], work, procs)
}

/// [`build`], with `flags` before every argument of the C compiler (`--sysroot=...`).
pub(crate) fn build_with_flags(
    root: &Path,
    host_cc: &Path,
    flags: &[String],
    work: &Path,
    procs: &dyn Processes,
) -> Result<usize> {
    let mut symbols = driver_symbols(&preprocess(root, host_cc, &[], flags, procs)?);
    symbols.extend(driver_symbols(&preprocess(
        root,
        host_cc,
        &["CUDA_API_PER_THREAD_DEFAULT_STREAM"],
        flags,
        procs,
    )?));
    if let Some(missing) = MUST_HAVE.iter().find(|s| !symbols.contains(**s)) {
        bail!(
            "preprocessing {} found {} driver functions but not {missing}: the header is not CUDA's cuda.h, \
             or {} is not a C compiler (set CC)",
            root.join("include/cuda.h").display(),
            symbols.len(),
            host_cc.display()
        );
    }
    // Bodies return CUDA_ERROR_STUB_LIBRARY (34), as NVIDIA's stub does, should it ever be loaded.
    let source: String = symbols
        .iter()
        .map(|s| format!("int {s}(void) {{ return 34; }}\n"))
        .collect();
    let c_file = work.join("libcuda-stub.c");
    fs_err::write(&c_file, source).with_context(|| format!("cannot write {}", c_file.display()))?;
    let stubs = root.join("lib/stubs");
    fs_err::create_dir_all(&stubs).with_context(|| format!("cannot create {}", stubs.display()))?;
    let out = stubs.join("libcuda.so");
    let args: Vec<String> = flags
        .iter()
        .cloned()
        .chain([
            "-shared".to_string(),
            "-fPIC".into(),
            "-Wl,-soname,libcuda.so.1".into(),
            "-o".into(),
            out.display().to_string(),
            c_file.display().to_string(),
        ])
        .collect();
    let run = procs.output(&Command::new(host_cc).args(&args))?;
    if !run.success() {
        bail!(
            "cannot build the libcuda stub with `{} {}`: {}",
            host_cc.display(),
            args.join(" "),
            run.stderr.lines().take(5).collect::<Vec<_>>().join(" | ")
        );
    }
    Ok(symbols.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::System;

    #[test]
    fn symbols_follow_aliases_and_skip_types() {
        let text = "typedef int CUresult;\ntypedef void (*CUhostFn)(void *);\nCUresult cuInit(unsigned int Flags);\n\
                    CUresult cuMemAlloc_v2 (CUdeviceptr *dptr, size_t bytesize);\nint abs(int);\ncuuint32_t x;\n";
        let got: Vec<String> = driver_symbols(text).into_iter().collect();
        assert_eq!(got, ["cuInit", "cuMemAlloc_v2"]);
    }

    #[test]
    fn builds_a_stub_with_the_driver_soname() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("root");
        std::fs::create_dir_all(root.join("include")).unwrap();
        std::fs::write(
            root.join("include/cuda.h"),
            "#ifndef CUDA_API_PER_THREAD_DEFAULT_STREAM\n#define cuMemcpy cuMemcpy_v2\n#else\n#define cuMemcpy cuMemcpy_ptds\n#endif\n\
             #define cuMemAlloc cuMemAlloc_v2\nint cuInit(unsigned);\nint cuMemAlloc(void **, unsigned long);\nint cuMemcpy(void *);\n",
        )
        .unwrap();
        let n = build(&root, Path::new("cc"), d.path(), &System).unwrap();
        assert_eq!(n, 4, "cuInit, cuMemAlloc_v2, cuMemcpy_v2, cuMemcpy_ptds");
        let data = std::fs::read(root.join("lib/stubs/libcuda.so")).unwrap();
        let elf = object::File::parse(&*data).unwrap();
        use object::{Object, ObjectSymbol};
        let names: BTreeSet<String> = elf
            .dynamic_symbols()
            .filter(|s| s.is_definition())
            .map(|s| s.name().unwrap().to_string())
            .collect();
        assert!(
            names.contains("cuMemcpy_ptds")
                && names.contains("cuMemAlloc_v2")
                && !names.contains("cuMemAlloc"),
            "{names:?}"
        );
        assert_eq!(
            crate::binary::elf::parse(&data).unwrap().soname.as_deref(),
            Some("libcuda.so.1")
        );
    }

    #[test]
    fn a_header_without_the_driver_api_is_refused() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("include")).unwrap();
        std::fs::write(d.path().join("include/cuda.h"), "int cuInit(unsigned);\n").unwrap();
        let e = build(d.path(), Path::new("cc"), d.path(), &System)
            .unwrap_err()
            .to_string();
        assert!(e.contains("cuMemAlloc_v2") && e.contains("cuda.h"), "{e}");
    }
}
