//! Host C++ compilers, parsed from `gcc --version`, `clang --version`, and the `cl.exe` banner.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use regex::Regex;

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

/// `major.minor[.patch]` of a compiler (MSVC: `19.44.35211`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CompilerVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: Option<u32>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "invalid compiler version `{value}`: expected MAJOR.MINOR[.PATCH], e.g. 13.3.0 or 19.44.35211"
)]
pub struct CompilerVersionError {
    pub value: String,
}

impl FromStr for CompilerVersion {
    type Err = CompilerVersionError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || CompilerVersionError {
            value: s.to_string(),
        };
        let re = Regex::new(r"^(\d+)\.(\d+)(?:\.(\d+))?$").expect("static regex");
        let c = re.captures(s.trim()).ok_or_else(err)?;
        let n = |m: regex::Match<'_>| m.as_str().parse::<u32>().map_err(|_| err());
        Ok(CompilerVersion {
            major: n(c.get(1).ok_or_else(err)?)?,
            minor: n(c.get(2).ok_or_else(err)?)?,
            patch: c.get(3).map(n).transpose()?,
        })
    }
}

impl fmt::Display for CompilerVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)?;
        match self.patch {
            Some(p) => write!(f, ".{p}"),
            None => Ok(()),
        }
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
