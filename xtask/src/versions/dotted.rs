//! Dotted release versions (`3.28.3`, `0.3.16`, `13.0.88`) for tools and packages.
//!
//! This is deliberately not full PEP 440: recipes pin plain release numbers, and
//! tool versions are compared numerically. A local label (`+cpu`) is a separate
//! type in [`crate::tags`].

use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Version(Vec<u64>);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("`{0}` is not a version: expected dot-separated numbers such as 0.3.16")]
pub struct BadVersion(pub String);

impl Version {
    /// Its numbers, in order (`13.0.88` -> [13, 0, 88]).
    pub fn parts(&self) -> &[u64] {
        &self.0
    }

    /// The version made of these numbers, in order.
    pub fn from_parts(parts: impl IntoIterator<Item = u64>) -> Version {
        Version(parts.into_iter().collect())
    }

    /// Finds the first version-looking token (`\d+(\.\d+)+`) in a tool's banner.
    pub fn find_in(text: &str) -> Option<Version> {
        let re = regex::Regex::new(r"\b(\d+(?:\.\d+)+)").expect("static regex");
        re.captures(text).and_then(|c| c[1].parse().ok())
    }

    /// Compares only the components both versions have (`3.21` >= `3.21.0`).
    pub fn at_least(&self, min: &Version) -> bool {
        let n = min.0.len().max(self.0.len());
        let pad = |v: &Version| {
            (0..n)
                .map(|i| v.0.get(i).copied().unwrap_or(0))
                .collect::<Vec<_>>()
        };
        pad(self) >= pad(min)
    }
}

impl FromStr for Version {
    type Err = BadVersion;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        if t.is_empty() {
            return Err(BadVersion(s.to_string()));
        }
        t.split('.')
            .map(|p| p.parse::<u64>().map_err(|_| BadVersion(s.to_string())))
            .collect::<Result<Vec<_>, _>>()
            .map(Version)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|p| p.to_string()).collect();
        f.write_str(&parts.join("."))
    }
}

serde_as_string!(Version);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_orders_numerically() {
        let a: Version = "0.3.16".parse().unwrap();
        let b: Version = "0.3.9".parse().unwrap();
        assert!(a > b);
        assert_eq!(a.to_string(), "0.3.16");
        assert!("1.x".parse::<Version>().is_err());
        assert!("".parse::<Version>().is_err());
    }

    #[test]
    fn at_least_pads_missing_parts() {
        let v: Version = "3.21".parse().unwrap();
        assert!(v.at_least(&"3.21.0".parse().unwrap()));
        assert!(!v.at_least(&"3.21.1".parse().unwrap()));
    }

    #[test]
    fn finds_version_in_banner() {
        assert_eq!(
            Version::find_in("cmake version 4.4.4\n\nCMake suite")
                .unwrap()
                .to_string(),
            "4.4.4"
        );
        assert_eq!(
            Version::find_in("1.13.2.git.kitware.jobserver-pipe-1")
                .unwrap()
                .to_string(),
            "1.13.2"
        );
        assert!(Version::find_in("no digits here").is_none());
    }
}
