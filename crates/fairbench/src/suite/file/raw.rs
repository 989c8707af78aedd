//! A suite file as written: the shapes serde reads before `Suite::parse`
//! checks every field.

use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSuite {
    pub(super) name: String,
    #[serde(default)]
    pub(super) description: String,
    #[serde(default = "star")]
    pub(super) servers: Vec<String>,
    #[serde(default = "star")]
    pub(super) modes: Vec<String>,
    #[serde(default = "both_responses")]
    pub(super) responses: Vec<String>,
    #[serde(default)]
    pub(super) scenarios: Vec<String>,
    #[serde(default)]
    pub(super) protocols: Option<Vec<String>>,
    #[serde(default = "one_core")]
    pub(super) cores: Vec<toml::Value>,
    #[serde(default)]
    pub(super) workers: Option<i64>,
    pub(super) duration: String,
    #[serde(default)]
    pub(super) warmup: Option<String>,
    #[serde(default)]
    pub(super) timeout: Option<String>,
    #[serde(default)]
    pub(super) timeout_mode: Option<String>,
    #[serde(default)]
    pub(super) repetitions: Option<usize>,
    #[serde(default)]
    pub(super) ready_timeout: Option<String>,
    #[serde(default)]
    pub(super) address_family: Option<String>,
    #[serde(default)]
    pub(super) calibrate: Option<String>,
    #[serde(default)]
    pub(super) reference: Option<String>,
    #[serde(default)]
    pub(super) aa: Vec<String>,
    #[serde(default)]
    pub(super) interleave: Option<String>,
    #[serde(default)]
    pub(super) interleave_seed: Option<i64>,
    #[serde(rename = "load")]
    pub(super) loads: Vec<RawLoad>,
    #[serde(default, rename = "service")]
    pub(super) services: Vec<RawService>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawService {
    pub(super) name: String,
    pub(super) url: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLoad {
    pub(super) model: String,
    pub(super) connections: usize,
    #[serde(default)]
    pub(super) threads: Option<usize>,
    #[serde(default)]
    pub(super) pipeline: Option<usize>,
    #[serde(default)]
    pub(super) requests: Option<u64>,
    #[serde(default)]
    pub(super) keepalive: Option<bool>,
    #[serde(default)]
    pub(super) streams: Option<usize>,
    #[serde(default)]
    pub(super) rate: Option<f64>,
    #[serde(default)]
    pub(super) start_rate: Option<f64>,
    #[serde(default)]
    pub(super) max_rate: Option<f64>,
    #[serde(default)]
    pub(super) step_factor: Option<f64>,
    #[serde(default)]
    pub(super) bisect_steps: Option<usize>,
    #[serde(default)]
    pub(super) slo_quantile: Option<f64>,
    #[serde(default)]
    pub(super) slo: Option<String>,
    #[serde(default)]
    pub(super) step_duration: Option<String>,
}

pub(super) fn star() -> Vec<String> {
    vec!["*".into()]
}
pub(super) fn both_responses() -> Vec<String> {
    vec!["default".into(), "normalized".into()]
}
pub(super) fn one_core() -> Vec<toml::Value> {
    vec![toml::Value::Integer(1)]
}
