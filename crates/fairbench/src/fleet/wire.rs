//! What travels between fairbench and its load agents: the job (one JSON
//! argument) and the agent's messages (JSON lines on its stdout). Histograms
//! travel in HdrHistogram's V2 + DEFLATE encoding, hex-encoded: lossless,
//! so merging them at the other end is exact.

use std::time::Duration;

use fairbench_engine::{
    ConfigError, ErrorCounts, Generator, LoadConfig, LoadModel, Outcome, Phase, RequestSpec,
    Schedule, SecondSample, Target,
};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::store::{decode_histogram, encode_histogram};

/// One generator's share of a load, as the agent runs it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LoadSpec {
    /// As the generator addresses the server.
    pub url: String,
    pub method: String,
    pub headers: Vec<(String, String)>,
    pub body_hex: String,
    pub connections: usize,
    pub threads: usize,
    pub duration_s: f64,
    pub warmup_s: f64,
    pub timeout_s: f64,
    /// Requests per second of this share; `None`: closed loop.
    pub rate: Option<f64>,
    pub pipeline: usize,
    pub status_error_min: u16,
    pub max_head: usize,
    pub cpus: Option<Vec<usize>>,
}

impl LoadSpec {
    pub fn of(cfg: &LoadConfig) -> LoadSpec {
        LoadSpec {
            url: cfg.target.url.clone(),
            method: cfg.request.method.clone(),
            headers: cfg.request.headers.clone(),
            body_hex: hex(&cfg.request.body),
            connections: cfg.connections,
            threads: cfg.threads,
            duration_s: cfg.duration.as_secs_f64(),
            warmup_s: cfg.warmup.as_secs_f64(),
            timeout_s: cfg.timeout.as_secs_f64(),
            rate: match cfg.model {
                LoadModel::ClosedLoop => None,
                LoadModel::ConstantRate { rps } => Some(rps),
            },
            pipeline: cfg.pipeline,
            status_error_min: cfg.status_error_min,
            max_head: cfg.max_head,
            cpus: cfg.cpus.clone(),
        }
    }

    /// The engine's configuration; resolves the URL where it is called.
    pub fn to_config(&self) -> Result<LoadConfig, ConfigError> {
        let mut cfg = LoadConfig::new(Target::parse(&self.url)?);
        cfg.request = RequestSpec {
            method: self.method.clone(),
            headers: self.headers.clone(),
            body: unhex(&self.body_hex).ok_or_else(|| ConfigError::new("body", "bad hex"))?,
        };
        cfg.connections = self.connections;
        cfg.threads = self.threads;
        cfg.duration = secs(self.duration_s);
        cfg.warmup = secs(self.warmup_s);
        cfg.timeout = secs(self.timeout_s);
        cfg.model = match self.rate {
            None => LoadModel::ClosedLoop,
            Some(rps) => LoadModel::ConstantRate { rps },
        };
        cfg.pipeline = self.pipeline;
        cfg.status_error_min = self.status_error_min;
        cfg.max_head = self.max_head;
        cfg.cpus = self.cpus.clone();
        cfg.validate()?;
        Ok(cfg)
    }
}

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(if s.is_finite() && s > 0.0 { s } else { 0.0 })
}

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
    /// One interval of its per-second series.
    Interval(WireSample),
    Done(Box<WirePart>),
    Error {
        message: String,
    },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WireSample {
    pub second: i64,
    pub start_s: f64,
    pub duration_s: f64,
    pub requests: u64,
    pub errors: u64,
    pub bytes: u64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub hist: String,
}

impl WireSample {
    pub fn of(s: &SecondSample, h: &Histogram<u64>) -> WireSample {
        WireSample {
            second: s.second,
            start_s: s.start_s,
            duration_s: s.duration_s,
            requests: s.requests,
            errors: s.errors,
            bytes: s.bytes,
            p50_us: s.p50_us,
            p99_us: s.p99_us,
            hist: hex(&encode_histogram(h).unwrap_or_default()),
        }
    }

    pub fn decode(&self) -> anyhow::Result<(SecondSample, Histogram<u64>)> {
        Ok((
            SecondSample {
                second: self.second,
                phase: if self.second < 0 {
                    Phase::Warmup
                } else {
                    Phase::Measure
                },
                start_s: self.start_s,
                duration_s: self.duration_s,
                requests: self.requests,
                errors: self.errors,
                bytes: self.bytes,
                p50_us: self.p50_us,
                p99_us: self.p99_us,
            },
            hist_of(&self.hist)?,
        ))
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WireErrors {
    pub connect: u64,
    pub read: u64,
    pub write: u64,
    pub timeout: u64,
    pub status: u64,
    pub parse: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WireSchedule {
    pub rate: f64,
    pub sent: u64,
    pub unsent: u64,
    pub waited_for_connection: u64,
    pub behind: bool,
}

/// An agent's whole result, without its series (which came interval by
/// interval).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WirePart {
    pub rate: Option<f64>,
    pub connections: usize,
    pub threads: usize,
    pub pipeline: usize,
    pub warmup_s: f64,
    pub measured_s: f64,
    pub requests: u64,
    pub bytes_read: u64,
    pub errors: WireErrors,
    pub latency: String,
    pub uncorrected: String,
    pub lateness: Option<String>,
    pub generator_cpu_s: f64,
    pub busy_fraction: f64,
    pub saturated: bool,
    /// Hypervisor steal on that generator's machine during its run.
    #[serde(default)]
    pub steal_fraction: Option<f64>,
    pub schedule: Option<WireSchedule>,
    pub interrupted: bool,
    /// How late after the planned start the agent was told to start (0
    /// when it was in time).
    pub late_start_ms: f64,
}

impl WirePart {
    pub fn of(o: &Outcome, late_start_ms: f64) -> WirePart {
        let e = &o.errors;
        WirePart {
            rate: match o.model {
                LoadModel::ClosedLoop => None,
                LoadModel::ConstantRate { rps } => Some(rps),
            },
            connections: o.connections,
            threads: o.threads,
            pipeline: o.pipeline,
            warmup_s: o.warmup_s,
            measured_s: o.measured_s,
            requests: o.requests,
            bytes_read: o.bytes_read,
            errors: WireErrors {
                connect: e.connect,
                read: e.read,
                write: e.write,
                timeout: e.timeout,
                status: e.status,
                parse: e.parse,
            },
            latency: hex(&encode_histogram(&o.latency).unwrap_or_default()),
            uncorrected: hex(&encode_histogram(&o.uncorrected).unwrap_or_default()),
            lateness: o
                .lateness
                .as_ref()
                .map(|h| hex(&encode_histogram(h).unwrap_or_default())),
            generator_cpu_s: o.generator.cpu_s,
            busy_fraction: o.generator.busy_fraction,
            saturated: o.generator.saturated,
            steal_fraction: o.generator.steal_fraction,
            schedule: o.schedule.as_ref().map(|s| WireSchedule {
                rate: s.rate,
                sent: s.sent,
                unsent: s.unsent,
                waited_for_connection: s.waited_for_connection,
                behind: s.behind,
            }),
            interrupted: o.interrupted,
            late_start_ms,
        }
    }

    /// The engine's outcome again, with the series received separately.
    pub fn outcome(&self, series: Vec<SecondSample>) -> anyhow::Result<Outcome> {
        let e = &self.errors;
        Ok(Outcome {
            model: match self.rate {
                None => LoadModel::ClosedLoop,
                Some(rps) => LoadModel::ConstantRate { rps },
            },
            connections: self.connections,
            threads: self.threads,
            pipeline: self.pipeline,
            warmup_s: self.warmup_s,
            measured_s: self.measured_s,
            requests: self.requests,
            bytes_read: self.bytes_read,
            errors: ErrorCounts {
                connect: e.connect,
                read: e.read,
                write: e.write,
                timeout: e.timeout,
                status: e.status,
                parse: e.parse,
            },
            latency: hist_of(&self.latency)?,
            uncorrected: hist_of(&self.uncorrected)?,
            lateness: self.lateness.as_deref().map(hist_of).transpose()?,
            series,
            generator: Generator {
                cpu_s: self.generator_cpu_s,
                busy_fraction: self.busy_fraction,
                saturated: self.saturated,
                steal_fraction: self.steal_fraction,
            },
            schedule: self.schedule.as_ref().map(|s| Schedule {
                rate: s.rate,
                sent: s.sent,
                unsent: s.unsent,
                waited_for_connection: s.waited_for_connection,
                behind: s.behind,
            }),
            interrupted: self.interrupted,
        })
    }
}

fn hist_of(h: &str) -> anyhow::Result<Histogram<u64>> {
    let bytes = unhex(h).ok_or_else(|| anyhow::anyhow!("an agent sent a malformed histogram"))?;
    decode_histogram(&bytes)
}

pub fn hex(b: &[u8]) -> String {
    const D: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(b.len() * 2);
    for &x in b {
        s.push(D[(x >> 4) as usize] as char);
        s.push(D[(x & 15) as usize] as char);
    }
    s
}

pub fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    let v = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    };
    s.as_bytes()
        .chunks(2)
        .map(|p| Some(v(p[0])? << 4 | v(p[1])?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairbench_engine::stats::new_histogram;

    #[test]
    fn hex_round_trip() {
        let b: Vec<u8> = (0..=255).collect();
        assert_eq!(unhex(&hex(&b)).unwrap(), b);
        assert!(unhex("abc").is_none());
        assert!(unhex("zz").is_none());
    }

    #[test]
    fn a_job_survives_the_trip() {
        let mut cfg = LoadConfig::new(Target::parse("http://127.0.0.1:8080/x?y=1").unwrap());
        cfg.connections = 7;
        cfg.threads = 2;
        cfg.model = LoadModel::ConstantRate { rps: 1234.5 };
        cfg.request.body = b"a\x00b".to_vec();
        cfg.request.headers = vec![("X-A".into(), "1".into())];
        cfg.cpus = Some(vec![0]);
        let spec = LoadSpec::of(&cfg);
        let json = serde_json::to_string(&spec).unwrap();
        let back: LoadSpec = serde_json::from_str(&json).unwrap();
        assert_eq!(back, spec);
        let cfg2 = back.to_config().unwrap();
        assert_eq!(cfg2.request.body, cfg.request.body);
        assert_eq!(cfg2.connections, 7);
        assert_eq!(cfg2.model, cfg.model);
    }

    #[test]
    fn histograms_travel_exactly() {
        let mut h = new_histogram();
        for v in [1u64, 7, 99, 1000, 1001, 65_000, 3_000_000] {
            h.record_n(v, v % 5 + 1).unwrap();
        }
        let s = SecondSample {
            second: 2,
            phase: Phase::Measure,
            start_s: 3.0,
            duration_s: 1.0,
            requests: h.len(),
            errors: 0,
            bytes: 10,
            p50_us: h.value_at_quantile(0.5),
            p99_us: h.value_at_quantile(0.99),
        };
        let w = WireSample::of(&s, &h);
        let line = serde_json::to_string(&AgentMsg::Interval(w)).unwrap();
        let AgentMsg::Interval(w) = serde_json::from_str(&line).unwrap() else {
            panic!()
        };
        let (s2, h2) = w.decode().unwrap();
        assert_eq!(h2, h);
        assert_eq!(s2.second, 2);
        assert_eq!(s2.phase, Phase::Measure);
    }
}
