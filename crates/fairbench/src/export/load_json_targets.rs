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
    /// `requests / duration_s` of the run.
    pub rps: f64,
    pub errors: ErrorCounts,
    pub status_codes: &'a BTreeMap<u16, u64>,
    /// The honest distribution, as `latency_us` of the run.
    pub latency_us: LatencySummary,
    pub latency_percentiles_us: BTreeMap<String, u64>,
}

/// `None` without a mix: the key is then left out.
pub fn of<'a>(o: &'a Outcome, percentiles: &[f64]) -> Option<Vec<TargetJson<'a>>> {
    groups(o, &o.targets, percentiles)
}

/// The same per stage of a rate profile (`stages`).
pub fn stages<'a>(o: &'a Outcome, percentiles: &[f64]) -> Option<Vec<TargetJson<'a>>> {
    groups(o, &o.stages, percentiles)
}

fn groups<'a>(
    o: &'a Outcome,
    g: &'a [TargetOutcome],
    percentiles: &[f64],
) -> Option<Vec<TargetJson<'a>>> {
    if g.is_empty() {
        return None;
    }
    Some(g.iter().map(|t| one(o, t, percentiles)).collect())
}

fn one<'a>(o: &Outcome, t: &'a TargetOutcome, percentiles: &[f64]) -> TargetJson<'a> {
    TargetJson {
        name: &t.name,
        planned: t.planned,
        requests: t.requests,
        rps: if o.measured_s > 0.0 {
            t.requests as f64 / o.measured_s
        } else {
            0.0
        },
        errors: t.errors,
        status_codes: &t.status_codes,
        latency_us: t.latency_summary(),
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
