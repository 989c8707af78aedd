//! The report's results table as CSV: one row per case (server × variant ×
//! scenario × cores × load, sweep steps included), repetitions aggregated as
//! in the HTML. Quoting is the csv crate's (RFC 4180), so any string a
//! server sent stays one field, its control and bidi characters shown as
//! escapes.

use super::csv_ratios;
use crate::report::model::{Group, RunReport};
use crate::report::stats::Summary;

pub const COLUMNS: [&str; 70] = [
    "run_id",
    "host",
    "server",
    "language",
    "framework",
    "mode",
    "response",
    "scenario",
    "protocol",
    "step",
    "cores",
    "cores_requested",
    "load",
    "load_model",
    "offered_rps",
    "sweep",
    "planned",
    "done",
    "failed",
    "fair",
    "header_bytes",
    "body_bytes",
    "rps_median",
    "rps_ci_low",
    "rps_ci_high",
    "rps_ci_level",
    "rps_values",
    "rps_stdev_1s",
    "thread_rps_mean",
    "thread_rps_stdev",
    "thread_rps_max",
    "lat_mean_us",
    "lat_stdev_us",
    "lat_p50_us",
    "lat_p90_us",
    "lat_p99_us",
    "lat_p99_ci_low_us",
    "lat_p99_ci_high_us",
    "lat_p999_us",
    "lat_max_us",
    "requests",
    "errors",
    "bytes_read",
    "transfer_bytes_per_s",
    "timeouts_per_million",
    "timeout_mode",
    "cpu_us_per_request",
    "rss_peak_bytes",
    "db_cpu_s",
    "db_cpu_us_per_request",
    "total_cpu_us_per_request",
    "db_memory_peak",
    "db_cpus",
    "db_pool",
    "wrk_lat_mean_us",
    "wrk_lat_stdev_us",
    "wrk_lat_within_stdev_pct",
    "wrk_lat_p50_us",
    "wrk_lat_p75_us",
    "wrk_lat_p90_us",
    "wrk_lat_p99_us",
    "wrk_lat_max_us",
    "wrk_requests",
    "server_cores_mean",
    "server_cores_peak",
    "generator_cores_mean",
    "saturated",
    "cpus_shared",
    "notes",
    "case_ids",
];

fn num(v: Option<f64>) -> String {
    v.filter(|v| v.is_finite())
        .map(|v| format!("{v}"))
        .unwrap_or_default()
}

fn med(s: &Option<Summary>) -> String {
    num(s.as_ref().map(|s| s.median))
}

fn bool_cell(b: Option<bool>) -> String {
    b.map(|b| if b { "1" } else { "0" }.to_string())
        .unwrap_or_default()
}

/// A group's cells, in the order of [`COLUMNS`].
fn row(r: &RunReport, g: &Group) -> Vec<String> {
    let mut cells = case_cells(r, g);
    cells.extend(measured_cells(g));
    cells.extend(resource_cells(g));
    cells.extend(wrk_cells(g));
    cells.extend(closing_cells(g));
    cells
}

/// What the case is: run, host, server, variant, scenario, cores, load,
/// its repetitions and what the check found (`run_id` … `body_bytes`).
fn case_cells(r: &RunReport, g: &Group) -> Vec<String> {
    let parity = r.parity.iter().find(|p| {
        p.server == g.key.server
            && p.mode == g.key.mode
            && p.response == g.key.response
            && p.scenario == g.key.scenario
            && (p.protocol == g.key.protocol
                || (g.key.protocol.is_empty() && p.protocol == "http/1.1"))
    });
    vec![
        g.run_id.unwrap_or(r.run.id).to_string(),
        g.key.host.clone(),
        g.key.server.clone(),
        g.language.clone(),
        g.framework.clone(),
        g.key.mode.clone(),
        g.key.response.clone(),
        g.key.scenario.clone(),
        if g.key.protocol.is_empty() {
            "http/1.1".to_string()
        } else {
            g.key.protocol.clone()
        },
        // A ladder's rung: two rungs may differ in nothing else shown here.
        g.key.step.clone(),
        g.key.cores.to_string(),
        g.cores_requested.clone(),
        g.key.load.clone(),
        g.load.model.clone(),
        num(g.load.rate),
        g.sweep.clone().unwrap_or_default(),
        g.planned.to_string(),
        g.done.to_string(),
        g.failed.to_string(),
        bool_cell(g.fair),
        num(parity.and_then(|p| p.header_bytes).map(|v| v as f64)),
        num(parity.and_then(|p| p.body_bytes).map(|v| v as f64)),
    ]
}

/// Throughput, latency, volume and errors (`rps_median` … `timeout_mode`).
fn measured_cells(g: &Group) -> Vec<String> {
    let ci =
        |s: &Option<Summary>, f: fn(&Summary) -> f64| num(s.as_ref().filter(|s| s.n >= 2).map(f));
    vec![
        med(&g.rps),
        ci(&g.rps, |s| s.low),
        ci(&g.rps, |s| s.high),
        num(g.rps.as_ref().filter(|s| s.n >= 2).map(|s| s.confidence)),
        g.rps
            .as_ref()
            .map(|s| {
                s.values
                    .iter()
                    .map(|v| format!("{v}"))
                    .collect::<Vec<_>>()
                    .join(";")
            })
            .unwrap_or_default(),
        num(g.rps_stdev_1s),
        med(&g.thread_rps),
        num(g.thread_rps_stdev),
        med(&g.thread_rps_max),
        med(&g.lat_mean),
        med(&g.lat_stdev),
        med(&g.lat_p50),
        med(&g.lat_p90),
        med(&g.lat_p99),
        ci(&g.lat_p99, |s| s.low),
        ci(&g.lat_p99, |s| s.high),
        med(&g.lat_p999),
        med(&g.lat_max),
        med(&g.requests),
        med(&g.errors),
        med(&g.bytes_read),
        med(&g.transfer_bytes_per_s),
        med(&g.timeouts_per_million),
        g.load.timeout_mode.clone(),
    ]
}

/// The server's and the database's CPU and memory
/// (`cpu_us_per_request` … `db_pool`).
fn resource_cells(g: &Group) -> Vec<String> {
    vec![
        med(&g.cpu_us_per_request),
        med(&g.rss_peak),
        // The database's columns: empty for a case without one, never 0.
        med(&g.db_cpu_s),
        med(&g.db_cpu_us_per_request),
        med(&g.total_cpu_us_per_request),
        med(&g.db_memory_peak),
        g.db_cpus.clone().unwrap_or_default(),
        num(g.db_pool.map(|p| p as f64)),
    ]
}

/// wrk's printed figures: empty unless timeouts were counted its way
/// (`wrk_lat_mean_us` … `wrk_requests`).
fn wrk_cells(g: &Group) -> Vec<String> {
    let w = g.wrk.as_ref();
    vec![
        num(w.map(|w| w.lat_mean.median)),
        num(w.map(|w| w.lat_stdev.median)),
        num(w.map(|w| w.within_stdev)),
        num(w.map(|w| w.lat_p50.median)),
        num(w.map(|w| w.lat_p75.median)),
        num(w.map(|w| w.lat_p90.median)),
        num(w.map(|w| w.lat_p99.median)),
        num(w.map(|w| w.lat_max.median)),
        num(w.map(|w| w.requests.median)),
    ]
}

/// Cores kept busy, the flags, the notes and the cases aggregated
/// (`server_cores_mean` … `case_ids`).
fn closing_cells(g: &Group) -> Vec<String> {
    let mut notes = g.flags();
    notes.extend(g.warnings.iter().cloned());
    vec![
        med(&g.server_cores_mean),
        med(&g.server_cores_peak),
        med(&g.generator_cores_mean),
        bool_cell(Some(g.saturated)),
        bool_cell(Some(g.cpus_shared)),
        notes.join("; "),
        g.case_ids
            .iter()
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(";"),
    ]
}

pub fn render(r: &RunReport) -> anyhow::Result<String> {
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::CRLF)
        .from_writer(Vec::new());
    w.write_record(COLUMNS.iter().chain(csv_ratios::COLUMNS.iter()))?;
    for g in &r.groups {
        let mut cells = row(r, g);
        cells.extend(csv_ratios::cells(r, g));
        // The csv crate quotes; what a cell shows follows the one rule, so
        // a spreadsheet or a `cat` shows a server's escapes as text.
        w.write_record(cells.iter().map(|c| fairbench_sys::text::visible(c)))?;
    }
    let bytes = w.into_inner().map_err(|e| anyhow::anyhow!("csv: {e}"))?;
    Ok(String::from_utf8(bytes)?)
}
