//! Runs a load: at once with a fixed warm-up; with an `auto` one, the
//! watched warm-up pass, then the measured pass (the rule, and why two
//! passes: [`crate::warmup`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::clock;
use crate::config::{LoadConfig, LoadModel};
use crate::outcome::{Outcome, Phase, SecondSample};
use crate::run::{run_once, Observer, RunError};
use crate::warmup::{first_live, steady, AutoWarmup, WarmupVerdict, RECONNECT};

/// Runs the load described by `cfg` until its duration has passed (then
/// drains what is outstanding) or `stop` is set. Whatever was measured until
/// then is returned either way; a load thread that cannot run (it cannot be
/// pinned, or it died) voids the run.
pub fn run(
    cfg: &LoadConfig,
    stop: Arc<AtomicBool>,
    observer: &mut dyn Observer,
) -> Result<Outcome, RunError> {
    match cfg.warmup_auto {
        Some(auto) => {
            cfg.validate()?;
            run_auto(cfg, auto, stop, observer)
        }
        None => run_once(cfg, stop, observer),
    }
}

/// The figure the rule watches in one warm-up second, if it has one.
fn watched_value(model: &LoadModel, s: &SecondSample) -> f64 {
    match model {
        LoadModel::ClosedLoop => s.rps(),
        LoadModel::ConstantRate { .. } if s.requests > 0 => s.p50_us as f64,
        LoadModel::ConstantRate { .. } => f64::NAN,
    }
}

/// Watches the warm-up pass: passes its seconds on as warm-up, and ends it
/// (through `inner`) when the rule says steady or the caller stops.
struct Watcher<'a> {
    observer: &'a mut dyn Observer,
    model: LoadModel,
    window: usize,
    values: Vec<f64>,
    series: Vec<SecondSample>,
    next_live: i64,
    steady: bool,
    caller_stop: Arc<AtomicBool>,
    inner: &'a AtomicBool,
}

impl Observer for Watcher<'_> {
    fn on_interval(&mut self, s: &SecondSample, h: &Histogram<u64>) {
        let mut w = s.clone();
        w.phase = Phase::Warmup;
        w.second = self.next_live;
        self.next_live += 1;
        self.observer.on_interval(&w, h);
        self.series.push(w);
        // A partial second (the last, or a drain) says nothing of the level.
        if s.phase == Phase::Measure && s.duration_s >= 0.9 && !self.steady {
            self.values.push(watched_value(&self.model, s));
            let tail = &self.values[self.values.len().saturating_sub(self.window)..];
            if tail.len() == self.window && steady(tail) {
                self.steady = true;
                self.inner.store(true, Ordering::Relaxed);
            }
        }
        if self.caller_stop.load(Ordering::Relaxed) {
            self.inner.store(true, Ordering::Relaxed);
        }
    }
}

/// Passes the measured pass's seconds on with their start moved by the
/// warm-up pass's length, so that the run's clock runs on across both.
struct Shifted<'a> {
    observer: &'a mut dyn Observer,
    by_s: f64,
}

impl Observer for Shifted<'_> {
    fn on_interval(&mut self, s: &SecondSample, h: &Histogram<u64>) {
        let mut m = s.clone();
        m.start_s += self.by_s;
        self.observer.on_interval(&m, h);
    }
}

/// The warm-up pass's load: the measured load without its window's
/// limits, at the first stage's starting rate under a rate profile (as a
/// fixed warm-up runs).
fn warmup_pass(cfg: &LoadConfig, auto: AutoWarmup) -> LoadConfig {
    let mut warm = cfg.clone();
    warm.warmup_auto = None;
    warm.warmup = Duration::ZERO;
    warm.duration = auto.ceiling;
    warm.requests = None;
    if let Some(stages) = warm.stages.take() {
        let from = stages.first().map_or(0.0, |s| s.from);
        if from > 0.0 {
            warm.model = LoadModel::ConstantRate { rps: from };
        }
    }
    warm
}

/// Runs `cfg` with an `auto` warm-up: the watched warm-up pass, then the
/// measured pass; one outcome, its series numbered finally.
fn run_auto(
    cfg: &LoadConfig,
    auto: AutoWarmup,
    stop: Arc<AtomicBool>,
    observer: &mut dyn Observer,
) -> Result<Outcome, RunError> {
    let warm = warmup_pass(cfg, auto);
    let inner = Arc::new(AtomicBool::new(false));
    let t0 = clock::now();
    let mut watcher = Watcher {
        observer,
        model: warm.model,
        window: auto.window.as_secs().max(1) as usize,
        values: Vec::new(),
        series: Vec::new(),
        next_live: first_live(auto.ceiling),
        steady: false,
        caller_stop: stop.clone(),
        inner: &inner,
    };
    run_once(&warm, inner.clone(), &mut watcher)?;
    let (warm_series, steady, observer) = (watcher.series, watcher.steady, watcher.observer);

    let mut measured = cfg.clone();
    measured.warmup_auto = None;
    measured.warmup = RECONNECT;
    let by_s = clock::now().saturating_sub(t0) as f64 / clock::NANOS_PER_SEC as f64;
    let mut shifted = Shifted { observer, by_s };
    let mut outcome = run_once(&measured, stop, &mut shifted)?;

    let n = warm_series.len() as i64;
    let live_shift = -1 - n - first_live(auto.ceiling);
    let mut series: Vec<SecondSample> = warm_series
        .into_iter()
        .map(|mut s| {
            s.second += live_shift;
            s
        })
        .collect();
    series.extend(outcome.series.drain(..).map(|mut s| {
        s.start_s += by_s;
        s
    }));
    outcome.series = series;
    outcome.warmup_s += by_s;
    outcome.auto_warmup = Some(WarmupVerdict {
        took_s: outcome.warmup_s,
        ceiling_s: auto.ceiling.as_secs_f64(),
        window_s: auto.window.as_secs_f64(),
        steady,
        watched: match cfg.model {
            LoadModel::ClosedLoop => "req/s",
            LoadModel::ConstantRate { .. } => "p50",
        }
        .into(),
        live_shift,
    });
    Ok(outcome)
}
