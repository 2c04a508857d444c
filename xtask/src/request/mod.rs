//! What one `wheel`/`build` asks for, as the stages below the command line take it.
//!
//! The command line (`commands::BuildArgs`) converts into this once; `prepare`,
//! the build pipeline, `reproduce` and `release` take a [`BuildRequest`] and
//! never see clap.

pub mod arch;
pub mod launcher;
pub mod substituter;

use std::path::PathBuf;

use crate::cuda::CudaVersion;
use crate::tags::PyVersion;
use crate::versions::Version;
pub use arch::{Accelerator, ArchChoice, CpuBaseline};
pub use launcher::LauncherKind;

/// The target a build makes: `--target` when given; else, where `--arch` names a GPU that
/// comes only in aarch64 machines (gb10, thor, gh200, gb200, gb300) and the host is Linux,
/// linux-aarch64; else (also for `--arch auto`) the host's own.
pub fn default_target(
    explicit: Option<crate::platform::Target>,
    arch: &ArchChoice,
    host: crate::platform::Target,
) -> crate::platform::Target {
    use crate::platform::{Os, Target};
    match (explicit, arch.given()) {
        (Some(t), _) => t,
        (None, Some(Accelerator::Cuda(r))) if host.os == Os::Linux => match r.implied_arch() {
            Some(arch) => Target { arch, ..host },
            None => host,
        },
        (None, _) => host,
    }
}

/// `--version`: a release by number, `latest` (the newest on the package index), or an
/// upstream llama.cpp build by its tag (`b11541`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReleaseChoice {
    Latest,
    Exact(Version),
    /// `bN`: llama.cpp's release tag of build N, from upstream's own tarball.
    Build(u32),
}

impl std::str::FromStr for ReleaseChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "latest" {
            return Ok(ReleaseChoice::Latest);
        }
        if let Some(n) = s
            .strip_prefix('b')
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        {
            return n
                .parse()
                .ok()
                .filter(|n| *n > 0)
                .map(ReleaseChoice::Build)
                .ok_or_else(|| format!("`{s}` is not a llama.cpp build tag: expected b<build number>, such as b11541"));
        }
        s.parse()
            .map(ReleaseChoice::Exact)
            .map_err(|e: crate::versions::BadVersion| {
                format!("{e}, `latest`, or a llama.cpp build tag such as b11541")
            })
    }
}

impl std::fmt::Display for ReleaseChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReleaseChoice::Latest => f.write_str("latest"),
            ReleaseChoice::Exact(v) => v.fmt(f),
            ReleaseChoice::Build(n) => write!(f, "b{n}"),
        }
    }
}

/// `--llama-cpp`: another llama.cpp tree for the bindings, in place of the one their
/// release vendors: upstream's build by its tag (`b11541`), or a local tree or tarball.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LlamaCppChoice {
    Build(u32),
    Path(PathBuf),
}

impl std::str::FromStr for LlamaCppChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.parse::<ReleaseChoice>() {
            Ok(ReleaseChoice::Build(n)) => Ok(LlamaCppChoice::Build(n)),
            _ if s.starts_with('b') && s[1..].bytes().all(|b| b.is_ascii_digit()) => Err(format!(
                "`{s}` is not a llama.cpp build tag: expected b<build number>, such as b11541"
            )),
            _ if s.is_empty() => Err(
                "expected a llama.cpp build tag (b11541), or a llama.cpp tree or tarball".into(),
            ),
            _ => Ok(LlamaCppChoice::Path(PathBuf::from(s))),
        }
    }
}

impl std::fmt::Display for LlamaCppChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LlamaCppChoice::Build(n) => write!(f, "b{n}"),
            LlamaCppChoice::Path(p) => p.display().fmt(f),
        }
    }
}

/// A source's pin as a manifest recorded it: its URL, sha256 and date (SOURCE_DATE_EPOCH).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedSource {
    pub url: String,
    pub sha256: crate::digest::Sha256Hex,
    pub date: u64,
    /// Where the manifest says the hash came from (`source.hash_from`).
    pub hash_from: String,
    /// The llama.cpp commit (40 hex digits) and build number the manifest says the source
    /// vendors: used where the source's commit is that one, not asked again.
    pub vendored: Option<(String, u32)>,
}

/// A build option's value that came from a default, not the command line: where from
/// (`LLAMA_FORGE_ARCH`, a config file's path). In the plan, not in its hash.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DefaultFrom {
    /// `--arch`.
    pub option: String,
    pub value: String,
    pub from: String,
}

/// One build's options, typed (the `wheel`/`build` flags are spelled beside each field).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildRequest {
    /// The recipe's name (a file in recipes/).
    pub recipe: String,
    /// `--version`: the release to build; the recipe's newest pin when `None`.
    pub release: Option<ReleaseChoice>,
    /// The source a manifest recorded (`reproduce`), for a release the recipe does not pin:
    /// its URL, sha256 and date, used instead of asking the package index.
    pub recorded_source: Option<RecordedSource>,
    /// `--target`: the platform the artifact is for (the host's unless given).
    pub target: crate::platform::Target,
    /// `--arch`: CPU, the GPUs to build for, or `auto` (this machine's: resolved by
    /// `pipeline::prepare`; `release` and `reproduce` always name theirs).
    pub accelerator: ArchChoice,
    /// `--ptx`: also embed PTX for the highest arch.
    pub ptx: bool,
    /// `--cuda`: the CUDA release to use (binding).
    pub cuda: Option<CudaVersion>,
    /// `--cuda-path`: the CUDA toolkit root to use (binding).
    pub cuda_path: Option<PathBuf>,
    /// `--bundle-cuda-runtime`: copy the CUDA runtime into the wheel.
    pub bundle_cuda_runtime: bool,
    /// `--py`: the CPythons to build a wheel each for, as given (repeats are dropped when
    /// planning); empty: one `py3` wheel for every Python (archives take none).
    pub pythons: Vec<PyVersion>,
    /// `--cpu-baseline`: the oldest x86-64 CPU the code runs on.
    pub cpu_baseline: CpuBaseline,
    /// `--source`: a local source archive or directory instead of the pinned download.
    pub source: Option<PathBuf>,
    /// `--llama-cpp`: another llama.cpp tree in place of the vendored one.
    pub llama_cpp: Option<LlamaCppChoice>,
    /// The `--llama-cpp` tarball a manifest recorded (`reproduce`): its URL, sha256 and
    /// where the hash came from, checked instead of trusting a new download.
    pub recorded_llama_cpp: Option<RecordedSource>,
    /// `--dist`: where artifacts go (`dist/` in the checkout when `None`).
    pub dist: Option<PathBuf>,
    /// `--launcher`: compile through this cache.
    pub launcher: Option<LauncherKind>,
    /// `--force`: build even where dist/ already holds this plan's artifacts unchanged.
    pub force: bool,
    /// `--jobs`: compile jobs at once (Ninja's own default when `None`).
    pub jobs: Option<std::num::NonZeroU16>,
    /// `--define NAME=VALUE`: CMake defines the plan does not set, recorded in it.
    pub defines: Vec<UserDefine>,
    /// `--host-cc`: the C++ host compiler.
    pub host_cc: Option<PathBuf>,
    /// The options above that came from a default, and where from.
    pub defaults: Vec<DefaultFrom>,
    /// `--cache-from`: where this plan's artifacts may already be, asked in order before
    /// building (none with `--no-cache-from`).
    pub substituters: Vec<substituter::Substituter>,
}

impl BuildRequest {
    /// Why the target is not the host's, where `--arch` chose it: the plan prints it.
    pub fn target_note(&self, host: crate::platform::Target) -> Option<String> {
        let Some(Accelerator::Cuda(r)) = self.accelerator.given() else {
            return None;
        };
        let gpus = r.gpus_not_on(host.arch);
        let (asked, g) = gpus.first()?;
        (self.target.arch != host.arch).then(|| {
            // No other --target is offered: an artifact for this host's arch would not
            // run in that machine (target_conflict refuses it).
            format!(
                "--arch {asked}: {} an {} machine, so the artifact is for {} (cross-built on this {} host, to be copied there)",
                every_machine(asked, *g),
                self.target.arch,
                self.target,
                host.arch
            )
        })
    }

    /// Why the GPUs named cannot be in a machine of the target's arch
    /// (`--arch gb10 --target x86_64-unknown-linux-gnu`), with what to do.
    pub fn target_conflict(&self) -> Option<String> {
        let Some(Accelerator::Cuda(r)) = self.accelerator.given() else {
            return None;
        };
        let gpus = r.gpus_not_on(self.target.arch);
        let (asked, g) = gpus.first()?;
        let arch = g.only_on()?;
        Some(format!(
            "--arch {asked} with --target {}: {} an {arch} machine, and no {} artifact runs there; leave --target out (or give --target {}) to build for it",
            self.target,
            every_machine(asked, *g),
            self.target.arch,
            crate::platform::Target { arch, ..crate::platform::Target::LINUX_X86_64 }
        ))
    }
}

/// `every DGX Spark (GB10) is` for `--arch gb10`; `every GPU of compute capability 12.1
/// (DGX Spark (GB10)) is in` for `--arch 121`.
fn every_machine(asked: &str, g: crate::cuda::Gpu) -> String {
    if asked == g.to_string() {
        format!("every {} is", g.machine())
    } else {
        let cc = g.arch();
        format!(
            "every GPU of compute capability {}.{} ({}) is in",
            cc.major(),
            cc.minor(),
            g.machine()
        )
    }
}

/// `--define NAME=VALUE`: one CMake define (`GGML_CUDA_FA_ALL_QUANTS=ON`). NAME as CMake
/// spells a variable (letters, digits, `_`, not starting with a digit); VALUE on one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserDefine {
    pub name: String,
    pub value: String,
}

impl std::str::FromStr for UserDefine {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (name, value) = s.split_once('=').ok_or_else(|| {
            format!("`{s}` is not NAME=VALUE: give --define GGML_CUDA_FA_ALL_QUANTS=ON")
        })?;
        let ok = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ok {
            return Err(format!(
                "`{name}` is not a CMake variable name: letters, digits and _, not starting with a digit (a type, NAME:BOOL, is not taken)"
            ));
        }
        if value.chars().any(char::is_control) {
            return Err(format!("the value of {name} holds a control character"));
        }
        Ok(UserDefine {
            name: name.to_string(),
            value: value.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::{Arch, Target};

    fn cuda(arch: &str) -> ArchChoice {
        arch.parse().unwrap()
    }

    #[test]
    fn spark_grace_and_thor_imply_aarch64_and_the_rest_keep_the_host() {
        let host = Target::LINUX_X86_64;
        for (arch, want) in [
            ("gb10", Target::LINUX_AARCH64),
            ("dgx-spark", Target::LINUX_AARCH64),
            ("thor", Target::LINUX_AARCH64),
            ("gh200", Target::LINUX_AARCH64),
            ("gb200", Target::LINUX_AARCH64),
            ("120,gb10", Target::LINUX_AARCH64),
            ("gb300", Target::LINUX_AARCH64),
            ("b200", host),
            ("h100", host),
            // Every 12.1, 11.0 and 8.7 GPU is in an aarch64 machine; 10.0 and 9.0 are not.
            ("121", Target::LINUX_AARCH64),
            ("121a", Target::LINUX_AARCH64),
            ("120,121", Target::LINUX_AARCH64),
            ("110", Target::LINUX_AARCH64),
            ("87", Target::LINUX_AARCH64),
            ("100", host),
            ("90", host),
            ("120", host),
            ("cpu", host),
            ("auto", host),
        ] {
            assert_eq!(default_target(None, &cuda(arch), host), want, "{arch}");
        }
        // On an aarch64 host, nothing changes; on Windows, the host's target stays (and is refused later).
        assert_eq!(
            default_target(None, &cuda("gb10"), Target::LINUX_AARCH64),
            Target::LINUX_AARCH64
        );
        assert_eq!(
            default_target(None, &cuda("gb10"), Target::WINDOWS_MSVC),
            Target::WINDOWS_MSVC
        );
        // --target wins.
        assert_eq!(default_target(Some(host), &cuda("gb10"), host), host);
    }

    #[test]
    fn gb10_for_x86_is_refused_and_the_choice_is_explained() {
        let req = |arch: &str, target| BuildRequest {
            recipe: "llama-cpp-python".into(),
            release: None,
            recorded_source: None,
            target,
            accelerator: cuda(arch),
            ptx: false,
            cuda: None,
            cuda_path: None,
            bundle_cuda_runtime: false,
            pythons: vec![],
            cpu_baseline: CpuBaseline::V2,
            source: None,
            llama_cpp: None,
            force: false,
            recorded_llama_cpp: None,
            dist: None,
            launcher: None,
            jobs: None,
            defines: Vec::new(),
            host_cc: None,
            defaults: Vec::new(),
            substituters: Vec::new(),
        };
        let x86 = Target::LINUX_X86_64;
        let e = req("gb10", x86).target_conflict().unwrap();
        assert_eq!(e, "--arch gb10 with --target x86_64-unknown-linux-gnu: every DGX Spark (GB10) is an aarch64 machine, and no x86_64 artifact runs there; leave --target out (or give --target aarch64-unknown-linux-gnu) to build for it");
        assert!(req("b200", x86).target_conflict().is_none());
        assert!(req("100", x86).target_conflict().is_none());
        let e = req("121", x86).target_conflict().unwrap();
        assert!(
            e.starts_with("--arch 121 with --target x86_64-unknown-linux-gnu: every GPU of compute capability 12.1 (DGX Spark (GB10)) is in an aarch64 machine"),
            "{e}"
        );
        let note = req("121", Target::LINUX_AARCH64).target_note(x86).unwrap();
        assert!(
            note.contains("(cross-built on this x86_64 host, to be copied there)")
                && !note.contains("--target"),
            "offers no choice it refuses: {note}"
        );
        assert!(req("gb10", Target::LINUX_AARCH64)
            .target_conflict()
            .is_none());
        let note = req("gb10", Target::LINUX_AARCH64).target_note(x86).unwrap();
        assert!(
            note.contains("DGX Spark (GB10) is an aarch64 machine")
                && note.contains("aarch64-unknown-linux-gnu"),
            "{note}"
        );
        assert!(req("gb10", Target::LINUX_AARCH64)
            .target_note(Target::LINUX_AARCH64)
            .is_none());
        assert!(req("h100", x86).target_note(x86).is_none());
        let _ = Arch::X86_64;
    }
}
