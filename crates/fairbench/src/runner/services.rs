//! `fairbench run` of a suite of `[[service]]`s: services that already run,
//! named by URL, measured under the suite's load profiles and repetitions
//! and stored as URL cases (crate::report::url_case), so `show`, `report`
//! and `compare` read them like any run. Nothing is built, started or
//! contained: the servers' own CPU and memory are not measured, and the
//! run says so.

use std::time::Duration;

use fairbench_engine::{LoadConfig, LoadModel, Outcome};

use super::adhoc::SampleLog;
use super::case::load_figures;
use crate::request_options;
use crate::store::{PlannedCase, Store};
use crate::suite::order::{case_order, Interleave};
use crate::suite::{LoadProfile, Service, Suite};
use crate::thresholds::Threshold;

/// One repetition of one service under one profile.
#[derive(Debug, Clone)]
pub struct ServiceCase {
    pub service: Service,
    pub load: LoadProfile,
    pub repetition: usize,
}

impl ServiceCase {
    pub fn label(&self) -> String {
        format!(
            "{} {} #{}",
            self.service.name,
            self.load.label(),
            self.repetition
        )
    }
}

/// Repetitions outermost, as for zoo suites; within one, services × loads
/// in the file's order, or shuffled and rotated with `interleave = "case"`.
pub fn plan(suite: &Suite) -> Vec<ServiceCase> {
    let mut one: Vec<(Service, LoadProfile)> = Vec::new();
    for s in &suite.services {
        for l in &suite.loads {
            one.push((s.clone(), l.clone()));
        }
    }
    let mut out = Vec::new();
    for r in 1..=suite.repetitions {
        let order: Vec<usize> = match (suite.interleave, suite.interleave_seed) {
            (Interleave::Case, Some(seed)) => case_order(one.len(), r, seed),
            _ => (0..one.len()).collect(),
        };
        for i in order {
            out.push(ServiceCase {
                service: one[i].0.clone(),
                load: one[i].1.clone(),
                repetition: r,
            });
        }
    }
    out
}

/// The stored form of a planned service case: a URL case, as `load
/// --save` stores one.
pub fn planned_case(seq: usize, suite: &Suite, c: &ServiceCase, cfg: &LoadConfig) -> PlannedCase {
    let mut load_json = serde_json::to_value(&c.load).unwrap_or_default();
    if let Some(m) = load_json.as_object_mut() {
        m.insert("url".into(), c.service.url.clone().into());
        m.insert("method".into(), cfg.request.method.clone().into());
        m.insert("warmup_s".into(), suite.warmup.as_secs_f64().into());
        m.insert("duration_s".into(), suite.duration.as_secs_f64().into());
        m.insert("timeout_s".into(), suite.timeout.as_secs_f64().into());
    }
    super::adhoc::url_case(
        seq,
        &c.service.name,
        "url",
        c.load.label(),
        &load_json,
        c.repetition,
        cfg.protocol,
    )
}

/// The engine's settings for one case.
pub fn config(suite: &Suite, c: &ServiceCase) -> Result<LoadConfig, String> {
    let options = &c.service.request;
    let routes = options.routes(&key)?;
    request_options::check_routes_used(&[&c.service.url], &routes, &key)?;
    let target = options.target(&c.service.url, &routes, &key)?;
    let mut cfg = LoadConfig::new(target);
    cfg.duration = suite.duration;
    cfg.warmup = suite.warmup;
    cfg.timeout = suite.timeout;
    let (connections, threads, ends) = match &c.load {
        LoadProfile::Closed {
            connections,
            threads,
            pipeline,
            ends,
        } => {
            cfg.model = LoadModel::ClosedLoop;
            cfg.pipeline = *pipeline;
            (*connections, *threads, *ends)
        }
        LoadProfile::Rate {
            rate,
            connections,
            threads,
            ends,
        } => {
            cfg.model = LoadModel::ConstantRate { rps: *rate };
            (*connections, *threads, *ends)
        }
        LoadProfile::Sweep(_) => return Err("a sweep of a service is not supported yet".into()),
    };
    cfg.connections = connections;
    // Placed as `load` places its one generator (no `--cpus` here).
    let site = crate::stage::placement::url_generator(None);
    cfg.threads = threads.unwrap_or(site.default_threads);
    cfg.cpus = site.cpus;
    cfg.requests = ends.requests;
    cfg.keepalive = ends.keepalive;
    options.apply(&c.service.url, &mut cfg, &key)?;
    cfg.validate()
        .map_err(|e| request_options::engine_error(&e, &key))?;
    Ok(cfg)
}

/// A service's option as its suite spells it: the key.
fn key(name: &str) -> String {
    name.replace('-', "_")
}

/// The service's thresholds, parsed against its targets' names.
pub fn thresholds(c: &ServiceCase, cfg: &LoadConfig) -> Result<Vec<Threshold>, String> {
    let names = cfg.mix.as_ref().map_or(&[][..], |m| &m.names[..]);
    crate::thresholds::parse_all(&c.service.thresholds, names, false)
        // The parser names load's flag; here the key is the name.
        .map_err(|e| format!("thresholds: {}", e.replacen("--threshold ", "", 1)))
}

/// How one case ended.
pub enum Ended {
    Done(Box<Outcome>),
    Failed(String),
    Interrupted,
}

/// Measures case `id` (stored as pending) and stores what it measured.
pub fn measure(
    store: &mut Store,
    id: i64,
    declared: Option<String>,
    cfg: &LoadConfig,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    observer: &mut dyn fairbench_engine::Observer,
) -> anyhow::Result<Ended> {
    let cpus = cfg
        .cpus
        .as_deref()
        .map(crate::args::format_cpus)
        .unwrap_or_default();
    store.mark_running(id, ("", &cpus, false))?;
    store.record_versions(id, &super::versions::of_url(declared))?;
    let mut log = SampleLog::default();
    let result = {
        let mut live = crate::output::metrics::Live;
        let mut fan = crate::output::progress::Fanout(vec![observer, &mut log, &mut live]);
        fairbench_engine::run(cfg, stop, &mut fan)
    };
    match result {
        Ok(o) if o.interrupted => {
            store.set_case_state(id, "pending", None, None)?;
            Ok(Ended::Interrupted)
        }
        Ok(o) => {
            crate::output::metrics::finish(&o);
            let mut figures = load_figures(&o);
            figures.samples = log.samples;
            store.record_done(id, &figures)?;
            Ok(Ended::Done(Box::new(o)))
        }
        Err(e) => {
            let reason = e.to_string();
            store.record_failed(id, &reason, None)?;
            Ok(Ended::Failed(reason))
        }
    }
}

/// The suite's warm-up and duration of one case, for the estimate.
pub fn case_time(suite: &Suite) -> Duration {
    suite.warmup + suite.duration
}
