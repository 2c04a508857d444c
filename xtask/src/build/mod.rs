//! Executes a plan: unpack the source, configure, build and install with CMake.
//!
//! The work dir (`.build/<id>/`) survives between runs and is keyed by the plan's
//! hash, so an interrupted build resumes where Ninja stopped, and a changed plan
//! never reuses another plan's objects.

use crate::report::Log;
use fs_err as fs;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::plan::Plan;
use crate::process::{Command, Processes};

pub mod clean;
pub mod patch;
/// Windows builds stop after the plan (see README): there the stable dir is checked by nothing yet.
#[cfg_attr(not(unix), path = "stable_windows.rs")]
pub mod stable;

/// Where one source's builds live.
///
/// The work dir is keyed by the source (recipe, release, source record), not by
/// the whole plan: a changed option reconfigures the same build dir from a fresh
/// CMake cache, and Ninja rebuilds only the objects whose command lines or inputs
/// changed. What is per plan is keyed by the plan's hash: the configure marker
/// and the record of finished artifacts (`done-<plan id>.json`).
///
/// Objects, logs and markers stay in `root` (`.build/<recipe>-<version>-<id>/`), the
/// build cache. The compilers see the stable path `alias` (`/tmp/llama-forge/src-<id>`),
/// the same for the same project on every machine and checkout: the unpacked source
/// lives there for real, and `build`/`stage` there are symlinks into `root`. The alias
/// is keyed by the project the download is a release of and where it is published
/// (`llama_cpp_python` from files.pythonhosted.org, `llama.cpp` from github.com, a local
/// archive of a release beside the other local ones; a directory by its own hash), not by the release, recipe, project dir or patches: the
/// recipes that build one tree (llama.cpp's archive and llama-cpp-python's wheel, from
/// one sdist) and the releases of a project compile at the same paths, and a compile
/// cache (`--launcher`) serves one with the other's objects. They take turns: one build
/// per alias at a time, and the source there is unpacked afresh when another plan's
/// source or patches are on it.
///
/// The source must be real at the stable path, not behind a symlink: nvcc names
/// internal-linkage device entities `_INTERNAL_<hash>_...` with a hash of the
/// source file's resolved path, so a symlinked source made 9 of ggml-cuda's
/// objects differ between checkouts (measured; see BENCHMARKS.md).
#[derive(Debug, Clone)]
pub struct WorkDir {
    pub root: PathBuf,
    pub cache: PathBuf,
    pub alias: PathBuf,
    /// The repository root (`${REPO}`: helper scripts under toolchains/).
    pub repo: PathBuf,
    /// The plan being built: the first 16 hex digits of its hash.
    pub plan_id: String,
    /// The CMake project inside the source (`.` or `vendor/llama.cpp`), which builds in
    /// the same dir under `build`.
    pub project_dir: String,
    /// The sha256 of the plan's whole source record (download, project dir, patches):
    /// what the unpacked tree at the alias must have been made for.
    pub source_id: String,
}

/// Where the stable build paths live by default.
pub const ALIAS_DIR: &str = stable::DEFAULT_DIR;

/// `<stable dir>.lock`, beside the stable dir.
fn lock_path(alias: &Path) -> PathBuf {
    let mut name = alias.file_name().expect("alias has a name").to_os_string();
    name.push(".lock");
    alias.with_file_name(name)
}

/// Opens (creating, never truncating, never through a link) a lock file of ours;
/// nothing is ever written to it.
fn open_lock(path: &Path) -> Result<fs::File> {
    Ok(stable::open_private_file(path, false)?)
}

/// Held while a plan builds: one build per source at a time on a machine, as the
/// stable path is shared by every checkout.
pub struct WorkLock {
    _file: fs::File,
}

/// The project a pinned or upstream source's leading dir names, its release left out
/// (`llama_cpp_python-0.3.36` -> `llama_cpp_python`, `llama.cpp-b11541` -> `llama.cpp`):
/// the stable path is keyed by it, so that every release of a project, and every
/// llama.cpp build, compiles at the same paths, and a compile cache serves a new release
/// every file that did not change (with the prefix maps, no path reaches the bytes).
fn family(strip: &str) -> Option<&str> {
    let (name, release) = strip.rsplit_once('-')?;
    let release = release.strip_prefix('b').unwrap_or(release);
    (!name.is_empty()
        && release.starts_with(|c: char| c.is_ascii_digit())
        && release
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.'))
    .then_some(name)
}

/// `https://files.pythonhosted.org` of a download's URL.
fn origin(url: &str) -> Option<&str> {
    let (scheme, rest) = url.split_once("://")?;
    let host = rest.split('/').next()?;
    (!host.is_empty()).then(|| &url[..scheme.len() + 3 + host.len()])
}

impl WorkDir {
    /// `stable_dir`: where the stable paths live ([`stable::DEFAULT_DIR`] unless
    /// `LLAMA_FORGE_STABLE_DIR` says otherwise).
    pub fn new(
        build_root: &Path,
        cache: &Path,
        repo: &Path,
        stable_dir: &Path,
        plan: &Plan,
    ) -> WorkDir {
        let source = crate::digest::sha256_bytes(
            &serde_json::to_vec(&plan.source).expect("source serialises"),
        );
        let id = format!(
            "{}-{}-{}",
            plan.recipe,
            plan.version,
            &source.as_str()[..16]
        );
        let s = &plan.source;
        let key = match family(&s.strip) {
            // A release or build of a project (an archive whose leading dir names it), by
            // where it is published (a local archive: beside the other local ones): every
            // one at the same paths.
            Some(family) if s.sha256.is_some() => {
                format!("{family} {}", origin(&s.location).unwrap_or("local"))
            }
            // A directory or an archive of no release: by its own hash, so that unrelated
            // trees do not take turns.
            _ => serde_json::to_string(&(
                s.kind.as_str(),
                &s.location,
                &s.sha256,
                &s.tree_sha256,
                &s.strip,
            ))
            .expect("source serialises"),
        };
        let key = crate::digest::sha256_bytes(key.as_bytes());
        WorkDir {
            root: build_root.join(&id),
            cache: cache.to_path_buf(),
            alias: stable_dir.join(format!("src-{}", &key.as_str()[..16])),
            repo: repo.to_path_buf(),
            plan_id: plan.hash().as_str()[..16].to_string(),
            project_dir: s.project_dir.clone(),
            source_id: source.as_str().to_string(),
        }
    }

    /// Where `plan` is built, with the dirs of `env`.
    pub fn of(env: &crate::detect::Env, plan: &Plan) -> WorkDir {
        WorkDir::new(
            &env.build_root,
            &env.cache,
            &env.root,
            &env.stable_dir,
            plan,
        )
    }

    /// The record of this plan's finished artifacts (for no-op runs).
    pub fn done_file(&self) -> PathBuf {
        self.root.join(format!("done-{}.json", self.plan_id))
    }

    fn base(&self) -> &Path {
        self.alias.parent().expect("alias has a parent")
    }

    /// Waits until no other build of this source runs here, then holds the lock
    /// until the returned value is dropped. The stable dir must be this user's
    /// (see [`stable`]): anything another user controls there is refused.
    pub fn lock(&self, log: &Log) -> Result<WorkLock> {
        stable::private_dir(self.base())?;
        let path = lock_path(&self.alias);
        let file = open_lock(&path)?;
        crate::lock::take(file.file(), &path, log, || {
            format!("another build of this source holds {}", path.display())
        })?;
        Ok(WorkLock { _file: file })
    }

    /// Removes stable dirs whose work dir is gone (a deleted checkout or temp
    /// dir), so unpacked sources do not pile up in /tmp. Dirs of builds that
    /// are running (locked), and anything another user owns, are left alone.
    pub fn remove_stale(&self) {
        let Ok(entries) = fs::read_dir(self.base()) else {
            return;
        };
        for e in entries.flatten() {
            let path = e.path();
            if path == self.alias
                || !stable::is_ours(&path)
                || !e.file_type().is_ok_and(|t| t.is_dir() || t.is_symlink())
            {
                continue;
            }
            // Old layout: the whole dir was one link. New: `build` links into the work dir.
            let target = fs::read_link(&path).or_else(|_| fs::read_link(path.join("build")));
            let stale = match target {
                Ok(t) => !t.exists(),
                Err(_) => false,
            };
            if !stale {
                continue;
            }
            let Ok(file) = open_lock(&lock_path(&path)) else {
                continue;
            };
            if file.try_lock().is_ok() {
                // The lock file stays: deleting it could hand one lock to two builds.
                let _ = fs::remove_dir_all(&path).or_else(|_| fs::remove_file(&path));
            }
        }
    }

    /// Forgets everything built for this plan here: the work dir and the unpacked
    /// source at the stable path, so the next build starts from scratch.
    pub fn clear(&self, log: &Log) -> Result<()> {
        let _lock = self.lock(log)?;
        if fs::symlink_metadata(&self.root).is_ok() {
            fs::remove_dir_all(&self.root)
                .with_context(|| format!("cannot clear {}", self.root.display()))?;
        }
        stable::remove_ours(&self.alias, true)?;
        Ok(())
    }

    /// Makes the work dir, where it is missing, as [`WorkDir::link_alias`] does: a dir of
    /// ours that no one else can write (an artifact fetched from a substituter records
    /// its finished build there, with nothing built).
    pub fn make_root(&self) -> Result<()> {
        stable::private_root(&self.root, stable::Root::Build)?;
        Ok(())
    }

    /// Makes the stable dir: a real directory of ours (mode 0700) whose `build` and
    /// `stage` point into this work dir. Links of ours that point elsewhere are
    /// replaced; anything another user owns is refused.
    pub fn link_alias(&self) -> Result<()> {
        // Reused from run to run (its CMake cache names the programs a build runs): a
        // dir of ours that no one else can write, as the build root above it.
        stable::private_root(&self.root, stable::Root::Build)?;
        let root = self
            .root
            .canonicalize()
            .with_context(|| format!("work dir {} is missing", self.root.display()))?;
        stable::private_dir(self.base())?;
        stable::private_dir(&self.alias)?;
        for sub in ["build", "stage"] {
            let link = self.alias.join(sub);
            let target = root.join(sub);
            match fs::symlink_metadata(&link) {
                Ok(m) if m.file_type().is_symlink() && stable::is_ours(&link) => {
                    if fs::read_link(&link).ok().as_deref() == Some(target.as_path()) {
                        continue;
                    }
                    fs::remove_file(&link)
                        .with_context(|| format!("cannot replace {}", link.display()))?;
                }
                Ok(m) => stable::remove_ours(&link, m.is_dir())?,
                Err(_) => {}
            }
            #[cfg(unix)]
            std::os::unix::fs::symlink(&target, &link).with_context(|| {
                format!("cannot link {} -> {}", link.display(), target.display())
            })?;
        }
        Ok(())
    }

    /// `${SRC}` etc. as the build sees them (through the alias).
    fn seen(&self, sub: &str) -> String {
        self.alias.join(sub).display().to_string()
    }
    /// The unpacked source: real, at the stable path.
    pub fn src(&self) -> PathBuf {
        self.alias.join("src")
    }
    /// The record of the unpacked source's files, beside it.
    fn src_record(&self) -> PathBuf {
        self.alias.join("src.done")
    }
    pub fn build(&self) -> PathBuf {
        self.root.join("build")
    }
    /// CMake's build dir: the project's dir under [`WorkDir::build`].
    pub fn cmake_build(&self) -> PathBuf {
        self.under(self.build())
    }
    /// Where the source's CMake project is.
    pub fn project(&self) -> PathBuf {
        self.under(self.src())
    }
    fn under(&self, dir: PathBuf) -> PathBuf {
        match self.project_dir.as_str() {
            "." => dir,
            p => dir.join(p),
        }
    }
    pub fn stage(&self) -> PathBuf {
        self.root.join("stage")
    }
    pub fn logs(&self) -> PathBuf {
        self.root.join("logs")
    }
    /// `--launcher sccache`: the last build's statistics, as sccache printed them (JSON).
    pub fn cache_stats(&self) -> PathBuf {
        self.logs().join("sccache-stats.json")
    }
    /// Turns paths the build saw back into placeholders.
    pub fn unresolve(&self, s: &str) -> String {
        let mut out = s.to_string();
        for (dir, ph) in [
            ("src", "${SRC}"),
            ("build", "${BUILD}"),
            ("stage", "${STAGE}"),
        ] {
            out = out
                .replace(&self.seen(dir), ph)
                .replace(&self.root.join(dir).display().to_string(), ph);
        }
        out.replace(&self.cache.display().to_string(), "${CACHE}")
            .replace(&self.repo.display().to_string(), "${REPO}")
    }

    /// Fills `${SRC}`, `${BUILD}`, `${STAGE}`, `${CACHE}` in a plan string.
    pub fn resolve(&self, s: &str) -> String {
        s.replace("${SRC}", &self.seen("src"))
            .replace("${BUILD}", &self.seen("build"))
            .replace("${STAGE}", &self.seen("stage"))
            .replace("${CACHE}", &self.cache.display().to_string())
            .replace("${REPO}", &self.repo.display().to_string())
    }
}

/// Where the source comes from, resolved to a local file or dir by the caller.
pub enum SourceInput {
    Archive(PathBuf),
    Dir(PathBuf),
}

/// `--llama-cpp`'s tree in place of the vendored one: the vendored tree removed, then
/// upstream's tarball (from the cache, by its planned sha256) or the local tarball
/// unpacked there, or the local tree copied there and checked against its planned hash.
fn put_overlay(
    work: &WorkDir,
    src: &Path,
    o: &crate::plan::PlannedSource,
    log: &Log,
) -> Result<()> {
    let under = o.under.as_deref().expect("an overlay names where it goes");
    let into = src.join(under);
    stable::remove_ours(&into, true)?;
    match (&o.sha256, &o.tree_sha256) {
        (Some(sha), _) => {
            let archive = match o.kind {
                crate::plan::SourceKind::Local => PathBuf::from(&o.location),
                _ => crate::provision::fetch::cache_path(&work.cache, &o.location, sha),
            };
            let got = crate::digest::sha256_file(&archive)?;
            if &got != sha {
                bail!(
                    "--llama-cpp {}: its sha256 is now {got}, but the plan has {sha}: it changed after the plan was made; run again",
                    archive.display()
                );
            }
            crate::provision::unpack::unpack_tar_gz(&archive, &o.strip, &into)?;
        }
        (None, Some(want)) => {
            let from = Path::new(&o.location);
            crate::provision::tree::copy(from, &into, crate::provision::tree::Scope::Source)?;
            let copied = crate::provision::tree::Record::of(
                &into,
                crate::provision::tree::Scope::Source,
                Some(stable::me()),
            )?
            .digest();
            if &copied != want {
                bail!("--llama-cpp {}: the tree changed while the build started (tree sha256 {copied}, planned {want}): run again once it stops changing", from.display());
            }
        }
        (None, None) => unreachable!("an overlay is pinned by a hash"),
    }
    log.line(format_args!("source: {under} is {}", o.location));
    Ok(())
}

/// `--source PATH` when given (a dir or an archive), else the fetched pinned archive.
pub fn source_input(local: Option<&Path>, pinned_file: Option<PathBuf>) -> SourceInput {
    match local {
        None => SourceInput::Archive(pinned_file.expect("pinned source is fetched")),
        Some(p) if p.is_dir() => SourceInput::Dir(p.to_path_buf()),
        Some(p) => SourceInput::Archive(p.to_path_buf()),
    }
}

/// The unpacked source at the stable path, reused only while it matches the record of
/// its files (`src.done`, beside it, made when it was unpacked and after each build's own
/// steps), with every entry owned by this user. Anything else (a changed or planted
/// file, a missing or foreign record) is removed and unpacked afresh.
pub fn prepare_source(work: &WorkDir, plan: &Plan, input: &SourceInput, log: &Log) -> Result<()> {
    work.link_alias()?;
    let marker = work.src_record();
    let src = work.src();
    if let (Some(recorded), Some(_)) = (
        stable::read_private_file(&marker)?,
        stable::existing(&src, true)?,
    ) {
        let started = std::time::Instant::now();
        let checked = match split_source_record(&recorded) {
            Some((made_for, files)) if made_for == work.source_id.as_bytes() => {
                crate::provision::tree::check_record(&src, files, &marker, Some(stable::me()))
            }
            _ => Err(anyhow::anyhow!(
                "unpacked for another plan's source (another recipe, project dir or patches)"
            )),
        };
        match checked {
            Ok(()) => {
                log.line(format_args!(
                    "source: reusing {} (content checked in {:.1} s)",
                    src.display(),
                    started.elapsed().as_secs_f64()
                ));
                return Ok(());
            }
            Err(e) => log.line(format_args!("source: {e:#}: unpacking afresh")),
        }
    }
    stable::remove_ours(&marker, false)?;
    stable::remove_ours(&src, true)?;
    match input {
        SourceInput::Archive(a) => {
            // An upstream tarball goes where the recipe's source has its tree.
            let into = match &plan.source.under {
                Some(under) => src.join(under),
                None => src.clone(),
            };
            let newest = crate::provision::unpack::unpack_tar_gz(a, &plan.source.strip, &into)?;
            // A pinned source is dated by its recipe: the date must postdate its files.
            if plan.source.kind != crate::plan::SourceKind::Local {
                if let Some(problem) = crate::recipe::date_problem(
                    &plan.recipe,
                    &plan.source.location,
                    plan.source_date_epoch,
                    newest,
                ) {
                    bail!("{problem}");
                }
            }
        }
        // A source dir is the recipe's CMake project: it goes where the pinned source has it.
        SourceInput::Dir(d) => {
            crate::provision::tree::copy(d, &work.project(), crate::provision::tree::Scope::Source)?
        }
    }
    let record_now = || {
        crate::provision::tree::Record::of(
            &src,
            crate::provision::tree::Scope::All,
            Some(stable::me()),
        )
    };
    let mut record = None;
    if let (SourceInput::Dir(d), Some(want)) = (input, &plan.source.tree_sha256) {
        let copy = crate::provision::tree::Record::of(
            &work.project(),
            crate::provision::tree::Scope::All,
            Some(stable::me()),
        )?;
        let copied = copy.digest();
        if &copied != want {
            bail!("--source {} changed while the build started (tree sha256 {copied}, planned {want}): run again once it stops changing", d.display());
        }
        if work.project_dir == "." {
            record = Some(copy);
        }
    }
    if let Some(o) = &plan.source.overlay {
        put_overlay(work, &src, o, log)?;
        record = None;
    }
    // Patched after the check above (which is of the copy as given), then recorded, so a
    // reused tree is the patched one. A failed patch leaves no record: the next build
    // unpacks afresh.
    if !plan.source.patches.is_empty() {
        patch::apply(&src, &plan.source.patches)?;
        // Each file once, in the order first patched (several patches edit CMakeLists.txt).
        let mut files: Vec<&str> = Vec::new();
        for p in &plan.source.patches {
            if !files.contains(&p.file.as_str()) {
                files.push(&p.file);
            }
        }
        let n = plan.source.patches.len();
        log.line(format_args!(
            "source: {n} patch{} applied to {}",
            if n == 1 { "" } else { "es" },
            files.join(", ")
        ));
        record = None;
    }
    let record = match record {
        Some(r) => r,
        None => record_now()?,
    };
    let project = work.project().join("CMakeLists.txt");
    if !project.is_file() {
        bail!(
            "the source has no {}: is `--source` the right tree?",
            project.display()
        );
    }
    keep_source_record(work, &record)
}

/// Records the unpacked source as it is now in `src.done`, beside it. Called after
/// unpacking, and again after the build's own steps: llama-cpp-python's CMake install
/// also writes the libraries into its source tree (`llama_cpp/lib`), so the record
/// describes the tree as this tool last left it, and what changes it between builds
/// is found.
fn record_source(work: &WorkDir) -> Result<()> {
    keep_source_record(
        work,
        &crate::provision::tree::Record::of(
            &work.src(),
            crate::provision::tree::Scope::All,
            Some(stable::me()),
        )?,
    )
}

/// `src.done` starts with a line `source <sha256>`: the source record (download, project
/// dir, patches) the tree was unpacked and patched for. Recipes that share a download
/// share the tree's place (see [`WorkDir`]), so a tree another plan left there is never
/// taken for this one's. The record of the tree's files follows.
const SOURCE_LINE: &[u8] = b"source ";

/// The source record's sha256 and the record of files of a `src.done`, or `None` for a
/// marker without that first line (made before it was kept, or not by this tool).
fn split_source_record(marker: &[u8]) -> Option<(&[u8], &[u8])> {
    let (line, record) = marker.split_at(marker.iter().position(|&b| b == b'\n')?);
    Some((line.strip_prefix(SOURCE_LINE)?, &record[1..]))
}

fn keep_source_record(work: &WorkDir, record: &crate::provision::tree::Record) -> Result<()> {
    use std::io::Write;
    let marker = work.src_record();
    let mut text = [SOURCE_LINE, work.source_id.as_bytes(), b"\n"].concat();
    text.extend(record.to_bytes());
    stable::open_private_file(&marker, true)?
        .write_all(&text)
        .with_context(|| format!("cannot write {}", marker.display()))?;
    Ok(())
}

/// Configure (once), build (Ninja resumes), install (fresh staging dir each time).
/// With `--launcher sccache`, inside a server of the build's own
/// ([`crate::plan::launcher::Launcher::server`]), whose statistics are kept in
/// [`WorkDir::cache_stats`].
pub fn run_cmake(work: &WorkDir, plan: &Plan, runner: &dyn Processes) -> Result<()> {
    let mut env: BTreeMap<String, String> = plan
        .env
        .iter()
        .map(|s| (s.name.clone(), work.resolve(&s.value)))
        .collect();
    if let Some(l) = &plan.launcher {
        env.extend(l.build_env().map(|(k, v)| (k, work.resolve(&v))));
    }
    fs::create_dir_all(&work.root)?;
    work.link_alias()?;
    // Where an MSVC build's TEMP and TMP point (`${BUILD}\tmp`, not the user's profile),
    // as `${BUILD}` resolves: through the alias (a link into the work dir on Unix, a dir
    // of its own on Windows, where no link is made).
    // The link's target first: a dangling link is no dir to create one in.
    fs::create_dir_all(work.build())?;
    fs::create_dir_all(
        Path::new(&work.seen("build")).join(crate::platform::msvc::plan::BUILD_TEMP_DIR),
    )?;
    let Some(server) = plan.launcher.as_ref().and_then(|l| l.server()) else {
        return cmake_steps(work, plan, runner, &env);
    };
    // Each command as a step would run it, but not in a process group that ends with it:
    // the server `--start-server` leaves behind outlives that command.
    let command = |argv: &[String]| {
        let argv: Vec<String> = argv.iter().map(|a| work.resolve(a)).collect();
        Command {
            group: false,
            ..Command::step(&argv, &env, Some(&work.logs()))
        }
    };
    let stats = work.cache_stats();
    let _ = fs::remove_file(&stats);
    // Its socket lives in the build dir. A server left there by a killed build is stopped first.
    fs::create_dir_all(work.build())?;
    fs::create_dir_all(work.logs())?;
    let _ = runner.output(&command(&server.stop));
    let start = command(&server.start).merge_stderr();
    let started = runner
        .output(&start)
        .with_context(|| format!("cannot start sccache's server for this build (`{start}`)"))?;
    if !started.success() {
        bail!(
            "cannot start sccache's server for this build (`{start}`, {}):\n{}",
            started.status,
            started.stdout.trim_end()
        );
    }
    let built = cmake_steps(work, plan, runner, &env);
    // Failed or not, the statistics are kept and the server is stopped.
    if let Ok(out) = runner.output(&command(&server.stats)) {
        if out.success() {
            fs::write(&stats, out.stdout.as_bytes())?;
        }
    }
    let _ = runner.output(&command(&server.stop));
    built
}

/// The CMake steps, with exactly `env`.
fn cmake_steps(
    work: &WorkDir,
    plan: &Plan,
    runner: &dyn Processes,
    env: &BTreeMap<String, String>,
) -> Result<()> {
    let resolve = |argv: &[String]| argv.iter().map(|a| work.resolve(a)).collect::<Vec<_>>();
    // Each step runs in the logs dir, with exactly the plan's environment.
    let logs = work.logs();
    let step = |argv: &[String]| Command::step(&resolve(argv), env, Some(&logs));
    // The marker holds the plan (and launcher) the build dir was configured for.
    // Another one: a fresh CMake cache, so no setting of the earlier plan lingers;
    // the objects stay, and Ninja rebuilds only what changed.
    let configured = work.root.join("configure.done");
    let marker = format!(
        "{}\n{}",
        plan.hash(),
        plan.launcher.as_ref().map(|l| l.id()).unwrap_or_default()
    );
    if fs::read_to_string(&configured).ok().as_deref() != Some(marker.as_str()) {
        fs::create_dir_all(work.build())?;
        // Only the cache: the objects live under CMakeFiles/<target>.dir/.
        let cache = work.cmake_build().join("CMakeCache.txt");
        if cache.exists() {
            fs::remove_file(&cache)
                .with_context(|| format!("cannot remove {}", cache.display()))?;
        }
        let _ = fs::remove_file(&configured);
        let mut argv = plan.commands.configure.clone();
        if let Some(l) = &plan.launcher {
            argv.extend(
                l.defines
                    .iter()
                    .map(|d| format!("-D{}={}", d.name, d.value)),
            );
        }
        runner.step(
            "configure",
            &step(&argv),
            &work.logs().join("configure.log"),
        )?;
        fs::write(&configured, marker.as_bytes())?;
    }
    runner.step(
        "build",
        &step(&plan.build_command()),
        &work.logs().join("build.log"),
    )?;
    if let Some(install) = &plan.commands.install {
        if work.stage().exists() {
            fs::remove_dir_all(work.stage())?;
        }
        // Installs go through the stable path's `stage` link: its target must exist.
        fs::create_dir_all(work.stage())?;
        runner.step("install", &step(install), &work.logs().join("install.log"))?;
    }
    if work.src().is_dir() {
        record_source(work)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_stable_path_is_the_projects_whatever_the_release() {
        assert_eq!(
            super::family("llama_cpp_python-0.3.36"),
            Some("llama_cpp_python")
        );
        assert_eq!(
            super::family("llama_cpp_python-0.3.20"),
            Some("llama_cpp_python")
        );
        assert_eq!(super::family("llama.cpp-b11541"), Some("llama.cpp"));
        assert_eq!(super::family("llama.cpp-master"), None);
        assert_eq!(super::family("mini"), None);
        assert_eq!(
            super::origin("https://files.pythonhosted.org/packages/ec/x.tar.gz"),
            Some("https://files.pythonhosted.org")
        );
        assert_eq!(super::origin("/home/me/x.tar.gz"), None);
    }

    use super::*;

    use crate::process::{Env, Recorder as FakeRunner};

    /// (step, argv, env) of each step run.
    fn steps(fake: &FakeRunner) -> Vec<(String, Vec<String>, BTreeMap<String, String>)> {
        fake.calls
            .borrow()
            .iter()
            .map(|c| {
                let mut argv = vec![c.cmd.program.display().to_string()];
                argv.extend(c.cmd.arg_strs());
                let Env::Exact(env) = &c.cmd.env else {
                    panic!("a step inherits nothing")
                };
                (c.step.clone().expect("a step"), argv, env.clone())
            })
            .collect()
    }

    /// Tests run in parallel on one plan: each gets its own stable dir.
    fn work(root: &Path, cache: &Path, repo: &Path, tmp: &Path, p: &Plan) -> WorkDir {
        WorkDir::new(root, cache, repo, &tmp.join("alias"), p)
    }

    fn plan() -> Plan {
        crate::plan::tests::fixture_plan("llama-cpp-python", &["311"])
    }

    #[test]
    fn commands_get_resolved_paths_and_only_the_plan_env() {
        let d = tempfile::tempdir().unwrap();
        let p = plan();
        let work = work(
            d.path(),
            Path::new("/home/someone/checkout/vendor/cache"),
            Path::new("/home/someone/checkout"),
            d.path(),
            &p,
        );
        let fake = FakeRunner::default();
        run_cmake(&work, &p, &fake).unwrap();
        let calls = steps(&fake);
        assert!(fake.calls.borrow().iter().all(|c| c.cmd.group
            && c.cmd.stdin == crate::process::Stdin::Null
            && c.cmd.cwd.as_deref() == Some(work.logs().as_path())));
        let steps: Vec<&str> = calls.iter().map(|c| c.0.as_str()).collect();
        assert_eq!(steps, ["configure", "build", "install"]);
        let configure = &calls[0].1;
        assert!(configure[0].starts_with("/home/someone/checkout/vendor/cache/tools/cmake"));
        assert!(
            configure.contains(&format!("{}/src", work.alias.display())),
            "the build sees the stable path"
        );
        assert_eq!(
            std::fs::read_link(work.alias.join("build")).unwrap(),
            work.root.canonicalize().unwrap().join("build")
        );
        assert!(
            !std::fs::symlink_metadata(&work.alias)
                .unwrap()
                .file_type()
                .is_symlink(),
            "the stable dir is real"
        );
        assert!(
            configure.iter().all(|a| !a.contains("${")),
            "placeholders left: {configure:?}"
        );
        let env_names: Vec<&String> = calls[0].2.keys().collect();
        assert_eq!(env_names, ["LC_ALL", "PATH", "SOURCE_DATE_EPOCH", "TZ"]);
    }

    /// An sdist-like archive: `top/CMakeLists.txt`, `top/vendor/llama.cpp/{CMakeLists.txt,a.c}`.
    fn sdist(at: &Path) {
        let gz = flate2::write::GzEncoder::new(
            std::fs::File::create(at).unwrap(),
            flate2::Compression::fast(),
        );
        let mut tar = tar::Builder::new(gz);
        for (name, data) in [
            ("top/CMakeLists.txt", "project(py)\n"),
            ("top/vendor/llama.cpp/CMakeLists.txt", "project(llama)\n"),
            ("top/vendor/llama.cpp/a.c", "int a = A;\n"),
        ] {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_mtime(1);
            h.set_cksum();
            tar.append_data(&mut h, name, data.as_bytes()).unwrap();
        }
        tar.into_inner().unwrap().finish().unwrap();
    }

    /// The two recipes of one download (llama-cpp-python's wheel of the sdist, llama.cpp's
    /// archive of its vendor/llama.cpp) compile at one stable path, each building in its
    /// own work dir; each finds the tree the other left patched its own way and unpacks
    /// afresh, and the same plan again reuses its tree.
    #[test]
    fn plans_of_one_download_share_the_stable_path_never_each_others_tree() {
        let tmp = tempfile::tempdir().unwrap();
        let archive = tmp.path().join("sdist.tar.gz");
        sdist(&archive);
        let mut base = plan();
        base.source.kind = crate::plan::SourceKind::Sdist;
        base.source.location = "https://example.invalid/sdist.tar.gz".into();
        base.source.strip = "top".into();
        base.source.project_dir = ".".into();
        base.source_date_epoch = 1000;
        let patch = |to: &str| crate::recipe::Patch {
            file: "vendor/llama.cpp/a.c".into(),
            find: "A".into(),
            replace: to.into(),
            reason: "test".into(),
            targets: vec![],
            meta: Default::default(),
        };
        let mut wheel = base.clone();
        wheel.source.patches = vec![patch("1")];
        let mut tools = base.clone();
        tools.recipe = "llama.cpp".into();
        tools.source.project_dir = "vendor/llama.cpp".into();
        tools.source.patches = vec![patch("2")];
        let (root, cache, repo) = (tmp.path().join("b"), tmp.path().join("c"), tmp.path());
        let w = work(&root, &cache, repo, tmp.path(), &wheel);
        let t = work(&root, &cache, repo, tmp.path(), &tools);
        assert_eq!(w.alias, t.alias, "one stable path for one download");
        assert_ne!(w.root, t.root, "a work dir per recipe");
        assert!(w
            .alias
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("src-"));
        assert_eq!(t.cmake_build(), t.build().join("vendor/llama.cpp"));
        assert_eq!(t.project(), t.src().join("vendor/llama.cpp"));

        let log_path = tmp.path().join("log");
        let log = Log::file(&log_path).unwrap();
        let input = SourceInput::Archive(archive);
        let a_c = || std::fs::read_to_string(w.src().join("vendor/llama.cpp/a.c")).unwrap();
        prepare_source(&w, &wheel, &input, &log).unwrap();
        assert_eq!(a_c(), "int a = 1;\n");
        prepare_source(&t, &tools, &input, &log).unwrap();
        assert_eq!(a_c(), "int a = 2;\n");
        prepare_source(&t, &tools, &input, &log).unwrap();
        assert_eq!(a_c(), "int a = 2;\n");
        prepare_source(&w, &wheel, &input, &log).unwrap();
        assert_eq!(a_c(), "int a = 1;\n");
        let said = std::fs::read_to_string(&log_path).unwrap();
        assert_eq!(
            said.matches("unpacked for another plan's source").count(),
            2,
            "{said}"
        );
        assert_eq!(said.matches("source: reusing").count(), 1, "{said}");
    }

    #[test]
    fn stale_stable_dirs_are_removed_live_ones_kept() {
        let d = tempfile::tempdir().unwrap();
        let p = plan();
        let live = work(&d.path().join("live"), d.path(), d.path(), d.path(), &p);
        live.link_alias().unwrap();
        fs::create_dir_all(live.src()).unwrap();
        let gone_root = d.path().join("gone");
        let mut gone = live.clone();
        gone.root = gone_root.join("x");
        gone.alias = live.alias.with_file_name("other-plan");
        gone.link_alias().unwrap();
        fs::create_dir_all(gone.src()).unwrap();
        fs::remove_dir_all(&gone_root).unwrap();
        live.remove_stale();
        assert!(live.src().is_dir(), "this plan's source stays");
        assert!(
            !gone.alias.exists(),
            "a stable dir whose work dir was deleted goes"
        );
    }

    #[test]
    fn failed_build_resumes_without_reconfiguring() {
        let d = tempfile::tempdir().unwrap();
        let p = plan();
        let work = work(d.path(), d.path(), d.path(), d.path(), &p);
        let failing = FakeRunner {
            fail_step: Some("build"),
            ..Default::default()
        };
        assert!(run_cmake(&work, &p, &failing).is_err());
        let again = FakeRunner::default();
        run_cmake(&work, &p, &again).unwrap();
        let steps: Vec<String> = steps(&again).into_iter().map(|c| c.0).collect();
        assert_eq!(steps, ["build", "install"]);
    }

    /// A plan built through sccache, with a Redis endpoint from the user's environment.
    fn sccache_plan() -> Plan {
        let mut p = plan();
        let tool = crate::detect::toolchain::Tool {
            path: PathBuf::from("/c/tools/sccache-0.16.0/sccache"),
            version: "0.16.0".parse().unwrap(),
            origin: crate::platform::host::Origin::System,
        };
        let user: BTreeMap<String, String> = [(
            "SCCACHE_REDIS_ENDPOINT".to_string(),
            "redis://127.0.0.1:1".to_string(),
        )]
        .into();
        p.launcher = Some(crate::plan::launcher::plan(
            crate::request::LauncherKind::Sccache,
            &tool,
            crate::plan::launcher::Wrapped::GccOrClang,
            None,
            &user,
            Path::new("/c"),
            true,
        ));
        p
    }

    /// (step or `output`, argv without the program) of each call.
    fn calls(fake: &FakeRunner) -> Vec<(String, String)> {
        fake.calls
            .borrow()
            .iter()
            .map(|c| {
                (
                    c.step.clone().unwrap_or_else(|| "output".into()),
                    c.cmd.arg_strs().join(" "),
                )
            })
            .collect()
    }

    #[test]
    fn sccache_builds_run_inside_a_server_of_their_own_with_exactly_the_build_env() {
        let d = tempfile::tempdir().unwrap();
        let p = sccache_plan();
        let work = work(d.path(), d.path(), d.path(), d.path(), &p);
        let fake = FakeRunner::replying(|cmd| {
            Ok(if cmd.arg_strs().contains(&"--show-stats".to_string()) {
                crate::process::Output::ok("{\"stats\":{}}", "")
            } else {
                crate::process::Output::ok("", "")
            })
        });
        run_cmake(&work, &p, &fake).unwrap();
        let got = calls(&fake);
        let names: Vec<(&str, &str)> = got
            .iter()
            .map(|(s, a)| (s.as_str(), a.split(' ').next().unwrap()))
            .collect();
        assert_eq!(
            names,
            [
                ("output", "--stop-server"),
                ("output", "--start-server"),
                ("configure", "-S"),
                ("build", "--build"),
                ("install", "--install"),
                ("output", "--show-stats"),
                ("output", "--stop-server"),
            ],
            "{got:?}"
        );
        let socket = format!("{}/build/sccache.sock", work.alias.display());
        for c in fake.calls.borrow().iter() {
            let crate::process::Env::Exact(env) = &c.cmd.env else {
                panic!("{}: inherits the environment", c.cmd)
            };
            assert_eq!(env["SCCACHE_SERVER_UDS"], socket, "{}", c.cmd);
            assert_eq!(env["SCCACHE_REDIS_ENDPOINT"], "redis://127.0.0.1:1");
            assert_eq!(
                env["PATH"],
                p.env.iter().find(|s| s.name == "PATH").unwrap().value
            );
            if c.step.is_none() {
                // `${CACHE}/...` in the plan, resolved to this work dir's cache.
                assert_eq!(c.cmd.program, d.path().join("tools/sccache-0.16.0/sccache"));
                assert!(!c.cmd.group, "the server outlives `--start-server`");
            }
        }
        assert_eq!(
            std::fs::read_to_string(work.cache_stats()).unwrap(),
            "{\"stats\":{}}"
        );

        // A failed build keeps its statistics and stops its server too.
        let failing = FakeRunner {
            fail_step: Some("build"),
            ..Default::default()
        };
        assert!(run_cmake(&work, &p, &failing).is_err());
        let got = calls(&failing);
        assert_eq!(
            got.last().unwrap(),
            &("output".to_string(), "--stop-server".to_string())
        );
        assert_eq!(got[got.len() - 2].1, "--show-stats --stats-format json");
    }

    #[test]
    fn a_server_that_does_not_start_fails_the_build_before_cmake() {
        let d = tempfile::tempdir().unwrap();
        let p = sccache_plan();
        let work = work(d.path(), d.path(), d.path(), d.path(), &p);
        let fake = FakeRunner::replying(|cmd| {
            Ok(if cmd.arg_strs() == ["--start-server"] {
                crate::process::Output {
                    stdout: "sccache: error: Server startup failed: cache storage failed to read: Unexpected (temporary) at read".into(),
                    ..crate::process::Output::failed(2)
                }
            } else {
                crate::process::Output::ok("", "")
            })
        });
        let e = format!("{:#}", run_cmake(&work, &p, &fake).unwrap_err());
        assert!(
            e.contains("cannot start sccache's server for this build")
                && e.contains("Server startup failed"),
            "{e}"
        );
        assert!(
            fake.calls.borrow().iter().all(|c| c.step.is_none()),
            "no CMake step ran"
        );
    }

    #[test]
    fn failed_configure_is_retried() {
        let d = tempfile::tempdir().unwrap();
        let p = plan();
        let work = work(d.path(), d.path(), d.path(), d.path(), &p);
        let failing = FakeRunner {
            fail_step: Some("configure"),
            ..Default::default()
        };
        assert!(run_cmake(&work, &p, &failing).is_err());
        let again = FakeRunner::default();
        run_cmake(&work, &p, &again).unwrap();
        assert_eq!(steps(&again)[0].0, "configure");
    }
}
