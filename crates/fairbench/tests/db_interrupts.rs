//! Nothing of the PostgreSQL of the database scenarios is left after an
//! interrupt — no process, no data folder, no control group: after Ctrl-C
//! and SIGKILL of a `run` measuring against it, and after a terminal's
//! Ctrl-C to the whole process group while PostgreSQL is set up or while
//! `check` grades against it (an interrupted command, exit 130, not one
//! failed by its database).

mod db_support;
mod support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use db_support::*;
use support::check::*;
use support::{serial, text};

#[test]
fn nothing_of_postgres_is_left_after_ctrl_c_or_sigkill() {
    let _serial = serial();
    if !postgres_here() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let suite = write_suite(work.path(), "db-long", "\"db\"", "120s");
    let results = work.path().join("results.db");
    let start = |marker: &str| {
        let running = spawn(&strs(&run_args(&suite, &results)), &[], marker);
        let pid = running.child.id();
        // Until PostgreSQL runs and the case's load has begun.
        let t = Instant::now();
        let serving = || {
            marked_processes(marker)
                .iter()
                .any(|(_, c)| c.contains("db_server.py"))
        };
        while postgres_of(pid).is_empty() || !serving() {
            assert!(
                t.elapsed() < Duration::from_secs(120),
                "PostgreSQL never started"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        std::thread::sleep(Duration::from_secs(2));
        (running, pid)
    };

    // Ctrl-C: the run ends, and takes PostgreSQL with it.
    let marker = unique_marker("db-int");
    let (running, pid) = start(&marker);
    assert!(!folders_of(pid).is_empty());
    // SAFETY: signalling the child we started.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let run = running.finish(Duration::from_secs(60));
    assert_eq!(run.code, 130, "{}", run.stderr);
    assert_nothing_left(&marker);
    assert_no_postgres_of(pid);

    // SIGKILL: PostgreSQL dies with its parent; its folder and control
    // group go with the next fairbench command of any kind.
    let marker = unique_marker("db-kill");
    let (mut running, pid) = start(&marker);
    running.child.kill().unwrap();
    running.child.wait().unwrap();
    let folders = folders_of(pid);
    assert!(
        !folders.is_empty(),
        "a SIGKILLed run leaves its data folder"
    );
    let o = support::command()
        .args(["runs", "--db", results.to_str().unwrap()])
        .stdout(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("removed what earlier fairbench processes left behind")
            && err.contains(&*folders[0].to_string_lossy()),
        "{}",
        text(&o)
    );
    assert_nothing_left(&marker);
    assert_no_postgres_of(pid);
}

/// Ctrl-C at a terminal signals fairbench's whole process group, not only
/// fairbench: initdb, PostgreSQL and psql, where they share it, get it too.
/// Whether it lands while PostgreSQL is being set up (its data folder just
/// made) or while `check` grades a server against it, the command ends with
/// 130 — interrupted, not failed by its database (`run` leaves its case
/// pending for --resume, not failed) — and nothing of PostgreSQL is left:
/// no process, no data folder, no control group.
#[test]
fn nothing_of_postgres_is_left_after_a_terminals_ctrl_c_during_setup_or_check() {
    use std::os::unix::process::CommandExt;
    let _serial = serial();
    if !postgres_here() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let root = db_root();
    let results = work.path().join("results.db");
    let suite = write_suite(work.path(), "db-setup-int", "\"db\"", "120s");
    let check = check_args(&root, work.path(), "db-ok", "db,queries,fortunes,updates");
    let check = strs(&check);
    let run = run_args(&suite, &results);
    let run = strs(&run);
    for (name, args, during_setup) in [
        ("db-check-setup", &check, true),
        ("db-check-grading", &check, false),
        ("db-run-setup", &run, true),
    ] {
        let marker = unique_marker(name);
        let log = work.path().join(format!("{name}.stderr"));
        let mut child = support::command()
            .args(args)
            .env(MARKER_VAR, &marker)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = child.id();
        let stderr = || std::fs::read_to_string(&log).unwrap_or_default();
        let t = Instant::now();
        let there = || {
            if during_setup {
                !folders_of(pid).is_empty()
            } else {
                marked_processes(&marker)
                    .iter()
                    .any(|(_, c)| c.contains("db_server.py"))
            }
        };
        while !there() {
            assert!(
                child.try_wait().unwrap().is_none(),
                "{name}: ended first:\n{}",
                stderr()
            );
            assert!(
                t.elapsed() < Duration::from_secs(120),
                "{name}: never got there:\n{}",
                stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        // SAFETY: signalling the process group of the child we started.
        unsafe { libc::killpg(pid as i32, libc::SIGINT) };
        let t = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if t.elapsed() > Duration::from_secs(120) {
                // SAFETY: as above.
                unsafe { libc::killpg(pid as i32, libc::SIGKILL) };
                let _ = child.wait();
                panic!("{name}: did not end after Ctrl-C:\n{}", stderr());
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        assert_nothing_left(&marker);
        assert_no_postgres_of(pid);
        assert_eq!(status.code(), Some(130), "{name}:\n{}", stderr());
    }
    let conn = rusqlite::Connection::open(&results).unwrap();
    let states: Vec<String> = conn
        .prepare("SELECT state FROM cases")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(states, ["pending"], "interrupted, not failed");
}
