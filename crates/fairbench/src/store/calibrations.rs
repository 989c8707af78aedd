//! The original tool's run beside a case (schema version 11): what wrk,
//! wrk2 or ab printed on the same server right after fairbench measured
//! it, kept whole and as figures.

use rusqlite::params;

use super::Store;

/// One calibration, as stored.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CalibrationRow {
    pub case_id: i64,
    /// `wrk`, `wrk2` or `ab`.
    pub tool: String,
    /// The command line as run, or as it would have been.
    pub command: String,
    /// `done`, `skipped` (the tool absent, or the case not its shape) or
    /// `failed`.
    pub state: String,
    pub reason: Option<String>,
    /// What the tool printed.
    pub output: String,
    /// Its figures as JSON (`calibration::ToolFigures`); NULL when it
    /// printed none.
    pub figures_json: Option<String>,
}

impl Store {
    /// Stores a case's calibration, replacing an earlier one.
    pub fn record_calibration(&self, c: &CalibrationRow) -> anyhow::Result<()> {
        self.conn.execute(
            "INSERT OR REPLACE INTO calibrations
                 (case_id, tool, command, state, reason, output, figures_json)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                c.case_id,
                c.tool,
                c.command,
                c.state,
                c.reason,
                c.output,
                c.figures_json
            ],
        )?;
        Ok(())
    }

    /// A case's calibration, if it had one.
    pub fn calibration(&self, case: i64) -> anyhow::Result<Option<CalibrationRow>> {
        use rusqlite::OptionalExtension;
        Ok(self
            .conn
            .query_row(
                "SELECT case_id, tool, command, state, reason, output, figures_json
                 FROM calibrations WHERE case_id = ?1",
                [case],
                |r| {
                    Ok(CalibrationRow {
                        case_id: r.get(0)?,
                        tool: r.get(1)?,
                        command: r.get(2)?,
                        state: r.get(3)?,
                        reason: r.get(4)?,
                        output: r.get(5)?,
                        figures_json: r.get(6)?,
                    })
                },
            )
            .optional()?)
    }

    /// Every calibration of a run's cases, in case order.
    pub fn calibrations(&self, run: i64) -> anyhow::Result<Vec<CalibrationRow>> {
        let mut st = self.conn.prepare(
            "SELECT k.case_id, k.tool, k.command, k.state, k.reason, k.output, k.figures_json
             FROM calibrations k JOIN cases c ON c.id = k.case_id
             WHERE c.run_id = ?1 ORDER BY c.seq",
        )?;
        let rows = st.query_map([run], |r| {
            Ok(CalibrationRow {
                case_id: r.get(0)?,
                tool: r.get(1)?,
                command: r.get(2)?,
                state: r.get(3)?,
                reason: r.get(4)?,
                output: r.get(5)?,
                figures_json: r.get(6)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}
