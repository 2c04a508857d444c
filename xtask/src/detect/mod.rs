//! Detect: what this machine has (compilers, CMake, Ninja, nvcc, MSVC), as one `Toolchains` value.

pub mod cuda;
pub mod toolchain;
