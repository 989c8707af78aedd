//! `fairbench load` as a user runs it: exit codes, messages, JSON, HDR logs.

mod support;

use std::time::{Duration, Instant};

use support::load::{closed_port, json, run, Server, HELLO, NOT_FOUND};
use support::net::Recorder;
use support::serial;
use support::{base64_decode, command as fairbench};

#[test]
fn usage_errors_name_the_flag_and_exit_2() {
    let cases: &[(&[&str], &str)] = &[
        (&["load", "not a url"], "URL"),
        (
            &["load", "ftp://127.0.0.1/"],
            "expected http:// or https://",
        ),
        (&["load", "-n", "0", "http://127.0.0.1:1/"], "--requests"),
        (
            &["load", "--expect-status", "2000", "http://127.0.0.1:1/"],
            "--expect-status",
        ),
        (
            &["load", "--percentiles", "50,101", "http://127.0.0.1:1/"],
            "--percentiles",
        ),
        (
            &[
                "load",
                "--cacert",
                "/nonexistent/ca.pem",
                "https://127.0.0.1:1/",
            ],
            "--cacert: cannot read /nonexistent/ca.pem",
        ),
        (&["load", "--insecure", "http://127.0.0.1:1/"], "--insecure"),
        (
            &[
                "load",
                "--no-keepalive",
                "--pipeline",
                "2",
                "http://127.0.0.1:1/",
            ],
            "--pipeline",
        ),
        (&["load", "-c", "0", "http://127.0.0.1:1/"], "--connections"),
        (
            &["load", "-c", "1q", "http://127.0.0.1:1/"],
            "--connections",
        ),
        (
            &["load", "--conections", "5", "http://127.0.0.1:1/"],
            "a similar argument exists: '--connections'",
        ),
        (
            &["load", "-n", "1.0005k", "http://127.0.0.1:1/"],
            "not a whole number",
        ),
        (&["load", "-R", "10q", "http://127.0.0.1:1/"], "--rate"),
        (&["load", "-t", "0", "http://127.0.0.1:1/"], "--threads"),
        (
            &["load", "--pipeline", "1m", "http://127.0.0.1:1/"],
            "M for million",
        ),
        (&["load", "-R", "-5", "http://127.0.0.1:1/"], "--rate"),
        (&["load", "-d", "0", "http://127.0.0.1:1/"], "--duration"),
        (&["load", "-d", "1e20", "http://127.0.0.1:1/"], "--duration"),
        (
            &["load", "--timeout", "1e20", "http://127.0.0.1:1/"],
            "--timeout",
        ),
        (&["load", "-R", "1e-12", "http://127.0.0.1:1/"], "--rate"),
        (
            &[
                "load",
                "-R",
                "100",
                "--send-ahead",
                "5ms",
                "http://127.0.0.1:1/",
            ],
            "--send-ahead",
        ),
        (
            &["load", "--send-ahead", "soon", "http://127.0.0.1:1/"],
            "--send-ahead",
        ),
        (&["load", "--cpus", "x", "http://127.0.0.1:1/"], "--cpus"),
        (
            &["load", "-H", "nocolon", "http://127.0.0.1:1/"],
            "--header",
        ),
        (
            &[
                "load",
                "--body-file",
                "/nonexistent/x",
                "http://127.0.0.1:1/",
            ],
            "--body-file",
        ),
    ];
    for (args, needle) in cases {
        let (code, _, err) = run(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    }
}

#[test]
fn refused_connection_exits_1_with_one_line() {
    let port = closed_port();
    let (code, out, err) = run(&["load", "-d", "1s", &format!("http://127.0.0.1:{port}/")]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("cannot connect") && err.contains("refused"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn json_has_the_documented_keys() {
    let _serial = serial();
    let srv = Server::plain(HELLO);
    let (code, out, err) = run(&[
        "load",
        "--json",
        "-c",
        "4",
        "-t",
        "2",
        "-d",
        "1s",
        "-R",
        "200",
        &srv.url(),
    ]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
    for key in [
        "requests",
        "duration_s",
        "rps",
        "latency_us",
        "uncorrected_latency_us",
        "send_lateness_us",
        "errors",
        "bytes_read",
        "timeouts_per_million",
        "generator_cpu_s",
        "saturated",
        "series",
        "host_steal_fraction",
    ] {
        assert!(j.get(key).is_some(), "missing {key}");
    }
    for key in [
        "min", "mean", "stdev", "max", "p50", "p75", "p90", "p99", "p999", "p9999",
    ] {
        assert!(j["latency_us"][key].is_number(), "latency_us.{key}");
        assert!(
            j["send_lateness_us"][key].is_number(),
            "send_lateness_us.{key}"
        );
    }
    for key in ["connect", "read", "write", "timeout", "status", "parse"] {
        assert_eq!(j["errors"][key], 0, "errors.{key}");
    }
    let reqs = j["requests"].as_u64().unwrap();
    assert!((150..=250).contains(&reqs), "200 req/s for 1 s gave {reqs}");
    assert_eq!(j["bytes_read"].as_u64().unwrap(), reqs * 52);
    let series = j["series"].as_array().unwrap();
    let in_series: u64 = series.iter().map(|s| s["requests"].as_u64().unwrap()).sum();
    assert!(
        in_series.abs_diff(reqs) <= 5,
        "series {in_series} vs {reqs}"
    );
    assert_eq!(j["mode"], "rate");
}

#[test]
fn text_summary_and_latency_table() {
    let _serial = serial();
    let srv = Server::plain(HELLO);
    let (code, out, err) = run(&[
        "load",
        "--latency",
        "-c",
        "2",
        "-t",
        "1",
        "-d",
        "1s",
        &srv.url(),
    ]);
    assert_eq!(code, 0, "{err}");
    for needle in [
        "Requests",
        "req/s",
        "Latency",
        "p99",
        "Errors",
        "none",
        "99.9%",
        "Generator",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in\n{out}");
    }
    // Not a terminal: no progress bar escape codes anywhere.
    assert!(!out.contains('\x1b') && !err.contains('\x1b'));
}

#[test]
fn hdr_log_is_readable_by_the_interval_log_reader() {
    let _serial = serial();
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hdrhistogram::serialization::Deserializer;
    let srv = Server::plain(HELLO);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.hlog");
    let (code, _, err) = run(&[
        "load",
        "-c",
        "2",
        "-t",
        "1",
        "-d",
        "2s",
        "--hdr-log",
        path.to_str().unwrap(),
        &srv.url(),
    ]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read(&path).unwrap();
    let mut lengths = Vec::new();
    let mut total = 0;
    let mut de = Deserializer::new();
    for entry in IntervalLogIterator::new(&text) {
        if let LogEntry::Interval(iv) = entry.expect("well-formed log") {
            let bytes = base64_decode(iv.encoded_histogram());
            let h: hdrhistogram::Histogram<u64> =
                de.deserialize(&mut &bytes[..]).expect("histogram");
            total += h.len();
            lengths.push(iv.duration().as_secs_f64());
        }
    }
    // One interval per measured second, then at most one short drain
    // interval holding the answers to requests still in flight at the end.
    let full = lengths.iter().filter(|&&l| l > 0.9).count();
    assert_eq!(full, 2, "one interval per second: {lengths:?}");
    assert!(lengths.len() <= 3, "{lengths:?}");
    if lengths.len() == 3 {
        assert!(lengths[2] < 0.5, "drain interval: {lengths:?}");
    }
    assert!(total > 100, "{total} latencies in the log");
}

#[test]
fn ctrl_c_prints_what_was_measured() {
    let _serial = serial();
    let srv = Server::plain(HELLO);
    let child = fairbench()
        .args(["load", "--json", "-c", "2", "-t", "1", "-d", "30s"])
        .arg(srv.url())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Ctrl-C once answers came (handler in, load under way), not after a
    // fixed guess at how long a busy runner takes to start.
    let until = Instant::now() + Duration::from_secs(30);
    while srv.requests.lock().unwrap().len() < 100 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(t.elapsed() < Duration::from_secs(5), "stopped promptly");
    assert_eq!(out.status.code(), Some(130));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON still printed");
    assert_eq!(j["interrupted"], true);
    assert!(j["requests"].as_u64().unwrap() > 0);
}

#[test]
fn n_without_keepalive_is_ab() {
    let _serial = serial();
    let srv = Server::plain(HELLO);
    let (code, out, err) = run(&[
        "load",
        "--json",
        "-n",
        "100",
        "-c",
        "2",
        "--no-keepalive",
        &srv.url(),
    ]);
    assert_eq!(code, 0, "{err}");
    let j = json(&out);
    assert_eq!(j["ledger"]["planned"], 100);
    assert_eq!(j["requests"], 100);
    assert_eq!(j["keepalive"], false);
    assert_eq!(j["connections_stats"]["opened"], 100);
    assert_eq!(j["connections_stats"]["closed_by_client"], 100);
    // 100 connections for the load and one for the check before it.
    assert_eq!(srv.accepted.load(std::sync::atomic::Ordering::Relaxed), 101);
    let (code, out, err) = run(&["load", "-n", "10", "-c", "1", "--no-keepalive", &srv.url()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("a new connection per request"), "{out}");
    assert!(out.contains("includes opening its connection"), "{out}");
    assert!(out.contains("10 closed by fairbench"), "{out}");
    // 10 requests take far less than a second, even on a busy machine: no
    // rate spread to show.
    assert!(out.contains("no 1 s interval to spread over"), "{out}");
}

#[test]
fn n_with_a_duration_stops_at_whichever_comes_first() {
    let _serial = serial();
    let srv = Server::plain(HELLO);
    // The duration ends it: a trickle of 20/s cannot reach a million.
    let t = Instant::now();
    let (code, out, err) = run(&[
        "load",
        "--json",
        "-n",
        "1000000",
        "-d",
        "1s",
        "-R",
        "20",
        "-c",
        "1",
        &srv.url(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(t.elapsed() < Duration::from_secs(10));
    let planned = json(&out)["ledger"]["planned"].as_u64().unwrap();
    assert!((18..=22).contains(&planned), "{planned}");
    // The count ends it: 50 at 100/s is half a second of the 30.
    let t = Instant::now();
    let (code, out, err) = run(&[
        "load",
        "--json",
        "-n",
        "50",
        "-d",
        "30s",
        "-R",
        "100",
        "-c",
        "2",
        &srv.url(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(t.elapsed() < Duration::from_secs(10));
    assert_eq!(json(&out)["ledger"]["planned"], 50);
}

/// wrk's SI suffixes: `-n 1.5k` is exactly 1500 requests, `-R 10k` ten
/// thousand a second, `-c 0.02k` twenty connections (a thousand would
/// overflow the test server's accept backlog).
#[test]
fn counts_and_rates_take_si_suffixes() {
    let _serial = serial();
    let srv = Server::plain(HELLO);
    let (code, out, err) = run(&["load", "--json", "-n", "1.5k", "-c", "2", &srv.url()]);
    assert_eq!(code, 0, "{err}");
    let j = json(&out);
    assert_eq!(j["requests"], 1500, "{out}");
    let (code, out, err) = run(&[
        "load",
        "--json",
        "-c",
        "0.02k",
        "-t",
        "1",
        "-R",
        "10k",
        "-n",
        "2k",
        &srv.url(),
    ]);
    assert_eq!(code, 0, "{err}");
    let j = json(&out);
    assert_eq!(j["ledger"]["planned"], 2000, "{out}");
    assert_eq!(j["connections"], 20, "{out}");
    assert_eq!(j["mode"], "rate", "{out}");
    assert_eq!(j["schedule"]["rate"], 10000.0, "{out}");
}

/// `load --save`: the result is a run of one case that `show`, `report`
/// and `compare` read like any suite's, histograms and series included.
#[test]
fn saved_loads_are_runs_that_show_report_and_compare_read() {
    let _serial = serial();
    let srv = Server::plain(HELLO);
    let dir = tempfile::tempdir().unwrap();
    let in_dir = |args: &[&str]| {
        let o = fairbench()
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            err,
        )
    };
    let url = srv.url();
    for n in ["300", "0.4k"] {
        let (code, out, err) = in_dir(&[
            "load", "--format", "json", "-n", n, "-c", "2", "-t", "1", "--save", "--db",
            "sub/r.db", &url,
        ]);
        assert_eq!(code, Some(0), "{err}");
        assert!(json(&out)["requests"].as_u64().is_some(), "{out}");
        assert!(err.contains("saved as run"), "{err}");
    }
    // --db is relative to the current directory.
    assert!(dir.path().join("sub/r.db").is_file());
    let (code, out, err) = in_dir(&["show", "latest", "--db", "sub/r.db", "--format", "json"]);
    assert_eq!(code, Some(0), "{err}");
    let j = json(&out);
    assert_eq!(j["run"]["suite"], "load");
    assert_eq!(j["run"]["state"], "done");
    let c = &j["cases"][0];
    assert_eq!(c["server"], url.as_str(), "{c}");
    assert_eq!(c["state"], "done");
    assert_eq!(c["planned"], 400, "{c}");
    assert_eq!(c["load"]["connections"], 2, "{c}");
    assert_eq!(c["load"]["url"], url.as_str(), "{c}");
    // The command line is kept as the run's suite.
    let (_, out, _) = in_dir(&["report", "1", "--db", "sub/r.db", "--json", "-o", "-"]);
    assert!(out.contains("--save"), "{out}");
    assert_eq!(j["cases"].as_array().unwrap().len(), 1);

    let (code, out, err) = in_dir(&[
        "compare", "1", "latest", "--db", "sub/r.db", "--format", "json",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains(url.as_str()), "the two loads pair: {out}");
    let (code, out, err) = in_dir(&[
        "report", "1", "--db", "sub/r.db", "--format", "csv", "-o", "-", "--hdr", "hlogs",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains(url.as_str()), "{out}");
    let logs = std::fs::read_dir(dir.path().join("hlogs")).unwrap().count();
    assert_eq!(logs, 1, "the latency histograms were stored");
    let html = in_dir(&["report", "latest", "--db", "sub/r.db", "-o", "r.html"]);
    assert_eq!(html.0, Some(0), "{}", html.2);

    // Nothing answered: nothing stored, and said so.
    let port = closed_port();
    let (code, _, err) = in_dir(&[
        "load",
        "-n",
        "5",
        "-c",
        "1",
        "--timeout",
        "200ms",
        "--save",
        "--db",
        "sub/r.db",
        &format!("http://127.0.0.1:{port}/"),
    ]);
    assert_eq!(code, Some(1), "{err}");
    let (_, out, _) = in_dir(&["runs", "--db", "sub/r.db", "--format", "json"]);
    assert_eq!(json(&out)["runs"].as_array().unwrap().len(), 2);
}

#[test]
fn status_codes_are_counted_and_expect_status_decides_errors() {
    let _serial = serial();
    let srv = Server::plain(NOT_FOUND);
    let (code, out, err) = run(&["load", "--json", "-n", "50", "-c", "1", &srv.url()]);
    assert_eq!(code, 0, "{err}");
    let j = json(&out);
    assert_eq!(j["status_codes"]["404"], 50);
    assert_eq!(j["errors"]["status"], 50);
    assert_eq!(j["expect_status"], "200-399");
    let (code, out, err) = run(&[
        "load",
        "--json",
        "-n",
        "50",
        "-c",
        "1",
        "--expect-status",
        "200,404",
        &srv.url(),
    ]);
    assert_eq!(code, 0, "{err}");
    let j = json(&out);
    assert_eq!(j["errors"]["status"], 0);
    assert_eq!(j["expect_status"], "200,404");
    let (_, out, _) = run(&["load", "-n", "20", "-c", "1", &srv.url()]);
    assert!(out.contains("404 ×20 (not expected)"), "{out}");
    assert!(out.contains("status 20"), "{out}");
}

#[test]
fn latency_prints_the_whole_spectrum_and_percentiles_choose_the_headline() {
    let _serial = serial();
    let srv = Server::plain(HELLO);
    let (code, out, err) = run(&[
        "load",
        "--latency",
        "--percentiles",
        "50,75,99.99",
        "-n",
        "20000",
        "-c",
        "2",
        &srv.url(),
    ]);
    assert_eq!(code, 0, "{err}");
    let rows: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("percentile"))
        .collect();
    // 20,000 values tell 4.25 nines: quarter steps from 0 to 4.25 plus max.
    for p in [
        "0%", "43.7659%", "90%", "99%", "99.9%", "99.99%", "99.9944%", "max",
    ] {
        assert!(
            rows.iter()
                .any(|r| r.trim_start().starts_with(&format!("{p} "))),
            "no {p} row in\n{out}"
        );
    }
    assert!(
        !rows.iter().any(|r| r.trim_start().starts_with("99.999%")),
        "{out}"
    );
    assert!(rows[0].contains("1/(1-p)"), "{}", rows[0]);
    let headline = out
        .lines()
        .find(|l| l.trim_start().starts_with("p50 "))
        .unwrap_or_else(|| panic!("no headline in\n{out}"));
    assert!(
        headline.contains("p75") && headline.contains("p99.99"),
        "{headline}"
    );
    assert!(!headline.contains("p90"), "{headline}");
    let (code, out, _) = run(&[
        "load",
        "--json",
        "--percentiles",
        "50,99.9",
        "-n",
        "100",
        "-c",
        "1",
        &srv.url(),
    ]);
    assert_eq!(code, 0);
    let p = &json(&out)["latency_percentiles_us"];
    assert!(p["50"].is_u64() && p["99.9"].is_u64(), "{p}");
}

#[test]
fn method_body_and_pipelining_reach_the_server() {
    let _serial = serial();
    let srv = Recorder::start();
    let (code, out, err) = run(&[
        "load",
        "--json",
        "--method",
        "POST",
        "--body",
        "abc",
        "-H",
        "X-A: 1",
        "--pipeline",
        "4",
        "-c",
        "1",
        "-t",
        "1",
        "-d",
        "1s",
        &srv.url(),
    ]);
    assert_eq!(code, 0, "{err}");
    let j = json(&out);
    assert_eq!(j["pipeline"], 4);
    assert!(j["requests"].as_u64().unwrap() > 0);
    let first = srv.first_request();
    assert!(first.starts_with("POST / HTTP/1.1\r\n"), "{first:?}");
    assert!(first.contains("\r\nX-A: 1\r\n"), "{first:?}");
    assert!(
        first.ends_with("\r\n\r\nabc"),
        "the body follows the head: {first:?}"
    );
    // Four requests in flight on the one connection: they arrive together.
    assert!(
        *srv.most_in_one_read.lock().unwrap() >= 2,
        "pipelined requests arrive back to back"
    );

    // A body from a file, sent as it is.
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body.bin");
    std::fs::write(&body, b"from a file").unwrap();
    let srv = Recorder::start();
    let (code, _, err) = run(&[
        "load",
        "--method",
        "PUT",
        "--body-file",
        body.to_str().unwrap(),
        "-c",
        "1",
        "-t",
        "1",
        "-d",
        "0.5s",
        &srv.url(),
    ]);
    assert_eq!(code, 0, "{err}");
    let first = srv.first_request();
    assert!(first.starts_with("PUT / HTTP/1.1\r\n"), "{first:?}");
    assert!(first.ends_with("\r\n\r\nfrom a file"), "{first:?}");
}

#[test]
fn durations_too_long_are_refused_not_a_panic() {
    for (flag, value) in [("-d", "1e20"), ("--warmup", "40d"), ("--timeout", "inf")] {
        let (code, _, err) = run(&["load", flag, value, "http://127.0.0.1:9/"]);
        assert_eq!(code, 2, "{flag} {value}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(err.contains(value), "names the value: {err}");
    }
}

#[test]
fn json_is_an_object_on_failure_too() {
    let url = format!("http://127.0.0.1:{}/", closed_port());
    let (code, out, err) = run(&["load", "--json", "-d", "1s", &url]);
    assert_eq!(code, 1, "{out}{err}");
    let j = json(&out);
    assert!(
        j["error"].as_str().unwrap().contains("cannot connect"),
        "{j}"
    );
    assert_eq!(j["url"], url.as_str());
    // A usage error found once the flags are read, with its exit code.
    let (code, out, _) = run(&["load", "--json", "--insecure", &url]);
    assert_eq!(code, 2);
    assert!(json(&out)["error"].as_str().unwrap().contains("--insecure"));
}

#[test]
fn redirects_are_measured_as_they_are_and_said_so() {
    let _serial = serial();
    static FOUND: &[u8] =
        b"HTTP/1.1 302 Found\r\nLocation: /elsewhere\r\nContent-Length: 0\r\n\r\n";
    let srv = Server::plain(FOUND);
    let (code, out, err) = run(&["load", "-d", "300ms", "-c", "1", &srv.url()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("WARNING:") && out.contains("redirects are not followed"),
        "{out}"
    );
}

#[test]
fn the_summary_and_json_name_the_address_measured() {
    let _serial = serial();
    let srv = Server::plain(HELLO);
    let url = srv.url().replace("127.0.0.1", "localhost");
    let (code, out, err) = run(&["load", "-d", "300ms", "-c", "1", &url]);
    assert_eq!(code, 0, "{err}");
    assert!(out.lines().next().unwrap().contains("(127.0.0.1:"), "{out}");
    let (code, out, err) = run(&["load", "--json", "-d", "300ms", "-c", "1", &url]);
    assert_eq!(code, 0, "{err}");
    assert!(
        json(&out)["address"]
            .as_str()
            .unwrap()
            .starts_with("127.0.0.1:"),
        "{out}"
    );
}
