//! CUDA toolchain knowledge as pure functions: versions, arch targets, the nvcc support
//! table, host compiler policy and the cuobjdump gate.
//! Nothing here runs a process; callers pass in outputs, paths and environment values.

mod arch;
mod cuobjdump;
mod decision;
mod emit;
pub mod fatbin;
mod gpu;
pub mod pinned;
mod request;
pub mod runs;
pub mod runtime;
mod support;

pub use arch::{
    ArchList, ArchListError, ArchTarget, ArchVariant, CudaArch, CudaArchError, TargetKind,
};
pub use cuobjdump::{
    gate, parse_dump, parse_list, CodeKind, CuobjdumpParseError, EmbeddedCode, GateProblem,
};
pub use decision::{
    extra_cuda_flags, host_compiler_decision, host_compiler_decision_in, CudaFlag,
    HostCompilerError, HostDecision, ALLOW_UNSUPPORTED_COMPILER,
};
pub use emit::{can_emit, CannotEmit, EmitSupport, Untested};
pub use gpu::{describe_cc, did_you_mean, Gpu, GpuError};

pub use crate::versions::{CudaVersion, CudaVersionError, NvccVersion, NvccVersionError};
pub use request::{ArchReason, ArchRequest, ArchSelection, ArchSpec, ArchSpecError, ArchWarning};
pub use support::{
    DriverVersion, DriverVersionError, MscVerRange, ReleaseMatch, ReleaseSupport, Rename,
    SupportTable, SupportTableError,
};
