//! The results database: every run, case, histogram and per-second sample.
//!
//! Written case by case in WAL mode, each case in one transaction, so an
//! interrupted run keeps everything it finished and readers (report,
//! compare) never see half a case. Reports read only from here.

mod calibrations;
mod figures;
mod lock;
mod parts;
mod readonly;
mod rows;
pub mod schema;
mod stopped;
mod time_spent;
mod versions;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, Context};
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use rusqlite::{params, Connection, OptionalExtension};

pub use calibrations::CalibrationRow;
pub use figures::{CaseFigures, DbFigures};
pub use lock::RunLock;
pub use parts::PartRow;
pub use rows::{CaseRow, NewRun, PlannedCase, RunRow, SampleRow, SweepRow};
pub use versions::Versions;

pub struct Store {
    conn: Connection,
    path: PathBuf,
}

/// Every database this process opened, so that an SQLite error that
/// surfaces far from its `Store` still names the file ([`name_the_file`]).
static OPENED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

fn opened(path: &Path) {
    if let Ok(mut v) = OPENED.lock() {
        if !v.iter().any(|p| p == path) {
            v.push(path.to_path_buf());
        }
    }
}

/// `message` for an error whose chain holds an SQLite error: the databases
/// this process opened named after it when it names none of them ("disk
/// I/O error" alone says nothing about which file).
pub fn name_the_file(e: &anyhow::Error, message: String) -> String {
    if !e
        .chain()
        .any(|c| c.downcast_ref::<rusqlite::Error>().is_some())
    {
        return message;
    }
    let paths: Vec<String> = OPENED
        .lock()
        .map(|v| v.iter().map(|p| p.display().to_string()).collect())
        .unwrap_or_default();
    if paths.is_empty() || paths.iter().any(|p| message.contains(p.as_str())) {
        return message;
    }
    let s = if paths.len() > 1 { "s" } else { "" };
    format!("{message} (results database{s} {})", paths.join(", "))
}

impl Store {
    /// Opens (creating if needed) and migrates the database at `path`.
    pub fn open(path: &Path) -> anyhow::Result<Store> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create directory {}", dir.display()))?;
        }
        opened(path);
        let mut conn = Connection::open(path)
            .with_context(|| format!("cannot open results database {}", path.display()))?;
        Self::configure(&conn, path)?;
        schema::migrate(&mut conn).map_err(|e| anyhow!("{}: {e}", path.display()))?;
        Ok(Store {
            conn,
            path: path.to_path_buf(),
        })
    }

    /// Opens an existing database for reading; a missing file is an error
    /// that says how to make one.
    pub fn open_existing(path: &Path) -> anyhow::Result<Store> {
        if !path.exists() {
            anyhow::bail!(
                "no results database at {} (run `fairbench run` first, or pass --db PATH)",
                path.display()
            );
        }
        Self::open(path)
    }

    /// Opens an existing database only to read it: never migrated, never
    /// switched to WAL, never written, so a read-only file or folder works
    /// (an older schema is read through a migrated private copy).
    pub fn open_read_only(path: &Path) -> anyhow::Result<Store> {
        if !path.exists() {
            anyhow::bail!(
                "no results database at {} (run `fairbench run` first, or pass --db PATH)",
                path.display()
            );
        }
        opened(path);
        Ok(Store {
            conn: readonly::open(path)?,
            path: path.to_path_buf(),
        })
    }

    fn configure(conn: &Connection, path: &Path) -> anyhow::Result<()> {
        let ctx = || format!("cannot configure results database {}", path.display());
        // A reader and the writer may meet; wait rather than fail at once.
        conn.busy_timeout(Duration::from_secs(10))
            .with_context(ctx)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .with_context(ctx)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .with_context(ctx)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .with_context(ctx)?;
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// For the fixture writer, which pins clock-dependent columns.
    #[cfg(any(test, feature = "fixture"))]
    pub(crate) fn conn(&self) -> &Connection {
        &self.conn
    }

    pub fn create_run(&mut self, r: &NewRun) -> anyhow::Result<i64> {
        self.conn.execute(
            "INSERT INTO runs (started_at, suite, suite_toml, state, fairbench_version, git_revision,
                               host_json, toolchains_json, planned_cases, pid)
             VALUES (?1, ?2, ?3, 'running', ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                r.started_at,
                r.suite,
                r.suite_toml,
                env!("CARGO_PKG_VERSION"),
                r.git_revision,
                r.host_json,
                r.toolchains_json,
                r.planned_cases as i64,
                std::process::id() as i64
            ],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    pub fn set_run_state(&self, run: i64, state: &str, reason: Option<&str>) -> anyhow::Result<()> {
        let finished = (state != "running").then(now_rfc3339);
        self.conn.execute(
            "UPDATE runs SET state = ?2, reason = ?3, finished_at = ?4, pid = ?5 WHERE id = ?1",
            params![
                run,
                state,
                reason,
                finished,
                (state == "running").then(|| std::process::id() as i64)
            ],
        )?;
        Ok(())
    }

    pub fn runs(&self) -> anyhow::Result<Vec<RunRow>> {
        let mut st = self
            .conn
            .prepare(&format!("{} ORDER BY r.id", RunRow::SELECT))?;
        let rows = st.query_map([], RunRow::from_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    pub fn run(&self, id: i64) -> anyhow::Result<Option<RunRow>> {
        Ok(self
            .conn
            .query_row(
                &format!("{} WHERE r.id = ?1", RunRow::SELECT),
                [id],
                RunRow::from_row,
            )
            .optional()?)
    }

    pub fn latest_run(&self) -> anyhow::Result<Option<i64>> {
        Ok(self
            .conn
            .query_row("SELECT max(id) FROM runs", [], |r| r.get(0))
            .optional()?
            .flatten())
    }

    /// Stores the cases of a plan as pending, in one transaction.
    pub fn insert_planned(&mut self, run: i64, cases: &[PlannedCase]) -> anyhow::Result<()> {
        let tx = self.conn.transaction()?;
        for c in cases {
            rows::insert_planned(&tx, run, c)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Appends one case (a sweep step) after the run's last; returns its id.
    pub fn append_case(
        &mut self,
        run: i64,
        case: impl FnOnce(usize) -> PlannedCase,
    ) -> anyhow::Result<i64> {
        let tx = self.conn.transaction()?;
        let seq: i64 = tx.query_row(
            "SELECT coalesce(max(seq), -1) + 1 FROM cases WHERE run_id = ?1",
            [run],
            |r| r.get(0),
        )?;
        rows::insert_planned(&tx, run, &case(seq as usize))?;
        let id = tx.last_insert_rowid();
        tx.commit()?;
        Ok(id)
    }

    /// Forgets a sweep's step cases: a resumed sweep starts over, since its
    /// knee depends on all its steps.
    pub fn delete_sweep_steps(&self, run: i64, sweep: &str) -> anyhow::Result<()> {
        self.conn.execute(
            "DELETE FROM cases WHERE run_id = ?1 AND sweep = ?2",
            params![run, sweep],
        )?;
        Ok(())
    }

    pub fn cases(&self, run: i64) -> anyhow::Result<Vec<CaseRow>> {
        let mut st = self.conn.prepare(&format!(
            "{} WHERE run_id = ?1 ORDER BY seq",
            CaseRow::SELECT
        ))?;
        let rows = st.query_map([run], CaseRow::from_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    pub fn mark_running(&self, case: i64, placement: (&str, &str, bool)) -> anyhow::Result<()> {
        self.conn.execute(
            "UPDATE cases SET state = 'running', started_at = ?2, server_cpus = ?3,
                    generator_cpus = ?4, cpus_shared = ?5 WHERE id = ?1",
            params![
                case,
                now_rfc3339(),
                placement.0,
                placement.1,
                placement.2 as i64
            ],
        )?;
        Ok(())
    }

    /// How the case's server is held: `cgroup-v1`, `cgroup-v2` or
    /// `process-group`, and the cpuset its group has.
    pub fn record_containment(
        &self,
        case: i64,
        method: &str,
        cpuset: Option<&str>,
    ) -> anyhow::Result<()> {
        self.conn.execute(
            "UPDATE cases SET containment = ?2, server_cpuset = ?3 WHERE id = ?1",
            params![case, method, cpuset],
        )?;
        Ok(())
    }

    /// Stores the check's verdict for a case before it is measured.
    pub fn record_parity(
        &self,
        case: i64,
        fair: bool,
        parity_json: &str,
        header_bytes: Option<u64>,
        body_bytes: Option<u64>,
    ) -> anyhow::Result<()> {
        self.conn.execute(
            "UPDATE cases SET fair = ?2, parity_json = ?3, header_bytes = ?4, body_bytes = ?5 WHERE id = ?1",
            params![
                case,
                fair as i64,
                parity_json,
                header_bytes.map(|b| b as i64),
                body_bytes.map(|b| b as i64)
            ],
        )?;
        Ok(())
    }

    /// One transaction: figures, histograms and samples land together or not at all.
    pub fn record_done(&mut self, case: i64, f: &CaseFigures) -> anyhow::Result<()> {
        self.record_done_with_parts(case, f, &[])
    }

    /// [`Store::record_done`] for a case measured by several load
    /// generators: the merged figures plus each generator's part, together.
    pub fn record_done_with_parts(
        &mut self,
        case: i64,
        f: &CaseFigures,
        parts: &[PartRow],
    ) -> anyhow::Result<()> {
        let tx = self.conn.transaction()?;
        parts::insert(&tx, case, parts)?;
        figures::update_figures(&tx, case, f)?;
        for (kind, h) in [
            ("latency", Some(&f.latency)),
            ("answered", Some(&f.answered)),
            ("uncorrected", Some(&f.uncorrected)),
            ("lateness", f.lateness.as_ref()),
        ] {
            if let Some(h) = h {
                tx.execute(
                    "INSERT OR REPLACE INTO histograms (case_id, kind, data) VALUES (?1, ?2, ?3)",
                    params![case, kind, encode_histogram(h)?],
                )?;
            }
        }
        tx.execute("DELETE FROM samples WHERE case_id = ?1", [case])?;
        {
            let mut st = tx.prepare(
                "INSERT INTO samples (case_id, second, phase, start_s, duration_s, requests, errors,
                     bytes, p50_us, p99_us, interval_hist, server_cpu, server_rss, server_threads)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
            )?;
            for s in &f.samples {
                st.execute(params![
                    case,
                    s.second,
                    s.phase,
                    s.start_s,
                    s.duration_s,
                    s.requests as i64,
                    s.errors as i64,
                    s.bytes as i64,
                    s.p50_us as i64,
                    s.p99_us as i64,
                    s.interval_hist,
                    s.server_cpu,
                    s.server_rss.map(|v| v as i64),
                    s.server_threads.map(|v| v as i64)
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    pub fn record_failed(
        &self,
        case: i64,
        reason: &str,
        log_tail: Option<&str>,
    ) -> anyhow::Result<()> {
        self.set_case_state(case, "failed", Some(reason), log_tail)
    }

    pub fn set_case_state(
        &self,
        case: i64,
        state: &str,
        reason: Option<&str>,
        log_tail: Option<&str>,
    ) -> anyhow::Result<()> {
        self.conn.execute(
            "UPDATE cases SET state = ?2, reason = ?3, log_tail = ?4, finished_at = ?5 WHERE id = ?1",
            params![case, state, reason, log_tail, now_rfc3339()],
        )?;
        Ok(())
    }

    /// Cases of an unfinished run that still need doing (for --resume):
    /// pending ones, and one left 'running' by a process that died.
    pub fn reset_unfinished(&self, run: i64) -> anyhow::Result<usize> {
        Ok(self.conn.execute(
            "UPDATE cases SET state = 'pending', started_at = NULL WHERE run_id = ?1 AND state = 'running'",
            [run],
        )?)
    }

    pub fn histogram(&self, case: i64, kind: &str) -> anyhow::Result<Option<Histogram<u64>>> {
        let blob: Option<Vec<u8>> = self
            .conn
            .query_row(
                "SELECT data FROM histograms WHERE case_id = ?1 AND kind = ?2",
                params![case, kind],
                |r| r.get(0),
            )
            .optional()?;
        blob.map(|b| decode_histogram(&b)).transpose()
    }

    pub fn samples(&self, case: i64) -> anyhow::Result<Vec<SampleRow>> {
        let mut st = self.conn.prepare(&format!(
            "{} WHERE case_id = ?1 ORDER BY second",
            SampleRow::SELECT
        ))?;
        let rows = st.query_map([case], SampleRow::from_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    pub fn record_sweep(&self, run: i64, s: &SweepRow) -> anyhow::Result<()> {
        self.conn.execute(
            "INSERT OR REPLACE INTO sweeps (run_id, sweep, server, mode, response, scenario, cores,
                 slo_quantile, slo_us, knee_rps, state, reason, protocol)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            params![
                run,
                s.sweep,
                s.server,
                s.mode,
                s.response,
                s.scenario,
                s.cores,
                s.slo_quantile,
                s.slo_us,
                s.knee_rps,
                s.state,
                s.reason,
                s.protocol
            ],
        )?;
        Ok(())
    }

    pub fn sweeps(&self, run: i64) -> anyhow::Result<Vec<SweepRow>> {
        let mut st = self.conn.prepare(&format!(
            "{} WHERE run_id = ?1 ORDER BY id",
            SweepRow::SELECT
        ))?;
        let rows = st.query_map([run], SweepRow::from_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

pub fn encode_histogram(h: &Histogram<u64>) -> anyhow::Result<Vec<u8>> {
    let mut out = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut out)
        .map_err(|e| anyhow!("cannot encode histogram: {e:?}"))?;
    Ok(out)
}

pub fn decode_histogram(b: &[u8]) -> anyhow::Result<Histogram<u64>> {
    Deserializer::new()
        .deserialize(&mut &b[..])
        .map_err(|e| anyhow!("stored histogram is corrupt: {e:?}"))
}

/// Now, as stored: RFC 3339 UTC with second precision.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339_utc_seconds() {
        let t = now_rfc3339();
        assert_eq!(t.len(), "2026-11-21T23:10:43Z".len(), "{t}");
        assert!(t.ends_with('Z'), "{t}");
        assert!(humantime::parse_rfc3339(&t).is_ok(), "{t}");
    }

    #[test]
    fn histogram_round_trip() {
        let mut h = fairbench_engine::histogram::new_histogram();
        for v in [1u64, 10, 100, 1000, 123_456] {
            h.record(v).unwrap();
        }
        let back = decode_histogram(&encode_histogram(&h).unwrap()).unwrap();
        assert_eq!(back.len(), 5);
        assert_eq!(back.value_at_quantile(0.5), h.value_at_quantile(0.5));
    }

    #[test]
    fn the_ledger_is_stored_and_counted() {
        use fairbench_engine::histogram::new_histogram;
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(&dir.path().join("r.db")).unwrap();
        let run = s
            .create_run(&NewRun {
                started_at: now_rfc3339(),
                suite: "t".into(),
                suite_toml: String::new(),
                git_revision: None,
                host_json: "{}".into(),
                toolchains_json: "{}".into(),
                planned_cases: 1,
            })
            .unwrap();
        let id = s
            .append_case(run, |seq| PlannedCase {
                seq,
                server: "s".into(),
                language: "l".into(),
                framework: "f".into(),
                mode: "m".into(),
                response: "default".into(),
                variant_params_json: "{}".into(),
                scenario: "static".into(),
                cores: 1,
                cores_requested: "1".into(),
                load_label: "closed c=1".into(),
                load_json: r#"{"model":"closed"}"#.into(),
                sweep: None,
                repetition: 1,
                protocol: "http/1.1".into(),
                step: None,
            })
            .unwrap();
        let mut latency = new_histogram();
        let mut answered = new_histogram();
        for v in [100u64, 200, 300] {
            latency.record(v).unwrap();
            answered.record(v).unwrap();
        }
        // Two requests never answered: in the honest histogram at the timeout.
        latency.record_n(2_000_000, 2).unwrap();
        let f = CaseFigures {
            planned: 5_000_000,
            outcome_requests: 3,
            throughput_answers: 3,
            duration_s: 1.0,
            rps: 3.0,
            rps_stdev: 0.0,
            rps_max: 3.0,
            bytes_read: 0,
            errors: fairbench_engine::ErrorCounts {
                timeout: 1,
                unanswered: 1,
                status: 4,
                ..Default::default()
            },
            timeouts_per_million: 0.2,
            latency_summary: fairbench_engine::LatencySummary::of(&latency),
            unc_p50: 0,
            unc_p99: 0,
            lateness_p99: None,
            generator_cpu_s: 0.0,
            generator_busy: 0.0,
            saturated: false,
            generator_limited: true,
            connect_local: 2,
            server_cpu_s: None,
            server_rss_peak: None,
            server_rss_mean: None,
            server_threads_max: None,
            steal_fraction: None,
            server_group_cpu_s: None,
            server_group_memory_peak: None,
            db: None,
            generator_containment: None,
            generator_cpuset: None,
            thread_req_sec: None,
            late_answers: 0,
            body_sizes: {
                let mut b = fairbench_engine::bodies::BodySizes::default();
                (0..3).for_each(|_| b.record(13));
                b.record(0);
                b
            },
            body_unlike: Some(1),
            wrk: Some(fairbench_engine::WrkFigures {
                latency: fairbench_engine::WrkLatency {
                    samples: 4,
                    recorded: 3,
                    interval_us: Some(150),
                    mean_us: 212.5,
                    stdev_us: 85.4,
                    max_us: 300,
                    within_stdev_pct: 50.0,
                    p50_us: 200,
                    p75_us: 300,
                    p90_us: 300,
                    p99_us: 300,
                },
                requests: 4,
            }),
            server_cores_peak: Some(1.75),
            http3: Some({
                let mut h3 = fairbench_engine::H3Report::default();
                (h3.handshakes, h3.packets_lost) = (3, 2);
                h3
            }),
            warnings: Vec::new(),
            latency,
            answered: answered.clone(),
            uncorrected: answered.clone(),
            lateness: None,
            samples: Vec::new(),
        };
        s.record_done(id, &f).unwrap();
        let c = &s.cases(run).unwrap()[0];
        assert_eq!((c.planned, c.err_unanswered), (Some(5_000_000), Some(1)));
        assert_eq!(c.errors_total(), Some(6), "unanswered counts as an error");
        assert!(c.limited_by_generator() && c.connect_local == Some(2));
        // Timed out and unanswered alike: 2 of 5 million.
        assert_eq!(c.no_answer_per_million(), Some(0.4));
        assert_eq!(s.histogram(id, "answered").unwrap().unwrap(), answered);
        assert_eq!(s.histogram(id, "latency").unwrap().unwrap().len(), 5);
        // wrk's printed figures and the cores in use, as given.
        assert_eq!(
            (
                c.wrk_requests,
                c.wrk_lat_mean,
                c.wrk_lat_p99,
                c.wrk_interval_us
            ),
            (Some(4), Some(212.5), Some(300), Some(150))
        );
        assert_eq!(c.wrk_lat_within_stdev, Some(50.0));
        assert_eq!(c.server_cores_peak, Some(1.75));
        // QUIC's counters join the case's load, what was there kept.
        let load: serde_json::Value = serde_json::from_str(&c.load_json).unwrap();
        assert_eq!(load["http3"]["handshakes"], 3);
        assert_eq!(load["http3"]["packets_lost"], 2);
        assert_eq!(load["model"], "closed");
        let bodies: fairbench_engine::bodies::BodySizes =
            serde_json::from_str(c.body_sizes_json.as_deref().unwrap()).unwrap();
        assert_eq!(bodies, f.body_sizes);
    }

    #[test]
    fn a_version_5_database_keeps_its_cases_and_sweeps_as_http1() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("old.db");
        {
            let mut c = rusqlite::Connection::open(&p).unwrap();
            schema::create_at(&mut c, 5);
            c.execute_batch(
                "INSERT INTO runs (id, started_at, suite, suite_toml, state, fairbench_version, host_json, planned_cases)
                   VALUES (1, '2026-01-01T00:00:00Z', 'quick', '', 'done', '0.1.0', '{}', 1);
                 INSERT INTO cases (run_id, seq, server, language, framework, mode, response, scenario,
                   cores, cores_requested, load_label, load_json, repetition, state, rps)
                   VALUES (1, 0, 'go-nethttp', 'Go', 'net/http', 'native', 'normalized', 'static',
                   1, '1', 'closed c=50', '{}', 1, 'done', 1234.5);
                 INSERT INTO sweeps (run_id, sweep, server, mode, response, scenario, cores,
                   slo_quantile, slo_us, knee_rps, state)
                   VALUES (1, 'k', 'go-nethttp', 'native', 'normalized', 'static', 1, 0.99, 10000, 500, 'done');",
            )
            .unwrap();
        }
        // Read-only first: a migrated private copy, the file untouched.
        let ro = Store::open_read_only(&p).unwrap();
        let c = &ro.cases(1).unwrap()[0];
        assert_eq!((c.protocol.as_str(), c.rps), ("http/1.1", Some(1234.5)));
        drop(ro);
        let v: i64 = rusqlite::Connection::open(&p)
            .unwrap()
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(v, 5, "a read-only open never migrates the file");
        let s = Store::open(&p).unwrap();
        let c = &s.cases(1).unwrap()[0];
        assert_eq!(
            (c.protocol.as_str(), c.server.as_str()),
            ("http/1.1", "go-nethttp")
        );
        let sw = &s.sweeps(1).unwrap()[0];
        assert_eq!(
            (sw.protocol.as_str(), sw.knee_rps),
            ("http/1.1", Some(500.0))
        );
    }

    #[test]
    fn migrates_and_refuses_newer() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.db");
        let s = Store::open(&p).unwrap();
        let v: i64 = s
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(v, schema::VERSION);
        s.conn.pragma_update(None, "user_version", 99).unwrap();
        drop(s);
        let e = Store::open(&p).err().unwrap().to_string();
        assert!(e.contains("newer than this fairbench"), "{e}");
    }
}
