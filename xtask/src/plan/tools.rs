//! The plan's tools: CMake, Ninja, the host compiler (or the MSVC toolset's
//! cl.exe) and patchelf, checked and recorded.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::detect::toolchain::{Tool, Toolchains};
use crate::plan::error::PlanError;
use crate::plan::setting::ToolRecord;
use crate::platform::host::Compiler;
use crate::platform::msvc::env::{MsvcEnvSource, MsvcToolsetEnv, VsInstall};
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

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PlannedMsvc {
    pub toolset: crate::platform::msvc::MsvcToolset,
    pub source: MsvcEnvSource,
    pub instance: VsInstall,
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

/// patchelf, which rewrites RUNPATHs: needed for a CUDA build, except with MSVC
/// (RUNPATHs are ELF: nothing to rewrite in Windows DLLs).
pub fn patchelf(
    tools: &Toolchains,
    cuda: bool,
    msvc: bool,
    cache: &Path,
) -> Result<Option<ToolRecord>, PlanError> {
    match (cuda, &tools.patchelf) {
        _ if msvc => Ok(None),
        (true, Some(p)) => Ok(Some(ToolRecord::of(p, cache))),
        (true, None) => Err(PlanError::MissingTool {
            tool: "patchelf",
            hint: "install patchelf, or let the tool fetch the pinned one (Linux x86-64)",
        }),
        (false, _) => Ok(None),
    }
}

/// The tools as the plan records them: with MSVC, cc and cxx are the chosen toolset's cl.exe.
pub fn record(
    cmake: &Tool,
    ninja: &Tool,
    compiler: &Compiler,
    msvc: Option<&MsvcToolsetEnv>,
    patchelf: Option<ToolRecord>,
    cache: &Path,
) -> PlannedTools {
    PlannedTools {
        cmake: ToolRecord::of(cmake, cache),
        ninja: ToolRecord::of(ninja, cache),
        patchelf,
        cc: match msvc {
            Some(t) => ToolRecord::cl(compiler, t, cache),
            None => ToolRecord::compiler(compiler, &compiler.cc, cache),
        },
        cxx: match msvc {
            Some(t) => ToolRecord::cl(compiler, t, cache),
            None => ToolRecord::compiler(compiler, &compiler.cxx, cache),
        },
        msvc: msvc.map(|t| PlannedMsvc {
            toolset: t.toolset,
            source: t.source.clone(),
            instance: t.instance.clone(),
        }),
    }
}
