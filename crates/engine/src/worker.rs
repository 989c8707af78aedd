//! One load thread: its own event loop over its share of the connections.
//!
//! The hot path per request is one `read` and one `write` plus a share of an
//! `epoll_wait`. Sockets are registered once, edge-triggered, for both
//! directions, so the loop never calls `epoll_ctl` per request (wrk adds and
//! removes a write event for every request). A short read means the socket is
//! drained, which spares the extra `read` that would only return EAGAIN.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;

use hdrhistogram::Histogram;
use mio::net::TcpStream;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};

use crate::clock::{self, Nanos, NANOS_PER_SEC};
use crate::pacer::{ConstantPacer, Pacer};
use crate::response::{ResponseParser, Step};
use crate::stats::{new_histogram, record_ns, ErrorCounts};
use crate::timer::TimerFd;

const READ_BUF: usize = 64 * 1024;
const TIMER: Token = Token(usize::MAX);
const BACKOFF_MIN: Nanos = 10_000_000;
const BACKOFF_MAX: Nanos = 500_000_000;

/// Everything the workers share, fixed before they start.
pub(crate) struct Plan {
    pub addr: SocketAddr,
    /// `pipeline` back-to-back copies of the serialised request, so that k
    /// requests are one contiguous slice.
    pub wire: Vec<u8>,
    pub req_len: usize,
    pub no_body: bool,
    pub max_head: usize,
    pub pipeline: usize,
    pub timeout: Nanos,
    pub status_error_min: u16,
    pub start: Nanos,
    pub measure_start: Nanos,
    pub end: Nanos,
    pub rate: Option<f64>,
    pub threads: usize,
    pub cpus: Option<Vec<usize>>,
}

pub(crate) enum Report {
    Interval(Interval),
    Done(Box<WorkerResult>),
}

/// One worker's share of one second of the time series.
pub(crate) struct Interval {
    pub second: i64,
    pub requests: u64,
    pub errors: u64,
    pub bytes: u64,
    pub hist: Histogram<u64>,
}

pub(crate) struct WorkerResult {
    pub requests: u64,
    pub bytes: u64,
    pub errors: ErrorCounts,
    pub latency: Histogram<u64>,
    pub uncorrected: Histogram<u64>,
    pub lateness: Histogram<u64>,
    pub sent: u64,
    pub unsent: u64,
    pub waited: u64,
    pub cpu_ns: u64,
    pub wall_ns: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Connecting { since: Nanos },
    Open,
    Backoff { until: Nanos },
}

struct Conn {
    stream: Option<TcpStream>,
    state: State,
    parser: ResponseParser,
    /// Bytes of a response head (or chunk line) that arrived incomplete.
    pending: Vec<u8>,
    /// (planned, sent) per request in flight, oldest first.
    inflight: VecDeque<(Nanos, Nanos)>,
    to_write: usize,
    write_pos: usize,
    /// When the connection last gained room for another request.
    available_since: Nanos,
    idle_listed: bool,
    failures: u32,
}

#[derive(Clone, Copy)]
enum Fault {
    Read,
    Write,
    Parse,
}

/// Counters and histograms; kept apart from the connections so both can be
/// borrowed at once.
struct Tally {
    measure_start: Nanos,
    rate_mode: bool,
    status_error_min: u16,
    iv_requests: u64,
    iv_errors: u64,
    iv_bytes: u64,
    iv_hist: Histogram<u64>,
    requests: u64,
    bytes: u64,
    errors: ErrorCounts,
    latency: Histogram<u64>,
    uncorrected: Histogram<u64>,
    lateness: Histogram<u64>,
    sent: u64,
    waited: u64,
}

impl Tally {
    #[inline]
    fn response(&mut self, now: Nanos, planned: Nanos, sent: Nanos, status: u16) {
        let corrected = now.saturating_sub(planned);
        self.iv_requests += 1;
        record_ns(&mut self.iv_hist, corrected);
        if status >= self.status_error_min {
            self.iv_errors += 1;
        }
        if now >= self.measure_start {
            self.requests += 1;
            record_ns(&mut self.latency, corrected);
            if self.rate_mode {
                record_ns(&mut self.uncorrected, now.saturating_sub(sent));
            }
            if status >= self.status_error_min {
                self.errors.status += 1;
            }
        }
    }

    fn error(&mut self, now: Nanos, n: u64, f: impl FnOnce(&mut ErrorCounts) -> &mut u64) {
        self.iv_errors += n;
        if now >= self.measure_start {
            *f(&mut self.errors) += n;
        }
    }

    #[inline]
    fn bytes(&mut self, now: Nanos, n: usize) {
        self.iv_bytes += n as u64;
        if now >= self.measure_start {
            self.bytes += n as u64;
        }
    }
}

pub(crate) struct Worker {
    plan: Arc<Plan>,
    stop: Arc<AtomicBool>,
    tx: Sender<Report>,
    poll: Poll,
    events: Events,
    conns: Vec<Conn>,
    buf: Box<[u8]>,
    tally: Tally,
    pacer: Option<ConstantPacer>,
    timer: Option<TimerFd>,
    next_i: u64,
    idle: Vec<usize>,
    iv_second: i64,
    iv_end: Nanos,
    next_scan: Nanos,
    scan_every: Nanos,
}

impl Worker {
    pub fn new(
        index: usize,
        connections: usize,
        plan: Arc<Plan>,
        stop: Arc<AtomicBool>,
        tx: Sender<Report>,
    ) -> io::Result<Worker> {
        let poll = Poll::new()?;
        let (pacer, timer) = match plan.rate {
            Some(rate) => {
                let timer = TimerFd::new()?;
                poll.registry()
                    .register(&mut SourceFd(&timer.raw()), TIMER, Interest::READABLE)?;
                (
                    Some(ConstantPacer::new(plan.start, index, plan.threads, rate)),
                    Some(timer),
                )
            }
            None => (None, None),
        };
        let conns = (0..connections)
            .map(|_| Conn {
                stream: None,
                state: State::Backoff { until: 0 },
                parser: ResponseParser::new(plan.no_body, plan.max_head),
                pending: Vec::new(),
                inflight: VecDeque::with_capacity(plan.pipeline),
                to_write: 0,
                write_pos: 0,
                available_since: 0,
                idle_listed: false,
                failures: 0,
            })
            .collect();
        // The first interval starts at the run start and ends at the next
        // whole second counted from the measurement start.
        let warm = plan.measure_start - plan.start;
        let iv_second = -(warm.div_ceil(NANOS_PER_SEC) as i64);
        let iv_end = interval_end(&plan, iv_second);
        let scan_every = (plan.timeout / 20).clamp(1_000_000, 50_000_000);
        let tally = Tally {
            measure_start: plan.measure_start,
            rate_mode: plan.rate.is_some(),
            status_error_min: plan.status_error_min,
            iv_requests: 0,
            iv_errors: 0,
            iv_bytes: 0,
            iv_hist: new_histogram(),
            requests: 0,
            bytes: 0,
            errors: ErrorCounts::default(),
            latency: new_histogram(),
            uncorrected: new_histogram(),
            lateness: new_histogram(),
            sent: 0,
            waited: 0,
        };
        Ok(Worker {
            plan,
            stop,
            tx,
            poll,
            events: Events::with_capacity(1024),
            conns,
            buf: vec![0u8; READ_BUF].into_boxed_slice(),
            tally,
            pacer,
            timer,
            next_i: 0,
            idle: Vec::with_capacity(connections),
            iv_second,
            iv_end,
            next_scan: 0,
            scan_every,
        })
    }

    pub fn run(mut self) {
        let began = clock::now();
        let cpu0 = clock::thread_cpu();
        if let Some(cpus) = &self.plan.cpus {
            pin_current_thread(cpus);
        }
        if self.pacer.is_some() {
            // The default 50 µs slack would make every timer wake-up late.
            // SAFETY: prctl with integer arguments only.
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1u64, 0, 0, 0) };
        }
        let now = clock::now();
        for i in 0..self.conns.len() {
            self.connect(i, now);
        }
        loop {
            let now = clock::now();
            // Every whole interval that has passed is sent on its own, even
            // when this thread was descheduled across several of them; the
            // last one (ending at the run's end) is sent after the loop.
            while now >= self.iv_end && self.iv_end < self.plan.end {
                self.flush_interval();
            }
            if now >= self.plan.end || self.stop.load(Ordering::Relaxed) {
                break;
            }
            if now >= self.next_scan {
                self.scan(now);
                self.next_scan = now + self.scan_every;
            }
            if self.pacer.is_some() {
                self.dispatch();
            }
            let wake = self.plan.end.min(self.iv_end).min(self.next_scan);
            let timeout = std::time::Duration::from_nanos(wake.saturating_sub(clock::now()));
            let mut events = std::mem::replace(&mut self.events, Events::with_capacity(0));
            if let Err(e) = self.poll.poll(&mut events, Some(timeout)) {
                if e.kind() != io::ErrorKind::Interrupted {
                    // epoll itself failing leaves nothing sensible to do but stop.
                    self.events = events;
                    break;
                }
            }
            for ev in events.iter() {
                let token = ev.token();
                if token == TIMER {
                    if let Some(t) = self.timer.as_mut() {
                        t.clear();
                    }
                    continue;
                }
                // Data and the peer's FIN can arrive in one edge; then a
                // short read does not mean "nothing more", and reading must
                // go on until it sees the end of the stream.
                let closed = ev.is_read_closed() || ev.is_error();
                let readable = ev.is_readable() || closed;
                self.on_event(token.0, readable, closed, ev.is_writable());
            }
            self.events = events;
        }
        let stopped = clock::now().min(self.plan.end);
        // The interval in progress is sent even if partial: it holds real data.
        self.flush_interval();
        let unsent = match &self.pacer {
            Some(p) => p.due_before(stopped).saturating_sub(self.next_i),
            None => 0,
        };
        let cpu_ns = clock::thread_cpu() - cpu0;
        let wall_ns = clock::now() - began;
        let t = self.tally;
        let _ = self.tx.send(Report::Done(Box::new(WorkerResult {
            requests: t.requests,
            bytes: t.bytes,
            errors: t.errors,
            latency: t.latency,
            uncorrected: t.uncorrected,
            lateness: t.lateness,
            sent: t.sent,
            unsent,
            waited: t.waited,
            cpu_ns,
            wall_ns,
        })));
    }

    fn flush_interval(&mut self) {
        let hist = std::mem::replace(&mut self.tally.iv_hist, new_histogram());
        let _ = self.tx.send(Report::Interval(Interval {
            second: self.iv_second,
            requests: std::mem::take(&mut self.tally.iv_requests),
            errors: std::mem::take(&mut self.tally.iv_errors),
            bytes: std::mem::take(&mut self.tally.iv_bytes),
            hist,
        }));
        self.iv_second += 1;
        self.iv_end = interval_end(&self.plan, self.iv_second);
    }

    fn connect(&mut self, i: usize, now: Nanos) {
        let c = &mut self.conns[i];
        match TcpStream::connect(self.plan.addr) {
            Ok(mut s) => {
                let interest = Interest::READABLE | Interest::WRITABLE;
                if let Err(e) = self.poll.registry().register(&mut s, Token(i), interest) {
                    let _ = e;
                    self.connect_failed(i, now);
                    return;
                }
                c.stream = Some(s);
                c.state = State::Connecting { since: now };
            }
            Err(_) => self.connect_failed(i, now),
        }
    }

    fn connect_failed(&mut self, i: usize, now: Nanos) {
        self.tally.error(now, 1, |e| &mut e.connect);
        let c = &mut self.conns[i];
        if let Some(mut s) = c.stream.take() {
            let _ = self.poll.registry().deregister(&mut s);
        }
        // Back off so a refusing server does not turn the generator into a
        // busy loop of failed connects.
        let backoff = (BACKOFF_MIN << c.failures.min(6)).min(BACKOFF_MAX);
        c.failures += 1;
        c.state = State::Backoff {
            until: now + backoff,
        };
    }

    /// Drops the connection and opens a fresh one; requests in flight on it
    /// are abandoned (the caller has counted them if they were errors).
    fn reconnect(&mut self, i: usize, now: Nanos) {
        let c = &mut self.conns[i];
        if let Some(mut s) = c.stream.take() {
            let _ = self.poll.registry().deregister(&mut s);
        }
        c.parser = ResponseParser::new(self.plan.no_body, self.plan.max_head);
        c.pending.clear();
        c.inflight.clear();
        c.to_write = 0;
        c.write_pos = 0;
        self.connect(i, now);
    }

    fn fail(&mut self, i: usize, fault: Fault) {
        let now = clock::now();
        match fault {
            Fault::Read => self.tally.error(now, 1, |e| &mut e.read),
            Fault::Write => self.tally.error(now, 1, |e| &mut e.write),
            Fault::Parse => self.tally.error(now, 1, |e| &mut e.parse),
        }
        self.reconnect(i, now);
    }

    fn on_event(&mut self, i: usize, readable: bool, closed: bool, writable: bool) {
        let Some(c) = self.conns.get_mut(i) else {
            return;
        };
        match c.state {
            State::Backoff { .. } => return,
            State::Connecting { .. } => {
                let Some(s) = c.stream.as_ref() else { return };
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
                if failed {
                    self.connect_failed(i, clock::now());
                    return;
                }
                self.on_open(i);
            }
            State::Open => {}
        }
        if writable && self.conns[i].to_write > 0 {
            self.flush_writes(i);
        }
        if readable && self.conns[i].state == State::Open {
            self.read(i, closed);
        }
    }

    fn on_open(&mut self, i: usize) {
        let now = clock::now();
        let c = &mut self.conns[i];
        c.state = State::Open;
        c.failures = 0;
        c.available_since = now;
        if let Some(s) = c.stream.as_ref() {
            let _ = s.set_nodelay(true);
        }
        if self.pacer.is_some() {
            self.list_idle(i);
        } else {
            let k = self.plan.pipeline;
            self.send(i, k, None);
        }
    }

    fn list_idle(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if !c.idle_listed && c.state == State::Open && c.inflight.len() < self.plan.pipeline {
            c.idle_listed = true;
            self.idle.push(i);
        }
    }

    fn pop_idle(&mut self) -> Option<usize> {
        while let Some(i) = self.idle.pop() {
            let c = &mut self.conns[i];
            c.idle_listed = false;
            if c.state == State::Open && c.inflight.len() < self.plan.pipeline {
                return Some(i);
            }
        }
        None
    }

    /// Queues `k` requests on connection `i` and writes what the socket takes.
    fn send(&mut self, i: usize, k: usize, planned: Option<Nanos>) {
        let now = clock::now();
        let c = &mut self.conns[i];
        for _ in 0..k {
            c.inflight.push_back((planned.unwrap_or(now), now));
        }
        c.to_write += k * self.plan.req_len;
        self.flush_writes(i);
    }

    fn flush_writes(&mut self, i: usize) {
        let wire = &self.plan.wire;
        let req_len = self.plan.req_len;
        let c = &mut self.conns[i];
        let Some(s) = c.stream.as_mut() else { return };
        let mut failed = false;
        while c.to_write > 0 {
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
            self.fail(i, Fault::Write);
        }
    }

    /// Reads until the socket is drained. A short read means drained
    /// (edge-triggered: new data raises a new edge), unless the peer has
    /// closed, whose end-of-stream would otherwise never be seen.
    fn read(&mut self, i: usize, closed: bool) {
        let mut buf = std::mem::take(&mut self.buf);
        while let Some(s) = self.conns[i].stream.as_mut() {
            match s.read(&mut buf[..]) {
                Ok(0) => {
                    self.on_eof(i);
                    break;
                }
                Ok(n) => {
                    let now = clock::now();
                    self.tally.bytes(now, n);
                    if !self.process(i, &buf[..n], now) {
                        break;
                    }
                    if n < buf.len() && !closed {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.fail(i, Fault::Read);
                    break;
                }
            }
        }
        self.buf = buf;
    }

    /// Parses what arrived; returns false when the connection was replaced.
    fn process(&mut self, i: usize, data: &[u8], now: Nanos) -> bool {
        let Worker { conns, tally, .. } = self;
        let c = &mut conns[i];
        let buffered = !c.pending.is_empty();
        if buffered {
            c.pending.extend_from_slice(data);
        }
        let mut off = 0;
        let mut completed = 0;
        let mut close = false;
        let mut fault = None;
        loop {
            let src = if buffered {
                &c.pending[off..]
            } else {
                &data[off..]
            };
            match c.parser.feed(src) {
                Ok(Step::NeedMore { consumed }) => {
                    off += consumed;
                    break;
                }
                Ok(Step::Done {
                    consumed,
                    status,
                    close: cl,
                }) => {
                    off += consumed;
                    let Some((planned, sent)) = c.inflight.pop_front() else {
                        // A response nobody asked for.
                        fault = Some(Fault::Parse);
                        break;
                    };
                    tally.response(now, planned, sent, status);
                    completed += 1;
                    if cl {
                        close = true;
                        break;
                    }
                }
                Err(_) => {
                    fault = Some(Fault::Parse);
                    break;
                }
            }
        }
        if let Some(f) = fault {
            self.fail(i, f);
            return false;
        }
        if close {
            // The server asked to close: not an error, just a new connection.
            self.reconnect(i, now);
            return false;
        }
        if buffered {
            c.pending.drain(..off);
        } else if off < data.len() {
            c.pending.extend_from_slice(&data[off..]);
        }
        if completed > 0 {
            c.available_since = now;
            if self.pacer.is_some() {
                self.list_idle(i);
                self.dispatch();
            } else if now < self.plan.end {
                self.send(i, completed, None);
            }
        }
        true
    }

    fn on_eof(&mut self, i: usize) {
        let now = clock::now();
        let c = &mut self.conns[i];
        match c.parser.on_eof(c.pending.len()) {
            Ok(Some(Step::Done { status, .. })) => {
                if let Some((planned, sent)) = c.inflight.pop_front() {
                    self.tally.response(now, planned, sent, status);
                }
                self.reconnect(i, now);
            }
            Ok(_) => {
                // Closed between responses: an error only if we were waiting.
                if !c.inflight.is_empty() {
                    self.fail(i, Fault::Read);
                } else {
                    self.reconnect(i, now);
                }
            }
            Err(_) => self.fail(i, Fault::Parse),
        }
    }

    /// Timeouts, slow connects and reconnect back-offs. Scanning every few
    /// milliseconds is far cheaper than a timer per request.
    fn scan(&mut self, now: Nanos) {
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            match c.state {
                State::Open => {
                    if let Some(&(_, sent)) = c.inflight.front() {
                        if now.saturating_sub(sent) >= self.plan.timeout {
                            let n = c.inflight.len() as u64;
                            self.tally.error(now, n, |e| &mut e.timeout);
                            self.reconnect(i, now);
                        }
                    }
                }
                State::Connecting { since } => {
                    if now.saturating_sub(since) >= self.plan.timeout {
                        self.connect_failed(i, now);
                    }
                }
                State::Backoff { until } => {
                    if now >= until {
                        self.connect(i, now);
                    }
                }
            }
        }
    }

    /// Sends every request that is due, on connections with room for one.
    fn dispatch(&mut self) {
        loop {
            let Some(pacer) = self.pacer.as_ref() else {
                return;
            };
            let due = pacer.due(self.next_i);
            if due >= self.plan.end {
                return;
            }
            let now = clock::now();
            if due > now {
                if let Some(t) = self.timer.as_mut() {
                    t.arm(due);
                }
                return;
            }
            // No free connection: the next response to arrive resumes us.
            let Some(i) = self.pop_idle() else { return };
            let avail = self.conns[i].available_since;
            if now >= self.plan.measure_start {
                // Lateness counts from when sending became possible: a wait
                // for a busy connection is the server's doing, not ours.
                record_ns(&mut self.tally.lateness, now.saturating_sub(due.max(avail)));
                self.tally.sent += 1;
                if avail > due {
                    self.tally.waited += 1;
                }
            }
            self.next_i += 1;
            self.send(i, 1, Some(due));
            self.list_idle(i);
        }
    }
}

fn interval_end(plan: &Plan, second: i64) -> Nanos {
    let edge = plan.measure_start as i128 + (second as i128 + 1) * NANOS_PER_SEC as i128;
    (edge.max(0) as u64).min(plan.end)
}

fn pin_current_thread(cpus: &[usize]) {
    // SAFETY: cpu_set_t is plain data; CPU_SET bounds are checked below.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &cpu in cpus {
            if cpu < libc::CPU_SETSIZE as usize {
                libc::CPU_SET(cpu, &mut set);
            }
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}
