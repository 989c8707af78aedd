//! HTTP/3 at a constant rate reads its sockets late (see the engine's
//! `h3::load`): the thread sleeps until its next send is due and then
//! reads what arrived, each datagram timed by the kernel's arrival stamp.
//! Against the test kit's quic-go server answering after a fixed delay:
//! the latencies stay at that delay (reading late lengthens none), the
//! ledger balances, datagrams hardly ever wake the thread, and the wait
//! in the socket is reported apart. The closed loop still reads at once.
//! Counts, not times, say what woke the thread; the one bound on time is
//! the test kit's `timing` rule.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use fairbench_engine::{run, LoadConfig, LoadModel, Outcome, Protocol, Quiet, Target};
use fairbench_testkit::h3::{start, H3Options, H3Server};
use fairbench_testkit::serial;
use fairbench_testkit::timing::Slack;

const DELAY_US: u64 = 5_000;

fn server() -> H3Server {
    start(&H3Options {
        delay: Duration::from_micros(DELAY_US),
        ..Default::default()
    })
}

fn config(srv: &H3Server) -> LoadConfig {
    let url = format!("https://127.0.0.1:{}/", srv.addr.port());
    let mut c = LoadConfig::new(Target::parse(&url).unwrap());
    c.protocol = Protocol::H3;
    c.tls.ca_pem = Some(srv.ca_pem.clone().into_bytes());
    c.streams = 16;
    c.connections = 2;
    c.threads = 1;
    c.duration = Duration::from_secs(2);
    c.timeout = Duration::from_secs(10);
    c
}

fn go(cfg: &LoadConfig) -> Outcome {
    run(cfg, Arc::new(AtomicBool::new(false)), &mut Quiet).expect("run")
}

#[test]
fn a_constant_rate_reads_late_without_lengthening_a_latency() {
    let _t = serial();
    let srv = server();
    let mut cfg = config(&srv);
    // A send due every 0.5 ms: the thread wakes that often anyway, so its
    // sockets are read late.
    cfg.model = LoadModel::ConstantRate { rps: 2_000.0 };
    let o = go(&cfg);
    let l = o.ledger();
    assert!(l.balances(), "ledger does not balance: {l:?}");
    assert_eq!(o.errors.total(), 0, "{l:?} {:?}", o.h3);
    assert_eq!(o.requests, o.planned);
    assert!(o.requests >= 3_900, "{} answered", o.requests);
    let h3 = o.h3.as_ref().expect("an HTTP/3 report");
    let r = &h3.reading;
    eprintln!("{:?} {:?}", (r.wakeups, r.socket_wakeups, &r.late), h3.udp);
    // Datagrams hardly ever woke the thread: it woke for its sends (about
    // one a request), quinn's timers and its books, and read what had
    // arrived. Reading at once, each answer's datagram is a wake-up.
    let answers = o.requests;
    assert!(
        r.socket_wakeups * 10 < answers,
        "{} wake-ups by a socket for {answers} answers",
        r.socket_wakeups
    );
    assert!(
        r.wakeups < answers * 3 / 2,
        "{} wake-ups for {answers} answers",
        r.wakeups
    );
    assert!(r.wakeups < h3.udp.datagrams_received, "{r:?} {:?}", h3.udp);
    // Every datagram was stamped and its wait in the socket measured.
    assert_eq!(r.unstamped, 0);
    assert_eq!(r.late.count, h3.udp.datagrams_received, "{r:?}");
    assert!(r.late.max_us > 0, "{r:?}");
    // The reading delay is bounded (1 ms while requests are in flight),
    // allowing for a late wake-up of the thread itself.
    let slack = slack(&o);
    assert!(
        r.late.p50_us <= slack.above(1_000),
        "read late p50 {} µs; {slack}",
        r.late.p50_us
    );
    // Each answer is timed by its datagram's arrival: the latency is the
    // server's delay, not that plus the reading delay.
    let p50 = o.latency.value_at_quantile(0.5);
    assert!(p50 >= DELAY_US, "p50 {p50} µs below the server's delay");
    assert!(
        p50 <= slack.above(DELAY_US),
        "p50 {p50} µs for a {DELAY_US} µs server; {slack}"
    );
}

#[test]
fn the_closed_loop_reads_every_answer_at_once() {
    let _t = serial();
    let srv = server();
    let cfg = config(&srv);
    let o = go(&cfg);
    assert!(o.ledger().balances(), "{:?}", o.ledger());
    assert_eq!(o.errors.total(), 0, "{:?} {:?}", o.ledger(), o.h3);
    let h3 = o.h3.as_ref().expect("an HTTP/3 report");
    let r = &h3.reading;
    eprintln!("{:?} {:?}", (r.wakeups, r.socket_wakeups, &r.late), h3.udp);
    // Each answer frees the next request: the sockets wake the thread,
    // so that most waits end by a datagram, not a timer.
    assert!(
        r.socket_wakeups * 2 > r.wakeups,
        "{} of {} wake-ups by a socket",
        r.socket_wakeups,
        r.wakeups
    );
    // Stamped all the same: each answer timed at its arrival.
    assert_eq!(r.late.count, h3.udp.datagrams_received, "{r:?}");
    assert_eq!(r.unstamped, 0);
}

#[test]
fn a_low_rate_reads_at_once() {
    let _t = serial();
    let srv = server();
    let mut cfg = config(&srv);
    // A send every 5 ms: reading late would cost a wake-up a millisecond
    // while requests are in flight, more than the datagrams' own.
    cfg.model = LoadModel::ConstantRate { rps: 200.0 };
    cfg.duration = Duration::from_secs(1);
    let o = go(&cfg);
    assert!(o.ledger().balances(), "{:?}", o.ledger());
    assert_eq!(o.errors.total(), 0, "{:?} {:?}", o.ledger(), o.h3);
    assert_eq!(o.requests, o.planned);
    let h3 = o.h3.as_ref().expect("an HTTP/3 report");
    let r = &h3.reading;
    eprintln!("{:?} {:?}", (r.wakeups, r.socket_wakeups, &r.late), h3.udp);
    assert!(
        r.socket_wakeups >= o.requests / 2,
        "{} wake-ups by a socket for {} answers",
        r.socket_wakeups,
        o.requests
    );
    let p50 = o.latency.value_at_quantile(0.5);
    let slack = slack(&o);
    assert!(
        (DELAY_US..=slack.above(DELAY_US)).contains(&p50),
        "p50 {p50} µs; {slack}"
    );
}

/// The run's own send lateness, or the machine's, whichever allows more.
fn slack(o: &Outcome) -> Slack {
    let late = o.lateness.as_ref().map_or(0, |h| h.value_at_quantile(0.99));
    let machine = Slack::of_machine();
    if late > machine.late_us {
        Slack::of_run(late)
    } else {
        machine
    }
}
