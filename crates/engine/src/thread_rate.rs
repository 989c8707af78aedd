//! wrk's per-thread "Req/Sec" (its Thread Stats line), reproduced.
//!
//! wrk does not divide the total by its threads. Each thread runs a timer
//! every 100 ms (`RECORD_INTERVAL_MS`, `record_rate` in wrk's `src/wrk.c`):
//! if the thread completed any response since its last sample, it records
//! `responses / elapsed` in requests per second into one statistic shared by
//! all threads, and starts a new interval; if it completed none, it records
//! nothing and the interval goes on, so a stall shows as a lower rate in the
//! next sample rather than as a zero. wrk prints the mean, the standard
//! deviation (n − 1) and the maximum of those samples over all threads.
//!
//! fairbench takes the same samples from each load thread's answers, on
//! 100 ms ticks from the start of the measured window: every answer whose
//! last byte arrived in the window counts, whatever its status and even if
//! it came after the timeout (wrk counts those too). The interval still open
//! when the window ends is not sampled, as wrk's last one is not. Samples
//! are kept as running moments, not one by one, so memory stays bounded;
//! threads' statistics merge exactly (Chan et al.'s pairwise update).

use serde::{Deserialize, Serialize};

use crate::clock::{Nanos, NANOS_PER_SEC};

/// wrk's `RECORD_INTERVAL_MS`.
pub const SAMPLE_EVERY: Nanos = 100_000_000;

/// The per-thread Req/Sec samples of one or more load threads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadReqSec {
    /// Samples taken, over all threads.
    pub samples: u64,
    /// Their mean, requests per second per thread.
    pub mean: f64,
    /// Sum of squared deviations from the mean (for the merge).
    pub m2: f64,
    pub max: f64,
}

impl ThreadReqSec {
    pub fn add_sample(&mut self, x: f64) {
        self.samples += 1;
        let d = x - self.mean;
        self.mean += d / self.samples as f64;
        self.m2 += d * (x - self.mean);
        self.max = self.max.max(x);
    }

    /// The samples of both, as if taken together.
    pub fn merge(&mut self, o: &ThreadReqSec) {
        if o.samples == 0 {
            return;
        }
        if self.samples == 0 {
            *self = *o;
            return;
        }
        let (na, nb) = (self.samples as f64, o.samples as f64);
        let n = na + nb;
        let d = o.mean - self.mean;
        self.mean += d * nb / n;
        self.m2 += o.m2 + d * d * na * nb / n;
        self.samples += o.samples;
        self.max = self.max.max(o.max);
    }

    /// wrk's Stdev: of the samples, with n − 1 (0 for fewer than two).
    pub fn stdev(&self) -> f64 {
        if self.samples < 2 {
            0.0
        } else {
            (self.m2 / (self.samples - 1) as f64).max(0.0).sqrt()
        }
    }

    /// None when no sample was taken (a window shorter than 100 ms, or no
    /// answer at all).
    pub fn some(&self) -> Option<&ThreadReqSec> {
        (self.samples > 0).then_some(self)
    }
}

/// One load thread's sampler.
pub(crate) struct ReqSecSampler {
    /// The window's start: answers before it are the warm-up's.
    start: Nanos,
    /// Where the current interval began (the last sample, or the window's
    /// start).
    from: Nanos,
    /// The next tick.
    next: Nanos,
    window_end: Nanos,
    count: u64,
    pub stats: ThreadReqSec,
}

impl ReqSecSampler {
    pub fn new(measure_start: Nanos, window_end: Nanos) -> Self {
        ReqSecSampler {
            start: measure_start,
            from: measure_start,
            next: measure_start + SAMPLE_EVERY,
            window_end,
            count: 0,
            stats: ThreadReqSec::default(),
        }
    }

    /// The window ends at `end` at the latest (a request budget used up).
    pub fn close_window(&mut self, end: Nanos) {
        self.window_end = self.window_end.min(end);
    }

    /// An answer's last byte arrived at `at`.
    #[inline]
    pub fn answer(&mut self, at: Nanos) {
        // An answer stamped a little before the last tick (answers read
        // late are timed by the kernel's stamps, not in order) counts in the
        // interval open now.
        if at < self.start || at >= self.window_end {
            return;
        }
        if at >= self.next {
            self.tick_until(at);
        }
        self.count += 1;
    }

    /// Takes the samples of every tick at or before `t` (and within the
    /// window). Only the first tick after answers can sample; the ticks
    /// after it until `t` saw none and are skipped in one step.
    fn tick_until(&mut self, t: Nanos) {
        let last = t.min(self.window_end);
        if self.next > last {
            return;
        }
        if self.count > 0 {
            let secs = (self.next - self.from) as f64 / NANOS_PER_SEC as f64;
            self.stats.add_sample(self.count as f64 / secs);
            self.count = 0;
            self.from = self.next;
        }
        let ticks = (last - self.next) / SAMPLE_EVERY + 1;
        self.next += ticks * SAMPLE_EVERY;
    }

    /// The window is over: the ticks up to its end are taken; the interval
    /// still open is not (wrk's last one never is).
    pub fn finish(&mut self) -> ThreadReqSec {
        self.tick_until(self.window_end);
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    #[test]
    fn steady_answers_give_their_rate_in_every_sample() {
        // 10 answers every 100 ms: 100/s, 10 samples in 1.05 s.
        let mut s = ReqSecSampler::new(1000 * MS, 2050 * MS);
        for i in 0..105u64 {
            s.answer(1000 * MS + i * 10 * MS + 5 * MS);
        }
        let r = s.finish();
        assert_eq!(r.samples, 10);
        assert!((r.mean - 100.0).abs() < 1e-9, "{r:?}");
        assert!(r.stdev() < 1e-9);
        assert!((r.max - 100.0).abs() < 1e-9);
    }

    #[test]
    fn a_stall_is_folded_into_the_next_sample_as_wrk_does() {
        let mut s = ReqSecSampler::new(0, 10_000 * MS);
        // 10 answers in [0,100), none in [100,300), 10 in [300,400).
        for i in 0..10 {
            s.answer(i * 10 * MS);
        }
        for i in 0..10 {
            s.answer(300 * MS + i * 10 * MS);
        }
        s.close_window(400 * MS);
        let r = s.finish();
        // Samples: 10/0.1 s = 100, then 10 answers over 300 ms = 33.3.
        assert_eq!(r.samples, 2);
        assert!((r.max - 100.0).abs() < 1e-9);
        assert!((r.mean - (100.0 + 100.0 / 3.0) / 2.0).abs() < 1e-9, "{r:?}");
    }

    #[test]
    fn answers_outside_the_window_do_not_count() {
        let mut s = ReqSecSampler::new(1000 * MS, 1100 * MS);
        s.answer(900 * MS);
        s.answer(1100 * MS);
        assert_eq!(s.finish().samples, 0);
    }

    #[test]
    fn merging_equals_sampling_together() {
        let xs = [3.0, 7.0, 7.5, 100.0, 42.0];
        let ys = [1.0, 9.0];
        let mut all = ThreadReqSec::default();
        let (mut a, mut b) = (ThreadReqSec::default(), ThreadReqSec::default());
        for x in xs {
            all.add_sample(x);
            a.add_sample(x);
        }
        for y in ys {
            all.add_sample(y);
            b.add_sample(y);
        }
        a.merge(&b);
        assert_eq!(a.samples, all.samples);
        assert!((a.mean - all.mean).abs() < 1e-9);
        assert!((a.stdev() - all.stdev()).abs() < 1e-9);
        assert_eq!(a.max, 100.0);
    }
}
