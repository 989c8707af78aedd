//! The ledger against servers that misbehave: every planned request ends in
//! exactly one outcome, and nothing unanswered makes a percentile look better.
//! Each server is written for its test and deterministic; bounds are generous
//! because these machines are small and noisy, the properties are not.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fairbench_engine::{run, LoadConfig, LoadModel, Outcome, Quiet, RunError, Target};
use fairbench_testkit::scripted::{Reply, TestServer, HELLO};
use fairbench_testkit::serial;
use fairbench_testkit::timing::Slack;

fn config(url: &str) -> LoadConfig {
    let mut c = LoadConfig::new(Target::parse(url).unwrap());
    c.connections = 4;
    c.threads = 1;
    c.duration = Duration::from_secs(2);
    // Far above any answer these servers give: on a loaded machine their
    // threads can starve for seconds, and a timeout is then the test's
    // machine, not the ledger under test. Tests about timeouts set their own.
    c.timeout = Duration::from_secs(20);
    c
}

fn go(cfg: &LoadConfig) -> Outcome {
    run(cfg, Arc::new(AtomicBool::new(false)), &mut Quiet).expect("run")
}

fn assert_balanced(o: &Outcome) {
    let l = o.ledger();
    assert!(
        l.balances(),
        "planned {} != answered {} + not answered {} ({:?})",
        l.planned,
        l.answered,
        l.not_answered(),
        l
    );
}

/// Holds every answer asked for from `from` after the server started until
/// `until` after it started (or forever, bounded by the test's own life).
fn freezing_server(from: Duration, until: Option<Duration>) -> TestServer {
    TestServer::start("127.0.0.1:0", move |started, _| {
        let t = started.elapsed();
        let delay = match until {
            _ if t < from => Duration::ZERO,
            Some(u) if t < u => u - t,
            Some(_) => Duration::ZERO,
            None => Duration::from_secs(20),
        };
        Reply {
            delay,
            ..Reply::ok()
        }
    })
}

#[test]
fn a_stall_at_the_end_of_the_run_is_measured_not_cut() {
    let _timing = serial();
    // The run's window is about 0.1 s to 3.1 s after the server starts; the
    // server freezes for its last 0.6 s and answers 0.5 s after it ended.
    let srv = freezing_server(
        Duration::from_millis(2500),
        Some(Duration::from_millis(3600)),
    );
    let mut cfg = config(&srv.url("/"));
    cfg.connections = 800;
    cfg.duration = Duration::from_secs(3);
    cfg.model = LoadModel::ConstantRate { rps: 1000.0 };
    let o = go(&cfg);
    assert_balanced(&o);
    assert!(
        (2900..=3100).contains(&o.planned),
        "planned {} for 1000/s over 3 s",
        o.planned
    );
    // The frozen requests were answered during the drain, from their plan.
    assert!(o.requests >= o.planned * 95 / 100, "{:?}", o.ledger());
    let p99 = o.latency_summary().p99;
    assert!(
        p99 >= 300_000,
        "p99 {p99} µs: a 0.6 s stall at the end must show"
    );
    assert!(
        o.series
            .iter()
            .any(|s| s.phase == fairbench_engine::Phase::Drain && s.requests > 100),
        "the drain holds the late answers: {:?}",
        o.series
    );
    // Throughput stays the measured window's.
    assert!((o.measured_s - 3.0).abs() < 0.05, "{}", o.measured_s);
}

#[test]
fn requests_never_answered_are_timeouts_in_the_percentiles() {
    let _timing = serial();
    let srv = freezing_server(Duration::from_millis(2500), None);
    let mut cfg = config(&srv.url("/"));
    cfg.connections = 800;
    cfg.duration = Duration::from_secs(3);
    cfg.timeout = Duration::from_millis(500);
    cfg.model = LoadModel::ConstantRate { rps: 1000.0 };
    let t = Instant::now();
    let o = go(&cfg);
    let took = t.elapsed();
    assert_balanced(&o);
    // ~600 requests fell in the freeze; every one of them is a timeout.
    assert!((450..=800).contains(&o.errors.timeout), "{:?}", o.ledger());
    assert_eq!(o.errors.unanswered, 0, "the drain waits out the timeout");
    let p99 = o.latency_summary().p99;
    assert!(p99 >= 500_000, "p99 {p99} µs with ~20 % never answered");
    // The answered ones alone stay below the timeout: kept apart, not mixed
    // in (how far below is the machine's: 215 ms measured on a loaded one;
    // mixed in, the ~20 % timeouts would put the p99 at 500 ms or more).
    assert!(
        o.answered_summary().p99 < 500_000,
        "{:?}",
        o.answered_summary()
    );
    // The drain is bounded by the timeout.
    assert!(took < Duration::from_secs(6), "took {took:?}");
    assert!(o
        .warnings()
        .iter()
        .any(|w| w.contains("got no answer") && w.contains("timeout")));
}

#[test]
fn a_server_that_drops_some_requests_has_a_p99_at_least_the_timeout() {
    let _timing = serial();
    let n = Arc::new(AtomicU64::new(0));
    let srv = TestServer::start("127.0.0.1:0", move |_, _| {
        // Every 40th request (2.5 %) is never answered.
        if n.fetch_add(1, Ordering::Relaxed) % 40 == 39 {
            Reply {
                delay: Duration::from_secs(20),
                ..Reply::ok()
            }
        } else {
            Reply::ok()
        }
    });
    let mut cfg = config(&srv.url("/"));
    cfg.connections = 60;
    cfg.timeout = Duration::from_millis(400);
    cfg.model = LoadModel::ConstantRate { rps: 1000.0 };
    let o = go(&cfg);
    assert_balanced(&o);
    assert!(o.errors.timeout > 10, "{:?}", o.ledger());
    let honest = o.latency_summary().p99;
    let answered = o.answered_summary().p99;
    assert!(honest >= 400_000, "p99 {honest} µs with 2.5 % dropped");
    // The answered alone stay below the timeout; how far below is the
    // machine's (a loaded 2-core machine has measured 112 ms here). Mixed
    // in, the 2.5 % dropped would put the p99 at the 400 ms timeout.
    assert!(answered < 400_000, "answered-only p99 {answered} µs");
}

/// Answers every request, but every `every`-th response on a connection says
/// `Connection: close` and the server closes, dropping whatever was
/// pipelined behind it.
fn closing_server(every: u64) -> TestServer {
    TestServer::start("127.0.0.1:0", move |_, n| {
        if n % every == every - 1 {
            Reply {
                delay: Duration::ZERO,
                bytes: b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 13\r\n\r\nHello World!\n".to_vec(),
                close: true,
            }
        } else {
            Reply::ok()
        }
    })
}

#[test]
fn pipelining_through_connection_close_loses_nothing() {
    let _serial = serial();
    let srv = closing_server(10);
    for model in [
        LoadModel::ClosedLoop,
        LoadModel::ConstantRate { rps: 2000.0 },
    ] {
        let mut cfg = config(&srv.url("/"));
        cfg.pipeline = 4;
        cfg.model = model;
        let o = go(&cfg);
        assert_balanced(&o);
        // Requests queued behind a close are sent again, not lost or failed.
        assert_eq!(o.errors.not_answered(), 0, "{model:?}: {:?}", o.ledger());
        assert!(
            o.sockets.closed_by_server > 10,
            "{model:?}: {:?}",
            o.sockets
        );
        if let LoadModel::ConstantRate { .. } = model {
            assert!(
                (3900..=4100).contains(&o.planned),
                "planned {} for 2000/s over 2 s",
                o.planned
            );
        }
    }
}

#[test]
fn a_failed_connection_counts_every_request_it_carried() {
    let _serial = serial();
    // Answers two requests per connection, then closes without answering
    // the ones pipelined behind them.
    let srv = TestServer::start("127.0.0.1:0", |_, n| {
        if n < 2 {
            Reply::ok()
        } else {
            Reply {
                delay: Duration::ZERO,
                bytes: Vec::new(),
                close: true,
            }
        }
    });
    let mut cfg = config(&srv.url("/"));
    cfg.pipeline = 4;
    cfg.duration = Duration::from_secs(1);
    let o = go(&cfg);
    assert_balanced(&o);
    // The two queued behind the answered pair got not one byte: each goes
    // out once more on a fresh connection (GET is idempotent), and only a
    // second loss is a read error.
    assert!(
        o.sockets.retried >= 2 * o.sockets.closed_by_server.saturating_sub(8),
        "retried {} for {} closes",
        o.sockets.retried,
        o.sockets.closed_by_server
    );
    assert!(o.errors.read <= o.sockets.retried, "{:?}", o.sockets);
}

#[test]
fn idle_connections_are_used_longest_free_first_and_nobody_waits() {
    let _timing = serial();
    let srv = TestServer::start("127.0.0.1:0", |_, _| Reply::ok());
    let mut cfg = config(&srv.url("/"));
    cfg.connections = 50;
    // A rate a debug-built engine and a thread-per-connection test server
    // sustain with most connections idle even on a loaded CI machine: each
    // connection is needed every 50 ms. (The release engine at 20,000/s
    // against nginx is in docs/load-json.md.)
    cfg.model = LoadModel::ConstantRate { rps: 1_000.0 };
    let o = go(&cfg);
    assert_balanced(&o);
    let s = o.schedule.as_ref().unwrap();
    assert!(
        s.sent as f64 > 0.9 * o.planned as f64,
        "sent {} of {}: the test server could not keep up",
        s.sent,
        o.planned
    );
    // A request can wait only when all 50 connections are busy at once:
    // when some answer took longer than a connection's turn (50 ms at
    // 1,000/s), or the generator, starved of its CPU, sent a burst. On a
    // machine busy enough for either, waits are the honest figure, not a
    // fault; otherwise (every quiet run) nobody may wait.
    let turn_us = 50_000;
    let stalled = o.uncorrected.max() >= turn_us || o.generator.contended;
    let share = s.waited_for_connection as f64 / s.sent as f64;
    assert!(
        share < 0.02 || stalled,
        "{} of {} requests reported waiting for a connection with 50 mostly idle \
         (slowest answer {} µs)",
        s.waited_for_connection,
        s.sent,
        o.uncorrected.max()
    );
    // The warning's threshold is finer than the bound above: it holds only
    // when the generator had its CPU. A load thread that waited for it
    // (reported, and warned) sends late, then many at once, and those
    // bursts can need more connections than are free.
    if !o.generator.contended {
        assert!(
            !o.warnings().iter().any(|w| w.contains("--connections")),
            "{:?}",
            o.warnings()
        );
    }
}

#[test]
fn two_load_threads_on_one_cpu_are_saturated() {
    let _timing = serial();
    let srv = TestServer::start("127.0.0.1:0", |_, _| Reply::ok());
    let mut cfg = config(&srv.url("/"));
    cfg.connections = 64;
    cfg.threads = 2;
    cfg.cpus = Some(vec![0]);
    cfg.duration = Duration::from_millis(1500);
    let o = go(&cfg);
    assert_eq!(o.generator.thread_busy.len(), 2);
    assert!(
        o.generator.saturated,
        "two closed-loop threads on one CPU: busy {:?}",
        o.generator.thread_busy
    );
    // The same two threads at a trickle are not.
    cfg.model = LoadModel::ConstantRate { rps: 100.0 };
    let o = go(&cfg);
    assert!(
        !o.generator.saturated,
        "100 req/s: busy {:?}",
        o.generator.thread_busy
    );
}

#[test]
fn an_unsolicited_response_on_an_idle_connection_is_not_a_parse_error() {
    let _serial = serial();
    // Each answer is followed at once by a 408 and a close, as servers do
    // when an idle keep-alive connection times out.
    let srv = TestServer::start("127.0.0.1:0", |_, _| {
        let mut bytes = HELLO.to_vec();
        bytes.extend_from_slice(
            b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
        );
        Reply {
            delay: Duration::ZERO,
            bytes,
            close: true,
        }
    });
    let mut cfg = config(&srv.url("/"));
    cfg.model = LoadModel::ConstantRate { rps: 100.0 };
    cfg.duration = Duration::from_secs(1);
    let o = go(&cfg);
    assert_balanced(&o);
    assert_eq!(o.errors.total(), 0, "{:?}", o.errors);
    assert!(o.sockets.unsolicited_responses > 50, "{:?}", o.sockets);
    assert!(o.requests >= 95, "{:?}", o.ledger());
}

#[test]
fn generator_cpu_covers_the_measured_window_only() {
    let _timing = serial();
    let srv = TestServer::start("127.0.0.1:0", |_, _| Reply::ok());
    let mut cfg = config(&srv.url("/"));
    cfg.connections = 8;
    cfg.threads = 1;
    cfg.warmup = Duration::from_secs(1);
    cfg.duration = Duration::from_secs(1);
    let o = go(&cfg);
    // One thread cannot use more than the window's 1 s of CPU; with the
    // warm-up counted it could use 2.
    assert!(
        o.generator.cpu_s > 0.0 && o.generator.cpu_s < 1.15,
        "{} s CPU",
        o.generator.cpu_s
    );
}

#[test]
fn a_load_thread_that_cannot_be_pinned_fails_the_run() {
    let _serial = serial();
    let srv = TestServer::start("127.0.0.1:0", |_, _| Reply::ok());
    let mut cfg = config(&srv.url("/"));
    // A CPU this machine does not have.
    cfg.cpus = Some(vec![1000]);
    match run(&cfg, Arc::new(AtomicBool::new(false)), &mut Quiet) {
        Err(RunError::System(m)) => assert!(m.contains("cannot pin"), "{m}"),
        other => panic!(
            "expected a pinning error, got {:?}",
            other.map(|o| o.requests)
        ),
    }
}

#[test]
fn a_refusing_server_in_closed_loop_is_all_connect_errors() {
    let _serial = serial();
    // Accepts the preflight connection, then refuses: the listener is gone.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", l.local_addr().unwrap());
    let cfg = {
        let mut c = config(&url);
        c.duration = Duration::from_millis(600);
        c.timeout = Duration::from_millis(200);
        // Load connections start well after the listener is gone.
        c.start_at = Some(std::time::SystemTime::now() + Duration::from_secs(1));
        c
    };
    let handle = std::thread::spawn(move || {
        // Accept the preflight, then close the listener.
        let _ = l.accept();
    });
    let stop = Arc::new(AtomicBool::new(false));
    let o = run(&cfg, stop, &mut Quiet).expect("run");
    handle.join().unwrap();
    assert_balanced(&o);
    assert_eq!(o.requests, 0);
    assert!(o.errors.connect > 0, "{:?}", o.ledger());
    assert!(o.warnings().iter().any(|w| w == "no request was answered"));
}

#[test]
fn a_request_budget_ends_the_window_after_exactly_n() {
    let _serial = serial();
    let srv = TestServer::start("127.0.0.1:0", |_, _| Reply::ok());
    for (threads, pipeline) in [(1, 1), (2, 1), (2, 4)] {
        let mut cfg = config(&srv.url("/"));
        cfg.connections = 3;
        cfg.threads = threads;
        cfg.pipeline = pipeline;
        cfg.requests = Some(1001);
        cfg.duration = Duration::from_secs(60);
        let t = Instant::now();
        let o = go(&cfg);
        assert_balanced(&o);
        let what = format!("t={threads} p={pipeline}: {:?}", o.ledger());
        assert_eq!((o.planned, o.requests), (1001, 1001), "{what}");
        assert!(t.elapsed() < Duration::from_secs(20), "{what}");
        // The window is the time the requests took, not the 60 s bound.
        assert!(
            o.measured_s > 0.0 && o.measured_s < 20.0,
            "{}",
            o.measured_s
        );
        assert!(o.rps() > 50.0, "{what}");
    }
}

#[test]
fn a_request_budget_counts_the_window_not_the_warmup() {
    let _serial = serial();
    let srv = TestServer::start("127.0.0.1:0", |_, _| Reply::ok());
    let mut cfg = config(&srv.url("/"));
    cfg.warmup = Duration::from_millis(300);
    cfg.requests = Some(200);
    cfg.duration = Duration::from_secs(60);
    let o = go(&cfg);
    assert_balanced(&o);
    assert_eq!((o.planned, o.requests), (200, 200), "{:?}", o.ledger());
    assert!(
        o.series
            .iter()
            .any(|s| s.phase == fairbench_engine::Phase::Warmup && s.requests > 0),
        "the warm-up ran: {:?}",
        o.series
    );
}

#[test]
fn without_keepalive_every_request_has_its_own_connection() {
    let _serial = serial();
    let srv = TestServer::start("127.0.0.1:0", |_, _| Reply::ok());
    for model in [
        LoadModel::ClosedLoop,
        LoadModel::ConstantRate { rps: 300.0 },
    ] {
        let mut cfg = config(&srv.url("/"));
        cfg.keepalive = false;
        cfg.model = model;
        cfg.requests = Some(200);
        cfg.duration = Duration::from_secs(30);
        let before = srv.accepted.load(Ordering::Relaxed);
        let o = go(&cfg);
        assert_balanced(&o);
        let what = format!("{model:?}: {:?} {:?}", o.ledger(), o.sockets);
        assert_eq!((o.planned, o.requests), (200, 200), "{what}");
        assert!(!o.keepalive);
        assert_eq!(o.sockets.opened, 200, "{what}");
        assert_eq!(o.sockets.closed_by_client, 200, "{what}");
        assert_eq!(o.sockets.closed_by_server, 0, "{what}");
        // The check before the run is one more.
        let accepted = srv.accepted.load(Ordering::Relaxed) - before;
        assert_eq!(accepted, 201, "{what}");
        assert_eq!(o.connect_time.len(), 200);
    }
}

#[test]
fn without_keepalive_a_server_that_closes_first_is_no_error() {
    let _serial = serial();
    // Answers with Connection: close and closes, as HTTP/1.0 servers do
    // for ab.
    let srv = closing_server(1);
    let mut cfg = config(&srv.url("/"));
    cfg.keepalive = false;
    cfg.requests = Some(100);
    cfg.duration = Duration::from_secs(30);
    let o = go(&cfg);
    assert_balanced(&o);
    assert_eq!((o.planned, o.requests), (100, 100), "{:?}", o.ledger());
    assert_eq!(o.errors.total(), 0, "{:?}", o.errors);
}

#[test]
fn without_keepalive_a_refusing_server_fails_each_request_on_connect() {
    let _serial = serial();
    // The listener takes the run's check connection and closes. The run
    // starts a second later, so no load connection can reach the listener's
    // queue before it is gone (one that did would be reset after it was
    // accepted by the kernel: a read error, not a refused connect).
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", l.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        let _ = l.accept();
    });
    let mut cfg = config(&url);
    cfg.keepalive = false;
    cfg.requests = Some(30);
    cfg.duration = Duration::from_secs(30);
    cfg.timeout = Duration::from_millis(300);
    cfg.start_at = Some(std::time::SystemTime::now() + Duration::from_secs(1));
    let o = go(&cfg);
    handle.join().unwrap();
    assert_balanced(&o);
    assert_eq!(o.planned, 30);
    assert_eq!(o.errors.connect, 30, "{:?}", o.ledger());
}

#[test]
fn pipelining_keeps_the_full_depth_in_flight() {
    let _timing = serial();
    // One connection, each answer 20 ms after the previous: a request waits
    // behind the ones pipelined before it, so its latency is the depth times
    // 20 ms.
    let srv = TestServer::start("127.0.0.1:0", |_, _| Reply {
        delay: Duration::from_millis(20),
        ..Reply::ok()
    });
    let mut cfg = config(&srv.url("/"));
    cfg.connections = 1;
    cfg.pipeline = 4;
    cfg.duration = Duration::from_millis(1500);
    let o = go(&cfg);
    assert_balanced(&o);
    let p50 = o.latency_summary().p50;
    // Four answers of 20 ms each, every one of them the server's sleep, so
    // four wake-ups' worth of the machine's slack on top; depth 3 (the
    // fault) gives 60 ms, depth 1 20 ms.
    let upper = 80_000 + 4 * Slack::of_machine().above(0);
    assert!(
        (70_000..upper).contains(&p50),
        "p50 {p50} µs: 4 in flight at 20 ms each should wait ~80 ms (under {upper})"
    );
}

#[test]
fn answers_are_counted_per_status_and_the_expected_ones_decide_errors() {
    let _serial = serial();
    let n = Arc::new(AtomicU64::new(0));
    let srv = TestServer::start("127.0.0.1:0", move |_, _| {
        let status = match n.fetch_add(1, Ordering::Relaxed) % 4 {
            0 | 1 => "200 OK",
            2 => "404 Not Found",
            _ => "503 Service Unavailable",
        };
        Reply {
            delay: Duration::ZERO,
            bytes: format!("HTTP/1.1 {status}\r\nContent-Length: 0\r\n\r\n").into_bytes(),
            close: false,
        }
    });
    for (expect, bad) in [(None, [404u16, 503].as_slice()), (Some("200,404"), &[503])] {
        let mut cfg = config(&srv.url("/"));
        cfg.connections = 1;
        cfg.requests = Some(400);
        cfg.duration = Duration::from_secs(30);
        if let Some(e) = expect {
            cfg.expect_status = fairbench_engine::StatusSet::parse(e).unwrap();
        }
        let o = go(&cfg);
        assert_balanced(&o);
        let codes = &o.status_codes;
        assert_eq!(codes.values().sum::<u64>(), 400, "{codes:?}");
        assert_eq!(codes.len(), 3, "{codes:?}");
        assert!(
            codes[&200] >= 190 && codes[&404] >= 90 && codes[&503] >= 90,
            "{codes:?}"
        );
        let errors: u64 = bad.iter().map(|c| codes[c]).sum();
        assert_eq!(o.errors.status, errors, "{expect:?}: {codes:?}");
        assert!(
            o.warnings().iter().any(|w| w.contains("503 ×")),
            "{:?}",
            o.warnings()
        );
    }
}

#[test]
fn a_connection_that_opens_in_the_drain_has_its_answer_read() {
    let _timing = serial();
    // Keep-alive off at a rate far above what one turn can connect: most of
    // the 60 connections finish opening after the 0.6 ms window ended, and
    // write their request in the drain. Their answers (small, below the
    // reading-late low-water mark) must still wake the thread.
    let srv = TestServer::start("127.0.0.1:0", |_, _| Reply::ok());
    let mut cfg = config(&srv.url("/"));
    cfg.keepalive = false;
    cfg.connections = 60;
    cfg.model = LoadModel::ConstantRate { rps: 100_000.0 };
    cfg.requests = Some(60);
    cfg.timeout = Duration::from_secs(3);
    let t = std::time::Instant::now();
    let o = go(&cfg);
    assert_balanced(&o);
    assert_eq!((o.planned, o.requests), (60, 60), "{:?}", o.ledger());
    assert_eq!(o.errors.timeout, 0, "{:?}", o.ledger());
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
}

#[test]
fn errors_answered_at_once_are_shown_apart_from_the_expected_answers() {
    let _serial = serial();
    // Every other answer a 503 sent at once, the others a 200 after 50 ms:
    // counted together, the errors pull the figures down.
    let n = Arc::new(AtomicU64::new(0));
    let srv = TestServer::start("127.0.0.1:0", move |_, _| {
        if n.fetch_add(1, Ordering::Relaxed).is_multiple_of(2) {
            Reply {
                delay: Duration::ZERO,
                bytes: b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n".to_vec(),
                close: false,
            }
        } else {
            Reply {
                delay: Duration::from_millis(50),
                ..Reply::ok()
            }
        }
    });
    for model in [LoadModel::ClosedLoop, LoadModel::ConstantRate { rps: 40.0 }] {
        let mut cfg = config(&srv.url("/"));
        cfg.model = model;
        cfg.connections = 4;
        cfg.requests = Some(60);
        cfg.duration = Duration::from_secs(30);
        let o = go(&cfg);
        assert_balanced(&o);
        let ok = o.expected_latency().expect("the expected answers apart");
        // Exactly the answers with an expected status, none under the delay.
        assert_eq!(ok.len(), o.requests - o.errors.status, "{model:?}");
        assert!(o.errors.status >= 20, "{model:?}: {:?}", o.status_codes);
        assert!(ok.min() >= 50_000, "{model:?}: {}", ok.min());
        assert!(o.answered_latency.min() < 50_000, "{model:?}");
        let said = o.warnings().join("\n");
        assert!(
            said.contains("the expected answers alone: p50 ")
                && said.contains("pull the latency figures below"),
            "{model:?}: {said}"
        );
    }
    // A run without a status error has nothing apart.
    let srv = TestServer::start("127.0.0.1:0", |_, _| Reply::ok());
    let mut cfg = config(&srv.url("/"));
    cfg.requests = Some(20);
    let o = go(&cfg);
    assert!(o.expected_latency().is_none() && o.expected_summary().is_none());
}
