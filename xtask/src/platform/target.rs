//! What a build is for: `--target`, a target triple, and the rules of which host
//! builds which target with what.

use std::fmt;
use std::str::FromStr;

use super::{Arch, Os};

/// The platform an artifact is built for (`--target`): a CPU architecture, an OS and
/// an environment (the C runtime and compiler family). The default is the host's:
/// `x86_64-unknown-linux-gnu` on Linux x86-64, `aarch64-unknown-linux-gnu` on Linux
/// aarch64, `x86_64-pc-windows-msvc` on Windows. Every rule that differs between
/// targets is a question asked of it, here or in [`crate::platform::Platform`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Target {
    pub arch: Arch,
    pub os: Os,
    pub env: TargetEnv,
}

/// The environment of a target: the C runtime and compiler family its files are made for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TargetEnv {
    /// glibc on Linux (GCC or Clang), or mingw-w64's GCC on Windows.
    Gnu,
    /// Microsoft's C runtime, cl.exe.
    Msvc,
}

impl serde::Serialize for Target {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.triple())
    }
}

impl<'de> serde::Deserialize<'de> for Target {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <String as serde::Deserialize>::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// In the manifest's JSON schema: one of the triples.
impl schemars::JsonSchema for Target {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Target".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let triples: Vec<&str> = Target::ALL.iter().map(|t| t.triple()).collect();
        schemars::json_schema!({
            "description": "The platform an artifact is built for (`--target`): arch, OS and environment as a target triple.",
            "type": "string",
            "enum": triples,
        })
    }
}

/// What plans from before `--target` were for ([`Target::is_linux_gnu`]).
impl Default for Target {
    fn default() -> Self {
        Target::LINUX_X86_64
    }
}

impl Target {
    /// Linux x86-64, GCC or Clang, ELF, glibc (manylinux wheels).
    pub const LINUX_X86_64: Target = Target {
        arch: Arch::X86_64,
        os: Os::Linux,
        env: TargetEnv::Gnu,
    };
    /// Linux aarch64 (DGX Spark, Grace, Jetson Thor), GCC, ELF, glibc: built natively on an
    /// aarch64 host or cross-built on x86-64.
    pub const LINUX_AARCH64: Target = Target {
        arch: Arch::Aarch64,
        os: Os::Linux,
        env: TargetEnv::Gnu,
    };
    /// Windows x86-64, MSVC, PE: built on Windows, CPU and CUDA.
    pub const WINDOWS_MSVC: Target = Target {
        arch: Arch::X86_64,
        os: Os::Windows,
        env: TargetEnv::Msvc,
    };
    /// Windows x86-64, PE, built from Linux with mingw-w64 GCC: CPU only.
    pub const WINDOWS_GNU: Target = Target {
        arch: Arch::X86_64,
        os: Os::Windows,
        env: TargetEnv::Gnu,
    };

    pub const ALL: [Target; 4] = [
        Target::LINUX_X86_64,
        Target::LINUX_AARCH64,
        Target::WINDOWS_MSVC,
        Target::WINDOWS_GNU,
    ];

    /// The target a build on this host (`os`, `arch`) makes when `--target` is not given.
    pub fn default_for(host: Os, arch: Arch) -> Target {
        match host {
            Os::Linux => Target {
                arch,
                os: Os::Linux,
                env: TargetEnv::Gnu,
            },
            Os::Windows => Target::WINDOWS_MSVC,
        }
    }

    /// The host's own target ([`Self::default_for`] of this machine).
    pub fn host() -> Target {
        Target::default_for(Os::host(), Arch::host())
    }

    pub fn triple(self) -> &'static str {
        match (self.arch, self.os, self.env) {
            (Arch::X86_64, Os::Linux, _) => "x86_64-unknown-linux-gnu",
            (Arch::Aarch64, Os::Linux, _) => "aarch64-unknown-linux-gnu",
            (_, Os::Windows, TargetEnv::Msvc) => "x86_64-pc-windows-msvc",
            (_, Os::Windows, TargetEnv::Gnu) => "x86_64-pc-windows-gnu",
        }
    }

    /// A short name for file and job names: `linux-gnu`, `linux-aarch64`, `windows-msvc`,
    /// `windows-gnu` (the x86-64 names kept from before aarch64).
    pub fn short_name(self) -> &'static str {
        match (self.arch, self.os, self.env) {
            (Arch::X86_64, Os::Linux, _) => "linux-gnu",
            (Arch::Aarch64, Os::Linux, _) => "linux-aarch64",
            (_, Os::Windows, TargetEnv::Msvc) => "windows-msvc",
            (_, Os::Windows, TargetEnv::Gnu) => "windows-gnu",
        }
    }

    /// The OS the artifact runs on.
    pub fn os(self) -> Os {
        self.os
    }

    /// The CPU architecture the artifact runs on.
    pub fn arch(self) -> Arch {
        self.arch
    }

    /// The format of its libraries and programs: ELF on Linux, PE on Windows.
    pub fn binary_format(self) -> super::BinaryFormat {
        match self.os {
            Os::Linux => super::BinaryFormat::Elf,
            Os::Windows => super::BinaryFormat::Pe,
        }
    }

    /// Whether the artifact is for Linux (ELF, glibc, manylinux tags).
    pub fn is_linux(self) -> bool {
        self.os == Os::Linux
    }

    /// Whether this is mingw-w64's Windows target (built from Linux, CPU only).
    pub fn is_mingw(self) -> bool {
        self.os == Os::Windows && self.env == TargetEnv::Gnu
    }

    /// `linux-x86_64`, `linux-aarch64`, `windows-x86_64`: how archive names spell the platform.
    pub fn archive_platform(self) -> String {
        format!("{}-{}", self.os.name(), self.arch)
    }

    /// What the target is, for the list an unknown `--target` gets and shell completion.
    pub fn about(self) -> &'static str {
        match (self.arch, self.os, self.env) {
            (Arch::X86_64, Os::Linux, _) => {
                "Linux x86-64, GCC or Clang, CPU and CUDA (the default on Linux x86-64)"
            }
            (Arch::Aarch64, Os::Linux, _) => {
                "Linux aarch64 (DGX Spark, Grace, Jetson Thor), CPU and CUDA, cross-built on Linux x86-64 or built on aarch64 (the default there)"
            }
            (_, Os::Windows, TargetEnv::Msvc) => {
                "Windows, MSVC, CPU and CUDA, built on Windows (the default there)"
            }
            (_, Os::Windows, TargetEnv::Gnu) => {
                "Windows, CPU only, cross-built from Linux with mingw-w64"
            }
        }
    }

    /// The file a shared library `name` (a CMake target) is, as the build names it:
    /// `libllama.so` on Linux; `llama.dll` with MSVC; with mingw-w64, `libllama.dll`
    /// (CMake's prefix for GNU on Windows) but `ggml*.dll`, as ggml's CMakeLists
    /// drops the prefix for its own targets on Windows.
    pub fn library_file(self, name: &str) -> String {
        match (self.os, self.env) {
            (Os::Linux, _) => format!("lib{name}.so"),
            (Os::Windows, TargetEnv::Msvc) => format!("{name}.dll"),
            (Os::Windows, TargetEnv::Gnu) if name.starts_with("ggml") => format!("{name}.dll"),
            (Os::Windows, TargetEnv::Gnu) => format!("lib{name}.dll"),
        }
    }

    /// Whether the plan leaves the target out of its JSON: Linux x86-64, which every plan
    /// from before `--target` was for, so their hashes hold.
    pub fn is_linux_gnu(&self) -> bool {
        *self == Target::LINUX_X86_64
    }

    /// Why this host (`host`, `host_arch`) cannot build this target (with a GPU build
    /// when `cuda`), and what to do instead; `None` when it can.
    pub fn refusal(self, host: Os, host_arch: Arch, cuda: bool) -> Option<String> {
        if self.is_mingw() && cuda {
            return Some(format!(
                "--target {self} builds the CPU code only: nvcc accepts no mingw-w64 GCC as its host compiler (on Windows only MSVC's cl.exe); \
                 build --arch cpu for this target, or build the CUDA artifact on Windows with --target {}",
                Target::WINDOWS_MSVC
            ));
        }
        match (self.os, self.env, host) {
            (Os::Linux, _, Os::Windows) => Some(format!(
                "--target {self} is built on Linux: this is Windows, where the target is {} (the default)",
                Target::WINDOWS_MSVC
            )),
            (Os::Windows, TargetEnv::Msvc, Os::Linux) => Some(format!(
                "--target {self} is built on Windows, with MSVC (its SDK and C runtime are not available on Linux); \
                 from Linux, --target {} cross-builds the CPU artifacts with mingw-w64",
                Target::WINDOWS_GNU
            )),
            (Os::Windows, TargetEnv::Gnu, Os::Windows) => Some(format!(
                "--target {self} is cross-built from Linux; on Windows build --target {} (the default) with MSVC",
                Target::WINDOWS_MSVC
            )),
            (Os::Windows, TargetEnv::Gnu, Os::Linux) if host_arch != Arch::X86_64 => Some(format!(
                "--target {self} is cross-built from Linux x86-64 (Debian's mingw-w64 packages): this is Linux {host_arch}"
            )),
            (Os::Linux, _, Os::Linux) if self.arch != host_arch && host_arch != Arch::X86_64 => {
                Some(format!(
                    "--target {self} is built on Linux {} or cross-built on Linux x86-64: this is Linux {host_arch}",
                    self.arch
                ))
            }
            _ => None,
        }
    }

    /// Whether building this target on a `host_arch` machine cross-compiles.
    pub fn is_cross_from(self, host_arch: Arch) -> bool {
        self.arch != host_arch
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.triple())
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("unknown --target `{value}`; the targets are:\n{}", Target::ALL.iter().map(|t| format!("  {t}: {}", t.about())).collect::<Vec<_>>().join("\n"))]
pub struct TargetError {
    pub value: String,
}

impl FromStr for Target {
    type Err = TargetError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Target::ALL
            .into_iter()
            .find(|t| t.triple().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| TargetError {
                value: s.to_string(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triples_parse_and_print_and_an_unknown_one_lists_the_targets() {
        for t in Target::ALL {
            assert_eq!(t.triple().parse::<Target>(), Ok(t));
            assert_eq!(
                serde_json::to_string(&t).unwrap(),
                format!("\"{}\"", t.triple())
            );
        }
        insta::assert_snapshot!(
            "x86_64-pc-windows".parse::<Target>().unwrap_err().to_string(),
            @r"
        unknown --target `x86_64-pc-windows`; the targets are:
          x86_64-unknown-linux-gnu: Linux x86-64, GCC or Clang, CPU and CUDA (the default on Linux x86-64)
          aarch64-unknown-linux-gnu: Linux aarch64 (DGX Spark, Grace, Jetson Thor), CPU and CUDA, cross-built on Linux x86-64 or built on aarch64 (the default there)
          x86_64-pc-windows-msvc: Windows, MSVC, CPU and CUDA, built on Windows (the default there)
          x86_64-pc-windows-gnu: Windows, CPU only, cross-built from Linux with mingw-w64
        "
        );
    }

    #[test]
    fn each_host_builds_its_own_targets_and_mingw_builds_no_cuda() {
        use Arch::{Aarch64, X86_64};
        assert_eq!(Target::default_for(Os::Linux, X86_64), Target::LINUX_X86_64);
        assert_eq!(
            Target::default_for(Os::Linux, Aarch64),
            Target::LINUX_AARCH64
        );
        assert_eq!(
            Target::default_for(Os::Windows, X86_64),
            Target::WINDOWS_MSVC
        );
        for (t, host, arch, cuda, ok) in [
            (Target::LINUX_X86_64, Os::Linux, X86_64, true, true),
            (Target::LINUX_AARCH64, Os::Linux, X86_64, true, true),
            (Target::LINUX_AARCH64, Os::Linux, Aarch64, true, true),
            (Target::LINUX_X86_64, Os::Linux, Aarch64, false, false),
            (Target::WINDOWS_GNU, Os::Linux, X86_64, false, true),
            (Target::WINDOWS_GNU, Os::Linux, Aarch64, false, false),
            (Target::WINDOWS_MSVC, Os::Windows, X86_64, true, true),
            (Target::WINDOWS_GNU, Os::Linux, X86_64, true, false),
            (Target::WINDOWS_MSVC, Os::Linux, X86_64, false, false),
            (Target::LINUX_X86_64, Os::Windows, X86_64, false, false),
            (Target::LINUX_AARCH64, Os::Windows, X86_64, false, false),
            (Target::WINDOWS_GNU, Os::Windows, X86_64, false, false),
        ] {
            assert_eq!(
                t.refusal(host, arch, cuda).is_none(),
                ok,
                "{t} on {host} {arch}, cuda {cuda}"
            );
        }
        let e = Target::WINDOWS_GNU
            .refusal(Os::Linux, X86_64, true)
            .unwrap();
        assert!(
            e.contains("nvcc accepts no mingw-w64 GCC")
                && e.contains("--arch cpu")
                && e.contains("--target x86_64-pc-windows-msvc"),
            "{e}"
        );
        let e = Target::WINDOWS_MSVC
            .refusal(Os::Linux, X86_64, false)
            .unwrap();
        assert!(e.contains("--target x86_64-pc-windows-gnu"), "{e}");
        let e = Target::LINUX_X86_64
            .refusal(Os::Linux, Aarch64, false)
            .unwrap();
        assert!(
            e.contains("cross-built on Linux x86-64: this is Linux aarch64"),
            "{e}"
        );
    }

    #[test]
    fn a_target_is_arch_os_and_environment() {
        let t = Target::LINUX_AARCH64;
        assert_eq!(
            (t.arch(), t.os(), t.is_linux(), t.is_mingw()),
            (Arch::Aarch64, Os::Linux, true, false)
        );
        assert_eq!(t.archive_platform(), "linux-aarch64");
        assert_eq!(t.library_file("llama"), "libllama.so");
        assert!(t.is_cross_from(Arch::X86_64) && !t.is_cross_from(Arch::Aarch64));
        assert!(!t.is_linux_gnu() && Target::LINUX_X86_64.is_linux_gnu());
        assert!(Target::WINDOWS_GNU.is_mingw());
        assert_eq!(Target::WINDOWS_GNU.library_file("ggml-cpu"), "ggml-cpu.dll");
        assert_eq!(Target::WINDOWS_GNU.library_file("llama"), "libllama.dll");
        assert_eq!(Target::WINDOWS_MSVC.archive_platform(), "windows-x86_64");
        let names: std::collections::BTreeSet<_> =
            Target::ALL.iter().map(|t| t.short_name()).collect();
        assert_eq!(names.len(), Target::ALL.len());
    }
}
