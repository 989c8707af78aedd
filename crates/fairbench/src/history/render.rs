//! `history` as text (one case's table, or one line per case), CSV and
//! JSON.

use std::fmt::Write;

use serde::Serialize;

use super::analysis::{false_alarm_pct, CaseHistory, Change, METHOD};
use super::series::Point;
use crate::output::check_table::Table;
use crate::report::json_doc::{render, Doc};

/// What the document says beside its cases: where they were read and how
/// their points were ordered.
pub struct Meta<'a> {
    pub db: &'a str,
    pub min_change_pct: f64,
    /// `date`, `revision`, `version` or, for `--within`, `window`.
    pub order: &'static str,
    pub within: Option<Within>,
    /// The lines printed on standard error (points that could not be
    /// placed), kept with the document.
    pub warnings: &'a [String],
}

/// `--within`'s run and window.
#[derive(Serialize, Clone, Copy)]
pub struct Within {
    pub run: i64,
    pub window_s: f64,
}

/// What the JSON document holds beside its cases.
#[derive(Serialize)]
struct Body<'a> {
    db: &'a str,
    method: &'static str,
    false_alarm_pct: f64,
    min_change_pct: f64,
    order: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    within: Option<Within>,
    warnings: &'a [String],
    cases: &'a [CaseHistory],
}

pub fn json(meta: &Meta, cases: &[CaseHistory]) -> anyhow::Result<String> {
    let mut s = render(
        Doc::History,
        &Body {
            db: meta.db,
            method: if meta.within.is_some() {
                super::within::METHOD
            } else {
                METHOD
            },
            false_alarm_pct: false_alarm_pct(),
            min_change_pct: meta.min_change_pct,
            order: meta.order,
            within: meta.within,
            warnings: meta.warnings,
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

/// A change point's size, or why the point is not the server's work.
fn marker(h: &CaseHistory, i: usize) -> String {
    if let Some(off) = &h.points[i].off {
        return format!("✗ {off}: not searched");
    }
    h.changes
        .iter()
        .find(|c| c.index == i)
        .map(|c| format!("◆ {}", size(c)))
        .unwrap_or_default()
}

/// The interval of a point's median, or — without one.
fn interval(p: &Point) -> String {
    if p.confidence > 0.0 {
        format!("{}–{}", num(p.low), num(p.high))
    } else {
        "—".into()
    }
}

/// One case's series: a row per run (or per window), the change points
/// marked.
pub fn case_table(h: &CaseHistory) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{} — {}", h.label, h.unit);
    let windows = h.points.iter().any(|p| p.window.is_some());
    if windows {
        let mut t = Table::new(&["window", "seconds", "median", "interval", "change"])
            .right_align(&[0, 1, 2]);
        for (i, p) in h.points.iter().enumerate() {
            t.row(vec![
                p.tag(),
                p.window.map_or(0, |w| w.seconds).to_string(),
                num(p.median),
                interval(p),
                marker(h, i),
            ]);
        }
        out.push_str(&t.render());
    } else {
        out.push_str(&runs_table(h));
    }
    let _ = writeln!(
        out,
        "{} change point(s) beyond ±{:.1} % ({} % false alarms on noise-only Gaussian series; docs/history.md)",
        h.changes.len(),
        h.floor_pct,
        false_alarm_pct()
    );
    out
}

fn runs_table(h: &CaseHistory) -> String {
    // What `--order revision|version` placed each point by, when it did.
    let placed = h.points.iter().any(|p| p.order_key.is_some());
    let mut head = vec![
        "run",
        "date",
        "revision",
        "source",
        "median",
        "interval",
        "A/A floor",
        "ratio",
        "change",
    ];
    if placed {
        head.insert(4, "placed by");
    }
    let right: &[usize] = if placed { &[0, 5, 7, 8] } else { &[0, 4, 6, 7] };
    let mut t = Table::new(&head).right_align(right);
    for (i, p) in h.points.iter().enumerate() {
        let mut row = vec![
            p.run.to_string(),
            p.started_at.chars().take(10).collect(),
            revision(&p.revision).chars().take(12).collect(),
            revision(&p.source).to_string(),
            num(p.median),
            interval(p),
            p.noise_floor_pct
                .map_or_else(|| "—".into(), |f| format!("±{f:.1} %")),
            p.ratio.map_or_else(|| "—".into(), |r| format!("{r:.3}")),
            marker(h, i),
        ];
        if placed {
            row.insert(4, revision(&p.order_key).chars().take(24).collect());
        }
        t.row(row);
    }
    t.render()
}

/// One line per case with its latest change point, like asv's summary.
pub fn summary(cases: &[CaseHistory]) -> String {
    let windows = cases
        .iter()
        .any(|h| h.points.iter().any(|p| p.window.is_some()));
    let count = if windows { "windows" } else { "runs" };
    let mut t = Table::new(&["case", "metric", count, "latest change"]).right_align(&[2]);
    for h in cases {
        let latest = match h.latest_change() {
            Some(c) if windows => format!("{} at {}", size(c), h.points[c.index].tag()),
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

const COLUMNS: [&str; 26] = [
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
    "order",
    "order_key",
    "window_start_s",
    "window_end_s",
];

/// One row per case and run; a change point's size on the run that
/// starts it.
/// `order` is the document's (`Meta::order`).
pub fn csv(cases: &[CaseHistory], order: &str) -> anyhow::Result<String> {
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
                order.to_string(),
                p.order_key.clone().unwrap_or_default(),
                opt(p.window.map(|w| w.start_s)),
                opt(p.window.map(|w| w.end_s)),
            ];
            // The csv crate quotes; the cells follow the one visible rule.
            w.write_record(cells.iter().map(|c| fairbench_sys::text::visible(c)))?;
        }
    }
    let bytes = w.into_inner().map_err(|e| anyhow::anyhow!("csv: {e}"))?;
    Ok(String::from_utf8(bytes)?)
}
