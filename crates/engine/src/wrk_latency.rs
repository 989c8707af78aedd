//! wrk 4.x's printed latency, reproduced from a run's answers: the figure
//! the Dart-vs-Go study published, computed its way, never fairbench's own.
//!
//! What wrk does between measuring and printing (`src/stats.c`, `src/wrk.c`
//! of every 4.x release):
//!
//! 1. Each completed response's latency, from the send to the end of the
//!    answer, is recorded in µs into a linear histogram (one bucket per µs)
//!    of `timeout + 1` buckets (`stats_alloc(cfg.timeout * 1000)`): a
//!    latency above the timeout is not recorded (`stats_record` returns 0
//!    and the response counts as a timeout error), one of exactly the
//!    timeout is; either way the response counts in "N requests".
//! 2. After the run, if `complete / connections > 0`, it takes
//!    `interval = runtime_us / (complete / connections)` (integer
//!    division: the mean time between one connection's requests) and calls
//!    `stats_correct(latency, interval)`: for every recorded value
//!    `n ≥ 2 × interval`, the count at `n` is added again at
//!    `n − interval`, `n − 2·interval`, … while the value stays above
//!    `interval`. These synthetic samples raise the count; the minimum and
//!    maximum are not updated.
//! 3. It prints, over the corrected histogram and only for values from the
//!    recorded minimum to the maximum (a synthetic sample below the
//!    recorded minimum is counted but never summed nor ranked: a quirk kept
//!    here): the mean (integer sum over count), the standard deviation
//!    (n − 1), the maximum, the share within one standard deviation of the
//!    mean ("+/- Stdev"), and with `--latency` the 50th, 75th, 90th and
//!    99th percentiles, each the first value whose running count reaches
//!    `round(p / 100 × count + 0.5)`.
//!
//! fairbench's answers are in an HDR histogram of 3 significant digits, so
//! each answer enters at its bucket's highest equivalent value (within 0.1 %
//! of what it measured), as fairbench's own percentiles do; the rest is
//! wrk's arithmetic, on a dense per-µs array up to the largest answer, as
//! wrk's own.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// What wrk 4.x prints for a closed-loop run: see [`crate::Outcome::wrk_figures`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct WrkFigures {
    pub latency: WrkLatency,
    /// "N requests": every completed response, answers after the timeout
    /// included.
    pub requests: u64,
}

/// The latency figures wrk 4.x prints, in µs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct WrkLatency {
    /// Samples after the correction (recorded plus synthetic).
    pub samples: u64,
    /// Answers recorded: those not above the timeout.
    pub recorded: u64,
    /// The expected interval the correction used; `None` when wrk would
    /// not correct (fewer completed responses than connections).
    pub interval_us: Option<u64>,
    pub mean_us: f64,
    pub stdev_us: f64,
    pub max_us: u64,
    /// "+/- Stdev": the share of samples within one standard deviation.
    pub within_stdev_pct: f64,
    pub p50_us: u64,
    pub p75_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
}

/// wrk's figures from the latencies of the answered requests (from their
/// actual send, µs), the timeout, the run's length, the responses wrk would
/// count as completed (late ones included) and the connections.
pub fn wrk_latency(
    answered: &Histogram<u64>,
    timeout_us: u64,
    runtime_us: u64,
    complete: u64,
    connections: u64,
) -> WrkLatency {
    let mut recorded: Vec<(u64, u64)> = answered
        .iter_recorded()
        .map(|v| {
            (
                answered.highest_equivalent(v.value_iterated_to()),
                v.count_at_value(),
            )
        })
        .filter(|&(value, _)| value <= timeout_us)
        .collect();
    recorded.sort_unstable();
    let Some(&(max, _)) = recorded.last() else {
        return WrkLatency::default();
    };
    let min = recorded[0].0;
    let mut data = vec![0u64; max as usize + 1];
    let mut count = 0u64;
    for &(value, n) in &recorded {
        data[value as usize] += n;
        count += n;
    }
    let per_connection = complete.checked_div(connections).unwrap_or(0);
    let interval = (per_connection > 0).then(|| runtime_us / per_connection);
    if let Some(expected) = interval.filter(|&e| e > 0) {
        count += correct(&mut data, &recorded, expected);
    }
    figures(
        &data,
        min,
        max,
        count,
        recorded.iter().map(|r| r.1).sum(),
        interval,
    )
}

/// `stats_correct`: adds the synthetic samples; returns how many. Only
/// recorded values are read: a synthetic sample lands below the value that
/// made it and is never corrected again, as in wrk's ascending loop.
fn correct(data: &mut [u64], recorded: &[(u64, u64)], expected: u64) -> u64 {
    let mut added = 0;
    for &(n, c) in recorded.iter().filter(|&&(n, _)| n >= 2 * expected) {
        let mut m = n - expected;
        while m > expected {
            data[m as usize] += c;
            added += c;
            m -= expected;
        }
    }
    added
}

fn figures(
    data: &[u64],
    min: u64,
    max: u64,
    count: u64,
    recorded: u64,
    interval_us: Option<u64>,
) -> WrkLatency {
    let span = || (min..=max).map(|i| (i, data[i as usize]));
    let sum: u64 = span().map(|(i, n)| i * n).sum();
    let mean = sum as f64 / count as f64;
    let stdev = if count < 2 {
        0.0
    } else {
        let sq: f64 = span()
            .filter(|&(_, n)| n > 0)
            .map(|(i, n)| (i as f64 - mean).powi(2) * n as f64)
            .sum();
        (sq / (count - 1) as f64).sqrt()
    };
    let (lower, upper) = (mean - stdev, mean + stdev);
    let within: u64 = span()
        .filter(|&(i, _)| i as f64 >= lower && i as f64 <= upper)
        .map(|(_, n)| n)
        .sum();
    let percentile = |p: f64| {
        let rank = ((p / 100.0) * count as f64 + 0.5).round() as u64;
        let mut total = 0;
        for (i, n) in span() {
            total += n;
            if total >= rank {
                return i;
            }
        }
        0
    };
    WrkLatency {
        samples: count,
        recorded,
        interval_us,
        mean_us: mean,
        stdev_us: stdev,
        max_us: max,
        within_stdev_pct: within as f64 / count as f64 * 100.0,
        p50_us: percentile(50.0),
        p75_us: percentile(75.0),
        p90_us: percentile(90.0),
        p99_us: percentile(99.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::new_histogram;

    fn hist(values: &[(u64, u64)]) -> Histogram<u64> {
        let mut h = new_histogram();
        for &(v, n) in values {
            h.record_n(v, n).unwrap();
        }
        h
    }

    /// Worked by hand from wrk's code. Values under 2048 µs are exact in
    /// the HDR histogram. 10 answers at 100 µs and 2 at 1,000 µs, 2 s
    /// timeout, 1 s run, 12 completed on 2 connections: interval =
    /// 1,000,000 / (12 / 2) = 166,666 µs, so no value is ≥ 2 × interval and
    /// nothing is added. Sum 3,000 over 12: mean 250. Squares: 10 × 150² +
    /// 2 × 750² = 1,350,000, over 11: stdev 350.32. Within [−100.3, 600.3]:
    /// the ten at 100, 83.33 %. Ranks: p50 round(6.5) = 7 (ties round away
    /// from zero in C's round) → 100; p90 round(11.3) = 11 → 1,000.
    #[test]
    fn without_correction_the_figures_are_wrks_arithmetic() {
        let w = wrk_latency(&hist(&[(100, 10), (1_000, 2)]), 2_000_000, 1_000_000, 12, 2);
        assert_eq!(w.interval_us, Some(166_666));
        assert_eq!((w.samples, w.recorded), (12, 12));
        assert_eq!(w.mean_us, 250.0);
        assert!((w.stdev_us - 350.324).abs() < 0.01, "{w:?}");
        assert!((w.within_stdev_pct - 83.333).abs() < 0.01, "{w:?}");
        assert_eq!(
            (w.p50_us, w.p75_us, w.p90_us, w.p99_us),
            (100, 100, 1_000, 1_000)
        );
        assert_eq!(w.max_us, 1_000);
    }

    /// The correction, by hand: interval = 10,000 / (20 / 1) = 500 µs. The
    /// one answer at 1,800 µs (≥ 1,000) adds samples at 1,300 and 800 (then
    /// 300 is not above 500: stop). The 19 at 200 µs are under 1,000:
    /// untouched. Count 22; sum 19 × 200 + 1,800 + 1,300 + 800 = 7,700;
    /// mean 350. p99: rank round(21.78 + 0.5) = 22 → 1,800; p90: rank
    /// round(20.3) = 20 → 800.
    #[test]
    fn stats_correct_adds_samples_one_interval_apart_above_the_interval() {
        let w = wrk_latency(&hist(&[(200, 19), (1_800, 1)]), 2_000_000, 10_000, 20, 1);
        assert_eq!(w.interval_us, Some(500));
        assert_eq!((w.samples, w.recorded), (22, 20));
        assert_eq!(w.mean_us, 350.0);
        assert_eq!(w.p90_us, 800);
        assert_eq!(w.p99_us, 1_800);
        assert_eq!(w.max_us, 1_800);
    }

    /// Above the timeout nothing is recorded (at it, wrk's last bucket
    /// takes it); fewer completed than connections: no correction at all.
    #[test]
    fn answers_above_the_timeout_are_not_recorded_and_few_answers_are_not_corrected() {
        let h = hist(&[(100, 3), (1_500, 1), (1_600, 2), (2_000, 5)]);
        let w = wrk_latency(&h, 1_600, 1_000_000, 4, 10);
        assert_eq!(w.interval_us, None);
        assert_eq!((w.samples, w.recorded), (6, 6));
        assert_eq!(w.max_us, 1_600);
        assert!((w.mean_us - 833.333).abs() < 0.01, "{w:?}");
    }

    /// wrk's quirk: a synthetic sample below the recorded minimum counts but
    /// is never summed nor ranked. Two answers at 1,000 µs, interval 300:
    /// synthetic at 700 and 400 (each ×2), all below the minimum 1,000.
    /// Count 6, sum 2,000: mean 333.33 (the real ones sum to 2,000 alone);
    /// the p50's rank, round(3.5) = 4, is never reached within the span, so
    /// wrk prints 0 for it.
    #[test]
    fn synthetic_samples_below_the_recorded_minimum_count_but_are_not_summed() {
        let w = wrk_latency(&hist(&[(1_000, 2)]), 2_000_000, 600, 2, 1);
        assert_eq!(w.interval_us, Some(300));
        assert_eq!(w.samples, 6);
        assert!((w.mean_us - 333.333).abs() < 0.01, "{w:?}");
        assert_eq!(w.p50_us, 0);
    }

    #[test]
    fn no_answer_gives_empty_figures() {
        let w = wrk_latency(&new_histogram(), 2_000_000, 1_000_000, 0, 10);
        assert_eq!(w, WrkLatency::default());
    }
}
