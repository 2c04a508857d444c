//! Hermetic CUDA: a CUDA 13.x toolkit assembled from NVIDIA's wheels on the Python
//! package index, so a CUDA build needs no system install and no GPU.
//!
//! [`toolkit_file`] says (purely) whether a release can come from the index at all;
//! [`CudaSpec::load`] reads its pins from `toolchains/cuda-<release>.toml`;
//! [`install`] fetches, merges and lays out the toolkit under `<cache>/cuda/<nvcc version>/`;
//! [`install_aarch64`] the one for a Linux aarch64 (sbsa) target cross-built on x86-64
//! ([`CudaSpec::for_aarch64`]: x86-64 programs, aarch64 runtime and cuBLAS) under
//! `<cache>/cuda/<nvcc version>-aarch64/`. On an aarch64 host (a DGX Spark building for
//! itself) [`install`] assembles the whole toolkit from the aarch64 wheels
//! ([`CudaSpec::for_aarch64_host`]) under `<cache>/cuda/<nvcc version>/`.

#[cfg(test)]
mod aarch64_host_tests;
pub mod implib;
mod install;
mod stub;

use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::digest::Sha256Hex;
use crate::versions::Version;

pub use install::{
    install, install_aarch64, install_aarch64_flags, install_aarch64_with, install_windows,
    install_with, HermeticCuda,
};

/// Wheels no toolkit can do without: compiler driver and its parts, runtime, CCCL, cuobjdump.
pub const REQUIRED: &[&str] = &[
    "nvidia-cuda-nvcc",
    "nvidia-nvvm",
    "nvidia-cuda-crt",
    "nvidia-cuda-runtime",
    "nvidia-cuda-cccl",
    "nvidia-cuda-cuobjdump",
];

/// cuobjdump wheels start at 13.2: a newer one is pinned, and reads older output.
const MAY_BE_NEWER: &str = "nvidia-cuda-cuobjdump";

/// Wheels numbered on their own, not by the CUDA release they ship with: cuBLAS
/// (13.10.0.20 with CUDA 13.5) and CCCL (13.3.5.0.6 with CUDA 13.5). Only their
/// major must be the release's; the pin file says which cuda-toolkit release pairs them.
const OWN_NUMBERING: &[&str] = &["nvidia-cublas", "nvidia-cuda-cccl"];

/// Why a CUDA release cannot be provisioned from the package index.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NotFromIndex {
    #[error("CUDA `{0}`: name a release as major.minor, such as 13.0 or 12.9")]
    NotARelease(String),
    #[error(
        "CUDA {release} cannot be assembled from the Python package index: its wheels \
         (nvidia-cuda-nvcc-cu12) carry only ptxas and libnvvm, no nvcc driver.{blackwell} \
         Install the CUDA {release} toolkit on the system (https://developer.nvidia.com/cuda-toolkit-archive, \
         or the `cuda-toolkit-{dashed}` package from NVIDIA's apt/dnf repository, or an nvidia/cuda:{release}.x-devel \
         container) and build with it (CUDAToolkit_ROOT=/usr/local/cuda-{release}); or ask for CUDA {index}, \
         which are provisioned from the index"
    )]
    SystemOnly {
        release: String,
        dashed: String,
        blackwell: &'static str,
        /// The pinned releases, `13.0, 13.1 or 13.2`.
        index: String,
    },
    #[error("CUDA {0} is too old: Blackwell (sm_120) needs CUDA 12.8 or later, and only 13.x comes from the package index")]
    TooOld(String),
    #[error(
        "CUDA {release} has no pinned wheel set: pinned are {pinned}. Ask for one of them, or install CUDA {release} \
         from NVIDIA: an installed toolkit is used as it is, and a build's --cuda {release} picks it (docs/cuda.md \
         says how a release gets pinned)"
    )]
    NotPinned { release: String, pinned: String },
}

/// The components of a version (`13.0.88` -> [13, 0, 88]).
fn parts(v: &Version) -> Vec<u64> {
    v.parts().to_vec()
}

/// The pin file (under `toolchains/`, `cuda-<release>.toml`) for CUDA `release` when it
/// is one of [`crate::plan::cuda::PINNED_RELEASES`], or why it cannot be assembled from
/// the package index. Pure: looks at nothing but the release asked for.
pub fn toolkit_file(release: &Version) -> Result<String, NotFromIndex> {
    let p = parts(release);
    let text = release.to_string();
    let [major, minor] = p[..] else {
        return Err(NotFromIndex::NotARelease(text));
    };
    match major {
        ..=11 => Err(NotFromIndex::TooOld(text)),
        12 => Err(NotFromIndex::SystemOnly {
            dashed: format!("{major}-{minor}"),
            blackwell: if minor < 8 {
                " It also cannot build for Blackwell (sm_120 needs 12.8 or later)."
            } else {
                ""
            },
            index: crate::plan::cuda::pinned_list("or"),
            release: text,
        }),
        _ => match crate::plan::cuda::PINNED_RELEASES.contains(&text.as_str()) {
            true => Ok(format!("cuda-{text}.toml")),
            false => Err(NotFromIndex::NotPinned {
                release: text,
                pinned: crate::plan::cuda::pinned_list("and"),
            }),
        },
    }
}

/// One pinned wheel (Linux x86-64; or, as `[[aarch64_wheel]]`/`[[windows_wheel]]`,
/// Linux aarch64 or Windows x86-64: the platform is in the wheel's file name).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CudaWheel {
    pub name: String,
    pub version: Version,
    pub url: String,
    pub sha256: Sha256Hex,
    /// Download size in bytes.
    pub size: u64,
}

/// `toolchains/cuda-<release>.toml`: the wheels that make one CUDA release.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CudaSpec {
    /// `13.0`
    pub release: Version,
    /// What `nvcc --version` reports (`13.0.88`); names the install directory.
    pub nvcc_version: Version,
    #[serde(rename = "wheel")]
    pub wheels: Vec<CudaWheel>,
    /// The same release's Windows x86-64 wheels (`win_amd64`), where pinned:
    /// [`CudaSpec::for_windows`].
    #[serde(
        rename = "windows_wheel",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    pub windows_wheels: Vec<CudaWheel>,
    /// The same release's Linux aarch64 (sbsa) wheels, where pinned: the manylinux
    /// aarch64 wheels of the `[[wheel]]`s at the same versions. A build cross-compiled
    /// on x86-64 links their target libraries (the runtime, cuBLAS) with the x86-64
    /// programs ([`CudaSpec::for_aarch64`]); a build on an aarch64 host takes them all
    /// ([`CudaSpec::for_aarch64_host`]).
    #[serde(
        rename = "aarch64_wheel",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    pub aarch64_wheels: Vec<CudaWheel>,
}

/// The wheels a toolkit for an aarch64 target cross-built on x86-64 must take in their
/// aarch64 build: the libraries the build links.
pub const AARCH64_REQUIRED: &[&str] = &["nvidia-cuda-runtime"];

/// The wheels a cross build for aarch64 takes in their aarch64 build ([`CudaSpec::for_aarch64`]):
/// the target libraries. The programs (nvcc, nvvm, cuobjdump) run on the x86-64 build
/// machine, and the header-only crt and CCCL wheels hold the same files on both.
pub const AARCH64_TARGET_LIBRARIES: &[&str] = &["nvidia-cuda-runtime", "nvidia-cublas"];

impl CudaSpec {
    /// Reads the pins of CUDA `release` from `toolchains` (the repo's `toolchains/`).
    pub fn load(toolchains: &Path, release: &Version) -> Result<CudaSpec> {
        let path = toolchains.join(toolkit_file(release)?);
        let text = fs_err::read_to_string(&path)
            .with_context(|| format!("cannot read CUDA pins {}", path.display()))?;
        let spec = CudaSpec::parse(&text, &path)?;
        if &spec.release != release {
            bail!(
                "{} says release = \"{}\", but it is the pin file of CUDA {release}: fix `release`",
                path.display(),
                spec.release
            );
        }
        Ok(spec)
    }

    /// Parses and checks a pin file's text (`path` is for messages).
    pub fn parse(text: &str, path: &Path) -> Result<CudaSpec> {
        let spec: CudaSpec = toml::from_str(text).map_err(|e| {
            anyhow::anyhow!(
                "malformed CUDA pins {}: {}",
                path.display(),
                e.to_string().trim_end()
            )
        })?;
        spec.validate()
            .map_err(|e| anyhow::anyhow!("CUDA pins {}: {e}", path.display()))?;
        Ok(spec)
    }

    fn validate(&self) -> Result<(), PinsInvalid> {
        toolkit_file(&self.release).map_err(PinsInvalid::Release)?;
        let rel = parts(&self.release);
        let nvcc = parts(&self.nvcc_version);
        if nvcc.len() != 3 || nvcc[..2] != rel[..] {
            return Err(PinsInvalid::NvccVersion {
                nvcc: self.nvcc_version.clone(),
                release: self.release.clone(),
            });
        }
        check_wheels(
            &self.wheels,
            &self.release,
            &self.nvcc_version,
            WheelPlatform::Linux,
        )?;
        if !self.windows_wheels.is_empty() {
            check_wheels(
                &self.windows_wheels,
                &self.release,
                &self.nvcc_version,
                WheelPlatform::Windows,
            )?;
        }
        if !self.aarch64_wheels.is_empty() {
            check_aarch64_wheels(
                &self.aarch64_wheels,
                &self.wheels,
                &self.release,
                &self.nvcc_version,
            )?;
        }
        Ok(())
    }

    /// The pins of the same release for Windows x86-64, as a spec of its own (its
    /// `wheels` are the `windows_wheel` entries).
    pub fn for_windows(&self) -> Result<CudaSpec> {
        if self.windows_wheels.is_empty() {
            bail!(
                "CUDA {} has no Windows wheels pinned (toolchains/cuda-{}.toml lists no [[windows_wheel]]): install the CUDA toolkit on Windows (CUDA_PATH)",
                self.release,
                self.release
            );
        }
        Ok(CudaSpec {
            wheels: self.windows_wheels.clone(),
            windows_wheels: vec![],
            aarch64_wheels: vec![],
            ..self.clone()
        })
    }

    /// The pins of a toolkit for a Linux aarch64 (sbsa) target built on Linux x86-64, as
    /// a spec of its own for [`install_aarch64`]: its `wheels` are the x86-64 ones (the
    /// programs, the headers), each of [`AARCH64_TARGET_LIBRARIES`] replaced by its
    /// `[[aarch64_wheel]]` (the runtime, cuBLAS: [`CudaWheel::is_aarch64`] tells them apart).
    /// A wheel left out before ([`CudaSpec::without`]) stays out.
    pub fn for_aarch64(&self) -> Result<CudaSpec> {
        self.no_aarch64_pins()?;
        let wheels = self
            .wheels
            .iter()
            .map(|w| {
                self.aarch64_wheels
                    .iter()
                    .find(|a| {
                        a.name == w.name && AARCH64_TARGET_LIBRARIES.contains(&a.name.as_str())
                    })
                    .unwrap_or(w)
                    .clone()
            })
            .collect();
        Ok(CudaSpec {
            wheels,
            windows_wheels: vec![],
            aarch64_wheels: vec![],
            ..self.clone()
        })
    }

    /// The pins of a toolkit for a build on a Linux aarch64 host (a DGX Spark building for
    /// itself), as a spec of its own for [`install`] there: every wheel its aarch64 build
    /// (nvcc and cicc are aarch64 programs there). A wheel left out before
    /// ([`CudaSpec::without`]) stays out.
    pub fn for_aarch64_host(&self) -> Result<CudaSpec> {
        self.no_aarch64_pins()?;
        let wheels = self
            .wheels
            .iter()
            .map(|w| match self.aarch64_wheels.iter().find(|a| a.name == w.name) {
                Some(a) => Ok(a.clone()),
                None => bail!(
                    "CUDA {} pins no aarch64 build of {} (toolchains/cuda-{}.toml has no [[aarch64_wheel]] `{}`): add it, or pass --cuda-path with this machine's CUDA install",
                    self.release,
                    w.name,
                    self.release,
                    w.name
                ),
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(CudaSpec {
            wheels,
            windows_wheels: vec![],
            aarch64_wheels: vec![],
            ..self.clone()
        })
    }

    /// The pins of the toolkit [`install`] assembles on a Linux host of `host`'s arch:
    /// the x86-64 `[[wheel]]`s, or on aarch64 [`CudaSpec::for_aarch64_host`]. Pins
    /// already made for one arch (their `wheels` all of it) are kept as they are.
    pub fn for_host(&self, host: crate::platform::Arch) -> Result<CudaSpec> {
        use crate::platform::Arch;
        let arm = self.wheels.iter().filter(|w| w.is_aarch64()).count();
        match host {
            Arch::X86_64 => {
                if let Some(w) = self.wheels.iter().find(|w| w.is_aarch64()) {
                    bail!(
                        "the pins given for an x86-64 CUDA {} toolkit hold the aarch64 wheel {} {}: a toolkit for an aarch64 target is assembled from the `[[aarch64_wheel]]`s apart; build again, and report it if it repeats",
                        self.release,
                        w.name,
                        w.version
                    );
                }
                Ok(CudaSpec {
                    aarch64_wheels: vec![],
                    windows_wheels: vec![],
                    ..self.clone()
                })
            }
            Arch::Aarch64 if arm == self.wheels.len() => Ok(self.clone()),
            Arch::Aarch64 if arm == 0 => self.for_aarch64_host(),
            Arch::Aarch64 => bail!(
                "the pins given for CUDA {} on an aarch64 host mix x86-64 and aarch64 wheels (those of a cross build for aarch64): an aarch64 host takes the release's `[[aarch64_wheel]]`s only; build again, and report it if it repeats",
                self.release
            ),
        }
    }

    /// Says what to do when the release pins no aarch64 wheels.
    fn no_aarch64_pins(&self) -> Result<()> {
        if self.aarch64_wheels.is_empty() {
            bail!(
                "CUDA {} has no aarch64 wheels pinned (toolchains/cuda-{}.toml lists no [[aarch64_wheel]]): \
                 add the manylinux aarch64 wheels of {} there, or install the CUDA toolkit with its sbsa cross \
                 target (targets/sbsa-linux) and pass --cuda-path",
                self.release,
                self.release,
                AARCH64_REQUIRED.join(", ")
            );
        }
        Ok(())
    }

    /// The same pins without the wheels `names` (optional libraries such as
    /// `nvidia-cublas`, ~420 MB, for a build that does not link them).
    pub fn without(&self, names: &[&str]) -> Result<CudaSpec> {
        for n in names {
            if REQUIRED.contains(n) {
                bail!(
                    "wheel `{n}` cannot be left out of CUDA {}: every toolkit needs {}",
                    self.release,
                    REQUIRED.join(", ")
                );
            }
            if !self.wheels.iter().any(|w| w.name == *n) {
                let have: Vec<&str> = self.wheels.iter().map(|w| w.name.as_str()).collect();
                bail!(
                    "CUDA {} pins no wheel `{n}` to leave out: it pins {}",
                    self.release,
                    have.join(", ")
                );
            }
        }
        let wheels = self
            .wheels
            .iter()
            .filter(|w| !names.contains(&w.name.as_str()))
            .cloned()
            .collect();
        Ok(CudaSpec {
            wheels,
            ..self.clone()
        })
    }

    /// Bytes to download when nothing is cached.
    pub fn download_size(&self) -> u64 {
        self.wheels.iter().map(|w| w.size).sum()
    }
}

/// Which platform's wheels a list pins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WheelPlatform {
    Linux,
    Windows,
    LinuxAarch64,
}

/// The `[[aarch64_wheel]]`s: a whole toolkit as the `[[wheel]]`s are (each once, each
/// required one there, nvcc at `nvcc_version`), valid for Linux aarch64, each the
/// aarch64 build of a `[[wheel]]` at its version.
fn check_aarch64_wheels(
    wheels: &[CudaWheel],
    x86: &[CudaWheel],
    release: &Version,
    nvcc: &Version,
) -> Result<(), PinsInvalid> {
    let seen: std::collections::BTreeSet<&str> = wheels.iter().map(|w| w.name.as_str()).collect();
    if let Some(missing) = AARCH64_REQUIRED.iter().find(|n| !seen.contains(*n)) {
        return Err(PinsInvalid::Aarch64Missing {
            name: missing.to_string(),
        });
    }
    check_wheels(wheels, release, nvcc, WheelPlatform::LinuxAarch64)?;
    for w in wheels {
        match x86.iter().find(|x| x.name == w.name) {
            Some(x) if x.version == w.version => {}
            other => {
                return Err(PinsInvalid::Aarch64Version {
                    name: w.name.clone(),
                    version: w.version.clone(),
                    x86: other.map(|x| x.version.to_string()),
                })
            }
        }
    }
    Ok(())
}

/// Each wheel once, each required one there, each of the release, and the nvcc wheel of `nvcc`.
fn check_wheels(
    wheels: &[CudaWheel],
    release: &Version,
    nvcc: &Version,
    platform: WheelPlatform,
) -> Result<(), PinsInvalid> {
    let mut seen = std::collections::BTreeSet::new();
    for w in wheels {
        if !seen.insert(w.name.as_str()) {
            return Err(PinsInvalid::ListedTwice {
                name: w.name.clone(),
            });
        }
        w.validate(release, platform)?;
    }
    if let Some(missing) = REQUIRED.iter().find(|n| !seen.contains(*n)) {
        return Err(PinsInvalid::Missing {
            name: missing.to_string(),
            required: REQUIRED.join(", "),
        });
    }
    let nvcc_wheel = &wheels
        .iter()
        .find(|w| w.name == "nvidia-cuda-nvcc")
        .expect("required")
        .version;
    if nvcc_wheel != nvcc {
        return Err(PinsInvalid::NvccMismatch {
            wheel: nvcc_wheel.clone(),
            nvcc: nvcc.clone(),
        });
    }
    Ok(())
}

/// What is wrong in a CUDA pins file that parses (reported with its path).
#[derive(Debug, thiserror::Error)]
pub enum PinsInvalid {
    #[error("`release`: {0}")]
    Release(NotFromIndex),
    #[error("`nvcc_version` {nvcc} is not a {release} version such as {release}.88")]
    NvccVersion { nvcc: Version, release: Version },
    #[error("wheel `{name}` is listed twice")]
    ListedTwice { name: String },
    #[error(transparent)]
    Wheel(#[from] Box<WheelInvalid>),
    #[error("no [[wheel]] (or, for Windows, [[windows_wheel]]; for aarch64, [[aarch64_wheel]]) `{name}`: a toolkit needs all of {required}")]
    Missing { name: String, required: String },
    #[error(
        "nvidia-cuda-nvcc is pinned at {wheel} but `nvcc_version` says {nvcc}: make them agree"
    )]
    NvccMismatch { wheel: Version, nvcc: Version },
    #[error("[[aarch64_wheel]] `{name}` {version} is not the aarch64 build of a [[wheel]] (the x86-64 one is {}): pin the same version", x86.as_deref().unwrap_or("not pinned"))]
    Aarch64Version {
        name: String,
        version: Version,
        x86: Option<String>,
    },
    #[error("the [[aarch64_wheel]]s have no `{name}`: an aarch64 target links it")]
    Aarch64Missing { name: String },
}

/// What is wrong in one pinned wheel.
#[derive(Debug, thiserror::Error)]
pub enum WheelInvalid {
    #[error("wheel `{name}` {version} is not from CUDA {release}")]
    OtherRelease {
        name: String,
        version: Version,
        release: Version,
    },
    #[error("wheel `{name}` {version}: url {url} is not its {platform} wheel (expected an https URL of {stem}...{ending})")]
    Url {
        name: String,
        version: Version,
        url: String,
        stem: String,
        platform: &'static str,
        ending: &'static str,
    },
    #[error("wheel `{name}`: `size` must be its download size in bytes")]
    Size { name: String },
}

impl CudaWheel {
    /// Whether this is a Linux aarch64 wheel (`manylinux..._aarch64.whl`): the platform
    /// is in the file name.
    pub fn is_aarch64(&self) -> bool {
        let file = self.url.rsplit('/').next().unwrap_or("");
        file.ends_with(crate::cuda::runtime::wheel_arch_suffix(
            crate::platform::Arch::Aarch64,
        )) && file.contains("linux")
    }

    fn validate(
        &self,
        release: &Version,
        platform: WheelPlatform,
    ) -> Result<(), Box<WheelInvalid>> {
        let (r, v) = (parts(release), parts(&self.version));
        let same_release = v.len() >= 2 && v[..2] == r[..];
        let newer_ok = self.name == MAY_BE_NEWER && v[0] == r[0] && self.version >= *release;
        let own_ok = OWN_NUMBERING.contains(&self.name.as_str()) && v[0] == r[0];
        if !(same_release || newer_ok || own_ok) {
            return Err(Box::new(WheelInvalid::OtherRelease {
                name: self.name.clone(),
                version: self.version.clone(),
                release: release.clone(),
            }));
        }
        let file = self.url.rsplit('/').next().unwrap_or("");
        let stem = format!("{}-{}-", self.name.replace('-', "_"), self.version);
        let platform_ok = match platform {
            WheelPlatform::Linux => file.ends_with("_x86_64.whl") && file.contains("linux"),
            WheelPlatform::Windows => file.ends_with("-win_amd64.whl"),
            WheelPlatform::LinuxAarch64 => self.is_aarch64(),
        };
        if !self.url.starts_with("https://") || !file.starts_with(&stem) || !platform_ok {
            let (platform, ending) = match platform {
                WheelPlatform::Linux => ("Linux x86-64", "linux..._x86_64.whl"),
                WheelPlatform::Windows => ("Windows x86-64", "win_amd64.whl"),
                WheelPlatform::LinuxAarch64 => ("Linux aarch64", "linux..._aarch64.whl"),
            };
            return Err(Box::new(WheelInvalid::Url {
                name: self.name.clone(),
                version: self.version.clone(),
                url: self.url.clone(),
                stem,
                platform,
                ending,
            }));
        }
        if self.size == 0 {
            return Err(Box::new(WheelInvalid::Size {
                name: self.name.clone(),
            }));
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "spec_tests.rs"]
mod tests;
