//! What one `wheel`/`build` asks for, as the stages below the command line take it.
//!
//! The command line (`commands::BuildArgs`) converts into this once; `prepare`,
//! the build pipeline, `reproduce` and `release` take a [`BuildRequest`] and
//! never see clap.

use std::path::PathBuf;

use crate::cuda::CudaVersion;
use crate::package::tags::PyVersion;
use crate::plan::launcher::LauncherKind;
use crate::plan::target::{Accelerator, CpuBaseline};
use crate::versions::Version;

/// One build's options, typed (the `wheel`/`build` flags are spelled beside each field).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildRequest {
    /// The recipe's name (a file in recipes/).
    pub recipe: String,
    /// `--version`: the release to build; the recipe's newest when `None`.
    pub release: Option<Version>,
    /// `--target`: the platform the artifact is for (the host's unless given).
    pub target: crate::platform::Target,
    /// `--arch`: CPU, or the GPUs to build for.
    pub accelerator: Accelerator,
    /// `--ptx`: also embed PTX for the highest arch.
    pub ptx: bool,
    /// `--cuda`: the CUDA release to use (binding).
    pub cuda: Option<CudaVersion>,
    /// `--cuda-path`: the CUDA toolkit root to use (binding).
    pub cuda_path: Option<PathBuf>,
    /// `--bundle-cuda-runtime`: copy the CUDA runtime into the wheel.
    pub bundle_cuda_runtime: bool,
    /// `--py`: the Pythons to build wheels for, as given (repeats are dropped when planning).
    pub pythons: Vec<PyVersion>,
    /// `--cpu-baseline`: the oldest x86-64 CPU the code runs on.
    pub cpu_baseline: CpuBaseline,
    /// `--source`: a local source archive or directory instead of the pinned download.
    pub source: Option<PathBuf>,
    /// `--dist`: where artifacts go (`dist/` in the checkout when `None`).
    pub dist: Option<PathBuf>,
    /// `--launcher`: compile through this cache.
    pub launcher: Option<LauncherKind>,
    /// `--host-cc`: the C++ host compiler.
    pub host_cc: Option<PathBuf>,
}
