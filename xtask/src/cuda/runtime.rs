//! The CUDA runtime's files, by OS and CUDA major: the libraries a GPU build of
//! ggml links (the CUDA runtime, cuBLAS and cuBLASLt), the driver's library, and
//! where NVIDIA's runtime wheels install them, relative to site-packages.
//!
//! Linux: `libcudart.so.13` in `nvidia/cu13/lib` (13.x wheels, one tree) or in
//! `nvidia/cuda_runtime/lib` and `nvidia/cublas/lib` (12.x). Windows: `cudart64_13.dll`
//! in `nvidia/cu13/bin/x86_64` (13.x), `cudart64_12.dll` in `nvidia/cuda_runtime/bin`
//! and `nvidia/cublas/bin` (12.x); the driver's `nvcuda.dll` is in System32.
//!
//! Linux aarch64 (sbsa: Grace, GH200, GB10): the same names in the same dirs. NVIDIA's
//! manylinux aarch64 wheels of `nvidia-cuda-runtime` and `nvidia-cublas` have the
//! x86-64 wheels' file list (13.0.96: only `lib/` differs in content, the headers
//! are equal), so [`files`] holds for both architectures. What does differ by
//! architecture is where a toolkit root keeps the target's headers and libraries:
//! [`toolkit_target`].

use crate::platform::{Arch, Os};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeFiles {
    /// The runtime libraries the build links: cudart, cublas, cublasLt.
    pub libraries: Vec<String>,
    /// The driver's library (`libcuda.so.1`, `nvcuda.dll`): on every machine with the driver.
    pub driver: &'static str,
    /// The dirs NVIDIA's runtime wheels put `libraries` in, relative to site-packages.
    pub wheel_dirs: Vec<&'static str>,
}

/// The runtime files of CUDA `major` (12 or 13 and later) on `os`.
pub fn files(os: Os, major: u32) -> RuntimeFiles {
    let names = ["cudart", "cublas", "cublasLt"];
    match os {
        Os::Linux => RuntimeFiles {
            libraries: names.iter().map(|n| format!("lib{n}.so.{major}")).collect(),
            driver: "libcuda.so.1",
            wheel_dirs: if major >= 13 {
                vec!["nvidia/cu13/lib"]
            } else {
                vec!["nvidia/cuda_runtime/lib", "nvidia/cublas/lib"]
            },
        },
        Os::Windows => RuntimeFiles {
            libraries: names.iter().map(|n| format!("{n}64_{major}.dll")).collect(),
            driver: "nvcuda.dll",
            wheel_dirs: if major >= 13 {
                vec!["nvidia/cu13/bin/x86_64"]
            } else {
                vec!["nvidia/cuda_runtime/bin", "nvidia/cublas/bin"]
            },
        },
    }
}

/// The dir under `<toolkit root>/targets/` that holds the Linux `arch` target's
/// `include/` and `lib/`: what nvcc.profile names through `-target-dir` (default: the
/// build machine's, `x86_64-linux` on x86-64) and CMake's FindCUDAToolkit looks for
/// when cross-compiling (for `CMAKE_SYSTEM_PROCESSOR` aarch64 it tries `aarch64-linux`,
/// the Jetson/L4T layout, then `sbsa-linux`). aarch64 servers and GB10 are sbsa: their
/// toolkits and NVIDIA's `cuda-cross-sbsa` packages use `sbsa-linux`.
pub const fn toolkit_target(arch: Arch) -> &'static str {
    match arch {
        Arch::X86_64 => "x86_64-linux",
        Arch::Aarch64 => "sbsa-linux",
    }
}

/// The platform tag part of NVIDIA's Linux wheels for `arch`, as their file names end
/// (`manylinux2014_aarch64.manylinux_2_17_aarch64.whl`, `manylinux_2_27_aarch64.whl`).
pub const fn wheel_arch_suffix(arch: Arch) -> &'static str {
    match arch {
        Arch::X86_64 => "_x86_64.whl",
        Arch::Aarch64 => "_aarch64.whl",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The wheels' dirs and names do not depend on the architecture; the toolkit's
    /// target dir does.
    #[test]
    fn aarch64_differs_only_in_the_toolkit_target_dir() {
        assert_eq!(toolkit_target(Arch::X86_64), "x86_64-linux");
        assert_eq!(toolkit_target(Arch::Aarch64), "sbsa-linux");
        assert!(
            "nvidia_cublas-13.0.2.14-py3-none-manylinux_2_27_aarch64.whl"
                .ends_with(wheel_arch_suffix(Arch::Aarch64))
        );
        assert_eq!(files(Os::Linux, 13).wheel_dirs, ["nvidia/cu13/lib"]);
    }

    #[test]
    fn runtime_files_by_os_and_major() {
        let l13 = files(Os::Linux, 13);
        assert_eq!(
            l13.libraries,
            ["libcudart.so.13", "libcublas.so.13", "libcublasLt.so.13"]
        );
        assert_eq!(l13.wheel_dirs, ["nvidia/cu13/lib"]);
        assert_eq!(files(Os::Linux, 12).libraries[0], "libcudart.so.12");
        let w13 = files(Os::Windows, 13);
        assert_eq!(
            w13.libraries,
            ["cudart64_13.dll", "cublas64_13.dll", "cublasLt64_13.dll"]
        );
        assert_eq!(w13.driver, "nvcuda.dll");
        assert_eq!(w13.wheel_dirs, ["nvidia/cu13/bin/x86_64"]);
        let w12 = files(Os::Windows, 12);
        assert_eq!(w12.libraries[2], "cublasLt64_12.dll");
        assert_eq!(
            w12.wheel_dirs,
            ["nvidia/cuda_runtime/bin", "nvidia/cublas/bin"]
        );
    }
}
