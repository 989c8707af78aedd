//! What ends a request other than its answer, and when a request goes out
//! again instead.
//!
//! - A connection that ends without fault (the server said `Connection:
//!   close`, or a request timed out with others queued behind it): the
//!   requests queued behind go out again on another connection, keeping
//!   their planned time.
//! - A connection lost (closed, reset, a write refused) or faulted (a
//!   malformed answer): the request whose answer had begun fails with the
//!   class of the loss. Requests of which not one byte of answer came are
//!   those that crossed the server's close: an idempotent one goes out once
//!   more, with its planned time, as HTTP clients do (RFC 9110 §9.2.2), and
//!   is counted (`Sockets::retried`); lost a second time, it fails.
//! - A request past its timeout: aborted and counted as a timeout, its
//!   connection closed and reopened (`TimeoutMode::Fairbench`); or, counted
//!   wrk's way (`TimeoutMode::Wrk`), left to be answered: the answer is read
//!   whole, counted as a timeout by the ledger, and the connection goes on.
//! - Bytes nobody asked for (on a connection with nothing in flight, or
//!   stamped before the request they would answer was sent): a protocol
//!   fault. The connection is closed and replaced, the fault counted, and the
//!   requests it carried go out again under the rule above: no request is
//!   ever credited with what was not its answer.
//! - A response nobody asked for that came while a request was in flight
//!   was taken for that request's answer (no HTTP/1.1 client can tell): it
//!   shows when the next unsolicited response comes, and the connection's
//!   latest answers are then taken back out of the latency figures
//!   ([`Worker::take_back`]; [`super::conn::Conn::credit`] says which).

use std::collections::VecDeque;
use std::io;

use crate::clock::{self, Nanos};
use crate::config::TimeoutMode;
use crate::ledger::Req;
use crate::pacer::Pacer;
use crate::stats::Failure;

use super::conn::State;
use super::Worker;

impl Worker {
    /// The connection failed with `why`: the request whose answer had begun
    /// (a malformed answer has begun) fails; the others go out again once
    /// (see the module doc).
    pub(super) fn fail(&mut self, i: usize, why: Failure) {
        if self.plan.h2 {
            self.h2_lose(i, why);
            return;
        }
        let c = &self.conns[i];
        let begun = !c.parser.is_idle() || !c.pending.is_empty() || why == Failure::Parse;
        self.lose(i, why, begun);
    }

    /// A read or write on connection `i` failed with `e`: a reset, or a
    /// write after the server's close, is the server closing it as surely
    /// as an end of stream, and is counted with its closes (else a server
    /// that resets its connections would show none closed while the run
    /// measured a reconnect for each). Then as [`Self::fail`].
    pub(super) fn lost_with(&mut self, i: usize, why: Failure, e: &io::Error) {
        if by_the_server(e) {
            self.sockets.closed_by_server += 1;
        }
        self.fail(i, why);
    }

    /// Bytes nobody asked for arrived on connection `i` (`response`: they
    /// began like a response): a protocol fault of the server. No request
    /// is charged with them; those in flight go out again once.
    pub(super) fn stray(&mut self, i: usize, response: bool) {
        if response {
            self.sockets.unsolicited_responses += 1;
            self.take_back(i);
        } else {
            self.sockets.stray_bytes += 1;
        }
        self.lose(i, Failure::Parse, false);
    }

    /// A response nobody asked for came on connection `i`: any of its
    /// latest answers may have been a stray taken for an answer (see
    /// [`super::conn::Conn::credit`]), so none of them is timed.
    pub(super) fn take_back(&mut self, i: usize) {
        let hold = self.plan.timeout;
        let now = clock::now();
        let c = &mut self.conns[i];
        // A stray long after the last answer (a 408 before an idle close,
        // say) stood in for none of them.
        c.credited.retain(|&(at, _, _)| at + hold >= now);
        if c.credited.is_empty() {
            return;
        }
        // Answers of the socket before those held, its first aside: a stray
        // taken for one of them would have shifted every later one, and
        // none of them can be taken back any more. Counted, and warned of.
        let earlier = u64::from(c.answers).saturating_sub(1 + c.credited.len() as u64);
        self.sockets.mistimed_left_in += earlier;
        for (at, r, bad) in c.credited.drain(..) {
            self.sockets.possibly_mistimed += u64::from(self.tally.revoke(at, r, bad));
        }
    }

    /// Connection `i` is lost: with `charge_first`, its oldest request fails
    /// with `why`; every other one goes out again if it may, else fails too.
    fn lose(&mut self, i: usize, why: Failure, charge_first: bool) {
        let now = clock::now();
        let mut stranded = std::mem::take(&mut self.conns[i].inflight);
        if charge_first {
            if let Some(r) = stranded.pop_front() {
                self.tally.failed(now, r, why);
            }
        }
        let (tally, sockets) = (&mut self.tally, &mut self.sockets);
        let pool = &self.plan.pool;
        stranded.retain_mut(|r| {
            if pool.entry(r.entry).idempotent && !r.retried {
                sockets.retried += 1;
                r.retried = true;
                true
            } else {
                tally.failed(now, *r, why);
                false
            }
        });
        self.conns[i].inflight = stranded;
        self.requeue_and_reconnect(i, now);
    }

    /// The connection ends without fault (the server asked to close, or a
    /// request timed out): requests queued behind go out again on another
    /// connection, keeping their planned time.
    pub(super) fn requeue_and_reconnect(&mut self, i: usize, now: Nanos) {
        let stranded = std::mem::take(&mut self.conns[i].inflight);
        // Older than anything already waiting? Keep the queue in planned order.
        for r in stranded.into_iter().rev() {
            self.retry.push_front(r);
        }
        sort_if_needed(&mut self.retry);
        self.reconnect(i, now);
        if self.pacer.is_some() {
            self.dispatch();
        }
    }

    /// Timeouts, slow connects, reconnect back-offs, and requests that waited
    /// for a connection until their time was up. Scanning every few
    /// milliseconds is far cheaper than a timer per request.
    pub(super) fn scan(&mut self, now: Nanos) {
        let timeout = self.plan.timeout;
        let mut open = 0;
        // In the drain, a connection is only worth reopening for requests
        // still to be sent.
        let wanted = !self.draining || !self.retry.is_empty() || self.untaken(self.end) > 0;
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            match c.state {
                State::Open if self.plan.h2 => {
                    open += 1;
                    self.h2_scan(i, now);
                }
                State::Open => {
                    open += 1;
                    if self.plan.timeout_mode == TimeoutMode::Wrk {
                        // wrk's counting: the answer is awaited; the ledger
                        // counts it late when it comes.
                        continue;
                    }
                    if let Some(r) = c.inflight.front() {
                        if now.saturating_sub(r.planned) >= timeout {
                            let r = self.conns[i].inflight.pop_front().expect("peeked");
                            self.tally.failed(now, r, Failure::Timeout);
                            self.requeue_and_reconnect(i, now);
                        }
                    }
                }
                State::Connecting { since } | State::Tunnelling { since } => {
                    if now.saturating_sub(since) >= timeout {
                        self.open_failed(i, now, Failure::Connect);
                    }
                }
                State::Handshaking { since } => {
                    if now.saturating_sub(since) >= timeout {
                        self.open_failed(i, now, Failure::Tls);
                    }
                }
                State::Backoff { until } => {
                    if now >= until && wanted {
                        if self.plan.keepalive {
                            self.connect(i, now);
                        } else {
                            self.idle(i, now);
                        }
                    }
                }
                // Ready to open a connection for the next request.
                State::Idle => open += 1,
            }
        }
        // Waiting requests whose time is up: no connection could be opened
        // for them, or every connection stayed busy.
        let why = if open == 0 && self.failing_connects > 0 {
            self.open_failure
        } else {
            Failure::Timeout
        };
        while let Some(r) = self.retry.front().copied() {
            if now.saturating_sub(r.planned) < timeout {
                break;
            }
            self.retry.pop_front();
            self.tally.failed(now, r, why);
        }
        if let Some(p) = self.pacer.as_ref() {
            let expired = now.saturating_sub(timeout).saturating_add(1);
            let n = p
                .due_before(expired.min(self.end))
                .saturating_sub(self.next_i);
            for _ in 0..n {
                let r = self.take_slot();
                self.never_sent_in_window(r.planned);
                self.tally.failed(now, r, why);
            }
        }
    }
}

/// Keeps the retry queue in planned order after requests were put back at
/// its front (rarely out of order: only when two connections strand requests
/// of interleaved plans).
pub(super) fn sort_if_needed(q: &mut VecDeque<Req>) {
    let sorted = q
        .iter()
        .zip(q.iter().skip(1))
        .all(|(a, b)| a.planned <= b.planned);
    if !sorted {
        q.make_contiguous().sort_by_key(|r| r.planned);
    }
}

/// Whether a failed read or write on an open connection was the server's
/// doing: a reset, an abort, or a write after its close.
pub(super) fn by_the_server(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe
    )
}
