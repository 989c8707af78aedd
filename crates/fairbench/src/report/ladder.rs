//! The ladder (issue 39): a suite's `[[step]]`s go from a publication's
//! setup to a corrected one, one change per rung, all in one run. For every
//! server variant, its ratio to the reference at each rung is the paired
//! ratio of report::paired (the reference measured at the same rung and
//! repetition), and the move from the rung before is paired too: per
//! repetition, this rung's ratio over the previous rung's, so that the
//! machine's drift between repetitions cancels from it as from the ratios.

use std::collections::BTreeMap;

use serde::Serialize;

use super::case_key::CaseKey;
use super::paired::{by_key, pair, Paired, Ratio, Role, P99, RPS};
use crate::store::CaseRow;

pub const METHOD: &str = "each cell is the paired ratio to the reference at that rung (as in the ratio figures); the move is, per repetition, this rung's ratio divided by the previous rung's, summarised the same way (geometric mean, 95 % Student t interval)";

/// A rung as the suite named it, and what it changed.
#[derive(Debug, Clone, Serialize)]
pub struct LadderStep {
    pub name: String,
    pub changes: Vec<String>,
}

/// One server variant at one rung.
#[derive(Debug, Clone, Serialize)]
pub struct LadderCell {
    pub step: String,
    /// The case measured at this rung; None when the variant has none.
    pub key: Option<CaseKey>,
    pub rps: Option<Ratio>,
    pub p99_us: Option<Ratio>,
    /// This rung's req/s ratio over the previous rung's.
    pub rps_move: Option<Ratio>,
    pub p99_move: Option<Ratio>,
}

/// One server variant in one context across every rung.
#[derive(Debug, Clone, Serialize)]
pub struct LadderRow {
    pub server: String,
    pub mode: String,
    pub scenario: String,
    pub cores: i64,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub host: String,
    pub reference: String,
    pub cells: Vec<LadderCell>,
}

impl LadderRow {
    /// `server mode · scenario · N cores`.
    pub fn label(&self) -> String {
        let on = if self.host.is_empty() {
            String::new()
        } else {
            format!(" · on {}", self.host)
        };
        format!(
            "{} {} · {} · {}{on}",
            self.server,
            self.mode,
            self.scenario,
            super::case_key::cores_label(self.cores)
        )
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Ladder {
    pub method: &'static str,
    pub steps: Vec<LadderStep>,
    pub rows: Vec<LadderRow>,
}

/// What a row gathers across rungs.
type RowId = (String, String, String, i64, String, String);

fn row_id(k: &CaseKey) -> RowId {
    (
        k.server.clone(),
        k.mode.clone(),
        k.scenario.clone(),
        k.cores,
        k.host.clone(),
        k.protocol.clone(),
    )
}

/// The ladder of a run whose suite has steps; None without steps or
/// without a compared case at any rung.
pub fn build(steps: &[LadderStep], cases: &[CaseRow], paired: &Paired) -> Option<Ladder> {
    if steps.is_empty() {
        return None;
    }
    let mut rows: Vec<(RowId, LadderRow)> = Vec::new();
    for r in paired
        .rows
        .iter()
        .filter(|r| r.role == Role::Compared && !r.key.step.is_empty())
    {
        let Some(at) = steps.iter().position(|s| s.name == r.key.step) else {
            continue;
        };
        let id = row_id(&r.key);
        let i = match rows.iter().position(|(have, _)| *have == id) {
            Some(i) => i,
            None => {
                rows.push((id, empty_row(&r.key, &r.reference, steps)));
                rows.len() - 1
            }
        };
        let cell = &mut rows[i].1.cells[at];
        // Two shapes at one rung: the first in plan order stands.
        if cell.key.is_none() {
            cell.key = Some(r.key.clone());
            cell.rps = r.rps.clone();
            cell.p99_us = r.p99_us.clone();
        }
    }
    if rows.is_empty() {
        return None;
    }
    let rps = by_key(cases, RPS);
    let p99 = by_key(cases, P99);
    let mut out: Vec<LadderRow> = rows.into_iter().map(|(_, r)| r).collect();
    for row in &mut out {
        for at in 1..row.cells.len() {
            let (before, now) = row.cells.split_at_mut(at);
            let (prev, cell) = (&before[at - 1], &mut now[0]);
            let (Some(k0), Some(k1)) = (&prev.key, &cell.key) else {
                continue;
            };
            cell.rps_move = moved(&rps, paired, k0, k1);
            cell.p99_move = moved(&p99, paired, k0, k1);
        }
    }
    Some(Ladder {
        method: METHOD,
        steps: steps.to_vec(),
        rows: out,
    })
}

fn empty_row(k: &CaseKey, reference: &CaseKey, steps: &[LadderStep]) -> LadderRow {
    LadderRow {
        server: k.server.clone(),
        mode: k.mode.clone(),
        scenario: k.scenario.clone(),
        cores: k.cores,
        host: k.host.clone(),
        reference: reference.server.clone(),
        cells: steps
            .iter()
            .map(|s| LadderCell {
                step: s.name.clone(),
                key: None,
                rps: None,
                p99_us: None,
                rps_move: None,
                p99_move: None,
            })
            .collect(),
    }
}

/// The per-repetition ratios of `key` to its reference.
fn ratios(
    values: &BTreeMap<CaseKey, BTreeMap<i64, f64>>,
    paired: &Paired,
    key: &CaseKey,
) -> BTreeMap<i64, f64> {
    let empty = BTreeMap::new();
    let Some(reference) = paired.row(key).map(|r| &r.reference) else {
        return empty;
    };
    let (x, y) = (
        values.get(key).unwrap_or(&empty),
        values.get(reference).unwrap_or(&empty),
    );
    x.iter()
        .filter_map(|(rep, v)| y.get(rep).map(|w| (*rep, v / w)))
        .collect()
}

/// How the ratio moved from `from`'s rung to `to`'s, paired by repetition.
fn moved(
    values: &BTreeMap<CaseKey, BTreeMap<i64, f64>>,
    paired: &Paired,
    from: &CaseKey,
    to: &CaseKey,
) -> Option<Ratio> {
    pair(&ratios(values, paired, to), &ratios(values, paired, from))
}

/// The rungs of a stored suite, if it has any.
pub fn steps_of(suite_toml: &str) -> Vec<LadderStep> {
    crate::suite::Suite::parse(suite_toml, "the run's suite")
        .map(|s| {
            s.steps
                .into_iter()
                .map(|s| LadderStep {
                    name: s.name,
                    changes: s.changes,
                })
                .collect()
        })
        .unwrap_or_default()
}
