//! The report model: one run of the results database, its repetitions
//! aggregated. Everything a report shows is computed here, once; the HTML,
//! Markdown, CSV and JSON outputs only format it.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::Value;

use super::palette;
use super::stats::Summary;
use crate::store::{CaseRow, RunRow, Store, SweepRow};

/// What matches a case across repetitions and across runs.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct CaseKey {
    pub server: String,
    pub mode: String,
    pub response: String,
    pub scenario: String,
    pub cores: i64,
    pub load: String,
    /// The machine, in a report of runs from several (`report --with`):
    /// its CPU model and count. Empty in a report of one run.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub host: String,
    /// "http/1.1", "h2c" or "h2".
    pub protocol: String,
}

impl CaseKey {
    pub fn of(c: &CaseRow) -> CaseKey {
        CaseKey {
            server: c.server.clone(),
            mode: c.mode.clone(),
            response: c.response.clone(),
            scenario: c.scenario.clone(),
            cores: c.cores,
            load: c.load_label.clone(),
            host: String::new(),
            protocol: c.protocol.clone(),
        }
    }

    /// `server mode/response`, and ` over h2c` (or h2) for a case spoken
    /// to in HTTP/2: the name of a bar or a line; a URL case's name alone
    /// (it has no mode or response shape). HTTP/1.1, every case's protocol
    /// before HTTP/2 was measured, is the unnamed default.
    pub fn variant_label(&self) -> String {
        if self.is_url() {
            return format!("{}{}", self.server, protocol_label(&self.protocol));
        }
        format!(
            "{} {}/{}{}",
            self.server,
            self.mode,
            self.response,
            protocol_label(&self.protocol)
        )
    }

    /// `scenario · 2 cores · closed c=50 t=1`: what a set of bars shares;
    /// for a URL case, its load.
    pub fn context(&self) -> String {
        let on = if self.host.is_empty() {
            String::new()
        } else {
            format!(" · on {}", self.host)
        };
        if self.is_url() {
            return format!("{}{on}", self.load);
        }
        let over = match self.protocol.as_str() {
            "" | "http/1.1" => String::new(),
            p => format!(" · {p}"),
        };
        format!(
            "{}{over} · {} · {}{on}",
            self.scenario,
            cores_label(self.cores),
            self.load
        )
    }

    /// Measured at a URL (super::url_case): no mode, no cores.
    pub fn is_url(&self) -> bool {
        self.cores == 0 && self.mode == "-"
    }

    /// The whole key on one line.
    pub fn label(&self) -> String {
        format!("{} — {}", self.variant_label(), self.context())
    }
}

/// " over h2c" / " over h2"; nothing for HTTP/1.1 (or a row without one).
pub fn protocol_label(protocol: &str) -> String {
    if protocol.is_empty() || protocol == "http/1.1" {
        String::new()
    } else {
        format!(" over {protocol}")
    }
}

pub fn cores_label(n: i64) -> String {
    if n == 1 {
        "1 core".into()
    } else {
        format!("{n} cores")
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    pub run: RunInfo,
    /// Sorted by name; a server's position is its colour in every chart.
    pub servers: Vec<ServerInfo>,
    pub parity: Vec<ParityRow>,
    /// One per case key (and sweep step), in plan order.
    pub groups: Vec<Group>,
    pub sweeps: Vec<SweepInfo>,
    /// Cases that failed, were skipped or never finished.
    pub problems: Vec<Problem>,
    /// How the numbers were aggregated, for the reader.
    pub method: Method,
    /// Every case relative to the reference, repetition by repetition.
    pub paired: super::paired::Paired,
    /// The runs of a report of several machines (`report --with`), the
    /// report's own first; empty for a report of one run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub machines: Vec<super::machines::Machine>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Method {
    pub aggregate: &'static str,
    pub interval: &'static str,
}

pub const METHOD: Method = Method {
    aggregate: "median over repetitions (each repetition's req/s is its requests divided by its measured seconds)",
    interval: "distribution-free confidence interval of the median from order statistics: the narrowest [k-th smallest, k-th largest] reaching 95 %; with fewer than 6 repetitions it is min..max and its real confidence is given (2: 50 %, 3: 75 %, 4: 87.5 %, 5: 93.75 %)",
};

#[derive(Debug, Clone, Serialize)]
pub struct RunInfo {
    pub id: i64,
    pub suite: String,
    pub state: String,
    pub reason: Option<String>,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub fairbench_version: String,
    pub git_revision: Option<String>,
    /// `host_json` as stored (an object; `null` if it was not JSON).
    pub host: Value,
    pub planned_cases: i64,
    pub cases_done: i64,
    pub cases_failed: i64,
    pub cases_skipped: i64,
    pub suite_toml: String,
}

impl RunInfo {
    /// The machine as label/value pairs: the documented fields first, in a
    /// fixed order, then any others by name.
    pub fn host_fields(&self) -> Vec<(String, String)> {
        const KNOWN: [(&str, &str); 8] = [
            ("cpu_model", "CPU"),
            ("cpus", "CPUs"),
            ("online_cpus", "online CPUs"),
            ("usable_cpus", "usable CPUs"),
            ("memory_bytes", "memory"),
            ("kernel", "kernel"),
            ("os", "OS"),
            ("governor", "CPU governor"),
        ];
        let Some(obj) = self.host.as_object() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (k, label) in KNOWN {
            if let Some(v) = obj.get(k) {
                let text = match (k, v.as_u64()) {
                    ("memory_bytes", Some(b)) => crate::units::bytes(b),
                    _ => value_text(v),
                };
                out.push((label.to_string(), text));
            }
        }
        for (k, v) in obj {
            if !KNOWN.iter().any(|(n, _)| n == k) {
                out.push((k.clone(), value_text(v)));
            }
        }
        out
    }
}

/// A JSON value as text: strings bare, null as "—", arrays as a list,
/// others as JSON.
pub fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "—".into(),
        Value::Array(a) => a.iter().map(value_text).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ServerInfo {
    pub name: String,
    pub language: String,
    pub framework: String,
    pub palette_index: usize,
    pub colour: &'static str,
    /// The run's `toolchains_json` entry for this server (toolchain, version,
    /// framework_version, …), if any.
    pub toolchain: Option<Value>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RuleGrade {
    pub rule: String,
    pub grade: String,
    pub detail: String,
}

/// The check's verdict on one server variant and scenario.
#[derive(Debug, Clone, Serialize)]
pub struct ParityRow {
    pub server: String,
    pub mode: String,
    pub response: String,
    pub scenario: String,
    /// What the check spoke: "http/1.1", "h2c" or "h2".
    pub protocol: String,
    pub header_bytes: Option<i64>,
    /// HTTP/2: the HPACK header block of the check's answer.
    pub header_block: Option<i64>,
    pub body_bytes: Option<i64>,
    pub total_bytes: Option<i64>,
    pub fair: Option<bool>,
    /// The worst rule grade (`pass`, `warn`, `fail`) when the check said.
    pub grade: Option<String>,
    pub rules: Vec<RuleGrade>,
    pub framing: Option<String>,
    pub date: Option<String>,
    pub ipv4: Option<bool>,
    pub ipv6: Option<bool>,
    /// Total bytes minus the reference server's.
    pub vs_reference: Option<i64>,
    /// Header names in the order sent.
    pub header_names: Vec<String>,
    /// The response exactly as received by the check (lossy UTF-8), if kept.
    pub raw_response: Option<String>,
    /// Set when `parity_json` was present but not readable.
    pub note: Option<String>,
}

impl ParityRow {
    fn of(c: &CaseRow) -> ParityRow {
        let mut row = ParityRow {
            server: c.server.clone(),
            mode: c.mode.clone(),
            response: c.response.clone(),
            scenario: c.scenario.clone(),
            protocol: if c.protocol.is_empty() {
                "http/1.1".into()
            } else {
                c.protocol.clone()
            },
            header_bytes: c.header_bytes,
            header_block: None,
            body_bytes: c.body_bytes,
            total_bytes: match (c.header_bytes, c.body_bytes) {
                (Some(h), Some(b)) => Some(h + b),
                _ => None,
            },
            fair: c.fair,
            grade: None,
            rules: Vec::new(),
            framing: None,
            date: None,
            ipv4: None,
            ipv6: None,
            vs_reference: None,
            header_names: Vec::new(),
            raw_response: None,
            note: None,
        };
        let Some(text) = c.parity_json.as_deref() else {
            return row;
        };
        let v: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => {
                row.note = Some(format!("parity_json is not JSON: {e}"));
                return row;
            }
        };
        row.grade = v.get("grade").and_then(Value::as_str).map(str::to_string);
        if let Some(rules) = v.get("rules").and_then(Value::as_array) {
            row.rules = rules
                .iter()
                .map(|r| RuleGrade {
                    rule: r.get("rule").map(value_text).unwrap_or_default(),
                    grade: r.get("grade").map(value_text).unwrap_or_default(),
                    detail: r.get("detail").map(value_text).unwrap_or_default(),
                })
                .collect();
        }
        // The check's comparison row, or the same fields at the top level.
        let r = v.get("row").filter(|r| r.is_object()).unwrap_or(&v);
        row.framing = r.get("framing").and_then(Value::as_str).map(str::to_string);
        row.date = r.get("date").and_then(Value::as_str).map(str::to_string);
        row.ipv4 = r.get("ipv4").and_then(Value::as_bool);
        row.ipv6 = r.get("ipv6").and_then(Value::as_bool);
        row.vs_reference = r.get("vs_reference").and_then(Value::as_i64);
        row.header_block = r.get("header_block").and_then(Value::as_i64);
        if let Some(names) = r.get("header_names").and_then(Value::as_array) {
            row.header_names = names.iter().map(value_text).collect();
        }
        row.raw_response = v
            .get("raw")
            .and_then(|x| x.get("response"))
            .and_then(Value::as_str)
            .map(str::to_string);
        row
    }

    /// Rules that did not pass, as `rule: grade — detail`.
    pub fn findings(&self) -> Vec<String> {
        self.rules
            .iter()
            .filter(|r| r.grade != "pass")
            .map(|r| {
                if r.detail.is_empty() {
                    format!("{}: {}", r.rule, r.grade)
                } else {
                    format!("{}: {} — {}", r.rule, r.grade, r.detail)
                }
            })
            .collect()
    }
}

/// Each row's total bytes minus the byte reference's (the server `check`
/// compares normalized bytes with) for the same scenario and response, from
/// the stored bytes, where the stored check did not already say.
fn fill_vs_reference(parity: &mut [ParityRow]) {
    let reference = fairbench_zoo::reference::REFERENCE_SERVER;
    let totals: Vec<(String, String, i64)> = parity
        .iter()
        .filter(|p| p.server == reference)
        .filter_map(|p| Some((p.scenario.clone(), p.response.clone(), p.total_bytes?)))
        .collect();
    for p in parity.iter_mut().filter(|p| p.vs_reference.is_none()) {
        let reference_total = totals
            .iter()
            .find(|(s, r, _)| *s == p.scenario && *r == p.response)
            .map(|t| t.2);
        if let (Some(total), Some(rt)) = (p.total_bytes, reference_total) {
            p.vs_reference = Some(total - rt);
        }
    }
}

/// The load profile of a case, from `load_json` (and its label as a fallback).
#[derive(Debug, Clone, Serialize)]
pub struct LoadInfo {
    /// `closed` or `rate`.
    pub model: String,
    /// Offered requests per second (constant rate).
    pub rate: Option<f64>,
    pub connections: Option<u64>,
    pub threads: Option<u64>,
    pub duration_s: Option<f64>,
    pub warmup_s: Option<f64>,
    /// How timeouts were counted: `fairbench` (aborted, connection
    /// reopened) or `wrk` (a late answer is a timeout, connection kept).
    pub timeout_mode: String,
}

impl LoadInfo {
    pub fn parse(load_json: &str, label: &str) -> LoadInfo {
        let v: Value = serde_json::from_str(load_json).unwrap_or(Value::Null);
        let model = v
            .get("model")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| label.split_whitespace().next().unwrap_or("").to_string());
        let rate = v.get("rate").and_then(Value::as_f64).or_else(|| {
            // "rate 5000/s c=50 t=1"
            label
                .split_whitespace()
                .nth(1)
                .and_then(|w| w.strip_suffix("/s"))
                .and_then(|n| n.parse().ok())
        });
        LoadInfo {
            model,
            rate,
            connections: v.get("connections").and_then(Value::as_u64),
            threads: v.get("threads").and_then(Value::as_u64),
            duration_s: v.get("duration_s").and_then(Value::as_f64),
            warmup_s: v.get("warmup_s").and_then(Value::as_f64),
            timeout_mode: v
                .get("timeout_mode")
                .and_then(Value::as_str)
                .unwrap_or("fairbench")
                .to_string(),
        }
    }

    pub fn is_closed(&self) -> bool {
        self.model == "closed"
    }
}

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
    pub case_ids: Vec<i64>,
    /// A URL case's URL, method, load and stages; left out for zoo cases.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<super::url_case::UrlLoad>,
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

/// The latency percentile spectrum of a case: every repetition's histogram
/// merged, read at evenly spaced "nines".
#[derive(Debug, Clone, Serialize)]
pub struct Spectrum {
    pub count: u64,
    pub points: Vec<SpectrumPoint>,
    pub max_us: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct SpectrumPoint {
    /// 0 … 100.
    pub percentile: f64,
    /// −log10(1 − percentile/100): 1 = 90 %, 2 = 99 %, …
    pub nines: f64,
    pub latency_us: u64,
}

/// Steps per nine and the deepest nine drawn.
pub const NINES_STEP: f64 = 0.25;
pub const NINES_MAX: f64 = 6.0;

impl Spectrum {
    pub fn of(h: &hdrhistogram::Histogram<u64>) -> Option<Spectrum> {
        let count = h.len();
        if count == 0 {
            return None;
        }
        // Deeper than log10(count) nines there is no sample to tell.
        let deepest = ((count as f64).log10().min(NINES_MAX) / NINES_STEP).floor() as usize;
        let points = (0..=deepest)
            .map(|i| {
                let nines = i as f64 * NINES_STEP;
                let q = 1.0 - 10f64.powf(-nines);
                SpectrumPoint {
                    percentile: round_to(q * 100.0, 6),
                    nines,
                    latency_us: h.value_at_quantile(q),
                }
            })
            .collect();
        Some(Spectrum {
            count,
            points,
            max_us: h.max(),
        })
    }
}

fn round_to(v: f64, decimals: i32) -> f64 {
    let m = 10f64.powi(decimals);
    (v * m).round() / m
}

/// Requests per second, second by second, warm-up included, of the first
/// finished repetition.
#[derive(Debug, Clone, Serialize)]
pub struct Warmup {
    pub repetition: i64,
    pub points: Vec<WarmupPoint>,
}

#[derive(Debug, Clone, Serialize)]
pub struct WarmupPoint {
    pub second: i64,
    pub phase: String,
    /// Seconds since the load began (warm-up included).
    pub t_s: f64,
    pub rps: f64,
    pub p99_us: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct SweepInfo {
    /// The stored sweep, as the database holds it.
    #[serde(flatten)]
    pub row: SweepRow,
    pub palette_index: usize,
    pub steps: Vec<SweepStep>,
}

/// A sweep is read like its row, plus what the report adds.
impl std::ops::Deref for SweepInfo {
    type Target = SweepRow;
    fn deref(&self) -> &SweepRow {
        &self.row
    }
}

impl SweepInfo {
    pub fn variant_label(&self) -> String {
        format!("{} {}/{}", self.server, self.mode, self.response)
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct SweepStep {
    pub offered_rps: f64,
    pub achieved_rps: Option<f64>,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    /// Whether the step met the objective, when the objective's quantile is
    /// one the database keeps (p50, p90, p99, p99.9).
    pub met: Option<bool>,
    pub load: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Problem {
    pub key: CaseKey,
    pub repetition: i64,
    pub state: String,
    pub reason: Option<String>,
    pub log_tail: Option<String>,
}

/// Reads `run` from the store into a report.
pub fn build(store: &Store, run: &RunRow) -> anyhow::Result<RunReport> {
    build_with(store, run, None)
}

/// As [`build`], with the ratios relative to `reference` (`--reference`)
/// instead of the suite's.
pub fn build_with(
    store: &Store,
    run: &RunRow,
    reference: Option<&str>,
) -> anyhow::Result<RunReport> {
    build_for(store, run, reference, None)
}

/// The report of `only` the servers it matches (`report --servers`): their
/// cases, their ratios — paired with the reference over the whole run, so
/// that leaving the reference out of the view does not lose them — and a
/// note saying the report is a selection.
pub fn build_for(
    store: &Store,
    run: &RunRow,
    reference: Option<&str>,
    only: Option<&fairbench_zoo::NameFilter>,
) -> anyhow::Result<RunReport> {
    let mut cases = store.cases(run.id)?;
    let mut paired = paired_of(run, &cases, reference)?;
    if let Some(f) = only {
        let all: BTreeSet<String> = cases.iter().map(|c| c.server.clone()).collect();
        cases.retain(|c| f.matches(&c.server));
        if cases.is_empty() {
            return Err(crate::usage::usage(format!(
                "--servers: no server of run {} matches it (its servers: {})",
                run.id,
                all.into_iter().collect::<Vec<_>>().join(", ")
            )));
        }
        paired.rows.retain(|r| f.matches(&r.key.server));
        let shown: BTreeSet<&str> = cases.iter().map(|c| c.server.as_str()).collect();
        paired.notes.push(format!(
            "this report shows {} of the run's {} servers ({}, selected with --servers); each ratio is still paired with the reference measured in the same run",
            shown.len(),
            all.len(),
            shown.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    let toolchains: Value = serde_json::from_str(&run.toolchains_json).unwrap_or(Value::Null);

    let names: Vec<String> = cases
        .iter()
        .map(|c| c.server.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let servers = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let c = cases
                .iter()
                .find(|c| &c.server == name)
                .expect("server of a case");
            ServerInfo {
                name: name.clone(),
                language: c.language.clone(),
                framework: c.framework.clone(),
                palette_index: i,
                colour: palette::colour(i),
                toolchain: toolchains.get(name).cloned(),
            }
        })
        .collect();

    // Variants of each server in plan order: their dash patterns.
    let mut variants: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for c in &cases {
        let v = variants.entry(c.server.clone()).or_default();
        let mr = (c.mode.clone(), c.response.clone());
        if !v.contains(&mr) {
            v.push(mr);
        }
    }

    let mut parity: Vec<ParityRow> = Vec::new();
    let mut order: Vec<(CaseKey, Option<String>)> = Vec::new();
    let mut by_key: BTreeMap<(CaseKey, Option<String>), Vec<&CaseRow>> = BTreeMap::new();
    let mut problems = Vec::new();
    for c in &cases {
        let k = (CaseKey::of(c), c.sweep.clone());
        if !by_key.contains_key(&k) {
            order.push(k.clone());
        }
        by_key.entry(k).or_default().push(c);
        let has_parity = c.parity_json.is_some() || c.header_bytes.is_some() || c.fair.is_some();
        let seen = parity.iter().any(|p| {
            p.server == c.server
                && p.mode == c.mode
                && p.response == c.response
                && p.scenario == c.scenario
                && p.protocol == ParityRow::of(c).protocol
        });
        if has_parity && !seen {
            parity.push(ParityRow::of(c));
        }
        if c.state != "done" {
            problems.push(Problem {
                key: CaseKey::of(c),
                repetition: c.repetition,
                state: c.state.clone(),
                reason: c.reason.clone(),
                log_tail: c.log_tail.clone(),
            });
        }
    }

    fill_vs_reference(&mut parity);

    let mut groups = Vec::new();
    for k in order {
        let rows = &by_key[&k];
        let (key, sweep) = k;
        let palette_index = palette::index(&names, &key.server);
        let variant_index = variants[&key.server]
            .iter()
            .position(|(m, r)| *m == key.mode && *r == key.response)
            .unwrap_or(0);
        groups.push(group(
            store,
            key,
            sweep,
            rows,
            palette_index,
            variant_index,
        )?);
    }

    let sweeps = store
        .sweeps(run.id)?
        .into_iter()
        .filter(|s| only.is_none_or(|f| f.matches(&s.server)))
        .map(|s| sweep_info(s, &groups, &names))
        .collect();

    Ok(RunReport {
        run: RunInfo {
            id: run.id,
            suite: run.suite.clone(),
            state: run.state.clone(),
            reason: run.reason.clone(),
            started_at: run.started_at.clone(),
            finished_at: run.finished_at.clone(),
            fairbench_version: run.fairbench_version.clone(),
            git_revision: run.git_revision.clone(),
            host: serde_json::from_str(&run.host_json).unwrap_or(Value::Null),
            planned_cases: run.planned_cases,
            cases_done: run.cases_done,
            cases_failed: run.cases_failed,
            cases_skipped: run.cases_skipped,
            suite_toml: run.suite_toml.clone(),
        },
        servers,
        parity,
        groups,
        sweeps,
        problems,
        method: METHOD,
        paired,
        machines: Vec::new(),
    })
}

/// The run's paired ratios; `reference` must name a server of the run.
pub fn paired_of(
    run: &RunRow,
    cases: &[CaseRow],
    reference: Option<&str>,
) -> anyhow::Result<super::paired::Paired> {
    let (pairing, note) =
        crate::suite::pairing::Pairing::from_stored_suite(&run.suite_toml, reference)
            .map_err(crate::usage::usage)?;
    if reference.is_some()
        && !cases.iter().any(|c| {
            c.sweep.is_none() && pairing.reference.matches(&c.server, &c.mode, &c.response)
        })
    {
        let mut have: Vec<String> = cases
            .iter()
            .map(|c| format!("{}/{}/{}", c.server, c.mode, c.response))
            .collect();
        have.sort();
        have.dedup();
        return Err(crate::usage::usage(format!(
            "--reference {}: no case of run {} matches it (its variants: {})",
            pairing.reference.label(),
            run.id,
            have.join(", ")
        )));
    }
    let mut p = super::paired::build(cases, &pairing);
    p.notes.extend(note);
    Ok(p)
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

fn group(
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

    let mut spectrum = None;
    let mut warmup = None;
    if sweep.is_none() && !done.is_empty() {
        let mut merged: Option<hdrhistogram::Histogram<u64>> = None;
        for c in &done {
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
        spectrum = merged.as_ref().and_then(Spectrum::of);
        let c = done[0];
        let samples = store.samples(c.id)?;
        if !samples.is_empty() {
            warmup = Some(Warmup {
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
            });
        }
    }

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
        case_ids: rows.iter().map(|c| c.id).collect(),
        url: super::url_case::UrlLoad::of(first),
        run_id: None,
        key,
    })
}

fn sweep_info(s: SweepRow, groups: &[Group], names: &[String]) -> SweepInfo {
    let mut steps: Vec<SweepStep> = groups
        .iter()
        .filter(|g| g.sweep.as_deref() == Some(s.sweep.as_str()))
        .map(|g| {
            let p = |x: &Option<Summary>| x.as_ref().map(|s| s.median);
            let at_quantile = match (s.slo_quantile * 1000.0).round() as i64 {
                500 => p(&g.lat_p50),
                900 => p(&g.lat_p90),
                990 => p(&g.lat_p99),
                999 => p(&g.lat_p999),
                _ => None,
            };
            SweepStep {
                offered_rps: g.load.rate.unwrap_or(f64::NAN),
                achieved_rps: p(&g.rps),
                p50_us: p(&g.lat_p50),
                p99_us: p(&g.lat_p99),
                met: at_quantile.map(|v| v <= s.slo_us as f64),
                load: g.key.load.clone(),
            }
        })
        .collect();
    steps.sort_by(|a, b| a.offered_rps.total_cmp(&b.offered_rps));
    SweepInfo {
        palette_index: palette::index(names, &s.server),
        row: s,
        steps,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::{resolve_run, RunSel};
    use crate::report::fixture;

    #[test]
    fn the_fixture_aggregates_as_expected() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        fixture::standard_db(&path);
        let store = Store::open_existing(&path).unwrap();
        let run = resolve_run(&store, RunSel::Id(1)).unwrap();
        let r = build(&store, &run).unwrap();
        assert_eq!(
            r.servers
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>(),
            ["dart-shelf", "go-nethttp"]
        );
        assert_eq!(r.groups.len(), 18);
        assert_eq!(r.groups.iter().filter(|g| g.is_sweep_step()).count(), 6);
        assert_eq!(r.parity.len(), 6);
        assert_eq!(r.problems.len(), 1);
        let failed = r.groups.iter().find(|g| g.failed == 1).unwrap();
        assert_eq!((failed.planned, failed.done), (3, 2));
        let rps = failed.rps.as_ref().unwrap();
        assert_eq!((rps.n, rps.confidence), (2, 0.5));
        let go = &r.groups[0];
        assert_eq!(go.label, "go-nethttp default/normalized");
        assert_eq!(go.rps.as_ref().unwrap().median, 100_000.0);
        let sp = go.spectrum.as_ref().unwrap();
        assert_eq!(sp.count, 60_000);
        assert_eq!(sp.points.len(), 20, "0 … 4.75 nines for 60 000 samples");
        assert_eq!(go.warmup.as_ref().unwrap().points.len(), 13);
        assert_eq!(r.sweeps.len(), 2);
        let offered: Vec<f64> = r.sweeps[0].steps.iter().map(|s| s.offered_rps).collect();
        assert_eq!(offered, [1_000.0, 2_000.0, 4_000.0]);
        assert_eq!(
            r.sweeps[1].steps.iter().map(|s| s.met).collect::<Vec<_>>(),
            [Some(true), Some(true), Some(false)]
        );
    }

    #[test]
    fn load_info_falls_back_to_the_label() {
        let l = LoadInfo::parse("not json", "rate 5000/s c=50 t=1");
        assert_eq!((l.model.as_str(), l.rate), ("rate", Some(5000.0)));
        assert!(LoadInfo::parse("{}", "closed c=50 t=1").is_closed());
    }

    #[test]
    fn the_byte_difference_to_the_reference_comes_from_the_stored_bytes() {
        let row = |server: &str, response: &str, total: Option<i64>, vs: Option<i64>| ParityRow {
            server: server.into(),
            mode: "native".into(),
            response: response.into(),
            scenario: "static".into(),
            protocol: "http/1.1".into(),
            header_bytes: None,
            header_block: None,
            body_bytes: None,
            total_bytes: total,
            fair: None,
            grade: None,
            rules: Vec::new(),
            framing: None,
            date: None,
            ipv4: None,
            ipv6: None,
            vs_reference: vs,
            header_names: Vec::new(),
            raw_response: None,
            note: None,
        };
        let mut p = vec![
            row("go-nethttp", "normalized", Some(130), None),
            row("node-http", "normalized", Some(142), None),
            row("node-http", "default", Some(200), None),
            row("dart-io", "normalized", Some(150), Some(7)),
            row("rust-hyper", "normalized", None, None),
        ];
        fill_vs_reference(&mut p);
        let vs: Vec<Option<i64>> = p.iter().map(|r| r.vs_reference).collect();
        // No default reference row: no difference; a stored one is kept.
        assert_eq!(vs, [Some(0), Some(12), None, Some(7), None]);
    }
}
