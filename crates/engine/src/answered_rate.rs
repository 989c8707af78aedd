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

use crate::config::LoadModel;
use crate::outcome::Outcome;

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

    /// The rate of a part of the window's answers (a target's): `answered`
    /// of its requests per second, scaled down as the run's own is when
    /// the server fell behind (arrivals are not told apart by target, so a
    /// part is taken to have fallen behind as the whole did).
    pub fn share_rps(&self, answered: u64) -> f64 {
        if self.measured_s <= 0.0 || self.requests == 0 {
            return 0.0;
        }
        let kept = self.throughput_answers() as f64 / self.requests as f64;
        answered as f64 * kept / self.measured_s
    }

    /// Generator CPU of the window per answer of it.
    pub fn cpu_us_per_request(&self) -> Option<f64> {
        let n = self.throughput_answers();
        (n > 0).then(|| self.generator.cpu_s * 1e6 / n as f64)
    }

    /// The loud line for a server that fell behind the asked rate.
    pub(crate) fn behind_warning(&self) -> Option<String> {
        let after = self.answered_after_window()?;
        let LoadModel::ConstantRate { rps: asked } = self.model else {
            return None;
        };
        Some(format!(
            "the server fell behind the asked {asked:.0} requests/s: {after} of the window's {answered} answers came after it ended, so the throughput counts the {arrived} that came within its {secs:.2} s ({rps:.0} req/s); the late ones are in the latency figures with all they waited",
            answered = self.requests,
            arrived = self.arrived,
            secs = self.measured_s,
            rps = self.rps(),
        ))
    }
}
