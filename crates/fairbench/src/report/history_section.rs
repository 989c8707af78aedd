//! The History section (docs/report.md): a [`RunHistory`] as the report's
//! sections are made, so the HTML and the Markdown render it as they render
//! every other one (the Markdown without the charts).

use super::figures::{Figure, Section};
use super::run_history::{HistoryCase, HistoryChange, RunHistory, MIN_RUNS};
use super::table::{Cell, Table};

/// The section; a sentence alone when no case has [`MIN_RUNS`] runs.
pub fn section(h: &RunHistory) -> Section {
    let mut figures = Vec::new();
    if h.cases.iter().any(|c| !c.changes.is_empty()) {
        figures.push(changes_figure(h));
    }
    figures.extend(
        h.cases
            .iter()
            .enumerate()
            .map(|(i, c)| case_figure(h, i, c)),
    );
    Section {
        id: "history",
        title: "History",
        intro: intro(h),
        figures,
    }
}

fn intro(h: &RunHistory) -> String {
    let earlier = match h.earlier_runs {
        1 => "1 earlier run".to_string(),
        n => format!("{n} earlier runs"),
    };
    if h.cases.is_empty() {
        return format!(
            "{earlier} of this database measured cases of this run, but none has a history yet: a case needs {MIN_RUNS} runs up to this one (`{}` follows every case across all stored runs).",
            h.more_command
        );
    }
    let mut s = format!(
        "This run's cases across the {earlier} of this database that measured them; runs made after run {} are left out, so the report of a run reads the same whatever came later. \
         One point per run: the median of its repetitions, with its interval; the last point, ringed, is this run. \
         A change point is where the level moved by more than the noise floor (at least {} %, or the runs' A/A noise floor if wider), found by binary segmentation of the per-run medians (docs/history.md).",
        h.run,
        h.min_change_pct
    );
    if !h.cases.iter().any(|c| !c.changes.is_empty()) {
        s.push_str(" No case changed beyond its noise floor.");
    }
    if h.more > 0 {
        let cases = if h.more == 1 {
            "case has"
        } else {
            "cases have"
        };
        s.push_str(&format!(
            " The {} cases with the largest changes are shown; {} more {cases} a history: `{}`.",
            h.cases.len(),
            h.more,
            h.more_command
        ));
    }
    s
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "—".into(), |p| format!("{p:+.1} %"))
}

/// `[+9.1 %, +10.9 %]`, or why there is none.
fn interval(c: &HistoryChange) -> String {
    match (c.ci_low_pct, c.ci_high_pct) {
        (Some(l), Some(h)) => format!("[{}, {}]", pct(Some(l)), pct(Some(h))),
        _ => "none: fewer than 2 repetitions on a side".into(),
    }
}

/// `+10.0 % [+9.1 %, +10.9 %]`.
fn size(c: &HistoryChange) -> String {
    format!("{} {}", pct(c.change_pct), interval(c))
}

/// `run 2 · abc1234`.
fn run_at(run: i64, revision: &Option<String>) -> String {
    format!("run {run} · {}", revision.as_deref().unwrap_or("—"))
}

fn changes_figure(h: &RunHistory) -> Figure {
    let mut t = Table::new(
        "history-changes",
        &[
            ("case", false),
            ("metric", false),
            ("before", false),
            ("after", false),
            ("change", true),
            ("95 % interval", false),
            ("", false),
            ("noise floor", true),
        ],
    );
    for c in &h.cases {
        for ch in &c.changes {
            t.push(vec![
                Cell::text(&c.label),
                Cell::text(&c.unit),
                Cell::text(run_at(ch.run_before, &ch.revision_before)),
                Cell::text(run_at(ch.run_after, &ch.revision_after)),
                Cell {
                    text: pct(ch.change_pct),
                    ..Cell::opt(ch.change_pct, 1)
                },
                Cell::text(interval(ch)),
                Cell::text(&ch.direction),
                Cell {
                    text: format!("±{:.1} %", c.floor_pct),
                    ..Cell::num(c.floor_pct, 1)
                },
            ]);
        }
    }
    Figure {
        id: "history-changes".into(),
        title: "Change points".into(),
        caption: "Every change point of the cases below: the last run before it and the first after it (with their revisions), and the change of the median of the repetitions across it, with compare's bootstrap interval. Only changes beyond the case's noise floor are listed.".into(),
        svg: None,
        table: t,
    }
}

/// Decimals for a figure of this size.
fn decimals(v: f64) -> usize {
    match v.abs() {
        a if a >= 100.0 => 0,
        a if a >= 1.0 => 2,
        _ => 4,
    }
}

fn case_figure(h: &RunHistory, i: usize, c: &HistoryCase) -> Figure {
    let id = format!("history-{}", i + 1);
    let mut t = Table::new(
        &id,
        &[
            ("run", true),
            ("started", false),
            ("revision", false),
            ("median", true),
            ("interval", false),
            ("change point", false),
            ("", false),
        ],
    );
    for (k, p) in c.points.iter().enumerate() {
        let change = c
            .changes
            .iter()
            .find(|ch| ch.run_after == p.run && k > 0)
            .map(|ch| format!("{} {}", size(ch), ch.direction))
            .unwrap_or_default();
        let d = decimals(p.median);
        t.push(vec![
            Cell::num(p.run as f64, 0),
            Cell::text(&p.started_at),
            Cell::text(p.revision.as_deref().unwrap_or("—")),
            Cell::num(p.median, d),
            Cell::text(format!(
                "{}–{}",
                super::table::fixed(p.low, d),
                super::table::fixed(p.high, d)
            )),
            Cell::text(change),
            Cell::text(if p.this_run { "this run" } else { "" }),
        ]);
    }
    let first = c.points.first().map_or(h.run, |p| p.run);
    Figure {
        id,
        title: format!("{} — {}", c.label, c.unit),
        caption: format!(
            "{} runs, run {first} to run {} (this run, the last point); {} change point(s) beyond ±{:.1} %.",
            c.points.len(),
            h.run,
            c.changes.len(),
            c.floor_pct
        ),
        svg: Some(c.svg.clone()),
        table: t,
    }
}
