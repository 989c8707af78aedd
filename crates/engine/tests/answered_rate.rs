//! The rate a run is credited at a constant rate: what the server answered
//! within the window (or a stage's span) when it fell behind, every answer
//! of the window when it kept up, and which of the two held the rate back
//! when requests waited for a connection (crates/engine/src/answered_rate.rs).

mod support;

use std::time::Duration;

use fairbench_engine::{LoadConfig, LoadModel, Outcome, RateStage};
use fairbench_testkit::scripted::{Reply, TestServer};
use fairbench_testkit::serial;
use support::config;

fn go(cfg: &LoadConfig) -> Outcome {
    support::go(cfg).expect("run")
}

#[test]
fn a_server_behind_the_rate_is_credited_only_what_it_answered_in_the_window() {
    let _timing = serial();
    // 4 connections, each answer 10 ms: at most 400 a second.
    let srv = TestServer::start("127.0.0.1:0", |_, _| Reply {
        delay: Duration::from_millis(10),
        ..Reply::ok()
    });
    let mut cfg = config(&srv.url("/"));
    cfg.duration = Duration::from_secs(2);
    cfg.model = LoadModel::ConstantRate { rps: 800.0 };
    let o = go(&cfg);
    // Every request was answered, half of them after the window.
    assert_eq!(o.requests, o.planned, "{:?}", o.ledger());
    assert!(o.planned >= 1500, "{:?}", o.ledger());
    assert!(
        o.arrived < o.requests * 7 / 10,
        "{} of {}",
        o.arrived,
        o.requests
    );
    let rps = o.rps();
    assert!((rps - o.arrived as f64 / o.measured_s).abs() < 1e-9);
    assert!(
        rps < 480.0,
        "{rps} req/s from a server that answers at most 400"
    );
    assert!(
        o.requests as f64 / o.measured_s > 700.0,
        "the drain answered the rest"
    );
    let w = o.warnings().join("\n");
    assert!(w.contains("fell behind the asked 800 requests/s"), "{w}");
    assert!(!w.contains("capped by --connections"), "{w}");
    // Who held the rate back is said from what the run measured of its
    // generator; on the same figures, a generator with its CPU to itself
    // and on time names the server ...
    let mut steady = o.clone();
    steady.generator.saturated = false;
    steady.generator.contended = false;
    steady.generator.quota_pause = None;
    steady.lateness = Some(fairbench_engine::histogram::new_histogram());
    let w = steady.warnings().join("\n");
    assert!(w.contains("the server fell behind the asked 800"), "{w}");
    // (every connection was busy because every answer was late: the
    // server, not --connections, held the rate back)
    assert!(
        w.contains("no free connection when due") && w.contains("would only queue more requests"),
        "{w}"
    );
    // ... and one that could not send on time does not blame the server
    // alone.
    let mut squeezed = steady.clone();
    let mut late = fairbench_engine::histogram::new_histogram();
    late.record(5_000).unwrap();
    squeezed.lateness = Some(late);
    let w = squeezed.warnings().join("\n");
    assert!(
        w.contains("the run (the load generator was short of CPU, sent late itself")
            && w.contains("fell behind the asked 800")
            && w.contains("the load generator fell behind its own schedule"),
        "{w}"
    );
    assert!(!w.contains("the server fell behind"), "{w}");
}

/// A server that keeps the rate is credited all of its window's answers,
/// those that came just after it included: they are the last requests' own
/// latency, not a backlog, even when a short window makes them many.
#[test]
fn a_server_keeping_the_rate_is_credited_every_answer_of_its_window() {
    let _timing = serial();
    let srv = TestServer::start("127.0.0.1:0", |_, _| Reply {
        delay: Duration::from_millis(5),
        ..Reply::ok()
    });
    let mut cfg = config(&srv.url("/"));
    cfg.connections = 20;
    cfg.duration = Duration::from_millis(200);
    cfg.model = LoadModel::ConstantRate { rps: 400.0 };
    let o = go(&cfg);
    assert_eq!(o.requests, o.planned, "{:?}", o.ledger());
    // The requests of the last 5 ms, 2 or more of the 80 (over 1 %), were
    // answered after the window, each within its connection's slot.
    let after = o.requests - o.arrived;
    assert!(
        after * 100 > o.requests && after <= 20,
        "{} of {}",
        o.arrived,
        o.requests
    );
    assert_eq!(o.rps(), o.requests as f64 / o.measured_s);
    let w = o.warnings().join("\n");
    assert!(
        !w.contains("fell behind") && !w.contains("no free connection"),
        "{w}"
    );
}

/// Too few connections for the rate, at a server that keeps up with what
/// it is sent: the requests that waited for a connection are charged the
/// wait, and the warning blames --connections, not the server.
#[test]
fn too_few_connections_for_the_rate_are_named_as_the_limit() {
    let _timing = serial();
    // One connection at 150/s, a request every 6.7 ms; every 4th answer
    // takes 12 ms, the others 1 ms (3.75 ms on average: 56 % busy, room
    // for a busy machine's overhead, so the server keeps the rate), and the
    // request after a slow one finds the connection busy when due.
    let srv = TestServer::start("127.0.0.1:0", |_, n| Reply {
        delay: Duration::from_millis(if n % 4 == 3 { 12 } else { 1 }),
        ..Reply::ok()
    });
    let mut cfg = config(&srv.url("/"));
    cfg.connections = 1;
    cfg.threads = 1;
    cfg.duration = Duration::from_secs(3);
    cfg.model = LoadModel::ConstantRate { rps: 150.0 };
    let o = go(&cfg);
    assert_eq!(
        o.answered_after_window(),
        None,
        "{} of {}",
        o.arrived,
        o.requests
    );
    let s = o.schedule.as_ref().unwrap();
    assert!(s.waited_for_connection * 10 > s.sent, "{s:?}");
    let w = o.warnings().join("\n");
    assert!(w.contains("no free connection when due"), "{w}");
    // The cause named, from the figures: the server kept the rate, so the
    // one connection was the limit, unless the generator itself sent late
    // (a busy machine), which is then named instead.
    let named = if o.generator_limited() {
        "the load generator fell behind its own schedule"
    } else {
        "capped by --connections"
    };
    assert!(w.contains(named), "{w}");
    let mut on_time = o.clone();
    on_time.generator.saturated = false;
    on_time.generator.quota_pause = None;
    on_time.lateness = Some(fairbench_engine::histogram::new_histogram());
    let w = on_time.warnings().join("\n");
    assert!(w.contains("capped by --connections"), "{w}");
}

/// A stage of a rate profile is credited the rate the server kept during
/// it: a stage it fell behind in is credited the answers that came within
/// its span, not its own backlog answered in the next stage or the drain,
/// and a stage before it that was kept is credited all its answers.
#[test]
fn a_stage_the_server_fell_behind_in_is_credited_what_came_within_it() {
    let _timing = serial();
    // 4 connections, each answer 10 ms: at most 400 a second.
    let srv = TestServer::start("127.0.0.1:0", |_, _| Reply {
        delay: Duration::from_millis(10),
        ..Reply::ok()
    });
    let stage = |ms, rps| RateStage {
        duration: Duration::from_millis(ms),
        from: rps,
        to: rps,
    };
    let mut cfg = config(&srv.url("/"));
    cfg.duration = Duration::from_millis(3000);
    cfg.stages = Some(vec![stage(1500, 150.0), stage(1500, 800.0)]);
    cfg.model = LoadModel::ConstantRate { rps: 800.0 };
    let o = go(&cfg);
    assert_eq!(o.requests, o.planned, "{:?}", o.ledger());
    let (kept, behind) = (&o.stages[0], &o.stages[1]);
    // The first stage was kept: all its answers, and no warning for it.
    assert_eq!(
        o.stage_behind(0),
        None,
        "{} of {}",
        kept.answered_within,
        kept.requests
    );
    assert!((o.stage_rps(0) - kept.requests as f64 / 1.5).abs() < 1e-9);
    // The second planned 1,200 and was answered in full, about half of it
    // after its span: credited what came within it.
    assert!(behind.requests >= 1150, "{}", behind.requests);
    assert!(
        o.stage_behind(1).is_some(),
        "{} of {}",
        behind.answered_within,
        behind.requests
    );
    let rps = o.stage_rps(1);
    assert!((rps - behind.arrived as f64 / 1.5).abs() < 1e-9);
    assert!(
        rps < 480.0,
        "{rps} req/s from a server that answers at most 400"
    );
    assert!(
        behind.requests as f64 / 1.5 > 700.0,
        "the drain answered the rest"
    );
    // Every answer within the window came within one stage's span.
    assert_eq!(kept.arrived + behind.arrived, o.arrived);
    let w = o.warnings().join("\n");
    assert!(
        w.contains("fell behind the rate in stage 1500ms:800"),
        "{w}"
    );
    assert!(!w.contains("1500ms:150 ("), "{w}");
}
