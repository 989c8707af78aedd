//! What the successes carried: `load` counts each answer's body bytes, so
//! a server that answers some requests with less (an empty 200 under load)
//! is seen in the summary's `Bodies` line, the JSON's `body_sizes` and a
//! warning, instead of looking faster for the work it skipped.

mod support;

use fairbench_testkit::scripted::{Reply, TestServer};
use support::load::{json, run};
use support::serial;

fn half_empty() -> TestServer {
    TestServer::start("127.0.0.1:0", |_, n| match n % 2 {
        0 => Reply::empty(),
        _ => Reply::ok(),
    })
}

#[test]
fn one_size_is_one_line_and_no_warning() {
    let _serial = serial();
    let srv = TestServer::start("127.0.0.1:0", |_, _| Reply::ok());
    let (code, out, err) = run(&["load", "-n", "400", "-c", "2", &srv.url("/")]);
    assert_eq!(code, 0, "{err}");
    let line = out.lines().find(|l| l.trim_start().starts_with("Bodies"));
    assert_eq!(
        line.map(str::split_whitespace)
            .map(Iterator::collect::<Vec<_>>),
        Some(vec!["Bodies", "13", "B", "each"]),
        "{out}"
    );
    assert!(!out.contains("body under half"), "{out}");
}

#[test]
fn a_server_answering_some_requests_with_less_is_shown_and_warned_about() {
    let _serial = serial();
    let srv = half_empty();
    let url = srv.url("/");
    // One connection: the server's alternation is the run's, exactly.
    let (code, out, err) = run(&["load", "-n", "400", "-c", "1", &url]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("Bodies        0 B ×200, 13 B ×200 (from 0 to 13 B)"),
        "{out}"
    );
    assert!(
        out.contains("WARNING: 200 of 400 answers with an expected status (50.0%) carried a body under half the largest (empty against 13 B)"),
        "{out}"
    );
    let (code, out, err) = run(&["load", "--json", "-n", "400", "-c", "1", &url]);
    assert_eq!(code, 0, "{err}");
    let v = json(&out);
    let b = &v["body_sizes"];
    assert_eq!(
        (&b["counts"]["0"], &b["counts"]["13"]),
        (&200.into(), &200.into()),
        "{b}"
    );
    assert_eq!(
        (&b["min"], &b["max"], &b["short"], &b["other"]),
        (&0.into(), &13.into(), &200.into(), &0.into())
    );
    let warned = v["warnings"].as_array().unwrap();
    assert!(
        warned
            .iter()
            .any(|w| w.as_str().unwrap().contains("body under half")),
        "{v}"
    );
}
