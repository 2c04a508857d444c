//! The host platform seam: host compilers and MSVC.

pub mod compiler;
pub mod host;
pub mod msvc;
