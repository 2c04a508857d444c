//! `cargo xtask verify PATH...`

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

pub fn run(paths: &[PathBuf]) -> Result<ExitCode> {
    let mut failed = false;
    for p in paths {
        let report = crate::verify::verify(p)?;
        for note in &report.notes {
            println!("note {}: {note}", p.display());
        }
        for warning in &report.warnings {
            println!("WARNING {}: {warning}", p.display());
        }
        if report.problems.is_empty() {
            println!("ok: {} ({} files)", p.display(), report.checked_files);
        } else {
            failed = true;
            for problem in &report.problems {
                println!("FAIL {}: {problem}", p.display());
            }
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
