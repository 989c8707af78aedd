//! `--warmup auto` against servers whose warm-up is known: one that speeds
//! up for its first seconds (a JIT compiling), one steady from its start,
//! and one that keeps slowing down. Bounds are generous: what is asserted
//! is the rule's verdict and the series' numbering, not a second.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use fairbench_engine::warmup::AutoWarmup;
use fairbench_engine::{
    run, LoadConfig, LoadModel, Observer, Outcome, Phase, SecondSample, Target,
};
use fairbench_testkit::scripted::{Reply, TestServer};
use fairbench_testkit::serial;
use fairbench_testkit::timing::Slack;
use hdrhistogram::Histogram;

/// Answers after `delay(seconds since the server started)`.
fn server(delay: fn(f64) -> f64) -> TestServer {
    TestServer::start("127.0.0.1:0", move |started, _| Reply {
        delay: Duration::from_secs_f64(delay(started.elapsed().as_secs_f64()) / 1000.0),
        ..Reply::ok()
    })
}

fn load(s: &TestServer, model: LoadModel, ceiling: u64) -> LoadConfig {
    let mut cfg = LoadConfig::new(Target::parse(&s.url("/")).unwrap());
    cfg.connections = 4;
    cfg.threads = 1;
    cfg.model = model;
    cfg.duration = Duration::from_secs(2);
    cfg.warmup_auto = Some(AutoWarmup {
        ceiling: Duration::from_secs(ceiling),
        window: Duration::from_secs(5),
    });
    cfg
}

/// Keeps the seconds as observers saw them, live.
#[derive(Default)]
struct Live(Vec<i64>);

impl Observer for Live {
    fn on_interval(&mut self, s: &SecondSample, _: &Histogram<u64>) {
        self.0.push(s.second);
    }
}

fn go(cfg: &LoadConfig) -> (Outcome, Vec<i64>) {
    let mut live = Live::default();
    let o = run(cfg, Arc::new(AtomicBool::new(false)), &mut live).expect("the run");
    (o, live.0)
}

/// The series is numbered as a fixed warm-up's is: warm-up seconds −k … −1
/// with no gap, then the measurement from 0; the run's clock runs on; and
/// the live numbers observers saw map onto the final ones.
fn assert_numbered(o: &Outcome, live: &[i64]) {
    let v = o.auto_warmup.as_ref().expect("an auto warm-up's verdict");
    eprintln!(
        "{} ({} warm-up seconds)",
        v.describe(),
        o.series.iter().filter(|s| s.phase == Phase::Warmup).count()
    );
    let warm: Vec<i64> = o
        .series
        .iter()
        .filter(|s| s.phase == Phase::Warmup)
        .map(|s| s.second)
        .collect();
    let k = warm.len() as i64;
    assert_eq!(warm, (-k..0).collect::<Vec<_>>(), "warm-up seconds");
    assert!(o
        .series
        .iter()
        .any(|s| s.phase == Phase::Measure && s.second == 0));
    assert!(o
        .series
        .windows(2)
        .all(|w| w[0].start_s <= w[1].start_s + 1e-6));
    let finals: Vec<i64> = live.iter().map(|&s| v.final_second(s)).collect();
    let stored: Vec<i64> = o.series.iter().map(|s| s.second).collect();
    assert_eq!(finals, stored, "live seconds renumbered");
    assert!((o.warmup_s - v.took_s).abs() < 1e-9);
    assert!(o.requests > 0 && o.measured_s > 1.5, "the measurement ran");
}

#[test]
fn a_server_speeding_up_is_measured_only_once_it_has_levelled() {
    let _timing = serial();
    // 20 ms per answer falling to 2 ms over 8 s, then flat.
    let s = server(|t| (20.0 - 2.25 * t).max(2.0));
    let (o, live) = go(&load(&s, LoadModel::ClosedLoop, 30));
    let v = o.auto_warmup.clone().unwrap();
    assert!(v.steady, "{}", v.describe());
    assert!(
        v.took_s >= 8.0,
        "measured while still speeding up: {}",
        v.describe()
    );
    assert!(v.took_s < 30.0);
    assert_eq!(v.watched, "req/s");
    assert_numbered(&o, &live);
    // Its measured rate is the levelled one (2 ms, 4 connections: ~2,000/s),
    // nowhere near the cold start's 200/s. The per-answer bound allows for
    // the machine, capped at 10 ms so that 200/s always fails.
    let per_answer_us = Slack::of_machine().above(2_000).min(10_000);
    let floor = 0.8 * 4e6 / per_answer_us as f64;
    assert!(o.rps() > floor, "rps {} (floor {floor:.0})", o.rps());
}

#[test]
fn a_steady_server_ends_its_warm_up_well_before_the_ceiling() {
    let _timing = serial();
    let s = server(|_| 2.0);
    let (o, live) = go(&load(&s, LoadModel::ConstantRate { rps: 200.0 }, 25));
    let v = o.auto_warmup.clone().unwrap();
    assert!(v.steady && v.took_s < 20.0, "{}", v.describe());
    assert_eq!(v.watched, "p50");
    assert_numbered(&o, &live);
}

#[test]
fn a_server_that_never_settles_is_measured_at_the_ceiling_and_flagged() {
    let _timing = serial();
    // Slower by 2 ms every second it runs. At a constant rate the rule
    // watches p50, a line rising 2 ms/s that a stall in one second barely
    // moves (the closed loop's req/s is a curve a stall can flatten).
    // 100/s on 4 connections keeps up even at the measurement's ~25 ms.
    let s = server(|t| 1.0 + 2.0 * t);
    let (o, live) = go(&load(&s, LoadModel::ConstantRate { rps: 100.0 }, 8));
    let v = o.auto_warmup.clone().unwrap();
    assert_eq!(v.watched, "p50");
    assert!(!v.steady, "{}", v.describe());
    assert!(
        v.took_s >= 8.0,
        "ended before the ceiling: {}",
        v.describe()
    );
    assert!(v.describe().contains("not steady"));
    assert_numbered(&o, &live);
}

#[test]
fn auto_refuses_a_fixed_warm_up_beside_it_and_a_window_too_short() {
    let s = server(|_| 1.0);
    let mut cfg = load(&s, LoadModel::ClosedLoop, 10);
    cfg.warmup = Duration::from_secs(1);
    let e = run(
        &cfg,
        Arc::new(AtomicBool::new(false)),
        &mut fairbench_engine::Quiet,
    )
    .unwrap_err();
    assert!(e.to_string().contains("not both"), "{e}");
    let mut cfg = load(&s, LoadModel::ClosedLoop, 10);
    cfg.warmup_auto.as_mut().unwrap().window = Duration::from_secs(2);
    let e = run(
        &cfg,
        Arc::new(AtomicBool::new(false)),
        &mut fairbench_engine::Quiet,
    )
    .unwrap_err();
    assert!(e.to_string().contains("at least 3s"), "{e}");
}
