//! Runs a load: spawns the workers, gathers their per-second reports into
//! one time series, and merges their histograms at the end.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::clock::{self, Nanos, NANOS_PER_SEC};
use crate::config::{LoadConfig, LoadModel};
use crate::outcome::{Generator, Outcome, Phase, Schedule, SecondSample};
use crate::stats::{new_histogram, ErrorCounts};
use crate::worker::{Plan, Report, Worker, WorkerResult};
use crate::ConfigError;

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
    /// The target could not be reached before the run started.
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

/// Runs the load described by `cfg` until its duration has passed or `stop`
/// is set. Whatever was measured until then is returned either way.
pub fn run(
    cfg: &LoadConfig,
    stop: Arc<AtomicBool>,
    observer: &mut dyn Observer,
) -> Result<Outcome, RunError> {
    cfg.validate()?;
    let wire_one = cfg.request.serialize(&cfg.target)?;
    preflight(cfg)?;

    let threads = cfg.effective_threads();
    let mut wire = Vec::with_capacity(wire_one.len() * cfg.pipeline);
    for _ in 0..cfg.pipeline {
        wire.extend_from_slice(&wire_one);
    }
    let rate = match cfg.model {
        LoadModel::ClosedLoop => None,
        LoadModel::ConstantRate { rps } => Some(rps),
    };
    let lead = if rate.is_some() { RATE_LEAD } else { 0 };
    let start = match cfg.start_at {
        None => clock::now() + lead,
        Some(at) => {
            let planned = planned_start(at);
            // Threads start `lead` ahead of the planned start, as they would
            // without one; a planned start already past starts at once.
            wait_until(planned.saturating_sub(lead), &stop);
            planned.max(clock::now() + lead)
        }
    };
    let measure_start = start + cfg.warmup.as_nanos() as Nanos;
    let end = measure_start + cfg.duration.as_nanos() as Nanos;
    let plan = Arc::new(Plan {
        addr: cfg.target.addr,
        wire,
        req_len: wire_one.len(),
        no_body: cfg.request.expects_no_body(),
        max_head: cfg.max_head,
        pipeline: cfg.pipeline,
        timeout: cfg.timeout.as_nanos() as Nanos,
        status_error_min: cfg.status_error_min,
        start,
        measure_start,
        end,
        rate,
        threads,
        cpus: cfg.cpus.clone(),
    });

    let cpu0 = clock::process_cpu();
    let steal0 = clock::machine_steal_ticks();
    let (tx, rx) = mpsc::channel();
    let mut handles = Vec::with_capacity(threads);
    for t in 0..threads {
        let conns = cfg.connections / threads + usize::from(t < cfg.connections % threads);
        let worker = Worker::new(t, conns, plan.clone(), stop.clone(), tx.clone())
            .map_err(|e| RunError::System(format!("cannot set up load thread: {e}")))?;
        let h = std::thread::Builder::new()
            .name(format!("fairbench-load-{t}"))
            .spawn(move || worker.run())
            .map_err(|e| RunError::System(format!("cannot start load thread: {e}")))?;
        handles.push(h);
    }
    drop(tx);

    let mut pending: BTreeMap<i64, Merging> = BTreeMap::new();
    let mut series = Vec::new();
    let mut results: Vec<WorkerResult> = Vec::with_capacity(threads);
    for report in rx {
        match report {
            Report::Interval(iv) => {
                let m = pending.entry(iv.second).or_insert_with(Merging::new);
                m.add(iv);
                // Emit, in order, every interval all workers have reported.
                while let Some(entry) = pending.first_entry() {
                    if entry.get().reports < threads {
                        break;
                    }
                    let (second, m) = entry.remove_entry();
                    emit(&plan, second, m, clock::now(), &mut series, observer);
                }
            }
            Report::Done(r) => results.push(*r),
        }
    }
    for h in handles {
        let _ = h.join();
    }
    let stopped = clock::now().min(end);
    for (second, m) in std::mem::take(&mut pending) {
        emit(&plan, second, m, stopped, &mut series, observer);
    }
    let cpu_s = (clock::process_cpu() - cpu0) as f64 / NANOS_PER_SEC as f64;
    let steal = clock::steal_fraction(steal0, clock::machine_steal_ticks());
    let interrupted = stop.load(Ordering::Relaxed) && stopped < end;
    let mut outcome = assemble(
        cfg,
        &plan,
        threads,
        results,
        series,
        stopped,
        cpu_s,
        interrupted,
    );
    outcome.generator.steal_fraction = steal;
    Ok(outcome)
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

/// A clear error before any thread starts: "connection refused" is the most
/// common mistake and deserves one line, not a run full of connect errors.
fn preflight(cfg: &LoadConfig) -> Result<(), RunError> {
    let wait = cfg.timeout.min(Duration::from_secs(5));
    std::net::TcpStream::connect_timeout(&cfg.target.addr, wait)
        .map(drop)
        .map_err(|e| RunError::Connect(format!("cannot connect to {}: {e}", cfg.target.addr)))
}

struct Merging {
    reports: usize,
    requests: u64,
    errors: u64,
    bytes: u64,
    hist: Histogram<u64>,
}

impl Merging {
    fn new() -> Self {
        Merging {
            reports: 0,
            requests: 0,
            errors: 0,
            bytes: 0,
            hist: new_histogram(),
        }
    }

    fn add(&mut self, iv: crate::worker::Interval) {
        self.reports += 1;
        self.requests += iv.requests;
        self.errors += iv.errors;
        self.bytes += iv.bytes;
        let _ = self.hist.add(&iv.hist);
    }
}

fn emit(
    plan: &Plan,
    second: i64,
    m: Merging,
    stopped: Nanos,
    series: &mut Vec<SecondSample>,
    observer: &mut dyn Observer,
) {
    let edge = |s: i64| {
        let t = plan.measure_start as i128 + s as i128 * NANOS_PER_SEC as i128;
        (t.max(plan.start as i128) as u64).min(plan.end)
    };
    let from = edge(second);
    let to = edge(second + 1).min(stopped.max(from));
    let sample = SecondSample {
        second,
        phase: if second < 0 {
            Phase::Warmup
        } else {
            Phase::Measure
        },
        start_s: (from - plan.start) as f64 / NANOS_PER_SEC as f64,
        duration_s: (to - from) as f64 / NANOS_PER_SEC as f64,
        requests: m.requests,
        errors: m.errors,
        bytes: m.bytes,
        p50_us: if m.hist.is_empty() {
            0
        } else {
            m.hist.value_at_quantile(0.5)
        },
        p99_us: if m.hist.is_empty() {
            0
        } else {
            m.hist.value_at_quantile(0.99)
        },
    };
    observer.on_interval(&sample, &m.hist);
    series.push(sample);
}

#[allow(clippy::too_many_arguments)]
fn assemble(
    cfg: &LoadConfig,
    plan: &Plan,
    threads: usize,
    results: Vec<WorkerResult>,
    series: Vec<SecondSample>,
    stopped: Nanos,
    cpu_s: f64,
    interrupted: bool,
) -> Outcome {
    let mut latency = new_histogram();
    let mut uncorrected = new_histogram();
    let mut lateness = new_histogram();
    let mut errors = ErrorCounts::default();
    let (mut requests, mut bytes, mut sent, mut unsent, mut waited) = (0, 0, 0, 0, 0);
    let mut busy = 0.0;
    for r in &results {
        let _ = latency.add(&r.latency);
        let _ = uncorrected.add(&r.uncorrected);
        let _ = lateness.add(&r.lateness);
        errors.add(&r.errors);
        requests += r.requests;
        bytes += r.bytes;
        sent += r.sent;
        unsent += r.unsent;
        waited += r.waited;
        busy += if r.wall_ns > 0 {
            r.cpu_ns as f64 / r.wall_ns as f64
        } else {
            0.0
        };
    }
    let busy_fraction = if results.is_empty() {
        0.0
    } else {
        busy / results.len() as f64
    };
    let (uncorrected, lateness, schedule) = match plan.rate {
        None => (latency.clone(), None, None),
        Some(rate) => {
            let p99 = if lateness.is_empty() {
                0
            } else {
                lateness.value_at_quantile(0.99)
            };
            let schedule = Schedule {
                rate,
                sent,
                unsent,
                waited_for_connection: waited,
                behind: p99 > 1_000 || unsent > 0,
            };
            (uncorrected, Some(lateness), Some(schedule))
        }
    };
    Outcome {
        model: cfg.model,
        connections: cfg.connections,
        threads,
        pipeline: cfg.pipeline,
        warmup_s: cfg.warmup.as_secs_f64(),
        measured_s: stopped.saturating_sub(plan.measure_start) as f64 / NANOS_PER_SEC as f64,
        requests,
        bytes_read: bytes,
        errors,
        latency,
        uncorrected,
        lateness,
        series,
        generator: Generator {
            cpu_s,
            busy_fraction,
            saturated: busy_fraction > 0.9,
            steal_fraction: None,
        },
        schedule,
        interrupted,
    }
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
