//! `fairbench history` on runs saved by `load --save` against a server of
//! this test whose delay it sets: five runs at 2 ms, then one at 6 ms. The
//! change is found at that run, in every output; `--fail-on-change` exits
//! 97 when the newest run starts it and 0 when nothing changed; an unknown
//! case and a bad flag are usage errors; an empty database says so.

mod support;

use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fairbench_testkit::accept::{accept_loop, bind, read_some};
use serde_json::Value;
use support::load::run;
use support::serial;

/// A keep-alive server at one fixed URL for the whole test, answering
/// every request after `delay_ms` (changed between runs: the same case,
/// a slower server).
struct Delayed {
    port: u16,
    delay_ms: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Delayed {
    fn start(ms: u64) -> Delayed {
        let (l, at) = bind("127.0.0.1:0");
        let delay_ms = Arc::new(AtomicU64::new(ms));
        let stop = Arc::new(AtomicBool::new(false));
        let (d, s) = (delay_ms.clone(), stop.clone());
        accept_loop(l, stop.clone(), Duration::from_secs(120), move |c| {
            let (d, s) = (d.clone(), s.clone());
            std::thread::spawn(move || serve(c, &d, &s));
        });
        Delayed {
            port: at.port(),
            delay_ms,
            stop,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }
}

impl Drop for Delayed {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn serve(mut c: TcpStream, delay_ms: &AtomicU64, stop: &AtomicBool) {
    let _ = c.set_nonblocking(false);
    c.set_nodelay(true).ok();
    c.set_read_timeout(Some(Duration::from_millis(200))).ok();
    let (mut buf, mut chunk) = (Vec::new(), [0u8; 8192]);
    let t0 = Instant::now();
    while !stop.load(Ordering::Relaxed) && t0.elapsed() < Duration::from_secs(120) {
        while let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.drain(..i + 4);
            std::thread::sleep(Duration::from_millis(delay_ms.load(Ordering::Relaxed)));
            if c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .is_err()
            {
                return;
            }
        }
        if read_some(&mut c, &mut chunk, &mut buf).is_none() {
            return;
        }
    }
}

fn save(url: &str, db: &str) {
    let (code, out, err) = run(&["load", url, "-c", "1", "-n", "100", "--save", "--db", db]);
    assert_eq!(code, 0, "{out}\n{err}");
}

#[test]
fn a_slower_server_is_a_change_at_its_run_and_fails_ci_when_newest() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let db = db.to_str().unwrap();
    let srv = Delayed::start(2);
    let url = srv.url();
    for _ in 0..5 {
        save(&url, db);
    }
    // The step is +200 %; a loaded machine can move a run's p50 by more
    // than the default 5 %, so the floor is set generously.
    let hist = |extra: &[&str]| {
        let mut a = vec![
            "history",
            "--db",
            db,
            "--metric",
            "p50",
            "--min-change",
            "25",
        ];
        a.extend_from_slice(extra);
        run(&a)
    };
    // Nothing changed: the summary says so and the gate passes.
    let (code, out, err) = hist(&["--fail-on-change"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains(&url) && out.contains("none"), "{out}");

    srv.delay_ms.store(6, Ordering::Relaxed);
    save(&url, db);
    let (code, out, err) = hist(&[
        "--server",
        &url,
        "--scenario",
        "load",
        "--variant=-/default",
    ]);
    assert_eq!(code, 0, "without --fail-on-change: {out}\n{err}");
    let marked: Vec<&str> = out.lines().filter(|l| l.contains('◆')).collect();
    assert_eq!(marked.len(), 1, "{out}");
    assert!(marked[0].trim_start().starts_with("6 "), "{out}");
    assert!(marked[0].contains("worse"), "{out}");

    let (code, _, err) = hist(&["--server", &url, "--fail-on-change"]);
    assert_eq!(code, 97, "{err}");
    assert!(
        err.contains("changed for the worse at the newest run"),
        "{err}"
    );

    let files = ["h.json", "h.csv", "h.svg"].map(|f| dir.path().join(f));
    let (code, out, err) = run(&[
        "history",
        "--db",
        db,
        "--metric",
        "p50",
        "--min-change",
        "25",
        "--server",
        &url,
        "--json",
        "--export-json",
        files[0].to_str().unwrap(),
        "--export-csv",
        files[1].to_str().unwrap(),
        "--svg",
        files[2].to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["format"], "fairbench-history");
    let case = &v["cases"][0];
    assert_eq!(case["points"].as_array().unwrap().len(), 6);
    let change = &case["changes"][0];
    assert_eq!(
        (change["index"].as_u64(), change["run_after"].as_i64()),
        (Some(5), Some(6))
    );
    assert!(change["change_pct"].as_f64().unwrap() > 50.0, "{change}");
    assert_eq!(std::fs::read_to_string(&files[0]).unwrap(), out);
    let csv = std::fs::read_to_string(&files[1]).unwrap();
    assert_eq!(csv.lines().count(), 7, "{csv}");
    assert!(csv.lines().last().unwrap().contains(",worse,"), "{csv}");
    let svg = std::fs::read_to_string(&files[2]).unwrap();
    assert!(
        svg.starts_with("<svg xmlns=") && svg.contains("stroke-dasharray"),
        "{svg}"
    );

    // The same case by response shape, cores and load label; no run has the reference
    // named, so no ratios.
    let load = case["key"]["load"].as_str().unwrap();
    let (code, out, err) = run(&[
        "history",
        "--db",
        db,
        "--variant",
        "default",
        "--cores",
        "0",
        "--load",
        load,
        "--reference",
        "go-nethttp",
        "--metric",
        "p50",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains('◆') && out.contains("p50 latency"), "{out}");
}

/// A run that answered errors fast is not a change for the better: its
/// point is marked and left out of the search, and the gate fails on it.
/// Five runs at 6 ms, a sixth at `newest_ms`, then `set` (an SQL
/// assignment) on the sixth's case: the database's path, in `dir`.
fn six_runs(
    dir: &tempfile::TempDir,
    url: &str,
    srv: &Delayed,
    newest_ms: u64,
    set: &str,
) -> String {
    let db = dir.path().join("r.db").to_str().unwrap().to_string();
    for _ in 0..5 {
        save(url, &db);
    }
    srv.delay_ms.store(newest_ms, Ordering::Relaxed);
    save(url, &db);
    let conn = rusqlite::Connection::open(&db).unwrap();
    let sql = format!("UPDATE cases SET {set} WHERE run_id = (SELECT max(id) FROM runs)");
    assert_eq!(conn.execute(&sql, []).unwrap(), 1);
    db
}

/// `history --db DB --metric p50 --server URL`, then `extra`.
fn p50_history(db: &str, url: &str, extra: &[&str]) -> (i32, String, String) {
    let mut a = vec!["history", "--db", db, "--metric", "p50", "--server", url];
    a.extend_from_slice(extra);
    run(&a)
}

#[test]
fn a_newest_run_that_failed_its_requests_is_marked_and_fails_ci() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let srv = Delayed::start(6);
    let url = srv.url();
    let db = &six_runs(&dir, &url, &srv, 1, "err_status = requests / 2");
    let hist = |extra: &[&str]| p50_history(db, &url, extra);
    let (code, out, err) = hist(&["--min-change", "25"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        !out.contains('◆'),
        "the fast failures are not a change: {out}"
    );
    let marked: Vec<&str> = out.lines().filter(|l| l.contains('✗')).collect();
    assert_eq!(marked.len(), 1, "{out}");
    assert!(marked[0].trim_start().starts_with("6 "), "{out}");
    assert!(
        marked[0].contains("failed 50.0 % of its requests: not searched"),
        "{out}"
    );

    let (code, out, _) = hist(&["--json"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    let points = v["cases"][0]["points"].as_array().unwrap();
    assert!(points[..5].iter().all(|p| p.get("off").is_none()), "{out}");
    assert_eq!(points[5]["off"], "failed 50.0 % of its requests");

    let svg = dir.path().join("h.svg");
    let (code, _, err) = hist(&["--svg", svg.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert_eq!(
        svg.matches("#D55E00").count(),
        1,
        "one vermillion point: {svg}"
    );
    assert!(svg.contains("✗ failed 50.0 % of its requests"), "{svg}");

    let (code, _, err) = hist(&["--fail-on-change"]);
    assert_eq!(code, 97, "{err}");
    assert!(
        err.contains("at the newest run failed 50.0 % of its requests"),
        "{err}"
    );
}

/// A newest run whose generator was saturated shows its server slower
/// than it was: not a change for the worse, yet no gate can vouch for it.
#[test]
fn a_newest_run_bounded_by_its_generator_is_marked_not_a_change() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let srv = Delayed::start(6);
    let url = srv.url();
    let db = &six_runs(&dir, &url, &srv, 18, "saturated = 1");
    let hist = |extra: &[&str]| p50_history(db, &url, extra);
    let (code, out, err) = hist(&["--min-change", "25"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(!out.contains('◆'), "a bound is not a change: {out}");
    let marked: Vec<&str> = out.lines().filter(|l| l.contains('✗')).collect();
    assert_eq!(marked.len(), 1, "{out}");
    assert!(
        marked[0].contains("had its figures bounded by its load generator (saturated, paused by a CPU quota, stopped, sending late or short of local ports): not searched"),
        "{out}"
    );
    let (code, _, err) = hist(&["--fail-on-change"]);
    assert_eq!(code, 97, "{err}");
    assert!(
        err.contains("at the newest run had its figures bounded by its load generator"),
        "{err}"
    );
}

#[test]
fn unknown_cases_bad_flags_and_an_empty_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("empty.db");
    drop(fairbench::store::Store::open(&db).unwrap());
    let db = db.to_str().unwrap();
    let (code, out, _) = run(&["history", "--db", db]);
    assert_eq!(code, 0);
    assert!(out.contains("no finished run"), "{out}");

    let srv = Delayed::start(0);
    save(&srv.url(), db);
    let (code, out, err) = run(&["history", "--db", db, "--server", "nope"]);
    assert_eq!(code, 2, "{out}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("--server"), "{err}");
    let (code, _, err) = run(&["history", "--db", db, "--min-change=-1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--min-change"), "{err}");
    let (code, _, err) = run(&["history", "--db", db, "--reference", "a/b/c/d"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--reference"), "{err}");
}
