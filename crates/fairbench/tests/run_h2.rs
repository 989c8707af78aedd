//! A short `run` over HTTP/1.1, h2c and h2 against the real go-nethttp
//! (issue 21): each case is measured over its protocol, stored with it,
//! labelled by it in `show`, the report and the CSV export, and the report
//! shows the protocols side by side. A server that serves no HTTP/2 is
//! recorded in the plan as not runnable for it, with its reason. The load's
//! `streams` reach its HTTP/2 cases and are stored and shown with it.

mod support;

use support::{command, repo, serial, text};

const SUITE: &str = r#"
name = "h2-short"
servers = ["go-nethttp", "java-jdk"]
modes = ["*"]
responses = ["normalized"]
scenarios = ["static"]
protocols = ["http/1.1", "h2c", "h2"]
cores = [1]
warmup = "0s"
duration = "1s"
timeout = "2s"
repetitions = 1
[[load]]
model = "closed"
connections = 4
threads = 1
streams = 2
"#;

#[test]
fn a_short_run_over_http1_h2c_and_h2_is_stored_and_labelled_by_protocol() {
    let _guard = serial();
    let root = repo();
    let go = support::toolchain_present(&root, "go-nethttp");
    if !support::require(go, "go is not installed") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let html = dir.path().join("r.html");
    let base = support::suite_run(dir.path(), SUITE, &root);

    // The plan: go-nethttp over each protocol; java-jdk over HTTP/1.1 only,
    // and not runnable over HTTP/2, with its manifest's reason.
    let out = base(&["--servers", "go-nethttp,java-jdk", "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let plan = text(&out);
    for line in [
        "go-nethttp native/normalized static 1c closed c=4 t=1 streams=2",
        "go-nethttp native/normalized static h2c 1c closed",
        "go-nethttp native/normalized static h2 1c closed",
        "java-jdk h2c: does not serve HTTP/2 cleartext (h2c): com.sun.net.httpserver's HttpServer speaks HTTP/1.1 only",
    ] {
        assert!(plan.contains(line), "{line:?} not in\n{plan}");
    }
    assert!(
        !plan.contains("java-jdk jit/normalized static h2"),
        "{plan}"
    );
    // --connections replaces the loads with one profile that keeps the
    // suite's streams.
    let out = base(&["--servers", "go-nethttp", "--connections", "8", "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("go-nethttp native/normalized static h2c 1c closed c=8 streams=2"),
        "{}",
        text(&out)
    );

    let out = base(&["--servers", "go-nethttp", "--wait", "--db"])
        .arg(&db)
        .arg("--report")
        .arg(&html)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));

    let out = command()
        .args(["show", "--json", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let shown: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let cases = shown["cases"].as_array().unwrap();
    let mut protocols: Vec<&str> = cases
        .iter()
        .map(|c| c["protocol"].as_str().unwrap())
        .collect();
    protocols.sort();
    assert_eq!(protocols, ["h2", "h2c", "http/1.1"], "{shown:#}");
    for c in cases {
        assert_eq!(c["state"], "done", "{c:#}");
        assert!(c["requests"].as_i64().unwrap() > 0, "{c:#}");
        assert_eq!(c["load"]["streams"], 2, "{c:#}");
        assert_eq!(c["load_label"], "closed c=4 t=1 streams=2", "{c:#}");
        // The check before the load spoke the case's protocol too.
        let p = c["protocol"].as_str().unwrap();
        let framing = &c["parity"]["row"]["framing"];
        if p == "http/1.1" {
            assert_eq!(framing, "content-length", "{c:#}");
        } else {
            assert_eq!(framing, "h2-frames", "{c:#}");
            assert_eq!(c["parity"]["protocol"], p, "{c:#}");
        }
    }

    let out = command().args(["show", "--db"]).arg(&db).output().unwrap();
    let table = text(&out);
    for needle in ["native/normalized over h2c", "native/normalized over h2 "] {
        assert!(table.contains(needle), "{needle:?} in\n{table}");
    }

    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("Throughput over HTTP/1.1 and HTTP/2") && page.contains("over h2c"),
        "the report labels the protocols and shows them side by side"
    );

    let out = command()
        .args(["report", "--db"])
        .arg(&db)
        .args(["--format", "csv"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let body = String::from_utf8_lossy(&out.stdout).into_owned();
    let header: Vec<&str> = body.lines().next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == "protocol").unwrap();
    let mut seen: Vec<String> = body
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(col).unwrap().to_string())
        .collect();
    seen.sort();
    assert_eq!(seen, ["h2", "h2c", "http/1.1"], "{body}");
}
