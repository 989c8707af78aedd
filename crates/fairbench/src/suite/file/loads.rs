//! The step of `Suite::parse` that checks the `[[load]]` profiles.

use std::time::Duration;

use super::super::timing::Timing;
use super::raw::RawLoad;
use super::{Ends, Fields, LoadProfile, SweepSpec};

impl Fields<'_> {
    /// The `[[load]]` profiles, at least one: each checked on its own, then
    /// each against the suite's timing.
    pub(super) fn loads(
        &self,
        protocols: &[fairbench_zoo::Protocol],
        timing: Timing,
    ) -> anyhow::Result<Vec<LoadProfile>> {
        if self.raw.loads.is_empty() {
            return Err(self.bad("load", "expected at least one [[load]] profile".into()));
        }
        let mut loads = Vec::new();
        for (i, raw) in self.raw.loads.iter().enumerate() {
            let load = Load {
                file: self,
                at: format!("load[{i}]"),
                raw,
            };
            loads.push(load.profile(protocols, timing.duration)?);
        }
        for (i, l) in loads.iter().enumerate() {
            l.check(i, timing)
                .map_err(|(field, m)| self.bad(&field, m))?;
        }
        Ok(loads)
    }

    /// A `[[step]]`'s `load`, checked as a `[[load]]` is; errors name it
    /// `AT.FIELD` (`step[2].load.rate`).
    pub(super) fn step_load(
        &self,
        at: &str,
        raw: &RawLoad,
        protocols: &[fairbench_zoo::Protocol],
        timing: Timing,
    ) -> anyhow::Result<LoadProfile> {
        let load = Load {
            file: self,
            at: at.to_string(),
            raw,
        };
        let profile = load.profile(protocols, timing.duration)?;
        profile
            .check(0, timing)
            .map_err(|(field, m)| self.bad(&field.replacen("load[0]", at, 1), m))?;
        Ok(profile)
    }
}

/// One load profile being checked: `load[i]` of the file, or a step's.
struct Load<'a> {
    file: &'a Fields<'a>,
    /// How its fields are named in errors: `load[1]`, `step[2].load`.
    at: String,
    raw: &'a RawLoad,
}

impl Load<'_> {
    /// An error at the field `load[i].NAME`.
    fn bad(&self, name: &str, msg: String) -> anyhow::Error {
        self.file.bad(&format!("{}.{name}", self.at), msg)
    }

    /// The duration `v` of the field `load[i].NAME`.
    fn duration(&self, name: &str, v: &str) -> anyhow::Result<Duration> {
        self.file.duration(&format!("{}.{name}", self.at), v)
    }

    /// The profile, its fields checked in the order of the steps below.
    fn profile(
        &self,
        protocols: &[fairbench_zoo::Protocol],
        duration: Duration,
    ) -> anyhow::Result<LoadProfile> {
        let l = self.raw;
        self.check_counts()?;
        let ends = self.ends(protocols)?;
        Ok(match l.model.as_str() {
            "closed" => LoadProfile::Closed {
                connections: l.connections,
                threads: l.threads,
                pipeline: l.pipeline.unwrap_or(1),
                ends,
            },
            "rate" => LoadProfile::Rate {
                rate: self.positive("rate", l.rate)?,
                connections: l.connections,
                threads: l.threads,
                ends,
            },
            "sweep" => LoadProfile::Sweep(self.sweep(ends.streams, duration)?),
            other => {
                return Err(self.bad(
                    "model",
                    format!("{other:?}: expected \"closed\", \"rate\" or \"sweep\""),
                ))
            }
        })
    }

    /// `connections`, `threads`, `pipeline` and `requests`: at least 1
    /// each that is given.
    fn check_counts(&self) -> anyhow::Result<()> {
        let l = self.raw;
        if l.connections == 0 {
            return Err(self.bad("connections", "must be at least 1".into()));
        }
        if l.threads == Some(0) {
            return Err(self.bad("threads", "must be at least 1".into()));
        }
        if l.pipeline == Some(0) {
            return Err(self.bad("pipeline", "must be at least 1".into()));
        }
        if l.requests == Some(0) {
            return Err(self.bad("requests", "must be at least 1".into()));
        }
        Ok(())
    }

    /// How the profile's requests travel and when it ends: `streams`,
    /// `keepalive` and `requests`, and which of them go together.
    fn ends(&self, protocols: &[fairbench_zoo::Protocol]) -> anyhow::Result<Ends> {
        let l = self.raw;
        let streams = l.streams.unwrap_or(1);
        if streams == 0 || streams > fairbench_engine::MAX_STREAMS {
            return Err(self.bad(
                "streams",
                format!(
                    "{streams}: expected 1 to {} streams per HTTP/2 or HTTP/3 connection",
                    fairbench_engine::MAX_STREAMS
                ),
            ));
        }
        if streams > 1 && !protocols.iter().any(|p| p.multiplexes()) {
            return Err(self.bad(
                "streams",
                "applies to HTTP/2 and HTTP/3 cases only: add \"h2c\", \"h2\" or \"h3\" to protocols"
                    .into(),
            ));
        }
        if streams > 1 && l.pipeline.is_some_and(|p| p > 1) {
            return Err(self.bad(
                "streams",
                "cannot be combined with pipeline (HTTP/2 multiplexes streams instead)".into(),
            ));
        }
        let ends = Ends {
            requests: l.requests,
            keepalive: l.keepalive.unwrap_or(true),
            streams,
        };
        if streams > 1 && !ends.keepalive {
            return Err(self.bad(
                "streams",
                "cannot be combined with keepalive = false (an HTTP/2 connection carries many requests)".into(),
            ));
        }
        if !ends.keepalive && l.pipeline.is_some_and(|p| p > 1) {
            return Err(self.bad(
                "pipeline",
                "cannot be combined with keepalive = false (a connection carries one request)"
                    .into(),
            ));
        }
        if l.model == "sweep" && (ends.requests.is_some() || !ends.keepalive) {
            return Err(self.bad(
                "model",
                "a sweep's steps are timed: requests and keepalive apply to closed and rate".into(),
            ));
        }
        Ok(ends)
    }

    /// A sweep's rates, steps and latency objective; its steps last the
    /// suite's `duration` unless `step_duration` says.
    fn sweep(&self, streams: usize, duration: Duration) -> anyhow::Result<SweepSpec> {
        let l = self.raw;
        let start_rate = self.positive("start_rate", l.start_rate)?;
        let max_rate = self.positive("max_rate", l.max_rate)?;
        if max_rate < start_rate {
            return Err(self.bad("max_rate", "must not be below start_rate".into()));
        }
        let step_factor = l.step_factor.unwrap_or(2.0);
        if !(step_factor.is_finite() && step_factor > 1.0) {
            return Err(self.bad("step_factor", "must be greater than 1".into()));
        }
        let slo_quantile = l.slo_quantile.unwrap_or(0.99);
        if !(slo_quantile > 0.0 && slo_quantile < 1.0) {
            return Err(self.bad("slo_quantile", "must be between 0 and 1, e.g. 0.99".into()));
        }
        let slo = self.duration("slo", l.slo.as_deref().unwrap_or("10ms"))?;
        if slo.is_zero() {
            return Err(self.bad("slo", "must be longer than 0".into()));
        }
        let step_duration = match &l.step_duration {
            Some(s) => self.duration("step_duration", s)?,
            None => duration,
        };
        Ok(SweepSpec {
            connections: l.connections,
            threads: l.threads,
            start_rate,
            max_rate,
            step_factor,
            bisect_steps: l.bisect_steps.unwrap_or(4),
            slo_quantile,
            slo,
            step_duration,
            streams,
        })
    }

    /// A rate the profile's model needs: given, finite and above 0.
    fn positive(&self, name: &str, v: Option<f64>) -> anyhow::Result<f64> {
        match v {
            Some(v) if v.is_finite() && v > 0.0 => Ok(v),
            Some(v) => Err(self.bad(name, format!("{v}: must be a positive number"))),
            None => Err(self.bad(name, format!("required for model = {:?}", self.raw.model))),
        }
    }
}
