//! Provision: fetch what the plan names (pinned sources, tools, hermetic CUDA) into the cache, safely.

pub mod build_number;
pub mod cache;
pub mod fetch;
pub mod gcc;
pub mod hermetic;
pub mod http;
pub mod index;
pub mod resolve;
pub mod source_info;
pub mod tree;
pub mod unpack;
