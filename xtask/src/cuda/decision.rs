//! Host compiler policy: in range, switch MSVC toolset, or waive nvcc's version check.

use std::fmt;

use super::support::{ReleaseMatch, ReleaseSupport, SupportTable};
use crate::platform::compiler::{HostCompiler, HostCompilerKind};
use crate::platform::msvc::MsvcToolset;
use crate::versions::cuda::CudaVersion;

/// nvcc's flag that skips the host compiler version check (only that check).
pub const ALLOW_UNSUPPORTED_COMPILER: &str = "-allow-unsupported-compiler";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostDecision {
    /// Supported: inject nothing.
    InRange,
    /// MSVC out of range, but this installed toolset is in range: `vcvars64.bat -vcvars_ver=14.44`.
    UseToolset {
        toolset: MsvcToolset,
        reason: String,
    },
    /// Out of range and nothing better installed: pass `flag` and record `reason` in the manifest.
    Waiver { flag: &'static str, reason: String },
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostCompilerError {
    #[error("{host} is older than CUDA {cuda} supports ({range}); -allow-unsupported-compiler would not help (CUDA's headers need the newer compiler): install {need} and build from its environment")]
    MsvcTooOld {
        host: String,
        cuda: CudaVersion,
        range: String,
        need: String,
    },
    #[error("{host}: CUDA has no macOS host support; build on Linux or Windows")]
    AppleClang { host: String },
    #[error("CUDA {cuda} is older than the nvcc support table ({table}), so its host compiler limits are unknown here; use CUDA {oldest} or newer")]
    CudaTooOld {
        cuda: CudaVersion,
        table: String,
        oldest: CudaVersion,
    },
}

/// A flag for nvcc with the reason it is there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaFlag {
    pub flag: String,
    pub reason: String,
}

impl fmt::Display for CudaFlag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.flag, self.reason)
    }
}

fn vs_range(min: u32, max: u32) -> String {
    let vs = |m: u32| {
        MsvcToolset {
            minor: m.saturating_sub(1900),
            build: None,
        }
        .visual_studio()
        .trim_start_matches("VS ")
    };
    format!("_MSC_VER {min}..{max}, VS {}-{}", vs(min), vs(max))
}

/// Where the host compiler's version lies against one release's limits.
enum Fit {
    In,
    TooNew { limit: String },
    TooOld { limit: String },
}

fn fit(host: &HostCompiler, r: &ReleaseSupport) -> Fit {
    let v = &host.version;
    match host.kind {
        HostCompilerKind::Gcc if v.major > r.max_gcc => Fit::TooNew {
            limit: format!("gcc <= {}", r.max_gcc),
        },
        HostCompilerKind::Clang if v.major > r.max_clang => Fit::TooNew {
            limit: format!("clang <= {}", r.max_clang),
        },
        HostCompilerKind::Msvc => {
            let m = host.msc_ver().unwrap_or(0);
            let limit = vs_range(r.msvc.min, r.msvc.max);
            if m > r.msvc.max {
                Fit::TooNew { limit }
            } else if m < r.msvc.min {
                Fit::TooOld { limit }
            } else {
                Fit::In
            }
        }
        _ => Fit::In,
    }
}

/// Decides how to build with `host` under `cuda`; `other_toolsets` are installed MSVC toolsets.
pub fn host_compiler_decision(
    cuda: &CudaVersion,
    host: &HostCompiler,
    other_toolsets: &[MsvcToolset],
) -> Result<HostDecision, HostCompilerError> {
    host_compiler_decision_in(SupportTable::builtin(), cuda, host, other_toolsets)
}

pub fn host_compiler_decision_in(
    table: &SupportTable,
    cuda: &CudaVersion,
    host: &HostCompiler,
    other_toolsets: &[MsvcToolset],
) -> Result<HostDecision, HostCompilerError> {
    let cuda = cuda.release();
    if host.kind == HostCompilerKind::AppleClang {
        return Err(HostCompilerError::AppleClang {
            host: host.to_string(),
        });
    }
    let (row, untested) = match table.lookup(&cuda) {
        ReleaseMatch::Exact(r) => (r, ""),
        ReleaseMatch::Untested(r) => (r, " (limits of the newest known release; untested)"),
        ReleaseMatch::OlderThanTable => {
            return Err(HostCompilerError::CudaTooOld {
                cuda,
                table: table.range(),
                oldest: table.oldest().cuda,
            })
        }
    };
    let (limit, too_old) = match fit(host, row) {
        Fit::In => return Ok(HostDecision::InRange),
        Fit::TooNew { limit } => (limit, false),
        Fit::TooOld { limit } => (limit, true),
    };
    let in_range = |t: &&MsvcToolset| row.msvc.contains(t.msc_ver());
    if let Some(t) = other_toolsets.iter().filter(in_range).max() {
        let reason = format!(
            "{host} is outside what CUDA {cuda} supports ({limit}){untested}; toolset {t} ({}, _MSC_VER {}) is installed: \
             build from `vcvars64.bat -vcvars_ver={}`",
            t.visual_studio(),
            t.msc_ver(),
            t.vcvars_ver()
        );
        return Ok(HostDecision::UseToolset {
            toolset: *t,
            reason,
        });
    }
    if too_old {
        let oldest = MsvcToolset {
            minor: row.msvc.min.saturating_sub(1900),
            build: None,
        };
        let need = format!(
            "{} or newer (MSVC toolset {} or later)",
            oldest.visual_studio(),
            oldest.vcvars_ver()
        );
        return Err(HostCompilerError::MsvcTooOld {
            host: host.to_string(),
            cuda,
            range: limit,
            need,
        });
    }
    let newer = table
        .releases
        .iter()
        .find(|r| r.cuda > cuda && matches!(fit(host, r), Fit::In));
    let better = match (host.kind, newer) {
        (HostCompilerKind::Msvc, Some(r)) => {
            format!("install an in-range MSVC toolset (e.g. VS 2022's v143 14.44, which VS 2026 can also install), or use CUDA {}", r.cuda)
        }
        (HostCompilerKind::Msvc, None) => "install an in-range MSVC toolset (e.g. VS 2022's v143 14.44, which VS 2026 can also install)".into(),
        (_, Some(r)) => format!("use a host compiler within {limit} (CUDAHOSTCXX / -ccbin), or CUDA {}", r.cuda),
        (_, None) => format!("use a host compiler within {limit} (CUDAHOSTCXX / -ccbin)"),
    };
    let reason = format!(
        "{host} is newer than CUDA {cuda} supports ({limit}){untested}; no in-range toolchain found, so passing \
         {ALLOW_UNSUPPORTED_COMPILER}: it skips only nvcc's version check, real header breakage still fails. Better: {better}"
    );
    Ok(HostDecision::Waiver {
        flag: ALLOW_UNSUPPORTED_COMPILER,
        reason,
    })
}

/// Flags nvcc needs for this host compiler and CUDA, beyond the architectures.
pub fn extra_cuda_flags(cuda: &CudaVersion, host: &HostCompiler) -> Vec<CudaFlag> {
    let mut flags = Vec::new();
    if host.kind == HostCompilerKind::Msvc && cuda.major >= 13 {
        flags.push(CudaFlag {
            flag: "-Xcompiler=/Zc:preprocessor".into(),
            reason: format!(
                "CUDA {} CCCL headers need MSVC's standard-conforming preprocessor",
                cuda.release()
            ),
        });
    }
    flags
}

#[cfg(test)]
#[path = "decision_tests.rs"]
mod tests;
