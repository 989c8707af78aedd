//! What a finished case stores, and the one UPDATE that stores it: the
//! figures of the load, the server, the database and wrk's printed ones.

use hdrhistogram::Histogram;
use rusqlite::{named_params, Transaction};

use super::SampleRow;

/// Everything a finished case stores.
pub struct CaseFigures {
    /// Requests of the window: each answered or in one error class.
    pub planned: u64,
    pub outcome_requests: u64,
    /// The answers the rate counts (`Outcome::throughput_answers`), and so
    /// what CPU per request divides by: the CPU is the window's too.
    pub throughput_answers: u64,
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
    /// Whether the generator bounded the figures by any cause
    /// (`Outcome::generator_limited`), `saturated` being one.
    pub generator_limited: bool,
    /// Connects that failed on this machine (`local_connects`): their
    /// requests are among the errors, yet were the generator's.
    pub connect_local: u64,
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
    /// The database's figures, for a case that had one.
    pub db: Option<DbFigures>,
    /// wrk's per-thread Req/Sec (`None`: no 100 ms interval was sampled).
    pub thread_req_sec: Option<fairbench_engine::ThreadReqSec>,
    /// Answers after the timeout counted as timeouts (wrk's counting).
    pub late_answers: u64,
    /// The successes by body size (`body_sizes_json`).
    pub body_sizes: fairbench_engine::bodies::BodySizes,
    /// Of those, the ones not of the size the check proved, for a
    /// scenario that fixes its body (`body_unlike`).
    pub body_unlike: Option<u64>,
    /// What wrk 4.x would print, where timeouts were counted its way.
    pub wrk: Option<fairbench_engine::WrkFigures>,
    /// The most cores the server kept busy in one second of the measurement.
    pub server_cores_peak: Option<f64>,
    /// What QUIC did over an h3 case (handshakes, resets, closes, losses,
    /// the client's own acknowledgement and send waits), kept in the case's
    /// `load_json` as `http3`, as `load --json` prints it.
    pub http3: Option<fairbench_engine::H3Report>,
    pub warnings: Vec<String>,
    /// Every request of the window, unanswered ones included.
    pub latency: Histogram<u64>,
    /// Answered requests only.
    pub answered: Histogram<u64>,
    pub uncorrected: Histogram<u64>,
    pub lateness: Option<Histogram<u64>>,
    pub samples: Vec<SampleRow>,
}

impl CaseFigures {
    /// How long the case warmed up, from its stored warm-up seconds: what
    /// an `auto` warm-up took (a fixed one takes what it was given).
    pub fn warmup_taken(&self) -> Option<std::time::Duration> {
        let warm: f64 = self
            .samples
            .iter()
            .filter(|s| s.phase == "warmup")
            .map(|s| s.duration_s)
            .sum();
        (warm > 0.0).then(|| std::time::Duration::from_secs_f64(warm))
    }
}

/// The database's side of a case (version 7).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DbFigures {
    /// Its control group's CPU seconds over the measurement; `None`
    /// without a group, or when a reading failed.
    pub cpu_s: Option<f64>,
    /// Its group's memory high-water mark during the case.
    pub memory_peak: Option<u64>,
    /// Its cpuset as the kernel enforced it.
    pub cpus: Option<String>,
    /// `DB_POOL` the server was given.
    pub pool: usize,
}

/// Stores a finished case's figures in its row: the load's, wrk's, then
/// the database's where it had one.
pub(crate) fn update_figures(
    tx: &Transaction<'_>,
    case: i64,
    f: &CaseFigures,
) -> rusqlite::Result<()> {
    update_load_figures(tx, case, f)?;
    update_wrk_figures(tx, case, f)?;
    if let Some(h3) = &f.http3 {
        update_http3(tx, case, h3)?;
    }
    if let Some(db) = &f.db {
        update_db_figures(tx, case, db, f.per_request(db.cpu_s))?;
    }
    Ok(())
}

/// The QUIC counters join what the case planned (`load_json`): a reader
/// of a stored h3 case finds them where a `load --save` case has them.
fn update_http3(
    tx: &Transaction<'_>,
    case: i64,
    h3: &fairbench_engine::H3Report,
) -> rusqlite::Result<()> {
    let json = serde_json::to_string(h3).unwrap_or_else(|_| "{}".into());
    tx.execute(
        "UPDATE cases SET load_json = json_set(load_json, '$.http3', json(?2)) WHERE id = ?1",
        rusqlite::params![case, json],
    )?;
    Ok(())
}

impl CaseFigures {
    /// CPU seconds of the window as CPU-µs per answer of it (the ones the
    /// rate counts); None without the CPU figure or without answers.
    pub fn per_request(&self, cpu: Option<f64>) -> Option<f64> {
        match (cpu, self.throughput_answers) {
            (Some(cpu), n) if n > 0 => Some(cpu * 1e6 / n as f64),
            _ => None,
        }
    }
}

/// The case done, with the load's, the generator's and the server's figures.
fn update_load_figures(tx: &Transaction<'_>, case: i64, f: &CaseFigures) -> rusqlite::Result<()> {
    let l = &f.latency_summary;
    let cpu_per_req = f.per_request(f.server_cpu_s);
    tx.execute(
        "UPDATE cases SET state = 'done', reason = NULL, finished_at = :finished_at,
            planned = :planned, requests = :requests, duration_s = :duration_s, rps = :rps,
            rps_stdev = :rps_stdev, rps_max = :rps_max, bytes_read = :bytes_read,
            err_connect = :err_connect, err_read = :err_read, err_write = :err_write,
            err_timeout = :err_timeout, err_status = :err_status, err_parse = :err_parse,
            err_unanswered = :err_unanswered, timeouts_per_million = :timeouts_per_million,
            lat_min = :lat_min, lat_mean = :lat_mean, lat_stdev = :lat_stdev, lat_max = :lat_max,
            lat_p50 = :lat_p50, lat_p75 = :lat_p75, lat_p90 = :lat_p90, lat_p99 = :lat_p99,
            lat_p999 = :lat_p999, lat_p9999 = :lat_p9999, unc_p50 = :unc_p50, unc_p99 = :unc_p99,
            lateness_p99 = :lateness_p99, generator_cpu_s = :generator_cpu_s,
            generator_busy = :generator_busy, saturated = :saturated,
            generator_limited = :generator_limited, connect_local = :connect_local,
            server_cpu_s = :server_cpu_s, server_cpu_us_per_request = :server_cpu_us_per_request,
            server_rss_peak = :server_rss_peak, server_rss_mean = :server_rss_mean,
            server_threads_max = :server_threads_max, warnings_json = :warnings_json,
            steal_fraction = :steal_fraction, server_group_cpu_s = :server_group_cpu_s,
            server_group_cpu_us_per_request = :server_group_cpu_us_per_request,
            server_group_memory_peak = :server_group_memory_peak,
            generator_containment = :generator_containment, generator_cpuset = :generator_cpuset,
            thread_rps_mean = :thread_rps_mean, thread_rps_stdev = :thread_rps_stdev,
            thread_rps_max = :thread_rps_max, thread_rps_samples = :thread_rps_samples,
            late_answers = :late_answers, body_sizes_json = :body_sizes_json,
            body_unlike = :body_unlike
         WHERE id = :id",
        named_params! {
            ":id": case,
            ":finished_at": super::now_rfc3339(),
            ":planned": f.planned as i64,
            ":requests": f.outcome_requests as i64,
            ":duration_s": f.duration_s,
            ":rps": f.rps,
            ":rps_stdev": f.rps_stdev,
            ":rps_max": f.rps_max,
            ":bytes_read": f.bytes_read as i64,
            ":err_connect": f.errors.connect as i64,
            ":err_read": f.errors.read as i64,
            ":err_write": f.errors.write as i64,
            ":err_timeout": f.errors.timeout as i64,
            ":err_status": f.errors.status as i64,
            ":err_parse": f.errors.parse as i64,
            ":err_unanswered": f.errors.unanswered as i64,
            ":timeouts_per_million": f.timeouts_per_million,
            ":lat_min": l.min as i64,
            ":lat_mean": l.mean,
            ":lat_stdev": l.stdev,
            ":lat_max": l.max as i64,
            ":lat_p50": l.p50 as i64,
            ":lat_p75": l.p75 as i64,
            ":lat_p90": l.p90 as i64,
            ":lat_p99": l.p99 as i64,
            ":lat_p999": l.p999 as i64,
            ":lat_p9999": l.p9999 as i64,
            ":unc_p50": f.unc_p50 as i64,
            ":unc_p99": f.unc_p99 as i64,
            ":lateness_p99": f.lateness_p99.map(|v| v as i64),
            ":generator_cpu_s": f.generator_cpu_s,
            ":generator_busy": f.generator_busy,
            ":saturated": f.saturated as i64,
            ":generator_limited": f.generator_limited as i64,
            ":connect_local": f.connect_local as i64,
            ":server_cpu_s": f.server_cpu_s,
            ":server_cpu_us_per_request": cpu_per_req,
            ":server_rss_peak": f.server_rss_peak.map(|v| v as i64),
            ":server_rss_mean": f.server_rss_mean.map(|v| v as i64),
            ":server_threads_max": f.server_threads_max.map(|v| v as i64),
            ":warnings_json": serde_json::to_string(&f.warnings).unwrap_or_else(|_| "[]".into()),
            ":steal_fraction": f.steal_fraction,
            ":server_group_cpu_s": f.server_group_cpu_s,
            ":server_group_cpu_us_per_request": f.per_request(f.server_group_cpu_s),
            ":server_group_memory_peak": f.server_group_memory_peak.map(|v| v as i64),
            ":generator_containment": f.generator_containment,
            ":generator_cpuset": f.generator_cpuset,
            ":thread_rps_mean": f.thread_req_sec.map(|r| r.mean),
            ":thread_rps_stdev": f.thread_req_sec.map(|r| r.stdev()),
            ":thread_rps_max": f.thread_req_sec.map(|r| r.max),
            ":thread_rps_samples": f.thread_req_sec.map(|r| r.samples as i64),
            ":late_answers": f.late_answers as i64,
            ":body_sizes_json": serde_json::to_string(&f.body_sizes).ok(),
            ":body_unlike": f.body_unlike.map(|n| n as i64),
        },
    )?;
    Ok(())
}

/// wrk's printed figures (NULL where timeouts were not counted its way) and
/// the server's busiest second.
fn update_wrk_figures(tx: &Transaction<'_>, case: i64, f: &CaseFigures) -> rusqlite::Result<()> {
    let w = f.wrk.as_ref();
    let wl = w.map(|w| &w.latency);
    tx.execute(
        "UPDATE cases SET wrk_requests = :req, wrk_lat_mean = :mean, wrk_lat_stdev = :sd,
            wrk_lat_within_stdev = :within, wrk_lat_max = :max, wrk_lat_p50 = :p50,
            wrk_lat_p75 = :p75, wrk_lat_p90 = :p90, wrk_lat_p99 = :p99,
            wrk_interval_us = :interval, server_cores_peak = :cores_peak
         WHERE id = :id",
        named_params! {
            ":id": case,
            ":req": w.map(|w| w.requests as i64),
            ":mean": wl.map(|l| l.mean_us),
            ":sd": wl.map(|l| l.stdev_us),
            ":within": wl.map(|l| l.within_stdev_pct),
            ":max": wl.map(|l| l.max_us as i64),
            ":p50": wl.map(|l| l.p50_us as i64),
            ":p75": wl.map(|l| l.p75_us as i64),
            ":p90": wl.map(|l| l.p90_us as i64),
            ":p99": wl.map(|l| l.p99_us as i64),
            ":interval": wl.and_then(|l| l.interval_us).map(|v| v as i64),
            ":cores_peak": f.server_cores_peak,
        },
    )?;
    Ok(())
}

/// The database's side, for a case that had one.
fn update_db_figures(
    tx: &Transaction<'_>,
    case: i64,
    db: &DbFigures,
    per_request: Option<f64>,
) -> rusqlite::Result<()> {
    tx.execute(
        "UPDATE cases SET db_cpu_s = :cpu, db_cpu_us_per_request = :per_req,
            db_memory_peak = :mem, db_cpus = :cpus, db_pool = :pool
         WHERE id = :id",
        named_params! {
            ":id": case,
            ":cpu": db.cpu_s,
            ":per_req": per_request,
            ":mem": db.memory_peak.map(|v| v as i64),
            ":cpus": db.cpus,
            ":pool": db.pool as i64,
        },
    )?;
    Ok(())
}
