//! Can this nvcc emit that arch? With the reason and the releases that can.

use std::fmt;

use super::arch::{ArchVariant, CudaArch};
use super::support::{ReleaseMatch, ReleaseSupport, SupportTable};
use crate::versions::cuda::CudaVersion;

/// A yes: known from the table, or assumed for a release the table does not list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmitSupport {
    Known,
    Untested(Untested),
}

/// Why a yes is only assumed; show it as a warning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Untested {
    /// Not in the table; the nearest older row says yes.
    NotInTable {
        cuda: CudaVersion,
        like: CudaVersion,
    },
    /// Older than the table, and the arch predates the table's oldest release.
    OlderThanTable {
        cuda: CudaVersion,
        oldest: CudaVersion,
        arch: CudaArch,
    },
    /// Newer than the table, and the table never heard of the arch.
    UnknownArch {
        cuda: CudaVersion,
        arch: CudaArch,
        range: String,
    },
}

impl fmt::Display for Untested {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Untested::NotInTable { cuda, like } => write!(
                f,
                "CUDA {cuda} is not in the nvcc support table: assuming it emits what CUDA {like} does (untested; add it to toolchains/nvcc-support.toml)"
            ),
            Untested::OlderThanTable { cuda, oldest, arch } => write!(
                f,
                "CUDA {cuda} is older than the nvcc support table (starts at {oldest}): {} predates {oldest}, assumed to work (untested)",
                arch.sm_name()
            ),
            Untested::UnknownArch { cuda, arch, range } => write!(
                f,
                "{} is not in the nvcc support table ({range}); CUDA {cuda} is newer, so nvcc itself will decide (untested)",
                arch.sm_name()
            ),
        }
    }
}

/// A no, saying why and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CannotEmit {
    NeedsNewer {
        cuda: CudaVersion,
        arch: CudaArch,
        first: CudaVersion,
        can: Vec<CudaVersion>,
        was: Option<CudaArch>,
    },
    Dropped {
        cuda: CudaVersion,
        arch: CudaArch,
        dropped_in: CudaVersion,
        oldest: CudaArch,
        last: CudaVersion,
    },
    Renamed {
        cuda: CudaVersion,
        arch: CudaArch,
        to: CudaArch,
        renamed_in: CudaVersion,
        last: CudaVersion,
    },
    Unknown {
        cuda: CudaVersion,
        arch: CudaArch,
        range: String,
        variants_exist_for: Vec<CudaArch>,
    },
}

fn list<T: fmt::Display>(items: &[T]) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

impl fmt::Display for CannotEmit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CannotEmit::NeedsNewer { cuda, arch, first, can, was } => {
                write!(f, "CUDA {cuda} cannot emit {}: needs CUDA >= {first} ({} can)", arch.sm_name(), list(can))?;
                match was {
                    Some(w) => write!(f, "; CUDA {cuda} calls this GPU {}", w.sm_name()),
                    None => Ok(()),
                }
            }
            CannotEmit::Dropped { cuda, arch, dropped_in, oldest, last } => {
                if cuda.release() != *dropped_in {
                    write!(f, "CUDA {cuda} cannot emit {}: it ", arch.sm_name())?;
                } else {
                    write!(f, "{} ", arch.sm_name())?;
                }
                write!(f, "was dropped in CUDA {dropped_in} (oldest is {}); use CUDA {last} or older", oldest.sm_name())
            }
            CannotEmit::Renamed { cuda, arch, to, renamed_in, last } => write!(
                f,
                "CUDA {cuda} cannot emit {}: it was renamed {} in CUDA {renamed_in}; ask for {to}, or use CUDA {last} or older for {}",
                arch.sm_name(),
                to.sm_name(),
                arch.sm_name()
            ),
            CannotEmit::Unknown { cuda, arch, range, variants_exist_for } => {
                write!(f, "CUDA {cuda} cannot emit {}: no CUDA release in the nvcc support table ({range}) can", arch.sm_name())?;
                match arch.variant() {
                    ArchVariant::Plain => write!(f, "; check the compute capability"),
                    v => write!(f, "; the `{}` suffix exists only for {}", v.suffix(), list(variants_exist_for)),
                }
            }
        }
    }
}

/// [`SupportTable::can_emit`] on the built-in table.
pub fn can_emit(cuda: &CudaVersion, arch: &CudaArch) -> Result<EmitSupport, CannotEmit> {
    SupportTable::builtin().can_emit(cuda, arch)
}

impl SupportTable {
    pub fn can_emit(&self, cuda: &CudaVersion, arch: &CudaArch) -> Result<EmitSupport, CannotEmit> {
        let cuda = cuda.release();
        match self.lookup(&cuda) {
            ReleaseMatch::Exact(r) if r.emits(arch) => Ok(EmitSupport::Known),
            ReleaseMatch::Exact(_) => Err(self.diagnose(cuda, arch)),
            ReleaseMatch::Untested(r) if r.emits(arch) => {
                Ok(EmitSupport::Untested(Untested::NotInTable {
                    cuda,
                    like: r.cuda,
                }))
            }
            ReleaseMatch::Untested(_) => match self.diagnose(cuda, arch) {
                CannotEmit::Unknown { .. } => Ok(EmitSupport::Untested(Untested::UnknownArch {
                    cuda,
                    arch: *arch,
                    range: self.range(),
                })),
                e => Err(e),
            },
            ReleaseMatch::OlderThanTable => {
                let o = self.oldest();
                if o.emits(arch) && !o.added.contains(&arch.to_plain()) {
                    Ok(EmitSupport::Untested(Untested::OlderThanTable {
                        cuda,
                        oldest: o.cuda,
                        arch: *arch,
                    }))
                } else {
                    Err(self.diagnose(cuda, arch))
                }
            }
        }
    }

    fn diagnose(&self, cuda: CudaVersion, arch: &CudaArch) -> CannotEmit {
        let plain = arch.to_plain();
        let rows = &self.releases;
        let can: Vec<CudaVersion> = rows
            .iter()
            .filter(|r| r.emits(arch))
            .map(|r| r.cuda)
            .collect();
        let last_before = rows.iter().rposition(|r| r.cuda < cuda && r.emits(arch));
        if let Some(i) = last_before {
            let gone = rows.get(i + 1).unwrap_or(&rows[i]);
            let rename = rows
                .iter()
                .filter(|r| r.cuda <= cuda)
                .flat_map(|r| &r.renamed)
                .find(|n| n.from == plain);
            let current = rows.iter().rev().find(|r| r.cuda <= cuda).unwrap_or(gone);
            return match rename {
                Some(n) => CannotEmit::Renamed {
                    cuda,
                    arch: *arch,
                    to: n.to.with_variant(arch.variant()),
                    renamed_in: gone.cuda,
                    last: rows[i].cuda,
                },
                None => CannotEmit::Dropped {
                    cuda,
                    arch: *arch,
                    dropped_in: gone.cuda,
                    oldest: current.oldest,
                    last: rows[i].cuda,
                },
            };
        }
        if let Some(first) = can.iter().find(|v| **v > cuda) {
            let was = rows
                .iter()
                .flat_map(|r| &r.renamed)
                .find(|n| n.to == plain)
                .map(|n| n.from.with_variant(arch.variant()));
            let was = was.filter(|w| self.can_emit(&cuda, w).is_ok());
            return CannotEmit::NeedsNewer {
                cuda,
                arch: *arch,
                first: *first,
                can,
                was,
            };
        }
        let pool = |r: &ReleaseSupport| match arch.variant() {
            ArchVariant::Family => r.family.clone(),
            _ => r.arch_specific.clone(),
        };
        let mut variants_exist_for: Vec<CudaArch> = rows.iter().flat_map(pool).collect();
        variants_exist_for.sort();
        variants_exist_for.dedup();
        CannotEmit::Unknown {
            cuda,
            arch: *arch,
            range: self.range(),
            variants_exist_for,
        }
    }
}

#[cfg(test)]
#[path = "emit_tests.rs"]
mod tests;
