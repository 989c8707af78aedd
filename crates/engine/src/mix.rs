//! Many requests in one run: what a caller prepares before the run.
//!
//! A [`RequestMix`] lists concrete requests (templates already rendered,
//! weights already turned into how often each target appears) in the order
//! a load thread sends them, cycling. Each names its target, the group the
//! results are broken down by. The engine serialises them once into a pool
//! and its hot path only picks the next prepared bytes, so a mix of 10,000
//! distinct requests costs what one fixed request costs.

use serde::{Deserialize, Serialize};

use crate::config_error::ConfigError;

/// The most target names one run breaks its results down by.
pub const MAX_TARGETS: usize = 256;
/// The most prepared requests in a mix.
pub const MAX_MIX: usize = 1_000_000;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RequestMix {
    /// Target names; a request's `target` indexes this list.
    pub names: Vec<String>,
    pub requests: Vec<MixRequest>,
}

/// One prepared request. The scheme, host and port are the run's URL's:
/// every request goes to the one address measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MixRequest {
    pub target: u16,
    pub method: String,
    /// Origin-form: path and query, starting with `/`.
    pub path: String,
    pub headers: Vec<(String, String)>,
    #[serde(with = "crate::hex::bytes_as_hex")]
    pub body: Vec<u8>,
}

impl RequestMix {
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.requests.is_empty() {
            return Err(ConfigError::new("targets", "no request to send"));
        }
        if self.requests.len() > MAX_MIX {
            return Err(ConfigError::new(
                "targets",
                format!("at most {MAX_MIX} prepared requests"),
            ));
        }
        if self.names.is_empty() || self.names.len() > MAX_TARGETS {
            return Err(ConfigError::new(
                "targets",
                format!("between 1 and {MAX_TARGETS} target names"),
            ));
        }
        let head = |r: &MixRequest| r.method.eq_ignore_ascii_case("HEAD");
        let heads = self.requests.iter().filter(|r| head(r)).count();
        if heads != 0 && heads != self.requests.len() {
            // A HEAD answer's framing says a body that is not sent: the
            // parser must know before each answer, and it knows per run.
            return Err(ConfigError::new(
                "targets",
                "HEAD cannot be mixed with other methods in one run",
            ));
        }
        for r in &self.requests {
            if r.target as usize >= self.names.len() {
                return Err(ConfigError::new(
                    "targets",
                    format!(
                        "a request names target {} of {}",
                        r.target,
                        self.names.len()
                    ),
                ));
            }
            if !r.path.starts_with('/') || r.path.bytes().any(|b| b <= b' ' || b == 0x7f) {
                return Err(ConfigError::new(
                    "targets",
                    format!(
                        "{:?} is not a request path (it must start with / and hold no spaces or control bytes)",
                        r.path
                    ),
                ));
            }
            for (k, v) in &r.headers {
                crate::RequestSpec::parse_header(&format!("{k}: {v}"))?;
            }
        }
        Ok(())
    }

    /// All requests are HEAD: their answers carry no body.
    pub fn expects_no_body(&self) -> bool {
        self.requests
            .first()
            .is_some_and(|r| r.method.eq_ignore_ascii_case("HEAD"))
    }
}
