//! Golden outputs of `fairbench report` on the fixture database
//! (src/report/fixture/): Markdown, CSV and JSON, byte for byte.
//! Regenerate after an intended change with UPDATE_GOLDEN=1.

mod support;

use fairbench::report::fixture;
use fairbench::store;
use support::*;

fn fixture_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fixture::standard_db(&dir.path().join("results.db"));
    dir
}

#[test]
fn markdown_matches_golden() {
    let dir = fixture_dir();
    let md = ok(
        dir.path(),
        &["report", "1", "--db", "results.db", "--format", "md"],
    );
    assert_golden("report.md", &md);
}

#[test]
fn csv_matches_golden_and_parses() {
    let dir = fixture_dir();
    let csv_text = ok(
        dir.path(),
        &["report", "1", "--db", "results.db", "--format", "csv"],
    );
    assert_golden("report.csv", &csv_text);
    let mut r = csv::Reader::from_reader(csv_text.as_bytes());
    let header = r.headers().unwrap().clone();
    assert_eq!(header.get(0), Some("run_id"));
    let rows: Vec<csv::StringRecord> = r.records().map(|x| x.unwrap()).collect();
    // 3 variants × 2 scenarios × 2 core counts, plus 2 sweeps × 3 steps.
    assert_eq!(rows.len(), 12 + 6);
    assert!(rows.iter().all(|row| row.len() == header.len()));
}

#[test]
fn json_matches_golden() {
    let dir = fixture_dir();
    let json = ok(
        dir.path(),
        &["report", "1", "--db", "results.db", "--format", "json"],
    );
    assert_golden("report.json", &json);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["format"], "fairbench-report");
    assert_eq!(v["run"]["id"], 1);
}

#[test]
fn latest_is_the_default_run() {
    let dir = fixture_dir();
    let latest = ok(
        dir.path(),
        &["report", "--db", "results.db", "--format", "json"],
    );
    let v: serde_json::Value = serde_json::from_str(&latest).unwrap();
    assert_eq!(v["run"]["id"], 2);
}

/// Not a test: writes the fixture database to $FAIRBENCH_FIXTURE_OUT for
/// looking at by hand (`cargo test --test report_golden write_fixture -- --ignored`).
#[test]
#[ignore]
fn write_fixture() {
    let out = std::env::var("FAIRBENCH_FIXTURE_OUT").expect("FAIRBENCH_FIXTURE_OUT");
    let path = std::path::Path::new(&out);
    let _ = std::fs::remove_file(path);
    fixture::standard_db(path);
    let mut store = store::Store::open(path).unwrap();
    fixture::hostile_run(&mut store);
}
