//! One load thread: its own event loop over its share of the connections.
//!
//! The hot path per request is one `read` and one `write` plus a share of an
//! `epoll_wait`. Sockets are registered once, edge-triggered, for both
//! directions, so the loop never calls `epoll_ctl` per request (wrk adds and
//! removes a write event for every request). A short read means the socket is
//! drained, which spares the extra `read` that would only return EAGAIN.
//!
//! A run has three parts. During the measured window requests are planned
//! (due on the schedule, or sent as answers free the connections). Then the
//! drain: nothing new is planned, but what was due is still sent and every
//! outstanding request is awaited until it is answered or its timeout passes.
//! Last, whatever is still outstanding is closed in the ledger. Every request
//! ends in exactly one outcome (see [`crate::ledger`]).
//!
//! The window ends at its planned end, or earlier when the thread's share of
//! a request budget (`-n`) is used up. Connections are kept alive, or (with
//! `keepalive` off) each request opens one and closes it after its answer:
//! the connection's slot is `Idle` between requests. Over TLS a connection
//! counts as open once its handshake is done (see [`tls`]).
//!
//! At a constant rate over plain TCP, answers are not read as they arrive.
//! The thread sleeps until the next request is due (or the next scan or
//! interval), sends what is due within `send_ahead`, and only then reads
//! every answer that came in meanwhile. Each answer's time is the kernel's
//! receive timestamp of its last segment (`SO_TIMESTAMPNS`), so reading it
//! later does not lengthen its latency, and the thread's own wake-up delay
//! is not charged to the server either. One wake-up then serves a batch of
//! sends and answers, where waking for every answer cost a timer-less but
//! equally expensive wake-up each. Answers are read as they come whenever
//! that matters: a due request found no connection with room (`starved`),
//! requests wait to go out again, a connection is being opened (its connect
//! time is taken when the loop sees it finish), the drain, TLS (whose
//! records are not segments), and the closed loop, where the answer is what
//! frees the connection for the next request.

mod conn;
mod free;
mod tls;

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;

use hdrhistogram::Histogram;
use mio::net::TcpStream;

use crate::clock::{self, Nanos, NANOS_PER_SEC};
use crate::histogram::{new_histogram, record_ns};
use crate::ledger::{Req, Tally};
use crate::outcome::{Generator, Outcome, Phase, Schedule, SecondSample, Sockets};
use crate::pacer::{ConstantPacer, Pacer};
use crate::poller::{Poller, Ready};
use crate::response::Step;
use crate::stats::Failure;
use crate::status::StatusSet;
use crate::tls::TlsClient;
use crate::LoadModel;
use conn::{Conn, Parsed, State};
use free::FreeQueue;
use tls::{Handshake, Transport};

const READ_BUF: usize = 64 * 1024;
const BACKOFF_MIN: Nanos = 10_000_000;
const BACKOFF_MAX: Nanos = 500_000_000;
/// A load thread busier than this may be holding the load back.
const SATURATED: f64 = 0.9;

/// Everything the workers share, fixed before they start.
pub(crate) struct ThreadPlan {
    pub addr: SocketAddr,
    /// `pipeline` back-to-back copies of the serialised request, so that k
    /// requests are one contiguous slice.
    pub wire: Vec<u8>,
    pub req_len: usize,
    pub no_body: bool,
    pub max_head: usize,
    pub pipeline: usize,
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
    pub expect_status: StatusSet,
    /// `https://`: every connection speaks TLS.
    pub tls: Option<TlsClient>,
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
    pub cpus: Option<Vec<usize>>,
    pub thread_start: Option<crate::config::ThreadStart>,
}

fn scan_every(timeout: Nanos) -> Nanos {
    (timeout / 20).clamp(1_000_000, 50_000_000)
}

pub(crate) enum ThreadReport {
    /// Worker `.0`'s share of one interval of the time series.
    Interval(usize, SecondSample, Histogram<u64>),
    /// Worker `.0`'s whole result, as a part of the run's.
    Done(usize, Box<Outcome>),
    /// The worker could not run (pinning, set-up) or died; the run is void.
    Failed(String),
}

/// Thread CPU and scheduler figures at one instant.
#[derive(Clone, Copy)]
struct Usage {
    at: Nanos,
    cpu: Nanos,
    run: Nanos,
    wait: Nanos,
}

impl Usage {
    fn now() -> Usage {
        let (run, wait) = clock::thread_sched();
        Usage {
            at: clock::now(),
            cpu: clock::thread_cpu(),
            run,
            wait,
        }
    }
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
    tally: Tally,
    pacer: Option<ConstantPacer>,
    /// When the next planned request is due (constant rate, all due sent).
    next_due: Option<Nanos>,
    /// A due request found no connection with room: answers must be read as
    /// they come, for the connection they free.
    starved: bool,
    /// Constant rate over plain TCP: answers are read at the loop's next
    /// wake-up, timed by the kernel's receive timestamps.
    deferred: bool,
    /// Connections being opened (`State::opening`): while there are any,
    /// the loop wakes for readiness, or their connect times would include
    /// its sleep.
    opening: usize,
    /// CLOCK_REALTIME minus CLOCK_MONOTONIC, refreshed every turn: turns a
    /// receive timestamp into the engine's clock.
    realtime_offset: i128,
    ready: Vec<Ready>,
    /// Next schedule slot not yet taken (constant rate).
    next_i: u64,
    /// Connections with room for a request, longest free first (constant
    /// rate).
    free: FreeQueue,
    /// Requests that must go out again (their connection closed or timed out
    /// with them queued), oldest first.
    retry: VecDeque<Req>,
    sockets: Sockets,
    /// Connect failures since a connection last opened.
    failing_connects: u64,
    draining: bool,
    iv_second: i64,
    iv_from: Nanos,
    iv_end: Nanos,
    next_scan: Nanos,
    scan_every: Nanos,
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
        let poller = Poller::new(1024)?;
        let pacer = plan
            .rate
            .map(|rate| ConstantPacer::new(plan.schedule_start, index, plan.threads, rate));
        let conns = (0..connections)
            .map(|_| Conn::new(plan.no_body, plan.max_head, plan.pipeline))
            .collect();
        // A constant-rate budget is known up front: the window ends at the
        // first slot beyond it.
        let end = match (&pacer, budget) {
            (Some(p), Some(n)) => {
                let first = p.due_before(plan.measure_start);
                p.due(first + n).min(plan.end)
            }
            _ => plan.end,
        };
        // The first interval starts at the run start and ends at the next
        // whole second counted from the measurement start.
        let warm = plan.measure_start - plan.start;
        let iv_second = -(warm.div_ceil(NANOS_PER_SEC) as i64);
        let iv_end = interval_end(&plan, iv_second, end);
        let tally = Tally::new(
            plan.measure_start,
            end,
            plan.timeout,
            plan.rate.is_some(),
            plan.expect_status.clone(),
        );
        Ok(Worker {
            index,
            stop,
            halt,
            tx,
            poller,
            conns,
            buf: vec![0u8; READ_BUF].into_boxed_slice(),
            tally,
            pacer,
            next_due: None,
            starved: false,
            deferred: plan.rate.is_some() && plan.tls.is_none(),
            opening: 0,
            realtime_offset: 0,
            ready: Vec::with_capacity(1024),
            next_i: 0,
            free: FreeQueue::with_capacity(connections),
            retry: VecDeque::new(),
            sockets: Sockets::default(),
            failing_connects: 0,
            draining: false,
            iv_second,
            iv_from: plan.start,
            iv_end,
            next_scan: 0,
            scan_every: scan_every(plan.timeout),
            window_from: None,
            window_to: None,
            never_sent: 0,
            end,
            budget,
            open_failure: Failure::Connect,
            connect_time: new_histogram(),
            handshake_time: new_histogram(),
            tls_error: None,
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

    fn run_inner(mut self) {
        if let Some(hook) = &self.plan.thread_start {
            if let Err(e) = (hook.0)() {
                self.halt.store(true, Ordering::Relaxed);
                let _ = self.tx.send(ThreadReport::Failed(format!(
                    "cannot place a load thread: {e}"
                )));
                return;
            }
        }
        if let Some(cpus) = &self.plan.cpus {
            if let Err(e) = pin_current_thread(cpus) {
                self.halt.store(true, Ordering::Relaxed);
                let _ = self.tx.send(ThreadReport::Failed(format!(
                    "cannot pin a load thread to CPUs {cpus:?}: {e}"
                )));
                return;
            }
        }
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
                self.window_from = Some(Usage::now());
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
                self.window_to = Some(Usage::now());
                self.flush_interval(self.end);
                self.draining = true;
            }
            if self.draining && (self.outstanding() == 0 || now >= self.drain_deadline()) {
                break;
            }
            if now >= self.next_scan {
                self.scan(now);
                self.next_scan = now + self.scan_every;
            }
            if self.pacer.is_some() {
                self.dispatch();
            }
            let mut wake = self.next_scan;
            if self.draining {
                wake = wake.min(self.drain_deadline());
            } else {
                wake = wake.min(self.iv_end).min(self.end);
            }
            if let Some(due) = self.next_due {
                // A quarter of the window early: a sleeping thread wakes tens
                // of µs late on a virtual machine, and that delay is better
                // spent inside the window than after the due time. Sends
                // still never go out more than the window ahead.
                wake = wake.min(due.saturating_sub(self.plan.send_ahead / 4));
            }
            // Readiness is collected first and handled after the wait, so
            // the poller's buffer is free while connections are serviced.
            let mut ready = std::mem::take(&mut self.ready);
            ready.clear();
            // Deferred: sleep through answers to the next thing due, then
            // take everything that became ready at once.
            let defer = self.deferred
                && !self.draining
                && !self.starved
                && self.opening == 0
                && self.retry.is_empty();
            if defer {
                clock::sleep_until(wake);
                wake = 0;
                // What is due goes out before the answers are read: reading
                // a batch of them first would make it late.
                if !self.stopped() && clock::now() < self.end {
                    self.dispatch();
                }
            }
            let waited = self.poller.wait(wake, |r| ready.push(r));
            if self.deferred {
                self.realtime_offset = clock::realtime() as i128 - clock::now() as i128;
            }
            if let Err(e) = waited {
                let _ = self
                    .tx
                    .send(ThreadReport::Failed(format!("epoll failed: {e}")));
                self.halt.store(true, Ordering::Relaxed);
                return;
            }
            for r in &ready {
                // Data and the peer's FIN can arrive in one edge; then a
                // short read does not mean "nothing more", and reading must
                // go on until it sees the end of the stream.
                self.on_event(r.token, r.readable, r.closed, r.writable);
            }
            self.ready = ready;
        }
        let now = clock::now();
        if self.window_to.is_none() {
            self.window_to = Some(Usage::now());
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

    /// This thread's part of the run's outcome.
    fn result(self, now: Nanos, interrupted: bool) -> Outcome {
        let (from, to) = match (self.window_from, self.window_to) {
            (Some(a), Some(b)) if b.at > a.at => (a, b),
            _ => {
                let u = Usage::now();
                (u, u)
            }
        };
        let busy = ((to.run + to.wait).saturating_sub(from.run + from.wait)) as f64
            / to.at.saturating_sub(from.at).max(1) as f64;
        let busy = busy.min(1.0);
        let window_end = self.window_to.map_or(now, |u| u.at).min(self.end);
        let plan = &self.plan;
        let t = self.tally;
        let lateness_p99 = if t.lateness.is_empty() {
            0
        } else {
            t.lateness.value_at_quantile(0.99)
        };
        let thread_rate = plan.rate.map(|r| r / plan.threads as f64);
        let secs = |ns: Nanos| ns as f64 / NANOS_PER_SEC as f64;
        Outcome {
            model: match thread_rate {
                Some(rps) => LoadModel::ConstantRate { rps },
                None => LoadModel::ClosedLoop,
            },
            connections: self.conns.len(),
            threads: 1,
            pipeline: plan.pipeline,
            timeout_s: secs(plan.timeout),
            warmup_s: secs(plan.measure_start - plan.start),
            measured_s: secs(window_end.saturating_sub(plan.measure_start)),
            planned: t.planned,
            requests: t.answered,
            bytes_read: t.bytes,
            errors: t.errors,
            latency: t.latency,
            answered_latency: t.answered_latency.clone(),
            uncorrected: if thread_rate.is_some() {
                t.uncorrected
            } else {
                // In closed loop the send is the plan: service time is the
                // answered requests' latency.
                t.answered_latency
            },
            lateness: thread_rate.map(|_| t.lateness),
            status_codes: t.codes.to_map(),
            expect_status: plan.expect_status.as_str().to_string(),
            connect_time: self.connect_time,
            handshake_time: plan.tls.as_ref().map(|_| self.handshake_time),
            tls_error: self.tls_error,
            keepalive: plan.keepalive,
            series: Vec::new(),
            generator: Generator {
                cpu_s: secs(to.cpu.saturating_sub(from.cpu)),
                busy_fraction: busy,
                thread_busy: vec![busy],
                saturated: busy > SATURATED,
                steal_fraction: None,
            },
            schedule: thread_rate.map(|rate| Schedule {
                rate,
                sent: t.sent,
                never_sent: self.never_sent,
                waited_for_connection: t.waited,
                send_ahead_us: plan.send_ahead as f64 / 1e3,
                sent_early: t.early,
                early_max_us: t.early_max as f64 / 1e3,
                behind: lateness_p99 > 1_000 || self.never_sent > 0,
            }),
            sockets: self.sockets,
            interrupted,
        }
    }

    /// The drain waits at most this long after the window: every request
    /// planned in the window has reached its timeout by then, and one more
    /// scan interval lets the scan see it.
    fn drain_deadline(&self) -> Nanos {
        self.end + self.plan.timeout + self.scan_every
    }

    /// Requests planned and not yet ended.
    fn outstanding(&self) -> u64 {
        let flying: usize = self.conns.iter().map(|c| c.inflight.len()).sum();
        flying as u64 + self.retry.len() as u64 + self.untaken(self.end)
    }

    /// Schedule slots due before `t` (and within the window) not yet taken.
    fn untaken(&self, t: Nanos) -> u64 {
        match &self.pacer {
            Some(p) => p.due_before(t.min(self.end)).saturating_sub(self.next_i),
            None => 0,
        }
    }

    /// Closed loop: whether a new request may come into being now.
    fn may_plan(&self, now: Nanos) -> bool {
        now < self.end && self.budget != Some(0) && !self.stopped()
    }

    /// Closed loop: a new request comes into being now (see
    /// [`Self::may_plan`]). The last one of the budget ends the window.
    fn plan_new(&mut self, now: Nanos) {
        self.tally.plan(now);
        if !self.tally.in_window(now) {
            return;
        }
        if let Some(left) = self.budget.as_mut() {
            *left = left.saturating_sub(1);
            if *left == 0 {
                self.end = now + 1;
                self.tally.close_window(self.end);
                self.iv_end = self.iv_end.min(self.end);
            }
        }
    }

    /// Ends every outstanding request: a timeout if its time is up, else
    /// unanswered. Interrupted runs end their schedule at `now`.
    fn close_books(&mut self, now: Nanos, interrupted: bool) {
        let timeout = self.plan.timeout;
        let why = |planned: Nanos| {
            if now.saturating_sub(planned) >= timeout {
                Failure::Timeout
            } else {
                Failure::Unanswered
            }
        };
        for i in 0..self.conns.len() {
            while let Some(r) = self.conns[i].inflight.pop_front() {
                self.tally.failed(now, r.planned, why(r.planned));
            }
        }
        while let Some(r) = self.retry.pop_front() {
            self.tally.failed(now, r.planned, why(r.planned));
        }
        let until = if interrupted { now } else { self.end };
        let left = self.untaken(until);
        for _ in 0..left {
            let due = self.take_slot();
            self.never_sent_in_window(due);
            self.tally.failed(now, due, why(due));
        }
    }

    fn take_slot(&mut self) -> Nanos {
        let due = self.pacer.as_ref().map_or(0, |p| p.due(self.next_i));
        self.next_i += 1;
        self.tally.plan(due);
        due
    }

    fn never_sent_in_window(&mut self, planned: Nanos) {
        if self.tally.in_window(planned) {
            self.never_sent += 1;
        }
    }

    fn flush_interval(&mut self, to: Nanos) {
        let iv = self.tally.take_interval();
        let phase = if self.iv_second < 0 {
            Phase::Warmup
        } else if self.draining {
            Phase::Drain
        } else {
            Phase::Measure
        };
        let start = self.plan.start;
        let secs = |ns: Nanos| ns as f64 / NANOS_PER_SEC as f64;
        let sample = SecondSample {
            second: self.iv_second,
            phase,
            start_s: secs(self.iv_from - start),
            duration_s: secs(to.max(self.iv_from) - self.iv_from),
            requests: iv.requests,
            errors: iv.errors,
            bytes: iv.bytes,
            // Drawn from the merged histogram.
            p50_us: 0,
            p99_us: 0,
        };
        let _ = self
            .tx
            .send(ThreadReport::Interval(self.index, sample, iv.hist));
        self.iv_second += 1;
        self.iv_from = to.max(self.iv_from);
        self.iv_end = interval_end(&self.plan, self.iv_second, self.end);
    }

    fn connect(&mut self, i: usize, now: Nanos) {
        match TcpStream::connect(self.plan.addr) {
            Ok(s) => {
                if self.poller.add(s.as_raw_fd(), i).is_err() {
                    self.open_failed(i, now, Failure::Connect);
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
                if self.deferred {
                    // Without stamps the read time stands: later, never
                    // earlier.
                    let _ = transport.stamp_arrivals();
                }
                let c = &mut self.conns[i];
                c.stream = Some(transport);
                c.drained_at = now;
                self.set_state(i, State::Connecting { since: now });
            }
            Err(_) => self.open_failed(i, now, Failure::Connect),
        }
    }

    /// Connection `i` could not be opened: refused or timed out (`Connect`),
    /// or its TLS handshake failed (`Tls`).
    fn open_failed(&mut self, i: usize, now: Nanos, why: Failure) {
        match why {
            Failure::Tls => self.sockets.tls_failed += 1,
            _ => self.sockets.connect_failed += 1,
        }
        self.failing_connects += 1;
        self.open_failure = why;
        // A connection of its own carried its request (keep-alive off).
        while let Some(r) = self.conns[i].inflight.pop_front() {
            self.tally.failed(now, r.planned, why);
        }
        if self.plan.keepalive && self.pacer.is_none() {
            // In closed loop the connection was opened to carry the next
            // `pipeline` requests: they end here.
            for _ in 0..self.plan.pipeline {
                if !self.may_plan(now) {
                    break;
                }
                self.plan_new(now);
                self.tally.failed(now, now, why);
            }
        }
        let c = &mut self.conns[i];
        c.to_write = 0;
        c.write_pos = 0;
        if let Some(s) = c.stream.take() {
            self.poller.remove(s.tcp().as_raw_fd());
        }
        // Back off so a refusing server does not turn the generator into a
        // busy loop of failed connects.
        let backoff = (BACKOFF_MIN << c.failures.min(6)).min(BACKOFF_MAX);
        c.failures += 1;
        self.set_state(
            i,
            State::Backoff {
                until: now + backoff,
            },
        );
    }

    /// Drops the connection and opens a fresh one (keep-alive off: leaves
    /// the slot idle for the next request). The requests it carried must
    /// have been ended or moved to the retry queue by the caller.
    fn reconnect(&mut self, i: usize, now: Nanos) {
        let c = &mut self.conns[i];
        if let Some(s) = c.stream.take() {
            self.poller.remove(s.tcp().as_raw_fd());
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
    fn idle(&mut self, i: usize, now: Nanos) {
        self.set_state(i, State::Idle);
        if self.pacer.is_some() {
            self.conns[i].free_since = now;
            self.free.list(i, &mut self.conns[i], self.plan.pipeline);
            self.dispatch();
            return;
        }
        // The request is sent as soon as the connection opens: its latency
        // counts from now, connect (and handshake) included, as ab counts.
        let req = match self.retry.pop_front() {
            Some(r) => Req {
                planned: r.planned,
                sent: now,
            },
            None if self.may_plan(now) => {
                self.plan_new(now);
                self.tally.first_send(now, now, now);
                Req {
                    planned: now,
                    sent: now,
                }
            }
            None => return,
        };
        self.conns[i].inflight.push_back(req);
        self.conns[i].to_write = self.plan.req_len;
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

    /// The connection failed: every request it carried ends with `why`.
    fn fail(&mut self, i: usize, why: Failure) {
        let now = clock::now();
        while let Some(r) = self.conns[i].inflight.pop_front() {
            self.tally.failed(now, r.planned, why);
        }
        self.reconnect(i, now);
    }

    /// The connection ends without fault (the server asked to close, or a
    /// request timed out): requests queued behind go out again on another
    /// connection, keeping their planned time.
    fn requeue_and_reconnect(&mut self, i: usize, now: Nanos) {
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

    fn on_event(&mut self, i: usize, readable: bool, closed: bool, writable: bool) {
        let Some(c) = self.conns.get_mut(i) else {
            return;
        };
        match c.state {
            State::Backoff { .. } | State::Idle => return,
            State::Connecting { since } => {
                let Some(s) = c.stream.as_ref() else { return };
                let s = s.tcp();
                let failed = match s.take_error() {
                    Ok(Some(_)) | Err(_) => true,
                    Ok(None) => match s.peer_addr() {
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
                record_ns(&mut self.connect_time, now.saturating_sub(since));
                if self.plan.tls.is_some() {
                    self.set_state(i, State::Handshaking { since: now });
                } else {
                    self.on_open(i);
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
        if writable && (c.to_write > 0 || c.stream.as_ref().is_some_and(Transport::pending_out)) {
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

    /// Every change of a connection's state goes through here, so that the
    /// count of connections being opened stays exact.
    fn set_state(&mut self, i: usize, state: State) {
        let c = &mut self.conns[i];
        match (c.state.opening(), state.opening()) {
            (false, true) => self.opening += 1,
            (true, false) => self.opening -= 1,
            _ => {}
        }
        c.state = state;
    }

    fn on_open(&mut self, i: usize) {
        let now = clock::now();
        self.sockets.opened += 1;
        self.failing_connects = 0;
        self.set_state(i, State::Open);
        let c = &mut self.conns[i];
        c.failures = 0;
        c.free_since = now;
        if let Some(s) = c.stream.as_ref() {
            let _ = s.tcp().set_nodelay(true);
        }
        if !self.plan.keepalive {
            // It was opened for the request it carries.
            self.flush_writes(i);
            return;
        }
        if self.pacer.is_some() {
            self.free.list(i, &mut self.conns[i], self.plan.pipeline);
            self.dispatch();
        } else {
            self.refill(i, now);
        }
    }

    /// Closed loop: fills connection `i` up to the pipeline depth, first with
    /// requests waiting to go out again, then (within the window) new ones.
    fn refill(&mut self, i: usize, now: Nanos) {
        let depth = self.plan.pipeline;
        // `inflight` already holds what is added here: it alone is the depth.
        let mut batch = 0;
        while self.conns[i].inflight.len() < depth {
            let Some(r) = self.retry.pop_front() else {
                break;
            };
            self.conns[i].inflight.push_back(Req {
                planned: r.planned,
                sent: now,
            });
            batch += 1;
        }
        while self.conns[i].inflight.len() < depth && self.may_plan(now) {
            self.plan_new(now);
            self.tally.first_send(now, now, now);
            self.conns[i].inflight.push_back(Req {
                planned: now,
                sent: now,
            });
            batch += 1;
        }
        self.queue_writes(i, batch);
    }

    /// Constant rate: sends every request that is due (those waiting to go
    /// out again first) on the connections that have been free longest, and
    /// notes when the next one is due.
    fn dispatch(&mut self) {
        // Without a free connection the next answer or opened connection
        // resumes dispatching, not the clock.
        self.next_due = None;
        self.starved = false;
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
            // resumes us.
            let Some(i) = self.free.first(&mut self.conns, self.plan.pipeline) else {
                self.starved = true;
                return;
            };
            let free_since = self.conns[i].free_since;
            let req = if from_retry {
                let r = self.retry.pop_front().expect("peeked");
                Req {
                    planned: r.planned,
                    sent: now,
                }
            } else {
                let due = self.take_slot();
                self.tally.first_send(now, due, free_since);
                Req {
                    planned: due,
                    sent: now,
                }
            };
            self.conns[i].inflight.push_back(req);
            self.queue_writes(i, 1);
        }
    }

    /// Writes the `k` requests just added to connection `i`'s queue (an
    /// idle slot first opens its connection).
    fn queue_writes(&mut self, i: usize, k: usize) {
        if k == 0 {
            return;
        }
        self.conns[i].to_write += k * self.plan.req_len;
        if self.conns[i].state == State::Idle {
            self.connect(i, clock::now());
        } else {
            self.flush_writes(i);
        }
    }

    fn flush_writes(&mut self, i: usize) {
        let wire = &self.plan.wire;
        let req_len = self.plan.req_len;
        let c = &mut self.conns[i];
        if c.state != State::Open {
            // Written once it opens.
            return;
        }
        let Some(s) = c.stream.as_mut() else { return };
        let mut failed = false;
        if s.pending_out() {
            match s.flush_out() {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(_) => failed = true,
            }
        }
        while c.to_write > 0 && !failed {
            let n = c.to_write.min(wire.len() - c.write_pos);
            match s.write(&wire[c.write_pos..c.write_pos + n]) {
                Ok(0) => {
                    failed = true;
                    break;
                }
                Ok(w) => {
                    c.to_write -= w;
                    c.write_pos = (c.write_pos + w) % req_len;
                    if w < n {
                        // Socket buffer full: the writable edge resumes us.
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    failed = true;
                    break;
                }
            }
        }
        if failed {
            self.write_failed(i);
        }
    }

    /// A write failed. A server that answers with `Connection: close` and
    /// closes while requests are still queued unread makes the kernel reset
    /// the connection, so the answer that said "close" may still be waiting
    /// to be read: read what arrived first, so that requests queued behind
    /// the close are sent again rather than failed. Only what is then still
    /// unanswered failed with the write.
    fn write_failed(&mut self, i: usize) {
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
        self.fail(i, Failure::Write);
    }

    /// Reads until the socket is drained. A short read means drained
    /// (edge-triggered: new data raises a new edge), unless the peer has
    /// closed, whose end-of-stream would otherwise never be seen.
    fn read(&mut self, i: usize, closed: bool) {
        let mut buf = std::mem::take(&mut self.buf);
        let drains = self.conns[i]
            .stream
            .as_ref()
            .is_some_and(Transport::short_read_drains);
        let stamped = self.deferred;
        while let Some(s) = self.conns[i].stream.as_mut() {
            let got = if stamped {
                s.read_stamped(&mut buf[..])
            } else {
                s.read(&mut buf[..]).map(|n| (n, None))
            };
            match got {
                Ok((0, _)) => {
                    self.on_eof(i);
                    break;
                }
                Ok((n, stamp)) => {
                    let now = self.arrival(i, stamp);
                    self.tally.bytes(now, n);
                    if !self.process(i, &buf[..n], now) {
                        break;
                    }
                    if n < buf.len() && !closed && drains {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.fail(i, Failure::Read);
                    break;
                }
            }
        }
        if let Some(c) = self.conns.get_mut(i) {
            c.drained_at = clock::now();
        }
        self.buf = buf;
    }

    /// When bytes just read from connection `i` arrived: the kernel's
    /// receive timestamp where there is one, else now. A timestamp is
    /// trusted only between the last time the socket was found empty and
    /// now; outside that (a wall-clock step between stamping and reading)
    /// the read time stands, which can only lengthen a latency.
    #[inline]
    fn arrival(&self, i: usize, stamp: Option<u64>) -> Nanos {
        arrival_time(
            stamp,
            self.realtime_offset,
            self.conns[i].drained_at,
            clock::now(),
        )
    }

    /// Parses what arrived; returns false when the connection was replaced.
    fn process(&mut self, i: usize, data: &[u8], now: Nanos) -> bool {
        let pipeline = self.plan.pipeline;
        let was_full = self.conns[i].inflight.len() >= pipeline;
        let Worker {
            conns,
            tally,
            sockets,
            ..
        } = self;
        let mut completed = 0;
        let parsed = conns[i].parse(data, |c, status| match c.inflight.pop_front() {
            Some(r) => {
                tally.answered(now, r, status);
                completed += 1;
            }
            // An answer nobody asked for (a 408 before an idle close, say):
            // a fact about the server, not a request's outcome.
            None => sockets.unsolicited_responses += 1,
        });
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
        if completed > 0 {
            if self.pacer.is_some() {
                if was_full {
                    self.conns[i].free_since = now;
                }
                self.free.list(i, &mut self.conns[i], self.plan.pipeline);
                self.dispatch();
            } else {
                self.refill(i, now);
            }
        }
        true
    }

    fn on_eof(&mut self, i: usize) {
        let now = clock::now();
        self.sockets.closed_by_server += 1;
        let c = &mut self.conns[i];
        match c.parser.on_eof(c.pending.len()) {
            Ok(Some(Step::Done { status, .. })) => {
                // A body that ran until the close: that was its end.
                match c.inflight.pop_front() {
                    Some(r) => self.tally.answered(now, r, status),
                    None => self.sockets.unsolicited_responses += 1,
                }
                self.requeue_and_reconnect(i, now);
            }
            Ok(_) => {
                // Closed between responses: every request still awaited
                // failed with it.
                self.fail(i, Failure::Read);
            }
            Err(_) => self.fail(i, Failure::Parse),
        }
    }

    /// Timeouts, slow connects, reconnect back-offs, and requests that waited
    /// for a connection until their time was up. Scanning every few
    /// milliseconds is far cheaper than a timer per request.
    fn scan(&mut self, now: Nanos) {
        let timeout = self.plan.timeout;
        let mut open = 0;
        // In the drain, a connection is only worth reopening for requests
        // still to be sent.
        let wanted = !self.draining || !self.retry.is_empty() || self.untaken(self.end) > 0;
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            match c.state {
                State::Open => {
                    open += 1;
                    if let Some(r) = c.inflight.front() {
                        if now.saturating_sub(r.planned) >= timeout {
                            let r = self.conns[i].inflight.pop_front().expect("peeked");
                            self.tally.failed(now, r.planned, Failure::Timeout);
                            self.requeue_and_reconnect(i, now);
                        }
                    }
                }
                State::Connecting { since } => {
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
            self.tally.failed(now, r.planned, why);
        }
        if let Some(p) = self.pacer.as_ref() {
            let expired = now.saturating_sub(timeout).saturating_add(1);
            let n = p
                .due_before(expired.min(self.end))
                .saturating_sub(self.next_i);
            for _ in 0..n {
                let due = self.take_slot();
                self.never_sent_in_window(due);
                self.tally.failed(now, due, why);
            }
        }
    }
}

/// A receive timestamp (`stamp`, CLOCK_REALTIME) on the engine's clock,
/// given `offset` = realtime − monotonic. Trusted only within [`floor`,
/// `now`]: bytes cannot have arrived before the socket was last found empty,
/// nor after they were read. Outside that (a wall-clock step between the
/// stamp and the read) or without a stamp, the read time `now` stands,
/// which can only lengthen a latency.
fn arrival_time(stamp: Option<u64>, offset: i128, floor: Nanos, now: Nanos) -> Nanos {
    let Some(rt) = stamp else { return now };
    let t = rt as i128 - offset;
    if t < floor as i128 || t > now as i128 {
        return now;
    }
    t as Nanos
}

/// Keeps the retry queue in planned order after requests were put back at
/// its front (rarely out of order: only when two connections strand requests
/// of interleaved plans).
fn sort_if_needed(q: &mut VecDeque<Req>) {
    let sorted = q
        .iter()
        .zip(q.iter().skip(1))
        .all(|(a, b)| a.planned <= b.planned);
    if !sorted {
        q.make_contiguous().sort_by_key(|r| r.planned);
    }
}

/// The end of interval `second`, at most the window's `end`.
fn interval_end(plan: &ThreadPlan, second: i64, end: Nanos) -> Nanos {
    let edge = plan.measure_start as i128 + (second as i128 + 1) * NANOS_PER_SEC as i128;
    (edge.max(0) as u64).min(end)
}

fn pin_current_thread(cpus: &[usize]) -> io::Result<()> {
    if let Some(&bad) = cpus.iter().find(|&&c| c >= libc::CPU_SETSIZE as usize) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("CPU {bad} is beyond what this system can address"),
        ));
    }
    // SAFETY: cpu_set_t is plain data; CPU_SET bounds are checked above.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &cpu in cpus {
            libc::CPU_SET(cpu, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::arrival_time;

    const OFFSET: i128 = 1_700_000_000_000_000_000;

    #[test]
    fn a_stamp_between_the_last_empty_read_and_now_is_the_arrival() {
        let rt = (OFFSET + 5_000) as u64;
        assert_eq!(arrival_time(Some(rt), OFFSET, 1_000, 9_000), 5_000);
    }

    #[test]
    fn without_a_stamp_or_with_an_impossible_one_the_read_time_stands() {
        assert_eq!(arrival_time(None, OFFSET, 1_000, 9_000), 9_000);
        // Before the socket was last found empty: the wall clock stepped
        // forward after the stamp (a later arrival would look earlier).
        let early = (OFFSET + 500) as u64;
        assert_eq!(arrival_time(Some(early), OFFSET, 1_000, 9_000), 9_000);
        // After the read: the wall clock stepped back.
        let late = (OFFSET + 9_500) as u64;
        assert_eq!(arrival_time(Some(late), OFFSET, 1_000, 9_000), 9_000);
        // A stamp of 0 (timestamps not yet on) never yields a time.
        assert_eq!(arrival_time(Some(0), OFFSET, 1_000, 9_000), 9_000);
    }
}
