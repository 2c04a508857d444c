//! Host C++ compilers, parsed from `gcc --version`, `clang --version`, and the `cl.exe` banner.

use std::fmt;
use std::path::PathBuf;

use regex::Regex;

use crate::versions::compiler::CompilerVersion;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HostCompilerKind {
    Gcc,
    Clang,
    /// Xcode's clang: CUDA has no macOS host support.
    AppleClang,
    Msvc,
}

impl fmt::Display for HostCompilerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HostCompilerKind::Gcc => "gcc",
            HostCompilerKind::Clang => "clang",
            HostCompilerKind::AppleClang => "Apple clang",
            HostCompilerKind::Msvc => "MSVC",
        })
    }
}

/// A host compiler nvcc would use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostCompiler {
    pub kind: HostCompilerKind,
    pub version: CompilerVersion,
    pub path: PathBuf,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("cannot tell which compiler {path} is from its version output (first line: `{first_line}`): expected gcc, clang or MSVC cl.exe; pass a host compiler nvcc supports")]
pub struct HostCompilerParseError {
    pub path: PathBuf,
    pub first_line: String,
}

impl HostCompiler {
    /// Parses `--version` output (gcc/clang) or the `cl.exe` banner (stderr of a bare `cl`).
    pub fn parse(output: &str, path: impl Into<PathBuf>) -> Result<Self, HostCompilerParseError> {
        let path = path.into();
        let (kind, version) = detect(output).ok_or_else(|| HostCompilerParseError {
            path: path.clone(),
            first_line: output
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .trim()
                .to_string(),
        })?;
        Ok(HostCompiler {
            kind,
            version,
            path,
        })
    }

    /// `_MSC_VER` for MSVC (cl 19.44 -> 1944).
    pub fn msc_ver(&self) -> Option<u32> {
        (self.kind == HostCompilerKind::Msvc).then(|| self.version.major * 100 + self.version.minor)
    }
}

impl fmt::Display for HostCompiler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.kind, self.version)?;
        if let Some(m) = self.msc_ver() {
            write!(f, " (_MSC_VER {m})")?;
        }
        write!(f, " at {}", self.path.display())
    }
}

fn version_of(c: &regex::Captures<'_>) -> Option<CompilerVersion> {
    let n = |i: usize| {
        c.get(i)
            .map(|m| m.as_str().parse::<u32>())
            .transpose()
            .ok()
            .flatten()
    };
    Some(CompilerVersion {
        major: n(1)?,
        minor: n(2)?,
        patch: n(3),
    })
}

fn detect(output: &str) -> Option<(HostCompilerKind, CompilerVersion)> {
    let first = output.lines().find(|l| !l.trim().is_empty())?.trim();
    // cl.exe: "Microsoft (R) C/C++ Optimizing Compiler Version 19.44.35211 for x64"; localized banners
    // change the words, not the version triple.
    if first.starts_with("Microsoft (R) C/C++") {
        let re = Regex::new(r"(\d+)\.(\d+)\.(\d+)(?:\.\d+)?").expect("static regex");
        return Some((HostCompilerKind::Msvc, version_of(&re.captures(first)?)?));
    }
    let clang = Regex::new(r"^(Apple )?(?:\S+ )?clang version (\d+)\.(\d+)(?:\.(\d+))?")
        .expect("static regex");
    if let Some(c) = clang.captures(first) {
        let kind = if c.get(1).is_some() {
            HostCompilerKind::AppleClang
        } else {
            HostCompilerKind::Clang
        };
        let re = Regex::new(r"clang version (\d+)\.(\d+)(?:\.(\d+))?").expect("static regex");
        return Some((kind, version_of(&re.captures(first)?)?));
    }
    // gcc: "<name> (<vendor text>) X.Y.Z [date] [(vendor)]"; the FSF copyright line confirms it is GCC.
    if output.contains("Free Software Foundation") {
        let re = Regex::new(r"^\S+ \(.*?\) (\d+)\.(\d+)(?:\.(\d+))?").expect("static regex");
        return Some((HostCompilerKind::Gcc, version_of(&re.captures(first)?)?));
    }
    None
}

#[cfg(test)]
#[path = "compiler_tests.rs"]
mod tests;
