//! The release file: recipe, versions, arch sets, CUDA releases, Pythons, budget.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Deserialize;

use crate::cuda::CudaVersion;
use crate::platform::Target;
use crate::request::{Accelerator, CpuBaseline};
use crate::tags::PyVersion;
use crate::versions::Version;

#[derive(Debug, thiserror::Error)]
#[error("release file {path}: {message}")]
pub struct ConfigError {
    pub path: PathBuf,
    pub message: String,
}

/// The release file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    recipe: String,
    #[serde(default)]
    versions: Vec<Version>,
    arch: Vec<Accelerator>,
    target: Option<String>,
    #[serde(default, deserialize_with = "cuda_list")]
    cuda: Vec<CudaVersion>,
    #[serde(default)]
    python: Vec<PyVersion>,
    #[serde(default)]
    cpu_baseline: CpuBaseline,
    max_size_mb: Option<f64>,
    source: Option<PathBuf>,
    #[serde(default)]
    ptx: bool,
    #[serde(default)]
    bundle_cuda_runtime: bool,
}

fn cuda_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<CudaVersion>, D::Error> {
    let raw = Vec::<String>::deserialize(d)?;
    raw.iter()
        .map(|s| s.parse().map_err(serde::de::Error::custom))
        .collect()
}

/// A release file, parsed and checked on its own (not yet against the recipe).
#[derive(Debug, Clone)]
pub struct Config {
    /// The release file.
    pub path: PathBuf,
    pub recipe: String,
    /// Empty: the recipe's newest release.
    pub versions: Vec<Version>,
    /// Each entry one arch set (one native build per CUDA release).
    pub arch: Vec<Accelerator>,
    /// The platform every artifact is for (the host's unless the file says).
    pub target: crate::platform::Target,
    pub cuda: Vec<CudaVersion>,
    /// The CPythons to make a wheel each for; empty: one py3 wheel per cell, for every Python.
    pub python: Vec<PyVersion>,
    pub cpu_baseline: CpuBaseline,
    /// Largest artifact allowed, in MB (10^6 bytes).
    pub max_size_mb: Option<f64>,
    /// A local source under the release file's directory (a relative path without
    /// `..`), made absolute against that directory.
    pub source: Option<PathBuf>,
    pub ptx: bool,
    pub bundle_cuda_runtime: bool,
}

impl Config {
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = fs_err::read_to_string(path).map_err(|e| ConfigError {
            path: path.to_path_buf(),
            message: format!("cannot read it: {e}"),
        })?;
        Config::parse(&text, path)
    }

    /// Parses and checks `text`; `path` names the file in errors and anchors `source`.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let err = |message: String| ConfigError {
            path: path.to_path_buf(),
            message,
        };
        let raw: RawConfig =
            toml::from_str(text).map_err(|e| err(e.to_string().trim_end().to_string()))?;
        if raw.arch.is_empty() {
            return Err(err(
                "`arch` is empty: list at least one arch set, e.g. arch = [\"cpu\", \"120\"]"
                    .into(),
            ));
        }
        dupes("versions", &raw.versions).map_err(|e| err(e.to_string()))?;
        dupes("arch", &raw.arch).map_err(|e| err(e.to_string()))?;
        dupes("cuda", &raw.cuda).map_err(|e| err(e.to_string()))?;
        dupes("python", &raw.python).map_err(|e| err(e.to_string()))?;
        let gpu = raw.arch.iter().find(|a| matches!(a, Accelerator::Cuda(_)));
        if let (Some(a), true) = (gpu, raw.cuda.is_empty()) {
            return Err(err(format!("arch `{a}` is a GPU set, but `cuda` is empty: name the CUDA releases to build with, e.g. cuda = [\"13.0\"]")));
        }
        let target = match &raw.target {
            Some(t) => t
                .parse::<crate::platform::Target>()
                .map_err(|e| err(format!("target = \"{t}\": {e}")))?,
            None => crate::platform::Target::host(),
        };
        if let (Some(a), Target::WINDOWS_GNU) = (gpu, target) {
            return Err(err(format!(
                "arch `{a}` is a GPU set, and target {target} builds the CPU code only (nvcc takes no mingw-w64 host compiler): build the GPU cells on Windows with target = \"{}\"",
                Target::WINDOWS_MSVC
            )));
        }
        if let Some(m) = raw.max_size_mb {
            if !(m.is_finite() && m > 0.0) {
                return Err(err(format!(
                    "max_size_mb = {m}: give a positive size in MB, e.g. 100"
                )));
            }
        }
        let source = match raw.source {
            None => None,
            Some(s) => {
                // The release file and its source travel together (a checkout, a CI job):
                // a path that leaves the file's dir is one that is not there elsewhere.
                // (`./src`, `src/` and `.` are under it.)
                let why = s.components().find_map(|c| match c {
                    std::path::Component::Prefix(_) | std::path::Component::RootDir => {
                        Some("it is an absolute path")
                    }
                    std::path::Component::ParentDir => Some("it climbs out with `..`"),
                    _ => None,
                });
                if let Some(why) = why {
                    return Err(err(format!(
                        "source = \"{}\": {why}; give a path under the release file's directory (relative to it, without `..`), or build such a source with `cargo xtask build --source`",
                        s.display()
                    )));
                }
                let base = path
                    .parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .unwrap_or(Path::new("."));
                let full = base.join(&s);
                let found = full.canonicalize().map_err(|e| {
                    err(format!("source = \"{}\": {} ({e}; a relative path is taken from the release file's directory)", s.display(), full.display()))
                })?;
                // A link under the dir that points out of it leaves it all the same.
                if let Ok(dir) = base.canonicalize() {
                    if !found.starts_with(&dir) {
                        return Err(err(format!(
                            "source = \"{}\" is {}, outside the release file's directory {}: give a path under that directory",
                            s.display(),
                            found.display(),
                            dir.display()
                        )));
                    }
                }
                Some(found)
            }
        };
        Ok(Config {
            path: path.to_path_buf(),
            recipe: raw.recipe,
            versions: raw.versions,
            arch: raw.arch,
            target,
            cuda: raw.cuda,
            python: raw.python,
            cpu_baseline: raw.cpu_baseline,
            max_size_mb: raw.max_size_mb,
            source,
            ptx: raw.ptx,
            bundle_cuda_runtime: raw.bundle_cuda_runtime,
        })
    }

    /// The release's name: the file stem (`releases/cpu.toml` -> `cpu`).
    pub fn name(&self) -> String {
        self.path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "release".into())
    }

    pub(super) fn error(&self, message: String) -> ConfigError {
        ConfigError {
            path: self.path.clone(),
            message,
        }
    }
}

/// A list of the release file that names one item twice.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{key}` lists {item} twice")]
pub struct Duplicate {
    pub key: &'static str,
    /// The item as the file's type writes it.
    pub item: String,
}

fn dupes<T: PartialEq + std::fmt::Display>(
    key: &'static str,
    items: &[T],
) -> Result<(), Duplicate> {
    for (i, a) in items.iter().enumerate() {
        if items[..i].contains(a) {
            return Err(Duplicate {
                key,
                item: a.to_string(),
            });
        }
    }
    Ok(())
}
