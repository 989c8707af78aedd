//! A tiny ladder end to end: two test servers (one the reference), two
//! rungs (the second sends the load to [::1]), two repetitions of 1 s.
//! The report's Ladder holds, per rung, exactly the paired ratio of that
//! rung's case, and the move is the per-repetition ratio of ratios; the
//! server saw the second rung's connections over IPv6.

mod support;

use std::time::{Duration, Instant};

use serde_json::Value;
use support::root::Root;
use support::{json, serial, text};

const SUITE: &str = r#"name = "ladder"
reference = "ref-srv"
responses = ["default"]
scenarios = ["static"]
cores = [1]
warmup = "0s"
duration = "1s"
repetitions = 2
interleave = "case"
[[load]]
model = "closed"
connections = 4
threads = 1
[[step]]
name = "literal"
[[step]]
name = "binding"
address_family = "ipv6"
"#;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// The paired row of `server` at rung `step`.
fn paired_row<'a>(report: &'a Value, server: &str, step: &str) -> &'a Value {
    report["paired"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"]["server"] == server && r["key"]["step"] == step)
        .unwrap_or_else(|| panic!("no paired row of {server} at {step}"))
}

#[test]
fn a_ladder_reports_each_rungs_paired_ratio_and_its_move() {
    let _serial = serial();
    let peers = tempfile::NamedTempFile::new().unwrap();
    let peers_path = peers.path().to_str().unwrap().to_string();
    let root = Root::new(&[
        ("ref-srv", &[]),
        (
            "slow-srv",
            &["--delay-ms", "1", "--record-peers", &peers_path],
        ),
    ]);
    root.suite("ladder", SUITE);
    let dry = root.run(&["run", "--suite", "ladder", "--dry-run"]);
    assert_eq!(dry.status.code(), Some(0), "{}", text(&dry));
    let plan = String::from_utf8_lossy(&dry.stdout).into_owned();
    assert!(
        plan.contains("step 0 literal: the suite as written"),
        "{plan}"
    );
    assert!(
        plan.contains("step 1 binding: address_family = ipv6"),
        "{plan}"
    );
    assert!(plan.contains("8 cases"), "{plan}");

    let out = root.run(&["run", "--suite", "ladder", "--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    root.assert_no_servers_left();
    let steps = root.strings("SELECT DISTINCT step FROM cases ORDER BY step");
    assert_eq!(steps, ["binding", "literal"]);
    let seen = std::fs::read_to_string(peers.path()).unwrap();
    assert!(seen.lines().any(|l| l.starts_with("ipv4")), "{seen}");
    assert!(seen.lines().any(|l| l.starts_with("ipv6")), "{seen}");

    let r = json(&root.run(&["report", "latest", "--format", "json"]));
    support::assert_schema("report", &r);
    // show's JSON carries each case's rung (its schema, docs/schemas,
    // allows it; tests/json_schemas.rs checks show's document as a whole).
    let shown = json(&root.run(&["show", "latest", "--json"]));
    let cases = shown["cases"].as_array().unwrap();
    assert!(cases.iter().all(|c| c["step"].is_string()), "{shown}");
    let ladder = &r["ladder"];
    let names: Vec<&str> = ladder["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["literal", "binding"]);
    let rows = ladder["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{ladder}");
    assert_eq!(rows[0]["server"], "slow-srv");
    let cells = rows[0]["cells"].as_array().unwrap();
    for (cell, step) in cells.iter().zip(["literal", "binding"]) {
        let want = &paired_row(&r, "slow-srv", step)["rps"];
        assert_eq!(&cell["rps"], want, "{step}");
        assert_eq!(cell["rps"]["n"], 2, "{step}: {cell}");
    }
    // The move: per repetition, the second rung's ratio over the first's.
    let vals = |step: &str| -> Vec<f64> {
        paired_row(&r, "slow-srv", step)["rps"]["values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect()
    };
    let (a, b) = (vals("literal"), vals("binding"));
    let logs: Vec<f64> = b.iter().zip(&a).map(|(y, x)| (y / x).ln()).collect();
    let geomean = (logs.iter().sum::<f64>() / logs.len() as f64).exp();
    let moved = cells[1]["rps_move"]["geomean"].as_f64().unwrap();
    assert!(close(moved, geomean), "{moved} vs {geomean}");
    assert!(cells[0]["rps_move"].is_null(), "{}", cells[0]);

    let show = root.run(&["show", "latest"]);
    let show = String::from_utf8_lossy(&show.stdout).into_owned();
    for step in ["literal", "binding"] {
        assert!(show.contains(&format!("[{step}] slow-srv")), "{show}");
    }
    let html = root.path().join("ladder.html");
    let out = root.run(&["report", "latest", "-o", html.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let html = std::fs::read_to_string(&html).unwrap();
    assert!(html.contains("table-ladder-rps") && html.contains("table-ladder-p99"));
    // The CSV tells the rungs apart by its `step` column.
    let csv = root.run(&["report", "latest", "--format", "csv"]);
    let mut r = csv::Reader::from_reader(&csv.stdout[..]);
    let at = r
        .headers()
        .unwrap()
        .iter()
        .position(|h| h == "step")
        .expect("a step column");
    let steps: std::collections::BTreeSet<String> = r
        .records()
        .map(|row| row.unwrap()[at].to_string())
        .collect();
    assert_eq!(
        steps,
        ["binding", "literal"].map(String::from).into(),
        "{steps:?}"
    );
    let md = root.run(&["report", "latest", "--format", "md"]);
    let md = String::from_utf8_lossy(&md.stdout).into_owned();
    assert!(md.contains("Ladder"), "{md}");
    let shown = cells[1]["rps"]["geomean"].as_f64().unwrap();
    // The report prints a ratio with two decimals, three below 0.1.
    let shown = if shown < 0.1 {
        format!("{shown:.3}×")
    } else {
        format!("{shown:.2}×")
    };
    assert!(md.contains(&shown), "{shown} not in {md}");
    assert!(
        md.contains(r"| \[binding\] slow-srv native/default |"),
        "{md}"
    );
}

/// The step of the one case still pending after an interrupted ladder.
fn pending_step(root: &Root) -> String {
    root.sql("SELECT step FROM cases WHERE state = 'pending'")
}

#[test]
fn an_interrupted_ladder_resumes_each_rung_as_planned() {
    let _serial = serial();
    let peers = tempfile::NamedTempFile::new().unwrap();
    let peers_path = peers.path().to_str().unwrap().to_string();
    let root = Root::new(&[("srv", &["--record-peers", &peers_path])]);
    root.suite(
        "ladder",
        r#"name = "ladder"
responses = ["default"]
scenarios = ["static"]
cores = [1]
warmup = "0s"
duration = "4s"
repetitions = 1
[[load]]
model = "closed"
connections = 2
threads = 1
[[step]]
name = "literal"
[[step]]
name = "binding"
address_family = "ipv6"
"#,
    );
    let child = root
        .fairbench()
        .args(["run", "--suite", "ladder", "--quiet"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while !(root.db().exists()
        && rusqlite::Connection::open(root.db())
            .and_then(|c| {
                c.query_row("SELECT count(*) FROM cases WHERE state = 'done'", [], |r| {
                    r.get::<_, i64>(0)
                })
            })
            .unwrap_or(0)
            >= 1)
    {
        assert!(t.elapsed() < Duration::from_secs(60), "no rung finished");
        std::thread::sleep(Duration::from_millis(100));
    }
    // Into the second rung's 4 s.
    std::thread::sleep(Duration::from_millis(1000));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    root.assert_no_servers_left();
    let left = pending_step(&root);
    let done = root.strings("SELECT step FROM cases WHERE state = 'done'");
    assert_eq!(done.len(), 1, "{done:?}");
    assert_ne!(done[0], left);

    // Resumed, the pending rung runs with its own settings: the binding
    // rung's load over IPv6, the literal one's over IPv4 alone (the
    // readiness probe and checks may reach a server over IPv4 at any rung).
    std::fs::write(peers.path(), "").unwrap();
    let out = root.run(&["run", "--resume", "1", "--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    root.assert_no_servers_left();
    assert_eq!(
        root.strings("SELECT step FROM cases WHERE state = 'done' ORDER BY step"),
        ["binding", "literal"]
    );
    assert_eq!(root.sql::<i64>("SELECT count(*) FROM cases"), 2);
    let seen = std::fs::read_to_string(peers.path()).unwrap();
    assert_eq!(
        seen.lines().any(|l| l.starts_with("ipv6")),
        left == "binding",
        "{left}: {seen}"
    );
    assert!(!seen.is_empty());
}
