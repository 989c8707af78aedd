//! Zoo servers on unix domain sockets (issue 41): `check --address-family
//! unix` and a suite's `address_family = "unix"` start each server whose
//! manifest lists `unix` in its `sockets` on a socket of the work folder,
//! check it and load it there (HTTP/1.1 and h2c, closed loop and constant
//! rate), and leave no process and no socket file behind; a server that
//! cannot listen on one is skipped with its reason. Real servers of the
//! zoo: go-nethttp (the reference) and node-http, node-express as the one
//! without.

mod support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use support::check::*;
use support::{repo, serial};

/// The socket files under `dir`, at any depth.
fn sockets_under(dir: &Path) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(sockets_under(&p));
        } else if p.extension().is_some_and(|x| x == "sock") {
            out.insert(p);
        }
    }
    out
}

#[test]
fn check_reaches_servers_on_their_unix_socket_and_skips_the_others() {
    let _serial = serial();
    let servers = runnable(&["go-nethttp", "node-http", "node-express"]);
    assert!(servers.iter().any(|s| s == "go-nethttp"), "{servers:?}");
    let logs = repo().join(".fairbench/logs");
    let before = sockets_under(&logs);
    let root = repo();
    let run = fairbench(
        &[
            "check",
            "--root",
            root.to_str().unwrap(),
            "--servers",
            &servers.join(","),
            "--variant",
            "normalized",
            "--scenarios",
            "static,dynamic",
            "--protocols",
            "http/1.1,h2c",
            "--address-family",
            "unix",
            "--raw",
            "--json",
        ],
        &[],
        "unix-check",
    );
    run.expect_code(0);
    let r = run.json();
    let cases = r["cases"].as_array().unwrap();
    let mut seen = BTreeSet::new();
    for c in cases {
        let who = format!("{} {} {}", c["server"], c["scenario"], c["protocol"]);
        assert_ne!(c["grade"], "fail", "{who}: {c}");
        let addr = c["raw"]["addr"].as_str().unwrap();
        assert!(addr.starts_with("unix:"), "{who} was reached at {addr}");
        // No address to reach: the IPv4 and IPv6 rules are not graded.
        assert!(rule(c, "ipv4").is_none(), "{who}");
        seen.insert((
            c["server"].as_str().unwrap().to_string(),
            c["protocol"].as_str().unwrap().to_string(),
        ));
    }
    // The text table says so: a dash in the IPV4 and IPV6 columns, not NO.
    if servers.iter().any(|s| s == "go-nethttp") {
        let text = fairbench(
            &[
                "check",
                "--root",
                root.to_str().unwrap(),
                "--servers",
                "go-nethttp",
                "--variant",
                "normalized",
                "--scenarios",
                "static",
                "--address-family",
                "unix",
            ],
            &[],
            "unix-check-text",
        );
        text.expect_code(0);
        let lines: Vec<&str> = text.stdout.lines().collect();
        let header = lines
            .iter()
            .find(|l| l.contains("IPV4"))
            .unwrap_or_else(|| panic!("{}", text.stdout));
        let row = lines
            .iter()
            .find(|l| l.starts_with("go-nethttp"))
            .unwrap_or_else(|| panic!("{}", text.stdout));
        for col in ["IPV4", "IPV6"] {
            let at = header.find(col).unwrap();
            let cell = row.get(at..).unwrap_or("").split_whitespace().next();
            assert_eq!(cell, Some("-"), "{col}:\n{header}\n{row}");
        }
    }
    for s in servers.iter().filter(|s| *s != "node-express") {
        for p in ["http/1.1", "h2c"] {
            assert!(seen.contains(&(s.clone(), p.into())), "{s} {p}: {seen:?}");
        }
    }
    if servers.iter().any(|s| s == "node-express") {
        let why = "cannot listen on a unix socket: not in its server.toml's sockets (tcp)";
        assert!(
            run.stderr.contains(&format!("skip node-express: {why}")),
            "{}",
            run.stderr
        );
        let skipped = r["skipped"].as_array().unwrap();
        assert!(
            skipped
                .iter()
                .any(|s| s["server"] == "node-express" && s["reason"] == why),
            "{skipped:?}"
        );
        assert!(!seen.iter().any(|(s, _)| s == "node-express"));
    }
    let left: Vec<_> = sockets_under(&logs).difference(&before).cloned().collect();
    assert!(left.is_empty(), "socket files left: {left:?}");
}

#[test]
fn a_unix_suite_measures_over_the_socket_with_a_balanced_ledger() {
    let _serial = serial();
    let servers = runnable(&["go-nethttp", "node-express"]);
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("unix.toml");
    std::fs::write(
        &suite,
        format!(
            r#"name = "unix"
servers = [{}]
responses = ["normalized"]
scenarios = ["static"]
protocols = ["http/1.1", "h2c"]
cores = [1]
address_family = "unix"
warmup = "0.5s"
duration = "1s"
repetitions = 1
[[load]]
model = "closed"
connections = 4
threads = 1
[[load]]
model = "rate"
rate = 200
connections = 4
threads = 1
"#,
            servers
                .iter()
                .map(|s| format!("{s:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    )
    .unwrap();
    let db = dir.path().join("results.db");
    let logs = repo().join(".fairbench/logs");
    let before = sockets_under(&logs);
    let run = run_repo_suite(&suite, &db, "unix-run");
    run.expect_code(0);
    let c = rusqlite::Connection::open(&db).unwrap();
    let count = |q: &str| -> i64 { c.query_row(q, [], |r| r.get(0)).unwrap() };
    // go-nethttp over HTTP/1.1 and h2c, closed loop and constant rate.
    assert_eq!(count("SELECT count(*) FROM cases WHERE state = 'done'"), 4);
    assert_eq!(
        count("SELECT count(*) FROM cases WHERE server = 'go-nethttp' AND requests > 0"),
        4,
        "{}",
        run.stderr
    );
    // The ledger: every planned request answered or in one error class.
    assert_eq!(
        count(
            "SELECT count(*) FROM cases WHERE planned = requests + err_connect + err_read
               + err_write + err_timeout + err_parse + err_unanswered"
        ),
        4
    );
    // The case says it went over a unix socket, and so does its load's
    // label, which `show`, reports and `compare` print.
    assert_eq!(
        count(
            "SELECT count(*) FROM cases WHERE json_extract(load_json, '$.address_family') = 'unix'
               AND load_label LIKE '% unix'"
        ),
        4
    );
    let shown = fairbench(
        &["show", "latest", "--db", db.to_str().unwrap()],
        &[],
        "unix-show",
    );
    shown.expect_code(0);
    assert!(
        shown.stdout.contains("closed c=4 t=1 unix"),
        "{}",
        shown.stdout
    );
    if servers.iter().any(|s| s == "node-express") {
        assert!(
            run.stderr.contains("node-express")
                && run.stderr.contains("cannot listen on a unix socket"),
            "{}",
            run.stderr
        );
    }
    let left: Vec<_> = sockets_under(&logs).difference(&before).cloned().collect();
    assert!(left.is_empty(), "socket files left: {left:?}");
}

#[test]
fn unix_sockets_refuse_what_cannot_reach_them() {
    let root = repo();
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("cal.toml");
    std::fs::write(
        &suite,
        "name = \"cal\"\nscenarios = [\"static\"]\nduration = \"1s\"\naddress_family = \"unix\"\ncalibrate = \"wrk\"\n[[load]]\nmodel = \"closed\"\nconnections = 1\n",
    )
    .unwrap();
    let run = fairbench(
        &[
            "run",
            "--root",
            root.to_str().unwrap(),
            "--suite",
            suite.to_str().unwrap(),
            "--dry-run",
        ],
        &[],
        "unix-calibrate",
    );
    run.expect_code(2);
    assert!(
        run.stderr.contains("calibrate") && run.stderr.contains("TCP only"),
        "{}",
        run.stderr
    );
    let run = fairbench(
        &[
            "check",
            "--root",
            root.to_str().unwrap(),
            "--address-family",
            "ipx",
        ],
        &[],
        "unix-bad-family",
    );
    run.expect_code(2);
    assert!(
        run.stderr.contains("--address-family") && run.stderr.contains("or unix"),
        "{}",
        run.stderr
    );
}
