//! Several load generators as one: agents on their hosts (namespaces, ssh
//! hosts, or processes here), started together through a barrier and a
//! shared planned start, their results merged exactly (the engine's
//! `merge`, the same that merges its threads) into
//! one [`Outcome`] that is reported and stored like any other, with each
//! generator's own part kept.
//!
//! The barrier: every agent connects to the server once and says `ready`;
//! only when all have does fairbench pick a start time a moment ahead and
//! send it to all of them. The engine of each agent schedules its warm-up,
//! measurement and one-second intervals from that time.

pub mod agent;
pub mod split;
pub mod wire;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use fairbench_engine::histogram::Encoded;
use fairbench_engine::merge::LiveMerge;
use fairbench_engine::{LoadConfig, Observer, Outcome, SecondSample};
use hdrhistogram::Histogram;

use fairbench_sys::containment::{self, Group, Purpose};

use crate::host::Host;
use wire::AgentMsg;

/// How far ahead of "all ready" the shared start is planned: enough for the
/// start message to reach every agent and for its threads to be up.
const START_MARGIN: Duration = Duration::from_millis(500);

/// How long agents may take to connect and report ready.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// Clocks further apart than this get a warning: the parts' intervals are
/// then shifted against each other by about that much.
const CLOCK_WARN_MS: f64 = 50.0;

/// Set on an agent that fairbench has put in a control group itself.
pub const IN_GROUP_VAR: &str = "FAIRBENCH_IN_GROUP";

/// One generator's share of the load and where it runs.
#[derive(Clone)]
pub struct Job {
    pub host: Host,
    pub config: LoadConfig,
}

/// One generator's result.
pub struct Part {
    /// Where it ran (`Host::label`).
    pub host: String,
    pub config: LoadConfig,
    pub outcome: Outcome,
    /// The histogram of each interval of `outcome.series`, in order, kept
    /// encoded (a few hundred bytes each rather than ~100 KiB decoded).
    pub intervals: Vec<Encoded>,
    pub warnings: Vec<String>,
    /// How its load threads were held to their CPUs, when pinned.
    pub containment: Option<String>,
}

pub struct FleetOutcome {
    pub merged: Outcome,
    pub parts: Vec<Part>,
    /// About the parts and their coordination (late start, clocks apart,
    /// a saturated generator), for the merged result's warnings.
    pub warnings: Vec<String>,
}

#[derive(Debug)]
pub enum FleetError {
    /// An agent failed or could not start; the message names its host.
    Agent(String),
    /// Stopped before the load started.
    Interrupted,
}

impl std::fmt::Display for FleetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FleetError::Agent(m) => f.write_str(m),
            FleetError::Interrupted => f.write_str("interrupted before the load started"),
        }
    }
}

impl std::error::Error for FleetError {}

enum Event {
    /// A message and when it arrived (Unix ns).
    Msg(usize, AgentMsg, u64),
    Garbled(usize, String),
    Closed(usize),
}

struct Agent {
    label: String,
    /// Its control group, when fairbench made one for it.
    group: Option<Group>,
    config: LoadConfig,
    child: Child,
    stdin: Option<ChildStdin>,
    stderr: Arc<Mutex<Vec<String>>>,
    ready: bool,
    clock_offset_ms: f64,
    done: Option<(Outcome, f64, Option<String>)>,
    error: Option<String>,
    closed: bool,
    intervals: Vec<Encoded>,
}

impl Agent {
    fn tell(&mut self, line: &str) {
        if let Some(w) = self.stdin.as_mut() {
            if w.write_all(line.as_bytes())
                .and_then(|_| w.write_all(b"\n"))
                .and_then(|_| w.flush())
                .is_err()
            {
                self.stdin = None;
            }
        }
    }

    fn why(&self) -> String {
        if let Some(e) = &self.error {
            return format!("load generator on {}: {e}", self.label);
        }
        let err = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        let last = err
            .iter()
            .rfind(|l| !l.trim().is_empty())
            .cloned()
            .unwrap_or_else(|| "it ended without a result".into());
        format!("load generator on {}: {last}", self.label)
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.stdin = None;
        if let Ok(None) = self.child.try_wait() {
            let deadline = Instant::now() + Duration::from_secs(3);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = self.child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Runs every job's agent, all starting together, until their durations
/// pass or `stop` is set; the observer sees the merged intervals live.
pub fn run(
    jobs: Vec<Job>,
    stop: Arc<AtomicBool>,
    observer: &mut dyn Observer,
) -> Result<FleetOutcome, FleetError> {
    let (tx, rx) = mpsc::channel::<Event>();
    let mut agents: Vec<Agent> = Vec::with_capacity(jobs.len());
    for (i, job) in jobs.into_iter().enumerate() {
        agents.push(spawn(i, job, &tx)?);
    }
    drop(tx);
    await_ready(&mut agents, &rx, &stop)?;
    let ends = start_together(&mut agents);
    let series = follow(&mut agents, &rx, &stop, ends, observer);
    let_exit(&mut agents);
    let (parts, warnings) = parts(&mut agents)?;
    let outcomes: Vec<&Outcome> = parts.iter().map(|p| &p.outcome).collect();
    let merged = Outcome::merge(&outcomes, series);
    Ok(FleetOutcome {
        merged,
        parts,
        warnings,
    })
}

/// Starts job `i`'s agent on its host, its messages sent to `tx`.
fn spawn(i: usize, job: Job, tx: &mpsc::Sender<Event>) -> Result<Agent, FleetError> {
    let label = job.host.label();
    let exe = job
        .host
        .fairbench_exe()
        .map_err(|e| FleetError::Agent(format!("load generator on {label}: {e:#}")))?;
    let json = serde_json::to_string(&job.config).expect("a job serialises");
    let argv = vec![
        exe,
        "agent".to_string(),
        "load".into(),
        "--job".into(),
        json,
    ];
    // An agent on this machine (here or in a namespace, where it
    // cannot see the cgroup file system itself) goes into a group with
    // its CPUs as the cpuset from its first instruction on.
    let group = match (&job.host, &job.config.cpus) {
        (Host::Local | Host::Netns(_), Some(cpus)) => {
            containment::create(Purpose::Generator, Some(cpus)).ok()
        }
        _ => None,
    };
    let mut cmd = job.host.command(&argv);
    if let Some(g) = &group {
        let joiner = g.joiner().map_err(|e| {
            FleetError::Agent(format!(
                "load generator on {label}: cannot open control group {}: {e}",
                g.name()
            ))
        })?;
        cmd.env(IN_GROUP_VAR, g.name());
        // SAFETY: join_self only writes to descriptors opened before the fork.
        unsafe {
            cmd.pre_exec(move || joiner.join_self());
        }
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = fairbench_sys::process::spawn_child(&mut cmd)
        .map_err(|e| FleetError::Agent(format!("load generator on {label}: cannot start: {e}")))?;
    let stdout = child.stdout.take().expect("piped");
    let stderr_pipe = child.stderr.take().expect("piped");
    read_messages(i, stdout, tx.clone());
    let stderr = keep_stderr(stderr_pipe);
    let stdin = child.stdin.take();
    Ok(Agent {
        label,
        group,
        config: job.config,
        child,
        stdin,
        stderr,
        ready: false,
        clock_offset_ms: 0.0,
        done: None,
        error: None,
        closed: false,
        intervals: Vec::new(),
    })
}

/// Sends each line agent `i` writes as an event, until it closes.
fn read_messages(i: usize, stdout: ChildStdout, tx: mpsc::Sender<Event>) {
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            match serde_json::from_str::<AgentMsg>(&line) {
                Ok(m) => {
                    let _ = tx.send(Event::Msg(i, m, unix_ns()));
                }
                Err(_) => {
                    let _ = tx.send(Event::Garbled(i, line));
                }
            }
        }
        let _ = tx.send(Event::Closed(i));
    });
}

/// The last lines an agent writes to its stderr, once it closes it: what
/// it says when it fails.
fn keep_stderr(pipe: ChildStderr) -> Arc<Mutex<Vec<String>>> {
    let stderr = Arc::new(Mutex::new(Vec::new()));
    {
        let stderr = stderr.clone();
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = BufReader::new(pipe).read_to_string(&mut text);
            *stderr.lock().unwrap_or_else(|p| p.into_inner()) = text
                .lines()
                .rev()
                .take(20)
                .map(fairbench_sys::text::visible)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
        });
    }
    stderr
}

/// The barrier: everyone connected and waiting.
fn await_ready(
    agents: &mut [Agent],
    rx: &mpsc::Receiver<Event>,
    stop: &AtomicBool,
) -> Result<(), FleetError> {
    let deadline = Instant::now() + READY_TIMEOUT;
    while !agents.iter().all(|a| a.ready) {
        if stop.load(Ordering::Relaxed) {
            for a in agents.iter_mut() {
                a.tell("stop");
            }
            return Err(FleetError::Interrupted);
        }
        if Instant::now() > deadline {
            let slow: Vec<&str> = agents
                .iter()
                .filter(|a| !a.ready)
                .map(|a| a.label.as_str())
                .collect();
            return Err(FleetError::Agent(format!(
                "load generators not ready after {} s: {}",
                READY_TIMEOUT.as_secs(),
                slow.join(", ")
            )));
        }
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(Event::Msg(i, AgentMsg::Ready { now_ns, .. }, at)) => {
                agents[i].ready = true;
                // Sent before it arrived: a negative offset up to the
                // one-way delay is no clock error.
                agents[i].clock_offset_ms = (now_ns as f64 - at as f64) / 1e6;
            }
            Ok(Event::Msg(i, AgentMsg::Error { message }, _)) => {
                agents[i].error = Some(message);
                return Err(FleetError::Agent(agents[i].why()));
            }
            Ok(Event::Closed(i)) => {
                // Let its stderr arrive for the message.
                std::thread::sleep(Duration::from_millis(200));
                return Err(FleetError::Agent(agents[i].why()));
            }
            Ok(Event::Garbled(i, line)) => {
                return Err(FleetError::Agent(format!(
                    "load generator on {}: unexpected output {:?} (is the fairbench there the same version?)",
                    agents[i].label,
                    fairbench_sys::text::visible(&line)
                )))
            }
            Ok(Event::Msg(..)) | Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    Ok(())
}

/// When the agents are told to stop (`soft`), and when those still
/// running are killed (`hard`).
struct Ends {
    soft: Instant,
    hard: Instant,
}

/// The shared planned start, sent to every agent.
fn start_together(agents: &mut [Agent]) -> Ends {
    let start = SystemTime::now() + START_MARGIN;
    let start_ns = start
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    for a in agents.iter_mut() {
        a.tell(&format!("go {start_ns}"));
    }
    let longest = agents
        .iter()
        .map(|a| (a.config.warmup + a.config.duration).as_secs_f64())
        .fold(0.0, f64::max);
    let soft = Instant::now() + START_MARGIN + Duration::from_secs_f64(longest + 20.0);
    Ends {
        soft,
        hard: soft + Duration::from_secs(15),
    }
}

/// Takes the agents' messages until all have closed (or `ends` pass),
/// merging their intervals for the observer; returns the merged series.
fn follow(
    agents: &mut [Agent],
    rx: &mpsc::Receiver<Event>,
    stop: &AtomicBool,
    ends: Ends,
    observer: &mut dyn Observer,
) -> Vec<SecondSample> {
    let mut merger = LiveMerge::new(agents.len());
    let mut series = Vec::new();
    let mut emit = |out: Vec<(SecondSample, Histogram<u64>)>, series: &mut Vec<SecondSample>| {
        for (s, h) in out {
            observer.on_interval(&s, &h);
            series.push(s);
        }
    };
    let mut stop_sent = false;
    while !agents.iter().all(|a| a.closed) {
        if !stop_sent && (stop.load(Ordering::Relaxed) || Instant::now() > ends.soft) {
            for a in agents.iter_mut() {
                a.tell("stop");
            }
            stop_sent = true;
        }
        if Instant::now() > ends.hard {
            for a in agents.iter_mut().filter(|a| !a.closed) {
                let _ = a.child.kill();
                a.error
                    .get_or_insert_with(|| "did not finish in time".into());
            }
            break;
        }
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(Event::Msg(i, AgentMsg::Interval { sample, hist }, _)) => match hist.decode() {
                Ok(h) => {
                    agents[i].intervals.push(hist);
                    emit(merger.add(i, sample, h), &mut series);
                }
                Err(e) => agents[i].error = Some(e),
            },
            Ok(Event::Msg(
                i,
                AgentMsg::Done {
                    outcome,
                    late_start_ms,
                    containment,
                },
                _,
            )) => agents[i].done = Some((*outcome, late_start_ms, containment)),
            Ok(Event::Msg(i, AgentMsg::Error { message }, _)) => agents[i].error = Some(message),
            Ok(Event::Msg(..)) => {}
            Ok(Event::Garbled(i, line)) => {
                agents[i].error = Some(format!(
                    "unexpected output {:?}",
                    fairbench_sys::text::visible(&line)
                ))
            }
            Ok(Event::Closed(i)) => {
                agents[i].closed = true;
                emit(merger.finish(i), &mut series);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    emit(merger.drain(), &mut series);
    series
}

/// Lets the agents exit and their stderr arrive.
fn let_exit(agents: &mut [Agent]) {
    for a in agents.iter_mut() {
        a.stdin = None;
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = a.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Each agent's part, and the warnings of them all; an agent without a
/// result fails the load.
fn parts(agents: &mut [Agent]) -> Result<(Vec<Part>, Vec<String>), FleetError> {
    let mut parts = Vec::with_capacity(agents.len());
    let mut warnings = Vec::new();
    for a in agents.iter_mut() {
        let Some((outcome, late_start_ms, reported)) = a.done.take() else {
            std::thread::sleep(Duration::from_millis(100));
            return Err(FleetError::Agent(a.why()));
        };
        let w = part_warnings(a, late_start_ms, &outcome);
        warnings.extend(w.iter().cloned());
        parts.push(Part {
            host: a.label.clone(),
            config: a.config.clone(),
            outcome,
            intervals: std::mem::take(&mut a.intervals),
            warnings: w,
            containment: match &a.group {
                Some(g) => Some(g.method().as_str().to_string()),
                None => reported,
            },
        });
    }
    Ok((parts, warnings))
}

/// What makes an agent's part less exact: a late start, a clock apart,
/// a saturated generator.
fn part_warnings(a: &Agent, late_start_ms: f64, outcome: &Outcome) -> Vec<String> {
    let mut w = Vec::new();
    if late_start_ms > 1.0 {
        w.push(format!(
            "load generator on {} got the start signal {:.0} ms after the planned start: its intervals are shifted by that much",
            a.label, late_start_ms
        ));
    }
    if a.clock_offset_ms.abs() > CLOCK_WARN_MS {
        w.push(format!(
            "the clock of {} is about {:.0} ms off this machine's: its per-second intervals are shifted by that much (totals and histograms are unaffected)",
            a.label, a.clock_offset_ms
        ));
    }
    if outcome.generator.saturated {
        w.push(format!(
            "load generator on {} saturated (busiest load thread {:.0}% busy): throughput is a lower bound",
            a.label,
            outcome.generator.busy_fraction * 100.0
        ));
    }
    w
}

fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}
