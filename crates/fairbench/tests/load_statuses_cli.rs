//! What the failures did to the figures: answers with a status not
//! expected are counted in every latency figure, as wrk and oha count
//! them, so a server that fails fast would look fast. `load` shows the
//! expected answers apart (`Expected only`, `expected_latency_us`) and its
//! warning says which way the errors pulled the figures.

mod support;

use std::time::Duration;

use fairbench_testkit::scripted::{Reply, TestServer};
use support::load::{json, run};
use support::{assert_schema, serial};

/// The duration printed right after `after` ("30.4 ms", "1.20 s"), in ms.
fn ms_after(out: &str, after: &str) -> f64 {
    let (_, rest) = out
        .split_once(after)
        .unwrap_or_else(|| panic!("no {after:?} in:\n{out}"));
    let mut words = rest.split_whitespace();
    let n: f64 = words.next().and_then(|w| w.parse().ok()).unwrap_or(-1.0);
    match words.next().map(|u| u.trim_end_matches(',')) {
        Some("s") => n * 1_000.0,
        Some("ms") => n,
        Some("µs") => n / 1_000.0,
        u => panic!("{u:?}: no duration after {after:?} in:\n{out}"),
    }
}

#[test]
fn answers_failed_fast_are_shown_apart_from_the_expected_ones() {
    let _serial = serial();
    // One connection: every other answer a 503 at once, the others a 200
    // after 30 ms.
    let srv = TestServer::start("127.0.0.1:0", |_, n| match n % 2 {
        0 => Reply {
            delay: Duration::ZERO,
            bytes: b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n".to_vec(),
            close: false,
        },
        _ => Reply {
            delay: Duration::from_millis(30),
            ..Reply::ok()
        },
    });
    let url = srv.url("/");
    let (code, out, err) = run(&["load", "-n", "40", "-c", "1", &url]);
    assert_eq!(code, 0, "{err}");
    // At least the 30 ms each 200 took (503s mixed in would pull it down);
    // no upper bound, which one stall on a busy runner would cross.
    assert!(ms_after(&out, "  Expected only mean ") >= 30.0, "{out}");
    assert!(
        out.contains("WARNING: 20 of 40 answers had a status not expected (503 ×20): counted as status errors, and in the throughput and every latency figure; the expected answers alone: p50 "),
        "{out}"
    );
    assert!(
        ms_after(&out, "the expected answers alone: p50 ") >= 30.0,
        "{out}"
    );
    let (code, out, err) = run(&["load", "--json", "-n", "40", "-c", "1", &url]);
    assert_eq!(code, 0, "{err}");
    let v = json(&out);
    assert_schema("load", &v);
    let ok = &v["expected_latency_us"];
    assert!(ok["min"].as_u64().unwrap() >= 30_000, "{ok}");
    assert!(ok["mean"].as_f64().unwrap() >= 30_000.0, "{ok}");
    assert!(v["latency_us"]["min"].as_u64().unwrap() < 30_000, "{v}");
}

#[test]
fn without_a_status_error_nothing_is_apart() {
    let _serial = serial();
    let srv = TestServer::start("127.0.0.1:0", |_, _| Reply::ok());
    let (code, out, err) = run(&["load", "-n", "40", "-c", "1", &srv.url("/")]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("Expected only"), "{out}");
    let (code, out, err) = run(&["load", "--json", "-n", "40", "-c", "1", &srv.url("/")]);
    assert_eq!(code, 0, "{err}");
    let v = json(&out);
    assert_schema("load", &v);
    assert!(v["expected_latency_us"].is_null(), "{v}");
}
