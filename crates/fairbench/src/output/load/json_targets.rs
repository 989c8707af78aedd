//! `targets` of `fairbench load --json`: one object per target name of a
//! request mix (docs/load-json.md), counted by the same ledger as the
//! totals, so that they add up to them.

use std::collections::BTreeMap;

use fairbench_engine::{ErrorCounts, LatencySummary, Outcome, TargetOutcome};
use serde::Serialize;

#[derive(Serialize)]
pub struct TargetJson<'a> {
    pub name: &'a str,
    /// Requests of the window sent to this target: planned = requests +
    /// its not-answered classes in `errors`.
    pub planned: u64,
    /// Answered (any status).
    pub requests: u64,
    /// A target: `requests / duration_s` of the run, or
    /// `answered_in_window / duration_s` when the server fell behind the
    /// rate. A stage: the same on its span (`fell_behind`).
    pub rps: f64,
    /// Targets only: its answers that arrived within the window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answered_in_window: Option<u64>,
    pub errors: ErrorCounts,
    pub status_codes: &'a BTreeMap<u16, u64>,
    pub body_sizes: super::json_bodies::BodySizesJson<'a>,
    /// The honest distribution, as `latency_us` of the run.
    pub latency_us: LatencySummary,
    pub latency_percentiles_us: BTreeMap<String, u64>,
    /// Stages only: where the stage lies in `series` (seconds from the
    /// start of the measurement, as `series[].second`) and its planned
    /// rates.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub stage: Option<StageJson>,
}

#[derive(Serialize)]
pub struct StageJson {
    pub start_s: f64,
    pub duration_s: f64,
    pub from_rps: f64,
    pub to_rps: f64,
    /// Answers that arrived within the stage's span, whichever stage
    /// planned their requests.
    pub answered_in_span: u64,
    /// The server fell behind the rate in this stage: more of its own
    /// answers came after its span than could have been in flight at its
    /// end, so `rps` is `answered_in_span / duration_s`.
    pub fell_behind: bool,
}

/// `None` without a mix: the key is then left out.
pub fn of<'a>(o: &'a Outcome, percentiles: &[f64]) -> Option<Vec<TargetJson<'a>>> {
    let mut v = groups(&o.targets, |i| o.target_rps(&o.targets[i]), percentiles)?;
    for (j, t) in v.iter_mut().zip(&o.targets) {
        j.answered_in_window = Some(t.arrived);
    }
    Some(v)
}

/// The same per stage of a rate profile (`stages`), with where it lies.
pub fn stages<'a>(o: &'a Outcome, percentiles: &[f64]) -> Option<Vec<TargetJson<'a>>> {
    let mut v = groups(&o.stages, |i| o.stage_rps(i), percentiles)?;
    let mut at = 0.0;
    for (i, (j, s)) in v.iter_mut().zip(&o.stage_plan).enumerate() {
        let d = s.duration.as_secs_f64();
        j.stage = Some(StageJson {
            start_s: at,
            duration_s: d,
            from_rps: s.from,
            to_rps: s.to,
            answered_in_span: o.stages[i].arrived,
            fell_behind: o.stage_behind(i).is_some(),
        });
        at += d;
    }
    Some(v)
}

/// Each part with its rate, `rps(i)` of the `i`th.
fn groups<'a>(
    g: &'a [TargetOutcome],
    rps: impl Fn(usize) -> f64,
    percentiles: &[f64],
) -> Option<Vec<TargetJson<'a>>> {
    if g.is_empty() {
        return None;
    }
    Some(
        g.iter()
            .enumerate()
            .map(|(i, t)| one(t, rps(i), percentiles))
            .collect(),
    )
}

fn one<'a>(t: &'a TargetOutcome, rps: f64, percentiles: &[f64]) -> TargetJson<'a> {
    TargetJson {
        name: &t.name,
        planned: t.planned,
        requests: t.requests,
        rps,
        answered_in_window: None,
        errors: t.errors,
        status_codes: &t.status_codes,
        body_sizes: super::json_bodies::BodySizesJson::of(&t.body_sizes),
        latency_us: t.latency_summary(),
        stage: None,
        latency_percentiles_us: percentiles
            .iter()
            .map(|&p| {
                let v = if t.latency.is_empty() {
                    0
                } else {
                    t.latency.value_at_quantile(p / 100.0)
                };
                (format!("{p}"), v)
            })
            .collect(),
    }
}
