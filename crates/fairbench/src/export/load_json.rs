//! `fairbench load --json`: the schema documented in docs/load-json.md.

use fairbench_engine::{
    ErrorCounts, LatencySummary, LoadModel, Outcome, Schedule, SecondSample, Throughput,
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
    pub requests: u64,
    pub rps: f64,
    pub throughput: Throughput,
    pub latency_us: LatencySummary,
    pub uncorrected_latency_us: LatencySummary,
    pub send_lateness_us: Option<LatencySummary>,
    pub schedule: Option<&'a Schedule>,
    pub errors: ErrorCounts,
    pub bytes_read: u64,
    pub timeouts_per_million: f64,
    pub generator_cpu_s: f64,
    pub generator_cpu_us_per_request: Option<f64>,
    pub generator_busy_fraction: f64,
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
            requests: o.requests,
            rps: o.rps(),
            throughput: o.throughput(),
            latency_us: o.latency_summary(),
            uncorrected_latency_us: o.uncorrected_summary(),
            send_lateness_us: o.lateness_summary(),
            schedule: o.schedule.as_ref(),
            errors: o.errors,
            bytes_read: o.bytes_read,
            timeouts_per_million: o.timeouts_per_million(),
            generator_cpu_s: o.generator.cpu_s,
            generator_cpu_us_per_request: (o.requests > 0)
                .then(|| o.generator.cpu_s * 1e6 / o.requests as f64),
            generator_busy_fraction: o.generator.busy_fraction,
            host_steal_fraction: o.generator.steal_fraction,
            saturated: o.generator.saturated,
            interrupted: o.interrupted,
            warnings: o.warnings(),
            series: &o.series,
        }
    }
}
