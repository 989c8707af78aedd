//! The summary table of a stored run (`fairbench show`, and the end of
//! `fairbench run`): repetitions of a case folded into their median.

use std::fmt::Write;

use crate::report::case_key::{protocol_label, CaseKey};
use crate::report::paired::{Paired, RatioRow, Role};
use crate::store::{CaseRow, RunRow};
use crate::units;

use super::case_rows::{
    counted_wrks_way, groups, per_thread_cell, shows_per_thread, shows_wrk_latency,
    wrk_latency_cell, PER_THREAD_HEADER, PER_THREAD_NOTE, WRK_LATENCY_HEADER, WRK_LATENCY_NOTE,
    WRK_TIMEOUTS_NOTE,
};

/// The database's columns and where each goes, in order of insertion:
/// its CPU per request after the server's, its memory after the server's
/// RSS, then the pool.
const DB_COLUMNS: [(usize, &str); 3] = [(11, "DB CPU/req"), (13, "DB mem"), (14, "pool")];

/// What the database's columns mean, under a table that has them.
pub const DB_NOTE: &str = "DB CPU/req: the database's (PostgreSQL's control group's) CPU-µs per request, median over repetitions, beside the server's: add them for the whole stack's work; DB mem: the peak memory of its control group (its processes, shared buffers and the page cache charged to it; not an RSS), median; pool: the connections the server was told to keep (DB_POOL); - where a case had no database";

/// Where the per-thread column goes: after the total req/s.
const PER_THREAD_AT: usize = 7;

/// With `paired`, a last column of ratios to the reference. A run of URLs
/// has its own table (super::url_table).
pub fn render(run: &RunRow, cases: &[CaseRow], paired: Option<&Paired>) -> String {
    if crate::report::url_case::is_url_run(cases) {
        return super::url_table::render(run, cases, paired);
    }
    let mut s = String::new();
    let _ = writeln!(
        s,
        "run {} ({}), suite {}, {}: {} done, {} failed, {} skipped of {} planned",
        run.id,
        run.started_at,
        units::one_line(&run.suite),
        run.state,
        run.cases_done,
        run.cases_failed,
        run.cases_skipped,
        run.planned_cases
    );
    let mut header: Vec<String> = [
        "server", "variant", "scenario", "cores", "load", "reps", "req/s", "p50", "p99", "errors",
        "CPU/req", "RSS", "bytes", "fair",
    ]
    .iter()
    .map(|h| h.to_string())
    .collect();
    // Runs with the database scenarios: its CPU per request beside the
    // server's, its memory beside the server's RSS, and the pool the server
    // kept (other runs' tables unchanged).
    let with_db = cases.iter().any(|c| c.db_pool.is_some());
    if with_db {
        for (at, name) in DB_COLUMNS {
            header.insert(at, name.into());
        }
    }
    let per_thread = shows_per_thread(cases);
    if per_thread {
        header.insert(PER_THREAD_AT, PER_THREAD_HEADER.into());
    }
    let wrk_latency = shows_wrk_latency(cases);
    if wrk_latency {
        header.push(WRK_LATENCY_HEADER.into());
    }
    if let Some(p) = paired {
        header.push(format!("relative to {}", p.reference));
    }
    let mut rows: Vec<Vec<String>> = vec![header.clone()];
    let mut notes = Vec::new();
    // Per row, the number of its entry under the table, if it has notes.
    let mut marks: Vec<Option<usize>> = vec![None];
    let mut flagged: Vec<(String, Vec<String>)> = Vec::new();
    for g in groups(cases) {
        let done: Vec<&&CaseRow> = g.iter().filter(|c| c.state == "done").collect();
        let med = |f: &dyn Fn(&CaseRow) -> Option<f64>| {
            let v: Vec<f64> = done.iter().filter_map(|c| f(c)).collect();
            (!v.is_empty()).then(|| crate::report::stats::median(&v))
        };
        let c0 = g[0];
        let errors: i64 = done.iter().filter_map(|c| c.errors_total()).sum();
        let dash = || "-".to_string();
        let mut row = vec![
            c0.server.clone(),
            format!(
                "{}/{}{}",
                c0.mode,
                c0.response,
                protocol_label(&c0.protocol)
            ),
            c0.scenario.clone(),
            c0.cores.to_string(),
            c0.load_label.clone(),
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
            med(&|c| c.server_cpu_us_per_request)
                .map(|v| format!("{v:.1} µs"))
                .unwrap_or_else(dash),
            med(&|c| c.server_rss_peak.map(|v| v as f64))
                .map(|v| units::bytes(v as u64))
                .unwrap_or_else(dash),
            match (c0.header_bytes, c0.body_bytes) {
                (Some(h), Some(b)) => format!("{}+{}", h, b),
                _ => dash(),
            },
            match c0.fair {
                Some(true) => "yes".into(),
                Some(false) => "NO".into(),
                None => dash(),
            },
        ];
        if with_db {
            // A case without a database shows dashes: absent, not zero.
            let cells = [
                med(&|c| c.db_cpu_us_per_request)
                    .map(|v| format!("{v:.1} µs"))
                    .unwrap_or_else(dash),
                med(&|c| c.db_memory_peak.map(|v| v as f64))
                    .map(|v| units::bytes(v as u64))
                    .unwrap_or_else(dash),
                c0.db_pool.map(|p| p.to_string()).unwrap_or_else(dash),
            ];
            for ((at, _), cell) in DB_COLUMNS.into_iter().zip(cells) {
                row.insert(at, cell);
            }
        }
        if per_thread {
            let cell = per_thread_cell(
                med(&|c| c.thread_rps_mean),
                med(&|c| c.thread_rps_stdev),
                med(&|c| c.thread_rps_max),
            );
            row.insert(PER_THREAD_AT, cell);
        }
        if wrk_latency {
            row.push(wrk_latency_cell(&done));
        }
        if let Some(p) = paired {
            row.push(relative_cell(p.row(&CaseKey::of(c0))));
        }
        // Escaped before the columns are measured.
        rows.push(
            row.iter()
                .map(|c| fairbench_sys::text::visible(c))
                .collect(),
        );
        let case_notes = crate::report::model::case_notes(&g);
        if case_notes.is_empty() {
            marks.push(None);
        } else {
            flagged.push((
                format!(
                    "{} {}/{}{} {} {}c {}",
                    c0.server,
                    c0.mode,
                    c0.response,
                    protocol_label(&c0.protocol),
                    c0.scenario,
                    c0.cores,
                    c0.load_label
                ),
                case_notes,
            ));
            marks.push(Some(flagged.len()));
        }
        for c in g
            .iter()
            .filter(|c| c.state == "failed" || c.state == "skipped")
        {
            notes.push(format!(
                "  {} {}/{}{} {} {}c #{}: {} {}",
                units::one_line(&c.server),
                units::one_line(&c.mode),
                c.response,
                protocol_label(&c.protocol),
                units::one_line(&c.scenario),
                c.cores,
                c.repetition,
                c.state,
                crate::units::one_line(c.reason.as_deref().unwrap_or(""))
            ));
        }
    }
    let widths: Vec<usize> = (0..header.len())
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    for (n, r) in rows.iter().enumerate() {
        let mut line = String::new();
        for (i, cell) in r.iter().enumerate() {
            let pad = widths[i] - cell.chars().count();
            // Text left, numbers right.
            if i < 5 {
                let _ = write!(line, "{cell}{}  ", " ".repeat(pad));
            } else {
                let _ = write!(line, "{}{cell}  ", " ".repeat(pad));
            }
        }
        // The mark goes after the row, so rows without one are unchanged.
        if let Some(m) = marks[n] {
            let _ = write!(line, "⚠ {m}");
        }
        let _ = writeln!(s, "{}", line.trim_end());
        if n == 0 {
            let _ = writeln!(
                s,
                "{}",
                "-".repeat(widths.iter().sum::<usize>() + 2 * (widths.len() - 1))
            );
        }
    }
    if !flagged.is_empty() {
        let _ = writeln!(
            s,
            "\n⚠ problems and notes (as in the report), for the rows marked:"
        );
        for (m, (label, list)) in flagged.iter().enumerate() {
            for n in list {
                let _ = writeln!(
                    s,
                    "  ⚠ {} {}: {}",
                    m + 1,
                    units::one_line(label),
                    units::one_line(n)
                );
            }
        }
    }
    if !notes.is_empty() {
        let _ = writeln!(s, "\nnot measured:");
        for n in notes {
            let _ = writeln!(s, "{n}");
        }
    }
    let _ = writeln!(
        s,
        "\nreq/s, p50, p99, CPU/req (server CPU-µs per request) and RSS (server peak) are medians over repetitions; bytes = header+body of one response"
    );
    if with_db {
        let _ = writeln!(s, "{}", DB_NOTE);
    }
    if per_thread {
        let _ = writeln!(s, "{PER_THREAD_NOTE}");
    }
    if wrk_latency {
        let _ = writeln!(s, "{WRK_LATENCY_NOTE}");
    }
    if cases.iter().any(counted_wrks_way) {
        let _ = writeln!(s, "{WRK_TIMEOUTS_NOTE}");
    }
    if let Some(p) = paired {
        let _ = writeln!(
            s,
            "relative to {}: req/s (p99 for constant-rate loads) divided by the reference's in the same repetition, scenario, cores and load; geometric mean [{} % interval]",
            p.reference,
            (p.level * 100.0).round()
        );
        for n in &p.notes {
            let _ = writeln!(s, "note: {}", units::one_line(n));
        }
        if let Some(aa) = &p.aa {
            let _ = writeln!(s, "\n{}", units::one_line(&aa.headline));
        }
    }
    s
}

/// The primary ratio of a row: req/s for closed loop, p99 for constant rate.
fn relative_cell(row: Option<&RatioRow>) -> String {
    match row {
        None => "-".into(),
        Some(r) if r.role == Role::Reference => "reference".into(),
        Some(r) => match r.primary() {
            ("req/s", Some(q)) => q.summary.text(),
            (name, Some(q)) => format!("{name} {}", q.summary.text()),
            (_, None) => "-".into(),
        },
    }
}
