//! Releases: a TOML file names a recipe, its versions, arch sets, CUDA releases
//! and Python versions. It expands into cells, each ONE native build packaged as
//! one py3 wheel (or one wheel per Python the release lists). After the cells ran,
//! the release's files are written from what the cells left in dist/:
//! `SHA256SUMS`, a PEP 503 simple index per flavour (`<flavour>/simple/`) and
//! `release.json`.
//!
//! Each cell that finishes writes a record, `dist/cells/<cell>.json`. The
//! release files are always made from those records. A local run and a CI
//! workflow that builds each cell in its own job and gathers the records at the
//! end (`--index-only`) then make the same files.
//!
//! Everything here except the `write_*`/`read_*` functions is pure.

mod cells;
mod config;
mod index;
mod records;
pub mod run;
#[cfg(test)]
mod tests;

pub use cells::*;
pub use config::*;
pub use index::*;
pub use records::*;

pub(crate) const FAILED: &str = "FAILED";
pub(crate) const OVER_BUDGET: &str = "over budget";

/// Schema of the cell records and of `release.json`.
pub const SCHEMA: u32 = 1;
/// Where the cells' records live, under dist/.
pub const CELLS_DIR: &str = "cells";
/// Where the artifacts of a cell that broke the size budget are moved, under dist/.
pub const REJECTED_DIR: &str = "rejected";
pub const SUMS_FILE: &str = "SHA256SUMS";
pub const MANIFEST_FILE: &str = "release.json";
pub const INDEX_DIR: &str = "simple";

/// One line of the summary table.
#[derive(Debug, Clone)]
pub struct SummaryRow {
    pub cell: String,
    pub status: String,
    pub seconds: Option<f64>,
    pub artifacts: usize,
    pub bytes: u64,
}

/// The table printed at the end of a release.
pub fn summary_table(rows: &[SummaryRow]) -> String {
    let cells: Vec<[String; 5]> = rows
        .iter()
        .map(|r| {
            [
                r.cell.clone(),
                r.status.clone(),
                r.seconds
                    .map(|s| format!("{s:.1} s"))
                    .unwrap_or_else(|| "-".into()),
                r.artifacts.to_string(),
                if r.artifacts == 0 {
                    "-".into()
                } else {
                    human(r.bytes)
                },
            ]
        })
        .collect();
    let head = ["cell", "status", "time", "artifacts", "size"];
    let mut w = head.map(str::len);
    for c in &cells {
        for (i, s) in c.iter().enumerate() {
            w[i] = w[i].max(s.chars().count());
        }
    }
    let line = |c: &[String; 5]| {
        format!(
            "{:<a$}  {:<b$}  {:>c$}  {:>d$}  {:>e$}\n",
            c[0],
            c[1],
            c[2],
            c[3],
            c[4],
            a = w[0],
            b = w[1],
            c = w[2],
            d = w[3],
            e = w[4]
        )
    };
    let mut out = line(&head.map(String::from));
    out.push_str(&line(&w.map(|n| "-".repeat(n))));
    for c in &cells {
        out.push_str(&line(c));
    }
    out
}
