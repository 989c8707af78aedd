//! `fairbench load --http2` as a user runs it: the bad-input lines, an h2c
//! run's summary and JSON, h2 over TLS (ALPN, `--cacert`), and servers that
//! do not speak h2c or h2.

mod support;

use fairbench_testkit::h2::hello::H2c;
use support::load::{pki, run, Server, HELLO};

/// Exit 2 and exactly one line on stderr, containing `needle`.
fn one_usage_line(args: &[&str], needle: &str) {
    let (code, out, err) = run(args);
    assert_eq!(code, 2, "{args:?}: {out}{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: {needle:?} not in {err}");
}

#[test]
fn http2_flags_that_cannot_work_are_one_line() {
    let url = "http://127.0.0.1:1/";
    one_usage_line(
        &["load", "--http2", "--streams", "0", url],
        "--streams: must be between 1 and 100000",
    );
    one_usage_line(
        &["load", "--http2", "--no-keepalive", url],
        "--http2: cannot be combined with --no-keepalive",
    );
    one_usage_line(
        &["load", "--http2", "--pipeline", "4", url],
        "--http2: cannot be combined with --pipeline (HTTP/2 multiplexes: use --streams N)",
    );
    one_usage_line(
        &["load", "--streams", "8", url],
        "--streams: applies to HTTP/2 only (--http2)",
    );
}

#[test]
fn an_h2c_run_reports_its_streams_settings_and_the_servers_limit() {
    let srv = H2c::start(3);
    let url = srv.url();
    let (code, out, err) = run(&[
        "load",
        "--http2",
        "--streams",
        "8",
        "-c",
        "2",
        "-t",
        "1",
        "-d",
        "1s",
        "--json",
        &url,
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let j: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(j["protocol"], "h2c");
    assert_eq!(j["http2"]["streams"], 8);
    assert_eq!(j["http2"]["server_max_streams"], 3);
    assert_eq!(j["http2"]["settings_sent"]["ENABLE_PUSH"], 0);
    assert_eq!(
        j["http2"]["settings_sent"]["INITIAL_WINDOW_SIZE"],
        2147483647u64
    );
    let l = &j["ledger"];
    assert!(l["answered"].as_u64().unwrap() > 50, "{l}");
    assert_eq!(l["planned"], l["answered"], "{l}");

    let (code, out, err) = run(&[
        "load",
        "--http2",
        "--streams",
        "8",
        "-c",
        "2",
        "-t",
        "1",
        "-d",
        "1s",
        &url,
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("h2c × 8 streams"), "{out}");
    assert!(
        out.contains("sent SETTINGS ENABLE_PUSH=0 INITIAL_WINDOW_SIZE=2147483647"),
        "{out}"
    );
    assert!(
        out.contains("the server allowed 3 streams per connection (fewer than asked)"),
        "{out}"
    );
}

#[test]
fn h2c_asked_of_an_http1_server_is_one_line_exit_1() {
    let srv = Server::plain(HELLO);
    let (code, out, err) = run(&["load", "--http2", "-d", "1s", &srv.url()]);
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("does not speak h2c"), "{err}");
}

#[test]
fn dump_over_h2c_decodes_the_frames_exchanged() {
    let srv = H2c::start(100);
    let (code, out, err) = run(&["load", "--http2", "--dump", &srv.url()]);
    assert_eq!(code, 0, "{out}{err}");
    for needle in [
        "h2c, prior knowledge",
        "→ SETTINGS ENABLE_PUSH=0 INITIAL_WINDOW_SIZE=2147483647",
        "→ WINDOW_UPDATE +2147418112",
        "→ HEADERS stream 1 [END_STREAM END_HEADERS]",
        "    :method: GET",
        "    :path: /",
        "← SETTINGS MAX_CONCURRENT_STREAMS=100",
        "← HEADERS stream 1 [END_HEADERS]",
        "    :status: 200",
        "← DATA stream 1 [END_STREAM] 13 bytes",
        "\"Hello World!\\n\"",
    ] {
        assert!(out.contains(needle), "{needle:?} not in\n{out}");
    }
}

#[test]
fn h2_over_tls_is_chosen_by_alpn_and_answers_every_stream() {
    let pki = pki(&["127.0.0.1"], false);
    let srv = H2c::tls(100, &pki);
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, &pki.ca_pem).unwrap();
    let ca = ca.to_str().unwrap();
    let (code, out, err) = run(&[
        "load",
        "--http2",
        "--streams",
        "4",
        "--cacert",
        ca,
        "-c",
        "2",
        "-t",
        "1",
        "-n",
        "400",
        "--json",
        &srv.url(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let j: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(j["protocol"], "h2");
    assert_eq!(j["http2"]["streams"], 4);
    assert_eq!(j["http2"]["server_max_streams"], 100);
    // Both connections start their handshakes together, but one load
    // thread may carry all 400 requests on the first one open before the
    // second's handshake is done (a fresh clone's CI: 1): one or two.
    let handshakes = j["connections_stats"]["tls_handshakes"].as_u64();
    assert!(matches!(handshakes, Some(1..=2)), "{handshakes:?}");
    let l = &j["ledger"];
    assert_eq!(
        (l["planned"].as_u64(), l["answered"].as_u64()),
        (Some(400), Some(400)),
        "{l}"
    );
    assert_eq!(j["status_codes"]["200"], 400);

    // --dump over TLS: the frames, decoded.
    let (code, out, err) = run(&["load", "--http2", "--dump", "--cacert", ca, &srv.url()]);
    assert_eq!(code, 0, "{out}{err}");
    for needle in [
        "ALPN h2",
        "    :status: 200",
        "← DATA stream 1 [END_STREAM] 13 bytes",
    ] {
        assert!(out.contains(needle), "{needle:?} not in\n{out}");
    }
}

#[test]
fn h2_asked_of_a_tls_server_offering_only_http1_is_one_line_exit_1() {
    let pki = pki(&["127.0.0.1"], false);
    let srv = Server::tls(HELLO, &pki);
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, &pki.ca_pem).unwrap();
    let (code, out, err) = run(&[
        "load",
        "--http2",
        "--cacert",
        ca.to_str().unwrap(),
        "-d",
        "1s",
        &srv.url(),
    ]);
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("does not speak h2") && err.contains("http/1.1"),
        "{err}"
    );
}
