//! What a plan does to cross-build for Windows from Linux with mingw-w64
//! (`--target x86_64-pc-windows-gnu`): the cross compilers and their sysroot,
//! the static GCC runtime, deterministic PE files.
//! [`crate::platform::Platform::WindowsGnu`] answers with these.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::platform::Decided;

/// The Debian package that has the cross compilers, for messages.
pub const DEBIAN_PACKAGE: &str = "mingw-w64";

/// The cross C and C++ compilers detection looks for on PATH: Debian's POSIX-threads
/// flavour (the win32 one of GCC 12 has no std::thread or std::mutex, which llama.cpp uses).
pub const CC: &str = "x86_64-w64-mingw32-gcc-posix";
pub const CXX: &str = "x86_64-w64-mingw32-g++-posix";
/// The resource compiler beside them.
pub const WINDRES: &str = "x86_64-w64-mingw32-windres";

/// What a mingw-w64 cross compiler needs beside itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mingw {
    /// The target's headers and libraries (`/usr/x86_64-w64-mingw32`): CMake finds
    /// libraries and headers there only.
    pub sysroot: PathBuf,
    /// `x86_64-w64-mingw32-windres`.
    pub windres: PathBuf,
}

/// Linker flags of every EXE and DLL.
const LINK_FLAGS: &str =
    "-static -static-libgcc -static-libstdc++ -Wl,--exclude-libs,ALL -Wl,--no-insert-timestamp -s";
const LINK_REASON: &str = "Windows has no libstdc++-6.dll, libgcc_s_seh-1.dll or libwinpthread-1.dll: the GCC runtime is linked into each EXE and DLL (-static*), so they import only Windows' own DLLs and each other; --exclude-libs keeps a DLL from exporting the runtime's symbols (ggml-base would export _Unwind_Resume and pthread_*, and the link fails); --no-insert-timestamp: no link time in the PE header, so equal inputs give equal files; -s: no COFF symbol table and no DWARF (most of it from Debian's static GCC runtime), which Windows never reads and no debugger of a Windows user uses (measured on 0.3.36: libllama.dll 7.5 MB, 4.5 MB stripped; exports are kept)";

/// The cross compilers (`cc`, `cxx`), the sysroot as CMake's only find root, the
/// repro and link flags, the install prefix.
pub fn compiler_defines(
    (cc, cxx): (&Path, &Path),
    m: &Mingw,
    portable: impl Fn(&Path) -> String,
) -> Vec<Decided> {
    let cross = "mingw-w64 GCC (POSIX threads) cross-compiling for Windows";
    let flags = "-ffile-prefix-map=${SRC}=/src -ffile-prefix-map=${BUILD}=/build";
    let only = "CMake finds the target's libraries, headers and packages in the mingw-w64 sysroot only, never the Linux host's";
    vec![
        ("CMAKE_SYSTEM_NAME", "Windows".into(), "a cross build: CMake makes Windows EXEs and DLLs on this Linux host".into()),
        ("CMAKE_SYSTEM_PROCESSOR", "AMD64".into(), "x86-64 Windows, as CMake names it there".into()),
        ("CMAKE_C_COMPILER", portable(cc), cross.into()),
        ("CMAKE_CXX_COMPILER", portable(cxx), cross.into()),
        ("CMAKE_RC_COMPILER", portable(&m.windres), "the resource compiler CMake enables for Windows targets, beside the cross compilers".into()),
        ("CMAKE_FIND_ROOT_PATH", portable(&m.sysroot), "the mingw-w64 sysroot: the target's headers and libraries".into()),
        ("CMAKE_FIND_ROOT_PATH_MODE_PROGRAM", "NEVER".into(), "programs the build runs are the host's".into()),
        ("CMAKE_FIND_ROOT_PATH_MODE_LIBRARY", "ONLY".into(), only.into()),
        ("CMAKE_FIND_ROOT_PATH_MODE_INCLUDE", "ONLY".into(), only.into()),
        ("CMAKE_FIND_ROOT_PATH_MODE_PACKAGE", "ONLY".into(), only.into()),
        ("CMAKE_C_FLAGS", flags.into(), "no build-machine path in __FILE__ or asserts".into()),
        ("CMAKE_CXX_FLAGS", flags.into(), "no build-machine path in __FILE__ or asserts".into()),
        ("CMAKE_EXE_LINKER_FLAGS", LINK_FLAGS.into(), LINK_REASON.into()),
        ("CMAKE_SHARED_LINKER_FLAGS", LINK_FLAGS.into(), LINK_REASON.into()),
        ("CMAKE_MODULE_LINKER_FLAGS", LINK_FLAGS.into(), LINK_REASON.into()),
        ("CMAKE_INSTALL_PREFIX", "${STAGE}/prefix".into(), "install rules outside the artifact (headers, CMake files) land in the staging dir, not the system".into()),
    ]
}
