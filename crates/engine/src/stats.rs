//! The numbers drawn from latency histograms, and the error classes.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct LatencySummary {
    pub min: u64,
    pub mean: f64,
    pub stdev: f64,
    pub max: u64,
    pub p50: u64,
    pub p75: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub p9999: u64,
}

impl LatencySummary {
    pub fn of(h: &Histogram<u64>) -> LatencySummary {
        if h.is_empty() {
            return LatencySummary::default();
        }
        LatencySummary {
            min: h.min(),
            mean: h.mean(),
            stdev: h.stdev(),
            max: h.max(),
            p50: h.value_at_quantile(0.50),
            p75: h.value_at_quantile(0.75),
            p90: h.value_at_quantile(0.90),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            p9999: h.value_at_quantile(0.9999),
        }
    }
}

/// Mean, standard deviation and maximum of requests per second, over the
/// one-second intervals of the measurement (what wrk prints as Req/Sec, but
/// for the whole run rather than per thread).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct Throughput {
    pub mean: f64,
    pub stdev: f64,
    pub max: f64,
    /// How many intervals these are of (0: the run was too short for one).
    #[serde(default)]
    pub intervals: usize,
}

impl Throughput {
    pub fn of(rates: &[f64]) -> Throughput {
        if rates.is_empty() {
            return Throughput::default();
        }
        let n = rates.len() as f64;
        let mean = rates.iter().sum::<f64>() / n;
        let var = if rates.len() > 1 {
            rates.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (n - 1.0)
        } else {
            0.0
        };
        Throughput {
            mean,
            stdev: var.sqrt(),
            max: rates.iter().cloned().fold(0.0, f64::max),
            intervals: rates.len(),
        }
    }
}

/// Requests that got no answer, by why, plus answered requests whose status
/// counts as an error. Every class except `status` is an outcome of the
/// ledger (see [`crate::ledger`]): a request is counted in exactly one of
/// them or answered.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct ErrorCounts {
    /// No connection could be opened to carry the request.
    pub connect: u64,
    /// Of `connect`: its connect failed on this machine, before any packet
    /// left (`local_connects`): the generator's failure, counted, and kept
    /// out of the latency figures, which are the server's.
    #[serde(default)]
    pub local: u64,
    /// A connection was opened but its TLS handshake failed (or did not end
    /// within the timeout), so the request was never sent.
    #[serde(default)]
    pub tls: u64,
    /// The connection failed while the response was awaited (reset, or closed
    /// by the server with the request still unanswered).
    pub read: u64,
    /// The request could not be written.
    pub write: u64,
    /// No answer within the timeout (counted from the planned time).
    pub timeout: u64,
    /// Answered, with a status the run counts as an error (a subset of the
    /// answered requests, not an outcome of its own).
    pub status: u64,
    /// The answer was malformed, truncated, or its head too large.
    pub parse: u64,
    /// Still unanswered when the run ended (interrupted, or the drain cut
    /// short), before its timeout had passed.
    #[serde(default)]
    pub unanswered: u64,
    /// Of `unanswered`: in flight when the run was interrupted, charged
    /// what they had waited until the interrupt (not the timeout).
    #[serde(default)]
    pub interrupted: u64,
}

impl ErrorCounts {
    pub fn add(&mut self, o: &ErrorCounts) {
        self.connect += o.connect;
        self.local += o.local;
        self.tls += o.tls;
        self.read += o.read;
        self.write += o.write;
        self.timeout += o.timeout;
        self.status += o.status;
        self.parse += o.parse;
        self.unanswered += o.unanswered;
        self.interrupted += o.interrupted;
    }

    /// Every request that went wrong: not answered, or answered with an
    /// error status.
    pub fn total(&self) -> u64 {
        self.not_answered() + self.status
    }

    /// Requests that got no answer, whatever the reason.
    pub fn not_answered(&self) -> u64 {
        self.connect
            + self.tls
            + self.read
            + self.write
            + self.timeout
            + self.parse
            + self.unanswered
    }

    pub(crate) fn slot(&mut self, f: Failure) -> &mut u64 {
        match f {
            Failure::Connect | Failure::Local => &mut self.connect,
            Failure::Tls => &mut self.tls,
            Failure::Write => &mut self.write,
            Failure::Read => &mut self.read,
            Failure::Parse => &mut self.parse,
            Failure::Timeout => &mut self.timeout,
            Failure::Unanswered | Failure::Interrupted => &mut self.unanswered,
        }
    }
}

/// Why a request got no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    Connect,
    /// A connect that failed on this machine (`local_connects`): a
    /// `Connect` that never reached the server, so not timed.
    Local,
    Tls,
    Write,
    Read,
    Parse,
    Timeout,
    Unanswered,
    /// Still awaited when the run was interrupted: an `Unanswered` that
    /// waited only until the interrupt.
    Interrupted,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::{new_histogram, record_ns};

    #[test]
    fn summary_of_known_values() {
        let mut h = new_histogram();
        for us in 1..=1000u64 {
            record_ns(&mut h, us * 1000);
        }
        let s = LatencySummary::of(&h);
        assert_eq!(s.min, 1);
        assert_eq!(s.max, 1000);
        assert_eq!(s.p50, 500);
        assert_eq!(s.p99, 990);
        assert!((s.mean - 500.5).abs() < 1.0);
    }

    #[test]
    fn throughput_stats() {
        let t = Throughput::of(&[10.0, 20.0, 30.0]);
        assert_eq!(t.mean, 20.0);
        assert_eq!(t.max, 30.0);
        assert_eq!(t.intervals, 3);
        assert_eq!(Throughput::of(&[]).intervals, 0);
        assert!((t.stdev - 10.0).abs() < 1e-9);
    }
}
