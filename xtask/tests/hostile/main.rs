//! Hostile inputs, one test binary: artifacts that zip or tar tools could read in two
//! ways (`zip`, `tar`: the tool refuses them, or what Python, unzip and GNU tar extract
//! is what it checked), and inputs built to exhaust memory or hang (`bounds`): every run
//! measured under 256 MB resident by tests/common's `measured`.

#[path = "../common/mod.rs"]
mod common;

mod bounds;
mod tar;
mod zip;
