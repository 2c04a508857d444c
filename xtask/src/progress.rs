//! Progress display for long steps (downloads, CMake builds). Hidden when stderr
//! is not a terminal, and when the build's [`crate::report::Log`] is a file.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

fn shown(bar: ProgressBar, visible: bool) -> ProgressBar {
    if !visible {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar
}

pub fn bytes(total: Option<u64>, what: &str, visible: bool) -> ProgressBar {
    let bar = match total {
        Some(t) => ProgressBar::new(t).with_style(
            ProgressStyle::with_template("  {msg} {bar:30} {bytes}/{total_bytes} {bytes_per_sec}")
                .expect("template"),
        ),
        None => ProgressBar::new_spinner()
            .with_style(ProgressStyle::with_template("  {msg} {bytes}").expect("template")),
    };
    bar.set_message(what.to_string());
    shown(bar, visible)
}

/// A bar for `[n/N]` build steps; the message is the step being run.
pub fn steps(what: &str, visible: bool) -> ProgressBar {
    let bar = ProgressBar::new(0).with_style(
        ProgressStyle::with_template(
            "  {prefix} [{elapsed_precise}] {bar:30} {pos}/{len} {wide_msg}",
        )
        .expect("template"),
    );
    bar.set_prefix(what.to_string());
    shown(bar, visible)
}
