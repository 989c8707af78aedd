//! `show` of a run of URLs (`load --save`, a saved `--vs` pair, a suite of
//! `[[service]]`s): the URL, method, load and connections of each, where a
//! zoo run shows variant, scenario and cores — columns that mean nothing
//! for a server fairbench did not start — and, for a pair, B's paired
//! ratio to A; a staged load stage by stage.

use std::fmt::Write;

use super::case_rows::groups;
use super::median_table::{
    visible, write_paired_notes, write_run_line, write_table, Extras, Folded, ReqSRatio,
};
use crate::report::paired::{Paired, Role};
use crate::report::url_case::{StageRow, UrlLoad, NOT_STARTED};
use crate::store::{CaseRow, RunRow};
use crate::units;

pub fn render(run: &RunRow, cases: &[CaseRow], paired: Option<&Paired>) -> String {
    let mut s = String::new();
    let what = if run.suite == crate::report::url_case::ADHOC_SUITE {
        "a load of URLs".to_string()
    } else {
        format!("suite {} (services at URLs)", units::one_line(&run.suite))
    };
    write_run_line(&mut s, run, &what);
    // The ratio column only where the run has its reference (a pair, a
    // suite naming one of its services).
    let paired = paired.filter(|p| p.rows.iter().any(|r| r.role == Role::Reference));
    let extras = Extras::of(cases, paired, ReqSRatio::Named);
    let mut header: Vec<String> = [
        "name", "URL", "method", "load", "conns", "reps", "req/s", "p50", "p99", "errors",
    ]
    .iter()
    .map(|h| h.to_string())
    .collect();
    extras.add_headers(&mut header);
    let mut rows: Vec<Vec<String>> = vec![header];
    let mut stages = Vec::new();
    let mut notes = Vec::new();
    for g in groups(cases) {
        let g = Folded::of(&g);
        let c0 = g.first();
        let u = UrlLoad::of(c0).unwrap_or_default();
        rows.push(visible(&row(&g, &u, &extras)));
        if !u.stages.is_empty() && g.all.len() == 1 {
            stages.push((c0.server.clone(), u.stages));
        }
        notes.extend(case_notes(&g));
    }
    write_table(&mut s, &rows, 5, &[]);
    for (name, list) in stages {
        write_stages(&mut s, &name, &list);
    }
    if !notes.is_empty() {
        let _ = writeln!(s, "\n⚠ problems and notes:");
        for n in notes {
            let _ = writeln!(s, "{n}");
        }
    }
    write_footnotes(&mut s, cases, &extras);
    s
}

/// A case's row: its URL, method and load, then its medians over the done
/// repetitions.
fn row(g: &Folded<'_>, u: &UrlLoad, extras: &Extras<'_>) -> Vec<String> {
    let c0 = g.first();
    let mut row = vec![
        // What it was spoken to over, as a zoo case's name says it: the
        // same URL over h2 and over h3 are two rows that must not look alike.
        format!(
            "{}{}",
            c0.server,
            crate::report::case_key::protocol_label(&c0.protocol)
        ),
        u.url.clone(),
        u.method.clone(),
        u.load.clone(),
        u.connections
            .map(|c| c.to_string())
            .unwrap_or_else(|| "-".to_string()),
    ];
    row.extend(g.measured_cells());
    extras.add_cells(&mut row, g);
    row
}

/// A case's problems and notes, then a line per repetition not done.
fn case_notes(g: &Folded<'_>) -> Vec<String> {
    let c0 = g.first();
    let mut notes: Vec<String> = crate::report::model::case_notes(g.all)
        .into_iter()
        .map(|n| format!("  ⚠ {}: {}", c0.server, units::one_line(&n)))
        .collect();
    for c in g.all.iter().filter(|c| c.state != "done") {
        notes.push(format!(
            "  {} #{}: {} {}",
            units::one_line(&c.server),
            c.repetition,
            c.state,
            units::one_line(c.reason.as_deref().unwrap_or(""))
        ));
    }
    notes
}

/// The stages of a staged load, planned against achieved.
fn write_stages(s: &mut String, name: &str, list: &[StageRow]) {
    let _ = writeln!(
        s,
        "\nstages of {} (by planned time):",
        units::one_line(name)
    );
    let mut t = vec![[
        "stage",
        "from s",
        "planned req/s",
        "achieved req/s",
        "planned",
        "answered",
        "errors",
        "p50",
        "p99",
    ]
    .iter()
    .map(|h| h.to_string())
    .collect::<Vec<_>>()];
    for st in list {
        t.push(vec![
            fairbench_sys::text::visible(&st.name),
            format!("{:.0}", st.start_s),
            units::rate(st.planned_rps()),
            units::rate(st.achieved_rps()),
            units::count(st.planned),
            units::count(st.requests),
            units::count(st.errors),
            units::micros(st.p50_us as f64),
            units::micros(st.p99_us as f64),
        ]);
    }
    write_table(s, &t, 1, &[]);
}

/// What the figures are, wrk's columns where shown, and how the ratios
/// were paired.
fn write_footnotes(s: &mut String, cases: &[CaseRow], extras: &Extras<'_>) {
    let _ = writeln!(
        s,
        "\nreq/s, p50 and p99 are medians over repetitions, errors the sum of them all; {NOT_STARTED}"
    );
    extras.write_wrk_notes(s, cases);
    if let Some(p) = extras.paired {
        let _ = writeln!(
            s,
            "relative to {}: req/s (p99 for constant-rate loads) divided by {}'s in the same repetition; geometric mean [{} % interval]",
            p.reference,
            p.reference,
            (p.level * 100.0).round()
        );
        write_paired_notes(s, p);
    }
}
