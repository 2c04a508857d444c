//! The nvcc support table (`toolchains/nvcc-support.toml`), compiled in.

use std::fmt;
use std::sync::OnceLock;

use serde::Deserialize;

use super::arch::{ArchVariant, CudaArch};
use crate::versions::cuda::CudaVersion;
pub use crate::versions::driver::{DriverVersion, DriverVersionError};

const BUILTIN: &str = include_str!("../../../toolchains/nvcc-support.toml");

/// Inclusive `_MSC_VER` range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MscVerRange {
    pub min: u32,
    pub max: u32,
}

impl MscVerRange {
    pub fn contains(&self, msc_ver: u32) -> bool {
        (self.min..=self.max).contains(&msc_ver)
    }
}

impl fmt::Display for MscVerRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "_MSC_VER {}..{}", self.min, self.max)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rename {
    pub from: CudaArch,
    pub to: CudaArch,
}

/// What one CUDA release's nvcc accepts. Arch lists hold plain archs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseSupport {
    pub cuda: CudaVersion,
    pub oldest: CudaArch,
    pub targets: Vec<CudaArch>,
    pub arch_specific: Vec<CudaArch>,
    pub family: Vec<CudaArch>,
    pub added: Vec<CudaArch>,
    pub removed: Vec<CudaArch>,
    pub renamed: Vec<Rename>,
    pub max_gcc: u32,
    pub max_clang: u32,
    pub msvc: MscVerRange,
    /// The driver of this release's GA toolkit (NVIDIA's release notes), where recorded:
    /// what JITs its PTX. Not an artifact's floor ([`SupportTable::driver_floor`] is).
    pub min_linux_driver: Option<DriverVersion>,
    pub min_windows_driver: Option<DriverVersion>,
}

/// The minor-version compatibility floor of one CUDA major: the oldest driver that
/// runs what any release of it builds (its SASS; JIT of newer PTX aside).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MajorFloor {
    pub cuda: u32,
    pub linux: DriverVersion,
    pub windows: DriverVersion,
}

impl ReleaseSupport {
    /// Whether this nvcc accepts the arch with its variant.
    pub fn emits(&self, arch: &CudaArch) -> bool {
        let plain = arch.to_plain();
        self.targets.contains(&plain)
            && match arch.variant() {
                ArchVariant::Plain => true,
                ArchVariant::ArchSpecific => self.arch_specific.contains(&plain),
                ArchVariant::Family => self.family.contains(&plain),
            }
    }
}

/// All releases, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SupportTable {
    pub releases: Vec<ReleaseSupport>,
    pub majors: Vec<MajorFloor>,
}

/// Where a CUDA version falls in the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseMatch<'a> {
    Exact(&'a ReleaseSupport),
    /// Not in the table; the newest row at or below it stands in (untested).
    Untested(&'a ReleaseSupport),
    OlderThanTable,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SupportTableError {
    #[error("nvcc support table is not valid TOML for its schema: {0}")]
    Toml(String),
    #[error("nvcc support table, release {cuda}: {problem}; fix toolchains/nvcc-support.toml")]
    Release { cuda: String, problem: String },
    #[error("nvcc support table: releases must be listed oldest first without repeats ({prev} then {next})")]
    Order {
        prev: CudaVersion,
        next: CudaVersion,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTable {
    release: Vec<RawRelease>,
    major: Vec<RawMajor>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMajor {
    cuda: u32,
    linux: String,
    windows: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRelease {
    cuda: String,
    oldest: u32,
    targets: Vec<u32>,
    arch_specific: Vec<u32>,
    family: Vec<u32>,
    added: Vec<u32>,
    removed: Vec<u32>,
    renamed: Vec<RawRename>,
    max_gcc: u32,
    max_clang: u32,
    msvc: [u32; 2],
    min_linux_driver: Option<String>,
    min_windows_driver: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRename {
    from: u32,
    to: u32,
}

impl RawRelease {
    fn into_typed(self) -> Result<ReleaseSupport, SupportTableError> {
        let problem = |p: String| SupportTableError::Release {
            cuda: self.cuda.clone(),
            problem: p,
        };
        let arch = |n: u32| {
            CudaArch::from_number(n, ArchVariant::Plain)
                .ok_or_else(|| problem(format!("bad target {n}")))
        };
        let archs = |v: &[u32]| v.iter().map(|&n| arch(n)).collect::<Result<Vec<_>, _>>();
        let cuda = self
            .cuda
            .parse::<CudaVersion>()
            .map_err(|e| problem(e.to_string()))?;
        if cuda.patch.is_some() {
            return Err(problem("give the release as MAJOR.MINOR".into()));
        }
        let driver = |s: &str| {
            s.parse::<DriverVersion>()
                .map_err(|e| problem(e.to_string()))
        };
        if self.msvc[0] > self.msvc[1] {
            return Err(problem(format!(
                "msvc range [{}, {}] is reversed",
                self.msvc[0], self.msvc[1]
            )));
        }
        Ok(ReleaseSupport {
            cuda,
            oldest: arch(self.oldest)?,
            targets: archs(&self.targets)?,
            arch_specific: archs(&self.arch_specific)?,
            family: archs(&self.family)?,
            added: archs(&self.added)?,
            removed: archs(&self.removed)?,
            renamed: self
                .renamed
                .iter()
                .map(|r| {
                    Ok(Rename {
                        from: arch(r.from)?,
                        to: arch(r.to)?,
                    })
                })
                .collect::<Result<_, SupportTableError>>()?,
            max_gcc: self.max_gcc,
            max_clang: self.max_clang,
            msvc: MscVerRange {
                min: self.msvc[0],
                max: self.msvc[1],
            },
            min_linux_driver: self.min_linux_driver.as_deref().map(driver).transpose()?,
            min_windows_driver: self.min_windows_driver.as_deref().map(driver).transpose()?,
        })
    }
}

impl SupportTable {
    pub fn parse(text: &str) -> Result<Self, SupportTableError> {
        let raw: RawTable =
            toml::from_str(text).map_err(|e| SupportTableError::Toml(e.to_string()))?;
        let releases = raw
            .release
            .into_iter()
            .map(RawRelease::into_typed)
            .collect::<Result<Vec<_>, _>>()?;
        for w in releases.windows(2) {
            if w[0].cuda >= w[1].cuda {
                return Err(SupportTableError::Order {
                    prev: w[0].cuda,
                    next: w[1].cuda,
                });
            }
        }
        if releases.is_empty() {
            return Err(SupportTableError::Toml("no [[release]] entries".into()));
        }
        let majors = raw
            .major
            .into_iter()
            .map(|m| {
                let driver = |s: &str| {
                    s.parse::<DriverVersion>()
                        .map_err(|e| SupportTableError::Toml(format!("[[major]] {}: {e}", m.cuda)))
                };
                Ok(MajorFloor {
                    cuda: m.cuda,
                    linux: driver(&m.linux)?,
                    windows: driver(&m.windows)?,
                })
            })
            .collect::<Result<Vec<_>, SupportTableError>>()?;
        if let Some(r) = releases
            .iter()
            .find(|r| !majors.iter().any(|m| m.cuda == r.cuda.major))
        {
            return Err(SupportTableError::Toml(format!(
                "CUDA {} has no [[major]] driver floor",
                r.cuda
            )));
        }
        Ok(SupportTable { releases, majors })
    }

    /// The table in `toolchains/nvcc-support.toml`, checked by the tests.
    pub fn builtin() -> &'static SupportTable {
        static TABLE: OnceLock<SupportTable> = OnceLock::new();
        TABLE.get_or_init(|| {
            SupportTable::parse(BUILTIN).expect("toolchains/nvcc-support.toml is valid (tested)")
        })
    }

    pub fn oldest(&self) -> &ReleaseSupport {
        &self.releases[0]
    }
    pub fn newest(&self) -> &ReleaseSupport {
        self.releases.last().expect("table is not empty")
    }

    pub fn lookup(&self, cuda: &CudaVersion) -> ReleaseMatch<'_> {
        let release = cuda.release();
        match self.releases.iter().rev().find(|r| r.cuda <= release) {
            Some(r) if r.cuda == release => ReleaseMatch::Exact(r),
            Some(r) => ReleaseMatch::Untested(r),
            None => ReleaseMatch::OlderThanTable,
        }
    }

    /// The oldest driver of `os` that runs what any CUDA `major`.x release built (the
    /// minor-version compatibility floor: 12 -> 525.60.13 on Linux, 527.41 on Windows;
    /// 13 -> 580 on both), or `None` for a major the table does not know. WSL2 runs the
    /// Windows driver: its floor is Windows'.
    pub fn driver_floor(&self, major: u32, os: crate::platform::Os) -> Option<&DriverVersion> {
        let m = self.majors.iter().find(|m| m.cuda == major)?;
        Some(match os {
            crate::platform::Os::Linux => &m.linux,
            crate::platform::Os::Windows => &m.windows,
        })
    }

    /// "12.8..13.5", for messages.
    pub fn range(&self) -> String {
        format!("{}..{}", self.oldest().cuda, self.newest().cuda)
    }
}

#[cfg(test)]
#[path = "support_tests.rs"]
mod tests;
