//! zig's clang as the pinned host compiler, the Linux default (`toolchains/build-tools.toml`,
//! `[zig]`): `zig cc -target x86_64-linux-gnu.2.28` compiles against the glibc headers
//! zig carries and links against stubs of that glibc, with LLVM's libc++ linked
//! statically (its symbols hidden). No system header, library, assembler or linker takes
//! part, so any Linux x86-64 machine makes the same bytes, and the libraries need
//! nothing newer than the target's glibc.
//!
//! CMake and nvcc take one executable per tool, so the tool writes wrappers into the
//! unpacked tree before recording it ([`write_wrappers`]); their text is fixed by the
//! pin (zig's path relative to the wrapper and the target), so the tree record covers it.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::platform::host::Compiler;
use crate::versions::Version;

/// What the plan and packaging need to know of a zig host compiler.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ZigHost {
    /// zig's own version (the wheel's).
    pub version: Version,
    /// `-target`: `x86_64-linux-gnu.2.28`.
    pub target: String,
    /// The unpacked tree (`<cache>/tools/zig-<version>-<target>`).
    pub root: PathBuf,
}

/// The wrappers: (file name in `bin/`, zig's subcommand).
const WRAPPERS: [(&str, &str); 4] = [
    ("zig-cc", "cc"),
    ("zig-c++", "c++"),
    ("zig-ar", "ar"),
    ("zig-ranlib", "ranlib"),
];

/// The directory of the unpacked tree: the target is part of the name, since the wrappers hold it.
pub fn tool_id(version: &Version, target: &str) -> String {
    format!("zig-{version}-{target}")
}

impl ZigHost {
    fn wrapper(&self, name: &str) -> PathBuf {
        self.root.join("bin").join(name)
    }
    pub fn cc(&self) -> PathBuf {
        self.wrapper("zig-cc")
    }
    pub fn cxx(&self) -> PathBuf {
        self.wrapper("zig-c++")
    }
    pub fn ar(&self) -> PathBuf {
        self.wrapper("zig-ar")
    }
    pub fn ranlib(&self) -> PathBuf {
        self.wrapper("zig-ranlib")
    }
    /// The tree as the plan writes it: `${CACHE}/tools/<id>`.
    pub fn portable_root(&self) -> String {
        format!("${{CACHE}}/tools/{}", tool_id(&self.version, &self.target))
    }
    /// zig's caches (the libc++ and glibc stubs it builds once per target): under the tool
    /// cache, never in the user's home.
    pub fn cache_dir(cache: &Path) -> PathBuf {
        cache.join("zig-cache")
    }
    /// Why the build uses this compiler, for the plan.
    pub fn reason(&self, clang: &Version) -> String {
        format!(
            "the pinned host compiler: zig {}'s clang {clang} (`zig cc -target {}`), with the glibc headers and link stubs zig carries and libc++ linked statically (hidden): no system compiler, header or library takes part, so any Linux machine makes the same bytes, needing glibc {} at most and no libstdc++; --host-cc or CC/CXX select a system compiler",
            self.version,
            self.target,
            self.glibc()
        )
    }
    /// The glibc version of the target (`2.28` of `x86_64-linux-gnu.2.28`).
    pub fn glibc(&self) -> &str {
        self.target
            .split_once("-gnu.")
            .map(|(_, v)| v)
            .unwrap_or(&self.target)
    }
}

/// The build's environment with zig: no compiler dir on PATH (zig carries its own
/// assembler, linker and archiver; /bin/sh runs the wrappers), and zig's caches.
pub fn base_env() -> Vec<super::Decided> {
    let cache = ZigHost::cache_dir(Path::new("${CACHE}")).display().to_string();
    let why = "zig builds libc++ and the glibc link stubs once per target and keeps them here (the tool cache), never in the user's home";
    vec![
        (
            "PATH",
            "/usr/bin:/bin".into(),
            "the build sees no user PATH, and no compiler, assembler, linker or archiver is taken from it: zig has its own (the system dirs are there for /bin/sh, which runs zig's wrappers and the build's scripts)".into(),
        ),
        ("LC_ALL", "C".into(), "compiler messages and sorting independent of the user's locale".into()),
        ("ZIG_GLOBAL_CACHE_DIR", cache.clone(), why.into()),
        ("ZIG_LOCAL_CACHE_DIR", cache, why.into()),
    ]
}

const STRIP_DEBUG: &str = "-Wl,--strip-debug";
const STRIP_DEBUG_WHY: &str = "zig builds the libc++ and libunwind it links in with debug info, which names zig's tree on the build machine and was 80% of each library (libggml-base.so: 7.2 MB, 1.2 MB without): linked without debug sections (the build's own objects have none: Release)";

/// The compilers and archiver CMake uses (the wrappers), and the flags that keep paths
/// out of the objects: the build's, and zig's own tree (its libc and libc++ headers).
pub fn compiler_defines(
    compiler: &Compiler,
    zig: &ZigHost,
    portable: &dyn Fn(&Path) -> String,
) -> Vec<super::Decided> {
    let flags = format!("{} -ffile-prefix-map={}=/zig -mevex512", super::PREFIX_MAPS, zig.portable_root());
    let flags_why = "no build-machine path in __FILE__, asserts or debug info: the build's dirs, and zig's tree (its libc and libc++ headers); -mevex512: zig hands clang its baseline CPU's feature list, with evex512 off, so ggml's AVX-512 variants (-mavx512f) would not compile (alone it enables no instruction: objects without AVX-512 are the same bytes)";
    let reason = zig.reason(&compiler.version);
    vec![
        ("CMAKE_C_COMPILER", portable(&compiler.cc), reason.clone()),
        ("CMAKE_CXX_COMPILER", portable(&compiler.cxx), reason),
        ("CMAKE_AR", portable(&zig.ar()), "zig's archiver (`zig ar`), not the ar found on PATH".into()),
        ("CMAKE_RANLIB", portable(&zig.ranlib()), "zig's ranlib (`zig ranlib`), not the one found on PATH".into()),
        ("CMAKE_C_FLAGS", flags.clone(), flags_why.into()),
        ("CMAKE_CXX_FLAGS", flags, flags_why.into()),
        ("CMAKE_SHARED_LINKER_FLAGS", STRIP_DEBUG.into(), STRIP_DEBUG_WHY.into()),
        ("CMAKE_MODULE_LINKER_FLAGS", STRIP_DEBUG.into(), STRIP_DEBUG_WHY.into()),
        ("CMAKE_EXE_LINKER_FLAGS", STRIP_DEBUG.into(), STRIP_DEBUG_WHY.into()),
    ]
}

/// A wrapper's text: zig (at `zig_bin`, relative to the tree's root) with its subcommand,
/// and for the compilers the target. The version is in the text because compile caches
/// (sccache) hash the compiler they run, which is the wrapper.
fn script(zig_bin: &str, version: &Version, sub: &str, target: &str) -> String {
    let target = match sub {
        "cc" | "c++" => format!(" -target {target}"),
        _ => String::new(),
    };
    format!(
        "#!/bin/sh\n# Written by llama-forge: zig {version}'s {sub} as one executable (CMake and nvcc take a path).\nexec \"$(dirname \"$0\")/../{zig_bin}\" {sub}{target} \"$@\"\n"
    )
}

/// zig's wrappers, as the tree of a pinned zig gets them.
pub struct Wrappers<'a> {
    /// zig itself, relative to the tree's root.
    pub zig_bin: &'a str,
    pub version: &'a Version,
    pub target: &'a str,
}

impl crate::detect::toolchain::Additions for Wrappers<'_> {
    /// Writes the wrappers into `root/bin` (an unpacked zig wheel, before its record is made).
    fn write(&self, root: &Path) -> Result<()> {
        let bin = root.join("bin");
        fs_err::create_dir_all(&bin)?;
        for (name, sub) in WRAPPERS {
            let p = bin.join(name);
            fs_err::write(&p, script(self.zig_bin, self.version, sub, self.target))?;
            crate::provision::fetch::set_mode(&p, 0o755)?;
        }
        Ok(())
    }

    /// Whether `root/bin` holds the wrappers this version of the tool writes.
    fn check(&self, root: &Path) -> Result<()> {
        for (name, sub) in WRAPPERS {
            let p = root.join("bin").join(name);
            if std::fs::read_to_string(&p).ok() != Some(script(self.zig_bin, self.version, sub, self.target)) {
                anyhow::bail!("{}: not the wrapper this tool writes", p.display());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrappers_run_zig_relative_to_themselves_with_the_target() {
        let v: Version = "0.15.1".parse().unwrap();
        let s = script("ziglang/zig", &v, "c++", "x86_64-linux-gnu.2.28");
        assert!(s.contains("zig 0.15.1's c++"), "{s}");
        assert!(s.ends_with(
            "exec \"$(dirname \"$0\")/../ziglang/zig\" c++ -target x86_64-linux-gnu.2.28 \"$@\"\n"
        ));
        assert!(script("ziglang/zig", &v, "ar", "x86_64-linux-gnu.2.28")
            .ends_with("zig\" ar \"$@\"\n"));
        let z = ZigHost {
            version: "0.15.1".parse().unwrap(),
            target: "x86_64-linux-gnu.2.28".into(),
            root: "/c/tools/zig".into(),
        };
        assert_eq!(z.glibc(), "2.28");
        assert_eq!(z.cxx(), Path::new("/c/tools/zig/bin/zig-c++"));
    }
}
