//! `inspect`: what any artifact carries (ours or anyone's: a wheel, a `.tar.gz` or
//! `.zip` archive, a shared library, an installed package dir), and so which GPUs it
//! runs on. Each shared library's device code is read by the fat binary reader
//! ([`crate::cuda::fatbin`]), with the `a`/`f` suffixes kept; the verdict per GPU
//! comes from [`crate::cuda::runs`]. The input is untrusted: archives are read as
//! bounded streams ([`Limits::ARTIFACT`]), nothing in them is run.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::binary::{elf, pe};
use crate::cuda::fatbin::Compression;
use crate::cuda::runs::Runs;
use crate::cuda::{describe_cc, CodeKind, CudaArch, EmbeddedCode, Gpu};
use crate::package::entries::{EntryKind, Limits};
use crate::versions::driver::DriverVersion;

/// What one shared library holds.
#[derive(Debug, Clone, Serialize)]
pub struct Library {
    /// Its path inside the artifact.
    pub path: String,
    pub size: u64,
    /// Cubins: `sm_120a`, `sm_100f`, `sm_90`.
    pub sass: Vec<String>,
    /// PTX: `compute_120a`.
    pub ptx: Vec<String>,
    /// How the device code is stored: `zstd`, `lz4`, `none` (each kind found, sorted).
    pub compression: Vec<Compression>,
    /// Device code only in `__nv_relfatbin` (`-rdc` output), which the runtime never
    /// loads: listed apart, and not counted for the GPUs.
    pub relocatable_only: Vec<String>,
    /// The CUDA libraries it needs (DT_NEEDED): libcudart, libcublas, libcuda...
    pub cuda_libraries: Vec<String>,
    /// The newest glibc symbol version it needs (GLIBC_2.34), its glibc floor.
    pub glibc: Option<String>,
    /// The manylinux tag its symbol versions on the system libraries imply
    /// (`manylinux_2_28_x86_64`), or why none does; None for a DLL.
    pub manylinux: Option<String>,
    pub runpath: Vec<String>,
    /// The CPU its code is for (ELF `e_machine`, PE machine): `x86_64`, `aarch64`;
    /// `None` for another.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arch: Option<crate::platform::Arch>,
    /// The device code the runtime loads (what `sass` and `ptx` name), for [`Report::runs_on`].
    #[serde(skip)]
    pub codes: BTreeSet<EmbeddedCode>,
}

/// How the artifact runs on GPUs of one compute capability.
#[derive(Debug, Clone, Serialize)]
pub struct GpuVerdict {
    /// `12.0`
    pub compute_capability: String,
    pub gpus: String,
    /// `no` where [`GpuVerdict::only_in`] is set, whatever the device code.
    pub runs: Runs,
    /// Where the package holds alternative libraries (one loaded per CUDA runtime,
    /// `libbitsandbytes_cuda128.so`): the alternatives that give `runs`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub with: Vec<String>,
    /// Set where every GPU of this capability is in machines of another CPU arch than
    /// the artifact's (12.1, DGX Spark: aarch64; the artifact x86_64): that arch. No
    /// machine with such a GPU runs the artifact: `runs` is `no`, and `code_runs` says
    /// what the device code alone would give.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub only_in: Option<crate::platform::Arch>,
    /// With `only_in`: how the device code alone would run on that GPU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code_runs: Option<Runs>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub path: String,
    pub libraries: Vec<Library>,
    /// Library file names present more than once (by content hash), with their paths.
    pub duplicates: BTreeMap<String, Vec<String>>,
    /// Empty when no library has device code (a CPU-only artifact).
    pub gpus: Vec<GpuVerdict>,
    /// The oldest NVIDIA driver (Linux) the artifact's CUDA runtime runs on; `None`
    /// when no library needs or carries a CUDA runtime and no manifest says.
    pub min_driver: Option<MinDriver>,
}

/// The oldest driver an artifact needs, and what says so.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MinDriver {
    /// Linux driver version: `580`, `525.60.13`.
    pub linux: DriverVersion,
    /// Windows driver version (also WSL2's): `580`, `527.41`.
    pub windows: DriverVersion,
    /// `manifest (plan.cuda.min_driver, CUDA 12.8)` or `libcudart.so.12 (any CUDA 12.x runtime)`.
    pub from: String,
    /// What kind of fact `from` is: which one wins where several say.
    pub source: FloorSource,
}

impl MinDriver {
    /// The floor for the driver of `os` (Windows' also under WSL2).
    pub fn for_os(&self, os: crate::platform::Os) -> &DriverVersion {
        match os {
            crate::platform::Os::Linux => &self.linux,
            crate::platform::Os::Windows => &self.windows,
        }
    }
}

/// Where a driver floor comes from, the most precise first: a package's floor is
/// the first of these that says (`doctor::verdict::driver_floor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FloorSource {
    /// Our manifest's `plan.cuda.min_driver`: the release it was built with.
    Manifest,
    /// The package version's local label (`+cu130`): the release it was built with,
    /// by the support table (`doctor`, for an installed package without our manifest).
    VersionLabel,
    /// The CUDA runtime major its libraries need or carry: that major's
    /// minor-version compatibility floor.
    CudaRuntime,
}

impl Report {
    /// The CPU archs its libraries are for (one, for an artifact the tool made).
    pub fn arches(&self) -> BTreeSet<crate::platform::Arch> {
        self.libraries.iter().filter_map(|l| l.arch).collect()
    }

    /// How the artifact runs on a GPU of compute capability `gpu` (its worst library
    /// with device code), or `None` when no library has device code.
    pub fn runs_on(&self, gpu: CudaArch) -> Option<Runs> {
        let with_code: Vec<(&str, &BTreeSet<EmbeddedCode>)> = self
            .libraries
            .iter()
            .filter(|l| !l.codes.is_empty())
            .map(|l| (l.path.as_str(), &l.codes))
            .collect();
        (!with_code.is_empty()).then(|| Alternatives::split(&with_code).runs_on(gpu.to_plain()).0)
    }
}

/// What our manifest (`.dist-info/llama-forge.json`, an archive's `manifest.json`)
/// says the artifact needs: `plan.cuda.min_driver`. `None` for a CPU build, a
/// manifest without it, or text that is not a manifest.
pub fn manifest_min_driver(json: &[u8]) -> Option<MinDriver> {
    let v: serde_json::Value = serde_json::from_slice(json).ok()?;
    let cuda = v.get("plan")?.get("cuda")?;
    let recorded: DriverVersion = cuda.get("min_driver")?.as_str()?.parse().ok()?;
    let release = cuda.get("release").and_then(|r| r.as_str()).unwrap_or("?");
    // The recorded floor is its target OS's; the other OS's (a Linux wheel under WSL2
    // runs on the Windows driver) is its CUDA major's, from the table.
    let windows_target = v
        .get("target")
        .and_then(|t| t.get("platform"))
        .and_then(|p| p.as_str())
        .is_some_and(|p| p.starts_with("win"));
    let major = release
        .split('.')
        .next()
        .and_then(|m| m.parse::<u32>().ok());
    let table = |os| {
        major
            .and_then(|m| crate::cuda::SupportTable::builtin().driver_floor(m, os))
            .cloned()
            .unwrap_or_else(|| recorded.clone())
    };
    let (linux, windows) = if windows_target {
        let linux = table(crate::platform::Os::Linux);
        (linux, recorded)
    } else {
        let windows = table(crate::platform::Os::Windows);
        (recorded, windows)
    };
    Some(MinDriver {
        linux,
        windows,
        from: format!("manifest (plan.cuda.min_driver, CUDA {release})"),
        source: FloorSource::Manifest,
    })
}

/// The CUDA runtime major a library needs (`libcudart.so.12`) or is (a bundled
/// `libcudart.so.12.8.90`).
fn cudart_major(name: &str) -> Option<u32> {
    let base = name.rsplit('/').next().unwrap_or(name);
    base.strip_prefix("libcudart.so.")?
        .split('.')
        .next()?
        .parse()
        .ok()
}

/// The driver floor of the newest CUDA runtime major the libraries need or carry,
/// from the support table's minor-version compatibility floors.
fn runtime_min_driver(libraries: &[Library]) -> Option<MinDriver> {
    let major_of = |l: &Library| {
        l.cuda_libraries
            .iter()
            .map(String::as_str)
            .chain([l.path.as_str()])
            .filter_map(cudart_major)
            .max()
    };
    let paths: Vec<&str> = libraries.iter().map(|l| l.path.as_str()).collect();
    let alternatives = alternative_stems(&paths);
    let is_alternative =
        |l: &Library| alternative_of(&l.path).is_some_and(|(stem, _)| alternatives.contains(&stem));
    // Libraries always loaded: the newest runtime among them sets the floor.
    let always = libraries
        .iter()
        .filter(|l| !is_alternative(l))
        .filter_map(major_of)
        .max();
    let (major, from) = match always {
        Some(m) => (m, format!("libcudart.so.{m} (any CUDA {m}.x runtime)")),
        // Only alternatives need a runtime: the oldest one's floor, since one of them is
        // loaded for the runtime at hand.
        None => {
            let (m, l) = libraries
                .iter()
                .filter(|l| is_alternative(l))
                .filter_map(|l| major_of(l).map(|m| (m, l)))
                .min_by_key(|(m, _)| *m)?;
            (
                m,
                format!(
                    "{} (the oldest of its alternatives, for a CUDA {m}.x runtime; each alternative needs its own runtime's driver)",
                    l.path.rsplit('/').next().unwrap_or(&l.path)
                ),
            )
        }
    };
    let table = crate::cuda::SupportTable::builtin();
    Some(MinDriver {
        linux: table
            .driver_floor(major, crate::platform::Os::Linux)?
            .clone(),
        windows: table
            .driver_floor(major, crate::platform::Os::Windows)?
            .clone(),
        from,
        source: FloorSource::CudaRuntime,
    })
}

/// A library that is one of several alternatives, one loaded per CUDA runtime
/// (bitsandbytes: `libbitsandbytes_cuda128.so`, `..._cuda130.dll`): its stem
/// (`libbitsandbytes`) and CUDA number (`128`).
fn alternative_of(path: &str) -> Option<(String, u32)> {
    let (dir, base) = path.rsplit_once(['/', '\\']).unwrap_or(("", path));
    let (stem, rest) = base.rsplit_once("_cuda")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let after = &rest[digits.len()..];
    if stem.is_empty() || !(after.starts_with(".so") || after == ".dll") {
        return None;
    }
    // The dir is part of the stem: alternatives sit side by side.
    Some((format!("{dir}/{stem}"), digits.parse().ok()?))
}

/// The stems held by two or more libraries: alternatives.
fn alternative_stems(paths: &[&str]) -> BTreeSet<String> {
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for p in paths {
        if let Some((stem, _)) = alternative_of(p) {
            *count.entry(stem).or_default() += 1;
        }
    }
    count
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .map(|(s, _)| s)
        .collect()
}

/// The libraries with device code: those always loaded, and groups of alternatives.
struct Alternatives<'a> {
    always: Vec<&'a BTreeSet<EmbeddedCode>>,
    groups: BTreeMap<String, Vec<(&'a str, &'a BTreeSet<EmbeddedCode>)>>,
}

impl<'a> Alternatives<'a> {
    fn split(libs: &[(&'a str, &'a BTreeSet<EmbeddedCode>)]) -> Self {
        let paths: Vec<&str> = libs.iter().map(|(p, _)| *p).collect();
        let stems = alternative_stems(&paths);
        let mut always = Vec::new();
        let mut groups: BTreeMap<String, Vec<_>> = BTreeMap::new();
        for (p, c) in libs {
            match alternative_of(p).filter(|(s, _)| stems.contains(s)) {
                Some((stem, _)) => groups.entry(stem).or_default().push((*p, *c)),
                None => always.push(*c),
            }
        }
        Alternatives { always, groups }
    }

    /// The worst of the libraries always loaded and, for each group, its best
    /// alternative; with the alternatives that give it.
    fn runs_on(&self, cc: CudaArch) -> (Runs, Vec<String>) {
        let mut runs = self
            .always
            .iter()
            .map(|c| crate::cuda::runs::runs_on(c, cc))
            .max()
            .unwrap_or(Runs::Natively);
        let mut with = Vec::new();
        for alts in self.groups.values() {
            let best = alts
                .iter()
                .map(|(_, c)| crate::cuda::runs::runs_on(c, cc))
                .min()
                .unwrap_or(Runs::No);
            runs = runs.max(best);
            if best != Runs::No {
                with.extend(
                    alts.iter()
                        .filter(|(_, c)| crate::cuda::runs::runs_on(c, cc) == best)
                        .map(|(p, _)| p.rsplit(['/', '\\']).next().unwrap_or(p).to_string()),
                );
            }
        }
        (runs, with)
    }
}

fn is_manifest(entry: &str) -> bool {
    let mut parts = entry.rsplit('/');
    let base = parts.next().unwrap_or(entry);
    let dir = parts.next().unwrap_or("");
    (base == crate::manifest::WHEEL_NAME && dir.ends_with(".dist-info"))
        || (base == crate::manifest::ARCHIVE_NAME && entry.matches('/').count() <= 1)
}

fn is_library(name: &str) -> bool {
    let base = name.rsplit('/').next().unwrap_or(name);
    let lower = base.to_ascii_lowercase();
    base.ends_with(".so") || base.contains(".so.") || lower.ends_with(".dll")
}

/// An ELF shared library or a PE DLL.
fn is_binary(bytes: &[u8]) -> bool {
    elf::is_elf(bytes) || pe::is_pe(bytes)
}

/// The most inspect reads of one library: its headers and the sections it parses
/// whole (symbol tables, the dynamic section, the device code), or a whole library
/// entry of an archive. A real one is well under it (libggml-cuda's `.nv_fatbin` for
/// every GPU is a few hundred MB).
pub const FILE_LIMIT: u64 = 1 << 30;
/// The most it reads of all the libraries of one artifact together.
pub const TOTAL_LIMIT: u64 = 8 << 30;
/// The most sections or segments a library's headers may list (a real one has a few
/// dozen): their tables, and each section's name, are read before anything is counted.
const MAX_HEADERS: u64 = 4096;

/// What inspect has read so far, against [`FILE_LIMIT`] and [`TOTAL_LIMIT`].
#[derive(Default)]
struct Budget {
    used: u64,
}

impl Budget {
    /// Counts `n` bytes of the library `what`, or says why it is not read.
    fn take(&mut self, what: &str, n: u64) -> Result<()> {
        anyhow::ensure!(
            n <= FILE_LIMIT,
            "{what}: reading it would take {n} bytes, over the {} MiB inspect reads of one library (a real one is well under): not read. Check where it comes from",
            FILE_LIMIT >> 20
        );
        self.used = self.used.saturating_add(n);
        anyhow::ensure!(
            self.used <= TOTAL_LIMIT,
            "{what}: with it, inspect would read {} bytes of libraries, over the {} GiB it reads of one artifact: stopped. Inspect fewer libraries at once (a package dir, not a whole tree)",
            self.used,
            TOTAL_LIMIT >> 30
        );
        Ok(())
    }
}

/// Reads `path` and reports on every shared library in it. Only regular files are
/// read (a FIFO, a device or a link to one is refused by name); a library on disk is
/// parsed from its headers and the sections read (never read whole), within
/// [`FILE_LIMIT`] and [`TOTAL_LIMIT`].
pub fn inspect(path: &Path) -> Result<Report> {
    let name = path.to_string_lossy();
    let mut libs: Vec<(Library, BTreeSet<EmbeddedCode>, String)> = Vec::new();
    let mut manifest: Option<MinDriver> = None;
    let mut budget = Budget::default();
    let mut visit = |entry: &str, data: &mut dyn Read| -> Result<()> {
        if is_manifest(entry) {
            let mut bytes = Vec::new();
            data.take(crate::manifest::MAX_BYTES)
                .read_to_end(&mut bytes)?;
            manifest = manifest.take().or_else(|| manifest_min_driver(&bytes));
            return Ok(());
        }
        if !is_library(entry) {
            return Ok(());
        }
        let mut bytes = Vec::new();
        data.take(4).read_to_end(&mut bytes)?;
        if !is_binary(&bytes) {
            return Ok(());
        }
        data.take(FILE_LIMIT + 1).read_to_end(&mut bytes)?;
        budget.take(&format!("{entry} in {name}"), bytes.len() as u64)?;
        let (lib, codes) = library(entry, &bytes).with_context(|| format!("{entry} in {name}"))?;
        let digest = crate::digest::sha256_bytes(&bytes).as_str().to_string();
        libs.push((lib, codes, digest));
        Ok(())
    };
    let meta = fs_err::metadata(path).map_err(|e| crate::manifest::not_readable(path, &e))?;
    if meta.is_dir() {
        for e in walkdir::WalkDir::new(path).sort_by_file_name() {
            let e = e?;
            if !e.file_type().is_file() {
                // Links are not followed; FIFOs, devices and sockets are not read.
                continue;
            }
            let rel = e.path().strip_prefix(path).unwrap_or(e.path());
            let rel = rel.to_string_lossy();
            if is_manifest(&rel) {
                // Within the manifest's size cap, else not read (as text that is not one).
                manifest = manifest.take().or_else(|| {
                    crate::manifest::read_bytes(e.path())
                        .ok()
                        .and_then(|b| manifest_min_driver(&b))
                });
                continue;
            }
            if !is_library(&rel) {
                continue;
            }
            let label = e.path().display().to_string();
            if let Some(found) = library_file(e.path(), &rel, &label, true, &mut budget)? {
                libs.push(found);
            }
        }
    } else if [".whl", ".zip", ".tar.gz", ".tgz"]
        .iter()
        .any(|x| name.ends_with(x))
    {
        // A FIFO or a device named like an archive is refused before the readers open it.
        crate::manifest::open_regular(path)?;
        let mut each = |head: &crate::package::entries::Head, data: &mut dyn Read| {
            if head.kind == EntryKind::File {
                visit(&head.name, data)?;
            }
            Ok(())
        };
        if name.ends_with(".whl") || name.ends_with(".zip") {
            crate::package::wheel::stream_entries(path, &Limits::ARTIFACT, &mut each)?;
        } else {
            crate::package::archive::stream_entries(path, &Limits::ARTIFACT, &mut each)?;
        }
    } else {
        let base = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match library_file(path, &base, &name, false, &mut budget)? {
            Some((lib, codes, _)) => libs.push((lib, codes, String::new())),
            None => anyhow::bail!(
                "{name}: not a wheel, an archive, a directory, an ELF shared library or a Windows DLL"
            ),
        }
    }
    let mut by_hash: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for (lib, _, digest) in &libs {
        if !digest.is_empty() {
            let base = lib.path.rsplit('/').next().unwrap_or(&lib.path).to_string();
            by_hash
                .entry((base, digest.clone()))
                .or_default()
                .push(lib.path.clone());
        }
    }
    let duplicates = by_hash
        .into_iter()
        .filter(|(_, paths)| paths.len() > 1)
        .map(|((base, _), paths)| (base, paths))
        .collect();
    let with_code: Vec<(&str, &BTreeSet<EmbeddedCode>)> = libs
        .iter()
        .filter(|(_, c, _)| !c.is_empty())
        .map(|(l, c, _)| (l.path.as_str(), c))
        .collect();
    let gpus = if with_code.is_empty() {
        Vec::new()
    } else {
        let split = Alternatives::split(&with_code);
        let arches: BTreeSet<crate::platform::Arch> =
            libs.iter().filter_map(|(l, _, _)| l.arch).collect();
        Gpu::judged_capabilities()
            .into_iter()
            .map(|cc| {
                let (runs, with) = split.runs_on(cc);
                let only_in = Gpu::only_machine_of(cc)
                    .and_then(Gpu::only_on)
                    .filter(|a| !arches.is_empty() && !arches.contains(a));
                let (runs, with, code_runs) = match only_in {
                    Some(_) => (Runs::No, Vec::new(), Some(runs)),
                    None => (runs, with, None),
                };
                GpuVerdict {
                    compute_capability: format!("{}.{}", cc.major(), cc.minor()),
                    gpus: describe_cc(cc).unwrap_or("").to_string(),
                    runs,
                    with,
                    only_in,
                    code_runs,
                }
            })
            .collect()
    };
    let libraries: Vec<Library> = libs.into_iter().map(|(l, _, _)| l).collect();
    let min_driver = manifest.or_else(|| runtime_min_driver(&libraries));
    Ok(Report {
        path: name.into_owned(),
        libraries,
        duplicates,
        gpus,
        min_driver,
    })
}

/// The CUDA libraries among a library's DT_NEEDED or a DLL's imports (`libcudart.so.13`,
/// `cudart64_13.dll`, the driver's `libcuda.so.1` and `nvcuda.dll`).
fn is_cuda_library(name: &str) -> bool {
    let l = name.to_ascii_lowercase();
    let l = l.strip_prefix("lib").unwrap_or(&l);
    [
        "cuda.",
        "nvcuda.",
        "cudart",
        "cublas",
        "nvrtc",
        "nccl",
        "cufft",
        "curand",
        "cusparse",
        "cusolver",
        "nvjitlink",
    ]
    .iter()
    .any(|p| l.starts_with(p))
}

/// A library file on disk (`path`, reported as `rel`, named in errors as `label`):
/// `None` when it is neither an ELF nor a PE file. Opened only when it is a regular
/// file ([`crate::manifest::open_regular`]); an ELF file is parsed through a read
/// cache (its headers, then only the sections read), after its headers say how much
/// that is ([`elf_read_size`]), and so is a PE file ([`pe::read_size`]). `hash`: its
/// sha256, streamed, for the duplicates.
fn library_file(
    path: &Path,
    rel: &str,
    label: &str,
    hash: bool,
    budget: &mut Budget,
) -> Result<Option<(Library, BTreeSet<EmbeddedCode>, String)>> {
    let (file, meta) = crate::manifest::open_regular(path)?;
    let mut file = file.into_parts().0;
    let mut head = Vec::new();
    Read::by_ref(&mut file).take(4).read_to_end(&mut head)?;
    let found = if elf::is_elf(&head) {
        elf_read_size(&file)
            .and_then(|n| budget.take(label, n))
            .with_context(|| label.to_string())?;
        let info = elf::parse_file(&file).with_context(|| label.to_string())?;
        let dc = elf::device_code_file(&file).with_context(|| label.to_string())?;
        elf_library(rel, meta.len(), &info, &dc)
    } else if pe::is_pe(&head) {
        let n = pe::read_size(&file, MAX_HEADERS).with_context(|| label.to_string())?;
        budget.take(label, n)?;
        let info = pe::parse_file(&file).with_context(|| label.to_string())?;
        let dc = pe::device_code_file(&file).with_context(|| label.to_string())?;
        pe_library(rel, meta.len(), &info, &dc)
    } else {
        return Ok(None);
    };
    let digest = if hash {
        use sha2::Digest;
        use std::io::Seek;
        file.rewind()?;
        let mut h = digest_io::IoWrapper(sha2::Sha256::new());
        std::io::copy(&mut file, &mut h).with_context(|| format!("cannot read {label}"))?;
        hex::encode(h.0.finalize())
    } else {
        String::new()
    };
    Ok(Some((found.0, found.1, digest)))
}

/// How much the ELF readers ([`elf::parse_file`], [`elf::device_code_file`]) read of
/// `file`, from its headers alone: the program and section header tables (at most
/// [`MAX_HEADERS`] entries each, checked before either is read) and the sections they
/// read whole: symbol tables, the dynamic section, version needs and device code.
fn elf_read_size(file: &std::fs::File) -> Result<u64> {
    use object::elf as e;
    use object::read::elf::{FileHeader, SectionHeader};
    let cache = object::ReadCache::new(file);
    let data = &cache;
    let header =
        e::FileHeader64::<object::Endianness>::parse(data).context("not a 64-bit ELF file")?;
    let endian = header.endian()?;
    let shnum = header.shnum(endian, data)? as u64;
    let phnum = header.phnum(endian, data)? as u64;
    anyhow::ensure!(
        shnum <= MAX_HEADERS && phnum <= MAX_HEADERS,
        "its headers list {shnum} sections and {phnum} segments, over the {MAX_HEADERS} inspect reads (a shared library has a few dozen): not a library a linker made; not read"
    );
    let mut total = shnum * 64 + phnum * 56;
    let sections = header.sections(endian, data)?;
    for s in sections.iter() {
        let name = sections.section_name(endian, s).unwrap_or_default();
        let ty = s.sh_type(endian);
        let whole = matches!(
            ty,
            e::SHT_SYMTAB
                | e::SHT_DYNSYM
                | e::SHT_SYMTAB_SHNDX
                | e::SHT_DYNAMIC
                | e::SHT_GNU_VERNEED
        ) || name == b".nv_fatbin"
            || name == b"__nv_relfatbin";
        if whole && ty != e::SHT_NOBITS {
            total = total.saturating_add(s.sh_size(endian));
        }
    }
    Ok(total)
}

fn library(path: &str, bytes: &[u8]) -> Result<(Library, BTreeSet<EmbeddedCode>)> {
    if pe::is_pe(bytes) {
        let info = pe::parse(bytes)?;
        let dc = pe::device_code(bytes)?;
        return Ok(pe_library(path, bytes.len() as u64, &info, &dc));
    }
    let info = elf::parse(bytes)?;
    let dc = elf::device_code(bytes)?;
    Ok(elf_library(path, bytes.len() as u64, &info, &dc))
}

/// A DLL's report from what the PE reader found.
fn pe_library(
    path: &str,
    size: u64,
    info: &pe::PeInfo,
    dc: &elf::DeviceCode,
) -> (Library, BTreeSet<EmbeddedCode>) {
    let (mut lib, codes) = described(path, size as usize, dc, &info.imports);
    lib.arch = match info.machine {
        pe::PeMachine::X86_64 => Some(crate::platform::Arch::X86_64),
        pe::PeMachine::Arm64 => Some(crate::platform::Arch::Aarch64),
        pe::PeMachine::Other(_) => None,
    };
    (lib, codes)
}

/// An ELF library's report from what the ELF reader found.
fn elf_library(
    path: &str,
    size: u64,
    info: &elf::ElfInfo,
    dc: &elf::DeviceCode,
) -> (Library, BTreeSet<EmbeddedCode>) {
    let (mut lib, codes) = described(path, size as usize, dc, &info.needed);
    lib.glibc = info
        .version_needs
        .values()
        .flatten()
        .filter_map(|v| v.strip_prefix("GLIBC_"))
        .filter_map(|v| {
            let mut p = v.split('.').map(|x| x.parse::<u32>().ok());
            Some((p.next()??, p.next().flatten().unwrap_or(0), v.to_string()))
        })
        .max()
        .map(|(_, _, v)| format!("GLIBC_{v}"));
    lib.manylinux = Some(
        match crate::package::manylinux::Policies::builtin().implied_by(info) {
            Ok(tag) => tag.to_string(),
            Err(e) => format!("none: {}", e.0.join("; ")),
        },
    );
    lib.runpath = info.runpath.clone();
    lib.arch = info.arch;
    (lib, codes)
}

/// A library's report from its device code and the libraries it loads.
fn described(
    path: &str,
    size: usize,
    dc: &elf::DeviceCode,
    loads: &[String],
) -> (Library, BTreeSet<EmbeddedCode>) {
    let codes = crate::cuda::fatbin::codes(&dc.entries);
    // Newest first: `sm_120a sm_100f sm_90`.
    let names = |kind: CodeKind| -> Vec<String> {
        dc.entries
            .iter()
            .filter(|e| e.code.kind == kind)
            .map(|e| (e.code, e.name()))
            .collect::<BTreeMap<_, _>>()
            .into_values()
            .rev()
            .collect()
    };
    let compression: BTreeSet<Compression> = dc.entries.iter().map(|e| e.compression).collect();
    let rel: BTreeSet<String> = dc.relfatbin.iter().map(|e| e.name()).collect();
    let lib = Library {
        path: path.to_string(),
        size: size as u64,
        sass: names(CodeKind::Sass),
        ptx: names(CodeKind::Ptx),
        compression: compression.into_iter().collect(),
        relocatable_only: if codes.is_empty() {
            rel.into_iter().collect()
        } else {
            Vec::new()
        },
        cuda_libraries: loads
            .iter()
            .filter(|n| is_cuda_library(n))
            .cloned()
            .collect(),
        glibc: None,
        manylinux: None,
        runpath: Vec::new(),
        arch: None,
        codes: codes.clone(),
    };
    (lib, codes)
}

/// The report as text, for people.
pub fn text(r: &Report) -> String {
    let mut out = format!("{}\n", r.path);
    for l in &r.libraries {
        out.push_str(&format!("  {} ({} bytes)\n", l.path, l.size));
        if !l.sass.is_empty() || !l.ptx.is_empty() {
            out.push_str(&format!(
                "    SASS: {}; PTX: {}; stored: {}\n",
                if l.sass.is_empty() {
                    "none".into()
                } else {
                    l.sass.join(" ")
                },
                if l.ptx.is_empty() {
                    "none".into()
                } else {
                    l.ptx.join(" ")
                },
                l.compression
                    .iter()
                    .map(|c| format!("{c:?}").to_lowercase())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if !l.relocatable_only.is_empty() {
            out.push_str(&format!(
                "    device code only in __nv_relfatbin (-rdc), which the CUDA runtime does not load: {}\n",
                l.relocatable_only.join(" ")
            ));
        }
        if !l.cuda_libraries.is_empty() {
            out.push_str(&format!("    needs: {}\n", l.cuda_libraries.join(" ")));
        }
        match (&l.glibc, &l.manylinux) {
            (Some(g), Some(m)) => out.push_str(&format!("    glibc floor: {g} ({m})\n")),
            (Some(g), None) => out.push_str(&format!("    glibc floor: {g}\n")),
            (None, Some(m)) => out.push_str(&format!("    manylinux: {m}\n")),
            (None, None) => {}
        }
        if !l.runpath.is_empty() {
            out.push_str(&format!("    RUNPATH: {}\n", l.runpath.join(":")));
        }
    }
    for (name, paths) in &r.duplicates {
        out.push_str(&format!(
            "  duplicate: {name} stored {} times ({})\n",
            paths.len(),
            paths.join(", ")
        ));
    }
    if r.gpus.is_empty() {
        out.push_str("  no CUDA device code: runs on the CPU only\n");
    }
    if let Some(d) = &r.min_driver {
        out.push_str(&format!(
            "  minimum NVIDIA driver: {} on Linux, {} on Windows and WSL2, from {}\n",
            d.linux, d.windows, d.from
        ));
    }
    for (runs, say) in [
        (Runs::Natively, "runs natively on"),
        (
            Runs::PtxJit,
            "runs only through PTX JIT (slow first load) on",
        ),
        (Runs::No, "cannot run (\"no kernel image\") on"),
    ] {
        let ccs: Vec<String> = r
            .gpus
            .iter()
            .filter(|g| g.runs == runs && g.only_in.is_none())
            .map(|g| match g.with.as_slice() {
                [] => format!("{} ({})", g.compute_capability, g.gpus),
                with => format!(
                    "{} ({}; with {}, the one loaded for your CUDA runtime)",
                    g.compute_capability,
                    g.gpus,
                    crate::listed(with, "or")
                ),
            })
            .collect();
        if !ccs.is_empty() {
            let say = match r.arches().into_iter().collect::<Vec<_>>().as_slice() {
                // A desktop with an RTX 50 is an x86-64 PC: say where this one runs.
                [a] if *a != crate::platform::Arch::X86_64 && runs != Runs::No => {
                    match say.strip_suffix(" on") {
                        Some(head) => format!("{head} (in an {a} machine) on"),
                        None => format!("{say} (in an {a} machine)"),
                    }
                }
                _ => say.to_string(),
            };
            out.push_str(&format!("  {say}: {}\n", ccs.join(", ")));
        }
    }
    let elsewhere: Vec<String> = r
        .gpus
        .iter()
        .filter_map(|g| Some((g, g.only_in?)))
        .map(|(g, a)| {
            format!(
                "{} ({}; every one is in an {a} machine)",
                g.compute_capability, g.gpus
            )
        })
        .collect();
    if !elsewhere.is_empty() {
        let this = crate::listed(
            &r.arches()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            "and",
        );
        out.push_str(&format!(
            "  cannot run (a {this} artifact, another machine) on: {}\n",
            elsewhere.join(", ")
        ));
    }
    out
}

#[cfg(test)]
mod tests;
