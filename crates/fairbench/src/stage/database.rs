//! fairbench's side of the database scenarios' PostgreSQL
//! (crates/zoo/src/database): started once for a check or a run, on CPUs
//! apart from the server's where the machine has them, announced, removed
//! even on a second Ctrl-C, and its CPU time per measurement.

use std::path::Path;
use std::time::Duration;

use fairbench_zoo::database::{Postgres, PostgresOptions};

use crate::interrupt::CleanupGuard;

/// PostgreSQL for one command; stopped and removed on drop.
pub struct Database {
    pg: Postgres,
    _cleanup: CleanupGuard,
}

impl Database {
    /// Starts and seeds it. `cpus`: its cpuset (`None`: fairbench's CPUs);
    /// `max_pool`: the largest pool a server will open.
    pub fn start(
        log_dir: &Path,
        cpus: Option<Vec<usize>>,
        max_pool: usize,
        ready_timeout: Duration,
    ) -> anyhow::Result<Database> {
        let opts = PostgresOptions {
            cpus: cpus.clone(),
            log_path: log_dir.join("postgres-initdb.log"),
            ready_timeout,
            // Every server's pool, twice over for one still closing while
            // the next opens, and the check's own connections.
            max_connections: 2 * max_pool + 20,
        };
        crate::note!("database: starting PostgreSQL …");
        let pg = Postgres::start(&opts).map_err(|e| anyhow::anyhow!("database: {e}"))?;
        let folder = pg.folder().to_path_buf();
        // A second Ctrl-C exits without destructors: the control group is
        // killed and removed by the interrupt handler, the folder here.
        let cleanup = crate::interrupt::on_exit(move || {
            fairbench_zoo::database::postgres::remove_folder(&folder);
        });
        crate::note!(
            "database: PostgreSQL {} on 127.0.0.1:{}, CPUs {}, data in {}",
            pg.version(),
            pg.port(),
            pg.cpuset()
                .unwrap_or_else(|| "not pinned (no control group)".into()),
            pg.folder().display()
        );
        Ok(Database {
            pg,
            _cleanup: cleanup,
        })
    }

    pub fn pg(&self) -> &Postgres {
        &self.pg
    }

    /// Stops it and removes its folder; a warning line when something
    /// would not go.
    pub fn stop(mut self) {
        if let Err(e) = self.pg.stop() {
            crate::note!("warning: the database was not removed completely: {e}");
        }
    }
}

/// The warning a database case carries when PostgreSQL's CPU time or
/// memory could not be read from its control group (none here, or a
/// reading failed): its CPU per request is then the server's alone, and
/// the server + database total is left empty rather than understated.
pub fn unmeasured(cpu_s: Option<f64>, memory_peak: Option<u64>) -> Option<String> {
    let missing: Vec<&str> = [
        cpu_s.is_none().then_some("CPU time"),
        memory_peak.is_none().then_some("memory"),
    ]
    .into_iter()
    .flatten()
    .collect();
    (!missing.is_empty()).then(|| {
        format!(
            "the database's {} {} not measured (PostgreSQL had no control group, or reading it failed): this case's CPU per request is the server's alone, not the whole stack's",
            missing.join(" and "),
            if missing.len() > 1 { "were" } else { "was" }
        )
    })
}

#[cfg(test)]
mod tests {
    use super::unmeasured;

    #[test]
    fn a_database_case_without_its_figures_says_so() {
        assert_eq!(unmeasured(Some(1.5), Some(1 << 20)), None);
        let w = unmeasured(None, Some(1 << 20)).unwrap();
        assert!(
            w.starts_with("the database's CPU time was not measured")
                && w.contains("the server's alone"),
            "{w}"
        );
        let w = unmeasured(None, None).unwrap();
        assert!(
            w.starts_with("the database's CPU time and memory were not measured"),
            "{w}"
        );
        assert!(unmeasured(Some(0.0), None).unwrap().contains("memory"));
    }
}
