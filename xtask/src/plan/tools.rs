//! The plan's tools: CMake, Ninja, the host compiler (or the MSVC toolset's
//! cl.exe) and patchelf, checked and recorded.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::detect::toolchain::{Tool, Toolchains};
use crate::plan::error::PlanError;
use crate::plan::setting::ToolRecord;
use crate::platform::host::Compiler;
use crate::platform::msvc::plan::PlannedMsvc;
use crate::platform::Platform;
use crate::recipe::Recipe;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PlannedTools {
    pub cmake: ToolRecord,
    pub ninja: ToolRecord,
    /// Rewrites RUNPATHs (CUDA builds only).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub patchelf: Option<ToolRecord>,
    pub cc: ToolRecord,
    pub cxx: ToolRecord,
    /// MSVC: the toolset the build runs with, where its environment came from, and its Visual Studio.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub msvc: Option<PlannedMsvc>,
}

/// CMake (new enough for the recipe), Ninja and the C++ compiler, or which is missing.
pub fn required(tools: &Toolchains, recipe: &Recipe) -> Result<(Tool, Tool, Compiler), PlanError> {
    let cmake = tools.cmake.clone().ok_or(PlanError::MissingTool {
        tool: "cmake",
        hint: "install CMake, or let the tool fetch the pinned one (Linux x86-64)",
    })?;
    if !cmake.version.at_least(&recipe.cmake.min_cmake) {
        return Err(PlanError::OldCmake {
            found: cmake.version.clone(),
            needed: recipe.cmake.min_cmake.clone(),
            path: cmake.path.display().to_string(),
            recipe: recipe.name.clone(),
        });
    }
    let ninja = tools.ninja.clone().ok_or(PlanError::MissingTool {
        tool: "ninja",
        hint: "install Ninja, or let the tool fetch the pinned one (Linux x86-64)",
    })?;
    let compiler = tools.compiler.clone().ok_or(PlanError::MissingTool {
        tool: "C++ compiler",
        hint: "install g++ or clang++, or name one with CC and CXX",
    })?;
    Ok((cmake, ninja, compiler))
}

/// patchelf, which rewrites RUNPATHs: needed for a CUDA build where the binary
/// format has RUNPATHs (ELF: nothing to rewrite in Windows DLLs).
pub fn patchelf(
    tools: &Toolchains,
    cuda: bool,
    platform: &Platform,
    cache: &Path,
) -> Result<Option<ToolRecord>, PlanError> {
    match (cuda, &tools.patchelf) {
        _ if !platform.binary_format().has_runpath() => Ok(None),
        (true, Some(p)) => Ok(Some(ToolRecord::of(p, cache))),
        (true, None) => Err(PlanError::MissingTool {
            tool: "patchelf",
            hint: "install patchelf, or let the tool fetch the pinned one (Linux x86-64)",
        }),
        (false, _) => Ok(None),
    }
}

/// The tools as the plan records them: on Windows, cc and cxx are the chosen toolset's cl.exe.
pub fn record(
    cmake: &Tool,
    ninja: &Tool,
    platform: &Platform,
    patchelf: Option<ToolRecord>,
    cache: &Path,
) -> PlannedTools {
    let (cc, cxx) = platform.compilers();
    let facts = platform.compiler_facts();
    PlannedTools {
        cmake: ToolRecord::of(cmake, cache),
        ninja: ToolRecord::of(ninja, cache),
        patchelf,
        cc: ToolRecord::compiler(cc, facts, cache),
        cxx: ToolRecord::compiler(cxx, facts, cache),
        msvc: platform.planned_msvc(),
    }
}
