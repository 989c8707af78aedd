//! How many repetitions: a fixed count, or "until the answer is known":
//! repetitions go on until every paired ratio reported is known to an asked
//! half-width, or its verdict can no longer change, or a maximum is reached.
//!
//! ## Why looking at the data does not break the interval
//!
//! Stopping as soon as an interval looks narrow enough, and then reporting
//! that interval at its nominal 95 %, covers less than 95 %: with a look
//! after every repetition, an interval that is narrow by chance at one look
//! ends the run there. The rule here keeps the stated coverage by
//! **Bonferroni alpha spending over a fixed grid of looks**:
//!
//! - the looks are fixed before the run, from the maximum alone: after
//!   repetition 3, then each look about 1.4 times the one before (3, 4, 6,
//!   8, 12, 16, 23, …), and always at the maximum;
//! - with K looks, each look's interval is the Student t interval of the
//!   log ratios at level 1 − α/K (α = 0.05), and the run's reported
//!   interval is the one of the look it stopped at;
//! - by the union bound, the chance that the true ratio falls outside the
//!   interval at *any* look is at most K · α/K = α, whatever the rule that
//!   chose the look. So the reported interval covers at least 95 % however
//!   the stopping depended on the data.
//!
//! It holds for any dependence between looks (they share repetitions), and
//! it needs nothing but the t-interval's own assumptions (independent,
//! roughly normal log ratios: `report::ratio_stats`). Its price is width:
//! with 7 looks each interval is at 99.3 %, about 1.3 times the 95 %
//! interval of the same repetitions at n = 10. Confidence sequences proper
//! (mixture martingales) are tighter at large n but need a known bound on
//! the noise's scale, which a server's run-to-run spread does not come
//! with; at the 3–30 repetitions a benchmark affords, the grid's few looks
//! cost less than looking after every repetition would. The simulation
//! tests below measure the coverage on null and non-null sequences, with
//! normal and heavy-tailed noise.
//!
//! ## When a ratio is settled
//!
//! A ratio is settled when its interval's half-width (relative to its
//! geometric mean) is at most the asked one, or when its verdict cannot
//! change: the interval lies wholly beyond 1 ± [`NEGLIGIBLE`] on one side
//! (better or worse, whatever more repetitions show), or wholly within it
//! (no difference that matters). The run stops at the first look where
//! every reported ratio is settled.

use crate::args::bounds::{self, MAX_REPETITIONS};
use crate::report::ratio_stats::{RatioSummary, LEVEL, NEGLIGIBLE};

/// The first look: two repetitions give a t-interval with one degree of
/// freedom, too wide at any spent level to settle anything.
const FIRST_LOOK: usize = 3;

/// How far apart the looks are, as a factor.
const LOOK_GROWTH: f64 = 1.4;

/// How many repetitions, as asked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Repetitions {
    Fixed(usize),
    /// Until every ratio is within ±`half_width_pct` % (or its verdict is
    /// settled), at most `max` repetitions.
    Until {
        half_width_pct: f64,
        max: usize,
    },
}

impl Repetitions {
    /// `N`, or `until:H%,max:M` (also `until:H%` with max 20).
    pub fn parse(s: &str) -> Result<Repetitions, String> {
        let s = s.trim();
        let Some(rest) = s.strip_prefix("until:") else {
            return bounds::repetitions(s).map(Repetitions::Fixed).map_err(|e| {
                format!("{e}; expected a count (e.g. 5) or until:PRECISION%,max:N (e.g. until:3%,max:20)")
            });
        };
        let mut parts = rest.split(',');
        let pct = parts.next().unwrap_or("").trim();
        let half_width_pct = pct
            .strip_suffix('%')
            .and_then(|p| p.trim().parse::<f64>().ok())
            .filter(|p| p.is_finite() && *p > 0.0 && *p < 100.0)
            .ok_or_else(|| {
                format!("{pct:?}: expected a precision in percent above 0, e.g. until:3%")
            })?;
        let mut max = 20;
        for part in parts {
            let part = part.trim();
            let n = part.strip_prefix("max:").ok_or_else(|| {
                format!("{part:?}: expected max:N after the precision, e.g. until:3%,max:20")
            })?;
            max = n
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|m| (FIRST_LOOK..=MAX_REPETITIONS).contains(m))
                .ok_or_else(|| {
                    format!(
                        "max:{n}: expected a whole number from {FIRST_LOOK} to {MAX_REPETITIONS}"
                    )
                })?;
        }
        Ok(Repetitions::Until {
            half_width_pct,
            max,
        })
    }

    /// The most repetitions this may run.
    pub fn max(&self) -> usize {
        match *self {
            Repetitions::Fixed(n) => n,
            Repetitions::Until { max, .. } => max,
        }
    }

    /// After which repetitions the data is looked at (none for a fixed
    /// count).
    pub fn looks(&self) -> Vec<usize> {
        let Repetitions::Until { max, .. } = *self else {
            return Vec::new();
        };
        let mut looks = vec![];
        let mut at = FIRST_LOOK as f64;
        while (at.round() as usize) < max {
            let n = at.round() as usize;
            if looks.last() != Some(&n) {
                looks.push(n);
            }
            at = (at * LOOK_GROWTH).max(at + 1.0);
        }
        looks.push(max);
        looks
    }

    /// The level of each interval: 95 % for a fixed count, 1 − 0.05/K with
    /// K looks for an adaptive run.
    pub fn level(&self) -> f64 {
        match self {
            Repetitions::Fixed(_) => LEVEL,
            Repetitions::Until { .. } => 1.0 - (1.0 - LEVEL) / self.looks().len() as f64,
        }
    }

    /// Whether the run may stop after `done` repetitions, given the ratios
    /// it reports at [`Repetitions::level`].
    pub fn may_stop(&self, done: usize, ratios: &[Option<RatioSummary>]) -> bool {
        match *self {
            Repetitions::Fixed(n) => done >= n,
            Repetitions::Until {
                half_width_pct,
                max,
            } => {
                done >= max
                    || (self.looks().contains(&done)
                        && ratios.iter().all(|r| settled(r.as_ref(), half_width_pct)))
            }
        }
    }
}

/// The interval's half-width, in percent of its geometric mean (the
/// larger side: log intervals are wider above).
pub fn half_width_pct(r: &RatioSummary) -> Option<f64> {
    match (r.low, r.high) {
        (Some(lo), Some(hi)) => Some(100.0 * (hi / r.geomean - 1.0).max(1.0 - lo / r.geomean)),
        _ => None,
    }
}

/// Whether a ratio is known well enough: see the module's doc.
pub fn settled(r: Option<&RatioSummary>, half_width: f64) -> bool {
    let Some(r) = r else { return false };
    let (Some(lo), Some(hi)) = (r.low, r.high) else {
        return false;
    };
    let neg = NEGLIGIBLE;
    let precise = half_width_pct(r).is_some_and(|h| h <= half_width);
    let verdict_fixed = lo > 1.0 + neg || hi < 1.0 - neg || (lo >= 1.0 - neg && hi <= 1.0 + neg);
    precise || verdict_fixed
}

/// What an adaptive run did, for the summary and the JSON.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Stopped {
    /// The half-width asked for, in percent.
    pub asked_half_width_pct: f64,
    pub max: usize,
    /// The repetitions after which the data was looked at.
    pub looks: Vec<usize>,
    /// Each interval's level: 1 − 0.05/looks.
    pub level_per_look: f64,
    /// The coverage that holds across the looks.
    pub family_level: f64,
    /// Repetitions run.
    pub repetitions: usize,
    /// Every ratio settled before the maximum.
    pub settled: bool,
}

impl Stopped {
    pub fn of(reps: &Repetitions, done: usize, settled: bool) -> Option<Stopped> {
        let Repetitions::Until {
            half_width_pct,
            max,
        } = *reps
        else {
            return None;
        };
        Some(Stopped {
            asked_half_width_pct: half_width_pct,
            max,
            looks: reps.looks(),
            level_per_look: reps.level(),
            family_level: LEVEL,
            repetitions: done,
            settled,
        })
    }

    /// One line for the summary.
    pub fn text(&self) -> String {
        let how = if self.settled {
            format!(
                "stopped after {} of at most {} repetitions: every ratio within ±{} % or its verdict settled",
                self.repetitions, self.max, self.asked_half_width_pct
            )
        } else {
            format!(
                "ran the maximum of {} repetitions: not every ratio reached ±{} % (see the intervals)",
                self.max, self.asked_half_width_pct
            )
        };
        format!(
            "{how}; looked after repetitions {}, each interval at {:.2} % so that 95 % holds across the {} looks",
            self.looks
                .iter()
                .map(|l| l.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            100.0 * self.level_per_look,
            self.looks.len()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seeded::SplitMix64;

    #[test]
    fn the_forms_parse_and_bad_ones_say_what_was_expected() {
        assert_eq!(Repetitions::parse("7"), Ok(Repetitions::Fixed(7)));
        assert_eq!(
            Repetitions::parse("until:3%,max:20"),
            Ok(Repetitions::Until {
                half_width_pct: 3.0,
                max: 20
            })
        );
        assert_eq!(
            Repetitions::parse("until:2.5%"),
            Ok(Repetitions::Until {
                half_width_pct: 2.5,
                max: 20
            })
        );
        for bad in [
            "0",
            "x",
            "until:3",
            "until:0%",
            "until:3%,max:2",
            "until:3%,at:9",
        ] {
            let e = Repetitions::parse(bad).unwrap_err();
            assert!(e.contains("expected"), "{bad}: {e}");
        }
    }

    #[test]
    fn the_looks_are_fixed_by_the_maximum_and_end_at_it() {
        let r = |max| Repetitions::Until {
            half_width_pct: 3.0,
            max,
        };
        assert_eq!(r(20).looks(), [3, 4, 6, 8, 12, 16, 20]);
        assert_eq!(r(3).looks(), [3]);
        assert_eq!(r(5).looks(), [3, 4, 5]);
        assert!((r(20).level() - (1.0 - 0.05 / 7.0)).abs() < 1e-12);
        assert_eq!(Repetitions::Fixed(5).level(), LEVEL);
    }

    /// A standard normal draw (Box-Muller).
    fn normal(rng: &mut SplitMix64) -> f64 {
        let u = |rng: &mut SplitMix64| ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let (a, b) = (u(rng), u(rng));
        (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
    }

    /// Student t with 3 degrees of freedom, scaled to unit variance: the
    /// heavy tails of a server that stalls now and then.
    fn heavy(rng: &mut SplitMix64) -> f64 {
        let z = normal(rng);
        let chi: f64 = (0..3).map(|_| normal(rng).powi(2)).sum();
        z / (chi / 3.0).sqrt() / 3f64.sqrt()
    }

    /// A draw of noise, of unit variance.
    type Noise = fn(&mut SplitMix64) -> f64;

    /// Runs `runs` adaptive sequences of log ratios ln(truth) + sd·noise;
    /// returns (coverage of the reported interval, mean repetitions).
    fn simulate(truth: f64, sd: f64, noise: Noise, reps: Repetitions, runs: usize) -> (f64, f64) {
        let mut rng = SplitMix64::new(0x5eed);
        let (mut covered, mut used) = (0usize, 0usize);
        for _ in 0..runs {
            let mut ratios = Vec::new();
            let summary = loop {
                ratios.push((truth.ln() + sd * noise(&mut rng)).exp());
                let s = RatioSummary::of(&ratios, reps.level());
                if reps.may_stop(ratios.len(), std::slice::from_ref(&s)) {
                    break s.unwrap();
                }
            };
            used += summary.n;
            covered += usize::from(summary.contains(truth) == Some(true));
        }
        (covered as f64 / runs as f64, used as f64 / runs as f64)
    }

    #[test]
    fn stopping_early_keeps_the_stated_coverage() {
        let reps = Repetitions::Until {
            half_width_pct: 3.0,
            max: 20,
        };
        // Null and non-null, quiet and noisy, normal and heavy-tailed; 2,500
        // sequences each: a coverage of 95 % measures within ±0.9 %.
        let cases: [(f64, f64, Noise); 6] = [
            (1.0, 0.02, normal),
            (1.0, 0.05, normal),
            (0.8, 0.05, normal),
            (1.005, 0.01, normal),
            (1.0, 0.04, heavy),
            (1.3, 0.08, heavy),
        ];
        for (truth, sd, noise) in cases {
            let (coverage, mean_n) = simulate(truth, sd, noise, reps, 2_500);
            assert!(
                coverage >= 0.94,
                "truth {truth}, sd {sd}: coverage {coverage} over {mean_n} repetitions"
            );
        }
        // Looking after every repetition at 95 % instead, the same quiet
        // null sequences fall short: the reason for the spending.
        let mut naive = 0usize;
        let mut rng = SplitMix64::new(0x5eed);
        for _ in 0..4_000 {
            let mut ratios = Vec::new();
            let s = loop {
                ratios.push((0.05 * normal(&mut rng)).exp());
                let s = RatioSummary::of(&ratios, LEVEL).unwrap();
                let done = ratios.len() >= 20;
                if done || (ratios.len() >= 3 && settled(Some(&s), 3.0)) {
                    break s;
                }
            };
            naive += usize::from(s.contains(1.0) == Some(true));
        }
        assert!((naive as f64 / 4_000.0) < 0.94, "naive coverage {naive}");
    }

    #[test]
    fn a_settled_comparison_stops_well_before_the_maximum() {
        let reps = Repetitions::Until {
            half_width_pct: 3.0,
            max: 20,
        };
        // A quiet A/A: ±3 % is reached at the first looks.
        let (_, quiet) = simulate(1.0, 0.01, normal, reps, 500);
        assert!(quiet <= 6.5, "{quiet}");
        // A clear 2× difference on noisy repetitions: the verdict is known
        // long before ±3 % would be.
        let (_, clear) = simulate(2.0, 0.1, normal, reps, 500);
        assert!(clear <= 6.0, "{clear}");
        // Noise that ±3 % cannot resolve in 20 repetitions: the maximum.
        let (_, noisy) = simulate(1.0, 0.3, normal, reps, 200);
        assert!(noisy > 19.0, "{noisy}");
    }

    #[test]
    fn a_fixed_count_runs_exactly_that_many() {
        let r = Repetitions::Fixed(5);
        assert!(!r.may_stop(4, &[]));
        assert!(r.may_stop(5, &[]));
        assert!(r.looks().is_empty());
    }
}
