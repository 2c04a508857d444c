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

/// Anyone's wheel: every ELF file is code for a CPU of its Linux platform tags, every
/// PE file for a machine of its Windows ones (PEP 425; the compressed set's tags, any
/// of them), read from the file's header, so 32-bit and other CPUs' files too. A tag
/// set with no Linux (or Windows) tag (`any`, macOS) leaves ELF (or PE) files
/// unchecked; so do device code (CUDA, AMD GPU, eBPF ELF files) and .NET assemblies.
pub(super) fn check_foreign_binaries(files: &Files, name: &str, r: &mut Report) {
    let Ok(w) = name.parse::<crate::tags::AnyWheelFilename>() else {
        return;
    };
    let (mut arches, mut machines) = (BTreeSet::new(), BTreeSet::new());
    for t in &w.platforms {
        match crate::tags::PlatformKind::of(t) {
            crate::tags::PlatformKind::Linux { arch, .. } => {
                arches.insert(arch);
            }
            crate::tags::PlatformKind::Windows { machine } => {
                machines.insert(pe_machine_name(machine));
            }
            crate::tags::PlatformKind::Other => {}
        }
    }
    let platform = w.platforms.join(".");
    for (p, seen) in files {
        let Some(copy) = seen.copy() else { continue };
        let header = read_header(copy);
        match &seen.binary.as_ref().expect("a copy is of a binary").info {
            BinaryInfo::Elf(_) if !arches.is_empty() => match elf_cpu(&header) {
                Some(ElfCpu::Device) => {}
                Some(cpu) if arches.iter().any(|a| cpu.fits(a)) => {}
                Some(cpu) => r.problem(format!(
                    "{p}: code for {cpu}, but the wheel's platform tag is {platform} ({}): it loads on none of them",
                    crate::listed(&arches.iter().collect::<Vec<_>>(), "or")
                )),
                None => r.warnings.push(format!(
                    "{p}: starts like an ELF file, but its header is cut short: its CPU was not checked"
                )),
            },
            BinaryInfo::Pe(_) if !machines.is_empty() => match pe_machine(&header) {
                Some(PeCode::Managed) => {}
                Some(PeCode::Machine(m)) if machines.contains(m.as_str()) => {}
                Some(PeCode::Machine(m)) => r.problem(format!(
                    "{p}: code for {m}, but the wheel's platform tag is {platform} ({}): it loads on none of them",
                    crate::listed(&machines.iter().collect::<Vec<_>>(), "or")
                )),
                None => r.warnings.push(format!(
                    "{p}: starts like a PE file (MZ), but has no PE header in its first {HEADER} bytes: its CPU was not checked"
                )),
            },
            _ => {}
        }
    }
}

/// How much of a binary's start is read for its CPU: the ELF header, or the DOS
/// header and the PE headers it points to.
const HEADER: usize = 4096;

fn read_header(copy: &Path) -> Vec<u8> {
    let mut head = Vec::with_capacity(HEADER);
    if let Ok(f) = fs_err::File::open(copy) {
        let _ = f.take(HEADER as u64).read_to_end(&mut head);
    }
    head
}

/// The CPU an ELF file's `e_machine` names, in the words of Linux platform tags.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ElfCpu {
    /// The arch as platform tags write it: `x86_64`, `aarch64`, `ppc64le`...
    Tagged(&'static str),
    /// 32-bit Arm: `armv7l`, `armv6l`.
    Arm,
    /// Code for a GPU or the kernel's eBPF machine, not the CPU.
    Device,
    Unknown(u16),
}

impl ElfCpu {
    /// Whether code for this CPU runs on `arch`, a Linux platform tag's arch.
    fn fits(&self, arch: &str) -> bool {
        match self {
            ElfCpu::Tagged("i686") => arch == "i686" || arch == "i386",
            ElfCpu::Tagged(a) => *a == arch,
            ElfCpu::Arm => arch.starts_with("armv"),
            ElfCpu::Device => true,
            ElfCpu::Unknown(_) => false,
        }
    }
}

impl std::fmt::Display for ElfCpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ElfCpu::Tagged(a) => f.write_str(a),
            ElfCpu::Arm => f.write_str("32-bit Arm"),
            ElfCpu::Device => f.write_str("a device"),
            ElfCpu::Unknown(m) => write!(f, "ELF machine {m}"),
        }
    }
}

/// The CPU of the ELF header `h` (its class, byte order and `e_machine`); None when cut short.
fn elf_cpu(h: &[u8]) -> Option<ElfCpu> {
    if h.len() < 20 || !elf::is_elf(h) {
        return None;
    }
    let (wide, little) = (h[4] == 2, h[5] == 1);
    let machine = if little {
        u16::from_le_bytes([h[18], h[19]])
    } else {
        u16::from_be_bytes([h[18], h[19]])
    };
    Some(match machine {
        62 => ElfCpu::Tagged("x86_64"),
        3 => ElfCpu::Tagged("i686"),
        183 => ElfCpu::Tagged("aarch64"),
        40 => ElfCpu::Arm,
        21 if little => ElfCpu::Tagged("ppc64le"),
        21 => ElfCpu::Tagged("ppc64"),
        22 => ElfCpu::Tagged("s390x"),
        243 if wide => ElfCpu::Tagged("riscv64"),
        258 => ElfCpu::Tagged("loongarch64"),
        // EM_CUDA, EM_AMDGPU, EM_BPF.
        190 | 224 | 247 => ElfCpu::Device,
        m => ElfCpu::Unknown(m),
    })
}

/// A PE file's code: for a machine (named as [`pe_machine_name`] names them), or .NET's.
enum PeCode {
    Machine(String),
    /// A .NET assembly (a CLR header): its COFF machine does not bind it to one CPU.
    Managed,
}

fn pe_machine_name(m: crate::tags::WindowsMachine) -> &'static str {
    match m {
        crate::tags::WindowsMachine::X86 => "x86 (win32)",
        crate::tags::WindowsMachine::X86_64 => "x86-64 (win_amd64)",
        crate::tags::WindowsMachine::Arm64 => "Arm64 (win_arm64)",
    }
}

/// The code of the PE file whose first bytes are `h`: its COFF machine, unless it is a
/// .NET assembly; None when its PE header is not among them.
fn pe_machine(h: &[u8]) -> Option<PeCode> {
    let u16_at = |at: usize| Some(u16::from_le_bytes(h.get(at..at + 2)?.try_into().ok()?));
    let u32_at = |at: usize| Some(u32::from_le_bytes(h.get(at..at + 4)?.try_into().ok()?));
    let pe = usize::try_from(u32_at(0x3c)?).ok()?;
    if h.get(pe..pe + 4)? != b"PE\0\0" {
        return None;
    }
    let machine = u16_at(pe + 4)?;
    let optional = pe + 24;
    // The CLR runtime header: data directory 14, after 96 (PE32) or 112 (PE32+) bytes.
    let dirs = match u16_at(optional)? {
        0x10b => optional + 96,
        0x20b => optional + 112,
        _ => return None,
    };
    if u16_at(pe + 20).is_some_and(|size| usize::from(size) >= dirs - optional + 15 * 8)
        && u32_at(dirs + 14 * 8).is_some_and(|rva| rva != 0)
    {
        return Some(PeCode::Managed);
    }
    Some(PeCode::Machine(match machine {
        0x14c => pe_machine_name(crate::tags::WindowsMachine::X86).to_string(),
        0x8664 => pe_machine_name(crate::tags::WindowsMachine::X86_64).to_string(),
        0xaa64 => pe_machine_name(crate::tags::WindowsMachine::Arm64).to_string(),
        m => format!("PE machine {m:#06x}"),
    }))
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
