//! The study's "one isolate on every CPU" and its opposite, asked of the
//! real reference servers: go-nethttp and node-http run WORKERS when a
//! suite gives it (GOMAXPROCS, cluster processes) in every response shape,
//! so that the ladder's rungs with `workers = 1` measure them instead of
//! refusing them. Each server's start line in its case log says what ran.

mod support;

use std::time::SystemTime;

use support::check::*;
use support::{repo, serial};

#[test]
fn go_and_node_run_the_workers_a_suite_asks_for() {
    let _serial = serial();
    if !support::require(
        runnable(&["go-nethttp", "node-http"]).len() == 2,
        "go and node (scripts/setup-test-deps.sh installs them)",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("w.toml");
    std::fs::write(
        &suite,
        r#"name = "w"
servers = ["go-nethttp", "node-http"]
responses = ["default", "normalized"]
scenarios = ["static"]
cores = [1]
workers = 2
warmup = "0s"
duration = "1s"
repetitions = 1
[[load]]
model = "closed"
connections = 2
threads = 1
"#,
    )
    .unwrap();
    let db = dir.path().join("results.db");
    let since = SystemTime::now() - std::time::Duration::from_secs(1);
    let run = run_repo_suite(&suite, &db, "workers-real");
    run.expect_code(0);
    let c = rusqlite::Connection::open(&db).unwrap();
    let done: i64 = c
        .query_row(
            "SELECT count(*) FROM cases WHERE state = 'done' AND requests > 0",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(done, 4, "{}", run.stderr);
    let lines = support::log_lines(&repo().join(".fairbench/logs"), since);
    for (shape, want) in [
        ("static/default", "GOMAXPROCS=2"),
        ("static/normalized", "GOMAXPROCS=2"),
    ] {
        assert!(
            lines
                .iter()
                .any(|l| l.contains(&format!("go-nethttp: {shape} ")) && l.ends_with(want)),
            "go-nethttp {shape}: {lines:#?}"
        );
    }
    for shape in ["static/default", "static/normalized"] {
        assert!(
            lines.iter().any(|l| l.contains("node-http")
                && l.contains(&format!(": {shape} "))
                && l.contains("(2 processes)")),
            "node-http {shape}: {lines:#?}"
        );
    }
}
