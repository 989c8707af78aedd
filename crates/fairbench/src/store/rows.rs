//! Row types of the results database, and their mapping to SQL.

use hdrhistogram::Histogram;
use rusqlite::{named_params, Row, Transaction};
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
        (SELECT count(*) FROM cases c WHERE c.run_id = r.id AND c.state = 'done') AS cases_done,
        (SELECT count(*) FROM cases c WHERE c.run_id = r.id AND c.state = 'failed') AS cases_failed,
        (SELECT count(*) FROM cases c WHERE c.run_id = r.id AND c.state = 'skipped') AS cases_skipped,
        r.pid FROM runs r";

    pub(crate) fn from_row(r: &Row<'_>) -> rusqlite::Result<RunRow> {
        Ok(RunRow {
            id: r.get("id")?,
            started_at: r.get("started_at")?,
            finished_at: r.get("finished_at")?,
            suite: r.get("suite")?,
            suite_toml: r.get("suite_toml")?,
            state: r.get("state")?,
            reason: r.get("reason")?,
            fairbench_version: r.get("fairbench_version")?,
            git_revision: r.get("git_revision")?,
            host_json: r.get("host_json")?,
            toolchains_json: r.get("toolchains_json")?,
            planned_cases: r.get("planned_cases")?,
            cases_done: r.get("cases_done")?,
            cases_failed: r.get("cases_failed")?,
            cases_skipped: r.get("cases_skipped")?,
            pid: r.get("pid")?,
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
    /// "http/1.1", "h2c" or "h2" (schema version 6).
    pub protocol: String,
    /// The suite's `[[step]]` (schema version 12); None without steps.
    pub step: Option<String>,
}

pub(crate) fn insert_planned(
    tx: &Transaction<'_>,
    run: i64,
    c: &PlannedCase,
) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT INTO cases (run_id, seq, server, language, framework, mode, response,
            variant_params_json, scenario, cores, cores_requested, load_label, load_json,
            sweep, repetition, protocol, step, state)
         VALUES (:run_id, :seq, :server, :language, :framework, :mode, :response,
            :variant_params_json, :scenario, :cores, :cores_requested, :load_label, :load_json,
            :sweep, :repetition, :protocol, :step, 'pending')",
        named_params! {
            ":run_id": run,
            ":seq": c.seq as i64,
            ":server": c.server,
            ":language": c.language,
            ":framework": c.framework,
            ":mode": c.mode,
            ":response": c.response,
            ":variant_params_json": c.variant_params_json,
            ":scenario": c.scenario,
            ":cores": c.cores as i64,
            ":cores_requested": c.cores_requested,
            ":load_label": c.load_label,
            ":load_json": c.load_json,
            ":sweep": c.sweep,
            ":repetition": c.repetition as i64,
            ":protocol": c.protocol,
            ":step": c.step,
        },
    )?;
    Ok(())
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
    /// Requests the measured window planned (constant rate) or sent (closed
    /// loop): each is answered or in one error class (schema version 4).
    pub planned: Option<i64>,
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
    /// Still unanswered when the run ended, before their timeout (version 4).
    pub err_unanswered: Option<i64>,
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
    /// Whether the generator bounded the figures by any cause the engine
    /// knows, `saturated` among them (schema version 15; NULL before).
    pub generator_limited: Option<bool>,
    /// Connects that failed on this machine, not the server's (v15).
    pub connect_local: Option<i64>,
    pub server_cpu_s: Option<f64>,
    pub server_cpu_us_per_request: Option<f64>,
    pub server_rss_peak: Option<i64>,
    pub server_rss_mean: Option<i64>,
    pub server_threads_max: Option<i64>,
    /// Share of the machine's CPU time the hypervisor stole (version 3).
    pub steal_fraction: Option<f64>,
    /// How the server was held to its CPUs, and the cpuset the kernel
    /// enforced (version 5).
    pub containment: Option<String>,
    pub server_cpuset: Option<String>,
    /// The server's control group's own CPU and memory figures (version 5).
    pub server_group_cpu_s: Option<f64>,
    pub server_group_cpu_us_per_request: Option<f64>,
    pub server_group_memory_peak: Option<i64>,
    /// How the load generator's threads were held to their CPUs (version 5).
    pub generator_containment: Option<String>,
    pub generator_cpuset: Option<String>,
    /// The database's control group's CPU over the measurement, per
    /// request, its memory peak, its cpuset and the server's pool
    /// (version 7; NULL without a database).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub db_cpu_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub db_cpu_us_per_request: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub db_memory_peak: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub db_cpus: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub db_pool: Option<i64>,
    /// wrk's per-thread Req/Sec: mean, stdev and max of every load thread's
    /// 100 ms rates, and how many there were (version 9).
    pub thread_rps_mean: Option<f64>,
    pub thread_rps_stdev: Option<f64>,
    pub thread_rps_max: Option<f64>,
    pub thread_rps_samples: Option<i64>,
    /// Timeouts counted wrk's way: the answers that came after the timeout,
    /// among `err_timeout` (version 9).
    pub late_answers: Option<i64>,
    /// What wrk 4.x prints for the case: its request count (late answers
    /// included) and its latency after its own correction, µs (version
    /// 10; only where timeouts were counted wrk's way).
    pub wrk_requests: Option<i64>,
    pub wrk_lat_mean: Option<f64>,
    pub wrk_lat_stdev: Option<f64>,
    /// wrk's "+/- Stdev": the share of samples within one stdev, percent.
    pub wrk_lat_within_stdev: Option<f64>,
    pub wrk_lat_max: Option<i64>,
    pub wrk_lat_p50: Option<i64>,
    pub wrk_lat_p75: Option<i64>,
    pub wrk_lat_p90: Option<i64>,
    pub wrk_lat_p99: Option<i64>,
    /// The interval wrk's correction used; NULL where it would not correct.
    pub wrk_interval_us: Option<i64>,
    /// The most CPU cores the server kept busy in one second of the
    /// measurement (version 10).
    pub server_cores_peak: Option<f64>,
    pub warnings_json: String,
    /// Its successes by body size, JSON (`fairbench_engine::bodies`;
    /// version 14).
    pub body_sizes_json: Option<String>,
    /// Of those, the ones whose body was not the size the check proved,
    /// for a scenario that fixes its body; NULL otherwise (version 14).
    pub body_unlike: Option<i64>,
    /// What the case spoke to its server: "http/1.1", "h2c" or "h2"
    /// (version 6; every earlier case is "http/1.1").
    pub protocol: String,
    /// The ladder's rung it measured (version 12); None without steps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
}

impl CaseRow {
    /// Whether the load generator bounded this repetition's figures: as
    /// stored since schema version 15 (saturated, paused by a CPU quota,
    /// stopped, sending late or failing connects on its own machine), and
    /// for older rows as far as they keep it: saturated, or sending a
    /// constant rate late (`crate::report::bound`).
    pub fn limited_by_generator(&self) -> bool {
        self.generator_limited == Some(true)
            || self.saturated == Some(true)
            || self
                .lateness_p99
                .is_some_and(|p| p > fairbench_engine::LATE_SEND_US as i64)
    }

    /// Whether connects failed on the generator's own machine in this
    /// repetition (schema version 15): its failures are then the
    /// generator's too.
    pub fn failed_connects_here(&self) -> bool {
        self.connect_local.is_some_and(|n| n > 0)
    }

    /// Errors of every class together; None until the case has figures.
    pub fn errors_total(&self) -> Option<i64> {
        let parts = [
            self.err_connect,
            self.err_read,
            self.err_write,
            self.err_timeout,
            self.err_status,
            self.err_parse,
            self.err_unanswered,
        ];
        parts
            .iter()
            .any(Option::is_some)
            .then(|| parts.iter().map(|v| v.unwrap_or(0)).sum())
    }

    /// Requests that waited and never got an answer — timed out, or still
    /// unanswered when the run ended — per million planned. Rows from before
    /// the ledger (no `planned`) keep their stored timeouts per million.
    pub fn no_answer_per_million(&self) -> Option<f64> {
        match self.planned {
            Some(p) if p > 0 => {
                let n = self.err_timeout.unwrap_or(0) + self.err_unanswered.unwrap_or(0);
                Some(n as f64 * 1e6 / p as f64)
            }
            _ => self.timeouts_per_million,
        }
    }

    /// The whole stack's CPU-µs per request: the server's and the
    /// database's, for a case that measured both. Summed per repetition so
    /// that work moved from the server into the database cannot make a
    /// server look cheaper; None without a database figure (a sum with a
    /// missing part would understate).
    pub fn total_cpu_us_per_request(&self) -> Option<f64> {
        Some(self.server_cpu_us_per_request? + self.db_cpu_us_per_request?)
    }

    /// Every column of `cases` a `CaseRow` holds, by name.
    pub(crate) const SELECT: &'static str = "SELECT * FROM cases";

    pub(crate) fn from_row(r: &Row<'_>) -> rusqlite::Result<CaseRow> {
        Ok(CaseRow {
            id: r.get("id")?,
            run_id: r.get("run_id")?,
            seq: r.get("seq")?,
            server: r.get("server")?,
            language: r.get("language")?,
            framework: r.get("framework")?,
            mode: r.get("mode")?,
            response: r.get("response")?,
            variant_params_json: r.get("variant_params_json")?,
            scenario: r.get("scenario")?,
            cores: r.get("cores")?,
            cores_requested: r.get("cores_requested")?,
            server_cpus: r.get("server_cpus")?,
            generator_cpus: r.get("generator_cpus")?,
            cpus_shared: r.get::<_, i64>("cpus_shared")? != 0,
            load_label: r.get("load_label")?,
            load_json: r.get("load_json")?,
            sweep: r.get("sweep")?,
            repetition: r.get("repetition")?,
            state: r.get("state")?,
            reason: r.get("reason")?,
            log_tail: r.get("log_tail")?,
            fair: r.get::<_, Option<i64>>("fair")?.map(|v| v != 0),
            parity_json: r.get("parity_json")?,
            header_bytes: r.get("header_bytes")?,
            body_bytes: r.get("body_bytes")?,
            started_at: r.get("started_at")?,
            finished_at: r.get("finished_at")?,
            planned: r.get("planned")?,
            requests: r.get("requests")?,
            duration_s: r.get("duration_s")?,
            rps: r.get("rps")?,
            rps_stdev: r.get("rps_stdev")?,
            rps_max: r.get("rps_max")?,
            bytes_read: r.get("bytes_read")?,
            err_connect: r.get("err_connect")?,
            err_read: r.get("err_read")?,
            err_write: r.get("err_write")?,
            err_timeout: r.get("err_timeout")?,
            err_status: r.get("err_status")?,
            err_parse: r.get("err_parse")?,
            err_unanswered: r.get("err_unanswered")?,
            timeouts_per_million: r.get("timeouts_per_million")?,
            lat_min: r.get("lat_min")?,
            lat_mean: r.get("lat_mean")?,
            lat_stdev: r.get("lat_stdev")?,
            lat_max: r.get("lat_max")?,
            lat_p50: r.get("lat_p50")?,
            lat_p75: r.get("lat_p75")?,
            lat_p90: r.get("lat_p90")?,
            lat_p99: r.get("lat_p99")?,
            lat_p999: r.get("lat_p999")?,
            lat_p9999: r.get("lat_p9999")?,
            unc_p50: r.get("unc_p50")?,
            unc_p99: r.get("unc_p99")?,
            lateness_p99: r.get("lateness_p99")?,
            generator_cpu_s: r.get("generator_cpu_s")?,
            generator_busy: r.get("generator_busy")?,
            saturated: r.get::<_, Option<i64>>("saturated")?.map(|v| v != 0),
            generator_limited: r
                .get::<_, Option<i64>>("generator_limited")?
                .map(|v| v != 0),
            connect_local: r.get("connect_local")?,
            server_cpu_s: r.get("server_cpu_s")?,
            server_cpu_us_per_request: r.get("server_cpu_us_per_request")?,
            server_rss_peak: r.get("server_rss_peak")?,
            server_rss_mean: r.get("server_rss_mean")?,
            server_threads_max: r.get("server_threads_max")?,
            steal_fraction: r.get("steal_fraction")?,
            containment: r.get("containment")?,
            server_cpuset: r.get("server_cpuset")?,
            server_group_cpu_s: r.get("server_group_cpu_s")?,
            server_group_cpu_us_per_request: r.get("server_group_cpu_us_per_request")?,
            server_group_memory_peak: r.get("server_group_memory_peak")?,
            db_cpu_s: r.get("db_cpu_s")?,
            db_cpu_us_per_request: r.get("db_cpu_us_per_request")?,
            db_memory_peak: r.get("db_memory_peak")?,
            db_cpus: r.get("db_cpus")?,
            db_pool: r.get("db_pool")?,
            generator_containment: r.get("generator_containment")?,
            protocol: r.get("protocol")?,
            step: r.get("step")?,
            generator_cpuset: r.get("generator_cpuset")?,
            thread_rps_mean: r.get("thread_rps_mean")?,
            thread_rps_stdev: r.get("thread_rps_stdev")?,
            thread_rps_max: r.get("thread_rps_max")?,
            thread_rps_samples: r.get("thread_rps_samples")?,
            late_answers: r.get("late_answers")?,
            server_cores_peak: r.get("server_cores_peak")?,
            warnings_json: r.get("warnings_json")?,
            body_sizes_json: r.get("body_sizes_json")?,
            body_unlike: r.get("body_unlike")?,
            ..CaseRow::default()
        })
        .and_then(|c| Self::wrk_columns(c, r))
    }

    /// What wrk 4.x would print (version 10).
    fn wrk_columns(c: CaseRow, r: &Row<'_>) -> rusqlite::Result<CaseRow> {
        Ok(CaseRow {
            wrk_requests: r.get("wrk_requests")?,
            wrk_lat_mean: r.get("wrk_lat_mean")?,
            wrk_lat_stdev: r.get("wrk_lat_stdev")?,
            wrk_lat_within_stdev: r.get("wrk_lat_within_stdev")?,
            wrk_lat_max: r.get("wrk_lat_max")?,
            wrk_lat_p50: r.get("wrk_lat_p50")?,
            wrk_lat_p75: r.get("wrk_lat_p75")?,
            wrk_lat_p90: r.get("wrk_lat_p90")?,
            wrk_lat_p99: r.get("wrk_lat_p99")?,
            wrk_interval_us: r.get("wrk_interval_us")?,
            ..c
        })
    }
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
    /// One interval of the load as stored, with its histogram; the server
    /// figures are the caller's to add (an ad-hoc load has none).
    pub fn of_interval(s: &fairbench_engine::SecondSample, h: &Histogram<u64>) -> SampleRow {
        SampleRow {
            second: s.second,
            phase: s.phase.as_str().into(),
            start_s: s.start_s,
            duration_s: s.duration_s,
            requests: s.requests,
            errors: s.errors,
            bytes: s.bytes,
            p50_us: s.p50_us,
            p99_us: s.p99_us,
            interval_hist: super::encode_histogram(h).ok(),
            server_cpu: None,
            server_rss: None,
            server_threads: None,
        }
    }

    /// Rows kept live during an `auto` warm-up, numbered as the outcome's
    /// series is (see `fairbench_engine::warmup`); others are unchanged.
    pub fn number_finally(
        mut rows: Vec<SampleRow>,
        o: &fairbench_engine::Outcome,
    ) -> Vec<SampleRow> {
        if let Some(v) = &o.auto_warmup {
            for r in &mut rows {
                r.second = v.final_second(r.second);
            }
        }
        rows
    }

    pub(crate) const SELECT: &'static str = "SELECT second, phase, start_s, duration_s, requests,
        errors, bytes, p50_us, p99_us, interval_hist, server_cpu, server_rss, server_threads
        FROM samples";

    pub(crate) fn from_row(r: &Row<'_>) -> rusqlite::Result<SampleRow> {
        Ok(SampleRow {
            second: r.get("second")?,
            phase: r.get("phase")?,
            start_s: r.get("start_s")?,
            duration_s: r.get("duration_s")?,
            requests: r.get::<_, i64>("requests")? as u64,
            errors: r.get::<_, i64>("errors")? as u64,
            bytes: r.get::<_, i64>("bytes")? as u64,
            p50_us: r.get::<_, i64>("p50_us")? as u64,
            p99_us: r.get::<_, i64>("p99_us")? as u64,
            interval_hist: r.get("interval_hist")?,
            server_cpu: r.get("server_cpu")?,
            server_rss: r.get::<_, Option<i64>>("server_rss")?.map(|v| v as u64),
            server_threads: r.get::<_, Option<i64>>("server_threads")?.map(|v| v as u64),
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
    /// "http/1.1", "h2c" or "h2" (schema version 6).
    pub protocol: String,
}

impl SweepRow {
    pub(crate) const SELECT: &'static str = "SELECT sweep, server, mode, response, scenario, cores,
        slo_quantile, slo_us, knee_rps, state, reason, protocol FROM sweeps";

    pub(crate) fn from_row(r: &Row<'_>) -> rusqlite::Result<SweepRow> {
        Ok(SweepRow {
            sweep: r.get("sweep")?,
            server: r.get("server")?,
            mode: r.get("mode")?,
            response: r.get("response")?,
            scenario: r.get("scenario")?,
            cores: r.get("cores")?,
            slo_quantile: r.get("slo_quantile")?,
            slo_us: r.get("slo_us")?,
            knee_rps: r.get("knee_rps")?,
            state: r.get("state")?,
            reason: r.get("reason")?,
            protocol: r.get("protocol")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::CaseRow;

    /// The engine's stored verdict counts whatever its cause; a row from
    /// before it (NULL) is bounded only by what it kept.
    #[test]
    fn a_row_is_bounded_by_its_stored_verdict_or_else_by_what_it_kept() {
        let row = |limited, saturated, late: i64| CaseRow {
            generator_limited: limited,
            saturated: Some(saturated),
            lateness_p99: Some(late),
            ..Default::default()
        };
        // Paused by a quota: neither saturated nor late, yet bounded.
        assert!(row(Some(true), false, 0).limited_by_generator());
        assert!(!row(Some(false), false, 1_000).limited_by_generator());
        assert!(!row(None, false, 1_000).limited_by_generator());
        assert!(row(None, true, 0).limited_by_generator());
        assert!(row(None, false, 1_001).limited_by_generator());
    }
}
