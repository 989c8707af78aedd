//! `load --threshold`: every form passes once and fails once against a
//! server of known behaviour; a failure exits 99 (not 1: the run itself
//! worked), a passing set exits 0, a mistake exits 2 with one line.

mod support;

use std::time::Duration;

use fairbench_testkit::counting::Counting;
use serde_json::Value;
use support::load::run;
use support::serial;

/// Runs `load URL -n 300` with the thresholds; exit code and the JSON's
/// `thresholds`.
fn check(url: &str, extra: &[&str], thresholds: &[&str]) -> (i32, Vec<(String, bool)>) {
    let mut args = vec!["load", url, "-n", "300", "-c", "2", "--json"];
    args.extend_from_slice(extra);
    for t in thresholds {
        args.push("--threshold");
        args.push(t);
    }
    let (code, out, err) = run(&args);
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    (code, verdicts(&v))
}

/// The JSON's `thresholds`: each as written, and whether it passed.
fn verdicts(v: &Value) -> Vec<(String, bool)> {
    v["thresholds"]
        .as_array()
        .expect("thresholds in the JSON")
        .iter()
        .map(|t| {
            (
                t["threshold"].as_str().unwrap().to_string(),
                t["pass"].as_bool().unwrap(),
            )
        })
        .collect()
}

#[test]
fn every_form_passes_and_fails() {
    let _serial = serial();
    // Every answer 5 ms late: latencies between 5 ms and (generously) 2 s.
    let srv = Counting::start(Duration::from_millis(5));
    let ok = srv.url("/");
    let passing = [
        "p99<2s",
        "p99.9<=2s",
        "p50>4ms",
        "mean<2s",
        "max<3s",
        "errors<0.1%",
        "errors<=0",
        "timeouts=0",
        "timeouts<1%",
        "rps>1",
    ];
    let (code, v) = check(&ok, &[], &passing);
    assert_eq!(code, 0, "{v:?}");
    assert_eq!(v.len(), passing.len());
    assert!(v.iter().all(|(_, pass)| *pass), "{v:?}");

    let failing = [
        "p99<1ms",
        "p99.9<=1ms",
        "p50>2s",
        "mean<1ms",
        "max<1ms",
        "rps>100M",
        "rps<1",
    ];
    for t in failing {
        let (code, v) = check(&ok, &[], &["p99<2s", t]);
        assert_eq!(code, 99, "{t}: {v:?}");
        assert_eq!(v, [("p99<2s".to_string(), true), (t.to_string(), false)]);
    }
    // Every answer a 503: errors fail, by share and by count.
    let down = srv.url("/fail");
    for t in ["errors<0.1%", "errors<5"] {
        let (code, v) = check(&down, &[], &[t]);
        assert_eq!((code, v[0].1), (99, false), "{t}");
    }
}

/// A server behind the asked rate is judged on what it answered within
/// the window, not on the backlog it answered in the drain after it.
#[test]
fn rps_is_judged_on_the_rate_the_server_kept() {
    let _serial = serial();
    // 2 connections, every answer 10 ms: at most 200 a second.
    let srv = Counting::start(Duration::from_millis(10));
    let url = srv.url("/");
    let args = [
        "load",
        &url,
        "-d",
        "2s",
        "-R",
        "400",
        "-c",
        "2",
        "--timeout",
        "20s",
        "--json",
        "--threshold",
        "rps>300",
        "--threshold",
        "rps<260",
    ];
    let (code, out, err) = run(&args);
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    // Every request was answered, the backlog after the window.
    assert_eq!(v["requests"], v["ledger"]["planned"], "{v}");
    assert_eq!(
        verdicts(&v),
        [
            ("rps>300".to_string(), false),
            ("rps<260".to_string(), true)
        ],
        "rps {} of {}",
        v["rps"],
        v["requests"]
    );
    assert_eq!(code, 99, "{err}");
    assert!(v["warnings"].to_string().contains("fell behind"), "{v}");
}

#[test]
fn timeouts_pass_and_fail() {
    let _serial = serial();
    // Half the requests go to /slow (300 ms) with a 100 ms timeout: they
    // time out, the others are answered (a run that answered nothing
    // would exit 1, not 99).
    let dir = tempfile::tempdir().unwrap();
    let srv = Counting::start(Duration::ZERO);
    let file = dir.path().join("t.toml");
    std::fs::write(
        &file,
        "[[target]]\npath = \"/\"\n[[target]]\npath = \"/slow\"\n",
    )
    .unwrap();
    let f = file.to_str().unwrap();
    let url = srv.url("/");
    let (code, v) = check(
        &url,
        &["--targets", f, "--timeout", "100ms"],
        &[
            "timeouts=0",
            "timeouts<10%",
            "timeouts<90%",
            "timeouts<=1000",
        ],
    );
    assert_eq!(code, 99, "{v:?}");
    let pass: Vec<bool> = v.iter().map(|x| x.1).collect();
    assert_eq!(pass, [false, false, true, true], "{v:?}");
}

#[test]
fn a_target_has_thresholds_of_its_own() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let srv = Counting::start(Duration::ZERO);
    let file = dir.path().join("t.toml");
    std::fs::write(
        &file,
        "[[target]]\nname = \"home\"\npath = \"/\"\n[[target]]\nname = \"down\"\npath = \"/fail\"\n",
    )
    .unwrap();
    let f = file.to_str().unwrap();
    let url = srv.url("/");
    let (code, v) = check(
        &url,
        &["--targets", f],
        &["errors{home}<0.1%", "errors{down}<0.1%"],
    );
    assert_eq!(code, 99);
    assert_eq!((v[0].1, v[1].1), (true, false));
    // The whole run: half its answers were 503.
    let (code, v) = check(&url, &["--targets", f], &["errors<40%"]);
    assert_eq!((code, v[0].1), (99, false));
    let (code, v) = check(&url, &["--targets", f], &["errors<60%", "p99{home}<2s"]);
    assert_eq!(code, 0, "{v:?}");
}

#[test]
fn the_table_says_which_failed() {
    let _serial = serial();
    let srv = Counting::start(Duration::ZERO);
    let (code, out, _) = run(&[
        "load",
        &srv.url("/"),
        "-n",
        "100",
        "--threshold",
        "rps>1",
        "--threshold",
        "p99<1us",
    ]);
    assert_eq!(code, 99);
    let row = |t: &str| {
        out.lines()
            .find(|l| l.trim_start().starts_with(t))
            .unwrap_or("")
            .to_string()
    };
    assert!(row("rps>1").ends_with("pass"), "{out}");
    assert!(row("p99<1us").ends_with("FAIL"), "{out}");
    assert!(
        out.contains("1 of 2 thresholds failed (exit code 99)"),
        "{out}"
    );
}

#[test]
fn mistakes_exit_2_before_the_run() {
    let _serial = serial();
    let url = "http://127.0.0.1:9/";
    for (t, want) in [
        ("latency<20ms", "unknown metric \"latency\""),
        ("p99<20", "is not a duration"),
        ("errors", "expected METRIC<VALUE"),
        ("ratio.p99<1.05", "needs --vs"),
        ("p99{item}<20ms", "no target named \"item\""),
    ] {
        let (code, _, err) = run(&["load", url, "-d", "1s", "--threshold", t]);
        assert_eq!(code, 2, "{t}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(want), "{t}: {err}");
    }
}

#[test]
fn a_ci_job_gets_the_summary_in_its_log_and_the_json_as_a_file() {
    let _serial = serial();
    let srv = Counting::start(Duration::from_millis(1));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("load.json");
    let (code, out, err) = run(&[
        "load",
        &srv.url("/"),
        "-n",
        "200",
        "-c",
        "2",
        "--threshold",
        "errors=0",
        "--export-json",
        file.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("Requests") && out.contains("errors=0"),
        "{out}"
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(v["requests"], 200, "{v}");
    assert_eq!(v["thresholds"][0]["pass"], true, "{v}");
    // A path that could never be written (a folder) is refused before the
    // load: exit 2, one line naming the flag.
    let (code, out, err) = run(&[
        "load",
        &srv.url("/"),
        "-n",
        "20",
        "--export-json",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--export-json: ") && err.trim().lines().count() == 1,
        "{err}"
    );
    assert!(!out.contains("Requests"), "{out}");
    // One that fails only when written (its folder takes no new file, even
    // for root) is named with the flag, exit 1, after the summary.
    let (code, out, err) = run(&[
        "load",
        &srv.url("/"),
        "-n",
        "20",
        "--export-json",
        "/proc/self/fairbench-export.json",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("--export-json: "), "{err}");
    assert!(out.contains("Requests"), "{out}");
}
