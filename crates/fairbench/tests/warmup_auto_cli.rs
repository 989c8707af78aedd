//! `load --warmup auto` as a user runs it: the summary and the JSON say
//! how long the warm-up took, and `--save` stores its seconds numbered as
//! a fixed warm-up's are (−k … −1, then the measurement from 0).

mod support;

use support::load::{json, run, Server, HELLO};
use support::serial;

/// The stored warm-up seconds' numbers, in order.
fn warmup_seconds(conn: &rusqlite::Connection) -> Vec<i64> {
    conn.prepare("SELECT second FROM samples WHERE phase = 'warmup' ORDER BY second")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn an_auto_warm_up_is_reported_and_stored_numbered_like_a_fixed_one() {
    let _serial = serial();
    let srv = Server::plain(HELLO);
    let url = srv.url();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let db = db.to_str().unwrap();
    let (code, out, err) = run(&[
        "load", "--warmup", "auto:12s", "-d", "1s", "-c", "2", "-t", "1", "--format", "json",
        "--save", "--db", db, &url,
    ]);
    assert_eq!(code, 0, "{err}");
    let j = json(&out);
    let v = &j["auto_warmup"];
    assert_eq!(v["steady"], true, "{j}");
    assert_eq!(v["watched"], "req/s");
    let took = v["took_s"].as_f64().unwrap();
    // At least the 5 s window and the reconnect second; at most the ceiling's.
    assert!((5.5..15.0).contains(&took), "took {took}");
    assert_eq!(j["warmup_s"].as_f64(), Some(took));

    let conn = rusqlite::Connection::open(db).unwrap();
    let seconds = warmup_seconds(&conn);
    let k = seconds.len() as i64;
    assert!(k >= 6, "{seconds:?}");
    assert_eq!(seconds, (-k..0).collect::<Vec<_>>());
    let first_measured: i64 = conn
        .query_row(
            "SELECT MIN(second) FROM samples WHERE phase = 'measure'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(first_measured, 0);

    // Its report shows what the warm-up took, as a suite's does.
    let (code, out, err) = run(&[
        "report", "latest", "--db", db, "--format", "json", "-o", "-",
    ]);
    assert_eq!(code, 0, "{err}");
    let r = json(&out);
    let a = &r["groups"][0]["auto_warmup"];
    assert_eq!(a["ceiling_s"], 12.0, "{r}");
    // The sum of its stored seconds: the engine's own figure, to within
    // where those seconds' edges fell.
    let taken = a["taken_s"]["median"].as_f64().unwrap();
    assert!((taken - took).abs() < 0.05, "{taken} vs {took}: {r}");

    // The text summary says it.
    let (code, out, err) = run(&["load", "--warmup", "auto:6s", "-d", "1s", "-c", "2", &url]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("warm-up (auto: req/s steady)")
            || out.contains("not steady by the 6 s ceiling"),
        "{out}"
    );
}

#[test]
fn a_warm_up_that_is_neither_a_duration_nor_auto_is_one_line_exit_2() {
    for bad in ["soon", "auto:2s", "auto:later"] {
        let (code, _, err) = run(&["load", "--warmup", bad, "http://127.0.0.1:1/"]);
        assert_eq!(code, 2, "{bad}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains("--warmup"), "{err}");
    }
}

/// A one-service suite with `warmup` as given, run from `dir`.
fn service_suite(dir: &std::path::Path, url: &str, warmup: &str) -> std::path::PathBuf {
    let suite = dir.join("svc.toml");
    std::fs::write(
        &suite,
        format!(
            "name = \"svc\"\nduration = \"1s\"\nrepetitions = 1\nwarmup = \"{warmup}\"\n\n\
             [[service]]\nname = \"api\"\nurl = \"{url}\"\n\n\
             [[load]]\nmodel = \"closed\"\nconnections = 2\n"
        ),
    )
    .unwrap();
    suite
}

#[test]
fn a_suite_warms_up_until_steady_and_its_dry_run_says_at_most_how_long() {
    let _serial = serial();
    let srv = Server::plain(HELLO);
    let dir = tempfile::tempdir().unwrap();
    let suite = service_suite(dir.path(), &srv.url(), "auto:9s");
    let suite = suite.to_str().unwrap();

    let o = support::run_in(dir.path(), &["run", "--suite", suite, "--dry-run"]);
    assert_eq!(o.status.code(), Some(0), "{}", support::stderr(&o));
    let plan = String::from_utf8_lossy(&o.stdout);
    assert!(plan.contains("auto ≤9s"), "{plan}");
    // --warmup overrides the suite's, auto included.
    let o = support::run_in(
        dir.path(),
        &["run", "--suite", suite, "--dry-run", "--warmup", "auto:7s"],
    );
    let plan = String::from_utf8_lossy(&o.stdout);
    assert!(plan.contains("auto ≤7s"), "{plan}");

    let o = support::run_in(dir.path(), &["run", "--suite", suite, "--db", "svc.db"]);
    assert_eq!(o.status.code(), Some(0), "{}", support::stderr(&o));
    let conn = rusqlite::Connection::open(dir.path().join("svc.db")).unwrap();
    let seconds = warmup_seconds(&conn);
    let k = seconds.len() as i64;
    // At least the 5 s window and the reconnect second, at most the ceiling's.
    assert!((6..=12).contains(&k), "{seconds:?}");
    assert_eq!(seconds, (-k..0).collect::<Vec<_>>());
}

#[test]
fn a_suites_warm_up_that_is_neither_a_duration_nor_auto_is_one_line_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let suite = service_suite(dir.path(), "http://127.0.0.1:1/", "soon");
    let o = support::run_in(
        dir.path(),
        &["run", "--suite", suite.to_str().unwrap(), "--dry-run"],
    );
    let err = support::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("warmup") && err.contains("auto[:CEILING]"),
        "{err}"
    );
}
