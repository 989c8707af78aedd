//! A suite's `workers` reaches the server as WORKERS, apart from CORES:
//! the study's "one isolate on every CPU" is askable. A deterministic test
//! server (tests/fixtures/pyserver.py behind a wrapper that prints the two
//! variables into the case's log) shows what each start was given.

mod support;

use support::root::Root;
use support::{repo, serial, text};

fn suite(workers: &str) -> String {
    format!(
        r#"name = "w"
responses = ["default"]
scenarios = ["static"]
cores = [1]
{workers}
warmup = "0s"
duration = "1s"
repetitions = 1
[[load]]
model = "closed"
connections = 2
threads = 1
"#
    )
}

#[test]
fn workers_is_passed_as_its_own_setting_and_shown_in_the_case_label() {
    let _serial = serial();
    let wrapper = tempfile::tempdir().unwrap();
    let script = wrapper.path().join("workers_server.py");
    std::fs::write(
        &script,
        format!(
            "import os, sys\n\
             print('env WORKERS=%s CORES=%s' % (os.environ.get('WORKERS', 'unset'), os.environ.get('CORES')), flush=True)\n\
             os.execv(sys.executable, [sys.executable, {:?}] + sys.argv[1:])\n",
            repo().join("tests/fixtures/pyserver.py").to_str().unwrap()
        ),
    )
    .unwrap();
    for (field, want) in [
        ("workers = 3", "env WORKERS=3 CORES=1"),
        ("", "env WORKERS=unset CORES=1"),
    ] {
        let root = Root::with_script(&script, &[("srv", &[])]);
        root.declare_workers("srv", "env");
        root.suite("w", &suite(field));
        let dry = root.run(&["run", "--suite", "w", "--dry-run"]);
        assert_eq!(dry.status.code(), Some(0), "{}", text(&dry));
        let plan = String::from_utf8_lossy(&dry.stdout).into_owned();
        assert_eq!(plan.contains(" 1c w=3 "), !field.is_empty(), "{plan}");
        let out = root.run(&["run", "--suite", "w", "--quiet"]);
        // 1: the case failed (on a machine busy with other builds a second
        // can pass without an answer); the server was started all the same.
        assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
        root.assert_no_servers_left();
        let lines: Vec<String> = support::log_lines(root.path(), std::time::UNIX_EPOCH)
            .into_iter()
            .filter(|l| l.starts_with("env "))
            .collect();
        assert!(!lines.is_empty(), "no server log with the environment");
        assert!(lines.iter().all(|l| l == want), "{field:?}: {lines:?}");
    }
}

#[test]
fn a_server_that_runs_its_own_number_of_workers_is_refused_with_why() {
    let _serial = serial();
    // The test server declares nothing: it runs as many workers as CORES
    // (1 here), whatever WORKERS says; a suite asking 3 is refused, one
    // asking 1 (what it runs) is measured. A server that declares "one"
    // (the study's Dart servers) is refused for 3 as well.
    let root = Root::new(&[("cores-srv", &[]), ("one-srv", &[])]);
    root.declare_workers("one-srv", "one");
    root.suite(
        "w3",
        &suite("workers = 3").replace("name = \"w\"", "name = \"w3\""),
    );
    let out = root.run(&["run", "--suite", "w3", "--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    root.assert_no_servers_left();
    let rows = root.rows("SELECT server, state, reason FROM cases ORDER BY server");
    assert_eq!(rows.len(), 2, "{rows:?}");
    for r in &rows {
        assert_eq!(r[1], "skipped", "{rows:?}");
        assert!(
            r[2].contains("whatever WORKERS says") && r[2].contains("not the 3 asked"),
            "{rows:?}"
        );
    }
    assert!(rows[0][2].contains("workers = \"cores\""), "{rows:?}");
    assert!(rows[1][2].contains("workers = \"one\""), "{rows:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("2 cases were skipped"), "{err}");
    root.suite(
        "w1",
        &suite("workers = 1").replace("name = \"w\"", "name = \"w1\""),
    );
    let out = root.run(&["run", "--suite", "w1", "--quiet"]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
    assert_eq!(
        root.sql::<i64>("SELECT count(*) FROM cases WHERE state != 'skipped' AND run_id = 2"),
        2
    );
}
