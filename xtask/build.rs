//! Stamps `cargo xtask --version` with the commit it was built from: `git rev-parse`
//! at build time (the checkout's git, not any artifact's), "unknown" without git.
//! The manifest's tool version stays the crate version: artifacts built from two
//! commits that make the same plan stay byte-identical.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let o = Command::new("git").args(args).output().ok()?;
    o.status
        .success()
        .then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let date = git(&["log", "-1", "--format=%cs", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=LLAMA_FORGE_COMMIT={commit}");
    println!("cargo:rustc-env=LLAMA_FORGE_COMMIT_DATE={date}");
    // Whether the tracked files differed from that commit (the manifest beside an
    // artifact says so): rechecked whenever the tool's sources, recipes or pins change.
    let dirty = match git(&["status", "--porcelain", "--untracked-files=no"]) {
        Some(_) => "yes",
        None if commit == "unknown" => "unknown",
        None => "no",
    };
    println!("cargo:rustc-env=LLAMA_FORGE_DIRTY={dirty}");
    for dir in ["src", "../recipes", "../toolchains"] {
        println!("cargo:rerun-if-changed={dir}");
    }
    // Rebuilt when HEAD moves (a commit, a checkout): HEAD, the ref it names and the
    // packed refs, where each exists (paths from git, relative to this crate's dir).
    let r = git(&["symbolic-ref", "-q", "HEAD"]);
    for name in ["HEAD", "packed-refs"].into_iter().chain(r.as_deref()) {
        if let Some(p) = git(&["rev-parse", "--git-path", name]) {
            if std::path::Path::new(&p).exists() {
                println!("cargo:rerun-if-changed={p}");
            }
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
