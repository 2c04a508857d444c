//! The cells a release file expands into, and the `--cell` / GitHub matrix views of them.

use std::collections::BTreeSet;

use anyhow::Result;

use crate::cuda::CudaVersion;
use crate::plan::target::Accelerator;
use crate::recipe::{ArtifactKind, Recipe};
use crate::version::Version;

use super::*;

/// One native build of a release, packaged for all its Pythons.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    /// Stable, file-name-safe: `0.3.36-cpu`, `0.3.36-cu13.0-120`.
    pub name: String,
    pub version: Version,
    pub arch: Accelerator,
    /// The CUDA release, for GPU arch sets.
    pub cuda: Option<CudaVersion>,
}

impl Cell {
    pub fn new(version: Version, arch: Accelerator, cuda: Option<CudaVersion>) -> Cell {
        let safe = |s: String| {
            s.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '.' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect::<String>()
        };
        let name = match &cuda {
            None => format!("{version}-{}", safe(arch.to_string())),
            Some(c) => format!("{version}-cu{c}-{}", safe(arch.to_string())),
        };
        Cell {
            name,
            version,
            arch,
            cuda,
        }
    }
}

/// Versions x arch sets x (CUDA releases for GPU sets; one cell for `cpu`), in
/// the order the file lists them. Checks the file against its recipe.
pub fn expand(config: &Config, recipe: &Recipe) -> Result<Vec<Cell>, ConfigError> {
    if recipe.name != config.recipe {
        return Err(config.error(format!(
            "recipe = \"{}\", but the recipe given is `{}`",
            config.recipe, recipe.name
        )));
    }
    match (recipe.artifact, config.python.is_empty()) {
        (ArtifactKind::Wheel, true) => {
            return Err(config.error(format!(
                "recipe `{}` makes wheels: list their Pythons, e.g. python = [\"311\", \"312\"]",
                recipe.name
            )))
        }
        (ArtifactKind::Archive, false) => {
            return Err(config.error(format!(
                "recipe `{}` makes archives, which are not per Python: remove `python`",
                recipe.name
            )))
        }
        _ => {}
    }
    let versions = if config.versions.is_empty() {
        vec![recipe
            .release(None)
            .map_err(|e| config.error(e.to_string()))?
            .version
            .clone()]
    } else {
        for v in &config.versions {
            recipe
                .release(Some(v))
                .map_err(|e| config.error(format!("versions: {e}")))?;
        }
        config.versions.clone()
    };
    let mut cells = Vec::new();
    for v in &versions {
        for a in &config.arch {
            match a {
                Accelerator::Cpu => cells.push(Cell::new(v.clone(), a.clone(), None)),
                Accelerator::Cuda(_) => cells.extend(
                    config
                        .cuda
                        .iter()
                        .map(|c| Cell::new(v.clone(), a.clone(), Some(*c))),
                ),
            }
        }
    }
    // Two spellings of one set (`120` and `rtx5090`) would build the same wheels twice.
    let mut seen: Vec<(String, &Accelerator)> = Vec::new();
    for a in &config.arch {
        let Accelerator::Cuda(r) = a else { continue };
        let targets = r.resolve(config.ptx).targets.to_string();
        if let Some((_, first)) = seen.iter().find(|(t, _)| *t == targets) {
            return Err(config.error(format!("arch `{first}` and `{a}` build the same targets ({targets}): list each arch set once")));
        }
        seen.push((targets, a));
    }
    let mut names = BTreeSet::new();
    if let Some(c) = cells.iter().find(|c| !names.insert(&c.name)) {
        return Err(config.error(format!(
            "two arch sets give the same cell name `{}`: list each arch set once",
            c.name
        )));
    }
    Ok(cells)
}

/// The cells a `--cell` selection names (all when empty); an unknown name lists the known ones.
pub fn select<'a>(cells: &'a [Cell], names: &[String]) -> Result<Vec<&'a Cell>, String> {
    if names.is_empty() {
        return Ok(cells.iter().collect());
    }
    let mut out = Vec::new();
    for n in names {
        match cells.iter().find(|c| &c.name == n) {
            Some(c) if !out.contains(&c) => out.push(c),
            Some(_) => {}
            None => {
                let known: Vec<&str> = cells.iter().map(|c| c.name.as_str()).collect();
                return Err(format!(
                    "--cell {n}: the release has no such cell; its cells are {}",
                    known.join(", ")
                ));
            }
        }
    }
    Ok(out)
}

/// `{"include": [{"cell": ..., "version": ..., "arch": ..., "cuda": ...}]}` for a
/// GitHub Actions `strategy.matrix`.
pub fn github_matrix(cells: &[&Cell]) -> serde_json::Value {
    let include: Vec<serde_json::Value> = cells
        .iter()
        .map(|c| {
            let mut m = serde_json::Map::new();
            m.insert("cell".into(), c.name.clone().into());
            m.insert("version".into(), c.version.to_string().into());
            m.insert("arch".into(), c.arch.to_string().into());
            m.insert(
                "cuda".into(),
                c.cuda.map(|v| v.to_string()).unwrap_or_default().into(),
            );
            serde_json::Value::Object(m)
        })
        .collect();
    serde_json::json!({ "include": include })
}
