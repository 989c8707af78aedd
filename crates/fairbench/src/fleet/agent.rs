//! `fairbench agent`: the hidden subcommand fairbench runs on other hosts
//! and in network namespaces. Not for people: its input and output are the
//! wire protocol of fleet/wire.rs.
//!
//! - `agent load --job JSON`: connects once, prints `ready`, waits for
//!   `go <unix-ns>` on stdin, runs the engine with that planned start,
//!   streams each interval, prints `done` with the encoded histograms.
//!   `stop` or the end of stdin stops the load early (results still sent).
//! - `agent supervise … -- ARGV`: starts a server in a control group of its
//!   own (else its own process group) pinned to CPUs, prints `pid N`,
//!   `contained METHOD CPUSET [WHY]`, `ready MS` or `notready WHY`,
//!   `usage CPU_S PEAK` for each `usage` it is sent, `leftover WHY` if its
//!   group would not go, and `exit HOW` when it ends; `stop` or the end of
//!   stdin (the ssh connection is gone) stops the whole server.
//! - `agent free-port`: prints a TCP port that is free here.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fairbench_engine::histogram::Encoded;
use fairbench_engine::{LoadConfig, Observer, SecondSample};
use fairbench_sys::process::{self, ServerProcess, ServerSpec};
use hdrhistogram::Histogram;

use super::wire::AgentMsg;

#[derive(clap::Args, Debug)]
pub struct AgentArgs {
    #[command(subcommand)]
    pub command: AgentCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum AgentCommand {
    /// Run one share of a load (JSON job), started by a planned start time.
    Load {
        #[arg(long)]
        job: String,
    },
    /// Start a server and look after it until told to stop.
    Supervise(SuperviseArgs),
    /// Print a free TCP port.
    FreePort,
}

#[derive(clap::Args, Debug)]
pub struct SuperviseArgs {
    #[arg(long)]
    pub log: PathBuf,
    #[arg(long)]
    pub cwd: PathBuf,
    #[arg(long, default_value_t = 5000)]
    pub grace_ms: u64,
    #[arg(long)]
    pub ready_port: Option<u16>,
    #[arg(long, default_value_t = 30_000)]
    pub ready_timeout_ms: u64,
    #[arg(long)]
    pub cpus: Option<crate::args::CpuList>,
    #[arg(long = "env")]
    pub env: Vec<String>,
    #[arg(last = true, required = true)]
    pub argv: Vec<String>,
}

pub fn run(args: AgentArgs) -> anyhow::Result<i32> {
    match args.command {
        AgentCommand::Load { job } => load(&job),
        AgentCommand::Supervise(a) => supervise(a),
        AgentCommand::FreePort => {
            println!("{}", process::free_port()?);
            Ok(0)
        }
    }
}

struct Out(Mutex<std::io::Stdout>);

impl Out {
    fn send(&self, m: &AgentMsg) {
        let line = serde_json::to_string(m).unwrap_or_default();
        let mut o = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let _ = writeln!(o, "{line}");
        let _ = o.flush();
    }
}

struct Streamer<'a>(&'a Out);

impl Observer for Streamer<'_> {
    fn on_interval(&mut self, s: &SecondSample, h: &Histogram<u64>) {
        self.0.send(&AgentMsg::Interval {
            sample: s.clone(),
            hist: Encoded::of(h),
        });
    }
}

fn load(job: &str) -> anyhow::Result<i32> {
    let out = Out(Mutex::new(std::io::stdout()));
    let fail = |message: String| {
        out.send(&AgentMsg::Error { message });
        Ok(1)
    };
    // The target is resolved here, where the load runs.
    let mut cfg: LoadConfig = match serde_json::from_str(job) {
        Ok(c) => c,
        Err(e) => return fail(format!("malformed job: {e}")),
    };
    if let Err(e) = cfg.validate() {
        return fail(e.to_string());
    }
    // Pinned and not placed in a group by whoever started it (fairbench
    // does that for agents on its own machine): its threads in a control
    // group with its CPUs as the cpuset, where one can be made.
    let placed = std::env::var_os(crate::fleet::IN_GROUP_VAR).is_some();
    let cpus = cfg.cpus.as_deref().filter(|_| !placed);
    let generator = crate::host::groups::GeneratorGroup::new(cpus);
    cfg.thread_start = generator.hook();
    let containment = cpus.map(|_| generator.method().as_str().to_string());
    let wait = cfg.timeout.min(Duration::from_secs(5));
    // HTTP/3 is UDP: nothing listens on the TCP port, and the engine makes
    // one QUIC handshake before the load instead.
    let over_tcp = cfg.protocol != fairbench_engine::Protocol::H3;
    if let Err(e) = over_tcp
        .then(|| std::net::TcpStream::connect_timeout(&cfg.target.addr, wait))
        .transpose()
    {
        return fail(format!("cannot connect to {}: {e}", cfg.target.addr));
    }
    // SIGINT/SIGTERM and `stop` both end the load early, results kept.
    let stop = crate::interrupt::flag();
    let (go_tx, go_rx) = mpsc::channel::<u64>();
    {
        let stop = stop.clone();
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines() {
                let Ok(line) = line else { break };
                let line = line.trim();
                if let Some(ns) = line.strip_prefix("go ") {
                    if let Ok(ns) = ns.trim().parse::<u64>() {
                        let _ = go_tx.send(ns);
                    }
                } else if line == "stop" {
                    break;
                }
            }
            // Told to stop, or whoever started us is gone.
            stop.store(true, Ordering::SeqCst);
        });
    }
    out.send(&AgentMsg::Ready {
        pid: std::process::id(),
        now_ns: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0),
    });
    let start_ns = loop {
        match go_rx.recv_timeout(Duration::from_millis(100)) {
            Ok(ns) => break ns,
            Err(mpsc::RecvTimeoutError::Timeout) if !stop.load(Ordering::Relaxed) => continue,
            Err(_) => return fail("stopped before the start signal".into()),
        }
    };
    let at = UNIX_EPOCH + Duration::from_nanos(start_ns);
    let late_start_ms = SystemTime::now()
        .duration_since(at)
        .map(|d| d.as_secs_f64() * 1e3)
        .unwrap_or(0.0);
    cfg.start_at = Some(at);
    let result = fairbench_engine::run(&cfg, stop, &mut Streamer(&out));
    match result {
        Ok(o) => {
            out.send(&AgentMsg::Done {
                outcome: Box::new(o),
                late_start_ms,
                containment,
            });
            Ok(0)
        }
        Err(e) => fail(e.to_string()),
    }
}

/// One line to whoever supervises the supervisor.
fn say(s: String) {
    let mut o = std::io::stdout().lock();
    let _ = writeln!(o, "{s}");
    let _ = o.flush();
}

fn supervise(a: SuperviseArgs) -> anyhow::Result<i32> {
    let mut env = Vec::new();
    for kv in &a.env {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| anyhow::anyhow!("--env {kv:?}: expected NAME=VALUE"))?;
        env.push((k.to_string(), v.to_string()));
    }
    // A supervisor killed with its ssh connection may have left a group
    // on this host: the next one removes it.
    let _ = fairbench_sys::containment::clean_leftovers();
    let mut spec = ServerSpec::new(a.argv.clone(), a.cwd.clone(), a.log.clone());
    spec.env = env;
    spec.cpus = a.cpus.clone().map(|c| c.0);
    spec.stop_grace = Duration::from_millis(a.grace_ms);
    let server = match ServerProcess::start(&spec) {
        Ok(p) => Arc::new(p),
        Err(e) => {
            say(format!("notready cannot start: {e}"));
            say(format!("exit could not start: {e}"));
            return Ok(1);
        }
    };
    say(format!("pid {}", server.pid()));
    say(crate::host::contained_line(&server));
    {
        let server = server.clone();
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines() {
                match line {
                    Ok(l) if l.trim() == "stop" => break,
                    Ok(l) if l.trim() == "usage" => {
                        say(crate::host::usage_line(server.group_usage()))
                    }
                    Ok(_) => continue,
                    Err(_) => break,
                }
            }
            server.stop();
        });
    }
    if let Some(port) = a.ready_port {
        match server.wait_ready(
            &process::loopback(port),
            Duration::from_millis(a.ready_timeout_ms),
        ) {
            Ok(d) => say(format!("ready {}", d.as_millis())),
            Err(e) => say(format!("notready {e}")),
        }
    }
    loop {
        if let Some(st) = server.exit_status() {
            // Children that outlived the leader go too.
            server.stop();
            if let Some(why) = server.leftover() {
                say(format!("leftover {why}"));
            }
            say(format!("exit {}", process::describe_exit(st)));
            return Ok(0);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
