//! Exact merging of several load generators' results into one.
//!
//! Every generator records latency into HDR histograms of one configuration
//! (1 µs to auto-resized maximum, 3 significant digits), and adding two such
//! histograms adds their bucket counts. A value lands in the same bucket
//! whichever histogram records it, so the sum of the parts is bucket for
//! bucket the histogram that one generator recording every response would
//! have: its percentiles are those of the combined histogram, not an average
//! of percentiles. Counts (requests, bytes, errors, schedule) are sums.
//!
//! The per-second series line up because every generator is given the same
//! planned start (wall-clock time): interval `k` of each covers the same
//! second. Merged interval `k` sums the parts' counts and histograms, so its
//! p50 and p99 are exact as well.

use std::collections::BTreeMap;

use fairbench_engine::stats::new_histogram;
use fairbench_engine::{Generator, LoadModel, Outcome, Phase, Schedule, SecondSample};
use hdrhistogram::Histogram;

/// One generator's interval `second` merged with the others'.
pub fn merge_interval(
    second: i64,
    items: &[(&SecondSample, &Histogram<u64>)],
) -> (SecondSample, Histogram<u64>) {
    let mut hist = new_histogram();
    let mut s = SecondSample {
        second,
        phase: if second < 0 {
            Phase::Warmup
        } else {
            Phase::Measure
        },
        start_s: f64::INFINITY,
        duration_s: 0.0,
        requests: 0,
        errors: 0,
        bytes: 0,
        p50_us: 0,
        p99_us: 0,
    };
    for (x, h) in items {
        s.start_s = s.start_s.min(x.start_s);
        s.duration_s = s.duration_s.max(x.duration_s);
        s.requests += x.requests;
        s.errors += x.errors;
        s.bytes += x.bytes;
        let _ = hist.add(*h);
    }
    if !s.start_s.is_finite() {
        s.start_s = 0.0;
    }
    if !hist.is_empty() {
        s.p50_us = hist.value_at_quantile(0.5);
        s.p99_us = hist.value_at_quantile(0.99);
    }
    (s, hist)
}

/// The parts' outcomes as one, with the merged series.
pub fn merge_outcomes(parts: &[&Outcome], series: Vec<SecondSample>) -> Outcome {
    let mut latency = new_histogram();
    let mut uncorrected = new_histogram();
    let mut lateness: Option<Histogram<u64>> = None;
    let mut errors = fairbench_engine::ErrorCounts::default();
    let (mut requests, mut bytes, mut connections, mut threads) = (0, 0, 0, 0);
    let (mut cpu_s, mut busy_threads, mut saturated, mut interrupted) = (0.0, 0.0, false, false);
    let (mut warmup_s, mut measured_s) = (0.0f64, 0.0f64);
    let mut rate: Option<f64> = None;
    let mut schedule: Option<Schedule> = None;
    for o in parts {
        let _ = latency.add(&o.latency);
        let _ = uncorrected.add(&o.uncorrected);
        if let Some(l) = &o.lateness {
            let _ = lateness.get_or_insert_with(new_histogram).add(l);
        }
        errors.add(&o.errors);
        requests += o.requests;
        bytes += o.bytes_read;
        connections += o.connections;
        threads += o.threads;
        cpu_s += o.generator.cpu_s;
        busy_threads += o.generator.busy_fraction * o.threads as f64;
        saturated |= o.generator.saturated;
        interrupted |= o.interrupted;
        warmup_s = warmup_s.max(o.warmup_s);
        measured_s = measured_s.max(o.measured_s);
        if let LoadModel::ConstantRate { rps } = o.model {
            *rate.get_or_insert(0.0) += rps;
        }
        if let Some(s) = &o.schedule {
            let m = schedule.get_or_insert(Schedule {
                rate: 0.0,
                sent: 0,
                unsent: 0,
                waited_for_connection: 0,
                behind: false,
            });
            m.rate += s.rate;
            m.sent += s.sent;
            m.unsent += s.unsent;
            m.waited_for_connection += s.waited_for_connection;
            m.behind |= s.behind;
        }
    }
    Outcome {
        model: match rate {
            Some(rps) => LoadModel::ConstantRate { rps },
            None => LoadModel::ClosedLoop,
        },
        connections,
        threads,
        pipeline: parts.first().map(|o| o.pipeline).unwrap_or(1),
        warmup_s,
        measured_s,
        requests,
        bytes_read: bytes,
        errors,
        latency,
        uncorrected,
        lateness,
        series,
        generator: Generator {
            cpu_s,
            busy_fraction: if threads > 0 {
                busy_threads / threads as f64
            } else {
                0.0
            },
            saturated,
            // The worst machine decides whether the merged result is steady.
            steal_fraction: parts
                .iter()
                .filter_map(|o| o.generator.steal_fraction)
                .reduce(f64::max),
        },
        schedule,
        interrupted,
    }
}

/// One generator's interval, once it has arrived.
type Slot = Option<(SecondSample, Histogram<u64>)>;

/// Merges intervals as they arrive from several generators, handing out
/// each second once every generator still running has reported it.
pub struct LiveMerge {
    finished: Vec<bool>,
    pending: BTreeMap<i64, Vec<Slot>>,
}

impl LiveMerge {
    pub fn new(parts: usize) -> LiveMerge {
        LiveMerge {
            finished: vec![false; parts],
            pending: BTreeMap::new(),
        }
    }

    /// Part `i`'s interval; the merged intervals now complete, in order.
    pub fn add(
        &mut self,
        i: usize,
        s: SecondSample,
        h: Histogram<u64>,
    ) -> Vec<(SecondSample, Histogram<u64>)> {
        let n = self.finished.len();
        let slot = self
            .pending
            .entry(s.second)
            .or_insert_with(|| vec![None; n]);
        slot[i] = Some((s, h));
        self.ready()
    }

    /// Part `i` will report nothing more.
    pub fn finish(&mut self, i: usize) -> Vec<(SecondSample, Histogram<u64>)> {
        self.finished[i] = true;
        self.ready()
    }

    /// Everything still pending, whoever is missing.
    pub fn drain(&mut self) -> Vec<(SecondSample, Histogram<u64>)> {
        std::mem::take(&mut self.pending)
            .into_iter()
            .map(|(second, v)| merged(second, &v))
            .collect()
    }

    fn ready(&mut self) -> Vec<(SecondSample, Histogram<u64>)> {
        let mut out = Vec::new();
        while let Some(entry) = self.pending.first_entry() {
            let complete = entry
                .get()
                .iter()
                .zip(&self.finished)
                .all(|(got, done)| got.is_some() || *done);
            if !complete {
                break;
            }
            let (second, v) = entry.remove_entry();
            out.push(merged(second, &v));
        }
        out
    }
}

fn merged(
    second: i64,
    v: &[Option<(SecondSample, Histogram<u64>)>],
) -> (SecondSample, Histogram<u64>) {
    let items: Vec<(&SecondSample, &Histogram<u64>)> =
        v.iter().flatten().map(|(s, h)| (s, h)).collect();
    merge_interval(second, &items)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairbench_engine::ErrorCounts;

    fn sample(second: i64, requests: u64, h: &Histogram<u64>) -> SecondSample {
        SecondSample {
            second,
            phase: if second < 0 {
                Phase::Warmup
            } else {
                Phase::Measure
            },
            start_s: second as f64 + 1.0,
            duration_s: 1.0,
            requests,
            errors: 1,
            bytes: requests * 100,
            p50_us: if h.is_empty() {
                0
            } else {
                h.value_at_quantile(0.5)
            },
            p99_us: 0,
        }
    }

    fn outcome(values: &[u64], rate: Option<f64>, threads: usize, busy: f64) -> Outcome {
        let mut h = new_histogram();
        for &v in values {
            h.record(v).unwrap();
        }
        Outcome {
            model: match rate {
                Some(rps) => LoadModel::ConstantRate { rps },
                None => LoadModel::ClosedLoop,
            },
            connections: 10,
            threads,
            pipeline: 1,
            warmup_s: 1.0,
            measured_s: 2.0,
            requests: values.len() as u64,
            bytes_read: values.len() as u64 * 100,
            errors: ErrorCounts {
                timeout: 2,
                ..Default::default()
            },
            latency: h.clone(),
            uncorrected: h.clone(),
            lateness: rate.map(|_| h.clone()),
            series: Vec::new(),
            generator: Generator {
                cpu_s: 1.5,
                busy_fraction: busy,
                saturated: busy > 0.9,
                steal_fraction: None,
            },
            schedule: rate.map(|r| Schedule {
                rate: r,
                sent: values.len() as u64,
                unsent: 1,
                waited_for_connection: 0,
                behind: false,
            }),
            interrupted: false,
        }
    }

    /// A deterministic spread of latencies, different per seed.
    fn values(seed: u64, n: usize) -> Vec<u64> {
        let mut x = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..n)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                1 + (x >> 33) % 50_000
            })
            .collect()
    }

    #[test]
    fn merged_percentiles_are_those_of_all_values_together() {
        let (a, b, c) = (values(1, 5000), values(2, 300), values(3, 20_000));
        let parts = [
            outcome(&a, Some(100.0), 2, 0.5),
            outcome(&b, Some(50.0), 1, 1.0),
            outcome(&c, Some(25.0), 1, 0.2),
        ];
        let m = merge_outcomes(&parts.iter().collect::<Vec<_>>(), Vec::new());
        let mut all = new_histogram();
        for v in a.iter().chain(&b).chain(&c) {
            all.record(*v).unwrap();
        }
        assert_eq!(m.latency, all);
        for q in [0.0, 0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(m.latency.value_at_quantile(q), all.value_at_quantile(q));
        }
        assert_eq!(m.requests, 25_300);
        assert_eq!(m.errors.timeout, 6);
        assert_eq!(m.connections, 30);
        assert_eq!(m.threads, 4);
        assert_eq!(m.model, LoadModel::ConstantRate { rps: 175.0 });
        let s = m.schedule.unwrap();
        assert_eq!((s.sent, s.unsent), (25_300, 3));
        assert_eq!(m.lateness.unwrap().len(), 25_300);
        // Busy fraction weighted by threads: (0.5·2 + 1.0 + 0.2) / 4.
        assert!((m.generator.busy_fraction - 0.55).abs() < 1e-9);
        assert!(m.generator.saturated, "one saturated part taints the whole");
        assert!((m.generator.cpu_s - 4.5).abs() < 1e-9);
    }

    #[test]
    fn live_merge_waits_for_every_running_part() {
        let h = |vals: &[u64]| {
            let mut h = new_histogram();
            for v in vals {
                h.record(*v).unwrap();
            }
            h
        };
        let mut m = LiveMerge::new(2);
        let h0 = h(&[10, 20]);
        assert!(m.add(0, sample(-1, 2, &h0), h0.clone()).is_empty());
        let h1 = h(&[30]);
        let out = m.add(1, sample(-1, 1, &h1), h1);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].0.requests, 3);
        assert_eq!(out[0].0.phase, Phase::Warmup);
        assert_eq!(out[0].1.len(), 3);
        assert_eq!(out[0].0.p50_us, 20);
        // Part 0 reports seconds 0 and 1; part 1 stops before second 1.
        assert!(m.add(0, sample(0, 2, &h0), h0.clone()).is_empty());
        assert!(m.add(0, sample(1, 2, &h0), h0.clone()).is_empty());
        let h2 = h(&[1000]);
        let out = m.add(1, sample(0, 1, &h2), h2);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].0.second, 0);
        assert_eq!(out[0].0.p99_us, 1000);
        let out = m.finish(1);
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].0.second, out[0].0.requests), (1, 2));
        assert!(m.drain().is_empty());
    }

    #[test]
    fn draining_hands_out_the_rest_in_order() {
        let mut m = LiveMerge::new(3);
        let e = new_histogram();
        m.add(0, sample(0, 5, &e), e.clone());
        m.add(0, sample(1, 5, &e), e.clone());
        m.add(1, sample(1, 7, &e), e.clone());
        let out = m.drain();
        assert_eq!(
            out.iter().map(|(s, _)| s.second).collect::<Vec<_>>(),
            vec![0, 1]
        );
        assert_eq!(out[1].0.requests, 12);
    }
}
