//! `fairbench compare` on the fixture database: run 2 makes go-nethttp 10 %
//! faster, dart-shelf jit/default static 1 core 20 % slower, and leaves the
//! rest within noise (src/report/fixture/). Golden outputs in text,
//! Markdown and JSON; verdicts; the CI gate; determinism; errors.

mod support;

use fairbench::report::fixture;
use fairbench::store;
use serde_json::Value;
use support::*;

fn fixture_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fixture::standard_db(&dir.path().join("results.db"));
    dir
}

fn json(dir: &std::path::Path, a: &str, b: &str) -> Value {
    serde_json::from_str(&ok(
        dir,
        &["compare", a, b, "--db", "results.db", "--format", "json"],
    ))
    .unwrap()
}

/// `compare A B --fail-on-regression 90`'s exit status, in `dir`.
fn gate(dir: &std::path::Path, a: &str, b: &str) -> Option<i32> {
    let args = [
        "compare",
        a,
        b,
        "--db",
        "results.db",
        "--fail-on-regression",
        "90",
    ];
    run_in(dir, &args).status.code()
}

#[test]
fn outputs_match_golden() {
    let dir = fixture_dir();
    assert_golden(
        "compare.txt",
        &ok(dir.path(), &["compare", "1", "2", "--db", "results.db"]),
    );
    assert_golden(
        "compare.md",
        &ok(
            dir.path(),
            &["compare", "1", "2", "--db", "results.db", "--format", "md"],
        ),
    );
    assert_golden(
        "compare.json",
        &ok(
            dir.path(),
            &[
                "compare",
                "1",
                "2",
                "--db",
                "results.db",
                "--format",
                "json",
            ],
        ),
    );
}

#[test]
fn verdicts_follow_the_changes() {
    let dir = fixture_dir();
    let v = json(dir.path(), "1", "2");
    let cases = v["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 18);
    for c in cases {
        let k = &c["key"];
        let expected = if k["load"].as_str().unwrap().starts_with("rate") {
            "no-significant-difference" // one repetition per step: no verdict possible
        } else if k["server"] == "go-nethttp" {
            "faster"
        } else if k["mode"] == "jit" && k["scenario"] == "static" && k["cores"] == 1 {
            "slower"
        } else {
            "no-significant-difference"
        };
        assert_eq!(c["verdict"], expected, "{k}");
        if expected != "no-significant-difference" {
            assert_eq!(c["rps"]["significant"], true);
        }
    }
    let slower = cases.iter().find(|c| c["verdict"] == "slower").unwrap();
    assert!((slower["rps"]["change_pct"].as_f64().unwrap() + 20.0).abs() < 1e-9);
    assert_eq!(slower["p99_us"]["direction"], "worse");
    let rate = cases
        .iter()
        .find(|c| c["key"]["load"].as_str().unwrap().starts_with("rate"))
        .unwrap();
    assert_eq!(
        rate["primary"], "p99",
        "constant-rate cases are judged by latency"
    );
    assert!(rate["note"].as_str().unwrap().contains("at least 2"));
}

#[test]
fn a_run_against_itself_shows_no_difference() {
    let dir = fixture_dir();
    let v = json(dir.path(), "1", "1");
    assert!(v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["verdict"] == "no-significant-difference"));
}

#[test]
fn verdicts_are_deterministic() {
    let dir = fixture_dir();
    let a = ok(
        dir.path(),
        &[
            "compare",
            "1",
            "2",
            "--db",
            "results.db",
            "--format",
            "json",
        ],
    );
    let b = ok(
        dir.path(),
        &[
            "compare",
            "1",
            "2",
            "--db",
            "results.db",
            "--format",
            "json",
        ],
    );
    assert_eq!(a, b);
}

#[test]
fn fail_on_regression_gates_ci() {
    let dir = fixture_dir();
    // 20 % slower: over 10 %, under 25 %.
    let o = run_in(
        dir.path(),
        &[
            "compare",
            "1",
            "2",
            "--db",
            "results.db",
            "--fail-on-regression",
            "10",
        ],
    );
    // Its own status, not 1 (a failed step) nor 2 (a usage error).
    assert_eq!(o.status.code(), Some(98), "{}", stderr(&o));
    assert!(stdout(&o).contains("REGRESSION"));
    assert!(
        stderr(&o).contains("1 case(s) regressed by more than 10 %, failed over 1 %"),
        "{}",
        stderr(&o)
    );
    let o = run_in(
        dir.path(),
        &[
            "compare",
            "1",
            "2",
            "--db",
            "results.db",
            "--fail-on-regression",
            "25",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // Faster is never a regression.
    let o = run_in(
        dir.path(),
        &[
            "compare",
            "2",
            "1",
            "--db",
            "results.db",
            "--fail-on-regression",
            "5",
        ],
    );
    assert_eq!(o.status.code(), Some(98), "B→A: go is slower now");
    let v: Value = serde_json::from_str(&ok(
        dir.path(),
        &[
            "compare",
            "2",
            "1",
            "--db",
            "results.db",
            "--format",
            "json",
        ],
    ))
    .unwrap();
    assert_eq!(
        v["cases"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["verdict"] == "faster")
            .count(),
        1
    );
    let o = run_in(
        dir.path(),
        &[
            "compare",
            "1",
            "2",
            "--db",
            "results.db",
            "--fail-on-regression",
            "-5",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
}

/// A server that answers errors fast is not faster: when a side failed
/// over 1 % of a case's requests the case is not compared on speed, and B
/// failing is a regression whatever its speed.
#[test]
fn a_side_that_failed_is_not_compared_and_fails_the_gate() {
    let dir = fixture_dir();
    // Run 2's go-nethttp (10 % faster in the closed loop) now counts half
    // as many status errors as it has answers.
    let db = rusqlite::Connection::open(dir.path().join("results.db")).unwrap();
    let n = db
        .execute(
            "UPDATE cases SET err_status = requests / 2 WHERE run_id = 2 AND server = 'go-nethttp'",
            [],
        )
        .unwrap();
    assert!(n > 0);
    drop(db);
    let v = json(dir.path(), "1", "2");
    let cases = v["cases"].as_array().unwrap();
    let go: Vec<&Value> = cases
        .iter()
        .filter(|c| c["key"]["server"] == "go-nethttp")
        .collect();
    assert!(!go.is_empty());
    for c in &go {
        assert_eq!(c["verdict"], "not-compared", "{c}");
        let note = c["note"].as_str().unwrap();
        assert!(note.contains("B failed over 1 % of its requests"), "{note}");
        // Its rate is still shown, higher as before.
        if c["primary"] == "req/s" {
            assert_eq!(c["rps"]["direction"], "better", "{c}");
        }
    }
    assert!(cases
        .iter()
        .filter(|c| c["key"]["server"] != "go-nethttp")
        .all(|c| c["verdict"] != "not-compared"));
    let text = ok(dir.path(), &["compare", "1", "2", "--db", "results.db"]);
    assert!(
        text.contains(
            "not compared (a side failed over 1 % of its requests, answered them with another body, or had its figures bounded by its load generator)"
        ),
        "{text}"
    );
    // B failing is a regression at any threshold; A failing (B→A) is not.
    let gate = |a: &str, b: &str| gate(dir.path(), a, b);
    assert_eq!(gate("1", "2"), Some(98));
    assert_eq!(gate("2", "1"), Some(0));
}

/// A side whose load generator was saturated was at least as fast as
/// measured: B found faster stands, as a lower bound; against a bounded A
/// nothing is concluded, and no gate can vouch for the case.
#[test]
fn a_side_bounded_by_its_generator_is_only_found_faster() {
    let dir = fixture_dir();
    // Run 2's go-nethttp is 10 % faster in the closed loop.
    let mark = |run: i64, to: i64| {
        let db = rusqlite::Connection::open(dir.path().join("results.db")).unwrap();
        let sql = format!("UPDATE cases SET saturated = {to} WHERE run_id = {run} AND server = 'go-nethttp' AND load_label LIKE 'closed%'");
        assert!(db.execute(&sql, []).unwrap() > 0);
    };
    let closed_go = |v: &Value| -> Vec<Value> {
        let cases = v["cases"].as_array().unwrap();
        let closed = |c: &&Value| c["key"]["server"] == "go-nethttp" && c["primary"] == "req/s";
        cases.iter().filter(closed).cloned().collect()
    };
    let gate = |a: &str, b: &str| gate(dir.path(), a, b);
    mark(2, 1);
    let v = json(dir.path(), "1", "2");
    let go = closed_go(&v);
    assert!(!go.is_empty(), "{v}");
    for c in &go {
        assert_eq!(c["verdict"], "faster", "{c}");
        assert_eq!(c["note"], "at least: B's load generator was limited", "{c}");
    }
    assert_eq!(gate("1", "2"), Some(0));
    mark(2, 0);
    mark(1, 1);
    let v = json(dir.path(), "1", "2");
    for c in &closed_go(&v) {
        assert_eq!(c["verdict"], "not-compared", "{c}");
        let note = c["note"].as_str().unwrap();
        assert!(
            note.starts_with("not compared: the load generator limited A "),
            "{note}"
        );
    }
    assert_eq!(gate("1", "2"), Some(98));
}

/// A server that answers some requests with another body than the check
/// proved did other work for them: the case is not compared on speed, and
/// B doing so is a regression whatever its speed.
#[test]
fn a_side_that_answered_other_bodies_is_not_compared_and_fails_the_gate() {
    let dir = fixture_dir();
    let db = rusqlite::Connection::open(dir.path().join("results.db")).unwrap();
    let n = db
        .execute(
            r#"UPDATE cases SET body_sizes_json = '{"counts":{"12":' || (requests / 4) || ',"13":' || (requests - requests / 4) || '},"other":0,"min":12,"max":13}', body_unlike = requests / 4
               WHERE run_id = 2 AND server = 'go-nethttp'"#,
            [],
        )
        .unwrap();
    assert!(n > 0);
    drop(db);
    let v = json(dir.path(), "1", "2");
    let cases = v["cases"].as_array().unwrap();
    for c in cases {
        if c["key"]["server"] == "go-nethttp" {
            assert_eq!(c["verdict"], "not-compared", "{c}");
            let note = c["note"].as_str().unwrap();
            assert!(
                note.starts_with("not compared: B answered over 1 % of its successes with another body than the check proved"),
                "{note}"
            );
        } else {
            assert_ne!(c["verdict"], "not-compared", "{c}");
        }
    }
    let gate = |a: &str, b: &str| gate(dir.path(), a, b);
    assert_eq!(gate("1", "2"), Some(98));
    assert_eq!(gate("2", "1"), Some(0));
}

/// A release that changed its answer is compared, and the note says the
/// two runs did not do the same work.
#[test]
fn a_changed_checked_body_is_named_beside_the_verdict() {
    let dir = fixture_dir();
    let db = rusqlite::Connection::open(dir.path().join("results.db")).unwrap();
    let n = db
        .execute(
            "UPDATE cases SET body_bytes = body_bytes + 1 WHERE run_id = 2 AND server = 'go-nethttp'",
            [],
        )
        .unwrap();
    assert!(n > 0);
    drop(db);
    let v = json(dir.path(), "1", "2");
    for c in v["cases"].as_array().unwrap() {
        let note = c["note"].as_str().unwrap_or_default();
        let named = note.contains("in B: the two runs did not do the same work");
        assert_eq!(named, c["key"]["server"] == "go-nethttp", "{c}");
        if named {
            assert_ne!(c["verdict"], "not-compared", "{c}");
        }
    }
    let text = ok(dir.path(), &["compare", "1", "2", "--db", "results.db"]);
    assert!(
        text.contains("the two runs did not do the same work"),
        "{text}"
    );
}

#[test]
fn runs_from_two_databases() {
    let dir = fixture_dir();
    let other = dir.path().join("other.db");
    {
        let mut s = store::Store::open(&other).unwrap();
        fixture::standard_run(&mut s, fixture::Flavour::Changed);
    }
    let v: Value = serde_json::from_str(&ok(
        dir.path(),
        &[
            "compare",
            "1",
            "latest",
            "--db",
            "results.db",
            "--db-b",
            "other.db",
            "--format",
            "json",
        ],
    ))
    .unwrap();
    assert_eq!(v["b"]["db"], "other.db");
    assert_eq!(
        v["cases"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["verdict"] == "slower")
            .count(),
        1
    );
}

#[test]
fn unmatched_cases_are_listed() {
    let dir = fixture_dir();
    let db = dir.path().join("results.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute(
        "DELETE FROM cases WHERE run_id = 2 AND server = 'go-nethttp' AND scenario = 'dynamic'",
        [],
    )
    .unwrap();
    drop(conn);
    let v = json(dir.path(), "1", "2");
    assert_eq!(v["only_in_a"].as_array().unwrap().len(), 2);
    assert!(v["only_in_b"].as_array().unwrap().is_empty());
    let text = ok(dir.path(), &["compare", "1", "2", "--db", "results.db"]);
    assert!(
        text.contains("only in A: go-nethttp default/normalized — dynamic · 1 core"),
        "{text}"
    );
}

#[test]
fn missing_run_is_a_clear_error() {
    let dir = fixture_dir();
    let o = run_in(dir.path(), &["compare", "1", "7", "--db", "results.db"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("no run 7 in results.db"),
        "{}",
        stderr(&o)
    );
    let o = run_in(dir.path(), &["compare", "1", "2", "--db", "missing.db"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("no results database at missing.db"),
        "{}",
        stderr(&o)
    );
}
