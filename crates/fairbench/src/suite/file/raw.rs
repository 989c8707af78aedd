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
    /// A count, or a precision to reach as a string ("until:3%,max:20").
    #[serde(default)]
    pub(super) repetitions: Option<toml::Value>,
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
    /// `[[step]]`: read as tables, so that a key a step may not set is
    /// named by `steps.rs` rather than by serde.
    #[serde(default, rename = "step")]
    pub(super) steps: Vec<toml::Table>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawService {
    pub(super) name: String,
    pub(super) url: String,
    #[serde(default)]
    pub(super) version: Option<String>,
    // What `load`'s flags of the same names take (crate::request_options).
    #[serde(default)]
    pub(super) method: Option<String>,
    #[serde(default)]
    pub(super) headers: Vec<String>,
    #[serde(default)]
    pub(super) body: Option<String>,
    #[serde(default)]
    pub(super) body_file: Option<String>,
    #[serde(default)]
    pub(super) targets: Option<String>,
    #[serde(default)]
    pub(super) pool: Option<usize>,
    #[serde(default)]
    pub(super) seed: Option<u64>,
    #[serde(default)]
    pub(super) http2: bool,
    #[serde(default)]
    pub(super) http3: bool,
    #[serde(default)]
    pub(super) streams: Option<usize>,
    #[serde(default)]
    pub(super) insecure: bool,
    #[serde(default)]
    pub(super) cacert: Option<String>,
    #[serde(default)]
    pub(super) cert: Option<String>,
    #[serde(default)]
    pub(super) key: Option<String>,
    #[serde(default)]
    pub(super) connect_to: Vec<String>,
    #[serde(default)]
    pub(super) resolve: Vec<String>,
    #[serde(default)]
    pub(super) unix_socket: Option<String>,
    #[serde(default)]
    pub(super) proxy: Option<String>,
    #[serde(default)]
    pub(super) expect_status: Option<String>,
    #[serde(default)]
    pub(super) thresholds: Vec<String>,
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
