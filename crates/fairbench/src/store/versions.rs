//! What each case measured, by version (schema version 12): the server's
//! source, its framework and toolchain, fairbench's own build and the
//! machine, so that a case's history can be read along a project's
//! revisions and not only by date. One row per case, written when the
//! case starts; cases stored before version 12 have none.

use std::collections::HashMap;

use rusqlite::params;
use serde::{Deserialize, Serialize};

use super::Store;

/// The versions one case was measured with. Empty fields were not known.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Versions {
    /// fairbench's crate version and the git revision it was built from.
    pub fairbench: String,
    /// The server's source: the zoo's build key (SHA-256 over its folder,
    /// manifest and mode), which changes exactly when what was built does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_source: Option<String>,
    /// The version a manifest or a suite declares (a framework's release,
    /// a service's `version`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared: Option<String>,
    /// The toolchain and the version its probe printed, e.g. `go 1.24.1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toolchain: Option<String>,
    /// CPU model, CPU count and kernel of the machine.
    pub machine: String,
}

impl Versions {
    /// What identifies the server's code in this case: its source key
    /// (abbreviated as git abbreviates) or its declared version.
    pub fn source_label(&self) -> Option<String> {
        match (&self.server_source, &self.declared) {
            (Some(k), _) => Some(k.chars().take(12).collect()),
            (None, Some(d)) => Some(d.clone()),
            (None, None) => None,
        }
    }
}

impl Store {
    pub fn record_versions(&self, case: i64, v: &Versions) -> anyhow::Result<()> {
        self.conn.execute(
            "INSERT OR REPLACE INTO case_versions (case_id, versions_json) VALUES (?1, ?2)",
            params![case, serde_json::to_string(v)?],
        )?;
        Ok(())
    }

    /// The versions of a run's cases, by case id.
    pub fn versions(&self, run: i64) -> anyhow::Result<HashMap<i64, Versions>> {
        let mut st = self.conn.prepare(
            "SELECT v.case_id, v.versions_json FROM case_versions v
             JOIN cases c ON c.id = v.case_id WHERE c.run_id = ?1",
        )?;
        let rows = st.query_map([run], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?;
        let mut out = HashMap::new();
        for row in rows {
            let (id, json) = row?;
            // A row a later fairbench wrote with fields this one does not
            // know still gives the ones it does.
            if let Ok(v) = serde_json::from_str(&json) {
                out.insert(id, v);
            }
        }
        Ok(out)
    }
}
