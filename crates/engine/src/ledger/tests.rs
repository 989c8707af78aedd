//! The ledger's books, entry by entry.

use super::*;

const MS: Nanos = 1_000_000;

fn tally() -> Tally {
    Tally::new(1000 * MS, 2000 * MS, 100 * MS, true, StatusSet::default())
}

#[test]
fn only_the_window_is_counted() {
    let mut t = tally();
    for p in [999 * MS, 1000 * MS, 1999 * MS, 2000 * MS] {
        t.plan(Req::new(p, 0));
        t.answered(p + MS, Req::new(p, p), 200, 13);
    }
    assert_eq!((t.planned, t.answered), (2, 2));
    // The series sees all four: it is by when things happened.
    assert_eq!(t.iv.requests, 4);
}

#[test]
fn a_failure_counts_as_at_least_the_timeout() {
    let mut t = tally();
    t.plan(Req::new(1500 * MS, 0));
    t.failed(1501 * MS, Req::new(1500 * MS, 0), Failure::Read);
    t.plan(Req::new(1500 * MS, 0));
    t.failed(1800 * MS, Req::new(1500 * MS, 0), Failure::Timeout);
    assert_eq!(t.errors.read, 1);
    assert_eq!(t.errors.timeout, 1);
    assert_eq!(t.planned, t.answered + t.errors.not_answered());
    // 1 ms after planning, yet charged as the 100 ms timeout; the other
    // waited 300 ms and is charged that.
    assert!(
        t.latency.equivalent(t.latency.min(), 100_000),
        "{}",
        t.latency.min()
    );
    assert!(t.latency.max() >= 299_000);
    assert!(t.answered_latency.is_empty());
}

#[test]
fn unanswered_requests_can_only_raise_percentiles() {
    let mut t = tally();
    for i in 0..98u64 {
        let p = 1000 * MS + i * MS;
        t.plan(Req::new(p, 0));
        t.answered(p + (i + 1) * 10_000, Req::new(p, p), 200, 13);
    }
    for _ in 0..2 {
        t.plan(Req::new(1500 * MS, 0));
        t.failed(1500 * MS + 5 * MS, Req::new(1500 * MS, 0), Failure::Read);
    }
    let honest = t.latency.value_at_quantile(0.99);
    let answered = t.answered_latency.value_at_quantile(0.99);
    assert!(honest >= 100_000, "p99 {honest} µs with 2 % unanswered");
    assert!(answered < 1_000);
}

#[test]
fn counted_wrk_s_way_a_late_answer_is_a_timeout_of_what_it_waited() {
    let mut t = tally().late_answers_time_out(true);
    t.plan(Req::new(1500 * MS, 1500 * MS));
    t.answered(1550 * MS, Req::new(1500 * MS, 1500 * MS), 200, 13);
    t.plan(Req::new(1600 * MS, 1600 * MS));
    t.answered(1900 * MS, Req::new(1600 * MS, 1600 * MS), 200, 13);
    assert_eq!((t.answered, t.errors.timeout, t.late), (1, 1, 1));
    assert_eq!(t.planned, t.answered + t.errors.not_answered());
    assert!(t.latency.max() >= 299_000, "{}", t.latency.max());
    assert!(t.answered_latency.max() < 51_000);
    // Counted fairbench's way the same answer is answered (the worker
    // would have aborted it at its timeout instead).
    let mut f = tally();
    f.plan(Req::new(1600 * MS, 1600 * MS));
    f.answered(1900 * MS, Req::new(1600 * MS, 1600 * MS), 200, 13);
    assert_eq!((f.answered, f.late), (1, 0));
}

#[test]
fn early_sends_count_from_the_send() {
    let mut t = tally();
    let r = Req::new(1500 * MS, 1490 * MS);
    t.plan(Req::new(r.planned, 0));
    t.answered(1501 * MS, r, 200, 13);
    assert!(t.latency.max() >= 10_900, "{}", t.latency.max());
}

#[test]
fn status_errors_are_answered() {
    let mut t = tally();
    t.plan(Req::new(1500 * MS, 0));
    t.answered(1501 * MS, Req::new(1500 * MS, 1500 * MS), 503, 13);
    assert_eq!(
        (t.answered, t.errors.status, t.errors.not_answered()),
        (1, 1, 0)
    );
    assert_eq!(t.codes.to_map().get(&503), Some(&1));
}

#[test]
fn the_expected_statuses_decide_what_is_an_error() {
    let mut t = Tally::new(
        1000 * MS,
        2000 * MS,
        100 * MS,
        false,
        StatusSet::parse("200,404").unwrap(),
    );
    for status in [200, 404, 204, 500] {
        t.plan(Req::new(1500 * MS, 0));
        t.answered(1501 * MS, Req::new(1500 * MS, 1500 * MS), status, 13);
    }
    assert_eq!((t.answered, t.errors.status), (4, 2));
}

#[test]
fn body_sizes_are_of_the_windows_successes_only() {
    let mut t = tally().by_targets(2);
    let at = |ms| Req::new(ms * MS, ms * MS);
    t.answered(1501 * MS, at(1500), 200, 13);
    t.answered(1502 * MS, at(1500).of(0, 1), 200, 0);
    // A failure's body (an error page) is not a success's size.
    t.answered(1503 * MS, at(1500), 503, 4);
    // Planned before the window: not the window's.
    t.answered(1001 * MS, at(900), 200, 2);
    assert_eq!(t.bodies.total(), 2);
    assert_eq!((t.bodies.min, t.bodies.max), (0, 13));
    assert_eq!(t.targets[0].bodies.counts.get(&13), Some(&1));
    assert_eq!(t.targets[1].bodies.counts.get(&0), Some(&1));
    assert_eq!(t.targets[0].bodies.total(), 1);
}

/// Two targets, and two stages of the window: [1000, 1400) and
/// [1400, 2000) ms.
fn grouped() -> Tally {
    use crate::profile::RateStage;
    use std::time::Duration;
    let stage = |ms| RateStage {
        duration: Duration::from_millis(ms),
        from: 10.0,
        to: 10.0,
    };
    tally()
        .by_targets(2)
        .by_stages(1000 * MS, &[stage(400), stage(600)])
}

#[test]
fn targets_and_stages_add_up_to_the_totals() {
    let mut t = grouped();
    let outcomes: [(u64, u16, Option<u16>); 6] = [
        (1100, 0, Some(200)),
        (1300, 1, Some(503)),
        (1399, 1, None),
        (1400, 0, Some(200)),
        (1900, 0, None),
        (2100, 1, Some(200)),
    ];
    for (at, target, status) in outcomes {
        let r = Req::new(at * MS, at * MS).of(0, target);
        t.plan(r);
        match status {
            Some(s) => {
                t.answered(at * MS + MS, r, s, 13);
            }
            None => t.failed(at * MS + 200 * MS, r, Failure::Timeout),
        }
    }
    for groups in [&t.targets, &t.stages] {
        let sum = |f: fn(&TargetTally) -> u64| groups.iter().map(f).sum::<u64>();
        assert_eq!(sum(|g| g.planned), t.planned);
        assert_eq!(sum(|g| g.answered), t.answered);
        assert_eq!(sum(|g| g.errors.total()), t.errors.total());
        assert_eq!(sum(|g| g.latency.len()), t.latency.len());
    }
    // 2100 ms is after the window: in neither.
    assert_eq!(t.planned, 5);
    assert_eq!((t.targets[0].planned, t.targets[1].planned), (3, 2));
    assert_eq!((t.stages[0].planned, t.stages[1].planned), (3, 2));
    assert_eq!(t.targets[1].errors.status, 1);
    assert_eq!(
        (t.stages[0].errors.timeout, t.stages[1].errors.timeout),
        (1, 1)
    );
}

/// Arrivals by when they came: a stage counts every answer that came
/// in its span, and apart those of its own requests; a target its
/// answers that came within the window.
#[test]
fn arrivals_are_counted_by_the_span_they_came_in() {
    let mut t = grouped();
    // (planned ms, target, answered ms)
    let answers = [
        (900, 0, 1010),  // planned in the warm-up, came in stage 0
        (1100, 0, 1150), // stage 0's, within it
        (1300, 1, 1450), // stage 0's, came in stage 1
        (1500, 1, 1600), // stage 1's, within it
        (1900, 0, 2050), // stage 1's, came after the window
    ];
    for (planned, target, at) in answers {
        let r = Req::new(planned * MS, planned * MS).of(0, target);
        t.plan(r);
        t.answered(at * MS, r, 200, 13);
    }
    assert_eq!(t.arrived, 4);
    assert_eq!((t.stages[0].arrived, t.stages[0].within), (2, 1));
    assert_eq!((t.stages[1].arrived, t.stages[1].within), (2, 1));
    assert_eq!((t.targets[0].arrived, t.targets[1].arrived), (2, 2));
}

/// A connect that failed on the generator's machine ends its request in
/// the books, as a failed connect, and in no latency: the server never
/// saw it.
#[test]
fn a_request_whose_connect_failed_here_is_counted_and_not_timed() {
    let mut t = grouped();
    let r = Req::new(1500 * MS, 0).of(0, 1);
    t.plan(r);
    t.failed(1900 * MS, r, Failure::Local);
    assert_eq!((t.errors.connect, t.errors.local), (1, 1));
    assert_eq!(t.planned, t.answered + t.errors.not_answered());
    assert_eq!(
        (t.targets[1].errors.connect, t.targets[1].errors.local),
        (1, 1)
    );
    assert!(t.latency.is_empty() && t.targets[1].latency.is_empty());
    assert_eq!(t.iv.errors, 1);
    assert!(t.iv.hist.is_empty());
}

#[test]
fn closing_the_window_early_excludes_what_comes_after() {
    let mut t = tally();
    t.plan(Req::new(1200 * MS, 0));
    t.close_window(1200 * MS + 1);
    t.plan(Req::new(1300 * MS, 0));
    assert_eq!(t.planned, 1);
    // A later close cannot reopen it.
    t.close_window(1900 * MS);
    t.plan(Req::new(1300 * MS, 0));
    assert_eq!(t.planned, 1);
}

#[test]
fn a_revoked_answer_leaves_every_latency_histogram_as_if_never_recorded() {
    let (mut t, mut kept) = (grouped(), grouped());
    // (planned ms, target, service ms, revoked)
    let answers = [
        (1100, 0, 50, false),
        (1150, 1, 12, true),
        (1500, 0, 13, true),
        (1600, 1, 55, false),
        (2100, 0, 9, true),
    ];
    for (at, target, took, revoked) in answers {
        let r = Req::new(at * MS, at * MS + MS).of(0, target);
        let done = at * MS + MS + took * MS;
        t.plan(r);
        assert!(t.answered(done, r, 200, 13));
        // 2100 ms is after the window: not the window's to take back.
        if revoked {
            assert_eq!(t.revoke(done, r, false), at < 2000);
        } else {
            kept.plan(r);
            kept.answered(done, r, 200, 13);
        }
    }
    t.settle();
    assert_eq!(t.answered, 4, "revoked answers stay answered");
    assert_eq!(t.codes.to_map().get(&200), Some(&4));
    let same = |a: &Histogram<u64>, b: &Histogram<u64>| {
        assert_eq!(a.len(), b.len());
        assert_eq!((a.min(), a.max()), (b.min(), b.max()));
    };
    same(&t.latency, &kept.latency);
    same(&t.answered_latency, &kept.answered_latency);
    same(&t.uncorrected, &kept.uncorrected);
    assert_eq!(t.latency.len(), 2);
    assert!(t.latency.min() >= 50_000);
    for (a, b) in t.targets.iter().zip(&kept.targets) {
        same(&a.latency, &b.latency);
    }
    for (a, b) in t.stages.iter().zip(&kept.stages) {
        same(&a.latency, &b.latency);
    }
}
