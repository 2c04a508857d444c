//! `cargo xtask`: only reads the command line and the environment, and dispatches.

use std::process::ExitCode;

use clap::Parser;
use xtask::commands;

fn main() -> ExitCode {
    let cli = commands::Cli::parse();
    let env = xtask::detect::Env::from_process();
    match commands::run(cli, &env) {
        Ok(code) => code,
        Err(e) => {
            // An error can quote an artifact's or a download's text: escaped for the terminal.
            eprintln!("error: {}", xtask::escape::text(&format!("{e:#}")));
            ExitCode::from(1)
        }
    }
}
