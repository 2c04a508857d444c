//! Host compiler versions: `13.3.0` (gcc), `19.44.35211` (MSVC's cl).

use std::fmt;
use std::str::FromStr;

use regex::Regex;

use crate::versions::dotted::Version;

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

impl From<CompilerVersion> for Version {
    /// The same dotted numbers: `19.44.35211` -> `19.44.35211`.
    fn from(v: CompilerVersion) -> Self {
        let mut parts = vec![u64::from(v.major), u64::from(v.minor)];
        parts.extend(v.patch.map(u64::from));
        Version::from_parts(parts)
    }
}

impl TryFrom<&Version> for CompilerVersion {
    type Error = CompilerVersionError;
    /// `MAJOR.MINOR[.PATCH]` only, each fitting a `u32`; otherwise the error
    /// parsing the version's text gives.
    fn try_from(v: &Version) -> Result<Self, Self::Error> {
        let err = || CompilerVersionError {
            value: v.to_string(),
        };
        let n = |p: &u64| u32::try_from(*p).map_err(|_| err());
        match v.parts() {
            [major, minor] => Ok(CompilerVersion {
                major: n(major)?,
                minor: n(minor)?,
                patch: None,
            }),
            [major, minor, patch] => Ok(CompilerVersion {
                major: n(major)?,
                minor: n(minor)?,
                patch: Some(n(patch)?),
            }),
            _ => Err(err()),
        }
    }
}
