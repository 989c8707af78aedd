//! One case's repetitions aggregated into a group: its figures' summaries,
//! its flags and the notes a reader must see beside its numbers.

use serde::Serialize;
use serde_json::Value;

use super::series::{Spectrum, Warmup, WarmupPoint};
use super::{value_text, LoadInfo};
use crate::report::case_key::CaseKey;
use crate::report::stats::Summary;
use crate::store::{CaseRow, Store};

/// One case key with its repetitions aggregated.
#[derive(Debug, Clone, Serialize)]
pub struct Group {
    pub key: CaseKey,
    pub label: String,
    pub language: String,
    pub framework: String,
    pub palette_index: usize,
    /// Index of this variant among its server's variants (its dash pattern).
    pub variant_index: usize,
    pub sweep: Option<String>,
    pub load: LoadInfo,
    pub cores_requested: String,
    pub planned: usize,
    pub done: usize,
    pub failed: usize,
    pub fair: Option<bool>,
    pub saturated: bool,
    pub cpus_shared: bool,
    pub warnings: Vec<String>,
    pub rps: Option<Summary>,
    /// Median over repetitions of the stdev of the 1-second rates.
    pub rps_stdev_1s: Option<f64>,
    /// wrk's per-thread Req/Sec, per repetition: the mean of every load
    /// thread's 100 ms rates (what the studies plotted), their stdev
    /// (median over repetitions) and their max.
    pub thread_rps: Option<Summary>,
    pub thread_rps_stdev: Option<f64>,
    pub thread_rps_max: Option<Summary>,
    /// What wrk 4.x prints, per repetition, where timeouts were counted
    /// its way: its latency after its own correction (µs) and its request
    /// count (late answers included).
    pub wrk: Option<WrkGroup>,
    /// The original tool's run on the same cases (`calibrate`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calibration: Option<CalibrationGroup>,
    /// Cores the server kept busy: its CPU over the measurement's wall time
    /// (mean) and the most in one second (peak), per repetition; the load
    /// generator's mean beside them.
    pub server_cores_mean: Option<Summary>,
    pub server_cores_peak: Option<Summary>,
    pub generator_cores_mean: Option<Summary>,
    pub lat_mean: Option<Summary>,
    /// The standard deviation of every request's latency (wrk's Latency
    /// "Stdev"), per repetition.
    pub lat_stdev: Option<Summary>,
    pub lat_p50: Option<Summary>,
    pub lat_p90: Option<Summary>,
    pub lat_p99: Option<Summary>,
    pub lat_p999: Option<Summary>,
    pub lat_max: Option<Summary>,
    pub requests: Option<Summary>,
    /// Timed out or still unanswered at the end, per million planned.
    pub timeouts_per_million: Option<Summary>,
    pub errors: Option<Summary>,
    /// Bytes read from the server in the measurement (headers and bodies),
    /// and per second (wrk's "Transfer/sec").
    pub bytes_read: Option<Summary>,
    pub transfer_bytes_per_s: Option<Summary>,
    pub cpu_us_per_request: Option<Summary>,
    /// The database's CPU per request (its control group), for the
    /// database scenarios: beside the server's, so that work moved into the
    /// database does not make a server look cheaper.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub db_cpu_us_per_request: Option<Summary>,
    /// The database's CPU seconds over each measurement.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub db_cpu_s: Option<Summary>,
    /// The server's and the database's CPU per request added up, per
    /// repetition: the whole stack's work for one response.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_cpu_us_per_request: Option<Summary>,
    /// The database's control group's memory high-water mark per case,
    /// bytes (its processes, shared buffers and the page cache charged to
    /// it: not an RSS).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub db_memory_peak: Option<Summary>,
    /// The CPUs the database had, each distinct cpuset of the repetitions
    /// once, `;`-separated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub db_cpus: Option<String>,
    /// The connection pool the server was told to keep (DB_POOL).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub db_pool: Option<i64>,
    pub rss_peak: Option<Summary>,
    pub spectrum: Option<Spectrum>,
    pub warmup: Option<Warmup>,
    /// A case measured with `--warmup auto`: the warm-up each repetition
    /// took, and whether it ended steady.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto_warmup: Option<super::auto_warmup::AutoWarmup>,
    pub case_ids: Vec<i64>,
    /// A URL case's URL, method, load and stages; left out for zoo cases.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<crate::report::url_case::UrlLoad>,
    /// The run the cases are of, in a report of several runs (`report
    /// --with`; `case_ids` are that run's database's). None: the report's run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<i64>,
}

impl Group {
    pub fn is_sweep_step(&self) -> bool {
        self.sweep.is_some()
    }

    /// Notes a reader must see beside the numbers.
    pub fn flags(&self) -> Vec<String> {
        flags(
            self.fair,
            self.saturated,
            self.cpus_shared,
            (self.failed, self.done, self.planned),
        )
    }
}

/// A case's flags from what its repetitions recorded; `reps` is (failed,
/// done, planned).
fn flags(
    fair: Option<bool>,
    saturated: bool,
    cpus_shared: bool,
    (failed, done, planned): (usize, usize, usize),
) -> Vec<String> {
    let mut f = Vec::new();
    if fair == Some(false) {
        f.push("failed its contract in the check".to_string());
    }
    if saturated {
        f.push("load generator saturated".to_string());
    }
    if cpus_shared {
        f.push("server and load shared CPUs".to_string());
    }
    if failed > 0 {
        f.push(format!("{failed} of {planned} repetitions failed"));
    } else if done < planned {
        f.push(format!("{done} of {planned} repetitions done"));
    }
    f
}

/// Everything a reader must see beside a case's numbers: its flags, then
/// the warnings stored with its repetitions, a flag that a warning already
/// states in full not repeated. The report's "Problems and notes" and the
/// terminal tables of `run` and `show` list exactly these.
pub fn notes(flags: Vec<String>, warnings: &[String]) -> Vec<String> {
    flags
        .into_iter()
        .filter(|f| !warnings.iter().any(|w| w.starts_with(f.as_str())))
        .chain(warnings.iter().cloned())
        .collect()
}

/// [`notes`] of the repetitions of one case, from their stored rows.
pub fn case_notes(rows: &[&CaseRow]) -> Vec<String> {
    let done = rows.iter().filter(|c| c.state == "done");
    let f = flags(
        rows.iter().find_map(|c| c.fair),
        done.clone().any(|c| c.saturated == Some(true)),
        rows.iter().any(|c| c.cpus_shared),
        (
            rows.iter().filter(|c| c.state == "failed").count(),
            done.count(),
            rows.len(),
        ),
    );
    notes(f, &stored_warnings(rows))
}

/// The warnings stored with the repetitions, each once, in order.
fn stored_warnings(rows: &[&CaseRow]) -> Vec<String> {
    let mut warnings = Vec::new();
    for c in rows {
        let list: Vec<String> = match serde_json::from_str::<Vec<Value>>(&c.warnings_json) {
            Ok(v) => v.iter().map(value_text).collect(),
            Err(_) if c.warnings_json.trim().is_empty() => Vec::new(),
            Err(_) => vec![c.warnings_json.clone()],
        };
        for w in list {
            if !warnings.contains(&w) {
                warnings.push(w);
            }
        }
    }
    warnings
}

fn summary_of<F: Fn(&CaseRow) -> Option<f64>>(done: &[&CaseRow], f: F) -> Option<Summary> {
    let vals: Vec<f64> = done.iter().filter_map(|c| f(c)).collect();
    Summary::of(&vals)
}

/// The database's cpusets of a case's repetitions, each once in order;
/// None when no repetition had a database.
fn distinct_cpusets(rows: &[&CaseRow]) -> Option<String> {
    let mut seen: Vec<&str> = Vec::new();
    for c in rows.iter().filter_map(|c| c.db_cpus.as_deref()) {
        if !seen.contains(&c) {
            seen.push(c);
        }
    }
    (!seen.is_empty()).then(|| seen.join(";"))
}

/// One case key's (and sweep step's) repetitions aggregated, placed in
/// the charts by its server's colour and its variant's dash pattern.
pub(super) fn group(
    store: &Store,
    key: CaseKey,
    sweep: Option<String>,
    rows: &[&CaseRow],
    palette_index: usize,
    variant_index: usize,
) -> anyhow::Result<Group> {
    let first = rows[0];
    let mut done: Vec<&CaseRow> = rows.iter().copied().filter(|c| c.state == "done").collect();
    done.sort_by_key(|c| c.repetition);
    let mut warnings = stored_warnings(rows);
    let lat = |f: fn(&CaseRow) -> Option<i64>| summary_of(&done, move |c| f(c).map(|v| v as f64));
    let load = LoadInfo::parse(&first.load_json, &first.load_label);

    let (spectrum, warmup, auto_warmup) = if sweep.is_none() && !done.is_empty() {
        (
            merged_spectrum(store, &done, &mut warnings),
            first_warmup(store, done[0])?,
            super::auto_warmup::AutoWarmup::of(store, &first.load_json, &done)?,
        )
    } else {
        (None, None, None)
    };

    let rps_stdev_1s = summary_of(&done, |c| c.rps_stdev).map(|s| s.median);
    Ok(Group {
        label: key.variant_label(),
        language: first.language.clone(),
        framework: first.framework.clone(),
        palette_index,
        variant_index,
        sweep,
        load,
        cores_requested: first.cores_requested.clone(),
        planned: rows.len(),
        done: done.len(),
        failed: rows.iter().filter(|c| c.state == "failed").count(),
        fair: rows.iter().find_map(|c| c.fair),
        saturated: done.iter().any(|c| c.saturated == Some(true)),
        cpus_shared: rows.iter().any(|c| c.cpus_shared),
        warnings,
        rps: summary_of(&done, |c| c.rps),
        rps_stdev_1s,
        thread_rps: summary_of(&done, |c| c.thread_rps_mean),
        thread_rps_stdev: summary_of(&done, |c| c.thread_rps_stdev).map(|s| s.median),
        thread_rps_max: summary_of(&done, |c| c.thread_rps_max),
        wrk: WrkGroup::of(&done),
        calibration: CalibrationGroup::of(store, &done)?,
        server_cores_mean: summary_of(&done, |c| {
            let cpu = c.server_group_cpu_s.or(c.server_cpu_s)?;
            c.duration_s.filter(|d| *d > 0.0).map(|d| cpu / d)
        }),
        server_cores_peak: summary_of(&done, |c| c.server_cores_peak),
        generator_cores_mean: summary_of(&done, |c| {
            let cpu = c.generator_cpu_s?;
            c.duration_s.filter(|d| *d > 0.0).map(|d| cpu / d)
        }),
        lat_mean: summary_of(&done, |c| c.lat_mean),
        lat_stdev: summary_of(&done, |c| c.lat_stdev),
        lat_p50: lat(|c| c.lat_p50),
        lat_p90: lat(|c| c.lat_p90),
        lat_p99: lat(|c| c.lat_p99),
        lat_p999: lat(|c| c.lat_p999),
        lat_max: lat(|c| c.lat_max),
        requests: lat(|c| c.requests),
        timeouts_per_million: summary_of(&done, |c| c.no_answer_per_million()),
        errors: summary_of(&done, |c| c.errors_total().map(|e| e as f64)),
        bytes_read: lat(|c| c.bytes_read),
        transfer_bytes_per_s: summary_of(&done, |c| match (c.bytes_read, c.duration_s) {
            (Some(b), Some(d)) if d > 0.0 => Some(b as f64 / d),
            _ => None,
        }),
        cpu_us_per_request: summary_of(&done, |c| c.server_cpu_us_per_request),
        db_cpu_us_per_request: summary_of(&done, |c| c.db_cpu_us_per_request),
        db_cpu_s: summary_of(&done, |c| c.db_cpu_s),
        total_cpu_us_per_request: summary_of(&done, CaseRow::total_cpu_us_per_request),
        db_memory_peak: lat(|c| c.db_memory_peak),
        db_cpus: distinct_cpusets(rows),
        db_pool: rows.iter().find_map(|c| c.db_pool),
        rss_peak: lat(|c| c.server_rss_peak),
        spectrum,
        warmup,
        auto_warmup,
        case_ids: rows.iter().map(|c| c.id).collect(),
        url: crate::report::url_case::UrlLoad::of(first),
        run_id: None,
        key,
    })
}

/// The spectrum of the repetitions' latency histograms merged; a histogram
/// that cannot be read or merged is left out with a warning.
fn merged_spectrum(
    store: &Store,
    done: &[&CaseRow],
    warnings: &mut Vec<String>,
) -> Option<Spectrum> {
    let mut merged: Option<hdrhistogram::Histogram<u64>> = None;
    for c in done {
        match store.histogram(c.id, "latency") {
            Ok(Some(h)) => match merged.as_mut() {
                None => merged = Some(h),
                Some(m) => {
                    if m.add(&h).is_err() {
                        warnings.push(format!(
                            "repetition {}: histogram could not be merged",
                            c.repetition
                        ));
                    }
                }
            },
            Ok(None) => {}
            Err(e) => warnings.push(format!("repetition {}: {e}", c.repetition)),
        }
    }
    merged.as_ref().and_then(Spectrum::of)
}

/// The warm-up of a repetition (the first done), second by second; None
/// when it stored no samples.
fn first_warmup(store: &Store, c: &CaseRow) -> anyhow::Result<Option<Warmup>> {
    let samples = store.samples(c.id)?;
    if samples.is_empty() {
        return Ok(None);
    }
    Ok(Some(Warmup {
        repetition: c.repetition,
        points: samples
            .iter()
            .map(|s| WarmupPoint {
                second: s.second,
                phase: s.phase.clone(),
                t_s: s.start_s,
                rps: s.rps(),
                p99_us: s.p99_us,
            })
            .collect(),
    }))
}

/// wrk's printed figures over a group's repetitions.
#[derive(Debug, Clone, Serialize)]
pub struct WrkGroup {
    pub requests: Summary,
    pub lat_mean: Summary,
    pub lat_stdev: Summary,
    /// "+/- Stdev", percent (median over repetitions).
    pub within_stdev: f64,
    pub lat_p50: Summary,
    pub lat_p75: Summary,
    pub lat_p90: Summary,
    pub lat_p99: Summary,
    pub lat_max: Summary,
}

impl WrkGroup {
    fn of(done: &[&CaseRow]) -> Option<WrkGroup> {
        let int = |f: fn(&CaseRow) -> Option<i64>| summary_of(done, |c| f(c).map(|v| v as f64));
        Some(WrkGroup {
            requests: int(|c| c.wrk_requests)?,
            lat_mean: summary_of(done, |c| c.wrk_lat_mean)?,
            lat_stdev: summary_of(done, |c| c.wrk_lat_stdev)?,
            within_stdev: summary_of(done, |c| c.wrk_lat_within_stdev)?.median,
            lat_p50: int(|c| c.wrk_lat_p50)?,
            lat_p75: int(|c| c.wrk_lat_p75)?,
            lat_p90: int(|c| c.wrk_lat_p90)?,
            lat_p99: int(|c| c.wrk_lat_p99)?,
            lat_max: int(|c| c.wrk_lat_max)?,
        })
    }
}

/// What the original tool printed on a group's repetitions.
#[derive(Debug, Clone, Serialize)]
pub struct CalibrationGroup {
    pub tool: String,
    /// Repetitions it ran on and printed figures for.
    pub done: usize,
    /// Why it did not, for the others (skipped or failed), each once.
    pub not_done: Vec<String>,
    pub command: String,
    pub rps: Option<Summary>,
    pub requests: Option<Summary>,
    pub lat_mean: Option<Summary>,
    pub lat_stdev: Option<Summary>,
    pub lat_p50: Option<Summary>,
    pub lat_p99: Option<Summary>,
    pub lat_max: Option<Summary>,
}

impl CalibrationGroup {
    fn of(store: &Store, done: &[&CaseRow]) -> anyhow::Result<Option<CalibrationGroup>> {
        let mut rows = Vec::new();
        for c in done {
            if let Some(k) = store.calibration(c.id)? {
                rows.push(k);
            }
        }
        let Some(first) = rows.first() else {
            return Ok(None);
        };
        let figures: Vec<crate::calibration::ToolFigures> = rows
            .iter()
            .filter(|k| k.state == "done")
            .filter_map(|k| serde_json::from_str(k.figures_json.as_deref()?).ok())
            .collect();
        let of = |f: &dyn Fn(&crate::calibration::ToolFigures) -> Option<f64>| {
            let v: Vec<f64> = figures.iter().filter_map(f).collect();
            Summary::of(&v)
        };
        let mut not_done: Vec<String> = Vec::new();
        for k in rows.iter().filter(|k| k.state != "done") {
            let why = format!(
                "{}: {}",
                k.state,
                k.reason.as_deref().unwrap_or("no reason given")
            );
            if !not_done.contains(&why) {
                not_done.push(why);
            }
        }
        Ok(Some(CalibrationGroup {
            tool: first.tool.clone(),
            done: figures.len(),
            not_done,
            command: rows
                .iter()
                .find(|k| !k.command.is_empty())
                .map(|k| k.command.clone())
                .unwrap_or_default(),
            rps: of(&|f| f.rps),
            requests: of(&|f| f.requests.map(|n| n as f64)),
            lat_mean: of(&|f| f.lat_mean_us),
            lat_stdev: of(&|f| f.lat_stdev_us),
            lat_p50: of(&|f| f.at(50.0)),
            lat_p99: of(&|f| f.at(99.0)),
            lat_max: of(&|f| f.lat_max_us),
        }))
    }
}
