//! Runs a load: spawns the workers, gathers their per-second reports into
//! one time series, and merges their histograms at the end.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::clock::{self, Nanos, NANOS_PER_SEC};
use crate::config::{LoadConfig, LoadModel};
use crate::config_error::ConfigError;
use crate::dial::dial_with;
use crate::merge::LiveMerge;
use crate::outcome::{Outcome, Phase, SecondSample};
use crate::request_pool::RequestPool;
use crate::stamps::ArrivalStamps;
use crate::tls::TlsClient;
use crate::worker::{ThreadPlan, ThreadReport, Worker};

/// Receives the time series as it is measured (progress display, interval
/// logs). Called on the thread that called [`run`].
pub trait Observer {
    /// One interval of the whole generator, with its latency histogram.
    fn on_interval(&mut self, _sample: &SecondSample, _hist: &Histogram<u64>) {}
}

/// An observer that ignores everything.
pub struct Quiet;
impl Observer for Quiet {}

#[derive(Debug)]
pub enum RunError {
    Config(ConfigError),
    /// The target could not be reached (or its TLS handshake failed) before
    /// the run started.
    Connect(String),
    /// The operating system refused a resource (threads, epoll, timers).
    System(String),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Config(e) => e.fmt(f),
            RunError::Connect(m) | RunError::System(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for RunError {}

impl From<ConfigError> for RunError {
    fn from(e: ConfigError) -> Self {
        RunError::Config(e)
    }
}

/// How long the constant-rate schedule waits for connections to open before
/// the first request is due, so that connection set-up is not charged as latency.
const RATE_LEAD: Nanos = 100_000_000;
/// How long a run waits for the kernel's arrival stamps to come on: a
/// workqueue item, microseconds on an idle machine.
const STAMPS_WITHIN: Duration = Duration::from_millis(200);

/// One pass of a load (`crate::run` is the entry): its warm-up fixed.
pub(crate) fn run_once(
    cfg: &LoadConfig,
    stop: Arc<AtomicBool>,
    observer: &mut dyn Observer,
) -> Result<Outcome, RunError> {
    cfg.validate()?;
    let pool = if cfg.protocol == crate::Protocol::H3 {
        RequestPool::build_encoded(cfg, Some(crate::h3::qpack::encode))?
    } else {
        RequestPool::build(cfg)?
    };
    let tls = if cfg.target.tls {
        Some(TlsClient::new(&cfg.target, &cfg.tls)?.for_protocol(cfg.protocol))
    } else {
        None
    };
    // HTTP/3 has a check of its own before the run, and its own threads.
    let h3 = match (cfg.protocol, &tls) {
        (crate::Protocol::H3, Some(t)) => {
            Some(crate::h3::run::prepare(cfg, t).map_err(RunError::Connect)?)
        }
        _ => None,
    };
    // The first of the URL's addresses that accepts a connection is the
    // one measured.
    let addr = match &h3 {
        Some(q) => cfg.target.endpoint(q.peer),
        None => cfg.target.endpoint(preflight(cfg, tls.as_ref())?),
    };
    let tls = if h3.is_some() { None } else { tls };
    // A constant rate reads late and times each answer by its arrival
    // stamp: stamping on before the first answer, not some while after.
    let _stamps = match cfg.model {
        LoadModel::ConstantRate { .. } => ArrivalStamps::on(STAMPS_WITHIN),
        LoadModel::ClosedLoop => None,
    };
    let plan = Arc::new(thread_plan(cfg, pool, tls, addr, &stop));
    let threads = plan.threads;
    let placed = plan.clone();
    let stalls = crate::stall::StallWatch::start(move || crate::worker::pin::place(&placed));

    let steal0 = clock::machine_steal_ticks();
    let (stall0, t0) = (fairbench_sys::pressure::memory_stall_us(), clock::now());
    let Workers {
        handles,
        reports,
        mut failure,
    } = match h3 {
        Some(q) => {
            let (handles, reports, failure) = crate::h3::run::spawn_workers(cfg, &plan, &stop, q);
            Workers {
                handles,
                reports,
                failure,
            }
        }
        None => spawn_workers(cfg, &plan, &stop),
    };
    let mut intervals = Intervals {
        merger: LiveMerge::new(handles.len()),
        series: Vec::new(),
        observer,
    };
    let parts = intervals.gather(reports, &mut failure, threads);
    let mut panicked = false;
    for h in handles {
        panicked |= h.join().is_err();
    }
    if let Some(m) = failure {
        return Err(RunError::System(m));
    }
    if panicked || parts.len() < threads {
        return Err(RunError::System("a load thread died".into()));
    }
    let drained = intervals.merger.drain();
    intervals.emit(drained);
    let refs: Vec<&Outcome> = parts.iter().collect();
    let mut outcome = Outcome::merge(&refs, intervals.series);
    outcome.connections = cfg.connections;
    outcome.proxy = cfg.target.proxy.as_ref().map(|v| v.proxy.to_string());
    outcome.interrupted = stop.load(Ordering::Relaxed);
    outcome.generator.steal_fraction = clock::steal_fraction(steal0, clock::machine_steal_ticks());
    // The generator's own stalls are no silence of the server's.
    let stalled = crate::stall::in_window(&stalls.finish(), plan.measure_start, plan.end);
    outcome.generator.stalled = crate::stall::Stalled::of(&stalled);
    outcome.silences.without(&stalled);
    outcome.generator.memory_stall_fraction = fairbench_sys::pressure::stall_fraction(
        stall0,
        fairbench_sys::pressure::memory_stall_us(),
        (clock::now() - t0) / 1_000,
    );
    Ok(outcome)
}

/// What every load thread shares. Computing it waits for a planned start
/// (`cfg.start_at`) until the threads are due to begin.
fn thread_plan(
    cfg: &LoadConfig,
    pool: RequestPool,
    tls: Option<TlsClient>,
    addr: crate::Endpoint,
    stop: &AtomicBool,
) -> ThreadPlan {
    let rate = match cfg.model {
        LoadModel::ClosedLoop => None,
        LoadModel::ConstantRate { rps } => Some(rps),
    };
    let start = begin(cfg, rate.is_some(), stop);
    let measure_start = start + cfg.warmup.as_nanos() as Nanos;
    let end = measure_start + cfg.duration.as_nanos() as Nanos;
    let mut plan = ThreadPlan {
        addr,
        pool,
        names: cfg.mix.as_ref().map_or_else(Vec::new, |m| m.names.clone()),
        stages: cfg.stages.clone(),
        no_body: match &cfg.mix {
            Some(m) => m.expects_no_body(),
            None => cfg.request.expects_no_body(),
        },
        max_head: cfg.max_head,
        // Over HTTP/2 the depth is the streams per connection.
        pipeline: if cfg.protocol.is_h2() {
            cfg.streams
        } else {
            cfg.pipeline
        },
        h2: cfg.protocol.is_h2(),
        protocol: cfg.protocol,
        send_ahead: cfg.send_ahead.as_nanos() as Nanos,
        timeout: cfg.timeout.as_nanos() as Nanos,
        timeout_mode: cfg.timeout_mode,
        expect_status: cfg.expect_status.clone(),
        tls,
        tunnel: cfg.target.tunnelled().map(crate::proxy::Tunnel::to),
        keepalive: cfg.keepalive,
        start,
        measure_start,
        end,
        rate,
        schedule_start: start + schedule_offset(cfg, rate),
        threads: cfg.effective_threads(),
        requests: cfg.requests,
        budget_end: end,
        cpus: cfg.cpus.clone(),
        thread_start: cfg.thread_start.clone(),
        io: cfg.io,
        unstamped_kernel: cfg.unstamped_kernel,
    };
    (plan.requests, plan.budget_end) = crate::worker::budgeted(&plan, cfg.requests, cfg.share);
    plan
}

/// When the threads begin (the warm-up's start): at once, or at the
/// planned start, which this waits for.
fn begin(cfg: &LoadConfig, constant_rate: bool, stop: &AtomicBool) -> Nanos {
    let lead = if constant_rate { RATE_LEAD } else { 0 };
    match cfg.start_at {
        None => clock::now() + lead,
        Some(at) => {
            let planned = planned_start(at);
            // Threads start `lead` ahead of the planned start, as they would
            // without one; a planned start already past starts at once.
            wait_until(planned.saturating_sub(lead), stop);
            planned.max(clock::now() + lead)
        }
    }
}

/// Generator g of n starts its slots g/R later (R the total rate n·r), so
/// that the n schedules interleave into one evenly spaced stream.
fn schedule_offset(cfg: &LoadConfig, rate: Option<f64>) -> Nanos {
    match rate {
        Some(r) => {
            (cfg.share.index as f64 * NANOS_PER_SEC as f64 / (r * cfg.share.count as f64)) as Nanos
        }
        None => 0,
    }
}

/// The load threads started, and where they report.
struct Workers {
    handles: Vec<JoinHandle<()>>,
    reports: mpsc::Receiver<ThreadReport>,
    /// Why a thread could not be set up or started; those started are
    /// told to halt.
    failure: Option<String>,
}

/// Starts `plan.threads` load threads, the connections and the request
/// budget shared among them; stops at the first that cannot start.
fn spawn_workers(cfg: &LoadConfig, plan: &Arc<ThreadPlan>, stop: &Arc<AtomicBool>) -> Workers {
    let threads = plan.threads;
    let halt = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    let mut handles = Vec::with_capacity(threads);
    let mut failure: Option<String> = None;
    for t in 0..threads {
        let conns = cfg.connections / threads + usize::from(t < cfg.connections % threads);
        let budget = plan.budget(t);
        let spawned = Worker::new(
            t,
            conns,
            budget,
            plan.clone(),
            stop.clone(),
            halt.clone(),
            tx.clone(),
        )
        .map_err(|e| format!("cannot set up a load thread: {e}"))
        .and_then(|worker| {
            std::thread::Builder::new()
                .name(format!("fairbench-load-{t}"))
                .spawn(move || worker.run())
                .map_err(|e| format!("cannot start a load thread: {e}"))
        });
        match spawned {
            Ok(h) => handles.push(h),
            Err(m) => {
                failure = Some(m);
                halt.store(true, Ordering::Relaxed);
                break;
            }
        }
    }
    Workers {
        handles,
        reports: rx,
        failure,
    }
}

/// The generator's time series, merged from the threads' intervals as
/// they arrive and shown to the observer as each is complete.
struct Intervals<'a> {
    merger: LiveMerge,
    series: Vec<SecondSample>,
    observer: &'a mut dyn Observer,
}

impl Intervals<'_> {
    /// Takes the threads' reports until every thread has ended; returns
    /// their parts of the outcome, and keeps the first failure.
    fn gather(
        &mut self,
        reports: mpsc::Receiver<ThreadReport>,
        failure: &mut Option<String>,
        threads: usize,
    ) -> Vec<Outcome> {
        let mut parts: Vec<Outcome> = Vec::with_capacity(threads);
        for report in reports {
            match report {
                ThreadReport::Interval(i, s, h) => {
                    let out = self.merger.add(i, s, h);
                    self.emit(out);
                }
                ThreadReport::Done(i, part) => {
                    parts.push(*part);
                    let out = self.merger.finish(i);
                    self.emit(out);
                }
                ThreadReport::Failed(m) => {
                    failure.get_or_insert(m);
                }
            }
        }
        parts
    }

    fn emit(&mut self, out: Vec<(SecondSample, Histogram<u64>)>) {
        for (s, h) in out {
            if s.phase == Phase::Drain && s.requests == 0 && s.errors == 0 && s.bytes == 0 {
                // Nothing was outstanding at the end: no drain worth a row.
                continue;
            }
            self.observer.on_interval(&s, &h);
            self.series.push(s);
        }
    }
}

/// The monotonic-clock instant of a wall-clock time (now, if it is past).
fn planned_start(at: std::time::SystemTime) -> Nanos {
    let wall = std::time::SystemTime::now();
    let mono = clock::now();
    match at.duration_since(wall) {
        Ok(ahead) => mono + ahead.as_nanos() as Nanos,
        Err(_) => mono,
    }
}

/// Sleeps until the monotonic instant `t`, or until `stop` is set.
fn wait_until(t: Nanos, stop: &AtomicBool) {
    loop {
        let now = clock::now();
        if now >= t || stop.load(Ordering::Relaxed) {
            return;
        }
        std::thread::sleep(Duration::from_nanos((t - now).min(10_000_000)));
    }
}

/// A clear error before any thread starts: "connection refused" and a
/// certificate that is not trusted are the most common mistakes and deserve
/// one line, not a run full of connect or handshake errors. Its TLS session
/// is not kept: the run's first handshakes are as full as they would be.
fn preflight(cfg: &LoadConfig, tls: Option<&TlsClient>) -> Result<SocketAddr, RunError> {
    let wait = cfg.timeout.min(Duration::from_secs(5));
    let own = tls.map(TlsClient::isolated);
    let mut conn = dial_with(&cfg.target, own.as_ref(), wait).map_err(RunError::Connect)?;
    let peer = conn.peer().unwrap_or(cfg.target.addr);
    if cfg.protocol.is_h2() {
        let _ = conn.set_read_timeout(Some(wait));
        let _ = conn.set_write_timeout(Some(wait));
        let who = match &cfg.target.proxy {
            Some(via) => format!("{} (through proxy {})", cfg.target.host, via.proxy),
            None => format!("{} ({})", cfg.target.host, cfg.target.endpoint(peer)),
        };
        crate::h2::probe::probe(&mut conn, cfg.protocol, &who).map_err(RunError::Connect)?;
    } else if let Some(client) = &own {
        crate::cert_probe::check(&mut conn, client, &cfg.target).map_err(RunError::Connect)?;
    } else if let Some(proxy) = cfg.target.forward_proxy() {
        let _ = conn.set_read_timeout(Some(wait));
        let _ = conn.set_write_timeout(Some(wait));
        let t = &cfg.target;
        crate::proxy::check_forwarding(&mut conn, proxy, &t.host_header, &t.path)
            .map_err(RunError::Connect)?;
    }
    Ok(peer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    #[test]
    fn planned_start_maps_wall_time_to_the_monotonic_clock() {
        let now = clock::now();
        let past = planned_start(SystemTime::now() - Duration::from_secs(5));
        assert!(past >= now && past - now < 50_000_000);
        let ahead = planned_start(SystemTime::now() + Duration::from_secs(2));
        let d = ahead - clock::now();
        assert!(d > 1_900_000_000 && d <= 2_000_000_000, "{d}");
    }

    #[test]
    fn waiting_ends_early_when_stopped() {
        let stop = AtomicBool::new(true);
        let t = std::time::Instant::now();
        wait_until(clock::now() + 5 * NANOS_PER_SEC, &stop);
        assert!(t.elapsed() < Duration::from_millis(100));
    }
}
