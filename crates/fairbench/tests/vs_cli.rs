//! `load URL_A --vs URL_B`: before and after, repetition by repetition in a
//! seeded order, with paired ratios. The same URL twice gives ratios near 1
//! and verdicts that say what their intervals say; a server slowed by a
//! known factor gives an interval excluding 1, near that factor; `ratio.`
//! thresholds act on the interval.

mod support;

use std::time::Duration;

use fairbench_testkit::counting::Counting;
use fairbench_testkit::scripted::{Reply, TestServer};
use serde_json::Value;
use support::load::run;
use support::{require, serial};

fn vs(a: &str, b: &str, extra: &[&str]) -> (i32, Value, String) {
    let mut args = vec![
        "load",
        a,
        "--vs",
        b,
        "--repetitions",
        "6",
        "-d",
        "1s",
        "-c",
        "4",
        "--seed",
        "5",
        "--json",
    ];
    args.extend_from_slice(extra);
    let (code, out, err) = run(&args);
    let v = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    (code, v, err)
}

fn ratio<'a>(v: &'a Value, metric: &str) -> &'a Value {
    v["vs"]["ratios"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == metric)
        .unwrap_or_else(|| panic!("no {metric}: {v}"))
}

#[test]
fn the_same_url_twice_gives_ratios_near_one_and_verdicts_that_say_what_the_intervals_say() {
    let _serial = serial();
    // Every answer 50 ms late: 4 connections make 80 req/s, steadily.
    let srv = Counting::start(Duration::from_millis(50));
    let url = srv.url("/");
    // What this machine adds to a 50 ms answer, relative (the test kit's
    // tolerance rule): a busy host moves A and B by its own wake-ups.
    let slack = fairbench_testkit::timing::Slack::of_machine();
    let tol = slack.above(0) as f64 / 50_000.0;
    let (code, v, err) = vs(&url, &url, &["--threshold", "ratio.p50<100"]);
    let verdicts: Vec<String> = v["vs"]["ratios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| format!("{} {} {}", r["metric"], r["ratio"], r["verdict"]))
        .collect();
    assert_eq!(code, 0, "{err}\n{verdicts:#?}\n{}", v["thresholds"]);
    assert_eq!(v["vs"]["repetitions"], 6);
    // Alternating from a seeded start.
    let order = v["vs"]["order"].as_str().unwrap();
    assert!(
        ["AB BA AB BA AB BA", "BA AB BA AB BA AB"].contains(&order),
        "{order}"
    );
    assert_eq!(v["vs"]["a_runs"].as_array().unwrap().len(), 6);
    for m in ["req/s", "p50"] {
        let r = &ratio(&v, m)["ratio"];
        let (lo, hi, g) = (
            r["low"].as_f64().unwrap(),
            r["high"].as_f64().unwrap(),
            r["geomean"].as_f64().unwrap(),
        );
        // The same server twice: the ratio is 1 within the noise of a
        // loaded machine, whatever the interval says. A 1 s repetition of
        // 50 ms answers fits 19 or 20 per connection, so req/s moves in
        // 5 % steps where p50 does not; a ratio computed wrong is off by
        // a factor (0.25 or 4 on the slowed server below).
        // On a quiet machine the band is about ±5 % (p50) and ±10 %
        // (req/s); a ratio computed wrong is off by a factor.
        let band = if m == "req/s" {
            (0.93 - tol)..(1.07 + tol)
        } else {
            (0.97 - tol)..(1.03 + tol)
        };
        assert!(band.contains(&g), "{m}: {g} [{lo}, {hi}], {slack}");
        // The verdict says what the interval says: at 95 % an A/A interval
        // excludes 1 one run in twenty by construction, and then the
        // verdict must name the (small) difference, not hide it.
        let verdict = ratio(&v, m)["verdict"].as_str().unwrap().to_string();
        let negligible = 0.99 <= lo && hi <= 1.01;
        if (lo <= 1.0 && 1.0 <= hi) || negligible {
            assert!(verdict.starts_with("no difference"), "{m}: {verdict}");
        } else {
            assert!(
                verdict.starts_with("B better by") || verdict.starts_with("B worse by"),
                "{m}: {verdict}"
            );
        }
    }
    assert!(
        v["thresholds"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["pass"] == true),
        "{v}"
    );
}

#[test]
fn a_server_slowed_by_a_known_factor_is_found_slower() {
    let _serial = serial();
    // B answers in 200 ms where A takes 50 ms: four times the latency, a
    // quarter of the closed-loop throughput (factors a loaded machine's
    // scheduling delays cannot blur).
    let a = Counting::start(Duration::from_millis(50));
    let b = Counting::start(Duration::from_millis(200));
    let (code, v, err) = vs(&a.url("/"), &b.url("/"), &["--threshold", "ratio.p50<1.05"]);
    // The threshold fails: exit 99, not 1.
    assert_eq!(code, 99, "{err}\n{v}");
    let p50 = &ratio(&v, "p50")["ratio"];
    let (g, lo) = (
        p50["geomean"].as_f64().unwrap(),
        p50["low"].as_f64().unwrap(),
    );
    assert!(lo > 1.0, "p50 interval reaches {lo}: {p50}");
    assert!(
        (2.5..6.0).contains(&g),
        "p50 ratio {g}, expected about 4: {p50}"
    );
    assert!(ratio(&v, "p50")["verdict"]
        .as_str()
        .unwrap()
        .starts_with("B worse by"));
    let rps = &ratio(&v, "req/s")["ratio"];
    assert!(rps["high"].as_f64().unwrap() < 1.0, "{rps}");
    assert!(ratio(&v, "req/s")["verdict"]
        .as_str()
        .unwrap()
        .starts_with("B worse by"));
    // Both servers got every repetition's load.
    assert!(a.count("GET /") > 0 && b.count("GET /") > 0);
    assert_eq!(ratio(&v, "errors")["verdict"], "both under 1 %");
    assert_eq!(ratio(&v, "bodies")["verdict"], "the same", "{v}");
}

/// A server that answers half its requests with a fast 503 has the higher
/// rate and the lower latencies; it is not "better": its speed verdicts
/// are withheld, the errors row says who failed, and a ratio threshold on
/// speed fails.
#[test]
fn a_server_that_fails_fast_is_not_called_better() {
    let _serial = serial();
    let a = Counting::start(Duration::from_millis(20));
    let b = TestServer::start("127.0.0.1:0", |_, n| {
        if n % 2 == 0 {
            Reply {
                bytes: b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy"
                    .to_vec(),
                ..Reply::ok()
            }
        } else {
            Reply {
                delay: Duration::from_millis(20),
                ..Reply::ok()
            }
        }
    });
    let (code, v, err) = vs(&a.url("/"), &b.url("/"), &["--threshold", "ratio.rps>0.5"]);
    assert_eq!(code, 99, "{err}\n{v}");
    // B's rate is the higher, as measured.
    assert!(
        ratio(&v, "req/s")["ratio"]["low"].as_f64().unwrap() > 1.2,
        "{v}"
    );
    for m in ["req/s", "p50", "p90", "p99", "p99.9"] {
        let verdict = ratio(&v, m)["verdict"].as_str().unwrap();
        assert!(
            verdict.starts_with("not compared: B failed over 1 % of its requests (A 0.00 %, B 5"),
            "{m}: {verdict}"
        );
    }
    let errors = ratio(&v, "errors");
    let share = errors["b_median"].as_f64().unwrap();
    assert!((0.45..0.55).contains(&share), "{errors}");
    assert!(errors["ratio"].is_null());
    assert!(errors["verdict"]
        .as_str()
        .unwrap()
        .starts_with("B failed more"));
    let t = &v["thresholds"][0];
    assert_eq!(t["pass"], false, "{t}");
    assert!(
        t["measured"].as_str().unwrap().starts_with("not compared"),
        "{t}"
    );
}

/// A load generator held to a fifth of a CPU by a quota shows both sides
/// slower than their server: no speed verdict is drawn from such bounds,
/// and a ratio threshold cannot pass on them.
#[test]
fn a_generator_paused_by_its_quota_gives_no_speed_verdict() {
    let _serial = serial();
    let Some((g, cpu)) = fairbench_sys::containment::throttle::quota_group(10_000, 2_000) else {
        require(
            false,
            "a cgroup v1 cpu controller to hold the generator to a quota",
        );
        return;
    };
    let srv = Counting::start(Duration::ZERO);
    let url = srv.url("/");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    let db = db.to_str().unwrap();
    let args = format!(
        "load {url} --vs {url} --repetitions 2 -d 1s -c 4 -t 1 --json --threshold ratio.rps>0.5 --threshold p50<1us --save --db {db}"
    );
    // fairbench enters the quota's group before it starts, so that its
    // first load thread is under the quota too: placed from here after
    // the spawn, a busy machine let it start its first repetition first.
    let out = std::process::Command::new("sh")
        .args([
            "-c",
            "echo $$ > \"$1/cgroup.procs\" && shift && exec \"$@\"",
            "sh",
        ])
        .arg(&cpu)
        .arg(support::bin())
        .args(args.split(' '))
        .env("FAIRBENCH_LOCK", support::own_lock())
        .output()
        .unwrap();
    let _ = g.remove();
    let err = String::from_utf8_lossy(&out.stderr);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {err}"));
    assert_eq!(out.status.code(), Some(99), "{err}\n{v}");
    for m in ["req/s", "p50", "p90", "p99", "p99.9"] {
        let verdict = ratio(&v, m)["verdict"].as_str().unwrap();
        assert!(
            verdict.starts_with("not compared: the load generator limited A and B "),
            "{m}: {verdict}"
        );
    }
    // The figures stay, as measured.
    assert!(ratio(&v, "req/s")["ratio"]["geomean"].as_f64().unwrap() > 0.0);
    let threshold = |text: &str| {
        let all = v["thresholds"].as_array().unwrap();
        let t = all.iter().find(|t| t["threshold"] == text);
        t.unwrap_or_else(|| panic!("no {text}: {all:?}")).clone()
    };
    let t = threshold("ratio.rps>0.5");
    assert_eq!(t["pass"], false, "{t}");
    let shown = t["measured"].as_str().unwrap();
    assert!(shown.contains("the load generator limited"), "{t}");
    // B's own figure fails, and says whose bound it is.
    let p50 = threshold("p50<1us");
    assert_eq!(p50["pass"], false, "{p50}");
    let shown = p50["measured"].as_str().unwrap();
    assert!(
        shown.ends_with(" (bounded by the load generator: see its warning)"),
        "{p50}"
    );
    assert!(
        err.contains("a CPU quota paused the load generator"),
        "{err}"
    );
    stored_bounds_withhold_the_comparison(&url, db);
}

/// The run saved under the quota keeps its bound: neither saturated nor
/// late, only the engine's verdict says so, and a comparison with a run
/// of the generator's full speed draws no verdict from it.
fn stored_bounds_withhold_the_comparison(url: &str, db: &str) {
    let (code, out, err) = run(&["show", "1", "--db", db, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let cases = v["cases"].as_array().unwrap();
    assert!(
        !cases.is_empty() && cases.iter().all(|c| c["generator_limited"] == true),
        "{v}"
    );
    let args = ["load", url, "--vs", url, "--repetitions", "2", "-d", "1s"];
    let (code, _, err) = run(&[&args[..], &["-c", "4", "-t", "1", "--save", "--db", db]].concat());
    assert_eq!(code, 0, "{err}");
    let gate = ["compare", "1", "2", "--db", db, "--json"];
    let (code, out, err) = run(&[&gate[..], &["--fail-on-regression", "10"]].concat());
    assert_eq!(code, 98, "the gate cannot vouch for bounds: {out}\n{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    for c in v["cases"].as_array().unwrap() {
        assert_eq!(c["verdict"], "not-compared", "{c}");
        let note = c["note"].as_str().unwrap_or_default();
        assert!(
            note.starts_with("not compared: the load generator limited"),
            "{c}"
        );
    }
}

#[test]
fn the_text_names_both_urls_and_the_order() {
    let _serial = serial();
    let srv = Counting::start(Duration::ZERO);
    let url = srv.url("/");
    let (code, out, err) = run(&[
        "load",
        &url,
        "--vs",
        &url,
        "--repetitions",
        "2",
        "-n",
        "200",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with(&format!("A  {url}\nB  {url}\n")), "{out}");
    assert!(out.contains("2 repetitions each, in the order"), "{out}");
    for m in ["req/s", "p50", "p99"] {
        assert!(
            out.lines().any(|l| l.trim_start().starts_with(m)),
            "{m}: {out}"
        );
    }
    let announced = err.lines().filter(|l| l.starts_with("repetition ")).count();
    assert_eq!(announced, 4, "{err}");
    let bodies = out.lines().find(|l| l.trim_start().starts_with("bodies"));
    assert!(bodies.is_some_and(|l| l.ends_with("the same")), "{out}");
}

/// The study's first fault: answers of unequal bytes compared as if
/// equal. The bodies row names each side's size and says they differ.
#[test]
fn answers_of_unequal_bytes_are_named_in_the_bodies_row() {
    let _serial = serial();
    let a = TestServer::start("127.0.0.1:0", |_, _| Reply::ok());
    let b = TestServer::start("127.0.0.1:0", |_, _| {
        let mut bytes = b"HTTP/1.1 200 OK\r\nContent-Length: 1024\r\n\r\n".to_vec();
        bytes.resize(bytes.len() + 1024, b'x');
        Reply {
            bytes,
            ..Reply::ok()
        }
    });
    let v = short_vs(&a.url("/"), &b.url("/"));
    let row = ratio(&v, "bodies");
    assert_eq!(
        (row["a_median"].as_f64(), row["b_median"].as_f64()),
        (Some(13.0), Some(1024.0))
    );
    assert!(row["ratio"].is_null());
    assert_eq!(
        row["verdict"],
        "differ: A 13 B, B 1024 B, so the two did not do the same work"
    );
    // Sizes that differ by design are compared on speed; a side that
    // answered some of its requests with less is not.
    // (A generator squeezed by a busy machine may still withhold it.)
    let verdict = ratio(&v, "req/s")["verdict"].as_str().unwrap();
    assert!(!verdict.contains("body"), "{verdict}");
    let half_empty = TestServer::start("127.0.0.1:0", |_, n| match n % 2 {
        0 => Reply::empty(),
        _ => Reply::ok(),
    });
    let v = short_vs(&a.url("/"), &half_empty.url("/"));
    for m in ["req/s", "p50", "p99"] {
        let verdict = ratio(&v, m)["verdict"].as_str().unwrap();
        assert_eq!(
            verdict,
            "not compared: B answered over 1 % of its successes with a short body (A 0.00 %, B 50.0 %)",
            "{m}"
        );
    }
}

/// Two repetitions of 200 requests on one connection (the server's
/// alternation is then the run's, exactly).
fn short_vs(a: &str, b: &str) -> Value {
    let args = [
        "load",
        a,
        "--vs",
        b,
        "--repetitions",
        "2",
        "-n",
        "200",
        "-c",
        "1",
        "--json",
    ];
    let (code, out, err) = run(&args);
    assert_eq!(code, 0, "{err}\n{out}");
    serde_json::from_str(&out).unwrap()
}

#[test]
fn adaptive_repetitions_stop_once_every_ratio_is_settled() {
    let _serial = serial();
    // A fourfold difference: every ratio's verdict is known at the first
    // look, long before ±2 % would be, and well before the maximum.
    let a = Counting::start(Duration::from_millis(50));
    let b = Counting::start(Duration::from_millis(200));
    let (code, out, err) = run(&[
        "load",
        &a.url("/"),
        "--vs",
        &b.url("/"),
        "--repetitions",
        "until:2%,max:8",
        "-d",
        "1s",
        "-c",
        "4",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let st = &v["vs"]["stopping"];
    assert_eq!(st["looks"], serde_json::json!([3, 4, 6, 8]), "{st}");
    assert_eq!(st["settled"], true, "{v}");
    let n = st["repetitions"].as_u64().unwrap();
    assert!(n < 8, "{st}");
    assert_eq!(v["vs"]["repetitions"].as_u64(), Some(n));
    assert_eq!(v["vs"]["a_runs"].as_array().unwrap().len() as u64, n);
    // Every interval is at the level spent per look, and every verdict is
    // one the remaining repetitions could not have changed.
    let level = v["vs"]["level"].as_f64().unwrap();
    assert!((level - (1.0 - 0.05 / 4.0)).abs() < 1e-9, "{level}");
    for m in v["vs"]["ratios"].as_array().unwrap() {
        // The rows of shares and sizes have no ratio.
        if m["metric"] == "errors" || m["metric"] == "bodies" {
            continue;
        }
        assert_eq!(m["ratio"]["level"].as_f64(), Some(level), "{m}");
        assert!(
            m["verdict"].as_str().unwrap().starts_with("B worse by"),
            "{m}"
        );
    }
    let announced = err.lines().filter(|l| l.starts_with("repetition ")).count() as u64;
    assert_eq!(announced, 2 * n, "{err}");
    assert!(err.contains("of at most 8: "), "{err}");
}

#[test]
fn mistakes_exit_2() {
    let _serial = serial();
    let (code, _, err) = run(&["load", "http://127.0.0.1:9/", "--repetitions", "3"]);
    assert_eq!(code, 2, "{err}");
    for bad in ["until:0%", "until:3%,max:1", "until:3", "0"] {
        let (code, _, err) = run(&[
            "load",
            "http://127.0.0.1:9/",
            "--vs",
            "http://127.0.0.1:9/",
            "--repetitions",
            bad,
        ]);
        assert_eq!(code, 2, "{bad}: {err}");
        assert!(err.contains("--repetitions"), "{bad}: {err}");
    }
    let (code, _, err) = run(&[
        "load",
        "http://127.0.0.1:9/",
        "--vs",
        "ftp://x/",
        "-d",
        "1s",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--vs"), "{err}");
    let (code, _, err) = run(&[
        "load",
        "http://127.0.0.1:9/",
        "--vs",
        "http://127.0.0.1:9/",
        "--hdr-log",
        "/dev/null",
    ]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn a_saved_pair_is_shown_as_b_relative_to_a() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("vs.db");
    let db = db.to_str().unwrap();
    let srv = Counting::start(Duration::ZERO);
    let url = srv.url("/");
    let (code, _, err) = run(&[
        "load",
        &url,
        "--vs",
        &url,
        "--repetitions",
        "3",
        "-n",
        "300",
        "--save",
        "--db",
        db,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("saved as run 1"), "{err}");
    let (code, out, err) = run(&["show", "1", "--db", db, "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["cases"].as_array().unwrap().len(), 6);
    let rows = v["paired"]["rows"].as_array().unwrap();
    let b = rows
        .iter()
        .find(|r| r["key"]["server"] == "B")
        .expect("B's row");
    assert_eq!(b["role"], "compared");
    assert_eq!(b["reference"]["server"], "A");
    assert_eq!(b["rps"]["n"], 3, "{b}");
    assert_eq!(b["rps"]["repetitions"], serde_json::json!([1, 2, 3]));
    let (code, out, _) = run(&["show", "1", "--db", db]);
    assert_eq!(code, 0);
    assert!(out.contains("relative to A"), "{out}");
}
