//! Hostile inputs: artifacts that zip or tar tools could read in two
//! ways (`zip`, `tar`: the tool refuses them, or what Python, unzip and GNU tar extract
//! is what it checked), and inputs built to exhaust memory or hang (`bounds`): every run
//! measured under 256 MB resident by `common::measured`.
// Tests say on stderr why they skip and where a long build is.
#![allow(clippy::print_stderr)]

mod bounds;
mod tar;
mod zip;
