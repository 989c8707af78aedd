//! `history` as text (one case's table, or one line per case), CSV and
//! JSON.

use std::fmt::Write;

use serde::Serialize;

use super::analysis::{false_alarm_pct, CaseHistory, Change, METHOD};
use crate::output::check_table::Table;
use crate::report::json_doc::{render, Doc};

/// What the JSON document holds beside its cases.
#[derive(Serialize)]
struct Body<'a> {
    db: &'a str,
    method: &'static str,
    false_alarm_pct: f64,
    min_change_pct: f64,
    cases: &'a [CaseHistory],
}

pub fn json(db: &str, min_change_pct: f64, cases: &[CaseHistory]) -> anyhow::Result<String> {
    let mut s = render(
        Doc::History,
        &Body {
            db,
            method: METHOD,
            false_alarm_pct: false_alarm_pct(),
            min_change_pct,
            cases,
        },
    )?;
    s.push('\n');
    Ok(s)
}

/// A figure with the precision its size needs.
fn num(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    }
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "—".into(), |p| format!("{p:+.1} %"))
}

/// `−30.2 % [−31.0 %, −29.5 %] worse`.
fn size(c: &Change) -> String {
    let interval = match (c.ci_low_pct, c.ci_high_pct) {
        (Some(l), Some(h)) => format!(" [{}, {}]", pct(Some(l)), pct(Some(h))),
        _ => " (no interval: fewer than 2 repetitions on a side)".into(),
    };
    format!("{}{interval} {}", pct(c.change_pct), c.direction)
}

fn revision(r: &Option<String>) -> &str {
    r.as_deref().unwrap_or("—")
}

/// One case's series: a row per run, the change points marked.
pub fn case_table(h: &CaseHistory) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{} — {}", h.label, h.unit);
    let mut t = Table::new(&[
        "run",
        "date",
        "revision",
        "source",
        "median",
        "interval",
        "A/A floor",
        "ratio",
        "change",
    ])
    .right_align(&[0, 4, 6, 7]);
    for (i, p) in h.points.iter().enumerate() {
        let marker = h
            .changes
            .iter()
            .find(|c| c.index == i)
            .map(|c| format!("◆ {}", size(c)))
            .unwrap_or_default();
        t.row(vec![
            p.run.to_string(),
            p.started_at.chars().take(10).collect(),
            revision(&p.revision).chars().take(12).collect(),
            revision(&p.source).to_string(),
            num(p.median),
            if p.confidence > 0.0 {
                format!("{}–{}", num(p.low), num(p.high))
            } else {
                "—".into()
            },
            p.noise_floor_pct
                .map_or_else(|| "—".into(), |f| format!("±{f:.1} %")),
            p.ratio.map_or_else(|| "—".into(), |r| format!("{r:.3}")),
            marker,
        ]);
    }
    out.push_str(&t.render());
    let _ = writeln!(
        out,
        "{} change point(s) beyond ±{:.1} % ({} % false alarms on noise-only Gaussian series; docs/history.md)",
        h.changes.len(),
        h.floor_pct,
        false_alarm_pct()
    );
    out
}

/// One line per case with its latest change point, like asv's summary.
pub fn summary(cases: &[CaseHistory]) -> String {
    let mut t = Table::new(&["case", "metric", "runs", "latest change"]).right_align(&[2]);
    for h in cases {
        let latest = match h.latest_change() {
            Some(c) => format!(
                "{} at run {} ({} → {}{})",
                size(c),
                c.run_after,
                revision(&c.revision_before),
                revision(&c.revision_after),
                match (&c.source_before, &c.source_after) {
                    (Some(b), Some(a)) if a != b => format!("; server source {b} → {a}"),
                    _ => String::new(),
                }
            ),
            None => "none".into(),
        };
        t.row(vec![
            h.label.clone(),
            h.metric.into(),
            h.points.len().to_string(),
            latest,
        ]);
    }
    t.render()
}

const COLUMNS: [&str; 22] = [
    "case",
    "server",
    "mode",
    "response",
    "scenario",
    "cores",
    "load",
    "protocol",
    "metric",
    "run",
    "started_at",
    "revision",
    "source",
    "median",
    "ci_low",
    "ci_high",
    "noise_floor_pct",
    "ratio",
    "change_point",
    "change_pct",
    "change_ci_low_pct",
    "change_ci_high_pct",
];

/// One row per case and run; a change point's size on the run that
/// starts it.
pub fn csv(cases: &[CaseHistory]) -> anyhow::Result<String> {
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::CRLF)
        .from_writer(Vec::new());
    w.write_record(COLUMNS)?;
    let opt = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
    for h in cases {
        for (i, p) in h.points.iter().enumerate() {
            let c = h.changes.iter().find(|c| c.index == i);
            let cells = [
                h.label.clone(),
                h.key.server.clone(),
                h.key.mode.clone(),
                h.key.response.clone(),
                h.key.scenario.clone(),
                h.key.cores.to_string(),
                h.key.load.clone(),
                h.key.protocol.clone(),
                h.metric.into(),
                p.run.to_string(),
                p.started_at.clone(),
                p.revision.clone().unwrap_or_default(),
                p.source.clone().unwrap_or_default(),
                p.median.to_string(),
                p.low.to_string(),
                p.high.to_string(),
                opt(p.noise_floor_pct),
                opt(p.ratio),
                c.map(|c| c.direction).unwrap_or_default().into(),
                opt(c.and_then(|c| c.change_pct)),
                opt(c.and_then(|c| c.ci_low_pct)),
                opt(c.and_then(|c| c.ci_high_pct)),
            ];
            // The csv crate quotes; the cells follow the one visible rule.
            w.write_record(cells.iter().map(|c| fairbench_sys::text::visible(c)))?;
        }
    }
    let bytes = w.into_inner().map_err(|e| anyhow::anyhow!("csv: {e}"))?;
    Ok(String::from_utf8(bytes)?)
}
