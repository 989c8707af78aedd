//! `fairbench load --unix-socket PATH URL`: a server on a unix domain
//! socket, loaded over HTTP/1.1 and h2c, in the closed loop and at a
//! constant rate, every request in the ledger; the summary and the JSON
//! document name the socket and what the answers were timed by; and the
//! mistakes a user can make are usage errors naming the flag. The servers
//! are the test kit's, behind a socket that relays to them.

mod support;

use fairbench_testkit::h2::hello::H2c;
use fairbench_testkit::keepalive::Hello;
use fairbench_testkit::serial;
use fairbench_testkit::unix_relay::UnixRelay;
use serde_json::Value;
use support::load::{json, run};

/// `load --json` over the relay's socket with `args`; the document, checked
/// against its schema, with every request answered.
fn load_json(relay: &UnixRelay, args: &[&str]) -> Value {
    let path = relay.path().to_str().unwrap();
    let mut all = vec!["load", "--unix-socket", path, "http://localhost/", "--json"];
    all.extend_from_slice(args);
    let (code, out, err) = run(&all);
    assert_eq!(code, 0, "{err}");
    let v = json(&out);
    support::assert_schema("load", &v);
    let l = &v["ledger"];
    assert!(l["planned"].as_u64().unwrap() > 0, "{l}");
    assert_eq!(l["planned"], l["answered"], "{l}");
    assert_eq!(v["address"], format!("unix:{path}"));
    assert_eq!(v["answer_clock"], "read");
    v
}

#[test]
fn http1_over_a_unix_socket_in_the_closed_loop_and_at_a_constant_rate() {
    let _t = serial();
    let srv = Hello::start();
    let relay = UnixRelay::to_port(srv.port);
    let v = load_json(&relay, &["-n", "200", "-c", "4", "-t", "1"]);
    assert_eq!(v["ledger"]["planned"], 200);
    assert_eq!(v["mode"], "closed");
    let v = load_json(&relay, &["-R", "200", "-d", "2s", "-c", "4", "-t", "1"]);
    assert_eq!(v["mode"], "rate");
    let planned = v["ledger"]["planned"].as_u64().unwrap();
    assert!((300..=500).contains(&planned), "{planned} planned");
}

#[test]
fn h2c_over_a_unix_socket_in_both_models() {
    let _t = serial();
    let srv = H2c::start(100);
    let relay = UnixRelay::to_port(srv.port);
    let v = load_json(&relay, &["--http2", "-n", "200", "-c", "2", "-t", "1"]);
    assert_eq!(v["protocol"], "h2c");
    let v = load_json(&relay, &["--http2", "-R", "200", "-d", "2s", "-c", "2"]);
    assert_eq!(v["protocol"], "h2c");
}

#[test]
fn the_summary_names_the_socket_and_how_answers_were_timed() {
    let _t = serial();
    let srv = Hello::start();
    let relay = UnixRelay::to_port(srv.port);
    let path = relay.path().to_str().unwrap();
    let (code, out, err) = run(&[
        "load",
        "--unix-socket",
        path,
        "http://localhost/",
        "-R",
        "100",
        "-d",
        "1s",
        "-c",
        "2",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(&format!("http://localhost/ (unix:{path}): constant rate")),
        "{out}"
    );
    assert!(out.contains("answers timed when read"), "{out}");
}

#[test]
fn mistakes_are_usage_errors_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain-file");
    std::fs::write(&file, "x").unwrap();
    let gone = dir.path().join("gone.sock");
    let (file, gone) = (file.to_str().unwrap(), gone.to_str().unwrap());
    let cases: &[(&[&str], &str)] = &[
        (
            &["--unix-socket", gone, "http://localhost/"],
            "--unix-socket: ",
        ),
        (
            &["--unix-socket", file, "http://localhost/"],
            "is not a socket",
        ),
        (
            &[
                "--unix-socket",
                file,
                "--connect-to",
                "::127.0.0.1:1",
                "http://localhost/",
            ],
            "cannot be used with",
        ),
        (
            &[
                "--unix-socket",
                file,
                "--resolve",
                "a:80:127.0.0.1",
                "http://a/",
            ],
            "cannot be used with",
        ),
        (
            &["unix:/run/app.sock"],
            "--unix-socket /run/app.sock http://",
        ),
    ];
    for (args, want) in cases {
        let mut all = vec!["load"];
        all.extend_from_slice(args);
        let (code, _, err) = run(&all);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn https_and_several_generators_are_refused_over_a_socket() {
    let srv = Hello::start();
    let relay = UnixRelay::to_port(srv.port);
    let path = relay.path().to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["https://localhost/"], "http:// only"),
        (
            &["http://localhost/", "--clients", "2"],
            "one load generator",
        ),
    ];
    for (args, want) in cases {
        let mut all = vec!["load", "--unix-socket", path];
        all.extend_from_slice(args);
        let (code, _, err) = run(&all);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}
