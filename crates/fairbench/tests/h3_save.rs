//! `load --http3 --save` as a user runs it against a real HTTP/3 server
//! (quic-go's, from the test kit): the run is stored over h3 with what
//! QUIC did, and `show`, `runs` and `report` read it back; `--dump` over
//! HTTP/3 is one line saying why not.

mod support;

use fairbench_testkit::h3::{start, H3Options};
use support::load::{load_h3, reach_h3, run};
use support::serial;

fn ok(args: &[&str]) -> String {
    let (code, out, err) = run(args);
    assert_eq!(code, 0, "{args:?}\n{out}\n{err}");
    out
}

#[test]
fn a_saved_http3_load_is_stored_over_h3_with_its_quic_counters() {
    let _serial = serial();
    let srv = start(&H3Options::default());
    let dir = tempfile::tempdir().unwrap();
    let (url, _) = reach_h3(&srv, &dir);
    let db = dir.path().join("r.db");
    let db = db.to_str().unwrap();
    let (code, out, err) = load_h3(&srv, &["-n", "200", "--save", "--db", db]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.contains("saved as run 1"), "{err}");

    let show = support::load::json(&ok(&["show", "1", "--db", db, "--json"]));
    support::assert_schema("show", &show);
    let case = &show["cases"][0];
    assert_eq!(case["protocol"], "h3", "{case}");
    assert_eq!(case["server"], url.as_str(), "{case}");
    let h3 = &case["load"]["http3"];
    assert_eq!(h3["streams"], 4, "{case}");
    assert_eq!(h3["handshakes"], 2, "{case}");
    assert_eq!(h3["handshake_failures"], 0, "{case}");
    assert!(h3["packets_sent"].as_u64().unwrap() > 0, "{case}");
    assert_eq!(case["load"]["url"], url.as_str());

    // The table names the protocol beside the URL, as for h2.
    let text = ok(&["show", "1", "--db", db]);
    assert!(text.contains(&format!("{url} over h3")), "{text}");
    let runs = ok(&["runs", "--db", db]);
    assert!(runs.lines().any(|l| l.contains("load")), "{runs}");
    let runs = support::load::json(&ok(&["runs", "--db", db, "--json"]));
    assert_eq!(runs["runs"][0]["state"], "done", "{runs}");

    let html = dir.path().join("r.html");
    ok(&["report", "1", "--db", db, "-o", html.to_str().unwrap()]);
    let html = std::fs::read_to_string(&html).unwrap();
    assert!(
        html.contains(&format!("{url} over h3")),
        "the report names h3"
    );
}

#[test]
fn dump_over_http3_is_one_line_saying_why() {
    let (code, out, err) = run(&[
        "load",
        "--http3",
        "--dump",
        "--insecure",
        "https://127.0.0.1:1/",
    ]);
    assert_eq!(code, 2, "{out}{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("--dump") && err.contains("QUIC encrypts every packet"),
        "{err}"
    );
}
