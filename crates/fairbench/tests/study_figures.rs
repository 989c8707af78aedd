//! The studies' figures labelled for what they are (issue 24): wrk's
//! per-thread Req/Sec beside the total in `load`, `show`, the report and its
//! exports; timeouts counted wrk's way or fairbench's (`--timeout-mode`, a
//! suite's `timeout_mode`), each figure saying which; and `report --with`,
//! runs from two machines side by side, each labelled by its host.

mod support;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fairbench::report::fixture;
use support::load::run;
use support::serial;
use support::{ok, run_in};

/// Every third request of a connection is answered 300 ms late, the others
/// at once. Stops when dropped, and after 60 s regardless.
struct LateServer {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl LateServer {
    fn start() -> LateServer {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let port = l.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        std::thread::spawn(move || {
            let t0 = Instant::now();
            while !s.load(Ordering::Relaxed) && t0.elapsed() < Duration::from_secs(60) {
                let Ok((mut c, _)) = l.accept() else {
                    std::thread::sleep(Duration::from_millis(2));
                    continue;
                };
                let s2 = s.clone();
                std::thread::spawn(move || {
                    c.set_nonblocking(false).ok();
                    c.set_read_timeout(Some(Duration::from_millis(200))).ok();
                    let (mut buf, mut chunk, mut n) = (Vec::new(), [0u8; 4096], 0u64);
                    while !s2.load(Ordering::Relaxed) && t0.elapsed() < Duration::from_secs(60) {
                        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            buf.drain(..end + 4);
                            if n % 3 == 2 {
                                std::thread::sleep(Duration::from_millis(300));
                            }
                            n += 1;
                            if c.write_all(support::load::HELLO).is_err() {
                                return;
                            }
                        }
                        match c.read(&mut chunk) {
                            Ok(0) => return,
                            Ok(k) => buf.extend_from_slice(&chunk[..k]),
                            Err(e)
                                if matches!(
                                    e.kind(),
                                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                                ) => {}
                            Err(_) => return,
                        }
                    }
                });
            }
        });
        LateServer { port, stop }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }
}

impl Drop for LateServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[test]
fn load_shows_per_thread_req_sec_and_which_timeout_counting() {
    let _serial = serial();
    let server = support::load::Server::plain(support::load::HELLO);
    let (code, out, err) = run(&[
        "load",
        &server.url(),
        "-c",
        "4",
        "--threads",
        "2",
        "-d",
        "1s",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    let t = &j["thread_req_sec"];
    let (mean, rps) = (t["mean"].as_f64().unwrap(), j["rps"].as_f64().unwrap());
    assert!(
        (mean - rps / 2.0).abs() < 0.35 * rps / 2.0,
        "per-thread mean {mean} against total {rps} on 2 threads"
    );
    assert!(t["max"].as_f64().unwrap() >= mean);
    // 100 ms ticks of 2 threads over 1 s; a busy machine folds a stalled
    // tick into the next (1 s ticks, the fault, would give 2).
    assert!((10..=20).contains(&t["samples"].as_u64().unwrap()), "{t}");
    assert_eq!(j["timeout_mode"], "fairbench");

    // The text summary labels both.
    let (code, out, err) = run(&[
        "load",
        &server.url(),
        "-c",
        "2",
        "--threads",
        "2",
        "-d",
        "500ms",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("Per thread") && out.contains("wrk's Req/Sec"),
        "{out}"
    );
    assert!(out.contains("counted fairbench's way"), "{out}");
}

#[test]
fn load_counts_timeouts_wrks_way_when_asked() {
    let _serial = serial();
    let server = LateServer::start();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let common = [
        "load",
        &server.url(),
        "-c",
        "2",
        "--threads",
        "1",
        "-d",
        "1s",
        "--timeout",
        "100ms",
        "--json",
    ];
    let mut wrk = common.to_vec();
    wrk.extend([
        "--timeout-mode",
        "wrk",
        "--save",
        "--db",
        db.to_str().unwrap(),
    ]);
    let (code, out, err) = run(&wrk);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["timeout_mode"], "wrk");
    let late = j["late_answers"].as_u64().unwrap();
    let timeouts = j["ledger"]["timeout"].as_u64().unwrap();
    // A connection's cycle is two quick answers and a 300 ms one: about 3
    // per connection in 1 s, each read late and counted a timeout; the
    // connections are kept.
    assert!(late >= 4 && timeouts >= late && timeouts <= late + 2, "{j}");
    assert_eq!(j["connections_stats"]["opened"], 2, "{j}");
    let l = &j["ledger"];
    assert_eq!(
        l["planned"].as_u64().unwrap(),
        l["answered"].as_u64().unwrap() + timeouts,
        "{l}"
    );
    // What wrk would print: every completed response counted, the late
    // ones too; only those not above the timeout in its latency (the quick
    // answers: far under the 2 × interval that its correction starts at).
    let answered = l["answered"].as_u64().unwrap();
    let w = &j["wrk"];
    assert_eq!(w["requests"].as_u64(), Some(answered + late), "{w}");
    assert_eq!(w["latency"]["recorded"].as_u64(), Some(answered), "{w}");
    assert!(w["latency"]["max_us"].as_u64().unwrap() <= 100_000, "{w}");
    let (code, text, err) = run(&wrk[..wrk.len() - 3]
        .iter()
        .copied()
        .filter(|a| *a != "--json")
        .collect::<Vec<_>>());
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains("As wrk prints") && text.contains("wrk 4.x's figures, not fairbench's"),
        "{text}"
    );

    // fairbench's way on the same server: aborted at 100 ms, reconnected.
    let (code, out, err) = run(&common);
    assert_eq!(code, 0, "{err}");
    let f: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (f["timeout_mode"].as_str(), f["late_answers"].as_u64()),
        (Some("fairbench"), Some(0))
    );
    assert!(f["wrk"].is_null(), "wrk's figures only when asked: {f}");
    let ft = f["ledger"]["timeout"].as_u64().unwrap();
    assert!(ft > timeouts, "fairbench {ft} against wrk {timeouts}");
    assert!(
        f["connections_stats"]["opened"].as_u64().unwrap() > 2,
        "{f}"
    );

    // The saved run: `show` and the report say whose counting, and show the
    // per-thread figure beside the total.
    let show = ok(dir.path(), &["show", "--db", "r.db"]);
    assert!(show.contains("req/s per thread (wrk)"), "{show}");
    assert!(show.contains("timeouts counted wrk's way"), "{show}");
    // wrk's own printed latency, stored with the case, in its own column.
    assert!(show.contains("as wrk prints: mean ±stdev, p99"), "{show}");
    assert!(show.contains("stats_correct"), "{show}");
    let csv_text = ok(dir.path(), &["report", "--db", "r.db", "--format", "csv"]);
    let mut r = csv::Reader::from_reader(csv_text.as_bytes());
    let h = r.headers().unwrap().clone();
    let rec = r.records().next().unwrap().unwrap();
    let col = |name: &str| rec[h.iter().position(|x| x == name).unwrap()].to_string();
    assert_eq!(col("timeout_mode"), "wrk");
    assert!(col("thread_rps_mean").parse::<f64>().unwrap() > 0.0);
    // The stored figures are those `load` printed as wrk's.
    assert_eq!(
        col("wrk_requests").parse::<f64>().unwrap(),
        w["requests"].as_f64().unwrap()
    );
    assert_eq!(
        col("wrk_lat_p99_us").parse::<f64>().unwrap(),
        w["latency"]["p99_us"].as_f64().unwrap()
    );
    assert_eq!(
        col("wrk_lat_mean_us").parse::<f64>().unwrap(),
        w["latency"]["mean_us"].as_f64().unwrap()
    );
    let html = ok(dir.path(), &["report", "--db", "r.db", "-o", "-"]);
    assert!(
        html.contains("Counted wrk"),
        "the timeouts caption says whose counting"
    );
    assert!(
        html.contains("fig-latency-wrk") && html.contains("p99 as wrk 4.x prints it"),
        "the wrk figure"
    );

    let (code, _, err) = run(&["load", &server.url(), "--timeout-mode", "abort"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--timeout-mode") && err.contains("fairbench or wrk"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// Two stores from two machines: the fixture's run, its host record made
/// an 8-vCPU and a 40-vCPU machine.
fn two_machines() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (file, cpu, n) in [
        ("eight.db", "Xeon Gold 6148", 8),
        ("forty.db", "Xeon Gold 6148", 40),
    ] {
        let p = dir.path().join(file);
        fixture::standard_db(&p);
        let c = rusqlite::Connection::open(&p).unwrap();
        c.execute(
            "UPDATE runs SET host_json = ?1",
            [format!(r#"{{"cpu_model":"{cpu}","cpus":{n}}}"#)],
        )
        .unwrap();
        // wrk's per-thread Req/Sec as a run of this version stores it: with
        // the fixture's 4 load threads, about a quarter of the total.
        c.execute(
            "UPDATE cases SET thread_rps_mean = rps / 4, thread_rps_stdev = rps / 40,
                thread_rps_max = rps / 3, thread_rps_samples = 2400 WHERE rps IS NOT NULL",
            [],
        )
        .unwrap();
    }
    dir
}

#[test]
fn report_with_puts_two_machines_side_by_side_each_labelled() {
    let _serial = serial();
    let dir = two_machines();
    let base = ["report", "1", "--db", "eight.db", "--with", "forty.db:1"];
    let with = |extra: &[&str]| {
        let mut a = base.to_vec();
        a.extend_from_slice(extra);
        ok(dir.path(), &a)
    };
    let csv_text = with(&["--format", "csv"]);
    let mut r = csv::Reader::from_reader(csv_text.as_bytes());
    let h = r.headers().unwrap().clone();
    let host = h.iter().position(|x| x == "host").unwrap();
    let server = h.iter().position(|x| x == "server").unwrap();
    let rows: Vec<csv::StringRecord> = r.records().map(|x| x.unwrap()).collect();
    let eight: Vec<_> = rows
        .iter()
        .filter(|r| &r[host] == "Xeon Gold 6148 · 8 CPUs")
        .collect();
    let forty: Vec<_> = rows
        .iter()
        .filter(|r| &r[host] == "Xeon Gold 6148 · 40 CPUs")
        .collect();
    assert!(
        !eight.is_empty() && eight.len() == forty.len(),
        "{csv_text}"
    );
    assert_eq!(eight.len() + forty.len(), rows.len());
    // The same servers on each machine.
    let names = |v: &[&csv::StringRecord]| {
        let mut n: Vec<String> = v.iter().map(|r| r[server].to_string()).collect();
        n.sort();
        n
    };
    assert_eq!(names(&eight), names(&forty));

    let json: serde_json::Value = serde_json::from_str(&with(&["--format", "json"])).unwrap();
    let machines = json["machines"].as_array().unwrap();
    assert_eq!(machines.len(), 2);
    assert_eq!(machines[1]["db"], "forty.db");
    assert!(json["groups"]
        .as_array()
        .unwrap()
        .iter()
        .all(|g| g["key"]["host"].as_str().unwrap().starts_with("Xeon")));

    let md = with(&["--format", "md"]);
    assert!(md.contains("· on Xeon Gold 6148 · 40 CPUs"), "{md}");
    assert!(md.contains("per-thread req/s (wrk) median"), "{md}");
    assert!(md.contains("run 1 of forty.db"), "{md}");
    let html = with(&["-o", "-", "--servers", "go-nethttp"]);
    assert!(
        html.contains("on Xeon Gold 6148 · 8 CPUs") && html.contains("on Xeon Gold 6148 · 40 CPUs")
    );
    assert!(!html.contains("dart-shelf"));
    assert!(
        html.contains("per load thread (wrk"),
        "the per-thread bar's legend"
    );

    // The same machine twice (the same run): labels told apart by run.
    let md = ok(
        dir.path(),
        &[
            "report", "1", "--db", "eight.db", "--with", "2", "--format", "md",
        ],
    );
    assert!(md.contains("8 CPUs (run 2)"), "{md}");

    // Bad --with values: one line, exit 2, naming the flag.
    for (args, says) in [
        (vec!["--with", "forty.db:9"], "no run 9"),
        (vec!["--with", "eight.db:1"], "already in the report"),
        (vec!["--with", "missing.db"], "missing.db"),
        (vec!["--with", "forty.db", "--hdr", "logs"], "--hdr"),
    ] {
        let mut a = vec!["report", "1", "--db", "eight.db", "--format", "csv"];
        a.extend(args.iter());
        let o = run_in(dir.path(), &a);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}
