//! Why an adaptive run stopped (schema version 13): the stopping rule's
//! record, kept with the run, and the planned repetitions it left unrun
//! taken out of the plan, so that they count neither as failed nor as
//! missing (crate::runner::stopping).

use rusqlite::params;

use super::Store;

impl Store {
    /// Stores how run `run` stopped (JSON) and removes its cases still
    /// pending: the repetitions the rule found unneeded. The run's planned
    /// count becomes what it ran.
    pub fn record_stop(&mut self, run: i64, json: &str) -> anyhow::Result<()> {
        let tx = self.conn.transaction()?;
        let unrun = tx.execute(
            "DELETE FROM cases WHERE run_id = ?1 AND state = 'pending' AND sweep IS NULL",
            [run],
        )?;
        tx.execute(
            "UPDATE runs SET stopped_json = ?2, planned_cases = max(planned_cases - ?3, 0) WHERE id = ?1",
            params![run, json, unrun as i64],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// How the run stopped, as stored; None for a fixed count, a run not
    /// stopped yet, or one stored before version 13.
    pub fn stopped(&self, run: i64) -> anyhow::Result<Option<String>> {
        let json: Option<String> =
            self.conn
                .query_row("SELECT stopped_json FROM runs WHERE id = ?1", [run], |r| {
                    r.get(0)
                })?;
        Ok(json)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{now_rfc3339, schema, NewRun, PlannedCase};
    use super::*;

    fn planned(seq: usize, repetition: usize) -> PlannedCase {
        PlannedCase {
            seq,
            server: "s".into(),
            language: "l".into(),
            framework: "f".into(),
            mode: "m".into(),
            response: "normalized".into(),
            variant_params_json: "{}".into(),
            scenario: "static".into(),
            cores: 1,
            cores_requested: "1".into(),
            load_label: "closed c=1".into(),
            load_json: "{}".into(),
            sweep: None,
            repetition,
            protocol: "http/1.1".into(),
            step: None,
        }
    }

    #[test]
    fn a_stop_keeps_the_run_cases_and_drops_the_unrun_ones() {
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
                planned_cases: 4,
            })
            .unwrap();
        let cases: Vec<PlannedCase> = (0..4).map(|i| planned(i, i + 1)).collect();
        s.insert_planned(run, &cases).unwrap();
        let first = s.cases(run).unwrap()[0].id;
        s.set_case_state(first, "failed", Some("x"), None).unwrap();
        assert_eq!(s.stopped(run).unwrap(), None);
        s.record_stop(run, "{\"repetitions\":1}").unwrap();
        let left = s.cases(run).unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].state, "failed");
        let r = s.run(run).unwrap().unwrap();
        assert_eq!((r.planned_cases, r.cases_failed), (1, 1));
        assert_eq!(
            s.stopped(run).unwrap().as_deref(),
            Some("{\"repetitions\":1}")
        );
    }

    #[test]
    fn a_version_12_database_gains_the_column_empty() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("old.db");
        {
            let mut c = rusqlite::Connection::open(&p).unwrap();
            schema::create_at(&mut c, 12);
            c.execute_batch(
                "INSERT INTO runs (id, started_at, suite, suite_toml, state, fairbench_version, host_json, planned_cases)
                   VALUES (1, '2026-01-01T00:00:00Z', 'quick', '', 'done', '0.1.0', '{}', 1);",
            )
            .unwrap();
        }
        let ro = Store::open_read_only(&p).unwrap();
        assert_eq!(ro.stopped(1).unwrap(), None);
        drop(ro);
        let s = Store::open(&p).unwrap();
        assert_eq!(s.stopped(1).unwrap(), None);
        assert_eq!(s.run(1).unwrap().unwrap().planned_cases, 1);
    }
}
