//! One HTTP/3 load thread: its own event loop over its share of the QUIC
//! connections, with the TCP threads' schedule, ledger and books.
//!
//! A separate loop, so that the TCP threads' hot path is untouched: what
//! it shares with them is what makes the figures comparable, the pacer
//! (constant rate or profile; latency from the planned time), the ledger
//! (every planned request ends in exactly one outcome), the histograms and
//! the per-second series. What differs is QUIC's:
//!
//! - each connection is a connected UDP socket registered in the poller,
//!   quinn's state machine fed each datagram at its arrival (read at once,
//!   or late: see below) and polled for the datagrams to send, and woken
//!   at quinn's own deadline (loss detection, acknowledgement delay, idle
//!   timeout) as at the schedule's;
//! - a connection takes requests once its handshake is done, timed apart
//!   (`handshake_time`), up to `--streams` at once, each on a request
//!   stream of its own, answered in any order;
//! - an answer is timed when its stream ends (the last DATA and the FIN
//!   handed over): at the arrival of the datagram that ended it, at a
//!   constant rate from its planned time;
//! - a stream the server resets fails its request (`read`), a connection
//!   the server closes fails the requests it carried (`read`), by error
//!   code in the [`crate::H3Report`]; a GOAWAY's unprocessed requests go
//!   out again on another connection; a request past its timeout is
//!   cancelled alone (`H3_REQUEST_CANCELLED`), its connection goes on;
//! - a handshake that fails is `tls`, one that gets no answer at all
//!   within the timeout `connect`, and the connection is opened again
//!   after a back-off, as over TCP.
//!
//! # Reading late
//!
//! As the TCP threads do (see `worker`'s "Reading late"), at a constant
//! rate datagrams do not wake the thread. Each socket asks the kernel to
//! stamp each datagram with its arrival (`SO_TIMESTAMPNS`; a GRO train has
//! one stamp for its segments, which came in one burst). A socket read
//! late is registered for errors only, so the thread sleeps until its next
//! send is due (or quinn's deadline), then reads every such socket with
//! requests in flight, handing quinn one datagram at a time at its
//! arrival and taking the connection's events before the next: an answer
//! is timed at the stamp of the datagram that completed it, quinn's RTT
//! samples are taken from the arrival, and the ACK delay it sends counts
//! from it (the server takes the wait out of its RTT). What is due is
//! then dispatched, and each connection's ACKs leave with its requests.
//! The wait in the socket (read time less stamp, per datagram) and the
//! wake-ups are reported apart (`H3Report::reading`, the `Client reads`
//! line), beside the ACK delay.
//!
//! This can change no figure, because whatever cannot be timed by a
//! stamp, or could be held back by an unread socket, still wakes the
//! thread, or is read within a bound (see `late`):
//! - a socket read late with requests in flight is read at least every
//!   `READ_LATE_MAX` (1 ms, a 25th of the `max_ack_delay` quinn announces):
//!   the server's ACKs, and its flow-control credit, are never held back
//!   long enough to slow it;
//! - sockets wake the thread at once in the closed loop (each answer frees
//!   the next request), when the thread's sends are more than
//!   `READ_LATE_MAX` apart (reading late would cost more wake-ups than the
//!   datagrams'), during the drain, whenever a due request finds no stream
//!   (every connection full, or the server's stream credit used up: the
//!   next answer frees one), during a handshake, on a socket the kernel
//!   gives no stamp, and on a connection idle for `IDLE_LATE_MAX` (a
//!   close, a GOAWAY or an ACK then wakes the thread);
//! - a socket error wakes the thread always; a connection read late and
//!   not read within `READ_LATE_MAX` is read before it takes a request.

mod books;
mod late;
mod streams;

use fairbench_sys::containment::throttle::QuotaWatch;
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;

use hdrhistogram::Histogram;

use super::conn::{Event, H3Conn};
use super::quic::QuicSetup;
use crate::clock::{self, Nanos, NANOS_PER_SEC};
use crate::histogram::new_histogram;
use crate::ledger::{Req, Tally};
use crate::outcome::Sockets;
use crate::poller::{Poller, Ready};
use crate::profile::AnyPacer;
use crate::worker::{ThreadPlan, ThreadReport, Usage};
use crate::H3Report;

/// One connection's place in the thread.
struct Slot {
    conn: Option<H3Conn>,
    /// Requests on its streams, by stream index.
    inflight: HashMap<u64, Req>,
    /// Since when it has had room for a request (constant rate).
    free_since: Nanos,
    /// Reopened no earlier than this after a failure.
    backoff_until: Nanos,
    /// Opens that failed in a row.
    failures: u32,
    /// The server sent GOAWAY: no new streams; closed once empty.
    going_away: bool,
}

impl Slot {
    fn new() -> Slot {
        Slot {
            conn: None,
            inflight: HashMap::new(),
            free_since: 0,
            backoff_until: 0,
            failures: 0,
            going_away: false,
        }
    }

    /// Takes requests: its handshake is done, or it resumed with 0-RTT.
    fn ready(&self) -> bool {
        !self.going_away && self.conn.as_ref().is_some_and(|c| c.connected || c.early())
    }
}

pub(crate) struct H3Worker {
    index: usize,
    plan: Arc<ThreadPlan>,
    setup: QuicSetup,
    peer: SocketAddr,
    streams: usize,
    stop: Arc<AtomicBool>,
    halt: Arc<AtomicBool>,
    tx: Sender<ThreadReport>,
    poller: Poller,
    slots: Vec<Slot>,
    tally: Tally,
    pacer: Option<AnyPacer>,
    next_i: u64,
    next_entry: u64,
    /// Requests to send again (a GOAWAY left them unprocessed, or no
    /// stream could be opened for them), oldest first.
    retry: VecDeque<Req>,
    next_due: Option<Nanos>,
    end: Nanos,
    budget: Option<u64>,
    draining: bool,
    iv_second: i64,
    iv_from: Nanos,
    iv_end: Nanos,
    next_scan: Nanos,
    scan_every: Nanos,
    /// This thread's control groups (see `worker::Usage`).
    quota: QuotaWatch,
    window_from: Option<Usage>,
    window_to: Option<Usage>,
    never_sent: u64,
    handshake_time: Histogram<u64>,
    sockets: Sockets,
    report: H3Report,
    tls_error: Option<String>,
    events: Vec<Event>,
    ready: Vec<Ready>,
    /// Which sockets are read late (see the module doc).
    late: late::Late,
}

impl H3Worker {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        index: usize,
        connections: usize,
        budget: Option<u64>,
        plan: Arc<ThreadPlan>,
        setup: QuicSetup,
        peer: SocketAddr,
        streams: usize,
        stop: Arc<AtomicBool>,
        halt: Arc<AtomicBool>,
        tx: Sender<ThreadReport>,
    ) -> std::io::Result<H3Worker> {
        let poller = Poller::new(1024, false)?;
        let pacer = crate::worker::pacer(&plan, index);
        let end = plan.window_end(budget);
        let warm = plan.measure_start - plan.start;
        let iv_second = -(warm.div_ceil(NANOS_PER_SEC) as i64);
        let iv_end = crate::worker::interval_end(&plan, iv_second, end);
        let tally = crate::worker::tally(&plan, end);
        Ok(H3Worker {
            index,
            setup,
            peer,
            streams,
            stop,
            halt,
            tx,
            poller,
            slots: (0..connections).map(|_| Slot::new()).collect(),
            tally,
            pacer,
            next_i: 0,
            next_entry: (index * plan.pool.len() / plan.threads.max(1)) as u64,
            retry: VecDeque::new(),
            next_due: None,
            end,
            budget,
            draining: false,
            iv_second,
            iv_from: plan.start,
            iv_end,
            next_scan: 0,
            scan_every: crate::worker::scan_every(plan.timeout),
            quota: QuotaWatch::default(),
            window_from: None,
            window_to: None,
            never_sent: 0,
            handshake_time: new_histogram(),
            sockets: Sockets::default(),
            report: H3Report {
                streams,
                ack_delay_ms: super::quic::ACK_DELAY_MS,
                ..Default::default()
            },
            tls_error: None,
            events: Vec::new(),
            ready: Vec::with_capacity(1024),
            late: late::Late::default(),
            plan,
        })
    }

    /// Runs the thread; a panic inside becomes a report.
    pub fn run(self) {
        let tx = self.tx.clone();
        let halt = self.halt.clone();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.run_inner()));
        if let Err(e) = result {
            let msg = e
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| e.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            halt.store(true, Ordering::Relaxed);
            let _ = tx.send(ThreadReport::Failed(format!(
                "a load thread panicked: {msg}"
            )));
        }
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed) || self.halt.load(Ordering::Relaxed)
    }

    fn run_inner(mut self) {
        if let Err(why) = crate::worker::pin::place(&self.plan) {
            self.halt.store(true, Ordering::Relaxed);
            let _ = self.tx.send(ThreadReport::Failed(why));
            return;
        }
        self.quota = QuotaWatch::of_this_thread();
        if self.pacer.is_some() {
            // SAFETY: prctl with integer arguments only.
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1u64, 0, 0, 0) };
        }
        let now = clock::now();
        for i in 0..self.slots.len() {
            self.open(i, now);
        }
        let mut interrupted = false;
        loop {
            let now = clock::now();
            if self.window_from.is_none() && now >= self.plan.measure_start {
                self.window_from = Some(Usage::now(&mut self.quota));
            }
            while now >= self.iv_end && self.iv_end < self.end {
                self.flush_interval(self.iv_end);
            }
            if self.stopped() {
                interrupted = true;
                break;
            }
            if !self.draining && now >= self.end {
                self.window_to = Some(Usage::now(&mut self.quota));
                self.flush_interval(self.end);
                self.draining = true;
            }
            if self.draining && (now >= self.drain_deadline() || self.outstanding() == 0) {
                break;
            }
            if now >= self.next_scan {
                self.scan(now);
                self.next_scan = now + self.scan_every;
            }
            self.dispatch(now);
            self.send_pending(now);
            if let Err(e) = self.turn(now) {
                let _ = self
                    .tx
                    .send(ThreadReport::Failed(format!("epoll failed: {e}")));
                self.halt.store(true, Ordering::Relaxed);
                return;
            }
        }
        let now = clock::now();
        if self.window_to.is_none() {
            self.window_to = Some(Usage::now(&mut self.quota));
        }
        self.close_books(now, interrupted);
        self.flush_interval(now);
        let (tx, index) = (self.tx.clone(), self.index);
        let _ = tx.send(ThreadReport::Done(
            index,
            Box::new(self.result(now, interrupted)),
        ));
    }

    /// One turn: sleep until something is due or a socket that wakes the
    /// thread is readable, then serve every connection that needs it, and
    /// read the sockets read late (their sends wait for the dispatch).
    fn turn(&mut self, now: Nanos) -> std::io::Result<()> {
        let wake = self.wake_reading(now);
        let mut ready = std::mem::take(&mut self.ready);
        ready.clear();
        let waited = self.poller.wait(wake, |r| ready.push(r));
        let now = clock::now();
        if waited.is_ok() {
            for r in &ready {
                self.service(r.token, now, r.readable || r.closed);
            }
            self.after_wait(now, !ready.is_empty());
            // quinn's own deadlines: retransmissions, delayed ACKs, idle.
            for i in 0..self.slots.len() {
                let due = self.slots[i]
                    .conn
                    .as_mut()
                    .and_then(|c| c.link.deadline())
                    .is_some_and(|d| d <= now);
                if due {
                    self.service(i, now, false);
                }
            }
        }
        self.ready = ready;
        waited
    }

    fn wake_at(&mut self, now: Nanos) -> Nanos {
        let mut wake = self.next_scan;
        if self.draining {
            wake = wake.min(self.drain_deadline());
        } else {
            wake = wake.min(self.iv_end).min(self.end);
        }
        if let Some(due) = self.next_due {
            wake = wake.min(due.saturating_sub(self.plan.send_ahead / 4));
        }
        for s in &mut self.slots {
            if let Some(d) = s.conn.as_mut().and_then(|c| c.link.deadline()) {
                wake = wake.min(d);
            }
        }
        wake.max(now.min(wake))
    }

    /// The drain waits at most this long after the window.
    fn drain_deadline(&self) -> Nanos {
        self.end + self.plan.timeout + self.scan_every
    }

    /// Requests planned and not yet ended.
    fn outstanding(&self) -> u64 {
        let flying: usize = self.slots.iter().map(|s| s.inflight.len()).sum();
        flying as u64 + self.retry.len() as u64 + self.untaken(self.end)
    }

    /// Constant rate: slots due before `t` not yet taken.
    fn untaken(&self, t: Nanos) -> u64 {
        use crate::pacer::Pacer;
        match &self.pacer {
            Some(p) => p.due_before(t.min(self.end)).saturating_sub(self.next_i),
            None => 0,
        }
    }
}
