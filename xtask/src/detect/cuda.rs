//! Finding nvcc: explicit inputs, environment, PATH, then the usual install locations.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::cuda::{CudaVersion, NvccVersion};
use crate::platform::host::Origin;
use crate::platform::Os;

/// One CUDA toolkit this machine has, or can provision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolkit {
    pub root: PathBuf,
    pub nvcc: PathBuf,
    pub version: NvccVersion,
    pub origin: Origin,
    /// `cuobjdump` that reads this toolkit's output (its own, or a newer one), and its version.
    pub cuobjdump: Option<(PathBuf, crate::versions::Version)>,
    /// For `--cuda-path`/`CUDACXX` etc.: how it was found.
    pub found_by: String,
    /// Given with `--cuda-path`: binding, no other toolkit may stand in for it.
    pub cuda_path_flag: bool,
    /// Why it cannot build for the target's arch though its nvcc could: a toolkit of
    /// this machine without that arch's target libraries (`targets/sbsa-linux/lib` for
    /// an aarch64 target). Set by detection; the plan names it as the reason not to use it.
    pub lacks_target: Option<String>,
}

/// A place CUDA is usually installed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SystemLocation {
    /// A toolkit root, e.g. `/usr/local/cuda`.
    Root(PathBuf),
    /// Every `<parent>/<prefix><version>` directory, newest version first (`/usr/local/cuda-*`).
    Versioned { parent: PathBuf, prefix: String },
}

impl SystemLocation {
    pub fn defaults(os: Os) -> Vec<SystemLocation> {
        match os {
            Os::Linux => vec![
                SystemLocation::Root("/usr/local/cuda".into()),
                SystemLocation::Versioned {
                    parent: "/usr/local".into(),
                    prefix: "cuda-".into(),
                },
                SystemLocation::Root("/opt/cuda".into()),
            ],
            Os::Windows => vec![SystemLocation::Versioned {
                parent: r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA".into(),
                prefix: "v".into(),
            }],
        }
    }

    fn roots(&self) -> Vec<PathBuf> {
        match self {
            SystemLocation::Root(p) => vec![p.clone()],
            SystemLocation::Versioned { parent, prefix } => {
                let Ok(rd) = fs_err::read_dir(parent) else {
                    return Vec::new();
                };
                let mut found: Vec<(Option<CudaVersion>, String, PathBuf)> = rd
                    .filter_map(Result::ok)
                    .filter_map(|e| {
                        let name = e.file_name().to_string_lossy().into_owned();
                        let rest = name.strip_prefix(prefix.as_str())?.to_string();
                        Some((rest.parse().ok(), name, e.path()))
                    })
                    .collect();
                // Newest parsed version first; unparsable names after, by name.
                found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
                found.into_iter().map(|(_, _, p)| p).collect()
            }
        }
    }
}

/// What the CLI layer read; `discover_nvcc` only looks at the filesystem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoveryInputs {
    /// `--cuda-path`: a toolkit root.
    pub cuda_path_flag: Option<PathBuf>,
    /// `CUDACXX`: the nvcc executable itself.
    pub cudacxx: Option<PathBuf>,
    /// `CUDA_PATH`: a toolkit root.
    pub cuda_path: Option<PathBuf>,
    /// `CUDA_HOME`: a toolkit root.
    pub cuda_home: Option<PathBuf>,
    /// `PATH`, split.
    pub path: Vec<PathBuf>,
    pub os: Os,
    pub system: Vec<SystemLocation>,
}

impl DiscoveryInputs {
    /// No inputs, default system locations for `os`.
    pub fn new(os: Os) -> Self {
        Self {
            cuda_path_flag: None,
            cudacxx: None,
            cuda_path: None,
            cuda_home: None,
            path: Vec::new(),
            os,
            system: SystemLocation::defaults(os),
        }
    }
}

/// Where a candidate came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NvccSource {
    CudaPathFlag,
    Cudacxx,
    CudaPath,
    CudaHome,
    Path(PathBuf),
    System(PathBuf),
}

impl fmt::Display for NvccSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NvccSource::CudaPathFlag => f.write_str("--cuda-path"),
            NvccSource::Cudacxx => f.write_str("CUDACXX"),
            NvccSource::CudaPath => f.write_str("CUDA_PATH"),
            NvccSource::CudaHome => f.write_str("CUDA_HOME"),
            NvccSource::Path(dir) => write!(f, "PATH entry {}", dir.display()),
            NvccSource::System(root) => write!(f, "install location {}", root.display()),
        }
    }
}

/// One nvcc found; `sources` lists every input that led to it, highest priority first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NvccCandidate {
    /// The path as first found (may be a symlink such as `/usr/local/cuda/bin/nvcc`).
    pub nvcc: PathBuf,
    pub canonical: PathBuf,
    /// The toolkit root (`<root>/bin/nvcc`).
    pub root: PathBuf,
    pub sources: Vec<NvccSource>,
}

/// An explicit input that points at no nvcc: the user should hear about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name} is {} but there is no {expected}: fix or remove it", given.display())]
pub struct UnresolvedInput {
    pub source_name: String,
    pub given: PathBuf,
    pub expected: String,
}

/// `nvcc`, or `nvcc.exe` on Windows.
pub fn nvcc_name(os: Os) -> String {
    format!("nvcc{}", os.exe_suffix())
}

fn explicit(inputs: &DiscoveryInputs) -> Vec<(NvccSource, PathBuf, PathBuf)> {
    let exe = nvcc_name(inputs.os);
    let root = |p: &Path| p.join("bin").join(&exe);
    let mut v = Vec::new();
    if let Some(p) = &inputs.cuda_path_flag {
        v.push((NvccSource::CudaPathFlag, p.clone(), root(p)));
    }
    if let Some(p) = &inputs.cudacxx {
        v.push((NvccSource::Cudacxx, p.clone(), p.clone()));
    }
    if let Some(p) = &inputs.cuda_path {
        v.push((NvccSource::CudaPath, p.clone(), root(p)));
    }
    if let Some(p) = &inputs.cuda_home {
        v.push((NvccSource::CudaHome, p.clone(), root(p)));
    }
    v
}

/// Every nvcc reachable from `inputs`, in priority order, de-duplicated by canonical path.
pub fn discover_nvcc(inputs: &DiscoveryInputs) -> Vec<NvccCandidate> {
    let exe = &nvcc_name(inputs.os);
    let mut probes: Vec<(NvccSource, PathBuf)> = explicit(inputs)
        .into_iter()
        .map(|(s, _, nvcc)| (s, nvcc))
        .collect();
    probes.extend(
        inputs
            .path
            .iter()
            .map(|d| (NvccSource::Path(d.clone()), d.join(exe))),
    );
    for loc in &inputs.system {
        probes.extend(
            loc.roots()
                .into_iter()
                .map(|r| (NvccSource::System(r.clone()), r.join("bin").join(exe))),
        );
    }
    let mut out: Vec<NvccCandidate> = Vec::new();
    for (source, nvcc) in probes {
        if !nvcc.is_file() {
            continue;
        }
        let Ok(canonical) = nvcc.canonicalize() else {
            continue;
        };
        if let Some(c) = out.iter_mut().find(|c| c.canonical == canonical) {
            c.sources.push(source);
            continue;
        }
        let root = nvcc
            .parent()
            .and_then(Path::parent)
            .map(Path::to_path_buf)
            .unwrap_or_default();
        out.push(NvccCandidate {
            nvcc,
            canonical,
            root,
            sources: vec![source],
        });
    }
    out
}

/// Explicit inputs (`--cuda-path`, `CUDACXX`, `CUDA_PATH`, `CUDA_HOME`) that lead to no nvcc.
pub fn unresolved_inputs(inputs: &DiscoveryInputs) -> Vec<UnresolvedInput> {
    explicit(inputs)
        .into_iter()
        .filter(|(_, _, nvcc)| !nvcc.is_file())
        .map(|(source, given, nvcc)| UnresolvedInput {
            source_name: source.to_string(),
            expected: if given == nvcc {
                "such file".into()
            } else {
                format!("{}", nvcc.display())
            },
            given,
        })
        .collect()
}

#[cfg(test)]
#[path = "cuda_tests.rs"]
mod tests;
