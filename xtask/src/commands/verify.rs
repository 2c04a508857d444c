//! `cargo xtask verify PATH...`

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use crate::escape::value;
use crate::exit::Exit;

/// One path's result in `verify --json`.
#[derive(serde::Serialize)]
struct VerifyJson<'a> {
    path: String,
    ok: bool,
    checked_files: usize,
    problems: &'a [String],
    warnings: &'a [String],
    notes: &'a [String],
}

pub(crate) fn run(paths: &[PathBuf], json: bool, env: &crate::detect::Env) -> Result<ExitCode> {
    let co = crate::verify::Checkout {
        recipes: &env.recipes,
        cache: &env.cache,
        source: None,
    };
    if json {
        let reports = paths
            .iter()
            .map(|p| crate::verify::verify(p, &co).map(|r| (p, r)))
            .collect::<Result<Vec<_>>>()?;
        let results: Vec<VerifyJson> = reports
            .iter()
            .map(|(p, r)| VerifyJson {
                path: p.display().to_string(),
                ok: r.problems.is_empty(),
                checked_files: r.checked_files,
                problems: &r.problems,
                warnings: &r.warnings,
                notes: &r.notes,
            })
            .collect();
        let failed = results.iter().any(|r| !r.ok);
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "schema": "llama-forge.verify/1",
                "results": results,
            }))?
        );
        return Ok(if failed { Exit::Problem } else { Exit::Ok }.into());
    }
    let mut failed = false;
    for p in paths {
        let report = crate::verify::verify(p, &co)?;
        // Each line one finding: what the artifact controls (names, manifest text) is
        // escaped, so nothing in it can draw another line or a fake `ok:`.
        let path = p.display().to_string();
        let path = value(&path);
        for note in &report.notes {
            println!("note {path}: {}", value(note));
        }
        for warning in &report.warnings {
            println!("WARNING {path}: {}", value(warning));
        }
        if report.problems.is_empty() {
            println!("ok: {path} ({} files)", report.checked_files);
        } else {
            failed = true;
            for problem in &report.problems {
                println!("FAIL {path}: {}", value(problem));
            }
        }
    }
    Ok(if failed { Exit::Problem } else { Exit::Ok }.into())
}
