//! One load thread: its own event loop over its share of the connections.
//!
//! The hot path per request is one `read` and one `write` plus a share of an
//! `epoll_wait`. Sockets are registered once, edge-triggered, for both
//! directions, so the loop never calls `epoll_ctl` per request (wrk adds and
//! removes a write event for every request). A short read means the socket is
//! drained, which spares the extra `read` that would only return EAGAIN.
//! Over plain HTTP/1.1 the reads and writes of one turn are batched into a
//! few `io_uring_enter`s where the kernel allows it (see [`uring`]).
//!
//! A run has three parts. During the measured window requests are planned
//! (due on the schedule, or sent as answers free the connections). Then the
//! drain: nothing new is planned, but what was due is still sent and every
//! outstanding request is awaited until it is answered or its timeout passes.
//! Last, whatever is still outstanding is closed in the ledger. Every request
//! ends in exactly one outcome (see [`crate::ledger`]).
//!
//! The rules live in one file each:
//! - [`schedule`]: what is planned and when it goes out (the pacer's slots,
//!   a constant rate's or a rate profile's, the send-ahead window, which
//!   connection a request takes, and which prepared request of the pool it
//!   is: the next one, in turn; see [`crate::request_pool`]);
//! - [`sockets`]: connections and their bytes (opening, writing, reading,
//!   parsing);
//! - [`late`]: which connections are polled rather than waking the thread,
//!   and what time an answer read late is given (see "Reading late" below);
//! - [`free`]: which connection a due request takes;
//! - [`faults`]: what ends a request other than its answer (timeouts,
//!   closes, resets, protocol faults) and when a request goes out again;
//! - [`books`]: the per-second series and the thread's share of the outcome.
//!
//! # Reading late
//!
//! At a constant rate over plain TCP, small answers do not wake the thread
//! (over a unix socket they do: see [`crate::endpoint`]).
//! Every socket asks the kernel to wake a reader only once [`LOW_WATER`]
//! bytes are queued (`SO_RCVLOWAT`), and to stamp each segment with its
//! arrival time (`SO_TIMESTAMPNS`). The thread sleeps in `epoll_pwait2` until
//! the next request is due, sends what is due within `send_ahead`, and then
//! reads every connection with a request in flight. Each answer's time is the
//! kernel's stamp of its last segment, so reading it later does not lengthen
//! its latency, and the thread's own wake-up delay is not charged to the
//! server. One wake-up serves a batch of sends and answers.
//!
//! This can never change a figure, because whatever cannot be timed by a
//! stamp, or could be held back by an unread socket, still wakes the thread
//! at once:
//! - a large answer: at [`LOW_WATER`] bytes queued the kernel wakes the
//!   thread, which reads them; the receive window never closes on the
//!   server for want of a read;
//! - an answer that ends at the close (no length): the FIN wakes the thread,
//!   which times the end when it reads the end of the stream, as a loop that
//!   reads at once would;
//! - a reset, a connect or TLS handshake finishing, a blocked write that can
//!   go on: each wakes the thread (readiness the low-water mark does not
//!   gate);
//! - a connection whose request has been polled [`WATCH_AFTER`] times
//!   without an answer (a slow server), every connection when a due request
//!   finds none free, and the drain: their low-water mark drops to one byte,
//!   so any answer wakes the thread (which is what frees a connection).
//!
//! A request is never handed to a connection whose close, reset or stray
//! bytes are already known: readiness of connections with nothing in flight
//! is taken before what is due goes out, and a connection with nothing in
//! flight is read once before it is given a request. Bytes stamped before
//! the request they would answer was sent are a protocol fault, never an
//! answer. TLS hands out records, not segments, and the closed loop needs
//! each answer to send the next: both read every answer as it arrives.
//! Over TLS at a constant rate the answer is still timed by a stamp: that
//! of the read of ciphertext that completed its record (a record is whole
//! only once its last segment is in), so a thread that wakes late, or is
//! busy with other answers, does not lengthen its latency either. Answers
//! wake the thread between due times there, so the poller keeps its timer
//! armed across waits (see [`crate::poller`]).
//!
//! HTTP/2 over plain TCP reads late too, but only a connection that
//! carries one stream: a stamp is the time of the last segment read, so two
//! answers read together would both be timed at the later one's, and the
//! earlier one would look slower than it was. So due requests take the
//! connections in turn (see [`free`]), each given its next request when its
//! last one has most likely been answered; before a connection with a
//! stream read late takes a second, it is read (that answer is timed by its
//! own stamp), and from then on, carrying two, its answers wake the thread.
//! A connection read late still has room, so it is polled only every
//! [`H2_POLL_EVERY`]: reading it sooner would free nothing. The frames the
//! protocol sends on its own (SETTINGS, PING, GOAWAY, WINDOW_UPDATE) are
//! read with the next answer, or at the next poll; a connection's settings
//! are read as they come, since it carries nothing until they have. Over
//! TLS HTTP/2 reads every frame as it comes: reading late there would also
//! give up writing the requests due together on one connection as one
//! record, which the server then pays for (measured: more CPU for the
//! generator, and a slower server).
//!
//! A run ends at its planned end, or earlier when the thread's share of a
//! request budget (`-n`) is used up. Connections are kept alive, or (with
//! `keepalive` off) each request opens one and closes it after its answer:
//! the connection's slot is `Idle` between requests. Over TLS a connection
//! counts as open once its handshake is done (see [`tls`]).

mod books;
mod conn;
mod faults;
mod free;
mod h2;
mod late;
pub(crate) mod pin;
mod ring;
mod schedule;
mod sockets;
mod stream;
mod tls;
mod tunnel;
mod uring;
mod usage;

// What the HTTP/3 load thread (`crate::h3::load`) shares with this one.
pub(crate) use books::{generator, groups, interval_end, schedule, thread_rate};
pub(crate) use schedule::budgeted;

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;

use hdrhistogram::Histogram;

use crate::clock::{self, Nanos, NANOS_PER_SEC};
use crate::endpoint::Endpoint;
use crate::histogram::new_histogram;
use crate::ledger::{Req, Tally};
use crate::outcome::{Outcome, SecondSample, Sockets};
use crate::pacer::{ConstantPacer, Pacer};
use crate::poller::{Poller, Ready};
use crate::profile::{AnyPacer, ProfilePacer, RateStage};
use crate::request_pool::RequestPool;
use crate::stats::Failure;
use crate::status::StatusSet;
use crate::tls::TlsClient;
use conn::Conn;
use fairbench_sys::containment::throttle::QuotaWatch;
use free::{FreeQueue, Rotation};
pub(crate) use usage::Usage;

const READ_BUF: usize = 64 * 1024;
pub(crate) const BACKOFF_MIN: Nanos = 10_000_000;
pub(crate) const BACKOFF_MAX: Nanos = 500_000_000;
/// A load thread busier than this may be holding the load back.
const SATURATED: f64 = 0.9;
/// Bytes queued on a socket before the kernel wakes the thread for them
/// (reading late, above). Far below the receive window (the kernel's default
/// buffer is 128 KiB, its window about half of it), so a server never blocks
/// on a window that an earlier read would have opened; far above the small
/// answers whose wake-ups reading late spares.
pub(crate) const LOW_WATER: usize = 16 * 1024;
/// Polls that found nothing before a connection's answer is left to wake
/// the thread: a slow server's requests are not polled at every due time.
const WATCH_AFTER: u8 = 4;
/// How often an HTTP/2 connection read late is polled at the least (see
/// `late::poll_busy`): its answers are timed by their stamps, so this
/// bounds only when they are counted, never their latency.
const H2_POLL_EVERY: Nanos = 1_000_000;
/// The longest sleep of a thread reading late. `epoll_pwait2` lets a timer
/// of d fire up to d/1000 late; waking at least this often keeps that below
/// the quarter of the send-ahead window the loop wakes early.
const MAX_SLEEP: Nanos = 5_000_000;

/// Everything the workers share, fixed before they start.
pub(crate) struct ThreadPlan {
    pub addr: Endpoint,
    /// Every request, serialised, in the order they go out (see
    /// [`RequestPool`]); each entry says whether it may be sent again when
    /// its connection is lost before any byte of its answer came.
    pub pool: RequestPool,
    /// The target names results are broken down by (empty: no breakdown).
    pub names: Vec<String>,
    /// A rate profile: `rate` is then its peak (see [`crate::profile`]).
    pub stages: Option<Vec<RateStage>>,
    pub no_body: bool,
    pub max_head: usize,
    /// Requests in flight per connection: the pipelining depth over
    /// HTTP/1.1, the streams per connection over HTTP/2.
    pub pipeline: usize,
    /// Every connection speaks HTTP/2 (see [`h2`]).
    pub h2: bool,
    pub protocol: crate::Protocol,
    /// How far ahead of its planned time a constant-rate request may go out
    /// when the loop is awake anyway (an answer arrived, another request was
    /// due).
    ///
    /// Sleeping until a due time costs a wake-up (a timer interrupt, two
    /// context switches) whatever the time slept; sending what is due soon
    /// at once spares it. The arrival process stays within `send_ahead` of
    /// the schedule and the figures stay honest: latency is measured from
    /// min(planned, sent), so an early send can only lengthen a latency, and
    /// its lateness is zero. When nothing is due within the window the loop
    /// sleeps until a quarter of the window before the next due time.
    pub send_ahead: Nanos,
    pub timeout: Nanos,
    /// Whether a request past its timeout is aborted (fairbench) or awaited
    /// and its late answer counted as a timeout (wrk); see [`faults`].
    pub timeout_mode: crate::config::TimeoutMode,
    pub expect_status: StatusSet,
    /// `https://`: every connection speaks TLS.
    pub tls: Option<TlsClient>,
    /// `https://` through a proxy: every connection first opens a CONNECT
    /// tunnel (see [`tunnel`]).
    pub tunnel: Option<crate::proxy::Tunnel>,
    /// Off: one connection per request, closed by us after the answer.
    pub keepalive: bool,
    pub start: Nanos,
    pub measure_start: Nanos,
    pub end: Nanos,
    /// Requests per second of this generator; `None`: closed loop.
    pub rate: Option<f64>,
    /// Where this generator's schedule starts: `start` plus its offset among
    /// several generators.
    pub schedule_start: Nanos,
    pub threads: usize,
    /// This generator's share of the request count (`-n`), shared in turn
    /// among its threads ([`ThreadPlan::budget`]).
    pub requests: Option<u64>,
    /// When a request count's window ends, the same for every thread
    /// ([`schedule::budgeted`]); `end` without one.
    pub budget_end: Nanos,
    pub cpus: Option<Vec<usize>>,
    pub thread_start: Option<crate::config::ThreadStart>,
    pub io: crate::config::IoMode,
    /// `LoadConfig::unstamped_kernel`.
    pub unstamped_kernel: bool,
}

/// Whether a load thread can set up its io_uring here.
pub(crate) fn uring_available() -> bool {
    ring::Ring::new().is_some()
}

pub(crate) fn scan_every(timeout: Nanos) -> Nanos {
    (timeout / 20).clamp(1_000_000, 50_000_000)
}

/// A constant rate's or a rate profile's schedule of this thread's slots;
/// `None` in a closed loop.
pub(crate) fn pacer(plan: &ThreadPlan, index: usize) -> Option<AnyPacer> {
    plan.rate.map(|rate| match &plan.stages {
        None => AnyPacer::Constant(ConstantPacer::new(
            plan.schedule_start,
            index,
            plan.threads,
            rate,
        )),
        Some(stages) => AnyPacer::Profile(ProfilePacer::new(
            plan.schedule_start,
            index,
            plan.threads,
            std::time::Duration::from_nanos(plan.measure_start - plan.start),
            stages,
        )),
    })
}

impl ThreadPlan {
    /// Thread `t`'s share of the request count: at a constant rate the
    /// slots of the whole schedule it owns among the `n` from the first
    /// one measured ([`crate::pacer::share`]), so that together they are
    /// `n` consecutive slots; in a closed loop `n/T`, one more for the
    /// first `n mod T` threads.
    pub(crate) fn budget(&self, t: usize) -> Option<u64> {
        let first = pacer(self, 0).map_or(0, |p| p.slots_before(self.measure_start));
        self.requests
            .map(|n| crate::pacer::share(n, first, t as u64, self.threads as u64))
    }

    /// When the window of a thread with `budget` ends. In a closed loop the
    /// last request of a thread's share ends its window as it goes out
    /// (`plan_new`); a thread with none of the count (a generator's share
    /// smaller than its threads, or `-n` smaller than the generators) has
    /// no such request, and ends its window as it opens, not at the planned
    /// end (an hour when `-n` alone bounds the run).
    pub(crate) fn window_end(&self, budget: Option<u64>) -> Nanos {
        if budget == Some(0) && self.rate.is_none() {
            (self.measure_start + 1).min(self.budget_end)
        } else {
            self.budget_end
        }
    }
}

/// The thread's ledger for a window ending at `end`, by target and stage.
pub(crate) fn tally(plan: &ThreadPlan, end: Nanos) -> Tally {
    Tally::new(
        plan.measure_start,
        end,
        plan.timeout,
        plan.rate.is_some(),
        plan.expect_status.clone(),
    )
    .by_targets(plan.names.len())
    .by_stages(plan.measure_start, plan.stages.as_deref().unwrap_or(&[]))
    .late_answers_time_out(plan.timeout_mode == crate::config::TimeoutMode::Wrk)
}

pub(crate) enum ThreadReport {
    /// Worker `.0`'s share of one interval of the time series.
    Interval(usize, SecondSample, Histogram<u64>),
    /// Worker `.0`'s whole result, as a part of the run's.
    Done(usize, Box<Outcome>),
    /// The worker could not run (pinning, set-up) or died; the run is void.
    Failed(String),
}

pub(crate) struct Worker {
    index: usize,
    plan: Arc<ThreadPlan>,
    stop: Arc<AtomicBool>,
    halt: Arc<AtomicBool>,
    tx: Sender<ThreadReport>,
    poller: Poller,
    conns: Vec<Conn>,
    buf: Box<[u8]>,
    /// The buffer of a read inside another read (see `sockets::read`).
    spare_buf: Box<[u8]>,
    tally: Tally,
    pacer: Option<AnyPacer>,
    /// When the next planned request is due (constant rate, all due sent).
    next_due: Option<Nanos>,
    /// Inside [`Self::dispatch`].
    dispatching: bool,
    /// A due request found no connection with room: answers must wake the
    /// thread, for the connection they free.
    starved: bool,
    /// Constant rate over plain TCP: small answers are read late, timed by
    /// the kernel's receive stamps (see "Reading late").
    deferred: bool,
    /// The kernel gave answers no receive stamps: reads made late before
    /// that was seen (see [`late`]'s `stamps_missing`).
    unstamped: Option<u64>,
    /// Connections with a request in flight whose answers do not wake the
    /// thread: read at every turn (reading late).
    polled: Vec<usize>,
    /// Turns of the loop so far: a connection read in this turn is not
    /// polled again in it.
    turn: u64,
    /// CLOCK_REALTIME minus CLOCK_MONOTONIC, refreshed every turn: turns a
    /// receive timestamp into the engine's clock.
    realtime_offset: i128,
    ready: Vec<Ready>,
    /// Next schedule slot not yet taken (constant rate).
    next_i: u64,
    /// Requests picked from the pool so far (plus this thread's offset).
    next_entry: u64,
    /// Connections with room for a request, longest free first (constant
    /// rate).
    free: FreeQueue,
    /// HTTP/2 reading late: the connections with room, taken in turn (see
    /// [`free`]).
    rotation: Rotation,
    /// Requests that must go out again (their connection closed or timed out
    /// with them queued), oldest first.
    retry: VecDeque<Req>,
    sockets: Sockets,
    /// Connect failures since a connection last opened.
    failing_connects: u64,
    draining: bool,
    /// When the drain's watch for late strays ends (see `lingered`).
    linger_until: Option<Nanos>,
    iv_second: i64,
    iv_from: Nanos,
    iv_end: Nanos,
    next_scan: Nanos,
    scan_every: Nanos,
    /// This thread's control groups, found once it is placed.
    quota: QuotaWatch,
    window_from: Option<Usage>,
    window_to: Option<Usage>,
    never_sent: u64,
    /// This thread's window end: the plan's, or earlier once its request
    /// budget is used up.
    end: Nanos,
    /// Requests of the window this thread may still plan (`-n`).
    budget: Option<u64>,
    /// Why the latest attempt to open a connection failed: the class of
    /// requests that then time out waiting for one.
    open_failure: Failure,
    connect_time: Histogram<u64>,
    handshake_time: Histogram<u64>,
    /// The first TLS handshake failure's reason, for the warning.
    tls_error: Option<String>,
    /// HTTP/2: what the run reports of it, and the events of the frames
    /// just read (kept to reuse its allocation).
    h2_report: crate::H2Report,
    h2_events: Vec<crate::h2::session::Event>,
    /// HTTP/2 at constant rate: the requests due together on one
    /// connection, not yet sent (its index; for a request sent for the
    /// first time, since when a connection had room for it). See
    /// `schedule::send_batch`.
    batch: Vec<(usize, Option<Nanos>)>,
    /// Frames received, by type (0..=9; 10: any other).
    h2_frames: [u64; 11],
    /// Plain HTTP/1.1's sends and receives batched (see [`uring`]).
    io: uring::Batch,
}

impl Worker {
    /// `budget`: this thread's share of a request count, if the run has one.
    pub fn new(
        index: usize,
        connections: usize,
        budget: Option<u64>,
        plan: Arc<ThreadPlan>,
        stop: Arc<AtomicBool>,
        halt: Arc<AtomicBool>,
        tx: Sender<ThreadReport>,
    ) -> io::Result<Worker> {
        let deferred = plan.rate.is_some() && plan.tls.is_none() && plan.addr.stamps_arrivals();
        // At a constant rate whose answers are not read late, they wake the
        // thread between due times: a timer kept armed across waits is
        // cheaper there (see `poller`).
        let poller = Poller::new(1024, plan.rate.is_some() && !deferred)?;
        let pacer = pacer(&plan, index);
        let conns = (0..connections)
            .map(|_| Conn::new(plan.no_body, plan.max_head, plan.pipeline.min(64)))
            .collect();
        let end = plan.window_end(budget);
        // The first interval starts at the run start and ends at the next
        // whole second counted from the measurement start.
        let warm = plan.measure_start - plan.start;
        let iv_second = -(warm.div_ceil(NANOS_PER_SEC) as i64);
        let iv_end = books::interval_end(&plan, iv_second, end);
        let tally = tally(&plan, end);
        Ok(Worker {
            index,
            stop,
            halt,
            tx,
            poller,
            conns,
            buf: vec![0u8; READ_BUF].into_boxed_slice(),
            spare_buf: Box::default(),
            tally,
            pacer,
            next_due: None,
            dispatching: false,
            starved: false,
            deferred,
            unstamped: None,
            polled: Vec::with_capacity(connections),
            turn: 0,
            realtime_offset: 0,
            ready: Vec::with_capacity(1024),
            next_i: 0,
            // Threads start at spread-out places in the pool, so that
            // together they send its whole cycle, not its start T times.
            next_entry: (index * plan.pool.len() / plan.threads.max(1)) as u64,
            free: FreeQueue::with_capacity(connections),
            rotation: Rotation::with_capacity(connections),
            retry: VecDeque::new(),
            sockets: Sockets::default(),
            failing_connects: 0,
            draining: false,
            linger_until: None,
            iv_second,
            iv_from: plan.start,
            iv_end,
            next_scan: 0,
            scan_every: scan_every(plan.timeout),
            quota: QuotaWatch::default(),
            window_from: None,
            window_to: None,
            never_sent: 0,
            end,
            budget,
            open_failure: Failure::Connect,
            connect_time: new_histogram(),
            handshake_time: new_histogram(),
            tls_error: None,
            h2_report: h2::initial_report(),
            h2_events: Vec::new(),
            batch: Vec::new(),
            h2_frames: [0; 11],
            io: uring::Batch::default(),
            plan,
        })
    }

    /// Runs the worker; a panic inside becomes a report rather than a
    /// silently missing share of the load.
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

    fn fail_to_start(&self, why: String) {
        self.halt.store(true, Ordering::Relaxed);
        let _ = self.tx.send(ThreadReport::Failed(why));
    }

    fn run_inner(mut self) {
        // On this thread: the ring is set up for a single issuer.
        self.io = uring::Batch::for_plan(&self.plan);
        self.sockets.io_uring_threads = u64::from(self.io.active());
        if let Err(why) = pin::place(&self.plan) {
            return self.fail_to_start(why);
        }
        self.quota = QuotaWatch::of_this_thread();
        if self.pacer.is_some() {
            // The default 50 µs slack would make every timer wake-up late.
            // SAFETY: prctl with integer arguments only.
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1u64, 0, 0, 0) };
        }
        let now = clock::now();
        for i in 0..self.conns.len() {
            if self.plan.keepalive {
                self.connect(i, now);
            } else {
                self.idle(i, now);
            }
        }
        let mut interrupted = false;
        loop {
            let now = clock::now();
            if self.window_from.is_none() && now >= self.plan.measure_start {
                self.window_from = Some(Usage::now(&mut self.quota));
            }
            // Every whole interval that has passed is sent on its own, even
            // when this thread was descheduled across several of them.
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
                // The drain ends when the last answer comes: every answer
                // wakes the thread from now on.
                self.watch_all();
            }
            if self.draining && (now >= self.drain_deadline() || self.lingered(now)) {
                break;
            }
            if now >= self.next_scan {
                self.scan(now);
                self.next_scan = now + self.scan_every;
            }
            if self.pacer.is_some() {
                self.dispatch();
            }
            if let Err(e) = self.turn(self.wake_at(now)) {
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
        // The interval in progress is sent even if partial: it holds real
        // data. After the window, it is the drain's.
        self.flush_interval(now);
        let (tx, index) = (self.tx.clone(), self.index);
        let _ = tx.send(ThreadReport::Done(
            index,
            Box::new(self.result(now, interrupted)),
        ));
    }

    /// One turn: sleep until `wake` or until a socket needs the thread, then
    /// serve what is ready, in the order that keeps the figures exact.
    fn turn(&mut self, wake: Nanos) -> io::Result<()> {
        // Readiness is collected first and handled after the wait, so the
        // poller's buffer is free while connections are serviced.
        let mut ready = std::mem::take(&mut self.ready);
        ready.clear();
        let waited = self.poller.wait(wake, |r| ready.push(r));
        self.turn += 1;
        if self.stamped() {
            self.realtime_offset = clock::realtime() as i128 - clock::now() as i128;
        }
        if let Err(e) = waited {
            self.ready = ready;
            return Err(e);
        }
        // Closed loop: the turn's sends go out together at its end.
        let opened = self.pacer.is_none() && self.batch_open();
        // First what decides whether a connection may be given a request:
        // closes, resets, opens, and anything on a connection with nothing
        // in flight. Data and the peer's FIN can arrive in one edge; then a
        // short read does not mean "nothing more", and reading must go on
        // until it sees the end of the stream.
        let first = partition(&mut ready, |r| r.closed || !self.conns[r.token].busy());
        for r in &ready[..first] {
            self.on_event(r.token, r.readable, r.closed, r.writable);
        }
        if self.deferred {
            // What is due goes out before the answers are read: reading a
            // batch of them first would make it late.
            if !self.stopped() && clock::now() < self.end {
                self.dispatch();
            }
        }
        self.serve_busy(&ready[first..]);
        self.ready = ready;
        if self.deferred {
            self.poll_busy();
        }
        self.batch_close(opened);
        Ok(())
    }

    /// When the loop must wake at the latest: the next scan, interval or
    /// window end, and a quarter of the send-ahead window before the next
    /// due request (a sleeping thread wakes tens of µs late on a virtual
    /// machine, and that delay is better spent inside the window than after
    /// the due time; sends still never go out more than the window ahead).
    fn wake_at(&self, now: Nanos) -> Nanos {
        let mut wake = self.next_scan;
        if self.draining {
            wake = wake.min(self.drain_deadline());
        } else {
            wake = wake.min(self.iv_end).min(self.end);
        }
        if let Some(due) = self.next_due {
            wake = wake.min(due.saturating_sub(self.plan.send_ahead / 4));
        }
        if self.deferred {
            wake = wake.min(now + MAX_SLEEP);
        }
        if let Some(until) = self.linger_until {
            wake = wake.min(until);
        }
        wake
    }
}

/// Moves the items for which `first` holds to the front; returns how many
/// there are. The order within each part does not matter: a connection has
/// at most one readiness report per wait.
fn partition<T>(v: &mut [T], mut first: impl FnMut(&T) -> bool) -> usize {
    let mut k = 0;
    for j in 0..v.len() {
        if first(&v[j]) {
            v.swap(k, j);
            k += 1;
        }
    }
    k
}

#[cfg(test)]
mod tests {
    use super::partition;

    #[test]
    fn partition_puts_the_chosen_first() {
        let mut v = [5, 2, 8, 1, 4, 7];
        let k = partition(&mut v, |x| x % 2 == 0);
        assert_eq!(k, 3);
        let mut front = v[..k].to_vec();
        front.sort();
        assert_eq!(front, [2, 4, 8]);
        assert!(v[k..].iter().all(|x| x % 2 == 1));
    }
}
