//! `fairbench report --servers`: a report of some of a run's servers (the
//! study's "best Dart servers" charts), the same selection in every format
//! and in --hdr, its ratios still paired with the reference of the whole
//! run, and a note saying it is a selection.

mod support;

use fairbench::report::fixture;
use support::*;

fn fixture_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fixture::standard_db(&dir.path().join("results.db"));
    dir
}

#[test]
fn servers_selects_the_same_servers_in_every_format_and_says_so() {
    let dir = fixture_dir();
    let base = ["report", "1", "--db", "results.db"];
    let with = |extra: &[&str]| {
        let mut a = base.to_vec();
        a.extend_from_slice(extra);
        ok(dir.path(), &a)
    };

    // The whole run has both servers; the selection only dart-shelf.
    let all = with(&["--format", "csv"]);
    assert!(all.contains("go-nethttp") && all.contains("dart-shelf"));
    let csv_text = with(&["--format", "csv", "--servers", "dart-*"]);
    let mut r = csv::Reader::from_reader(csv_text.as_bytes());
    let col = r
        .headers()
        .unwrap()
        .iter()
        .position(|h| h == "server")
        .unwrap();
    let servers: Vec<String> = r.records().map(|x| x.unwrap()[col].to_string()).collect();
    assert!(!servers.is_empty());
    assert!(servers.iter().all(|s| s == "dart-shelf"), "{servers:?}");

    let json: serde_json::Value =
        serde_json::from_str(&with(&["--format", "json", "--servers", "dart-shelf"])).unwrap();
    let names: Vec<&str> = json["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["dart-shelf"]);
    // Ratios to go-nethttp survive leaving it out of the view.
    let rows = json["paired"]["rows"].as_array().unwrap();
    assert!(!rows.is_empty(), "{}", json["paired"]);
    assert!(rows.iter().all(|r| r["key"]["server"] == "dart-shelf"));
    let notes = json["paired"]["notes"].to_string();
    assert!(notes.contains("selected with --servers"), "{notes}");

    let md = with(&["--format", "md", "--servers", "go-nethttp"]);
    assert!(
        md.contains("go-nethttp") && !md.contains("dart-shelf"),
        "{md}"
    );
    assert!(md.contains("selected with --servers"), "{md}");
    let html = with(&["-o", "-", "--servers", "go-nethttp"]);
    assert!(html.contains("selected with --servers"));
    assert!(!html.contains("dart-shelf"));

    // --hdr writes the selected servers' logs only.
    with(&[
        "--format",
        "json",
        "--servers",
        "go-nethttp",
        "--hdr",
        "logs",
    ]);
    let files: Vec<String> = std::fs::read_dir(dir.path().join("logs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!files.is_empty());
    assert!(files.iter().all(|f| f.contains("go-nethttp")), "{files:?}");

    // Nothing selected: one line naming the flag and the run's servers.
    let mut a = base.to_vec();
    a.extend_from_slice(&["--format", "md", "--servers", "nginx"]);
    let o = run_in(dir.path(), &a);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = stderr(&o);
    assert!(
        err.contains("--servers") && err.contains("dart-shelf, go-nethttp"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}
