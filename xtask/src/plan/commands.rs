//! The plan's command lines: configure, build and install, with placeholders.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::detect::toolchain::Tool;
use crate::plan::setting::{portable, Setting};
use crate::plan::source::PlannedSource;
use crate::recipe::{Recipe, Release};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Commands {
    pub configure: Vec<String>,
    pub build: Vec<String>,
    pub install: Option<Vec<String>>,
}

/// `cmake -S -B -G Ninja -D...`, `cmake --build` (with the recipe's and the release's
/// targets) and, where the recipe installs, `cmake --install`.
pub fn commands(
    recipe: &Recipe,
    release: &Release,
    source: &PlannedSource,
    cmake: &Tool,
    defines: &[Setting],
    cache: &Path,
) -> Commands {
    // The build dir mirrors the source: the project at `${SRC}/<dir>` builds in
    // `${BUILD}/<dir>`, so every object of a tree two recipes build (llama.cpp's, alone
    // and vendored in llama-cpp-python) has the same path, and a compile cache serves both.
    let (project, binary) = if source.project_dir == "." {
        ("${SRC}".to_string(), "${BUILD}".to_string())
    } else {
        (
            format!("${{SRC}}/{}", source.project_dir),
            format!("${{BUILD}}/{}", source.project_dir),
        )
    };
    let cmake_bin = portable(&cmake.path, cache);
    let mut configure = vec![
        cmake_bin.clone(),
        "-S".into(),
        project,
        "-B".into(),
        binary.clone(),
        "-G".into(),
        "Ninja".into(),
    ];
    configure.extend(defines.iter().map(|d| format!("-D{}={}", d.name, d.value)));
    let mut build = vec![cmake_bin.clone(), "--build".into(), binary.clone()];
    let targets: Vec<&String> = recipe
        .cmake
        .targets
        .iter()
        .chain(&release.extra_targets)
        .collect();
    if !targets.is_empty() {
        build.push("--target".into());
        build.extend(targets.into_iter().cloned());
    }
    let install = recipe
        .cmake
        .install
        .then(|| vec![cmake_bin, "--install".into(), binary]);

    Commands {
        configure,
        build,
        install,
    }
}
