//! The thread's connections and their requests: opening, serving what a
//! connection has to say, sending what is due, and what ends a request
//! other than its answer.

use crate::clock::{self, Nanos};
use crate::h3::conn::{Event, H3Conn};
use crate::h3::frame::error_name;
use crate::histogram::record_ns;
use crate::ledger::Req;
use crate::pacer::Pacer;
use crate::stats::Failure;
use crate::worker::{BACKOFF_MAX, BACKOFF_MIN};

use super::H3Worker;

impl H3Worker {
    /// Opens connection `i`: its socket, its first flight.
    pub(super) fn open(&mut self, i: usize, now: Nanos) {
        let opened = self.setup.open(self.peer, now).and_then(|mut link| {
            self.poller.add(link.fd(), i)?;
            link.flush(now)?;
            Ok(link)
        });
        match opened {
            Ok(link) => {
                let early = link.conn.has_0rtt();
                let s = &mut self.slots[i];
                s.conn = Some(H3Conn::new(link, now));
                s.going_away = false;
                if early {
                    // It takes requests from now on, as 0-RTT data.
                    s.free_since = now;
                    if let Some(z) = self.report.zero_rtt.as_mut() {
                        z.tried += 1;
                    }
                }
            }
            Err(e) => {
                self.tls_error
                    .get_or_insert(format!("cannot open a QUIC connection: {e}"));
                self.sockets.connect_failed += 1;
                // No socket or no buffer for it on this machine: the
                // generator's shortage (`local_connects`), said as such.
                if crate::local_connects::is_local(&e) {
                    self.sockets.connect_local += 1;
                }
                self.report.handshake_failures += 1;
                self.back_off(i, now);
            }
        }
    }

    fn back_off(&mut self, i: usize, now: Nanos) {
        let s = &mut self.slots[i];
        s.failures = s.failures.saturating_add(1);
        let wait = BACKOFF_MIN
            .saturating_mul(1 << s.failures.min(6))
            .min(BACKOFF_MAX);
        s.backoff_until = now + wait;
    }

    /// Serves connection `i`: what its socket received, quinn's timers,
    /// the events, and what is to be sent.
    pub(super) fn service(&mut self, i: usize, now: Nanos, readable: bool) {
        // Only a socket epoll named has datagrams: reading the others
        // (a timer's turn) costs a system call that finds nothing.
        if readable {
            self.take_in(i, now);
        }
        self.send_out(i, now);
    }

    /// After connection `i` was read: quinn's timers, what it has to send
    /// (in a closed loop with the requests its answers made room for),
    /// and its end if it closed.
    pub(super) fn send_out(&mut self, i: usize, now: Nanos) {
        let Some(c) = self.slots[i].conn.as_mut() else {
            return;
        };
        let mut io = c.link.flush(now);
        let mut events = std::mem::take(&mut self.events);
        events.clear();
        c.poll(now, &mut events);
        for ev in events.drain(..) {
            self.on_event(i, ev, now);
        }
        self.events = events;
        if self.pacer.is_none() {
            self.refill(i, now);
        }
        if let Some(c) = self.slots[i].conn.as_mut() {
            if io.is_ok() {
                io = c.link.flush(now);
            }
            // Events the last flush raised (a timer that ended it).
            let mut events = std::mem::take(&mut self.events);
            c.poll(now, &mut events);
            for ev in events.drain(..) {
                self.on_event(i, ev, now);
            }
            self.events = events;
        }
        if let Err(e) = io {
            self.io_failed(i, now, e);
        }
        let done = self.slots[i]
            .conn
            .as_ref()
            .is_some_and(|c| c.closed.is_some());
        let empty = self.slots[i].going_away && self.slots[i].inflight.is_empty();
        if done || empty {
            self.end_connection(i, now);
        }
    }

    /// The socket failed: `ConnectionRefused` means nothing listens on the
    /// server's UDP port.
    pub(super) fn io_failed(&mut self, i: usize, now: Nanos, e: std::io::Error) {
        let Some(c) = self.slots[i].conn.as_mut() else {
            return;
        };
        if c.closed.is_none() {
            let refused = e.kind() == std::io::ErrorKind::ConnectionRefused;
            c.closed = Some(crate::h3::conn::Closed {
                failure: if c.connected {
                    Failure::Read
                } else {
                    Failure::Connect
                },
                code: if refused {
                    "refused".into()
                } else {
                    "socket error".into()
                },
                why: if refused {
                    format!(
                        "nothing answers QUIC at udp {} (port unreachable)",
                        self.peer
                    )
                } else {
                    format!("the UDP socket failed: {e}")
                },
                by_server: false,
            });
        }
        let _ = now;
    }

    pub(super) fn on_event(&mut self, i: usize, ev: Event, now: Nanos) {
        match ev {
            Event::Connected => {
                let s = &mut self.slots[i];
                s.failures = 0;
                s.free_since = now;
                let started = s.conn.as_ref().map_or(now, |c| c.started);
                let early = s.conn.as_ref().is_some_and(|c| c.link.conn.has_0rtt());
                match self.report.zero_rtt.as_mut() {
                    Some(z) if early => z.handshake_took(now.saturating_sub(started)),
                    _ => record_ns(&mut self.handshake_time, now.saturating_sub(started)),
                }
                self.sockets.opened += 1;
                self.sockets.tls_handshakes += 1;
                self.report.handshakes += 1;
            }
            Event::Head { stream, status } => {
                if let Some(r) = self.slots[i].inflight.get_mut(&stream) {
                    r.status = status;
                }
            }
            Event::Data { stream, len } => {
                self.tally.bytes(now, len);
                if let Some(r) = self.slots[i].inflight.get_mut(&stream) {
                    r.body += len as u64;
                }
            }
            Event::Done { stream } => {
                if let Some(r) = self.remove(i, stream, now) {
                    // `now`: the arrival of the datagram that completed it;
                    // never before its request left (a wall-clock step).
                    self.tally.answered(now.max(r.sent), r, r.status, r.body);
                }
            }
            Event::Reset {
                stream,
                code,
                by_server,
            } => {
                if let Some(r) = self.remove(i, stream, now) {
                    if by_server {
                        *self.report.resets.entry(error_name(code)).or_default() += 1;
                        self.tally.failed(now, r, Failure::Read);
                    } else {
                        self.report.protocol_errors += 1;
                        self.report.protocol_error.get_or_insert_with(|| {
                            format!("a malformed answer ({})", error_name(code))
                        });
                        self.tally.failed(now, r, Failure::Parse);
                    }
                }
            }
            Event::Early { accepted, moved } => self.early_settled(i, accepted, &moved),
            Event::GoAway { first } => {
                self.report.goaways += 1;
                self.slots[i].going_away = true;
                let mut gone: Vec<u64> = self.slots[i]
                    .inflight
                    .keys()
                    .copied()
                    .filter(|&s| s >= first)
                    .collect();
                gone.sort_unstable();
                for stream in gone {
                    if let Some(r) = self.remove(i, stream, now) {
                        self.report.unprocessed += 1;
                        self.sockets.retried += 1;
                        self.retry.push_back(r);
                    }
                }
            }
        }
    }

    /// Connection `i`'s 0-RTT data was accepted or refused; refused, its
    /// requests went out again on new streams (`moved`), each still the
    /// same request of the ledger, timed from its first send. One the
    /// server's limits left no stream for waits to go out again, as a
    /// GOAWAY's unprocessed requests do.
    fn early_settled(&mut self, i: usize, accepted: bool, moved: &[(u64, Option<u64>)]) {
        if let Some(z) = self.report.zero_rtt.as_mut() {
            if accepted {
                // Early data accepted: the session was resumed.
                z.accepted += 1;
                self.sockets.tls_resumed += 1;
            } else {
                z.rejected += 1;
                z.resent += moved.len() as u64;
            }
        }
        let s = &mut self.slots[i];
        let taken: Vec<(Option<u64>, Req)> = moved
            .iter()
            .filter_map(|&(old, new)| s.inflight.remove(&old).map(|r| (new, r)))
            .collect();
        for (new, r) in taken {
            match new {
                Some(n) => {
                    s.inflight.insert(
                        n,
                        Req {
                            stream: n as u32,
                            ..r
                        },
                    );
                }
                None => {
                    self.sockets.retried += 1;
                    self.retry.push_back(r);
                }
            }
        }
    }

    /// Counts the priming's figures and 0-RTT's (`--zero-rtt`).
    pub(crate) fn zero_rtt(mut self, z: crate::h3::ZeroRtt) -> Self {
        self.report.zero_rtt = Some(z);
        self
    }

    /// Takes the request of stream `stream` off connection `i`.
    fn remove(&mut self, i: usize, stream: u64, now: Nanos) -> Option<Req> {
        let s = &mut self.slots[i];
        let r = s.inflight.remove(&stream)?;
        if s.inflight.len() + 1 == self.streams {
            s.free_since = now;
        }
        Some(r)
    }

    /// Ends connection `i`: the requests it carried fail as its close
    /// says, and it is opened again (at once if it had served, after a
    /// back-off if it never opened).
    pub(super) fn end_connection(&mut self, i: usize, now: Nanos) {
        let Some(mut c) = self.slots[i].conn.take() else {
            return;
        };
        if c.closed.is_none() {
            // Gone away and empty: closed as HTTP/3 closes when done.
            let at = c.link.now(now);
            let code = quinn_proto::VarInt::from_u32(crate::h3::frame::H3_NO_ERROR as u32);
            c.link.conn.close(at, code, bytes::Bytes::new());
        }
        let _ = c.link.flush(now);
        self.poller.remove(c.link.fd());
        c.link.account(&mut self.report, c.connected);
        let failure = match &c.closed {
            Some(closed) => {
                self.count_close(closed, c.connected);
                closed.failure
            }
            // Gone away and empty: a clean end.
            None => Failure::Read,
        };
        let mut left: Vec<(u64, Req)> = self.slots[i].inflight.drain().collect();
        left.sort_unstable_by_key(|&(s, _)| s);
        for (_, r) in left {
            self.tally.failed(now, r, failure);
        }
        if c.connected {
            self.slots[i].backoff_until = now;
        } else {
            self.back_off(i, now);
        }
        let wanted = !self.draining || !self.retry.is_empty();
        if wanted && self.slots[i].backoff_until <= now {
            self.open(i, now);
        }
    }

    fn count_close(&mut self, closed: &crate::h3::conn::Closed, connected: bool) {
        if !connected {
            self.report.handshake_failures += 1;
            match closed.failure {
                Failure::Connect => self.sockets.connect_failed += 1,
                _ => self.sockets.tls_failed += 1,
            }
            self.tls_error.get_or_insert_with(|| closed.why.clone());
        }
        if closed.by_server {
            self.sockets.closed_by_server += 1;
            *self.report.closes.entry(closed.code.clone()).or_default() += 1;
        } else {
            *self.report.lost.entry(closed.code.clone()).or_default() += 1;
        }
        if closed.failure == Failure::Parse {
            self.report.protocol_errors += 1;
            self.report
                .protocol_error
                .get_or_insert_with(|| closed.why.clone());
        }
    }

    /// Closed loop: fills connection `i` up to `streams`, first with
    /// requests to send again, then (within the window) new ones.
    pub(super) fn refill(&mut self, i: usize, now: Nanos) {
        while self.slots[i].ready() && self.slots[i].inflight.len() < self.streams {
            let r = match self.retry.pop_front() {
                Some(r) => r.resent(now),
                None if self.may_plan(now) => {
                    let r = self.plan_new(now);
                    self.tally.first_send(now, now, now);
                    r
                }
                None => return,
            };
            if !self.send(i, r) {
                return;
            }
        }
    }

    /// Sends `r` on connection `i`; false (and `r` kept to go out again)
    /// when the server allows no stream now.
    fn send(&mut self, i: usize, r: Req) -> bool {
        let e = self.plan.pool.entry(r.entry);
        let wire = self.plan.pool.bytes();
        let Some(c) = self.slots[i].conn.as_mut() else {
            self.retry.push_front(r);
            return false;
        };
        let early = !c.connected;
        match c.start(&wire[e.start..e.body], &wire[e.body..e.end]) {
            Some(stream) => {
                if let Some(z) = self.report.zero_rtt.as_mut().filter(|_| early) {
                    z.early_requests += 1;
                }
                self.slots[i].inflight.insert(
                    stream,
                    Req {
                        stream: stream as u32,
                        ..r
                    },
                );
                true
            }
            None => {
                self.retry.push_front(r);
                false
            }
        }
    }

    fn may_plan(&self, now: Nanos) -> bool {
        now < self.end && self.budget != Some(0) && !self.stopped()
    }

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

    /// Closed loop: a new request comes into being now.
    fn plan_new(&mut self, now: Nanos) -> Req {
        let r = self.pick(Req::new(now, now));
        self.tally.plan(r);
        if self.tally.in_window(now) {
            if let Some(left) = self.budget.as_mut() {
                *left = left.saturating_sub(1);
                if *left == 0 {
                    self.end = now + 1;
                    self.tally.close_window(self.end);
                    self.iv_end = self.iv_end.min(self.end);
                }
            }
        }
        r
    }

    /// Constant rate: the next slot of the schedule, not yet sent.
    pub(super) fn take_slot(&mut self) -> Req {
        let due = self.pacer.as_ref().map_or(0, |p| p.due(self.next_i));
        self.next_i += 1;
        let r = self.pick(Req::new(due, 0));
        self.tally.plan(r);
        r
    }

    /// Sends what is due (constant rate; within the send-ahead window) on
    /// the connection with the most room, and in a closed loop fills every
    /// connection.
    pub(super) fn dispatch(&mut self, now: Nanos) {
        if self.pacer.is_none() {
            for i in 0..self.slots.len() {
                self.refill(i, now);
                if let Some(c) = self.slots[i].conn.as_mut() {
                    if let Err(e) = c.link.flush(now) {
                        self.io_failed(i, now, e);
                    }
                }
            }
            return;
        }
        self.next_due = None;
        let mut touched: Vec<usize> = Vec::new();
        // A due request that finds no stream makes every socket wake the
        // thread until one does (see `late`).
        let mut starved = false;
        loop {
            let retry = self.retry.front().map(|r| r.planned);
            let slot = self
                .pacer
                .as_ref()
                .map(|p| p.due(self.next_i))
                .filter(|&d| d < self.end && !self.stopped());
            let (planned, from_retry) = match (retry, slot) {
                (Some(r), Some(s)) if s < r => (s, false),
                (Some(r), _) => (r, true),
                (None, Some(s)) => (s, false),
                (None, None) => break,
            };
            if planned > now + self.plan.send_ahead {
                self.next_due = Some(planned);
                break;
            }
            // A batch stays on one connection while it has room: its
            // requests then share QUIC packets (and their encryption, ACKs
            // and system calls) as they do in a closed loop, where one
            // packet per request cost the constant rate twice the closed
            // loop's CPU per request. The next batch starts on the
            // roomiest connection, so the load stays spread.
            let stay = touched
                .last()
                .copied()
                .filter(|&i| self.slots[i].ready() && self.slots[i].inflight.len() < self.streams);
            let Some(i) = stay.or_else(|| self.roomiest_read(now)) else {
                starved = true;
                break;
            };
            let now = clock::now();
            let r = if from_retry {
                self.retry.pop_front().expect("peeked").resent(now)
            } else {
                let r = self.take_slot();
                self.tally
                    .first_send(now, r.planned, self.slots[i].free_since);
                r.resent(now)
            };
            if !self.send(i, r) {
                starved = true;
                break;
            }
            if !touched.contains(&i) {
                touched.push(i);
            }
        }
        self.late.starved = starved;
        for i in touched {
            if let Some(c) = self.slots[i].conn.as_mut() {
                if let Err(e) = c.link.flush(now) {
                    self.io_failed(i, now, e);
                }
            }
        }
    }

    /// The open connection with the fewest requests in flight, if any has
    /// room.
    pub(super) fn roomiest(&self) -> Option<usize> {
        (0..self.slots.len())
            .filter(|&i| self.slots[i].ready() && self.slots[i].inflight.len() < self.streams)
            .min_by_key(|&i| self.slots[i].inflight.len())
    }
}
