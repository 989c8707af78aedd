//! `fairbench load` as a user runs it: exit codes, messages, JSON, HDR logs.

mod support;

use std::net::TcpListener;
use std::time::{Duration, Instant};

use support::net::{Hello, Recorder, Silent};
use support::{base64_decode, command};

fn run(args: &[&str]) -> (i32, String, String) {
    let out = command().args(args).output().expect("run fairbench");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn usage_errors_name_the_flag_and_exit_2() {
    let cases: &[(&[&str], &str)] = &[
        (&["load", "not a url"], "URL"),
        (&["load", "https://127.0.0.1/"], "https:// is not supported"),
        (&["load", "-c", "0", "http://127.0.0.1:1/"], "--connections"),
        (&["load", "-R", "-5", "http://127.0.0.1:1/"], "--rate"),
        (&["load", "-d", "0", "http://127.0.0.1:1/"], "--duration"),
        (&["load", "-d", "1e20", "http://127.0.0.1:1/"], "--duration"),
        (
            &["load", "--timeout", "1e20", "http://127.0.0.1:1/"],
            "--timeout",
        ),
        (&["load", "-R", "1e-12", "http://127.0.0.1:1/"], "--rate"),
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
        assert!(
            err.lines().filter(|l| !l.trim().is_empty()).count() <= 3,
            "short: {err}"
        );
    }
}

#[test]
fn cpus_pins_the_load_threads_and_sets_their_number() {
    let srv = Hello::start();
    let (code, out, err) = run(&["load", "--cpus", "0", "-d", "1s", "--json", &srv.url()]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    // One CPU given: one thread by default, so the pin is not a squeeze.
    assert_eq!(j["threads"], 1, "{out}");
    assert!(j["requests"].as_u64().unwrap() > 0);
}

#[test]
fn refused_connection_exits_1_with_one_line() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
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
    let srv = Hello::start();
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
    let srv = Hello::start();
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
        "99.99%",
        "Generator",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in\n{out}");
    }
    // Not a terminal: no progress bar escape codes anywhere.
    assert!(!out.contains('\x1b') && !err.contains('\x1b'));
}

#[test]
fn hdr_log_is_readable_by_the_interval_log_reader() {
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hdrhistogram::serialization::Deserializer;
    let srv = Hello::start();
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
    let srv = Hello::start();
    let child = command()
        .args([
            "load",
            "--json",
            "-c",
            "2",
            "-t",
            "1",
            "-d",
            "30s",
            &srv.url(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(t.elapsed() < Duration::from_secs(5), "stopped promptly");
    assert_eq!(out.status.code(), Some(130));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON still printed");
    assert_eq!(j["interrupted"], true);
    assert!(j["requests"].as_u64().unwrap() > 0);
}

fn json_of(out: &str) -> serde_json::Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

#[test]
fn method_body_and_pipelining_reach_the_server() {
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
    let j = json_of(&out);
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
fn timeout_and_warmup_shape_the_run() {
    let srv = Silent::start();
    let (code, out, err) = run(&[
        "load",
        "--json",
        "--timeout",
        "200ms",
        "--warmup",
        "0.5",
        "-c",
        "1",
        "-t",
        "1",
        "-d",
        "1s",
        &srv.url(),
    ]);
    // Nothing answered: a failed run, its figures still printed.
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("no request was answered"), "{err}");
    let j = json_of(&out);
    assert_eq!(j["warmup_s"], 0.5);
    assert_eq!(j["timeout_s"], 0.2);
    // One connection, 200 ms each: about five timeouts in a 1 s window
    // (fewer on a stalled machine, never more than the window allows).
    let t = j["errors"]["timeout"].as_u64().unwrap();
    assert!((1..=10).contains(&t), "{t} timeouts");
    assert_eq!(j["requests"], 0);
    let phases: Vec<&str> = j["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["phase"].as_str().unwrap())
        .collect();
    assert_eq!(phases.first(), Some(&"warmup"), "{phases:?}");
    assert!(phases.contains(&"measure"), "{phases:?}");
}

#[test]
fn cpus_pin_and_size_the_load() {
    let srv = Hello::start();
    // One CPU given: one load thread, not one per CPU of the machine.
    let (code, out, err) = run(&[
        "load",
        "--json",
        "--cpus",
        "0",
        "-c",
        "4",
        "-d",
        "0.5s",
        &srv.url(),
    ]);
    assert_eq!(code, 0, "{err}");
    let j = json_of(&out);
    assert_eq!(j["threads"], 1);
    assert!(j["requests"].as_u64().unwrap() > 0);
    let (code, _, err) = run(&["load", "--cpus", "3-1", &srv.url()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--cpus") && err.contains("not a CPU list"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
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
