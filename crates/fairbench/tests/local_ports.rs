//! A generator out of local ports: its failed connects are its own, so
//! they are counted apart and named loudly, never left to read as the
//! server refusing. In a network namespace of the test's own, where the
//! port range is narrowed to 20 ports without touching the machine's.

mod support;

use std::process::Command;

use support::topology::netns_ready;
use support::*;

#[test]
fn connects_that_fail_for_want_of_a_local_port_are_named_the_generators() {
    if !(netns_ready() && require(have("unshare", "--version"), "unshare (util-linux)")) {
        return;
    }
    let server = repo().join("tests/fixtures/pyserver.py");
    let dir = tempfile::tempdir().unwrap();
    // Each load in a namespace of its own: a fresh table of ports.
    let mut logs = String::new();
    let db = dir.path().join("p.db");
    let vs = format!(
        "--vs http://127.0.0.1:18080/ --repetitions 2 -d 1s --save --db '{}'",
        db.display()
    );
    for (file, rate) in [
        ("closed.json", "-d 2s"),
        ("rate.json", "-R 500 -d 2s"),
        ("vs.json", vs.as_str()),
    ] {
        // Without keep-alive every connection fairbench closes holds its
        // port in TIME_WAIT; over loopback one is reused only after a
        // second, so 20 ports allow about 20 connects a second, and
        // fairbench asks more.
        let script = format!(
            r#"set -e
ip link set lo up
sysctl -q -w net.ipv4.ip_local_port_range="40000 40019"
PORT=18080 SCENARIO=static RESPONSE=normalized python3 '{server}' --lifetime 30 &
srv=$!
for i in $(seq 100); do
  python3 -c 'import socket; socket.create_connection(("127.0.0.1", 18080), 1).close()' 2>/dev/null && break
  sleep 0.1
done
'{bin}' load http://127.0.0.1:18080/ -c 2 {rate} --no-keepalive --json > '{out}' || true
kill $srv"#,
            server = server.display(),
            bin = bin(),
            out = dir.path().join(file).display(),
        );
        let out = Command::new("unshare")
            .args(["-n", "bash", "-c", &script])
            .output()
            .unwrap();
        logs.push_str(&text(&out));
    }
    for (model, file) in [
        ("closed loop", "closed.json"),
        ("constant rate", "rate.json"),
    ] {
        let doc = std::fs::read_to_string(dir.path().join(file)).unwrap_or_default();
        let v: serde_json::Value =
            serde_json::from_str(&doc).unwrap_or_else(|e| panic!("{model}: {e}: {doc}\n{logs}"));
        assert_schema("load", &v);
        let k = &v["connections_stats"];
        let (failed, local) = (
            k["connect_failed"].as_u64().unwrap(),
            k["connect_local"].as_u64().unwrap(),
        );
        // The server refused nothing: every failed connect was this machine's.
        assert!(local > 0, "{model}: {k}\n{logs}");
        assert_eq!(local, failed, "{model}: {k}");
        // Their requests are counted, and none is timed: the server, which
        // answers at once, is not charged the 2 s timeout for them. (At a
        // constant rate the requests sent late, for want of a connection,
        // still hold that wait, as a late generator's do: the run is
        // bounded, and says so.)
        let e = &v["errors"];
        assert!(e["local"].as_u64().unwrap() > 0, "{model}: {e}");
        assert_eq!(e["local"], e["connect"], "{model}: {e}");
        let max_us = v["latency_us"]["max"].as_u64().unwrap_or(u64::MAX);
        if model == "closed loop" {
            assert!(max_us < 1_000_000, "max {max_us} µs: {e}");
        }
        let warnings = v["warnings"].to_string();
        assert!(
            warnings.contains(&format!("{local} of the {failed} failed connects"))
                && warnings.contains("not the server's"),
            "{model}: {warnings}"
        );
        // Requests that found no connection blame the generator, not the
        // server and not --connections.
        if model == "constant rate" {
            assert!(!warnings.contains("raise --connections"), "{warnings}");
            assert!(!warnings.contains("the server fell behind"), "{warnings}");
            assert!(
                warnings.contains("could not open its connections"),
                "{warnings}"
            );
        }
    }
    // Before and after on such a generator: no speed verdict, and the
    // failures named the generator's.
    let doc = std::fs::read_to_string(dir.path().join("vs.json")).unwrap_or_default();
    let v: serde_json::Value =
        serde_json::from_str(&doc).unwrap_or_else(|e| panic!("--vs: {e}: {doc}\n{logs}"));
    assert!(v.get("error").is_none(), "--vs: {v}\n{logs}");
    assert_schema("load-vs", &v);
    for r in v["vs"]["ratios"].as_array().unwrap() {
        let verdict = r["verdict"].as_str().unwrap();
        match r["metric"].as_str().unwrap() {
            "errors" => assert!(
                verdict.contains("were connects that failed on this machine: the generator's"),
                "{verdict}"
            ),
            "bodies" => {}
            m => assert!(
                verdict.starts_with("not compared: the load generator limited A and B "),
                "{m}: {verdict}"
            ),
        }
    }
    stored_failures_are_the_generators(&db);
}

/// The saved pair keeps whose failures they were: the generator bounded
/// both sides (neither saturated nor late), and the report withholds B's
/// ratios for that bound, not for failures it would charge the server.
fn stored_failures_are_the_generators(db: &std::path::Path) {
    let db = db.to_str().unwrap();
    let json = |args: &[&str]| -> serde_json::Value {
        let out = support::command().args(args).output().unwrap();
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)))
    };
    let shown = json(&["show", "1", "--db", db, "--format", "json"]);
    let cases = shown["cases"].as_array().unwrap();
    assert!(!cases.is_empty(), "{shown}");
    for c in cases {
        assert_eq!(
            (&c["generator_limited"], &c["saturated"]),
            (&serde_json::json!(true), &serde_json::json!(false)),
            "{c}"
        );
        assert!(c["connect_local"].as_i64().unwrap() > 0, "{c}");
    }
    let report = json(&["report", "1", "--db", db, "--json"]);
    let rows = report["paired"]["rows"].as_array().unwrap();
    let b = rows.iter().find(|r| r["role"] == "compared").unwrap();
    let why = b["failed"].as_str().unwrap_or_default();
    assert!(
        why.starts_with("not compared: the load generator limited the reference and this case"),
        "{b}"
    );
}
