//! A suite's load profile as the engine's settings: one builder for the
//! runner's loads and for the suite's validation, so that a value the engine
//! would refuse when a case starts is refused when the suite is read —
//! before `--dry-run` prints a plan or `run` stores a run.

use fairbench_engine::{ConfigError, LoadConfig, LoadModel, Target};

use super::file::{Ends, LoadProfile};
use super::timing::Timing;
use crate::args::bounds;

impl LoadProfile {
    /// The engine's settings for this profile against `target`; a sweep's
    /// step at `rate` (its start rate when `None`). Threads are the
    /// planner's: they depend on where the generators run.
    pub fn engine_config(&self, target: Target, rate: Option<f64>, t: Timing) -> LoadConfig {
        let (connections, pipeline, model, ends) = match self {
            LoadProfile::Closed {
                connections,
                pipeline,
                ends,
                ..
            } => (*connections, *pipeline, LoadModel::ClosedLoop, *ends),
            LoadProfile::Rate {
                rate,
                connections,
                ends,
                ..
            } => (
                *connections,
                1,
                LoadModel::ConstantRate { rps: *rate },
                *ends,
            ),
            LoadProfile::Sweep(s) => (
                s.connections,
                1,
                LoadModel::ConstantRate {
                    rps: rate.unwrap_or(s.start_rate),
                },
                Ends::default(),
            ),
        };
        let mut cfg = LoadConfig::new(target);
        cfg.connections = connections;
        cfg.pipeline = pipeline;
        cfg.model = model;
        t.warmup.apply(&mut cfg);
        cfg.duration = t.duration;
        cfg.timeout = t.timeout;
        cfg.timeout_mode = t.timeout_mode;
        cfg.requests = ends.requests;
        cfg.keepalive = ends.keepalive;
        cfg
    }

    /// Streams per connection of the profile's HTTP/2 cases (the engine's
    /// `streams`; set by the runner for those cases only).
    pub fn streams(&self) -> usize {
        match self {
            LoadProfile::Closed { ends, .. } | LoadProfile::Rate { ends, .. } => ends.streams,
            LoadProfile::Sweep(s) => s.streams,
        }
    }

    pub fn threads(&self) -> Option<usize> {
        match self {
            LoadProfile::Closed { threads, .. } | LoadProfile::Rate { threads, .. } => *threads,
            LoadProfile::Sweep(s) => s.threads,
        }
    }

    /// What the engine would refuse, and the bounds of docs/limits.md: the
    /// field of the suite file (`load[i].rate`, `duration`) and why.
    pub fn check(&self, i: usize, t: Timing) -> Result<(), (String, String)> {
        let field = |name: &str| format!("load[{i}].{name}");
        let target = Target::parse("http://127.0.0.1:1/").expect("a fixed valid URL");
        // The engine names its settings like `load`'s flags; the suite's
        // fields for them.
        let per_field = |e: ConfigError, rate_field: &str| -> (String, String) {
            let name = match (e.field.as_str(), self) {
                ("duration", LoadProfile::Sweep(_)) => field("step_duration"),
                ("duration" | "warmup" | "timeout", _) => e.field.clone(),
                ("rate", _) => field(rate_field),
                (other, _) => field(other),
            };
            (name, e.message)
        };
        if let Some(n) = self.threads() {
            bounds::at_most(n, bounds::MAX_THREADS).map_err(|m| (field("threads"), m))?;
        }
        let connections = self.engine_config(target.clone(), None, t).connections;
        if connections as u64 > bounds::MAX_CONNECTIONS {
            return Err((
                field("connections"),
                format!("{connections}: at most {}", bounds::MAX_CONNECTIONS),
            ));
        }
        match self {
            LoadProfile::Sweep(s) => {
                let step = Timing {
                    duration: s.step_duration,
                    ..t
                };
                for (name, rate) in [("start_rate", s.start_rate), ("max_rate", s.max_rate)] {
                    self.engine_config(target.clone(), Some(rate), step)
                        .validate()
                        .map_err(|e| per_field(e, name))?;
                }
                let coarse = ((s.max_rate / s.start_rate).ln() / s.step_factor.ln()).ceil();
                let steps = coarse + 1.0 + s.bisect_steps as f64;
                // NaN (no rate or factor makes one past the checks above)
                // counts as too many.
                if steps.is_nan() || steps > bounds::MAX_SWEEP_STEPS as f64 {
                    return Err((
                        field("step_factor"),
                        format!(
                            "from start_rate {} to max_rate {} by step_factor {} with {} bisect_steps is {steps} steps; at most {} are allowed",
                            s.start_rate, s.max_rate, s.step_factor, s.bisect_steps, bounds::MAX_SWEEP_STEPS
                        ),
                    ));
                }
                Ok(())
            }
            _ => self
                .engine_config(target, None, t)
                .validate()
                .map_err(|e| per_field(e, "rate")),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::suite::Suite;

    #[test]
    fn a_suites_timeout_mode_reaches_the_engine() {
        let toml = "name = \"t\"\nscenarios = [\"static\"]\nduration = \"1s\"\ntimeout_mode = \"wrk\"\n\n[[load]]\nmodel = \"closed\"\nconnections = 4\n";
        let s = Suite::parse(toml, "t.toml").unwrap();
        let t = Timing {
            warmup: s.warmup,
            duration: s.duration,
            timeout: s.timeout,
            timeout_mode: s.timeout_mode,
        };
        let target = Target::parse("http://127.0.0.1:1/").unwrap();
        let cfg = s.loads[0].engine_config(target, None, t);
        assert_eq!(cfg.timeout_mode, fairbench_engine::TimeoutMode::Wrk);
        assert_eq!(cfg.timeout, Duration::from_secs(2));
    }
}
