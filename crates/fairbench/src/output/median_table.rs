//! What `show`'s two tables of a stored run (a suite's, super::run_table,
//! and a run of URLs', super::url_table) compute and print alike: the
//! run's first line, a case's repetitions folded into their medians, the
//! columns only some runs have (wrk's figures, the paired ratio), the
//! aligned table and wrk's footnotes.

use std::fmt::Write;

use super::case_rows;
use crate::report::case_key::CaseKey;
use crate::report::paired::{Paired, RatioRow, Role};
use crate::store::{CaseRow, RunRow};
use crate::units;

/// Where the per-thread column goes: after the total req/s.
const PER_THREAD_AT: usize = 7;

/// `run 3 (…), <what>, done: 4 done, 0 failed, 0 skipped of 4 planned`.
pub fn write_run_line(s: &mut String, run: &RunRow, what: &str) {
    let _ = writeln!(
        s,
        "run {} ({}), {}, {}: {} done, {} failed, {} skipped of {} planned",
        run.id,
        run.started_at,
        what,
        run.state,
        run.cases_done,
        run.cases_failed,
        run.cases_skipped,
        run.planned_cases
    );
}

/// The repetitions of one case (as `case_rows::groups` folds them) and
/// those of them that are done.
pub struct Folded<'a> {
    pub all: &'a [&'a CaseRow],
    pub done: Vec<&'a &'a CaseRow>,
}

impl<'a> Folded<'a> {
    pub fn of(all: &'a [&'a CaseRow]) -> Folded<'a> {
        let done = all.iter().filter(|c| c.state == "done").collect();
        Folded { all, done }
    }

    /// The first repetition: what the case is.
    pub fn first(&self) -> &'a CaseRow {
        self.all[0]
    }

    /// The median of a figure over the done repetitions that have it.
    pub fn median(&self, f: impl Fn(&CaseRow) -> Option<f64>) -> Option<f64> {
        let v: Vec<f64> = self.done.iter().filter_map(|c| f(c)).collect();
        (!v.is_empty()).then(|| crate::report::stats::median(&v))
    }

    /// reps, req/s, p50, p99 and errors: the measured columns of both
    /// tables, in their order; a dash where nothing was measured.
    pub fn measured_cells(&self) -> [String; 5] {
        let dash = || "-".to_string();
        let errors: i64 = self.done.iter().filter_map(|c| c.errors_total()).sum();
        [
            format!("{}/{}", self.done.len(), self.all.len()),
            self.median(|c| c.rps).map(units::rate).unwrap_or_else(dash),
            self.median(|c| c.lat_p50.map(|v| v as f64))
                .map(units::micros)
                .unwrap_or_else(dash),
            self.median(|c| c.lat_p99.map(|v| v as f64))
                .map(units::micros)
                .unwrap_or_else(dash),
            if self.done.is_empty() {
                dash()
            } else {
                units::count(errors as u64)
            },
        ]
    }
}

/// How the ratio column names a ratio of req/s: the suite's table leaves
/// it bare, the URLs' table says "req/s" as it says "p99".
#[derive(Clone, Copy, PartialEq)]
pub enum ReqSRatio {
    Bare,
    Named,
}

/// The columns a table shows only where some case has them: wrk's
/// per-thread Req/Sec, wrk's printed latency, and the ratio to the
/// reference.
pub struct Extras<'p> {
    pub per_thread: bool,
    pub wrk_latency: bool,
    pub paired: Option<&'p Paired>,
    pub req_s: ReqSRatio,
}

impl<'p> Extras<'p> {
    pub fn of(cases: &[CaseRow], paired: Option<&'p Paired>, req_s: ReqSRatio) -> Extras<'p> {
        Extras {
            per_thread: case_rows::shows_per_thread(cases),
            wrk_latency: case_rows::shows_wrk_latency(cases),
            paired,
            req_s,
        }
    }

    /// Adds the shown columns' names to the header.
    pub fn add_headers(&self, header: &mut Vec<String>) {
        if self.per_thread {
            header.insert(PER_THREAD_AT, case_rows::PER_THREAD_HEADER.into());
        }
        if self.wrk_latency {
            header.push(case_rows::WRK_LATENCY_HEADER.into());
        }
        if let Some(p) = self.paired {
            header.push(format!("relative to {}", p.reference));
        }
    }

    /// Adds a case's cells of the shown columns to its row.
    pub fn add_cells(&self, row: &mut Vec<String>, g: &Folded<'_>) {
        if self.per_thread {
            let cell = case_rows::per_thread_cell(
                g.median(|c| c.thread_rps_mean),
                g.median(|c| c.thread_rps_stdev),
                g.median(|c| c.thread_rps_max),
            );
            row.insert(PER_THREAD_AT, cell);
        }
        if self.wrk_latency {
            row.push(case_rows::wrk_latency_cell(&g.done));
        }
        if let Some(p) = self.paired {
            row.push(self.ratio_cell(p.row(&CaseKey::of(g.first()))));
        }
    }

    /// The primary ratio of a row: req/s for closed loop, p99 for constant
    /// rate.
    fn ratio_cell(&self, row: Option<&RatioRow>) -> String {
        match row {
            None => "-".into(),
            Some(r) if r.role == Role::Reference => "reference".into(),
            Some(r) => match r.primary() {
                ("req/s", Some(q)) if self.req_s == ReqSRatio::Bare => q.summary.text(),
                (name, Some(q)) => format!("{name} {}", q.summary.text()),
                (_, None) => "-".into(),
            },
        }
    }

    /// The footnotes of wrk's columns, and of timeouts counted its way.
    pub fn write_wrk_notes(&self, s: &mut String, cases: &[CaseRow]) {
        if self.per_thread {
            let _ = writeln!(s, "{}", case_rows::PER_THREAD_NOTE);
        }
        if self.wrk_latency {
            let _ = writeln!(s, "{}", case_rows::WRK_LATENCY_NOTE);
        }
        if cases.iter().any(case_rows::counted_wrks_way) {
            let _ = writeln!(s, "{}", case_rows::WRK_TIMEOUTS_NOTE);
        }
    }
}

/// The pairing's own notes, one `note:` line each.
pub fn write_paired_notes(s: &mut String, p: &Paired) {
    for n in &p.notes {
        let _ = writeln!(s, "note: {}", units::one_line(n));
    }
}

/// A row's cells as the terminal may show them; escaped before the
/// columns are measured.
pub fn visible(row: &[String]) -> Vec<String> {
    row.iter()
        .map(|c| fairbench_sys::text::visible(c))
        .collect()
}

/// The rows aligned, a rule under the header: the first `text` columns
/// left, numbers right; a row with a mark in `marks` (by row, header
/// included; missing means none) gets `⚠ n` after it.
pub fn write_table(s: &mut String, rows: &[Vec<String>], text: usize, marks: &[Option<usize>]) {
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
        // The mark goes after the row, so rows without one are unchanged.
        if let Some(m) = marks.get(k).copied().flatten() {
            let _ = write!(line, "⚠ {m}");
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
