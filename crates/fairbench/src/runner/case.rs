//! One case: start the server in its control group on its CPUs, check it,
//! load it (the generator's threads in a group of their own), record it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fairbench_engine::{Observer, Outcome, Phase, SecondSample, Target};
use fairbench_zoo::dial::{Dial, UNIX_AUTHORITY};
use fairbench_zoo::parity::{self, InspectOptions};
use fairbench_zoo::{Protocol, Scenario};
use hdrhistogram::Histogram;

use super::sampler::{cores_between, TreeSampler};
use crate::fleet;
use crate::fleet::split::{split, Aim, LoadSplit};
use crate::host::groups::GeneratorGroup;
use crate::host::start::{StartError, Started, LOG_TAIL};
use crate::host::{self, ServerHandle};
use crate::output::run_progress::RunProgress;
use crate::stage::placement::Sites;
use crate::stage::{CaseDb, Unready};
use crate::store::{CaseFigures, DbFigures, PartRow, SampleRow};
use crate::suite::LoadProfile;
use crate::topology::Layout;
use fairbench_zoo::database::Postgres;

/// The seed of the values a scenario's path draws per request.
pub const SCENARIO_SEED: u64 = 1;

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

/// A case that could not be made ready ends as its stage says.
impl From<Unready> for CaseEnd {
    fn from(u: Unready) -> CaseEnd {
        match u {
            Unready::Interrupted => CaseEnd::Interrupted,
            Unready::Start { error, .. } => CaseEnd::from(error),
            Unready::Refused(reason) => CaseEnd::Skipped { reason },
            other => CaseEnd::Failed {
                reason: other.reason(),
                log_tail: other.log_tail(),
            },
        }
    }
}

pub use crate::suite::Timing;

/// The engine's settings for a case of `load` over `protocol`: its HTTP/2
/// and HTTP/3 cases carry the profile's streams, its HTTP/1.1 ones one
/// request per connection (or its pipeline).
pub fn case_config(
    load: &LoadProfile,
    protocol: Protocol,
    target: Target,
    rate_override: Option<f64>,
    t: Timing,
) -> fairbench_engine::LoadConfig {
    let mut cfg = load.engine_config(target, rate_override, t);
    cfg.protocol = protocol;
    if protocol.multiplexes() {
        cfg.streams = load.streams();
    }
    cfg
}

/// The load of one measurement against a running server, split over the
/// layout's generators.
#[allow(clippy::too_many_arguments)]
pub fn load_split(
    (port, unix_socket): (u16, Option<&std::path::Path>),
    protocol: Protocol,
    trust: Option<&fairbench_zoo::fetch_h2::Trust>,
    scenario: &Scenario,
    load: &LoadProfile,
    rate_override: Option<f64>,
    sites: &Sites,
    layout: &Layout,
    t: Timing,
) -> Result<LoadSplit, String> {
    // The server as the first generator reaches it; each generator is then
    // aimed at its own address of the server. h2 is TLS (ALPN h2), trusting
    // the run's CA only; h2c prior knowledge on http://.
    let scheme = if protocol.tls() { "https" } else { "http" };
    // Over the server's unix socket (the suite's address_family = "unix"),
    // as `load --unix-socket` sends it: Host localhost, every generator
    // at the socket as given.
    let origin = match unix_socket {
        Some(_) => format!("{scheme}://{UNIX_AUTHORITY}"),
        None => format!(
            "{scheme}://{}:{port}",
            host::url_host(&layout.clients[0].server_addr)
        ),
    };
    let url = format!("{origin}{}", scenario.check_path());
    let (target, aim) = match unix_socket {
        Some(path) => (Target::parse_unix(&url, path), Aim::AsGiven),
        None => (Target::parse(&url), Aim::EachSite),
    };
    let target = target.map_err(|e| e.to_string())?;
    let mut cfg = case_config(load, protocol, target, rate_override, t);
    cfg.request.method = scenario.method.clone();
    // The scenario's own request headers, after Host: the bytes `check` sent.
    cfg.request.headers = scenario.headers.clone();
    if protocol.tls() {
        let trust = trust.ok_or("h2 over TLS needs the run's CA, and none was made")?;
        cfg.tls.ca_pem = Some(trust.ca_pem.clone());
    }
    if scenario.is_templated() {
        // Values drawn per prepared request (docs/targets.md), from one
        // fixed seed: every server is asked the same ids in the same order.
        cfg.mix = crate::mix::for_load(
            &format!("{origin}{}", scenario.path),
            None,
            &cfg.request,
            crate::mix::DEFAULT_POOL,
            SCENARIO_SEED,
        )?;
    }
    split(&cfg, layout, &sites.generators, load.threads(), aim).map_err(|e| e.to_string())
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
    /// The control group's CPU at the previous interval; `None` without a
    /// group, or once a reading failed (a partial sum would be too low).
    last_group_cpu: Option<f64>,
    pub measure_group_cpu_s: f64,
    /// The database of the database scenarios, its CPU counted like the
    /// server's group's (`None`: no database, or a reading failed).
    db: Option<&'a Postgres>,
    last_db_cpu: Option<f64>,
    measure_db_cpu_s: f64,
    /// The most cores the server kept busy in one interval of the
    /// measurement (its group's CPU where it has one, else its tree's).
    pub cores_peak: Option<f64>,
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
        let last_group_cpu = server.group_usage().and_then(|u| u.cpu_s);
        Watch {
            sampler,
            server,
            stop,
            progress,
            samples: Vec::new(),
            measure_cpu_s: 0.0,
            cores_peak: None,
            rss_peak: 0,
            rss_sum: 0.0,
            rss_n: 0,
            threads_max: 0,
            last_cpu: first.cpu_s,
            last_group_cpu,
            measure_group_cpu_s: 0.0,
            db: None,
            last_db_cpu: None,
            measure_db_cpu_s: 0.0,
            died: false,
        }
    }

    /// Counts the database's CPU too.
    pub fn with_db(mut self, db: Option<&'a Postgres>) -> Self {
        self.db = db;
        self.last_db_cpu = db.and_then(|d| d.usage()).and_then(|u| u.cpu_s);
        self
    }

    /// The database's control group's CPU over the measurement.
    pub fn db_cpu_s(&self) -> Option<f64> {
        self.last_db_cpu.map(|_| self.measure_db_cpu_s)
    }

    /// The server's control group's CPU over the measurement, when every
    /// reading of it worked.
    pub fn group_cpu_s(&self) -> Option<f64> {
        self.last_group_cpu.map(|_| self.measure_group_cpu_s)
    }

    pub fn rss_mean(&self) -> Option<u64> {
        (self.rss_n > 0).then(|| (self.rss_sum / self.rss_n as f64) as u64)
    }
}

impl Observer for Watch<'_> {
    fn on_interval(&mut self, s: &SecondSample, h: &Histogram<u64>) {
        let (tree, gap_s) = self.sampler.tick();
        let used = (tree.cpu_s - self.last_cpu).max(0.0);
        let cores = gap_s.map(|g| used / g);
        self.last_cpu = tree.cpu_s;
        let mut busy = used;
        if let Some(last) = self.last_group_cpu {
            let now = self.server.group_usage().and_then(|u| u.cpu_s);
            if let Some(now) = now {
                busy = (now - last).max(0.0);
                if s.phase == Phase::Measure {
                    self.measure_group_cpu_s += busy;
                }
            }
            self.last_group_cpu = now;
        }
        let in_use = cores_between(busy, gap_s, s.duration_s);
        if let (Some(c), Phase::Measure) = (in_use, s.phase) {
            self.cores_peak = Some(self.cores_peak.map_or(c, |p| p.max(c)));
        }
        if let (Some(last), Some(db)) = (self.last_db_cpu, self.db) {
            let now = db.usage().and_then(|u| u.cpu_s);
            if let (Some(now), Phase::Measure) = (now, s.phase) {
                self.measure_db_cpu_s += (now - last).max(0.0);
            }
            self.last_db_cpu = now;
        }
        if s.phase == Phase::Measure {
            self.measure_cpu_s += used;
            self.rss_sum += tree.rss_bytes as f64;
            self.rss_n += 1;
        }
        self.rss_peak = self.rss_peak.max(tree.rss_bytes);
        self.threads_max = self.threads_max.max(tree.threads);
        self.samples.push(SampleRow {
            server_cpu: cores,
            server_rss: Some(tree.rss_bytes),
            server_threads: Some(tree.threads),
            ..SampleRow::of_interval(s, h)
        });
        self.progress.live(s);
        crate::output::metrics::interval(s, h);
        crate::output::metrics::server(s.phase == Phase::Measure, busy, tree.rss_bytes);
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
    load: &LoadSplit,
    sites: &Sites,
    progress: &RunProgress,
    db: Option<(&Postgres, &CaseDb)>,
) -> Result<Measured, CaseEnd> {
    let stop = Arc::new(AtomicBool::new(crate::interrupt::interrupted()));
    let mut watch =
        Watch::new(&running.process, stop.clone(), progress).with_db(db.map(|(pg, _)| pg));
    let busy = BusyWatch::start(running, load, sites, &watch);
    let Loaded {
        outcome,
        parts,
        mut warnings,
        generator,
    } = run_load(load, stop, &mut watch);
    survived(running, db, &watch)?;
    let outcome = answered(running, outcome)?;
    crate::output::metrics::finish(&outcome);
    still_answers(running, load)?;
    let others = busy.and_then(|b| b.finish(&watch));
    let mut figures = figures(&outcome, &watch);
    figures.warnings.extend(others);
    // The check proved one answer's body; the load's must match it.
    if let Some(b) = running.fixed_body {
        figures.body_unlike = Some(outcome.body_sizes.other_than(b));
        figures.warnings.extend(outcome.body_sizes.warn_unlike(b));
    }
    figures.server_group_memory_peak = running.process.group_usage().and_then(|u| u.memory_peak);
    (figures.generator_containment, figures.generator_cpuset) = generator;
    if let Some((pg, case_db)) = db {
        let (cpu_s, memory_peak) = (watch.db_cpu_s(), pg.usage().and_then(|u| u.memory_peak));
        figures.db = Some(DbFigures {
            cpu_s,
            memory_peak,
            cpus: pg.cpuset(),
            pool: case_db.pool,
        });
        figures.warnings.extend(case_db.place.warning.clone());
        figures
            .warnings
            .extend(crate::stage::database::unmeasured(cpu_s, memory_peak));
    }
    figures.warnings.append(&mut warnings);
    Ok(Measured { figures, parts })
}

/// What the load brought back, before it is judged.
struct Loaded {
    outcome: Result<Outcome, String>,
    /// Each generator's part, when the load ran on agents.
    parts: Vec<PartRow>,
    /// About the agents and their coordination.
    warnings: Vec<String>,
    /// How the load threads were held to their CPUs, and the cpuset.
    generator: (Option<String>, Option<String>),
}

/// Runs the load in this process or on its agents, watched by `watch`.
fn run_load(load: &LoadSplit, stop: Arc<AtomicBool>, watch: &mut Watch<'_>) -> Loaded {
    match load.in_process() {
        Some(cfg) => {
            let mut generator = (None, None);
            let group = GeneratorGroup::new(cfg.cpus.as_deref());
            let mut cfg = cfg.clone();
            cfg.thread_start = group.hook();
            if cfg.cpus.is_some() {
                generator = (Some(group.method().as_str().to_string()), group.cpuset());
            }
            Loaded {
                outcome: fairbench_engine::run(&cfg, stop, watch).map_err(|e| e.to_string()),
                parts: Vec::new(),
                warnings: Vec::new(),
                generator,
            }
        }
        None => match fleet::run(load.jobs.clone(), stop, watch) {
            Ok(f) => {
                let warnings = load.warnings(&f);
                let mut held: Vec<String> = f
                    .parts
                    .iter()
                    .filter_map(|p| p.containment.clone())
                    .collect();
                held.sort();
                held.dedup();
                let parts = f
                    .parts
                    .into_iter()
                    .map(|p| PartRow {
                        host: p.host,
                        url: p.config.target.url,
                        outcome: p.outcome,
                        intervals: p.intervals,
                        warnings: p.warnings,
                    })
                    .collect();
                Loaded {
                    outcome: Ok(f.merged),
                    parts,
                    warnings,
                    generator: ((!held.is_empty()).then(|| held.join(",")), None),
                }
            }
            Err(e) => Loaded {
                outcome: Err(e.to_string()),
                parts: Vec::new(),
                warnings: Vec::new(),
                generator: (None, None),
            },
        },
    }
}

/// Whether the case lasted: not interrupted, its database and its server
/// still up.
fn survived(
    running: &Started,
    db: Option<(&Postgres, &CaseDb)>,
    watch: &Watch<'_>,
) -> Result<(), CaseEnd> {
    if crate::interrupt::interrupted() {
        return Err(CaseEnd::Interrupted);
    }
    if let Some((pg, _)) = db {
        if !pg.is_alive() {
            return Err(CaseEnd::failed(
                "the database (PostgreSQL) ended during the case",
                Some(&running.process),
            ));
        }
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
    Ok(())
}

/// The load's outcome, when it ran and got at least one response.
fn answered(running: &Started, outcome: Result<Outcome, String>) -> Result<Outcome, CaseEnd> {
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
    Ok(outcome)
}

/// A server that stopped answering mid-case still counts its earlier
/// responses; ask it directly whether it still answers. A few tries a
/// moment apart: right after the load a server may still be draining
/// closed connections, and on a shared host the whole VM can stall for
/// seconds. A server that has really hung fails every try.
fn still_answers(running: &Started, load: &LoadSplit) -> Result<(), CaseEnd> {
    let timeout = load.first().timeout.max(Duration::from_secs(2));
    let request = &load.first().request;
    let (method, path) = (&request.method, &load.first().target.path);
    // In the protocol of the case: an h2-only port answers nothing else.
    let opts = InspectOptions {
        fetch_timeout: timeout,
        trust: running.trust.clone(),
        database: None,
    };
    let probe = || {
        running
            .process
            .host()
            .with_loopback(running.port, |p| {
                let addr = match &running.unix_socket {
                    Some(file) => Dial::Unix(file.path().to_path_buf()),
                    None => Dial::Tcp(host::loopback(p)[0]),
                };
                let (_, answer) = parity::fetch_to(
                    running.protocol,
                    &addr,
                    (method, path, &request.headers),
                    &opts,
                );
                answer.map(drop).map_err(|e| e.to_string())
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
    Ok(())
}

/// Others' use of the case's CPUs, watched where it can be told apart: a
/// server on this machine (here or in a namespace) and every load generator
/// on it too — in this process, or an agent this process waits for when the
/// load ends (its CPU time then counts as fairbench's own).
struct BusyWatch {
    cpus: Vec<usize>,
    /// The server's own, among them.
    server_cpus: Vec<usize>,
    before: host::busy::BusySnapshot,
    server_cpu_s: f64,
}

impl BusyWatch {
    fn start(
        running: &Started,
        load: &LoadSplit,
        sites: &Sites,
        w: &Watch<'_>,
    ) -> Option<BusyWatch> {
        let here = |h: &host::Host| matches!(h, host::Host::Local | host::Host::Netns(_));
        if !here(running.process.host()) || !load.jobs.iter().all(|j| here(&j.host)) {
            return None;
        }
        let server_cpus = sites.server.clone();
        let mut cpus = server_cpus.clone();
        for j in &load.jobs {
            cpus.extend(j.config.cpus.clone()?);
        }
        cpus.sort_unstable();
        cpus.dedup();
        Some(BusyWatch {
            before: host::busy::snapshot(&cpus)?,
            cpus,
            server_cpus,
            server_cpu_s: server_cpu_s(w),
        })
    }

    /// The warning, when others used a notable share.
    fn finish(self, w: &Watch<'_>) -> Option<String> {
        let after = host::busy::snapshot(&self.cpus)?;
        let server = (server_cpu_s(w) - self.server_cpu_s).max(0.0);
        let tck = host::local_info().clk_tck;
        let own = (self.server_cpus.len() < self.cpus.len())
            .then(|| crate::args::format_cpus(&self.server_cpus));
        host::busy::others(&self.before, &after, server, self.cpus.len(), tck).warning(
            &crate::args::format_cpus(&self.cpus),
            own.as_deref().map(|l| (l, self.server_cpus.len())),
        )
    }
}

/// The server's CPU time so far: its control group's (every process in
/// it, whatever its process group), else its process group's; plus the
/// database's, when the case has one.
fn server_cpu_s(w: &Watch<'_>) -> f64 {
    // The database of the database scenarios is part of what is measured,
    // not another process sharing the CPUs.
    let db =
        w.db.and_then(|d| d.usage())
            .and_then(|u| u.cpu_s)
            .unwrap_or(0.0);
    db + w
        .server
        .group_usage()
        .and_then(|u| u.cpu_s)
        .unwrap_or_else(|| w.sampler.sample().cpu_s)
}

fn figures(o: &Outcome, w: &Watch<'_>) -> CaseFigures {
    CaseFigures {
        server_cpu_s: Some(w.measure_cpu_s),
        server_rss_peak: Some(w.rss_peak),
        server_rss_mean: w.rss_mean(),
        server_threads_max: Some(w.threads_max),
        server_group_cpu_s: w.group_cpu_s(),
        server_cores_peak: w.cores_peak,
        samples: SampleRow::number_finally(w.samples.clone(), o),
        ..load_figures(o)
    }
}

/// What the load alone tells of a case: every figure but the server's
/// (which only a server fairbench started can give) and the series.
pub fn load_figures(o: &Outcome) -> CaseFigures {
    let t = o.throughput();
    let unc = o.uncorrected_summary();
    CaseFigures {
        planned: o.planned,
        outcome_requests: o.requests,
        throughput_answers: o.throughput_answers(),
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
        generator_limited: o.generator_limited(),
        connect_local: o.sockets.connect_local,
        server_cpu_s: None,
        server_rss_peak: None,
        server_rss_mean: None,
        server_threads_max: None,
        server_group_cpu_s: None,
        server_group_memory_peak: None,
        db: None,
        generator_containment: None,
        generator_cpuset: None,
        steal_fraction: o.generator.steal_fraction,
        thread_req_sec: o.thread_req_sec.some().copied(),
        late_answers: o.late_answers,
        body_sizes: o.body_sizes.clone(),
        body_unlike: None,
        wrk: o.wrk_figures(),
        server_cores_peak: None,
        http3: o.h3.clone(),
        warnings: o.warnings(),
        latency: o.latency.clone(),
        answered: o.answered_latency.clone(),
        uncorrected: o.uncorrected.clone(),
        lateness: o.lateness.clone(),
        samples: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::Suite;

    #[test]
    fn a_profiles_streams_reach_its_http2_cases_only() {
        let s = Suite::parse(
            "name = \"t\"\nscenarios = [\"static\"]\nprotocols = [\"http/1.1\", \"h2c\", \"h2\"]\nduration = \"1s\"\n[[load]]\nmodel = \"closed\"\nconnections = 4\nstreams = 8\n",
            "t.toml",
        )
        .unwrap();
        let t = Timing {
            warmup: s.warmup,
            duration: s.duration,
            timeout: s.timeout,
            timeout_mode: s.timeout_mode,
        };
        for (p, streams) in [(Protocol::Http1, 1), (Protocol::H2c, 8), (Protocol::H2, 8)] {
            let target = Target::parse("http://127.0.0.1:1/").unwrap();
            let cfg = case_config(&s.loads[0], p, target, None, t);
            assert_eq!(cfg.streams, streams, "{p:?}");
            assert_eq!(cfg.protocol, p);
            assert_eq!(cfg.connections, 4);
        }
    }
}
