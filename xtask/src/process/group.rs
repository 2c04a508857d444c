//! A build step's processes, as one process group that ends with the step.
//!
//! CMake and Ninja run in a process group of their own, so the tool decides
//! when they end and nothing a step started outlives it:
//! - when the step's first process (the leader: cmake, ninja) exits, whatever
//!   it left in its group is killed: a straggler would hold the log pipe open,
//!   or go on writing in the build dir after the work lock is released;
//! - when the tool fails, panics, or gets SIGINT, SIGTERM or SIGHUP while a step
//!   runs, the group gets SIGTERM (Ninja then stops the compilers it runs, each
//!   in a group of its own, and waits for them), and SIGKILL after [`GRACE`];
//!   the step returns only once its leader is gone, so the tool exits (and
//!   releases the work lock) after the step's processes, not before.
//!
//! The leader is the step's reaper ([`reaper`], Linux), which keeps every
//! process the step starts below it, also those Ninja puts in groups of their own.
//! A SIGKILL of the tool cannot be caught. On Linux the reaper then gets SIGTERM
//! from the kernel (`PR_SET_PDEATHSIG`), and ends every process below it as on
//! Ctrl-C; the work lock is free the moment the tool dies, so a build started in
//! the next second can overlap those last seconds. That is harmless: Ninja
//! records a command only when it finishes, so the next build reruns every
//! command the killed one had not finished, and the last writer of an object is
//! a finished compile of the current inputs.
//!
//! Signals reach the tool, not the step (its group is not the terminal's), so
//! while a step runs the tool catches them and stops the step; when no step runs
//! they end the tool as before.

use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering::SeqCst};
use std::time::Duration;

/// How long a step's processes get to stop after SIGTERM, before SIGKILL.
pub const GRACE: Duration = Duration::from_secs(10);

/// The signal that interrupted the tool while a step ran (0: none).
static INTERRUPTED: AtomicI32 = AtomicI32::new(0);
/// How many steps run now: when none, a signal ends the tool at once.
static ACTIVE: AtomicUsize = AtomicUsize::new(0);

/// The signal (SIGINT, SIGTERM, SIGHUP) that interrupted a step of this tool, if one did.
pub fn interrupted() -> Option<i32> {
    match INTERRUPTED.load(SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// `SIGINT` for 2.
pub fn signal_name(sig: i32) -> String {
    #[cfg(unix)]
    if let Ok(s) = nix::sys::signal::Signal::try_from(sig) {
        return s.as_str().to_string();
    }
    format!("signal {sig}")
}

/// Held while a step's processes run: a signal then stops the step (and the
/// tool after it) instead of killing the tool at once and orphaning the step.
pub struct Running(());

impl Running {
    pub fn start() -> Running {
        #[cfg(target_os = "linux")]
        linux::install_handlers();
        ACTIVE.fetch_add(1, SeqCst);
        Running(())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // Before the caller reads `interrupted()`: a signal that found this step
        // running has been recorded by then (the handler stores, then reads ACTIVE).
        ACTIVE.fetch_sub(1, SeqCst);
    }
}

/// Makes `cmd` the leader of a new process group that dies with the tool (Linux).
pub fn isolate(cmd: &mut Command) {
    #[cfg(target_os = "linux")]
    linux::isolate(cmd);
    #[cfg(not(target_os = "linux"))]
    let _ = cmd;
}

#[cfg(target_os = "linux")]
#[path = "reaper.rs"]
pub mod reaper;

/// Where `args` (this process's, `argv[0]` first) say it was started as a build step's
/// reaper ([`reaper`], Linux): runs it and returns the code to exit with.
pub fn reaper_main(args: &[std::ffi::OsString]) -> Option<i32> {
    #[cfg(target_os = "linux")]
    if let Some(command) = reaper::command_of(args) {
        return Some(reaper::run(command));
    }
    let _ = args;
    None
}

/// Called by the tool's `main`: build steps run below a reaper from now on (Linux).
pub fn use_reaper() {
    #[cfg(target_os = "linux")]
    reaper::enable();
}

/// The process that runs `program`: for a build step (`step`), its reaper where the tool
/// has one ([`use_reaper`]); the command's arguments go after.
pub fn program(program: &std::ffi::OsStr, step: bool) -> Command {
    #[cfg(target_os = "linux")]
    if step && reaper::enabled() {
        return reaper::command(program);
    }
    let _ = step;
    Command::new(program)
}

/// Kills the process group led by `leader` (Linux; elsewhere nothing: the caller kills
/// the leader itself).
pub fn kill(leader: u32) {
    #[cfg(target_os = "linux")]
    let _ = nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(leader as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
    #[cfg(not(target_os = "linux"))]
    let _ = leader;
}

/// Sets the flag when dropped unless disarmed: a step left early (an error, a
/// panic) tells [`watch`] to stop its processes.
pub struct StopOnDrop<'a>(pub &'a AtomicBool, pub bool);

impl StopOnDrop<'_> {
    pub fn disarm(mut self) {
        self.1 = false;
    }
}

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        if self.1 {
            self.0.store(true, SeqCst);
        }
    }
}

/// Watches the group led by `leader` until the leader is gone: when it exits,
/// kills what is left of its group; when `stop` is set or `interrupted` says
/// so, ends the group (SIGTERM, then SIGKILL after `grace`). Returns once the
/// leader has exited (it may still wait to be reaped) and no other process of
/// its group runs (or, if one outlives a SIGKILL by `grace`, after that).
pub fn watch(
    leader: u32,
    stop: &AtomicBool,
    interrupted: &(dyn Fn() -> Option<i32> + Sync),
    grace: Duration,
) {
    #[cfg(target_os = "linux")]
    linux::watch(leader, stop, interrupted, grace);
    #[cfg(not(target_os = "linux"))]
    let _ = (leader, stop, interrupted, grace);
}

#[cfg(target_os = "linux")]
mod linux {
    use super::*;
    use nix::errno::Errno;
    use nix::libc;
    use nix::sys::signal::{
        killpg, raise, sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal,
    };
    use nix::sys::wait::{waitid, Id, WaitPidFlag, WaitStatus};
    use nix::unistd::Pid;
    use std::time::Instant;

    const POLL: Duration = Duration::from_millis(50);
    const SIGNALS: [Signal; 3] = [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP];

    extern "C" fn on_signal(sig: libc::c_int) {
        // Only async-signal-safe work here: atomics, sigaction, raise.
        INTERRUPTED.store(sig, SeqCst);
        if ACTIVE.load(SeqCst) == 0 {
            // No step runs: end as if this handler were not there.
            if let Ok(s) = Signal::try_from(sig) {
                let default = SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty());
                // SAFETY: restoring the default disposition.
                let _ = unsafe { sigaction(s, &default) };
                let _ = raise(s);
            }
        }
    }

    pub(crate) fn install_handlers() {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            let action = SigAction::new(
                SigHandler::Handler(on_signal),
                SaFlags::SA_RESTART,
                SigSet::empty(),
            );
            for s in SIGNALS {
                // SAFETY: the handler only touches atomics and restores the default.
                if let Ok(old) = unsafe { sigaction(s, &action) } {
                    if matches!(old.handler(), SigHandler::SigIgn) {
                        // Ignored by whoever started the tool (nohup): it stays ignored.
                        let _ = unsafe { sigaction(s, &old) };
                    }
                }
            }
        });
    }

    /// The death signal fires when the *thread* that spawned the leader ends,
    /// not only the process: a step must be run (spawned and waited for) on one
    /// thread that outlives it, as `run_step` does; release cells each run on a
    /// thread of their own that waits for its steps.
    pub(crate) fn isolate(cmd: &mut Command) {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
        let tool = nix::unistd::getpid();
        // SAFETY: between fork and exec only async-signal-safe system calls
        // (prctl, getppid) and no allocation.
        unsafe {
            cmd.pre_exec(move || {
                nix::sys::prctl::set_pdeathsig(Signal::SIGTERM)?;
                // The tool died before the prctl: nobody would send the signal.
                if nix::unistd::getppid() != tool {
                    return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
                }
                Ok(())
            });
        }
    }

    /// The leader has exited (it may be a zombie still; reaped is exited too).
    fn exited(leader: Pid) -> bool {
        !matches!(
            waitid(
                Id::Pid(leader),
                WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT,
            ),
            Ok(WaitStatus::StillAlive) | Err(Errno::EINTR)
        )
    }

    /// Waits (at most `bound`) until no process of the group `pgid` runs: a
    /// SIGKILL is only pending until its target is next scheduled, and on a
    /// loaded machine the leader can be gone while a child of it still runs for
    /// a moment. Zombies count as gone (they hold no files and run no code).
    fn wait_group_gone(pgid: Pid, bound: Duration) {
        let t = Instant::now();
        while group_runs(pgid) && t.elapsed() < bound {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// What a process's `/proc/<pid>/stat` line says: whether it runs (is not a
    /// zombie) and its process group. The line is `pid (comm) state ppid pgrp ...`,
    /// and comm may hold spaces and parentheses.
    pub(super) fn proc_stat(stat: &str) -> (bool, Option<i32>) {
        let mut rest = stat
            .rsplit_once(')')
            .map_or("", |(_, r)| r)
            .split_whitespace();
        let state = rest.next();
        let pgrp = rest.nth(1).and_then(|g| g.parse::<i32>().ok());
        (!matches!(state, Some("Z" | "X")), pgrp)
    }

    /// Some process of group `pgid` is not a zombie.
    fn group_runs(pgid: Pid) -> bool {
        let Ok(dir) = fs_err::read_dir("/proc") else {
            return false;
        };
        dir.flatten()
            .filter(|e| {
                e.file_name()
                    .to_str()
                    .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
            })
            .filter_map(|e| fs_err::read_to_string(e.path().join("stat")).ok())
            .any(|stat| proc_stat(&stat) == (true, Some(pgid.as_raw())))
    }

    pub(crate) fn watch(
        leader: u32,
        stop: &AtomicBool,
        interrupted: &(dyn Fn() -> Option<i32> + Sync),
        grace: Duration,
    ) {
        let leader = Pid::from_raw(leader as i32);
        loop {
            if exited(leader) {
                // The caller reaps the leader only after this returns: its pid,
                // the group's id, is not free yet, so this reaches only the group.
                let _ = killpg(leader, Signal::SIGKILL);
                wait_group_gone(leader, grace);
                return;
            }
            if stop.load(SeqCst) || interrupted().is_some() {
                let _ = killpg(leader, Signal::SIGTERM);
                let t = Instant::now();
                while !exited(leader) && t.elapsed() < grace {
                    std::thread::sleep(POLL);
                }
                let _ = killpg(leader, Signal::SIGKILL);
                while !exited(leader) {
                    std::thread::sleep(POLL);
                }
                wait_group_gone(leader, grace);
                return;
            }
            std::thread::sleep(POLL);
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::path::Path;
    use std::time::Instant;

    /// The process is gone: no such pid, or a zombie nobody reaped yet.
    fn gone(pid: u32) -> bool {
        match fs_err::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(s) => !linux::proc_stat(&s).0,
        }
    }

    fn wait_gone(pid: u32) -> bool {
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(5) {
            if gone(pid) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    fn read_pid(file: &Path) -> Option<u32> {
        fs_err::read_to_string(file).ok()?.trim().parse().ok()
    }

    /// Runs `script` with `sh -c` as a step, on a thread, failing the test if it hangs.
    fn step(
        script: &str,
        log: &Path,
        interrupted: impl Fn() -> Option<i32> + Sync + Send + 'static,
    ) -> anyhow::Result<()> {
        let env: BTreeMap<String, String> =
            [("PATH".to_string(), "/usr/bin:/bin".to_string())].into();
        let cmd = crate::process::Command::step(
            &["/bin/sh".to_string(), "-c".to_string(), script.to_string()],
            &env,
            log.parent(),
        );
        let log = log.to_path_buf();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(crate::process::run_step(
                "test",
                &cmd,
                &log,
                &interrupted,
                Duration::from_secs(1),
                &crate::report::Log::stderr(),
            ));
        });
        rx.recv_timeout(Duration::from_secs(60))
            .expect("the step returned: nothing it left holds it up")
    }

    #[test]
    fn what_a_step_leaves_in_its_group_dies_with_it() {
        let d = tempfile::tempdir().unwrap();
        let pid = d.path().join("pid");
        // The leader fails while its child still holds the log pipe open.
        let e = step(
            &format!("sleep 300 & echo $! > {}; exit 3", pid.display()),
            &d.path().join("a.log"),
            || None,
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("test failed (exit status: 3)"),
            "{e}"
        );
        assert!(
            wait_gone(read_pid(&pid).unwrap()),
            "the failed step's leftover sleep was killed"
        );
        // The leader succeeds, its child detached from the pipe.
        fs_err::remove_file(&pid).unwrap();
        step(
            &format!("sleep 300 >/dev/null 2>&1 & echo $! > {}", pid.display()),
            &d.path().join("b.log"),
            || None,
        )
        .unwrap();
        assert!(
            wait_gone(read_pid(&pid).unwrap()),
            "a finished step's leftover sleep was killed"
        );
    }

    #[test]
    fn an_interrupted_step_ends_with_everything_it_started() {
        let d = tempfile::tempdir().unwrap();
        for (name, script) in [
            ("polite", "sleep 300 & echo $! > {pid}; wait"),
            // Ignores SIGTERM (and so does its child): SIGKILL after the grace period.
            (
                "stubborn",
                "trap '' TERM; sleep 300 & echo $! > {pid}; wait; wait; wait",
            ),
        ] {
            let pid = d.path().join(format!("{name}.pid"));
            let script = script.replace("{pid}", &pid.display().to_string());
            let p = pid.clone();
            let t = Instant::now();
            // Interrupt once the pid is written, not when the file merely exists:
            // `echo $! > file` creates it empty first, and a step stopped in between
            // leaves no pid to check (a race seen on a loaded 2-core machine).
            let e = step(&script, &d.path().join(format!("{name}.log")), move || {
                read_pid(&p).map(|_| 2)
            })
            .unwrap_err();
            assert_eq!(
                e.to_string(),
                "interrupted by SIGINT: stopped test and every process it started",
                "{name}"
            );
            let child = read_pid(&pid).unwrap();
            assert!(
                gone(child),
                "{name}: the step returned only after its processes were gone"
            );
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "{name}: {:?}",
                t.elapsed()
            );
        }
    }

    #[test]
    fn an_early_return_stops_the_group() {
        let mut cmd = Command::new("/bin/sh");
        let d = tempfile::tempdir().unwrap();
        let pid = d.path().join("pid");
        cmd.args([
            "-c",
            &format!("sleep 300 & echo $! > {}; wait", pid.display()),
        ]);
        isolate(&mut cmd);
        let mut child = cmd.spawn().unwrap();
        while read_pid(&pid).is_none() {
            std::thread::sleep(Duration::from_millis(20));
        }
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| watch(child.id(), &stop, &|| None, Duration::from_secs(1)));
            // What a `?` or a panic in the reading loop does.
            drop(StopOnDrop(&stop, true));
        });
        child.wait().unwrap();
        assert!(wait_gone(read_pid(&pid).unwrap()));
        // Disarmed (the step read its output to the end): nothing is stopped by it.
        let flag = AtomicBool::new(false);
        StopOnDrop(&flag, true).disarm();
        assert!(!flag.load(SeqCst));
    }
}
