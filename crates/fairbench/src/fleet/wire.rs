//! What travels between fairbench and its load agents: the job (one JSON
//! argument) and the agent's messages (JSON lines on its stdout). Results
//! travel as the engine's own types; histograms in HdrHistogram's V2 +
//! DEFLATE encoding, hex-encoded: lossless, so merging them at the other end
//! is exact.

use std::time::Duration;

use fairbench_engine::hex::{hex, unhex};
use fairbench_engine::histogram::Encoded;
use fairbench_engine::{
    ConfigError, GeneratorShare, LoadConfig, LoadModel, Outcome, RequestSpec, SecondSample,
    StatusSet, Target, TlsOptions,
};
use serde::{Deserialize, Serialize};

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
    /// The statuses that count as success, as `--expect-status` takes them.
    pub expect_status: String,
    /// This share of a request budget (`-n`); `None`: by duration only.
    #[serde(default)]
    pub requests: Option<u64>,
    #[serde(default = "yes")]
    pub keepalive: bool,
    #[serde(default)]
    pub insecure: bool,
    /// `--cacert`'s contents (the file is where fairbench runs, not where
    /// the agent does).
    #[serde(default)]
    pub ca_pem_hex: Option<String>,
    pub max_head: usize,
    pub cpus: Option<Vec<usize>>,
    /// This generator's place among the load's generators (its schedule is
    /// offset so that theirs interleave).
    pub share_index: usize,
    pub share_count: usize,
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
            expect_status: cfg.expect_status.as_str().to_string(),
            requests: cfg.requests,
            keepalive: cfg.keepalive,
            insecure: cfg.tls.insecure,
            ca_pem_hex: cfg.tls.ca_pem.as_deref().map(hex),
            max_head: cfg.max_head,
            cpus: cfg.cpus.clone(),
            share_index: cfg.share.index,
            share_count: cfg.share.count,
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
        cfg.expect_status = StatusSet::parse(&self.expect_status)?;
        cfg.requests = self.requests;
        cfg.keepalive = self.keepalive;
        cfg.tls = TlsOptions {
            insecure: self.insecure,
            ca_pem: self
                .ca_pem_hex
                .as_deref()
                .map(|h| unhex(h).ok_or_else(|| ConfigError::new("cacert", "bad hex")))
                .transpose()?,
        };
        cfg.max_head = self.max_head;
        cfg.cpus = self.cpus.clone();
        cfg.share = GeneratorShare {
            index: self.share_index,
            count: self.share_count,
        };
        cfg.validate()?;
        Ok(cfg)
    }
}

fn yes() -> bool {
    true
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
    fn a_job_survives_the_trip() {
        let mut cfg = LoadConfig::new(Target::parse("http://127.0.0.1:8080/x?y=1").unwrap());
        cfg.connections = 7;
        cfg.threads = 2;
        cfg.model = LoadModel::ConstantRate { rps: 1234.5 };
        cfg.request.body = b"a\x00b".to_vec();
        cfg.request.headers = vec![("X-A".into(), "1".into())];
        cfg.cpus = Some(vec![0]);
        cfg.requests = Some(999);
        cfg.keepalive = false;
        cfg.expect_status = StatusSet::parse("200,404").unwrap();
        let spec = LoadSpec::of(&cfg);
        let json = serde_json::to_string(&spec).unwrap();
        let back: LoadSpec = serde_json::from_str(&json).unwrap();
        assert_eq!(back, spec);
        let cfg2 = back.to_config().unwrap();
        assert_eq!(cfg2.request.body, cfg.request.body);
        assert_eq!(cfg2.connections, 7);
        assert_eq!(cfg2.model, cfg.model);
        assert_eq!(cfg2.requests, Some(999));
        assert!(!cfg2.keepalive);
        assert_eq!(cfg2.expect_status, cfg.expect_status);
    }

    #[test]
    fn tls_settings_travel_with_the_job() {
        let mut cfg = LoadConfig::new(Target::parse("https://127.0.0.1:8443/").unwrap());
        let ca = rcgen::generate_simple_self_signed(vec!["ca.test".to_string()]).unwrap();
        cfg.tls = TlsOptions {
            insecure: false,
            ca_pem: Some(ca.cert.pem().into_bytes()),
        };
        let spec = LoadSpec::of(&cfg);
        let back: LoadSpec = serde_json::from_str(&serde_json::to_string(&spec).unwrap()).unwrap();
        assert_eq!(back.to_config().unwrap().tls, cfg.tls);
    }

    #[test]
    fn a_whole_outcome_travels_in_a_done_message() {
        let mut o = Outcome::merge(&[], Vec::new());
        o.status_codes.insert(200, 5);
        o.status_codes.insert(503, 1);
        let line = serde_json::to_string(&AgentMsg::Done {
            outcome: Box::new(o),
            late_start_ms: 0.0,
            containment: None,
        })
        .unwrap();
        assert!(
            line.contains(r#""status_codes":{"200":5,"503":1}"#),
            "{line}"
        );
        let AgentMsg::Done { outcome, .. } = serde_json::from_str(&line).unwrap() else {
            panic!("{line}")
        };
        assert_eq!(outcome.status_codes.get(&503), Some(&1));
    }

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
