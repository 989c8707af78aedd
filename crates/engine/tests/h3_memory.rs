//! The generator's memory over HTTP/3: 10,000 streams in flight over 100
//! QUIC connections stay under 100 MB (issue 44). A test binary of its own,
//! so that no other test's allocations share the process while the peak
//! is measured.
//!
//! The server (quic-go, from the test kit) holds every answer for longer
//! than the window, so that every stream the generator opens stays open
//! until the window ends: exactly 10,000 requests are planned, all at
//! once. The process's peak resident set (VmHWM, reset before the run)
//! less its resident set before the run is what the run cost.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use fairbench_engine::{run, LoadConfig, Protocol, Quiet, Target};
use fairbench_testkit::h3::{start, H3Options};

/// The bound of the issue. The generator should need far less (a few KiB
/// per stream): a per-stream buffer sized for a datagram or a window,
/// rather than for what the stream holds, exceeds it at once.
const BOUND: u64 = 100 << 20;
/// How long the server holds each answer, and the window: every stream
/// is opened once its connection's handshake is done, and none is answered
/// before the window ends.
const HOLD: Duration = Duration::from_secs(5);
const WINDOW: Duration = Duration::from_secs(3);

fn status_kib(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    s.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"))
}

#[test]
fn ten_thousand_streams_over_a_hundred_connections_stay_under_100_mb() {
    let srv = start(&H3Options {
        delay: HOLD,
        streams: 100,
        ..Default::default()
    });
    let url = format!("https://127.0.0.1:{}/", srv.addr.port());
    let mut cfg = LoadConfig::new(Target::parse(&url).unwrap());
    cfg.protocol = Protocol::H3;
    cfg.tls.ca_pem = Some(srv.ca_pem.clone().into_bytes());
    cfg.connections = 100;
    cfg.streams = 100;
    cfg.threads = 2;
    cfg.duration = WINDOW;
    cfg.timeout = Duration::from_secs(20);
    // Resets the peak (VmHWM) to the current resident set (Linux ≥ 4.0):
    // the server's start and the test harness are not the run's.
    std::fs::write("/proc/self/clear_refs", "5").expect("reset VmHWM");
    let before = status_kib("VmRSS:") << 10;
    let o = run(&cfg, Arc::new(AtomicBool::new(false)), &mut Quiet).expect("run");
    let peak = status_kib("VmHWM:") << 10;
    let l = o.ledger();
    assert!(l.balances(), "{l:?}");
    assert_eq!(o.errors.total(), 0, "{l:?} {:?}", o.h3);
    let h3 = o.h3.as_ref().unwrap();
    assert_eq!(h3.handshakes, 100, "{h3:?}");
    // A closed loop plans a request when a stream is free: no stream
    // freed within the window, so exactly one per stream, all in flight
    // together at the window's end (none answered before the hold).
    assert_eq!(o.planned, 10_000, "{l:?}");
    assert_eq!(o.requests, 10_000, "{l:?}");
    let min = o.answered_latency.min();
    assert!(
        min >= HOLD.as_micros() as u64,
        "an answer after {min} µs: the server did not hold"
    );
    let in_flight = o.planned;
    let used = peak.saturating_sub(before);
    eprintln!(
        "h3 memory: {} KiB over the run for {in_flight} streams in flight ({} KiB before, {} KiB peak)",
        used >> 10,
        before >> 10,
        peak >> 10
    );
    assert!(
        used < BOUND,
        "the run took {} MiB for {in_flight} streams in flight (bound {} MiB)",
        used >> 20,
        BOUND >> 20
    );
}
