//! `fairbench load --http3` as a user runs it, against a real HTTP/3
//! server (quic-go's, from the test kit): a run's JSON (valid against its
//! schema) and summary, the bad-input line, and a server that does not
//! speak QUIC.

mod support;

use fairbench_testkit::h3::{start, H3Options};
use support::load::{load_h3, reach_h3, run, Server, HELLO};

#[test]
fn http3_answers_every_stream_and_reports_quic() {
    let srv = start(&H3Options::default());
    let (code, out, err) = load_h3(&srv, &["-n", "400", "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    let j: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(j["protocol"], "h3");
    assert_eq!(j["http2"], serde_json::Value::Null);
    assert_eq!(j["http3"]["streams"], 4);
    assert_eq!(j["http3"]["handshakes"], 2);
    assert_eq!(j["connections_stats"]["tls_handshakes"], 2);
    let l = &j["ledger"];
    assert_eq!(l["planned"], 400);
    assert_eq!(l["answered"], 400, "{l}");
    // The generator's own part, apart from the latency: its ACK delay,
    // the requests' wait inside it, its system calls; QUIC's view of the
    // path beside them.
    let h3 = &j["http3"];
    assert_eq!(h3["ack_delay_ms"], 25, "{h3}");
    assert_eq!(h3["path"]["connections"], 2, "{h3}");
    assert!(h3["path"]["rtt_min_us"].as_u64().unwrap() > 0, "{h3}");
    let timed = h3["send_wait"]["count"].as_u64().unwrap();
    assert!((380..=400).contains(&timed), "{h3}");
    assert!(h3["udp"]["send_calls"].as_u64().unwrap() > 0, "{h3}");
    assert!(
        h3["udp"]["datagrams_received"].as_u64().unwrap() > 0,
        "{h3}"
    );
    // The schema closes its objects: the document is valid as printed.
    let path = support::repo().join("docs/schemas/fairbench-load.schema.json");
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    let index = compiler
        .compile(path.to_str().unwrap(), &mut schemas)
        .unwrap();
    if let Err(e) = schemas.validate(&j, index) {
        panic!("not a valid fairbench-load document:\n{e:#}");
    }

    let dir = tempfile::tempdir().unwrap();
    let (url, ca) = reach_h3(&srv, &dir);
    let (code, out, err) = run(&["load", "--http3", "--cacert", &ca, "-d", "1s", &url]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("h3 × 1 streams"), "{out}");
    assert!(out.contains("QUIC handshakes"), "{out}");
    // No TCP connect to time over QUIC: the handshake has the line.
    assert!(
        !out.contains("  Connect ") && out.contains("  Handshake     "),
        "{out}"
    );
    assert!(
        out.contains("QUIC path") && out.contains("RTT smoothed"),
        "{out}"
    );
    assert!(
        out.contains("  Client QUIC   ACK delay up to 25 ms"),
        "{out}"
    );
    assert!(out.contains("waited for their first packet"), "{out}");
    assert!(out.contains("UDP system calls per answer"), "{out}");
}

#[test]
fn http3_to_a_server_without_quic_is_one_line_exit_1() {
    // A TCP server: its port number has nothing listening on UDP.
    let srv = Server::plain(HELLO);
    let url = srv.url().replace("http://", "https://");
    let (code, out, err) = run(&["load", "--http3", "--insecure", "-d", "1s", &url]);
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("QUIC"), "{err}");
}

#[test]
fn http3_flags_that_cannot_work_are_one_line() {
    let (code, out, err) = run(&["load", "--http3", "http://127.0.0.1:1/"]);
    assert_eq!(code, 2, "{out}{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("--http3") && err.contains("https://"), "{err}");
    let (code, _, err) = run(&["load", "--http3", "--http2", "https://127.0.0.1:1/"]);
    assert_eq!(code, 2, "{err}");
}
