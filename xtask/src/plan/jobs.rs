//! `--jobs N`: how many compiles run at once. It is Ninja's `-j`, given through
//! `cmake --build --parallel`. Like the launcher, it changes how fast the objects come,
//! not which bytes: it is left out of the plan's hash and of every manifest
//! ([`crate::plan::Plan::recorded`]).

use std::num::NonZeroU16;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Jobs {
    pub n: u16,
    pub reason: String,
}

impl Jobs {
    pub fn new(n: NonZeroU16) -> Jobs {
        Jobs {
            n: n.get(),
            reason: format!(
                "--jobs {n}: Ninja runs {n} compiles at once instead of its default (this machine's cores + 2); with a compile farm that keeps its servers busy, on a machine short of memory it keeps the build in it"
            ),
        }
    }

    /// `build` (`cmake --build <dir> ...`) with `--parallel N` after the build dir.
    pub fn build_command(&self, build: &[String]) -> Vec<String> {
        let at = build.len().min(3);
        let mut argv = build[..at].to_vec();
        argv.extend(["--parallel".to_string(), self.n.to_string()]);
        argv.extend_from_slice(&build[at..]);
        argv
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_count_goes_after_the_build_dir() {
        let j = Jobs::new(NonZeroU16::new(26).unwrap());
        let build: Vec<String> = ["cmake", "--build", "${BUILD}", "--target", "llama", "ggml"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            j.build_command(&build),
            [
                "cmake",
                "--build",
                "${BUILD}",
                "--parallel",
                "26",
                "--target",
                "llama",
                "ggml"
            ]
        );
        assert!(j
            .reason
            .starts_with("--jobs 26: Ninja runs 26 compiles at once"));
    }
}
