//! A request mix: every prepared request goes out as prepared (checked by
//! the server), pipelined or not, and the per-target breakdown adds up to
//! the ledger's totals in every mode.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fairbench_engine::{
    run, LoadConfig, LoadModel, MixRequest, Outcome, Quiet, RequestMix, Target,
};
use fairbench_testkit::serial;

/// Counts every request it receives by "METHOD path body", answering 503
/// to paths under /fail and 200 otherwise; pipelining and bodies handled.
struct Recorder {
    port: u16,
    seen: Arc<Mutex<HashMap<String, u64>>>,
    stop: Arc<AtomicBool>,
}

impl Recorder {
    fn start() -> Recorder {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let port = l.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(HashMap::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, log) = (stop.clone(), seen.clone());
        std::thread::spawn(move || {
            let t0 = Instant::now();
            while !s.load(Ordering::Relaxed) && t0.elapsed() < Duration::from_secs(60) {
                let Ok((c, _)) = l.accept() else {
                    std::thread::sleep(Duration::from_millis(2));
                    continue;
                };
                let (s2, log2) = (s.clone(), log.clone());
                std::thread::spawn(move || serve(c, &s2, &log2));
            }
        });
        Recorder { port, seen, stop }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn serve(mut c: std::net::TcpStream, stop: &AtomicBool, log: &Mutex<HashMap<String, u64>>) {
    let _ = c.set_nonblocking(false);
    c.set_read_timeout(Some(Duration::from_millis(200))).ok();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let t0 = Instant::now();
    while !stop.load(Ordering::Relaxed) && t0.elapsed() < Duration::from_secs(60) {
        let mut out = Vec::new();
        while let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..i]).into_owned();
            let len: usize = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse().ok())?
                })
                .unwrap_or(0);
            if buf.len() < i + 4 + len {
                break;
            }
            let body = String::from_utf8_lossy(&buf[i + 4..i + 4 + len]).into_owned();
            buf.drain(..i + 4 + len);
            let line = head.lines().next().unwrap_or("");
            let mut parts = line.split(' ');
            let (m, p) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            *log.lock()
                .unwrap()
                .entry(format!("{m} {p} {body}"))
                .or_insert(0) += 1;
            out.extend_from_slice(if p.starts_with("/fail") {
                b"HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n".as_slice()
            } else {
                b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".as_slice()
            });
        }
        if !out.is_empty() && c.write_all(&out).is_err() {
            return;
        }
        match c.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
    }
}

/// 20 GETs of target "item" (/item/0../item/19), one POST of "new" with a
/// body, one GET of "fail" answered 503: 22 prepared requests.
fn mix() -> RequestMix {
    let mut requests: Vec<MixRequest> = (0..20)
        .map(|i| MixRequest {
            target: 0,
            method: "GET".into(),
            path: format!("/item/{i}"),
            headers: vec![],
            body: vec![],
        })
        .collect();
    requests.insert(
        7,
        MixRequest {
            target: 1,
            method: "POST".into(),
            path: "/new".into(),
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: b"{\"n\":1}".to_vec(),
        },
    );
    requests.insert(
        15,
        MixRequest {
            target: 2,
            method: "GET".into(),
            path: "/fail".into(),
            headers: vec![],
            body: vec![],
        },
    );
    RequestMix {
        names: vec!["item".into(), "new".into(), "fail".into()],
        requests,
    }
}

fn config(port: u16) -> LoadConfig {
    let mut c = LoadConfig::new(Target::parse(&format!("http://127.0.0.1:{port}/")).unwrap());
    c.connections = 4;
    c.threads = 2;
    c.duration = Duration::from_millis(1200);
    c.mix = Some(mix());
    c
}

fn go(cfg: &LoadConfig) -> Outcome {
    run(cfg, Arc::new(AtomicBool::new(false)), &mut Quiet).expect("run")
}

/// The names add up to the totals, each name's statuses are its own, and
/// the server received every prepared request, in the mix's proportions.
fn check(o: &Outcome, seen: &HashMap<String, u64>) {
    assert_eq!(o.targets.len(), 3);
    let names: Vec<&str> = o.targets.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["item", "new", "fail"]);
    let sum = |f: &dyn Fn(&fairbench_engine::TargetOutcome) -> u64| -> u64 {
        o.targets.iter().map(f).sum()
    };
    assert_eq!(sum(&|t| t.planned), o.planned);
    assert_eq!(sum(&|t| t.requests), o.requests);
    assert_eq!(sum(&|t| t.errors.total()), o.errors.total());
    assert_eq!(sum(&|t| t.latency.len()), o.latency.len());
    assert!(o.ledger().balances());
    for t in &o.targets {
        assert_eq!(
            t.planned,
            t.requests + t.errors.not_answered(),
            "{}: {:?}",
            t.name,
            t.errors
        );
    }
    let fail = &o.targets[2];
    assert_eq!(fail.errors.status, fail.requests);
    assert_eq!(fail.status_codes.keys().copied().collect::<Vec<_>>(), [503]);
    assert_eq!(o.errors.status, fail.requests);
    assert_eq!(
        o.targets[0]
            .status_codes
            .keys()
            .copied()
            .collect::<Vec<_>>(),
        [200]
    );
    // 20 : 1 : 1 in the pool; the threads cycle through it.
    let (items, new) = (o.targets[0].planned as f64, o.targets[1].planned as f64);
    assert!(o.planned > 200, "planned {}", o.planned);
    assert!(
        (items / new - 20.0).abs() < 2.0,
        "item {items} vs new {new}: not 20 to 1"
    );
    for i in 0..20 {
        let n = seen.get(&format!("GET /item/{i} ")).copied().unwrap_or(0);
        assert!(n > 0, "/item/{i} never reached the server: {seen:?}");
    }
    assert!(
        seen.get("POST /new {\"n\":1}").copied().unwrap_or(0) > 0,
        "{seen:?}"
    );
    let total: u64 = seen.values().sum();
    assert!(
        total >= o.requests,
        "server saw {total}, answered {}",
        o.requests
    );
}

#[test]
fn closed_loop_mix_adds_up_and_reaches_the_server_as_prepared() {
    let _t = serial();
    let srv = Recorder::start();
    let o = go(&config(srv.port));
    check(&o, &srv.seen.lock().unwrap());
}

#[test]
fn pipelined_mix_sends_each_request_whole() {
    let _t = serial();
    let srv = Recorder::start();
    let mut cfg = config(srv.port);
    cfg.pipeline = 8;
    let o = go(&cfg);
    assert_eq!(
        o.errors.parse + o.errors.read + o.errors.write,
        0,
        "{:?}",
        o.errors
    );
    check(&o, &srv.seen.lock().unwrap());
}

#[test]
fn constant_rate_mix_adds_up() {
    let _t = serial();
    let srv = Recorder::start();
    let mut cfg = config(srv.port);
    cfg.model = LoadModel::ConstantRate { rps: 800.0 };
    let o = go(&cfg);
    check(&o, &srv.seen.lock().unwrap());
}

#[test]
fn a_mix_travels_to_a_load_generator_elsewhere() {
    let _serial = serial();
    let cfg = config(1);
    let json = serde_json::to_string(&cfg).unwrap();
    let back: LoadConfig = serde_json::from_str(&json).unwrap();
    let m = back.mix.unwrap();
    assert_eq!(m.names, ["item", "new", "fail"]);
    assert_eq!(m.requests[7].body, b"{\"n\":1}");
}
