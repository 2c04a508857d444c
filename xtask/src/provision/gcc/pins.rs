//! `toolchains/linux-gcc.toml`: the pinned host toolchain of Linux builds, as typed values.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::Deserialize;

use crate::digest::Sha256Hex;
use crate::versions::Version;

/// Where the pins live, under the tool's root (recorded in plans as the compiler's origin).
pub const FILE: &str = "toolchains/linux-gcc.toml";

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GccPins {
    /// Base URLs each package's `path` is tried under, in order.
    pub mirrors: Vec<String>,
    pub gcc: GccVersion,
    pub zig: ZigPin,
    #[serde(rename = "deb")]
    pub debs: Vec<Deb>,
    pub sysroot: SysrootSources,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GccVersion {
    pub version: Version,
    /// The sysroot's glibc: the oldest the libraries run on.
    pub glibc: Version,
}

/// The `ziglang` wheel whose glibc headers and stubs make the sysroot.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZigPin {
    pub version: Version,
    pub url: String,
    pub sha256: Sha256Hex,
    /// zig itself, inside the wheel.
    pub bin: String,
}

/// One Debian package: its file under each mirror, and its sha256.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Deb {
    pub package: String,
    pub version: String,
    pub path: String,
    pub sha256: Sha256Hex,
    /// What the toolchain needs it for.
    #[serde(rename = "for")]
    pub purpose: String,
}

/// The sysroot's own pieces, as source text.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SysrootSources {
    pub crti: String,
    pub crtn: String,
    pub compat: String,
}

/// The pins with the sha256 of the file they were read from (a plan records it).
#[derive(Debug, Clone)]
pub struct Pinned {
    pub pins: GccPins,
    pub sha256: Sha256Hex,
}

impl Pinned {
    pub fn load(root: &Path) -> Result<Pinned> {
        let path = root.join(FILE);
        let bytes =
            fs_err::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
        let text = std::str::from_utf8(&bytes)
            .with_context(|| format!("{} is not UTF-8", path.display()))?;
        let pins: GccPins =
            toml::from_str(text).with_context(|| format!("malformed {}", path.display()))?;
        if pins.mirrors.is_empty() || pins.debs.is_empty() {
            bail!(
                "{}: no `mirrors` or no `[[deb]]`: nothing to fetch the toolchain from",
                path.display()
            );
        }
        if pins
            .mirrors
            .iter()
            .any(|m| !m.starts_with("https://") || !m.ends_with('/'))
        {
            bail!(
                "{}: every mirror is an https:// URL ending in `/`",
                path.display()
            );
        }
        Ok(Pinned {
            pins,
            sha256: crate::digest::sha256_bytes(&bytes),
        })
    }

    /// The GCC major version (`12`): its programs are named `x86_64-linux-gnu-gcc-12`.
    pub fn major(&self) -> String {
        self.pins
            .gcc
            .version
            .to_string()
            .split('.')
            .next()
            .unwrap_or_default()
            .to_string()
    }

    /// The dir of the unpacked toolchain: `<cache>/tools/gcc-<version>-glibc-<glibc>-<pins>-r<N>`,
    /// named by the pins file's hash and [`REVISION`], so neither another pin set nor a tree
    /// made by an older tool is ever reused.
    pub fn tree(&self, cache: &Path) -> PathBuf {
        cache.join("tools").join(format!(
            "gcc-{}-glibc-{}-{}-r{REVISION}",
            self.pins.gcc.version,
            self.pins.gcc.glibc,
            &self.sha256.as_str()[..12]
        ))
    }

    /// The compiler as a plan records it before anything is unpacked.
    pub fn compiler(&self, cache: &Path) -> crate::platform::host::Compiler {
        let tree = self.tree(cache);
        let major = self.major();
        crate::platform::host::Compiler {
            kind: crate::platform::host::CompilerKind::Gcc,
            cc: program(&tree, &format!("gcc-{major}")),
            cxx: program(&tree, &format!("g++-{major}")),
            version: self.pins.gcc.version.clone(),
            origin: crate::platform::host::Origin::PinnedSet {
                file: FILE.into(),
                sha256: self.sha256.clone(),
            },
            msvc: None,
            mingw: None,
            pinned: Some(crate::platform::gcc::PinnedGcc {
                ar: program(&tree, "ar"),
                ranlib: program(&tree, "ranlib"),
                sysroot: tree.join("sysroot"),
                glibc: self.pins.gcc.glibc.clone(),
            }),
        }
    }

    /// Each package's URLs, in the order they are tried.
    pub fn urls(&self, deb: &Deb) -> Vec<String> {
        self.pins
            .mirrors
            .iter()
            .map(|m| format!("{m}{}", deb.path))
            .collect()
    }
}

/// How the tool makes the tree from the pins: raised whenever that changes (the sysroot's
/// header fixes, the relocation), so trees made before are made again.
pub const REVISION: u32 = 2;

/// The target triple of the toolchain's programs and multiarch dirs.
pub const TRIPLE: &str = "x86_64-linux-gnu";

/// A program of the toolchain unpacked at `root`: `<root>/usr/bin/x86_64-linux-gnu-<name>`.
pub fn program(root: &Path, name: &str) -> PathBuf {
    root.join("usr/bin").join(format!("{TRIPLE}-{name}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pins_file_parses_and_names_a_2_28_sysroot() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let p = Pinned::load(&root).unwrap();
        assert_eq!(p.pins.gcc.glibc.to_string(), "2.28");
        assert_eq!(p.major(), "12");
        let c = p.compiler(Path::new("/c"));
        assert!(
            c.cxx.ends_with("usr/bin/x86_64-linux-gnu-g++-12"),
            "{}",
            c.cxx.display()
        );
        assert!(c.cc.starts_with(p.tree(Path::new("/c"))));
        // Every package is a .deb under Debian's pool, named for its package and version.
        for d in &p.pins.debs {
            assert!(
                d.path.starts_with("pool/main/") && d.path.ends_with("_amd64.deb"),
                "{}",
                d.path
            );
            let file = d.path.rsplit('/').next().unwrap();
            let version = d
                .version
                .split_once(':')
                .map_or(d.version.as_str(), |(_, v)| v);
            assert_eq!(
                file,
                format!("{}_{version}_amd64.deb", d.package),
                "{}",
                d.path
            );
            assert_eq!(p.urls(d).len(), p.pins.mirrors.len());
        }
    }
}
