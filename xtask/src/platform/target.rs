//! What a build is for: `--target`, a target triple, and the rules of which host
//! builds which target with what.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::Os;

/// The platform an artifact is built for (`--target`). The default is the host's:
/// `x86_64-unknown-linux-gnu` on Linux, `x86_64-pc-windows-msvc` on Windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub enum Target {
    /// Linux, GCC or Clang, ELF, glibc (manylinux wheels).
    #[serde(rename = "x86_64-unknown-linux-gnu")]
    LinuxGnu,
    /// Windows, MSVC, PE: built on Windows, CPU and CUDA.
    #[serde(rename = "x86_64-pc-windows-msvc")]
    WindowsMsvc,
    /// Windows, PE, built from Linux with mingw-w64 GCC: CPU only.
    #[serde(rename = "x86_64-pc-windows-gnu")]
    WindowsGnu,
}

/// What plans from before `--target` were for ([`Target::is_linux_gnu`]).
impl Default for Target {
    fn default() -> Self {
        Target::LinuxGnu
    }
}

impl Target {
    pub const ALL: [Target; 3] = [Target::LinuxGnu, Target::WindowsMsvc, Target::WindowsGnu];

    /// The target a build on `host` makes when `--target` is not given.
    pub fn default_for(host: Os) -> Target {
        match host {
            Os::Linux => Target::LinuxGnu,
            Os::Windows => Target::WindowsMsvc,
        }
    }

    pub fn triple(self) -> &'static str {
        match self {
            Target::LinuxGnu => "x86_64-unknown-linux-gnu",
            Target::WindowsMsvc => "x86_64-pc-windows-msvc",
            Target::WindowsGnu => "x86_64-pc-windows-gnu",
        }
    }

    /// A short name for file and job names: `linux-gnu`, `windows-msvc`, `windows-gnu`.
    pub fn short_name(self) -> &'static str {
        match self {
            Target::LinuxGnu => "linux-gnu",
            Target::WindowsMsvc => "windows-msvc",
            Target::WindowsGnu => "windows-gnu",
        }
    }

    /// The OS the artifact runs on.
    pub fn os(self) -> Os {
        match self {
            Target::LinuxGnu => Os::Linux,
            Target::WindowsMsvc | Target::WindowsGnu => Os::Windows,
        }
    }

    /// What the target is, for the list an unknown `--target` gets.
    fn about(self) -> &'static str {
        match self {
            Target::LinuxGnu => "Linux, GCC or Clang, CPU and CUDA (the default on Linux)",
            Target::WindowsMsvc => {
                "Windows, MSVC, CPU and CUDA, built on Windows (the default there)"
            }
            Target::WindowsGnu => "Windows, CPU only, cross-built from Linux with mingw-w64",
        }
    }

    /// The file a shared library `name` (a CMake target) is, as the build names it:
    /// `libllama.so` on Linux; `llama.dll` with MSVC; with mingw-w64, `libllama.dll`
    /// (CMake's prefix for GNU on Windows) but `ggml*.dll`, as ggml's CMakeLists
    /// drops the prefix for its own targets on Windows.
    pub fn library_file(self, name: &str) -> String {
        match self {
            Target::LinuxGnu => format!("lib{name}.so"),
            Target::WindowsMsvc => format!("{name}.dll"),
            Target::WindowsGnu if name.starts_with("ggml") => format!("{name}.dll"),
            Target::WindowsGnu => format!("lib{name}.dll"),
        }
    }

    /// Whether the plan leaves the target out of its JSON: the Linux target, which
    /// every plan from before `--target` was for, so their hashes hold.
    pub fn is_linux_gnu(&self) -> bool {
        *self == Target::LinuxGnu
    }

    /// Why this host cannot build this target (with a GPU build when `cuda`),
    /// and what to do instead; `None` when it can.
    pub fn refusal(self, host: Os, cuda: bool) -> Option<String> {
        match (self, host) {
            (Target::WindowsGnu, _) if cuda => Some(format!(
                "--target {self} builds the CPU code only: nvcc accepts no mingw-w64 GCC as its host compiler (on Windows only MSVC's cl.exe); \
                 build --arch cpu for this target, or build the CUDA artifact on Windows with --target {}",
                Target::WindowsMsvc
            )),
            (Target::LinuxGnu, Os::Windows) => Some(format!(
                "--target {self} is built on Linux: this is Windows, where the target is {} (the default)",
                Target::WindowsMsvc
            )),
            (Target::WindowsMsvc, Os::Linux) => Some(format!(
                "--target {self} is built on Windows, with MSVC (its SDK and C runtime are not available on Linux); \
                 from Linux, --target {} cross-builds the CPU artifacts with mingw-w64",
                Target::WindowsGnu
            )),
            (Target::WindowsGnu, Os::Windows) => Some(format!(
                "--target {self} is cross-built from Linux; on Windows build --target {} (the default) with MSVC",
                Target::WindowsMsvc
            )),
            _ => None,
        }
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
          x86_64-unknown-linux-gnu: Linux, GCC or Clang, CPU and CUDA (the default on Linux)
          x86_64-pc-windows-msvc: Windows, MSVC, CPU and CUDA, built on Windows (the default there)
          x86_64-pc-windows-gnu: Windows, CPU only, cross-built from Linux with mingw-w64
        "
        );
    }

    #[test]
    fn each_host_builds_its_own_targets_and_mingw_builds_no_cuda() {
        assert_eq!(Target::default_for(Os::Linux), Target::LinuxGnu);
        assert_eq!(Target::default_for(Os::Windows), Target::WindowsMsvc);
        for (t, host, cuda, ok) in [
            (Target::LinuxGnu, Os::Linux, true, true),
            (Target::WindowsGnu, Os::Linux, false, true),
            (Target::WindowsMsvc, Os::Windows, true, true),
            (Target::WindowsGnu, Os::Linux, true, false),
            (Target::WindowsMsvc, Os::Linux, false, false),
            (Target::LinuxGnu, Os::Windows, false, false),
            (Target::WindowsGnu, Os::Windows, false, false),
        ] {
            assert_eq!(
                t.refusal(host, cuda).is_none(),
                ok,
                "{t} on {host}, cuda {cuda}"
            );
        }
        let e = Target::WindowsGnu.refusal(Os::Linux, true).unwrap();
        assert!(
            e.contains("nvcc accepts no mingw-w64 GCC")
                && e.contains("--arch cpu")
                && e.contains("--target x86_64-pc-windows-msvc"),
            "{e}"
        );
        let e = Target::WindowsMsvc.refusal(Os::Linux, false).unwrap();
        assert!(e.contains("--target x86_64-pc-windows-gnu"), "{e}");
    }
}
