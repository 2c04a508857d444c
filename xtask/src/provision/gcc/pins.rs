//! `toolchains/linux-gcc.toml` (x86-64 code), `toolchains/linux-gcc-aarch64.toml`
//! (aarch64 code, cross-compiled on x86-64) and `toolchains/linux-gcc-aarch64-native.toml`
//! (aarch64 code made on aarch64): the pinned toolchains of Linux builds, as typed values.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::Deserialize;

use crate::digest::Sha256Hex;
use crate::platform::Arch;
use crate::versions::Version;

/// Where the pins live, under the tool's root (recorded in plans as the compiler's origin):
/// the toolchain for x86-64 code.
pub const FILE: &str = "toolchains/linux-gcc.toml";
/// The toolchain for aarch64 code, which runs on x86-64 (a cross compiler).
pub const FILE_AARCH64: &str = "toolchains/linux-gcc-aarch64.toml";
/// The toolchain for aarch64 code that runs on aarch64 (a DGX Spark, a Grace server).
pub const FILE_AARCH64_NATIVE: &str = "toolchains/linux-gcc-aarch64-native.toml";
/// Every pinned toolchain, the files a plan may name.
pub const FILES: [&str; 3] = [FILE, FILE_AARCH64, FILE_AARCH64_NATIVE];

/// The pins file of the toolchain that runs on `host` and makes `code`'s code; `None` for
/// x86-64 code on an aarch64 host (no such toolchain is pinned).
pub fn file_for(host: Arch, code: Arch) -> Option<&'static str> {
    match (host, code) {
        (Arch::X86_64, Arch::X86_64) => Some(FILE),
        (Arch::X86_64, Arch::Aarch64) => Some(FILE_AARCH64),
        (Arch::Aarch64, Arch::Aarch64) => Some(FILE_AARCH64_NATIVE),
        (Arch::Aarch64, Arch::X86_64) => None,
    }
}

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
    /// What the toolchain makes code for, and where it runs; without the table, x86-64
    /// code made on x86-64 ([`TargetPins::default`]).
    #[serde(default)]
    pub target: TargetPins,
}

/// `[target]`: the machine the toolchain's output runs on, and the one its programs run on.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetPins {
    /// The architecture of the code made (`x86_64`, `aarch64`).
    #[serde(deserialize_with = "arch_from_str")]
    pub arch: Arch,
    /// GCC's target triple: the programs' prefix (`<triple>-gcc-12`), binutils' tool dir
    /// (`usr/<triple>/bin`), the sysroot's multiarch dirs.
    pub triple: String,
    /// The triple the programs themselves run on: the multiarch dir of their own libraries
    /// (`usr/lib/<host>`). Another than `triple`: a cross toolchain (Debian's `gcc-cross`
    /// layout: `usr/lib/gcc-cross/<triple>/<major>`, libgcc_s in `usr/<triple>/lib`).
    pub host: String,
    /// zig's name of the target (`zig cc -target <zig>.<glibc>`).
    pub zig: String,
    /// zig's glibc header dirs for the target (`lib/libc/include/<dir>`), in the order zig
    /// searches them (first wins).
    pub zig_headers: Vec<String>,
    /// The dynamic loader's file name (`ld-linux-x86-64.so.2`).
    pub loader: String,
    /// The linker script's `OUTPUT_FORMAT` (`elf64-x86-64`).
    pub output_format: String,
}

impl Default for TargetPins {
    /// x86-64 code, made on x86-64: what `toolchains/linux-gcc.toml` means without `[target]`.
    fn default() -> TargetPins {
        TargetPins {
            arch: Arch::X86_64,
            triple: TRIPLE.into(),
            host: TRIPLE.into(),
            zig: TRIPLE.into(),
            zig_headers: [
                "x86-linux-gnu",
                "generic-glibc",
                "x86-linux-any",
                "any-linux-any",
            ]
            .map(String::from)
            .to_vec(),
            loader: "ld-linux-x86-64.so.2".into(),
            output_format: "elf64-x86-64".into(),
        }
    }
}

impl TargetPins {
    /// Whether the programs run on another machine than the code they make.
    pub fn cross(&self) -> bool {
        self.triple != self.host
    }
}

fn arch_from_str<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Arch, D::Error> {
    String::deserialize(d)?
        .parse()
        .map_err(serde::de::Error::custom)
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
    /// The file under the tool's root, one of [`FILES`].
    pub file: &'static str,
}

impl Pinned {
    /// The toolchain for x86-64 code ([`FILE`]).
    pub fn load(root: &Path) -> Result<Pinned> {
        Pinned::load_file(root, FILE)
    }

    /// The toolchain that runs on `host` and makes `arch`'s code ([`file_for`]); `None`
    /// where none is pinned.
    pub fn load_for(root: &Path, host: Arch, arch: Arch) -> Result<Option<Pinned>> {
        let Some(file) = file_for(host, arch) else {
            return Ok(None);
        };
        let p = Pinned::load_file(root, file)?;
        if p.pins.target.arch != arch || p.host_arch() != Some(host) {
            bail!(
                "{}: `[target]` says {} code made on {}, not {arch} code made on {host}",
                root.join(p.file).display(),
                p.pins.target.arch,
                p.pins.target.host
            );
        }
        Ok(Some(p))
    }

    /// The pins a plan names as its compiler's origin (`Origin::PinnedSet { file, .. }`):
    /// one of [`FILES`], nothing else.
    pub fn load_origin(root: &Path, file: &str) -> Result<Pinned> {
        match FILES.into_iter().find(|f| *f == file) {
            Some(f) => Pinned::load_file(root, f),
            None => {
                bail!(
                    "`{file}` is not a pinned toolchain of this tool ({})",
                    FILES.join(", ")
                )
            }
        }
    }

    /// The architecture the toolchain's programs run on (`[target] host`), if it is one
    /// this tool knows.
    pub fn host_arch(&self) -> Option<Arch> {
        self.pins
            .target
            .host
            .split('-')
            .next()
            .and_then(|a| a.parse().ok())
    }

    fn load_file(root: &Path, file: &'static str) -> Result<Pinned> {
        let path = root.join(file);
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
        let t = &pins.target;
        // Each is a file or dir name, or a word of a linker script.
        let bad = [&t.triple, &t.host, &t.zig, &t.loader, &t.output_format]
            .into_iter()
            .chain(&t.zig_headers)
            .any(|v| v.is_empty() || v.contains(['/', '\\', ' ', '(', ')']));
        if bad || t.zig_headers.is_empty() {
            bail!(
                "{}: every `[target]` value is a non-empty name without `/`, spaces or parentheses",
                path.display()
            );
        }
        Ok(Pinned {
            pins,
            sha256: crate::digest::sha256_bytes(&bytes),
            file,
        })
    }

    /// The architecture of the code the toolchain makes.
    pub fn arch(&self) -> Arch {
        self.pins.target.arch
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
    /// A cross toolchain's name also has its target's triple:
    /// `gcc-<version>-<triple>-glibc-...`.
    pub fn tree(&self, cache: &Path) -> PathBuf {
        let target = &self.pins.target;
        let cross = if target.cross() {
            format!("-{}", target.triple)
        } else {
            String::new()
        };
        cache.join("tools").join(format!(
            "gcc-{}{cross}-glibc-{}-{}-r{REVISION}",
            self.pins.gcc.version,
            self.pins.gcc.glibc,
            &self.sha256.as_str()[..12]
        ))
    }

    /// A program of the toolchain unpacked at `root`: `<root>/usr/bin/<triple>-<name>`.
    pub fn program(&self, root: &Path, name: &str) -> PathBuf {
        program(root, &self.pins.target.triple, name)
    }

    /// GCC's own programs and libraries (cc1, crtbegin.o, libstdc++.a), under `root`:
    /// `usr/lib/gcc/<triple>/<major>`, a cross compiler's `usr/lib/gcc-cross/<triple>/<major>`.
    pub fn libexec(&self, root: &Path) -> PathBuf {
        let t = &self.pins.target;
        let dir = if t.cross() { "gcc-cross" } else { "gcc" };
        root.join(format!("usr/lib/{dir}/{}/{}", t.triple, self.major()))
    }

    /// The target's libgcc_s.so.1 as its package unpacks it under `root`: `lib/<triple>/`,
    /// a cross package's `usr/<triple>/lib/`.
    pub fn libgcc_s(&self, root: &Path) -> PathBuf {
        let t = &self.pins.target;
        if t.cross() {
            root.join(format!("usr/{}/lib/libgcc_s.so.1", t.triple))
        } else {
            root.join(format!("lib/{}/libgcc_s.so.1", t.triple))
        }
    }

    /// The compiler as a plan records it before anything is unpacked.
    pub fn compiler(&self, cache: &Path) -> crate::platform::host::Compiler {
        let tree = self.tree(cache);
        let major = self.major();
        crate::platform::host::Compiler {
            kind: crate::platform::host::CompilerKind::Gcc,
            cc: self.program(&tree, &format!("gcc-{major}")),
            cxx: self.program(&tree, &format!("g++-{major}")),
            version: self.pins.gcc.version.clone(),
            origin: crate::platform::host::Origin::PinnedSet {
                file: self.file.into(),
                sha256: self.sha256.clone(),
            },
            msvc: None,
            mingw: None,
            pinned: Some(crate::platform::gcc::PinnedGcc {
                ar: self.program(&tree, "ar"),
                ranlib: self.program(&tree, "ranlib"),
                sysroot: tree.join("sysroot"),
                glibc: self.pins.gcc.glibc.clone(),
                cxx_runtime: self.libexec(&tree).join("libstdc++.a"),
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

/// The target triple of the toolchain without `[target]` (x86-64 code, made on x86-64).
pub const TRIPLE: &str = "x86_64-linux-gnu";

/// A program of a toolchain for `triple` unpacked at `root`: `<root>/usr/bin/<triple>-<name>`.
pub fn program(root: &Path, triple: &str, name: &str) -> PathBuf {
    root.join("usr/bin").join(format!("{triple}-{name}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
    }

    /// Every package is a .deb under Debian's pool, named for its package, version and one
    /// of `archs`.
    fn debs_are_named_for_their_packages(p: &Pinned, archs: &[&str]) {
        for d in &p.pins.debs {
            let file = d.path.rsplit('/').next().unwrap();
            let version = d
                .version
                .split_once(':')
                .map_or(d.version.as_str(), |(_, v)| v);
            assert!(d.path.starts_with("pool/main/"), "{}", d.path);
            assert!(
                archs
                    .iter()
                    .any(|a| file == format!("{}_{version}_{a}.deb", d.package)),
                "{}",
                d.path
            );
            assert_eq!(p.urls(d).len(), p.pins.mirrors.len());
        }
    }

    #[test]
    fn the_pins_file_parses_and_names_a_2_28_sysroot() {
        let p = Pinned::load(&root()).unwrap();
        assert_eq!(p.pins.gcc.glibc.to_string(), "2.28");
        assert_eq!(p.major(), "12");
        assert_eq!(p.file, FILE);
        // No `[target]`: x86-64 code, made on x86-64.
        assert_eq!(p.pins.target, TargetPins::default());
        assert!(!p.pins.target.cross());
        assert_eq!(p.arch(), Arch::X86_64);
        let c = p.compiler(Path::new("/c"));
        assert!(
            c.cxx.ends_with("usr/bin/x86_64-linux-gnu-g++-12"),
            "{}",
            c.cxx.display()
        );
        assert!(c.cc.starts_with(p.tree(Path::new("/c"))));
        assert_eq!(
            p.libexec(Path::new("/t")),
            Path::new("/t/usr/lib/gcc/x86_64-linux-gnu/12")
        );
        assert_eq!(
            p.libgcc_s(Path::new("/t")),
            Path::new("/t/lib/x86_64-linux-gnu/libgcc_s.so.1")
        );
        debs_are_named_for_their_packages(&p, &["amd64"]);
    }

    #[test]
    fn the_aarch64_pins_file_names_a_cross_compiler_and_a_2_28_sysroot() {
        let p = Pinned::load_for(&root(), Arch::X86_64, Arch::Aarch64)
            .unwrap()
            .unwrap();
        assert_eq!(p.file, FILE_AARCH64);
        assert_eq!(p.arch(), Arch::Aarch64);
        assert_eq!(p.pins.gcc.glibc.to_string(), "2.28");
        assert_eq!(p.major(), "12");
        let t = &p.pins.target;
        assert!(t.cross());
        assert_eq!(t.triple, "aarch64-linux-gnu");
        assert_eq!(t.host, TRIPLE);
        assert_eq!(t.loader, "ld-linux-aarch64.so.1");
        assert_eq!(t.output_format, "elf64-littleaarch64");
        assert_eq!(t.zig_headers[0], "aarch64-linux-gnu");
        let c = p.compiler(Path::new("/c"));
        assert!(
            c.cxx.ends_with("usr/bin/aarch64-linux-gnu-g++-12"),
            "{}",
            c.cxx.display()
        );
        assert!(c.cc.ends_with("usr/bin/aarch64-linux-gnu-gcc-12"));
        let g = c.pinned.as_ref().expect("the pinned toolchain's own parts");
        assert!(g.ar.ends_with("usr/bin/aarch64-linux-gnu-ar"));
        assert_eq!(g.glibc.to_string(), "2.28");
        assert!(matches!(
            &c.origin,
            crate::platform::host::Origin::PinnedSet { file, sha256 } if file == FILE_AARCH64 && sha256 == &p.sha256
        ));
        // Its own tree, beside the x86-64 one, named for its target.
        let tree = p.tree(Path::new("/c"));
        let x86 = Pinned::load(&root()).unwrap().tree(Path::new("/c"));
        assert_ne!(tree, x86);
        assert!(tree
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("gcc-12.2.0-aarch64-linux-gnu-glibc-2.28-"));
        assert!(c.cc.starts_with(&tree) && g.sysroot == tree.join("sysroot"));
        assert_eq!(
            p.libexec(Path::new("/t")),
            Path::new("/t/usr/lib/gcc-cross/aarch64-linux-gnu/12")
        );
        assert_eq!(
            p.libgcc_s(Path::new("/t")),
            Path::new("/t/usr/aarch64-linux-gnu/lib/libgcc_s.so.1")
        );
        // The programs are amd64 builds; the target's GCC libraries come as `all` packages.
        debs_are_named_for_their_packages(&p, &["amd64", "all"]);
        for name in [
            "gcc-12-aarch64-linux-gnu",
            "g++-12-aarch64-linux-gnu",
            "binutils-aarch64-linux-gnu",
            "libstdc++-12-dev-arm64-cross",
            "libgcc-s1-arm64-cross",
        ] {
            assert!(p.pins.debs.iter().any(|d| d.package == name), "{name}");
        }
        assert!(p.pins.sysroot.crti.contains("stp x29, x30, [sp, -16]!"));
        assert!(p.pins.sysroot.crtn.contains("ldp x29, x30, [sp], 16"));
    }

    /// On an aarch64 host (a DGX Spark): Debian's arm64 GCC, laid out as the x86-64
    /// toolchain (not a cross one), with the cross toolchain's sysroot sources and the
    /// aarch64 zig; no toolchain makes x86-64 code there.
    #[test]
    fn the_aarch64_native_pins_file_names_arm64_packages_and_the_cross_sysroot() {
        let p = Pinned::load_for(&root(), Arch::Aarch64, Arch::Aarch64)
            .unwrap()
            .unwrap();
        assert_eq!(p.file, FILE_AARCH64_NATIVE);
        assert_eq!(p.host_arch(), Some(Arch::Aarch64));
        let t = &p.pins.target;
        assert!(!t.cross());
        assert_eq!(t.triple, "aarch64-linux-gnu");
        let cross = Pinned::load_for(&root(), Arch::X86_64, Arch::Aarch64)
            .unwrap()
            .unwrap();
        assert_eq!(cross.host_arch(), Some(Arch::X86_64));
        // The same code: the same target, GCC, glibc and sysroot sources.
        let same = |a: &TargetPins| {
            (
                a.arch,
                a.zig.clone(),
                a.zig_headers.clone(),
                a.loader.clone(),
                a.output_format.clone(),
            )
        };
        assert_eq!(same(t), same(&cross.pins.target));
        assert_eq!(p.pins.gcc.version, cross.pins.gcc.version);
        assert_eq!(p.pins.gcc.glibc, cross.pins.gcc.glibc);
        let sysroot = |p: &Pinned| {
            let s = &p.pins.sysroot;
            (s.crti.clone(), s.crtn.clone(), s.compat.clone())
        };
        assert_eq!(sysroot(&p), sysroot(&cross));
        assert_eq!(p.pins.zig.version, cross.pins.zig.version);
        assert!(p.pins.zig.url.contains("aarch64") && !p.pins.zig.url.contains("x86_64"));
        debs_are_named_for_their_packages(&p, &["arm64"]);
        let c = p.compiler(Path::new("/c"));
        assert!(c.cxx.ends_with("usr/bin/aarch64-linux-gnu-g++-12"));
        assert_eq!(
            p.libexec(Path::new("/t")),
            Path::new("/t/usr/lib/gcc/aarch64-linux-gnu/12")
        );
        assert_eq!(
            p.libgcc_s(Path::new("/t")),
            Path::new("/t/lib/aarch64-linux-gnu/libgcc_s.so.1")
        );
        // One toolchain per (host, code) pair, none for x86-64 code on aarch64.
        assert_eq!(file_for(Arch::X86_64, Arch::X86_64), Some(FILE));
        assert_eq!(file_for(Arch::X86_64, Arch::Aarch64), Some(FILE_AARCH64));
        assert_eq!(
            file_for(Arch::Aarch64, Arch::Aarch64),
            Some(FILE_AARCH64_NATIVE)
        );
        assert_eq!(file_for(Arch::Aarch64, Arch::X86_64), None);
        assert!(Pinned::load_for(&root(), Arch::Aarch64, Arch::X86_64)
            .unwrap()
            .is_none());
        assert_ne!(p.tree(Path::new("/c")), cross.tree(Path::new("/c")));
    }

    #[test]
    fn a_plans_origin_loads_its_own_pins_file_only() {
        let x86 = Pinned::load_for(&root(), Arch::X86_64, Arch::X86_64)
            .unwrap()
            .unwrap();
        assert_eq!(x86.file, FILE);
        let a = Pinned::load_origin(&root(), FILE_AARCH64).unwrap();
        assert_eq!(a.arch(), Arch::Aarch64);
        let n = Pinned::load_origin(&root(), FILE_AARCH64_NATIVE).unwrap();
        assert_eq!(n.host_arch(), Some(Arch::Aarch64));
        assert_eq!(
            Pinned::load_origin(&root(), FILE).unwrap().sha256,
            x86.sha256
        );
        let e = Pinned::load_origin(&root(), "toolchains/other.toml").unwrap_err();
        assert!(e.to_string().contains("not a pinned toolchain"), "{e}");
    }
}
