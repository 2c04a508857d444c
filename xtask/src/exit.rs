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
