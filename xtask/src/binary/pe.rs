//! What a Windows DLL or EXE needs, for [`crate::platform::BinaryFormat::Pe`]: its
//! machine, whether it is a DLL, and the DLLs it imports (load-time and delay-load),
//! as [`crate::binary::elf`] reads NEEDED from ELF files. Packaging of Windows
//! artifacts (the import check, the win_amd64 tag) builds on this, and the CUDA gate
//! reads a DLL's device code here ([`device_code_file`]).

use std::path::Path;

use anyhow::{bail, Context, Result};
use object::pe;
use object::read::pe::{ImageNtHeaders, PeFile64};
use object::LittleEndian as LE;

/// The CPU a PE file is for (its COFF `Machine`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeMachine {
    X86_64,
    Arm64,
    Other(u16),
}

impl PeMachine {
    fn from_coff(m: pe::Machine) -> PeMachine {
        match m {
            pe::IMAGE_FILE_MACHINE_AMD64 => PeMachine::X86_64,
            pe::IMAGE_FILE_MACHINE_ARM64 => PeMachine::Arm64,
            other => PeMachine::Other(other.0),
        }
    }

    /// The wheel platform tag for the machine: `win_amd64`, `win_arm64`.
    pub fn wheel_platform(self) -> Option<&'static str> {
        match self {
            PeMachine::X86_64 => Some("win_amd64"),
            PeMachine::Arm64 => Some("win_arm64"),
            PeMachine::Other(_) => None,
        }
    }
}

/// What packaging needs from a PE file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeInfo {
    pub machine: PeMachine,
    /// A DLL (IMAGE_FILE_DLL), else an EXE.
    pub dll: bool,
    /// The DLLs it imports, as written in the file (Windows matches them without
    /// regard to case), in file order: the load-time imports, then the delay-load ones.
    pub imports: Vec<String>,
}

/// Whether `data` starts like a PE file (an MZ header).
pub fn is_pe(data: &[u8]) -> bool {
    data.starts_with(b"MZ")
}

/// [`parse_file`] on the file at `path`.
pub fn read(path: &Path) -> Result<PeInfo> {
    let file = fs_err::File::open(path)?;
    parse_file(file.file())
        .with_context(|| format!("{}: not a PE file packaging can read", path.display()))
}

/// Reads a 64-bit PE file; a 32-bit one is refused (every target is 64-bit).
pub fn parse(data: &[u8]) -> Result<PeInfo> {
    parse_ref(data)
}

/// [`parse`] on a file, through a read cache: the headers, the section table, the
/// COFF symbol table and the sections that hold the import directories, never the
/// whole file (see [`read_size`] for how much that is, from the headers alone).
pub fn parse_file(file: &std::fs::File) -> Result<PeInfo> {
    parse_ref(&object::ReadCache::new(file))
}

fn parse_ref<'a, R: object::ReadRef<'a>>(data: R) -> Result<PeInfo> {
    let kind = object::FileKind::parse(data)?;
    if kind != object::FileKind::Pe64 {
        bail!("{kind:?}, not a 64-bit PE file (PE32+)");
    }
    let file = PeFile64::parse(data)?;
    let header = file.nt_headers().file_header();
    let machine = PeMachine::from_coff(header.machine.get(LE));
    let dll = header.characteristics.get(LE).contains(pe::IMAGE_FILE_DLL);
    let mut imports = Vec::new();
    if let Some(table) = file.import_table()? {
        let mut descriptors = table.descriptors()?;
        while let Some(d) = descriptors.next()? {
            imports.push(name(table.name(d.name.get(LE))?)?);
        }
    }
    let sections = file.section_table();
    if let Some(table) = file
        .data_directories()
        .delay_load_import_table(data, &sections)?
    {
        let mut descriptors = table.descriptors()?;
        while let Some(d) = descriptors.next()? {
            imports.push(name(table.name(d.dll_name_rva.get(LE))?)?);
        }
    }
    Ok(PeInfo {
        machine,
        dll,
        imports,
    })
}

/// How many bytes [`parse_file`] and [`device_code_file`] read of a 64-bit PE file,
/// from its headers alone, read through a cache of their own: the DOS and NT headers,
/// the section table (refused, before it is read, when the headers list more than
/// `max_sections` sections), the COFF symbol table, the sections that hold the
/// import and delay-load import directories, and the device code sections
/// (`.nv_fatb`, `.nv_fatbin`, `__nv_rel*`), each as large as its headers claim.
pub fn read_size(file: &std::fs::File, max_sections: u64) -> Result<u64> {
    let cache = object::ReadCache::new(file);
    let data = &cache;
    let kind = object::FileKind::parse(data)?;
    if kind != object::FileKind::Pe64 {
        bail!("{kind:?}, not a 64-bit PE file (PE32+)");
    }
    let dos = pe::ImageDosHeader::parse(data)?;
    let mut offset: u64 = dos.nt_headers_offset().into();
    let nt_at = offset;
    let (nt, dirs) = pe::ImageNtHeaders64::parse(data, &mut offset)?;
    let header = nt.file_header();
    let nsections = u64::from(header.number_of_sections.get(LE));
    if nsections > max_sections {
        bail!(
            "its headers list {nsections} sections, over the {max_sections} read (a DLL has a few dozen): not a library a linker made; not read"
        );
    }
    let mut total = (offset - nt_at) + 64 + nsections * 40;
    let symbols_at = u64::from(header.pointer_to_symbol_table.get(LE));
    let strings = if symbols_at != 0 {
        let symbols = u64::from(header.number_of_symbols.get(LE)) * 18;
        total = total.saturating_add(symbols);
        let at = symbols_at.saturating_add(symbols);
        let len = object::ReadRef::read_at::<object::U32<LE>>(data, at)
            .map(|l| u64::from(l.get(LE)))
            .unwrap_or(0);
        object::read::StringTable::new(data, at, at.saturating_add(len))
    } else {
        object::read::StringTable::default()
    };
    let sections = nt.sections(data, offset)?;
    let directory = |i: usize| dirs.get(i).map(|d| d.virtual_address.get(LE));
    let imports = [
        directory(pe::IMAGE_DIRECTORY_ENTRY_IMPORT),
        directory(pe::IMAGE_DIRECTORY_ENTRY_DELAY_IMPORT),
    ];
    // What object reads for a directory: the whole section that holds its address.
    let mut counted = std::collections::BTreeSet::new();
    for va in imports.into_iter().flatten() {
        if let Some((i, s)) = sections
            .iter()
            .enumerate()
            .find(|(_, s)| s.pe_file_range_at(va).is_some())
        {
            if counted.insert(i) {
                total = total.saturating_add(u64::from(s.pe_file_range().1));
            }
        }
    }
    for (i, s) in sections.iter().enumerate() {
        let name = s.name(strings).unwrap_or_default();
        if is_device_code(name) && counted.insert(i) {
            total = total.saturating_add(u64::from(s.pe_file_range().1));
        }
    }
    Ok(total)
}

/// A section of device code: `.nv_fatb` (`.nv_fatbin` cut to 8 bytes), or `-rdc` code.
fn is_device_code(name: &[u8]) -> bool {
    matches!(name, b".nv_fatb" | b".nv_fatbin") || name.starts_with(b"__nv_rel")
}

/// The device code of a PE file, as [`crate::binary::elf::device_code`] reads an ELF
/// file's: nvcc with MSVC puts the fat binary in `.nv_fatb` (PE image section names
/// have 8 bytes: `.nv_fatbin` cut short), and `-rdc` code in `__nv_rel`. Reads the
/// headers and those sections only.
pub fn device_code_file(file: &std::fs::File) -> Result<crate::binary::elf::DeviceCode> {
    device_code_ref(&object::ReadCache::new(file))
}

/// [`device_code_file`] of a PE file in memory.
pub fn device_code(data: &[u8]) -> Result<crate::binary::elf::DeviceCode> {
    device_code_ref(data)
}

fn device_code_ref<'a, R: object::ReadRef<'a>>(data: R) -> Result<crate::binary::elf::DeviceCode> {
    use object::{Object, ObjectSection};
    let pe = PeFile64::parse(data)?;
    let mut out = crate::binary::elf::DeviceCode::default();
    for s in pe.sections() {
        let name = s.name_bytes()?;
        if is_device_code(name) {
            let loaded = matches!(name, b".nv_fatb" | b".nv_fatbin");
            out.add_section(loaded, name, s.data()?)?;
        }
    }
    Ok(out)
}

/// A name a DLL exports, and whether it is data (outside every executable section),
/// which an import library must mark as such.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeExport {
    pub name: String,
    pub data: bool,
}

/// The names a 64-bit DLL exports, in its name table's order (sorted, as the loader
/// needs); exports by ordinal only are left out, as nothing links them by name. A
/// name that is not printable ASCII without spaces is refused: it could not be
/// written to an import library faithfully.
pub fn exports(data: &[u8]) -> Result<Vec<PeExport>> {
    let kind = object::FileKind::parse(data)?;
    if kind != object::FileKind::Pe64 {
        bail!("{kind:?}, not a 64-bit PE file (PE32+)");
    }
    let file = PeFile64::parse(data)?;
    let Some(table) = file.export_table()? else {
        return Ok(Vec::new());
    };
    let sections = file.section_table();
    let mut out = Vec::new();
    for e in table.exports()? {
        let Some(raw) = e.name else { continue };
        let name = match std::str::from_utf8(raw) {
            Ok(n) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_graphic()) => n.to_string(),
            _ => bail!(
                "export {} has the name {raw:?}, which is not printable ASCII",
                e.ordinal
            ),
        };
        let data = match e.target {
            object::read::pe::ExportTarget::Address(rva) => {
                sections.section_containing(rva).is_some_and(|s| {
                    !s.characteristics
                        .get(LE)
                        .contains(pe::IMAGE_SCN_MEM_EXECUTE)
                })
            }
            _ => false, // forwarded to another DLL: a function there
        };
        out.push(PeExport { name, data });
    }
    Ok(out)
}

fn name(bytes: &[u8]) -> Result<String> {
    let s = std::str::from_utf8(bytes).context("an imported DLL's name is not UTF-8")?;
    if s.is_empty() || s.contains(['/', '\\']) {
        bail!("imported DLL name `{s}` is empty or a path");
    }
    Ok(s.to_string())
}

/// Real PE files for tests.
#[cfg(test)]
pub(crate) mod test_libs {
    use std::path::Path;

    /// A real DLL and an EXE that imports it, from Debian's mingw-w64 (CI installs it).
    pub(crate) fn mingw_pair(dir: &Path) -> Option<(Vec<u8>, Vec<u8>)> {
        let gcc = Path::new("/usr/bin/x86_64-w64-mingw32-gcc-posix");
        if !gcc.is_file() {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true and no {}: .ci/run installs mingw-w64",
                gcc.display()
            );
            eprintln!("skipped: no {} (apt install mingw-w64)", gcc.display());
            return None;
        }
        std::fs::write(
            dir.join("lib.c"),
            "#include <windows.h>\n__declspec(dllexport) int f(void) { return (int) GetTickCount(); }\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("main.c"),
            "__declspec(dllimport) int f(void);\nint main(void) { return f() & 1; }\n",
        )
        .unwrap();
        let run = |args: &[&str]| {
            let o = std::process::Command::new(gcc)
                .current_dir(dir)
                .args(args)
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        };
        run(&[
            "-shared",
            "-o",
            "mini.dll",
            "lib.c",
            "-Wl,--out-implib,libmini.dll.a",
        ]);
        run(&["-o", "main.exe", "main.c", "-L.", "-lmini"]);
        Some((
            std::fs::read(dir.join("mini.dll")).unwrap(),
            std::fs::read(dir.join("main.exe")).unwrap(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::test_libs::mingw_pair;
    use super::*;

    #[test]
    fn a_real_dll_and_exe_say_their_machine_kind_and_imports() {
        let d = tempfile::tempdir().unwrap();
        let Some((dll, exe)) = mingw_pair(d.path()) else {
            return;
        };
        assert!(is_pe(&dll) && is_pe(&exe));
        let dll = parse(&dll).unwrap();
        assert_eq!(dll.machine, PeMachine::X86_64);
        assert_eq!(dll.machine.wheel_platform(), Some("win_amd64"));
        assert!(dll.dll);
        assert!(
            dll.imports
                .iter()
                .any(|i| i.eq_ignore_ascii_case("KERNEL32.dll")),
            "{:?}",
            dll.imports
        );
        let exe = parse(&exe).unwrap();
        assert!(!exe.dll);
        assert!(
            exe.imports.iter().any(|i| i == "mini.dll"),
            "{:?}",
            exe.imports
        );
    }

    /// The file readers say what the in-memory ones say, having read (by the headers'
    /// count) less than the file, and refuse a section table longer than asked.
    #[test]
    fn a_pe_file_on_disk_is_parsed_from_its_headers() {
        let d = tempfile::tempdir().unwrap();
        let Some((dll, exe)) = mingw_pair(d.path()) else {
            return;
        };
        for (bytes, name) in [(&dll, "mini.dll"), (&exe, "main.exe")] {
            let file = std::fs::File::open(d.path().join(name)).unwrap();
            assert_eq!(parse_file(&file).unwrap(), parse(bytes).unwrap());
            assert_eq!(read(&d.path().join(name)).unwrap(), parse(bytes).unwrap());
            let dc = device_code_file(&file).unwrap();
            assert!(!dc.present && dc.entries.is_empty());
            let n = read_size(&file, 4096).unwrap();
            assert!(
                n > 0 && n < bytes.len() as u64,
                "{name}: {n} of {}",
                bytes.len()
            );
            let e = read_size(&file, 2).unwrap_err().to_string();
            assert!(
                e.starts_with("its headers list ") && e.contains("sections, over the 2 read"),
                "{e}"
            );
        }
    }

    #[test]
    fn what_is_not_a_64_bit_pe_file_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let gcc32 = Path::new("/usr/bin/i686-w64-mingw32-gcc");
        if mingw_pair(d.path()).is_some() {
            // Debian's mingw-w64 has the 32-bit compilers too.
            std::fs::write(d.path().join("x.c"), "int g(void) { return 1; }\n").unwrap();
            let o = std::process::Command::new(gcc32)
                .current_dir(d.path())
                .args(["-shared", "-o", "x32.dll", "x.c"])
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let e = parse(&std::fs::read(d.path().join("x32.dll")).unwrap()).unwrap_err();
            assert_eq!(e.to_string(), "Pe32, not a 64-bit PE file (PE32+)");
        }
        let elf = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        assert_eq!(
            parse(&elf).unwrap_err().to_string(),
            "Elf64, not a 64-bit PE file (PE32+)"
        );
        assert!(parse(b"MZ not really").is_err());
        assert!(!is_pe(&elf));
    }
}
