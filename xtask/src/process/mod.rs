//! Every child process of the tool starts here: one typed description of a
//! command ([`Command`]), one trait that runs it ([`Processes`]), the real
//! machine ([`System`]) and, for tests, a fake that records what would run
//! ([`Recorder`]).
//!
//! Two ways to run a command:
//! - [`Processes::output`]: run to the end and capture its output (probes:
//!   `--version`, vswhere, the vcvars capture, cuobjdump, patchelf, the host C
//!   compiler);
//! - [`Processes::step`]: a build step (CMake, Ninja): its output goes to a
//!   log, Ninja's `[n/N]` to a progress bar, and it runs in a process group of
//!   its own that ends with it (see [`group`]).

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use fs_err as fs;

pub mod group;

/// The environment a command gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Env {
    /// This process's environment, as it is.
    Inherit,
    /// Exactly these variables, nothing inherited.
    Exact(BTreeMap<String, String>),
}

/// Where a command's stdin comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stdin {
    /// This process's stdin.
    Inherit,
    /// Empty: a read gets end of file at once.
    Null,
}

/// One process to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// Pass `args` to the command line as written, unquoted: `cmd /c` takes a
    /// command line, not an argument vector (Windows only; elsewhere ignored).
    pub verbatim: bool,
    pub env: Env,
    /// The working directory, or `None` for this process's.
    pub cwd: Option<PathBuf>,
    pub stdin: Stdin,
    /// stderr goes into stdout, interleaved as written ([`Output::stderr`] stays empty).
    pub merge_stderr: bool,
    /// The process leads a process group of its own that dies with the tool
    /// (see [`group`]). Build steps always do.
    pub group: bool,
    /// [`Processes::output`] ends the process (on Linux its whole process group) when it
    /// has run this long, and answers with an error of kind `TimedOut`. `None`: no limit.
    pub timeout: Option<std::time::Duration>,
    /// [`Processes::output`] reads at most this many bytes of stdout and of stderr
    /// each; past it the process is ended as past [`Command::timeout`], and the answer is
    /// an error of kind `FileTooLarge` saying so. `None`: no limit.
    pub max_output: Option<u64>,
}

impl Command {
    /// `program` with no arguments, this process's environment, stdin and
    /// working directory, stdout and stderr captured apart.
    pub fn new(program: impl Into<PathBuf>) -> Command {
        Command {
            program: program.into(),
            args: Vec::new(),
            verbatim: false,
            env: Env::Inherit,
            cwd: None,
            stdin: Stdin::Inherit,
            merge_stderr: false,
            group: false,
            timeout: None,
            max_output: None,
        }
    }

    /// At most `bytes` of stdout and of stderr each, read by [`Processes::output`] (see
    /// [`Command::max_output`]): a probe that prints without end cannot fill memory.
    pub fn max_output(mut self, bytes: u64) -> Command {
        self.max_output = Some(bytes);
        self
    }

    /// Ended after `limit` by [`Processes::output`] (see [`Command::timeout`]).
    pub fn timeout(mut self, limit: std::time::Duration) -> Command {
        self.timeout = Some(limit);
        self
    }

    /// A build step: `argv` with exactly `env`, in `cwd`, stdin empty, in a
    /// process group of its own.
    pub fn step(argv: &[String], env: &BTreeMap<String, String>, cwd: Option<&Path>) -> Command {
        let mut c = Command::new(&argv[0]).args(&argv[1..]);
        c.env = Env::Exact(env.clone());
        c.cwd = cwd.map(Path::to_path_buf);
        c.stdin = Stdin::Null;
        c.group = true;
        c
    }

    pub fn arg(mut self, a: impl AsRef<OsStr>) -> Command {
        self.args.push(a.as_ref().to_os_string());
        self
    }

    pub fn args<I: IntoIterator>(mut self, args: I) -> Command
    where
        I::Item: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_os_string()));
        self
    }

    /// stderr interleaved into stdout.
    pub fn merge_stderr(mut self) -> Command {
        self.merge_stderr = true;
        self
    }

    /// The arguments as text (lossy where a path is not Unicode).
    pub fn arg_strs(&self) -> Vec<String> {
        self.args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    fn std(&self) -> std::process::Command {
        // A build step runs below a reaper of its own: nothing it starts outlives it.
        let mut c = group::program(self.program.as_os_str(), self.group);
        self.add_args(&mut c);
        if let Env::Exact(env) = &self.env {
            c.env_clear().envs(env);
        }
        if let Some(dir) = &self.cwd {
            c.current_dir(dir);
        }
        c.stdin(match self.stdin {
            Stdin::Inherit => std::process::Stdio::inherit(),
            Stdin::Null => std::process::Stdio::null(),
        });
        if self.group {
            group::isolate(&mut c);
        }
        c
    }

    fn add_args(&self, c: &mut std::process::Command) {
        #[cfg(windows)]
        if self.verbatim {
            use std::os::windows::process::CommandExt;
            for a in &self.args {
                c.raw_arg(a);
            }
            return;
        }
        c.args(&self.args);
    }
}

/// `program arg arg`, as a user would type it (no quoting).
impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.program.display())?;
        for a in &self.args {
            write!(f, " {}", a.to_string_lossy())?;
        }
        Ok(())
    }
}

/// How a process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    success: bool,
    code: Option<i32>,
    /// As the platform describes it (`exit status: 3`, `signal: 9 (SIGKILL)`).
    text: String,
}

impl Status {
    /// Exited with `code` (as `exit status: N` on Unix).
    pub fn exited(code: i32) -> Status {
        Status {
            success: code == 0,
            code: Some(code),
            text: format!("exit status: {code}"),
        }
    }
    pub fn success(&self) -> bool {
        self.success
    }
    pub fn code(&self) -> Option<i32> {
        self.code
    }
}

impl From<std::process::ExitStatus> for Status {
    fn from(s: std::process::ExitStatus) -> Status {
        Status {
            success: s.success(),
            code: s.code(),
            text: s.to_string(),
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// What a finished process left (its output as text, lossy where not UTF-8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    pub status: Status,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// Exit code 0 with this output.
    pub fn ok(stdout: &str, stderr: &str) -> Output {
        Output {
            status: Status::exited(0),
            stdout: stdout.into(),
            stderr: stderr.into(),
        }
    }
    /// Exit code `code`, no output.
    pub fn failed(code: i32) -> Output {
        Output {
            status: Status::exited(code),
            stdout: String::new(),
            stderr: String::new(),
        }
    }
    pub fn success(&self) -> bool {
        self.status.success()
    }
}

/// A process that did not start (or whose output could not be read).
#[derive(Debug, thiserror::Error)]
#[error("cannot start `{command}` ({io}): check that {program} exists and can run here", program = .program.display())]
pub struct StartError {
    pub program: PathBuf,
    /// The whole command line, as [`Command`] displays it.
    pub command: String,
    /// Why (in the message, not a source: a chain would repeat it).
    pub io: std::io::Error,
}

impl StartError {
    pub fn new(cmd: &Command, io: std::io::Error) -> StartError {
        StartError {
            program: cmd.program.clone(),
            command: cmd.to_string(),
            io,
        }
    }
    pub fn kind(&self) -> std::io::ErrorKind {
        self.io.kind()
    }
}

/// How the tool starts processes. The real one is [`System`]; tests use a fake.
pub trait Processes {
    /// Runs `cmd` to the end and captures its output. A failing exit status is
    /// an [`Output`], not an error: only a process that did not start is.
    fn output(&self, cmd: &Command) -> Result<Output, StartError>;

    /// Runs the build step `step` (`configure`, `build`, `install`): its
    /// output goes to `log`, and to a progress bar; a failing exit status is an
    /// error with the log's last lines. The step runs in a process group of its
    /// own that ends with it, whatever `cmd.group` says.
    fn step(&self, step: &str, cmd: &Command, log: &Path) -> anyhow::Result<()>;
}

/// The real machine.
pub struct System;

impl Processes for System {
    fn output(&self, cmd: &Command) -> Result<Output, StartError> {
        if cmd.timeout.is_some() || cmd.max_output.is_some() {
            return output_within(cmd);
        }
        let err = |e| StartError::new(cmd, e);
        let mut c = cmd.std();
        if !cmd.merge_stderr {
            let out = c.output().map_err(err)?;
            return Ok(Output {
                status: out.status.into(),
                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            });
        }
        // One pipe for both: the output interleaved as written.
        let (mut reader, writer) = std::io::pipe().map_err(err)?;
        c.stdout(writer.try_clone().map_err(err)?).stderr(writer);
        let mut child = c.spawn().map_err(err)?;
        // The write ends live in `c`: without them the output ends when the process does.
        drop(c);
        let mut bytes = Vec::new();
        let read = reader.read_to_end(&mut bytes);
        let status = child.wait().map_err(err)?;
        read.map_err(err)?;
        Ok(Output {
            status: status.into(),
            stdout: String::from_utf8_lossy(&bytes).into_owned(),
            stderr: String::new(),
        })
    }

    /// Spawns the command with exactly the plan's environment, logs everything to
    /// `log`, and shows Ninja's `[n/N]` progress. The command runs in a process
    /// group of its own that ends with the step (see [`group`]): nothing it started
    /// outlives it, and a SIGINT/SIGTERM/SIGHUP to the tool stops the step before
    /// the tool exits (and releases the work lock). Progress on the terminal.
    fn step(&self, step: &str, cmd: &Command, log: &Path) -> anyhow::Result<()> {
        Logged(&crate::report::Log::stderr()).step(step, cmd, log)
    }
}

/// [`Processes::output`] of a command with a time limit ([`Command::timeout`]) or an
/// output limit ([`Command::max_output`]): its output is read on threads while the
/// process is polled; past either limit the process is killed (on Linux with its process
/// group, so nothing it started holds the pipes open) and the answer is an error saying
/// so: of kind `TimedOut` past the time, `FileTooLarge` past the output.
fn output_within(cmd: &Command) -> Result<Output, StartError> {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let err = |e| StartError::new(cmd, e);
    let mut c = cmd.std();
    if !cmd.group {
        group::isolate(&mut c);
    }
    let (out_r, out_w) = std::io::pipe().map_err(err)?;
    let mut err_r = None;
    if cmd.merge_stderr {
        c.stdout(out_w.try_clone().map_err(err)?).stderr(out_w);
    } else {
        let (r, w) = std::io::pipe().map_err(err)?;
        err_r = Some(r);
        c.stdout(out_w).stderr(w);
    }
    let mut child = c.spawn().map_err(err)?;
    // The write ends live in `c`: without them the output ends when the process does.
    drop(c);
    let max = cmd.max_output.unwrap_or(u64::MAX);
    // Which stream went past `max`, if one did (the reader then stops reading).
    let over: Arc<std::sync::Mutex<Option<&'static str>>> = Default::default();
    let stop = Arc::new(AtomicBool::new(false));
    let read = |mut r: std::io::PipeReader, name: &'static str| {
        let (over, stop) = (over.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let mut chunk = [0u8; 64 << 10];
            loop {
                let n = match r.read(&mut chunk) {
                    Ok(0) => return Ok(bytes),
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                };
                if (bytes.len() + n) as u64 > max {
                    over.lock().expect("not poisoned").get_or_insert(name);
                    stop.store(true, Ordering::SeqCst);
                    return Ok(Vec::new());
                }
                bytes.extend_from_slice(&chunk[..n]);
            }
        })
    };
    let stdout = read(out_r, "stdout");
    let stderr = err_r.map(|r| read(r, "stderr"));
    let start = std::time::Instant::now();
    let stop_it = |child: &mut std::process::Child| {
        group::kill(child.id());
        let _ = child.kill();
        let _ = child.wait();
    };
    let too_much = |stream: &str| {
        err(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            format!(
                "it printed more than {} on {stream} and was stopped",
                if max >= 1 << 20 && max.is_multiple_of(1 << 20) {
                    format!("{} MiB", max >> 20)
                } else {
                    format!("{max} bytes")
                }
            ),
        ))
    };
    let status = loop {
        if stop.load(Ordering::SeqCst) {
            stop_it(&mut child);
            let stream = over.lock().expect("not poisoned").unwrap_or("stdout");
            // The readers are left to end with the pipes: nothing of the output is needed.
            return Err(too_much(stream));
        }
        if let Some(status) = child.try_wait().map_err(err)? {
            break status;
        }
        if cmd.timeout.is_some_and(|limit| start.elapsed() >= limit) {
            stop_it(&mut child);
            return Err(err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!(
                    "it did not finish within {} s and was stopped",
                    cmd.timeout.unwrap_or_default().as_secs()
                ),
            )));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let text =
        |h: std::thread::JoinHandle<std::io::Result<Vec<u8>>>| -> Result<String, StartError> {
            let bytes = h
                .join()
                .expect("a pipe reader does not panic")
                .map_err(err)?;
            Ok(String::from_utf8_lossy(&bytes).into_owned())
        };
    let (stdout, stderr) = (
        text(stdout)?,
        match stderr {
            Some(h) => text(h)?,
            None => String::new(),
        },
    );
    // It ended, but printed too much first (a reader stopped at the limit).
    if let Some(stream) = *over.lock().expect("not poisoned") {
        return Err(too_much(stream));
    }
    Ok(Output {
        status: status.into(),
        stdout,
        stderr,
    })
}

/// [`System`], with the steps' progress bars shown only where the build's
/// [`Log`](crate::report::Log) says (not when it is a release cell's log file).
pub struct Logged<'a>(pub &'a crate::report::Log);

impl Processes for Logged<'_> {
    fn output(&self, cmd: &Command) -> Result<Output, StartError> {
        System.output(cmd)
    }

    fn step(&self, step: &str, cmd: &Command, log: &Path) -> anyhow::Result<()> {
        run_step(step, cmd, log, &group::interrupted, group::GRACE, self.0)
    }
}

/// [`System::step`], with where interruptions come from and the grace
/// period as parameters (the tests interrupt without sending signals).
pub(crate) fn run_step(
    step: &str,
    cmd: &Command,
    log: &Path,
    interrupted: &(dyn Fn() -> Option<i32> + Sync),
    grace: std::time::Duration,
    view: &crate::report::Log,
) -> anyhow::Result<()> {
    use std::io::Write;
    let stopped = |sig: i32| {
        anyhow::anyhow!(
            "interrupted by {}: stopped {step} and every process it started",
            group::signal_name(sig)
        )
    };
    // std's Command, not duct: the leader must stay unreaped (a zombie) until
    // the watcher has killed what it left in its group, and duct's reader reaps
    // it the moment the output ends.
    let (reader, writer) = std::io::pipe().context("cannot create a pipe")?;
    let grouped = Command {
        group: true,
        ..cmd.clone()
    };
    let mut child_cmd = grouped.std();
    child_cmd.stdout(writer.try_clone()?).stderr(writer);
    if let Some(dir) = log.parent() {
        fs::create_dir_all(dir)?;
    }
    let mut out =
        fs::File::create(log).with_context(|| format!("cannot write log {}", log.display()))?;
    writeln!(out, "$ {cmd}")?;
    // One line per step, with its log: what a user off a terminal (CI, `| tee`) sees
    // first, and where to look while it runs.
    view.line(format_args!("{step}: log {}", log.display()));
    let running = group::Running::start();
    if let Some(sig) = interrupted() {
        return Err(stopped(sig));
    }
    let mut child = child_cmd.spawn().map_err(|e| StartError::new(cmd, e))?;
    // The pipe's write ends live in `child_cmd`: without them the output ends when the step's processes do.
    drop(child_cmd);
    let leader = child.id();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let progress = std::sync::Mutex::new(crate::progress::Steps::default());
    let read: anyhow::Result<()> = std::thread::scope(|s| {
        s.spawn(|| group::watch(leader, &stop, interrupted, grace));
        // An early return or a panic below ends the group before the scope joins the watcher.
        let guard = group::StopOnDrop(&stop, true);
        let bar = crate::progress::steps(step, view.bars());
        let (done, beat_stop) = std::sync::mpsc::channel::<()>();
        if let Some(every) = view.heartbeat() {
            let progress = &progress;
            s.spawn(move || {
                let started = std::time::Instant::now();
                // Every `every` until the step's output ends (the sender drops).
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    beat_stop.recv_timeout(every)
                {
                    let p = *progress.lock().unwrap_or_else(|e| e.into_inner());
                    view.line(format_args!("{step}: {}", p.heartbeat(started.elapsed())));
                }
            });
        }
        let step_re = regex::Regex::new(r"^\[(\d+)/(\d+)\] (.*)$").expect("static regex");
        let mut lines = BufReader::new(reader);
        let mut line = String::new();
        loop {
            line.clear();
            if lines.read_line(&mut line)? == 0 {
                break;
            }
            out.write_all(line.as_bytes())?;
            if view.streams() {
                view.line(line.trim_end());
            }
            if let Some(c) = step_re.captures(line.trim_end()) {
                let (n, total) = (c[1].parse().unwrap_or(0), c[2].parse().unwrap_or(0));
                *progress.lock().unwrap_or_else(|e| e.into_inner()) =
                    crate::progress::Steps { n, total };
                crate::progress::step_reached(&bar, n, total);
                bar.set_message(c[3].rsplit('/').next().unwrap_or("").to_string());
            } else {
                bar.tick();
            }
        }
        drop(done);
        bar.finish_and_clear();
        guard.disarm();
        Ok(())
    });
    // The watcher has returned: the leader has exited, and its group was killed.
    let status = child.wait()?;
    drop(running);
    if let Some(sig) = interrupted() {
        return Err(stopped(sig));
    }
    read?;
    if status.success() {
        return Ok(());
    }
    drop(out);
    let text = fs::read_to_string(log).unwrap_or_default();
    let tail: Vec<&str> = text
        .lines()
        .rev()
        .take(25)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    bail!(
        "{step} failed ({status}). Last lines:\n{}\nfull log: {}",
        tail.join("\n"),
        log.display()
    )
}

/// One command a [`Recorder`] was asked to run.
#[cfg(test)]
#[derive(Debug, Clone)]
pub struct Call {
    /// The build step's name; `None` for [`Processes::output`].
    pub step: Option<String>,
    pub cmd: Command,
}

/// Records what would run instead of running it. Outputs come from `reply`
/// (default: success, no output); the step named `fail_step` fails.
#[cfg(test)]
pub struct Recorder {
    pub calls: std::cell::RefCell<Vec<Call>>,
    pub fail_step: Option<&'static str>,
    #[allow(clippy::type_complexity)]
    pub reply: Box<dyn Fn(&Command) -> Result<Output, StartError>>,
}

#[cfg(test)]
impl Default for Recorder {
    fn default() -> Recorder {
        Recorder {
            calls: Default::default(),
            fail_step: None,
            reply: Box::new(|_| Ok(Output::ok("", ""))),
        }
    }
}

#[cfg(test)]
impl Recorder {
    /// Replies to every [`Processes::output`] with `reply`.
    pub fn replying(reply: impl Fn(&Command) -> Result<Output, StartError> + 'static) -> Recorder {
        Recorder {
            reply: Box::new(reply),
            ..Default::default()
        }
    }
    /// The commands run so far, as displayed.
    pub fn commands(&self) -> Vec<String> {
        self.calls
            .borrow()
            .iter()
            .map(|c| c.cmd.to_string())
            .collect()
    }
}

#[cfg(test)]
impl Processes for Recorder {
    fn output(&self, cmd: &Command) -> Result<Output, StartError> {
        self.calls.borrow_mut().push(Call {
            step: None,
            cmd: cmd.clone(),
        });
        (self.reply)(cmd)
    }

    fn step(&self, step: &str, cmd: &Command, _log: &Path) -> anyhow::Result<()> {
        self.calls.borrow_mut().push(Call {
            step: Some(step.to_string()),
            cmd: cmd.clone(),
        });
        if self.fail_step == Some(step) {
            bail!("{step} failed");
        }
        Ok(())
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn output_captures_apart_or_merged_and_keeps_the_exact_env() {
        let env: BTreeMap<String, String> = [("ONLY".to_string(), "this".to_string())].into();
        let mut c = Command::new("/bin/sh").args([
            "-c",
            "echo out; echo err >&2; echo ${ONLY-}${HOME-}; exit 3",
        ]);
        c.env = Env::Exact(env);
        let out = System.output(&c).unwrap();
        assert_eq!(out.stdout, "out\nthis\n");
        assert_eq!(out.stderr, "err\n");
        assert_eq!(out.status.code(), Some(3));
        assert_eq!(out.status.to_string(), "exit status: 3");
        let merged = System.output(&c.clone().merge_stderr()).unwrap();
        assert_eq!(merged.stdout, "out\nerr\nthis\n");
        assert_eq!(merged.stderr, "");
    }

    #[test]
    fn a_time_limit_gives_the_same_output_or_stops_the_whole_group() {
        // Within the limit: the same answer as without one, apart and merged.
        let c = Command::new("/bin/sh").args(["-c", "echo out; echo err >&2; exit 3"]);
        for c in [c.clone(), c.clone().merge_stderr()] {
            let timed = System
                .output(&c.clone().timeout(std::time::Duration::from_secs(30)))
                .unwrap();
            assert_eq!(timed, System.output(&c).unwrap());
        }
        // Past it: an error naming the limit, in about the limit, and what the command
        // started in the background (holding the pipe) is gone too.
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let script = format!("sleep 60 & echo $! > {}; wait", pid_file.display());
        let t = std::time::Instant::now();
        let e = System
            .output(
                &Command::new("/bin/sh")
                    .args(["-c", &script])
                    .timeout(std::time::Duration::from_secs(1)),
            )
            .unwrap_err();
        assert!(
            t.elapsed() < std::time::Duration::from_secs(10),
            "{:?}",
            t.elapsed()
        );
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
        assert!(e.to_string().contains("did not finish within 1 s"), "{e}");
        let pid = fs::read_to_string(&pid_file).unwrap().trim().to_string();
        let t = std::time::Instant::now();
        while Path::new(&format!("/proc/{pid}")).exists()
            && !fs::read_to_string(format!("/proc/{pid}/stat"))
                .unwrap_or_default()
                .contains(") Z")
        {
            assert!(
                t.elapsed() < std::time::Duration::from_secs(5),
                "sleep {pid} still runs"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// A command that prints without end is stopped past the output limit, with what it
    /// started, in bounded memory; one within it answers as without a limit.
    #[test]
    fn an_output_limit_stops_a_command_that_prints_without_end() {
        let c = Command::new("/bin/sh").args(["-c", "echo out; echo err >&2; exit 3"]);
        for c in [c.clone(), c.clone().merge_stderr()] {
            let capped = System.output(&c.clone().max_output(1 << 20)).unwrap();
            assert_eq!(capped, System.output(&c).unwrap());
        }
        let t = std::time::Instant::now();
        for (script, stream) in [
            ("yes", "stdout"),
            ("yes >&2", "stderr"),
            ("yes | head -c 2000000; exit 0", "stdout"),
        ] {
            let e = System
                .output(
                    &Command::new("/bin/sh")
                        .args(["-c", script])
                        .max_output(1 << 20)
                        .timeout(std::time::Duration::from_secs(60)),
                )
                .unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::FileTooLarge, "{script}: {e}");
            assert!(
                e.to_string().contains(&format!(
                    "it printed more than 1 MiB on {stream} and was stopped"
                )),
                "{e}"
            );
        }
        // Without a time limit too.
        let e = System
            .output(&Command::new("yes").max_output(1000))
            .unwrap_err();
        assert!(
            e.to_string().contains("more than 1000 bytes on stdout"),
            "{e}"
        );
        assert!(
            t.elapsed() < std::time::Duration::from_secs(30),
            "{:?}",
            t.elapsed()
        );
    }

    #[test]
    fn a_command_that_does_not_start_is_named_with_its_args() {
        let e = System
            .output(&Command::new("/nonexistent/tool").args(["--version", "x"]))
            .unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
        assert!(
            e.to_string().starts_with(
                "cannot start `/nonexistent/tool --version x` (No such file or directory"
            ),
            "{e}"
        );
        assert!(e
            .to_string()
            .ends_with("check that /nonexistent/tool exists and can run here"));
    }
}
