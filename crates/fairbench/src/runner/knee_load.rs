//! `load URL --knee p99<=20ms`: the `sweep` suites' knee search on a URL —
//! constant-rate steps doubling from `--start-rate` until one misses the
//! objective, then bisection — judged by the same [`KneeSweep`] (its
//! honesty rules: errors and shed load fail a step, a stalled generator's
//! miss is measured again).

use std::fmt::Write;

use fairbench_engine::{LoadConfig, LoadModel, Outcome};
use serde::Serialize;

use super::knee::{Judged, KneeSearch, KneeSweep, Objective, StepFigures};
use crate::suite::SweepSpec;
use crate::units::{micros, rate};

/// One measured step.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    pub offered_rps: f64,
    pub answered_rps: f64,
    /// Latency at the objective's quantile, µs.
    pub at_quantile_us: u64,
    pub p50_us: u64,
    pub errors: u64,
    pub lateness_p99_us: u64,
    /// `met`, `missed`, or `again` (the generator stalled: measured again).
    pub judged: &'static str,
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct KneeResult {
    pub quantile: f64,
    pub limit_us: u64,
    /// The highest rate that met the objective; None: none did.
    pub knee_rps: Option<f64>,
    pub steps: Vec<Step>,
}

/// The knee search a suite's sweep profile asks for, with its objective:
/// for a zoo server's sweep and a `[[service]]`'s alike.
pub fn sweep_of(spec: &SweepSpec) -> KneeSweep {
    KneeSweep::new(
        KneeSearch::new(
            spec.start_rate,
            spec.max_rate,
            spec.step_factor,
            spec.bisect_steps,
        ),
        Objective {
            quantile: spec.slo_quantile,
            limit_us: spec.slo.as_micros() as u64,
        },
    )
}

/// Runs the search: `go` measures one step (its config, and whether it is
/// the first, which alone has the warm-up). Stops at the first error.
pub fn search<E>(
    cfg: &LoadConfig,
    mut sweep: KneeSweep,
    mut go: impl FnMut(&LoadConfig) -> Result<Outcome, E>,
) -> Result<KneeResult, E> {
    let mut steps = Vec::new();
    while let Some(r) = sweep.next() {
        let mut c = cfg.clone();
        c.model = LoadModel::ConstantRate { rps: r.round() };
        if !steps.is_empty() {
            c.warmup = std::time::Duration::ZERO;
        }
        let o = go(&c)?;
        let q = if o.latency.is_empty() {
            0
        } else {
            o.latency.value_at_quantile(sweep.objective.quantile)
        };
        let f = StepFigures {
            at_quantile_us: q,
            errors: o.errors.total(),
            rps: o.rps(),
            lateness_p99_us: o
                .lateness
                .as_ref()
                .filter(|h| !h.is_empty())
                .map_or(0, |h| h.value_at_quantile(0.99)),
        };
        let judged = sweep.judge(&f);
        steps.push(Step {
            offered_rps: r.round(),
            answered_rps: f.rps,
            at_quantile_us: q,
            p50_us: o.latency_summary().p50,
            errors: f.errors,
            lateness_p99_us: f.lateness_p99_us,
            judged: match judged {
                Judged::Met => "met",
                Judged::Missed => "missed",
                Judged::Again => "again",
            },
            warnings: o.warnings(),
        });
        if o.interrupted {
            break;
        }
    }
    Ok(KneeResult {
        quantile: sweep.objective.quantile,
        limit_us: sweep.objective.limit_us,
        knee_rps: sweep.knee(),
        steps,
    })
}

impl KneeResult {
    fn objective(&self) -> String {
        format!(
            "p{} <= {}",
            self.quantile * 100.0,
            micros(self.limit_us as f64)
        )
    }

    pub fn text(&self, url: &str) -> String {
        let mut s = String::new();
        let q = format!("p{}", self.quantile * 100.0);
        let _ = writeln!(s, "knee search on {url}: objective {}", self.objective());
        let _ = writeln!(
            s,
            "  {:>12}  {:>12}  {:>10}  {:>10}  {:>8}  judged",
            "offered", "answered", q, "p50", "errors"
        );
        for st in &self.steps {
            let _ = writeln!(
                s,
                "  {:>12}  {:>12}  {:>10}  {:>10}  {:>8}  {}",
                rate(st.offered_rps),
                rate(st.answered_rps),
                micros(st.at_quantile_us as f64),
                micros(st.p50_us as f64),
                st.errors,
                match st.judged {
                    "again" => "generator fell behind its schedule: measured again",
                    j => j,
                }
            );
        }
        let _ = writeln!(
            s,
            "{}",
            match self.knee_rps {
                Some(k) => format!(
                    "knee: {} req/s, the highest offered rate meeting {} with no error and at least 90 % answered",
                    rate(k),
                    self.objective()
                ),
                None => format!(
                    "no rate met {} (from {} req/s)",
                    self.objective(),
                    self.steps.first().map_or("-".into(), |s| rate(s.offered_rps))
                ),
            }
        );
        s
    }
}
