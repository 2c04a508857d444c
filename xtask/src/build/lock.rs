//! Exclusive file locks held while a build, a download or a commit into dist/ runs.

use std::path::Path;

use anyhow::{Context, Result};

/// Takes the exclusive lock on `file` (opened from `path`): at once when free, else
/// after printing `waiting: <waiting()>` and blocking until its holder lets go.
pub fn take(file: &std::fs::File, path: &Path, waiting: impl FnOnce() -> String) -> Result<()> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => {
            eprintln!("waiting: {}", waiting());
            file.lock()
                .with_context(|| format!("cannot lock {}", path.display()))
        }
        Err(std::fs::TryLockError::Error(e)) => {
            Err(e).with_context(|| format!("cannot lock {}", path.display()))
        }
    }
}
