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
//!
//! A suite's run (`repetitions = "until:3%,max:20"`, `runner::adaptive`)
//! plans `max` repetitions, repetitions outermost as always, and looks
//! when a repetition of the grid is complete: every paired ratio the run
//! reports (each variant's primary ratio to its context's reference,
//! `report::paired`) recomputed at the spent level. With no ratio to
//! settle (no reference in the run) the first look stops it.
//!
//! ## What a fixed design would have spent
//!
//! At the stop, each ratio's spread s of its log ratios and the
//! half-width h = t · s / √k its interval reached (log space, the
//! interval `ratio_stats` reports) say how many repetitions a fixed,
//! non-sequential design would have needed for the same precision: the
//! smallest n ≥ 2 with t₀.₉₇₅,ₙ₋₁ · s / √n ≤ h, its 95 % t-interval needing
//! no spending. The run's figure is the most any ratio needs. It is the
//! fixed design with hindsight (it knows s, which no fixed design does
//! beforehand), so it never needs more than k: the difference is the
//! price of looking, set against what stopping early saved from the
//! maximum. Machine time is reckoned as the run's builds once plus each
//! repetition at the run's own measured cost per repetition.

pub use crate::suite::Repetitions;

use crate::args::bounds::MAX_REPETITIONS;
use crate::report::ratio_stats::{t_quantile, RatioSummary, LEVEL, NEGLIGIBLE};

impl Repetitions {
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

/// The repetitions a fixed design needs for the half-width `r`'s interval
/// reached, from its spread: the smallest n ≥ 2 with
/// t₀.₉₇₅,ₙ₋₁ · s / √n ≤ h, in log space (see the module's doc). None
/// without an interval.
pub fn fixed_repetitions(r: &RatioSummary) -> Option<usize> {
    let (Some(hi), n) = (r.high, r.values.len()) else {
        return None;
    };
    if n < 2 {
        return None;
    }
    let logs: Vec<f64> = r.values.iter().map(|v| v.ln()).collect();
    let mean = logs.iter().sum::<f64>() / n as f64;
    let sd = (logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
    let h = hi.ln() - r.geomean.ln();
    (2..=MAX_REPETITIONS).find(|&m| {
        let m = m as f64;
        t_quantile(0.5 + LEVEL / 2.0, m - 1.0) * sd / m.sqrt() <= h * (1.0 + 1e-9)
    })
}

/// What a fixed design would have spent for the precision an adaptive
/// run reached: its repetitions, and the run's machine time at both counts.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FixedDesign {
    /// The most any ratio needs ([`fixed_repetitions`]).
    pub repetitions: usize,
    /// Builds once, then each repetition at the run's own cost per
    /// repetition; None when no repetition's time was measured.
    pub time_s: Option<f64>,
    /// The adaptive run's machine time by the same reckoning.
    pub adaptive_time_s: Option<f64>,
}

/// What an adaptive run did, for the summary and the JSON.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
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
    /// A suite's run: what a fixed design would have spent instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixed_design: Option<FixedDesign>,
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
            fixed_design: None,
        })
    }

    /// One line for the end of a suite's run and `show`.
    pub fn run_line(&self) -> String {
        let why = if self.settled {
            format!(
                "every ratio within ±{} % or its verdict settled",
                self.asked_half_width_pct
            )
        } else {
            format!(
                "max reached: not every ratio within ±{} %",
                self.asked_half_width_pct
            )
        };
        let looks: Vec<String> = self.looks.iter().map(|l| l.to_string()).collect();
        let mut line = format!(
            "adaptive: stopped at repetition {} of max {} ({why}; looked after {}, each interval at {:.2} % so that 95 % holds across the looks)",
            self.repetitions,
            self.max,
            looks.join(", "),
            100.0 * self.level_per_look
        );
        if let Some(f) = &self.fixed_design {
            line += &format!(
                "; a fixed design needed ~{} repetitions for the same precision",
                f.repetitions
            );
            if let (Some(x), Some(y)) = (f.time_s, f.adaptive_time_s) {
                let d = |s: f64| {
                    humantime::format_duration(std::time::Duration::from_secs(s.round() as u64))
                };
                line += &format!(": {} of machine time against {}", d(x), d(y));
            }
        }
        line
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
    fn a_fixed_design_needs_what_its_own_interval_reaches() {
        // ln ratios −0.1, 0, +0.1 (s = 0.1) at 99 %: h = 9.925 × 0.1 / √3
        // = 0.573. At n = 2 a fixed 95 % design is still wider
        // (12.71 × 0.1 / √2 = 0.899); at 3 it is within (4.30 × 0.1 / √3
        // = 0.248).
        let r = RatioSummary::of(&[(-0.1f64).exp(), 1.0, 0.1f64.exp()], 0.99).unwrap();
        assert_eq!(fixed_repetitions(&r), Some(3));
        // The same values at 95 %: it needs exactly them.
        let r95 = RatioSummary::of(&r.values, LEVEL).unwrap();
        assert_eq!(fixed_repetitions(&r95), Some(3));
        // Ten values at the spent level of 7 looks: fewer than ten.
        let ten: Vec<f64> = (0..10)
            .map(|i| (0.05 * (i as f64 - 4.5) / 3.0).exp())
            .collect();
        let spent = RatioSummary::of(&ten, 1.0 - 0.05 / 7.0).unwrap();
        let n = fixed_repetitions(&spent).unwrap();
        assert!((5..10).contains(&n), "{n}");
        // No spread: two repetitions are enough; one value: no interval.
        let flat = RatioSummary::of(&[1.2, 1.2, 1.2], 0.99).unwrap();
        assert_eq!(fixed_repetitions(&flat), Some(2));
        let one = RatioSummary::of(&[1.2], 0.99).unwrap();
        assert_eq!(fixed_repetitions(&one), None);
    }

    #[test]
    fn the_run_line_says_where_it_stopped_and_what_a_fixed_design_costs() {
        let reps = Repetitions::parse("until:3%,max:6").unwrap();
        let mut s = Stopped::of(&reps, 3, true).unwrap();
        s.fixed_design = Some(FixedDesign {
            repetitions: 2,
            time_s: Some(10.0),
            adaptive_time_s: Some(14.0),
        });
        let line = s.run_line();
        assert!(
            line.starts_with("adaptive: stopped at repetition 3 of max 6 (every ratio within ±3 %"),
            "{line}"
        );
        assert!(line.contains("looked after 3, 4, 6"), "{line}");
        assert!(
            line.ends_with("a fixed design needed ~2 repetitions for the same precision: 10s of machine time against 14s"),
            "{line}"
        );
        let back: Stopped = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back.run_line(), line);
        let max = Stopped::of(&reps, 6, false).unwrap().run_line();
        assert!(max.contains("of max 6 (max reached"), "{max}");
    }

    #[test]
    fn a_fixed_count_runs_exactly_that_many() {
        let r = Repetitions::Fixed(5);
        assert!(!r.may_stop(4, &[]));
        assert!(r.may_stop(5, &[]));
        assert!(r.looks().is_empty());
    }
}
