//! What a shared library or executable needs: NEEDED, SONAME, RUNPATH, and the
//! symbol versions it requires from each library (GLIBC_2.34, GLIBCXX_3.4.29).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context, Result};
use object::elf;
use object::read::elf::{Dyn, ElfFile64, FileHeader};
use object::Endianness;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ElfInfo {
    pub soname: Option<String>,
    pub needed: Vec<String>,
    /// DT_RUNPATH (or the older DT_RPATH), split at `:`.
    pub runpath: Vec<String>,
    /// For each needed library file, the symbol versions required from it.
    pub version_needs: BTreeMap<String, BTreeSet<String>>,
    /// A C++ runtime symbol this file defines and exports (`std::locale::classic()`):
    /// the file carries its own copy of libstdc++ or libc++ (see [`CXX_RUNTIME_MARKERS`]).
    /// Never in a manifest: packaging refuses such a file.
    #[serde(skip)]
    #[schemars(skip)]
    pub cxx_runtime: Option<CxxRuntime>,
    /// The CPU the file's code is for (`e_machine`): x86-64, aarch64, or `None` for any
    /// other. Read from the file every time, never from a manifest.
    #[serde(skip)]
    #[schemars(skip)]
    pub arch: Option<crate::platform::Arch>,
}

/// Symbols only the C++ runtime library itself defines: `std::locale::classic()`
/// of libstdc++ and of libc++. A shared library that exports one was linked with
/// the runtime's static archive (`-static-libstdc++`, or a compiler that has no
/// `libstdc++.so`). It then has its own copy of the runtime's global state (locales,
/// facet ids, iostreams), and in a process that also has libstdc++.so.6 (numpy loads
/// it) the dynamic linker binds some calls to one copy and some to the other: measured,
/// a llama-cpp-python wheel whose libggml.so was linked so crashed in
/// `llama_model::print_info` on its first `std::stringstream`.
pub const CXX_RUNTIME_MARKERS: [CxxRuntime; 2] = [
    CxxRuntime {
        symbol: "_ZNSt6locale7classicEv",
        library: "libstdc++",
    },
    CxxRuntime {
        symbol: "_ZNSt3__16locale7classicEv",
        library: "libc++",
    },
];

/// A marker symbol of [`CXX_RUNTIME_MARKERS`] and the C++ runtime that defines it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CxxRuntime {
    pub symbol: &'static str,
    pub library: &'static str,
}

/// Whether `data` starts like an ELF file.
/// The arch an ELF `e_machine` names, where it is one the tool builds for.
pub fn arch_of(e_machine: object::elf::Machine) -> Option<crate::platform::Arch> {
    match e_machine {
        object::elf::EM_X86_64 => Some(crate::platform::Arch::X86_64),
        object::elf::EM_AARCH64 => Some(crate::platform::Arch::Aarch64),
        _ => None,
    }
}

/// How an ELF `e_machine` is named in messages: the arch, or the number.
pub fn machine_name(arch: Option<crate::platform::Arch>) -> String {
    arch.map_or_else(
        || "another CPU (neither x86_64 nor aarch64)".to_string(),
        |a| a.to_string(),
    )
}

pub fn is_elf(data: &[u8]) -> bool {
    data.starts_with(b"\x7fELF")
}

pub fn read(path: &Path) -> Result<ElfInfo> {
    let data = fs_err::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    parse(&data).with_context(|| format!("{} is not a readable 64-bit ELF file", path.display()))
}

pub fn parse(data: &[u8]) -> Result<ElfInfo> {
    parse_ref(data)
}

/// The names of the functions and data a 64-bit ELF shared library exports (its dynamic
/// symbols that are defined and global or weak): what `dlsym` finds.
pub fn exports(data: &[u8]) -> Result<BTreeSet<String>> {
    use object::{Object, ObjectSymbol};
    let file = ElfFile64::<Endianness>::parse(data)?;
    Ok(file
        .dynamic_symbols()
        .filter(|s| s.is_definition() && s.is_global())
        .filter_map(|s| s.name().ok().map(str::to_string))
        .collect())
}

/// The device code in a 64-bit ELF file: the entries of its `.nv_fatbin` section (what
/// the CUDA runtime loads) and of `__nv_relfatbin` (relocatable device code from
/// `-rdc`, which the runtime does not load), each with that section's bytes.
#[derive(Default)]
pub struct DeviceCode {
    /// Whether it has either section at all (even an empty one).
    pub present: bool,
    pub fatbin: Vec<u8>,
    pub entries: Vec<crate::cuda::fatbin::FatbinEntry>,
    pub relfatbin: Vec<crate::cuda::fatbin::FatbinEntry>,
}

impl DeviceCode {
    /// Adds one device code section's entries: the fat binary the runtime loads
    /// (`loaded`: `.nv_fatbin`, `.nv_fatb` in a PE file) or relocatable code (`-rdc`).
    pub(crate) fn add_section(&mut self, loaded: bool, name: &[u8], bytes: &[u8]) -> Result<()> {
        self.present = true;
        let entries = crate::cuda::fatbin::parse(bytes)
            .with_context(|| format!("section {}", String::from_utf8_lossy(name)))?;
        if loaded {
            self.fatbin = bytes.to_vec();
            self.entries = entries;
        } else {
            self.relfatbin = entries;
        }
        Ok(())
    }
}

pub fn device_code(data: &[u8]) -> Result<DeviceCode> {
    device_code_ref(data)
}

/// [`device_code`] of a file, reading its headers and only the device code sections
/// (a CUDA library is mostly host code: libggml-cuda is ~50 MB, its `.nv_fatbin` ~20).
pub fn device_code_file(file: &std::fs::File) -> Result<DeviceCode> {
    device_code_ref(&object::ReadCache::new(file))
}

fn device_code_ref<'a, R: object::ReadRef<'a>>(data: R) -> Result<DeviceCode> {
    use object::read::elf::SectionHeader;
    let file = elf::FileHeader64::<Endianness>::parse(data)?;
    let endian = file.endian()?;
    let sections = file.sections(endian, data)?;
    let mut out = DeviceCode::default();
    for s in sections.iter() {
        let name = sections.section_name(endian, s)?;
        if name != b".nv_fatbin" && name != b"__nv_relfatbin" {
            continue;
        }
        out.add_section(name == b".nv_fatbin", name, s.data(endian, data)?)?;
    }
    Ok(out)
}

/// [`parse`] on a file, reading only the headers and sections it needs: memory
/// stays small whatever the file's size.
pub fn parse_file(file: &std::fs::File) -> Result<ElfInfo> {
    parse_ref(&object::ReadCache::new(file))
}

fn parse_ref<'a, R: object::ReadRef<'a>>(data: R) -> Result<ElfInfo> {
    let file = ElfFile64::<Endianness, R>::parse(data)?;
    let endian = file.endian();
    let sections = file.elf_header().sections(endian, data)?;
    let mut info = ElfInfo {
        arch: arch_of(file.elf_header().e_machine(endian)),
        ..ElfInfo::default()
    };
    if let Some((dyns, strindex)) = sections.dynamic(endian, data)? {
        let strings = sections.strings(endian, data, strindex)?;
        for d in dyns {
            // `Dyn::string`, for any ReadRef (it takes a string table over a slice only).
            let text = || -> Result<String> {
                let at: u64 = d.d_val(endian);
                let s = u32::try_from(at)
                    .ok()
                    .and_then(|at| strings.get(at).ok())
                    .context("invalid ELF dynamic string offset")?;
                Ok(String::from_utf8_lossy(s).into_owned())
            };
            match d.tag(endian) {
                elf::DT_NEEDED => info.needed.push(text()?),
                elf::DT_SONAME => info.soname = Some(text()?),
                elf::DT_RUNPATH | elf::DT_RPATH => info.runpath.extend(
                    text()?
                        .split(':')
                        .filter(|s| !s.is_empty())
                        .map(str::to_string),
                ),
                _ => {}
            }
        }
    }
    if let Some((mut needs, strindex)) = sections.gnu_verneed(endian, data)? {
        let strings = sections.strings(endian, data, strindex)?;
        while let Some((need, mut auxes)) = needs.next()? {
            let file = String::from_utf8_lossy(need.file(endian, strings)?).into_owned();
            let set = info.version_needs.entry(file).or_default();
            while let Some(aux) = auxes.next()? {
                set.insert(String::from_utf8_lossy(aux.name(endian, strings)?).into_owned());
            }
        }
    }
    info.cxx_runtime = cxx_runtime_marker(&sections, endian, data)?;
    Ok(info)
}

/// The first of [`CXX_RUNTIME_MARKERS`] that the dynamic symbol table defines.
fn cxx_runtime_marker<'a, R: object::ReadRef<'a>>(
    sections: &object::read::elf::SectionTable<'a, elf::FileHeader64<Endianness>, R>,
    endian: Endianness,
    data: R,
) -> Result<Option<CxxRuntime>> {
    use object::read::elf::Sym;
    let symbols = sections.symbols(endian, data, elf::SHT_DYNSYM)?;
    for sym in symbols.iter() {
        if sym.st_shndx(endian) == elf::SHN_UNDEF || sym.st_bind() == elf::STB_LOCAL {
            continue;
        }
        let name = symbols.symbol_name(endian, sym)?;
        if let Some(m) = CXX_RUNTIME_MARKERS
            .iter()
            .find(|m| m.symbol.as_bytes() == name)
        {
            return Ok(Some(*m));
        }
    }
    Ok(None)
}

/// A RUNPATH entry that points at a fixed place on the build machine (not
/// relative to the library's own dir: [`crate::platform::origin_relative`]).
pub fn absolute_runpaths(info: &ElfInfo) -> Vec<&str> {
    info.runpath
        .iter()
        .filter(|p| !crate::platform::origin_relative(p))
        .map(|s| s.as_str())
        .collect()
}

/// Real libraries for tests.
#[cfg(test)]
pub mod test_libs {
    use std::path::Path;

    /// `g++` builds `lib<name>.so` in `dir` from a function that uses `std::stringstream`,
    /// with libstdc++ linked as `libstdc++.so.6`, or statically (`static_runtime`).
    pub fn cxx_library(dir: &Path, name: &str, static_runtime: bool) -> Vec<u8> {
        let src = dir.join(format!("{name}.cc"));
        fs_err::write(&src, "#include <sstream>\nextern \"C\" int digits(int x) { std::stringstream s; s << x; return (int)s.str().size(); }\n").unwrap();
        let out = dir.join(format!("lib{name}.so"));
        let mut c = std::process::Command::new("g++");
        c.args(["-shared", "-fPIC", "-o"]).arg(&out).arg(&src);
        if static_runtime {
            c.arg("-static-libstdc++");
        }
        let o = c.output().expect("g++ runs: the tests build C++ libraries");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        fs_err::read(&out).unwrap()
    }

    /// `gcc` builds `lib<name>.so` in `dir` with `fatbin` as its `.nv_fatbin` section
    /// and, with `cudart`, a DT_NEEDED on `libcudart.so.<cudart>` (a stub made beside it).
    pub fn cuda_library(dir: &Path, name: &str, fatbin: &[u8], cudart: Option<u32>) -> Vec<u8> {
        let bytes: Vec<String> = fatbin.iter().map(|b| b.to_string()).collect();
        let src = dir.join(format!("{name}.c"));
        fs_err::write(
            &src,
            format!(
                "__attribute__((section(\".nv_fatbin\"), used, aligned(8))) const unsigned char fatbin[] = {{{}}};\nint forge_kernel(void) {{ return 1; }}\n",
                bytes.join(",")
            ),
        )
        .unwrap();
        let out = dir.join(format!("lib{name}.so"));
        let mut c = std::process::Command::new("gcc");
        c.args(["-shared", "-fPIC", "-o"]).arg(&out).arg(&src);
        if let Some(major) = cudart {
            let stub_src = dir.join("cudart_stub.c");
            fs_err::write(&stub_src, "int cudaStub(void) { return 0; }\n").unwrap();
            let soname = format!("libcudart.so.{major}");
            let stub = dir.join(&soname);
            let o = std::process::Command::new("gcc")
                .args(["-shared", "-fPIC", &format!("-Wl,-soname,{soname}"), "-o"])
                .arg(&stub)
                .arg(&stub_src)
                .output()
                .expect("gcc runs");
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            c.arg("-Wl,--no-as-needed").arg(&stub);
        }
        let o = c.output().expect("gcc runs: the tests build C libraries");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        fs_err::read(&out).unwrap()
    }
}
