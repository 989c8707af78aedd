//! `load URL_A --vs URL_B`: before and after on two URLs, repetition by
//! repetition, in a seeded order (as `run --interleave case`: each
//! repetition runs both, the first chosen by the seed and alternating), and
//! their paired ratios B/A with the statistics `show` uses for zoo runs
//! (geometric mean, 95 % Student t interval on the log ratios;
//! [`crate::report::ratio_stats`]). The same URL twice is an A/A run: its
//! intervals are the noise floor of this machine.

use std::fmt::Write;

use fairbench_engine::bodies::BodySizes;
use fairbench_engine::{LoadConfig, Outcome};
use serde::Serialize;

use super::stopping::{Repetitions, Stopped};
use crate::report::ratio_stats::{ratio, RatioSummary, LEVEL, NEGLIGIBLE};
use crate::report::{bound, failing};
use crate::suite::order::case_order;
use crate::thresholds::{Stat, Threshold, Verdict};
use crate::units::{count, micros, rate};

/// Runs `a` and `b` as `reps` asks, in the seeded order (a fixed count, or
/// until every ratio is settled: [`Repetitions::may_stop`]); `go` runs one
/// load. Stops at the first error.
pub fn run_pair<E>(
    a: &LoadConfig,
    b: &LoadConfig,
    reps: &Repetitions,
    seed: u64,
    mut go: impl FnMut(usize, char, &LoadConfig) -> Result<Outcome, E>,
) -> Result<Pair, E> {
    let mut pair = Pair {
        a: Vec::new(),
        b: Vec::new(),
        order: String::new(),
        level: reps.level(),
        stopped: None,
    };
    for r in 1..=reps.max() {
        for side in case_order(2, r, seed) {
            let (name, cfg) = if side == 0 { ('A', a) } else { ('B', b) };
            let o = go(r, name, cfg)?;
            pair.order.push(name);
            if side == 0 {
                pair.a.push(o);
            } else {
                pair.b.push(o);
            }
        }
        pair.order.push(' ');
        let ratios: Vec<_> = METRICS.iter().map(|m| pair.ratio(m.1)).collect();
        if reps.may_stop(r, &ratios) {
            pair.stopped = Stopped::of(reps, r, r < reps.max());
            break;
        }
    }
    pair.order = pair.order.trim_end().to_string();
    Ok(pair)
}

/// Both sides' results, repetition by repetition.
pub struct Pair {
    pub a: Vec<Outcome>,
    pub b: Vec<Outcome>,
    /// "AB BA AB": the order they ran in.
    pub order: String,
    /// The level of every interval: 95 %, or higher when repetitions
    /// stopped adaptively ([`Repetitions::level`]).
    pub level: f64,
    /// How an adaptive run stopped.
    pub stopped: Option<Stopped>,
}

/// The figures compared, with which way is better.
const METRICS: &[(&str, Stat, bool)] = &[
    ("req/s", Stat::Rps, true),
    ("p50", Stat::Percentile(50.0), false),
    ("p90", Stat::Percentile(90.0), false),
    ("p99", Stat::Percentile(99.0), false),
    ("p99.9", Stat::Percentile(99.9), false),
];

/// The share of a side's requests, over all its repetitions, that failed.
fn error_share(runs: &[Outcome]) -> f64 {
    let (failed, planned) = runs
        .iter()
        .fold((0, 0), |(e, p), o| (e + o.errors.total(), p + o.planned));
    failing::share(failed, planned)
}

/// One figure of one run.
pub fn value(o: &Outcome, stat: Stat) -> f64 {
    let h = &o.latency;
    match stat {
        Stat::Rps => o.rps(),
        Stat::Percentile(p) if !h.is_empty() => h.value_at_quantile(p / 100.0) as f64,
        Stat::Mean if !h.is_empty() => h.mean(),
        Stat::Max => h.max() as f64,
        Stat::Errors => o.errors.total() as f64 / o.planned.max(1) as f64,
        Stat::Timeouts => o.errors.timeout as f64 / o.planned.max(1) as f64,
        _ => 0.0,
    }
}

#[derive(Serialize)]
pub struct MetricRatio {
    pub metric: &'static str,
    pub a_median: f64,
    pub b_median: f64,
    /// B/A per repetition, summarised.
    pub ratio: Option<RatioSummary>,
    pub verdict: String,
}

impl Pair {
    /// B/A of `stat`, repetition by repetition.
    pub fn ratio(&self, stat: Stat) -> Option<RatioSummary> {
        let r: Vec<f64> = self
            .a
            .iter()
            .zip(&self.b)
            .map(|(a, b)| value(b, stat) / value(a, stat))
            .collect();
        RatioSummary::of(&r, self.level)
    }

    /// Why the speed of the two is not compared: a side failed over 1 %
    /// of its requests (see [`crate::report::failing`]), or answered over
    /// 1 % of its successes with a short body (see
    /// `fairbench_engine::bodies`): either is faster for the work it
    /// skipped.
    pub fn not_compared(&self) -> Option<String> {
        self.withheld(&self.pooled_bodies())
    }

    fn withheld(&self, [a, b]: &[BodySizes; 2]) -> Option<String> {
        failing::not_compared(error_share(&self.a), error_share(&self.b)).or_else(|| {
            failing::over_share(
                (short_share(a), "A"),
                (short_share(b), "B"),
                "answered over 1 % of its successes with a short body",
            )
        })
    }

    /// Each side's successes over all its repetitions, by body size.
    fn pooled_bodies(&self) -> [BodySizes; 2] {
        [&self.a, &self.b].map(|runs| {
            let mut s = BodySizes::default();
            runs.iter().for_each(|o| s.merge(&o.body_sizes));
            s
        })
    }

    /// Whether a repetition of A, of B, had its figures bounded by the
    /// load generator (crate::report::bound).
    fn limited(&self) -> [bool; 2] {
        [&self.a, &self.b].map(|runs| runs.iter().any(Outcome::generator_limited))
    }

    /// The speed figures with their verdicts, then the share of requests
    /// each side failed.
    pub fn metrics(&self) -> Vec<MetricRatio> {
        let (a, b) = (error_share(&self.a), error_share(&self.b));
        let bodies = self.pooled_bodies();
        let withheld = self.withheld(&bodies);
        let limited = self.limited();
        let local = self
            .a
            .iter()
            .chain(&self.b)
            .any(|o| o.sockets.connect_local > 0);
        let mut m: Vec<MetricRatio> = METRICS
            .iter()
            .map(|&(metric, stat, higher_better)| {
                let r = self.ratio(stat);
                let better = better_side(r.as_ref(), higher_better);
                MetricRatio {
                    metric,
                    a_median: median(self.a.iter().map(|o| value(o, stat))),
                    b_median: median(self.b.iter().map(|o| value(o, stat))),
                    verdict: bound::first_reason(
                        bound::not_compared(limited, AB, better),
                        withheld.clone(),
                        local,
                    )
                    .unwrap_or_else(|| {
                        let v = verdict(r.as_ref(), higher_better);
                        match bound::at_least(limited, AB) {
                            Some(l) => format!("{v}, {l}"),
                            None => v,
                        }
                    }),
                    ratio: r,
                }
            })
            .collect();
        m.push(MetricRatio {
            metric: "errors",
            a_median: a,
            b_median: b,
            ratio: None,
            verdict: if a.max(b) > failing::FAILING_SHARE {
                let (who, runs) = if b > a { ("B", &self.b) } else { ("A", &self.a) };
                let local: u64 = runs.iter().map(|o| o.sockets.connect_local).sum();
                format!(
                    "{who} failed more: {} against {}{}",
                    failing::share_text(a.max(b)),
                    failing::share_text(a.min(b)),
                    if local > 0 {
                        format!(" ({local} of {who}'s failures were connects that failed on this machine: the generator's, not the server's)")
                    } else {
                        String::new()
                    }
                )
            } else {
                format!("both under {:.0} %", 100.0 * failing::FAILING_SHARE)
            },
        });
        m.extend(bodies_row(&bodies));
        m
    }

    /// `ratio.` thresholds, on the paired ratio's interval.
    pub fn check(&self, ts: &[Threshold]) -> Vec<Verdict> {
        // A bound cannot prove a ratio either way: no threshold passes on it.
        let withheld = self
            .not_compared()
            .or_else(|| bound::not_compared(self.limited(), AB, None));
        ts.iter()
            .filter(|t| t.ratio)
            .map(|t| match self.ratio(t.stat) {
                _ if withheld.is_some() && matches!(t.stat, Stat::Rps | Stat::Percentile(_)) => {
                    Verdict {
                        text: t.text.clone(),
                        shown: withheld.clone().unwrap_or_default(),
                        pass: false,
                    }
                }
                Some(RatioSummary {
                    geomean,
                    low: Some(lo),
                    high: Some(hi),
                    ..
                }) => t.check_ratio(geomean, lo, hi),
                _ => Verdict {
                    text: t.text.clone(),
                    shown: "no interval (2+ repetitions needed)".into(),
                    pass: false,
                },
            })
            .collect()
    }

    pub fn text(&self, a: &Side, b: &Side) -> String {
        let mut s = String::new();
        let n = self.a.len();
        // The protocols are named when they differ: the same URL twice is
        // then h2 against h3, not an A/A run.
        let (pa, pb) = if a.protocol == b.protocol {
            (String::new(), String::new())
        } else {
            (
                format!(" over {}", a.protocol),
                format!(" over {}", b.protocol),
            )
        };
        let _ = writeln!(s, "A  {}{pa}\nB  {}{pb}", a.url, b.url);
        let _ = writeln!(
            s,
            "{n} repetitions each, in the order {} (seeded, alternating); B/A per repetition: geometric mean [{} interval]",
            self.order,
            level_text(self.level)
        );
        if let Some(st) = &self.stopped {
            let _ = writeln!(s, "{}", st.text());
        }
        s.push('\n');
        let _ = writeln!(
            s,
            "  {:<8}{:>14}{:>14}  {:<26}verdict",
            "", "A (median)", "B (median)", "B/A"
        );
        for m in self.metrics() {
            let show = |v: f64| match m.metric {
                "req/s" => rate(v),
                "errors" => failing::share_text(v),
                "bodies" => format!("{} B", count(v as u64)),
                _ => micros(v),
            };
            let _ = writeln!(
                s,
                "  {:<8}{:>14}{:>14}  {:<26}{}",
                m.metric,
                show(m.a_median),
                show(m.b_median),
                m.ratio.as_ref().map_or("-".into(), |r| r.text()),
                m.verdict
            );
        }
        s
    }

    pub fn json(&self, a: &Side, b: &Side) -> serde_json::Value {
        serde_json::json!({
            "a": a.url,
            "b": b.url,
            "a_protocol": a.protocol,
            "b_protocol": b.protocol,
            "repetitions": self.a.len(),
            "order": self.order,
            "level": self.level,
            "stopping": self.stopped,
            "ratios": self.metrics(),
            "a_runs": self.a.iter().map(figures).collect::<Vec<_>>(),
            "b_runs": self.b.iter().map(figures).collect::<Vec<_>>(),
        })
    }
}

/// One side of the pair as shown: its URL and what it was loaded over.
pub struct Side<'a> {
    pub url: &'a str,
    pub protocol: fairbench_engine::Protocol,
}

/// "95 %", or "99.29 %" for a level spent over looks.
fn level_text(level: f64) -> String {
    if (level - LEVEL).abs() < 1e-9 {
        "95 %".into()
    } else {
        format!("{:.2} %", 100.0 * level)
    }
}

/// The share of a side's successes whose body was short (under half the
/// largest).
fn short_share(s: &BodySizes) -> f64 {
    s.short().map_or(0.0, |s| s.share())
}

/// Each side's most common body size over its repetitions, and whether
/// the sides sent the same: the study's first fault was answers of
/// unequal bytes compared as if equal. `None` when a side had no success.
fn bodies_row([sa, sb]: &[BodySizes; 2]) -> Option<MetricRatio> {
    let (ma, mb) = (sa.mode()?, sb.mode()?);
    let verdict = if ma == mb && sa.min == sb.min && sa.max == sb.max {
        "the same".to_string()
    } else if ma == mb {
        format!(
            "mostly the same, but A's ranged {}–{} B and B's {}–{} B",
            sa.min, sa.max, sb.min, sb.max
        )
    } else {
        format!("differ: A {ma} B, B {mb} B, so the two did not do the same work")
    };
    Some(MetricRatio {
        metric: "bodies",
        a_median: ma as f64,
        b_median: mb as f64,
        ratio: None,
        verdict,
    })
}

fn figures(o: &Outcome) -> serde_json::Value {
    serde_json::json!({
        "rps": o.rps(),
        "planned": o.planned,
        "requests": o.requests,
        "errors": o.errors.total(),
        "latency_us": o.latency_summary(),
        "warnings": o.warnings(),
    })
}

fn median(v: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = v.collect();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The sides as verdicts name them.
const AB: [&str; 2] = ["A", "B"];

/// What a ratio's interval shows: no difference when it contains 1 or
/// lies within ±[`NEGLIGIBLE`] of it; else which side is better. The one
/// reading [`better_side`] and [`verdict`] both give.
enum Reading {
    NoFigure,
    NoInterval,
    /// The interval holds 1; how far it reaches from it, %.
    NotShown(f64),
    /// Significant, within ±`NEGLIGIBLE`; its reach, %.
    Negligible(f64),
    /// B better or worse, by the geometric mean `g` in `lo`..`hi`.
    Side {
        b_better: bool,
        g: f64,
        lo: f64,
        hi: f64,
    },
}

fn read(r: Option<&RatioSummary>, higher_better: bool) -> Reading {
    let Some(r) = r else {
        return Reading::NoFigure;
    };
    let (Some(lo), Some(hi)) = (r.low, r.high) else {
        return Reading::NoInterval;
    };
    let reach = 100.0 * (hi - 1.0).max(1.0 - lo);
    if lo <= 1.0 && 1.0 <= hi {
        Reading::NotShown(reach)
    } else if 1.0 - NEGLIGIBLE <= lo && hi <= 1.0 + NEGLIGIBLE {
        Reading::Negligible(reach)
    } else {
        Reading::Side {
            b_better: (r.geomean > 1.0) == higher_better,
            g: r.geomean,
            lo,
            hi,
        }
    }
}

/// Which side the interval shows better, as [`verdict`] words it: 0 for
/// A, 1 for B, `None` when it shows no difference that matters.
fn better_side(r: Option<&RatioSummary>, higher_better: bool) -> Option<usize> {
    match read(r, higher_better) {
        Reading::Side { b_better, .. } => Some(usize::from(b_better)),
        _ => None,
    }
}

/// In words, from the interval ([`read`]): better or worse by the
/// geometric mean's distance from 1.
fn verdict(r: Option<&RatioSummary>, higher_better: bool) -> String {
    match read(r, higher_better) {
        Reading::NoFigure => "no figure".into(),
        Reading::NoInterval => "no interval (2+ repetitions needed)".into(),
        Reading::NotShown(reach) => {
            format!("no difference shown (interval within ±{reach:.1} %)")
        }
        Reading::Negligible(reach) => format!(
            "no difference that matters (interval within ±{reach:.1} %, under ±{:.0} %)",
            100.0 * NEGLIGIBLE
        ),
        Reading::Side {
            b_better,
            g,
            lo,
            hi,
        } => {
            format!(
                "B {} by {:.1} % ({}× to {}×)",
                if b_better { "better" } else { "worse" },
                100.0 * (g - 1.0).abs(),
                ratio(lo),
                ratio(hi)
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Which side ran, per repetition, in order.
    fn order(repetitions: usize, seed: u64) -> Vec<Vec<usize>> {
        (1..=repetitions).map(|r| case_order(2, r, seed)).collect()
    }

    #[test]
    fn the_order_alternates_from_a_seeded_start() {
        let o = order(4, 7);
        assert_eq!(o.len(), 4);
        assert_ne!(o[0], o[1]);
        assert_eq!(o[0], o[2]);
        assert_eq!(order(4, 7), o);
    }

    #[test]
    fn verdicts_follow_the_interval() {
        let same = RatioSummary::of(&[0.99, 1.01, 1.0], LEVEL).unwrap();
        assert!(verdict(Some(&same), true).starts_with("no difference shown"));
        // Significant at 95 %, but a 0.1 % change: no difference that matters.
        let tiny = RatioSummary::of(&[0.9990, 0.9991, 0.9989], LEVEL).unwrap();
        assert!(tiny.high.unwrap() < 1.0);
        assert!(verdict(Some(&tiny), true).starts_with("no difference that matters"));
        let small = RatioSummary::of(&[0.979, 0.98, 0.981], LEVEL).unwrap();
        assert!(verdict(Some(&small), true).starts_with("B worse by 2.0 %"));
        let slower = RatioSummary::of(&[2.0, 2.1, 1.9], LEVEL).unwrap();
        assert!(verdict(Some(&slower), false).starts_with("B worse by"));
        assert!(verdict(Some(&slower), true).starts_with("B better by"));
        // The side each verdict calls better, for the generator's bounds.
        assert_eq!(better_side(Some(&same), true), None);
        assert_eq!(better_side(Some(&tiny), true), None);
        assert_eq!(better_side(Some(&small), true), Some(0));
        assert_eq!(better_side(Some(&slower), false), Some(0));
        assert_eq!(better_side(Some(&slower), true), Some(1));
        assert_eq!(better_side(None, true), None);
    }
}
