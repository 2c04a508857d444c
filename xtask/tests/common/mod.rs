//! Helpers shared by the integration tests: run the real `xtask` binary.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The shared download/tool cache: tests reuse what earlier runs fetched.
pub fn cache() -> PathBuf {
    repo().join("vendor/cache")
}

pub fn xtask(args: &[&str], envs: &[(&str, &str)]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_xtask"));
    c.args(args);
    c.env("LLAMA_FORGE_CACHE", cache());
    for (k, v) in envs {
        c.env(k, v);
    }
    c
}

pub fn run(args: &[&str], envs: &[(&str, &str)]) -> Output {
    let out = xtask(args, envs).output().expect("xtask runs");
    eprintln!(
        "$ xtask {}\n--- stdout\n{}--- stderr\n{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

pub fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

pub fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// Copies the mini-llama fixture so a test can change it.
pub fn mini_source(dir: &Path) -> PathBuf {
    let src = repo().join("tests/fixtures/mini-llama");
    let dst = dir.join("mini-llama");
    std::fs::create_dir_all(&dst).unwrap();
    for e in std::fs::read_dir(&src).unwrap().flatten() {
        std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
    }
    dst
}
