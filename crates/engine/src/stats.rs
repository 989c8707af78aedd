//! Latency histograms and the numbers drawn from them.

use hdrhistogram::Histogram;
use serde::Serialize;

/// Microsecond resolution, 3 significant digits. The upper bound only sizes
/// the initial allocation: histograms auto-resize, so a pathological latency
/// is recorded rather than dropped.
pub fn new_histogram() -> Histogram<u64> {
    let mut h = Histogram::new_with_bounds(1, 60_000_000, 3).expect("static bounds are valid");
    h.auto(true);
    h
}

/// Records a duration in nanoseconds as microseconds (at least 1).
#[inline]
pub fn record_ns(h: &mut Histogram<u64>, ns: u64) {
    let us = (ns / 1_000).max(1);
    // With auto-resize on, recording only fails on overflow of u64 counts.
    let _ = h.record(us);
}

#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct LatencySummary {
    pub min: u64,
    pub mean: f64,
    pub stdev: f64,
    pub max: u64,
    pub p50: u64,
    pub p75: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub p9999: u64,
}

impl LatencySummary {
    pub fn of(h: &Histogram<u64>) -> LatencySummary {
        if h.is_empty() {
            return LatencySummary::default();
        }
        LatencySummary {
            min: h.min(),
            mean: h.mean(),
            stdev: h.stdev(),
            max: h.max(),
            p50: h.value_at_quantile(0.50),
            p75: h.value_at_quantile(0.75),
            p90: h.value_at_quantile(0.90),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            p9999: h.value_at_quantile(0.9999),
        }
    }
}

/// Mean, standard deviation and maximum of requests per second, over the
/// one-second intervals of the measurement (what wrk prints as Req/Sec, but
/// for the whole run rather than per thread).
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct Throughput {
    pub mean: f64,
    pub stdev: f64,
    pub max: f64,
}

impl Throughput {
    pub fn of(rates: &[f64]) -> Throughput {
        if rates.is_empty() {
            return Throughput::default();
        }
        let n = rates.len() as f64;
        let mean = rates.iter().sum::<f64>() / n;
        let var = if rates.len() > 1 {
            rates.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (n - 1.0)
        } else {
            0.0
        };
        Throughput {
            mean,
            stdev: var.sqrt(),
            max: rates.iter().cloned().fold(0.0, f64::max),
        }
    }
}

/// Failures, by where they happened. A request is counted in at most one class.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct ErrorCounts {
    pub connect: u64,
    pub read: u64,
    pub write: u64,
    pub timeout: u64,
    pub status: u64,
    pub parse: u64,
}

impl ErrorCounts {
    pub fn add(&mut self, o: &ErrorCounts) {
        self.connect += o.connect;
        self.read += o.read;
        self.write += o.write;
        self.timeout += o.timeout;
        self.status += o.status;
        self.parse += o.parse;
    }

    pub fn total(&self) -> u64 {
        self.connect + self.read + self.write + self.timeout + self.status + self.parse
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_known_values() {
        let mut h = new_histogram();
        for us in 1..=1000u64 {
            record_ns(&mut h, us * 1000);
        }
        let s = LatencySummary::of(&h);
        assert_eq!(s.min, 1);
        assert_eq!(s.max, 1000);
        assert_eq!(s.p50, 500);
        assert_eq!(s.p99, 990);
        assert!((s.mean - 500.5).abs() < 1.0);
    }

    #[test]
    fn huge_values_are_kept() {
        let mut h = new_histogram();
        record_ns(&mut h, 3_600 * 1_000_000_000);
        assert!(h.max() >= 3_599_000_000);
    }

    #[test]
    fn throughput_stats() {
        let t = Throughput::of(&[10.0, 20.0, 30.0]);
        assert_eq!(t.mean, 20.0);
        assert_eq!(t.max, 30.0);
        assert!((t.stdev - 10.0).abs() < 1e-9);
    }
}
