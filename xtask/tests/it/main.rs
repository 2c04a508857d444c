//! The integration tests: one test binary, `it`, one module per area, each running the
//! real `xtask` binary (`env!("CARGO_BIN_EXE_xtask")`, through [`common`]).
//!
//! One binary, not one per file: each test binary links the whole crate and its
//! dependencies, so seventeen of them cost seventeen links on every change (see
//! BENCHMARKS.md, "CI"). A test's name is its module path: `cargo test --test it e2e::`
//! runs one module, `cargo test --test it e2e::wheel_builds` one test.
//!
//! Order: libtest runs the tests sorted by name, so with `--test-threads=1` (the README's
//! command) the modules run in the order below, and a test may reuse what an earlier
//! module left under `target/` (release.rs reuses e2e's wheel build; e2e's aarch64 tests
//! reuse the x86-64 archive `archive_builds_unpacks_and_generates` left), always checking
//! that what it finds is of the plan it wants and building it otherwise.
//!
//! The fast tier (ci.yml's fast job, on every push) is the modules that build nothing
//! real and need nothing `.ci/run` installs: it runs `cargo test --test it -- cli:: ...`,
//! one filter per module, and tidy checks that each filter there names a module here (a
//! filter that matches nothing would pass with no test run).

mod common;

mod aarch64_python;
mod aarch64_tool;
mod cli;
mod completions;
mod cuda_choice;
mod doctor;
mod e2e;
mod exit_codes;
mod fuzz;
mod gpu_check;
mod hermetic_cuda;
mod hostile;
mod optional_deps;
mod release;
mod reproduce;
mod sccache;
mod stable_path;
mod substitute;
mod tidy;
mod upstream;
mod verify;
mod windows_tool;
mod workflows;
