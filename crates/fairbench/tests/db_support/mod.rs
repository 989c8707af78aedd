//! What the database-scenario tests (db_scenarios.rs, db_interrupts.rs)
//! share: whether PostgreSQL is here, the test servers' root, finding what
//! of a PostgreSQL a fairbench process left, and the suites and `check`
//! arguments they run.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::support::groups_of;

/// PostgreSQL's binaries are here (scripts/setup-test-deps.sh installs
/// them); without them the test says so and passes.
pub fn postgres_here() -> bool {
    let ok = fairbench_zoo::database::postgres::find_bindir().is_ok()
        && std::process::Command::new("psql")
            .arg("--version")
            .output()
            .is_ok();
    crate::support::require(
        ok,
        "PostgreSQL (Debian's postgresql package) is not installed",
    )
}

pub fn db_root() -> PathBuf {
    crate::support::repo().join("tests/fixtures/dbzoo")
}

/// Data folders of PostgreSQLs that process `pid` started.
pub fn folders_of(pid: u32) -> Vec<PathBuf> {
    let prefix = format!("fairbench-pg-{pid}-");
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect()
}

/// Live processes running PostgreSQL's server binary with a data folder of
/// process `pid`.
pub fn postgres_of(pid: u32) -> Vec<u32> {
    let needle = format!("fairbench-pg-{pid}-");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
            let cmd = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
            !stat.contains(") Z") && String::from_utf8_lossy(&cmd).contains(&needle)
        })
        .collect()
}

pub fn assert_no_postgres_of(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !postgres_of(pid).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        postgres_of(pid),
        Vec::<u32>::new(),
        "PostgreSQL processes left"
    );
    assert_eq!(folders_of(pid), Vec::<PathBuf>::new(), "data folders left");
    assert_eq!(groups_of(pid), Vec::<PathBuf>::new(), "control groups left");
}

/// `check` of the test servers `servers` (a --servers pattern) over
/// `scenarios`, from the fixture root, with `work` as its work folder.
pub fn check_args(root: &Path, work: &Path, servers: &str, scenarios: &str) -> Vec<String> {
    [
        "check",
        "--root",
        root.to_str().unwrap(),
        "--work-dir",
        work.to_str().unwrap(),
        "--servers",
        servers,
        "--scenarios",
        scenarios,
        "--variant",
        "normalized",
        "--ready-timeout",
        "20",
        "--stop-grace",
        "1",
        "--fetch-timeout",
        "30",
    ]
    .map(String::from)
    .to_vec()
}

pub fn write_suite(dir: &Path, name: &str, scenarios: &str, duration: &str) -> PathBuf {
    write_suite_of(dir, name, "\"db-ok\"", scenarios, duration)
}

/// A suite of the test servers `servers` (TOML strings) over `scenarios`.
pub fn write_suite_of(
    dir: &Path,
    name: &str,
    servers: &str,
    scenarios: &str,
    duration: &str,
) -> PathBuf {
    let p = dir.join(format!("{name}.toml"));
    std::fs::write(
        &p,
        format!(
            "name = \"{name}\"\nservers = [{servers}]\nresponses = [\"normalized\"]\nscenarios = [{scenarios}]\ncores = [1]\nwarmup = \"0s\"\nduration = \"{duration}\"\nrepetitions = 1\nreference = \"db-ok\"\nready_timeout = \"20s\"\n\n[[load]]\nmodel = \"closed\"\nconnections = 2\nthreads = 1\n"
        ),
    )
    .unwrap();
    p
}

/// Root with mounted cgroups: where PostgreSQL's CPU is counted.
pub fn groups_available() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() == 0 };
    root && fairbench_sys::containment::hierarchies().is_ok()
}

/// `run` of `suite` from the test servers' root into the results database
/// `results`, quietly.
pub fn run_args(suite: &Path, results: &Path) -> Vec<String> {
    [
        "run",
        "--root",
        db_root().to_str().unwrap(),
        "--suite",
        suite.to_str().unwrap(),
        "--db",
        results.to_str().unwrap(),
        "--quiet",
    ]
    .map(String::from)
    .to_vec()
}

/// Arguments as `spawn` and `Command::args` take them.
pub fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// `run` of `suite` (results in `work`) with the test servers told, by the
/// environment variable `var`, to log into a file; asserts the run passed
/// and left nothing behind, PostgreSQL included, and returns the log.
pub fn run_logging(work: &Path, suite: &Path, var: &str, tag: &str) -> String {
    use crate::support::check::{assert_nothing_left, spawn, unique_marker};
    let results = work.join("results.db");
    let log = work.join(format!("{tag}.log"));
    let marker = unique_marker(tag);
    let running = spawn(
        &strs(&run_args(suite, &results)),
        &[(var, log.to_str().unwrap())],
        &marker,
    );
    let pid = running.child.id();
    let run = running.finish(Duration::from_secs(600));
    assert_nothing_left(&marker);
    assert_no_postgres_of(pid);
    run.expect_code(0);
    std::fs::read_to_string(&log).unwrap()
}
