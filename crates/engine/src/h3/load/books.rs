//! The thread's books, as the TCP threads keep theirs: timeouts found by a
//! periodic scan, the per-second series as it goes, and at the end its
//! share of the outcome with everything outstanding closed in the ledger.

use crate::clock::{Nanos, NANOS_PER_SEC};
use crate::ledger::Req;
use crate::outcome::{Outcome, Phase, SecondSample};
use crate::pacer::Pacer;
use crate::stats::Failure;
use crate::worker::{generator, groups, interval_end, schedule, thread_rate, ThreadReport, Usage};
use crate::LoadModel;

use super::H3Worker;

impl H3Worker {
    /// Requests past their timeout are cancelled alone; handshakes past it
    /// end their connection; connections whose back-off is over open again.
    pub(super) fn scan(&mut self, now: Nanos) {
        let timeout = self.plan.timeout;
        let wanted = !self.draining || !self.retry.is_empty() || self.untaken(self.end) > 0;
        for i in 0..self.slots.len() {
            let mut late: Vec<u64> = self.slots[i]
                .inflight
                .iter()
                .filter(|(_, r)| now.saturating_sub(r.planned) >= timeout)
                .map(|(&s, _)| s)
                .collect();
            late.sort_unstable();
            for stream in late {
                let r = self.slots[i].inflight.remove(&stream).expect("listed");
                if let Some(c) = self.slots[i].conn.as_mut() {
                    c.cancel(stream);
                }
                self.report.cancelled += 1;
                self.tally.failed(now, r, Failure::Timeout);
            }
            let backoff_over = now >= self.slots[i].backoff_until;
            match self.slots[i].conn.as_mut() {
                Some(c) if c.closed.is_some() => self.end_connection(i, now),
                Some(c) if !c.connected && now.saturating_sub(c.started) >= timeout => {
                    let heard = c.link.conn.stats().udp_rx.datagrams > 0;
                    c.closed = Some(crate::h3::conn::Closed {
                        failure: if heard {
                            Failure::Tls
                        } else {
                            Failure::Connect
                        },
                        code: "handshake timeout".into(),
                        why: format!(
                            "no QUIC handshake with {} within {} ms{}",
                            self.peer,
                            timeout / 1_000_000,
                            if heard {
                                ""
                            } else {
                                ": nothing answered on UDP"
                            }
                        ),
                        by_server: false,
                    });
                    self.end_connection(i, now);
                }
                Some(_) => {}
                None if wanted && backoff_over => self.open(i, now),
                None => {}
            }
        }
        // Slots of the schedule no connection took before their timeout:
        // never sent, and charged now rather than at the end.
        while let Some(due) = self.pacer.as_ref().map(|p| p.due(self.next_i)) {
            if due >= self.end || now.saturating_sub(due) < timeout {
                break;
            }
            let r = self.take_slot();
            if self.tally.in_window(r.planned) {
                self.never_sent += 1;
            }
            self.tally.failed(now, r, Failure::Timeout);
        }
        // Requests that waited to go out again past their timeout.
        while let Some(r) = self.retry.front() {
            if now.saturating_sub(r.planned) < timeout {
                break;
            }
            let r = self.retry.pop_front().expect("peeked");
            self.tally.failed(now, r, Failure::Timeout);
        }
    }

    /// Ends every outstanding request: a timeout if its time is up, else
    /// unanswered (or interrupted).
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
        let mut left: Vec<Req> = Vec::new();
        for i in 0..self.slots.len() {
            left.extend(self.slots[i].inflight.drain().map(|(_, r)| r));
            if let Some(mut c) = self.slots[i].conn.take() {
                c.link.account(&mut self.report, c.connected);
                let at = c.link.now(now);
                c.link.conn.close(
                    at,
                    quinn_proto::VarInt::from_u32(crate::h3::frame::H3_NO_ERROR as u32),
                    bytes::Bytes::new(),
                );
                let _ = c.link.flush(now);
                self.poller.remove(c.link.fd());
            }
        }
        left.extend(self.retry.drain(..));
        left.sort_unstable_by_key(|r| r.planned);
        for r in left {
            self.tally.failed(now, r, why(r.planned));
        }
        let until = if interrupted { now } else { self.end };
        for _ in 0..self.untaken(until) {
            let r = self.take_slot();
            if self.tally.in_window(r.planned) {
                self.never_sent += 1;
            }
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
        let secs = |ns: Nanos| ns as f64 / NANOS_PER_SEC as f64;
        let sample = SecondSample {
            second: self.iv_second,
            phase,
            start_s: secs(self.iv_from - self.plan.start),
            duration_s: secs(to.max(self.iv_from) - self.iv_from),
            requests: iv.requests,
            errors: iv.errors,
            bytes: iv.bytes,
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
            connections: self.slots.len(),
            threads: 1,
            protocol: plan.protocol,
            h2: None,
            h3: Some(self.report),
            pipeline: 1,
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
                t.answered_latency
            },
            lateness: thread_rate.map(|_| t.lateness),
            status_codes: t.codes.to_map(),
            body_sizes: std::mem::take(&mut t.bodies),
            expect_status: plan.expect_status.as_str().to_string(),
            // QUIC has no connect apart from its handshake.
            connect_time: crate::histogram::new_histogram(),
            handshake_time: Some(self.handshake_time),
            tls_error: self.tls_error,
            keepalive: true,
            series: Vec::new(),
            generator: generator(from, to),
            schedule,
            sockets: self.sockets,
            interrupted,
            address: plan.addr.to_string(),
            proxy: None,
            auto_warmup: None,
            answer_clock: crate::endpoint::AnswerClock::Read,
            targets,
            stages,
            stage_plan: plan.stages.clone().unwrap_or_default(),
            timeout_mode: plan.timeout_mode,
            late_answers: t.late,
            thread_req_sec,
            silences,
        }
    }
}
