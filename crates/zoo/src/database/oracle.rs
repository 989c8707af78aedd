//! What the check grades a server's answers against: the tables as they
//! are now, read with psql through the data folder's socket as the
//! superuser (nobody else can reach that folder).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use super::psql::{command_output, DB_NAME, SUPERUSER};

/// How long one query of the check may take.
const QUERY_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone)]
pub struct Oracle {
    psql: PathBuf,
    socket_dir: PathBuf,
    port: u16,
}

impl Oracle {
    pub fn new(psql: PathBuf, socket_dir: PathBuf, port: u16) -> Oracle {
        Oracle {
            psql,
            socket_dir,
            port,
        }
    }

    fn command(&self, db: &str) -> Command {
        let mut c = Command::new(&self.psql);
        c.args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h"])
            .arg(&self.socket_dir)
            .args(["-p", &self.port.to_string(), "-U", SUPERUSER, "-d", db])
            .env("PGCONNECT_TIMEOUT", "5")
            .env("PGOPTIONS", "-c statement_timeout=30000")
            .env("LC_ALL", "C");
        c
    }

    /// One statement's rows, `|`-separated, one per line.
    pub fn query(&self, db: &str, sql: &str) -> Result<String, String> {
        let mut c = self.command(db);
        c.args(["-c", sql]);
        command_output(c, None, QUERY_TIMEOUT, "psql")
    }

    /// A script on psql's stdin (COPY data inline).
    pub fn run_script(&self, db: &str, script: String, timeout: Duration) -> Result<(), String> {
        let mut c = self.command(db);
        c.args(["-f", "-"]);
        command_output(c, Some(script.into_bytes()), timeout, "psql").map(drop)
    }

    /// `world.randomnumber` of each id that exists.
    pub fn world(&self, ids: &[i64]) -> Result<BTreeMap<i64, i64>, String> {
        if ids.is_empty() {
            return Ok(BTreeMap::new());
        }
        let list: Vec<String> = ids.iter().map(i64::to_string).collect();
        let out = self.query(
            DB_NAME,
            &format!(
                "SELECT id, randomnumber FROM world WHERE id IN ({})",
                list.join(",")
            ),
        )?;
        out.lines()
            .filter(|l| !l.is_empty())
            .map(|l| {
                let (a, b) = l
                    .split_once('|')
                    .ok_or_else(|| format!("psql answered {l:?}"))?;
                Ok((
                    a.trim()
                        .parse()
                        .map_err(|_| format!("psql answered {l:?}"))?,
                    b.trim()
                        .parse()
                        .map_err(|_| format!("psql answered {l:?}"))?,
                ))
            })
            .collect()
    }

    /// Every row of `fortune`, by id.
    pub fn fortunes(&self) -> Result<Vec<(i64, String)>, String> {
        // JSON keeps messages with `|` or newlines in one piece.
        let out = self.query(
            DB_NAME,
            "SELECT coalesce(json_agg(json_build_array(id, message) ORDER BY id), '[]') FROM fortune",
        )?;
        let rows: Vec<(i64, String)> =
            serde_json::from_str(out.trim()).map_err(|e| format!("psql answered {out:?}: {e}"))?;
        Ok(rows)
    }
}
