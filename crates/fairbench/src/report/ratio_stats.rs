//! The statistics of paired ratios: per repetition, one case's figure
//! divided by the reference's figure from the same repetition; summarised
//! by the **geometric mean** with a **Student t confidence interval on the
//! log ratios**.
//!
//! Why logs: a ratio of 1.25 and one of 0.8 are the same distance from 1,
//! and the mean of logs is the geometric mean, the one average under which
//! "A/B" and "B/A" agree. Why a t-interval rather than the bootstrap used by
//! `compare` for medians: repetitions number 3 to 10, and at such n the
//! percentile bootstrap of a mean is too narrow (with 3 values there are only
//! 10 distinct resamples, and its "95 %" interval covers about 75 % of the
//! time), while the t-interval's 95 % holds for any n ≥ 2 when the log ratios
//! are independent and roughly normal. It needs no seed. Its cost is width at
//! small n: with 2 repetitions t = 12.7. See docs/report.md.

use serde::Serialize;

/// The level of every ratio interval.
pub const LEVEL: f64 = 0.95;

/// A change smaller than this (B/A within 1 ± it) is no difference that
/// matters even when the interval excludes 1: at 95 % one A/A run in twenty
/// excludes 1 by chance, and a steady server gives intervals so narrow that
/// a 0.1 % drift between the runs would read as "B better" (criterion's
/// noise threshold, the same 1 %).
pub const NEGLIGIBLE: f64 = 0.01;

/// Ratios of one metric over repetitions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RatioSummary {
    /// Repetitions that paired.
    pub n: usize,
    /// exp(mean(ln ratio)).
    pub geomean: f64,
    /// The interval's bounds; None with a single repetition.
    pub low: Option<f64>,
    pub high: Option<f64>,
    /// The interval's nominal coverage (0 when there is no interval).
    pub level: f64,
    /// The ratios, in repetition order.
    pub values: Vec<f64>,
}

impl RatioSummary {
    /// None when no ratio is positive and finite (a ratio of zero or of a
    /// missing figure says nothing).
    pub fn of(ratios: &[f64], level: f64) -> Option<RatioSummary> {
        let values: Vec<f64> = ratios
            .iter()
            .copied()
            .filter(|r| r.is_finite() && *r > 0.0)
            .collect();
        let n = values.len();
        if n == 0 {
            return None;
        }
        let logs: Vec<f64> = values.iter().map(|r| r.ln()).collect();
        let mean = logs.iter().sum::<f64>() / n as f64;
        let (low, high, level) = if n >= 2 {
            let var = logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            let half = t_quantile(0.5 + level / 2.0, (n - 1) as f64) * (var / n as f64).sqrt();
            (Some((mean - half).exp()), Some((mean + half).exp()), level)
        } else {
            (None, None, 0.0)
        };
        Some(RatioSummary {
            n,
            geomean: mean.exp(),
            low,
            high,
            level,
            values,
        })
    }

    /// Whether the interval contains `x`; None without an interval.
    pub fn contains(&self, x: f64) -> Option<bool> {
        match (self.low, self.high) {
            (Some(lo), Some(hi)) => Some(lo <= x && x <= hi),
            _ => None,
        }
    }

    /// How far from 1 the interval reaches, in percent: the difference a
    /// ratio must exceed to stand clear of this one's noise.
    pub fn reach_pct(&self) -> Option<f64> {
        match (self.low, self.high) {
            (Some(lo), Some(hi)) => Some(100.0 * (hi - 1.0).max(1.0 - lo).max(0.0)),
            _ => None,
        }
    }

    /// `1.43× [1.38–1.49]`, or `1.43× (1 rep.)` without an interval.
    pub fn text(&self) -> String {
        match (self.low, self.high) {
            (Some(lo), Some(hi)) => {
                format!("{}× [{}–{}]", ratio(self.geomean), ratio(lo), ratio(hi))
            }
            _ => format!("{}× (n = 1)", ratio(self.geomean)),
        }
    }
}

/// A ratio with two decimals, three below 0.1 so it never reads 0.00.
pub fn ratio(v: f64) -> String {
    if v.abs() < 0.1 {
        format!("{v:.3}")
    } else {
        format!("{v:.2}")
    }
}

/// The p-quantile of Student's t distribution with `df` degrees of freedom
/// (df > 0, 0 < p < 1), by bisection on the distribution function.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    if p == 0.5 {
        return 0.0;
    }
    if p < 0.5 {
        return -t_quantile(1.0 - p, df);
    }
    // The 0.9995 quantile at df = 1 is 636.6; grow the bracket until it holds.
    let mut hi = 1.0;
    while t_cdf(hi, df) < p && hi < 1e12 {
        hi *= 2.0;
    }
    let mut lo = 0.0;
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if t_cdf(mid, df) < p {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-12 * hi.max(1.0) {
            break;
        }
    }
    (lo + hi) / 2.0
}

/// P(T ≤ t) for Student's t with `df` degrees of freedom.
pub fn t_cdf(t: f64, df: f64) -> f64 {
    let x = df / (df + t * t);
    let tail = 0.5 * inc_beta(df / 2.0, 0.5, x);
    if t >= 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// The regularised incomplete beta function I_x(a, b), by its continued
/// fraction (modified Lentz), using the symmetry relation where the fraction
/// converges slowly.
fn inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    if x < (a + 1.0) / (a + b + 2.0) {
        ln_front.exp() * beta_fraction(a, b, x) / a
    } else {
        1.0 - ln_front.exp() * beta_fraction(b, a, 1.0 - x) / b
    }
}

fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let floor = |v: f64| if v.abs() < TINY { TINY } else { v };
    // One Lentz step for the coefficient `aa`: updates c and d, returns
    // the factor it applies to the fraction.
    let step = |aa: f64, c: &mut f64, d: &mut f64| {
        *d = 1.0 / floor(1.0 + aa * *d);
        *c = floor(1.0 + aa / *c);
        *d * *c
    };
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 / floor(1.0 - qab * x / qap);
    let mut h = d;
    for m in 1..=300 {
        let m = m as f64;
        let m2 = 2.0 * m;
        h *= step(m * (b - m) * x / ((qam + m2) * (a + m2)), &mut c, &mut d);
        let del = step(
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
            &mut c,
            &mut d,
        );
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, 9 terms: about 15 correct digits).
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1−x) = π / sin(πx).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = G[0];
    let t = x + 7.5;
    for (i, g) in G.iter().enumerate().skip(1) {
        a += g / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn t_quantiles_match_the_tables() {
        // Two-sided 95 % critical values, as printed in every statistics table.
        for (df, t) in [
            (1.0, 12.7062),
            (2.0, 4.3027),
            (3.0, 3.1824),
            (4.0, 2.7764),
            (9.0, 2.2622),
            (29.0, 2.0452),
            (1000.0, 1.9623),
        ] {
            let q = t_quantile(0.975, df);
            assert!(close(q, t, 5e-4), "df {df}: {q} vs {t}");
        }
        assert!(close(t_quantile(0.995, 5.0), 4.0321, 5e-4));
        assert!(close(t_quantile(0.025, 4.0), -2.7764, 5e-4));
        assert_eq!(t_quantile(0.5, 3.0), 0.0);
        assert!(close(t_cdf(0.0, 7.0), 0.5, 1e-12));
        // df = 1 is the Cauchy distribution: P(T ≤ 1) = 3/4.
        assert!(close(t_cdf(1.0, 1.0), 0.75, 1e-10));
        assert!(close(ln_gamma(5.0), 24f64.ln(), 1e-12));
        assert!(close(
            ln_gamma(0.5),
            std::f64::consts::PI.sqrt().ln(),
            1e-12
        ));
    }

    #[test]
    fn constant_ratios_give_a_point_interval() {
        let s = RatioSummary::of(&[1.5, 1.5, 1.5, 1.5], LEVEL).unwrap();
        assert!(close(s.geomean, 1.5, 1e-12));
        assert!(close(s.low.unwrap(), 1.5, 1e-12) && close(s.high.unwrap(), 1.5, 1e-12));
        assert_eq!(s.contains(1.0), Some(false));
        assert!(close(s.reach_pct().unwrap(), 50.0, 1e-9));
    }

    #[test]
    fn known_ratios_give_the_known_interval() {
        // ln ratios −0.1, 0, +0.1: mean 0, sd 0.1, n 3; half width
        // 4.3027 × 0.1 / √3 = 0.248416.
        let r = [(-0.1f64).exp(), 1.0, 0.1f64.exp()];
        let s = RatioSummary::of(&r, LEVEL).unwrap();
        assert_eq!(s.n, 3);
        assert!(close(s.geomean, 1.0, 1e-12));
        let half = 4.302_653 * 0.1 / 3f64.sqrt();
        assert!(close(s.low.unwrap(), (-half).exp(), 1e-5), "{s:?}");
        assert!(close(s.high.unwrap(), half.exp(), 1e-5), "{s:?}");
        assert_eq!(s.contains(1.0), Some(true));
        assert_eq!(s.text(), "1.00× [0.78–1.28]");
        // The geometric mean of 1.2 and 1.2/1.1² and 1.2×1.1² is 1.2: a
        // symmetric spread on the log scale does not move it.
        let g = RatioSummary::of(&[1.2, 1.2 / 1.21, 1.2 * 1.21], LEVEL).unwrap();
        assert!(close(g.geomean, 1.2, 1e-12));
        // A/B and B/A are mirror images.
        let inv: Vec<f64> = g.values.iter().map(|v| 1.0 / v).collect();
        let h = RatioSummary::of(&inv, LEVEL).unwrap();
        assert!(close(h.geomean * g.geomean, 1.0, 1e-12));
        assert!(close(h.low.unwrap() * g.high.unwrap(), 1.0, 1e-12));
    }

    #[test]
    fn one_repetition_has_no_interval_and_bad_values_are_dropped() {
        let s = RatioSummary::of(&[2.0, 0.0, f64::NAN, -1.0], LEVEL).unwrap();
        assert_eq!((s.n, s.low, s.high, s.level), (1, None, None, 0.0));
        assert_eq!(s.contains(1.0), None);
        assert_eq!(s.reach_pct(), None);
        assert_eq!(s.text(), "2.00× (n = 1)");
        assert!(RatioSummary::of(&[], LEVEL).is_none());
        assert_eq!(ratio(0.0456), "0.046");
    }

    #[test]
    fn more_repetitions_narrow_the_interval() {
        let three = RatioSummary::of(&[1.40, 1.45, 1.43], LEVEL).unwrap();
        let six = RatioSummary::of(&[1.40, 1.45, 1.43, 1.40, 1.45, 1.43], LEVEL).unwrap();
        let w = |s: &RatioSummary| s.high.unwrap() / s.low.unwrap();
        assert!(w(&six) < w(&three));
        assert!(three.low.unwrap() < 1.40 && three.high.unwrap() > 1.45);
    }
}
