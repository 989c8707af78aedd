//! `fairbench load` as a user runs it: exit codes, messages, JSON, HDR logs.

mod support;

use std::net::TcpListener;
use std::time::{Duration, Instant};

use support::net::Hello;
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
