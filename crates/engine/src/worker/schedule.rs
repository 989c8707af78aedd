//! What is planned and when it goes out: the pacer's slots at a constant
//! rate, new requests as answers free connections in the closed loop, and
//! which connection a request takes.

use crate::clock::{self, Nanos};
use crate::config::GeneratorShare;
use crate::ledger::Req;
use crate::pacer::{ConstantPacer, Pacer};
use crate::profile::AnyPacer;

use super::conn::State;
use super::{ThreadPlan, Worker};

/// A request count over the whole load: this generator's share of it, and
/// when the window it is measured over ends.
///
/// At a constant rate the `N` requests are the whole schedule's `N`
/// consecutive slots from the first measured, `F`. With `n` generators the
/// whole schedule runs at `R = n·r`, generator `g` owning its slots `g`,
/// `g + n`, … (its own schedule starts `g/R` late), so it plans
/// [`crate::pacer::share`]`(N, F, g, n)` of them: `N/n` each, split from
/// slot 0, would leave a gap after a warm-up that begins the measurement on
/// another generator's slot. The window lasts, from the measurement's
/// start, as long as those slots span (`N/R`), the same for every thread of
/// every generator: a thread's own next slot is up to `n·T − 1` slots
/// later, and would stretch the window the throughput is counted over. In a
/// closed loop nothing is scheduled: generator `g` takes `N/n`, one more
/// for the first `N mod n`, and the window is the planned one.
pub(crate) fn budgeted(
    plan: &ThreadPlan,
    whole: Option<u64>,
    share: GeneratorShare,
) -> (Option<u64>, Nanos) {
    let Some(n) = whole.filter(|&n| n > 0) else {
        return (whole, plan.end);
    };
    let (g, gens) = (share.index as u64, share.count as u64);
    let Some(w) = whole_schedule(plan, gens) else {
        return (Some(crate::pacer::share(n, 0, g, gens)), plan.end);
    };
    let first = w.slots_before(plan.measure_start);
    let span = w.slot(first + n).saturating_sub(w.slot(first));
    // A rate profile's slots may crowd at its end: the last one stays
    // within the window.
    let end = (plan.measure_start.saturating_add(span))
        .max(w.slot(first + n - 1).saturating_add(1))
        .min(plan.end);
    (Some(crate::pacer::share(n, first, g, gens)), end)
}

/// The whole load's schedule over all its generators, as one worker's;
/// `None` in a closed loop.
fn whole_schedule(plan: &ThreadPlan, generators: u64) -> Option<AnyPacer> {
    let rate = plan.rate?;
    match plan.stages {
        // A rate profile runs on one generator only (`LoadConfig::validate`).
        Some(_) => super::pacer(plan, 0),
        None => Some(AnyPacer::Constant(ConstantPacer::new(
            plan.start,
            0,
            1,
            rate * generators as f64,
        ))),
    }
}

impl Worker {
    /// Schedule slots due before `t` (and within the window) not yet taken.
    pub(super) fn untaken(&self, t: Nanos) -> u64 {
        match &self.pacer {
            Some(p) => p.due_before(t.min(self.end)).saturating_sub(self.next_i),
            None => 0,
        }
    }

    /// Closed loop: whether a new request may come into being now.
    pub(super) fn may_plan(&self, now: Nanos) -> bool {
        now < self.end && self.budget != Some(0) && !self.stopped()
    }

    /// The next prepared request of the pool, in turn: the hot path's only
    /// choice of what to send.
    #[inline]
    fn pick(&mut self, r: Req) -> Req {
        let n = self.plan.pool.len() as u64;
        let e = if n == 1 {
            0
        } else {
            (self.next_entry % n) as u32
        };
        self.next_entry += 1;
        r.of(e, self.plan.pool.entry(e).target)
    }

    /// Closed loop: a new request comes into being now (see
    /// [`Self::may_plan`]). The last one of the budget ends the window.
    pub(super) fn plan_new(&mut self, now: Nanos) -> Req {
        let r = self.pick(Req::new(now, now));
        self.tally.plan(r);
        if !self.tally.in_window(now) {
            return r;
        }
        if let Some(left) = self.budget.as_mut() {
            *left = left.saturating_sub(1);
            if *left == 0 {
                self.end = now + 1;
                self.tally.close_window(self.end);
                self.iv_end = self.iv_end.min(self.end);
            }
        }
        r
    }

    /// Constant rate: the next slot of the schedule, as a request not yet
    /// sent.
    pub(super) fn take_slot(&mut self) -> Req {
        let due = self.pacer.as_ref().map_or(0, |p| p.due(self.next_i));
        self.next_i += 1;
        let r = self.pick(Req::new(due, 0));
        self.tally.plan(r);
        r
    }

    pub(super) fn never_sent_in_window(&mut self, planned: Nanos) {
        if self.tally.in_window(planned) {
            self.never_sent += 1;
        }
    }

    /// Closed loop: fills connection `i` up to the pipeline depth, first with
    /// requests waiting to go out again, then (within the window) new ones.
    pub(super) fn refill(&mut self, i: usize, now: Nanos) {
        let depth = self.conns[i].depth(self.plan.pipeline);
        // `inflight` already holds what is added here: it alone is the depth.
        let mut batch = 0;
        while self.conns[i].inflight.len() < depth {
            let Some(r) = self.retry.pop_front() else {
                break;
            };
            self.conns[i].inflight.push_back(r.resent(now));
            batch += 1;
        }
        while self.conns[i].inflight.len() < depth && self.may_plan(now) {
            let r = self.plan_new(now);
            self.tally.first_send(now, now, now);
            self.conns[i].inflight.push_back(r);
            batch += 1;
        }
        self.queue_writes(i, batch);
    }

    /// Constant rate: sends every request that is due (those waiting to go
    /// out again first) on the connections that have been free longest, and
    /// notes when the next one is due.
    pub(super) fn dispatch(&mut self) {
        // Readying a connection can end it, and ending one dispatches what
        // it carried: the loop below takes that over instead of a nested
        // call (as deep as the connections that fail in a row).
        if self.dispatching {
            return;
        }
        self.dispatching = true;
        let opened = self.batch_open();
        self.read_free();
        self.dispatch_due();
        self.dispatch_close(opened);
        self.dispatching = false;
    }

    pub(super) fn dispatch_due(&mut self) {
        // Without a free connection the next answer or opened connection
        // resumes dispatching, not the clock.
        loop {
            self.next_due = None;
            self.starved = false;
            self.take_due();
            // Over HTTP/2 the requests due together on one connection go out
            // as one batch: the last connection's goes out here.
            if self.batch.is_empty() {
                return;
            }
            self.send_batch();
            // A write that failed sent its requests back to be sent again:
            // they are due now, not at the next wake-up.
            if self.retry.is_empty() {
                return;
            }
        }
    }

    fn take_due(&mut self) {
        loop {
            let now = clock::now();
            let retry = self.retry.front().map(|r| r.planned);
            let slot = self
                .pacer
                .as_ref()
                .map(|p| p.due(self.next_i))
                .filter(|&d| d < self.end);
            let (planned, from_retry) = match (retry, slot) {
                (Some(r), Some(s)) if s < r => (s, false),
                (Some(r), _) => (r, true),
                (None, Some(s)) => (s, false),
                (None, None) => return,
            };
            if planned > now + self.plan.send_ahead {
                self.next_due = Some(planned);
                return;
            }
            // No free connection: the next answer or opened connection
            // resumes us, and answers must wake the thread for that.
            let Some(front) = self.free.first(&mut self.conns, self.plan.pipeline) else {
                self.starved = true;
                self.watch_all();
                return;
            };
            // A request waited for a connection only from the moment the
            // one free longest had room, whichever connection takes it.
            let free_since = self.conns[front].free_since;
            let i = if self.plan.h2 && self.deferred {
                self.rotation
                    .first(&mut self.conns, self.plan.pipeline)
                    .unwrap_or(front)
            } else {
                front
            };
            // A connection with nothing in flight is read once before it is
            // given a request: a close, a reset or bytes nobody asked for
            // that arrived while it was idle end it here, not the request.
            if !self.is_clean(i) {
                continue;
            }
            if self.plan.h2 {
                if self.deferred {
                    if !self.h2_may_add(i) {
                        continue;
                    }
                    self.rotation.used(i);
                }
                self.batch_due(i, from_retry, free_since);
                continue;
            }
            // The send time is taken after that read, just before the write:
            // bytes that came before it cannot be this request's answer, and
            // a system call between the two would widen the window in which
            // stray bytes could pass for one.
            // In an io_uring batch, just before its submission (see `uring`).
            let later = self.io.open && self.conns[i].state == State::Open;
            let now = if later { 0 } else { clock::now() };
            let req = if from_retry {
                self.retry.pop_front().expect("peeked").resent(now)
            } else {
                let r = self.take_slot();
                if !later {
                    self.tally.first_send(now, r.planned, free_since);
                }
                r.resent(now)
            };
            if later {
                let fresh = (!from_retry).then_some(free_since);
                self.io.unstamped.push((i, fresh));
            }
            self.conns[i].inflight.push_back(req);
            self.queue_writes(i, 1);
        }
    }

    /// HTTP/2: the due request joins connection `i`'s batch (the batch of
    /// another connection goes out first). Its frames go out with the
    /// batch's, in one write, and it is timed as sent just before that
    /// write: one stream or ten due together cost one `write`, and no
    /// latency counts from before its request left.
    fn batch_due(&mut self, i: usize, from_retry: bool, free_since: Nanos) {
        if self.batch.first().is_some_and(|&(c, _)| c != i) {
            self.send_batch();
        }
        let req = if from_retry {
            self.retry.pop_front().expect("peeked")
        } else {
            self.take_slot()
        };
        // Not sent yet: `send_batch` stamps it.
        self.conns[i].inflight.push_back(req.resent(0));
        self.batch.push((i, (!from_retry).then_some(free_since)));
    }

    /// Sends the batch: every request in it is timed as sent now, and those
    /// sent for the first time count in the schedule's figures (lateness,
    /// early, waited) as they would one by one.
    fn send_batch(&mut self) {
        let Some(&(i, _)) = self.batch.first() else {
            return;
        };
        let k = self.batch.len();
        let now = clock::now();
        let from = self.conns[i].inflight.len() - k;
        for (j, &(_, fresh)) in self.batch.iter().enumerate() {
            let r = &mut self.conns[i].inflight[from + j];
            r.sent = now;
            if let Some(free_since) = fresh {
                self.tally.first_send(now, r.planned, free_since);
            }
        }
        self.batch.clear();
        self.queue_writes(i, k);
    }

    /// Writes the `k` requests just added to connection `i`'s queue (an
    /// idle slot first opens its connection).
    pub(super) fn queue_writes(&mut self, i: usize, k: usize) {
        if k == 0 {
            return;
        }
        if self.plan.h2 {
            self.start_streams(i, k);
            self.poll_later(i);
            return;
        }
        let c = &mut self.conns[i];
        let from = c.inflight.len() - k;
        for j in from..c.inflight.len() {
            let e = c.inflight[j].entry;
            c.out.push_back(e);
        }
        if self.conns[i].state == State::Idle {
            self.connect(i, clock::now());
        } else {
            self.flush_writes(i);
            self.poll_later(i);
        }
    }
}
