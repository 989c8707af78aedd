//! What travels between fairbench and its load agents: the job (the
//! engine's own `LoadConfig` as one JSON argument) and the agent's messages
//! (JSON lines on its stdout). Results travel as the engine's own types;
//! histograms in HdrHistogram's V2 + DEFLATE encoding, hex-encoded:
//! lossless, so merging them at the other end is exact.

use fairbench_engine::histogram::Encoded;
use fairbench_engine::{Outcome, SecondSample};
use serde::{Deserialize, Serialize};

/// A line an agent prints.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentMsg {
    /// Connected to the server once; waiting for the start time. `now_ns`
    /// is the agent's wall clock, to estimate how far it is off ours.
    Ready {
        pid: u32,
        now_ns: u64,
    },
    /// One interval of its per-second series, with its histogram.
    Interval {
        sample: SecondSample,
        hist: Encoded,
    },
    /// Its whole result. `late_start_ms`: how late after the planned start
    /// it was told to start (0 when it was in time).
    Done {
        outcome: Box<Outcome>,
        late_start_ms: f64,
        /// How its load threads were held to their CPUs (`cgroup-v1`,
        /// `affinity`); absent when they were not pinned.
        #[serde(default)]
        containment: Option<String>,
    },
    Error {
        message: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_travel_exactly() {
        use fairbench_engine::histogram::new_histogram;
        let mut h = new_histogram();
        for v in [1u64, 7, 99, 1000, 1001, 65_000, 3_000_000] {
            h.record_n(v, v % 5 + 1).unwrap();
        }
        let s = SecondSample {
            second: 2,
            phase: fairbench_engine::Phase::Drain,
            start_s: 3.0,
            duration_s: 1.0,
            requests: h.len(),
            errors: 0,
            bytes: 10,
            p50_us: h.value_at_quantile(0.5),
            p99_us: h.value_at_quantile(0.99),
        };
        let line = serde_json::to_string(&AgentMsg::Interval {
            sample: s,
            hist: Encoded::of(&h),
        })
        .unwrap();
        let AgentMsg::Interval { sample, hist } = serde_json::from_str(&line).unwrap() else {
            panic!()
        };
        assert_eq!(hist.decode().unwrap(), h);
        assert_eq!(sample.second, 2);
        assert_eq!(sample.phase, fairbench_engine::Phase::Drain);
    }
}
