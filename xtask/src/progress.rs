//! Progress display for long steps (downloads, CMake builds). Hidden when stderr
//! is not a terminal, and when the build's [`crate::report::Log`] is a file.

use std::time::Duration;

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

/// A bar for `[n/N]` build steps; the message is the step being run. A spinner
/// until the first `[n/N]` is seen (a configure step has none: no bar drawn full at
/// 0/0), then a bar with the time left.
pub fn steps(what: &str, visible: bool) -> ProgressBar {
    let bar = ProgressBar::new_spinner().with_style(
        ProgressStyle::with_template("  {prefix} [{elapsed_precise}] {spinner} {wide_msg}")
            .expect("template"),
    );
    bar.set_prefix(what.to_string());
    shown(bar, visible)
}

/// Ninja's `[n/N]` reached: the bar's length and position, its style a bar with an
/// ETA from the first count on.
pub fn step_reached(bar: &ProgressBar, n: u64, total: u64) {
    if bar.length() != Some(total) {
        bar.set_style(
            ProgressStyle::with_template(
                "  {prefix} [{elapsed_precise}] {bar:30} {pos}/{len}, {eta} left {wide_msg}",
            )
            .expect("template"),
        );
        bar.set_length(total);
    }
    bar.set_position(n);
}

/// Where a step is, from Ninja's last `[n/N]` (0/0: none seen yet).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Steps {
    pub n: u64,
    pub total: u64,
}

impl Steps {
    /// The heartbeat line off a terminal: `[812/1634] 49%, 4m 30s elapsed, about 4m 39s left`.
    /// The time left is the elapsed time per step so far times the steps left: rough
    /// (CUDA kernels take longer than C files), and not guessed before 5% are done.
    pub fn heartbeat(self, elapsed: Duration) -> String {
        let el = clock(elapsed);
        if self.total == 0 {
            return format!("{el} elapsed");
        }
        let pct = self.n * 100 / self.total;
        let left = if self.n * 20 >= self.total && self.n < self.total {
            let per = elapsed.as_secs_f64() / self.n as f64;
            format!(
                ", about {} left",
                clock(Duration::from_secs_f64(per * (self.total - self.n) as f64))
            )
        } else {
            String::new()
        };
        format!("[{}/{}] {pct}%, {el} elapsed{left}", self.n, self.total)
    }
}

/// `4m 30s`, `1h 02m`, `12s`.
fn clock(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m {:02}s", s / 60, s % 60),
        _ => format!("{}h {:02}m", s / 3600, s / 60 % 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heartbeats_say_the_step_the_time_and_what_is_left() {
        let s = |n, total, secs| Steps { n, total }.heartbeat(Duration::from_secs(secs));
        assert_eq!(s(0, 0, 12), "12s elapsed");
        assert_eq!(s(1, 100, 30), "[1/100] 1%, 30s elapsed");
        assert_eq!(
            s(812, 1634, 270),
            "[812/1634] 49%, 4m 30s elapsed, about 4m 33s left"
        );
        assert_eq!(s(50, 50, 3725), "[50/50] 100%, 1h 02m elapsed");
    }
}
