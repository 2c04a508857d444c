//! `cargo xtask`: only reads the command line and the environment, and dispatches.

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
    match commands::run(cli, &env) {
        Ok(code) => code,
        Err(e) => {
            // An error can quote an artifact's or a download's text: escaped for the terminal.
            anstream::eprintln!(
                "{}error:{} {}",
                ERROR.render(),
                ERROR.render_reset(),
                xtask::escape::text(&format!("{e:#}"))
            );
            Exit::of_error(&e).into()
        }
    }
}
