//! Import libraries (`.lib`) for the DLLs of a Windows toolkit that ships none.
//!
//! NVIDIA's `win_amd64` cuBLAS wheels carry `cublas64_13.dll` and `cublasLt64_13.dll`
//! but not `cublas.lib` / `cublasLt.lib`, which MSVC's linker needs to link against
//! them (llama.cpp's ggml-cuda links `CUDA::cublas` and `CUDA::cublasLt`). An import
//! library only names what a DLL exports, so it is made here from the DLL's own
//! export table (read with `object`) and written in MSVC's short import format by
//! `implib` (LLVM's COFFImportFile, ported by rust-lang's `ar_archive_writer`): no
//! Windows tool, the same bytes on every machine.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use implib::def::{ModuleDef, ShortExport};
use implib::{Flavor, ImportLibrary, MachineType};

/// Where a toolkit's DLLs are (`bin/x86_64`, CUDA 13's layout) and its import
/// libraries go (`lib/x64`).
pub const DLL_DIR: &str = "bin/x86_64";
pub const LIB_DIR: &str = "lib/x64";

/// The import library's name for a CUDA DLL: `cublas64_13.dll` -> `cublas.lib`,
/// `cublasLt64_13.dll` -> `cublasLt.lib` (the names CMake's FindCUDAToolkit and
/// NVIDIA's own installer use). None for a name without the `64_<major>` suffix.
pub fn lib_name(dll: &str) -> Option<String> {
    let stem = dll.strip_suffix(".dll")?;
    let (base, major) = stem.rsplit_once("64_")?;
    (!base.is_empty() && !major.is_empty() && major.bytes().all(|b| b.is_ascii_digit()))
        .then(|| format!("{base}.lib"))
}

/// The MSVC import library of the 64-bit DLL `dll`: every name it exports, data
/// marked as data, imported from the DLL's own file name.
pub fn import_library(dll: &Path) -> Result<Vec<u8>> {
    let data = fs_err::read(dll)?;
    let exports = crate::binary::pe::exports(&data)
        .with_context(|| format!("{}: cannot read its exports", dll.display()))?;
    anyhow::ensure!(
        !exports.is_empty(),
        "{} exports no names: no import library can be made for it",
        dll.display()
    );
    let def = ModuleDef {
        import_name: dll
            .file_name()
            .context("a DLL path has a file name")?
            .to_string_lossy()
            .into_owned(),
        exports: exports
            .into_iter()
            .map(|e| ShortExport {
                name: e.name,
                data: e.data,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let mut out = std::io::Cursor::new(Vec::new());
    ImportLibrary::from_def(def, MachineType::AMD64, Flavor::Msvc)
        .write_to(&mut out)
        .with_context(|| format!("cannot write the import library of {}", dll.display()))?;
    Ok(out.into_inner())
}

/// Writes `lib/x64/<name>.lib` for each CUDA DLL in `root/bin/x86_64` that has none,
/// and returns the libraries written (paths relative to `root`), in name order.
pub fn complete(root: &Path) -> Result<Vec<PathBuf>> {
    let dlls = root.join(DLL_DIR);
    if !dlls.is_dir() {
        return Ok(Vec::new());
    }
    let mut names: Vec<String> = fs_err::read_dir(&dlls)?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<std::io::Result<_>>()?;
    names.sort();
    let mut written = Vec::new();
    for dll in names {
        let Some(lib) = lib_name(&dll) else { continue };
        let rel = Path::new(LIB_DIR).join(&lib);
        if root.join(&rel).exists() {
            continue; // the wheels ship it (cudart.lib, cuda.lib)
        }
        let bytes = import_library(&dlls.join(&dll))?;
        fs_err::create_dir_all(root.join(LIB_DIR))?;
        fs_err::write(root.join(&rel), bytes)?;
        written.push(rel);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lib_names_follow_cuda_dll_names() {
        assert_eq!(lib_name("cublas64_13.dll").as_deref(), Some("cublas.lib"));
        assert_eq!(
            lib_name("cublasLt64_13.dll").as_deref(),
            Some("cublasLt.lib")
        );
        assert_eq!(lib_name("cudart64_13.dll").as_deref(), Some("cudart.lib"));
        for not in [
            "nvcuda.dll",
            "64_13.dll",
            "cublas64_.dll",
            "cublas64_1x.dll",
            "cublas64_13.so",
        ] {
            assert_eq!(lib_name(not), None, "{not}");
        }
    }

    /// A real DLL from mingw-w64 (exports `f`): its import library names `f` and
    /// the DLL, and is the same bytes twice.
    #[test]
    fn import_library_of_a_real_dll() {
        let d = tempfile::tempdir().unwrap();
        let Some((dll, _exe)) = crate::binary::pe::test_libs::mingw_pair(d.path()) else {
            return;
        };
        let path = d.path().join("x64_1.dll");
        fs_err::write(&path, dll).unwrap();
        let lib = import_library(&path).unwrap();
        assert!(lib.starts_with(b"!<arch>\n"), "an ar archive");
        let has = |needle: &[u8]| lib.windows(needle.len()).any(|w| w == needle);
        assert!(
            has(b"__imp_f\0") && has(b"x64_1.dll\0"),
            "names f and its DLL"
        );
        assert_eq!(import_library(&path).unwrap(), lib, "deterministic");
        // Not a DLL with exports: refused with the path.
        fs_err::write(&path, b"MZ not really").unwrap();
        let e = format!("{:#}", import_library(&path).unwrap_err());
        assert!(e.contains("x64_1.dll: cannot read its exports"), "{e}");
    }
}
