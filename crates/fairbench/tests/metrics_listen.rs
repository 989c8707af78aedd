//! `--metrics-listen`: live OpenMetrics while `load` and `run` work
//! (docs/metrics.md). Scraped by the test itself during a load and a suite
//! of services, and by a real Prometheus (Debian's package, started here)
//! whose query results must agree with the run's own totals.

mod support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use support::load::{json, Server, HELLO};
use support::serial;

/// A fairbench command serving metrics: the child, the endpoint's address
/// (read from its one stderr line) and the rest of its stderr.
struct Serving {
    child: Child,
    addr: SocketAddr,
    stderr: mpsc::Receiver<String>,
}

impl Serving {
    fn start(dir: &Path, args: &[&str]) -> Serving {
        let mut child = support::command()
            .current_dir(dir)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start fairbench");
        let (tx, rx) = mpsc::channel();
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut seen = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            let Ok(line) = rx.recv_timeout(Duration::from_millis(100)) else {
                continue;
            };
            if let Some(url) = line.strip_prefix("metrics: serving OpenMetrics at http://") {
                let addr = url.trim_end_matches("/metrics").parse().unwrap();
                return Serving {
                    child,
                    addr,
                    stderr: rx,
                };
            }
            seen.push(line);
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("no endpoint line on stderr: {seen:?}");
    }

    /// Scrapes every 200 ms until the command exits; returns every scrape,
    /// its exit code, stdout and stderr.
    fn scrape_until_exit(mut self) -> (Vec<BTreeMap<String, f64>>, i32, String, String) {
        let mut scrapes = Vec::new();
        let code = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status.code().unwrap_or(-1);
            }
            if let Some((head, body)) = get(self.addr, "/metrics", OPENMETRICS) {
                assert!(head.contains(OPENMETRICS_TYPE), "{head}");
                assert!(body.ends_with("# EOF\n"), "{body}");
                scrapes.push(parse(&body));
            }
            std::thread::sleep(Duration::from_millis(200));
        };
        let mut out = String::new();
        self.child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        let err: Vec<String> = self.stderr.try_iter().collect();
        (scrapes, code, out, err.join("\n"))
    }
}

/// A test that fails midway leaves no fairbench behind.
impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0";
const OPENMETRICS_TYPE: &str =
    "Content-Type: application/openmetrics-text; version=1.0.0; charset=utf-8";

/// One HTTP/1.0 GET: the head and the body, or `None` if nothing answered.
fn get(addr: SocketAddr, path: &str, accept: &str) -> Option<(String, String)> {
    let mut c = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    c.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        c,
        "GET {path} HTTP/1.0\r\nHost: x\r\nAccept: {accept}\r\n\r\n"
    )
    .ok()?;
    let mut all = String::new();
    c.read_to_string(&mut all).ok()?;
    let (head, body) = all.split_once("\r\n\r\n")?;
    Some((head.to_string(), body.to_string()))
}

/// Samples by name with labels, as written (`name{a="b"}`).
fn parse(body: &str) -> BTreeMap<String, f64> {
    body.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (k, v) = l.rsplit_once(' ').unwrap_or_else(|| panic!("{l}"));
            (k.to_string(), v.parse().unwrap_or_else(|_| panic!("{l}")))
        })
        .collect()
}

/// The one sample of `name` whose labels include every `want`.
fn sample(m: &BTreeMap<String, f64>, name: &str, want: &[&str]) -> Option<f64> {
    let hits: Vec<f64> = m
        .iter()
        .filter(|(k, _)| k.starts_with(&format!("{name}{{")) && want.iter().all(|w| k.contains(w)))
        .map(|(_, v)| *v)
        .collect();
    assert!(hits.len() <= 1, "{name} {want:?}: {hits:?}");
    hits.first().copied()
}

#[test]
fn a_load_serves_counters_that_rise_and_end_at_its_totals() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let server = Server::plain(HELLO);
    let url = server.url();
    let serving = Serving::start(
        dir.path(),
        &[
            "load",
            &url,
            "-d",
            "3s",
            "-c",
            "2",
            "-R",
            "300",
            "--json",
            "--metrics-listen",
            "127.0.0.1:0",
            "--metrics-linger",
            "1.5s",
        ],
    );
    let addr = serving.addr;
    // The endpoint answers nothing but GET /metrics, and survives garbage.
    let (head, _) = get(addr, "/other", "*/*").unwrap();
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
    let mut junk = TcpStream::connect(addr).unwrap();
    junk.write_all(b"\x00\xff\r\n\r\n").unwrap();
    let mut reply = String::new();
    let _ = junk.read_to_string(&mut reply);
    assert!(reply.starts_with("HTTP/1.1 400"), "{reply}");
    let (head, body) = get(addr, "/metrics", "text/plain").unwrap();
    assert!(head.contains("text/plain; version=0.0.4"), "{head}");
    assert!(!body.contains("# EOF"));

    let (scrapes, code, out, err) = serving.scrape_until_exit();
    assert_eq!(code, 0, "{err}");
    let v = json(&out);
    let label = format!("url=\"{url}\"");
    let requests: Vec<f64> = scrapes
        .iter()
        .filter_map(|m| sample(m, "fairbench_requests_total", &[&label]))
        .collect();
    assert!(
        requests.windows(2).all(|w| w[0] <= w[1]),
        "a counter went back: {requests:?}"
    );
    let total = v["requests"].as_f64().unwrap();
    let mut before_end: Vec<u64> = requests
        .iter()
        .filter(|r| **r < total)
        .map(|r| *r as u64)
        .collect();
    before_end.dedup();
    assert!(
        before_end.len() >= 2,
        "seen rising during the run: {requests:?}"
    );
    let last = scrapes.last().expect("scraped while lingering");
    assert_eq!(
        sample(last, "fairbench_requests_total", &[&label]),
        Some(total)
    );
    let errors: f64 = v["errors"]
        .as_object()
        .unwrap()
        .values()
        .filter_map(|e| e.as_f64())
        .sum();
    assert_eq!(
        sample(last, "fairbench_errors_total", &[&label]),
        Some(errors)
    );
    assert_eq!(
        sample(last, "fairbench_latency_seconds_count", &[&label]),
        Some(total)
    );
    assert_eq!(
        sample(
            last,
            "fairbench_latency_seconds_bucket",
            &[&label, "le=\"+Inf\""]
        ),
        Some(total)
    );
    assert_eq!(
        sample(
            last,
            "fairbench_rate_planned_requests_per_second",
            &[&label]
        ),
        Some(300.0)
    );
    let busy = sample(last, "fairbench_generator_busy_ratio", &[&label]).unwrap();
    assert!((0.0..=1.0).contains(&busy), "{busy}");
    assert!(sample(
        last,
        "fairbench_send_lateness_seconds",
        &[&label, "quantile=\"0.99\""]
    )
    .is_some());
}

#[test]
fn a_suite_of_services_is_labelled_by_case() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (Server::plain(HELLO), Server::plain(HELLO));
    let suite = dir.path().join("live.toml");
    std::fs::write(
        &suite,
        format!(
            "name = \"live\"\nduration = \"1s\"\nrepetitions = 1\n\n\
             [[service]]\nname = \"api-a\"\nurl = \"{}\"\n\n\
             [[service]]\nname = \"api-b\"\nurl = \"{}\"\n\n\
             [[load]]\nmodel = \"closed\"\nconnections = 2\n",
            a.url(),
            b.url()
        ),
    )
    .unwrap();
    let serving = Serving::start(
        dir.path(),
        &[
            "run",
            "--suite",
            "live.toml",
            "--db",
            "results.db",
            "--quiet",
            "--metrics-listen",
            "127.0.0.1:0",
            "--metrics-linger",
            "1s",
        ],
    );
    let (scrapes, code, _, err) = serving.scrape_until_exit();
    assert_eq!(code, 0, "{err}");
    let last = scrapes.last().expect("scraped while lingering");
    for (name, url) in [("api-a", a.url()), ("api-b", b.url())] {
        let want = [
            "suite=\"live\"".to_string(),
            format!("service=\"{name}\""),
            format!("url=\"{url}\""),
            "load=\"".to_string(),
        ];
        let want: Vec<&str> = want.iter().map(String::as_str).collect();
        let n = sample(last, "fairbench_requests_total", &want);
        assert!(n.is_some_and(|n| n > 0.0), "{name}: {last:?}");
    }
}

#[test]
fn a_zoo_run_is_labelled_by_case_with_its_servers_use() {
    let _serial = serial();
    let root = support::root::Root::new(&[("fast-a", &[])]);
    root.one_case_suite("one", 4, "2s");
    let serving = Serving::start(
        root.path(),
        &[
            "run",
            "--suite",
            "one",
            "--db",
            "results.db",
            "--quiet",
            "--metrics-listen",
            "127.0.0.1:0",
            "--metrics-linger",
            "1s",
        ],
    );
    let (scrapes, code, _, err) = serving.scrape_until_exit();
    assert_eq!(code, 0, "{err}");
    let last = scrapes.last().expect("scraped while lingering");
    let case = [
        "suite=\"one\"",
        "server=\"fast-a\"",
        "variant=\"normalized\"",
        "scenario=\"static\"",
        "cores=\"1\"",
    ];
    let stored = root.sql::<i64>("SELECT requests FROM cases") as f64;
    assert!(stored > 0.0);
    // Counted live by arrival, the warm-up's last requests (at most one
    // per connection: 4) may be answered in the window and counted too;
    // the run's total counts requests planned in the window.
    let live = sample(last, "fairbench_requests_total", &case).unwrap();
    assert!(
        (stored..=stored + 4.0).contains(&live),
        "{live} against {stored} stored"
    );
    let cpu = sample(last, "fairbench_server_cpu_seconds_total", &case).unwrap();
    assert!(
        cpu > 0.0,
        "the server answered {stored} requests in {cpu} s of CPU"
    );
    let memory = sample(last, "fairbench_server_memory_bytes", &case).unwrap();
    assert!(memory > 0.0);
    root.assert_no_servers_left();
}

#[test]
fn a_bad_address_or_a_port_in_use_is_one_line_and_exit_2() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let in_use = taken.local_addr().unwrap().to_string();
    for (addr, says) in [
        ("nowhere", "--metrics-listen: expected HOST:PORT"),
        ("127.0.0.1:99999", "--metrics-listen: expected HOST:PORT"),
        (in_use.as_str(), "--metrics-listen: cannot listen on"),
    ] {
        let (code, out, err) =
            support::load::run(&["load", "http://127.0.0.1:9/", "--metrics-listen", addr]);
        assert_eq!(code, 2, "{addr}: {out}{err}");
        assert_eq!(err.lines().count(), 1, "{addr}: {err}");
        assert!(err.contains(says), "{addr}: {err}");
    }
    let (code, _, err) = support::load::run(&[
        "load",
        "http://127.0.0.1:9/",
        "--vs",
        "http://127.0.0.1:9/",
        "--metrics-listen",
        "127.0.0.1:0",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--metrics-listen: serves a plain load"),
        "{err}"
    );
    let (code, _, err) =
        support::load::run(&["load", "http://127.0.0.1:9/", "--metrics-linger", "1s"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--metrics-linger: serves on after --metrics-listen"),
        "{err}"
    );
}

#[test]
fn a_dry_run_checks_the_address_but_listens_on_nothing() {
    let root = support::root::Root::new(&[("fast-a", &[])]);
    root.one_case_suite("one", 4, "2s");
    // A port in use: a run could not listen there, a dry run does not try.
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let in_use = taken.local_addr().unwrap().to_string();
    let dry = |addr: &str| {
        let started = Instant::now();
        let out = root.run(&[
            "run",
            "--suite",
            "one",
            "--dry-run",
            "--metrics-listen",
            addr,
            "--metrics-linger",
            "120s",
        ]);
        (out, started.elapsed())
    };
    let (out, took) = dry(&in_use);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("serving OpenMetrics"), "{err}");
    // Far under the 120 s a served endpoint would linger for.
    assert!(took < Duration::from_secs(60), "took {took:?}");
    let (out, _) = dry("nowhere");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--metrics-listen: expected HOST:PORT"),
        "{err}"
    );
}

/// Debian's Prometheus, on a loopback port, with its data in a temporary
/// folder; killed by its PID when dropped.
struct Prometheus {
    child: Child,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    /// Scraping `target` every second; `None` (skipped, or a failure in CI)
    /// when Prometheus is not installed.
    fn start(target: SocketAddr) -> Option<Prometheus> {
        if !support::require(
            support::have("prometheus", "--version"),
            "the Prometheus test needs Debian's prometheus; run scripts/setup-test-deps.sh",
        ) {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
                 scrape_configs:\n  - job_name: fairbench\n    static_configs:\n      \
                 - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        let port = fairbench_sys::process::free_port().unwrap();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let child = std::process::Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start prometheus");
        let p = Prometheus {
            child,
            addr,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if get(addr, "/-/ready", "*/*").is_some_and(|(h, _)| h.starts_with("HTTP/1.0 200")) {
                return Some(p);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("prometheus was not ready within 30 s");
    }

    /// An instant query's one value.
    fn query(&self, promql: &str) -> Option<f64> {
        let q: String = promql
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect();
        let (_, body) = get(self.addr, &format!("/api/v1/query?query={q}"), "*/*")?;
        let v: serde_json::Value =
            serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
        let r = v["data"]["result"].as_array()?;
        assert!(r.len() <= 1, "{promql}: {body}");
        r.first()?["value"][1].as_str()?.parse().ok()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn prometheus_scrapes_a_load_and_agrees_with_its_totals() {
    let _serial = serial();
    let port = fairbench_sys::process::free_port().unwrap();
    let target: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let Some(prom) = Prometheus::start(target) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let server = Server::plain(HELLO);
    let listen = target.to_string();
    let serving = Serving::start(
        dir.path(),
        &[
            "load",
            &server.url(),
            "-d",
            "4s",
            "-c",
            "2",
            "-R",
            "200",
            "--json",
            "--metrics-listen",
            &listen,
            // Prometheus' first scrape of a new target may come ~5 s in;
            // the final totals must still be served then, on a slow runner too.
            "--metrics-linger",
            "8s",
        ],
    );
    let (_, code, out, err) = serving.scrape_until_exit();
    assert_eq!(code, 0, "{err}");
    let v = json(&out);
    // After the command the target is down and its series are stale: the
    // last value scraped is the highest of the last minute.
    let total = v["requests"].as_f64().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut got = None;
    while Instant::now() < deadline {
        got = prom.query("max_over_time(fairbench_requests_total[1m])");
        if got == Some(total) {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    assert_eq!(
        got,
        Some(total),
        "Prometheus' last scrape against the run's total"
    );
    assert_eq!(
        prom.query("max_over_time(fairbench_latency_seconds_count[1m])"),
        Some(total)
    );
    assert_eq!(
        prom.query("max_over_time(fairbench_rate_planned_requests_per_second[1m])"),
        Some(200.0)
    );
    assert_eq!(prom.query("max_over_time(up[1m])"), Some(1.0));
}
