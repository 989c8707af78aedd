//! The summary table of a stored run (`fairbench show`, and the end of
//! `fairbench run`): repetitions of a case folded into their median.

use std::fmt::Write;

use crate::report::case_key::protocol_label;
use crate::report::paired::Paired;
use crate::store::{CaseRow, RunRow};
use crate::units;

use super::case_rows::groups;
use super::median_table::{
    visible, write_paired_notes, write_run_line, write_table, Extras, Folded, ReqSRatio,
};

/// The database's columns and where each goes, in order of insertion:
/// its CPU per request after the server's, its memory after the server's
/// RSS, then the pool.
const DB_COLUMNS: [(usize, &str); 3] = [(11, "DB CPU/req"), (13, "DB mem"), (14, "pool")];

/// What the database's columns mean, under a table that has them.
pub const DB_NOTE: &str = "DB CPU/req: the database's (PostgreSQL's control group's) CPU-µs per request, median over repetitions, beside the server's: add them for the whole stack's work; DB mem: the peak memory of its control group (its processes, shared buffers and the page cache charged to it; not an RSS), median; pool: the connections the server was told to keep (DB_POOL); - where a case had no database";

/// The table's columns: the fixed ones, the database's where a case had
/// one, and the [`Extras`].
struct Columns<'p> {
    /// Runs with the database scenarios: its CPU per request beside the
    /// server's, its memory beside the server's RSS, and the pool the
    /// server kept (other runs' tables unchanged).
    with_db: bool,
    extras: Extras<'p>,
}

/// The rows of the table and what goes under it, case by case.
#[derive(Default)]
struct Rows {
    rows: Vec<Vec<String>>,
    /// Per row, the number of its entry under the table, if it has notes.
    marks: Vec<Option<usize>>,
    /// A case's label and its problems and notes, per marked row.
    flagged: Vec<(String, Vec<String>)>,
    /// One line per repetition that failed or was skipped.
    not_measured: Vec<String>,
}

/// With `paired`, a last column of ratios to the reference. A run of URLs
/// has its own table (super::url_table).
pub fn render(run: &RunRow, cases: &[CaseRow], paired: Option<&Paired>) -> String {
    if crate::report::url_case::is_url_run(cases) {
        return super::url_table::render(run, cases, paired);
    }
    let mut s = String::new();
    write_run_line(
        &mut s,
        run,
        &format!("suite {}", units::one_line(&run.suite)),
    );
    let columns = Columns {
        with_db: cases.iter().any(|c| c.db_pool.is_some()),
        extras: Extras::of(cases, paired, ReqSRatio::Bare),
    };
    let mut t = Rows {
        rows: vec![columns.header()],
        marks: vec![None],
        ..Rows::default()
    };
    for g in groups(cases) {
        t.add_case(&columns, &Folded::of(&g));
    }
    write_table(&mut s, &t.rows, 5, &t.marks);
    t.write_flagged(&mut s);
    t.write_not_measured(&mut s);
    columns.write_footnotes(&mut s, cases);
    s
}

impl Columns<'_> {
    fn header(&self) -> Vec<String> {
        let mut header: Vec<String> = [
            "server", "variant", "scenario", "cores", "load", "reps", "req/s", "p50", "p99",
            "errors", "CPU/req", "RSS", "bytes", "fair",
        ]
        .iter()
        .map(|h| h.to_string())
        .collect();
        if self.with_db {
            for (at, name) in DB_COLUMNS {
                header.insert(at, name.into());
            }
        }
        self.extras.add_headers(&mut header);
        header
    }

    /// A case's row: what it is, then its medians over the done
    /// repetitions.
    fn row(&self, g: &Folded<'_>) -> Vec<String> {
        let c0 = g.first();
        let dash = || "-".to_string();
        let mut row = vec![
            // A ladder's rung first, as in the plan's labels.
            match &c0.step {
                Some(step) => format!("[{step}] {}", c0.server),
                None => c0.server.clone(),
            },
            format!(
                "{}/{}{}",
                c0.mode,
                c0.response,
                protocol_label(&c0.protocol)
            ),
            c0.scenario.clone(),
            c0.cores.to_string(),
            c0.load_label.clone(),
        ];
        row.extend(g.measured_cells());
        row.extend([
            g.median(|c| c.server_cpu_us_per_request)
                .map(|v| format!("{v:.1} µs"))
                .unwrap_or_else(dash),
            g.median(|c| c.server_rss_peak.map(|v| v as f64))
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
        ]);
        if self.with_db {
            // A case without a database shows dashes: absent, not zero.
            let cells = [
                g.median(|c| c.db_cpu_us_per_request)
                    .map(|v| format!("{v:.1} µs"))
                    .unwrap_or_else(dash),
                g.median(|c| c.db_memory_peak.map(|v| v as f64))
                    .map(|v| units::bytes(v as u64))
                    .unwrap_or_else(dash),
                c0.db_pool.map(|p| p.to_string()).unwrap_or_else(dash),
            ];
            for ((at, _), cell) in DB_COLUMNS.into_iter().zip(cells) {
                row.insert(at, cell);
            }
        }
        self.extras.add_cells(&mut row, g);
        row
    }

    /// What the columns mean, the database's and wrk's where shown, and
    /// how the ratios were paired.
    fn write_footnotes(&self, s: &mut String, cases: &[CaseRow]) {
        let _ = writeln!(
            s,
            "\nreq/s, p50, p99, CPU/req (server CPU-µs per request) and RSS (server peak) are medians over repetitions, errors the sum of them all; bytes = header+body of one response"
        );
        if self.with_db {
            let _ = writeln!(s, "{}", DB_NOTE);
        }
        self.extras.write_wrk_notes(s, cases);
        if let Some(p) = self.extras.paired {
            let _ = writeln!(
                s,
                "relative to {}: req/s (p99 for constant-rate loads) divided by the reference's in the same repetition, scenario, cores and load; geometric mean [{} % interval]",
                p.reference,
                (p.level * 100.0).round()
            );
            write_paired_notes(s, p);
            if let Some(aa) = &p.aa {
                let _ = writeln!(s, "\n{}", units::one_line(&aa.headline));
            }
        }
    }
}

impl Rows {
    /// A case's row, its mark if it has problems or notes, and a line for
    /// each repetition not measured.
    fn add_case(&mut self, columns: &Columns<'_>, g: &Folded<'_>) {
        self.rows.push(visible(&columns.row(g)));
        let case_notes = crate::report::model::case_notes(g.all);
        if case_notes.is_empty() {
            self.marks.push(None);
        } else {
            let c0 = g.first();
            self.flagged.push((
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
            self.marks.push(Some(self.flagged.len()));
        }
        for c in g
            .all
            .iter()
            .filter(|c| c.state == "failed" || c.state == "skipped")
        {
            self.not_measured.push(format!(
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

    fn write_flagged(&self, s: &mut String) {
        if self.flagged.is_empty() {
            return;
        }
        let _ = writeln!(
            s,
            "\n⚠ problems and notes (as in the report), for the rows marked:"
        );
        for (m, (label, list)) in self.flagged.iter().enumerate() {
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

    fn write_not_measured(&self, s: &mut String) {
        if self.not_measured.is_empty() {
            return;
        }
        let _ = writeln!(s, "\nnot measured:");
        for n in &self.not_measured {
            let _ = writeln!(s, "{n}");
        }
    }
}
