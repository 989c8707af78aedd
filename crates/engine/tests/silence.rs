//! A closed loop's percentiles hide a server that stops answering (only
//! the requests in flight wait on it); its silences do not, and are said
//! out loud. A server slow on every answer is not called silent: its
//! latency shows what it did.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fairbench_engine::{run, LoadConfig, Outcome, Protocol, Quiet, Target};
use fairbench_testkit::h2::scripted::{Action, H2Server};
use fairbench_testkit::scripted::{Reply, TestServer};
use fairbench_testkit::serial;

fn config(url: &str, connections: usize, secs: f64) -> LoadConfig {
    let mut c = LoadConfig::new(Target::parse(url).unwrap());
    c.connections = connections;
    c.threads = 2;
    c.duration = Duration::from_secs_f64(secs);
    c
}

fn go(c: &LoadConfig) -> Outcome {
    run(c, Arc::new(AtomicBool::new(false)), &mut Quiet).expect("run")
}

fn closed(url: &str, connections: usize, secs: f64) -> Outcome {
    go(&config(url, connections, secs))
}

/// The stall both servers make: from 0.8 s to 1.8 s after they start,
/// every answer waits until 1.8 s.
const STALL: (Duration, Duration) = (Duration::from_millis(800), Duration::from_millis(1800));

fn held(since_start: Duration) -> Duration {
    let (from, to) = STALL;
    if since_start >= from && since_start < to {
        to - since_start
    } else {
        Duration::ZERO
    }
}

/// A silence of the one-second stall: found, where it was, and said.
fn assert_the_stall_is_named(o: &Outcome) {
    let (at, longest) = o.silences.longest().expect("a silence");
    // The run starts a little after the server: the stall is at most that
    // much earlier in the window. A busy machine can stretch it, never
    // shorten it below the second the server held every answer.
    assert!(
        (0.95..1.6).contains(&longest),
        "longest silence {longest} s at {at} s: {:?}",
        o.silences
    );
    assert!((0.3..1.0).contains(&at), "silence at {at} s");
    // The figures do carry it, in the few requests that were in flight.
    assert!(
        o.answered_latency.max() >= 900_000,
        "max {} µs",
        o.answered_latency.max()
    );
    let w = silence_warning(o).unwrap_or_else(|| panic!("no silence warning: {:?}", o.warnings()));
    assert!(w.contains("coordinated omission"), "{w}");
}

fn silence_warning(o: &Outcome) -> Option<String> {
    o.warnings()
        .into_iter()
        .find(|w| w.starts_with("the server answered nothing for"))
}

#[test]
fn a_server_that_stops_answering_for_a_second_is_said_to_have() {
    let _t = serial();
    let server = TestServer::start("127.0.0.1:0", |started: Instant, _| Reply {
        delay: held(started.elapsed()),
        ..Reply::ok()
    });
    assert_the_stall_is_named(&closed(&server.url("/"), 8, 3.0));
}

#[test]
fn over_h2_the_same_stall_is_named_the_same_way() {
    let _t = serial();
    let server = H2Server::start(vec![], |seen| Action::after(held(seen.at)));
    let mut c = config(&server.url(), 2, 3.0);
    c.protocol = Protocol::H2c;
    c.streams = 4;
    c.timeout = Duration::from_secs(20);
    assert_the_stall_is_named(&go(&c));
}

#[test]
fn a_server_slow_on_every_answer_is_not_called_silent() {
    let _t = serial();
    // Every answer 150 ms late: 4 connections leave the run without an
    // answer for ~150 ms at a time, which is its latency, not a stall.
    let server = TestServer::start("127.0.0.1:0", |_, _| Reply {
        delay: Duration::from_millis(150),
        ..Reply::ok()
    });
    let o = closed(&server.url("/"), 4, 1.5);
    assert!(o.requests >= 8, "{} answered", o.requests);
    assert_eq!(silence_warning(&o), None, "{:?}", o.silences);
}

#[test]
fn an_interrupted_run_is_not_silent_after_its_end() {
    let _t = serial();
    let server = TestServer::start("127.0.0.1:0", |_, _| Reply::ok());
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let interrupter = std::thread::spawn(move || {
        // Mid-way through one of wrk's 100 ms Req/Sec intervals.
        std::thread::sleep(Duration::from_millis(750));
        s.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    let o = run(&config(&server.url("/"), 4, 10.0), stop, &mut Quiet).expect("run");
    interrupter.join().unwrap();
    assert!(o.interrupted);
    // The 9 s the run never reached are no silence of the server's.
    let longest = o.silences.longest().map_or(0.0, |(_, d)| d);
    assert!(longest < 0.5, "{:?}", o.silences);
    assert_eq!(silence_warning(&o), None);
    // Nor is the interval the interrupt cut short a slow one: each thread
    // samples only the intervals that ended within the measured window.
    let whole = (o.measured_s / 0.1 + 1e-9).floor() as u64;
    assert!(
        o.thread_req_sec.samples <= 2 * whole,
        "{} Req/Sec samples in {:.3} s on 2 threads",
        o.thread_req_sec.samples,
        o.measured_s
    );
}
