//! Per-generator parts of a case measured by several load generators
//! (schema version 2): `case_parts` and `part_samples`.

use fairbench_engine::histogram::Encoded;
use fairbench_engine::{LoadModel, Outcome};
use rusqlite::{params, OptionalExtension, Transaction};

use super::{encode_histogram, Store};

/// One load generator's result, as stored.
pub struct PartRow {
    pub host: String,
    pub url: String,
    pub outcome: Outcome,
    /// The histogram of each interval of `outcome.series`, encoded.
    pub intervals: Vec<Encoded>,
    pub warnings: Vec<String>,
}

pub(super) fn insert(tx: &Transaction<'_>, case: i64, parts: &[PartRow]) -> anyhow::Result<()> {
    tx.execute("DELETE FROM part_samples WHERE case_id = ?1", [case])?;
    tx.execute("DELETE FROM case_parts WHERE case_id = ?1", [case])?;
    for (i, p) in parts.iter().enumerate() {
        let o = &p.outcome;
        let l = o.latency_summary();
        let rate = match o.model {
            LoadModel::ClosedLoop => None,
            LoadModel::ConstantRate { rps } => Some(rps),
        };
        tx.execute(
            "INSERT INTO case_parts (case_id, part, host, url, connections, threads, rate, requests,
                 duration_s, rps, bytes_read, err_connect, err_read, err_write, err_timeout,
                 err_status, err_parse, lat_p50, lat_p99, lat_max, generator_cpu_s, generator_busy,
                 saturated, latency, uncorrected, lateness, warnings_json, planned, err_unanswered)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
                 ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29)",
            params![
                case,
                i as i64,
                p.host,
                p.url,
                o.connections as i64,
                o.threads as i64,
                rate,
                o.requests as i64,
                o.measured_s,
                o.rps(),
                o.bytes_read as i64,
                o.errors.connect as i64,
                o.errors.read as i64,
                o.errors.write as i64,
                o.errors.timeout as i64,
                o.errors.status as i64,
                o.errors.parse as i64,
                l.p50 as i64,
                l.p99 as i64,
                l.max as i64,
                o.generator.cpu_s,
                o.generator.busy_fraction,
                o.generator.saturated as i64,
                encode_histogram(&o.latency)?,
                encode_histogram(&o.uncorrected)?,
                o.lateness.as_ref().map(encode_histogram).transpose()?,
                serde_json::to_string(&p.warnings).unwrap_or_else(|_| "[]".into()),
                o.planned as i64,
                o.errors.unanswered as i64,
            ],
        )?;
        let mut st = tx.prepare(
            "INSERT INTO part_samples (case_id, part, second, phase, start_s, duration_s, requests,
                 errors, bytes, p50_us, p99_us, interval_hist)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        )?;
        for (k, s) in o.series.iter().enumerate() {
            st.execute(params![
                case,
                i as i64,
                s.second,
                s.phase.as_str(),
                s.start_s,
                s.duration_s,
                s.requests as i64,
                s.errors as i64,
                s.bytes as i64,
                s.p50_us as i64,
                s.p99_us as i64,
                p.intervals.get(k).map(|e| &e.0),
            ])?;
        }
    }
    Ok(())
}

impl Store {
    /// Where the run's server and load generators were.
    pub fn set_run_topology(&self, run: i64, topology: &serde_json::Value) -> anyhow::Result<()> {
        self.conn.execute(
            "UPDATE runs SET topology_json = ?2 WHERE id = ?1",
            params![run, topology.to_string()],
        )?;
        Ok(())
    }

    /// Where the run's server and load generators were, if recorded.
    pub fn run_topology(&self, run: i64) -> anyhow::Result<Option<serde_json::Value>> {
        let text: Option<String> = self
            .conn
            .query_row("SELECT topology_json FROM runs WHERE id = ?1", [run], |r| {
                r.get("topology_json")
            })
            .optional()?
            .flatten();
        Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
    }
}
