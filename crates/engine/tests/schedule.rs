//! The constant-rate schedule: kept, and never run ahead of. (That a request
//! sent a little before its planned time is measured from its send is the
//! ledger's unit test `early_sends_count_from_the_send`.) Servers are written
//! for the tests; bounds are generous because these machines are small and
//! noisy, the properties are not.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fairbench_engine::{
    clock, run, AnswerClock, GeneratorShare, LoadConfig, LoadModel, Outcome, Quiet, Target,
};
use fairbench_testkit::scripted::{Reply, TestServer};
use fairbench_testkit::serial;
use fairbench_testkit::timing::Slack;

fn rate_config(url: &str, rps: f64, connections: usize) -> LoadConfig {
    let mut c = LoadConfig::new(Target::parse(url).unwrap());
    c.connections = connections;
    c.threads = 1;
    c.duration = Duration::from_secs(3);
    c.model = LoadModel::ConstantRate { rps };
    c
}

/// A server that notes when each request arrived, on the engine's clock.
fn recording_server() -> (TestServer, Arc<Mutex<Vec<u64>>>) {
    let arrivals = Arc::new(Mutex::new(Vec::with_capacity(20_000)));
    let seen = arrivals.clone();
    let srv = TestServer::start("127.0.0.1:0", move |_, _| {
        seen.lock().unwrap().push(clock::now());
        Reply::ok()
    });
    (srv, arrivals)
}

/// How far (ns) the earliest arrival ran ahead of the usual, each taken
/// against its place in a schedule of `rps`: the k-th arrival's offset is its
/// time minus k/rps, and the usual offset (the median) is the generator's
/// and the server's typical lag. The median, not the first arrival, is the
/// reference: on a loaded machine the first request alone can be late by
/// milliseconds, which would make every later one look early.
fn most_ahead(mut arrivals: Vec<u64>, rps: f64) -> f64 {
    arrivals.sort_unstable();
    let gap = 1e9 / rps;
    let mut offsets: Vec<f64> = arrivals
        .iter()
        .enumerate()
        .map(|(k, &t)| t as f64 - k as f64 * gap)
        .collect();
    offsets.sort_by(f64::total_cmp);
    offsets[offsets.len() / 2] - offsets[0]
}

fn go(cfg: &LoadConfig) -> Outcome {
    run(cfg, Arc::new(AtomicBool::new(false)), &mut Quiet).expect("run")
}

#[test]
fn the_rate_is_kept_and_every_send_is_in_the_lateness_record() {
    let _timing = serial();
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
    let _timing = serial();
    let (srv, arrivals) = recording_server();
    // A rate the thread-per-connection test server keeps up with on a
    // loaded 2-core machine: one that fell behind would make its first
    // arrivals look early against the median.
    let rps = 2_000.0;
    let o = go(&rate_config(&srv.url("/"), rps, 20));
    assert!(o.ledger().balances());
    let a = arrivals.lock().unwrap().clone();
    assert!(a.len() > 5_000, "{} arrivals", a.len());
    // The default window is 100 µs; a generator that sent bursts several
    // milliseconds ahead of time would break this by their size. The
    // arrivals are the server's reads, late by its own wake-ups: the test
    // kit's slack for this run's lateness.
    let ahead = most_ahead(a, rps);
    let bound = Slack::of_run(p99_late(&o)).above(100) as f64 * 1e3;
    assert!(
        ahead < bound,
        "an arrival came {:.0} µs ahead of the usual (at most {:.0})",
        ahead / 1e3,
        bound / 1e3
    );
}

#[test]
fn without_a_send_ahead_window_nothing_goes_out_before_its_time() {
    let _timing = serial();
    let srv = TestServer::start("127.0.0.1:0", |_, _| Reply::ok());
    let mut cfg = rate_config(&srv.url("/"), 4_000.0, 20);
    cfg.duration = Duration::from_secs(2);
    cfg.send_ahead = Duration::ZERO;
    let o = go(&cfg);
    assert!(o.ledger().balances());
    let s = o.schedule.as_ref().unwrap();
    assert!(s.sent > 4_000, "{s:?}");
    assert_eq!(s.sent_early, 0, "{s:?}");
    assert_eq!(s.early_max_us, 0.0, "{s:?}");
    assert_eq!(s.send_ahead_us, 0.0);
}

#[test]
fn a_send_ahead_window_sends_early_within_it_and_says_so() {
    let _timing = serial();
    let (srv, arrivals) = recording_server();
    // One request per 500 µs, a 1 ms window: most go out early, in bursts
    // of two or three, never more than the window ahead.
    let rps = 2_000.0;
    let mut cfg = rate_config(&srv.url("/"), rps, 20);
    cfg.send_ahead = Duration::from_millis(1);
    let o = go(&cfg);
    assert!(o.ledger().balances());
    let s = o.schedule.as_ref().unwrap();
    // Most, on a quiet machine; a busy one wakes the thread later, so
    // fewer go out early. A window ignored (the fault) sends none early.
    assert!(s.sent_early > s.sent / 20, "{s:?}");
    assert!(s.early_max_us > 0.0 && s.early_max_us <= 1_000.0, "{s:?}");
    assert_eq!(s.send_ahead_us, 1_000.0);
    let ahead = most_ahead(arrivals.lock().unwrap().clone(), rps);
    let bound = Slack::of_run(p99_late(&o)).above(1_000) as f64 * 1e3;
    assert!(
        ahead < bound,
        "an arrival came {:.0} µs ahead of the usual (at most {:.0})",
        ahead / 1e3,
        bound / 1e3
    );
}

#[test]
fn answers_read_late_are_timed_when_they_arrived() {
    let _timing = serial();
    // 50 requests a second, answers below the reading-late low-water mark:
    // they do not wake the thread, which reads them at a later turn. Timed
    // by the kernel's receive stamp (or read within a few ms), latency is
    // the server's 5 ms; timed at their read, most would be near 10 ms.
    let o = five_ms_answers_at_50_a_second(false);
    assert_eq!(o.answer_clock, AnswerClock::KernelStamp);
    assert_eq!(o.generator.unstamped, None);
    assert!(
        !o.warnings().iter().any(|w| w.contains("SO_TIMESTAMPNS")),
        "{:?}",
        o.warnings()
    );
}

#[test]
fn without_the_kernels_stamps_answers_wake_the_thread_and_say_so() {
    let _timing = serial();
    // A kernel that gives TCP no receive stamps (played: the option is not
    // asked for): answers read late would be timed at a read ms after them. The first answer without a stamp turns reading late off;
    // the rest are read as they come, near the server's 5 ms, and the run
    // says how its answers were timed.
    let o = five_ms_answers_at_50_a_second(true);
    assert_eq!(o.answer_clock, AnswerClock::Read);
    // The thread had 4 connections, one request in flight at most on each.
    let late = o
        .generator
        .unstamped
        .expect("the missing stamps are reported");
    assert!(late <= 4, "{late} read late");
    let w = o.warnings();
    assert!(w.iter().any(|w| w.contains("no receive stamps")), "{w:?}");
}

/// 50 requests a second for 2 s, each answered after 5 ms, latency checked
/// near 5 ms; `unstamped`: the kernel plays one that gives no stamps.
fn five_ms_answers_at_50_a_second(unstamped: bool) -> Outcome {
    let srv = TestServer::start("127.0.0.1:0", |_, _| Reply {
        delay: Duration::from_millis(5),
        ..Reply::ok()
    });
    let mut cfg = rate_config(&srv.url("/"), 50.0, 4);
    cfg.duration = Duration::from_secs(2);
    cfg.unstamped_kernel = unstamped;
    let o = go(&cfg);
    assert!(o.ledger().balances());
    assert!(o.requests >= 90, "{:?}", o.ledger());
    // Never shorter than the server took. Far from the 20 ms read time: the
    // lower decile, as a starved test server on a loaded machine answers
    // some requests late (honestly measured, and not what this is about).
    assert!(o.latency.min() >= 5_000, "min {} µs", o.latency.min());
    let p10 = o.latency.value_at_quantile(0.1);
    assert!(p10 < 12_000, "p10 {p10} µs: the read time, not the arrival");
    // The median within the tolerance rule of the server's 5 ms; answers
    // read late without stamps put it near 10 ms on a quiet machine (the
    // thread polls every 5 ms), above this bound.
    let p50 = o.latency.value_at_quantile(0.5);
    let bound = Slack::of_run(p99_late(&o)).above(5_000);
    assert!(
        p50 <= bound,
        "p50 {p50} µs above {bound} µs: answers read late"
    );
    o
}

#[test]
fn connects_are_timed_as_they_finish_not_at_the_next_due_time() {
    let _timing = serial();
    // The first request is due 100 ms after the connections open, the
    // next ones 20 ms apart: a loop that slept through the connects would
    // time them at ~100 ms.
    let srv = TestServer::start("127.0.0.1:0", |_, _| Reply::ok());
    let mut cfg = rate_config(&srv.url("/"), 50.0, 4);
    cfg.duration = Duration::from_secs(1);
    let o = go(&cfg);
    assert!(o.ledger().balances());
    assert_eq!(o.connect_time.len(), 4);
    // Half the fault's 100 ms: room for a load thread that starts late.
    let worst = o.connect_time.max();
    assert!(worst < 50_000, "a connect timed at {worst} µs");
}

/// The run's send lateness p99, µs (0 without a schedule).
fn p99_late(o: &Outcome) -> u64 {
    o.lateness.as_ref().map_or(0, |h| h.value_at_quantile(0.99))
}

#[test]
fn at_constant_rate_a_request_budget_is_n_planned() {
    let _timing = serial();
    let srv = TestServer::start("127.0.0.1:0", |_, _| Reply::ok());
    let mut cfg = rate_config(&srv.url("/"), 1000.0, 4);
    cfg.threads = 2;
    cfg.requests = Some(501);
    cfg.duration = Duration::from_secs(60);
    let o = go(&cfg);
    assert!(o.ledger().balances(), "{:?}", o.ledger());
    assert_eq!(o.planned, 501, "{:?}", o.ledger());
    assert_eq!(o.schedule.as_ref().unwrap().sent, 501);
    // 501 slots at 1000/s: half a second, not the minute.
    assert!((0.45..0.6).contains(&o.measured_s), "{}", o.measured_s);
    // Five slots at 10/s over two threads take half a second, whichever
    // slot the measurement begins at: the requests are five consecutive
    // slots of the whole schedule (after a 50 ms warm-up the first is the
    // odd one, and a split of 3 + 2 from each thread's own first slot left
    // a gap), and the window is theirs, not a thread's next slot beyond
    // them (0.6 s, which read as 8.3 req/s).
    for warmup in [0, 50] {
        cfg.model = LoadModel::ConstantRate { rps: 10.0 };
        cfg.requests = Some(5);
        cfg.warmup = Duration::from_millis(warmup);
        let o = go(&cfg);
        assert!(o.ledger().balances(), "{:?}", o.ledger());
        let what = format!("warm-up {warmup} ms: {:?}", o.ledger());
        assert_eq!((o.planned, o.requests), (5, 5), "{what}");
        assert!((o.measured_s - 0.5).abs() < 1e-6, "{} {what}", o.measured_s);
    }
}

#[test]
fn generators_plan_their_share_of_one_request_count_as_one_schedule() {
    let _timing = serial();
    let srv = TestServer::start("127.0.0.1:0", |_, _| Reply::ok());
    let mut cfg = rate_config(&srv.url("/"), 1000.0, 4);
    cfg.threads = 2;
    // Two generators at 5/s each: one schedule of 10/s, generator 1's
    // slots 0.1 s after generator 0's.
    cfg.model = LoadModel::ConstantRate { rps: 5.0 };
    cfg.requests = Some(5);
    cfg.duration = Duration::from_secs(60);
    // Without a warm-up the five slots are 0..5, generator 0 owning 0, 2,
    // 4; after 50 ms they are 1..6, and generator 0 owns only 2 and 4 (a
    // split of 3 + 2 from slot 0 sent its third at slot 6, late). Each
    // generator's window is the five slots' half second, not its own next
    // slot beyond them (0.6 s: "5 answered … = 8.3 req/s").
    for (warmup, shares) in [(0, [3, 2]), (50, [2, 3])] {
        cfg.warmup = Duration::from_millis(warmup);
        for (g, share) in shares.into_iter().enumerate() {
            cfg.share = GeneratorShare { index: g, count: 2 };
            let o = go(&cfg);
            assert!(o.ledger().balances(), "{:?}", o.ledger());
            let what = format!("warm-up {warmup} ms, generator {g}: {:?}", o.ledger());
            assert_eq!((o.planned, o.requests), (share, share), "{what}");
            assert!((o.measured_s - 0.5).abs() < 1e-6, "{} {what}", o.measured_s);
        }
    }
    // In a closed loop one request over two generators leaves generator 1
    // none: its window ends as it opens, not after the minute (an hour
    // when `-n` alone bounds the run), which the fleet waited out.
    cfg.model = LoadModel::ClosedLoop;
    cfg.requests = Some(1);
    cfg.warmup = Duration::ZERO;
    for (g, share) in [(0, 1), (1, 0)] {
        cfg.share = GeneratorShare { index: g, count: 2 };
        let t = std::time::Instant::now();
        let o = go(&cfg);
        let what = format!("closed loop, generator {g}: {:?}", o.ledger());
        assert_eq!((o.planned, o.requests), (share, share), "{what}");
        assert!(t.elapsed() < Duration::from_secs(20), "{what}");
    }
}
