//! The steps of `Suite::parse` that check the suite's settings: its name,
//! what it selects from the zoo, protocols, cores, timing, repetitions,
//! pairing, order and workers.

use std::time::Duration;

use super::super::order::Interleave;
use super::super::pairing::{Pairing, VariantSpec, DEFAULT_REFERENCE};
use super::super::timing::Timing;
use super::{AddressFamily, CoreCount, Fields, Repetitions, Service};

/// The settings of how each case runs, apart from its timing.
pub(super) struct RunSettings {
    /// The most repetitions the plan holds.
    pub(super) repetitions: usize,
    /// A precision asked for instead of a count.
    pub(super) adaptive: Option<Repetitions>,
    pub(super) ready_timeout: Duration,
    pub(super) address_family: AddressFamily,
    pub(super) calibrate: Option<crate::calibration::Tool>,
}

impl Fields<'_> {
    pub(super) fn check_name(&self) -> anyhow::Result<()> {
        if self.raw.name.trim().is_empty() {
            return Err(self.bad("name", "must not be empty".into()));
        }
        Ok(())
    }

    /// `servers`, `modes`, `responses` and `scenarios`: glob patterns, at
    /// least one each (a suite of services names no scenario), and only
    /// responses there are.
    pub(super) fn check_selection(&self, services: &[Service]) -> anyhow::Result<()> {
        let raw = self.raw;
        for (field, list) in [
            ("servers", &raw.servers),
            ("modes", &raw.modes),
            ("responses", &raw.responses),
            ("scenarios", &raw.scenarios),
        ] {
            if list.is_empty() && (field != "scenarios" || services.is_empty()) {
                return Err(self.bad(field, "expected at least one entry".into()));
            }
            for p in list {
                glob::Pattern::new(p).map_err(|e| self.bad(field, format!("{p:?}: {e}")))?;
            }
        }
        for r in &raw.responses {
            if r != "*" && fairbench_zoo::manifest::ResponseKind::parse(r).is_none() {
                let names: Vec<String> = fairbench_zoo::manifest::ResponseKind::ALL
                    .iter()
                    .map(|k| format!("{:?}", k.as_str()))
                    .collect();
                return Err(self.bad(
                    "responses",
                    format!("{r:?}: expected one of {} or \"*\"", names.join(", ")),
                ));
            }
        }
        Ok(())
    }

    /// `protocols`: known, each once; HTTP/1.1 when left out.
    pub(super) fn protocols(&self) -> anyhow::Result<Vec<fairbench_zoo::Protocol>> {
        let Some(list) = &self.raw.protocols else {
            return Ok(vec![fairbench_zoo::Protocol::Http1]);
        };
        if list.is_empty() {
            return Err(self.bad(
                "protocols",
                format!(
                    "expected at least one of {} (leave it out for HTTP/1.1)",
                    fairbench_zoo::Protocol::expected()
                ),
            ));
        }
        let mut out = Vec::new();
        for p in list {
            match fairbench_zoo::Protocol::parse(p) {
                Some(x) if out.contains(&x) => {
                    return Err(self.bad("protocols", format!("{p:?} is listed twice")))
                }
                Some(x) => out.push(x),
                None => {
                    return Err(self.bad(
                        "protocols",
                        format!("{p:?}: expected {}", fairbench_zoo::Protocol::expected()),
                    ))
                }
            }
        }
        Ok(out)
    }

    /// `cores`: numbers of CPUs or "all", at least one.
    pub(super) fn cores(&self) -> anyhow::Result<Vec<CoreCount>> {
        let mut cores = Vec::new();
        for v in &self.raw.cores {
            cores.push(match v {
                toml::Value::Integer(n) if *n >= 1 => CoreCount::N(*n as usize),
                toml::Value::String(s) if s == "all" => CoreCount::All,
                other => {
                    return Err(self.bad(
                        "cores",
                        format!("{other}: expected a number of CPUs (at least 1) or \"all\""),
                    ))
                }
            });
        }
        if cores.is_empty() {
            return Err(self.bad("cores", "expected at least one core count".into()));
        }
        Ok(cores)
    }

    /// `duration`, `warmup`, `timeout` and `timeout_mode`.
    pub(super) fn timing(&self) -> anyhow::Result<Timing> {
        let raw = self.raw;
        let duration = self.duration("duration", &raw.duration)?;
        if duration.is_zero() {
            return Err(self.bad("duration", "must be longer than 0".into()));
        }
        let warmup = raw
            .warmup
            .as_deref()
            .map(|w| crate::args::Warmup::parse(w).map_err(|e| self.bad("warmup", e)))
            .transpose()?
            .unwrap_or_default();
        let timeout = raw
            .timeout
            .as_deref()
            .map(|w| self.duration("timeout", w))
            .transpose()?
            .unwrap_or(Duration::from_secs(2));
        if timeout.is_zero() {
            return Err(self.bad("timeout", "must be longer than 0".into()));
        }
        let timeout_mode = match raw.timeout_mode.as_deref() {
            None => fairbench_engine::TimeoutMode::Fairbench,
            Some(m) => {
                fairbench_engine::TimeoutMode::parse(m).map_err(|e| self.bad("timeout_mode", e))?
            }
        };
        Ok(Timing {
            warmup,
            duration,
            timeout,
            timeout_mode,
        })
    }

    /// `ready_timeout`, `address_family`, `calibrate` and `repetitions`.
    pub(super) fn run_settings(&self) -> anyhow::Result<RunSettings> {
        let raw = self.raw;
        let ready_timeout = raw
            .ready_timeout
            .as_deref()
            .map(|w| self.duration("ready_timeout", w))
            .transpose()?
            .unwrap_or(Duration::from_secs(60));
        let address_family = raw
            .address_family
            .as_deref()
            .map(|f| AddressFamily::parse(f).map_err(|e| self.bad("address_family", e)))
            .transpose()?
            .unwrap_or_default();
        let calibrate = raw
            .calibrate
            .as_deref()
            .map(|t| crate::calibration::Tool::parse(t).map_err(|e| self.bad("calibrate", e)))
            .transpose()?;
        if calibrate.is_some() && address_family == AddressFamily::Unix {
            return Err(self.bad("calibrate", AddressFamily::UNIX_CALIBRATE.into()));
        }
        let asked = self.repetitions()?;
        Ok(RunSettings {
            repetitions: asked.max(),
            adaptive: matches!(asked, Repetitions::Until { .. }).then_some(asked),
            ready_timeout,
            address_family,
            calibrate,
        })
    }

    /// `repetitions`: a count (3 when left out), or a precision as
    /// `Repetitions::parse` reads it.
    fn repetitions(&self) -> anyhow::Result<Repetitions> {
        let bad = |v: &dyn std::fmt::Display| {
            self.bad(
                "repetitions",
                format!("{v}: expected {}", Repetitions::EXPECTED),
            )
        };
        match &self.raw.repetitions {
            None => Ok(Repetitions::Fixed(3)),
            Some(toml::Value::Integer(n)) if *n >= 1 => {
                crate::args::bounds::at_most(*n as usize, crate::args::bounds::MAX_REPETITIONS)
                    .map(Repetitions::Fixed)
                    .map_err(|m| self.bad("repetitions", m))
            }
            Some(toml::Value::String(s)) => {
                Repetitions::parse(s).map_err(|e| self.bad("repetitions", e))
            }
            Some(other) => Err(bad(other)),
        }
    }

    /// `reference` (the default one when left out) and its `aa` twins.
    pub(super) fn pairing(&self) -> anyhow::Result<Pairing> {
        let raw = self.raw;
        let reference = match &raw.reference {
            Some(r) => VariantSpec::parse(r).map_err(|e| self.bad("reference", e))?,
            None => VariantSpec::parse(DEFAULT_REFERENCE).map_err(|e| self.bad("reference", e))?,
        };
        let mut aa = Vec::new();
        for a in &raw.aa {
            aa.push(VariantSpec::parse(a).map_err(|e| self.bad("aa", e))?);
        }
        Ok(Pairing {
            reference,
            reference_from: if raw.reference.is_some() {
                "suite"
            } else {
                "default"
            },
            aa,
        })
    }

    /// `interleave` and `interleave_seed`.
    pub(super) fn interleave(&self) -> anyhow::Result<(Interleave, Option<u64>)> {
        let interleave = match self.raw.interleave.as_deref() {
            None => Interleave::Repetition,
            Some(s) => Interleave::parse(s).ok_or_else(|| {
                self.bad(
                    "interleave",
                    format!("{s:?}: expected \"repetition\" or \"case\""),
                )
            })?,
        };
        let interleave_seed = match self.raw.interleave_seed {
            Some(s) if s < 0 => {
                return Err(self.bad("interleave_seed", format!("{s}: must be 0 or more")))
            }
            s => s.map(|s| s as u64),
        };
        Ok((interleave, interleave_seed))
    }

    /// `workers`: a count of 1 or more, or none (one per core).
    pub(super) fn workers(&self) -> anyhow::Result<Option<usize>> {
        match self.raw.workers {
            Some(w) if w < 1 => Err(self.bad(
                "workers",
                format!("{w}: expected a count of 1 or more (leave it out for one per core)"),
            )),
            w => Ok(w.map(|w| w as usize)),
        }
    }
}
