//! The ledger: every request of the measured window ends in exactly one
//! outcome, and every outcome is in the figures.
//!
//! A request belongs to the measured window when its *planned* time falls in
//! `[measure_start, end)`: the time it was due (constant rate) or first sent
//! (closed loop). Whatever happens to it later, even during the drain after
//! the window, is charged to the window. For the window:
//!
//! ```text
//!     planned = answered + connect + tls + write + read + parse + timeout + unanswered
//! ```
//!
//! exactly, in every mode and at every pipelining depth: a request is counted
//! in `planned` once, when it comes into being, and in exactly one term on
//! the right when it ends. Requests that must be sent again (the server closed
//! the connection with them queued behind an answered one, or they were
//! queued behind a request that timed out) keep their planned time and are
//! not counted twice.
//!
//! Latency, the honest distribution, holds one value per outcome:
//!
//! ```text
//!     answered:      t_answer − min(planned, sent)
//!     not answered:  max(t_gave_up − planned, timeout)
//! ```
//!
//! A request that got no answer counts as no better than the timeout: a client
//! with that timeout did not get an answer within it, however early the
//! connection failed. Timeouts are counted from the planned time, so every
//! answered request is below the timeout (to the scan interval) and every
//! unanswered one at or above it: adding the unanswered requests can only
//! raise a percentile, never lower it. The answered requests alone are kept as
//! a second histogram for those who want the server's latency when it does
//! answer; the uncorrected service time (from the actual send) is of answered
//! requests only.

use hdrhistogram::Histogram;

use crate::clock::Nanos;
use crate::histogram::{new_histogram, record_ns};
use crate::silence::SilenceWatch;
use crate::stats::{ErrorCounts, Failure};
use crate::status::{StatusCounts, StatusSet};
use crate::thread_rate::ReqSecSampler;

/// The most answers of one connection that a stray found later takes back
/// (the worker's `Conn::credit`).
pub(crate) const CREDITED: usize = 64;

/// One request, in flight or waiting to be (re)sent.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Req {
    /// When it was due (constant rate) or first sent (closed loop).
    pub planned: Nanos,
    /// When it last went out on the wire; 0 before that.
    pub sent: Nanos,
    /// It was sent again once already because its connection closed before
    /// any byte of its answer came (see the worker's `lost`): a second such
    /// loss is an error.
    pub retried: bool,
    /// HTTP/2: times the server said it did not process it (refused, or
    /// above a GOAWAY's last stream id); see the worker's `h2` module.
    pub unprocessed: u8,
    /// Its prepared bytes in the run's request pool: sent again, it sends
    /// the same request.
    pub entry: u32,
    /// The target name its results are counted under.
    pub target: u16,
    /// HTTP/2: its stream on the connection carrying it (0 before it goes
    /// out), the `:status` of its answer once the head came (0 before),
    /// and the body bytes received since its window was last topped up.
    pub stream: u32,
    pub status: u16,
    pub recv: u32,
}

impl Req {
    pub fn new(planned: Nanos, sent: Nanos) -> Req {
        Req {
            planned,
            sent,
            retried: false,
            unprocessed: 0,
            entry: 0,
            target: 0,
            stream: 0,
            status: 0,
            recv: 0,
        }
    }

    /// The same request sent as pool entry `entry` of target `target`.
    pub fn of(self, entry: u32, target: u16) -> Req {
        Req {
            entry,
            target,
            ..self
        }
    }

    /// Where its latency starts: its planned time, or its send if that was
    /// earlier (a request sent ahead of its time).
    #[inline]
    pub fn latency_from(&self) -> Nanos {
        if self.sent > 0 {
            self.planned.min(self.sent)
        } else {
            self.planned
        }
    }

    /// The same request going out again at `now`.
    pub fn resent(self, now: Nanos) -> Req {
        Req {
            sent: now,
            stream: 0,
            status: 0,
            recv: 0,
            ..self
        }
    }
}

/// One interval's share of the per-second series.
pub(crate) struct IntervalTally {
    pub requests: u64,
    pub errors: u64,
    pub bytes: u64,
    pub hist: Histogram<u64>,
}

impl IntervalTally {
    pub fn new() -> Self {
        IntervalTally {
            requests: 0,
            errors: 0,
            bytes: 0,
            hist: new_histogram(),
        }
    }
}

/// One target name's share of the window: the same ledger, by name.
pub(crate) struct TargetTally {
    pub planned: u64,
    pub answered: u64,
    pub errors: ErrorCounts,
    pub codes: StatusCounts,
    pub latency: Histogram<u64>,
}

impl TargetTally {
    fn new() -> Self {
        TargetTally {
            planned: 0,
            answered: 0,
            errors: ErrorCounts::default(),
            codes: StatusCounts::new(),
            latency: new_histogram(),
        }
    }
}

/// A worker's ledger and histograms. Outcomes go to the per-second series by
/// when they happened, and to the totals by the window they were planned in.
pub(crate) struct Tally {
    measure_start: Nanos,
    end: Nanos,
    timeout: Nanos,
    rate_mode: bool,
    expect: StatusSet,
    pub iv: IntervalTally,
    pub planned: u64,
    pub answered: u64,
    /// Answers that arrived within the window, whenever their request was
    /// planned: what the window's throughput counts (see
    /// `Outcome::arrived`).
    pub arrived: u64,
    pub bytes: u64,
    pub errors: ErrorCounts,
    /// Answers of the window per status code.
    pub codes: StatusCounts,
    pub latency: Histogram<u64>,
    pub answered_latency: Histogram<u64>,
    pub uncorrected: Histogram<u64>,
    pub lateness: Histogram<u64>,
    /// Requests of the window that went out on the wire at least once.
    pub sent: u64,
    /// Requests of the window for which no connection was free when due.
    pub waited: u64,
    /// Sent before their planned time (constant rate).
    pub early: u64,
    /// The most any of them went out before its planned time.
    pub early_max: Nanos,
    /// Per target name, when the run has several (empty otherwise): each
    /// outcome of the window is counted here too, so the names add up to
    /// the totals.
    pub targets: Vec<TargetTally>,
    /// Per stage of a rate profile, by planned time (empty otherwise).
    pub stages: Vec<TargetTally>,
    /// Where each stage ends (absolute).
    stage_ends: Vec<Nanos>,
    /// wrk's counting: an answer at or past the timeout is a timeout.
    late_is_timeout: bool,
    /// Answers of the window counted as timeouts for being late.
    pub late: u64,
    /// wrk's per-thread Req/Sec, from every answer of the window.
    pub req_sec: ReqSecSampler,
    /// The gaps between the window's answers (see [`crate::silence`]).
    pub silence: SilenceWatch,
    /// Answers taken back from the latency figures (see [`Tally::revoke`]),
    /// with the time each was credited; settled at the end.
    revoked: Vec<(Nanos, Req)>,
}

impl Tally {
    pub fn new(
        measure_start: Nanos,
        end: Nanos,
        timeout: Nanos,
        rate_mode: bool,
        expect: StatusSet,
    ) -> Self {
        Tally {
            measure_start,
            end,
            timeout,
            rate_mode,
            expect,
            iv: IntervalTally::new(),
            planned: 0,
            answered: 0,
            arrived: 0,
            bytes: 0,
            errors: ErrorCounts::default(),
            codes: StatusCounts::new(),
            latency: new_histogram(),
            answered_latency: new_histogram(),
            uncorrected: new_histogram(),
            lateness: new_histogram(),
            sent: 0,
            waited: 0,
            early: 0,
            early_max: 0,
            targets: Vec::new(),
            stages: Vec::new(),
            stage_ends: Vec::new(),
            late_is_timeout: false,
            late: 0,
            req_sec: ReqSecSampler::new(measure_start, end),
            silence: SilenceWatch::new(measure_start, end),
            revoked: Vec::new(),
        }
    }

    /// Count an answer that comes at or after the timeout as a timeout
    /// (wrk's counting).
    pub fn late_answers_time_out(mut self, yes: bool) -> Self {
        self.late_is_timeout = yes;
        self
    }

    /// Break the window down by the stages of a rate profile, which begins
    /// at `measure_start`.
    pub fn by_stages(mut self, measure_start: Nanos, stages: &[crate::profile::RateStage]) -> Self {
        let mut at = measure_start;
        self.stage_ends = stages
            .iter()
            .map(|s| {
                at += s.duration.as_nanos() as Nanos;
                at
            })
            .collect();
        self.stages = stages.iter().map(|_| TargetTally::new()).collect();
        self
    }

    /// The breakdowns request `r` counts in: its target, its stage.
    #[inline]
    fn groups(&mut self, r: &Req, mut f: impl FnMut(&mut TargetTally)) {
        if let Some(t) = self.targets.get_mut(r.target as usize) {
            f(t);
        }
        if !self.stage_ends.is_empty() {
            let s = self.stage_ends.partition_point(|&e| e <= r.planned);
            if let Some(t) = self.stages.get_mut(s) {
                f(t);
            }
        }
    }

    /// Break the window down by `n` target names.
    pub fn by_targets(mut self, n: usize) -> Self {
        self.targets = (0..n).map(|_| TargetTally::new()).collect();
        self
    }

    #[inline]
    pub fn in_window(&self, planned: Nanos) -> bool {
        planned >= self.measure_start && planned < self.end
    }

    /// The window ends early, at `end` (a request budget was used up, or
    /// the run was interrupted): what is planned from then on is not the
    /// window's, and the per-window watches stop there.
    pub fn close_window(&mut self, end: Nanos) {
        self.end = self.end.min(end);
        self.req_sec.close_window(end);
        self.silence.close_window(end);
    }

    /// A request comes into being (planned, or sent for the first time).
    #[inline]
    pub fn plan(&mut self, r: Req) {
        if self.in_window(r.planned) {
            self.planned += 1;
            self.groups(&r, |t| t.planned += 1);
        }
    }

    /// A request goes out for the first time. `free_since` is when a
    /// connection first had room for it; lateness is the generator's own
    /// delay after both the due time and that moment.
    #[inline]
    pub fn first_send(&mut self, now: Nanos, planned: Nanos, free_since: Nanos) {
        if !self.in_window(planned) {
            return;
        }
        self.sent += 1;
        if self.rate_mode {
            record_ns(
                &mut self.lateness,
                now.saturating_sub(planned.max(free_since)),
            );
            if free_since > planned {
                self.waited += 1;
            }
            if now < planned {
                self.early += 1;
                self.early_max = self.early_max.max(planned - now);
            }
        }
    }

    /// Returns whether the answer's latency went into the figures (and so
    /// may be taken back with [`Tally::revoke`]).
    #[inline]
    pub fn answered(&mut self, now: Nanos, r: Req, status: u16) -> bool {
        self.req_sec.answer(now);
        self.silence.answer(now);
        if self.late_is_timeout && now.saturating_sub(r.planned) >= self.timeout {
            self.late += u64::from(self.in_window(r.planned));
            self.failed(now, r, Failure::Timeout);
            return false;
        }
        self.arrived += u64::from(self.in_window(now));
        let latency = now.saturating_sub(r.latency_from());
        let bad = !self.expect.contains(status);
        self.iv.requests += 1;
        self.iv.errors += u64::from(bad);
        record_ns(&mut self.iv.hist, latency);
        if self.in_window(r.planned) {
            self.answered += 1;
            self.errors.status += u64::from(bad);
            self.codes.record(status);
            record_ns(&mut self.latency, latency);
            record_ns(&mut self.answered_latency, latency);
            if self.rate_mode {
                record_ns(&mut self.uncorrected, now.saturating_sub(r.sent));
            }
            self.groups(&r, |t| {
                t.answered += 1;
                t.errors.status += u64::from(bad);
                t.codes.record(status);
                record_ns(&mut t.latency, latency);
            });
        }
        true
    }

    /// An answer credited at `at` to `r` may have been another request's
    /// (a stray the server sent, taken for `r`'s answer because it came
    /// while `r` was in flight; see the worker's `faults`): it stays
    /// answered, with its status, but its latency is taken back out of
    /// every latency histogram of the window when the books are settled.
    /// The per-second series keeps it: that is drawn as it goes.
    /// Returns whether `r` was the window's.
    pub fn revoke(&mut self, at: Nanos, r: Req) -> bool {
        let ours = self.in_window(r.planned);
        if ours {
            self.revoked.push((at, r));
        }
        ours
    }

    /// Takes the revoked answers out of the latency histograms: the values
    /// [`Tally::answered`] recorded (so none goes below zero), as if never.
    pub fn settle(&mut self) {
        if self.revoked.is_empty() {
            return;
        }
        let revoked = std::mem::take(&mut self.revoked);
        let mut latency = new_histogram();
        let mut uncorrected = new_histogram();
        for &(at, r) in &revoked {
            let l = at.saturating_sub(r.latency_from());
            record_ns(&mut latency, l);
            record_ns(&mut uncorrected, at.saturating_sub(r.sent));
            // Its target and stage, found as `answered` found them.
            let mut one = new_histogram();
            record_ns(&mut one, l);
            self.groups(&r, |t| {
                let _ = t.latency.subtract(&one);
            });
        }
        let _ = self.latency.subtract(&latency);
        let _ = self.answered_latency.subtract(&latency);
        if self.rate_mode {
            let _ = self.uncorrected.subtract(&uncorrected);
        }
    }

    /// A request ends without an answer. It is charged at least the
    /// timeout, except when the run was interrupted: then it waited only
    /// until the interrupt, and is charged that.
    #[inline]
    pub fn failed(&mut self, now: Nanos, r: Req, why: Failure) {
        let planned = r.planned;
        let waited = now.saturating_sub(planned);
        let charged = if why == Failure::Interrupted {
            waited
        } else {
            waited.max(self.timeout)
        };
        self.iv.errors += 1;
        record_ns(&mut self.iv.hist, charged);
        if self.in_window(planned) {
            *self.errors.slot(why) += 1;
            self.errors.interrupted += u64::from(why == Failure::Interrupted);
            record_ns(&mut self.latency, charged);
            self.groups(&r, |t| {
                *t.errors.slot(why) += 1;
                t.errors.interrupted += u64::from(why == Failure::Interrupted);
                record_ns(&mut t.latency, charged);
            });
        }
    }

    #[inline]
    pub fn bytes(&mut self, now: Nanos, n: usize) {
        self.iv.bytes += n as u64;
        if now >= self.measure_start {
            self.bytes += n as u64;
        }
    }

    pub fn take_interval(&mut self) -> IntervalTally {
        std::mem::replace(&mut self.iv, IntervalTally::new())
    }
}

#[cfg(test)]
mod tests {
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
            t.answered(p + MS, Req::new(p, p), 200);
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
            t.answered(p + (i + 1) * 10_000, Req::new(p, p), 200);
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
        t.answered(1550 * MS, Req::new(1500 * MS, 1500 * MS), 200);
        t.plan(Req::new(1600 * MS, 1600 * MS));
        t.answered(1900 * MS, Req::new(1600 * MS, 1600 * MS), 200);
        assert_eq!((t.answered, t.errors.timeout, t.late), (1, 1, 1));
        assert_eq!(t.planned, t.answered + t.errors.not_answered());
        assert!(t.latency.max() >= 299_000, "{}", t.latency.max());
        assert!(t.answered_latency.max() < 51_000);
        // Counted fairbench's way the same answer is answered (the worker
        // would have aborted it at its timeout instead).
        let mut f = tally();
        f.plan(Req::new(1600 * MS, 1600 * MS));
        f.answered(1900 * MS, Req::new(1600 * MS, 1600 * MS), 200);
        assert_eq!((f.answered, f.late), (1, 0));
    }

    #[test]
    fn early_sends_count_from_the_send() {
        let mut t = tally();
        let r = Req::new(1500 * MS, 1490 * MS);
        t.plan(Req::new(r.planned, 0));
        t.answered(1501 * MS, r, 200);
        assert!(t.latency.max() >= 10_900, "{}", t.latency.max());
    }

    #[test]
    fn status_errors_are_answered() {
        let mut t = tally();
        t.plan(Req::new(1500 * MS, 0));
        t.answered(1501 * MS, Req::new(1500 * MS, 1500 * MS), 503);
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
            t.answered(1501 * MS, Req::new(1500 * MS, 1500 * MS), status);
        }
        assert_eq!((t.answered, t.errors.status), (4, 2));
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
                    t.answered(at * MS + MS, r, s);
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
            assert!(t.answered(done, r, 200));
            // 2100 ms is after the window: not the window's to take back.
            if revoked {
                assert_eq!(t.revoke(done, r), at < 2000);
            } else {
                kept.plan(r);
                kept.answered(done, r, 200);
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
}
