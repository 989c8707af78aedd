//! The rate a run's answers show, and what its CPU per request divides by.
//!
//! A window of T seconds at a constant rate R plans R·T requests. A server
//! that keeps the rate with latency L answers R·(T − L) of them within the
//! window and the last R·L just after it: those are its last requests' own
//! latency, and the rate is `requests / T`. A server that falls behind
//! answers its backlog after the window, in the drain (every request of the
//! window is awaited until its timeout): crediting those answers to the
//! window's seconds would show the rate it was asked for, not the one it
//! kept, so then the rate counts only the answers that arrived within the
//! window, as wrk, wrk2 and oha do. The late ones stay in the ledger and in
//! the latency, with all they waited.
//!
//! Which is which: every request in flight holds a slot (a connection, a
//! stream, a place in a pipeline), so a server keeping the rate has at most
//! `slots` requests in flight when the window ends and answers at most that
//! many after it. More answers after the window than slots were requests
//! still waiting to be sent when it ended: a backlog, so the server fell
//! behind. The rule asks for both that and 1 % of the window's answers,
//! and so never calls a server that kept the rate behind, however short
//! the window or slow its answers. A server that queues internally behind
//! more slots than its backlog is not flagged; what that leaves in the rate
//! is at most `slots / T` a second, and its latency shows the queue.
//!
//! A target of a request mix is credited as the run is: its answers, or
//! those of them that arrived within the window. A stage of a rate profile
//! gets the same rule on its own span, so a stage the server fell behind
//! in is credited with the answers that came during it (a backlog of the
//! stage before included: the server answered them then), not with its own
//! backlog answered in the next stage or the drain.

use crate::config::LoadModel;
use crate::outcome::{Outcome, TargetOutcome, LATE_SEND_US};

impl Outcome {
    /// Answers per second of the window (see
    /// [`Outcome::throughput_answers`]).
    pub fn rps(&self) -> f64 {
        if self.measured_s > 0.0 {
            self.throughput_answers() as f64 / self.measured_s
        } else {
            0.0
        }
    }

    /// The answers the window's rate and its CPU per request count: its
    /// requests answered, or the answers that arrived within it when the
    /// server fell behind (see the module's comment).
    pub fn throughput_answers(&self) -> u64 {
        if self.answered_after_window().is_some() {
            self.arrived
        } else {
            self.requests
        }
    }

    /// At a constant rate, the window's answers that came after it, when
    /// they are over 1 % of them and more than could have been in flight
    /// at its end: the server fell behind the schedule.
    pub fn answered_after_window(&self) -> Option<u64> {
        let after = self.requests.saturating_sub(self.arrived);
        (matches!(self.model, LoadModel::ConstantRate { .. })
            && after * 100 > self.requests
            && after > self.slots())
        .then_some(after)
    }

    /// The most requests the run could have had in flight at once.
    fn slots(&self) -> u64 {
        let per_connection = match (&self.h2, &self.h3) {
            (Some(h2), _) => h2.streams,
            (None, Some(h3)) => h3.streams,
            (None, None) => self.pipeline,
        };
        (self.connections * per_connection.max(1)) as u64
    }

    /// The rate of one target of a request mix: its answers per second of
    /// the window, or, when the server fell behind, those of its answers
    /// that arrived within the window, as the run's own rate counts.
    pub fn target_rps(&self, t: &TargetOutcome) -> f64 {
        if self.measured_s <= 0.0 {
            return 0.0;
        }
        let n = if self.answered_after_window().is_some() {
            t.arrived
        } else {
            t.requests
        };
        n as f64 / self.measured_s
    }

    /// The rate stage `i` of a rate profile kept, by the run's rule applied
    /// to the stage's span: its own requests answered, per second of the
    /// span, unless more of them were answered after the span than could
    /// have been in flight at its end (and over 1 %); then the answers that
    /// arrived within the span, whichever stage planned them. A stage the
    /// server fell behind in is thus credited with what it answered during
    /// it, not with its backlog answered in the next stage or the drain.
    pub fn stage_rps(&self, i: usize) -> f64 {
        let (Some(s), Some(span)) = (self.stages.get(i), self.stage_span_s(i)) else {
            return 0.0;
        };
        if span <= 0.0 {
            return 0.0;
        }
        let n = if self.stage_behind(i).is_some() {
            s.arrived
        } else {
            s.requests
        };
        n as f64 / span
    }

    /// Stage `i`'s own answers that came after its span, when the server
    /// fell behind in it (see [`Outcome::stage_rps`]).
    pub fn stage_behind(&self, i: usize) -> Option<u64> {
        let s = self.stages.get(i)?;
        let after = s.requests.saturating_sub(s.answered_within);
        (matches!(self.model, LoadModel::ConstantRate { .. })
            && after * 100 > s.requests
            && after > self.slots())
        .then_some(after)
    }

    /// Seconds of stage `i` the run measured: its planned length, cut
    /// where an interrupted run ended.
    fn stage_span_s(&self, i: usize) -> Option<f64> {
        let at: f64 = self.stage_plan[..i.min(self.stage_plan.len())]
            .iter()
            .map(|s| s.duration.as_secs_f64())
            .sum();
        let d = self.stage_plan.get(i)?.duration.as_secs_f64();
        Some(((at + d).min(self.measured_s) - at).max(0.0))
    }

    /// Generator CPU of the window per answer of it.
    pub fn cpu_us_per_request(&self) -> Option<f64> {
        let n = self.throughput_answers();
        (n > 0).then(|| self.generator.cpu_s * 1e6 / n as f64)
    }

    /// The generator itself shaped what the server was sent: it was
    /// saturated, paused by a CPU quota, or sent late (its send lateness
    /// is the measure: a thread that only waited a little for its CPU
    /// still sent on time), or could not open its connections on this
    /// machine (`local_connects`). A rate not kept is then not the
    /// server's doing alone.
    pub fn generator_limited(&self) -> bool {
        let g = &self.generator;
        g.saturated
            || g.quota_pause.is_some()
            || g.stalled.is_some()
            || self.lateness_p99_us().is_some_and(|p| p > LATE_SEND_US)
            || self.sockets.connect_local > 0
    }

    /// The send lateness's p99 in µs, at a constant rate.
    pub(crate) fn lateness_p99_us(&self) -> Option<u64> {
        let l = self.lateness.as_ref()?;
        Some(if l.is_empty() {
            0
        } else {
            l.value_at_quantile(0.99)
        })
    }

    /// Who fell behind, as the warnings say it.
    fn who_fell_behind(&self) -> &'static str {
        if self.generator_limited() {
            "the run (the load generator was short of CPU, sent late itself or could not open its connections, see its warning: the server may have kept up with what it was sent)"
        } else {
            "the server"
        }
    }

    /// The loud lines for a server that fell behind the asked rate: the
    /// window's, and the stages' it fell behind in.
    pub(crate) fn behind_warnings(&self, w: &mut Vec<String>) {
        w.extend(self.behind_warning());
        let stages: Vec<String> = (0..self.stages.len())
            .filter_map(|i| {
                let after = self.stage_behind(i)?;
                let s = &self.stages[i];
                Some(format!(
                    "{} ({after} of its {} answers came after it; {:.0} req/s came within it)",
                    s.name,
                    s.requests,
                    self.stage_rps(i)
                ))
            })
            .collect();
        if !stages.is_empty() {
            w.push(format!(
                "{} fell behind the rate in stage {}: a stage's rate counts the answers that came within its span, whichever stage planned them; its own late answers are in its latency with all they waited",
                self.who_fell_behind(),
                stages.join(", ")
            ));
        }
    }

    /// The loud line for a server that fell behind the asked rate.
    fn behind_warning(&self) -> Option<String> {
        let after = self.answered_after_window()?;
        let LoadModel::ConstantRate { rps: asked } = self.model else {
            return None;
        };
        Some(format!(
            "{who} fell behind the asked {asked:.0} requests/s: {after} of the window's {answered} answers came after it ended, so the throughput counts the {arrived} that came within its {secs:.2} s ({rps:.0} req/s); the late ones are in the latency figures with all they waited",
            who = self.who_fell_behind(),
            answered = self.requests,
            arrived = self.arrived,
            secs = self.measured_s,
            rps = self.rps(),
        ))
    }
}
