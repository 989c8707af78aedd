//! A case's figures across the stored runs: one point per run that
//! measured it, in the order the runs were made.
//!
//! Order: by the run's start time (then its id). A run's recorded git
//! revision and its server's declared version are carried with its point;
//! `history --order revision|version` reorders by them ([`super::order`]),
//! as a hash alone has no order without the repository.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::report::case_key::CaseKey;
use crate::report::model::LoadInfo;
use crate::report::paired::{self, Ratio};
use crate::report::stats::Summary;
use crate::store::{CaseRow, RunRow, Store};
use crate::suite::pairing::Pairing;

pub const MIB: f64 = 1024.0 * 1024.0;

/// The figure a series follows.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Metric {
    /// Requests per second (higher is better).
    Rps,
    /// Median latency, µs.
    P50,
    /// 99th percentile latency, µs.
    P99,
    /// Server CPU-µs per request.
    Cpu,
    /// Server memory (resident set, MiB): its peak over a run; a window's
    /// (`--within`) is the median of its seconds.
    Rss,
}

impl Metric {
    pub fn as_str(self) -> &'static str {
        match self {
            Metric::Rps => "rps",
            Metric::P50 => "p50",
            Metric::P99 => "p99",
            Metric::Cpu => "cpu",
            Metric::Rss => "rss",
        }
    }

    /// What a reader sees on an axis or a column.
    pub fn label(self) -> &'static str {
        match self {
            Metric::Rps => "req/s",
            Metric::P50 => "p50 latency (µs)",
            Metric::P99 => "p99 latency (µs)",
            Metric::Cpu => "server CPU-µs per request",
            Metric::Rss => "server memory (MiB)",
        }
    }

    pub fn higher_is_better(self) -> bool {
        self == Metric::Rps
    }

    fn of(self, c: &CaseRow) -> Option<f64> {
        match self {
            Metric::Rps => c.rps,
            Metric::P50 => c.lat_p50.map(|v| v as f64),
            Metric::P99 => c.lat_p99.map(|v| v as f64),
            Metric::Cpu => c.server_cpu_us_per_request,
            Metric::Rss => c.server_rss_peak.map(|b| b as f64 / MIB),
        }
        .filter(|v| v.is_finite())
    }

    /// The paired ratio to the reference this metric has (p50 has none).
    fn ratio(self, row: &paired::RatioRow) -> Option<&Ratio> {
        match self {
            Metric::Rps => row.rps.as_ref(),
            Metric::P99 => row.p99_us.as_ref(),
            Metric::Cpu => row.cpu_us_per_request.as_ref(),
            Metric::P50 | Metric::Rss => None,
        }
    }

    /// What `compare` judges a case by: req/s in closed loop, p99 at a
    /// constant rate (whose req/s the schedule sets).
    pub fn primary(c: &CaseRow) -> Metric {
        if LoadInfo::parse(&c.load_json, &c.load_label).is_closed() {
            Metric::Rps
        } else {
            Metric::P99
        }
    }
}

/// One run's figure for the case.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    pub run: i64,
    pub started_at: String,
    pub revision: Option<String>,
    /// What the server ran (store::Versions::source_label): its build's
    /// source key, or its declared version; None for runs stored before
    /// cases recorded versions.
    pub source: Option<String>,
    /// The version the server's manifest or suite declares
    /// (store::Versions::declared), what `--order version` orders by.
    pub declared: Option<String>,
    /// What `--order revision|version` placed the point by (the revision or
    /// the version), None in date order or when the point had none.
    pub order_key: Option<String>,
    /// For `--within`: the stretch of the run this point summarises.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<Window>,
    /// The median over the run's finished repetitions, its interval
    /// (order statistics, docs/report.md) and the interval's coverage.
    pub median: f64,
    pub low: f64,
    pub high: f64,
    pub confidence: f64,
    /// The repetitions' values, in repetition order; a change's size is
    /// bootstrapped over them (`--within`: the window's median alone).
    pub values: Vec<f64>,
    /// The run's A/A noise floor (percent), when its suite had A/A twins
    /// that paired.
    pub noise_floor_pct: Option<f64>,
    /// The case ÷ the reference in this run (geometric mean, interval).
    pub ratio: Option<f64>,
    pub ratio_low: Option<f64>,
    pub ratio_high: Option<f64>,
    /// Why the run's figures are not the work asked for (it failed over
    /// 1 % of its requests, or answered them with other bodies:
    /// crate::report::bodies::off_work), or not the server's (its load
    /// generator bounded them: crate::report::bound::off_work); such a
    /// point is shown, marked, and left out of the change search.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub off: Option<String>,
}

/// A stretch of one run's measurement (`history --within`): its seconds
/// from the start of the measurement.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Window {
    pub index: usize,
    pub start_s: f64,
    pub end_s: f64,
    /// Seconds of the per-second series inside it.
    pub seconds: usize,
}

impl Point {
    /// How a reader names the point: its window's span, else its run.
    pub fn tag(&self) -> String {
        match &self.window {
            Some(w) => format!("{:.0}–{:.0} s", w.start_s, w.end_s),
            None => self.run.to_string(),
        }
    }
}

/// A case's points, oldest first.
#[derive(Debug, Clone, Serialize)]
pub struct Series {
    pub key: CaseKey,
    pub metric: Metric,
    pub points: Vec<Point>,
}

/// One run's cases as the series read them: its finished repetitions by
/// case key, and its paired ratios.
struct RunCases {
    run: RunRow,
    cases: Vec<CaseRow>,
    done: BTreeMap<CaseKey, Vec<usize>>,
    paired: Option<paired::Paired>,
    versions: std::collections::HashMap<i64, crate::store::Versions>,
}

/// Every finished run with at least one finished case, oldest first.
fn load_runs(store: &Store, reference: Option<&str>) -> anyhow::Result<Vec<RunCases>> {
    let mut runs = store.runs()?;
    runs.sort_by(|a, b| (&a.started_at, a.id).cmp(&(&b.started_at, b.id)));
    let mut out = Vec::new();
    for run in runs {
        let cases: Vec<CaseRow> = store
            .cases(run.id)?
            .into_iter()
            .filter(|c| c.sweep.is_none())
            .collect();
        if !cases.iter().any(|c| c.state == "done") {
            continue;
        }
        // A run whose stored suite no longer names a valid reference has
        // no ratios; its figures still count.
        let paired = Pairing::from_stored_suite(&run.suite_toml, reference)
            .ok()
            .map(|(p, _)| paired::build(&cases, &p));
        let mut done: BTreeMap<CaseKey, Vec<usize>> = BTreeMap::new();
        for (i, c) in cases.iter().enumerate().filter(|(_, c)| c.state == "done") {
            done.entry(CaseKey::of(c)).or_default().push(i);
        }
        let versions = store.versions(run.id)?;
        out.push(RunCases {
            run,
            cases,
            done,
            paired,
            versions,
        });
    }
    Ok(out)
}

/// The point of `key` in one run, if the run has a finished repetition.
fn point(rc: &RunCases, key: &CaseKey, metric: Metric) -> Option<Point> {
    let done = rc.done.get(key)?;
    let versions = || {
        done.iter()
            .filter_map(|&i| rc.versions.get(&rc.cases[i].id))
    };
    let source = versions().find_map(|v| v.source_label());
    let declared = versions().find_map(|v| v.declared.clone());
    let values: Vec<f64> = done
        .iter()
        .filter_map(|&i| metric.of(&rc.cases[i]))
        .collect();
    let s = Summary::of(&values)?;
    let paired = rc.paired.as_ref();
    let ratio = paired
        .and_then(|p| p.row(key))
        .and_then(|row| metric.ratio(row));
    Some(Point {
        run: rc.run.id,
        started_at: rc.run.started_at.clone(),
        revision: rc.run.git_revision.clone(),
        source,
        declared,
        order_key: None,
        window: None,
        median: s.median,
        low: s.low,
        high: s.high,
        confidence: s.confidence,
        values: s.values,
        noise_floor_pct: paired.and_then(|p| p.aa.as_ref()?.noise_floor_pct),
        ratio: ratio.map(|r| r.summary.geomean),
        ratio_low: ratio.and_then(|r| r.summary.low),
        ratio_high: ratio.and_then(|r| r.summary.high),
        off: crate::report::bodies::off_work(done.iter().map(|&i| &rc.cases[i]))
            .or_else(|| crate::report::bound::off_work(done.iter().map(|&i| &rc.cases[i]))),
    })
}

/// Every case key of the database with its series, in the order the keys
/// first appear; `metric` None follows each case's primary metric.
/// `reference` is `--reference` (else each run's suite decides).
pub fn collect(
    store: &Store,
    metric: Option<Metric>,
    reference: Option<&str>,
) -> anyhow::Result<Vec<Series>> {
    let runs = load_runs(store, reference)?;
    let mut keys: BTreeMap<CaseKey, (usize, Metric)> = BTreeMap::new();
    for rc in &runs {
        for c in &rc.cases {
            let n = keys.len();
            keys.entry(CaseKey::of(c))
                .or_insert_with(|| (n, metric.unwrap_or_else(|| Metric::primary(c))));
        }
    }
    let mut ordered: Vec<(CaseKey, (usize, Metric))> = keys.into_iter().collect();
    ordered.sort_by_key(|(_, (first, _))| *first);
    Ok(ordered
        .into_iter()
        .map(|(key, (_, metric))| {
            let points = runs
                .iter()
                .filter_map(|rc| point(rc, &key, metric))
                .collect();
            Series {
                key,
                metric,
                points,
            }
        })
        .filter(|s: &Series| !s.points.is_empty())
        .collect())
}
