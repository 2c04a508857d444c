//! What a plan does with the pinned host toolchain of Linux builds
//! (`toolchains/linux-gcc.toml`: Debian's GCC and binutils, a glibc 2.28 sysroot):
//! its programs, the sysroot as the only C library, the C++ runtime linked into each
//! library with its symbols hidden. [`crate::platform::Platform::Linux`] answers with
//! these where the compiler is the pinned one.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::platform::Decided;
use crate::versions::Version;

/// What the pinned GCC needs beside itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PinnedGcc {
    /// glibc 2.28's headers and link stubs, crt files, libgcc_s.so.1 to link against.
    pub sysroot: PathBuf,
    /// binutils' archiver and index maker, beside the compilers.
    pub ar: PathBuf,
    pub ranlib: PathBuf,
    /// The sysroot's glibc: the libraries need none newer.
    pub glibc: Version,
    /// GCC's static C++ runtime (`libstdc++.a`): what each library links in, and what an
    /// archive's shared runtime for its tools is linked from
    /// ([`crate::plan::defines::CXX_RUNTIME`]).
    pub cxx_runtime: PathBuf,
}

/// The shared libraries' and modules' link flags (and [`crate::platform::ELF_TRIM`]).
const LIB_LINK: &str = "-static-libstdc++ -Wl,--exclude-libs,ALL";
/// Programs' (the archive's tools): the same, and libgcc_s.so.1's own needs are not checked.
const EXE_LINK: &str = "-static-libstdc++ -Wl,--exclude-libs,ALL -Wl,--allow-shlib-undefined";

fn link_reason(glibc: &Version) -> String {
    format!(
        "libstdc++ is linked into each library and program, its symbols hidden (--exclude-libs): the system's libstdc++.so.6 may be older than GCC 12's (manylinux_2_28 allows GLIBCXX 3.4.24, GCC 8's), and a library exporting the runtime crashes beside numpy's; the sysroot's glibc {glibc} stubs are all it links against, with libgcc_s.so.1 (the system's unwinder) and the toolchain's compat definitions of the two newer glibc symbols libstdc++.a uses (__libc_single_threaded, arc4random); {}",
        crate::platform::ELF_TRIM_REASON
    )
}

/// The pinned compilers and binutils, the sysroot, the link flags.
pub fn compiler_defines(
    cc: &Path,
    cxx: &Path,
    g: &PinnedGcc,
    file: &str,
    portable: impl Fn(&Path) -> String,
) -> Vec<Decided> {
    let pinned = format!("the pinned host toolchain ({file}): the same compiler on every machine");
    let pinned = pinned.as_str();
    let sysroot = portable(&g.sysroot);
    let link = link_reason(&g.glibc);
    let trim = crate::platform::ELF_TRIM;
    let lib = format!("--sysroot={sysroot} {LIB_LINK} {trim}");
    let exe = format!("--sysroot={sysroot} {EXE_LINK} {trim}");
    vec![
        ("CMAKE_C_COMPILER", portable(cc), pinned.into()),
        ("CMAKE_CXX_COMPILER", portable(cxx), pinned.into()),
        ("CMAKE_AR", portable(&g.ar), "binutils of the pinned toolchain: nothing from PATH".into()),
        ("CMAKE_RANLIB", portable(&g.ranlib), "binutils of the pinned toolchain: nothing from PATH".into()),
        (
            "CMAKE_SYSROOT",
            sysroot.clone(),
            format!("every compile and link sees glibc {}'s headers and stubs only, never the build machine's C library; CMake's find_* look there first", g.glibc),
        ),
        ("CMAKE_SHARED_LINKER_FLAGS", lib.clone(), link.clone()),
        ("CMAKE_MODULE_LINKER_FLAGS", lib, link.clone()),
        ("CMAKE_EXE_LINKER_FLAGS", exe, format!("{link}; programs link against libgcc_s.so.1 of Debian 12, which itself needs glibc 2.35 (the system's libgcc_s is the one loaded): --allow-shlib-undefined")),
    ]
}

/// nvcc's host passes: the sysroot too (CMake gives CMAKE_SYSROOT to C and C++ only).
pub fn nvcc_flags(g: &PinnedGcc, portable: impl Fn(&Path) -> String) -> Vec<(String, String)> {
    vec![(
        format!("-Xcompiler=--sysroot={}", portable(&g.sysroot)),
        format!(
            "nvcc's host passes see the sysroot's glibc {} headers, as the C and C++ compiles do",
            g.glibc
        ),
    )]
}
