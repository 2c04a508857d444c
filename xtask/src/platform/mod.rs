//! The host platform seam: the OS and CPU architecture this tool runs on
//! ([`Os`], [`Arch`]), host compilers, MSVC
//! (msvc/), and [`Platform`], which owns the decisions that differ between a
//! Linux and a Windows build (the build environment, the compiler defines and
//! flags, the loader rule, the binary format). The plan computes it once
//! ([`Platform::of`]) and its steps ask it.

pub mod compiler;
pub mod gcc;
pub mod host;
pub mod mingw;
pub mod msvc;
pub mod target;

pub use target::Target;

use std::path::Path;

use crate::platform::compiler::{HostCompiler, HostCompilerKind};
use crate::platform::host::{Compiler, CompilerKind, Origin};
use crate::platform::msvc::env::MsvcToolsetEnv;
use crate::platform::msvc::plan::{self as msvc_plan, PlannedMsvc};
use crate::platform::msvc::MsvcToolset;
use crate::versions::{CompilerVersion, CompilerVersionError, Version};

/// A variable or define the platform decides, as (name, value, reason): the
/// plan records each as a policy setting.
pub type Decided = (&'static str, String, String);

fn decided(name: &'static str, value: impl Into<String>, reason: impl Into<String>) -> Decided {
    (name, value.into(), reason.into())
}

/// An operating system: the one this tool runs on ([`Os::host`], the only
/// `cfg!(windows)`), or one a test stands in for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Os {
    #[default]
    Linux,
    Windows,
}

impl Os {
    pub fn host() -> Os {
        if cfg!(windows) {
            Os::Windows
        } else {
            Os::Linux
        }
    }

    /// `linux` or `windows`.
    pub fn name(self) -> &'static str {
        match self {
            Os::Linux => "linux",
            Os::Windows => "windows",
        }
    }

    /// What a program's file name ends with: nothing, or `.exe`.
    pub fn exe_suffix(self) -> &'static str {
        match self {
            Os::Linux => "",
            Os::Windows => ".exe",
        }
    }
}

impl std::fmt::Display for Os {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("unknown target OS `{value}`: expected linux or windows")]
pub struct OsError {
    pub value: String,
}

impl std::str::FromStr for Os {
    type Err = OsError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "linux" => Ok(Os::Linux),
            "windows" => Ok(Os::Windows),
            _ => Err(OsError {
                value: s.to_string(),
            }),
        }
    }
}

/// A CPU architecture as platform tags and archive names spell it (`x86_64`, `aarch64`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Arch {
    X86_64,
    Aarch64,
}

impl Arch {
    pub const ALL: [Arch; 2] = [Arch::X86_64, Arch::Aarch64];

    /// The architecture this tool runs on: builds are native, so also the one they target.
    pub fn host() -> Arch {
        if cfg!(target_arch = "aarch64") {
            Arch::Aarch64
        } else {
            Arch::X86_64
        }
    }

    /// The architecture of this machine where it is a Linux x86-64 or aarch64 one, the
    /// hosts the pinned programs (wheels, Debian packages) are built for; `None` on
    /// another OS or architecture.
    pub fn linux_host() -> Option<Arch> {
        let known = cfg!(target_arch = "x86_64") || cfg!(target_arch = "aarch64");
        (Os::host() == Os::Linux && known).then(Arch::host)
    }
}

impl Arch {
    /// glibc's dynamic loader for this arch, as libraries name it in NEEDED.
    pub fn glibc_loader(self) -> &'static str {
        match self {
            Arch::X86_64 => "ld-linux-x86-64.so.2",
            Arch::Aarch64 => "ld-linux-aarch64.so.1",
        }
    }

    /// How Debian and GCC name the arch in triples and multiarch dirs: `x86_64-linux-gnu`,
    /// `aarch64-linux-gnu`.
    pub fn gnu_triple(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64-linux-gnu",
            Arch::Aarch64 => "aarch64-linux-gnu",
        }
    }
}

impl std::str::FromStr for Arch {
    type Err = ArchError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "x86_64" => Ok(Arch::X86_64),
            "aarch64" => Ok(Arch::Aarch64),
            _ => Err(ArchError {
                value: s.to_string(),
            }),
        }
    }
}

impl Arch {
    /// The arch Python's `platform.machine()` (or `uname -m`) names: `x86_64`/`AMD64`,
    /// `aarch64`/`arm64`/`ARM64`; `None` for another.
    pub fn from_machine(machine: &str) -> Option<Arch> {
        match machine.to_ascii_lowercase().as_str() {
            "x86_64" | "amd64" | "x64" => Some(Arch::X86_64),
            "aarch64" | "arm64" | "armv8" | "armv8l" => Some(Arch::Aarch64),
            _ => None,
        }
    }
}

impl serde::Serialize for Arch {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl std::fmt::Display for Arch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Arch::X86_64 => "x86_64",
            Arch::Aarch64 => "aarch64",
        })
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("unknown architecture `{value}`: expected x86_64 or aarch64")]
pub struct ArchError {
    pub value: String,
}

/// The loader rule on Linux: a RUNPATH entry starting with `$ORIGIN` is
/// relative to the library's own dir, so libraries and tools find each other
/// wherever they are unpacked.
pub const ORIGIN: &str = "$ORIGIN";

/// Whether a RUNPATH entry is relative to the library's own dir (`$ORIGIN` or `${ORIGIN}`).
pub fn origin_relative(entry: &str) -> bool {
    entry.starts_with("$ORIGIN") || entry.starts_with("${ORIGIN}")
}

/// The format of the libraries and programs a build makes, and so which reader
/// the packaging checks apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryFormat {
    /// Linux: ELF, read by binary/elf.rs; libraries find each other through RUNPATH.
    Elf,
    /// Windows: PE DLLs and EXEs, read by binary/pe.rs; a DLL is found beside
    /// the program or library that loads it (or on PATH).
    Pe,
}

impl BinaryFormat {
    /// Whether libraries carry a search path (RUNPATH) that packaging checks and
    /// rewrites (patchelf): ELF only; Windows finds DLLs otherwise.
    pub fn has_runpath(self) -> bool {
        match self {
            BinaryFormat::Elf => true,
            BinaryFormat::Pe => false,
        }
    }

    /// The file a shared library `name` is: `libNAME.so` (ELF), `NAME.dll` (PE).
    pub fn library_file(self, name: &str) -> String {
        match self {
            BinaryFormat::Elf => format!("lib{name}.so"),
            BinaryFormat::Pe => format!("{name}.dll"),
        }
    }

    /// Whether a file name is a shared library's: `lib*.so` or `lib*.so.*` (ELF), `*.dll` (PE).
    pub fn is_library_file(self, name: &str) -> bool {
        match self {
            BinaryFormat::Elf => {
                name.starts_with("lib") && (name.ends_with(".so") || name.contains(".so."))
            }
            BinaryFormat::Pe => name.to_ascii_lowercase().ends_with(".dll"),
        }
    }
}

/// The platform a plan builds for, with the compiler that builds it: natively
/// (Linux, Windows with MSVC), or Windows from Linux with mingw-w64.
#[derive(Debug, Clone, Copy)]
pub enum Platform<'a> {
    /// GCC or Clang, ELF libraries found through RUNPATH, for `arch` (natively, or
    /// cross-compiled: aarch64 on an x86-64 host).
    Linux {
        compiler: &'a Compiler,
        arch: Arch,
        /// Whether `arch` is not the host's: CMake cross-compiles.
        cross: bool,
    },
    /// mingw-w64 GCC on Linux, making PE files for Windows (`x86_64-pc-windows-gnu`).
    WindowsGnu {
        compiler: &'a Compiler,
        mingw: &'a mingw::Mingw,
    },
    /// MSVC: the build runs in `toolset`'s environment with its cl.exe (the host
    /// toolset, or the one the CUDA host compiler policy chose); PE DLLs.
    Windows {
        compiler: &'a Compiler,
        toolset: &'a MsvcToolsetEnv,
    },
}

impl<'a> Platform<'a> {
    /// The platform of the detected compiler building for `target`: Windows when the
    /// compiler is MSVC (with its host toolset), Windows from Linux when it is
    /// mingw-w64's, else Linux for the target's arch. (Where compiler and target disagree,
    /// [`Self::target`] differs from `target`: the plan refuses that.)
    pub fn of(compiler: &'a Compiler, target: Target, host_arch: Arch) -> Platform<'a> {
        match (&compiler.msvc, &compiler.mingw) {
            (Some(m), _) => Platform::Windows {
                compiler,
                toolset: &m.host,
            },
            (None, Some(mingw)) => Platform::WindowsGnu { compiler, mingw },
            (None, None) => {
                let arch = if target.is_linux() {
                    target.arch
                } else {
                    host_arch
                };
                Platform::Linux {
                    compiler,
                    arch,
                    cross: arch != host_arch,
                }
            }
        }
    }

    /// The target this platform builds for.
    pub fn target(&self) -> Target {
        match self {
            Platform::Linux { arch, .. } => Target {
                arch: *arch,
                os: Os::Linux,
                env: target::TargetEnv::Gnu,
            },
            Platform::WindowsGnu { .. } => Target::WINDOWS_GNU,
            Platform::Windows { .. } => Target::WINDOWS_MSVC,
        }
    }

    /// The CPU architecture the artifact runs on.
    pub fn arch(&self) -> Arch {
        self.target().arch
    }

    /// Whether the build compiles for another CPU arch than the host's (Linux aarch64 on
    /// x86-64; mingw-w64's Windows target is a cross build of its own kind).
    pub fn is_cross_arch(&self) -> bool {
        matches!(self, Platform::Linux { cross: true, .. })
    }

    /// The same platform with the MSVC toolset the host compiler policy switched
    /// to (`UseToolset`), when it is installed; unchanged otherwise.
    pub fn switched_to(self, switched: Option<MsvcToolset>) -> Platform<'a> {
        match (self, switched) {
            (Platform::Windows { compiler, toolset }, Some(s)) => Platform::Windows {
                compiler,
                toolset: compiler
                    .msvc
                    .iter()
                    .flat_map(|m| m.others.iter())
                    .find(|o| o.toolset == s)
                    .unwrap_or(toolset),
            },
            (p, _) => p,
        }
    }

    pub fn os(&self) -> Os {
        self.target().os()
    }

    /// `linux` or `windows`, as archive names spell the platform (with the arch).
    pub fn name(&self) -> &'static str {
        self.os().name()
    }

    pub fn binary_format(&self) -> BinaryFormat {
        self.target().binary_format()
    }

    /// The MSVC toolset the build runs with, on Windows.
    pub fn msvc(&self) -> Option<&'a MsvcToolsetEnv> {
        match self {
            Platform::Linux { .. } | Platform::WindowsGnu { .. } => None,
            Platform::Windows { toolset, .. } => Some(toolset),
        }
    }

    fn compiler(&self) -> &'a Compiler {
        match self {
            Platform::Linux { compiler, .. }
            | Platform::WindowsGnu { compiler, .. }
            | Platform::Windows { compiler, .. } => compiler,
        }
    }

    /// The C++ compiler the build (and nvcc's host passes) use: the toolset's cl.exe on Windows.
    pub fn host_cxx(&self) -> &'a Path {
        self.compilers().1
    }

    /// The detected host compiler as the CUDA host compiler policy sees it.
    pub fn host_compiler(&self) -> Result<HostCompiler, CompilerVersionError> {
        let c = self.compiler();
        Ok(HostCompiler {
            kind: match c.kind {
                CompilerKind::Gcc => HostCompilerKind::Gcc,
                CompilerKind::Clang => HostCompilerKind::Clang,
                CompilerKind::Msvc => HostCompilerKind::Msvc,
            },
            version: CompilerVersion::try_from(&c.version)?,
            path: c.cxx.clone(),
        })
    }

    /// The other installed MSVC toolsets the host compiler policy may switch to (none on Linux).
    pub fn other_toolsets(&self) -> Vec<MsvcToolset> {
        self.compiler()
            .msvc
            .iter()
            .flat_map(|m| m.others.iter().map(|t| t.toolset))
            .collect()
    }

    /// The build environment's platform variables: PATH (the compiler's dir and
    /// the system dirs) and the locale, or the MSVC toolset's captured environment.
    pub fn base_env(&self) -> Vec<Decided> {
        match self {
            Platform::Linux { compiler, .. } | Platform::WindowsGnu { compiler, .. } => {
                let mut path_dirs: Vec<String> = Vec::new();
                // The pinned toolchain finds its assembler and linker in its own tool dir: its
                // path (which names this machine's cache) stays out of the plan.
                let own_dir = compiler
                    .pinned
                    .is_none()
                    .then(|| compiler.cxx.parent())
                    .flatten();
                for d in [
                    own_dir,
                    Some(Path::new("/usr/bin")),
                    Some(Path::new("/bin")),
                ]
                .into_iter()
                .flatten()
                {
                    let d = d.display().to_string();
                    if !d.is_empty() && !path_dirs.contains(&d) {
                        path_dirs.push(d);
                    }
                }
                vec![
                    decided(
                        "PATH",
                        path_dirs.join(":"),
                        "the build sees no user PATH: the system dirs, after the detected compiler's dir (for its assembler and linker; the pinned toolchain finds its own in its tree)",
                    ),
                    decided("LC_ALL", "C", "compiler messages and sorting independent of the user's locale"),
                ]
            }
            Platform::Windows { toolset, .. } => msvc_plan::msvc_env(toolset),
        }
    }

    /// Why `CMAKE_BUILD_TYPE=Release`: the flags it stands for on this platform.
    pub fn release_reason(&self) -> &'static str {
        match self {
            Platform::Linux { .. } | Platform::WindowsGnu { .. } => {
                "optimised code (-O3 -DNDEBUG), no debug info"
            }
            Platform::Windows { .. } => "optimised code (/O2 /DNDEBUG), no debug info",
        }
    }

    /// The host compiler, its reproducibility flags, the install prefix and (ELF)
    /// the RUNPATH rules; `portable` writes a path as the plan records it.
    pub fn compiler_defines(&self, portable: impl Fn(&Path) -> String) -> Vec<Decided> {
        match self {
            Platform::Linux {
                compiler,
                arch,
                cross,
            } => {
                let mut defines = linux_defines(compiler, &portable);
                if *cross {
                    defines.splice(0..0, linux_cross_defines(*arch));
                }
                // The pinned toolchain: its compilers replace the detected ones' entries.
                if let Some(g) = &compiler.pinned {
                    let file = match &compiler.origin {
                        Origin::PinnedSet { file, .. } => file.as_str(),
                        _ => "toolchains/linux-gcc.toml",
                    };
                    for d in gcc::compiler_defines(&compiler.cc, &compiler.cxx, g, file, &portable)
                    {
                        match defines.iter_mut().find(|x| x.0 == d.0) {
                            Some(slot) => *slot = d,
                            None => defines.push(d),
                        }
                    }
                }
                for d in elf_trim_defines() {
                    if !defines.iter().any(|x| x.0 == d.0) {
                        defines.push(d);
                    }
                }
                defines
            }
            Platform::WindowsGnu { compiler, mingw } => {
                mingw::compiler_defines((&compiler.cc, &compiler.cxx), mingw, portable)
            }
            Platform::Windows { toolset, .. } => msvc_plan::compiler_defines(toolset, portable),
        }
    }

    /// The static C++ runtime each library links in (`libstdc++.a` of the pinned GCC), from
    /// which an archive's tools get one shared runtime instead: `None` where the compiler
    /// links the system's `libstdc++.so.6` (one runtime already) or the target is Windows.
    pub fn static_cxx_runtime(&self) -> Option<&Path> {
        match self {
            Platform::Linux { compiler, .. } => {
                compiler.pinned.as_ref().map(|g| g.cxx_runtime.as_path())
            }
            Platform::WindowsGnu { .. } | Platform::Windows { .. } => None,
        }
    }

    /// Whether ggml builds the CPU variant of this name (`haswell`) with the platform's
    /// compiler: under MSVC,
    /// ggml's CMake leaves out ivybridge and piledriver (no `__FMA__`/`__F16C__`),
    /// cooperlake and zen4 (no BF16 intrinsics) and sapphirerapids (no AMX).
    pub fn builds_cpu_variant(&self, name: &str) -> bool {
        match self {
            Platform::Linux { .. } | Platform::WindowsGnu { .. } => true,
            Platform::Windows { .. } => !matches!(
                name,
                "ivybridge" | "piledriver" | "cooperlake" | "zen4" | "sapphirerapids"
            ),
        }
    }

    /// Why `CMAKE_CUDA_HOST_COMPILER` is what it is; `switched`: the host
    /// compiler policy chose another MSVC toolset.
    pub fn cuda_host_reason(&self, switched: bool) -> String {
        match (switched, self) {
            (true, Platform::Windows { toolset, .. }) => msvc_plan::cuda_host_reason(toolset),
            _ => "nvcc's host passes use the detected host compiler".to_string(),
        }
    }

    /// nvcc flags (with reasons) that restate the platform's own CUDA flags,
    /// which giving `CMAKE_CUDA_FLAGS` replaces: before the policy's flags.
    pub fn nvcc_platform_flags(&self, portable: impl Fn(&Path) -> String) -> Vec<(String, String)> {
        match self {
            Platform::Linux { compiler, .. } => compiler
                .pinned
                .as_ref()
                .map(|g| gcc::nvcc_flags(g, portable))
                .unwrap_or_default(),
            Platform::WindowsGnu { .. } => vec![],
            Platform::Windows { .. } => msvc_plan::nvcc_platform_flags(),
        }
    }

    /// nvcc's host-side reproducibility flags (with reasons): no build-machine paths, no timestamps.
    pub fn nvcc_repro_flags(&self) -> Vec<(String, String)> {
        match self {
            Platform::Linux { .. } | Platform::WindowsGnu { .. } => vec![
                (
                    "-Xcompiler=-ffile-prefix-map=${SRC}=/src".into(),
                    "host-side passes of nvcc: no build-machine path in __FILE__ or asserts".into(),
                ),
                (
                    "-Xcompiler=-ffile-prefix-map=${BUILD}=/build".into(),
                    "host-side passes of nvcc: no build-machine path in __FILE__ or asserts".into(),
                ),
            ],
            Platform::Windows { .. } => msvc_plan::nvcc_repro_flags(),
        }
    }

    /// Whether the nvcc launcher (a shell script, `toolchains/nvcc-seed.sh`) can run here.
    pub fn runs_shell_launcher(&self) -> bool {
        matches!(self, Platform::Linux { .. })
    }

    /// What a CUDA plan on this platform cannot do yet, as warnings.
    pub fn cuda_warnings(&self) -> Vec<String> {
        match self {
            Platform::Linux { .. } | Platform::WindowsGnu { .. } => vec![],
            Platform::Windows { .. } => msvc_plan::cuda_warnings(),
        }
    }

    /// The RUNPATH the libraries get, from the one the CUDA runtime needs: none
    /// where the binary format has no RUNPATH (Windows finds DLLs otherwise).
    pub fn runpath(&self, wanted: Vec<String>) -> Vec<String> {
        if self.binary_format().has_runpath() {
            wanted
        } else {
            vec![]
        }
    }

    /// The C and C++ compilers the build runs (on Windows both the toolset's cl.exe).
    pub fn compilers(&self) -> (&'a Path, &'a Path) {
        match self {
            Platform::Linux { compiler, .. } | Platform::WindowsGnu { compiler, .. } => {
                (&compiler.cc, &compiler.cxx)
            }
            Platform::Windows { toolset, .. } => (&toolset.cl, &toolset.cl),
        }
    }

    /// The version, kind and origin the plan records for [`Self::compilers`].
    pub fn compiler_facts(&self) -> (&'a Version, CompilerKind, &'a Origin) {
        match self {
            Platform::Linux { compiler, .. } | Platform::WindowsGnu { compiler, .. } => {
                (&compiler.version, compiler.kind, &compiler.origin)
            }
            Platform::Windows { compiler, toolset } => {
                (&toolset.cl_version, CompilerKind::Msvc, &compiler.origin)
            }
        }
    }

    /// The MSVC toolset as the plan records it, on Windows.
    pub fn planned_msvc(&self) -> Option<PlannedMsvc> {
        self.msvc().map(msvc_plan::planned)
    }
}

/// A Linux build for another arch than the host's (aarch64 on x86-64): CMake
/// cross-compiles, and finds the target's libraries, headers and packages in the sysroot
/// only. (ggml's CMake reads CMAKE_SYSTEM_PROCESSOR to pick its ARM or x86 code.)
fn linux_cross_defines(arch: Arch) -> Vec<Decided> {
    let only = "CMake finds the target's libraries, headers and packages under the sysroot only, never the build host's (of another arch)";
    vec![
        decided("CMAKE_SYSTEM_NAME", "Linux", format!("a cross build: CMake makes Linux {arch} libraries and programs on a host of another arch, and runs none of them")),
        decided("CMAKE_SYSTEM_PROCESSOR", arch.to_string(), format!("the target's CPU: ggml compiles its {arch} code and CPU variants, not the host's")),
        decided("CMAKE_FIND_ROOT_PATH_MODE_PROGRAM", "NEVER", "programs the build runs are the host's"),
        decided("CMAKE_FIND_ROOT_PATH_MODE_LIBRARY", "ONLY", only),
        decided("CMAKE_FIND_ROOT_PATH_MODE_INCLUDE", "ONLY", only),
        decided("CMAKE_FIND_ROOT_PATH_MODE_PACKAGE", "ONLY", only),
    ]
}

/// The link flags of every ELF build: unreferenced sections dropped, no symbol table.
pub const ELF_TRIM: &str = "-Wl,--gc-sections -s";
/// Why: measured on the 0.3.36 CPU wheel (BENCHMARKS.md, "CPU wheel size").
pub const ELF_TRIM_REASON: &str = "-Wl,--gc-sections drops what nothing references, above all the unused parts of the C++ runtime linked into each library (libggml.so 1.6 MB -> 0.18 MB); -s leaves out the static symbol table (.symtab/.strtab), which no loader reads: the exported symbols stay, and so do backtraces through them; the 0.3.36 CPU wheel 7.3 -> 5.9 MB, the same code";

/// The C and C++ flags of every Linux build: no build path in the binaries, and each
/// function and object in a section of its own, so that --gc-sections ([`ELF_TRIM`])
/// drops each one nothing calls, not only whole files.
const ELF_COMPILE: &str =
    "-ffile-prefix-map=${SRC}=/src -ffile-prefix-map=${BUILD}=/build -ffunction-sections -fdata-sections";
const ELF_COMPILE_REASON: &str = "no build-machine path in __FILE__, asserts or debug info (-ffile-prefix-map); a section per function and per object (-ffunction-sections -fdata-sections), so that the link's --gc-sections drops each one that nothing references, not only whole object files (with hidden symbols, the haswell CPU variant 506 -> 463 KB deflated)";

/// A Linux build's compiler, reproducibility flags, install prefix and RUNPATH rules.
fn linux_defines(compiler: &Compiler, portable: &impl Fn(&Path) -> String) -> Vec<Decided> {
    vec![
        decided("CMAKE_C_COMPILER", portable(&compiler.cc), "the host compiler detected for this build"),
        decided("CMAKE_CXX_COMPILER", portable(&compiler.cxx), "the host compiler detected for this build"),
        decided("CMAKE_C_FLAGS", ELF_COMPILE, ELF_COMPILE_REASON),
        decided("CMAKE_CXX_FLAGS", ELF_COMPILE, ELF_COMPILE_REASON),
        decided("CMAKE_INSTALL_PREFIX", "${STAGE}/prefix", "install rules outside the artifact (headers, CMake files) land in the staging dir, not the system"),
        decided("CMAKE_BUILD_WITH_INSTALL_RPATH", "ON", "libraries get their final RUNPATH when linked: no build-dir path is ever written"),
        decided("CMAKE_INSTALL_RPATH", ORIGIN, "libraries and tools find each other beside themselves, wherever they are unpacked"),
        decided(
            "CMAKE_BUILD_RPATH_USE_ORIGIN",
            "ON",
            "a target linked with a build RUNPATH (llama-cpp-python's CMakeLists turns CMAKE_BUILD_WITH_INSTALL_RPATH off for its tree, so ggml's CPU variant modules get one) gets $ORIGIN, not the build dir: install rewrites the RUNPATH, but the linker's build ID was computed with the build dir's path in it, so the modules' bytes depended on where the build ran",
        ),
        decided(
            "CMAKE_PLATFORM_NO_VERSIONED_SONAME",
            "ON",
            "each library exactly once, under the name that is loaded (libllama.so): no .so.0/.so.0.0.N copies, which zip cannot store as links",
        ),
    ]
}

/// The link flags of an ELF build whose compiler brings none of its own (the pinned GCC's
/// carry [`ELF_TRIM`] in theirs): added after the compiler's defines, so a pinned plan
/// keeps the order its manifests record.
fn elf_trim_defines() -> Vec<Decided> {
    [
        "CMAKE_SHARED_LINKER_FLAGS",
        "CMAKE_MODULE_LINKER_FLAGS",
        "CMAKE_EXE_LINKER_FLAGS",
    ]
    .into_iter()
    .map(|name| decided(name, ELF_TRIM, ELF_TRIM_REASON))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_formats_name_their_libraries_and_only_elf_has_runpaths() {
        assert_eq!(BinaryFormat::Elf.library_file("llama"), "libllama.so");
        assert_eq!(BinaryFormat::Pe.library_file("llama"), "llama.dll");
        assert!(BinaryFormat::Elf.is_library_file("libcudart.so.13"));
        assert!(!BinaryFormat::Elf.is_library_file("llama.dll"));
        assert!(BinaryFormat::Pe.is_library_file("LLAMA.DLL"));
        assert!(BinaryFormat::Elf.has_runpath() && !BinaryFormat::Pe.has_runpath());
        assert!(origin_relative("$ORIGIN/../lib") && origin_relative("${ORIGIN}"));
        assert!(!origin_relative("/usr/local/cuda/lib64"));
    }
}
