//! Putting artifacts into dist/: only finished, verified ones, each with its
//! manifest, one writer at a time.
//!
//! A build writes and verifies its artifacts in a staging dir of its own
//! ([`Staging`], under the build root's `tmp/`), each beside its manifest under
//! its final name. [`commit`] then moves them into dist/ while holding
//! `dist/.lock`:
//! - a second build that commits into the same dist/ waits (it says so) rather
//!   than failing: a release builds several cells into one dist/ at once, and a
//!   commit is a few renames, so the wait is short;
//! - each artifact's old file (a rebuild of the same name) is removed first,
//!   then the manifest is renamed into place, then the artifact: at no moment is
//!   there an artifact without its manifest, or beside another artifact's manifest;
//! - the files reach dist/ through `dist/.incoming/` (a rename, or a copy when
//!   dist/ is on another file system): nothing partial ever carries an artifact's
//!   name, and what a killed commit left there is removed by the next one
//!   (under the lock, nobody else can be using it).

use crate::report::Log;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context, Result};
use fs_err as fs;

/// The lock file in dist/: held while artifacts are moved in.
pub const LOCK: &str = ".lock";
/// Where a commit puts the files it moves in, before their final rename.
const INCOMING: &str = ".incoming";

/// A dist dir known to be usable: it exists (created if it was missing), is a
/// directory, and this user can create files in it.
#[derive(Debug, Clone)]
pub struct Dist {
    path: PathBuf,
}

impl Dist {
    /// Checks `path` before anything is built, so a `--dist` that cannot work
    /// fails in a second, naming the path, rather than after the build.
    pub fn open(path: &Path) -> Result<Dist> {
        let what = |why: &str| format!("--dist {}: {why}", path.display());
        match fs_err::metadata(path) {
            Ok(m) if !m.is_dir() => bail!("{}", what("is not a directory: give a directory for the artifacts (it is created if missing)")),
            Ok(_) => {}
            Err(_) => fs_err::create_dir_all(path).with_context(|| what("cannot create the directory"))?,
        }
        tempfile::Builder::new()
            .prefix(".probe")
            .tempfile_in(path)
            .with_context(|| {
                what("cannot create files in it: give a directory this user can write")
            })?;
        let lock = path.join(LOCK);
        if fs_err::symlink_metadata(&lock).is_ok_and(|m| !m.is_file()) {
            bail!("{} is not a plain file (a symlink?): remove it; the tool creates its lock file there itself", lock.display());
        }
        Ok(Dist {
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Waits until no other build commits into this dist/ (saying so), then
    /// holds it until the returned value is dropped.
    pub fn lock(&self, log: &Log) -> Result<DistLock> {
        let path = self.path.join(LOCK);
        let mut o = fs::OpenOptions::new();
        o.create(true).truncate(false).write(true);
        #[cfg(unix)]
        {
            use fs_err::os::unix::fs::OpenOptionsExt;
            // Never through a link planted there, never blocking on a fifo.
            o.custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
                .mode(0o644);
        }
        let file = o.open(&path).with_context(|| {
            format!(
                "cannot open the lock {}: if it is a symlink or not a plain file, remove it",
                path.display()
            )
        })?;
        if !file.metadata()?.is_file() {
            bail!(
                "{} is not a plain file: remove it; the tool creates its lock file there itself",
                path.display()
            );
        }
        crate::lock::take(file.file(), &path, log, || {
            format!(
                "another build is putting artifacts into {} (it holds {})",
                self.path.display(),
                path.display()
            )
        })?;
        Ok(DistLock { _file: file })
    }

    /// Moves each staged artifact and its manifest (`<artifact>.manifest.json`,
    /// beside it) into dist/ under the same names, as the module doc says.
    /// Returns the artifacts' paths in dist/.
    pub fn commit(&self, artifacts: &[PathBuf], log: &Log) -> Result<Vec<PathBuf>> {
        let _lock = self.lock(log)?;
        let incoming = self.path.join(INCOMING);
        clear(&incoming)?;
        fs::create_dir(&incoming)?;
        let mut out = Vec::new();
        let mut moved = Vec::new();
        for a in artifacts {
            let name = file_name(a)?;
            let manifest = a.with_file_name(format!("{name}.manifest.json"));
            if !manifest.is_file() {
                bail!(
                    "{} has no manifest beside it ({}): not put into {}",
                    a.display(),
                    manifest.display(),
                    self.path.display()
                );
            }
            for n in [name.to_string(), format!("{name}.manifest.json")] {
                let dest = self.path.join(n);
                if dest.symlink_metadata().is_ok_and(|m| m.is_dir()) {
                    bail!(
                        "{} is a directory: remove it, an artifact goes there",
                        dest.display()
                    );
                }
            }
            for f in [a, &manifest] {
                move_file(f, &incoming.join(file_name(f)?))?;
            }
            moved.push((name.to_string(), format!("{name}.manifest.json")));
        }
        for (artifact, manifest) in &moved {
            let dest = self.path.join(artifact);
            if let Ok(m) = fs_err::symlink_metadata(&dest) {
                if m.is_file() && !same_bytes(&dest, &incoming.join(artifact))? {
                    log.line(format_args!(
                        "note: replacing {}: an earlier build wrote other bytes under this name",
                        dest.display()
                    ));
                }
                fs::remove_file(&dest)?;
            }
            // On the disk before their names are in dist/: a power cut then leaves the
            // earlier artifact or this one, never a name over missing bytes.
            crate::durable::sync_file(&incoming.join(manifest))?;
            crate::durable::sync_file(&incoming.join(artifact))?;
            fs::rename(incoming.join(manifest), self.path.join(manifest))?;
            fs::rename(incoming.join(artifact), &dest)?;
            out.push(dest);
        }
        fs::remove_dir(&incoming)?;
        crate::durable::sync_dir(&self.path)?;
        Ok(out)
    }
}

/// Held while artifacts are moved into dist/.
pub struct DistLock {
    _file: fs::File,
}

fn file_name(p: &Path) -> Result<&str> {
    p.file_name()
        .and_then(|n| n.to_str())
        .with_context(|| format!("{} has no file name", p.display()))
}

/// Removes what a killed commit left at `path` (a dir, or anything planted there).
fn clear(path: &Path) -> Result<()> {
    match fs_err::symlink_metadata(path) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(path)?,
        Ok(_) => fs::remove_file(path)?,
        Err(_) => {}
    }
    Ok(())
}

/// A rename; a copy (synced to disk) when `to` is on another file system.
fn move_file(from: &Path, to: &Path) -> Result<()> {
    match fs_err::rename(from, to) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::CrossesDevices => {
            fs::copy(from, to)?;
            fs::remove_file(from)?;
            Ok(())
        }
        Err(e) => {
            Err(e).with_context(|| format!("cannot move {} to {}", from.display(), to.display()))
        }
    }
}

fn same_bytes(a: &Path, b: &Path) -> Result<bool> {
    if fs::metadata(a)?.len() != fs::metadata(b)?.len() {
        return Ok(false);
    }
    Ok(crate::digest::sha256_file(a)? == crate::digest::sha256_file(b)?)
}

/// This run's staging dir: `<tmp>/run-<pid>-XXXXXX/`, removed when dropped.
pub struct Staging {
    dir: tempfile::TempDir,
}

/// Loose temp files older than this in `tmp/` are left by a killed older version of the tool.
const STALE_LOOSE: Duration = Duration::from_secs(3600);

impl Staging {
    /// Removes what killed runs left in `tmp` (see [`clean_stale`]), then makes this run's dir.
    pub fn new(tmp: &Path) -> Result<Staging> {
        fs::create_dir_all(tmp)?;
        clean_stale(tmp);
        let dir = tempfile::Builder::new()
            .prefix(&format!("run-{}-", std::process::id()))
            .tempdir_in(tmp)
            .with_context(|| format!("cannot create a staging dir in {}", tmp.display()))?;
        Ok(Staging { dir })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// Removes from `tmp` the staging dirs of runs that are gone (`run-<pid>-*`
/// whose process no longer exists: killed with SIGKILL, or crashed) and the
/// loose `.tmp*` files of older versions of the tool not written to for an
/// hour. A dir whose pid is alive is left alone, even if that pid is now
/// another program's: it goes once that process is gone.
pub fn clean_stale(tmp: &Path) {
    let Ok(entries) = fs_err::read_dir(tmp) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Ok(meta) = e.path().symlink_metadata() else {
            continue;
        };
        if let Some(rest) = name.strip_prefix("run-") {
            let pid = rest.split('-').next().and_then(|p| p.parse::<u32>().ok());
            if meta.is_dir() && pid.is_some_and(|p| !alive(p)) {
                let _ = fs_err::remove_dir_all(e.path());
            }
        } else if name.starts_with(".tmp") && meta.is_file() {
            let old = meta
                .modified()
                .ok()
                .and_then(|m| SystemTime::now().duration_since(m).ok())
                .is_some_and(|age| age > STALE_LOOSE);
            if old {
                let _ = fs_err::remove_file(e.path());
            }
        }
    }
}

/// Whether process `pid` exists (on this machine, in this pid namespace).
fn alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(pid) = i32::try_from(pid) else {
            return false;
        };
        !matches!(
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
            Err(nix::errno::Errno::ESRCH)
        )
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Barrier};

    /// `name` and its manifest in `dir`, the manifest naming the artifact's bytes.
    fn stage(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let a = dir.join(name);
        std::fs::write(&a, bytes).unwrap();
        std::fs::write(
            dir.join(format!("{name}.manifest.json")),
            crate::digest::sha256_bytes(bytes).as_str(),
        )
        .unwrap();
        a
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_dist_that_is_a_file_or_under_one_is_refused_with_its_path() {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("dist");
        std::fs::write(&file, b"not a dir").unwrap();
        let e = format!("{:#}", Dist::open(&file).unwrap_err());
        assert!(
            e.contains(&format!("--dist {}: is not a directory", file.display())),
            "{e}"
        );
        let under = file.join("sub");
        let e = format!("{:#}", Dist::open(&under).unwrap_err());
        assert!(
            e.contains(&format!(
                "--dist {}: cannot create the directory",
                under.display()
            )),
            "{e}"
        );
        assert_eq!(
            std::fs::read(&file).unwrap(),
            b"not a dir",
            "the file is left as it was"
        );
        let fresh = d.path().join("a/b/dist");
        assert_eq!(Dist::open(&fresh).unwrap().path(), fresh);
        assert!(
            names(&fresh).is_empty(),
            "the check leaves nothing behind: {:?}",
            names(&fresh)
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_lock_planted_as_a_symlink_is_not_followed() {
        let d = tempfile::tempdir().unwrap();
        let (dist, outside) = (d.path().join("dist"), d.path().join("outside"));
        std::fs::create_dir_all(&dist).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        let target = outside.join("victim");
        std::os::unix::fs::symlink(&target, dist.join(LOCK)).unwrap();
        let e = format!("{:#}", Dist::open(&dist).unwrap_err());
        assert!(
            e.contains(&dist.join(LOCK).display().to_string()) && e.contains("remove it"),
            "{e}"
        );
        // Planted after the check: the open itself refuses it.
        std::fs::remove_file(dist.join(LOCK)).unwrap();
        let ok = Dist::open(&dist).unwrap();
        std::os::unix::fs::symlink(&target, dist.join(LOCK)).unwrap();
        let a = stage(&d.path().join("staging"), "x.whl", b"wheel");
        let e = format!(
            "{:#}",
            ok.commit(std::slice::from_ref(&a), &Log::stderr())
                .unwrap_err()
        );
        assert!(e.contains(&dist.join(LOCK).display().to_string()), "{e}");
        assert!(
            !target.exists() && names(&outside).is_empty(),
            "nothing created through the link"
        );
        assert!(a.is_file(), "nothing moved");
    }

    #[test]
    fn commit_moves_each_artifact_with_its_manifest_and_clears_a_killed_commits_leftovers() {
        let d = tempfile::tempdir().unwrap();
        let dist = Dist::open(&d.path().join("dist")).unwrap();
        // A killed commit's leftovers, one a link to a dir that must survive.
        let keep = d.path().join("keep");
        std::fs::create_dir_all(&keep).unwrap();
        std::fs::write(keep.join("precious"), b"x").unwrap();
        std::fs::create_dir_all(dist.path().join(INCOMING)).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(&keep, dist.path().join(INCOMING).join("link")).unwrap();
        std::fs::write(dist.path().join(INCOMING).join("half.whl"), b"partial").unwrap();
        let staging = d.path().join("staging");
        let a = stage(&staging, "a-cp311.whl", b"one");
        let b = stage(&staging, "a-cp312.whl", b"two");
        let got = dist.commit(&[a, b], &Log::stderr()).unwrap();
        assert_eq!(
            got,
            [
                dist.path().join("a-cp311.whl"),
                dist.path().join("a-cp312.whl")
            ]
        );
        assert_eq!(
            names(dist.path()),
            [
                LOCK,
                "a-cp311.whl",
                "a-cp311.whl.manifest.json",
                "a-cp312.whl",
                "a-cp312.whl.manifest.json"
            ]
        );
        assert!(names(&staging).is_empty());
        assert_eq!(
            std::fs::read(keep.join("precious")).unwrap(),
            b"x",
            "a link's target is not followed"
        );

        // Without its manifest an artifact is refused, and nothing moves.
        let lone = staging.join("lone.whl");
        std::fs::write(&lone, b"x").unwrap();
        let c = stage(&staging, "c.whl", b"c");
        let e = format!(
            "{:#}",
            dist.commit(&[c.clone(), lone.clone()], &Log::stderr())
                .unwrap_err()
        );
        assert!(
            e.contains(&lone.display().to_string()) && e.contains("no manifest"),
            "{e}"
        );
        assert!(!dist.path().join("c.whl").exists() && !dist.path().join("lone.whl").exists());
    }

    /// Two builds commit the same name at once: the second waits for the
    /// first, and what is left is one build's artifact with that build's manifest.
    #[test]
    fn a_second_writer_waits_and_the_pair_stays_consistent() {
        let d = tempfile::tempdir().unwrap();
        let dist = Dist::open(&d.path().join("dist")).unwrap();
        let held = dist.lock(&Log::stderr()).unwrap();
        let a = stage(&d.path().join("s1"), "same.tar.gz", b"first build");
        let started = std::time::Instant::now();
        let waiting = std::thread::spawn({
            let dist = dist.clone();
            move || {
                dist.commit(&[a], &Log::stderr()).unwrap();
                started.elapsed()
            }
        });
        std::thread::sleep(Duration::from_millis(500));
        assert!(
            !dist.path().join("same.tar.gz").exists(),
            "the commit waits while dist/ is locked"
        );
        drop(held);
        assert!(waiting.join().unwrap() >= Duration::from_millis(500));

        for round in 0..20 {
            let go = Arc::new(Barrier::new(2));
            let writers: Vec<_> = ["x", "y"]
                .into_iter()
                .map(|w| {
                    let (dist, go) = (dist.clone(), go.clone());
                    let staged = stage(
                        &d.path().join(format!("{w}{round}")),
                        "same.tar.gz",
                        format!("{w} {round}").as_bytes(),
                    );
                    std::thread::spawn(move || {
                        go.wait();
                        dist.commit(&[staged], &Log::stderr()).unwrap();
                    })
                })
                .collect();
            writers.into_iter().for_each(|t| t.join().unwrap());
            let art = std::fs::read(dist.path().join("same.tar.gz")).unwrap();
            let manifest =
                std::fs::read_to_string(dist.path().join("same.tar.gz.manifest.json")).unwrap();
            assert_eq!(
                manifest,
                crate::digest::sha256_bytes(&art).as_str(),
                "round {round}: the manifest is the artifact's"
            );
        }
        assert_eq!(
            names(dist.path()),
            [LOCK, "same.tar.gz", "same.tar.gz.manifest.json"]
        );
    }

    #[cfg(unix)]
    #[test]
    fn staging_dirs_of_dead_runs_and_old_loose_temp_files_are_cleaned() {
        let d = tempfile::tempdir().unwrap();
        let tmp = d.path().join("tmp");
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let dead_dir = tmp.join(format!("run-{dead}-abc123"));
        let live_dir = tmp.join(format!("run-{}-def456", std::process::id()));
        for dir in [&dead_dir, &live_dir] {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(dir.join("half.whl"), b"partial").unwrap();
        }
        let (old, new) = (tmp.join(".tmpOLD123"), tmp.join(".tmpNEW456"));
        std::fs::write(&old, b"x").unwrap();
        std::fs::write(&new, b"x").unwrap();
        let two_hours_ago = SystemTime::now() - Duration::from_secs(7200);
        std::fs::File::options()
            .write(true)
            .open(&old)
            .unwrap()
            .set_modified(two_hours_ago)
            .unwrap();
        let other = tmp.join("unrelated");
        std::fs::write(&other, b"x").unwrap();

        let staging = Staging::new(&tmp).unwrap();
        assert!(!dead_dir.exists(), "a dead run's staging dir goes");
        assert!(!old.exists(), "an hour-old loose temp file goes");
        assert!(
            live_dir.join("half.whl").is_file(),
            "a live run's dir stays"
        );
        assert!(
            new.is_file() && other.is_file(),
            "recent or unknown files stay"
        );
        let mine = staging.path().to_path_buf();
        assert!(mine
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with(&format!("run-{}-", std::process::id())));
        drop(staging);
        assert!(!mine.exists(), "this run's dir goes with it");
    }
}
