//! `cargo xtask verify PATH...`

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use crate::escape::value;

pub fn run(paths: &[PathBuf]) -> Result<ExitCode> {
    let mut failed = false;
    for p in paths {
        let report = crate::verify::verify(p)?;
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
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
