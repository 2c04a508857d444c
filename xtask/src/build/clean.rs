//! `cargo xtask clean`: the work dirs under the build dir (`.build/`, or
//! `LLAMA_FORGE_BUILD_DIR`), each with the unpacked source at its stable path. dist/ and the
//! user cache are not touched; a work dir whose source a build holds is left alone.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use fs_err as fs;

use super::{lock_path, open_lock, stable, WorkDir};
use crate::plan::Plan;

/// A work dir `clean` found, and what became of it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Cleaned {
    pub path: PathBuf,
    pub bytes: u64,
    /// Left alone: a build of its source runs now.
    pub busy: bool,
}

/// Every work dir under `env.build_root`, removed (or only listed, `dry_run`) with the
/// unpacked source its plan (`plan.json`) names at the stable path, where no build of that
/// source holds its lock.
pub fn clean(env: &crate::detect::Env, dry_run: bool) -> Result<Vec<Cleaned>> {
    let mut out = Vec::new();
    let Ok(entries) = fs::read_dir(&env.build_root) else {
        return Ok(out);
    };
    let mut dirs: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .filter(|p| p.file_name().is_some_and(|n| n != "tmp"))
        .collect();
    dirs.sort();
    for dir in dirs {
        let bytes = crate::provision::cache::size(&dir).unwrap_or(0);
        let work = plan_of(&dir).map(|p| WorkDir::of(env, &p));
        // The lock of its source, held while a build of it runs (a work dir without a plan
        // was never built: nothing can hold it).
        let lock = match &work {
            Some(w) if w.root == dir => {
                let path = lock_path(&w.alias);
                match open_lock(&path) {
                    Ok(f) if f.file().try_lock().is_err() => {
                        out.push(Cleaned {
                            path: dir,
                            bytes,
                            busy: true,
                        });
                        continue;
                    }
                    Ok(f) => Some(f),
                    Err(_) => None,
                }
            }
            _ => None,
        };
        if !dry_run {
            fs::remove_dir_all(&dir)
                .with_context(|| format!("cannot remove the work dir {}", dir.display()))?;
            if let (Some(w), Some(_)) = (&work, &lock) {
                stable::remove_ours(&w.alias, true)?;
            }
        }
        drop(lock);
        out.push(Cleaned {
            path: dir,
            bytes,
            busy: false,
        });
    }
    Ok(out)
}

/// The plan a build recorded in its work dir, if it did.
fn plan_of(dir: &Path) -> Option<Plan> {
    let text = fs::read(dir.join("plan.json")).ok()?;
    serde_json::from_slice(&text).ok()
}
