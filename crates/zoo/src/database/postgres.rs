//! One PostgreSQL started for a check or a run: Debian's server binaries,
//! a data folder of its own under the temporary folder (initdb), a port of
//! its own on 127.0.0.1, a control group of its own (its CPUs, its CPU time
//! and memory), seeded with [`super::seed`], polled until it answers
//! queries, and at its end shut down fast, its shared memory released and
//! its folder removed.
//!
//! PostgreSQL refuses to run as root: as root it runs as the `postgres`
//! user that Debian's package creates.

use std::ffi::CString;
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::oracle::Oracle;
use super::psql::command_output;
use super::seed;
use fairbench_sys::containment::Usage;
use fairbench_sys::process::{free_port, ServerProcess, ServerSpec};

pub use super::psql::{DB_NAME, DB_PASSWORD, DB_USER, SUPERUSER};
/// Data folders are named this, then their owner as control groups are.
pub const FOLDER_PREFIX: &str = "fairbench-pg-";

/// How long initdb and seeding may take.
const SETUP_TIMEOUT: Duration = Duration::from_secs(180);

#[derive(Debug, Clone)]
pub struct PostgresOptions {
    /// Its cpuset; `None`: fairbench's own CPUs.
    pub cpus: Option<Vec<usize>>,
    /// PostgreSQL's own log (and initdb's).
    pub log_path: PathBuf,
    pub ready_timeout: Duration,
    /// `max_connections`: above the largest pool of any server.
    pub max_connections: usize,
}

/// A running, seeded PostgreSQL; stopped and removed on drop.
#[derive(Debug)]
pub struct Postgres {
    process: Option<ServerProcess>,
    folder: PathBuf,
    port: u16,
    version: String,
    oracle: Oracle,
    removed: bool,
}

/// Where Debian's (or any) PostgreSQL server binaries are: the newest
/// /usr/lib/postgresql/N/bin, else the folder of `postgres` on PATH.
pub fn find_bindir() -> Result<PathBuf, String> {
    let complete = |d: &Path| {
        ["postgres", "initdb", "psql"]
            .iter()
            .all(|b| d.join(b).is_file())
    };
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            complete(&bin).then_some((v, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Ok(bin);
    }
    if let Some(path) = std::env::var_os("PATH") {
        for d in std::env::split_paths(&path) {
            if complete(&d) {
                return Ok(d);
            }
        }
    }
    Err("PostgreSQL is not installed: no /usr/lib/postgresql/*/bin/postgres and no postgres, initdb and psql on PATH; install Debian's `postgresql` package (apt-get install postgresql; scripts/setup-test-deps.sh does)".into())
}

/// Whom PostgreSQL runs as: as root the `postgres` user (uid, gid), else
/// fairbench's own user (`None`).
fn run_as() -> Result<Option<(u32, u32)>, String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    let name = CString::new("postgres").expect("no NUL");
    // SAFETY: getpwnam returns a pointer to static storage or null; it is
    // read at once, before any other passwd call.
    let pw = unsafe { libc::getpwnam(name.as_ptr()) };
    if pw.is_null() {
        return Err("fairbench runs as root and PostgreSQL refuses root, but there is no `postgres` user to run it as; install Debian's `postgresql` package (it makes one) or run fairbench as another user".into());
    }
    // SAFETY: pw is non-null and points to a valid passwd.
    let (uid, gid) = unsafe { ((*pw).pw_uid, (*pw).pw_gid) };
    Ok(Some((uid, gid)))
}

/// A new folder for one PostgreSQL, owned by whom it runs as, 0700.
fn make_folder(owner: Option<(u32, u32)>) -> Result<PathBuf, String> {
    let name = fairbench_sys::containment::name::fresh();
    let rest = name
        .strip_prefix(fairbench_sys::containment::PREFIX)
        .unwrap_or(&name);
    let folder = std::env::temp_dir().join(format!("{FOLDER_PREFIX}{rest}"));
    let err = |e: std::io::Error| format!("cannot create {}: {e}", folder.display());
    std::fs::create_dir(&folder).map_err(err)?;
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o700)).map_err(err)?;
    let sock = folder.join("sock");
    std::fs::create_dir(&sock).map_err(err)?;
    if let Some((uid, gid)) = owner {
        for p in [&folder, &sock] {
            std::os::unix::fs::chown(p, Some(uid), Some(gid)).map_err(err)?;
        }
    }
    Ok(folder)
}

impl Postgres {
    /// Makes a data folder, initdb, starts PostgreSQL in a control group of
    /// its own, waits until it answers and seeds it. On any failure what
    /// was made is removed again.
    pub fn start(o: &PostgresOptions) -> Result<Postgres, String> {
        let bindir = find_bindir()?;
        let owner = run_as()?;
        let folder = make_folder(owner)?;
        let mut pg = Postgres {
            process: None,
            port: 0,
            version: String::new(),
            oracle: Oracle::new(bindir.join("psql"), folder.join("sock"), 0),
            folder,
            removed: false,
        };
        // Dropping `pg` on an error removes the folder and stops the process.
        pg.init(&bindir, owner, o)?;
        Ok(pg)
    }

    fn init(
        &mut self,
        bindir: &Path,
        owner: Option<(u32, u32)>,
        o: &PostgresOptions,
    ) -> Result<(), String> {
        if let Some(parent) = o.log_path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let data = self.folder.join("data");
        let mut initdb = Command::new(bindir.join("initdb"));
        initdb
            .arg("-D")
            .arg(&data)
            .args([
                "-U",
                SUPERUSER,
                "-E",
                "UTF8",
                "--locale=C",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "--no-sync",
            ])
            .current_dir(&self.folder)
            .env("LC_ALL", "C");
        if let Some((uid, gid)) = owner {
            initdb.uid(uid).gid(gid);
        }
        let out = command_output(initdb, None, SETUP_TIMEOUT, "initdb")?;
        let _ = std::fs::write(&o.log_path, format!("# fairbench: initdb\n{out}"));
        self.version = std::fs::read_to_string(data.join("PG_VERSION"))
            .unwrap_or_default()
            .trim()
            .to_string();

        self.port = free_port().map_err(|e| format!("no free port for PostgreSQL: {e}"))?;
        self.oracle = Oracle::new(bindir.join("psql"), self.folder.join("sock"), self.port);
        let mut argv: Vec<String> = vec![
            bindir.join("postgres").to_string_lossy().into_owned(),
            "-D".into(),
            data.to_string_lossy().into_owned(),
            "-p".into(),
            self.port.to_string(),
        ];
        for setting in [
            "listen_addresses=127.0.0.1".to_string(),
            format!(
                "unix_socket_directories={}",
                self.folder.join("sock").display()
            ),
            format!("max_connections={}", o.max_connections.max(20)),
            // As TechEmpower configures it: a benchmark's writes need not
            // survive a power cut, and a commit that waits for the disk
            // measures the disk.
            "synchronous_commit=off".into(),
            "logging_collector=off".into(),
        ] {
            argv.push("-c".into());
            argv.push(setting);
        }
        let log = o.log_path.with_extension("postgres.log");
        let mut spec = ServerSpec::new(argv, self.folder.clone(), log);
        spec.cpus = o.cpus.clone();
        spec.run_as = owner;
        spec.stop_grace = Duration::from_secs(10);
        let p = ServerProcess::start(&spec).map_err(|e| format!("PostgreSQL: {e}"))?;
        let addr = SocketAddr::from(([127, 0, 0, 1], self.port));
        let ready = p.wait_ready(&[addr], o.ready_timeout);
        let tail = |p: &ServerProcess| p.log_tail(5).join(" / ");
        if let Err(e) = ready {
            let why = format!("PostgreSQL {e}: {}", tail(&p));
            self.process = Some(p);
            return Err(why);
        }
        self.process = Some(p);
        // It accepts connections before it accepts queries.
        let deadline = Instant::now() + o.ready_timeout;
        loop {
            match self.oracle.query("postgres", "SELECT 1") {
                Ok(_) => break,
                Err(e) if Instant::now() >= deadline => {
                    return Err(format!("PostgreSQL did not answer a query: {e}"))
                }
                Err(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        }
        self.seed()
    }

    fn seed(&self) -> Result<(), String> {
        self.oracle.run_script(
            "postgres",
            format!(
                "\\set ON_ERROR_STOP 1\nCREATE ROLE {DB_USER} LOGIN PASSWORD '{DB_PASSWORD}';\nCREATE DATABASE {DB_NAME} OWNER {DB_USER};\n"
            ),
            SETUP_TIMEOUT,
        )?;
        self.oracle
            .run_script(DB_NAME, seed::tables_script(DB_USER), SETUP_TIMEOUT)?;
        Ok(())
    }

    /// Puts the tables back as seeded ([`seed::reset_script`]), so that
    /// every database case starts from the same tables.
    pub fn reset_tables(&self) -> Result<(), String> {
        self.oracle
            .run_script(DB_NAME, seed::reset_script(DB_USER), SETUP_TIMEOUT)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// PostgreSQL's major version (PG_VERSION).
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Its data folder (and socket folder).
    pub fn folder(&self) -> &Path {
        &self.folder
    }

    /// What grades a server's answers against the tables.
    pub fn oracle(&self) -> Oracle {
        self.oracle.clone()
    }

    /// The environment a server is given to reach it (docs/scenarios.md).
    pub fn env(&self, pool: usize) -> Vec<(String, String)> {
        let port = self.port.to_string();
        vec![
            (
                "DATABASE_URL".into(),
                format!("postgres://{DB_USER}:{DB_PASSWORD}@127.0.0.1:{port}/{DB_NAME}"),
            ),
            ("DB_HOST".into(), "127.0.0.1".into()),
            ("DB_PORT".into(), port),
            ("DB_NAME".into(), DB_NAME.into()),
            ("DB_USER".into(), DB_USER.into()),
            ("DB_PASSWORD".into(), DB_PASSWORD.into()),
            ("DB_POOL".into(), pool.to_string()),
        ]
    }

    pub fn process(&self) -> Option<&ServerProcess> {
        self.process.as_ref()
    }

    /// Its control group's counters (every backend it ever had).
    pub fn usage(&self) -> Option<Usage> {
        self.process.as_ref().and_then(ServerProcess::group_usage)
    }

    /// Its control group's cpuset as the kernel enforces it.
    pub fn cpuset(&self) -> Option<String> {
        self.process.as_ref().and_then(ServerProcess::cpuset)
    }

    /// Moves it to other CPUs (its group's cpuset); without a group, says
    /// so.
    pub fn set_cpus(&self, cpus: &[usize]) -> Result<(), String> {
        match self.process.as_ref().and_then(ServerProcess::group) {
            Some(g) => g.set_cpus(cpus),
            None => {
                Err("PostgreSQL runs without a control group here: its CPUs cannot be moved".into())
            }
        }
    }

    /// Starts its memory peak afresh (see `Group::reset_memory_peak`).
    pub fn reset_memory_peak(&self) {
        if let Some(g) = self.process.as_ref().and_then(ServerProcess::group) {
            g.reset_memory_peak();
        }
    }

    pub fn is_alive(&self) -> bool {
        self.process.as_ref().is_some_and(ServerProcess::is_alive)
    }

    /// Fast shutdown (SIGINT to the postmaster: backends ended, shared
    /// memory released), then whatever is left killed with its group, the
    /// shared memory segment of a killed one released, the folder removed.
    /// Idempotent; also done on drop. Returns what could not be removed.
    pub fn stop(&mut self) -> Result<(), String> {
        if self.removed {
            return Ok(());
        }
        self.removed = true;
        let mut problems = Vec::new();
        if let Some(p) = self.process.take() {
            if p.is_alive() {
                // SAFETY: kill has no memory-safety preconditions.
                unsafe { libc::kill(p.pid() as i32, libc::SIGINT) };
                let deadline = Instant::now() + Duration::from_secs(10);
                while p.is_alive() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
            p.stop();
            if let Some(why) = p.leftover() {
                problems.push(why);
            }
        }
        release_shared_memory(&self.folder.join("data"));
        if let Err(e) = std::fs::remove_dir_all(&self.folder) {
            if e.kind() != std::io::ErrorKind::NotFound {
                problems.push(format!("cannot remove {}: {e}", self.folder.display()));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// Removes a data folder whose PostgreSQL has been killed: its shared
/// memory released, the folder deleted. For the interrupt handler.
pub fn remove_folder(folder: &Path) {
    release_shared_memory(&folder.join("data"));
    let _ = std::fs::remove_dir_all(folder);
}

/// A postmaster that was killed leaves its small System V shared memory
/// segment behind; its id is on line 7 of postmaster.pid. Removed only when
/// no process is attached any more.
pub(crate) fn release_shared_memory(data: &Path) {
    let Ok(text) = std::fs::read_to_string(data.join("postmaster.pid")) else {
        return;
    };
    let Some(id) = text
        .lines()
        .nth(6)
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse::<i32>().ok())
    else {
        return;
    };
    // SAFETY: shmid_ds is plain data; shmctl fills it or fails.
    let mut ds: libc::shmid_ds = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a shmid_ds.
    if unsafe { libc::shmctl(id, libc::IPC_STAT, &mut ds) } == 0 && ds.shm_nattch == 0 {
        // SAFETY: IPC_RMID takes no buffer.
        unsafe { libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut()) };
    }
}
