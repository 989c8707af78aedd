//! Where a run's machine time went: builds, server start-ups (each ready
//! and graded), warm-ups, measurements, calibrations with the original
//! tools, and the rest (stopping servers, resetting the database, storing,
//! waiting). Stored with the run and printed when it ends, so that the
//! growth of a suite's cost is seen, and the time a fixed design spends is
//! set against the time its answer needed.
//!
//! Each phase is measured where it happens, on the wall clock of the one
//! thread that drives the run; "the rest" is what the named phases leave
//! of the run's total, so the parts add up to the whole by construction.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// The phases' wall times, in seconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TimeSpent {
    pub total_s: f64,
    pub builds_s: f64,
    /// Starting servers until ready and graded, builds excluded.
    pub startups_s: f64,
    pub warmups_s: f64,
    pub measurements_s: f64,
    pub calibrations_s: f64,
    /// What the phases above leave of the total.
    pub rest_s: f64,
}

/// Accumulates the phases of one run.
pub struct RunClock {
    started: Instant,
    serving: Duration,
    warmups: Duration,
    measurements: Duration,
    calibrations: Duration,
}

impl Default for RunClock {
    fn default() -> Self {
        RunClock {
            started: Instant::now(),
            serving: Duration::ZERO,
            warmups: Duration::ZERO,
            measurements: Duration::ZERO,
            calibrations: Duration::ZERO,
        }
    }
}

impl RunClock {
    /// A server made ready (its build included) in `took`.
    pub fn served(&mut self, took: Duration) {
        self.serving += took;
    }

    /// A load of `took` whose first `warmup` was not counted.
    pub fn loaded(&mut self, took: Duration, warmup: Duration) {
        let w = warmup.min(took);
        self.warmups += w;
        self.measurements += took - w;
    }

    pub fn calibrated(&mut self, took: Duration) {
        self.calibrations += took;
    }

    /// The run so far; `builds` is the stage's time in builds (part of
    /// the serving time measured here).
    pub fn spent(&self, builds: Duration) -> TimeSpent {
        let s = |d: Duration| d.as_secs_f64();
        let total = self.started.elapsed();
        let builds = builds.min(self.serving);
        let named = self.serving + self.warmups + self.measurements + self.calibrations;
        TimeSpent {
            total_s: s(total),
            builds_s: s(builds),
            startups_s: s(self.serving - builds),
            warmups_s: s(self.warmups),
            measurements_s: s(self.measurements),
            calibrations_s: s(self.calibrations),
            rest_s: s(total.saturating_sub(named)),
        }
    }
}

impl TimeSpent {
    /// One line for the end of a run.
    pub fn line(&self) -> String {
        let d =
            |s: f64| humantime::format_duration(Duration::from_secs(s.round() as u64)).to_string();
        let mut parts = vec![
            format!("builds {}", d(self.builds_s)),
            format!("server start-ups {}", d(self.startups_s)),
            format!("warm-ups {}", d(self.warmups_s)),
            format!("measurements {}", d(self.measurements_s)),
        ];
        if self.calibrations_s > 0.0 {
            parts.push(format!("calibrations {}", d(self.calibrations_s)));
        }
        parts.push(format!(
            "the rest {} (stops, database resets, storing)",
            d(self.rest_s)
        ));
        format!("machine time: {} — {}", d(self.total_s), parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parts_add_up_to_the_whole_and_builds_are_taken_from_serving() {
        let mut c = RunClock::default();
        c.served(Duration::from_millis(300));
        c.loaded(Duration::from_millis(500), Duration::from_millis(200));
        c.loaded(Duration::from_millis(100), Duration::from_millis(200));
        c.calibrated(Duration::from_millis(50));
        std::thread::sleep(Duration::from_millis(20));
        let t = c.spent(Duration::from_millis(100));
        assert!((t.builds_s - 0.1).abs() < 1e-9);
        assert!((t.startups_s - 0.2).abs() < 1e-9);
        // A load shorter than its warm-up was all warm-up.
        assert!((t.warmups_s - 0.3).abs() < 1e-9);
        assert!((t.measurements_s - 0.3).abs() < 1e-9);
        let parts = t.builds_s + t.startups_s + t.warmups_s + t.measurements_s + t.calibrations_s;
        // The clock's own total is the real elapsed time (20 ms here), so
        // the named phases exceed it and nothing is left for the rest.
        assert_eq!(t.rest_s, 0.0);
        assert!(parts > t.total_s);
        let line = t.line();
        assert!(line.starts_with("machine time: "), "{line}");
        assert!(
            line.contains("calibrations") && line.contains("the rest"),
            "{line}"
        );
    }
}
