//! NVIDIA driver versions: `580`, `570.26`, `580.65.06`.

use std::fmt;
use std::str::FromStr;

/// An NVIDIA driver version such as `570.26` or `575.51.03`: the support table's
/// minimum drivers, the plan's `cuda.min_driver`, the support table's floors.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct DriverVersion(Vec<u32>);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid driver version `{value}`: expected numbers separated by dots, e.g. 580.65.06")]
pub struct DriverVersionError {
    pub value: String,
}

impl DriverVersion {
    /// The driver branch: `580` for 580.65.06 (NVIDIA's packages are named by it).
    pub fn branch(&self) -> u32 {
        self.0[0]
    }

    /// Whether it names a branch only (`580`, a minor-version compatibility floor).
    pub fn is_branch(&self) -> bool {
        self.0.len() == 1
    }
}

impl FromStr for DriverVersion {
    type Err = DriverVersionError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || DriverVersionError {
            value: s.to_string(),
        };
        let parts = s
            .split('.')
            .map(|p| p.parse::<u32>().map_err(|_| err()))
            .collect::<Result<Vec<_>, _>>()?;
        if parts.is_empty() || s.contains('+') {
            return Err(err());
        }
        Ok(DriverVersion(parts))
    }
}

impl fmt::Display for DriverVersion {
    /// Minor parts keep two digits, as NVIDIA writes them (`575.51.03`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.0.iter().enumerate() {
            if i == 0 {
                write!(f, "{p}")?;
            } else {
                write!(f, ".{p:02}")?;
            }
        }
        Ok(())
    }
}

serde_as_string!(DriverVersion);
