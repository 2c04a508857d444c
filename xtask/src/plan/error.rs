//! Why a plan cannot be made.

use crate::versions::Version;

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
    #[error("{0}")]
    Cuda(String),
    #[error("recipe `{0}` builds an archive: --py applies to wheels only")]
    PyForArchive(String),
    #[error(
        "recipe `{0}` builds a wheel: give at least one Python version with --py (e.g. --py 311)"
    )]
    NoPython(String),
}
