//! A short `run` over HTTP/1.1 and h3 against the real go-nethttp (issue
//! 44): its h3 case is measured over QUIC with the load's streams, checked
//! over h3 first, stored (with what QUIC did) and labelled with its
//! protocol, and the report
//! shows the protocols side by side. A server without HTTP/3 is in the
//! plan as not runnable for it, with its manifest's reason.

mod support;

use support::{command, repo, serial, text};

const SUITE: &str = r#"
name = "h3-short"
servers = ["go-nethttp", "java-jdk"]
modes = ["*"]
responses = ["normalized"]
scenarios = ["static"]
protocols = ["http/1.1", "h3"]
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
fn a_short_run_over_http1_and_h3_is_measured_over_quic_and_labelled() {
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

    let out = base(&["--dry-run"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let plan = text(&out);
    for line in [
        "go-nethttp native/normalized static h3 1c closed c=4 t=1 streams=2",
        "java-jdk h3: does not serve HTTP/3 over QUIC (h3)",
    ] {
        assert!(plan.contains(line), "{line:?} not in\n{plan}");
    }

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
    assert_eq!(protocols, ["h3", "http/1.1"], "{shown:#}");
    for c in cases {
        assert_eq!(c["state"], "done", "{c:#}");
        assert!(c["requests"].as_i64().unwrap() > 0, "{c:#}");
        let framing = &c["parity"]["row"]["framing"];
        if c["protocol"] == "h3" {
            // The engine spoke QUIC with two streams per connection, and
            // the check before it spoke h3 too.
            assert_eq!(c["load"]["streams"], 2, "{c:#}");
            assert_eq!(framing, "h3-frames", "{c:#}");
            assert_eq!(c["parity"]["protocol"], "h3", "{c:#}");
            // What QUIC did is kept with the case: its connections'
            // handshakes, the packets that carried the answers.
            let quic = &c["load"]["http3"];
            assert!(quic["handshakes"].as_u64().unwrap() >= 4, "{c:#}");
            assert!(quic["packets_sent"].as_u64().unwrap() > 0, "{c:#}");
        } else {
            assert_eq!(framing, "content-length", "{c:#}");
            assert!(c["load"].get("http3").is_none(), "{c:#}");
        }
    }

    let out = command().args(["show", "--db"]).arg(&db).output().unwrap();
    let table = text(&out);
    assert!(
        table.contains("native/normalized over h3"),
        "the h3 case is labelled:\n{table}"
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("Throughput over HTTP/1.1 and HTTP/3"),
        "the report shows the protocols side by side"
    );
}
