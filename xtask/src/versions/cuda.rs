//! CUDA versions: `13.0`, `13.0.88`, and what `nvcc --version` / `version.json` say.

use std::fmt;
use std::str::FromStr;

use regex::Regex;
use serde::Deserialize;

use crate::versions::dotted::Version;

/// `major.minor[.patch]`; a release is `major.minor` (13.0), a build adds the patch (13.0.88).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CudaVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: Option<u32>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid CUDA version `{value}`: expected MAJOR.MINOR or MAJOR.MINOR.PATCH, e.g. 13.0 or 12.8.93")]
pub struct CudaVersionError {
    pub value: String,
}

impl CudaVersion {
    pub const fn new(major: u32, minor: u32) -> Self {
        Self {
            major,
            minor,
            patch: None,
        }
    }

    /// The release this version belongs to (`13.0.88` -> `13.0`).
    pub fn release(&self) -> CudaVersion {
        CudaVersion::new(self.major, self.minor)
    }
}

impl fmt::Display for CudaVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)?;
        match self.patch {
            Some(p) => write!(f, ".{p}"),
            None => Ok(()),
        }
    }
}

impl FromStr for CudaVersion {
    type Err = CudaVersionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || CudaVersionError {
            value: s.to_string(),
        };
        let parts: Vec<&str> = s.trim().split('.').collect();
        if !(2..=3).contains(&parts.len()) {
            return Err(err());
        }
        let num = |p: &str| -> Result<u32, CudaVersionError> {
            if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
                return Err(err());
            }
            p.parse().map_err(|_| err())
        };
        Ok(CudaVersion {
            major: num(parts[0])?,
            minor: num(parts[1])?,
            patch: parts.get(2).map(|p| num(p)).transpose()?,
        })
    }
}

impl TryFrom<String> for CudaVersion {
    type Error = CudaVersionError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

serde_as_string!(CudaVersion);

impl From<CudaVersion> for Version {
    /// `13.0` -> `13.0`, `13.0.88` -> `13.0.88`: the same dotted numbers.
    fn from(v: CudaVersion) -> Self {
        let mut parts = vec![u64::from(v.major), u64::from(v.minor)];
        parts.extend(v.patch.map(u64::from));
        Version::from_parts(parts)
    }
}

/// What an nvcc says about itself: the CUDA release (13.0) and nvcc's own build (13.0.88).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NvccVersion {
    pub release: CudaVersion,
    pub nvcc: CudaVersion,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NvccVersionError {
    #[error("no `Cuda compilation tools, release X.Y, VX.Y.Z` line in `nvcc --version` output (it starts with `{head}`): is this nvcc?")]
    NoReleaseLine { head: String },
    #[error("CUDA version.json is not valid: {detail}; expected {{\"cuda\": {{\"version\": \"12.8.1\"}}, \"cuda_nvcc\": {{\"version\": \"12.8.93\"}}}}")]
    BadVersionJson { detail: String },
    #[error("CUDA version.json has no `cuda_nvcc` entry: this toolkit has no nvcc; install the CUDA compiler component")]
    NoNvccInJson,
    #[error("{0} (in CUDA version.json)")]
    Version(#[from] CudaVersionError),
}

#[derive(Deserialize)]
struct VersionJson {
    cuda: JsonComponent,
    cuda_nvcc: Option<JsonComponent>,
}

#[derive(Deserialize)]
struct JsonComponent {
    version: String,
}

impl NvccVersion {
    /// Parses `nvcc --version` output (`Cuda compilation tools, release 13.0, V13.0.88`).
    pub fn from_nvcc_output(output: &str) -> Result<Self, NvccVersionError> {
        let re = Regex::new(r"release (\d+)\.(\d+), V(\d+)\.(\d+)\.(\d+)").expect("static regex");
        let Some(c) = re.captures(output) else {
            let head: String = output
                .lines()
                .next()
                .unwrap_or("")
                .chars()
                .take(80)
                .collect();
            return Err(NvccVersionError::NoReleaseLine { head });
        };
        let n = |i: usize| c[i].parse::<u32>().unwrap_or(u32::MAX);
        Ok(NvccVersion {
            release: CudaVersion::new(n(1), n(2)),
            nvcc: CudaVersion {
                major: n(3),
                minor: n(4),
                patch: Some(n(5)),
            },
        })
    }

    /// Parses the toolkit's `version.json`: release from `cuda.version`, build from `cuda_nvcc.version`.
    pub fn from_version_json(json: &str) -> Result<Self, NvccVersionError> {
        let v: VersionJson =
            serde_json::from_str(json).map_err(|e| NvccVersionError::BadVersionJson {
                detail: e.to_string(),
            })?;
        let nvcc = v.cuda_nvcc.ok_or(NvccVersionError::NoNvccInJson)?;
        Ok(NvccVersion {
            release: v.cuda.version.parse::<CudaVersion>()?.release(),
            nvcc: nvcc.version.parse()?,
        })
    }
}

impl fmt::Display for NvccVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CUDA {} (nvcc {})", self.release, self.nvcc)
    }
}

#[cfg(test)]
#[path = "cuda_tests.rs"]
mod tests;
