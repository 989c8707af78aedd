//! The report model: one run of the results database, its repetitions
//! aggregated. Everything a report shows is computed here, once; the HTML,
//! Markdown, CSV and JSON outputs only format it.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::Value;

use super::case_key::CaseKey;
use super::palette;
use super::stats::Summary;
use crate::store::{CaseRow, RunRow, Store, SweepRow};

mod auto_warmup;
mod group;
mod parity;
mod series;
pub use auto_warmup::*;
pub use group::*;
pub use parity::*;
pub use series::*;

#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    pub run: RunInfo,
    /// Sorted by name; a server's position is its colour in every chart.
    pub servers: Vec<ServerInfo>,
    pub parity: Vec<ParityRow>,
    /// One per case key (and sweep step), in plan order.
    pub groups: Vec<Group>,
    pub sweeps: Vec<SweepInfo>,
    /// Cases that failed, were skipped or never finished.
    pub problems: Vec<Problem>,
    /// How the numbers were aggregated, for the reader.
    pub method: Method,
    /// Every case relative to the reference, repetition by repetition.
    pub paired: super::paired::Paired,
    /// The runs of a report of several machines (`report --with`), the
    /// report's own first; empty for a report of one run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub machines: Vec<Machine>,
    /// A suite with `[[step]]`s: each variant's ratio rung by rung.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ladder: Option<super::ladder::Ladder>,
    /// This run's cases across the earlier runs of its database (`report`
    /// only, not with `--with`); absent when no earlier run measured them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history: Option<super::run_history::RunHistory>,
    /// How an adaptive run's repetitions stopped (`repetitions =
    /// "until:…"`); null for a fixed count. The commands fill it
    /// (`report::stop`'s doc says why).
    pub stopped: Option<super::stop::Stop>,
}

/// One of the runs a report puts side by side.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    /// How its cases are labelled: CPU model and count, plus the run and
    /// its database when two machines would read the same.
    pub label: String,
    pub run: i64,
    /// The results database it was read from.
    pub db: String,
    pub suite: String,
    pub started_at: String,
    pub host: Value,
}

#[derive(Debug, Clone, Serialize)]
pub struct Method {
    pub aggregate: &'static str,
    pub interval: &'static str,
}

pub const METHOD: Method = Method {
    aggregate: "median over repetitions (each repetition's req/s is its requests divided by its measured seconds)",
    interval: "distribution-free confidence interval of the median from order statistics: the narrowest [k-th smallest, k-th largest] reaching 95 %; with fewer than 6 repetitions it is min..max and its real confidence is given (2: 50 %, 3: 75 %, 4: 87.5 %, 5: 93.75 %)",
};

#[derive(Debug, Clone, Serialize)]
pub struct RunInfo {
    pub id: i64,
    pub suite: String,
    pub state: String,
    pub reason: Option<String>,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub fairbench_version: String,
    pub git_revision: Option<String>,
    /// `host_json` as stored (an object; `null` if it was not JSON).
    pub host: Value,
    pub planned_cases: i64,
    pub cases_done: i64,
    pub cases_failed: i64,
    pub cases_skipped: i64,
    pub suite_toml: String,
}

impl RunInfo {
    /// The machine as label/value pairs: the documented fields first, in a
    /// fixed order, then any others by name.
    pub fn host_fields(&self) -> Vec<(String, String)> {
        const KNOWN: [(&str, &str); 8] = [
            ("cpu_model", "CPU"),
            ("cpus", "CPUs"),
            ("online_cpus", "online CPUs"),
            ("usable_cpus", "usable CPUs"),
            ("memory_bytes", "memory"),
            ("kernel", "kernel"),
            ("os", "OS"),
            ("governor", "CPU governor"),
        ];
        let Some(obj) = self.host.as_object() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (k, label) in KNOWN {
            if let Some(v) = obj.get(k) {
                let text = match (k, v.as_u64()) {
                    ("memory_bytes", Some(b)) => crate::units::bytes(b),
                    _ => value_text(v),
                };
                out.push((label.to_string(), text));
            }
        }
        for (k, v) in obj {
            if !KNOWN.iter().any(|(n, _)| n == k) {
                out.push((k.clone(), value_text(v)));
            }
        }
        out
    }
}

/// A JSON value as text: strings bare, null as "—", arrays as a list,
/// others as JSON.
pub fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "—".into(),
        Value::Array(a) => a.iter().map(value_text).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

/// The load profile of a case, from `load_json` (and its label as a fallback).
#[derive(Debug, Clone, Serialize)]
pub struct LoadInfo {
    /// `closed` or `rate`.
    pub model: String,
    /// Offered requests per second (constant rate).
    pub rate: Option<f64>,
    pub connections: Option<u64>,
    pub threads: Option<u64>,
    pub duration_s: Option<f64>,
    pub warmup_s: Option<f64>,
    /// How timeouts were counted: `fairbench` (aborted, connection
    /// reopened) or `wrk` (a late answer is a timeout, connection kept).
    pub timeout_mode: String,
}

impl LoadInfo {
    pub fn parse(load_json: &str, label: &str) -> LoadInfo {
        let v: Value = serde_json::from_str(load_json).unwrap_or(Value::Null);
        let model = v
            .get("model")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| label.split_whitespace().next().unwrap_or("").to_string());
        let rate = v.get("rate").and_then(Value::as_f64).or_else(|| {
            // "rate 5000/s c=50 t=1"
            label
                .split_whitespace()
                .nth(1)
                .and_then(|w| w.strip_suffix("/s"))
                .and_then(|n| n.parse().ok())
        });
        LoadInfo {
            model,
            rate,
            connections: v.get("connections").and_then(Value::as_u64),
            threads: v.get("threads").and_then(Value::as_u64),
            duration_s: v.get("duration_s").and_then(Value::as_f64),
            warmup_s: v.get("warmup_s").and_then(Value::as_f64),
            timeout_mode: v
                .get("timeout_mode")
                .and_then(Value::as_str)
                .unwrap_or("fairbench")
                .to_string(),
        }
    }

    pub fn is_closed(&self) -> bool {
        self.model == "closed"
    }
}

/// Reads `run` from the store into a report.
pub fn build(store: &Store, run: &RunRow) -> anyhow::Result<RunReport> {
    build_with(store, run, None)
}

/// As [`build`], with the ratios relative to `reference` (`--reference`)
/// instead of the suite's.
pub fn build_with(
    store: &Store,
    run: &RunRow,
    reference: Option<&str>,
) -> anyhow::Result<RunReport> {
    build_for(store, run, reference, None)
}

/// The report of `only` the servers it matches (`report --servers`): their
/// cases, their ratios — paired with the reference over the whole run, so
/// that leaving the reference out of the view does not lose them — and a
/// note saying the report is a selection.
pub fn build_for(
    store: &Store,
    run: &RunRow,
    reference: Option<&str>,
    only: Option<&fairbench_zoo::NameFilter>,
) -> anyhow::Result<RunReport> {
    let mut cases = store.cases(run.id)?;
    let mut paired = paired_at(run, &cases, reference, look_level(store, run.id)?)?;
    // Before a selection, which may leave the reference out of `cases`.
    let mut ladder =
        super::ladder::build(&super::ladder::steps_of(&run.suite_toml), &cases, &paired);
    if let Some(f) = only {
        select_servers(run, f, &mut cases, &mut paired)?;
        if let Some(l) = &mut ladder {
            l.rows.retain(|r| f.matches(&r.server));
        }
    }
    let toolchains: Value = serde_json::from_str(&run.toolchains_json).unwrap_or(Value::Null);

    let names: Vec<String> = cases
        .iter()
        .map(|c| c.server.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let servers = server_infos(&cases, &names, &toolchains);
    let mut parity = parity_rows(&cases);
    fill_vs_reference(&mut parity);
    let groups = groups_of(store, &cases, &names)?;

    let sweeps = store
        .sweeps(run.id)?
        .into_iter()
        .filter(|s| only.is_none_or(|f| f.matches(&s.server)))
        .map(|s| sweep_info(s, &groups, &names))
        .collect();

    Ok(RunReport {
        run: run_info(run),
        servers,
        parity,
        groups,
        sweeps,
        problems: problems_of(&cases),
        method: METHOD,
        paired,
        machines: Vec::new(),
        ladder,
        history: None,
        stopped: None,
    })
}

/// Keeps the cases and ratios of the servers `f` matches, and notes the
/// selection; an error naming the run's servers when it matches none.
fn select_servers(
    run: &RunRow,
    f: &fairbench_zoo::NameFilter,
    cases: &mut Vec<CaseRow>,
    paired: &mut super::paired::Paired,
) -> anyhow::Result<()> {
    let all: BTreeSet<String> = cases.iter().map(|c| c.server.clone()).collect();
    cases.retain(|c| f.matches(&c.server));
    if cases.is_empty() {
        return Err(crate::usage_error::usage(format!(
            "--servers: no server of run {} matches it (its servers: {})",
            run.id,
            all.into_iter().collect::<Vec<_>>().join(", ")
        )));
    }
    paired.rows.retain(|r| f.matches(&r.key.server));
    let shown: BTreeSet<&str> = cases.iter().map(|c| c.server.as_str()).collect();
    paired.notes.push(format!(
        "this report shows {} of the run's {} servers ({}, selected with --servers); each ratio is still paired with the reference measured in the same run",
        shown.len(),
        all.len(),
        shown.into_iter().collect::<Vec<_>>().join(", ")
    ));
    Ok(())
}

/// The servers by name (`names`, sorted), each with its palette colour
/// and the toolchain the run recorded for it.
fn server_infos(cases: &[CaseRow], names: &[String], toolchains: &Value) -> Vec<ServerInfo> {
    names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let c = cases
                .iter()
                .find(|c| &c.server == name)
                .expect("server of a case");
            ServerInfo {
                name: name.clone(),
                language: c.language.clone(),
                framework: c.framework.clone(),
                palette_index: i,
                colour: palette::colour(i),
                toolchain: toolchains.get(name).cloned(),
            }
        })
        .collect()
}

/// What the check found, once per server, variant, scenario and protocol,
/// from the first case that has it.
fn parity_rows(cases: &[CaseRow]) -> Vec<ParityRow> {
    let mut parity: Vec<ParityRow> = Vec::new();
    for c in cases {
        let has_parity = c.parity_json.is_some() || c.header_bytes.is_some() || c.fair.is_some();
        let seen = parity.iter().any(|p| {
            p.server == c.server
                && p.mode == c.mode
                && p.response == c.response
                && p.scenario == c.scenario
                && p.protocol == ParityRow::of(c).protocol
        });
        if has_parity && !seen {
            parity.push(ParityRow::of(c));
        }
    }
    parity
}

/// Cases that failed, were skipped or never finished, in plan order.
fn problems_of(cases: &[CaseRow]) -> Vec<Problem> {
    cases
        .iter()
        .filter(|c| c.state != "done")
        .map(|c| Problem {
            key: CaseKey::of(c),
            repetition: c.repetition,
            state: c.state.clone(),
            reason: c.reason.clone(),
            log_tail: c.log_tail.clone(),
        })
        .collect()
}

/// The cases folded by case key (and sweep step) in plan order, each
/// with its colour and its variant's dash pattern.
fn groups_of(store: &Store, cases: &[CaseRow], names: &[String]) -> anyhow::Result<Vec<Group>> {
    // Variants of each server in plan order: their dash patterns.
    let mut variants: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for c in cases {
        let v = variants.entry(c.server.clone()).or_default();
        let mr = (c.mode.clone(), c.response.clone());
        if !v.contains(&mr) {
            v.push(mr);
        }
    }
    let mut order: Vec<(CaseKey, Option<String>)> = Vec::new();
    let mut by_key: BTreeMap<(CaseKey, Option<String>), Vec<&CaseRow>> = BTreeMap::new();
    for c in cases {
        let k = (CaseKey::of(c), c.sweep.clone());
        if !by_key.contains_key(&k) {
            order.push(k.clone());
        }
        by_key.entry(k).or_default().push(c);
    }
    let mut groups = Vec::new();
    for k in order {
        let rows = &by_key[&k];
        let (key, sweep) = k;
        let palette_index = palette::index(names, &key.server);
        let variant_index = variants[&key.server]
            .iter()
            .position(|(m, r)| *m == key.mode && *r == key.response)
            .unwrap_or(0);
        groups.push(group(
            store,
            key,
            sweep,
            rows,
            palette_index,
            variant_index,
        )?);
    }
    Ok(groups)
}

/// The run as stored, its machine parsed.
fn run_info(run: &RunRow) -> RunInfo {
    RunInfo {
        id: run.id,
        suite: run.suite.clone(),
        state: run.state.clone(),
        reason: run.reason.clone(),
        started_at: run.started_at.clone(),
        finished_at: run.finished_at.clone(),
        fairbench_version: run.fairbench_version.clone(),
        git_revision: run.git_revision.clone(),
        host: serde_json::from_str(&run.host_json).unwrap_or(Value::Null),
        planned_cases: run.planned_cases,
        cases_done: run.cases_done,
        cases_failed: run.cases_failed,
        cases_skipped: run.cases_skipped,
        suite_toml: run.suite_toml.clone(),
    }
}

/// The run's paired ratios; `reference` must name a server of the run.
pub fn paired_of(
    run: &RunRow,
    cases: &[CaseRow],
    reference: Option<&str>,
) -> anyhow::Result<super::paired::Paired> {
    paired_at(run, cases, reference, super::ratio_stats::LEVEL)
}

/// The level the run's ratios are shown at: each look's when its
/// repetitions stopped adaptively (the stored stop record's
/// `level_per_look`), else the usual 95 %. Read from the record's JSON so
/// that the report does not import the runner that writes it.
pub fn look_level(store: &Store, run: i64) -> anyhow::Result<f64> {
    let level = store
        .stopped(run)?
        .and_then(|j| serde_json::from_str::<Value>(&j).ok())
        .and_then(|v| v["level_per_look"].as_f64())
        .filter(|l| *l > 0.0 && *l < 1.0);
    Ok(level.unwrap_or(super::ratio_stats::LEVEL))
}

/// As [`paired_of`], every interval at `level` ([`look_level`]), with a
/// note saying so when it is not the usual one.
pub fn paired_at(
    run: &RunRow,
    cases: &[CaseRow],
    reference: Option<&str>,
    level: f64,
) -> anyhow::Result<super::paired::Paired> {
    let (pairing, note) =
        crate::suite::pairing::Pairing::from_stored_suite(&run.suite_toml, reference)
            .map_err(crate::usage_error::usage)?;
    if reference.is_some()
        && !cases.iter().any(|c| {
            c.sweep.is_none() && pairing.reference.matches(&c.server, &c.mode, &c.response)
        })
    {
        let mut have: Vec<String> = cases
            .iter()
            .map(|c| format!("{}/{}/{}", c.server, c.mode, c.response))
            .collect();
        have.sort();
        have.dedup();
        return Err(crate::usage_error::usage(format!(
            "--reference {}: no case of run {} matches it (its variants: {})",
            pairing.reference.label(),
            run.id,
            have.join(", ")
        )));
    }
    let mut p = super::paired::build_at(cases, &pairing, level);
    p.notes.extend(note);
    if level != super::ratio_stats::LEVEL {
        p.notes.push(format!(
            "The repetitions stopped when the data allowed: every interval here is at {:.2} %, the level of each look, so that 95 % holds across the looks.",
            level * 100.0
        ));
    }
    Ok(p)
}

fn sweep_info(s: SweepRow, groups: &[Group], names: &[String]) -> SweepInfo {
    let mut steps: Vec<SweepStep> = groups
        .iter()
        .filter(|g| g.sweep.as_deref() == Some(s.sweep.as_str()))
        .map(|g| {
            let p = |x: &Option<Summary>| x.as_ref().map(|s| s.median);
            let at_quantile = match (s.slo_quantile * 1000.0).round() as i64 {
                500 => p(&g.lat_p50),
                900 => p(&g.lat_p90),
                990 => p(&g.lat_p99),
                999 => p(&g.lat_p999),
                _ => None,
            };
            SweepStep {
                offered_rps: g.load.rate.unwrap_or(f64::NAN),
                achieved_rps: p(&g.rps),
                p50_us: p(&g.lat_p50),
                p99_us: p(&g.lat_p99),
                met: at_quantile.map(|v| v <= s.slo_us as f64),
                load: g.key.load.clone(),
            }
        })
        .collect();
    steps.sort_by(|a, b| a.offered_rps.total_cmp(&b.offered_rps));
    SweepInfo {
        palette_index: palette::index(names, &s.server),
        row: s,
        steps,
    }
}

#[cfg(test)]
mod tests;
