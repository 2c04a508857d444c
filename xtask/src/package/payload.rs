//! The files that go into an artifact, collected from the build and checked:
//! each library once, RUNPATH `$ORIGIN` only, every library the recipe names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::binary::elf::{self, ElfInfo};
use crate::manifest::FileEntry;
use crate::platform::BinaryFormat;

/// One file of the artifact, by its path inside it.
#[derive(Debug, Clone)]
pub struct Entry {
    pub data: Vec<u8>,
    pub executable: bool,
}

/// Files by path, kept sorted.
#[derive(Debug, Clone, Default)]
pub struct Payload {
    pub files: BTreeMap<String, Entry>,
}

impl Payload {
    pub fn add(&mut self, path: String, data: Vec<u8>, executable: bool) -> Result<()> {
        if self
            .files
            .insert(path.clone(), Entry { data, executable })
            .is_some()
        {
            bail!("`{path}` would be stored twice in the artifact");
        }
        Ok(())
    }

    pub fn entries(&self) -> BTreeMap<String, FileEntry> {
        self.files
            .iter()
            .map(|(p, e)| {
                (
                    p.clone(),
                    FileEntry {
                        size: e.data.len() as u64,
                        sha256: crate::digest::sha256_bytes(&e.data),
                    },
                )
            })
            .collect()
    }

    /// ELF facts for every ELF file.
    pub fn elf_infos(&self) -> Result<BTreeMap<String, ElfInfo>> {
        self.files
            .iter()
            .filter(|(_, e)| elf::is_elf(&e.data))
            .map(|(p, e)| {
                Ok((
                    p.clone(),
                    elf::parse(&e.data).with_context(|| format!("cannot read ELF file {p}"))?,
                ))
            })
            .collect()
    }
}

/// Collected ELF files: file name -> (path, ELF facts).
pub type Libs = BTreeMap<String, (PathBuf, ElfInfo)>;

/// `libNAME.so`: packaging reads ELF only so far ([`BinaryFormat::Elf`]).
pub fn lib_file(name: &str) -> String {
    BinaryFormat::Elf.library_file(name)
}

/// Reads the shared libraries in `dir` (regular files named `lib*.so*`). A
/// symlink or a second name for the same SONAME is an error: a library is
/// stored exactly once.
pub fn collect_libraries(dir: &Path) -> Result<Libs> {
    let mut out = BTreeMap::new();
    let rd = fs_err::read_dir(dir)
        .with_context(|| format!("the build left no library dir {}", dir.display()))?;
    let mut paths: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
    paths.sort();
    for p in paths {
        let name = p
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        if !BinaryFormat::Elf.is_library_file(&name) {
            continue;
        }
        let meta = fs_err::symlink_metadata(&p)?;
        if meta.file_type().is_symlink() {
            bail!(
                "{} is a symlink: the build made versioned library names, so the library would be stored twice; \
                 the plan sets CMAKE_PLATFORM_NO_VERSIONED_SONAME=ON to prevent this",
                p.display()
            );
        }
        let info = elf::read(&p)?;
        if let Some(so) = &info.soname {
            if so != &name {
                bail!(
                    "{} has SONAME {so}: a library must be stored under the name it is loaded by",
                    p.display()
                );
            }
        }
        out.insert(name, (p, info));
    }
    Ok(out)
}

/// Adds the backend modules `names` (`ggml-cpu-haswell`) from `dir`: each must be there,
/// a regular file, and not already collected under its name.
pub fn collect_modules(dir: &Path, names: &[String], libs: &mut Libs) -> Result<()> {
    for n in names {
        let file = lib_file(n);
        let p = dir.join(&file);
        let meta = fs_err::symlink_metadata(&p).with_context(|| {
            format!("the build did not produce the CPU backend variant {file} in {}: the plan ships it (cpu_variants)", dir.display())
        })?;
        if !meta.is_file() {
            bail!(
                "{} is not a regular file: a backend module is stored once, as a file",
                p.display()
            );
        }
        let info = elf::read(&p)?;
        if libs.insert(file.clone(), (p, info)).is_some() {
            bail!(
                "{file} was collected twice (from the install step and from {})",
                dir.display()
            );
        }
    }
    Ok(())
}

/// Checks RUNPATHs: only `$ORIGIN`-relative entries are allowed.
pub fn check_runpaths<'a>(
    infos: impl IntoIterator<Item = (&'a String, &'a ElfInfo)>,
) -> Result<()> {
    let mut bad = Vec::new();
    for (name, info) in infos {
        let abs = elf::absolute_runpaths(info);
        if !abs.is_empty() {
            bad.push(format!("{name}: RUNPATH {}", info.runpath.join(":")));
        }
    }
    if !bad.is_empty() {
        bail!("build-machine paths in RUNPATH (the artifact would look for libraries on the build machine):\n  {}", bad.join("\n  "));
    }
    Ok(())
}

/// Refuses ELF files that carry their own copy of the C++ runtime
/// ([`ElfInfo::cxx_runtime`]): two such libraries in one process share some of the
/// runtime's state and not the rest, and crash; so do one such library and libstdc++.so.6. `cxx` names the compiler that linked them.
/// `shared`: the one file the plan builds to be the C++ runtime of an archive's tools
/// ([`crate::plan::Plan::shared_cxx_runtime`]), which exports it by design; a wheel has none.
pub fn check_cxx_runtime<'a>(
    infos: impl IntoIterator<Item = (&'a String, &'a ElfInfo)>,
    cxx: &str,
    shared: Option<&str>,
) -> Result<()> {
    let bad: Vec<String> = infos
        .into_iter()
        .filter(|(name, _)| Some(name.as_str()) != shared)
        .filter_map(|(name, info)| {
            let c = info.cxx_runtime?;
            Some(format!("{name} (defines {}, from {})", c.symbol, c.library))
        })
        .collect();
    if !bad.is_empty() {
        bail!(
            "the build linked the C++ runtime statically into shared libraries, with its symbols exported:\n  {}\n\
             a process that also loads libstdc++.so.6 (numpy does) or another such library binds some C++ calls \
             to one copy and some to the other, and crashes (measured: llama_cpp's Llama() in llama_model::print_info). The compiler {cxx} \
             links libstdc++ this way (it has no libstdc++.so, or its specs add -static-libstdc++). \
             Build with a compiler that links it as libstdc++.so.6 (--host-cc /usr/bin/g++, or unset CC/CXX); nothing was written to dist/",
            bad.join("\n  ")
        );
    }
    Ok(())
}

/// Libraries named in the recipe that the build did not produce.
pub fn missing(required: &[String], have: &BTreeSet<String>) -> Vec<String> {
    required
        .iter()
        .map(|n| lib_file(n))
        .filter(|f| !have.contains(f))
        .collect()
}
