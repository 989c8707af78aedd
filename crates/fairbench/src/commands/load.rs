//! `fairbench load URL`: the load engine alone, like wrk, wrk2 or oha.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use fairbench_engine::{
    LoadConfig, LoadModel, Observer, Protocol, RequestSpec, RunError, StatusSet, Target,
    TlsOptions, DEFAULT_STREAMS,
};
use hdrhistogram::serialization::V2DeflateSerializer;

use crate::args::{
    bounds, duration, migrant, parse_percentiles, parse_stages, positive_count, positive_duration,
    positive_usize, rate, CpuList, Percentiles,
};
use crate::fleet::split::{split, Aim};
use crate::fleet::{self, FleetOutcome};
use crate::host;
use crate::output::check_report;
use crate::output::load::hdr_log::HdrLog;
use crate::output::load::json::LoadJson;
use crate::output::load::summary;
use crate::output::load::tls_error;
use crate::output::progress::{Fanout, LoadProgress};
use crate::output::terminal;
use crate::runner;
use crate::runner::adhoc::{self, SampleLog};
use crate::runner::knee;
use crate::thresholds;
use crate::topology::{ClientArgs, Layout, TopologyKind};
use crate::units;
use crate::usage_error::usage;
use fairbench_zoo::fetch;
use fairbench_zoo::parity::RawExchange;

#[derive(clap::Args, Debug)]
pub struct LoadArgs {
    /// The URL to load, e.g. http://127.0.0.1:8080/, http://[::1]:8080/ or https://127.0.0.1:8443/
    pub url: String,
    /// Connections kept open, spread evenly over the threads (with --no-keepalive: requests
    /// at once). SI suffixes as in wrk: 1k = 1000.
    #[arg(short = 'c', long, default_value = "50", value_parser = bounds::connections)]
    pub connections: usize,
    /// Load threads, each with its own event loop [default: the CPUs this process may use]
    #[arg(short = 't', long, value_parser = bounds::threads)]
    pub threads: Option<usize>,
    /// How long to measure (e.g. 10s, 500ms, 2m) [default: 10s; with -n, as long as the N requests take]
    #[arg(short = 'd', long, value_parser = positive_duration)]
    pub duration: Option<Duration>,
    /// Stop after N requests of the measurement (ab's and oha's -n; e.g. 10000, 10k, 1.5M):
    /// N sent in closed loop, N due at constant rate. With -d too, whichever ends first.
    #[arg(short = 'n', long, value_name = "N", value_parser = positive_count)]
    pub requests: Option<u64>,
    /// A new connection for every request, closed by fairbench after the answer (ab
    /// without -k). Latency then includes the connect and any TLS handshake.
    #[arg(long, alias = "disable-keepalive")]
    pub no_keepalive: bool,
    /// https:// only: accept any certificate (self-signed, expired, for another name).
    #[arg(long)]
    pub insecure: bool,
    /// https:// only: trust the CA certificates in this PEM file instead of the system's.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// The statuses that count as success; any other is a status error. Codes, ranges
    /// and classes, e.g. 200,204,300-399 or 2xx.
    #[arg(long, value_name = "LIST", default_value = "200-399")]
    pub expect_status: String,
    /// Run this long first without counting it (JIT warm-up, connection set-up).
    #[arg(long, default_value = "0s", value_parser = duration)]
    pub warmup: Duration,
    /// A request without an answer after this long is aborted and counted as a timeout
    /// (see --timeout-mode).
    #[arg(long, default_value = "2s", value_parser = positive_duration)]
    pub timeout: Duration,
    /// How a request past --timeout is counted: fairbench (aborted, its connection reopened)
    /// or wrk (awaited; an answer after the timeout counts as a timeout, the connection is kept).
    #[arg(long, value_name = "MODE", default_value = "fairbench", value_parser = timeout_mode)]
    pub timeout_mode: fairbench_engine::TimeoutMode,
    /// Constant rate in requests per second, in total (e.g. 500, 10k): latency is measured from
    /// when each request was due (wrk2 semantics). Without it: closed loop.
    #[arg(short = 'R', long, allow_negative_numbers = true, value_parser = rate)]
    pub rate: Option<f64>,
    /// A rate profile instead of -R and -d: stages DURATION:RATE (a step) or DURATION:FROM-TO
    /// (a linear ramp), e.g. 10s:1k,30s:1k-20k,10s:20k; planned like -R (latency from each
    /// request's planned time), broken down by stage in the summary and --json.
    #[arg(long, value_name = "SPEC", value_parser = parse_stages, conflicts_with_all = ["rate", "duration", "requests"])]
    pub stages: Option<Stages>,
    /// With -R: how long before its planned time a request may go out when a load thread is
    /// awake anyway, e.g. 0, 10us, 100us (at most 1ms). Latency counts from the earlier of the
    /// two times; a wider window costs less CPU per request (docs/load-json.md).
    #[arg(long, value_name = "DURATION", default_value = "100us", value_parser = duration)]
    pub send_ahead: Duration,
    /// HTTP method.
    #[arg(short = 'm', long, default_value = "GET")]
    pub method: String,
    /// Extra request header "Name: value" (repeatable).
    #[arg(short = 'H', long = "header")]
    pub headers: Vec<String>,
    /// Request body.
    #[arg(long, conflicts_with = "body_file")]
    pub body: Option<String>,
    /// Request body read from a file.
    #[arg(long)]
    pub body_file: Option<PathBuf>,
    /// Many requests: a TOML file of [[target]] tables (method, path or url, headers, body or
    /// body_file, weight, name; templates such as {{seq}}, {{uniform 1 100}}, {{zipf 1.1 1 10000}},
    /// {{line ids.txt}}). Results are broken down by target name (docs/targets.md).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["body", "body_file"])]
    pub targets: Option<PathBuf>,
    /// With templates: how many requests to prepare before the run; the load threads send
    /// them in turn.
    #[arg(long, value_name = "N", default_value = "10000", value_parser = positive_usize)]
    pub pool: usize,
    /// Seed of the templates' random values (and of the --vs order).
    #[arg(long, value_name = "N", default_value = "1")]
    pub seed: u64,
    /// Before and after: load this second URL too, alternating with the first repetition by
    /// repetition (seeded order), and print the paired ratios B/A of req/s and latency
    /// percentiles with 95 % intervals and a verdict. The same URL twice: the noise floor.
    #[arg(long, value_name = "URL_B")]
    pub vs: Option<String>,
    /// With --vs: how many times each URL is loaded (at least 2 for an interval) [default: 5]
    #[arg(long, value_name = "N", value_parser = positive_usize)]
    pub repetitions: Option<usize>,
    /// A pass/fail criterion checked after the run (repeatable): p99<20ms, errors<0.1%,
    /// rps>5k, timeouts=0, p99{item}<50ms (a target), ratio.p99<1.05 (with --vs). Printed as a
    /// table; any failure exits 99.
    #[arg(long = "threshold", value_name = "EXPR")]
    pub thresholds: Vec<String>,
    /// Search the knee, as the `sweep` suites do: constant-rate steps of -d each (10s unless
    /// given), doubling from --start-rate until one misses this latency objective, then four
    /// bisections; the knee is the highest rate meeting it with no error and at least 90 %
    /// answered. E.g. p99<=20ms.
    #[arg(long, value_name = "OBJECTIVE", value_parser = knee::Objective::parse, conflicts_with_all = ["rate", "stages", "vs", "requests"])]
    pub knee: Option<knee::Objective>,
    /// With --knee: the first rate tried, in requests per second [default: 100]
    #[arg(long, value_name = "RATE", value_parser = rate)]
    pub start_rate: Option<f64>,
    /// With --knee: the highest rate tried [default: 1M]
    #[arg(long, value_name = "RATE", value_parser = rate)]
    pub max_rate: Option<f64>,
    /// Requests in flight per connection (HTTP/1.1 pipelining).
    #[arg(long, default_value = "1", value_parser = bounds::pipeline)]
    pub pipeline: usize,
    /// Speak HTTP/2: h2 chosen by ALPN on https:// URLs, h2c with prior knowledge on http://.
    #[arg(long)]
    pub http2: bool,
    /// With --http2: requests (streams) in flight per connection, as h2load's -m; a server's
    /// lower SETTINGS_MAX_CONCURRENT_STREAMS wins [default: 1, so that -c is the same
    /// concurrency over HTTP/1.1 and HTTP/2]
    #[arg(long, value_name = "N")]
    pub streams: Option<usize>,
    /// Pin the load threads to these CPUs, e.g. 0 or 0,2-3.
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<CpuList>,
    /// Print the full latency percentile spectrum (every quarter "nine", as the report
    /// draws it, and the maximum).
    #[arg(long, short_alias = 'L')]
    pub latency: bool,
    /// The percentiles the summary leads with, e.g. 50,90,99,99.9.
    #[arg(long, value_name = "LIST", default_value = "50,90,99,99.9", value_parser = parse_percentiles)]
    pub percentiles: Percentiles,
    /// Send one request, print the request and the response bytes as exchanged, and exit.
    #[arg(long)]
    pub dump: bool,
    /// text (the summary) or json (schema: docs/load-json.md).
    #[arg(long, value_enum, value_name = "FORMAT", default_value = "text")]
    pub format: crate::args::TextFormat,
    /// Same as --format json.
    #[arg(long, short_alias = 'j', conflicts_with = "format")]
    pub json: bool,
    /// Store the result in the results database (--db) as a run of one case, for
    /// `show`, `report` and `compare`.
    #[arg(long)]
    pub save: bool,
    /// The results database --save writes to.
    #[arg(long, value_name = "PATH", default_value = "results.db")]
    pub db: PathBuf,
    /// When another benchmark holds the machine, wait for it instead of refusing.
    #[arg(long)]
    pub wait: bool,
    /// Write per-second latency histograms to FILE as an HdrHistogram interval log.
    #[arg(long, value_name = "FILE")]
    pub hdr_log: Option<PathBuf>,
    #[command(flatten)]
    pub place: ClientArgs,
}

pub fn run(args: LoadArgs) -> anyhow::Result<i32> {
    let result = run_load(&args);
    if let Err(e) = &result {
        // A machine reading --json gets an object on failure too: the
        // error, where a person reads it on standard error.
        if crate::args::wants_json(args.format, args.json) && !args.dump {
            let v = serde_json::json!({
                "fairbench_version": env!("CARGO_PKG_VERSION"),
                "url": args.url,
                "error": format!("{e:#}"),
            });
            println!("{}", serde_json::to_string_pretty(&v)?);
        }
    }
    result
}

fn run_load(args: &LoadArgs) -> anyhow::Result<i32> {
    let cfg = config(args)?;
    let names = cfg.mix.as_ref().map_or(&[][..], |m| &m.names[..]);
    let thresholds =
        thresholds::parse_all(&args.thresholds, names, args.vs.is_some()).map_err(usage)?;
    if let Some(b) = &args.vs {
        return run_vs(args, &cfg, b, &thresholds);
    }
    if let Some(objective) = args.knee {
        return run_knee(args, &cfg, objective, &thresholds);
    }
    if args.start_rate.is_some() || args.max_rate.is_some() {
        return Err(usage(
            "--start-rate and --max-rate bound the search of --knee OBJECTIVE",
        ));
    }
    if args.repetitions.is_some() {
        return Err(usage("--repetitions: repeats the pair of --vs URL_B"));
    }
    if args.dump {
        return dump(args, &cfg);
    }
    let _machine = crate::machine_lock::MachineLock::acquire(args.wait)?;
    let p = &args.place;
    if p.topology != TopologyKind::Local || p.clients != 1 || !p.client_hosts.is_empty() {
        return run_fleet(args, &cfg, &thresholds);
    }
    if p.link_rate.is_some() || p.link_delay.is_some() {
        return Err(usage(
            "--link-rate and --link-delay shape the virtual link of --topology netns",
        ));
    }
    let stop = crate::interrupt::flag();
    let mut progress = progress_for(&cfg);

    let mut log = SampleLog::default();
    let outcome = with_observers(args, &mut progress, &mut log, |obs| {
        fairbench_engine::run(&cfg, stop, obs)
    })?;
    progress.finish();
    let outcome = match outcome {
        Ok(o) => o,
        Err(RunError::Config(e)) => return Err(usage(flag_error(&e))),
        Err(e) => anyhow::bail!(
            "{}",
            tls_error::in_words(&e.to_string(), args.cacert.is_some())
        ),
    };

    let verdicts = thresholds::check_all(&thresholds, &outcome);
    if crate::args::wants_json(args.format, args.json) {
        let mut v = serde_json::to_value(LoadJson::new(&args.url, &outcome, &args.percentiles.0))?;
        add_verdicts(&mut v, &verdicts);
        println!("{}", terminal::json(&serde_json::to_string_pretty(&v)?));
    } else {
        print!(
            "{}",
            terminal::text(&summary::render(&args.url, &outcome, &view(args)))
        );
        print!("{}", terminal::text(&thresholds::table(&verdicts)));
    }
    save(args, &cfg, &outcome, log)?;
    Ok(with_verdicts(exit_code(&outcome), &verdicts))
}

/// `--vs URL_B`: both URLs, repetition by repetition in a seeded order,
/// and their paired ratios. Non-ratio thresholds are checked on B (all its
/// repetitions together), `ratio.` ones on the paired ratio's interval.
fn run_vs(
    args: &LoadArgs,
    cfg_a: &LoadConfig,
    url_b: &str,
    ts: &[thresholds::Threshold],
) -> anyhow::Result<i32> {
    let p = &args.place;
    if p.topology != TopologyKind::Local || p.clients != 1 || !p.client_hosts.is_empty() {
        return Err(usage(
            "--vs runs both URLs from this machine, with one load generator",
        ));
    }
    if args.hdr_log.is_some() {
        return Err(usage(
            "--vs cannot be combined with --hdr-log yet: the paired ratios are printed (and in --json)",
        ));
    }
    let mut cfg_b = cfg_a.clone();
    cfg_b.target = Target::parse(url_b).map_err(|e| usage(format!("--vs: {e}")))?;
    if cfg_b.target.tls != cfg_a.target.tls {
        return Err(usage("--vs: both URLs must be http:// or both https://"));
    }
    let stop = crate::interrupt::flag();
    let reps = args.repetitions.unwrap_or(5);
    let pair = runner::vs::run_pair(cfg_a, &cfg_b, reps, args.seed, |r, side, cfg| {
        eprintln!("repetition {r} of {reps}: {side} {}", cfg.target.url);
        let mut progress = progress_for(cfg);
        let o = fairbench_engine::run(cfg, stop.clone(), &mut progress);
        progress.finish();
        match o {
            Ok(o) if o.interrupted => Err(None),
            Ok(o) => Ok(o),
            Err(e) => Err(Some(e)),
        }
    });
    let pair = match pair {
        Ok(p) => p,
        Err(None) => {
            eprintln!("interrupted: no verdict");
            return Ok(130);
        }
        Err(Some(RunError::Config(e))) => return Err(usage(flag_error(&e))),
        Err(Some(e)) => anyhow::bail!("{e}"),
    };
    let b_parts: Vec<&fairbench_engine::Outcome> = pair.b.iter().collect();
    let b_all = fairbench_engine::Outcome::merge(&b_parts, Vec::new());
    let mut verdicts = thresholds::check_all(ts, &b_all);
    verdicts.extend(pair.check(ts));
    let url_b = cfg_b.target.url.as_str();
    if crate::args::wants_json(args.format, args.json) {
        let mut v = serde_json::json!({
            "fairbench_version": env!("CARGO_PKG_VERSION"),
            "vs": pair.json(&args.url, url_b),
        });
        add_verdicts(&mut v, &verdicts);
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print!("{}", pair.text(&args.url, url_b));
        print!("{}", thresholds::table(&verdicts));
    }
    for (side, runs) in [("A", &pair.a), ("B", &pair.b)] {
        for (i, o) in runs.iter().enumerate() {
            for w in o.warnings() {
                eprintln!("WARNING: {side} repetition {}: {w}", i + 1);
            }
        }
    }
    let failed = pair.a.iter().chain(&pair.b).any(|o| o.requests == 0);
    if failed {
        eprintln!("fairbench: a repetition had no request answered (not saved)");
        return Ok(1);
    }
    if args.save {
        let argv: Vec<String> = std::env::args().collect();
        let run = runner::adhoc_pair::save_pair(&args.db, &argv, cfg_a, &cfg_b, &pair)?;
        eprintln!(
            "saved as run {run} in {} (`fairbench show {run} --db {}`: B relative to A)",
            args.db.display(),
            args.db.display()
        );
    }
    Ok(with_verdicts(0, &verdicts))
}

/// `--knee`: the sweep suites' knee search on this URL.
fn run_knee(
    args: &LoadArgs,
    cfg: &LoadConfig,
    objective: knee::Objective,
    ts: &[thresholds::Threshold],
) -> anyhow::Result<i32> {
    let p = &args.place;
    if p.topology != TopologyKind::Local || p.clients != 1 || !p.client_hosts.is_empty() {
        return Err(usage(
            "--knee searches from this machine, with one load generator",
        ));
    }
    if !ts.is_empty() {
        return Err(usage(
            "--threshold: checks one load; --knee reports the knee itself",
        ));
    }
    if args.save || args.hdr_log.is_some() {
        return Err(usage(
            "--knee cannot be combined with --save or --hdr-log yet: the steps and the knee are printed (and in --json)",
        ));
    }
    let (start, max) = (
        args.start_rate.unwrap_or(100.0),
        args.max_rate.unwrap_or(1e6),
    );
    if max < start {
        return Err(usage(format!(
            "--max-rate {max}: must not be below --start-rate {start}"
        )));
    }
    if args.dump {
        return dump(args, cfg);
    }
    let _machine = crate::machine_lock::MachineLock::acquire(args.wait)?;
    let mut cfg = cfg.clone();
    // Each step as long as -d, by default 10 s.
    cfg.duration = args.duration.unwrap_or(DEFAULT_DURATION);
    // As the sweep suites' defaults: doubling, then four bisections.
    let sweep = knee::KneeSweep::new(knee::KneeSearch::new(start, max, 2.0, 4), objective);
    let stop = crate::interrupt::flag();
    let result = runner::knee_load::search(&cfg, sweep, |c| {
        if let LoadModel::ConstantRate { rps } = c.model {
            eprintln!("step: {} req/s offered", units::rate(rps));
        }
        let mut progress = progress_for(c);
        let o = fairbench_engine::run(c, stop.clone(), &mut progress);
        progress.finish();
        o
    });
    let result = match result {
        Ok(r) => r,
        Err(RunError::Config(e)) => return Err(usage(flag_error(&e))),
        Err(e) => anyhow::bail!(
            "{}",
            tls_error::in_words(&e.to_string(), args.cacert.is_some())
        ),
    };
    if crate::args::wants_json(args.format, args.json) {
        let v = serde_json::json!({
            "fairbench_version": env!("CARGO_PKG_VERSION"),
            "url": args.url,
            "knee": result,
        });
        println!("{}", terminal::json(&serde_json::to_string_pretty(&v)?));
    } else {
        print!("{}", terminal::text(&result.text(&args.url)));
    }
    for st in &result.steps {
        for w in &st.warnings {
            eprintln!("WARNING: {} req/s step: {w}", units::rate(st.offered_rps));
        }
    }
    if crate::interrupt::interrupted() {
        eprintln!("interrupted: the knee is of the steps measured");
        return Ok(130);
    }
    if result.steps.iter().all(|s| s.answered_rps == 0.0) {
        eprintln!("fairbench: no request was answered");
        return Ok(1);
    }
    Ok(0)
}

/// `thresholds` in the JSON, when any were given.
fn add_verdicts(v: &mut serde_json::Value, verdicts: &[thresholds::Verdict]) {
    if let (false, Some(m)) = (verdicts.is_empty(), v.as_object_mut()) {
        m.insert("thresholds".into(), thresholds::json(verdicts));
    }
}

/// A run that finished but failed a threshold exits with its own code.
fn with_verdicts(code: i32, verdicts: &[thresholds::Verdict]) -> i32 {
    if code == 0 && verdicts.iter().any(|v| !v.pass) {
        thresholds::EXIT_FAILED
    } else {
        code
    }
}

/// 130 when interrupted; 1 when nothing was answered: a load that measured
/// no answer is a failed run, whatever else it printed.
fn exit_code(o: &fairbench_engine::Outcome) -> i32 {
    if o.interrupted {
        130
    } else if o.requests == 0 {
        eprintln!("fairbench: no request was answered");
        1
    } else {
        0
    }
}

/// `--save`: the result stored as a run of one case. A load nothing
/// answered is not stored: there is no figure to keep.
fn save(
    args: &LoadArgs,
    cfg: &LoadConfig,
    o: &fairbench_engine::Outcome,
    log: SampleLog,
) -> anyhow::Result<()> {
    if !args.save {
        return Ok(());
    }
    if o.requests == 0 {
        eprintln!("fairbench: not saved: no request was answered");
        return Ok(());
    }
    let argv: Vec<String> = std::env::args().collect();
    let run = adhoc::save(&args.db, &argv, cfg, o, log.samples)?;
    eprintln!(
        "saved as run {run} in {} (`fairbench show {run} --db {}`)",
        args.db.display(),
        args.db.display()
    );
    Ok(())
}

/// Runs `f` with the progress display, plus the per-second series when
/// saving and the HDR interval log if asked.
fn with_observers<R>(
    args: &LoadArgs,
    progress: &mut LoadProgress,
    log: &mut SampleLog,
    f: impl FnOnce(&mut dyn Observer) -> R,
) -> anyhow::Result<R> {
    let Some(path) = &args.hdr_log else {
        if args.save {
            return Ok(f(&mut Fanout(vec![progress as &mut dyn Observer, log])));
        }
        return Ok(f(progress));
    };
    let mut file = std::fs::File::create(path)
        .with_context(|| format!("--hdr-log: cannot create {}", path.display()))?;
    let mut ser = V2DeflateSerializer::new();
    let series = log;
    let mut log = HdrLog::begin(&mut file, &mut ser, &format!("fairbench load {}", args.url))
        .with_context(|| format!("--hdr-log: cannot write {}", path.display()))?;
    let result = {
        let mut fan = Fanout(vec![progress as &mut dyn Observer, &mut log]);
        if args.save {
            fan.0.push(series);
        }
        f(&mut fan)
    };
    if let Some(e) = &log.error {
        eprintln!("fairbench: warning: --hdr-log {}: {e}", path.display());
    }
    Ok(result)
}

/// The load split over several generators (namespaces, ssh hosts, or
/// processes here), started together and merged exactly.
fn run_fleet(
    args: &LoadArgs,
    cfg: &LoadConfig,
    thresholds: &[thresholds::Threshold],
) -> anyhow::Result<i32> {
    // The flags' own bounds first (--clients at most 64), then the split.
    args.place.check(None)?;
    let n = match args.place.client_hosts.len() {
        0 => args.place.clients,
        hosts => hosts,
    };
    if cfg.connections < n {
        return Err(usage(format!(
            "--connections: {} cannot be split over {n} load generators",
            cfg.connections
        )));
    }
    let layout = Layout::for_load(&args.place)?;
    for n in &layout.notes {
        eprintln!("{n}");
    }
    eprintln!("{}", layout.summary());
    if cfg.target.addr.ip().is_loopback() && layout.kind == crate::topology::TopologyKind::Ssh {
        let here = host::local_info().boot_id;
        if let Some(c) = layout.clients.iter().find(|c| c.info.boot_id != here) {
            return Err(usage(format!(
                "the URL names loopback, which on {} is that machine itself: give the server's address as the load generators see it",
                c.host.label()
            )));
        }
    }
    let cpus = args.cpus.clone().map(|c| c.0);
    let sites = crate::runner::placement::load_sites(&layout, cpus.as_deref());
    // In a namespace, this machine's loopback is the far end of the link.
    let aim = if layout.kind == crate::topology::TopologyKind::Netns
        && cfg.target.addr.ip().is_loopback()
    {
        Aim::EachSite
    } else {
        Aim::AsGiven
    };
    let jobs = split(cfg, &layout, &sites, args.threads, aim)
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .jobs;
    let stop = crate::interrupt::flag();
    let mut progress = progress_for(cfg);
    let mut log = SampleLog::default();
    let result = with_observers(args, &mut progress, &mut log, |obs| {
        fleet::run(jobs, stop, obs)
    })?;
    progress.finish();
    let f = match result {
        Ok(f) => f,
        Err(fleet::FleetError::Interrupted) => {
            eprintln!("interrupted before the load started");
            return Ok(130);
        }
        Err(e) => {
            let mut m = e.to_string();
            if layout.kind == crate::topology::TopologyKind::Netns && m.contains("cannot connect") {
                m.push_str(" (with --topology netns the load reaches this machine over a veth link, not loopback: the server must listen on the any address, 0.0.0.0 or [::])");
            }
            anyhow::bail!("{m}")
        }
    };
    let verdicts = thresholds::check_all(thresholds, &f.merged);
    if crate::args::wants_json(args.format, args.json) {
        let mut v = fleet_json(args, &layout, &f)?;
        add_verdicts(&mut v, &verdicts);
        println!("{}", terminal::json(&serde_json::to_string_pretty(&v)?));
    } else {
        print!(
            "{}",
            terminal::text(&summary::render(&args.url, &f.merged, &view(args)))
        );
        print!("{}", terminal::text(&clients_text(&f)));
        print!("{}", terminal::text(&thresholds::table(&verdicts)));
    }
    layout.teardown();
    save(args, cfg, &f.merged, log)?;
    Ok(with_verdicts(exit_code(&f.merged), &verdicts))
}

/// Each generator's own figures under the merged summary.
fn clients_text(f: &FleetOutcome) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nLoad generators ({}; merged exactly above: counts summed, histograms added):",
        f.parts.len()
    );
    for (i, p) in f.parts.iter().enumerate() {
        let o = &p.outcome;
        let l = o.latency_summary();
        let _ = writeln!(
            s,
            "  #{i} {}  {}  c={} t={}  {} requests = {} req/s  p50 {}  p99 {}  errors {}",
            p.host,
            p.config.target.url,
            o.connections,
            o.threads,
            units::count(o.requests),
            units::rate(o.rps()),
            units::micros(l.p50 as f64),
            units::micros(l.p99 as f64),
            units::count(o.errors.total())
        );
    }
    for w in &f.warnings {
        let _ = writeln!(s, "WARNING: {w}");
    }
    s
}

/// The merged result in the `load --json` schema, plus `clients` (each
/// generator's part) and `topology`.
fn fleet_json(
    args: &LoadArgs,
    layout: &Layout,
    f: &FleetOutcome,
) -> anyhow::Result<serde_json::Value> {
    let pcts = &args.percentiles.0;
    let mut v = serde_json::to_value(LoadJson::new(&args.url, &f.merged, pcts))?;
    let clients: Vec<serde_json::Value> = f
        .parts
        .iter()
        .map(|p| {
            let mut c = serde_json::to_value(LoadJson::new(&p.config.target.url, &p.outcome, pcts))
                .unwrap_or_default();
            if let Some(m) = c.as_object_mut() {
                m.insert("host".into(), p.host.clone().into());
                m.insert("warnings".into(), serde_json::json!(p.warnings));
            }
            c
        })
        .collect();
    if let Some(m) = v.as_object_mut() {
        m.insert("clients".into(), clients.into());
        m.insert("topology".into(), layout.describe());
        if let Some(w) = m.get_mut("warnings").and_then(|w| w.as_array_mut()) {
            w.extend(
                f.warnings
                    .iter()
                    .map(|x| serde_json::Value::from(x.clone())),
            );
        }
    }
    Ok(v)
}

fn config(args: &LoadArgs) -> anyhow::Result<LoadConfig> {
    let target = Target::parse(&args.url)
        .map_err(|e| usage(migrant::url_hint(&args.url).unwrap_or_else(|| e.to_string())))?;
    let mut cfg = LoadConfig::new(target);
    cfg.connections = args.connections;
    // One load thread per CPU it is given, unless told otherwise.
    match (args.threads, &args.cpus) {
        (Some(t), _) => cfg.threads = t,
        (None, Some(cpus)) => cfg.threads = cpus.len(),
        (None, None) => {}
    }
    cfg.duration = match (args.duration, args.requests) {
        (Some(d), _) => d,
        (None, None) => DEFAULT_DURATION,
        // As long as the requests take: the bound is only a safety net.
        (None, Some(_)) => REQUESTS_BOUND,
    };
    cfg.requests = args.requests;
    cfg.keepalive = !args.no_keepalive;
    cfg.expect_status = StatusSet::parse(&args.expect_status).map_err(|e| usage(flag_error(&e)))?;
    cfg.tls = TlsOptions {
        insecure: args.insecure,
        ca_pem: match &args.cacert {
            Some(p) => Some(
                std::fs::read(p)
                    .map_err(|e| usage(format!("--cacert: cannot read {}: {e}", p.display())))?,
            ),
            None => None,
        },
    };
    cfg.warmup = args.warmup;
    cfg.timeout = args.timeout;
    cfg.timeout_mode = args.timeout_mode;
    cfg.pipeline = args.pipeline;
    if args.http2 {
        cfg.protocol = Protocol::h2_for(cfg.target.tls);
    }
    cfg.streams = args.streams.unwrap_or(DEFAULT_STREAMS);
    cfg.send_ahead = args.send_ahead;
    cfg.cpus = args.cpus.clone().map(|c| c.0);
    cfg.model = match args.rate {
        None => LoadModel::ClosedLoop,
        Some(rps) => LoadModel::ConstantRate { rps },
    };
    if let Some(stages) = &args.stages {
        // Planned like -R at the peak; the pacer follows the profile.
        let peak = stages.iter().map(|s| s.from.max(s.to)).fold(0.0, f64::max);
        cfg.model = LoadModel::ConstantRate { rps: peak };
        cfg.duration = stages.iter().map(|s| s.duration).sum();
        cfg.stages = Some(stages.clone());
    }
    let mut headers = Vec::new();
    for h in &args.headers {
        headers.push(RequestSpec::parse_header(h).map_err(|e| usage(flag_error(&e)))?);
    }
    let body = match (&args.body, &args.body_file) {
        (Some(b), _) => b.clone().into_bytes(),
        (None, Some(p)) => std::fs::read(p)
            .map_err(|e| usage(format!("--body-file: cannot read {}: {e}", p.display())))?,
        (None, None) => Vec::new(),
    };
    cfg.request = RequestSpec {
        method: args.method.clone(),
        headers,
        body,
    };
    if args.targets.is_some() && args.method != "GET" {
        return Err(usage(
            "--method: with --targets each target says its method (method = \"POST\")",
        ));
    }
    cfg.mix = crate::mix::for_load(
        &args.url,
        args.targets.as_deref(),
        &cfg.request,
        args.pool,
        args.seed,
    )
    .map_err(usage)?;
    cfg.validate().map_err(|e| usage(flag_error(&e)))?;
    let generators = args.place.client_hosts.len().max(args.place.clients);
    bounds::connections_fit(cfg.connections, generators)
        .map_err(|m| usage(format!("--connections: {m}")))?;
    if args.cacert.is_some() && args.insecure {
        return Err(usage(
            "--cacert and --insecure: choose one (--insecure accepts any certificate)",
        ));
    }
    // Serialising also validates the method.
    cfg.request
        .serialize(&cfg.target)
        .map_err(|e| usage(flag_error(&e)))?;
    Ok(cfg)
}

/// `--stages`' value (clap takes a `Vec` for a list of values).
pub type Stages = Vec<fairbench_engine::RateStage>;

const DEFAULT_DURATION: Duration = Duration::from_secs(10);
/// With `-n` and no `-d`: the longest run the engine takes (30 days).
const REQUESTS_BOUND: Duration = Duration::from_secs(30 * 86_400);

/// How the summary is shown.
fn view(args: &LoadArgs) -> summary::View<'_> {
    summary::View {
        spectrum: args.latency,
        percentiles: &args.percentiles.0,
    }
}

/// A bar over the run's time, or over its requests when only `-n` ends it.
fn progress_for(cfg: &LoadConfig) -> LoadProgress {
    match (cfg.requests, cfg.duration) {
        (Some(n), d) if d == REQUESTS_BOUND => LoadProgress::counting(n),
        _ => LoadProgress::new(cfg.warmup + cfg.duration),
    }
}

/// `--dump`: one request, its bytes and the answer's as exchanged.
fn dump(args: &LoadArgs, cfg: &LoadConfig) -> anyhow::Result<i32> {
    if cfg.protocol.is_h2() {
        return dump_h2(args, cfg);
    }
    // With a mix, its first prepared request.
    let request = match cfg.mix.as_ref().and_then(|m| m.requests.first()) {
        Some(r) => {
            let mut t = cfg.target.clone();
            t.path.clone_from(&r.path);
            let spec = RequestSpec {
                method: r.method.clone(),
                headers: r.headers.clone(),
                body: r.body.clone(),
            };
            spec.serialize(&t)?
        }
        None => cfg.request.serialize(&cfg.target)?,
    };
    let t = &cfg.target;
    let mut conn = fairbench_engine::dial::dial(t, &cfg.tls, cfg.timeout)
        .map_err(|m| anyhow::anyhow!("{}", tls_error::in_words(&m, args.cacert.is_some())))?;
    let start = std::time::Instant::now();
    let result = fetch::exchange(&mut conn, &request, start, cfg.timeout, |c, d| {
        c.set_read_timeout(Some(d))
    });
    let reached = conn.peer().unwrap_or(t.addr);
    let over = match conn.alpn() {
        Some(p) => format!("TLS, ALPN {p}"),
        None if t.tls => "TLS, no ALPN".to_string(),
        None => "plain".to_string(),
    };
    let (interim, response, error) = match &result {
        Ok(r) => (r.interim.clone(), r.bytes.clone(), None),
        Err(e) => (Vec::new(), e.partial().to_vec(), Some(e.to_string())),
    };
    let x = RawExchange {
        addr: reached.to_string(),
        request,
        interim,
        response,
        error,
    };
    print!(
        "{}",
        check_report::exchange_text(&format!("{} ({reached}, {over})", args.url), &x)
    );
    match result {
        Ok(r) if !cfg.expect_status.contains(r.status) => {
            eprintln!(
                "fairbench: status {} is not expected (--expect-status {})",
                r.status, cfg.expect_status
            );
            Ok(1)
        }
        Ok(_) => Ok(0),
        Err(_) => Ok(1),
    }
}

/// `--dump --http2`: one request on stream 1, every frame exchanged decoded.
fn dump_h2(args: &LoadArgs, cfg: &LoadConfig) -> anyhow::Result<i32> {
    let mut t = cfg.target.clone();
    let spec = match cfg.mix.as_ref().and_then(|m| m.requests.first()) {
        Some(r) => {
            t.path.clone_from(&r.path);
            RequestSpec {
                method: r.method.clone(),
                headers: r.headers.clone(),
                body: r.body.clone(),
            }
        }
        None => cfg.request.clone(),
    };
    let mut conn = fairbench_engine::dial::dial_as(&t, &cfg.tls, cfg.protocol, cfg.timeout)
        .map_err(|m| anyhow::anyhow!("{}", tls_error::in_words(&m, args.cacert.is_some())))?;
    let reached = conn.peer().unwrap_or(t.addr);
    let over = match conn.alpn() {
        Some(p) if p == "h2" => "TLS, ALPN h2".to_string(),
        Some(p) => anyhow::bail!(
            "{} ({reached}) does not speak h2: offered h2 and http/1.1 by ALPN, it chose {p:?}",
            t.host
        ),
        None if t.tls => anyhow::bail!(
            "{} ({reached}) does not speak h2: offered h2 and http/1.1 by ALPN, it chose none",
            t.host
        ),
        None => "h2c, prior knowledge".to_string(),
    };
    let d = fairbench_engine::h2::dump::exchange(&mut conn, &spec, &t, cfg.timeout);
    println!("{} ({reached}, {over})", args.url);
    for l in &d.lines {
        println!("{l}");
    }
    if let Some(e) = &d.error {
        eprintln!("fairbench: {e}");
        return Ok(1);
    }
    match d.status {
        Some(s) if cfg.expect_status.contains(s) => Ok(0),
        Some(s) => {
            eprintln!(
                "fairbench: status {s} is not expected (--expect-status {})",
                cfg.expect_status
            );
            Ok(1)
        }
        None => Ok(1),
    }
}

/// Engine settings are named like the long flags; point the user at the flag.
fn flag_error(e: &fairbench_engine::ConfigError) -> String {
    if e.field == "URL" {
        e.to_string()
    } else {
        format!("--{}: {}", e.field, e.message)
    }
}

fn timeout_mode(s: &str) -> Result<fairbench_engine::TimeoutMode, String> {
    fairbench_engine::TimeoutMode::parse(s)
}
