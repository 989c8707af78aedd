//! One case: start the server pinned to its CPUs, check it, load it, record it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fairbench_engine::{LoadConfig, LoadModel, Observer, Outcome, Phase, SecondSample, Target};
use fairbench_zoo::{fetch, Scenario};
use hdrhistogram::Histogram;

use super::placement::Sites;
use super::sampler::TreeSampler;
use crate::fleet::{self, wire::LoadSpec, Job};
use crate::host::{self, ServerHandle};
use crate::output::run_progress::RunProgress;
use crate::start::{StartError, Started, LOG_TAIL};
use crate::store::{encode_histogram, CaseFigures, PartRow, SampleRow};
use crate::suite::LoadProfile;
use crate::topology::Layout;

/// Liveness probes after the load before a server counts as hung.
const PROBE_TRIES: usize = 3;

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
    fn failed(reason: impl Into<String>, server: Option<&ServerHandle>) -> CaseEnd {
        CaseEnd::Failed {
            reason: reason.into(),
            log_tail: server.map(|s| s.log_tail(LOG_TAIL)).unwrap_or_default(),
        }
    }
}

/// A server that could not be started fails its case, with the reason
/// framed for the run's table.
impl From<StartError> for CaseEnd {
    fn from(e: StartError) -> CaseEnd {
        let reason = match &e {
            StartError::NoPort(_) => e.to_string(),
            StartError::Stage { host, message } => {
                format!("cannot copy the server to {host}: {message}")
            }
            StartError::Spec(m) | StartError::Start(m) => format!("cannot start: {m}"),
            StartError::NotReady { message, log, .. } => {
                format!("server did not become ready: {message} (log: {log})")
            }
        };
        CaseEnd::Failed {
            reason,
            log_tail: e.log_tail().to_vec(),
        }
    }
}

/// How long a measurement warms up, lasts, and waits for each response.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub warmup: Duration,
    pub duration: Duration,
    pub timeout: Duration,
}

/// How one measurement's load runs: the engine in this process, or agents
/// on the layout's client hosts whose results are merged.
pub enum LoadPlan {
    Here(Box<LoadConfig>),
    Fleet(Vec<Job>),
}

impl LoadPlan {
    fn timeout(&self) -> Duration {
        match self {
            LoadPlan::Here(c) => c.timeout,
            LoadPlan::Fleet(j) => j
                .first()
                .map(|j| Duration::from_secs_f64(j.spec.timeout_s))
                .unwrap_or(Duration::from_secs(2)),
        }
    }
}

/// The load of one measurement against a running server.
pub fn load_config(
    port: u16,
    scenario: &Scenario,
    load: &LoadProfile,
    rate_override: Option<f64>,
    sites: &Sites,
    layout: &Layout,
    t: Timing,
) -> Result<LoadPlan, String> {
    let url = |addr: &str| format!("http://{}:{port}{}", host::url_host(addr), scenario.path);
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
    let base = |addr: &str| -> Result<LoadConfig, String> {
        let target = Target::parse(&url(addr)).map_err(|e| e.to_string())?;
        let mut cfg = LoadConfig::new(target);
        cfg.request.method = scenario.method.clone();
        cfg.connections = connections;
        cfg.pipeline = pipeline;
        cfg.model = model;
        cfg.warmup = t.warmup;
        cfg.duration = t.duration;
        cfg.timeout = t.timeout;
        Ok(cfg)
    };
    if layout.in_process() {
        let mut cfg = base(&layout.clients[0].server_addr)?;
        cfg.threads = threads.unwrap_or(sites.default_threads[0]);
        cfg.cpus = sites.generators[0].clone();
        return Ok(LoadPlan::Here(Box::new(cfg)));
    }
    // Several generators (or one elsewhere): the connections, the threads
    // named by the profile and the rate are split between them.
    let n = layout.clients.len();
    if connections < n {
        return Err(format!(
            "{connections} connections cannot be split over {n} load generators"
        ));
    }
    // The URL is resolved by each agent, where it runs.
    let template = base("127.0.0.1")?;
    let mut jobs = Vec::with_capacity(n);
    for (i, c) in layout.clients.iter().enumerate() {
        let mut spec = LoadSpec::of(&template);
        spec.url = url(&c.server_addr);
        spec.connections = fleet::share(connections, n, i);
        spec.threads = match threads {
            Some(t) => fleet::share(t.max(n), n, i),
            None => sites.default_threads[i],
        }
        .min(spec.connections)
        .max(1);
        spec.rate = match model {
            LoadModel::ConstantRate { rps } => Some(rps / n as f64),
            LoadModel::ClosedLoop => None,
        };
        // Generator i of n offsets its schedule by i/R: together they are
        // one evenly spaced stream, not n requests at the same instant.
        spec.share_index = i;
        spec.share_count = n;
        spec.cpus = sites.generators[i].clone();
        jobs.push(Job {
            host: c.host.clone(),
            spec,
        });
    }
    Ok(LoadPlan::Fleet(jobs))
}

/// Samples the server tree every interval, watches that it is alive, and
/// feeds the progress display; stops the load early when the server died or
/// the user interrupted.
pub struct Watch<'a> {
    pub sampler: TreeSampler,
    pub server: &'a ServerHandle,
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
        server: &'a ServerHandle,
        stop: Arc<AtomicBool>,
        progress: &'a RunProgress,
    ) -> Watch<'a> {
        let mut sampler = TreeSampler::new(server.host().clone(), server.pid());
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
            phase: s.phase.as_str().into(),
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

/// A measured case: the merged figures and, for several generators (or
/// one on another host), each one's part.
pub struct Measured {
    pub figures: CaseFigures,
    pub parts: Vec<PartRow>,
}

/// Runs the load against a running server and judges the outcome.
pub fn measure(
    running: &Started,
    load: &LoadPlan,
    progress: &RunProgress,
) -> Result<Measured, CaseEnd> {
    let stop = Arc::new(AtomicBool::new(crate::interrupt::interrupted()));
    let mut watch = Watch::new(&running.process, stop.clone(), progress);
    let (outcome, parts, mut warnings) = match load {
        LoadPlan::Here(cfg) => (
            fairbench_engine::run(cfg, stop, &mut watch).map_err(|e| e.to_string()),
            Vec::new(),
            Vec::new(),
        ),
        LoadPlan::Fleet(jobs) => match fleet::run(jobs.clone(), stop, &mut watch) {
            Ok(f) => {
                let parts = f
                    .parts
                    .into_iter()
                    .map(|p| PartRow {
                        host: p.host,
                        url: p.spec.url,
                        outcome: p.outcome,
                        intervals: p.intervals,
                        warnings: p.warnings,
                    })
                    .collect();
                (Ok(f.merged), parts, f.warnings)
            }
            Err(e) => (Err(e.to_string()), Vec::new(), Vec::new()),
        },
    };
    if crate::interrupt::interrupted() {
        return Err(CaseEnd::Interrupted);
    }
    if watch.died || !running.process.is_alive() {
        let status = running
            .process
            .exit_description()
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
    // responses; ask it directly whether it still answers. A few tries a
    // moment apart: right after the load a server may still be draining
    // closed connections, and on a shared host the whole VM can stall for
    // seconds. A server that has really hung fails every try.
    let timeout = load.timeout().max(Duration::from_secs(2));
    let (method, path) = probe_request(load);
    let probe = || {
        running
            .process
            .host()
            .with_loopback(running.port, |p| {
                let addr = host::loopback(p)[0];
                let req = fetch::request_bytes(&method, &path, addr);
                fetch::raw(addr, &req, timeout)
                    .map(drop)
                    .map_err(|e| e.to_string())
            })
            .map_err(|e| format!("{e:#}"))
            .and_then(|r| r)
    };
    let mut answered = probe();
    for _ in 1..PROBE_TRIES {
        if answered.is_ok() || crate::interrupt::interrupted() {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
        answered = probe();
    }
    let answered = answered.map_err(|e| format!("{e} ({PROBE_TRIES} tries)"));
    if let Err(e) = answered {
        return Err(CaseEnd::failed(
            format!("server stopped answering during the case: {e}"),
            Some(&running.process),
        ));
    }
    let mut figures = figures(&outcome, &watch);
    figures.warnings.append(&mut warnings);
    Ok(Measured { figures, parts })
}

/// The method and path the load sent, for the final "still answering" check.
fn probe_request(load: &LoadPlan) -> (String, String) {
    match load {
        LoadPlan::Here(c) => (c.request.method.clone(), c.target.path.clone()),
        LoadPlan::Fleet(jobs) => {
            let j = &jobs[0].spec;
            let path = j
                .url
                .splitn(4, '/')
                .nth(3)
                .map(|p| format!("/{p}"))
                .unwrap_or_else(|| "/".into());
            (j.method.clone(), path)
        }
    }
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
        steal_fraction: o.generator.steal_fraction,
        warnings: o.warnings(),
        latency: o.latency.clone(),
        uncorrected: o.uncorrected.clone(),
        lateness: o.lateness.clone(),
        samples: w.samples.clone(),
    }
}
