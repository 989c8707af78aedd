//! A closed loop's percentiles hide a server that stops answering (only
//! the requests in flight wait on it); its silences do not, and are said
//! out loud. A server slow on every answer is not called silent: its
//! latency shows what it did.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fairbench_engine::{run, LoadConfig, Outcome, Quiet, Target};
use fairbench_testkit::scripted::{Reply, TestServer};
use fairbench_testkit::serial;

fn closed(url: &str, connections: usize, secs: f64) -> Outcome {
    let mut c = LoadConfig::new(Target::parse(url).unwrap());
    c.connections = connections;
    c.threads = 2;
    c.duration = Duration::from_secs_f64(secs);
    run(&c, Arc::new(AtomicBool::new(false)), &mut Quiet).expect("run")
}

fn silence_warning(o: &Outcome) -> Option<String> {
    o.warnings()
        .into_iter()
        .find(|w| w.starts_with("the server answered nothing for"))
}

#[test]
fn a_server_that_stops_answering_for_a_second_is_said_to_have() {
    let _t = serial();
    // Answers at once, except that from 0.8 s to 1.8 s after it started
    // every answer waits until 1.8 s.
    let (from, to) = (Duration::from_millis(800), Duration::from_millis(1800));
    let server = TestServer::start("127.0.0.1:0", move |started: Instant, _| {
        let t = started.elapsed();
        Reply {
            delay: if t >= from && t < to {
                to - t
            } else {
                Duration::ZERO
            },
            ..Reply::ok()
        }
    });
    let o = closed(&server.url("/"), 8, 3.0);
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
    let w = silence_warning(&o).unwrap_or_else(|| panic!("no silence warning: {:?}", o.warnings()));
    assert!(w.contains("coordinated omission"), "{w}");
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
