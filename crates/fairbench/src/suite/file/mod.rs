//! The suite file format (documented in docs/suites.md).

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use super::order::Interleave;
use super::pairing::Pairing;

mod loads;
mod profile;
mod raw;
mod repetitions;
mod services;
mod settings;
mod steps;
pub use profile::{Ends, LoadProfile, SweepSpec};
use raw::*;
pub use repetitions::Repetitions;
pub use steps::Step;

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
    pub warmup: crate::args::Warmup,
    pub timeout: Duration,
    /// How a request past `timeout` is counted: `fairbench` (aborted, its
    /// connection reopened) or `wrk` (a late answer is a timeout, the
    /// connection kept), for the suites that reproduce wrk's figures.
    #[serde(serialize_with = "mode_name")]
    pub timeout_mode: fairbench_engine::TimeoutMode,
    /// The repetitions planned: the count, or an adaptive run's maximum.
    pub repetitions: usize,
    /// `repetitions = "until:3%,max:20"`: repetitions go on until every
    /// paired ratio is known to the asked precision (runner::stopping);
    /// None for a fixed count.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "canonical_repetitions"
    )]
    pub adaptive: Option<Repetitions>,
    pub ready_timeout: Duration,
    /// The address the load reaches a server on this machine at: `ipv4`
    /// (127.0.0.1, the default) or `ipv6` (::1, as the rebuttal's spot
    /// checks ran). Servers bind the any address, so both reach them. Or
    /// `unix`: each server is told to listen on a unix domain socket
    /// (`UNIX_SOCKET`) instead of a port, and the checks and the load go
    /// there; servers whose manifests do not list it are skipped.
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
    /// `[[step]]`: the rungs of a ladder, each measured with its own
    /// settings in the same run; empty for a suite without one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<Step>,
}

/// Which loopback address a suite's load goes to, or a unix socket.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AddressFamily {
    #[default]
    Ipv4,
    Ipv6,
    Unix,
}

impl AddressFamily {
    pub const EXPECTED: &'static str = "ipv4 or ipv6 (TCP), or unix";
    /// Why a suite over unix sockets is not calibrated.
    pub const UNIX_CALIBRATE: &'static str =
        "wrk, wrk2 and ab reach a server over TCP only, and address_family = \"unix\" puts it on a unix socket";

    pub fn parse(s: &str) -> Result<AddressFamily, String> {
        match s {
            "ipv4" => Ok(AddressFamily::Ipv4),
            "ipv6" => Ok(AddressFamily::Ipv6),
            "unix" => Ok(AddressFamily::Unix),
            other => Err(format!("expected {}, got {other:?}", Self::EXPECTED)),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            AddressFamily::Ipv4 => "ipv4",
            AddressFamily::Ipv6 => "ipv6",
            AddressFamily::Unix => "unix",
        }
    }

    /// The socket a server is told to listen on for this family.
    pub fn socket(self) -> fairbench_zoo::manifest::Socket {
        match self {
            AddressFamily::Unix => fairbench_zoo::manifest::Socket::Unix,
            _ => fairbench_zoo::manifest::Socket::Tcp,
        }
    }

    /// The loopback address of the family, as a URL's host takes it
    /// unbracketed. A unix socket has none: the IPv4 one stands in, where
    /// a layout is aimed (the socket itself is the stage's).
    pub fn loopback(self) -> &'static str {
        match self {
            AddressFamily::Ipv4 | AddressFamily::Unix => "127.0.0.1",
            AddressFamily::Ipv6 => "::1",
        }
    }
}

/// A service a suite measures where it runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Service {
    pub name: String,
    pub url: String,
    /// What its requests are and how it is connected to, as `load`'s
    /// flags say it; files named relative to the suite file.
    pub request: crate::request_options::RequestOptions,
    /// As `load --threshold` takes them; a case that breaks one makes the
    /// run exit with thresholds' code.
    pub thresholds: Vec<String>,
    /// What it runs, as the team names it (a release, a commit): stored
    /// with each case so `history` can tell versions apart.
    pub version: Option<String>,
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

fn canonical_repetitions<S: serde::Serializer>(
    r: &Option<Repetitions>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match r {
        Some(r) => s.serialize_str(&r.canonical()),
        None => s.serialize_none(),
    }
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

    /// Parses and validates; errors name the file and the field. The
    /// fields are checked in the order of the steps below, which decides
    /// which mistake of a file with several is reported.
    pub fn parse(text: &str, shown: &str) -> anyhow::Result<Suite> {
        let raw = read_table(text, shown)?;
        let file = Fields { raw: &raw, shown };
        file.check_name()?;
        let services = file.services()?;
        file.check_selection(&services)?;
        let protocols = file.protocols()?;
        let cores = file.cores()?;
        let timing = file.timing()?;
        let run = file.run_settings()?;
        if run.adaptive.is_some() && !services.is_empty() {
            return Err(file.bad(
                "repetitions",
                "a suite of [[service]]s runs a fixed count (e.g. 5); a precision (until:…) is for zoo suites and `load --vs`".into(),
            ));
        }
        let loads = file.loads(&protocols, timing)?;
        let pairing = file.pairing()?;
        let (interleave, interleave_seed) = file.interleave()?;
        let workers = file.workers()?;
        file.check_service_sweeps(&services, &loads)?;
        let steps = file.steps(steps::Base {
            responses: &raw.responses,
            address_family: run.address_family,
            workers,
            timing,
            loads: &loads,
            protocols: &protocols,
        })?;
        Ok(Suite {
            services,
            steps,
            workers,
            pairing,
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
            duration: timing.duration,
            warmup: timing.warmup,
            timeout: timing.timeout,
            timeout_mode: timing.timeout_mode,
            repetitions: run.repetitions,
            adaptive: run.adaptive,
            ready_timeout: run.ready_timeout,
            address_family: run.address_family,
            calibrate: run.calibrate,
        })
    }
}

/// The TOML table of a suite file, as written.
fn read_table(text: &str, shown: &str) -> anyhow::Result<RawSuite> {
    toml::from_str(text).map_err(|e| {
        crate::usage_error::usage(format!(
            "{shown}: {}",
            e.to_string().trim().replace('\n', " ")
        ))
    })
}

/// A suite file's fields being checked, each step a method (in
/// `settings.rs`, `services.rs` and `loads.rs`); every error names the file
/// and the field.
struct Fields<'a> {
    raw: &'a RawSuite,
    /// How the file is named in errors.
    shown: &'a str,
}

impl Fields<'_> {
    /// A usage error: "FILE: field FIELD: MSG".
    fn bad(&self, field: &str, msg: String) -> anyhow::Error {
        crate::usage_error::usage(format!("{}: field {field}: {msg}", self.shown))
    }

    /// The duration `v` of `field` ("30s", "500ms").
    fn duration(&self, field: &str, v: &str) -> anyhow::Result<Duration> {
        crate::args::duration(v).map_err(|m| self.bad(field, m))
    }
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
