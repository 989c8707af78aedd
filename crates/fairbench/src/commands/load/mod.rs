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
use crate::fleet;
use crate::fleet::split::{split, Aim};
use crate::host;
use crate::output::load::clients;
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

mod config;
mod knee_search;
mod split_load;
mod vs;

use config::{config, flag_error, timeout_mode, DEFAULT_DURATION, REQUESTS_BOUND};
use knee_search::run_knee;
use split_load::run_fleet;
use vs::run_vs;

/// `--stages`' value (clap takes a `Vec` for a list of values).
pub type Stages = Vec<fairbench_engine::RateStage>;

// Its doc comments are --help text, written for the terminal, not rustdoc.
#[allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]
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
    /// two times. A wider window costs less CPU per request, but the requests due within it
    /// go out together, and a server's queueing among them is in its latency; 0 sends each at
    /// its time, paying a wake-up per request (docs/load-json.md, "Sending ahead").
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
    /// Also write the JSON document (as --json prints it) to FILE, whatever
    /// is printed: the summary for a CI log, the JSON for its artefacts.
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,
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
        return runner::dump::dump(&args.url, &cfg, args.cacert.is_some());
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
    let as_json = || -> anyhow::Result<String> {
        let mut v = serde_json::to_value(LoadJson::new(&args.url, &outcome, &args.percentiles.0))?;
        add_verdicts(&mut v, &verdicts);
        Ok(serde_json::to_string_pretty(&v)?)
    };
    if crate::args::wants_json(args.format, args.json) {
        println!("{}", terminal::json(&as_json()?));
    } else {
        print!(
            "{}",
            terminal::text(&summary::render(&args.url, &outcome, &view(args)))
        );
        print!("{}", terminal::text(&thresholds::table(&verdicts)));
    }
    save(args, &cfg, &outcome, log)?;
    // Once the figures are printed and saved: a file that cannot be
    // written loses nothing measured.
    if let Some(path) = &args.export_json {
        crate::report::write_atomic(path, format!("{}\n", as_json()?).as_bytes())
            .map_err(|e| anyhow::anyhow!("--export-json: {e:#}"))?;
    }
    Ok(with_verdicts(exit_code(&outcome), &verdicts))
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
