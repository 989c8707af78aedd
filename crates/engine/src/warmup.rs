//! Warm-up that ends when the server is steady (`--warmup auto`).
//!
//! A fixed warm-up is either too short (a JIT server still compiling is
//! measured cold) or too long (an AOT server steady after a second idles
//! through the rest). With `auto`, the load runs first as a *warm-up pass*
//! watched one second at a time; it ends at the first second where the
//! rule below says the server is steady, or at the ceiling. The measured
//! pass follows at once, at the same load.
//!
//! ## The rule
//!
//! The figure watched is the one the load model holds the server to:
//! requests per second in a closed loop (the server sets the pace), the
//! median latency of the second at a constant rate (the schedule sets the
//! pace; a server still warming answers it more slowly). Over the last
//! `window` whole seconds, an ordinary least-squares line is fitted to the
//! figure against time. The server is steady when either
//!
//! - the line's change across the window, relative to the window's mean,
//!   is at most [`TOLERANCE`] (2 %): whatever the noise, the level no longer
//!   moves by an amount that matters; or
//! - the slope is not distinguishable from zero: |b / SE(b)| is below the
//!   two-sided 95 % Student t quantile with `window − 2` degrees of freedom.
//!
//! A ramp (a JIT compiling, caches filling) has a slope that is both large
//! and significant, so it keeps the warm-up going; a flat noisy series
//! passes the second test at the first window. The rule is a trend test on
//! a sliding window, chosen over MSER truncation because it decides online,
//! second by second, where MSER needs the whole series first. Its limit: a
//! ramp buried in noise much larger than the ramp passes the second test.
//! The per-second series (warm-up included) is kept, so such a case can be
//! seen afterwards.
//!
//! A server that is not steady by the ceiling is measured anyway and the
//! outcome says so ([`WarmupVerdict::steady`] false); a second that had no
//! answer at all (constant rate) is never steady.
//!
//! ## Between the passes
//!
//! The warm-up pass's connections close when it ends; the measured pass
//! opens its own and runs one fixed second of warm-up ([`RECONNECT`]) so
//! that opening them is not measured. The server's own warmth (compiled
//! code, caches, pools) is what the warm-up is for, and that stays.
//!
//! ## Numbering
//!
//! Observers see each warm-up second as it happens, before anyone knows
//! how long the warm-up will be, so they are numbered provisionally
//! (all ≤ −2, in order); the outcome's series is numbered finally (the
//! last warm-up second before the measurement is −1).
//! [`WarmupVerdict::final_second`] turns a provisional number into the
//! final one, for callers that kept the live seconds.

use std::time::Duration;

/// A change across the window smaller than this, relative to its mean, is
/// steady whatever its significance.
pub const TOLERANCE: f64 = 0.02;

/// The measured pass's own fixed warm-up, for its connections to open.
pub const RECONNECT: Duration = Duration::from_secs(1);

/// The default sliding window and ceiling of `auto`.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(5);
pub const DEFAULT_CEILING: Duration = Duration::from_secs(30);

/// A window shorter than this cannot fit a line with its error.
pub const MIN_WINDOW: Duration = Duration::from_secs(3);

/// `auto` warm-up: watched over `window`, never longer than `ceiling`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AutoWarmup {
    pub ceiling: Duration,
    pub window: Duration,
}

impl Default for AutoWarmup {
    fn default() -> Self {
        AutoWarmup {
            ceiling: DEFAULT_CEILING,
            window: DEFAULT_WINDOW,
        }
    }
}

impl AutoWarmup {
    /// Its window and ceiling within bounds: the one check the engine's
    /// configuration and the command line's parser both apply.
    pub fn check(&self) -> Result<(), String> {
        if self.window < MIN_WINDOW {
            return Err(
                "auto's window must be at least 3s (a line and its error need three seconds)"
                    .into(),
            );
        }
        if self.ceiling < self.window {
            return Err(format!(
                "auto's ceiling must be at least its {}s window",
                self.window.as_secs()
            ));
        }
        if self.ceiling > Duration::from_secs(3600) {
            return Err("auto's ceiling must be at most 1h".into());
        }
        Ok(())
    }
}

/// How an `auto` warm-up went: a result in itself (a JIT server's warm-up
/// against an AOT one's).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WarmupVerdict {
    /// The whole warm-up, seconds: the warm-up pass and the reconnect second.
    pub took_s: f64,
    pub ceiling_s: f64,
    pub window_s: f64,
    /// False: the ceiling came first, and the server was measured anyway.
    pub steady: bool,
    /// The figure the rule watched: "req/s" or "p50".
    pub watched: String,
    /// Added to a warm-up pass second's provisional number to give its
    /// final one.
    pub live_shift: i64,
}

impl WarmupVerdict {
    /// The final number of a second an observer saw numbered `live`.
    pub fn final_second(&self, live: i64) -> i64 {
        if live <= -2 {
            live + self.live_shift
        } else {
            live
        }
    }

    /// One line for a summary.
    pub fn describe(&self) -> String {
        if self.steady {
            format!(
                "warm-up auto: steady ({}) after {:.0} s (ceiling {:.0} s)",
                self.watched, self.took_s, self.ceiling_s
            )
        } else {
            format!(
                "warm-up auto: {} not steady by the {:.0} s ceiling; measured anyway, possibly still warming",
                self.watched, self.ceiling_s
            )
        }
    }
}

/// Two-sided 95 % Student t quantiles for 1..=10 degrees of freedom; the
/// normal's 1.96 would be too lenient below that, and above it the table's
/// last entry is within 10 % of it.
const T975: [f64; 10] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
];

fn t975(df: usize) -> f64 {
    match df {
        0 => f64::INFINITY,
        1..=10 => T975[df - 1],
        11..=20 => 2.1,
        _ => 2.0,
    }
}

/// Whether `values` (one per second, oldest first; the whole window) show
/// a steady server by the rule of the module's doc comment.
pub fn steady(values: &[f64]) -> bool {
    let n = values.len();
    if n < 3 || values.iter().any(|v| !v.is_finite() || *v <= 0.0) {
        return false;
    }
    let nf = n as f64;
    let x_mean = (nf - 1.0) / 2.0;
    let y_mean = values.iter().sum::<f64>() / nf;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (i, y) in values.iter().enumerate() {
        let dx = i as f64 - x_mean;
        sxy += dx * (y - y_mean);
        sxx += dx * dx;
    }
    let b = sxy / sxx;
    if (b * (nf - 1.0) / y_mean).abs() <= TOLERANCE {
        return true;
    }
    let rss: f64 = values
        .iter()
        .enumerate()
        .map(|(i, y)| {
            let r = y - y_mean - b * (i as f64 - x_mean);
            r * r
        })
        .sum();
    let se = (rss / (nf - 2.0) / sxx).sqrt();
    se > 0.0 && (b / se).abs() < t975(n - 2)
}

/// Provisional numbers start here, so that even a warm-up pass that ran to
/// its ceiling, with a partial last second and a drain, stays at or below −2.
pub(crate) fn first_live(ceiling: Duration) -> i64 {
    -(ceiling.as_secs() as i64 + 4)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic noise of about ±`amp` (relative), the same every run.
    fn noise(i: usize, amp: f64) -> f64 {
        let x = ((i as f64 * 12.9898).sin() * 43_758.547).fract();
        1.0 + amp * (2.0 * x.abs() - 1.0)
    }

    fn first_steady(series: &[f64], window: usize) -> Option<usize> {
        (window..=series.len()).find(|&end| steady(&series[end - window..end]))
    }

    #[test]
    fn a_flat_noisy_series_is_steady_at_the_first_window() {
        let s: Vec<f64> = (0..30).map(|i| 10_000.0 * noise(i, 0.03)).collect();
        assert_eq!(first_steady(&s, 5), Some(5));
    }

    #[test]
    fn a_jit_like_ramp_is_steady_only_once_it_has_levelled() {
        // Climbs from half its level with a 4 s time constant: within 2 %
        // of its level after about 13 s.
        let s: Vec<f64> = (0..40)
            .map(|i| 10_000.0 * (1.0 - 0.5 * (-(i as f64) / 4.0).exp()) * noise(i, 0.005))
            .collect();
        let at = first_steady(&s, 5).expect("the ramp levels off");
        assert!((10..=20).contains(&at), "steady at {at}");
    }

    #[test]
    fn a_series_that_keeps_climbing_is_never_steady() {
        let s: Vec<f64> = (0..60)
            .map(|i| 1_000.0 * (1.0 + 0.02 * i as f64) * noise(i, 0.005))
            .collect();
        assert_eq!(first_steady(&s, 5), None);
    }

    #[test]
    fn a_second_without_answers_is_not_steady() {
        assert!(!steady(&[100.0, 100.0, f64::NAN, 100.0, 100.0]));
        assert!(!steady(&[0.0, 0.0, 0.0, 0.0, 0.0]));
    }

    #[test]
    fn provisional_numbers_become_final_ones() {
        let v = WarmupVerdict {
            took_s: 8.0,
            ceiling_s: 30.0,
            window_s: 5.0,
            steady: true,
            watched: "req/s".into(),
            live_shift: -1 - 7 - first_live(Duration::from_secs(30)),
        };
        // The 7 warm-up pass seconds were live −34 … −28; finally −8 … −2.
        assert_eq!(v.final_second(-34), -8);
        assert_eq!(v.final_second(-28), -2);
        // The reconnect second and the measurement keep their numbers.
        assert_eq!(v.final_second(-1), -1);
        assert_eq!(v.final_second(3), 3);
    }
}
