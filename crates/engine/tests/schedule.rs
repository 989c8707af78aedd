//! The constant-rate schedule: kept, and never run ahead of. (That a request
//! sent a little before its planned time is measured from its send is the
//! ledger's unit test `early_sends_count_from_the_send`.) Servers are written
//! for the tests; bounds are generous because these machines are small and
//! noisy, the properties are not.

mod common;

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{timing, Reply, TestServer};
use fairbench_engine::{clock, run, LoadConfig, LoadModel, Outcome, Quiet, Target};

fn rate_config(url: &str, rps: f64, connections: usize) -> LoadConfig {
    let mut c = LoadConfig::new(Target::parse(url).unwrap());
    c.connections = connections;
    c.threads = 1;
    c.duration = Duration::from_secs(3);
    c.model = LoadModel::ConstantRate { rps };
    c
}

fn go(cfg: &LoadConfig) -> Outcome {
    run(cfg, Arc::new(AtomicBool::new(false)), &mut Quiet).expect("run")
}

#[test]
fn the_rate_is_kept_and_every_send_is_in_the_lateness_record() {
    let _timing = timing();
    let srv = TestServer::start("127.0.0.1:0", |_, _| Reply::ok());
    let o = go(&rate_config(&srv.url("/"), 4_000.0, 20));
    let l = o.ledger();
    assert!(l.balances(), "{l:?}");
    let s = o.schedule.as_ref().unwrap();
    let asked = 4_000.0 * 3.0;
    // Planned is the schedule itself; what matters is that it went out.
    assert!(
        (s.sent as f64 - asked).abs() <= asked * 0.01,
        "sent {} of {asked}",
        s.sent
    );
    assert!(
        (o.requests as f64 - asked).abs() <= asked * 0.01,
        "answered {} of {asked}",
        o.requests
    );
    assert_eq!(s.never_sent, 0);
    // Every request sent in the window has its lateness recorded.
    assert_eq!(o.lateness.as_ref().map(|h| h.len()), Some(s.sent));
}

#[test]
fn requests_do_not_run_ahead_of_the_schedule() {
    let _timing = timing();
    let arrivals = Arc::new(Mutex::new(Vec::with_capacity(20_000)));
    let seen = arrivals.clone();
    let srv = TestServer::start("127.0.0.1:0", move |_, _| {
        seen.lock().unwrap().push(clock::now());
        Reply::ok()
    });
    let rps = 5_000.0;
    let o = go(&rate_config(&srv.url("/"), rps, 20));
    assert!(o.ledger().balances());
    let mut a = arrivals.lock().unwrap().clone();
    a.sort_unstable();
    assert!(a.len() > 10_000, "{} arrivals", a.len());
    // The k-th request is planned at start + k/R and goes out no earlier
    // than a few µs before that, so the k-th arrival minus k/R never falls
    // far below the first arrival. A generator that sent in bursts ahead of
    // time would break this by the size of its bursts.
    let gap = 1e9 / rps;
    let worst = a
        .iter()
        .enumerate()
        .map(|(k, &t)| t as f64 - k as f64 * gap - a[0] as f64)
        .fold(f64::INFINITY, f64::min);
    assert!(
        worst > -1_000_000.0,
        "an arrival came {:.0} µs ahead of its place in the schedule",
        -worst / 1e3
    );
}
