//! The exit-code table, README.md's "Exit codes", against the binary: every example the
//! table gives is run from the checkout's root and must end with its row's code, so the
//! table and the code cannot drift. The signal rows (130, 143) are what cli::'s
//! interrupted builds check, with a real build to interrupt.
//!
//! The examples run against a package index of the test's own (`LLAMA_FORGE_INDEX_URL`,
//! which lists one release), so `--version 9.9.9` is an unknown release offline too, and
//! with a build dir of their own: none of them may build, and none does.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::*;

/// A row of the table: its code, what it means, the commands it gives as examples.
#[derive(Debug)]
struct Row {
    code: u8,
    examples: Vec<Example>,
}

#[derive(Debug, Clone)]
struct Example {
    /// The words after `cargo xtask`.
    args: Vec<String>,
    /// `(on Linux)` follows it: the example's code holds on Linux.
    linux_only: bool,
}

impl std::fmt::Display for Example {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cargo xtask {}", self.args.join(" "))
    }
}

/// The table under `### Exit codes` in `readme`: `| code | meaning | for example |`, each
/// example a `` `cargo xtask ...` `` in the last column.
fn table(readme: &str) -> Result<Vec<Row>, String> {
    let start = readme
        .find("\n### Exit codes\n")
        .ok_or("README.md has no `### Exit codes` section")?;
    let lines: Vec<&str> = readme[start..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .collect();
    let [head, rule, rows @ ..] = &lines[..] else {
        return Err("the Exit codes section has no table".into());
    };
    if *head != "| code | meaning | for example |" || !rule.starts_with("|---|") {
        return Err(format!(
            "the Exit codes table's head is `{head}`, not `| code | meaning | for example |`"
        ));
    }
    let example = regex::Regex::new(r"`cargo xtask ([^`]+)`( \(on Linux\))?").unwrap();
    rows.iter()
        .map(|line| {
            let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
            let [code, _meaning, examples] = cells[..] else {
                return Err(format!("not three columns: {line}"));
            };
            let code = code
                .parse()
                .map_err(|_| format!("`{code}` is not an exit code: {line}"))?;
            let examples = example
                .captures_iter(examples)
                .map(|c| Example {
                    args: c[1].split_whitespace().map(str::to_string).collect(),
                    linux_only: c.get(2).is_some(),
                })
                .collect();
            Ok(Row { code, examples })
        })
        .collect()
}

/// A package index listing one llama-cpp-python sdist (never fetched by the examples).
fn index() -> FileServer {
    let page = serde_json::json!({
        "meta": {"api-version": "1.1"},
        "name": "llama-cpp-python",
        "files": [{
            "filename": "llama_cpp_python-0.3.36.tar.gz",
            "url": "../../files/llama_cpp_python-0.3.36.tar.gz",
            "hashes": {"sha256": "0".repeat(64)},
            "upload-time": "2026-11-20T10:00:00.5Z",
        }],
    });
    FileServer::start(BTreeMap::from([(
        "/simple/llama-cpp-python/".to_string(),
        serde_json::to_vec(&page).unwrap(),
    )]))
}

/// Runs `args` as an example runs: from the checkout's root, with the test's index and
/// its own build dir.
fn run_example(args: &[String], index: &FileServer, build: &Path) -> std::process::Output {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let index = format!("{}/simple/", index.base);
    let mut c = xtask(&args, &[("LLAMA_FORGE_INDEX_URL", &index)]);
    c.current_dir(repo()).env("LLAMA_FORGE_BUILD_DIR", build);
    c.output().expect("xtask runs")
}

/// What differs between the table and the binary: per example that ends with another
/// code than its row's, the command, both codes and its output. The examples run at once.
fn mismatches(rows: &[Row]) -> Vec<String> {
    let server = index();
    let build = tempfile::tempdir().unwrap();
    let cases: Vec<(u8, &Example)> = rows
        .iter()
        .filter(|r| r.code < 128)
        .flat_map(|r| r.examples.iter().map(move |e| (r.code, e)))
        .filter(|(_, e)| !e.linux_only || cfg!(target_os = "linux"))
        .collect();
    std::thread::scope(|s| {
        let runs: Vec<_> = cases
            .iter()
            .map(|(code, e)| {
                let (server, build) = (&server, build.path());
                s.spawn(move || (*code, *e, run_example(&e.args, server, build)))
            })
            .collect();
        let mut wrong: Vec<String> = runs
            .into_iter()
            .filter_map(|r| {
                let (want, e, o) = r.join().unwrap();
                (o.status.code() != Some(i32::from(want))).then(|| {
                    format!(
                        "`{e}`: the table says {want}, the binary exits {:?}\n{}",
                        o.status.code(),
                        text(&o)
                    )
                })
            })
            .collect();
        // A refusal comes before any build step.
        for e in walkdir::WalkDir::new(build.path()).into_iter().flatten() {
            if e.file_name() == "configure.done" {
                wrong.push(format!(
                    "an example configured a build: {}",
                    e.path().display()
                ));
            }
        }
        wrong
    })
}

fn readme() -> String {
    std::fs::read_to_string(repo().join("README.md")).unwrap()
}

#[test]
fn every_example_of_the_exit_code_table_ends_with_its_code() {
    let rows = table(&readme()).unwrap_or_else(|e| panic!("{e}"));
    let codes: Vec<u8> = rows.iter().map(|r| r.code).collect();
    assert_eq!(codes, [0, 1, 2, 3, 130, 143], "the table's codes");
    for r in rows.iter().filter(|r| r.code < 128) {
        assert!(
            !r.examples.is_empty(),
            "code {}: no `cargo xtask ...` example to check it by",
            r.code
        );
    }
    // The refusals issue 47 found exiting 1 are among the examples.
    let usage: Vec<String> = rows[2].examples.iter().map(ToString::to_string).collect();
    for named in [
        "cargo xtask wheel llama.cpp",
        "cargo xtask release releases/llama.cpp.toml --cell nope",
        "cargo xtask toolchains install cuda 13.9",
        "cargo xtask plan llama.cpp --target x86_64-pc-windows-msvc",
        "cargo xtask plan llama.cpp --version 9.9.9",
    ] {
        assert!(
            usage.iter().any(|u| u == named),
            "{named} not in {usage:#?}"
        );
    }
    let wrong = mismatches(&rows);
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

/// The check fails on a table that says another code than the binary's, and on a table
/// it cannot read.
#[test]
fn a_wrong_code_in_the_table_is_found() {
    let planted = "x\n### Exit codes\n\n| code | meaning | for example |\n|---|---|---|\n| 1 | failed | `cargo xtask plan lama` |\n";
    let rows = table(planted).unwrap();
    let wrong = mismatches(&rows);
    assert_eq!(wrong.len(), 1, "{wrong:?}");
    assert!(
        wrong[0].starts_with("`cargo xtask plan lama`: the table says 1, the binary exits Some(2)"),
        "{}",
        wrong[0]
    );
    let e = table("\n### Exit codes\n\n| code | meaning |\n|---|---|\n| 0 | ok |\n").unwrap_err();
    assert!(e.contains("not `| code | meaning | for example |`"), "{e}");
    let e = table("\n### Exit codes\n\n| code | meaning | for example |\n|---|---|---|\n| two | usage | x |\n")
        .unwrap_err();
    assert!(e.contains("`two` is not an exit code"), "{e}");
}

/// `--help` ends with the same codes.
#[test]
fn help_sums_up_the_table() {
    let rows = table(&readme()).unwrap();
    let o = run(&["--help"], &[]);
    let help = String::from_utf8_lossy(&o.stdout);
    let line = help
        .lines()
        .find(|l| l.starts_with("Exit codes: "))
        .unwrap_or_else(|| panic!("no exit codes after --help:\n{help}"));
    for r in &rows {
        assert!(
            line.contains(&format!(" {} ", r.code)),
            "{}: {line}",
            r.code
        );
    }
}

/// Under `--json` an error is one JSON document on stdout too, with the code the tool
/// exits with; `doctor` and `inspect` documents carry their schema.
#[test]
fn json_errors_and_schemas() {
    let error_doc = |args: &[&str], code: i32, says: &str| {
        let o = run(args, &[]);
        assert_eq!(o.status.code(), Some(code), "{}", text(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: stdout is not JSON ({e}):\n{}", text(&o)));
        assert_eq!(v["schema"], "llama-forge.error/1", "{v}");
        assert_eq!(v["exit_code"], code, "{v}");
        let error = v["error"].as_str().unwrap();
        assert!(error.contains(says), "{error}");
        // The message on stderr as without --json.
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(stderr.contains(&format!("error: {says}")), "{stderr}");
    };
    error_doc(&["plan", "lama", "--json"], 2, "no recipe named `lama`");
    // clap's own error, before any command ran.
    error_doc(
        &["plan", "llama.cpp", "--json", "--jobs", "0"],
        2,
        "invalid value '0' for '--jobs <N>'",
    );
    error_doc(
        &["toolchains", "--json", "install", "cuda", "13.9"],
        2,
        "CUDA 13.9 has no pinned wheel set",
    );
    error_doc(
        &["inspect", "--json", "README.md"],
        1,
        "cannot inspect README.md",
    );
    // Without --json, nothing on stdout.
    let o = run(&["plan", "lama"], &[]);
    assert!(o.stdout.is_empty(), "{}", text(&o));

    let d = tempfile::tempdir().unwrap();
    let o = run(&["inspect", "--json", d.path().to_str().unwrap()], &[]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["schema"], "llama-forge.inspect/1", "{v}");
    assert_eq!(v["results"].as_array().map(Vec::len), Some(1), "{v}");
    // Could not check (no Python to ask): its own document, not an error.
    let o = run(
        &[
            "doctor",
            "--json",
            "--no-nvml",
            "--python",
            "/nonexistent/python3",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["schema"], "llama-forge.doctor/1", "{v}");
    assert_eq!(v["outcome"], "cannot_check", "{v}");
}

/// The refusals the table gives (codes 1 and 2), and a missing file given to each reader
/// of artifacts and manifests, say what was wrong in the user's terms: no module path,
/// Debug placeholder or type name of ours on stderr (tidy's scan of the sources, run on
/// what the binary really prints).
#[test]
fn refusals_are_in_the_users_terms() {
    let rows = table(&readme()).unwrap();
    let mut cases: Vec<Vec<String>> = rows
        .iter()
        .filter(|r| r.code == 1 || r.code == 2)
        .flat_map(|r| r.examples.iter())
        .filter(|e| !e.linux_only || cfg!(target_os = "linux"))
        .map(|e| e.args.clone())
        .collect();
    for args in [
        "reproduce /nonexistent/x.whl.manifest.json",
        "verify /nonexistent/x.whl",
        "inspect /nonexistent/x.whl",
        "plan llama-cpp-python --arch 120 --cuda 13.9",
        "plan llama-cpp-python --arch sm_999",
    ] {
        cases.push(args.split(' ').map(str::to_string).collect());
    }
    assert!(cases.len() > 8, "{cases:?}");
    let types = crate::tidy::crate_type_names();
    let server = index();
    let build = tempfile::tempdir().unwrap();
    let mut problems = Vec::new();
    for args in &cases {
        let o = run_example(args, &server, build.path());
        assert!(
            !o.status.success(),
            "`{}` succeeded:\n{}",
            args.join(" "),
            text(&o)
        );
        // What it says: the error on stderr, or verify's FAIL lines.
        let said = text(&o);
        assert!(!said.trim().is_empty(), "`{}` said nothing", args.join(" "));
        for f in crate::tidy::internal_names(&said, &types) {
            problems.push(format!("`cargo xtask {}`: {f} in\n{said}", args.join(" ")));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
