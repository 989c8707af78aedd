//! The report's History section as data: this run's cases across the
//! earlier runs of its database, up to and including this run.
//!
//! `report` fills it (commands/report/history.rs) from the history library
//! (`crate::history`), which itself builds on the report's statistics and
//! SVG writer; so that the two folders do not import each other, this
//! module holds its own plain copy of what the section shows and names
//! nothing of `crate::history`. [`super::history_section`] lays it out.

use serde::Serialize;

use super::case_key::CaseKey;

/// A case needs this many runs (this one included) to be shown: fewer is
/// no series to read a level from.
pub const MIN_RUNS: usize = 3;
/// At most this many cases get a chart; the others are counted.
pub const MAX_CASES: usize = 12;

#[derive(Debug, Clone, Serialize)]
pub struct RunHistory {
    /// The run the report is about: the last point of every series (runs
    /// made after it are left out).
    pub run: i64,
    /// Earlier runs of the database that measured at least one of this
    /// run's cases.
    pub earlier_runs: usize,
    /// What the change points were found with (history's method).
    pub method: &'static str,
    /// The smallest change reported when the runs have no A/A floor.
    pub min_change_pct: f64,
    /// The cases with at least [`MIN_RUNS`] runs, the largest change first,
    /// at most [`MAX_CASES`].
    pub cases: Vec<HistoryCase>,
    /// Cases with a history beyond the ones shown.
    pub more: usize,
    /// The command that shows every case's history.
    pub more_command: String,
}

/// One case's series up to this run.
#[derive(Debug, Clone, Serialize)]
pub struct HistoryCase {
    pub key: CaseKey,
    pub label: String,
    /// `rps`, `p99`, …, and what a reader sees for it.
    pub metric: String,
    pub unit: String,
    /// The smallest change reported (percent): the larger of the minimum
    /// and the widest A/A noise floor of the runs.
    pub floor_pct: f64,
    /// Oldest first; the last is this run.
    pub points: Vec<HistoryPoint>,
    pub changes: Vec<HistoryChange>,
    /// The chart, inline SVG with every string escaped; not in the JSON.
    #[serde(skip)]
    pub svg: String,
}

/// One run's figure for the case.
#[derive(Debug, Clone, Serialize)]
pub struct HistoryPoint {
    pub run: i64,
    pub started_at: String,
    pub revision: Option<String>,
    /// Median over the run's finished repetitions, and its interval.
    pub median: f64,
    pub low: f64,
    pub high: f64,
    pub confidence: f64,
    /// The run the report is about.
    pub this_run: bool,
}

/// Where the level moved beyond the floor.
#[derive(Debug, Clone, Serialize)]
pub struct HistoryChange {
    /// The last run before the change and the first after it.
    pub run_before: i64,
    pub run_after: i64,
    pub revision_before: Option<String>,
    pub revision_after: Option<String>,
    /// (after − before) / before, percent, with its 95 % bootstrap
    /// interval (None with fewer than 2 repetitions on a side).
    pub change_pct: Option<f64>,
    pub ci_low_pct: Option<f64>,
    pub ci_high_pct: Option<f64>,
    /// `better` or `worse`.
    pub direction: String,
}

impl HistoryCase {
    /// The size of the largest change, for ranking (a change of unknown
    /// size, from a zero level, ranks first).
    pub fn largest_change(&self) -> f64 {
        self.changes
            .iter()
            .map(|c| c.change_pct.map_or(f64::INFINITY, f64::abs))
            .fold(0.0, f64::max)
    }
}
