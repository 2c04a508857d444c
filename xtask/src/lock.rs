//! Exclusive file locks held while a build, a download or a commit into dist/ runs.

use std::path::Path;

use anyhow::{Context, Result};

/// Takes the exclusive lock on `file` (opened from `path`): at once when free, else
/// after writing `waiting: <waiting()>` to `log` and blocking until its holder lets go.
///
/// The lock is `flock`'s, which belongs to the open file description: each call
/// site opens the lock file itself, so two threads of one process (release
/// cells built side by side) exclude each other exactly as two processes do.
/// Keep it that way: sharing one opened `File` between callers, or taking the
/// lock through a process-wide `fcntl` record lock, would let a second thread in.
pub fn take(
    file: &std::fs::File,
    path: &Path,
    log: &crate::report::Log,
    waiting: impl FnOnce() -> String,
) -> Result<()> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => {
            log.line(format_args!("waiting: {}", waiting()));
            file.lock()
                .with_context(|| format!("cannot lock {}", path.display()))
        }
        Err(std::fs::TryLockError::Error(e)) => {
            Err(e).with_context(|| format!("cannot lock {}", path.display()))
        }
    }
}
