//! A suite's load profiles: closed loop, constant rate and rate sweep, as
//! validated, each with a short stable label that matches cases across
//! runs.

use std::time::Duration;

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "model", rename_all = "lowercase")]
pub enum LoadProfile {
    Closed {
        connections: usize,
        threads: Option<usize>,
        pipeline: usize,
        #[serde(flatten)]
        ends: Ends,
    },
    Rate {
        rate: f64,
        connections: usize,
        threads: Option<usize>,
        #[serde(flatten)]
        ends: Ends,
    },
    Sweep(SweepSpec),
}

/// How a closed or rate profile's requests travel and when its window ends,
/// beyond the suite's duration (which stays the upper bound).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Ends {
    /// End after this many requests (ab's -n).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
    /// false: a new connection per request, closed by the client.
    #[serde(skip_serializing_if = "is_true")]
    pub keepalive: bool,
    /// Requests each connection carries at once in the suite's HTTP/2
    /// cases (`load --streams`); HTTP/1.1 cases of the same profile carry
    /// one (or `pipeline`).
    #[serde(skip_serializing_if = "is_one")]
    pub streams: usize,
}

impl Default for Ends {
    fn default() -> Self {
        Ends {
            requests: None,
            keepalive: true,
            streams: 1,
        }
    }
}

fn is_true(b: &bool) -> bool {
    *b
}

fn is_one(n: &usize) -> bool {
    *n == 1
}

/// " streams=N" when a profile's HTTP/2 cases carry more than one stream.
fn streams_label(streams: usize) -> String {
    if streams > 1 {
        format!(" streams={streams}")
    } else {
        String::new()
    }
}

impl Ends {
    /// " n=10000 no-keepalive", or nothing.
    fn label(&self) -> String {
        let mut s = String::new();
        if let Some(n) = self.requests {
            s.push_str(&format!(" n={n}"));
        }
        if !self.keepalive {
            s.push_str(" no-keepalive");
        }
        s.push_str(&streams_label(self.streams));
        s
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepSpec {
    pub connections: usize,
    pub threads: Option<usize>,
    pub start_rate: f64,
    pub max_rate: f64,
    /// Coarse steps multiply the rate by this until the objective fails.
    pub step_factor: f64,
    /// Then this many bisection steps between the last pass and first fail.
    pub bisect_steps: usize,
    pub slo_quantile: f64,
    #[serde(with = "humantime_serde_compat")]
    pub slo: Duration,
    /// Streams per connection of the HTTP/2 cases (see [`Ends::streams`]).
    #[serde(skip_serializing_if = "is_one")]
    pub streams: usize,
    #[serde(with = "humantime_serde_compat")]
    pub step_duration: Duration,
}

mod humantime_serde_compat {
    use std::time::Duration;
    pub fn serialize<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_duration(*d).to_string())
    }
}

impl SweepSpec {
    /// About how many steps the search measures: the coarse ones up to
    /// `max_rate`, then the bisection (for the run's estimate).
    pub fn estimated_steps(&self) -> f64 {
        let coarse = ((self.max_rate / self.start_rate).ln() / self.step_factor.ln())
            .ceil()
            .max(0.0)
            + 1.0;
        coarse + self.bisect_steps as f64
    }
}

impl LoadProfile {
    /// A short stable name: matches cases across runs (`compare`).
    pub fn label(&self) -> String {
        let t = |t: &Option<usize>| t.map(|t| format!(" t={t}")).unwrap_or_default();
        match self {
            LoadProfile::Closed {
                connections,
                threads,
                pipeline,
                ends,
            } => {
                let p = if *pipeline > 1 {
                    format!(" p={pipeline}")
                } else {
                    String::new()
                };
                format!("closed c={connections}{}{p}{}", t(threads), ends.label())
            }
            LoadProfile::Rate {
                rate,
                connections,
                threads,
                ends,
            } => format!(
                "rate {rate}/s c={connections}{}{}",
                t(threads),
                ends.label()
            ),
            LoadProfile::Sweep(s) => format!(
                "sweep p{}<={} c={}{}{}",
                s.slo_quantile * 100.0,
                humantime::format_duration(s.slo),
                s.connections,
                t(&s.threads),
                streams_label(s.streams)
            ),
        }
    }
}
