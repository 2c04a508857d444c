//! A build step's reaper (Linux): the one process between the tool and the step's
//! command, so that nothing the step started outlives it, not even after a SIGKILL of
//! the tool.
//!
//! Process groups alone do not hold a step together: Ninja runs each compile in a group
//! of its own, and a compiler or a script may start a session of its own (`setsid`). So
//! the tool starts each step as itself (its binary as `main` found it) under the name
//! [`ARG0`], and that process:
//! - marks itself a child subreaper (`PR_SET_CHILD_SUBREAPER`): whatever the step leaves
//!   behind when its parent exits becomes its child, not init's, so every process of the
//!   step stays below it;
//! - runs the command with its own environment, dir and streams (it changes none: the
//!   plan's environment is the step's);
//! - when the command exits, kills what is left below it and exits as the command did
//!   (the same code, or the same signal);
//! - on SIGTERM, SIGINT or SIGHUP (from the tool, or from the kernel when the tool dies:
//!   its death signal, `PR_SET_PDEATHSIG`, set by `group::isolate`), sends SIGTERM to
//!   every process below it, SIGKILL after `group::GRACE`, and exits once none is left.
//!
//! Only SIGKILL of the reaper itself leaves a step's processes behind; the tool sends it
//! only to a group that outlived SIGTERM by the grace time.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::sync::atomic::{AtomicI32, Ordering::SeqCst};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::libc;
use nix::sys::signal::{kill, raise, sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

/// The name (`argv[0]`) under which the tool's binary runs as a step's reaper.
pub const ARG0: &str = "llama-forge-step-reaper";

/// The signal that asked the reaper to stop the step (0: none yet).
static STOP: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    STOP.store(sig, SeqCst);
}

/// The tool's binary, where steps run below a reaper: set by the tool's `main`
/// ([`enable`]); never in a test binary, whose `main` is another.
static TOOL: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

/// Called by the tool's `main`: build steps run below a reaper from now on. The binary
/// is taken now, as the kernel (or qemu-user, for an aarch64 tool on x86-64) names it:
/// exec of `/proc/self/exe` itself would start qemu, not the tool, under qemu-user.
pub fn enable() {
    if let Ok(exe) = std::env::current_exe() {
        let _ = TOOL.set(exe);
    }
}

/// Whether steps run below a reaper: [`enable`] found the tool's binary, and it starts
/// as a reaper here (tried once, with `/bin/true`). An aarch64 tool under qemu-user on a
/// host that hands aarch64 programs to no emulator cannot start itself: its steps then
/// run as before, in a process group of their own.
pub fn enabled() -> bool {
    static WORKS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    TOOL.get().is_some()
        && *WORKS.get_or_init(|| {
            command(std::ffi::OsStr::new("/bin/true"))
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
}

/// Where `args` (argv, `argv[0]` first) are a reaper's: the step's command after the
/// marker. The marker is `argv[1]`, not only `argv[0]`, which an emulator may replace.
pub fn command_of(args: &[OsString]) -> Option<&[OsString]> {
    (args.get(1).is_some_and(|a| a == ARG0)).then(|| &args[2..])
}

/// The reaper of a step whose command is `program` (its arguments are added after): the
/// tool's binary, named [`ARG0`] and given it first.
pub fn command(program: &std::ffi::OsStr) -> std::process::Command {
    use std::os::unix::process::CommandExt;
    let mut c = std::process::Command::new(TOOL.get().expect("enabled"));
    c.arg0(ARG0).arg(ARG0).arg(program);
    c
}

/// How long the step's processes get between SIGTERM and SIGKILL here: less than the
/// tool's own grace for the step's group, so the reaper ends them before the tool ends it.
const GRACE: Duration = Duration::from_secs(super::GRACE.as_secs() / 2);

/// Runs `argv` as described above and returns the exit code to end with (a command
/// ended by a signal ends the reaper by the same signal instead).
pub fn run(argv: &[OsString]) -> i32 {
    let Some((program, args)) = argv.split_first() else {
        return 2;
    };
    let _ = nix::sys::prctl::set_child_subreaper(true);
    let action = SigAction::new(
        SigHandler::Handler(on_signal),
        SaFlags::empty(),
        SigSet::empty(),
    );
    for s in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
        // SAFETY: the handler only stores to an atomic.
        let _ = unsafe { sigaction(s, &action) };
    }
    let child = match std::process::Command::new(program).args(args).spawn() {
        Ok(c) => c,
        Err(e) => {
            // The tool's step reads this from the log: as a failed spawn would say it.
            let _ = std::io::Write::write_all(
                &mut std::io::stderr(),
                format!("cannot run {}: {e}\n", program.to_string_lossy()).as_bytes(),
            );
            return 127;
        }
    };
    let main = Pid::from_raw(child.id() as i32);
    // Not waited through std: every child, orphans too, is reaped by `waitpid` below.
    drop(child);
    let mut status = None;
    // Polled, not blocked on: a signal between a check and a blocking wait would be missed.
    while status.is_none() && STOP.load(SeqCst) == 0 {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(pid, code)) if pid == main => status = Some(Ok(code)),
            Ok(WaitStatus::Signaled(pid, sig, _)) if pid == main => status = Some(Err(sig)),
            Ok(WaitStatus::StillAlive) => std::thread::sleep(Duration::from_millis(20)),
            Ok(_) | Err(Errno::EINTR) => {}
            // No child at all: the command is gone without a status (cannot happen).
            Err(_) => status = Some(Ok(1)),
        }
    }
    match STOP.load(SeqCst) {
        0 => end_all(Duration::ZERO),
        _ => end_all(GRACE),
    }
    match status {
        Some(Ok(code)) => code,
        Some(Err(sig)) => end_by(sig),
        None => match Signal::try_from(STOP.load(SeqCst)) {
            Ok(sig) => end_by(sig),
            Err(_) => 1,
        },
    }
}

/// Ends every process below this one: SIGTERM first and SIGKILL after `grace` (at once
/// for a zero grace), reaping each, until none is left.
fn end_all(grace: Duration) {
    let start = Instant::now();
    let mut first = if grace.is_zero() {
        Signal::SIGKILL
    } else {
        Signal::SIGTERM
    };
    let mut termed = BTreeSet::new();
    loop {
        while let Ok(s) = waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            if s == WaitStatus::StillAlive {
                break;
            }
        }
        let below = descendants(nix::unistd::getpid().as_raw());
        if below.is_empty() {
            return;
        }
        if start.elapsed() >= grace {
            first = Signal::SIGKILL;
        }
        for pid in below {
            // SIGTERM once per process; SIGKILL every round until it is gone.
            if first == Signal::SIGKILL || termed.insert(pid) {
                let _ = kill(Pid::from_raw(pid), first);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The live (not zombie) processes below `root`, from `/proc`.
fn descendants(root: i32) -> Vec<i32> {
    let mut children: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
    let mut zombie = BTreeSet::new();
    let Ok(dir) = fs_err::read_dir("/proc") else {
        return Vec::new();
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = fs_err::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid ...`: comm may hold spaces and parentheses.
        let mut rest = stat
            .rsplit_once(')')
            .map(|(_, r)| r)
            .unwrap_or("")
            .split_whitespace();
        let state = rest.next().unwrap_or("");
        let Some(ppid) = rest.next().and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        if state == "Z" || state == "X" {
            zombie.insert(pid);
        }
        children.entry(ppid).or_default().push(pid);
    }
    let mut out = Vec::new();
    let mut todo = vec![root];
    while let Some(p) = todo.pop() {
        for &c in children.get(&p).map(Vec::as_slice).unwrap_or(&[]) {
            if !zombie.contains(&c) {
                out.push(c);
            }
            todo.push(c);
        }
    }
    out
}

/// Ends this process by `sig`, as the command ended (its default action restored first).
fn end_by(sig: Signal) -> i32 {
    let default = SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty());
    // SAFETY: restoring the default disposition before raising it.
    let _ = unsafe { sigaction(sig, &default) };
    let _ = raise(sig);
    128 + sig as i32
}

#[cfg(test)]
mod tests {
    #[test]
    fn descendants_of_this_process_include_a_grandchild() {
        let mut sh = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & echo $!; wait"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(sh.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let sleep: i32 = line.trim().parse().unwrap();
        let below = super::descendants(std::process::id() as i32);
        assert!(
            below.contains(&(sh.id() as i32)) && below.contains(&sleep),
            "{below:?}"
        );
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(sleep),
            nix::sys::signal::Signal::SIGKILL,
        );
        sh.wait().unwrap();
    }
}
