//! `show` of a run of URLs (`load --save`, a saved `--vs` pair, a suite of
//! `[[service]]`s): the URL, method, load and connections of each, where a
//! zoo run shows variant, scenario and cores — columns that mean nothing
//! for a server fairbench did not start — and, for a pair, B's paired
//! ratio to A; a staged load stage by stage.

use std::fmt::Write;

use super::case_rows::{self, groups};
use crate::report::case_key::CaseKey;
use crate::report::paired::{Paired, RatioRow, Role};
use crate::report::url_case::{UrlLoad, NOT_STARTED};
use crate::store::{CaseRow, RunRow};
use crate::units;

/// Where the per-thread column goes: after req/s.
const PER_THREAD_AT: usize = 7;

pub fn render(run: &RunRow, cases: &[CaseRow], paired: Option<&Paired>) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "run {} ({}), {}, {}: {} done, {} failed, {} skipped of {} planned",
        run.id,
        run.started_at,
        if run.suite == crate::report::url_case::ADHOC_SUITE {
            "a load of URLs".to_string()
        } else {
            format!("suite {} (services at URLs)", units::one_line(&run.suite))
        },
        run.state,
        run.cases_done,
        run.cases_failed,
        run.cases_skipped,
        run.planned_cases
    );
    // The ratio column only where the run has its reference (a pair, a
    // suite naming one of its services).
    let paired = paired.filter(|p| p.rows.iter().any(|r| r.role == Role::Reference));
    let mut header: Vec<String> = [
        "name", "URL", "method", "load", "conns", "reps", "req/s", "p50", "p99", "errors",
    ]
    .iter()
    .map(|h| h.to_string())
    .collect();
    let per_thread = case_rows::shows_per_thread(cases);
    if per_thread {
        header.insert(PER_THREAD_AT, case_rows::PER_THREAD_HEADER.into());
    }
    let wrk_latency = case_rows::shows_wrk_latency(cases);
    if wrk_latency {
        header.push(case_rows::WRK_LATENCY_HEADER.into());
    }
    if let Some(p) = paired {
        header.push(format!("relative to {}", p.reference));
    }
    let mut rows: Vec<Vec<String>> = vec![header.clone()];
    let mut stages = Vec::new();
    let mut notes = Vec::new();
    for g in groups(cases) {
        let done: Vec<&&CaseRow> = g.iter().filter(|c| c.state == "done").collect();
        let med = |f: &dyn Fn(&CaseRow) -> Option<f64>| {
            let v: Vec<f64> = done.iter().filter_map(|c| f(c)).collect();
            (!v.is_empty()).then(|| crate::report::stats::median(&v))
        };
        let c0 = g[0];
        let u = UrlLoad::of(c0).unwrap_or_default();
        let dash = || "-".to_string();
        let errors: i64 = done.iter().filter_map(|c| c.errors_total()).sum();
        let mut row = vec![
            c0.server.clone(),
            u.url.clone(),
            u.method.clone(),
            u.load.clone(),
            u.connections.map(|c| c.to_string()).unwrap_or_else(dash),
            format!("{}/{}", done.len(), g.len()),
            med(&|c| c.rps).map(units::rate).unwrap_or_else(dash),
            med(&|c| c.lat_p50.map(|v| v as f64))
                .map(units::micros)
                .unwrap_or_else(dash),
            med(&|c| c.lat_p99.map(|v| v as f64))
                .map(units::micros)
                .unwrap_or_else(dash),
            if done.is_empty() {
                dash()
            } else {
                units::count(errors as u64)
            },
        ];
        if per_thread {
            let cell = case_rows::per_thread_cell(
                med(&|c| c.thread_rps_mean),
                med(&|c| c.thread_rps_stdev),
                med(&|c| c.thread_rps_max),
            );
            row.insert(PER_THREAD_AT, cell);
        }
        if wrk_latency {
            row.push(case_rows::wrk_latency_cell(&done));
        }
        if let Some(p) = paired {
            row.push(ratio_cell(p.row(&CaseKey::of(c0))));
        }
        rows.push(
            row.iter()
                .map(|c| fairbench_sys::text::visible(c))
                .collect(),
        );
        if !u.stages.is_empty() && g.len() == 1 {
            stages.push((c0.server.clone(), u.stages.clone()));
        }
        for n in crate::report::model::case_notes(&g) {
            notes.push(format!("  ⚠ {}: {}", c0.server, units::one_line(&n)));
        }
        for c in g.iter().filter(|c| c.state != "done") {
            notes.push(format!(
                "  {} #{}: {} {}",
                units::one_line(&c.server),
                c.repetition,
                c.state,
                units::one_line(c.reason.as_deref().unwrap_or(""))
            ));
        }
    }
    table(&mut s, &rows, 5);
    for (name, list) in stages {
        let _ = writeln!(
            s,
            "\nstages of {} (by planned time):",
            units::one_line(&name)
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
        for st in &list {
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
        table(&mut s, &t, 1);
    }
    if !notes.is_empty() {
        let _ = writeln!(s, "\n⚠ problems and notes:");
        for n in notes {
            let _ = writeln!(s, "{n}");
        }
    }
    let _ = writeln!(
        s,
        "\nreq/s, p50 and p99 are medians over repetitions; {NOT_STARTED}"
    );
    if per_thread {
        let _ = writeln!(s, "{}", case_rows::PER_THREAD_NOTE);
    }
    if wrk_latency {
        let _ = writeln!(s, "{}", case_rows::WRK_LATENCY_NOTE);
    }
    if cases.iter().any(case_rows::counted_wrks_way) {
        let _ = writeln!(s, "{}", case_rows::WRK_TIMEOUTS_NOTE);
    }
    if let Some(p) = paired {
        let _ = writeln!(
            s,
            "relative to {}: req/s (p99 for constant-rate loads) divided by {}'s in the same repetition; geometric mean [{} % interval]",
            p.reference,
            p.reference,
            (p.level * 100.0).round()
        );
        for n in &p.notes {
            let _ = writeln!(s, "note: {}", units::one_line(n));
        }
    }
    s
}

/// Text columns (the first `text` of them) left, numbers right.
fn table(s: &mut String, rows: &[Vec<String>], text: usize) {
    let n = rows[0].len();
    let widths: Vec<usize> = (0..n)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    for (k, r) in rows.iter().enumerate() {
        let mut line = String::new();
        for (i, cell) in r.iter().enumerate() {
            let pad = " ".repeat(widths[i] - cell.chars().count());
            if i < text {
                let _ = write!(line, "{cell}{pad}  ");
            } else {
                let _ = write!(line, "{pad}{cell}  ");
            }
        }
        let _ = writeln!(s, "{}", line.trim_end());
        if k == 0 {
            let _ = writeln!(
                s,
                "{}",
                "-".repeat(widths.iter().sum::<usize>() + 2 * (n - 1))
            );
        }
    }
}

/// The primary ratio of a row: req/s for closed loop, p99 for constant rate.
fn ratio_cell(row: Option<&RatioRow>) -> String {
    match row {
        None => "-".into(),
        Some(r) if r.role == Role::Reference => "reference".into(),
        Some(r) => match r.primary() {
            ("req/s", Some(q)) => format!("req/s {}", q.summary.text()),
            (name, Some(q)) => format!("{name} {}", q.summary.text()),
            (_, None) => "-".into(),
        },
    }
}
