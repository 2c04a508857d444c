//! `cargo xtask`: only reads the command line and the environment, and dispatches.

// The CLI layer: an error under --json is a document on stdout.
#![allow(clippy::print_stdout)]

use std::io::Write;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};
use xtask::commands;
use xtask::exit::{error_json, Exit};
use xtask::report::ERROR;

fn main() -> ExitCode {
    // Started by the tool itself as a build step's reaper: that, and nothing else.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(code) = xtask::process::group::reaper_main(&args) {
        std::process::exit(code);
    }
    xtask::process::group::use_reaper();
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
    let parsed = commands::Cli::command()
        .try_get_matches()
        .and_then(|m| commands::Cli::from_arg_matches(&m).map(|cli| (cli, m)));
    let (cli, given) = match parsed {
        Ok((cli, m)) => (cli, commands::given_options(&m)),
        Err(e) => {
            // clap's own errors are usage errors too: under --json, said as JSON as well.
            if e.use_stderr() && json_asked() {
                println!("{}", error_json(&clap_message(&e), Exit::Usage));
            }
            e.exit()
        }
    };
    let env = xtask::detect::Env::from_process();
    xtask::report::set_color(cli.color(&env));
    let json = cli.json();
    // A panic (a bug) is an error that says so, exit 1, not Rust's 101.
    let result = xtask::exit::guarded(commands::VERSION, || commands::run(cli, &given, &env));
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
    if let (Some(m), Some(exit)) = (&message, exit) {
        anstream::eprintln!(
            "{}error:{} {}",
            ERROR.render(),
            ERROR.render_reset(),
            xtask::escape::text(m)
        );
        if json {
            println!("{}", error_json(m, exit));
        }
    }
    match (exit, result) {
        (Some(Exit::Interrupted(sig)), _) => end_by(sig),
        (Some(exit), _) => exit.into(),
        (None, Ok(code)) => code,
        (None, Err(e)) => Exit::of_error(&e).into(),
    }
}

/// `--json` on the command line (before a `--`), read when clap could not parse it.
fn json_asked() -> bool {
    std::env::args_os()
        .skip(1)
        .take_while(|a| a != "--")
        .any(|a| a == "--json")
}

/// clap's message without its `error: ` and the usage lines after it.
fn clap_message(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let text = text.strip_prefix("error: ").unwrap_or(&text);
    text.split("\n\n")
        .next()
        .unwrap_or(text)
        .trim_end()
        .to_string()
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
