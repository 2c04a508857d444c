//! Every version type, in one place: dotted release versions of tools and
//! packages ([`Version`]), CUDA releases and nvcc builds ([`CudaVersion`],
//! [`NvccVersion`]), host compiler versions ([`CompilerVersion`]) and NVIDIA
//! driver versions ([`DriverVersion`]). Python versions are wheel tags
//! ([`crate::tags::PyVersion`]).

pub mod compiler;
pub mod cuda;
pub mod dotted;
pub mod driver;

pub use compiler::{CompilerVersion, CompilerVersionError};
pub use cuda::{CudaVersion, CudaVersionError, NvccVersion, NvccVersionError};
pub use dotted::{BadVersion, Version};
pub use driver::{DriverVersion, DriverVersionError};
