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

use crate::bodies::BodySizes;
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
    /// and the body bytes received since its window was last topped up,
    /// and in all (h3 too).
    pub stream: u32,
    pub status: u16,
    pub recv: u32,
    pub body: u64,
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
            body: 0,
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
            body: 0,
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
    /// A target: answers to its requests that arrived within the window.
    /// A stage: answers that arrived within the stage's span, whichever
    /// request they answered.
    pub arrived: u64,
    /// A stage: answers to its own requests that arrived within its span.
    pub within: u64,
    pub errors: ErrorCounts,
    pub codes: StatusCounts,
    pub bodies: BodySizes,
    pub latency: Histogram<u64>,
}

impl TargetTally {
    fn new() -> Self {
        TargetTally {
            planned: 0,
            answered: 0,
            arrived: 0,
            within: 0,
            errors: ErrorCounts::default(),
            codes: StatusCounts::new(),
            bodies: BodySizes::default(),
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
    /// The body sizes of the window's answers with an expected status.
    pub bodies: BodySizes,
    pub latency: Histogram<u64>,
    pub answered_latency: Histogram<u64>,
    /// Of `answered_latency`, the answers with a status not expected: a
    /// server that fails fast would otherwise look faster (see
    /// `Outcome::expected_latency`). Recorded only for them, so a healthy
    /// run pays nothing.
    pub unexpected_latency: Histogram<u64>,
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
    revoked: Vec<(Nanos, Req, bool)>,
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
            bodies: BodySizes::default(),
            latency: new_histogram(),
            answered_latency: new_histogram(),
            unexpected_latency: new_histogram(),
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

    /// An answer to `r` arrived at `now`, within the window: counted for
    /// its target, and for the stage whose span it came in (see
    /// `Outcome::stage_rps`).
    #[inline]
    fn arrivals(&mut self, now: Nanos, r: &Req) {
        if let Some(t) = self.targets.get_mut(r.target as usize) {
            t.arrived += 1;
        }
        if !self.stage_ends.is_empty() {
            let s = self.stage_ends.partition_point(|&e| e <= now);
            let own = self.in_window(r.planned)
                && self.stage_ends.partition_point(|&e| e <= r.planned) == s;
            if let Some(t) = self.stages.get_mut(s) {
                t.arrived += 1;
                t.within += u64::from(own);
            }
        }
    }

    /// Break the window down by `n` target names.
    pub fn by_targets(mut self, n: usize) -> Self {
        self.targets = (0..n).map(|_| TargetTally::new()).collect();
        self
    }

    #[inline]
    pub fn expects(&self, status: u16) -> bool {
        self.expect.contains(status)
    }

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

    /// `body`: its body's bytes. Returns whether the answer's latency went
    /// into the figures (and so may be taken back with [`Tally::revoke`]).
    #[inline]
    pub fn answered(&mut self, now: Nanos, r: Req, status: u16, body: u64) -> bool {
        self.req_sec.answer(now);
        self.silence.answer(now);
        if self.late_is_timeout && now.saturating_sub(r.planned) >= self.timeout {
            self.late += u64::from(self.in_window(r.planned));
            self.failed(now, r, Failure::Timeout);
            return false;
        }
        if self.in_window(now) {
            self.arrived += 1;
            self.arrivals(now, &r);
        }
        let latency = now.saturating_sub(r.latency_from());
        let bad = !self.expect.contains(status);
        self.iv.requests += 1;
        self.iv.errors += u64::from(bad);
        record_ns(&mut self.iv.hist, latency);
        if self.in_window(r.planned) {
            self.answered += 1;
            self.errors.status += u64::from(bad);
            self.codes.record(status);
            if !bad {
                self.bodies.record(body);
            }
            record_ns(&mut self.latency, latency);
            record_ns(&mut self.answered_latency, latency);
            if bad {
                record_ns(&mut self.unexpected_latency, latency);
            }
            if self.rate_mode {
                record_ns(&mut self.uncorrected, now.saturating_sub(r.sent));
            }
            self.groups(&r, |t| {
                t.answered += 1;
                t.errors.status += u64::from(bad);
                t.codes.record(status);
                if !bad {
                    t.bodies.record(body);
                }
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
    /// `unexpected`: its status was not expected.
    pub fn revoke(&mut self, at: Nanos, r: Req, unexpected: bool) -> bool {
        let ours = self.in_window(r.planned);
        if ours {
            self.revoked.push((at, r, unexpected));
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
        let mut unexpected = new_histogram();
        for &(at, r, bad) in &revoked {
            let l = at.saturating_sub(r.latency_from());
            record_ns(&mut latency, l);
            if bad {
                record_ns(&mut unexpected, l);
            }
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
        let _ = self.unexpected_latency.subtract(&unexpected);
        if self.rate_mode {
            let _ = self.uncorrected.subtract(&uncorrected);
        }
    }

    /// A request ends without an answer. It is charged at least the
    /// timeout, except when the run was interrupted: then it waited only
    /// until the interrupt, and is charged that.
    #[inline]
    pub fn failed(&mut self, now: Nanos, r: Req, why: Failure) {
        if why == Failure::Local {
            return self.failed_here(r);
        }
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

    /// A request whose connect failed on this machine: counted with the
    /// failed connects, and with none of the latencies, since the server
    /// never saw it and its wait was the generator's.
    fn failed_here(&mut self, r: Req) {
        self.iv.errors += 1;
        if self.in_window(r.planned) {
            self.errors.connect += 1;
            self.errors.local += 1;
            self.groups(&r, |t| {
                t.errors.connect += 1;
                t.errors.local += 1;
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
mod tests;
