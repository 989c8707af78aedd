//! The statistics of reports and comparisons, small enough to read whole.
//!
//! - Repetitions of a case are summarised by their **median** with a
//!   **distribution-free confidence interval from order statistics**: the
//!   interval between the k-th smallest and k-th largest of n values covers
//!   the true median with probability 1 − 2·P(Binomial(n, ½) < k). We take
//!   the narrowest such interval reaching 95 %; with fewer than 6 repetitions
//!   none does, so the interval is min…max and its real confidence is stated
//!   (n = 3: 75 %). See docs/report.md.
//! - Two runs are compared by a **bootstrap confidence interval of the
//!   difference of medians** (percentile method, a fixed number of
//!   resamples, a fixed seed per case: the same databases always give the
//!   same verdicts). See docs/compare.md.

use crate::seeded::SplitMix64;
use serde::Serialize;

/// A metric over the repetitions of one case.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Repetitions with a value.
    pub n: usize,
    pub median: f64,
    /// The confidence interval of the median (equal to the median when n = 1).
    pub low: f64,
    pub high: f64,
    /// The interval's actual coverage, 0 … 1 (0 when n = 1: no interval).
    pub confidence: f64,
    pub min: f64,
    pub max: f64,
    /// The values, in repetition order.
    pub values: Vec<f64>,
}

impl Summary {
    /// None when there are no values.
    pub fn of(values: &[f64]) -> Option<Summary> {
        let vals: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        if vals.is_empty() {
            return None;
        }
        let mut sorted = vals.clone();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let (k, confidence) = median_ci_rank(n, 0.95);
        Some(Summary {
            n,
            median: median_sorted(&sorted),
            low: sorted[k - 1],
            high: sorted[n - k],
            confidence,
            min: sorted[0],
            max: sorted[n - 1],
            values: vals,
        })
    }
}

/// The median of sorted values (the mean of the middle two for even n).
pub fn median_sorted(s: &[f64]) -> f64 {
    let n = s.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

pub fn median(values: &[f64]) -> f64 {
    let mut s = values.to_vec();
    s.sort_by(f64::total_cmp);
    median_sorted(&s)
}

/// The rank k (1-based) such that [x(k), x(n−k+1)] is the narrowest
/// order-statistic interval for the median with coverage ≥ `level`, and that
/// coverage. When even k = 1 (min…max) falls short, returns k = 1 with its
/// real coverage 1 − 2^(1−n).
pub fn median_ci_rank(n: usize, level: f64) -> (usize, f64) {
    if n <= 1 {
        return (1, 0.0);
    }
    let coverage = |k: usize| 1.0 - 2.0 * binomial_half_cdf(n, k - 1);
    let mut best = (1, coverage(1));
    for k in 2..=n.div_ceil(2) {
        let c = coverage(k);
        if c >= level {
            best = (k, c);
        } else {
            break;
        }
    }
    best
}

/// P(Binomial(n, ½) ≤ j).
fn binomial_half_cdf(n: usize, j: usize) -> f64 {
    let mut term = 0.5f64.powi(n as i32); // C(n,0)/2^n
    let mut sum = 0.0;
    for i in 0..=j.min(n) {
        if i > 0 {
            term *= (n - i + 1) as f64 / i as f64;
        }
        sum += term;
    }
    sum
}

/// The bootstrap distribution's percentile interval of
/// median(B*) − median(A*), where A* and B* are resamples with replacement.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DiffInterval {
    pub low: f64,
    pub high: f64,
}

pub fn bootstrap_median_diff(
    a: &[f64],
    b: &[f64],
    resamples: usize,
    level: f64,
    seed: u64,
) -> Option<DiffInterval> {
    if a.is_empty() || b.is_empty() || resamples == 0 {
        return None;
    }
    let mut rng = SplitMix64::new(seed);
    let mut diffs = Vec::with_capacity(resamples);
    let mut buf_a = vec![0.0; a.len()];
    let mut buf_b = vec![0.0; b.len()];
    for _ in 0..resamples {
        for x in buf_a.iter_mut() {
            *x = a[rng.below(a.len())];
        }
        for x in buf_b.iter_mut() {
            *x = b[rng.below(b.len())];
        }
        buf_a.sort_by(f64::total_cmp);
        buf_b.sort_by(f64::total_cmp);
        diffs.push(median_sorted(&buf_b) - median_sorted(&buf_a));
    }
    diffs.sort_by(f64::total_cmp);
    let tail = (1.0 - level) / 2.0;
    Some(DiffInterval {
        low: quantile_sorted(&diffs, tail),
        high: quantile_sorted(&diffs, 1.0 - tail),
    })
}

/// Quantile of sorted values with linear interpolation between ranks.
pub fn quantile_sorted(s: &[f64], q: f64) -> f64 {
    if s.is_empty() {
        return f64::NAN;
    }
    let pos = q.clamp(0.0, 1.0) * (s.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    s[lo] + (s[hi] - s[lo]) * (pos - lo as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }

    #[test]
    fn order_statistic_intervals_are_honest() {
        assert_eq!(median_ci_rank(1, 0.95), (1, 0.0));
        assert_eq!(median_ci_rank(2, 0.95), (1, 0.5));
        assert_eq!(median_ci_rank(3, 0.95), (1, 0.75));
        assert_eq!(median_ci_rank(5, 0.95), (1, 0.9375));
        let (k, c) = median_ci_rank(6, 0.95);
        assert_eq!(k, 1);
        assert!((c - 0.96875).abs() < 1e-12);
        // n = 10: [x(2), x(9)] covers 97.9 %, [x(3), x(8)] only 89 %.
        let (k, c) = median_ci_rank(10, 0.95);
        assert_eq!(k, 2);
        assert!((c - 0.978515625).abs() < 1e-9, "{c}");
        let s = Summary::of(&[10.0, 30.0, 20.0]).unwrap();
        assert_eq!(
            (s.median, s.low, s.high, s.confidence),
            (20.0, 10.0, 30.0, 0.75)
        );
        assert_eq!(s.values, vec![10.0, 30.0, 20.0]);
        assert!(Summary::of(&[]).is_none());
    }

    #[test]
    fn bootstrap_is_deterministic_and_sensible() {
        let a = [100.0, 101.0, 99.0, 100.5, 99.5];
        let b = [110.0, 111.0, 109.0, 110.5, 109.5];
        let i1 = bootstrap_median_diff(&a, &b, 10_000, 0.95, 42).unwrap();
        let i2 = bootstrap_median_diff(&a, &b, 10_000, 0.95, 42).unwrap();
        assert_eq!(i1, i2);
        assert!(i1.low > 5.0 && i1.high < 15.0, "{i1:?}");
        let same = bootstrap_median_diff(&a, &a, 10_000, 0.95, 7).unwrap();
        assert!(same.low < 0.0 && same.high > 0.0, "{same:?}");
    }

    #[test]
    fn rng_below_is_in_range() {
        let mut r = SplitMix64::new(1);
        for n in 1..20 {
            for _ in 0..100 {
                assert!(r.below(n) < n);
            }
        }
    }
}
