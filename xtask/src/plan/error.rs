//! Why a plan cannot be made.

use std::path::PathBuf;

use crate::cuda::{CannotEmit, HostCompilerError};
use crate::versions::{CompilerVersionError, CudaVersion, Version};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PlanError {
    #[error("no {tool} found: {hint}")]
    MissingTool {
        tool: &'static str,
        hint: &'static str,
    },
    #[error("CMake {found} at {path} is older than {needed}, which recipe `{recipe}` needs: install a newer CMake or remove it from PATH so the pinned one is used")]
    OldCmake {
        found: Version,
        needed: Version,
        path: String,
        recipe: String,
    },
    /// A refusal composed here: what was asked, what the toolkits found can do, what to use instead.
    #[error("{0}")]
    Cuda(String),
    /// The chosen toolkit's nvcc cannot emit a target. Not a `#[source]`: the
    /// message already holds it, and an error chain would print it twice.
    #[error("{cannot} (nvcc {nvcc} at {})", nvcc_path.display())]
    CannotEmit {
        cannot: CannotEmit,
        nvcc: CudaVersion,
        nvcc_path: PathBuf,
    },
    /// The host compiler's version is not `MAJOR.MINOR[.PATCH]`.
    #[error(transparent)]
    CompilerVersion(#[from] CompilerVersionError),
    /// nvcc's host compiler policy refuses the host compiler.
    #[error(transparent)]
    HostCompiler(#[from] HostCompilerError),
    /// A required patch does not fit the source (the patch check, before anything is built).
    #[error(transparent)]
    Patch(#[from] crate::recipe::check::PatchDoesNotFit),
    #[error("recipe `{0}` builds an archive: --py applies to wheels only")]
    PyForArchive(String),
    /// `--define` of a define the plan sets itself.
    #[error("--define {name}={asked}: the plan sets {name} itself ({name}={value}: {reason}); {instead}")]
    DefineOwned {
        name: String,
        asked: String,
        value: String,
        reason: String,
        /// What to give instead: the option that decides it, or that it is not to change.
        instead: String,
    },
    /// The compiler detection found builds for another target than the one asked for.
    #[error("--target {asked}: the compiler found ({cxx}) builds for {builds}; {}", if asked.is_linux() { format!("leave --host-cc, CC and CXX unset for the pinned toolchain of {asked}, or name a compiler for {} (e.g. {}-g++)", asked.arch(), asked.arch().gnu_triple()) } else { "see --help for the compilers each target takes".to_string() })]
    TargetCompiler {
        asked: crate::platform::Target,
        builds: crate::platform::Target,
        cxx: String,
    },
}
