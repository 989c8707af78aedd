//! HTTP/2 connections in the load thread: streams instead of a pipeline.
//!
//! Everything else is the HTTP/1.1 path's: the schedule, the choice of the
//! connection free longest, the ledger, timeouts from the planned time.
//! What differs:
//!
//! - A connection takes requests once the server's SETTINGS came, up to
//!   `streams` at once and never more than the server's
//!   `SETTINGS_MAX_CONCURRENT_STREAMS`; none once it sent GOAWAY.
//! - Answers come in any order: a request is found by its stream id
//!   (`inflight` stays in stream order, as streams open in order).
//! - A request that times out is reset (`CANCEL`) alone; the connection
//!   goes on carrying the others, whose latency it does not touch.
//! - At a constant rate, the requests due together (within the send-ahead
//!   window) that take the same connection go out in one write, each timed
//!   as sent just before it (`schedule::send_batch`): a write per request
//!   cost the loopback a segment each, and cost more CPU per request than
//!   the closed loop, which refills a connection in one write. Over plain
//!   TCP, where answers are read late (see the module doc of the worker),
//!   due requests take the connections in turn instead, so a batch is one
//!   request unless every connection already carries one.
//! - What ends a request without an answer (see [`crate::H2Report`]): a
//!   reset by the server (a `read` error, by code); `REFUSED_STREAM` and a
//!   GOAWAY's unprocessed streams are sent again whatever their method
//!   (the server says it did not process them), a few times at most; a
//!   protocol violation ends the connection (GOAWAY sent, `parse` for the
//!   streams whose answer had begun, the others sent again once if
//!   idempotent, as a request lost before any byte of its answer is over
//!   HTTP/1.1). Nothing a server sends makes the thread panic or wait
//!   beyond a timeout.

use std::io;

use crate::clock::{self, Nanos};
use crate::h2::frame;
use crate::h2::session::{ConnError, Event, Session, CLIENT_SETTINGS, CONNECTION_WINDOW};
use crate::ledger::Req;
use crate::stats::Failure;
use crate::H2Report;

use super::conn::State;
use super::faults::sort_if_needed;
use super::{Worker, LOW_WATER};

/// How many times a request the server did not process goes out again
/// before it counts as failed.
const UNPROCESSED_RESENDS: u8 = 4;

/// What every thread's report starts with: the settings it sends.
pub(super) fn initial_report() -> H2Report {
    H2Report {
        settings_sent: CLIENT_SETTINGS
            .iter()
            .map(|&(id, v)| (frame::setting_name(id), v))
            .collect(),
        connection_window: CONNECTION_WINDOW,
        ..Default::default()
    }
}

impl Worker {
    /// Connection `i` just opened (TCP, or TLS): over TLS, ALPN must have
    /// chosen h2; the preface and settings go out.
    pub(super) fn h2_open(&mut self, i: usize, now: Nanos) {
        if self.plan.tls.is_some() {
            let chose = self.conns[i]
                .stream
                .as_ref()
                .and_then(|s| s.alpn())
                .map(<[u8]>::to_vec);
            if chose.as_deref() != Some(b"h2") {
                let chose = chose.map_or_else(
                    || "none".to_string(),
                    |p| format!("{:?}", String::from_utf8_lossy(&p)),
                );
                self.tls_error.get_or_insert(format!(
                    "offered h2 and http/1.1 by ALPN, the server chose {chose}: it does not speak h2"
                ));
                self.open_failed(i, now, Failure::Tls);
                return;
            }
        }
        self.conns[i].h2 = Some(Box::new(Session::new()));
        self.flush_frames(i);
    }

    /// Opens a stream for each of the last `k` requests of connection `i`.
    pub(super) fn start_streams(&mut self, i: usize, k: usize) {
        let pool = &self.plan.pool;
        let wire = pool.bytes();
        let c = &mut self.conns[i];
        let Some(s) = c.h2.as_mut() else { return };
        let from = c.inflight.len() - k;
        for r in c.inflight.range_mut(from..) {
            let e = pool.entry(r.entry);
            r.stream = s.start(&wire[e.start..e.body], wire, e.body, e.end);
        }
        self.flush_frames(i);
    }

    /// Writes the frames connection `i` has queued.
    pub(super) fn flush_frames(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if c.state != State::Open {
            return;
        }
        let (Some(t), Some(s)) = (c.stream.as_mut(), c.h2.as_mut()) else {
            return;
        };
        let mut failed = None;
        if t.pending_out() {
            match t.flush_out() {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) => failed = Some(e),
            }
        }
        while failed.is_none() && s.out_pos < s.out.len() {
            match t.write(&s.out[s.out_pos..]) {
                Ok(0) => failed = Some(io::ErrorKind::WriteZero.into()),
                Ok(n) => s.out_pos += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => failed = Some(e),
            }
        }
        if s.out_pos == s.out.len() {
            s.out.clear();
            s.out_pos = 0;
            if s.out.capacity() > 1 << 20 {
                s.out = Vec::with_capacity(4096);
            }
        }
        if let Some(e) = failed {
            self.lost_with(i, Failure::Write, &e);
        }
    }

    /// Frames read from connection `i` at `now`; false when the connection
    /// was replaced.
    pub(super) fn process_frames(&mut self, i: usize, data: &[u8], now: Nanos) -> bool {
        let was_full = !self.conns[i].has_room(self.plan.pipeline);
        let Some(s) = self.conns[i].h2.as_mut() else {
            return false;
        };
        let mut events = std::mem::take(&mut self.h2_events);
        events.clear();
        let fed = s.feed(data, &mut events);
        // Window the server gave back lets request bodies on.
        s.send_bodies(self.plan.pool.bytes());
        for (k, n) in s.frames_in.iter_mut().enumerate() {
            self.h2_frames[k] += std::mem::take(n);
        }
        let mut freed = false;
        let mut opened = false;
        for ev in events.drain(..) {
            match ev {
                Event::Settings => {
                    let c = &self.conns[i];
                    let max = c.h2.as_ref().map_or(u32::MAX, |s| s.peer_max_streams);
                    if max != u32::MAX {
                        let m = self.h2_report.server_max_streams.get_or_insert(max);
                        *m = (*m).min(max);
                    }
                    opened = true;
                }
                Event::Headers {
                    stream,
                    status,
                    end,
                } => freed |= self.on_headers(i, stream, status, end, now),
                Event::Data { stream, len, end } => freed |= self.on_data(i, stream, len, end, now),
                Event::Reset { stream, code } => freed |= self.on_reset(i, stream, code, now),
                Event::GoAway { last, code } => {
                    *self
                        .h2_report
                        .goaways
                        .entry(frame::error_name(code))
                        .or_default() += 1;
                    self.unprocessed_above(i, last, now);
                    freed = true;
                }
            }
        }
        self.h2_events = events;
        if let Err(e) = fed {
            self.violation(i, e);
            return false;
        }
        self.flush_frames(i);
        let c = &self.conns[i];
        if c.state != State::Open || c.h2.is_none() {
            return false;
        }
        self.after_change(i, now, freed || opened, was_full);
        self.conns[i].state == State::Open
    }

    /// A connection that can take more requests takes them (constant rate:
    /// it is listed free and what is due goes out; closed loop: it is
    /// refilled); one the server sent away from ends once it carries
    /// nothing.
    /// `was_full`: it had no room before (full, or not yet ready): if it
    /// has now, it is free from now.
    fn after_change(&mut self, i: usize, now: Nanos, changed: bool, was_full: bool) {
        let c = &self.conns[i];
        let done =
            c.h2.as_ref()
                .is_some_and(|s| !s.open_for_streams() && s.ready);
        if done && c.inflight.is_empty() {
            // Gone away (or out of stream ids) with nothing left: a new
            // connection takes its place.
            self.requeue_and_reconnect(i, now);
            return;
        }
        if !changed {
            return;
        }
        if self.pacer.is_some() {
            let pipeline = self.plan.pipeline;
            let c = &mut self.conns[i];
            if was_full && c.has_room(pipeline) {
                c.free_since = now;
            }
            self.free.list(i, &mut self.conns[i], pipeline);
            if self.deferred {
                self.rotation.list(i, &mut self.conns[i], pipeline);
            }
            self.dispatch();
        } else {
            self.refill(i, now);
        }
    }

    /// Reading late: whether connection `i` may take another stream now.
    /// One that carries a stream read late is read first: its answer is
    /// timed by its stamp before a second answer could be read with it.
    /// From then on, carrying two, its answers wake the thread: two read
    /// together would both be timed at the later one's stamp.
    ///
    /// An idle connection is not read first, unlike over HTTP/1.1: what
    /// may have come while it was idle is the protocol's own and cannot
    /// pass for an answer (frames name their stream), a GOAWAY says which
    /// streams the server did not process (they go out again), and a close
    /// or reset wakes the thread anyway.
    pub(super) fn h2_may_add(&mut self, i: usize) -> bool {
        if self.conns[i].inflight.is_empty() {
            return true;
        }
        // A connection already in the batch has been read: its requests are
        // not sent, so nothing of theirs can have come.
        let batched = self.batch.first().is_some_and(|&(c, _)| c == i);
        if self.conns[i].lowat == LOW_WATER && !batched {
            self.read(i, false);
            let c = &self.conns[i];
            if c.state != State::Open || !c.has_room(self.plan.pipeline) {
                return false;
            }
        }
        if !self.conns[i].inflight.is_empty() {
            self.watch(i);
        }
        true
    }

    /// The request on `stream` of connection `i`, taken out of flight.
    fn take_stream(&mut self, i: usize, stream: u32) -> Option<Req> {
        let q = &mut self.conns[i].inflight;
        let k = q.binary_search_by_key(&stream, |r| r.stream).ok()?;
        q.remove(k)
    }

    fn stream_mut(&mut self, i: usize, stream: u32) -> Option<&mut Req> {
        let q = &mut self.conns[i].inflight;
        let k = q.binary_search_by_key(&stream, |r| r.stream).ok()?;
        q.get_mut(k)
    }

    /// A header block on `stream`: the answer's head (interim 1xx heads
    /// aside), or its trailers. True when the request ended.
    fn on_headers(&mut self, i: usize, stream: u32, status: u16, end: bool, now: Nanos) -> bool {
        let Some(r) = self.stream_mut(i, stream) else {
            self.unowned_frame(i, stream, true);
            return false;
        };
        let malformed = if r.status == 0 {
            // The head: it must carry a status; an interim one may not end
            // the stream.
            status == 0 || (status < 200 && end)
        } else {
            // Trailers end the stream and carry no status.
            status != 0 || !end
        };
        if malformed {
            return self.stream_error(i, stream, now);
        }
        if (100..200).contains(&status) {
            return false;
        }
        if r.status == 0 {
            r.status = status;
        }
        if end {
            let r = self.take_stream(i, stream).expect("found above");
            self.tally.answered(now, r, r.status, r.body);
            return true;
        }
        false
    }

    /// `len` bytes of `stream`'s body. True when the request ended.
    fn on_data(&mut self, i: usize, stream: u32, len: u32, end: bool, now: Nanos) -> bool {
        let Some(r) = self.stream_mut(i, stream) else {
            self.unowned_frame(i, stream, false);
            return false;
        };
        if r.status == 0 {
            // A body before its head.
            return self.stream_error(i, stream, now);
        }
        r.recv = r.recv.saturating_add(len);
        r.body += u64::from(len);
        let total = r.recv;
        if let Some(s) = self.conns[i].h2.as_mut() {
            if s.stream_received(stream, total) {
                if let Some(r) = self.stream_mut(i, stream) {
                    r.recv = 0;
                }
            }
        }
        if end {
            let r = self.take_stream(i, stream).expect("found above");
            self.tally.answered(now, r, r.status, r.body);
            return true;
        }
        false
    }

    /// The server broke the protocol on one stream: the stream is reset and
    /// its request ends as malformed; the connection goes on.
    fn stream_error(&mut self, i: usize, stream: u32, now: Nanos) -> bool {
        if let Some(r) = self.take_stream(i, stream) {
            self.tally.failed(now, r, Failure::Parse);
        }
        if let Some(s) = self.conns[i].h2.as_mut() {
            s.reset(stream, frame::PROTOCOL_ERROR);
        }
        true
    }

    /// A frame came on `stream`, which carries no request: one that ended
    /// (its answer came, or the server reset it) or one the client reset.
    /// After the client's reset it is the protocol's race, and ignored.
    /// Otherwise the server sent what nobody asked for (`head`: a response
    /// head; else body bytes): counted, and the stream reset as closed
    /// (RFC 9113 §5.1). A frame names its stream, so no request can be
    /// credited with it.
    fn unowned_frame(&mut self, i: usize, stream: u32, head: bool) {
        let Some(s) = self.conns[i].h2.as_mut() else {
            return;
        };
        if s.was_reset(stream) {
            return;
        }
        s.reset(stream, frame::STREAM_CLOSED);
        if head {
            self.sockets.unsolicited_responses += 1;
        } else {
            self.sockets.stray_bytes += 1;
        }
    }

    /// The server reset `stream`. Refused: it was not processed, and goes
    /// out again once if it may; any other code ends it as a `read` error.
    fn on_reset(&mut self, i: usize, stream: u32, code: u32, now: Nanos) -> bool {
        let Some(r) = self.take_stream(i, stream) else {
            return false;
        };
        *self
            .h2_report
            .resets
            .entry(frame::error_name(code))
            .or_default() += 1;
        if code == frame::REFUSED_STREAM {
            self.h2_report.refused += 1;
            self.unprocessed(r, now);
        } else {
            self.tally.failed(now, r, Failure::Read);
        }
        true
    }

    /// The server went away: streams above `last` were not processed
    /// (RFC 9113 §6.8) and go out again once if they may.
    fn unprocessed_above(&mut self, i: usize, last: u32, now: Nanos) {
        let q = &mut self.conns[i].inflight;
        let keep = q.partition_point(|r| r.stream <= last);
        let above: Vec<Req> = q.drain(keep..).collect();
        for r in above {
            self.h2_report.unprocessed += 1;
            if let Some(s) = self.conns[i].h2.as_mut() {
                s.forget(r.stream);
            }
            self.unprocessed(r, now);
        }
    }

    /// A request whose connection was lost before any byte of its answer:
    /// the server may or may not have processed it, so, as over HTTP/1.1,
    /// it is sent again (keeping its planned time) only if idempotent and
    /// not sent again already; else it ends with `why`.
    fn again_or_fail(&mut self, r: Req, now: Nanos, why: Failure) {
        if self.plan.pool.entry(r.entry).idempotent && !r.retried {
            let mut r = r;
            r.retried = true;
            self.send_again(r);
        } else {
            self.tally.failed(now, r, why);
        }
    }

    /// A request the server said it did not process (refused, or above a
    /// GOAWAY's last stream id). RFC 9113 §8.7 makes sending it again safe
    /// whatever its method, so it goes out again keeping its planned time
    /// (the detour shows in its latency), up to [`UNPROCESSED_RESENDS`]
    /// times: a server that refuses everything fails requests rather than
    /// keeping the generator busy. Meeting several GOAWAYs is no fault of
    /// the request: sent again on a connection itself about to go away, it
    /// is above that one's last stream too.
    fn unprocessed(&mut self, r: Req, now: Nanos) {
        if r.unprocessed < UNPROCESSED_RESENDS {
            let mut r = r;
            r.unprocessed += 1;
            self.send_again(r);
        } else {
            self.tally.failed(now, r, Failure::Read);
        }
    }

    fn send_again(&mut self, r: Req) {
        self.sockets.retried += 1;
        self.retry.push_back(r);
        sort_if_needed(&mut self.retry);
    }

    /// The server broke the protocol: the connection ends with a GOAWAY
    /// naming the error.
    fn violation(&mut self, i: usize, e: ConnError) {
        self.h2_report.protocol_errors += 1;
        self.h2_report
            .protocol_error
            .get_or_insert_with(|| format!("{} ({})", e.why, frame::error_name(e.code)));
        if let Some(s) = self.conns[i].h2.as_mut() {
            s.go_away(e.code);
        }
        self.flush_frames(i);
        if self.conns[i].h2.is_some() {
            self.h2_lose(i, Failure::Parse);
        }
    }

    /// Connection `i` is lost (`why`): requests whose answer had begun end
    /// with `why`; the others go out again once if they may (see
    /// `faults`).
    pub(super) fn h2_lose(&mut self, i: usize, why: Failure) {
        let now = clock::now();
        let stranded = std::mem::take(&mut self.conns[i].inflight);
        for r in stranded {
            if r.status != 0 {
                self.tally.failed(now, r, why);
            } else {
                self.again_or_fail(r, now, why);
            }
        }
        self.requeue_and_reconnect(i, now);
    }

    /// The server closed connection `i`.
    pub(super) fn h2_closed(&mut self, i: usize, now: Nanos) {
        if self.conns[i].inflight.is_empty() {
            self.requeue_and_reconnect(i, now);
        } else {
            self.h2_lose(i, Failure::Read);
        }
    }

    /// The scan's look at open connection `i`: each stream whose timeout
    /// passed is reset alone; a server that never sent its settings within
    /// the timeout broke the protocol.
    pub(super) fn h2_scan(&mut self, i: usize, now: Nanos) {
        let timeout = self.plan.timeout;
        let c = &self.conns[i];
        let Some(s) = c.h2.as_ref() else { return };
        if !s.ready {
            if now.saturating_sub(c.free_since) >= timeout {
                self.violation(
                    i,
                    ConnError {
                        code: frame::PROTOCOL_ERROR,
                        why: "no SETTINGS from the server within the timeout".into(),
                    },
                );
            }
            return;
        }
        if !c
            .inflight
            .iter()
            .any(|r| now.saturating_sub(r.planned) >= timeout)
        {
            return;
        }
        let was_full = !self.conns[i].has_room(self.plan.pipeline);
        let mut late = Vec::new();
        self.conns[i].inflight.retain(|r| {
            let out = now.saturating_sub(r.planned) >= timeout;
            if out {
                late.push(*r);
            }
            !out
        });
        for r in late {
            self.h2_report.cancelled += 1;
            if let Some(s) = self.conns[i].h2.as_mut() {
                s.cancel(r.stream);
            }
            self.tally.failed(now, r, Failure::Timeout);
        }
        self.flush_frames(i);
        if self.conns[i].state == State::Open && self.conns[i].h2.is_some() {
            self.after_change(i, now, true, was_full);
        }
    }
}
