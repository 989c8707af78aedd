//! Row types of the results database, and their mapping to SQL.

use hdrhistogram::Histogram;
use rusqlite::{params, Row, Transaction};
use serde::Serialize;

/// A run about to start.
pub struct NewRun {
    pub started_at: String,
    pub suite: String,
    pub suite_toml: String,
    pub git_revision: Option<String>,
    pub host_json: String,
    pub toolchains_json: String,
    pub planned_cases: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunRow {
    pub id: i64,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub suite: String,
    #[serde(skip)]
    pub suite_toml: String,
    pub state: String,
    pub reason: Option<String>,
    pub fairbench_version: String,
    pub git_revision: Option<String>,
    #[serde(skip)]
    pub host_json: String,
    #[serde(skip)]
    pub toolchains_json: String,
    pub planned_cases: i64,
    pub cases_done: i64,
    pub cases_failed: i64,
    pub cases_skipped: i64,
    #[serde(skip)]
    pub pid: Option<i64>,
}

impl RunRow {
    pub(crate) const SELECT: &'static str = "SELECT r.id, r.started_at, r.finished_at, r.suite,
        r.suite_toml, r.state, r.reason, r.fairbench_version, r.git_revision, r.host_json,
        r.toolchains_json, r.planned_cases,
        (SELECT count(*) FROM cases c WHERE c.run_id = r.id AND c.state = 'done'),
        (SELECT count(*) FROM cases c WHERE c.run_id = r.id AND c.state = 'failed'),
        (SELECT count(*) FROM cases c WHERE c.run_id = r.id AND c.state = 'skipped'),
        r.pid FROM runs r";

    pub(crate) fn from_row(r: &Row<'_>) -> rusqlite::Result<RunRow> {
        Ok(RunRow {
            id: r.get(0)?,
            started_at: r.get(1)?,
            finished_at: r.get(2)?,
            suite: r.get(3)?,
            suite_toml: r.get(4)?,
            state: r.get(5)?,
            reason: r.get(6)?,
            fairbench_version: r.get(7)?,
            git_revision: r.get(8)?,
            host_json: r.get(9)?,
            toolchains_json: r.get(10)?,
            planned_cases: r.get(11)?,
            cases_done: r.get(12)?,
            cases_failed: r.get(13)?,
            cases_skipped: r.get(14)?,
            pid: r.get(15)?,
        })
    }
}

/// A case as planned, before it runs.
#[derive(Debug, Clone)]
pub struct PlannedCase {
    pub seq: usize,
    pub server: String,
    pub language: String,
    pub framework: String,
    pub mode: String,
    pub response: String,
    pub variant_params_json: String,
    pub scenario: String,
    pub cores: usize,
    pub cores_requested: String,
    pub load_label: String,
    pub load_json: String,
    pub sweep: Option<String>,
    pub repetition: usize,
}

/// A stored case with its figures (None until measured).
#[derive(Debug, Clone, Default, Serialize)]
pub struct CaseRow {
    pub id: i64,
    pub run_id: i64,
    pub seq: i64,
    pub server: String,
    pub language: String,
    pub framework: String,
    pub mode: String,
    pub response: String,
    pub variant_params_json: String,
    pub scenario: String,
    pub cores: i64,
    pub cores_requested: String,
    pub server_cpus: Option<String>,
    pub generator_cpus: Option<String>,
    pub cpus_shared: bool,
    pub load_label: String,
    pub load_json: String,
    pub sweep: Option<String>,
    pub repetition: i64,
    pub state: String,
    pub reason: Option<String>,
    pub log_tail: Option<String>,
    pub fair: Option<bool>,
    pub parity_json: Option<String>,
    pub header_bytes: Option<i64>,
    pub body_bytes: Option<i64>,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub requests: Option<i64>,
    pub duration_s: Option<f64>,
    pub rps: Option<f64>,
    pub rps_stdev: Option<f64>,
    pub rps_max: Option<f64>,
    pub bytes_read: Option<i64>,
    pub err_connect: Option<i64>,
    pub err_read: Option<i64>,
    pub err_write: Option<i64>,
    pub err_timeout: Option<i64>,
    pub err_status: Option<i64>,
    pub err_parse: Option<i64>,
    pub timeouts_per_million: Option<f64>,
    pub lat_min: Option<i64>,
    pub lat_mean: Option<f64>,
    pub lat_stdev: Option<f64>,
    pub lat_max: Option<i64>,
    pub lat_p50: Option<i64>,
    pub lat_p75: Option<i64>,
    pub lat_p90: Option<i64>,
    pub lat_p99: Option<i64>,
    pub lat_p999: Option<i64>,
    pub lat_p9999: Option<i64>,
    pub unc_p50: Option<i64>,
    pub unc_p99: Option<i64>,
    pub lateness_p99: Option<i64>,
    pub generator_cpu_s: Option<f64>,
    pub generator_busy: Option<f64>,
    pub saturated: Option<bool>,
    pub server_cpu_s: Option<f64>,
    pub server_cpu_us_per_request: Option<f64>,
    pub server_rss_peak: Option<i64>,
    pub server_rss_mean: Option<i64>,
    pub server_threads_max: Option<i64>,
    pub warnings_json: String,
}

impl CaseRow {
    /// Errors of every class together; None until the case has figures.
    pub fn errors_total(&self) -> Option<i64> {
        let parts = [
            self.err_connect,
            self.err_read,
            self.err_write,
            self.err_timeout,
            self.err_status,
            self.err_parse,
        ];
        parts
            .iter()
            .any(Option::is_some)
            .then(|| parts.iter().map(|v| v.unwrap_or(0)).sum())
    }

    pub(crate) const SELECT: &'static str = "SELECT id, run_id, seq, server, language, framework,
        mode, response, variant_params_json, scenario, cores, cores_requested, server_cpus,
        generator_cpus, cpus_shared, load_label, load_json, sweep, repetition, state, reason,
        log_tail, fair, parity_json, header_bytes, body_bytes, started_at, finished_at, requests,
        duration_s, rps, rps_stdev, rps_max, bytes_read, err_connect, err_read, err_write,
        err_timeout, err_status, err_parse, timeouts_per_million, lat_min, lat_mean, lat_stdev,
        lat_max, lat_p50, lat_p75, lat_p90, lat_p99, lat_p999, lat_p9999, unc_p50, unc_p99,
        lateness_p99, generator_cpu_s, generator_busy, saturated, server_cpu_s,
        server_cpu_us_per_request, server_rss_peak, server_rss_mean, server_threads_max,
        warnings_json FROM cases";

    pub(crate) fn from_row(r: &Row<'_>) -> rusqlite::Result<CaseRow> {
        Ok(CaseRow {
            id: r.get(0)?,
            run_id: r.get(1)?,
            seq: r.get(2)?,
            server: r.get(3)?,
            language: r.get(4)?,
            framework: r.get(5)?,
            mode: r.get(6)?,
            response: r.get(7)?,
            variant_params_json: r.get(8)?,
            scenario: r.get(9)?,
            cores: r.get(10)?,
            cores_requested: r.get(11)?,
            server_cpus: r.get(12)?,
            generator_cpus: r.get(13)?,
            cpus_shared: r.get::<_, i64>(14)? != 0,
            load_label: r.get(15)?,
            load_json: r.get(16)?,
            sweep: r.get(17)?,
            repetition: r.get(18)?,
            state: r.get(19)?,
            reason: r.get(20)?,
            log_tail: r.get(21)?,
            fair: r.get::<_, Option<i64>>(22)?.map(|v| v != 0),
            parity_json: r.get(23)?,
            header_bytes: r.get(24)?,
            body_bytes: r.get(25)?,
            started_at: r.get(26)?,
            finished_at: r.get(27)?,
            requests: r.get(28)?,
            duration_s: r.get(29)?,
            rps: r.get(30)?,
            rps_stdev: r.get(31)?,
            rps_max: r.get(32)?,
            bytes_read: r.get(33)?,
            err_connect: r.get(34)?,
            err_read: r.get(35)?,
            err_write: r.get(36)?,
            err_timeout: r.get(37)?,
            err_status: r.get(38)?,
            err_parse: r.get(39)?,
            timeouts_per_million: r.get(40)?,
            lat_min: r.get(41)?,
            lat_mean: r.get(42)?,
            lat_stdev: r.get(43)?,
            lat_max: r.get(44)?,
            lat_p50: r.get(45)?,
            lat_p75: r.get(46)?,
            lat_p90: r.get(47)?,
            lat_p99: r.get(48)?,
            lat_p999: r.get(49)?,
            lat_p9999: r.get(50)?,
            unc_p50: r.get(51)?,
            unc_p99: r.get(52)?,
            lateness_p99: r.get(53)?,
            generator_cpu_s: r.get(54)?,
            generator_busy: r.get(55)?,
            saturated: r.get::<_, Option<i64>>(56)?.map(|v| v != 0),
            server_cpu_s: r.get(57)?,
            server_cpu_us_per_request: r.get(58)?,
            server_rss_peak: r.get(59)?,
            server_rss_mean: r.get(60)?,
            server_threads_max: r.get(61)?,
            warnings_json: r.get(62)?,
        })
    }
}

/// Everything a finished case stores.
pub struct CaseFigures {
    pub outcome_requests: u64,
    pub duration_s: f64,
    pub rps: f64,
    pub rps_stdev: f64,
    pub rps_max: f64,
    pub bytes_read: u64,
    pub errors: fairbench_engine::ErrorCounts,
    pub timeouts_per_million: f64,
    pub latency_summary: fairbench_engine::LatencySummary,
    pub unc_p50: u64,
    pub unc_p99: u64,
    pub lateness_p99: Option<u64>,
    pub generator_cpu_s: f64,
    pub generator_busy: f64,
    pub saturated: bool,
    pub server_cpu_s: Option<f64>,
    pub server_rss_peak: Option<u64>,
    pub server_rss_mean: Option<u64>,
    pub server_threads_max: Option<u64>,
    /// Share of the machine's CPU time the hypervisor stole during the load.
    pub steal_fraction: Option<f64>,
    /// The server's control group's CPU seconds over the measurement
    /// (every process it ever had); `None` without a group.
    pub server_group_cpu_s: Option<f64>,
    /// The group's memory high-water mark since the server started.
    pub server_group_memory_peak: Option<u64>,
    /// How the load generator's threads were held to their CPUs, where
    /// they were pinned (`cgroup-v1`, `affinity`).
    pub generator_containment: Option<String>,
    pub generator_cpuset: Option<String>,
    pub warnings: Vec<String>,
    pub latency: Histogram<u64>,
    pub uncorrected: Histogram<u64>,
    pub lateness: Option<Histogram<u64>>,
    pub samples: Vec<SampleRow>,
}

pub(crate) fn update_figures(
    tx: &Transaction<'_>,
    case: i64,
    f: &CaseFigures,
) -> rusqlite::Result<()> {
    let l = &f.latency_summary;
    let per_req = |cpu: Option<f64>| match (cpu, f.outcome_requests) {
        (Some(cpu), n) if n > 0 => Some(cpu * 1e6 / n as f64),
        _ => None,
    };
    let cpu_per_req = per_req(f.server_cpu_s);
    tx.execute(
        "UPDATE cases SET state = 'done', reason = NULL, finished_at = ?2, requests = ?3,
            duration_s = ?4, rps = ?5, rps_stdev = ?6, rps_max = ?7, bytes_read = ?8,
            err_connect = ?9, err_read = ?10, err_write = ?11, err_timeout = ?12, err_status = ?13,
            err_parse = ?14, timeouts_per_million = ?15, lat_min = ?16, lat_mean = ?17,
            lat_stdev = ?18, lat_max = ?19, lat_p50 = ?20, lat_p75 = ?21, lat_p90 = ?22,
            lat_p99 = ?23, lat_p999 = ?24, lat_p9999 = ?25, unc_p50 = ?26, unc_p99 = ?27,
            lateness_p99 = ?28, generator_cpu_s = ?29, generator_busy = ?30, saturated = ?31,
            server_cpu_s = ?32, server_cpu_us_per_request = ?33, server_rss_peak = ?34,
            server_rss_mean = ?35, server_threads_max = ?36, warnings_json = ?37,
            steal_fraction = ?38, server_group_cpu_s = ?39, server_group_cpu_us_per_request = ?40,
            server_group_memory_peak = ?41, generator_containment = ?42, generator_cpuset = ?43
         WHERE id = ?1",
        params![
            case,
            super::now_rfc3339(),
            f.outcome_requests as i64,
            f.duration_s,
            f.rps,
            f.rps_stdev,
            f.rps_max,
            f.bytes_read as i64,
            f.errors.connect as i64,
            f.errors.read as i64,
            f.errors.write as i64,
            f.errors.timeout as i64,
            f.errors.status as i64,
            f.errors.parse as i64,
            f.timeouts_per_million,
            l.min as i64,
            l.mean,
            l.stdev,
            l.max as i64,
            l.p50 as i64,
            l.p75 as i64,
            l.p90 as i64,
            l.p99 as i64,
            l.p999 as i64,
            l.p9999 as i64,
            f.unc_p50 as i64,
            f.unc_p99 as i64,
            f.lateness_p99.map(|v| v as i64),
            f.generator_cpu_s,
            f.generator_busy,
            f.saturated as i64,
            f.server_cpu_s,
            cpu_per_req,
            f.server_rss_peak.map(|v| v as i64),
            f.server_rss_mean.map(|v| v as i64),
            f.server_threads_max.map(|v| v as i64),
            serde_json::to_string(&f.warnings).unwrap_or_else(|_| "[]".into()),
            f.steal_fraction,
            f.server_group_cpu_s,
            per_req(f.server_group_cpu_s),
            f.server_group_memory_peak.map(|v| v as i64),
            f.generator_containment,
            f.generator_cpuset
        ],
    )?;
    Ok(())
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct SampleRow {
    pub second: i64,
    pub phase: String,
    pub start_s: f64,
    pub duration_s: f64,
    pub requests: u64,
    pub errors: u64,
    pub bytes: u64,
    pub p50_us: u64,
    pub p99_us: u64,
    #[serde(skip)]
    pub interval_hist: Option<Vec<u8>>,
    pub server_cpu: Option<f64>,
    pub server_rss: Option<u64>,
    pub server_threads: Option<u64>,
}

impl SampleRow {
    pub(crate) const SELECT: &'static str = "SELECT second, phase, start_s, duration_s, requests,
        errors, bytes, p50_us, p99_us, interval_hist, server_cpu, server_rss, server_threads
        FROM samples";

    pub(crate) fn from_row(r: &Row<'_>) -> rusqlite::Result<SampleRow> {
        Ok(SampleRow {
            second: r.get(0)?,
            phase: r.get(1)?,
            start_s: r.get(2)?,
            duration_s: r.get(3)?,
            requests: r.get::<_, i64>(4)? as u64,
            errors: r.get::<_, i64>(5)? as u64,
            bytes: r.get::<_, i64>(6)? as u64,
            p50_us: r.get::<_, i64>(7)? as u64,
            p99_us: r.get::<_, i64>(8)? as u64,
            interval_hist: r.get(9)?,
            server_cpu: r.get(10)?,
            server_rss: r.get::<_, Option<i64>>(11)?.map(|v| v as u64),
            server_threads: r.get::<_, Option<i64>>(12)?.map(|v| v as u64),
        })
    }

    pub fn rps(&self) -> f64 {
        if self.duration_s > 0.0 {
            self.requests as f64 / self.duration_s
        } else {
            0.0
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct SweepRow {
    pub sweep: String,
    pub server: String,
    pub mode: String,
    pub response: String,
    pub scenario: String,
    pub cores: i64,
    pub slo_quantile: f64,
    pub slo_us: i64,
    pub knee_rps: Option<f64>,
    pub state: String,
    pub reason: Option<String>,
}

impl SweepRow {
    pub(crate) const SELECT: &'static str = "SELECT sweep, server, mode, response, scenario, cores,
        slo_quantile, slo_us, knee_rps, state, reason FROM sweeps";

    pub(crate) fn from_row(r: &Row<'_>) -> rusqlite::Result<SweepRow> {
        Ok(SweepRow {
            sweep: r.get(0)?,
            server: r.get(1)?,
            mode: r.get(2)?,
            response: r.get(3)?,
            scenario: r.get(4)?,
            cores: r.get(5)?,
            slo_quantile: r.get(6)?,
            slo_us: r.get(7)?,
            knee_rps: r.get(8)?,
            state: r.get(9)?,
            reason: r.get(10)?,
        })
    }
}
