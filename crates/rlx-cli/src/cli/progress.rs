//! Progress bars on stderr (indicatif), drawn only when stderr is a terminal: a log file or a
//! pipe gets no redraws, only the lines the commands print themselves.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Steps of a fraction bar (calibration reports a fraction done).
const FRACTION_STEPS: u64 = 1000;

fn bar(len: u64, template: &str, label: &str) -> ProgressBar {
    // `stderr()` hides itself when stderr is not a terminal.
    let pb = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    // The templates are constants of this file; a bad one falls back to the default style.
    if let Ok(style) = ProgressStyle::with_template(template) {
        pb.set_style(style.progress_chars("#>-"));
    }
    pb.set_message(label.to_string());
    pb
}

/// A download bar: bytes done of `total` (a spinner-like byte count when the total is unknown).
pub fn bytes(label: &str) -> ProgressBar {
    bar(0, "{msg} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec})", label)
}

/// Updates a [`bytes`] bar from a `(done, total)` callback.
pub fn set_bytes(pb: &ProgressBar, done: u64, total: Option<u64>) {
    if let Some(t) = total {
        pb.set_length(t);
    }
    pb.set_position(done);
}

/// A bar for work reported as a fraction in [0, 1].
pub fn fraction(label: &str) -> ProgressBar {
    bar(FRACTION_STEPS, "{msg:<28} [{bar:30}] {percent:>3}%", label)
}

/// Updates a [`fraction`] bar; a non-finite fraction counts as 0.
pub fn set_fraction(pb: &ProgressBar, f: f64) {
    let f = if f.is_finite() { f.clamp(0.0, 1.0) } else { 0.0 };
    pb.set_position((f * FRACTION_STEPS as f64).round() as u64);
}

/// A bar over `n` counted steps (benchmark runs).
pub fn count(label: &str, n: u64) -> ProgressBar {
    bar(n, "{msg} [{bar:30}] {pos}/{len} ({eta})", label)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractions_map_onto_the_steps_and_stay_in_range() {
        let pb = fraction("t");
        set_fraction(&pb, 0.5);
        assert_eq!(pb.position(), FRACTION_STEPS / 2);
        set_fraction(&pb, 7.0);
        assert_eq!(pb.position(), FRACTION_STEPS);
        set_fraction(&pb, f64::NAN);
        assert_eq!(pb.position(), 0);
        let b = bytes("d");
        set_bytes(&b, 10, Some(40));
        assert_eq!((b.position(), b.length()), (10, Some(40)));
    }

    #[test]
    fn bars_are_hidden_when_stderr_is_not_a_terminal() {
        use std::io::IsTerminal as _;
        // Under `cargo test` stderr may or may not be a terminal; the bar must agree with it.
        assert_eq!(fraction("t").is_hidden(), !std::io::stderr().is_terminal());
    }
}
