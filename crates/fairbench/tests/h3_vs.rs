//! `load --vs` with HTTP/3 on either side: h2 against h3 (`--http2` for A,
//! `--vs-protocol h3` for B), both over h3, the pair saved and read back
//! by `show`, and each mistake as one line. The h3 side is quic-go's
//! server from the test kit, the h2 side the kit's own HTTP/2 server.

mod support;

use fairbench_testkit::h2::hello::H2c;
use fairbench_testkit::h3::{start, H3Options};
use support::load::{json, pki, run};
use support::serial;

#[test]
fn h2_against_h3_names_each_sides_protocol_and_saves_the_pair() {
    let _serial = serial();
    let h3 = start(&H3Options::default());
    let h2 = H2c::tls(100, &pki(&["127.0.0.1"], false));
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let db = db.to_str().unwrap();
    let url_a = h2.url();
    let url_b = format!("https://127.0.0.1:{}/", h3.addr.port());
    let args = |json: bool| {
        let mut a = vec![
            "load",
            "--http2",
            "--insecure",
            "-c",
            "2",
            "-n",
            "100",
            "--repetitions",
            "2",
            &url_a,
            "--vs",
            &url_b,
            "--vs-protocol",
            "h3",
        ];
        if json {
            a.push("--json");
        } else {
            a.extend(["--save", "--db", db]);
        }
        a
    };
    let (code, out, err) = run(&args(true));
    assert_eq!(code, 0, "{out}{err}");
    let v = json(&out);
    support::assert_schema("load-vs", &v);
    let vs = &v["vs"];
    assert_eq!(
        (&vs["a_protocol"], &vs["b_protocol"]),
        (&"h2".into(), &"h3".into()),
        "{vs}"
    );
    assert_eq!(vs["repetitions"], 2);
    for side in ["a_runs", "b_runs"] {
        for r in vs[side].as_array().unwrap() {
            assert_eq!(
                (r["requests"].as_u64(), r["errors"].as_u64()),
                (Some(100), Some(0)),
                "{vs}"
            );
        }
    }

    let (code, out, err) = run(&args(false));
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(&format!("A  {url_a} over h2")), "{out}");
    assert!(out.contains(&format!("B  {url_b} over h3")), "{out}");
    assert!(err.contains("saved as run 1"), "{err}");
    let show = json(&run(&["show", "1", "--db", db, "--json"]).1);
    let protocols: Vec<(&str, &str)> = show["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["server"].as_str().unwrap(),
                c["protocol"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(protocols.len(), 4, "{show}");
    for (server, protocol) in protocols {
        assert_eq!(protocol, if server == "A" { "h2" } else { "h3" }, "{show}");
    }
    // B's ratio to A, as the pair printed it: h3 relative to h2.
    let (code, text, err) = run(&["show", "1", "--db", db]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains("A over h2") && text.contains("B over h3"),
        "{text}"
    );
    let b_row = text
        .lines()
        .find(|l| l.starts_with("B over h3"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(b_row.contains('×'), "B's ratio to A: {text}");
}

#[test]
fn both_sides_over_h3() {
    let _serial = serial();
    let a = start(&H3Options::default());
    let b = start(&H3Options::default());
    let (url_a, url_b) = (
        format!("https://127.0.0.1:{}/", a.addr.port()),
        format!("https://127.0.0.1:{}/", b.addr.port()),
    );
    let (code, out, err) = run(&[
        "load",
        "--http3",
        "--insecure",
        "-c",
        "2",
        "-n",
        "100",
        "--repetitions",
        "2",
        // The interval's lower end, not the estimate, is judged: with two
        // repetitions beside a busy machine it can fall below any positive
        // ratio one would name, but never to 0 (it is an exponential).
        "--threshold",
        "ratio.rps>0",
        &url_a,
        "--vs",
        &url_b,
        "--json",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let v = json(&out);
    assert_eq!(v["vs"]["a_protocol"], "h3");
    assert_eq!(v["vs"]["b_protocol"], "h3");
    assert_eq!(v["thresholds"][0]["pass"], true, "{v}");
}

#[test]
fn vs_protocol_mistakes_are_one_line() {
    let one_line = |args: &[&str], needle: &str| {
        let (code, out, err) = run(args);
        assert_eq!(code, 2, "{args:?}\n{out}{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains(needle), "{needle:?} in {err}");
    };
    let a = "https://127.0.0.1:1/";
    one_line(
        &["load", "--vs-protocol", "h3", a],
        "--vs-protocol: the protocol of --vs URL_B",
    );
    one_line(
        &["load", a, "--vs", a, "--vs-protocol", "h2c"],
        "--vs-protocol h2c: h2c is HTTP/2 over plain TCP",
    );
    one_line(
        &[
            "load",
            "--http3",
            "--streams",
            "4",
            a,
            "--vs",
            a,
            "--vs-protocol",
            "http/1.1",
        ],
        "--vs-protocol http/1.1: --streams: applies to HTTP/2 only",
    );
    let (code, _, err) = run(&["load", a, "--vs", a, "--vs-protocol", "h4"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unknown protocol"), "{err}");
}
