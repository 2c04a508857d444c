//! sha256 digests: the `Sha256Hex` type every recipe, record and manifest uses, and the
//! two ways to compute one.

use std::fmt;
use std::io;
use std::path::Path;
use std::str::FromStr;

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

/// A 64-hex-digit sha256, lower case.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sha256Hex(String);

impl Sha256Hex {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for Sha256Hex {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.len() == 64 && s.chars().all(|c| c.is_ascii_hexdigit()) {
            Ok(Sha256Hex(s.to_ascii_lowercase()))
        } else {
            Err(format!("`{s}` is not a sha256: expected 64 hex digits"))
        }
    }
}

impl fmt::Display for Sha256Hex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

serde_as_string!(Sha256Hex);

/// sha256 of a file, streamed.
pub fn sha256_file(path: &Path) -> Result<Sha256Hex> {
    let mut f =
        fs_err::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut h = digest_io::IoWrapper(Sha256::new());
    io::copy(&mut f, &mut h).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(hex::encode(h.0.finalize()).parse().expect("hex digest"))
}

pub fn sha256_bytes(data: &[u8]) -> Sha256Hex {
    hex::encode(Sha256::digest(data))
        .parse()
        .expect("hex digest")
}
