//! Where a case is made ready, for `check` and `run` alike: the server
//! built (once per server and mode), its CPUs and the database's chosen,
//! the database started once and its tables reset to the seeded rows, the
//! certificate authority made when h2 over TLS first needs it, and the
//! server started through the one start path, ready and graded.
//!
//! `check` and `run` differ only where their options say so (how long a
//! build may take, whether to rebuild, how long an answer may take, where
//! the logs go, CPUs asked for by `check --cpus`); every other decision is
//! taken here once.

pub mod builds;
pub mod database;
pub mod placement;

use std::path::PathBuf;
use std::time::Duration;

use fairbench_zoo::build::BuildOptions;
use fairbench_zoo::database::Postgres;
use fairbench_zoo::parity::InspectOptions;
use fairbench_zoo::pki::RunPki;
use fairbench_zoo::{Protocol, ResponseKind, Scenario, Server};

use crate::args::format_cpus;
use crate::host::start::{start, StartError, StartSpec, Started};
use crate::host::Host;
use crate::suite::AddressFamily;
use crate::topology::Layout;
use builds::{BuildFailure, Builds};
use database::Database;
use placement::{place_database, sites, DbPlace, Sites};

/// PostgreSQL has at least this long to be ready, whatever the servers'
/// ready timeout: initdb on a busy machine takes tens of seconds.
const DATABASE_READY_AT_LEAST: Duration = Duration::from_secs(60);

/// How a stage prepares, beyond what each case asks for.
pub struct StageOptions {
    /// `<root>/.fairbench` or `--work-dir`: the build cache and the CA.
    pub work_dir: PathBuf,
    /// The servers' and the database's logs.
    pub log_dir: PathBuf,
    /// Where the server and the load generators run.
    pub layout: Layout,
    /// This machine's CPUs, shared out between server, generators and
    /// database.
    pub cpus: Vec<usize>,
    pub ready_timeout: Duration,
    /// Between SIGTERM and SIGKILL when a server is stopped.
    pub stop_grace: Duration,
    /// How long a grading request may wait for an answer.
    pub fetch_timeout: Duration,
    pub build: BuildOptions,
    /// The largest database pool a server of this command will open.
    pub db_max_pool: usize,
}

/// One case to make ready.
pub struct Act<'a> {
    pub server: &'a Server,
    pub mode: &'a str,
    pub response: ResponseKind,
    pub scenario: &'a Scenario,
    pub protocol: Protocol,
    /// CORES told to the server, and the number of CPUs it is given.
    pub cores: usize,
    pub workers: Option<usize>,
    /// CPUs asked for by name (`check --cpus`); `None`: the placement's.
    pub server_cpus: Option<Vec<usize>>,
    /// The server's log file, in the stage's log folder.
    pub log_name: String,
    /// How the checks and the load reach the server: TCP on a loopback
    /// address, or a unix socket the stage names (`unix`).
    pub address_family: AddressFamily,
}

/// The database's part in one case: where it ran and the pool the server
/// was given.
pub struct CaseDb {
    pub place: DbPlace,
    pub pool: usize,
}

/// A case made ready: its server running in its place.
pub struct Staged {
    pub sites: Sites,
    pub started: Started,
    pub db: Option<CaseDb>,
    pub log_path: PathBuf,
}

/// Why a case could not be made ready. Nothing is left running.
#[derive(Debug)]
pub enum Unready {
    /// Ctrl-C while the database or the server was being set up.
    Interrupted,
    Build(BuildFailure),
    /// The database or the certificate authority could not be made.
    Setup(String),
    /// The server would not run the workers the case asks for: measuring
    /// it would label a layout it does not have.
    Refused(String),
    Start {
        error: StartError,
        log_path: PathBuf,
    },
}

impl Unready {
    pub fn reason(&self) -> String {
        match self {
            Unready::Interrupted => "interrupted".into(),
            Unready::Build(b) => b.reason(),
            Unready::Setup(why) | Unready::Refused(why) => why.clone(),
            Unready::Start { error, .. } => error.to_string(),
        }
    }

    pub fn log_tail(&self) -> Vec<String> {
        match self {
            Unready::Build(b) => b.log_tail.clone(),
            Unready::Start { error, .. } => error.log_tail().to_vec(),
            _ => Vec::new(),
        }
    }
}

/// What `check` and `run` prepare every case with; the database is
/// stopped when the stage is dropped.
pub struct Stage {
    opts: StageOptions,
    builds: Builds,
    db: Option<Database>,
    /// Why the database could not be started: every database case then
    /// fails with it, rather than trying again.
    db_failed: Option<String>,
    pki: Option<RunPki>,
    /// Unix sockets named so far: the next one's number.
    sockets: usize,
}

/// The longest path a unix socket may have (`sun_path` holds 108 bytes,
/// the terminating NUL among them).
const SUN_PATH_MAX: usize = 107;

impl Stage {
    pub fn new(opts: StageOptions) -> Stage {
        let builds = Builds::new(opts.work_dir.join("build"), opts.build.clone());
        Stage {
            opts,
            builds,
            db: None,
            db_failed: None,
            pki: None,
            sockets: 0,
        }
    }

    /// A fresh socket path for one start: in the log folder, or where the
    /// log folder's path is too long for a socket, in the temporary folder.
    /// Named by this process too: another check or run may share the log
    /// folder, and a start removes a stale file at its path.
    fn socket_path(&mut self) -> PathBuf {
        self.sockets += 1;
        let name = format!("{}-{}.sock", std::process::id(), self.sockets);
        let beside = self.opts.log_dir.join(&name);
        if beside.as_os_str().len() <= SUN_PATH_MAX {
            return beside;
        }
        std::env::temp_dir().join(format!("fairbench-{name}"))
    }

    pub fn layout(&self) -> &Layout {
        &self.opts.layout
    }

    /// The build output of a server's mode, built first when needed (once
    /// per stage). `announce` is told before a build that runs.
    pub fn build(
        &mut self,
        server: &Server,
        mode: &str,
        announce: &mut dyn FnMut(&str),
    ) -> Result<PathBuf, BuildFailure> {
        self.builds.get(server, mode, announce)
    }

    /// The time this stage spent in builds (and checking the cache).
    pub fn build_time(&self) -> std::time::Duration {
        self.builds.spent()
    }

    /// The source key of a server and mode this stage built.
    pub fn source_key(&self, server: &str, mode: &str) -> Option<String> {
        self.builds.key(server, mode).map(str::to_string)
    }

    /// The database, when a case has started it.
    pub fn postgres(&self) -> Option<&Postgres> {
        self.db.as_ref().map(Database::pg)
    }

    /// Makes one case ready: the CA if it speaks TLS, the database placed
    /// and reset if its scenario needs one, the build, and the server
    /// started pinned to its CPUs, ready and graded.
    pub fn serve(&mut self, act: &Act, announce: &mut dyn FnMut(&str)) -> Result<Staged, Unready> {
        if let Some(why) = workers_refused(act) {
            return Err(Unready::Refused(why));
        }
        if act.protocol.tls() {
            self.pki()?;
        }
        let mut sites = match &act.server_cpus {
            Some(cpus) => Sites {
                server: cpus.clone(),
                generators: Vec::new(),
                shared: false,
            },
            None => sites(&self.opts.layout, &self.opts.cpus, act.cores),
        };
        let (env, db) = if act.scenario.needs_database() {
            let pool = act.server.db_pool(act.cores);
            let place = self.place_and_reset_database(&mut sites, announce)?;
            let env = self.postgres().expect("started above").env(pool);
            (env, Some(CaseDb { place, pool }))
        } else {
            (Vec::new(), None)
        };
        let out_dir = self
            .builds
            .get(act.server, act.mode, announce)
            .map_err(Unready::Build)?;
        let (log_path, log_claim) = claim_log(&self.opts.log_dir, &act.log_name).map_err(|e| {
            Unready::Setup(format!(
                "cannot claim a log in {}: {e}",
                self.opts.log_dir.display()
            ))
        })?;
        let unix_socket = (act.address_family == AddressFamily::Unix).then(|| self.socket_path());
        let spec = StartSpec {
            server: act.server,
            mode: act.mode,
            response: act.response,
            scenario: act.scenario,
            cores: act.cores,
            workers: act.workers,
            env,
            cpus: Some(sites.server.clone()),
            out_dir: &out_dir,
            log_path: log_path.clone(),
            ready_timeout: self.opts.ready_timeout,
            stop_grace: self.opts.stop_grace,
            inspect: InspectOptions {
                fetch_timeout: self.opts.fetch_timeout,
                database: self.postgres().map(Postgres::oracle),
                trust: None,
            },
            protocol: act.protocol,
            pki: self.pki.as_ref(),
            unix_socket,
        };
        match start(&self.opts.layout.server, &spec) {
            Ok(mut started) => Ok(Staged {
                sites,
                started: {
                    started.log_claim = Some(log_claim);
                    started
                },
                db,
                log_path,
            }),
            Err(_) if crate::interrupt::interrupted() => Err(Unready::Interrupted),
            Err(error) => Err(Unready::Start { error, log_path }),
        }
    }

    /// The CA and server certificate, made on first use, valid for every
    /// address a generator reaches the server at.
    fn pki(&mut self) -> Result<&RunPki, Unready> {
        if self.pki.is_none() {
            let names: Vec<String> = self
                .opts
                .layout
                .clients
                .iter()
                .map(|c| c.server_addr.clone())
                .collect();
            let pki =
                RunPki::create(&self.opts.work_dir.join("tls"), &names).map_err(Unready::Setup)?;
            self.pki = Some(pki);
        }
        Ok(self.pki.as_ref().expect("made above"))
    }

    /// Starts the database on first use, moves it to the CPUs this case
    /// leaves it, and resets its tables: before the server starts, so that
    /// no backend of it holds a lock and the reset's cost is in no figure.
    fn place_and_reset_database(
        &mut self,
        sites: &mut Sites,
        announce: &mut dyn FnMut(&str),
    ) -> Result<DbPlace, Unready> {
        let mut place = place_database(sites, &self.opts.cpus);
        self.database(&place.cpus, announce)?;
        let pg = self.postgres().expect("started above");
        if let Err(e) = pg.set_cpus(&place.cpus) {
            // Held nowhere in particular: the case says so.
            place.warning = Some(format!(
                "the database could not be moved to CPUs {}: {e}",
                format_cpus(&place.cpus)
            ));
        }
        pg.reset_tables().map_err(|e| {
            Unready::Setup(format!("the database's tables could not be reset: {e}"))
        })?;
        pg.reset_memory_peak();
        Ok(place)
    }

    fn database(&mut self, cpus: &[usize], announce: &mut dyn FnMut(&str)) -> Result<(), Unready> {
        if let Some(why) = &self.db_failed {
            return Err(Unready::Setup(why.clone()));
        }
        if self.db.is_some() {
            return Ok(());
        }
        let started = if matches!(self.opts.layout.server, Host::Local) {
            announce("starting the database (PostgreSQL)");
            Database::start(
                &self.opts.log_dir,
                Some(cpus.to_vec()),
                self.opts.db_max_pool,
                self.opts.ready_timeout.max(DATABASE_READY_AT_LEAST),
            )
            .map_err(|e| format!("{e:#}"))
        } else {
            Err(NOT_HERE.to_string())
        };
        match started {
            Ok(d) => {
                self.db = Some(d);
                Ok(())
            }
            // Ctrl-C ended initdb or PostgreSQL while they were set up:
            // interrupted, not failed by the database.
            Err(_) if crate::interrupt::interrupted() => Err(Unready::Interrupted),
            Err(why) => {
                self.db_failed = Some(why.clone());
                Err(Unready::Setup(why))
            }
        }
    }

    /// Stops the database and removes its folder (also done on drop).
    pub fn finish(&mut self) {
        if let Some(db) = self.db.take() {
            db.stop();
        }
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Why a case asking for `workers` cannot be measured as such: the
/// server's response runs another number whatever WORKERS says.
fn workers_refused(act: &Act) -> Option<String> {
    let asked = act.workers?;
    let kind = act.server.response(act.response).workers;
    let runs = kind.runs(act.cores, Some(asked));
    (runs != asked).then(|| {
        format!(
            "{} {} runs {} with CORES={} whatever WORKERS says (its manifest: workers = \"{}\"), not the {asked} asked: refused rather than labelled w={asked}",
            act.server.name,
            act.response,
            crate::units::counted(runs as u64, "worker"),
            act.cores,
            kind.as_str()
        )
    })
}

/// Why the database scenarios need the server here.
pub const NOT_HERE: &str = "the database scenarios need the server on this machine (PostgreSQL listens on its 127.0.0.1): not yet with another topology or server host";

/// The largest database pool among these (server, cores) pairs whose
/// scenario needs the database; 1 when none does.
pub fn max_pool<'a>(cases: impl Iterator<Item = (&'a Server, usize)>) -> usize {
    cases.map(|(s, cores)| s.db_pool(cores)).max().unwrap_or(1)
}

/// `dir/name`, or `dir/<stem>-2.<ext>`, `-3`, … when another live check
/// or run holds that name (two `check`s of one root at once, or two tests):
/// each start writes its own log and the configuration derived from its
/// path (nginx's `<log>.conf/`), never the other's. The name is held by a
/// lock on the log file itself (no file beside it), released with the
/// returned file.
fn claim_log(dir: &std::path::Path, name: &str) -> std::io::Result<(PathBuf, std::fs::File)> {
    std::fs::create_dir_all(dir)?;
    let path = std::path::Path::new(name);
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or(name);
    let ext = path.extension().and_then(|s| s.to_str()).unwrap_or("log");
    for n in 1..=64 {
        let candidate = if n == 1 {
            dir.join(name)
        } else {
            dir.join(format!("{stem}-{n}.{ext}"))
        };
        if let Some(file) = fairbench_sys::flock::try_exclusive(&candidate)? {
            return Ok((candidate, file));
        }
    }
    Err(std::io::Error::other(format!(
        "64 starts of {name} are running at once"
    )))
}

#[cfg(test)]
mod tests {
    use super::claim_log;

    #[test]
    fn a_log_name_held_by_a_live_start_goes_to_the_next_free_one() {
        let dir = tempfile::tempdir().unwrap();
        let (a, held) = claim_log(dir.path(), "nginx-native-normalized-static.log").unwrap();
        let (b, _also) = claim_log(dir.path(), "nginx-native-normalized-static.log").unwrap();
        assert_eq!(a, dir.path().join("nginx-native-normalized-static.log"));
        assert_eq!(b, dir.path().join("nginx-native-normalized-static-2.log"));
        drop(held);
        let (c, _) = claim_log(dir.path(), "nginx-native-normalized-static.log").unwrap();
        assert_eq!(c, a, "a name is free again once its start ends");
    }
}
