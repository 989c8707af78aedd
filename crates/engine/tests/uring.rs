//! The same loads with plain HTTP/1.1's system calls batched through
//! io_uring (`IoMode::Auto`, where the kernel allows it) and made one by
//! one (`IoMode::Epoll`): the ledgers must agree, and so must what ends a
//! request other than its answer (a short send, a close mid-answer, a
//! reset). Several connections per thread, so that a turn has several
//! reads and sends to batch. Every server is written for its test and
//! deterministic; bounds are generous (small, noisy machines).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fairbench_engine::{run, IoMode, LoadConfig, LoadModel, Outcome, Quiet, Target};
use fairbench_testkit::accept::{accept_loop, bind, content_length};
use fairbench_testkit::scripted::{Reply, TestServer, HELLO};
use fairbench_testkit::serial;

const MODES: [IoMode; 2] = [IoMode::Auto, IoMode::Epoll];

fn config(url: &str, io: IoMode) -> LoadConfig {
    let mut c = LoadConfig::new(Target::parse(url).unwrap());
    c.connections = 8;
    c.threads = 1;
    c.duration = Duration::from_secs(20);
    c.timeout = Duration::from_secs(20);
    c.io = io;
    c
}

fn go(cfg: &LoadConfig) -> Outcome {
    run(cfg, Arc::new(AtomicBool::new(false)), &mut Quiet).expect("run")
}

fn assert_balanced(o: &Outcome, what: &str) {
    let l = o.ledger();
    assert!(l.balances(), "{what}: {l:?}");
}

/// Runs `cfg`, a budget of `n` requests: its ledger balances and every
/// request it planned was answered.
fn answered_whole(cfg: &LoadConfig, n: u64, what: &str) -> Outcome {
    let o = go(cfg);
    let l = o.ledger();
    assert_balanced(&o, what);
    assert_eq!(l.planned, n, "{what}: {l:?}");
    assert_eq!(l.answered, n, "{what}: {l:?}");
    o
}

#[test]
fn a_budget_is_answered_whole_either_way() {
    let _g = serial();
    let server = TestServer::start("127.0.0.1:0", |_, _| Reply::ok());
    for io in MODES {
        for pipeline in [1, 4] {
            let mut cfg = config(&server.url("/"), io);
            cfg.requests = Some(3_000);
            cfg.pipeline = pipeline;
            let what = format!("{io:?}, pipeline {pipeline}");
            let o = answered_whole(&cfg, 3_000, &what);
            assert_eq!(o.errors.status, 0, "{what}");
        }
    }
}

#[test]
fn a_constant_rate_is_answered_whole_either_way() {
    let _g = serial();
    let server = TestServer::start("127.0.0.1:0", |_, _| Reply::ok());
    for io in MODES {
        let mut cfg = config(&server.url("/"), io);
        cfg.model = LoadModel::ConstantRate { rps: 2_000.0 };
        cfg.requests = Some(1_000);
        let o = answered_whole(&cfg, 1_000, &format!("{io:?}"));
        // Every request was timed as sent, and sent once.
        assert_eq!(o.sockets.retried, 0, "{io:?}");
    }
}

#[test]
fn requests_due_together_are_answered_whole_either_way() {
    let _g = serial();
    let server = TestServer::start("127.0.0.1:0", |_, _| Reply::ok());
    for io in MODES {
        // A wide send-ahead window: each wake-up finds several requests due,
        // whose free connections are read, and which are sent, together.
        let mut cfg = config(&server.url("/"), io);
        cfg.connections = 16;
        cfg.model = LoadModel::ConstantRate { rps: 10_000.0 };
        cfg.send_ahead = Duration::from_millis(1);
        cfg.requests = Some(3_000);
        let o = answered_whole(&cfg, 3_000, &format!("{io:?}"));
        let s = &o.sockets;
        assert_eq!(s.unsolicited_responses + s.stray_bytes, 0, "{io:?}: {s:?}");
    }
}

/// Reads each request's body in small pieces with pauses, so that a large
/// request fills the socket buffers and every send of it comes back short.
fn slow_reader() -> (u16, Arc<AtomicBool>) {
    let (listener, addr) = bind("127.0.0.1:0");
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    accept_loop(listener, stop.clone(), Duration::from_secs(120), move |c| {
        let s = s.clone();
        std::thread::spawn(move || serve_slowly(c, &s));
    });
    (addr.port(), stop)
}

fn serve_slowly(mut c: TcpStream, stop: &AtomicBool) {
    let _ = c.set_nonblocking(false);
    c.set_read_timeout(Some(Duration::from_millis(200))).ok();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let t0 = Instant::now();
    while !stop.load(Ordering::Relaxed) && t0.elapsed() < Duration::from_secs(60) {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let len = content_length(&buf[..end]);
            if buf.len() >= end + 4 + len {
                buf.drain(..end + 4 + len);
                if c.write_all(HELLO).is_err() {
                    return;
                }
                continue;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        match c.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => return,
        }
    }
}

#[test]
fn a_large_request_goes_out_whole_through_short_sends() {
    let _g = serial();
    let (port, stop) = slow_reader();
    let url = format!("http://127.0.0.1:{port}/");
    for io in MODES {
        let mut cfg = config(&url, io);
        cfg.connections = 3;
        cfg.request.method = "POST".into();
        cfg.request.body = vec![b'x'; 2 << 20];
        cfg.requests = Some(9);
        let o = go(&cfg);
        let l = o.ledger();
        assert_balanced(&o, &format!("{io:?}"));
        assert_eq!(l.answered, 9, "{io:?}: {l:?}");
        assert_eq!(l.write + l.read + l.parse, 0, "{io:?}: {l:?}");
    }
    stop.store(true, Ordering::Relaxed);
}

#[test]
fn a_close_mid_answer_fails_only_that_request_either_way() {
    let _g = serial();
    // Every fourth answer on a connection stops halfway, and the server
    // closes: its request failed (an answer cut short is a parse fault),
    // the three before it were answered.
    let server = TestServer::start("127.0.0.1:0", |_, n| {
        if n % 4 == 3 {
            Reply {
                bytes: HELLO[..HELLO.len() / 2].to_vec(),
                close: true,
                ..Reply::ok()
            }
        } else {
            Reply::ok()
        }
    });
    for io in MODES {
        let mut cfg = config(&server.url("/"), io);
        cfg.connections = 4;
        cfg.requests = Some(400);
        let o = go(&cfg);
        let l = o.ledger();
        assert_balanced(&o, &format!("{io:?}"));
        assert_eq!(l.answered + l.parse, 400, "{io:?}: {l:?}");
        // Three answers per close, but for the cycles the budget cut short
        // (at most one per connection, and each at most three answers).
        let (a, r) = (l.answered as i64, l.parse as i64);
        assert!((a - 3 * r).abs() <= 12 + 3 * 4, "{io:?}: {l:?}");
        assert!(r >= 90, "{io:?}: {l:?}");
    }
}

/// Answers two requests per connection, then resets it (SO_LINGER 0) as
/// the third arrives.
fn resetting() -> (u16, Arc<AtomicBool>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let stop = Arc::new(AtomicBool::new(false));
    accept_loop(listener, stop.clone(), Duration::from_secs(120), |c| {
        std::thread::spawn(move || serve_then_reset(c));
    });
    (port, stop)
}

fn serve_then_reset(mut c: TcpStream) {
    let _ = c.set_nonblocking(false);
    c.set_read_timeout(Some(Duration::from_secs(5))).ok();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let mut answered = 0;
    // Bounded: three requests, each within the read timeout.
    while answered < 3 {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.drain(..end + 4);
            if answered == 2 {
                let linger = libc::linger {
                    l_onoff: 1,
                    l_linger: 0,
                };
                // SAFETY: a valid socket and an option of the right size.
                unsafe {
                    libc::setsockopt(
                        c.as_raw_fd(),
                        libc::SOL_SOCKET,
                        libc::SO_LINGER,
                        (&linger as *const libc::linger).cast(),
                        std::mem::size_of::<libc::linger>() as libc::socklen_t,
                    )
                };
                return;
            }
            if c.write_all(HELLO).is_err() {
                return;
            }
            answered += 1;
            continue;
        }
        match c.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

#[test]
fn a_reset_is_taken_the_same_either_way() {
    let _g = serial();
    let (port, stop) = resetting();
    let url = format!("http://127.0.0.1:{port}/");
    for io in MODES {
        let mut cfg = config(&url, io);
        cfg.connections = 4;
        cfg.requests = Some(300);
        let o = go(&cfg);
        let l = o.ledger();
        assert_balanced(&o, &format!("{io:?}"));
        // A reset before any byte of the answer sends the request again
        // (once; a second loss fails it reading or writing).
        assert_eq!(l.answered + l.read + l.write, 300, "{io:?}: {l:?}");
        assert!(l.answered >= 200, "{io:?}: {l:?}");
        assert!(o.sockets.retried >= 50, "{io:?}: {:?}", o.sockets);
        // Each reset is the server's close, and the run says how often the
        // server ended its connections (once for each request sent again,
        // at least).
        assert!(
            o.sockets.closed_by_server >= o.sockets.retried,
            "{io:?}: {:?}",
            o.sockets
        );
        assert!(
            o.warnings()
                .iter()
                .any(|w| w.contains("the server closed or reset")),
            "{io:?}: {:?}",
            o.warnings()
        );
    }
    stop.store(true, Ordering::Relaxed);
}
