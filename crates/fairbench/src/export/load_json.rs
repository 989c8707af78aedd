//! `fairbench load --json`: the schema documented in docs/load-json.md.

use fairbench_engine::{
    ErrorCounts, LatencySummary, Ledger, LoadModel, Outcome, Schedule, SecondSample, Sockets,
    Throughput,
};
use serde::Serialize;

#[derive(Serialize)]
pub struct LoadJson<'a> {
    pub fairbench_version: &'static str,
    pub url: &'a str,
    /// "closed" or "rate".
    pub mode: &'static str,
    pub connections: usize,
    pub threads: usize,
    pub pipeline: usize,
    pub warmup_s: f64,
    pub duration_s: f64,
    pub timeout_s: f64,
    /// Every request of the measured window and how it ended:
    /// planned = answered + connect + write + read + parse + timeout + unanswered.
    pub ledger: Ledger,
    /// Answered requests of the window (= ledger.answered).
    pub requests: u64,
    pub rps: f64,
    pub throughput: Throughput,
    /// Every request of the window: answered ones from their planned time,
    /// unanswered ones as at least the timeout.
    pub latency_us: LatencySummary,
    /// Answered requests only.
    pub answered_latency_us: LatencySummary,
    pub uncorrected_latency_us: LatencySummary,
    pub send_lateness_us: Option<LatencySummary>,
    pub schedule: Option<&'a Schedule>,
    pub errors: ErrorCounts,
    pub connections_stats: Sockets,
    pub bytes_read: u64,
    pub timeouts_per_million: f64,
    pub generator_cpu_s: f64,
    pub generator_cpu_us_per_request: Option<f64>,
    pub generator_busy_fraction: f64,
    pub generator_thread_busy: &'a [f64],
    /// Share of the machine's CPU time stolen by the hypervisor during the run.
    pub host_steal_fraction: Option<f64>,
    pub saturated: bool,
    pub interrupted: bool,
    pub warnings: Vec<String>,
    pub series: &'a [SecondSample],
}

impl<'a> LoadJson<'a> {
    pub fn new(url: &'a str, o: &'a Outcome) -> LoadJson<'a> {
        LoadJson {
            fairbench_version: env!("CARGO_PKG_VERSION"),
            url,
            mode: match o.model {
                LoadModel::ClosedLoop => "closed",
                LoadModel::ConstantRate { .. } => "rate",
            },
            connections: o.connections,
            threads: o.threads,
            pipeline: o.pipeline,
            warmup_s: o.warmup_s,
            duration_s: o.measured_s,
            timeout_s: o.timeout_s,
            ledger: o.ledger(),
            requests: o.requests,
            rps: o.rps(),
            throughput: o.throughput(),
            latency_us: o.latency_summary(),
            answered_latency_us: o.answered_summary(),
            uncorrected_latency_us: o.uncorrected_summary(),
            send_lateness_us: o.lateness_summary(),
            schedule: o.schedule.as_ref(),
            errors: o.errors,
            connections_stats: o.sockets,
            bytes_read: o.bytes_read,
            timeouts_per_million: o.timeouts_per_million(),
            generator_cpu_s: o.generator.cpu_s,
            generator_cpu_us_per_request: o.cpu_us_per_request(),
            generator_busy_fraction: o.generator.busy_fraction,
            generator_thread_busy: &o.generator.thread_busy,
            host_steal_fraction: o.generator.steal_fraction,
            saturated: o.generator.saturated,
            interrupted: o.interrupted,
            warnings: o.warnings(),
            series: &o.series,
        }
    }
}
