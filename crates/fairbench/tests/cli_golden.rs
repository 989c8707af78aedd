//! Golden outputs of the read-only commands on the fixture database
//! (src/report/fixture/), byte for byte: `runs` and `show` (text and
//! JSON, the hostile run included), the HTML report, and the HdrHistogram
//! interval logs of `report --hdr`. Together with report_golden.rs and
//! compare_cli.rs they pin everything fairbench prints from a stored run.
//! Regenerate after an intended change with UPDATE_GOLDEN=1.

mod support;

use support::*;

#[test]
fn runs_matches_golden() {
    let dir = fixture_db();
    assert_golden("runs.txt", &ok(dir.path(), &["runs", "--db", "results.db"]));
    assert_golden(
        "runs.json",
        &ok(dir.path(), &["runs", "--db", "results.db", "--json"]),
    );
}

#[test]
fn show_matches_golden() {
    let dir = fixture_db();
    for run in ["1", "3"] {
        assert_golden(
            &format!("show-{run}.txt"),
            &ok(dir.path(), &["show", run, "--db", "results.db"]),
        );
        assert_golden(
            &format!("show-{run}.json"),
            &ok(dir.path(), &["show", run, "--db", "results.db", "--json"]),
        );
    }
    // Without a run: the latest.
    assert_eq!(
        ok(dir.path(), &["show", "--db", "results.db"]),
        ok(dir.path(), &["show", "3", "--db", "results.db"])
    );
}

#[test]
fn html_report_matches_golden() {
    let dir = fixture_db();
    for run in ["1", "3"] {
        let printed = ok(
            dir.path(),
            &["report", run, "--db", "results.db", "-o", "-"],
        );
        assert_golden(&format!("report-{run}.html"), &printed);
        // Written to a file, the report is the same bytes.
        let file = format!("written-{run}.html");
        ok(
            dir.path(),
            &["report", run, "--db", "results.db", "--output", &file],
        );
        let written = std::fs::read_to_string(dir.path().join(&file)).unwrap();
        assert_eq!(written, printed, "--output {file} differs from -o -");
    }
}

#[test]
fn hdr_logs_match_golden() {
    let dir = fixture_db();
    ok(
        dir.path(),
        &[
            "report",
            "1",
            "--db",
            "results.db",
            "--format",
            "json",
            "-o",
            "r.json",
            "--hdr",
            "hlog",
        ],
    );
    let mut names: Vec<String> = std::fs::read_dir(dir.path().join("hlog"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    // Every finished case has its log; the files, names and contents, in one.
    let mut all = String::new();
    for n in &names {
        let text = std::fs::read_to_string(dir.path().join("hlog").join(n)).unwrap();
        all.push_str(&format!("==> {n} <==\n{text}"));
    }
    assert_eq!(names.len(), 41, "{names:?}");
    assert_golden("report-1.hlog.txt", &all);
}
