//! `fairbench load --http3 --zero-rtt` as a user runs it, against quic-go's
//! http3 (the test kit's): 0-RTT counted apart in the summary and in the
//! JSON (valid against its schema), the ledger balanced at a closed loop
//! and at a constant rate, one line when the server allows no early data,
//! and the flag's usage error without --http3.

mod support;

use fairbench_testkit::h3::{start, H3Options, H3Server};
use support::load::{load_h3, run};

/// `load --http3 --zero-rtt` with `more` flags; its exit code, stdout and
/// stderr.
fn load(srv: &H3Server, more: &[&str]) -> (i32, String, String) {
    let mut args = vec!["--zero-rtt"];
    args.extend_from_slice(more);
    load_h3(srv, &args)
}

fn json_of(out: &str) -> serde_json::Value {
    let j: serde_json::Value = serde_json::from_str(out).expect("json");
    support::assert_schema("load", &j);
    let l = &j["ledger"];
    assert_eq!(l["answered"], l["planned"], "{l}");
    j
}

#[test]
fn zero_rtt_is_counted_apart_in_json_and_summary() {
    let srv = start(&H3Options {
        allow_0rtt: true,
        ..Default::default()
    });
    let (code, out, err) = load(&srv, &["-n", "400", "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    let j = json_of(&out);
    assert_eq!(j["ledger"]["planned"], 400);
    let z = &j["http3"]["zero_rtt"];
    assert_eq!(z["primed"], 2, "{z}");
    assert_eq!(z["tried"], 2, "{z}");
    assert_eq!(z["accepted"], 2, "{z}");
    assert_eq!(z["rejected"], 0, "{z}");
    assert!(z["early_requests"].as_u64().unwrap() >= 2, "{z}");
    assert_eq!(z["handshake"]["count"], 2, "{z}");

    // A constant rate: every planned request has one outcome too.
    let (code, out, err) = load(&srv, &["-R", "200", "-d", "2s", "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    let j = json_of(&out);
    assert_eq!(j["http3"]["zero_rtt"]["accepted"], 2, "{}", j["http3"]);

    let (code, out, err) = load(&srv, &["-d", "1s"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("  0-RTT         2 connections tried it: 2 accepted, 0 refused"),
        "{out}"
    );
    assert!(!out.contains("WARNING: 0-RTT"), "{out}");
    // The full handshakes are named apart: every connection resumed.
    assert!(out.contains("  1-RTT         none completed"), "{out}");
}

#[test]
fn a_server_without_early_data_says_so_in_one_line() {
    let srv = start(&H3Options::default());
    let (code, out, err) = load(&srv, &["-d", "1s"]);
    assert_eq!(code, 0, "{out}{err}");
    let said: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("0-RTT was asked"))
        .collect();
    assert_eq!(said.len(), 1, "{out}");
    assert!(said[0].contains("allow no early data"), "{out}");
    assert!(out.contains("0 connections tried it"), "{out}");

    let (code, out, err) = load(&srv, &["-n", "200", "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    let j = json_of(&out);
    assert_eq!(j["http3"]["zero_rtt"]["early_tickets"], 0, "{}", j["http3"]);
    assert_eq!(j["http3"]["zero_rtt"]["tried"], 0, "{}", j["http3"]);
}

#[test]
fn refused_early_data_is_one_line_and_no_request_lost() {
    let srv = start(&H3Options {
        allow_0rtt: true,
        reject_0rtt: true,
        ..Default::default()
    });
    let (code, out, err) = load(&srv, &["-n", "300", "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    let j = json_of(&out);
    assert_eq!(j["ledger"]["planned"], 300);
    let z = &j["http3"]["zero_rtt"];
    assert_eq!(z["rejected"], 2, "{z}");
    assert_eq!(z["resent"], z["early_requests"], "{z}");
    let w = j["warnings"].to_string();
    assert!(w.contains("but refused"), "{w}");
}

#[test]
fn zero_rtt_without_http3_is_a_usage_error() {
    let (code, out, err) = run(&["load", "--zero-rtt", "https://127.0.0.1:1/"]);
    assert_eq!(code, 2, "{out}{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("--zero-rtt") && err.contains("--http3"),
        "{err}"
    );
}
