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
use std::time::Duration;

use anyhow::{Context, Result};

/// A cloneable handle on where progress goes.
#[derive(Clone)]
pub struct Log(Arc<Sink>);

/// How much the commands print, from `-q`/`-v`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Verbosity {
    /// Errors, warnings and results only.
    Quiet,
    #[default]
    Normal,
    /// Also every line the build steps print, as they print it.
    Verbose,
}

/// How often a long step says where it is when no bar can draw (off a terminal,
/// in a release cell's log): `[n/N]`, elapsed and left.
pub const HEARTBEAT: Duration = Duration::from_secs(30);

enum Sink {
    /// Progress and warnings to stderr, results to stdout: what the commands print.
    Terminal {
        verbosity: Verbosity,
        /// stderr is a terminal: bars can draw.
        tty: bool,
        heartbeat: Duration,
    },
    /// Everything, in the order written, to one file.
    File(Mutex<std::fs::File>),
}

impl Log {
    /// The terminal, at the normal verbosity: [`Log::line`] to stderr, [`Log::out`] to stdout.
    pub fn stderr() -> Log {
        Log::terminal(Verbosity::Normal, HEARTBEAT)
    }

    /// The terminal with `-q`/`-v`, and the heartbeat's interval (`HEARTBEAT`, or
    /// `LLAMA_FORGE_HEARTBEAT_SECS`).
    pub fn terminal(verbosity: Verbosity, heartbeat: Duration) -> Log {
        use std::io::IsTerminal;
        Log(Arc::new(Sink::Terminal {
            verbosity,
            tty: std::io::stderr().is_terminal(),
            heartbeat,
        }))
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

    /// A progress line (stderr on the terminal; not with `-q`).
    pub fn line(&self, text: impl Display) {
        match &*self.0 {
            Sink::Terminal {
                verbosity: Verbosity::Quiet,
                ..
            } => {}
            // The Log is where stages print: its terminal sink is the one place they reach stderr.
            #[allow(clippy::print_stderr)]
            Sink::Terminal { .. } => eprintln!("{}", crate::escape::text(&text.to_string())),
            Sink::File(f) => write_line(f, text),
        }
    }

    /// Whether every line of the build steps' output is streamed (`-v`).
    pub fn streams(&self) -> bool {
        matches!(
            &*self.0,
            Sink::Terminal {
                verbosity: Verbosity::Verbose,
                ..
            }
        )
    }

    /// How often a long step says where it is, where no bar draws and nothing is
    /// streamed: off a terminal, and into a release cell's log file. `None`: never
    /// (a bar draws, or `-v` streams everything, or `-q`).
    pub fn heartbeat(&self) -> Option<Duration> {
        match &*self.0 {
            Sink::Terminal {
                verbosity: Verbosity::Normal,
                tty: false,
                heartbeat,
            } => Some(*heartbeat),
            Sink::Terminal { .. } => None,
            Sink::File(_) => Some(HEARTBEAT),
        }
    }

    /// `warning: <text>` (stderr on the terminal, `warning:` in yellow where colour is on).
    pub fn warning(&self, text: impl Display) {
        match &*self.0 {
            Sink::Terminal { .. } => anstream::eprintln!(
                "{}warning:{} {}",
                WARNING.render(),
                WARNING.render_reset(),
                crate::escape::text(&text.to_string())
            ),
            Sink::File(_) => self.line(format_args!("warning: {text}")),
        }
    }

    /// A result line (stdout on the terminal).
    pub fn out(&self, text: impl Display) {
        match &*self.0 {
            #[allow(clippy::print_stdout)] // the Log's terminal sink for results
            Sink::Terminal { .. } => println!("{}", crate::escape::text(&text.to_string())),
            Sink::File(f) => write_line(f, text),
        }
    }

    /// Whether progress bars draw: on a terminal at the normal verbosity, never
    /// into a file, off a terminal, with `-q` or with `-v` (which streams the log).
    pub fn bars(&self) -> bool {
        matches!(
            &*self.0,
            Sink::Terminal {
                verbosity: Verbosity::Normal,
                tty: true,
                ..
            }
        )
    }
}

/// The styles of the tool's own prefixes on the terminal. Whether they show is
/// decided once, in `main` ([`set_color`]): `anstream` strips them otherwise.
pub const WARNING: anstyle::Style = anstyle::Style::new()
    .bold()
    .fg_color(Some(anstyle::Color::Ansi(anstyle::AnsiColor::Yellow)));
pub const ERROR: anstyle::Style = anstyle::Style::new()
    .bold()
    .fg_color(Some(anstyle::Color::Ansi(anstyle::AnsiColor::Red)));

/// Colour on or off for every terminal line of this process (`--color`, `NO_COLOR`).
pub fn set_color(on: bool) {
    anstream::ColorChoice::write_global(if on {
        anstream::ColorChoice::Always
    } else {
        anstream::ColorChoice::Never
    });
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
        assert_eq!(log.heartbeat(), Some(HEARTBEAT));
        assert!(!log.streams());
    }

    #[test]
    fn verbosity_decides_bars_heartbeats_and_streaming() {
        let t = |verbosity, tty| {
            let l = Log(Arc::new(Sink::Terminal {
                verbosity,
                tty,
                heartbeat: Duration::from_secs(7),
            }));
            (l.bars(), l.heartbeat().map(|d| d.as_secs()), l.streams())
        };
        use Verbosity::*;
        assert_eq!(t(Normal, true), (true, None, false));
        assert_eq!(t(Normal, false), (false, Some(7), false));
        assert_eq!(t(Verbose, true), (false, None, true));
        assert_eq!(t(Verbose, false), (false, None, true));
        assert_eq!(t(Quiet, true), (false, None, false));
        assert_eq!(t(Quiet, false), (false, None, false));
    }
}
