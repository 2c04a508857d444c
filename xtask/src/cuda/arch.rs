//! Compute capabilities (`120`, `120a`, `120f`) and CMake `CUDA_ARCHITECTURES` targets.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// Suffix of a compute capability: none, `a` (arch-specific), `f` (family).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ArchVariant {
    Plain,
    /// `a`: runs only on exactly this compute capability; unlocks e.g. FP4/MXFP4 mma.
    ArchSpecific,
    /// `f`: runs on this and later minors of the same major.
    Family,
}

impl ArchVariant {
    pub fn suffix(self) -> &'static str {
        match self {
            ArchVariant::Plain => "",
            ArchVariant::ArchSpecific => "a",
            ArchVariant::Family => "f",
        }
    }
}

/// A compute capability with its variant, displayed as nvcc/CMake spell it (`120a`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CudaArch {
    major: u8,
    minor: u8,
    variant: ArchVariant,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid compute capability `{value}`: expected digits like 86, 90, 120 (or 12.0), optionally with an a/f suffix (120a, 120f) or an sm_ prefix")]
pub struct CudaArchError {
    pub value: String,
}

impl CudaArch {
    pub const fn new(major: u8, minor: u8, variant: ArchVariant) -> Self {
        Self {
            major,
            minor,
            variant,
        }
    }

    pub const fn plain(major: u8, minor: u8) -> Self {
        Self::new(major, minor, ArchVariant::Plain)
    }

    /// From nvcc's number: `120` -> 12.0, `86` -> 8.6.
    pub fn from_number(n: u32, variant: ArchVariant) -> Option<Self> {
        let (major, minor) = (n / 10, n % 10);
        (1..=99)
            .contains(&major)
            .then(|| Self::new(major as u8, minor as u8, variant))
    }

    pub fn major(&self) -> u8 {
        self.major
    }
    pub fn minor(&self) -> u8 {
        self.minor
    }
    pub fn variant(&self) -> ArchVariant {
        self.variant
    }
    /// nvcc's number without suffix: 12.0 -> 120.
    pub fn number(&self) -> u32 {
        u32::from(self.major) * 10 + u32::from(self.minor)
    }
    pub fn with_variant(&self, variant: ArchVariant) -> Self {
        Self { variant, ..*self }
    }
    pub fn to_plain(self) -> Self {
        self.with_variant(ArchVariant::Plain)
    }
    /// Blackwell and later (10.x data center, 11.0 Thor, 12.x RTX 50 / GB10).
    pub fn is_blackwell(&self) -> bool {
        self.major >= 10
    }
    /// `sm_120a`, the name nvcc and cuobjdump use.
    pub fn sm_name(&self) -> String {
        format!("sm_{self}")
    }
}

impl fmt::Display for CudaArch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}{}", self.major, self.minor, self.variant.suffix())
    }
}

impl FromStr for CudaArch {
    type Err = CudaArchError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || CudaArchError {
            value: s.to_string(),
        };
        let t = s.trim().to_ascii_lowercase();
        let t = t
            .strip_prefix("sm_")
            .or_else(|| t.strip_prefix("compute_"))
            .unwrap_or(&t);
        let (body, variant) = match t.as_bytes().last() {
            Some(b'a') => (&t[..t.len() - 1], ArchVariant::ArchSpecific),
            Some(b'f') => (&t[..t.len() - 1], ArchVariant::Family),
            _ => (t, ArchVariant::Plain),
        };
        let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
        let number = match body.split_once('.') {
            Some((ma, mi)) if digits(ma) && digits(mi) && mi.len() == 1 && ma.len() <= 2 => {
                format!("{ma}{mi}")
            }
            None if digits(body) && (2..=3).contains(&body.len()) => body.to_string(),
            _ => return Err(err()),
        };
        let n: u32 = number.parse().map_err(|_| err())?;
        CudaArch::from_number(n, variant).ok_or_else(err)
    }
}

/// What CMake embeds for a target: SASS (`-real`), PTX (`-virtual`), or both (no suffix).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TargetKind {
    Real,
    Virtual,
    Both,
}

impl TargetKind {
    pub fn has_sass(self) -> bool {
        matches!(self, TargetKind::Real | TargetKind::Both)
    }
    pub fn has_ptx(self) -> bool {
        matches!(self, TargetKind::Virtual | TargetKind::Both)
    }
    fn merge(self, other: TargetKind) -> TargetKind {
        if self == other {
            self
        } else {
            TargetKind::Both
        }
    }
}

/// One `CMAKE_CUDA_ARCHITECTURES` entry: `120a-real`, `90-real`, `120-virtual`, `90`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ArchTarget {
    pub arch: CudaArch,
    pub kind: TargetKind,
}

impl ArchTarget {
    pub fn real(arch: CudaArch) -> Self {
        Self {
            arch,
            kind: TargetKind::Real,
        }
    }
    pub fn virtual_(arch: CudaArch) -> Self {
        Self {
            arch,
            kind: TargetKind::Virtual,
        }
    }
}

impl fmt::Display for ArchTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let suffix = match self.kind {
            TargetKind::Real => "-real",
            TargetKind::Virtual => "-virtual",
            TargetKind::Both => "",
        };
        write!(f, "{}{suffix}", self.arch)
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ArchListError {
    #[error(transparent)]
    Arch(#[from] CudaArchError),
    #[error("CUDA architectures list is empty: give at least one target, e.g. 120a-real")]
    Empty,
    #[error("CUDA architectures value `{value}` builds for whatever CMake guesses (`native` = only the build machine's GPU): list explicit targets instead, e.g. 120a-real;90-real")]
    Special { value: String },
}

impl FromStr for ArchTarget {
    type Err = ArchListError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        if ["native", "all", "all-major"].contains(&t.to_ascii_lowercase().as_str()) {
            return Err(ArchListError::Special {
                value: t.to_string(),
            });
        }
        let (arch, kind) = if let Some(a) = t.strip_suffix("-real") {
            (a, TargetKind::Real)
        } else if let Some(a) = t.strip_suffix("-virtual") {
            (a, TargetKind::Virtual)
        } else {
            (t, TargetKind::Both)
        };
        Ok(ArchTarget {
            arch: arch.parse()?,
            kind,
        })
    }
}

/// Sorted, de-duplicated targets; `X-real` + `X-virtual` merge into `X`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ArchList {
    targets: Vec<ArchTarget>,
}

impl ArchList {
    pub fn new(targets: impl IntoIterator<Item = ArchTarget>) -> Self {
        let mut merged: BTreeMap<CudaArch, TargetKind> = BTreeMap::new();
        for t in targets {
            merged
                .entry(t.arch)
                .and_modify(|k| *k = k.merge(t.kind))
                .or_insert(t.kind);
        }
        Self {
            targets: merged
                .into_iter()
                .map(|(arch, kind)| ArchTarget { arch, kind })
                .collect(),
        }
    }
    pub fn targets(&self) -> &[ArchTarget] {
        &self.targets
    }
    pub fn is_empty(&self) -> bool {
        self.targets.is_empty()
    }
    /// Archs that get SASS (cubins).
    pub fn sass(&self) -> impl Iterator<Item = CudaArch> + '_ {
        self.targets
            .iter()
            .filter(|t| t.kind.has_sass())
            .map(|t| t.arch)
    }
    /// Archs that get PTX.
    pub fn ptx(&self) -> impl Iterator<Item = CudaArch> + '_ {
        self.targets
            .iter()
            .filter(|t| t.kind.has_ptx())
            .map(|t| t.arch)
    }
}

impl fmt::Display for ArchList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, t) in self.targets.iter().enumerate() {
            if i > 0 {
                f.write_str(";")?;
            }
            write!(f, "{t}")?;
        }
        Ok(())
    }
}

impl FromStr for ArchList {
    type Err = ArchListError;

    /// CMake syntax (`;`-separated); `,` is accepted too.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let targets = s
            .split([';', ','])
            .filter(|p| !p.trim().is_empty())
            .map(str::parse)
            .collect::<Result<Vec<ArchTarget>, _>>()?;
        if targets.is_empty() {
            return Err(ArchListError::Empty);
        }
        Ok(ArchList::new(targets))
    }
}

serde_as_string!(ArchList);

#[cfg(test)]
#[path = "arch_tests.rs"]
mod tests;
