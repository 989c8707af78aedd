//! `fairbench run` of a suite of `[[service]]`s: services that already run,
//! named by URL, measured under the suite's load profiles and repetitions
//! and stored as URL cases (crate::report::url_case), so `show`, `report`
//! and `compare` read them like any run. Nothing is built, started or
//! contained: the servers' own CPU and memory are not measured, and the
//! run says so. A sweep profile searches each service's knee with `load
//! --knee`'s search (runner::knee_load), its steps stored as a zoo sweep's.

use std::time::Duration;

use fairbench_engine::{LoadConfig, LoadModel, Outcome};

use super::adhoc::SampleLog;
use super::case::load_figures;
use super::knee_load::{self, KneeResult};
use crate::output::metrics;
use crate::output::progress::LoadProgress;
use crate::store::{PlannedCase, Store, SweepRow};
use crate::suite::order::{case_order, Interleave};
use crate::suite::{Ends, LoadProfile, Service, Suite};
use crate::thresholds::Threshold;
use crate::{request_options, units};

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
/// Sweeps, which find one knee each, run once, after the first
/// repetition's cases (as a zoo suite's do).
pub fn plan(suite: &Suite) -> Vec<ServiceCase> {
    let mut one: Vec<(Service, LoadProfile)> = Vec::new();
    let mut sweeps = Vec::new();
    for s in &suite.services {
        for l in &suite.loads {
            match l {
                LoadProfile::Sweep(_) => sweeps.push(ServiceCase {
                    service: s.clone(),
                    load: l.clone(),
                    repetition: 1,
                }),
                _ => one.push((s.clone(), l.clone())),
            }
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
        if r == 1 {
            out.append(&mut sweeps);
        }
    }
    out
}

/// The stored form of a planned service case (or of a sweep's step): a
/// URL case, as `load --save` stores one.
pub fn planned_case(seq: usize, c: &ServiceCase, cfg: &LoadConfig) -> PlannedCase {
    let mut load_json = serde_json::to_value(&c.load).unwrap_or_default();
    if let Some(m) = load_json.as_object_mut() {
        m.insert("url".into(), c.service.url.clone().into());
        m.insert("method".into(), cfg.request.method.clone().into());
        m.insert("warmup_s".into(), cfg.warmup.as_secs_f64().into());
        // As a zoo case's (runner::planned_case): the report shows what an
        // `auto` warm-up took.
        if let Some(a) = cfg.warmup_auto {
            m.insert("warmup".into(), "auto".into());
            m.insert("warmup_ceiling_s".into(), a.ceiling.as_secs_f64().into());
        }
        m.insert("duration_s".into(), cfg.duration.as_secs_f64().into());
        m.insert("timeout_s".into(), cfg.timeout.as_secs_f64().into());
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
    suite.warmup.apply(&mut cfg);
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
        // The first step's settings: the search sets each step's rate,
        // and the warm-up before the first only.
        LoadProfile::Sweep(s) => {
            cfg.model = LoadModel::ConstantRate {
                rps: s.start_rate.round(),
            };
            cfg.duration = s.step_duration;
            (s.connections, s.threads, Ends::default())
        }
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
            figures.samples = crate::store::SampleRow::number_finally(log.samples, &o);
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

/// The suite's warm-up and duration of one case, or of a sweep's steps
/// as many as the search is likely to take, for the estimate.
pub fn case_time(suite: &Suite, c: &ServiceCase) -> Duration {
    match &c.load {
        LoadProfile::Sweep(s) => {
            suite.warmup.at_most() + s.step_duration.mul_f64(s.estimated_steps())
        }
        _ => suite.warmup.at_most() + suite.duration,
    }
}

/// How a sweep of a service ended.
pub enum SweepEnded {
    /// The search ran its course: its steps, and the knee if a rate met
    /// the objective.
    Done(KneeResult),
    Failed(String),
    Interrupted,
}

/// Why a sweep stopped before its search ended.
enum Stop {
    Failed(String),
    Interrupted,
    Store(anyhow::Error),
}

/// Searches the knee of `c`, a sweep, with `load --knee`'s search (`cfg`:
/// its first step), each step stored as a case of the sweep as a zoo
/// sweep's steps are, and the knee as the sweep's result. An interrupted
/// step is left pending, the steps before it stored.
pub fn sweep(
    store: &mut Store,
    run: i64,
    c: &ServiceCase,
    cfg: &LoadConfig,
) -> anyhow::Result<SweepEnded> {
    let LoadProfile::Sweep(spec) = &c.load else {
        anyhow::bail!("{}: not a sweep", c.label());
    };
    let key = format!("{}/{}", c.service.name, c.load.label());
    let stop = crate::interrupt::flag();
    let searched = knee_load::search(cfg, knee_load::sweep_of(spec), |step| {
        if crate::interrupt::interrupted() {
            return Err(Stop::Interrupted);
        }
        let rate = metrics::planned(step).unwrap_or(spec.start_rate);
        let at = ServiceCase {
            load: super::sweep::step_load(spec, rate),
            ..c.clone()
        };
        let id = store
            .append_case(run, |seq| PlannedCase {
                sweep: Some(key.clone()),
                ..planned_case(seq, &at, step)
            })
            .map_err(Stop::Store)?;
        // As `load --knee` shows its steps.
        eprintln!("step: {} req/s offered", units::rate(rate));
        let labels = vec![
            ("service", c.service.name.clone()),
            ("url", c.service.url.clone()),
            ("load", at.load.label()),
        ];
        metrics::begin(labels, Some(rate));
        let mut progress = LoadProgress::new(step.warmup + step.duration);
        let version = c.service.version.clone();
        let ended = measure(store, id, version, step, stop.clone(), &mut progress);
        progress.finish();
        match ended.map_err(Stop::Store)? {
            Ended::Done(o) => Ok(*o),
            Ended::Failed(reason) => Err(Stop::Failed(reason)),
            Ended::Interrupted => Err(Stop::Interrupted),
        }
    });
    let row = |knee: Option<f64>, state: &str, reason: Option<&str>| SweepRow {
        sweep: key.clone(),
        server: c.service.name.clone(),
        mode: "-".into(),
        response: "default".into(),
        scenario: "url".into(),
        cores: 0,
        slo_quantile: spec.slo_quantile,
        slo_us: spec.slo.as_micros() as i64,
        knee_rps: knee,
        state: state.into(),
        reason: reason.map(str::to_string),
        protocol: cfg.protocol.as_str().into(),
    };
    let failed = match searched {
        // As `load --knee` exits 1 then: nothing there answered.
        Ok(r) if r.steps.iter().all(|s| s.answered_rps == 0.0) => {
            "no request was answered".to_string()
        }
        Ok(r) => {
            store.record_sweep(run, &row(r.knee_rps, "done", None))?;
            return Ok(SweepEnded::Done(r));
        }
        Err(Stop::Failed(reason)) => reason,
        Err(Stop::Interrupted) => return Ok(SweepEnded::Interrupted),
        Err(Stop::Store(e)) => return Err(e),
    };
    store.record_sweep(run, &row(None, "failed", Some(&failed)))?;
    Ok(SweepEnded::Failed(failed))
}
