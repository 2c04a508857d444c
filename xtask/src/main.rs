//! `cargo xtask`: only reads the command line and the environment, and dispatches.

use std::process::ExitCode;

use clap::Parser;
use xtask::commands;
use xtask::exit::Exit;
use xtask::report::ERROR;

fn main() -> ExitCode {
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
