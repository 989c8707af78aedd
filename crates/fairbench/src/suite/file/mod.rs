//! The suite file format (documented in docs/suites.md).

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::order::Interleave;
use super::pairing::{Pairing, VariantSpec, DEFAULT_REFERENCE};
use super::timing::Timing;

mod profile;
mod raw;
pub use profile::{Ends, LoadProfile, SweepSpec};
use raw::*;

/// A validated suite.
#[derive(Debug, Clone, Serialize)]
pub struct Suite {
    pub name: String,
    pub description: String,
    pub servers: Vec<String>,
    pub modes: Vec<String>,
    pub responses: Vec<String>,
    pub scenarios: Vec<String>,
    /// What each server is spoken to in: HTTP/1.1 unless the suite says.
    pub protocols: Vec<fairbench_zoo::Protocol>,
    /// Numbers, or 0 meaning "all CPUs".
    pub cores: Vec<CoreCount>,
    /// Isolates/GOMAXPROCS/worker processes told to the server (`WORKERS`),
    /// apart from its CPUs: "one isolate on all CPUs" is `cores = ["all"]`,
    /// `workers = 1`. `None`: as many as its cores.
    pub workers: Option<usize>,
    pub loads: Vec<LoadProfile>,
    pub duration: Duration,
    pub warmup: Duration,
    pub timeout: Duration,
    /// How a request past `timeout` is counted: `fairbench` (aborted, its
    /// connection reopened) or `wrk` (a late answer is a timeout, the
    /// connection kept), for the suites that reproduce wrk's figures.
    #[serde(serialize_with = "mode_name")]
    pub timeout_mode: fairbench_engine::TimeoutMode,
    pub repetitions: usize,
    pub ready_timeout: Duration,
    /// The address the load reaches a server on this machine at: `ipv4`
    /// (127.0.0.1, the default) or `ipv6` (::1, as the rebuttal's spot
    /// checks ran). Servers bind the any address, so both reach them.
    pub address_family: AddressFamily,
    /// The publication's own tool run on each case right after fairbench
    /// measured it, on the same server (`wrk`, `wrk2` or `ab`;
    /// docs/study.md, calibration).
    pub calibrate: Option<crate::calibration::Tool>,
    /// What ratios are relative to, and the reference's A/A twins.
    pub pairing: Pairing,
    pub interleave: Interleave,
    /// The shuffle's seed when `interleave` is `case` (recorded by `run`).
    pub interleave_seed: Option<u64>,
    /// Already-running services named by URL (`[[service]]`), measured
    /// instead of zoo servers: nothing is built, started or contained.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub services: Vec<Service>,
}

/// Which loopback address a suite's load goes to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AddressFamily {
    #[default]
    Ipv4,
    Ipv6,
}

impl AddressFamily {
    pub fn parse(s: &str) -> Result<AddressFamily, String> {
        match s {
            "ipv4" => Ok(AddressFamily::Ipv4),
            "ipv6" => Ok(AddressFamily::Ipv6),
            other => Err(format!("expected ipv4 or ipv6, got {other:?}")),
        }
    }

    /// The loopback address of the family, as a URL's host takes it
    /// unbracketed.
    pub fn loopback(self) -> &'static str {
        match self {
            AddressFamily::Ipv4 => "127.0.0.1",
            AddressFamily::Ipv6 => "::1",
        }
    }
}

/// A service a suite measures where it runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Service {
    pub name: String,
    pub url: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum CoreCount {
    N(usize),
    #[serde(serialize_with = "all")]
    All,
}

fn mode_name<S: serde::Serializer>(
    m: &fairbench_engine::TimeoutMode,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.serialize_str(m.as_str())
}

fn all<S: serde::Serializer>(s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str("all")
}

impl CoreCount {
    pub fn label(&self) -> String {
        match self {
            CoreCount::N(n) => n.to_string(),
            CoreCount::All => "all".into(),
        }
    }
}

// ---- the file as written ------------------------------------------------

impl Suite {
    /// Loads a suite by name or path (see [`Suite::read`]).
    pub fn resolve(root: &Path, name_or_path: &str) -> anyhow::Result<(Suite, String)> {
        let (path, text) = Suite::read(Some(root), name_or_path)?;
        let suite = Suite::parse(&text, &path)?;
        Ok((suite, text))
    }

    /// Reads a suite file once: `<root>/suites/NAME.toml` for a name, the
    /// file itself for a path (one ending in `.toml` or with a folder),
    /// which needs no root. Returns how to name the file in errors, and
    /// its text.
    pub fn read(root: Option<&Path>, name_or_path: &str) -> anyhow::Result<(String, String)> {
        let as_path = Path::new(name_or_path);
        let path = if Suite::is_path(name_or_path) {
            as_path.to_path_buf()
        } else {
            let Some(root) = root else {
                return Err(crate::usage_error::usage(format!(
                    "--suite: {name_or_path} is a suite name, and names are looked up in a fairbench root's suites/; give --root, or the path of the file"
                )));
            };
            root.join("suites").join(format!("{name_or_path}.toml"))
        };
        let text = std::fs::read_to_string(&path).map_err(|e| {
            let known = root.map(list_suites).unwrap_or_default();
            crate::usage_error::usage(format!(
                "--suite: cannot read {}: {e}{}",
                path.display(),
                if known.is_empty() {
                    String::new()
                } else {
                    format!(" (suites here: {})", known.join(", "))
                }
            ))
        })?;
        Ok((path.display().to_string(), text))
    }

    /// Whether `--suite` names a file rather than a suite of the root.
    pub fn is_path(name_or_path: &str) -> bool {
        name_or_path.ends_with(".toml") || Path::new(name_or_path).components().count() > 1
    }

    /// Parses and validates; errors name the file and the field.
    pub fn parse(text: &str, shown: &str) -> anyhow::Result<Suite> {
        let raw: RawSuite = toml::from_str(text).map_err(|e| {
            crate::usage_error::usage(format!(
                "{shown}: {}",
                e.to_string().trim().replace('\n', " ")
            ))
        })?;
        let bad = |field: &str, msg: String| {
            crate::usage_error::usage(format!("{shown}: field {field}: {msg}"))
        };
        let dur = |field: &str, v: &str| -> anyhow::Result<Duration> {
            crate::args::duration(v).map_err(|m| bad(field, m))
        };
        if raw.name.trim().is_empty() {
            return Err(bad("name", "must not be empty".into()));
        }
        let services = services(&raw, &bad)?;
        for (field, list) in [
            ("servers", &raw.servers),
            ("modes", &raw.modes),
            ("responses", &raw.responses),
            ("scenarios", &raw.scenarios),
        ] {
            if list.is_empty() && (field != "scenarios" || services.is_empty()) {
                return Err(bad(field, "expected at least one entry".into()));
            }
            for p in list {
                glob::Pattern::new(p).map_err(|e| bad(field, format!("{p:?}: {e}")))?;
            }
        }
        for r in &raw.responses {
            if !matches!(r.as_str(), "default" | "normalized" | "study" | "*") {
                return Err(bad(
                    "responses",
                    format!("{r:?}: expected \"default\", \"normalized\" or \"study\""),
                ));
            }
        }
        let protocols = match &raw.protocols {
            None => vec![fairbench_zoo::Protocol::Http1],
            Some(list) => {
                if list.is_empty() {
                    return Err(bad(
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
                            return Err(bad("protocols", format!("{p:?} is listed twice")))
                        }
                        Some(x) => out.push(x),
                        None => {
                            return Err(bad(
                                "protocols",
                                format!("{p:?}: expected {}", fairbench_zoo::Protocol::expected()),
                            ))
                        }
                    }
                }
                out
            }
        };
        let mut cores = Vec::new();
        for v in &raw.cores {
            cores.push(match v {
                toml::Value::Integer(n) if *n >= 1 => CoreCount::N(*n as usize),
                toml::Value::String(s) if s == "all" => CoreCount::All,
                other => {
                    return Err(bad(
                        "cores",
                        format!("{other}: expected a number of CPUs (at least 1) or \"all\""),
                    ))
                }
            });
        }
        if cores.is_empty() {
            return Err(bad("cores", "expected at least one core count".into()));
        }
        let duration = dur("duration", &raw.duration)?;
        if duration.is_zero() {
            return Err(bad("duration", "must be longer than 0".into()));
        }
        let warmup = raw
            .warmup
            .as_deref()
            .map(|w| dur("warmup", w))
            .transpose()?
            .unwrap_or_default();
        let timeout = raw
            .timeout
            .as_deref()
            .map(|w| dur("timeout", w))
            .transpose()?
            .unwrap_or(Duration::from_secs(2));
        if timeout.is_zero() {
            return Err(bad("timeout", "must be longer than 0".into()));
        }
        let timeout_mode = match raw.timeout_mode.as_deref() {
            None => fairbench_engine::TimeoutMode::Fairbench,
            Some(m) => {
                fairbench_engine::TimeoutMode::parse(m).map_err(|e| bad("timeout_mode", e))?
            }
        };
        let ready_timeout = raw
            .ready_timeout
            .as_deref()
            .map(|w| dur("ready_timeout", w))
            .transpose()?
            .unwrap_or(Duration::from_secs(60));
        let address_family = raw
            .address_family
            .as_deref()
            .map(|f| AddressFamily::parse(f).map_err(|e| bad("address_family", e)))
            .transpose()?
            .unwrap_or_default();
        let calibrate = raw
            .calibrate
            .as_deref()
            .map(|t| crate::calibration::Tool::parse(t).map_err(|e| bad("calibrate", e)))
            .transpose()?;
        let repetitions = raw.repetitions.unwrap_or(3);
        if repetitions == 0 {
            return Err(bad("repetitions", "must be at least 1".into()));
        }
        crate::args::bounds::at_most(repetitions, crate::args::bounds::MAX_REPETITIONS)
            .map_err(|m| bad("repetitions", m))?;
        if raw.loads.is_empty() {
            return Err(bad("load", "expected at least one [[load]] profile".into()));
        }
        let mut loads = Vec::new();
        for (i, l) in raw.loads.iter().enumerate() {
            let f = |name: &str| format!("load[{i}].{name}");
            if l.connections == 0 {
                return Err(bad(&f("connections"), "must be at least 1".into()));
            }
            if l.threads == Some(0) {
                return Err(bad(&f("threads"), "must be at least 1".into()));
            }
            if l.pipeline == Some(0) {
                return Err(bad(&f("pipeline"), "must be at least 1".into()));
            }
            let positive = |name: &str, v: Option<f64>| -> anyhow::Result<f64> {
                match v {
                    Some(v) if v.is_finite() && v > 0.0 => Ok(v),
                    Some(v) => Err(bad(&f(name), format!("{v}: must be a positive number"))),
                    None => Err(bad(&f(name), format!("required for model = {:?}", l.model))),
                }
            };
            if l.requests == Some(0) {
                return Err(bad(&f("requests"), "must be at least 1".into()));
            }
            let streams = l.streams.unwrap_or(1);
            if streams == 0 || streams > fairbench_engine::MAX_STREAMS {
                return Err(bad(
                    &f("streams"),
                    format!(
                        "{streams}: expected 1 to {} streams per HTTP/2 connection",
                        fairbench_engine::MAX_STREAMS
                    ),
                ));
            }
            if streams > 1 && !protocols.iter().any(|p| p.is_h2()) {
                return Err(bad(
                    &f("streams"),
                    "applies to HTTP/2 cases only: add \"h2c\" or \"h2\" to protocols".into(),
                ));
            }
            if streams > 1 && l.pipeline.is_some_and(|p| p > 1) {
                return Err(bad(
                    &f("streams"),
                    "cannot be combined with pipeline (HTTP/2 multiplexes streams instead)".into(),
                ));
            }
            let ends = Ends {
                requests: l.requests,
                keepalive: l.keepalive.unwrap_or(true),
                streams,
            };
            if streams > 1 && !ends.keepalive {
                return Err(bad(
                    &f("streams"),
                    "cannot be combined with keepalive = false (an HTTP/2 connection carries many requests)".into(),
                ));
            }
            if !ends.keepalive && l.pipeline.is_some_and(|p| p > 1) {
                return Err(bad(
                    &f("pipeline"),
                    "cannot be combined with keepalive = false (a connection carries one request)"
                        .into(),
                ));
            }
            if l.model == "sweep" && (ends.requests.is_some() || !ends.keepalive) {
                return Err(bad(
                    &f("model"),
                    "a sweep's steps are timed: requests and keepalive apply to closed and rate"
                        .into(),
                ));
            }
            loads.push(match l.model.as_str() {
                "closed" => LoadProfile::Closed {
                    connections: l.connections,
                    threads: l.threads,
                    pipeline: l.pipeline.unwrap_or(1),
                    ends,
                },
                "rate" => LoadProfile::Rate {
                    rate: positive("rate", l.rate)?,
                    connections: l.connections,
                    threads: l.threads,
                    ends,
                },
                "sweep" => {
                    let start_rate = positive("start_rate", l.start_rate)?;
                    let max_rate = positive("max_rate", l.max_rate)?;
                    if max_rate < start_rate {
                        return Err(bad(&f("max_rate"), "must not be below start_rate".into()));
                    }
                    let step_factor = l.step_factor.unwrap_or(2.0);
                    if !(step_factor.is_finite() && step_factor > 1.0) {
                        return Err(bad(&f("step_factor"), "must be greater than 1".into()));
                    }
                    let slo_quantile = l.slo_quantile.unwrap_or(0.99);
                    if !(slo_quantile > 0.0 && slo_quantile < 1.0) {
                        return Err(bad(
                            &f("slo_quantile"),
                            "must be between 0 and 1, e.g. 0.99".into(),
                        ));
                    }
                    let slo = dur(&f("slo"), l.slo.as_deref().unwrap_or("10ms"))?;
                    if slo.is_zero() {
                        return Err(bad(&f("slo"), "must be longer than 0".into()));
                    }
                    let step_duration = match &l.step_duration {
                        Some(s) => dur(&f("step_duration"), s)?,
                        None => duration,
                    };
                    LoadProfile::Sweep(SweepSpec {
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
                other => {
                    return Err(bad(
                        &f("model"),
                        format!("{other:?}: expected \"closed\", \"rate\" or \"sweep\""),
                    ))
                }
            });
        }
        let timing = Timing {
            warmup,
            duration,
            timeout,
            timeout_mode,
        };
        for (i, l) in loads.iter().enumerate() {
            l.check(i, timing).map_err(|(field, m)| bad(&field, m))?;
        }
        let reference = match &raw.reference {
            Some(r) => VariantSpec::parse(r).map_err(|e| bad("reference", e))?,
            None => VariantSpec::parse(DEFAULT_REFERENCE).map_err(|e| bad("reference", e))?,
        };
        let mut aa = Vec::new();
        for a in &raw.aa {
            aa.push(VariantSpec::parse(a).map_err(|e| bad("aa", e))?);
        }
        let interleave = match raw.interleave.as_deref() {
            None => Interleave::Repetition,
            Some(s) => Interleave::parse(s).ok_or_else(|| {
                bad(
                    "interleave",
                    format!("{s:?}: expected \"repetition\" or \"case\""),
                )
            })?,
        };
        let interleave_seed = match raw.interleave_seed {
            Some(s) if s < 0 => {
                return Err(bad("interleave_seed", format!("{s}: must be 0 or more")))
            }
            s => s.map(|s| s as u64),
        };
        let workers = match raw.workers {
            Some(w) if w < 1 => {
                return Err(bad(
                    "workers",
                    format!("{w}: expected a count of 1 or more (leave it out for one per core)"),
                ))
            }
            w => w.map(|w| w as usize),
        };
        if let (false, Some(i)) = (
            services.is_empty(),
            loads
                .iter()
                .position(|l| matches!(l, LoadProfile::Sweep(_))),
        ) {
            return Err(bad(
                &format!("load[{i}].model"),
                "a sweep of a [[service]] is not supported yet (`fairbench load URL --knee p99<=10ms` searches one URL's knee)".into(),
            ));
        }
        Ok(Suite {
            services,
            workers,
            pairing: Pairing {
                reference,
                reference_from: if raw.reference.is_some() {
                    "suite"
                } else {
                    "default"
                },
                aa,
            },
            interleave,
            interleave_seed,
            name: raw.name,
            description: raw.description,
            servers: raw.servers,
            modes: raw.modes,
            responses: raw.responses,
            scenarios: raw.scenarios,
            protocols,
            cores,
            loads,
            duration,
            warmup,
            timeout,
            timeout_mode,
            repetitions,
            ready_timeout,
            address_family,
            calibrate,
        })
    }
}

/// The `[[service]]`s, checked: a name each, unique, and an http(s) URL. A
/// suite of services names no zoo scenario.
fn services(
    raw: &RawSuite,
    bad: &dyn Fn(&str, String) -> anyhow::Error,
) -> anyhow::Result<Vec<Service>> {
    if !raw.services.is_empty() && !raw.scenarios.is_empty() {
        return Err(bad(
            "scenarios",
            "a suite of [[service]]s measures running services at their URLs, not zoo scenarios: leave scenarios out".into(),
        ));
    }
    let mut out: Vec<Service> = Vec::new();
    for (i, s) in raw.services.iter().enumerate() {
        let name = s.name.trim();
        if name.is_empty() {
            return Err(bad(
                &format!("service[{i}].name"),
                "must not be empty".into(),
            ));
        }
        if out.iter().any(|o| o.name == name) {
            return Err(bad(
                &format!("service[{i}].name"),
                format!("{name:?} is given twice"),
            ));
        }
        fairbench_engine::Target::parse(&s.url)
            .map_err(|e| bad(&format!("service[{i}].url"), e.to_string()))?;
        out.push(Service {
            name: name.to_string(),
            url: s.url.clone(),
        });
    }
    Ok(out)
}

fn list_suites(root: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(root.join("suites"))
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| {
                    let p = e.path();
                    if p.extension()? != "toml" {
                        return None;
                    }
                    Some(p.file_stem()?.to_string_lossy().into_owned())
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[cfg(test)]
mod tests;
