//! `cargo xtask`: only reads the command line and the environment, and dispatches.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use xtask::commands;
use xtask::exit::Exit;
use xtask::report::ERROR;

fn main() -> ExitCode {
    // `cargo xtask plan --json | head`: a closed pipe ends the tool quietly, as it does
    // any Unix filter, instead of a panic in println!.
    #[cfg(unix)]
    // SAFETY: at the start of main, before any thread: the default action for SIGPIPE.
    unsafe {
        let _ = nix::sys::signal::signal(
            nix::sys::signal::Signal::SIGPIPE,
            nix::sys::signal::SigHandler::SigDfl,
        );
    }
    let cli = commands::Cli::parse();
    let env = xtask::detect::Env::from_process();
    xtask::report::set_color(cli.color(&env));
    let result = commands::run(cli, &env);
    let exit = Exit::of_run(&result, xtask::process::group::interrupted());
    let message = match (&result, exit) {
        // An error can quote an artifact's or a download's text: escaped for the terminal.
        (Err(e), _) => Some(format!("{e:#}")),
        (Ok(_), Some(Exit::Interrupted(sig))) => Some(format!(
            "interrupted by {}: the build steps were stopped",
            xtask::process::group::signal_name(sig)
        )),
        (Ok(_), _) => None,
    };
    if let Some(m) = &message {
        anstream::eprintln!(
            "{}error:{} {}",
            ERROR.render(),
            ERROR.render_reset(),
            xtask::escape::text(m)
        );
    }
    match (exit, result) {
        (Some(Exit::Interrupted(sig)), _) => end_by(sig),
        (Some(exit), _) => exit.into(),
        (None, Ok(code)) => code,
        (None, Err(e)) => Exit::of_error(&e).into(),
    }
}

/// Ends the tool by signal `sig`, as it would have ended without its handler: after the
/// build steps were stopped, a shell shows 128 + `sig` (130 for Ctrl-C) and a script that
/// ran the tool stops too, as it does when any program is interrupted. Where the signal
/// cannot be raised, that code.
fn end_by(sig: i32) -> ExitCode {
    let _ = std::io::stdout().flush();
    #[cfg(unix)]
    if let Ok(s) = nix::sys::signal::Signal::try_from(sig) {
        // SAFETY: the default disposition, then the signal to this process; every
        // thread the command started has ended.
        unsafe {
            let _ = nix::sys::signal::signal(s, nix::sys::signal::SigHandler::SigDfl);
        }
        let _ = nix::sys::signal::raise(s);
    }
    Exit::Interrupted(sig).into()
}
