//! The thread's books: the per-second series as it goes, and at the end its
//! share of the run's outcome, with every request still outstanding closed
//! in the ledger.

use crate::clock::{Nanos, NANOS_PER_SEC};
use crate::generator::QuotaPause;
use crate::ledger::{Tally, TargetTally};
use crate::outcome::{Generator, Outcome, Phase, Schedule, SecondSample, TargetOutcome, CONTENDED};
use crate::stats::Failure;
use crate::{H2Report, LoadModel};

use super::conn::State;
use super::{ThreadPlan, ThreadReport, Usage, Worker, SATURATED};

impl Worker {
    /// This thread's part of the run's outcome.
    pub(super) fn result(mut self, now: Nanos, interrupted: bool) -> Outcome {
        let window_end = self.window_to.as_ref().map_or(now, |u| u.at).min(self.end);
        let (from, to) = match (self.window_from.take(), self.window_to.take()) {
            (Some(a), Some(b)) if b.at > a.at => (a, b),
            _ => {
                let u = Usage::now(&mut self.quota);
                (u.clone(), u)
            }
        };
        let answer_clock = if self.stamped() && self.unstamped.is_none() {
            crate::endpoint::AnswerClock::KernelStamp
        } else {
            crate::endpoint::AnswerClock::Read
        };
        let generator = Generator {
            unstamped: self.unstamped,
            ..generator(from, to)
        };
        let plan = &self.plan;
        let mut t = self.tally;
        t.settle();
        // Interrupted, the window ends where the run did: neither a
        // silence nor wrk's last Req/Sec interval is time it never reached.
        t.close_window(window_end);
        let thread_req_sec = t.req_sec.finish();
        let silences = t.silence.finish();
        let targets = groups(std::mem::take(&mut t.targets), plan.names.iter().cloned());
        let labels = plan.stages.iter().flatten().map(|s| s.label());
        let stages = groups(std::mem::take(&mut t.stages), labels);
        let thread_rate = thread_rate(plan);
        let schedule = thread_rate.map(|rate| schedule(rate, &t, self.never_sent, plan.send_ahead));
        let secs = |ns: Nanos| ns as f64 / NANOS_PER_SEC as f64;
        Outcome {
            model: match thread_rate {
                Some(rps) => LoadModel::ConstantRate { rps },
                None => LoadModel::ClosedLoop,
            },
            connections: self.conns.len(),
            threads: 1,
            protocol: plan.protocol,
            h2: plan
                .h2
                .then(|| h2_report(self.h2_report, plan.pipeline, &self.h2_frames)),
            h3: None,
            pipeline: if plan.h2 { 1 } else { plan.pipeline },
            timeout_s: secs(plan.timeout),
            warmup_s: secs(plan.measure_start - plan.start),
            measured_s: secs(window_end.saturating_sub(plan.measure_start)),
            planned: t.planned,
            requests: t.answered,
            arrived: t.arrived,
            bytes_read: t.bytes,
            errors: t.errors,
            latency: t.latency,
            answered_latency: t.answered_latency.clone(),
            unexpected_latency: t.unexpected_latency,
            uncorrected: if thread_rate.is_some() {
                t.uncorrected
            } else {
                // In closed loop the send is the plan: service time is the
                // answered requests' latency.
                t.answered_latency
            },
            lateness: thread_rate.map(|_| t.lateness),
            status_codes: t.codes.to_map(),
            body_sizes: std::mem::take(&mut t.bodies),
            expect_status: plan.expect_status.as_str().to_string(),
            connect_time: self.connect_time,
            handshake_time: plan.tls.as_ref().map(|_| self.handshake_time),
            tls_error: self.tls_error,
            keepalive: plan.keepalive,
            series: Vec::new(),
            generator,
            schedule,
            sockets: self.sockets,
            interrupted,
            address: plan.addr.to_string(),
            // Set by the run, which knows the target.
            proxy: None,
            auto_warmup: None,
            answer_clock,
            targets,
            stages,
            stage_plan: plan.stages.clone().unwrap_or_default(),
            timeout_mode: plan.timeout_mode,
            late_answers: t.late,
            thread_req_sec,
            silences,
        }
    }

    /// The drain waits at most this long after the window: every request
    /// planned in the window has reached its timeout by then, and one more
    /// scan interval lets the scan see it.
    pub(super) fn drain_deadline(&self) -> Nanos {
        self.end + self.plan.timeout + self.scan_every
    }

    /// Whether the drain is over: nothing is outstanding, and (HTTP/1.1 with
    /// keep-alive) the connections were watched for a while longer. In a
    /// closed loop a stray taken for an answer is never seen (each answer
    /// sends the next request, and every answer after it is credited one
    /// request late) until the server's last answer comes with nothing in
    /// flight, within about one service time of the last request: twice
    /// the answers' p99, at least 1 ms and at most the timeout. What
    /// arrives then is read as it comes (the drain watches every
    /// connection) and takes the connection's latest answers back (see
    /// [`super::conn::Conn::credit`]).
    pub(super) fn lingered(&mut self, now: Nanos) -> bool {
        if self.outstanding() > 0 {
            return false;
        }
        if self.plan.h2 || !self.plan.keepalive {
            return true;
        }
        if let Some(until) = self.linger_until {
            return now >= until;
        }
        let p99 = if self.tally.answered_latency.is_empty() {
            0
        } else {
            self.tally.answered_latency.value_at_quantile(0.99) * 1_000
        };
        self.linger_until =
            Some(now + (2 * p99).clamp(1_000_000, self.plan.timeout.max(1_000_000)));
        // Idle connections read late wake the thread only for a whole
        // low-water mark: each is read once now, and watched from now on.
        for i in 0..self.conns.len() {
            if self.conns[i].state == State::Open {
                self.watch(i);
                self.is_clean(i);
            }
        }
        false
    }

    /// Requests planned and not yet ended.
    pub(super) fn outstanding(&self) -> u64 {
        let flying: usize = self.conns.iter().map(|c| c.inflight.len()).sum();
        flying as u64 + self.retry.len() as u64 + self.untaken(self.end)
    }

    /// Ends every outstanding request: a timeout if its time is up, else
    /// unanswered. Interrupted runs end their schedule at `now`, and what
    /// was still awaited then is charged what it waited until the interrupt.
    pub(super) fn close_books(&mut self, now: Nanos, interrupted: bool) {
        let timeout = self.plan.timeout;
        let why = |planned: Nanos| {
            if now.saturating_sub(planned) >= timeout {
                Failure::Timeout
            } else if interrupted {
                Failure::Interrupted
            } else {
                Failure::Unanswered
            }
        };
        for i in 0..self.conns.len() {
            while let Some(r) = self.conns[i].inflight.pop_front() {
                self.tally.failed(now, r, why(r.planned));
            }
        }
        while let Some(r) = self.retry.pop_front() {
            self.tally.failed(now, r, why(r.planned));
        }
        let until = if interrupted { now } else { self.end };
        let left = self.untaken(until);
        for _ in 0..left {
            let r = self.take_slot();
            self.never_sent_in_window(r.planned);
            self.tally.failed(now, r, why(r.planned));
        }
    }

    pub(super) fn flush_interval(&mut self, to: Nanos) {
        // Once a second, so that a thread moved under a CPU quota while it
        // runs is seen paused from then on ([`QuotaWatch`]).
        self.quota.look();
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
}

/// The end of interval `second`, at most the window's `end`.
pub(crate) fn interval_end(plan: &ThreadPlan, second: i64, end: Nanos) -> Nanos {
    let edge = plan.measure_start as i128 + (second as i128 + 1) * NANOS_PER_SEC as i128;
    (edge.max(0) as u64).min(end)
}

/// The shortest window over which a load thread's busy and waiting
/// shares are judged.
const JUDGED: Nanos = 50_000_000;

/// The thread's cost over the window, from its usage at the window's
/// start (`from`) and end (`to`).
///
/// Over a window shorter than [`JUDGED`] neither saturation nor contention
/// is said: a thread just woken waits its turn for a CPU for a millisecond
/// or more, which over a request count of one (or a generator given none
/// of it, whose window ends as it opens) read as 95 % busy.
pub(crate) fn generator(from: Usage, to: Usage) -> Generator {
    let span = to.at.saturating_sub(from.at);
    let judged = span >= JUDGED;
    let elapsed = span.max(1) as f64;
    let busy = ((to.cpu + to.wait).saturating_sub(from.cpu + from.wait)) as f64 / elapsed;
    let busy = busy.min(1.0);
    // Ready to run but not running: another thread or process had the
    // CPU. What the thread offered then is less than it would have.
    let waiting = (to.wait.saturating_sub(from.wait) as f64 / elapsed).min(1.0);
    Generator {
        cpu_s: to.cpu.saturating_sub(from.cpu) as f64 / NANOS_PER_SEC as f64,
        busy_fraction: busy,
        thread_busy: vec![busy],
        saturated: judged && busy > SATURATED,
        wait_fraction: waiting,
        contended: judged && waiting >= CONTENDED,
        steal_fraction: None,
        memory_stall_fraction: None,
        unstamped: None,
        quota_pause: to
            .throttled
            .since(&from.throttled)
            .map(|(ns, group)| QuotaPause {
                throttled_s: ns as f64 / NANOS_PER_SEC as f64,
                group: group.display().to_string(),
            }),
        stalled: None,
    }
}

/// Named parts of the window (targets or stages), each tally with its name.
pub(crate) fn groups(
    tallies: Vec<TargetTally>,
    names: impl Iterator<Item = String>,
) -> Vec<TargetOutcome> {
    tallies
        .into_iter()
        .zip(names)
        .map(|(x, name)| TargetOutcome {
            name,
            planned: x.planned,
            requests: x.answered,
            arrived: x.arrived,
            answered_within: x.within,
            errors: x.errors,
            status_codes: x.codes.to_map(),
            body_sizes: x.bodies,
            latency: x.latency,
        })
        .collect()
}

/// This thread's share of a constant rate; `None` in a closed loop.
pub(crate) fn thread_rate(plan: &ThreadPlan) -> Option<f64> {
    // A profile's rate is reported as its mean over the window.
    let rate = match &plan.stages {
        Some(st) => plan.rate.map(|_| {
            let secs: f64 = st.iter().map(|s| s.duration.as_secs_f64()).sum();
            st.iter().map(|s| s.requests()).sum::<f64>() / secs.max(1e-9)
        }),
        None => plan.rate,
    };
    rate.map(|r| r / plan.threads as f64)
}

/// How the thread kept its schedule of `rate` requests per second.
pub(crate) fn schedule(rate: f64, t: &Tally, never_sent: u64, send_ahead: Nanos) -> Schedule {
    let lateness_p99 = if t.lateness.is_empty() {
        0
    } else {
        t.lateness.value_at_quantile(0.99)
    };
    Schedule {
        rate,
        sent: t.sent,
        never_sent,
        waited_for_connection: t.waited,
        send_ahead_us: send_ahead as f64 / 1e3,
        sent_early: t.early,
        early_max_us: t.early_max as f64 / 1e3,
        behind: lateness_p99 > 1_000 || never_sent > 0,
    }
}

/// The thread's HTTP/2 report, with its streams per connection and the
/// frames it received by type.
fn h2_report(mut h: H2Report, streams: usize, frames: &[u64; 11]) -> H2Report {
    h.streams = streams;
    h.frames_received = (0..11u8)
        .filter(|&k| frames[k as usize] > 0)
        .map(|k| {
            let name = if k < 10 {
                crate::h2::frame::kind_name(k)
            } else {
                "other".into()
            };
            (name, frames[k as usize])
        })
        .collect();
    h
}
