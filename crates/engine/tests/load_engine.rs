//! The engine against servers with known behaviour. Bounds are generous:
//! these machines are small and noisy; the properties tested are not.

mod support;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use fairbench_engine::{run, LoadConfig, LoadModel, Outcome, Quiet, RunError};
use fairbench_testkit::scripted::{Reply, TestServer, HELLO};
use fairbench_testkit::serial;
use support::config;

fn go(cfg: &LoadConfig) -> Outcome {
    support::go(cfg).expect("run")
}

#[test]
fn closed_loop_against_fixed_delay_server() {
    let _timing = serial();
    let srv = TestServer::start("127.0.0.1:0", |_, _| Reply {
        delay: Duration::from_millis(20),
        ..Reply::ok()
    });
    let o = go(&config(&srv.url("/")));
    let l = o.latency_summary();
    assert!(o.requests > 50, "requests {}", o.requests);
    assert_eq!(o.errors.total(), 0, "{:?}", o.errors);
    // Never below the server's delay; the upper bound is generous for a VM
    // whose hypervisor may steal a third of its CPU time.
    assert!(
        l.p50 >= 20_000 && l.p50 < 200_000,
        "p50 {} µs for a 20 ms server",
        l.p50
    );
    // 4 connections, 20 ms each: at most ~200 req/s.
    assert!(o.rps() < 260.0, "rps {}", o.rps());
    // Every byte read belongs to a whole counted response.
    assert_eq!(o.bytes_read, o.requests * HELLO.len() as u64);
    assert!(o.schedule.is_none() && o.lateness.is_none());
}

#[test]
fn constant_rate_charges_a_stall_to_the_server() {
    let _timing = serial();
    // Answers at once, except that from 1.5 s to 2.5 s after start it holds
    // every answer until the stall is over.
    let srv = TestServer::start("127.0.0.1:0", |started, _| {
        let t = started.elapsed();
        let (from, to) = (Duration::from_millis(1500), Duration::from_millis(2500));
        let delay = if t >= from && t < to {
            to - t
        } else {
            Duration::ZERO
        };
        Reply {
            delay,
            ..Reply::ok()
        }
    });
    let mut cfg = config(&srv.url("/"));
    cfg.connections = 10;
    cfg.duration = Duration::from_secs(5);
    cfg.model = LoadModel::ConstantRate { rps: 1000.0 };
    let o = go(&cfg);
    let corrected = o.latency_summary();
    let service = o.uncorrected_summary();
    assert!(o.requests > 3000, "requests {}", o.requests);
    assert!(
        corrected.p99 >= 300_000,
        "corrected p99 {} µs: a 1 s stall must show in the percentiles",
        corrected.p99
    );
    // Only the ~10 requests caught in flight (0.2 % of 5000) saw the stall
    // from their actual send, so the service-time p99 stays far below it.
    assert!(
        service.p99 < 250_000 && corrected.p99 > 3 * service.p99,
        "uncorrected p99 {} µs vs corrected {} µs: the stall must show only in the corrected figure",
        service.p99,
        corrected.p99
    );
    let s = o.schedule.as_ref().unwrap();
    assert!(s.waited_for_connection > 100, "{s:?}");
    // The generator itself kept time even though the server did not: its
    // own lateness is orders of magnitude below the stall it reported (the
    // bound is generous because a VM's idle vCPUs can wake late).
    let late = o.lateness_summary().unwrap();
    assert!(late.p50 < 5_000, "lateness p50 {} µs", late.p50);
}

#[test]
fn constant_rate_is_kept_and_latency_is_from_plan() {
    let _timing = serial();
    let srv = TestServer::start("127.0.0.1:0", |_, _| Reply::ok());
    let mut cfg = config(&srv.url("/"));
    cfg.duration = Duration::from_secs(2);
    cfg.model = LoadModel::ConstantRate { rps: 500.0 };
    let o = go(&cfg);
    // 500/s for 2 s: about 1000, give or take scheduling at the edges.
    assert!(
        (900..=1100).contains(&o.requests),
        "requests {}",
        o.requests
    );
    // Sanity only: the point is the count and that both histograms hold
    // every response.
    assert!(o.latency_summary().p50 < 200_000);
    assert!(
        o.latency.len() == o.uncorrected.len(),
        "{:?} {:?}",
        o.ledger(),
        o.sockets
    );
    assert_eq!(o.schedule.as_ref().unwrap().never_sent, 0);
}

#[test]
fn malformed_responses_are_parse_errors_never_panics() {
    let _serial = serial();
    let mut big = b"HTTP/1.1 200 OK\r\nX-Big: ".to_vec();
    big.extend(std::iter::repeat_n(b'a', 1 << 20));
    big.extend_from_slice(b"\r\nContent-Length: 0\r\n\r\n");
    let cases: Vec<(&str, Vec<u8>, bool)> = vec![
        ("garbage", b"this is not http\r\n\r\n".to_vec(), false),
        (
            "truncated body",
            b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort".to_vec(),
            true,
        ),
        ("1 MB header", big, false),
    ];
    for (name, bytes, close) in cases {
        let b = bytes.clone();
        let srv = TestServer::start("127.0.0.1:0", move |_, _| Reply {
            delay: Duration::ZERO,
            bytes: b.clone(),
            close,
        });
        let mut cfg = config(&srv.url("/"));
        cfg.duration = Duration::from_millis(700);
        let o = go(&cfg);
        assert_eq!(o.requests, 0, "{name}");
        assert!(o.errors.parse > 0, "{name}: {:?}", o.errors);
    }
}

#[test]
fn early_close_is_a_read_error() {
    let _serial = serial();
    let srv = TestServer::start("127.0.0.1:0", |_, _| Reply {
        delay: Duration::ZERO,
        bytes: Vec::new(),
        close: true,
    });
    let mut cfg = config(&srv.url("/"));
    cfg.duration = Duration::from_millis(700);
    let o = go(&cfg);
    assert_eq!(o.requests, 0);
    assert!(o.errors.read > 0, "{:?}", o.errors);
}

#[test]
fn chunked_bodies() {
    let _serial = serial();
    let srv = TestServer::start("127.0.0.1:0", |_, _| {
        Reply {
        delay: Duration::ZERO,
        bytes: b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nHello\r\n8\r\n World!\n\r\n0\r\n\r\n".to_vec(),
        close: false,
    }
    });
    let o = go(&config(&srv.url("/")));
    assert!(o.requests > 100, "requests {}", o.requests);
    assert_eq!(o.errors.total(), 0, "{:?}", o.errors);
}

#[test]
fn connection_close_on_every_response_reconnects_without_errors() {
    let _serial = serial();
    let srv = TestServer::start("127.0.0.1:0", |_, _| Reply {
        delay: Duration::ZERO,
        bytes: b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok".to_vec(),
        close: true,
    });
    let o = go(&config(&srv.url("/")));
    assert!(o.requests > 50, "requests {}", o.requests);
    assert_eq!(o.errors.total(), 0, "{:?}", o.errors);
}

#[test]
fn server_slower_than_timeout_counts_timeouts_once() {
    let _serial = serial();
    let srv = TestServer::start("127.0.0.1:0", |_, _| Reply {
        delay: Duration::from_secs(3),
        ..Reply::ok()
    });
    let mut cfg = config(&srv.url("/"));
    cfg.connections = 2;
    cfg.timeout = Duration::from_millis(300);
    cfg.duration = Duration::from_millis(1000);
    let o = go(&cfg);
    assert_eq!(o.requests, 0);
    // Each connection times out about every 300 ms: 2 × ~3.
    assert!((2..=12).contains(&o.errors.timeout), "{:?}", o.errors);
    assert_eq!(o.errors.read + o.errors.parse, 0, "{:?}", o.errors);
    assert!(o.timeouts_per_million() > 999_999.0);
}

#[test]
fn status_errors_are_counted() {
    let _serial = serial();
    let srv = TestServer::start("127.0.0.1:0", |_, n| {
        if n % 2 == 0 {
            Reply::ok()
        } else {
            Reply {
                delay: Duration::ZERO,
                bytes: b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n".to_vec(),
                close: false,
            }
        }
    });
    let o = go(&config(&srv.url("/")));
    assert!(o.errors.status > 0);
    let half = o.requests as f64 / 2.0;
    assert!(
        (o.errors.status as f64 - half).abs() <= 8.0,
        "{} of {}",
        o.errors.status,
        o.requests
    );
}

#[test]
fn pipelining_keeps_depth_in_flight() {
    let _serial = serial();
    let srv = TestServer::start("127.0.0.1:0", |_, _| Reply::ok());
    let mut cfg = config(&srv.url("/"));
    cfg.pipeline = 8;
    let o = go(&cfg);
    assert!(o.requests > 100);
    assert_eq!(o.errors.total(), 0, "{:?}", o.errors);
}

#[test]
fn ipv6_literal_target() {
    let _serial = serial();
    let Ok(probe) = std::net::TcpListener::bind("[::1]:0") else {
        eprintln!("skipped: no IPv6 loopback on this machine");
        return;
    };
    drop(probe);
    let srv = TestServer::start("[::1]:0", |_, _| Reply::ok());
    let o = go(&config(&srv.url("/")));
    assert!(o.requests > 100);
    assert_eq!(o.errors.total(), 0);
}

#[test]
fn warmup_is_excluded_but_kept_in_the_series() {
    let _timing = serial();
    let srv = TestServer::start("127.0.0.1:0", |_, _| Reply::ok());
    let mut cfg = config(&srv.url("/"));
    cfg.warmup = Duration::from_secs(1);
    cfg.duration = Duration::from_secs(1);
    let o = go(&cfg);
    let warm: u64 = o
        .series
        .iter()
        .filter(|s| s.second < 0)
        .map(|s| s.requests)
        .sum();
    let meas: u64 = o
        .series
        .iter()
        .filter(|s| s.second >= 0)
        .map(|s| s.requests)
        .sum();
    assert!(warm > 0, "warm-up intervals recorded");
    // The measured count matches the measured intervals (to the few requests
    // that completed on an interval edge).
    assert!(
        (o.requests as i64 - meas as i64).abs() < 50,
        "{} vs {}",
        o.requests,
        meas
    );
    assert!((o.measured_s - 1.0).abs() < 0.1);
}

#[test]
fn refused_connection_is_a_clear_error() {
    let _serial = serial();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let cfg = config(&format!("http://127.0.0.1:{port}/"));
    match support::go(&cfg) {
        Err(RunError::Connect(m)) => assert!(m.contains("cannot connect"), "{m}"),
        other => panic!(
            "expected a connect error, got {:?}",
            other.map(|o| o.requests)
        ),
    }
}

#[test]
fn stop_flag_ends_the_run_early_with_results() {
    let _serial = serial();
    let srv = TestServer::start("127.0.0.1:0", |_, _| Reply::ok());
    let mut cfg = config(&srv.url("/"));
    cfg.duration = Duration::from_secs(30);
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(700));
        s2.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    let t = std::time::Instant::now();
    let o = run(&cfg, stop, &mut Quiet).unwrap();
    assert!(t.elapsed() < Duration::from_secs(5));
    assert!(o.interrupted);
    assert!(o.requests > 0);
    assert!(o.measured_s < 2.0);
}

#[test]
fn series_has_one_interval_per_second_even_when_threads_stall() {
    let _timing = serial();
    // Keep worker threads busy enough that some wake late; the series must
    // still hold every second exactly once, in order.
    let srv = TestServer::start("127.0.0.1:0", |_, _| Reply::ok());
    let mut cfg = config(&srv.url("/"));
    cfg.connections = 8;
    cfg.threads = 4;
    cfg.duration = Duration::from_secs(3);
    let o = go(&cfg);
    let measured: Vec<&fairbench_engine::SecondSample> = o
        .series
        .iter()
        .filter(|s| s.phase == fairbench_engine::Phase::Measure)
        .collect();
    let seconds: Vec<i64> = measured.iter().map(|s| s.second).collect();
    assert_eq!(seconds, vec![0, 1, 2], "{seconds:?}");
    assert!(
        measured.iter().all(|s| (s.duration_s - 1.0).abs() < 0.05),
        "{:?}",
        o.series
    );
    // After the window, at most one drain interval: the answers still due.
    let after: Vec<i64> = o.series.iter().skip(3).map(|s| s.second).collect();
    assert!(after.is_empty() || after == vec![3], "{after:?}");
}

#[test]
fn the_thread_start_hook_runs_on_every_load_thread_and_can_void_the_run() {
    let _serial = serial();
    use std::sync::Mutex;
    let srv = TestServer::start("127.0.0.1:0", |_, _| Reply::ok());
    let mut cfg = config(&srv.url("/"));
    cfg.threads = 3;
    cfg.connections = 3;
    cfg.duration = Duration::from_millis(300);
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let s2 = seen.clone();
    cfg.thread_start = Some(fairbench_engine::ThreadStart(Arc::new(move || {
        let name = std::thread::current().name().unwrap_or("").to_string();
        s2.lock().unwrap().push(name);
        Ok(())
    })));
    let o = go(&cfg);
    assert!(o.requests > 0);
    let mut names = seen.lock().unwrap().clone();
    names.sort();
    // The stall watch is placed with the load threads, so that it neither
    // runs on a server's CPUs nor misses a pause of their group.
    assert_eq!(
        names,
        [
            "fairbench-load-0",
            "fairbench-load-1",
            "fairbench-load-2",
            "fairbench-stall"
        ]
    );

    support::voided_by_a_failing_hook(cfg);
}

#[test]
fn a_cpu_quota_that_pauses_the_load_threads_is_reported() {
    let _serial = serial();
    // The load threads in a control group of 2 ms of CPU per 10 ms: they
    // are held off the CPUs most of the window, which the generator's other
    // measures of itself would put down to another process at most.
    let Some((g, cpu)) = fairbench_sys::containment::throttle::quota_group(10_000, 2_000) else {
        eprintln!("skipped: no cgroup v1 cpu controller to place threads under");
        return;
    };
    let g = Arc::new(g);
    let srv = TestServer::start("127.0.0.1:0", |_, _| Reply::ok());
    let mut cfg = config(&srv.url("/"));
    cfg.duration = Duration::from_millis(1000);
    let joined = g.clone();
    cfg.thread_start = Some(fairbench_engine::ThreadStart(Arc::new(move || {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() } as u32;
        joined.add_thread(tid).map_err(|e| e.to_string())
    })));
    let o = go(&cfg);
    drop(cfg);
    let _ = g.remove();
    assert!(o.requests > 0);
    let q = o
        .generator
        .quota_pause
        .as_ref()
        .expect("the pauses are reported");
    // A closed loop spins for its CPU: held off about 80 % of the second on
    // each CPU (1.2–1.3 s in all here).
    assert!(q.throttled_s > 0.1, "{q:?}");
    assert_eq!(q.group, cpu.display().to_string());
    let w = o.warnings();
    assert!(
        w.iter()
            .any(|w| w.contains("a CPU quota paused the load generator")),
        "{w:?}"
    );
    // Linux counts the pauses as waiting for a CPU (76 % here): the
    // contention line must not put them down to another process alone.
    assert!(
        !w.iter().any(|w| w.contains("(another process ran on")),
        "{w:?}"
    );
}

#[test]
fn load_threads_moved_under_a_cpu_quota_while_they_run_are_reported() {
    let _serial = serial();
    // As an orchestrator that places a running process would: the load
    // threads start in their own group and are moved under 2 ms of CPU per
    // 10 ms during the warm-up, after they read their groups. Read only
    // then, the pauses went unseen. The move waits for the threads (their
    // start hook), not for a sleep of the test's own: on a starved machine
    // a sleep ran past the whole run.
    let Some((g, cpu)) = fairbench_sys::containment::throttle::quota_group(10_000, 2_000) else {
        eprintln!("skipped: no cgroup v1 cpu controller to place threads under");
        return;
    };
    let srv = TestServer::start("127.0.0.1:0", |_, _| Reply::ok());
    let mut cfg = config(&srv.url("/"));
    cfg.warmup = Duration::from_secs(1);
    cfg.duration = Duration::from_millis(1500);
    let tids: Arc<std::sync::Mutex<Vec<u32>>> = Arc::default();
    let seen = tids.clone();
    cfg.thread_start = Some(fairbench_engine::ThreadStart(Arc::new(move || {
        // SAFETY: gettid has no preconditions.
        seen.lock().unwrap().push(unsafe { libc::gettid() } as u32);
        Ok(())
    })));
    let (o, tried, after) = std::thread::scope(|s| {
        let run = s.spawn(|| go(&cfg));
        let t = std::time::Instant::now();
        while tids.lock().unwrap().is_empty() && t.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(100));
        let after = t.elapsed();
        let tried: Vec<(u32, String)> = (tids.lock().unwrap().iter())
            .map(|&tid| {
                let moved = g.add_thread(tid);
                (
                    tid,
                    moved.map_or_else(|e| e.to_string(), |()| "moved".into()),
                )
            })
            .collect();
        (run.join().unwrap(), tried, after)
    });
    let _ = g.remove();
    assert!(
        tried.iter().any(|t| t.1 == "moved"),
        "{tried:?}, {after:?} after the first thread started; window {} s",
        o.measured_s
    );
    assert!(o.requests > 0);
    let q = (o.generator.quota_pause.as_ref()).expect("the pauses after the move are reported");
    // Held off about 80 % of the window on each CPU it spun on.
    assert!(q.throttled_s > 0.1, "{q:?}");
    assert_eq!(q.group, cpu.display().to_string());
}

#[test]
fn memory_pressure_on_the_machine_is_reported() {
    let _serial = serial();
    use fairbench_sys::process::{ServerProcess, ServerSpec};
    if fairbench_sys::pressure::memory_stall_us().is_none() {
        eprintln!("skipped: this kernel gives no pressure stall information");
        return;
    }
    // A process held to 16 MiB that writes a 128 MiB file and reads it
    // over and over: its pages are charged to its group, so every read
    // reclaims the group's page cache, which the kernel counts as time the
    // machine stalled on memory (27 % of a second measured by hand here).
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("memory-pressure");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("big");
    let ready = dir.join("written");
    let _ = std::fs::remove_file(&ready);
    let script = format!(
        "dd if=/dev/zero of='{0}' bs=1M count=128 status=none && touch '{1}' && while :; do cat '{0}' > /dev/null; done",
        file.display(),
        ready.display()
    );
    let spec = ServerSpec::new(
        vec!["sh".into(), "-c".into(), script],
        dir.clone(),
        dir.join("reader.log"),
    );
    let reader = ServerProcess::start(&spec).unwrap();
    let limited = reader.group().map(|g| {
        g.paths().iter().any(|p| {
            ["memory.limit_in_bytes", "memory.max"]
                .iter()
                .any(|f| p.join(f).exists() && std::fs::write(p.join(f), "16M").is_ok())
        })
    });
    if limited != Some(true) {
        reader.stop();
        eprintln!("skipped: no memory controller to hold the reader to");
        return;
    }
    // The load starts once the file is written and only re-reads remain
    // (a fresh clone's CI overlapped the write and saw 0.3 %), and only if
    // this machine does stall under them: measured here, apart from the
    // engine, so that a broken reading in the engine still fails.
    let t = std::time::Instant::now();
    while !ready.exists() && reader.is_alive() && t.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let before = fairbench_sys::pressure::memory_stall_us();
    std::thread::sleep(Duration::from_millis(500));
    let seen = fairbench_sys::pressure::stall_fraction(
        before,
        fairbench_sys::pressure::memory_stall_us(),
        500_000,
    );
    if !ready.exists() || seen.is_none_or(|f| f < 0.05) {
        reader.stop();
        let _ = std::fs::remove_file(&file);
        eprintln!("skipped: the reader did not put this machine under memory pressure ({seen:?})");
        return;
    }
    let srv = TestServer::start("127.0.0.1:0", |_, _| Reply::ok());
    let mut cfg = config(&srv.url("/"));
    cfg.duration = Duration::from_millis(1500);
    // Read apart from the engine over the run too: the kernel may stop
    // stalling on the reader at any time (a fresh clone's CI saw 0.02 %
    // through the run after 5 % just before it), and then there is
    // nothing for the engine to report.
    let (t, before) = (
        std::time::Instant::now(),
        fairbench_sys::pressure::memory_stall_us(),
    );
    let o = go(&cfg);
    let lasted = fairbench_sys::pressure::stall_fraction(
        before,
        fairbench_sys::pressure::memory_stall_us(),
        t.elapsed().as_micros() as u64,
    );
    reader.stop();
    let _ = std::fs::remove_file(&file);
    if lasted.is_none_or(|f| f < 0.05) {
        eprintln!("skipped: the memory pressure did not last through the run ({lasted:?})");
        return;
    }
    let stalled = o
        .generator
        .memory_stall_fraction
        .expect("the stall is read");
    assert!(stalled >= 0.01, "stalled {stalled}");
    let w = o.warnings();
    assert!(
        w.iter()
            .any(|w| w.contains("the machine stalled on memory")),
        "{w:?}"
    );
}
