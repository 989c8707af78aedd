//! Connections and their bytes: opening, writing, reading and parsing
//! (when answers are read is `late`'s).

use std::io;
use std::os::fd::AsRawFd;

use crate::clock::{self, Nanos};
use crate::histogram::record_ns;
use crate::response::Step;
use crate::stats::Failure;

use super::conn::{next_run, wrote, Parsed, State};
use super::stream::Stream;
use super::tls::{Handshake, Transport};
use super::uring::First;
use super::{Worker, BACKOFF_MAX, BACKOFF_MIN, LOW_WATER, READ_BUF};

impl Worker {
    pub(super) fn connect(&mut self, i: usize, now: Nanos) {
        match Stream::connect(&self.plan.addr) {
            Ok(s) => {
                if let Err(e) = self.poller.add(s.as_raw_fd(), i) {
                    let why = self.connect_failure(&e);
                    self.open_failed(i, now, why);
                    return;
                }
                let transport = match &self.plan.tls {
                    None => Transport::Plain(s),
                    Some(client) => match client.session() {
                        Ok(session) => Transport::tls(s, session),
                        Err(_) => {
                            self.poller.remove(s.as_raw_fd());
                            self.open_failed(i, now, Failure::Tls);
                            return;
                        }
                    },
                };
                if self.stamped()
                    && !self.plan.unstamped_kernel
                    && transport.stamp_arrivals().is_err()
                {
                    self.stamps_missing();
                }
                let c = &mut self.conns[i];
                if self.deferred {
                    // Without the low-water mark every answer wakes the
                    // thread, as in the closed loop. An HTTP/2 connection
                    // is ready only once the server's settings are read:
                    // its mark rises with its first stream.
                    // Through a tunnel the mark waits for the proxy's
                    // short answer (see `tunnel`).
                    if !self.plan.h2
                        && self.plan.tunnel.is_none()
                        && transport.set_low_water(LOW_WATER).is_ok()
                    {
                        c.lowat = LOW_WATER;
                    }
                }
                c.stream = Some(transport);
                c.drained_at = now;
                c.state = State::Connecting { since: now };
            }
            Err(e) => {
                let why = self.connect_failure(&e);
                self.open_failed(i, now, why)
            }
        }
    }

    /// What a failed connect ends its requests as: one that never left
    /// this machine (see `local_connects`) is the generator's, counted
    /// apart and named as such.
    fn connect_failure(&mut self, e: &io::Error) -> Failure {
        if crate::local_connects::is_local(e) {
            self.sockets.connect_local += 1;
            Failure::Local
        } else {
            Failure::Connect
        }
    }

    /// Connection `i` could not be opened: refused or timed out (`Connect`),
    /// or its TLS handshake failed (`Tls`).
    pub(super) fn open_failed(&mut self, i: usize, now: Nanos, why: Failure) {
        match why {
            Failure::Tls => self.sockets.tls_failed += 1,
            _ => self.sockets.connect_failed += 1,
        }
        self.failing_connects += 1;
        self.open_failure = why;
        // A connection of its own carried its request (keep-alive off).
        while let Some(r) = self.conns[i].inflight.pop_front() {
            self.tally.failed(now, r, why);
        }
        if self.plan.keepalive && self.pacer.is_none() {
            // In closed loop the connection was opened to carry the next
            // `pipeline` requests: they end here.
            for _ in 0..self.plan.pipeline {
                if !self.may_plan(now) {
                    break;
                }
                let r = self.plan_new(now);
                self.tally.failed(now, r, why);
            }
        }
        let c = &mut self.conns[i];
        c.out.clear();
        c.write_pos = 0;
        if let Some(s) = c.stream.take() {
            self.poller.remove(s.sock().as_raw_fd());
        }
        // Back off so a refusing server does not turn the generator into a
        // busy loop of failed connects.
        let backoff = (BACKOFF_MIN << c.failures.min(6)).min(BACKOFF_MAX);
        c.failures += 1;
        c.state = State::Backoff {
            until: now + backoff,
        };
    }

    /// Drops the connection and opens a fresh one (keep-alive off: leaves
    /// the slot idle for the next request). The requests it carried must
    /// have been ended or moved to the retry queue by the caller.
    pub(super) fn reconnect(&mut self, i: usize, now: Nanos) {
        let c = &mut self.conns[i];
        if let Some(s) = c.stream.take() {
            self.poller.remove(s.sock().as_raw_fd());
        }
        c.reset(self.plan.no_body, self.plan.max_head);
        if self.plan.keepalive {
            self.connect(i, now);
        } else {
            self.idle(i, now);
        }
    }

    /// Keep-alive off: slot `i` has no connection. In closed loop it opens
    /// one at once for its next request; at constant rate it waits, free,
    /// for a request that falls due.
    pub(super) fn idle(&mut self, i: usize, now: Nanos) {
        self.conns[i].state = State::Idle;
        if self.pacer.is_some() {
            self.conns[i].free_since = now;
            self.free.list(i, &mut self.conns[i], self.plan.pipeline);
            self.dispatch();
            return;
        }
        // The request is sent as soon as the connection opens: its latency
        // counts from now, connect (and handshake) included, as ab counts.
        let req = match self.retry.pop_front() {
            Some(r) => r.resent(now),
            None if self.may_plan(now) => {
                let r = self.plan_new(now);
                self.tally.first_send(now, now, now);
                r
            }
            None => return,
        };
        self.conns[i].inflight.push_back(req);
        self.conns[i].out.push_back(req.entry);
        self.connect(i, now);
    }

    /// Keep-alive off: the answer is in, the client closes.
    fn hang_up(&mut self, i: usize, now: Nanos) {
        if let Some(s) = self.conns[i].stream.as_mut() {
            s.say_goodbye();
        }
        self.sockets.closed_by_client += 1;
        self.requeue_and_reconnect(i, now);
    }

    pub(super) fn on_event(&mut self, i: usize, readable: bool, closed: bool, writable: bool) {
        let Some(c) = self.conns.get_mut(i) else {
            return;
        };
        match c.state {
            State::Backoff { .. } | State::Idle => return,
            State::Connecting { since } => {
                let Some(s) = c.stream.as_ref() else { return };
                let s = s.sock();
                let failed = match s.take_error() {
                    Ok(Some(_)) | Err(_) => true,
                    Ok(None) => match s.connected() {
                        Ok(_) => false,
                        // Spurious wake-up (or a stale event of the socket
                        // this one replaced): still connecting.
                        Err(e) if e.kind() == io::ErrorKind::NotConnected => return,
                        Err(_) => true,
                    },
                };
                let now = clock::now();
                if failed {
                    self.open_failed(i, now, Failure::Connect);
                    return;
                }
                if self.plan.tunnel.is_some() {
                    // Its connect time ends once the tunnel is open; the
                    // proxy's answer comes with a readable edge of its own.
                    self.ask_tunnel(i, since);
                    return;
                }
                record_ns(&mut self.connect_time, now.saturating_sub(since));
                if self.plan.tls.is_some() {
                    self.conns[i].state = State::Handshaking { since: now };
                } else {
                    self.on_open(i);
                }
            }
            State::Tunnelling { since } => {
                if !self.read_tunnel(i, since) {
                    return;
                }
            }
            State::Handshaking { .. } | State::Open => {}
        }
        if let State::Handshaking { since } = self.conns[i].state {
            if !self.shake_hands(i, since) {
                return;
            }
        }
        if self.conns[i].state != State::Open {
            // Replaced while opening (a write failed at once).
            return;
        }
        let c = &self.conns[i];
        // Bytes a write left behind: requests queued over HTTP/1.1, frames
        // over HTTP/2, ciphertext TLS holds. The writable edge is the only
        // wake-up some of them get (a server that waits for a request's
        // last bytes sends nothing meanwhile).
        let unsent = !c.out.is_empty()
            || c.h2.as_ref().is_some_and(|s| s.out_pos < s.out.len())
            || c.stream.as_ref().is_some_and(Transport::pending_out);
        if writable && unsent {
            self.flush_writes(i);
        }
        if readable && self.conns[i].state == State::Open {
            self.read(i, closed);
        }
    }

    /// Moves connection `i`'s TLS handshake on; true once it is open.
    fn shake_hands(&mut self, i: usize, since: Nanos) -> bool {
        let Some(s) = self.conns[i].stream.as_mut() else {
            return false;
        };
        match s.handshake() {
            Handshake::Pending => false,
            Handshake::Done => {
                let now = clock::now();
                record_ns(&mut self.handshake_time, now.saturating_sub(since));
                self.sockets.tls_handshakes += 1;
                self.sockets.tls_resumed += u64::from(s.resumed());
                self.on_open(i);
                true
            }
            Handshake::Failed(why) => {
                self.tls_error.get_or_insert(why);
                self.open_failed(i, clock::now(), Failure::Tls);
                false
            }
        }
    }

    fn on_open(&mut self, i: usize) {
        let now = clock::now();
        self.sockets.opened += 1;
        self.failing_connects = 0;
        let c = &mut self.conns[i];
        c.state = State::Open;
        c.failures = 0;
        c.free_since = now;
        if let Some(s) = c.stream.as_ref() {
            let _ = s.sock().set_nodelay();
        }
        if self.plan.h2 {
            // It carries requests once the server's settings come.
            self.h2_open(i, now);
            return;
        }
        if !self.plan.keepalive {
            // It was opened for the request it carries.
            self.flush_writes(i);
            self.poll_later(i);
            return;
        }
        if self.pacer.is_some() {
            self.free.list(i, &mut self.conns[i], self.plan.pipeline);
            self.dispatch();
        } else if !self.defer_refill(i) {
            self.refill(i, now);
        }
    }

    /// Writes what connection `i` has queued. Requests of consecutive pool
    /// entries are contiguous bytes: a batch of them goes in one write.
    pub(super) fn flush_writes(&mut self, i: usize) {
        if self.plan.h2 {
            self.flush_frames(i);
            return;
        }
        if !self.queue_send(i) {
            self.flush_writes_now(i);
        }
    }

    /// `flush_writes` with today's calls, now.
    pub(super) fn flush_writes_now(&mut self, i: usize) {
        let pool = &self.plan.pool;
        let wire = pool.bytes();
        let c = &mut self.conns[i];
        if c.state != State::Open {
            // Written once it opens.
            return;
        }
        let Some(s) = c.stream.as_mut() else { return };
        let mut failed = None;
        if s.pending_out() {
            match s.flush_out() {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) => failed = Some(e),
            }
        }
        let span = |e: u32| {
            let e = pool.entry(e);
            e.start..e.end
        };
        while let Some((from, to, k)) = next_run(&c.out, c.write_pos, span) {
            if failed.is_some() {
                break;
            }
            match s.write(&wire[from..to]) {
                Ok(0) => {
                    failed = Some(io::ErrorKind::WriteZero.into());
                    break;
                }
                Ok(w) => {
                    wrote(&mut c.out, &mut c.write_pos, from + w, k, span);
                    if w < to - from {
                        // Socket buffer full: the writable edge resumes us.
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        if let Some(e) = failed {
            self.write_failed(i, &e);
        }
    }

    /// A write failed. A server that answers with `Connection: close` and
    /// closes while requests are still queued unread makes the kernel reset
    /// the connection, so the answer that said "close" may still be waiting
    /// to be read: read what arrived first, so that requests queued behind
    /// the close are sent again rather than failed. Only what is then still
    /// unanswered failed with the write.
    pub(super) fn write_failed(&mut self, i: usize, e: &io::Error) {
        // The read buffer may be lent out: this runs inside another
        // connection's read. A rare path: a buffer of its own.
        let mut buf = vec![0u8; READ_BUF];
        while let Some(s) = self.conns[i].stream.as_mut() {
            match s.read(&mut buf) {
                Ok(n) if n > 0 => {
                    let now = clock::now();
                    self.tally.bytes(now, n);
                    if !self.process(i, &buf[..n], now) {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                _ => break,
            }
        }
        self.lost_with(i, Failure::Write, e);
    }

    /// Reads until the socket is drained. A short read means drained
    /// (edge-triggered: new data raises a new edge), unless the peer has
    /// closed, whose end-of-stream would otherwise never be seen. True when
    /// anything happened: bytes, the end of the stream, or an error.
    pub(super) fn read(&mut self, i: usize, closed: bool) -> bool {
        self.read_after(i, closed, None)
    }

    /// Like [`Self::read`], after a first read already made through the
    /// io_uring batch (see `uring`): its result is taken as the loop's
    /// first, and the loop goes on only where that one would have.
    pub(super) fn read_after(&mut self, i: usize, closed: bool, first: Option<First<'_>>) -> bool {
        // A read can run inside another's: an answer dispatches what is
        // due, and over HTTP/2 a connection read late is read before it
        // takes a second stream. The inner one reads into the spare buffer
        // (made on first use; never deeper, since dispatching does not
        // nest).
        let nested = self.buf.is_empty();
        let mut buf = if nested {
            let spare = std::mem::take(&mut self.spare_buf);
            if spare.is_empty() {
                vec![0u8; READ_BUF].into_boxed_slice()
            } else {
                spare
            }
        } else {
            std::mem::take(&mut self.buf)
        };
        let stamped = self.stamped();
        self.conns[i].read_turn = self.turn;
        let mut any = false;
        let mut more = true;
        // The socket was last found drained by the batch's read, unless the
        // loop below reads on.
        let mut drained_at = None;
        if let Some(f) = first {
            drained_at = Some(f.at);
            (any, more) = self.take_first(i, closed, f);
        }
        while let Some(s) = self.conns[i].stream.as_mut().filter(|_| more) {
            let got = if stamped {
                s.read_stamped(&mut buf[..])
            } else {
                s.read(&mut buf[..]).map(|n| (n, None))
            };
            let drains = s.short_read_drains();
            match got {
                Ok((0, _)) => {
                    any = true;
                    self.on_eof(i);
                    break;
                }
                Ok((n, stamp)) => {
                    any = true;
                    let now = self.arrival(i, stamp);
                    self.tally.bytes(now, n);
                    if !self.process(i, &buf[..n], now) {
                        break;
                    }
                    if n < buf.len() && !closed && drains {
                        break;
                    }
                    self.refill_before_reading_on(i);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    any = true;
                    self.lost_with(i, Failure::Read, &e);
                    break;
                }
            }
        }
        if let Some(c) = self.conns.get_mut(i) {
            c.drained_at = drained_at.filter(|_| !more).unwrap_or_else(clock::now);
        }
        if nested {
            self.spare_buf = buf;
        } else {
            self.buf = buf;
        }
        any
    }

    /// The first read of `read_after`, made through the batch: (whether
    /// anything happened, whether the read loop goes on), as that loop would
    /// have taken the same result.
    fn take_first(&mut self, i: usize, closed: bool, f: First<'_>) -> (bool, bool) {
        match f.result {
            0 => {
                self.on_eof(i);
                (true, false)
            }
            n if n > 0 => {
                let n = n as usize;
                let now = self.arrival_at(i, f.stamp, f.at);
                self.tally.bytes(now, n);
                let go_on = self.process(i, f.data(n), now);
                let more = go_on && (n == f.room || closed);
                if more {
                    self.refill_before_reading_on(i);
                }
                (true, more)
            }
            e if e == -libc::EAGAIN => (false, false),
            e if e == -libc::EINTR => (false, true),
            e => {
                self.lost_with(i, Failure::Read, &io::Error::from_raw_os_error(-e));
                (true, false)
            }
        }
    }

    /// Parses what arrived at `now`; returns false when the connection was
    /// replaced.
    fn process(&mut self, i: usize, data: &[u8], now: Nanos) -> bool {
        if self.plan.h2 {
            return self.process_frames(i, data, now);
        }
        let c = &self.conns[i];
        // Nothing was asked, or the bytes came before the request they
        // would answer went out: no request may be credited with them.
        let premature = c.inflight.front().is_some_and(|r| now < r.sent);
        if c.inflight.is_empty() || premature {
            self.stray(i, data.starts_with(b"HTTP/"));
            return false;
        }
        let pipeline = self.plan.pipeline;
        let was_full = c.inflight.len() >= pipeline;
        let hold = self.plan.timeout;
        let Worker { conns, tally, .. } = self;
        let mut completed = 0;
        // A whole response that no request in flight can own.
        let mut unowned = false;
        let parsed = conns[i].parse(data, |c, status, body| {
            if unowned {
                return;
            }
            match c.inflight.pop_front() {
                Some(r) if now >= r.sent => {
                    if tally.answered(now, r, status, body) {
                        c.credit(now, r, hold, !tally.expects(status));
                    }
                    completed += 1;
                }
                Some(r) => {
                    c.inflight.push_front(r);
                    unowned = true;
                }
                None => unowned = true,
            }
        });
        if unowned {
            self.stray(i, true);
            return false;
        }
        match parsed {
            Parsed::Fault => {
                self.fail(i, Failure::Parse);
                return false;
            }
            _ if !self.plan.keepalive => {
                if completed > 0 || matches!(parsed, Parsed::Close) {
                    self.hang_up(i, now);
                    return false;
                }
                return true;
            }
            Parsed::Close => {
                self.sockets.closed_by_server += 1;
                self.requeue_and_reconnect(i, now);
                return false;
            }
            Parsed::Responses => {}
        }
        let c = &self.conns[i];
        if c.inflight.is_empty() && (!c.parser.is_idle() || !c.pending.is_empty()) {
            // Bytes beyond the last answer asked for (a body longer than its
            // length said, say): the start of nothing anyone asked.
            self.stray(i, false);
            return false;
        }
        if completed > 0 {
            if self.pacer.is_some() {
                if was_full {
                    self.conns[i].free_since = now;
                }
                self.free.list(i, &mut self.conns[i], self.plan.pipeline);
                self.dispatch();
            } else if !self.defer_refill(i) {
                self.refill(i, now);
            }
        }
        true
    }

    pub(super) fn on_eof(&mut self, i: usize) {
        let now = clock::now();
        self.sockets.closed_by_server += 1;
        if self.plan.h2 {
            self.h2_closed(i, now);
            return;
        }
        let c = &mut self.conns[i];
        match c.parser.on_eof(c.pending.len()) {
            Ok(Some(Step::Done { status, body, .. })) => {
                // A body that ran until the close: that was its end.
                match c.inflight.pop_front() {
                    Some(r) => {
                        self.tally.answered(now, r, status, body);
                    }
                    None => {
                        self.sockets.unsolicited_responses += 1;
                        self.take_back(i);
                    }
                }
                self.requeue_and_reconnect(i, now);
            }
            // Closed between responses: what was awaited got not one byte.
            Ok(_) => self.fail(i, Failure::Read),
            Err(_) => self.fail(i, Failure::Parse),
        }
    }

    /// Whether connection `i` may be given a request: one with nothing in
    /// flight is read once first, so that a close, a reset or stray bytes
    /// that came while it was idle end the connection, not the request.
    pub(super) fn is_clean(&mut self, i: usize) -> bool {
        let c = &mut self.conns[i];
        // HTTP/2 frames on an idle connection (PING, SETTINGS, GOAWAY) are
        // the protocol's own, read as they come.
        if c.state != State::Open || !c.inflight.is_empty() || c.h2.is_some() {
            return true;
        }
        let clean_in = std::mem::take(&mut c.clean_in);
        if clean_in != 0 && clean_in == self.io.dispatch_id {
            // Read in this dispatch's batch, and found empty (see `uring`).
            return true;
        }
        let Some(s) = c.stream.as_mut() else {
            return true;
        };
        let mut probe = [0u8; 256];
        loop {
            match s.read(&mut probe) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    c.drained_at = clock::now();
                    return true;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Ok(0) => {
                    self.on_eof(i);
                    return false;
                }
                Ok(n) => {
                    let response = probe[..n].starts_with(b"HTTP/");
                    self.stray(i, response);
                    return false;
                }
                Err(e) => {
                    self.lost_with(i, Failure::Read, &e);
                    return false;
                }
            }
        }
    }
}
