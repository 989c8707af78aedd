//! Load over TLS against test servers with certificates made for the test:
//! handshakes are timed apart from requests, sessions are resumed, failures
//! are their own class, and a certificate that is not trusted stops the run
//! before it starts with one clear line.

mod support;

use std::sync::Arc;
use std::time::Duration;

use fairbench_engine::{LoadConfig, LoadModel, Target, TlsOptions};
use fairbench_testkit::pki::pki;
use fairbench_testkit::scripted::tls::{self, TlsBehaviour};
use fairbench_testkit::scripted::Reply;
use fairbench_testkit::timing::Slack;
use fairbench_testkit::{pin_current_thread, serial};
use support::{go, refused};

fn config(url: &str, ca_pem: &str) -> LoadConfig {
    let mut c = LoadConfig::new(Target::parse(url).unwrap());
    c.connections = 2;
    c.threads = 1;
    c.duration = Duration::from_secs(1);
    c.tls = TlsOptions {
        insecure: false,
        ca_pem: Some(ca_pem.as_bytes().to_vec()),
        ..Default::default()
    };
    c
}

#[test]
fn the_handshake_is_timed_apart_and_never_in_request_latency() {
    let _t = serial();
    let pki = pki(&["127.0.0.1"], false);
    // Every handshake waits 300 ms; answers are immediate.
    let behaviour = TlsBehaviour {
        handshake_delay: Duration::from_millis(300),
        ..Default::default()
    };
    let (srv, seen) = tls::start("127.0.0.1:0", &pki, behaviour, |_, _| Reply::ok());
    let cfg = config(&srv.url("/"), &pki.ca_pem);
    let o = go(&cfg).expect("run");
    assert!(o.ledger().balances(), "{:?}", o.ledger());
    assert_eq!(o.errors.total(), 0, "{:?}", o.errors);
    assert!(o.requests > 50, "{} answered", o.requests);
    let hs = o
        .handshake_summary()
        .expect("an https run has handshake times");
    assert!(hs.min >= 280_000, "handshake {hs:?}");
    assert_eq!(
        o.handshake_time.as_ref().unwrap().len(),
        o.sockets.tls_handshakes
    );
    assert_eq!(o.connect_time.len(), o.sockets.opened);
    assert_eq!(o.sockets.tls_handshakes, 2, "{:?}", o.sockets);
    let l = o.latency_summary();
    assert!(l.max < 250_000, "request latency {l:?} holds a handshake");
    // ALPN and no SNI for an IP address (RFC 6066 §3).
    let seen = seen.lock().unwrap();
    assert!(
        seen.iter().all(|s| s.alpn.as_deref() == Some("http/1.1")),
        "{seen:?}"
    );
    assert!(seen.iter().all(|s| s.sni.is_none()), "{seen:?}");
}

#[test]
fn a_dns_name_is_sent_as_sni_and_verified() {
    let _serial = serial();
    let pki = pki(&["localhost"], false);
    // "localhost" resolves to the address the server binds.
    let (srv, seen) = tls::start("localhost:0", &pki, TlsBehaviour::default(), |_, _| {
        Reply::ok()
    });
    let cfg = config(&srv.url_named("localhost", "/"), &pki.ca_pem);
    let o = go(&cfg).expect("run");
    assert!(o.requests > 0 && o.errors.total() == 0, "{:?}", o.ledger());
    let seen = seen.lock().unwrap();
    assert!(!seen.is_empty());
    assert!(
        seen.iter().all(|s| s.sni.as_deref() == Some("localhost")),
        "{seen:?}"
    );
}

#[test]
fn one_connection_per_request_resumes_sessions_and_counts_the_handshake() {
    let _t = serial();
    let pki = pki(&["127.0.0.1"], false);
    let behaviour = TlsBehaviour {
        handshake_delay: Duration::from_millis(20),
        ..Default::default()
    };
    let (srv, seen) = tls::start("127.0.0.1:0", &pki, behaviour, |_, _| Reply::ok());
    let mut cfg = config(&srv.url("/"), &pki.ca_pem);
    cfg.keepalive = false;
    cfg.connections = 1;
    cfg.requests = Some(20);
    cfg.duration = Duration::from_secs(30);
    let o = go(&cfg).expect("run");
    assert!(o.ledger().balances(), "{:?}", o.ledger());
    assert_eq!((o.planned, o.requests), (20, 20), "{:?}", o.ledger());
    assert!(!o.keepalive);
    // A handshake per request, closed by the client after its answer.
    assert_eq!(o.sockets.tls_handshakes, 20, "{:?}", o.sockets);
    assert_eq!(o.sockets.closed_by_client, 20, "{:?}", o.sockets);
    // Only the first is a full handshake: the rest resume its session (or
    // a later one's).
    assert!(o.sockets.tls_resumed >= 18, "{:?}", o.sockets);
    let server_resumed = seen.lock().unwrap().iter().filter(|s| s.resumed).count();
    assert!(
        server_resumed >= 18,
        "the server saw {server_resumed} resumptions"
    );
    // As ab counts it: connect and handshake are in each request's latency.
    let l = o.latency_summary();
    assert!(l.min >= 19_000, "latency {l:?} without the 20 ms handshake");
}

#[test]
fn handshake_failures_are_their_own_class() {
    let _serial = serial();
    let pki = pki(&["127.0.0.1"], false);
    // Connection 0 (the check before the run) succeeds, then every second
    // connection is closed before its handshake.
    let behaviour = TlsBehaviour {
        drop_odd: true,
        ..Default::default()
    };
    let (srv, _) = tls::start("127.0.0.1:0", &pki, behaviour, |_, _| Reply::ok());
    let mut cfg = config(&srv.url("/"), &pki.ca_pem);
    cfg.keepalive = false;
    cfg.requests = Some(40);
    cfg.duration = Duration::from_secs(30);
    let o = go(&cfg).expect("run");
    let l = o.ledger();
    assert!(l.balances(), "{l:?}");
    assert_eq!(l.planned, 40);
    assert!(l.tls >= 10 && l.answered >= 10, "{l:?}");
    assert_eq!(l.tls + l.answered, 40, "{l:?}");
    assert_eq!((l.connect, l.read), (0, 0), "{l:?}");
    assert_eq!(o.sockets.tls_failed, l.tls, "{:?}", o.sockets);
    let w = o.warnings();
    assert!(
        w.iter().any(|w| w.contains("TLS handshakes failed")),
        "{w:?}"
    );
    assert!(w.iter().any(|w| w.contains("tls handshake")), "{w:?}");
}

#[test]
fn an_expired_certificate_stops_the_run_before_it_starts() {
    let _serial = serial();
    let pki = pki(&["127.0.0.1"], true);
    let (srv, _) = tls::start("127.0.0.1:0", &pki, TlsBehaviour::default(), |_, _| {
        Reply::ok()
    });
    let m = refused(&config(&srv.url("/"), &pki.ca_pem));
    assert!(m.to_lowercase().contains("expired"), "{m}");
    assert!(m.contains("--insecure"), "{m}");
    assert!(!m.contains('\n'), "one line: {m}");
}

#[test]
fn a_certificate_for_another_name_stops_the_run() {
    let _serial = serial();
    let pki = pki(&["example.test"], false);
    let (srv, _) = tls::start("127.0.0.1:0", &pki, TlsBehaviour::default(), |_, _| {
        Reply::ok()
    });
    let m = refused(&config(&srv.url("/"), &pki.ca_pem));
    assert!(m.contains("not valid for name"), "{m}");
    assert!(m.contains("127.0.0.1"), "{m}");
}

#[test]
fn an_unknown_ca_stops_the_run() {
    let _serial = serial();
    let pki = pki(&["127.0.0.1"], false);
    let (srv, _) = tls::start("127.0.0.1:0", &pki, TlsBehaviour::default(), |_, _| {
        Reply::ok()
    });
    let mut cfg = config(&srv.url("/"), &pki.ca_pem);
    // The system's roots do not know the test CA.
    cfg.tls.ca_pem = None;
    let m = refused(&cfg);
    assert!(
        m.contains("UnknownIssuer") || m.contains("unknown issuer"),
        "{m}"
    );
}

#[test]
fn insecure_takes_any_certificate() {
    let _serial = serial();
    // Expired, for another name, by an unknown CA.
    let pki = pki(&["example.test"], true);
    let (srv, _) = tls::start("127.0.0.1:0", &pki, TlsBehaviour::default(), |_, _| {
        Reply::ok()
    });
    let mut cfg = config(&srv.url("/"), &pki.ca_pem);
    cfg.tls = TlsOptions {
        insecure: true,
        ca_pem: None,
        ..Default::default()
    };
    let o = go(&cfg).expect("run");
    assert!(o.requests > 0 && o.errors.total() == 0, "{:?}", o.ledger());
    assert_eq!(o.sockets.tls_handshakes, 2, "{:?}", o.sockets);
}

#[test]
fn a_server_that_does_not_speak_tls_is_one_line() {
    let _serial = serial();
    let srv = fairbench_testkit::scripted::TestServer::start("127.0.0.1:0", |_, _| Reply::ok());
    let url = srv.url("/").replace("http://", "https://");
    let mut cfg = config(&url, "");
    cfg.tls = TlsOptions {
        insecure: true,
        ca_pem: None,
        ..Default::default()
    };
    cfg.timeout = Duration::from_millis(500);
    let m = refused(&cfg);
    assert!(m.starts_with("TLS handshake with 127.0.0.1"), "{m}");
}

#[test]
fn tls_at_constant_rate_keeps_the_ledger() {
    let _t = serial();
    let pki = pki(&["127.0.0.1"], false);
    let (srv, _) = tls::start("127.0.0.1:0", &pki, TlsBehaviour::default(), |_, _| {
        Reply::ok()
    });
    let mut cfg = config(&srv.url("/"), &pki.ca_pem);
    cfg.connections = 10;
    cfg.model = LoadModel::ConstantRate { rps: 500.0 };
    let o = go(&cfg).expect("run");
    assert!(o.ledger().balances(), "{:?}", o.ledger());
    assert!((480..=520).contains(&o.planned), "{:?}", o.ledger());
    assert_eq!(o.errors.total(), 0, "{:?}", o.errors);
    assert_eq!(o.status_codes.get(&200), Some(&o.requests));
}

#[test]
fn pipelining_and_server_closes_over_tls_lose_nothing() {
    let _serial = serial();
    let pki = pki(&["127.0.0.1"], false);
    // Every 10th answer on a connection says close: the client reconnects,
    // resumes its session, and sends what was queued behind the close again.
    let (srv, _) = tls::start("127.0.0.1:0", &pki, TlsBehaviour::default(), |_, n| {
        if n % 10 == 9 {
            Reply {
                delay: Duration::ZERO,
                bytes: b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 13\r\n\r\nHello World!\n".to_vec(),
                close: true,
            }
        } else {
            Reply::ok()
        }
    });
    let mut cfg = config(&srv.url("/"), &pki.ca_pem);
    cfg.pipeline = 4;
    cfg.requests = Some(2000);
    cfg.duration = Duration::from_secs(30);
    let o = go(&cfg).expect("run");
    assert!(o.ledger().balances(), "{:?}", o.ledger());
    assert_eq!((o.planned, o.requests), (2000, 2000), "{:?}", o.ledger());
    assert!(o.sockets.closed_by_server >= 150, "{:?}", o.sockets);
    assert_eq!(
        o.sockets.tls_handshakes, o.sockets.opened,
        "{:?}",
        o.sockets
    );
    assert!(
        o.sockets.tls_resumed * 10 >= o.sockets.tls_handshakes * 8,
        "most reconnections resume: {:?}",
        o.sockets
    );
}

#[test]
fn at_constant_rate_an_answer_over_tls_is_timed_when_it_came_not_when_it_was_read() {
    use std::sync::atomic::{AtomicU64, Ordering};
    let _t = serial();
    // The load thread runs on CPU 1. When a request comes, the server (on
    // CPU 0) takes CPU 1 from it for 40 ms with a real-time thread, and
    // answers after 10 ms: the answer is in the socket 30 ms before the
    // load thread can read it. Timed by the kernel's receive stamp it took
    // 10 ms; timed by its read, 40.
    let fifo = Arc::new(AtomicU64::new(0));
    let ran = fifo.clone();
    let pki = pki(&["127.0.0.1"], false);
    let (srv, _) = tls::start("127.0.0.1:0", &pki, TlsBehaviour::default(), move |_, _| {
        pin_current_thread(0);
        let ran = ran.clone();
        std::thread::spawn(move || {
            pin_current_thread(1);
            let p = libc::sched_param { sched_priority: 1 };
            // SAFETY: this thread's own policy, with a valid parameter.
            if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) } == 0 {
                ran.fetch_add(1, Ordering::Relaxed);
            }
            let t = std::time::Instant::now();
            while t.elapsed() < Duration::from_millis(40) {
                std::hint::spin_loop();
            }
        });
        Reply {
            delay: Duration::from_millis(10),
            ..Reply::ok()
        }
    });
    let mut cfg = config(&srv.url("/"), &pki.ca_pem);
    cfg.cpus = Some(vec![1]);
    cfg.model = LoadModel::ConstantRate { rps: 5.0 };
    cfg.duration = Duration::from_secs(2);
    let o = go(&cfg).expect("run");
    assert!(o.ledger().balances(), "{:?}", o.ledger());
    assert_eq!(o.errors.total(), 0, "{:?}", o.errors);
    assert!(o.requests >= 8, "{:?}", o.ledger());
    assert!(
        fifo.load(Ordering::Relaxed) >= 8,
        "the real-time thread could not be made (run as root)"
    );
    let l = o.latency_summary();
    // Timed by the read (the fault): 40 ms. The machine's slack on top of
    // the server's 10 ms, at least 25 ms and never near the fault's.
    let late = o.lateness.as_ref().map_or(0, |h| h.value_at_quantile(0.99));
    let upper = Slack::of_run(late).above(10_000).clamp(25_000, 35_000);
    assert!(l.p50 >= 10_000 && l.p50 < upper, "{l:?} (under {upper})");
}
