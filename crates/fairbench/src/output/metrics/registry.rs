//! The live figures of every case the command has measured so far, one
//! series per label set, updated once per interval from what the engine's
//! observer already delivers (and once more when a case ends, from its
//! outcome).
//!
//! Counters only ever grow: a case measured again under the same labels
//! (a repetition) adds to its series, and a case that ended keeps its last
//! values while the next one gets a new label set.

use fairbench_engine::{Outcome, Phase, SecondSample};
use hdrhistogram::Histogram;

/// Upper bounds of the latency histogram's buckets, in microseconds: 100 µs
/// to 10 s in 1-2.5-5 steps (Prometheus' own default buckets, extended
/// below 5 ms for loopback servers), then `+Inf`. Fixed, so that every
/// case and every scrape can be summed and compared.
pub const BUCKETS_US: [u64; 16] = [
    100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
    1_000_000, 2_500_000, 5_000_000, 10_000_000,
];

/// The error classes of the run's ledger, in the order of its JSON.
pub const ERROR_CLASSES: [&str; 9] = [
    "connect",
    "tls",
    "read",
    "write",
    "timeout",
    "status",
    "parse",
    "unanswered",
    "interrupted",
];

/// What names a case: (label, value) pairs in a fixed order.
pub type Labels = Vec<(&'static str, String)>;

/// One case's figures (or several cases', under the same labels).
#[derive(Debug, Clone, Default)]
pub struct Series {
    pub labels: Labels,
    /// Answered requests of the measured window (warm-up excluded).
    pub requests: u64,
    pub errors: u64,
    pub bytes: u64,
    /// Counts per bucket of [`BUCKETS_US`] (not cumulative) plus one for
    /// `+Inf`.
    pub buckets: [u64; BUCKETS_US.len() + 1],
    pub latency_sum_s: f64,
    pub rate_planned: Option<f64>,
    pub rate_achieved: f64,
    /// The server's CPU seconds during the measured intervals, from its
    /// control group where it has one (else its process tree).
    pub server_cpu_s: Option<f64>,
    pub server_memory_bytes: Option<u64>,
    /// Per class of [`ERROR_CLASSES`], known only once a case has ended: the
    /// engine classifies errors in its final ledger, not per interval.
    pub errors_by_class: [u64; ERROR_CLASSES.len()],
    /// Send lateness of the last ended case (p50, p99, max in µs), and the
    /// count and sum over every ended case.
    pub lateness: Option<[u64; 3]>,
    pub lateness_count: u64,
    pub lateness_sum_s: f64,
    pub busy_fraction: Option<f64>,
    /// `requests`, `errors`, the buckets and the latency sum when the
    /// current case began, so that its end can add the outcome's exact
    /// totals to them.
    base: (u64, u64),
    base_buckets: [u64; BUCKETS_US.len() + 1],
    base_sum_s: f64,
}

/// Every series, and which one the running case feeds.
#[derive(Debug, Default)]
pub struct Registry {
    pub series: Vec<Series>,
    current: Option<usize>,
    /// Labels every case carries first (the suite's name).
    common: Labels,
}

impl Registry {
    /// A case begins: its series (new, or the one of an earlier case with
    /// the same labels) receives the intervals from now on.
    pub fn begin(&mut self, labels: Labels, rate_planned: Option<f64>) {
        let labels: Labels = self.common.iter().cloned().chain(labels).collect();
        let i = match self.series.iter().position(|s| s.labels == labels) {
            Some(i) => i,
            None => {
                self.series.push(Series {
                    labels,
                    ..Series::default()
                });
                self.series.len() - 1
            }
        };
        let s = &mut self.series[i];
        s.base = (s.requests, s.errors);
        s.base_buckets = s.buckets;
        s.base_sum_s = s.latency_sum_s;
        s.rate_planned = rate_planned;
        self.current = Some(i);
    }

    /// Every case from now on carries `key="value"` first.
    pub fn label_all(&mut self, key: &'static str, value: &str) {
        self.common.retain(|(k, _)| *k != key);
        self.common.push((key, value.to_string()));
    }

    fn current(&mut self) -> Option<&mut Series> {
        self.current.map(|i| &mut self.series[i])
    }

    /// One interval of the running case. Only the measured window's
    /// count: warm-up is left out of the run's totals, and the drain's
    /// answers are in the outcome that ends the case (see [`Self::finish`]).
    pub fn interval(&mut self, s: &SecondSample, h: &Histogram<u64>) {
        let Some(c) = self.current() else { return };
        if s.phase != Phase::Measure {
            return;
        }
        c.requests += s.requests;
        c.errors += s.errors;
        c.bytes += s.bytes;
        c.rate_achieved = s.rps();
        let (buckets, sum_s) = buckets(h);
        for (total, n) in c.buckets.iter_mut().zip(buckets) {
            *total += n;
        }
        c.latency_sum_s += sum_s;
    }

    /// The server's use during the last interval: `cpu_s` CPU seconds spent
    /// in it (counted only in the measured window) and its memory now.
    pub fn server(&mut self, measured: bool, cpu_s: f64, memory_bytes: u64) {
        let Some(c) = self.current() else { return };
        let total = c.server_cpu_s.get_or_insert(0.0);
        if measured {
            *total += cpu_s;
        }
        c.server_memory_bytes = Some(memory_bytes);
    }

    /// The running case ended with `o`. Intervals count answers as they
    /// arrive, the outcome the requests planned in the window: its exact
    /// totals raise the counters (by the drain's answers), never lower them
    /// (the warm-up's last answers, counted live, stay counted).
    pub fn finish(&mut self, o: &Outcome) {
        let Some(c) = self.current() else { return };
        c.requests = c.requests.max(c.base.0 + o.requests);
        c.errors = c.errors.max(c.base.1 + o.errors.total());
        let (buckets, sum_s) = buckets(&o.latency);
        for ((total, base), n) in c.buckets.iter_mut().zip(c.base_buckets).zip(buckets) {
            *total = (*total).max(base + n);
        }
        c.latency_sum_s = c.latency_sum_s.max(c.base_sum_s + sum_s);
        let e = &o.errors;
        let by = [
            e.connect,
            e.tls,
            e.read,
            e.write,
            e.timeout,
            e.status,
            e.parse,
            e.unanswered,
            e.interrupted,
        ];
        for (total, n) in c.errors_by_class.iter_mut().zip(by) {
            *total += n;
        }
        if let Some(l) = o.lateness.as_ref().filter(|l| !l.is_empty()) {
            c.lateness = Some([l.value_at_quantile(0.5), l.value_at_quantile(0.99), l.max()]);
            c.lateness_count += l.len();
            c.lateness_sum_s += l.mean() * l.len() as f64 / 1e6;
        }
        c.busy_fraction = Some(o.generator.busy_fraction);
        self.current = None;
    }
}

/// A histogram's counts per bucket of [`BUCKETS_US`] (and `+Inf`), each
/// value at its highest equivalent (the histogram's precision rounds up),
/// and the sum of its values in seconds.
fn buckets(h: &Histogram<u64>) -> ([u64; BUCKETS_US.len() + 1], f64) {
    let mut out = [0; BUCKETS_US.len() + 1];
    let mut sum_s = 0.0;
    for v in h.iter_recorded() {
        let n = v.count_at_value();
        let us = h.highest_equivalent(v.value_iterated_to());
        out[BUCKETS_US.partition_point(|&edge| edge < us)] += n;
        sum_s += us as f64 * n as f64 / 1e6;
    }
    (out, sum_s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(phase: Phase, requests: u64) -> SecondSample {
        SecondSample {
            second: 0,
            phase,
            start_s: 0.0,
            duration_s: 1.0,
            requests,
            errors: 1,
            bytes: 10,
            p50_us: 0,
            p99_us: 0,
        }
    }

    #[test]
    fn intervals_add_up_and_warmup_counts_nothing() {
        let mut r = Registry::default();
        r.begin(vec![("url", "http://a/".into())], Some(100.0));
        let mut h = Histogram::<u64>::new(3).unwrap();
        h.record(90).unwrap();
        h.record(1_500).unwrap();
        h.record(20_000_000).unwrap();
        r.interval(&sample(Phase::Warmup, 50), &h);
        r.interval(&sample(Phase::Measure, 3), &h);
        let s = &r.series[0];
        assert_eq!((s.requests, s.errors, s.bytes), (3, 1, 10));
        assert_eq!(s.buckets[0], 1, "90 µs is at most 100 µs");
        assert_eq!(s.buckets[4], 1, "1.5 ms is in (1 ms, 2.5 ms]");
        assert_eq!(s.buckets[BUCKETS_US.len()], 1, "20 s is beyond 10 s");
        assert_eq!(s.rate_achieved, 3.0);
    }

    #[test]
    fn the_same_labels_again_keep_counting_up() {
        let mut r = Registry::default();
        let h = Histogram::<u64>::new(3).unwrap();
        for _ in 0..2 {
            r.begin(vec![("url", "x".into())], None);
            r.interval(&sample(Phase::Measure, 5), &h);
        }
        r.begin(vec![("url", "y".into())], None);
        assert_eq!(r.series.len(), 2);
        assert_eq!(r.series[0].requests, 10);
    }
}
