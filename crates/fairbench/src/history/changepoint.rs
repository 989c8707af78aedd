//! Where a series of per-run medians changed level: binary segmentation
//! with the two-level F statistic, its threshold calibrated by simulation.
//!
//! For a segment x[a..b) of m points and a split t (a < t < b), with
//! L = x[a..t) and R = x[t..b):
//!
//! ```text
//! B(t) = |L| · |R| / m · (mean(L) − mean(R))²        (between the levels)
//! W(t) = Σ_L (x − mean(L))² + Σ_R (x − mean(R))²      (within them)
//! F(t) = B(t) / (W(t) / (m − 2))
//! ```
//!
//! the likelihood ratio of "two levels" against "one" for Gaussian noise
//! of unknown variance, the noise estimated inside the segment itself (so
//! no run outside it, nor an earlier change, inflates it). The segment
//! splits at the t of largest F when F exceeds T(m); each half is then
//! tested the same way.
//!
//! T(m) is the 99th percentile of max_t F(t) over [`CALIBRATION_SERIES`]
//! series of m independent Gaussian points, drawn with a fixed seed: on
//! Gaussian noise the first test, and so the whole search (a half is only
//! tested after a first split), raises a false alarm with probability
//! 1 %. Heavier-tailed noise raises more (the unit tests measure Laplace
//! noise; docs/history.md states both). With fewer than [`MIN_POINTS`]
//! points nothing is tested: the noise would rest on one or two degrees
//! of freedom.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::report::stats::quantile_sorted;
use crate::seeded::SplitMix64;

/// The false-alarm rate the threshold is calibrated to (Gaussian noise).
pub const FALSE_ALARM: f64 = 0.01;
/// Gaussian series simulated to find T(m).
pub const CALIBRATION_SERIES: usize = 4000;
/// The shortest series (or segment) tested.
pub const MIN_POINTS: usize = 4;

/// A split found: the first index of the new level and its statistic.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Split {
    pub at: usize,
    pub statistic: f64,
}

/// The largest F(t) of x[a..b) and where. `resolution` is the smallest
/// noise believed: a segment that does not move at all still has one, so
/// that equal values never split and exact steps do.
fn best_split(x: &[f64], a: usize, b: usize, resolution: f64) -> Option<Split> {
    let m = b - a;
    // Centred first, so that sums of squares keep their precision at any
    // level (req/s in the hundred thousands, µs in the millions).
    let centre = x[a..b].iter().sum::<f64>() / m as f64;
    let y: Vec<f64> = x[a..b].iter().map(|v| v - centre).collect();
    let (total, total2) = (y.iter().sum::<f64>(), y.iter().map(|v| v * v).sum::<f64>());
    let floor = resolution * resolution;
    let (mut left, mut left2) = (0.0, 0.0);
    let mut best: Option<Split> = None;
    for t in 1..m {
        left += y[t - 1];
        left2 += y[t - 1] * y[t - 1];
        let (nl, nr) = (t as f64, (m - t) as f64);
        let within = (left2 - left * left / nl) + ((total2 - left2) - (total - left).powi(2) / nr);
        let d = left / nl - (total - left) / nr;
        let between = nl * nr / m as f64 * d * d;
        let f = between / (within.max(0.0) / (m - 2) as f64).max(floor);
        if best.is_none_or(|bs| f > bs.statistic) {
            best = Some(Split {
                at: a + t,
                statistic: f,
            });
        }
    }
    best
}

/// T(m): the (1 − [`FALSE_ALARM`]) quantile of max F on m Gaussian points.
/// Deterministic (the seed is m), so each length is simulated once per
/// process however many cases share it.
pub fn threshold(m: usize) -> f64 {
    static KNOWN: Mutex<BTreeMap<usize, f64>> = Mutex::new(BTreeMap::new());
    if m < MIN_POINTS {
        return f64::INFINITY;
    }
    let known = KNOWN.lock().ok().and_then(|k| k.get(&m).copied());
    known.unwrap_or_else(|| {
        let t = simulate(m);
        if let Ok(mut k) = KNOWN.lock() {
            k.insert(m, t);
        }
        t
    })
}

fn simulate(m: usize) -> f64 {
    let mut rng = SplitMix64::new(m as u64);
    let mut x = vec![0.0; m];
    let mut maxima: Vec<f64> = (0..CALIBRATION_SERIES)
        .map(|_| {
            x.iter_mut().for_each(|v| *v = gaussian(&mut rng));
            best_split(&x, 0, m, 0.0).map_or(0.0, |b| b.statistic)
        })
        .collect();
    maxima.sort_by(f64::total_cmp);
    quantile_sorted(&maxima, 1.0 - FALSE_ALARM)
}

/// A standard normal draw (Box–Muller).
pub fn gaussian(rng: &mut SplitMix64) -> f64 {
    let u = |r: &mut SplitMix64| ((r.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    let (u1, u2) = (u(rng), u(rng));
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// The change points of `x`, in order: each the first index of a new
/// level. `thresholds(m)` is T(m) (a cache of [`threshold`] in tests).
pub fn find_with(x: &[f64], thresholds: &mut impl FnMut(usize) -> f64) -> Vec<Split> {
    if x.len() < MIN_POINTS || x.iter().any(|v| !v.is_finite()) {
        return Vec::new();
    }
    // One part in a billion of the level: below any figure's precision.
    let level = x.iter().map(|v| v.abs()).fold(0.0, f64::max);
    let resolution = (level * 1e-9).max(f64::MIN_POSITIVE);
    let mut found = Vec::new();
    let mut todo = vec![(0, x.len())];
    while let Some((a, b)) = todo.pop() {
        if b - a < MIN_POINTS {
            continue;
        }
        let Some(s) = best_split(x, a, b, resolution) else {
            continue;
        };
        if s.statistic > thresholds(b - a) {
            found.push(s);
            todo.push((a, s.at));
            todo.push((s.at, b));
        }
    }
    found.sort_by_key(|s| s.at);
    found
}

/// [`find_with`] with T(m) computed as needed.
pub fn find(x: &[f64]) -> Vec<Split> {
    find_with(x, &mut threshold)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn noise(rng: &mut SplitMix64, n: usize) -> Vec<f64> {
        (0..n).map(|_| 100.0 + gaussian(rng)).collect()
    }

    #[test]
    fn a_step_in_the_middle_is_found_where_it_is() {
        let mut rng = SplitMix64::new(1);
        let mut x = noise(&mut rng, 20);
        x[10..].iter_mut().for_each(|v| *v += 6.0);
        let at: Vec<usize> = find(&x).iter().map(|s| s.at).collect();
        assert_eq!(at, [10]);
    }

    #[test]
    fn a_step_at_the_newest_point_is_found_there() {
        let mut rng = SplitMix64::new(2);
        let mut x = noise(&mut rng, 10);
        x[9] += 12.0;
        let at: Vec<usize> = find(&x).iter().map(|s| s.at).collect();
        assert_eq!(at, [9]);
    }

    #[test]
    fn a_slow_drift_is_reported_as_steps_the_first_near_its_middle() {
        // 30 runs drifting by 10 σ in all: no single step, so binary
        // segmentation cuts it where the two halves differ most (the
        // middle) and then, as the halves still drift, possibly again.
        let mut rng = SplitMix64::new(3);
        let mut x = noise(&mut rng, 30);
        for (i, v) in x.iter_mut().enumerate() {
            *v += 10.0 * i as f64 / 29.0;
        }
        let found = find(&x);
        assert!(!found.is_empty(), "a 10 σ drift is a change");
        let strongest = found
            .iter()
            .max_by(|a, b| a.statistic.total_cmp(&b.statistic))
            .unwrap();
        assert!((10..=20).contains(&strongest.at), "{found:?}");
    }

    #[test]
    fn noise_alone_has_no_change_point_and_flat_series_none_either() {
        let mut rng = SplitMix64::new(4);
        assert!(find(&noise(&mut rng, 25)).is_empty());
        assert!(find(&[5.0; 12]).is_empty());
        assert!(find(&[1.0, 9.0, 1.0]).is_empty(), "too short to tell");
    }

    /// The measured false-alarm rate on noise-only series: 1000 series of
    /// each length and noise, seeded. Gaussian noise is what T(m) is
    /// calibrated to (1 %); heavier tails alarm more often, and the bounds
    /// asserted are the ones docs/history.md states.
    #[test]
    fn false_alarm_rate_on_noise_only_series() {
        // Whether a series alarms is decided by its first test (a half is
        // only tested after a split), so only T(n) is needed.
        let cache: HashMap<usize, f64> = [5, 10, 20, 50].map(|n| (n, threshold(n))).into();
        let mut t = |m: usize| cache.get(&m).copied().unwrap_or(f64::INFINITY);
        let laplace = |r: &mut SplitMix64| {
            let u = ((r.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64 - 0.5;
            -u.signum() * (1.0 - 2.0 * u.abs()).ln()
        };
        let mut rng = SplitMix64::new(42);
        for n in [5, 10, 20, 50] {
            let (mut gauss, mut lap) = (0, 0);
            for _ in 0..1000 {
                let g: Vec<f64> = (0..n).map(|_| 100.0 + gaussian(&mut rng)).collect();
                gauss += usize::from(!find_with(&g, &mut t).is_empty());
                let l: Vec<f64> = (0..n).map(|_| 100.0 + laplace(&mut rng)).collect();
                lap += usize::from(!find_with(&l, &mut t).is_empty());
            }
            let (g, l) = (gauss as f64 / 1000.0, lap as f64 / 1000.0);
            eprintln!("n = {n}: false alarms {g} (Gaussian), {l} (Laplace)");
            assert!(g <= 0.02, "n = {n}: Gaussian {g}");
            assert!(l <= 0.05, "n = {n}: Laplace {l}");
        }
    }
}
