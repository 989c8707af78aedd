//! What a run measured.

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::config::LoadModel;
use crate::stats::{ErrorCounts, LatencySummary, Throughput};

/// Whether a one-second interval belonged to the warm-up or the measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    Warmup,
    Measure,
}

/// One interval of the per-second time series.
#[derive(Debug, Clone, Serialize)]
pub struct SecondSample {
    /// Interval index from the start of the measurement; warm-up intervals are
    /// negative.
    pub second: i64,
    pub phase: Phase,
    /// Start of the interval, seconds since the run (warm-up included) began.
    pub start_s: f64,
    /// Length of the interval in seconds (the last one may be shorter).
    pub duration_s: f64,
    pub requests: u64,
    pub errors: u64,
    pub bytes: u64,
    pub p50_us: u64,
    pub p99_us: u64,
}

impl SecondSample {
    pub fn rps(&self) -> f64 {
        if self.duration_s > 0.0 {
            self.requests as f64 / self.duration_s
        } else {
            0.0
        }
    }
}

/// How well a constant-rate schedule was kept.
#[derive(Debug, Clone, Serialize)]
pub struct Schedule {
    pub rate: f64,
    /// Requests due during the measurement window that were sent.
    pub sent: u64,
    /// Requests due before the end that never went out (all connections were
    /// busy until the end).
    pub unsent: u64,
    /// Requests that had to wait because every connection was busy; their
    /// latency includes the wait, as it should, but the offered rate was
    /// limited by the connection count.
    pub waited_for_connection: u64,
    /// The generator's own lateness p99 exceeded 1 ms, or requests went unsent.
    pub behind: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Generator {
    /// User + system CPU seconds of the whole generator process during the run.
    pub cpu_s: f64,
    /// Mean fraction of wall time the worker threads spent on the CPU.
    pub busy_fraction: f64,
    /// Busy above 90 %: the generator, not the server, may be the bottleneck.
    pub saturated: bool,
    /// Share of the machine's CPU time the hypervisor stole during the run
    /// (/proc/stat), when readable. Above [`STEAL_WARN`] the numbers are not
    /// steady: the machine itself was being slowed from outside.
    pub steal_fraction: Option<f64>,
}

/// Hypervisor steal above this share of CPU time makes a result suspect.
pub const STEAL_WARN: f64 = 0.05;

#[derive(Debug, Clone)]
pub struct Outcome {
    pub model: LoadModel,
    pub connections: usize,
    pub threads: usize,
    pub pipeline: usize,
    pub warmup_s: f64,
    /// Length of the measurement actually run (shorter when interrupted).
    pub measured_s: f64,
    pub requests: u64,
    pub bytes_read: u64,
    pub errors: ErrorCounts,
    /// Latency from the planned send time (constant rate) or the actual send
    /// (closed loop, where the two are the same).
    pub latency: Histogram<u64>,
    /// Latency from the actual send: the server's service time as wrk sees it.
    pub uncorrected: Histogram<u64>,
    /// Actual send − planned send (constant rate only).
    pub lateness: Option<Histogram<u64>>,
    pub series: Vec<SecondSample>,
    pub generator: Generator,
    pub schedule: Option<Schedule>,
    pub interrupted: bool,
}

impl Outcome {
    pub fn rps(&self) -> f64 {
        if self.measured_s > 0.0 {
            self.requests as f64 / self.measured_s
        } else {
            0.0
        }
    }

    pub fn latency_summary(&self) -> LatencySummary {
        LatencySummary::of(&self.latency)
    }

    pub fn uncorrected_summary(&self) -> LatencySummary {
        LatencySummary::of(&self.uncorrected)
    }

    pub fn lateness_summary(&self) -> Option<LatencySummary> {
        self.lateness.as_ref().map(LatencySummary::of)
    }

    /// Over the measurement's intervals; an interval shorter than half a
    /// second (the tail of a run) would distort the spread and is left out.
    pub fn throughput(&self) -> Throughput {
        let rates: Vec<f64> = self
            .series
            .iter()
            .filter(|s| s.phase == Phase::Measure && s.duration_s >= 0.5)
            .map(SecondSample::rps)
            .collect();
        Throughput::of(&rates)
    }

    /// Timeouts per million requests attempted (completed + timed out), the
    /// figure the studies report.
    pub fn timeouts_per_million(&self) -> f64 {
        let attempted = self.requests + self.errors.timeout;
        if attempted == 0 {
            0.0
        } else {
            self.errors.timeout as f64 * 1e6 / attempted as f64
        }
    }
}

impl Outcome {
    /// What makes this result less than it seems, in words for people and
    /// machines alike. Empty when the measurement is clean.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if self.generator.saturated {
            w.push(format!(
                "load generator saturated: throughput is a lower bound (worker threads {:.0}% busy)",
                self.generator.busy_fraction * 100.0
            ));
        }
        if let (Some(s), Some(l)) = (&self.schedule, &self.lateness) {
            let p99 = if l.is_empty() {
                0
            } else {
                l.value_at_quantile(0.99)
            };
            if p99 > 1_000 {
                w.push(format!(
                    "generator could not keep the schedule: send lateness p99 is {p99} µs (> 1000 µs); latency figures include the generator's own delay"
                ));
            }
            if s.unsent > 0 {
                w.push(format!(
                    "{} requests were due but never sent: every connection was busy until the end; raise --connections to offer the full rate",
                    s.unsent
                ));
            }
            if s.waited_for_connection > 0 {
                let share = s.waited_for_connection as f64 / s.sent.max(1) as f64 * 100.0;
                if share >= 1.0 {
                    w.push(format!(
                        "{:.1}% of requests waited for a free connection: their latency includes the wait (as it should), but the offered rate was capped by --connections",
                        share
                    ));
                }
            }
        }
        if let Some(st) = self.generator.steal_fraction.filter(|&f| f > STEAL_WARN) {
            w.push(format!(
                "the hypervisor stole {:.0}% of this machine's CPU time during the run (/proc/stat steal): server and generator were slowed from outside, so these figures are not steady; measure again when the host is quieter",
                st * 100.0
            ));
        }
        if self.interrupted {
            w.push("interrupted: figures cover only the part of the run that completed".into());
        }
        if self.measured_s <= 0.0 {
            w.push("nothing was measured: the run ended during warm-up".into());
        }
        w
    }
}
