//! Where a build's progress lines go: the terminal for a command run by hand,
//! the cell's log file for a release cell built on a thread of `release`.
//!
//! The stages write their progress through a [`Log`] handed down from the
//! command, never with `eprintln!`, so cells built side by side in one process
//! each keep their own output, in order, in their own log.

use std::fmt::Display;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};

/// A cloneable handle on where progress goes.
#[derive(Clone)]
pub struct Log(Arc<Sink>);

enum Sink {
    /// Progress and warnings to stderr, results to stdout: what the commands print.
    Terminal,
    /// Everything, in the order written, to one file.
    File(Mutex<std::fs::File>),
}

impl Log {
    /// The terminal: [`Log::line`] to stderr, [`Log::out`] to stdout.
    pub fn stderr() -> Log {
        Log(Arc::new(Sink::Terminal))
    }

    /// A new (truncated) file at `path`, its dir created; both streams go into it.
    pub fn file(path: &Path) -> Result<Log> {
        if let Some(dir) = path.parent() {
            fs_err::create_dir_all(dir)?;
        }
        let f = fs_err::File::create(path)
            .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(Log(Arc::new(Sink::File(Mutex::new(f.into_parts().0)))))
    }

    /// A progress line (stderr on the terminal).
    pub fn line(&self, text: impl Display) {
        match &*self.0 {
            Sink::Terminal => eprintln!("{}", crate::escape::text(&text.to_string())),
            Sink::File(f) => write_line(f, text),
        }
    }

    /// `warning: <text>` (stderr on the terminal).
    pub fn warning(&self, text: impl Display) {
        self.line(format_args!("warning: {text}"));
    }

    /// A result line (stdout on the terminal).
    pub fn out(&self, text: impl Display) {
        match &*self.0 {
            Sink::Terminal => println!("{}", crate::escape::text(&text.to_string())),
            Sink::File(f) => write_line(f, text),
        }
    }

    /// Whether progress bars may draw: on the terminal only (where they still
    /// hide themselves when stderr is not a terminal), never into a file.
    pub fn bars(&self) -> bool {
        matches!(&*self.0, Sink::Terminal)
    }
}

/// One whole line per write, so lines from threads sharing a log do not mix.
/// A log that cannot be written does not stop the build.
fn write_line(f: &Mutex<std::fs::File>, text: impl Display) {
    let line = format!("{text}\n");
    let mut f = f.lock().unwrap_or_else(|e| e.into_inner());
    let _ = f.write_all(line.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_log_holds_lines_warnings_and_results_in_order() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("logs/cell.log");
        let log = Log::file(&p).unwrap();
        let other = log.clone();
        log.line("building x");
        other.warning("careful");
        log.out("x.whl (1.0 MB)");
        assert!(!log.bars());
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "building x\nwarning: careful\nx.whl (1.0 MB)\n"
        );
        assert!(Log::stderr().bars());
    }
}
