//! Plain HTTP/1.1's sends and receives batched through io_uring.
//!
//! With one `send` and one `recv` per request the loop already makes the
//! fewest data system calls a socket API allows; what is left is their
//! count per wake-up. The readiness model stays epoll's (edge-triggered,
//! one `epoll_pwait2` per turn); only the data calls go through a ring,
//! each as an `IORING_OP_RECV` or `IORING_OP_SEND` with `MSG_DONTWAIT`, so
//! that a socket that would block completes at once with `-EAGAIN` (today's
//! `WouldBlock`) instead of being parked in the kernel, and every entry has
//! completed when `io_uring_enter` returns. A turn of the closed loop is:
//!
//! 1. `epoll_pwait2`: k connections with an answer are readable;
//! 2. one `io_uring_enter` reads all k (one buffer each, [`RECV_BUF`]);
//!    each read then goes through the same parsing and the same
//!    continuation (a full buffer, or a peer's close, reads on with today's
//!    calls) as a `read` of its own would have;
//! 3. one `io_uring_enter` sends the k next requests.
//!
//! So per request 3/k system calls instead of 2 + 1/k: the larger the
//! batch, the more the data calls vanish. k is what the server hands back
//! per wake-up: against one nginx worker, 50 connections and one thread,
//! counted with perf, 2.34 calls per request before and 1.58 after (k
//! about 2; a generator slowed by strace sees k of 30 and more, and 0.10
//! calls per request). Where a batch would hold one entry it is made with
//! today's call, which is cheaper than an enter: the count never exceeds
//! the old loop's.
//!
//! Timing stays as exact as the old loop's:
//! - closed loop: an answer frees its connection, but the next request
//!   comes into being (and its latency starts) only when the batch closes,
//!   just before the submission that carries it, so time spent on the
//!   turn's other answers is never charged to it; the answers of a batched
//!   read are timed when the enter returns, when all of them had been read;
//! - constant rate: the requests a `dispatch` sends are stamped as sent
//!   (and their lateness taken) just before their submission, as HTTP/2's
//!   batches are (see `schedule::send_batch`), never when queued; until
//!   then nothing reads their connections. The connections a turn polls
//!   (reading late) are read in one enter of `IORING_OP_RECVMSG`s, each
//!   with its control buffer, so each answer keeps the kernel's receive
//!   stamp of its last segment; the floor a stamp must not be below stays
//!   the time the socket was last found drained (the batch's enter).
//!
//! At a constant rate a turn is one wake-up and, for its k due requests,
//! one enter that reads the free connections they will take (`is_clean`'s
//! read, see [`Worker::read_free`]), one for the sends and one for the
//! polled reads: per request 4/k system calls instead of 3 + 1/k (against
//! nginx at 20,000/s, 50 connections, counted with perf: 3.6 before, 1.4
//! after). At a low rate k is 1 and the count is the old loop's.
//!
//! A send shorter than its bytes keeps its place as `flush_writes` does
//! and waits for the writable edge; an error or a zero-byte send goes to
//! `write_failed`; an end of stream, a reset or `-EAGAIN` from a batched
//! read is what the same `read` would have returned. A connection replaced
//! between an entry's submission and its completion (another one's answer
//! cannot do that in the closed loop, but a failed write's requeue could)
//! has its result dropped with the old socket, as a read that never
//! happened. TLS, HTTP/2 and tunnels keep today's calls. Where io_uring
//! cannot be set up (an old kernel, a seccomp filter, `io_uring_disabled`)
//! or `IoMode::Epoll` asks, the loop is exactly the old one.

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::Ordering;

use crate::clock::{self, Nanos};
use crate::config::IoMode;
use crate::poller::Ready;

use super::conn::{next_run, wrote, State};
use super::ring::{Ring, RECV_BUF, SLOTS};
use super::tls::Transport;
use super::{ThreadPlan, ThreadReport, Worker};

/// Rounds of submissions one batch may take (failed writes that free
/// requests to go out again, the rest of a send that was not one run):
/// what is still queued after them goes out with today's calls.
const ROUNDS: usize = 4;

/// A read already made through the ring, handed to `read_after`.
pub(super) struct First<'a> {
    /// The completion's result: bytes read, or a negated errno.
    pub result: i32,
    buf: &'a [u8],
    /// The room the read was given: a full read may not have drained.
    pub room: usize,
    /// When the enter that carried it returned.
    pub at: Nanos,
    /// The kernel's receive stamp, where the read asked for one.
    pub stamp: Option<u64>,
}

impl First<'_> {
    pub fn data(&self, n: usize) -> &[u8] {
        &self.buf[..n]
    }
}

/// The thread's batch: its ring (`None`: today's calls), whether a batch
/// is open, and what waits for its close.
#[derive(Default)]
pub(crate) struct Batch {
    ring: Option<Ring>,
    pub open: bool,
    /// Connections with bytes to send, in the order they were queued.
    sends: Vec<usize>,
    /// Closed loop: connections an answer freed, refilled at the close.
    refills: Vec<usize>,
    /// Constant rate: requests queued unstamped (their connection; for a
    /// first send, since when a connection had room for it).
    pub unstamped: Vec<(usize, Option<Nanos>)>,
    /// Reading late: the connections a turn polls (kept for its allocation).
    pub polls: Vec<usize>,
    /// Counts dispatches (from 1): a connection found clean by a batched
    /// read is clean for the dispatch that read it only.
    pub dispatch_id: u64,
}

impl Batch {
    /// Plain HTTP/1.1 only, on the thread that will use it.
    pub fn for_plan(plan: &ThreadPlan) -> Batch {
        let plain = plan.tls.is_none() && plan.tunnel.is_none() && !plan.h2;
        Batch {
            ring: (plan.io == IoMode::Auto && plain).then(Ring::new).flatten(),
            ..Batch::default()
        }
    }

    /// Whether this thread's data calls go through io_uring.
    pub fn active(&self) -> bool {
        self.ring.is_some()
    }
}

/// A send of the batch: connection, socket, its run's bytes and entries,
/// and the first entry (to tell a replaced queue).
struct Sent {
    conn: usize,
    fd: RawFd,
    from: usize,
    to: usize,
    k: usize,
    first: u32,
}

impl Worker {
    /// Opens a batch: sends wait for its close. True when this call
    /// opened it (the caller then closes it).
    pub(super) fn batch_open(&mut self) -> bool {
        if self.io.ring.is_none() || self.io.open {
            return false;
        }
        self.io.open = true;
        true
    }

    /// Closes a batch this caller opened: everything queued goes out.
    pub(super) fn batch_close(&mut self, opened: bool) {
        if opened {
            self.flush_batch();
            self.io.open = false;
        }
    }

    /// Constant rate: closes the batch of a `dispatch`. A write that failed
    /// sent its requests back to be sent again: they are due now, so
    /// dispatching goes on while a submission sent anything.
    pub(super) fn dispatch_close(&mut self, opened: bool) {
        if !opened {
            return;
        }
        for round in 0..ROUNDS {
            let sent = self.flush_batch();
            if sent == 0 || self.retry.is_empty() || round + 1 == ROUNDS {
                break;
            }
            self.dispatch_due();
        }
        self.io.open = false;
    }

    /// `flush_writes`' hook: connection `i`'s bytes join the open batch.
    pub(super) fn queue_send(&mut self, i: usize) -> bool {
        if !self.io.open || self.io.ring.is_none() {
            return false;
        }
        let c = &mut self.conns[i];
        if c.state != State::Open || !matches!(c.stream, Some(Transport::Plain(_))) {
            return false;
        }
        if !c.send_queued {
            c.send_queued = true;
            self.io.sends.push(i);
        }
        true
    }

    /// Closed loop: connection `i`'s next requests come into being when the
    /// batch closes, just before the submission that carries them.
    pub(super) fn defer_refill(&mut self, i: usize) -> bool {
        if !self.io.open || self.io.ring.is_none() {
            return false;
        }
        let c = &mut self.conns[i];
        if !c.refill_queued {
            c.refill_queued = true;
            self.io.refills.push(i);
        }
        true
    }

    /// Submits what the batch holds, in rounds (see [`ROUNDS`]); returns
    /// how many sends went out through the ring.
    fn flush_batch(&mut self) -> usize {
        let mut total = 0;
        for _ in 0..ROUNDS {
            self.refill_queued();
            if self.io.sends.is_empty() && self.io.unstamped.is_empty() {
                return total;
            }
            total += self.submit_sends();
        }
        // Still queued after every round: today's calls.
        self.io.open = false;
        self.refill_queued();
        self.stamp(clock::now());
        for i in std::mem::take(&mut self.io.sends) {
            self.conns[i].send_queued = false;
            self.flush_writes(i);
        }
        self.io.open = true;
        total
    }

    fn refill_queued(&mut self) {
        if self.io.refills.is_empty() {
            return;
        }
        let refills = std::mem::take(&mut self.io.refills);
        let now = clock::now();
        for &i in &refills {
            let c = &mut self.conns[i];
            if std::mem::take(&mut c.refill_queued) && c.state == State::Open {
                self.refill(i, now);
            }
        }
    }

    /// Closed loop: connection `i` is read on after answers that freed it
    /// (the peer closed, or the buffer was full). Its refill comes first,
    /// as in the loop without a batch: the requests it is given before the
    /// end of its stream is read are those that stream strands (and sends
    /// again once), whichever way the bytes move.
    pub(super) fn refill_before_reading_on(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if std::mem::take(&mut c.refill_queued) && c.state == State::Open {
            self.refill(i, clock::now());
        }
    }

    /// Constant rate: the requests queued since the last submission are
    /// sent now (see the module doc).
    fn stamp(&mut self, now: Nanos) {
        let Worker {
            conns, tally, io, ..
        } = self;
        for (i, fresh) in io.unstamped.drain(..) {
            if let Some(r) = conns[i].inflight.iter_mut().find(|r| r.sent == 0) {
                r.sent = now;
                if let Some(free_since) = fresh {
                    tally.first_send(now, r.planned, free_since);
                }
            }
        }
    }

    /// One round: every queued send in one enter (one alone: a `send`).
    fn submit_sends(&mut self) -> usize {
        let sends = std::mem::take(&mut self.io.sends);
        self.stamp(clock::now());
        let pool = self.plan.clone();
        let pool = &pool.pool;
        let span = |e: u32| {
            let e = pool.entry(e);
            e.start..e.end
        };
        let mut batch = Vec::with_capacity(sends.len());
        for &i in &sends {
            let c = &mut self.conns[i];
            c.send_queued = false;
            let Some(Transport::Plain(s)) = c.stream.as_ref().filter(|_| c.state == State::Open)
            else {
                continue;
            };
            if let Some((from, to, k)) = next_run(&c.out, c.write_pos, span) {
                let (fd, first) = (s.as_raw_fd(), c.out[0]);
                batch.push(Sent {
                    conn: i,
                    fd,
                    from,
                    to,
                    k,
                    first,
                });
            }
        }
        if batch.len() == 1 {
            // One send: the plain call is cheaper than an enter.
            self.flush_writes_now(batch[0].conn);
            return 1;
        }
        let wire = pool.bytes();
        for chunk in batch.chunks(SLOTS) {
            let items: Vec<(RawFd, &[u8])> =
                chunk.iter().map(|s| (s.fd, &wire[s.from..s.to])).collect();
            let Some(ring) = self.io.ring.as_mut() else {
                return 0;
            };
            if let Err(e) = ring.send(&items) {
                self.ring_failed(e);
                return 0;
            }
            let results = std::mem::take(&mut ring.results);
            for (s, &res) in chunk.iter().zip(&results) {
                self.sent(s, res, span);
            }
            if let Some(ring) = self.io.ring.as_mut() {
                ring.results = results;
            }
        }
        batch.len()
    }

    /// A send's completion, taken as `flush_writes` takes a `write`'s.
    fn sent(&mut self, s: &Sent, res: i32, span: impl Fn(u32) -> std::ops::Range<usize>) {
        let c = &mut self.conns[s.conn];
        let same = c.state == State::Open
            && c.out.front() == Some(&s.first)
            && matches!(&c.stream, Some(Transport::Plain(t)) if t.as_raw_fd() == s.fd);
        if !same {
            return;
        }
        match res {
            w if w > 0 => {
                let w = w as usize;
                wrote(&mut c.out, &mut c.write_pos, s.from + w, s.k, span);
                // All of the run went: the next run (entries not
                // consecutive in the pool) goes in the next round. A short
                // send waits for the writable edge.
                if w == s.to - s.from && !c.out.is_empty() {
                    self.queue_send(s.conn);
                }
            }
            e if e == -libc::EAGAIN => {}
            e if e == -libc::EINTR => {
                self.queue_send(s.conn);
            }
            e => self.write_failed(s.conn, &io::Error::from_raw_os_error(-e)),
        }
    }

    /// Closed loop: the readiness of connections with requests in flight.
    /// Those readable over plain TCP are read in one enter, then each is
    /// served as `on_event` would, its first read being the batch's.
    pub(super) fn serve_busy(&mut self, ready: &[Ready]) {
        for chunk in ready.chunks(SLOTS) {
            let picked: Vec<(usize, RawFd)> = if self.io.open {
                chunk
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| r.readable)
                    .filter_map(|(k, r)| self.plain_fd(r.token).map(|fd| (k, fd)))
                    .collect()
            } else {
                Vec::new()
            };
            if picked.len() < 2 {
                // One read alone: the plain call is cheaper than an enter.
                for r in chunk {
                    self.on_event(r.token, r.readable, r.closed, r.writable);
                }
                continue;
            }
            let Some((ring, at)) = self.recv_batch(&picked) else {
                return;
            };
            let bufs = std::mem::take(&mut ring.bufs);
            let results = std::mem::take(&mut ring.results);
            let mut p = 0;
            for (k, r) in chunk.iter().enumerate() {
                if p < picked.len() && picked[p].0 == k {
                    let first = First {
                        result: results[p],
                        buf: &bufs[p],
                        room: RECV_BUF,
                        at,
                        stamp: None,
                    };
                    self.serve_read(r, picked[p].1, first);
                    p += 1;
                } else {
                    self.on_event(r.token, r.readable, r.closed, r.writable);
                }
            }
            if let Some(ring) = self.io.ring.as_mut() {
                (ring.bufs, ring.results) = (bufs, results);
            }
        }
    }

    /// Reading late: the polled connections `due`, read in one enter with
    /// their receive stamps (one alone: a `recvmsg`).
    pub(super) fn read_polled(&mut self, due: &[usize]) {
        let fds: Vec<RawFd> = due.iter().filter_map(|&i| self.plain_fd(i)).collect();
        if fds.len() < 2 || fds.len() != due.len() {
            for &i in due {
                let any = self.read(i, false);
                self.polled_read(i, any);
            }
            return;
        }
        for (is, fds) in due.chunks(SLOTS).zip(fds.chunks(SLOTS)) {
            let Some(ring) = self.io.ring.as_mut() else {
                return;
            };
            let outcome = ring.recv_stamped(fds);
            let at = clock::now();
            if let Err(e) = outcome {
                self.ring_failed(e);
                return;
            }
            let bufs = std::mem::take(&mut ring.bufs);
            let results = std::mem::take(&mut ring.results);
            let stamps = std::mem::take(&mut ring.stamps);
            for (p, (&i, &fd)) in is.iter().zip(fds).enumerate() {
                if !self.same_socket(i, fd) {
                    continue;
                }
                let first = First {
                    result: results[p],
                    buf: &bufs[p],
                    room: RECV_BUF,
                    at,
                    stamp: stamps[p],
                };
                let any = self.read_after(i, false, Some(first));
                self.polled_read(i, any);
            }
            if let Some(ring) = self.io.ring.as_mut() {
                (ring.bufs, ring.results, ring.stamps) = (bufs, results, stamps);
            }
        }
    }

    /// Reading late: before a dispatch hands out two or more requests, the
    /// connections with nothing in flight that will take them (the front
    /// of the free queue) are read once, together, instead of one
    /// `is_clean` read each. What the read finds ends the connection as
    /// `is_clean` would; one found empty is clean for this dispatch only.
    /// A stray that arrives between this read and the send is still no
    /// answer: its receive stamp is earlier than the send.
    pub(super) fn read_free(&mut self) {
        self.io.dispatch_id += 1;
        if !self.deferred || self.io.ring.is_none() || !self.io.open {
            return;
        }
        let now = clock::now();
        let due = self.untaken(now + self.plan.send_ahead) as usize + self.retry.len();
        if due < 2 {
            return;
        }
        let depth = self.plan.pipeline;
        let conns = &self.conns;
        let picks = self.free.peek(due.min(SLOTS), |i, stamp| {
            let c = &conns[i];
            c.listed_at == Some(stamp) && c.has_room(depth)
        });
        let picked: Vec<(usize, RawFd)> = picks
            .into_iter()
            .filter(|&i| self.conns[i].inflight.is_empty())
            .filter_map(|i| match &self.conns[i].stream {
                Some(Transport::Plain(s)) if self.conns[i].state == State::Open => {
                    Some((i, s.as_raw_fd()))
                }
                _ => None,
            })
            .collect();
        if picked.len() < 2 {
            return;
        }
        let Some((ring, at)) = self.recv_batch(&picked) else {
            return;
        };
        let results = std::mem::take(&mut ring.results);
        let response: Vec<bool> = ring.bufs[..picked.len()]
            .iter()
            .map(|b| b.starts_with(b"HTTP/"))
            .collect();
        for (p, &(i, fd)) in picked.iter().enumerate() {
            if !self.same_socket(i, fd) {
                continue;
            }
            match results[p] {
                e if e == -libc::EAGAIN => {
                    let c = &mut self.conns[i];
                    c.clean_in = self.io.dispatch_id;
                    c.drained_at = at;
                }
                // Interrupted: `is_clean` reads it itself.
                e if e == -libc::EINTR => {}
                0 => self.on_eof(i),
                n if n > 0 => self.stray(i, response[p]),
                e => {
                    let e = io::Error::from_raw_os_error(-e);
                    self.lost_with(i, crate::stats::Failure::Read, &e);
                }
            }
        }
        if let Some(ring) = self.io.ring.as_mut() {
            ring.results = results;
        }
    }

    /// Whether connection `i` is still open on socket `fd`: a result read
    /// from a socket since replaced went with it.
    fn same_socket(&self, i: usize, fd: RawFd) -> bool {
        let c = &self.conns[i];
        c.state == State::Open
            && matches!(&c.stream, Some(Transport::Plain(s)) if s.as_raw_fd() == fd)
    }

    /// `on_event` for an open connection whose first read was batched: its
    /// answers first, then whatever of its requests a short write left.
    fn serve_read(&mut self, r: &Ready, fd: RawFd, first: First<'_>) {
        if !self.same_socket(r.token, fd) {
            // Replaced since the read: its bytes went with the old socket.
            return;
        }
        self.read_after(r.token, r.closed, Some(first));
        let c = &self.conns[r.token];
        if r.writable && c.state == State::Open && !c.out.is_empty() {
            self.flush_writes(r.token);
        }
    }

    /// The socket of connection `i` if it is open over plain TCP (or a unix
    /// socket) with a request in flight.
    fn plain_fd(&self, i: usize) -> Option<RawFd> {
        let c = self.conns.get(i)?;
        match &c.stream {
            Some(Transport::Plain(s)) if c.busy() => Some(s.as_raw_fd()),
            _ => None,
        }
    }

    /// Reads the `picked` connections in one enter: the ring holding what
    /// each read, and the time the enter returned (when all had been
    /// read); `None` when the ring failed (the run is then void).
    fn recv_batch(&mut self, picked: &[(usize, RawFd)]) -> Option<(&mut Ring, Nanos)> {
        let fds: Vec<RawFd> = picked.iter().map(|&(_, fd)| fd).collect();
        let outcome = self.io.ring.as_mut()?.recv(&fds);
        let at = clock::now();
        if let Err(e) = outcome {
            self.ring_failed(e);
            return None;
        }
        Some((self.io.ring.as_mut()?, at))
    }

    /// The ring failed where it cannot: bytes it read may be lost, so the
    /// run is void, as when the poller fails.
    fn ring_failed(&mut self, e: io::Error) {
        self.io.ring = None;
        self.halt.store(true, Ordering::Relaxed);
        let _ = self
            .tx
            .send(ThreadReport::Failed(format!("io_uring failed: {e}")));
    }
}

#[cfg(test)]
mod tests {
    use crate::worker::conn::{next_run, wrote};
    use std::collections::VecDeque;

    /// Entry e's bytes: 10 each, back to back.
    fn span(e: u32) -> std::ops::Range<usize> {
        let s = e as usize * 10;
        s..s + 10
    }

    #[test]
    fn a_run_is_the_consecutive_entries_less_what_went() {
        let mut out: VecDeque<u32> = [3, 4, 5, 0, 1].into();
        assert_eq!(next_run(&out, 0, span), Some((30, 60, 3)));
        // A short send ends inside entry 4: 3 is done, 4 keeps its place.
        let mut pos = 0;
        wrote(&mut out, &mut pos, 30 + 14, 3, span);
        assert_eq!(out, VecDeque::from([4, 5, 0, 1]));
        assert_eq!(pos, 4);
        assert_eq!(next_run(&out, pos, span), Some((44, 60, 2)));
        // The rest of the run: the pool wrapped, so 0 and 1 are the next.
        wrote(&mut out, &mut pos, 60, 2, span);
        assert_eq!((out.clone(), pos), (VecDeque::from([0, 1]), 0));
        assert_eq!(next_run(&out, pos, span), Some((0, 20, 2)));
        // An exact end of an entry leaves no position behind.
        wrote(&mut out, &mut pos, 10, 2, span);
        assert_eq!((out.clone(), pos), (VecDeque::from([1]), 0));
        wrote(&mut out, &mut pos, 20, 1, span);
        assert!(out.is_empty());
        assert_eq!(next_run(&out, pos, span), None);
    }
}
