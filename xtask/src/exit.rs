//! The exit codes, one table for every command: README.md, "Exit codes", the one place
//! they are written down. `xtask/tests/it/exit_codes.rs` runs each example that table
//! gives through the binary and compares the code, so the table and [`Exit`] cannot drift.
//!
//! In short: 0 ok; 1 failed or found a problem; 2 usage error ([`Usage`], and the stages'
//! typed errors [`Exit::of_error`] knows); 3 could not check; 128 + the signal when a
//! signal stopped a build step (130 for Ctrl-C, 143 for SIGTERM).

use std::process::ExitCode;

pub use crate::Usage;

/// What a command's run came to, as its exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    Ok,
    Problem,
    Usage,
    CannotCheck,
    /// A signal (SIGINT 2, SIGTERM 15, SIGHUP 1) stopped a build step: 128 + the signal,
    /// which is what a shell shows when the tool then ends by that signal.
    Interrupted(i32),
}

impl Exit {
    pub const fn code(self) -> u8 {
        match self {
            Exit::Ok => 0,
            Exit::Problem => 1,
            Exit::Usage => 2,
            Exit::CannotCheck => 3,
            // Signals are 1 to 64.
            Exit::Interrupted(sig) => 128 + (sig as u8 & 0x7f),
        }
    }

    /// The code for an error a command returned: 2 where it says the request itself
    /// was wrong (an unknown recipe or release, an option that does not apply), else 1.
    pub fn of_error(e: &anyhow::Error) -> Exit {
        let usage = e.chain().any(|c| {
            matches!(
                c.downcast_ref::<crate::recipe::RecipeError>(),
                Some(
                    crate::recipe::RecipeError::Unknown { .. }
                        | crate::recipe::RecipeError::UnknownRelease { .. }
                )
            ) || matches!(
                c.downcast_ref::<crate::plan::PlanError>(),
                Some(
                    crate::plan::PlanError::PyForArchive(_)
                        | crate::plan::PlanError::DefineOwned { .. }
                )
            ) || c.is::<Usage>()
        });
        if usage {
            Exit::Usage
        } else {
            Exit::Problem
        }
    }

    /// What the run came to, all told: a signal that stopped a build step wins over what
    /// the command returned (it returns an error, or in a release a table of failed cells).
    pub fn of_run(result: &anyhow::Result<ExitCode>, interrupted: Option<i32>) -> Option<Exit> {
        match (interrupted, result) {
            (Some(sig), _) => Some(Exit::Interrupted(sig)),
            (None, Err(e)) => Some(Exit::of_error(e)),
            // The command's own code (doctor's 3, verify's 1).
            (None, Ok(_)) => None,
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        ExitCode::from(e.code())
    }
}

/// The document `--json` prints on stdout when the command fails (schema
/// `llama-forge.error/1`), beside the `error:` line on stderr.
/// Runs a command with its panics caught: a panic is a bug of the tool, and the user gets
/// one error that says what and where, and to report it, with exit 1 (not Rust's 101 and
/// a backtrace hint), after the unwinding dropped what the command held (temp dirs, locks,
/// the guards of its child processes). `version`: the tool's, named in the message.
/// Panics of other threads, and any outside a `guarded` call, print as Rust prints them.
pub fn guarded<T>(version: &str, f: impl FnOnce() -> anyhow::Result<T>) -> anyhow::Result<T> {
    use std::cell::{Cell, RefCell};
    thread_local! {
        static GUARDED: Cell<bool> = const { Cell::new(false) };
        static CAUGHT: RefCell<Option<String>> = const { RefCell::new(None) };
    }
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !GUARDED.with(Cell::get) {
                return previous(info);
            }
            let payload = info.payload();
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".into());
            let at = info
                .location()
                .map(|l| format!(" (at {}:{})", l.file(), l.line()))
                .unwrap_or_default();
            CAUGHT.with(|c| *c.borrow_mut() = Some(format!("{what}{at}")));
        }));
    });
    let was = GUARDED.with(|g| g.replace(true));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    GUARDED.with(|g| g.set(was));
    result.unwrap_or_else(|_| {
        let what = CAUGHT
            .with(|c| c.borrow_mut().take())
            .unwrap_or_else(|| "a panic".into());
        Err(anyhow::anyhow!(
            "internal error: {what}. This is a bug in llama-forge {version}: please report it with this message and the command you ran. Nothing unfinished is in dist/ (artifacts are moved there only when complete)"
        ))
    })
}

pub fn error_json(message: &str, exit: Exit) -> String {
    serde_json::to_string_pretty(&serde_json::json!({
        "schema": "llama-forge.error/1",
        "error": message,
        "exit_code": exit.code(),
    }))
    .expect("a JSON object of strings and a number")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A panic inside `guarded` is an error naming it, where it was and whom to tell,
    /// exit 1; what the command held is dropped first; a command that returns is as is.
    #[test]
    fn a_panic_in_a_command_is_an_error_with_exit_1() {
        struct Held<'a>(&'a std::cell::Cell<bool>);
        impl Drop for Held<'_> {
            fn drop(&mut self) {
                self.0.set(true);
            }
        }
        let dropped = std::cell::Cell::new(false);
        let e = guarded("0.1.0 (commit abc)", || -> anyhow::Result<()> {
            let _held = Held(&dropped);
            let v: Vec<u8> = vec![];
            let _ = v[3];
            Ok(())
        })
        .unwrap_err();
        let m = format!("{e:#}");
        assert!(
            m.starts_with("internal error: index out of bounds")
                && m.contains("(at xtask/src/exit.rs:")
                && m.contains("a bug in llama-forge 0.1.0 (commit abc): please report it"),
            "{m}"
        );
        assert!(
            dropped.get(),
            "the command's guard was dropped as it unwound"
        );
        assert_eq!(Exit::of_error(&e), Exit::Problem);
        assert_eq!(guarded("v", || Ok(7)).unwrap(), 7);
        assert!(
            guarded("v", || -> anyhow::Result<()> { anyhow::bail!("plain") })
                .unwrap_err()
                .to_string()
                .starts_with("plain")
        );
    }

    #[test]
    fn request_errors_are_usage_and_the_rest_failures() {
        let unknown: anyhow::Error = crate::recipe::RecipeError::Unknown {
            name: "lama".into(),
            dir: "recipes".into(),
            known: "llama.cpp".into(),
        }
        .into();
        assert_eq!(Exit::of_error(&unknown.context("cannot plan")), Exit::Usage);
        let usage: anyhow::Error = Usage("--json and -v".into()).into();
        assert_eq!(Exit::of_error(&usage), Exit::Usage);
        assert_eq!(
            Exit::of_error(&anyhow::anyhow!("cmake failed")),
            Exit::Problem
        );
        let codes: Vec<u8> = [Exit::Ok, Exit::Problem, Exit::Usage, Exit::CannotCheck]
            .map(Exit::code)
            .to_vec();
        assert_eq!(codes, [0, 1, 2, 3]);
        // Deep in a chain, as a stage's refusal reaches main.
        let deep = crate::usage!("--cell x: no such cell").context("release releases/a.toml");
        assert_eq!(Exit::of_error(&deep), Exit::Usage);
    }

    #[test]
    fn a_signal_gives_128_plus_it_whatever_the_command_returned() {
        assert_eq!(Exit::Interrupted(2).code(), 130);
        assert_eq!(Exit::Interrupted(15).code(), 143);
        let failed: anyhow::Result<ExitCode> = Err(crate::usage!("x"));
        assert_eq!(Exit::of_run(&failed, Some(2)), Some(Exit::Interrupted(2)));
        assert_eq!(Exit::of_run(&failed, None), Some(Exit::Usage));
        assert_eq!(
            Exit::of_run(&Ok(ExitCode::from(1)), Some(15)),
            Some(Exit::Interrupted(15))
        );
        assert_eq!(Exit::of_run(&Ok(ExitCode::from(3)), None), None);
    }

    #[test]
    fn the_error_document_says_what_and_which_code() {
        let v: serde_json::Value =
            serde_json::from_str(&error_json("no recipe named `lama`", Exit::Usage)).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"schema": "llama-forge.error/1", "error": "no recipe named `lama`", "exit_code": 2})
        );
    }
}
