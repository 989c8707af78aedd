//! One case: start the server pinned to its CPUs, check it, load it, record it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fairbench_engine::{LoadConfig, LoadModel, Observer, Outcome, Phase, SecondSample, Target};
use fairbench_zoo::contract::Grade;
use fairbench_zoo::launch::{self, LaunchParams};
use fairbench_zoo::manifest::ResponseKind;
use fairbench_zoo::parity::{self, CaseId, CaseReport, InspectOptions};
use fairbench_zoo::process::{self, ServerProcess};
use fairbench_zoo::{fetch, Scenario, Server};
use hdrhistogram::Histogram;

use super::placement::Placement;
use super::sampler::TreeSampler;
use crate::output::run_progress::RunProgress;
use crate::store::{encode_histogram, CaseFigures, SampleRow};
use crate::suite::LoadProfile;

const LOG_TAIL: usize = 20;

/// How a case (or a sweep's server session) ended, when not with figures.
#[derive(Debug)]
pub enum CaseEnd {
    Failed {
        reason: String,
        log_tail: Vec<String>,
    },
    Skipped {
        reason: String,
    },
    Interrupted,
}

impl CaseEnd {
    fn failed(reason: impl Into<String>, server: Option<&ServerProcess>) -> CaseEnd {
        CaseEnd::Failed {
            reason: reason.into(),
            log_tail: server.map(|s| s.log_tail(LOG_TAIL)).unwrap_or_default(),
        }
    }
}

/// Everything needed to start one server for one scenario.
pub struct Launch<'a> {
    pub server: &'a Server,
    pub mode: &'a str,
    pub response: ResponseKind,
    pub scenario: &'a Scenario,
    pub cores: usize,
    pub placement: &'a Placement,
    pub out_dir: PathBuf,
    pub log_path: PathBuf,
    pub ready_timeout: Duration,
}

/// A started, ready, checked server.
pub struct Running {
    pub process: ServerProcess,
    pub port: u16,
    pub parity: CaseReport,
}

impl Running {
    pub fn fair(&self) -> bool {
        self.parity.grade != Grade::Fail
    }

    pub fn parity_json(&self) -> String {
        serde_json::to_string(&self.parity).unwrap_or_else(|_| "{}".into())
    }

    pub fn bytes(&self) -> (Option<u64>, Option<u64>) {
        match &self.parity.row {
            Some(r) => (Some(r.header_bytes as u64), Some(r.body_bytes as u64)),
            None => (None, None),
        }
    }

    /// The reason a normalized variant may not be measured (first failing rule).
    pub fn unfair_reason(&self) -> String {
        let failing: Vec<String> = self
            .parity
            .rules
            .iter()
            .filter(|r| r.grade == Grade::Fail)
            .map(|r| format!("{}: {}", r.rule.name(), r.detail))
            .collect();
        format!(
            "normalized variant fails its contract ({}); pass --allow-unfair to measure it anyway",
            failing.join("; ")
        )
    }
}

pub fn start(l: &Launch<'_>) -> Result<Running, CaseEnd> {
    let port =
        process::free_port().map_err(|e| CaseEnd::failed(format!("no free port: {e}"), None))?;
    let params = LaunchParams {
        port,
        scenario: l.scenario.name.clone(),
        cores: l.cores,
        cpus: Some(l.placement.server.clone()),
        out_dir: l.out_dir.clone(),
        log_path: l.log_path.clone(),
        stop_grace: Duration::from_secs(5),
        extra_env: Vec::new(),
    };
    let spec = launch::spec(l.server, l.mode, l.response, &params)
        .map_err(|e| CaseEnd::failed(format!("cannot start: {e}"), None))?;
    let process = ServerProcess::start(&spec)
        .map_err(|e| CaseEnd::failed(format!("cannot start: {e}"), None))?;
    if let Err(e) = process.wait_ready(&process::loopback(port), l.ready_timeout) {
        let end = CaseEnd::failed(
            format!(
                "server did not become ready: {e} (log: {})",
                process.log_path().display()
            ),
            Some(&process),
        );
        process.stop();
        return Err(end);
    }
    let id = CaseId {
        server: l.server.name.clone(),
        mode: l.mode.to_string(),
        response: l.response,
        scenario: l.scenario.name.clone(),
    };
    let deviations = &l.server.response(l.response).known_deviations;
    let parity = parity::inspect(
        port,
        l.scenario,
        &id,
        deviations,
        &InspectOptions::default(),
    );
    Ok(Running {
        process,
        port,
        parity,
    })
}

/// How long a measurement warms up, lasts, and waits for each response.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub warmup: Duration,
    pub duration: Duration,
    pub timeout: Duration,
}

/// The engine settings for one measurement against a running server.
pub fn load_config(
    port: u16,
    scenario: &Scenario,
    load: &LoadProfile,
    rate_override: Option<f64>,
    placement: &Placement,
    t: Timing,
) -> Result<LoadConfig, String> {
    let url = format!("http://127.0.0.1:{port}{}", scenario.path);
    let target = Target::parse(&url).map_err(|e| e.to_string())?;
    let mut cfg = LoadConfig::new(target);
    cfg.request.method = scenario.method.clone();
    let (connections, threads, pipeline, model) = match load {
        LoadProfile::Closed {
            connections,
            threads,
            pipeline,
        } => (*connections, *threads, *pipeline, LoadModel::ClosedLoop),
        LoadProfile::Rate {
            rate,
            connections,
            threads,
        } => (
            *connections,
            *threads,
            1,
            LoadModel::ConstantRate { rps: *rate },
        ),
        LoadProfile::Sweep(s) => (
            s.connections,
            s.threads,
            1,
            LoadModel::ConstantRate {
                rps: rate_override.unwrap_or(s.start_rate),
            },
        ),
    };
    cfg.connections = connections;
    cfg.threads = threads.unwrap_or(placement.generator.len());
    cfg.pipeline = pipeline;
    cfg.model = model;
    cfg.warmup = t.warmup;
    cfg.duration = t.duration;
    cfg.timeout = t.timeout;
    cfg.cpus = Some(placement.generator.clone());
    Ok(cfg)
}

/// Samples the server tree every interval, watches that it is alive, and
/// feeds the progress display; stops the load early when the server died or
/// the user interrupted.
pub struct Watch<'a> {
    pub sampler: TreeSampler,
    pub server: &'a ServerProcess,
    pub stop: Arc<AtomicBool>,
    pub progress: &'a RunProgress,
    pub samples: Vec<SampleRow>,
    pub measure_cpu_s: f64,
    pub rss_peak: u64,
    rss_sum: f64,
    rss_n: u64,
    pub threads_max: u64,
    last_cpu: f64,
    pub died: bool,
}

impl<'a> Watch<'a> {
    pub fn new(
        server: &'a ServerProcess,
        stop: Arc<AtomicBool>,
        progress: &'a RunProgress,
    ) -> Watch<'a> {
        let mut sampler = TreeSampler::new(server.pid());
        let (first, _) = sampler.tick();
        Watch {
            sampler,
            server,
            stop,
            progress,
            samples: Vec::new(),
            measure_cpu_s: 0.0,
            rss_peak: 0,
            rss_sum: 0.0,
            rss_n: 0,
            threads_max: 0,
            last_cpu: first.cpu_s,
            died: false,
        }
    }

    pub fn rss_mean(&self) -> Option<u64> {
        (self.rss_n > 0).then(|| (self.rss_sum / self.rss_n as f64) as u64)
    }
}

impl Observer for Watch<'_> {
    fn on_interval(&mut self, s: &SecondSample, h: &Histogram<u64>) {
        let (tree, cores) = self.sampler.tick();
        let used = (tree.cpu_s - self.last_cpu).max(0.0);
        self.last_cpu = tree.cpu_s;
        if s.phase == Phase::Measure {
            self.measure_cpu_s += used;
            self.rss_sum += tree.rss_bytes as f64;
            self.rss_n += 1;
        }
        self.rss_peak = self.rss_peak.max(tree.rss_bytes);
        self.threads_max = self.threads_max.max(tree.threads);
        self.samples.push(SampleRow {
            second: s.second,
            phase: if s.phase == Phase::Measure {
                "measure"
            } else {
                "warmup"
            }
            .into(),
            start_s: s.start_s,
            duration_s: s.duration_s,
            requests: s.requests,
            errors: s.errors,
            bytes: s.bytes,
            p50_us: s.p50_us,
            p99_us: s.p99_us,
            interval_hist: encode_histogram(h).ok(),
            server_cpu: cores,
            server_rss: Some(tree.rss_bytes),
            server_threads: Some(tree.threads),
        });
        self.progress.live(s);
        if !self.server.is_alive() {
            self.died = true;
            self.stop.store(true, Ordering::SeqCst);
        }
        if crate::interrupt::interrupted() {
            self.stop.store(true, Ordering::SeqCst);
        }
    }
}

/// Runs the engine against a running server and judges the outcome.
pub fn measure(
    running: &Running,
    cfg: &LoadConfig,
    progress: &RunProgress,
) -> Result<CaseFigures, CaseEnd> {
    let stop = Arc::new(AtomicBool::new(crate::interrupt::interrupted()));
    let mut watch = Watch::new(&running.process, stop.clone(), progress);
    let outcome = fairbench_engine::run(cfg, stop, &mut watch);
    if crate::interrupt::interrupted() {
        return Err(CaseEnd::Interrupted);
    }
    if watch.died || !running.process.is_alive() {
        let status = running
            .process
            .exit_status()
            .map(process::describe_exit)
            .unwrap_or_else(|| "exited".into());
        return Err(CaseEnd::failed(
            format!("server crashed during the case: {status}"),
            Some(&running.process),
        ));
    }
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            return Err(CaseEnd::failed(
                format!("load could not run: {e}"),
                Some(&running.process),
            ))
        }
    };
    if outcome.requests == 0 {
        let e = outcome.errors;
        return Err(CaseEnd::failed(
            format!(
                "no response during the measurement (errors: connect {}, read {}, write {}, timeout {}, parse {})",
                e.connect, e.read, e.write, e.timeout, e.parse
            ),
            Some(&running.process),
        ));
    }
    // A server that stopped answering mid-case still counts its earlier
    // responses; ask it directly whether it still answers.
    let addr = process::loopback(running.port)[0];
    let req = fetch::request_bytes(&cfg.request.method, &cfg.target.path, addr);
    if let Err(e) = fetch::raw(addr, &req, cfg.timeout.max(Duration::from_secs(2))) {
        return Err(CaseEnd::failed(
            format!("server stopped answering during the case: {e}"),
            Some(&running.process),
        ));
    }
    Ok(figures(&outcome, &watch))
}

fn figures(o: &Outcome, w: &Watch<'_>) -> CaseFigures {
    let t = o.throughput();
    let unc = o.uncorrected_summary();
    CaseFigures {
        outcome_requests: o.requests,
        duration_s: o.measured_s,
        rps: o.rps(),
        rps_stdev: t.stdev,
        rps_max: t.max,
        bytes_read: o.bytes_read,
        errors: o.errors,
        timeouts_per_million: o.timeouts_per_million(),
        latency_summary: o.latency_summary(),
        unc_p50: unc.p50,
        unc_p99: unc.p99,
        lateness_p99: o.lateness_summary().map(|l| l.p99),
        generator_cpu_s: o.generator.cpu_s,
        generator_busy: o.generator.busy_fraction,
        saturated: o.generator.saturated,
        server_cpu_s: Some(w.measure_cpu_s),
        server_rss_peak: Some(w.rss_peak),
        server_rss_mean: w.rss_mean(),
        server_threads_max: Some(w.threads_max),
        warnings: o.warnings(),
        latency: o.latency.clone(),
        uncorrected: o.uncorrected.clone(),
        lateness: o.lateness.clone(),
        samples: w.samples.clone(),
    }
}
