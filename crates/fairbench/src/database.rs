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
