//! Hostile inputs, one test binary: artifacts that zip or tar tools could read in two
//! ways (`zip`, `tar`: the tool refuses them, or what Python, unzip and GNU tar extract
//! is what it checked), and inputs built to exhaust memory or hang (`bounds`): every run
//! measured under 256 MB resident by tests/common's `measured`.
// Tests say on stderr why they skip and where a long build is.
#![allow(clippy::print_stderr)]

#[path = "../common/mod.rs"]
mod common;

mod bounds;
mod tar;
mod zip;
