//! HTTP/3 against a real QUIC server started by the tests (quic-go's
//! http3, see the test kit's `h3`): every planned request in the ledger
//! whatever the server does (resets streams, closes connections with an
//! error code, answers with a large body, stalls), streams multiplexed,
//! latency from the planned time at a constant rate, and a server without
//! QUIC one clear error. Bounds are generous: the machine is small and
//! shared; the properties are not.

mod support;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fairbench_engine::{run, LoadConfig, LoadModel, Outcome, Protocol, Quiet, RunError, Target};
use fairbench_testkit::h3::{closed_udp_port, start, H3Options, H3Server};
use fairbench_testkit::serial;
use fairbench_testkit::timing::Slack;

fn config(srv: &H3Server, streams: usize) -> LoadConfig {
    let url = format!("https://127.0.0.1:{}/", srv.addr.port());
    let mut c = LoadConfig::new(Target::parse(&url).unwrap());
    c.protocol = Protocol::H3;
    c.tls.ca_pem = Some(srv.ca_pem.clone().into_bytes());
    c.streams = streams;
    c.connections = 2;
    c.threads = 1;
    c.duration = Duration::from_secs(1);
    c.timeout = Duration::from_secs(10);
    c
}

fn go(cfg: &LoadConfig) -> Outcome {
    run(cfg, Arc::new(AtomicBool::new(false)), &mut Quiet).expect("run")
}

fn assert_balanced(o: &Outcome) {
    let l = o.ledger();
    assert!(l.balances(), "ledger does not balance: {l:?}");
}

#[test]
fn closed_loop_answers_every_request_over_streams() {
    let _t = serial();
    let srv = start(&H3Options {
        delay: Duration::from_millis(5),
        ..Default::default()
    });
    let cfg = config(&srv, 8);
    let o = go(&cfg);
    assert_balanced(&o);
    assert_eq!(o.protocol, Protocol::H3);
    assert_eq!(o.errors.total(), 0, "{:?} {:?}", o.ledger(), o.h3);
    assert_eq!(o.status_codes.get(&200).copied(), Some(o.requests));
    // 2 connections × 8 streams / 5 ms: well above what one stream per
    // connection could do (400/s).
    assert!(o.requests > 500, "{} answered in 1 s", o.requests);
    assert_eq!(o.planned, o.requests);
    // Two bytes of body per answer.
    assert!(o.bytes_read >= 2 * o.requests, "{} bytes", o.bytes_read);
    let h3 = o.h3.as_ref().expect("an HTTP/3 report");
    assert_eq!(h3.streams, 8);
    assert_eq!(h3.handshakes, 2);
    assert_eq!(o.sockets.opened, 2);
    let hs = o.handshake_time.as_ref().expect("handshakes timed apart");
    assert_eq!(hs.len(), 2);
    assert!(h3.packets_sent > 0);
}

#[test]
fn constant_rate_keeps_its_schedule() {
    let _t = serial();
    let srv = start(&H3Options::default());
    let mut cfg = config(&srv, 4);
    cfg.model = LoadModel::ConstantRate { rps: 400.0 };
    cfg.duration = Duration::from_secs(2);
    let o = go(&cfg);
    assert_balanced(&o);
    assert_eq!(o.errors.total(), 0, "{:?} {:?}", o.ledger(), o.h3);
    // 400/s for 2 s: 800 planned, every one answered.
    assert!((790..=810).contains(&o.planned), "{} planned", o.planned);
    assert_eq!(o.requests, o.planned);
    let s = o.schedule.as_ref().expect("a schedule");
    assert_eq!(s.never_sent, 0);
    let p50 = o.latency.value_at_quantile(0.5);
    assert!(p50 < 50_000, "p50 {p50} µs on loopback");
}

#[test]
fn a_stall_is_charged_to_the_latency_at_a_constant_rate() {
    let _t = serial();
    // At the 200th request the server stalls 200 ms: every request planned
    // during the stall waits for its end, from its planned time.
    let srv = start(&H3Options {
        stall_after: 200,
        stall: Duration::from_millis(200),
        ..Default::default()
    });
    let mut cfg = config(&srv, 16);
    cfg.model = LoadModel::ConstantRate { rps: 200.0 };
    cfg.duration = Duration::from_secs(3);
    let o = go(&cfg);
    assert_balanced(&o);
    assert_eq!(o.errors.total(), 0, "{:?}", o.ledger());
    assert_eq!(o.requests, o.planned);
    // The stall is charged: the max is about 200 ms (the first request in
    // it waited all of it), and about 40 requests (200 ms at 200/s) were
    // in it, so the p95 and up are stalled values, far above a loopback
    // answer's.
    // The generator's own lateness, as the run measured it, or the
    // machine's, whichever allows more (see the test kit's `timing`).
    let late = o.lateness.as_ref().map_or(0, |h| h.value_at_quantile(0.99));
    let machine = Slack::of_machine();
    let slack = if late > machine.late_us {
        Slack::of_run(late)
    } else {
        machine
    };
    let max = o.latency.max();
    assert!(max >= 190_000, "max {max} µs: the stall was not charged");
    assert!(
        max <= slack.above(200_000 + 100_000),
        "max {max} µs; {slack}"
    );
    let p99 = o.latency.value_at_quantile(0.99);
    assert!(
        p99 >= 50_000,
        "p99 {p99} µs: the stall's requests were not charged"
    );
}

#[test]
fn stream_resets_are_counted_by_code_and_balance() {
    let _t = serial();
    // Every 5th stream is reset with H3_REQUEST_REJECTED.
    let srv = start(&H3Options {
        reset_every: 5,
        reset_code: 0x10b,
        ..Default::default()
    });
    let mut cfg = config(&srv, 4);
    cfg.requests = Some(500);
    cfg.duration = Duration::from_secs(30);
    let o = go(&cfg);
    assert_balanced(&o);
    assert_eq!(o.planned, 500);
    assert_eq!(o.requests, 400, "{:?} {:?}", o.ledger(), o.h3);
    assert_eq!(o.errors.read, 100);
    let h3 = o.h3.as_ref().unwrap();
    assert_eq!(h3.resets.get("H3_REQUEST_REJECTED"), Some(&100), "{h3:?}");
}

#[test]
fn connection_closes_are_counted_by_code_and_balance() {
    let _t = serial();
    // Each connection is closed with H3_EXCESSIVE_LOAD at its 10th request;
    // one stream per connection, so each close takes exactly one request.
    let srv = start(&H3Options {
        close_after: 10,
        close_code: 0x107,
        ..Default::default()
    });
    let mut cfg = config(&srv, 1);
    cfg.requests = Some(200);
    cfg.duration = Duration::from_secs(30);
    let o = go(&cfg);
    assert_balanced(&o);
    assert_eq!(o.planned, 200);
    let h3 = o.h3.as_ref().unwrap();
    let closes = h3.closes.get("H3_EXCESSIVE_LOAD").copied().unwrap_or(0);
    assert!(closes >= 18, "{h3:?} {:?}", o.ledger());
    // Every request a close took failed, none went missing.
    assert_eq!(o.errors.read, closes, "{:?}", o.ledger());
    assert_eq!(o.requests + o.errors.read, 200, "{:?}", o.ledger());
    assert!(o.sockets.closed_by_server >= closes);
    assert!(h3.handshakes >= closes);
}

#[test]
fn a_large_body_is_read_whole_through_flow_control() {
    let _t = serial();
    // 8 MiB per answer: far beyond quinn's initial stream window.
    let size = 8 << 20;
    let srv = start(&H3Options {
        body_size: size,
        ..Default::default()
    });
    let mut cfg = config(&srv, 2);
    cfg.requests = Some(8);
    cfg.duration = Duration::from_secs(60);
    cfg.timeout = Duration::from_secs(30);
    let o = go(&cfg);
    assert_balanced(&o);
    assert_eq!(o.requests, 8, "{:?} {:?}", o.ledger(), o.h3);
    assert_eq!(o.bytes_read, 8 * size as u64);
    assert_eq!(o.body_sizes.counts.get(&(size as u64)), Some(&8));
}

#[test]
fn a_port_without_quic_is_one_clear_error() {
    let _t = serial();
    let addr = closed_udp_port();
    let mut cfg =
        LoadConfig::new(Target::parse(&format!("https://127.0.0.1:{}/", addr.port())).unwrap());
    cfg.protocol = Protocol::H3;
    cfg.tls.insecure = true;
    cfg.duration = Duration::from_secs(1);
    cfg.timeout = Duration::from_secs(2);
    let t = Instant::now();
    let e = run(&cfg, Arc::new(AtomicBool::new(false)), &mut Quiet).unwrap_err();
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "took {:?}",
        t.elapsed()
    );
    let RunError::Connect(m) = e else {
        panic!("not a connect error: {e}")
    };
    assert!(
        m.contains("QUIC") && m.contains(&addr.port().to_string()),
        "{m}"
    );
    assert!(!m.contains('\n'), "{m}");
}

#[test]
fn an_untrusted_certificate_is_one_clear_error() {
    let _t = serial();
    let srv = start(&H3Options::default());
    let mut cfg = config(&srv, 1);
    cfg.tls.ca_pem = None;
    let e = run(&cfg, Arc::new(AtomicBool::new(false)), &mut Quiet).unwrap_err();
    let RunError::Connect(m) = e else {
        panic!("not a connect error: {e}")
    };
    assert!(m.contains("handshake"), "{m}");
}

#[test]
fn requests_no_stream_could_take_time_out_in_the_ledger() {
    let _t = serial();
    // One connection, one stream, 300 ms per answer, 50 requests/s: most
    // requests find no stream before their 1 s timeout.
    let srv = start(&H3Options {
        delay: Duration::from_millis(300),
        ..Default::default()
    });
    let mut cfg = config(&srv, 1);
    cfg.connections = 1;
    cfg.model = LoadModel::ConstantRate { rps: 50.0 };
    cfg.duration = Duration::from_secs(2);
    cfg.timeout = Duration::from_secs(1);
    let o = go(&cfg);
    assert_balanced(&o);
    assert!((95..=105).contains(&o.planned), "{} planned", o.planned);
    // At most one answer per 300 ms over about 3 s (window and drain).
    assert!(o.requests <= 11, "{:?}", o.ledger());
    assert!(o.errors.timeout >= 80, "{:?}", o.ledger());
    let s = o.schedule.as_ref().unwrap();
    // A stream freed by a cancelled request takes the oldest due one,
    // which times out in its turn: many go out late, the rest never.
    assert_eq!(s.sent + s.never_sent, o.planned, "{s:?}");
    assert!(s.never_sent >= 30, "{s:?}");
    assert!(o.h3.as_ref().unwrap().cancelled >= 20, "{:?}", o.h3);
    assert!(s.behind);
}

#[test]
fn the_generators_own_part_is_reported_apart() {
    let _t = serial();
    let srv = start(&H3Options {
        delay: Duration::from_millis(2),
        ..Default::default()
    });
    let mut cfg = config(&srv, 8);
    cfg.requests = Some(2_000);
    cfg.duration = Duration::from_secs(30);
    let o = go(&cfg);
    assert_balanced(&o);
    assert_eq!(o.requests, 2_000, "{:?} {:?}", o.ledger(), o.h3);
    let h3 = o.h3.as_ref().unwrap();
    // The acknowledgement delay the client announces: QUIC's default.
    assert_eq!(h3.ack_delay_ms, 25);
    assert!(h3.acks_sent > 0, "{h3:?}");
    // QUIC's own view of the path, over both connections: loopback RTTs.
    let p = &h3.path;
    assert_eq!(p.connections, 2, "{p:?}");
    assert!(
        p.rtt_min_us > 0 && p.rtt_min_us <= p.rtt_smoothed_max_us,
        "{p:?}"
    );
    assert!(p.rtt_smoothed_us < 1_000_000, "{p:?}");
    assert!(p.cwnd_bytes >= 2_400, "{p:?}");
    // Every request's wait for its first packet was timed, once.
    let w = &h3.send_wait;
    assert!((1_900..=2_000).contains(&w.count), "{w:?}");
    assert!(w.p50_us <= w.p99_us && w.p99_us <= w.max_us, "{w:?}");
    // Every datagram went through a counted system call: quinn's packets
    // (a datagram may coalesce several) are no fewer than the datagrams.
    let u = &h3.udp;
    assert!(
        u.datagrams_sent > 0 && u.datagrams_sent <= h3.packets_sent,
        "{u:?}"
    );
    assert!(
        u.send_calls <= u.datagrams_sent + h3.datagrams_dropped,
        "{u:?}"
    );
    assert!(u.datagrams_received > 0 && u.recv_calls > 0, "{u:?}");
    // Eight streams per connection share packets and reads: far fewer
    // than a send and two reads per request.
    let per = h3.syscalls_per_request(o.requests).unwrap();
    assert!(per < 3.0, "{per:.2} UDP system calls per request: {u:?}");
    // The load thread's own CPU is measured as a TCP thread's, so that a
    // saturated generator is flagged the same way.
    assert!(o.generator.cpu_s > 0.0, "{:?}", o.generator);
    assert!(o.generator.busy_fraction > 0.0, "{:?}", o.generator);
    assert_eq!(
        o.generator.saturated,
        o.generator.busy_fraction > 0.9,
        "{:?}",
        o.generator
    );
}

#[test]
fn request_bodies_beyond_the_window_go_out_in_trains_and_wait_for_it() {
    let _t = serial();
    let srv = start(&H3Options::default());
    let mut cfg = config(&srv, 16);
    cfg.connections = 1;
    cfg.request.method = "POST".into();
    cfg.request.body = vec![b'x'; 30_000];
    cfg.requests = Some(64);
    cfg.duration = Duration::from_secs(30);
    let o = go(&cfg);
    assert_balanced(&o);
    assert_eq!(o.requests, 64, "{:?} {:?}", o.ledger(), o.h3);
    let h3 = o.h3.as_ref().unwrap();
    let u = &h3.udp;
    eprintln!("{u:?} {:?}", h3.send_wait);
    // 16 × 30 kB at once is far beyond QUIC's first congestion window:
    // quinn hands over several full datagrams at a time, which go out in
    // one call each where the kernel has GSO.
    if !u.gso_refused {
        assert!(u.datagrams_sent > u.send_calls, "no GSO train: {u:?}");
    } else {
        assert!(u.send_calls >= u.datagrams_sent, "{u:?}");
    }
    // Some requests waited in the generator for the window: measured.
    assert!(h3.send_wait.count >= 48, "{:?}", h3.send_wait);
    assert!(h3.send_wait.max_us > 0, "{:?}", h3.send_wait);
}

#[test]
fn load_threads_are_placed_and_pinned_as_asked() {
    let _t = serial();
    use std::sync::Mutex;
    // Each HTTP/3 load thread runs the caller's hook (fairbench's own puts
    // the generator in its control group) and is pinned to the CPUs asked,
    // as a TCP one is: a run that says where its generator ran must not
    // have let it run beside the server.
    let srv = start(&H3Options::default());
    let mut cfg = config(&srv, 1);
    let last = std::thread::available_parallelism().map_or(1, |n| n.get()) - 1;
    cfg.cpus = Some(vec![last]);
    let tids: Arc<Mutex<Vec<(String, i32)>>> = Arc::default();
    let seen = tids.clone();
    cfg.thread_start = Some(fairbench_engine::ThreadStart(Arc::new(move || {
        let name = std::thread::current().name().unwrap_or("").to_string();
        // SAFETY: gettid has no preconditions.
        seen.lock().unwrap().push((name, unsafe { libc::gettid() }));
        Ok(())
    })));
    // While the run goes on, the load thread's allowed CPUs are read.
    let watched = tids.clone();
    let watcher = std::thread::spawn(move || {
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(5) {
            // The load thread and the stall watch placed with it.
            let placed = watched.lock().unwrap().clone();
            let allowed: Vec<Option<String>> = placed
                .iter()
                .map(|(_, tid)| {
                    let status = std::fs::read_to_string(format!("/proc/self/task/{tid}/status"));
                    status.ok().and_then(|s| {
                        s.lines()
                            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                            .map(|v| v.trim().to_string())
                    })
                })
                .collect();
            if allowed.len() == 2
                && allowed
                    .iter()
                    .all(|a| a.as_deref() == Some(&*last.to_string()))
            {
                return Some(last.to_string());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    });
    let o = go(&cfg);
    assert_balanced(&o);
    assert!(o.requests > 0);
    let mut names: Vec<String> = tids
        .lock()
        .unwrap()
        .iter()
        .map(|(n, _)| n.clone())
        .collect();
    names.sort();
    assert_eq!(names, ["fairbench-h3-0", "fairbench-stall"]);
    assert_eq!(watcher.join().unwrap(), Some(last.to_string()));

    support::voided_by_a_failing_hook(cfg);
}
