//! Where a run's machine time went (schema version 12), kept with the run
//! as the runner measured it (crate::runner::time_spent).

use rusqlite::params;

use super::Store;

impl Store {
    /// Stores the run's time spent, as JSON.
    pub fn set_time_spent(&self, run: i64, json: &str) -> anyhow::Result<()> {
        self.conn.execute(
            "UPDATE runs SET time_spent_json = ?2 WHERE id = ?1",
            params![run, json],
        )?;
        Ok(())
    }

    /// The run's time spent, as stored; None for runs before version 12
    /// or not ended.
    pub fn time_spent(&self, run: i64) -> anyhow::Result<Option<String>> {
        let json: Option<String> = self.conn.query_row(
            "SELECT time_spent_json FROM runs WHERE id = ?1",
            [run],
            |r| r.get(0),
        )?;
        Ok(json)
    }
}
