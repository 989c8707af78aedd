//! When the next request is due.
//!
//! A [`Pacer`] turns a request's sequence number into its planned send time.
//! Latency in constant-rate mode is measured from that planned time, not from
//! when the generator got round to sending, so a server that stalls is charged
//! for every request it delayed (no coordinated omission).

use crate::clock::{Nanos, NANOS_PER_SEC};

pub trait Pacer: Send {
    /// When the whole schedule's `j`-th slot is due, whichever worker owns
    /// it.
    fn slot(&self, j: u64) -> Nanos;
    /// How many slots of the whole schedule are due strictly before `t`.
    fn slots_before(&self, t: Nanos) -> u64;
    /// This worker `k` and the workers `T`: worker `k` owns slots `k`,
    /// `k + T`, `k + 2T`, …
    fn owner(&self) -> (u64, u64);

    /// Planned send time of this worker's `i`-th request.
    #[inline]
    fn due(&self, i: u64) -> Nanos {
        let (k, t) = self.owner();
        self.slot(k + i * t)
    }

    /// How many of this worker's requests are due strictly before `t`.
    fn due_before(&self, t: Nanos) -> u64 {
        let (k, workers) = self.owner();
        let slots = self.slots_before(t);
        if slots <= k {
            0
        } else {
            (slots - k).div_ceil(workers)
        }
    }
}

/// How many of `n` requests fall to worker `k` of `workers` when they are
/// the whole schedule's `n` slots from slot `first` on: those `j` in
/// `first..first + n` with `j mod workers = k`. Worker `k`'s first such
/// slot is `r = (k − first) mod workers` slots in, so it takes
/// `⌈(n − r) / workers⌉` of them. Splitting `n` as `n/T`, plus one for the
/// first `n mod T` workers, is right only when `first` is a multiple of
/// `T`: after a warm-up it is not, and the requests would leave a gap in
/// the schedule and end it late.
pub fn share(n: u64, first: u64, k: u64, workers: u64) -> u64 {
    let r = (k + workers - first % workers) % workers;
    n.saturating_sub(r).div_ceil(workers)
}

/// Evenly spaced requests at a total rate `R`, split across `T` workers.
///
/// The merged stream should be one request every `1/R` seconds. Worker `k` of
/// `T` takes every `T`-th slot starting at slot `k`, so its `i`-th request is
/// due at
///
/// ```text
///     due(i) = start + (k + i·T) / R
/// ```
///
/// Interleaving the workers (rather than giving each a burst at the same
/// instants) keeps the offered load smooth at the server. Times are computed
/// from `i` each time, never accumulated, so rounding cannot drift over a long
/// run.
#[derive(Debug, Clone)]
pub struct ConstantPacer {
    start: Nanos,
    worker: u64,
    workers: u64,
    rate: f64,
}

impl ConstantPacer {
    pub fn new(start: Nanos, worker: usize, workers: usize, rate: f64) -> Self {
        ConstantPacer {
            start,
            worker: worker as u64,
            workers: workers as u64,
            rate,
        }
    }
}

impl Pacer for ConstantPacer {
    fn slot(&self, j: u64) -> Nanos {
        // `as` saturates: a slot beyond u64 nanoseconds is simply never due.
        self.start
            .saturating_add((j as f64 * NANOS_PER_SEC as f64 / self.rate) as Nanos)
    }

    fn slots_before(&self, t: Nanos) -> u64 {
        if t <= self.start {
            return 0;
        }
        // ceil((t - start)·R / 1e9)
        ((t - self.start) as f64 * self.rate / NANOS_PER_SEC as f64).ceil() as u64
    }

    fn owner(&self) -> (u64, u64) {
        (self.worker, self.workers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_interleave_into_an_even_stream() {
        let pacers: Vec<_> = (0..3)
            .map(|k| ConstantPacer::new(1000, k, 3, 1000.0))
            .collect();
        let mut all: Vec<Nanos> = pacers
            .iter()
            .flat_map(|p| (0..100).map(move |i| p.due(i)))
            .collect();
        all.sort();
        for (n, t) in all.iter().enumerate() {
            assert_eq!(*t, 1000 + n as u64 * 1_000_000);
        }
    }

    #[test]
    fn due_before_counts_exactly() {
        let p = ConstantPacer::new(0, 1, 4, 1_000.0);
        for t in [
            0u64,
            1,
            999_999,
            1_000_000,
            1_000_001,
            5_000_000,
            123_456_789,
        ] {
            let brute = (0..100_000).take_while(|&i| p.due(i) < t).count() as u64;
            assert_eq!(p.due_before(t), brute, "t={t}");
        }
    }

    #[test]
    fn a_count_from_any_slot_is_shared_into_consecutive_slots() {
        for workers in 1..5u64 {
            for first in 0..9u64 {
                for n in 0..13u64 {
                    let mut taken: Vec<u64> = Vec::new();
                    for k in 0..workers {
                        let p = ConstantPacer::new(0, k as usize, workers as usize, 1_000.0);
                        let own = p.due_before(p.slot(first));
                        let got = share(n, first, k, workers);
                        taken.extend((own..own + got).map(|i| p.due(i) / 1_000_000));
                    }
                    taken.sort();
                    let want: Vec<u64> = (first..first + n).collect();
                    assert_eq!(taken, want, "T={workers} first={first} n={n}");
                }
            }
        }
    }

    #[test]
    fn no_drift_over_long_runs() {
        let p = ConstantPacer::new(0, 0, 1, 3.0);
        // 3/s for a day: request 259200 is due at exactly 86400 s.
        assert_eq!(p.due(259_200), 86_400 * NANOS_PER_SEC);
    }
}
