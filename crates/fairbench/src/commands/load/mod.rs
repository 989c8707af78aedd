//! `fairbench load URL`: the load engine alone, like wrk, wrk2 or oha.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use fairbench_engine::{LoadConfig, Observer, RunError};
use hdrhistogram::serialization::V2DeflateSerializer;

use crate::args::{
    bounds, duration, parse_percentiles, parse_stages, positive_count, positive_duration,
    positive_usize, rate, CpuList, Percentiles,
};
use crate::output::load::hdr_log::HdrLog;
use crate::output::load::json::LoadJson;
use crate::output::load::summary;
use crate::output::load::tls_error;
use crate::output::metrics;
use crate::output::progress::{Fanout, LoadProgress};
use crate::report::json_doc::Doc;
use crate::runner;
use crate::runner::adhoc::{self, SampleLog};
use crate::runner::knee;
use crate::runner::stopping::Repetitions;
use crate::thresholds;
use crate::topology::{ClientArgs, TopologyKind};
use crate::usage_error::usage;

mod config;
mod emit;
mod knee_search;
mod split_load;
mod vs;

use config::{config, flag_error, timeout_mode, REQUESTS_BOUND};
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
    #[arg(help_heading = "Load model", short = 'c', long, default_value = "50", value_parser = bounds::connections)]
    pub connections: usize,
    /// Load threads, each with its own event loop [default: the CPUs this process may use]
    #[arg(help_heading = "Load model", short = 't', long, value_parser = bounds::threads)]
    pub threads: Option<usize>,
    /// How long to measure (e.g. 10s, 500ms, 2m) [default: 10s; with -n, as long as the N requests take]
    #[arg(help_heading = "Load model", short = 'd', long, value_parser = positive_duration)]
    pub duration: Option<Duration>,
    /// Stop after N requests of the measurement (ab's and oha's -n; e.g. 10000, 10k, 1.5M):
    /// N sent in closed loop, N due at constant rate. With -d too, whichever ends first.
    #[arg(help_heading = "Load model", short = 'n', long, value_name = "N", value_parser = positive_count)]
    pub requests: Option<u64>,
    /// A new connection for every request, closed by fairbench after the answer (ab
    /// without -k). Latency then includes the connect and any TLS handshake.
    #[arg(help_heading = "Load model", long, alias = "disable-keepalive")]
    pub no_keepalive: bool,
    /// https:// only: accept any certificate (self-signed, expired, for another name).
    #[arg(help_heading = "Connection and TLS", long)]
    pub insecure: bool,
    /// https:// only: trust the CA certificates in this PEM file instead of the system's.
    #[arg(help_heading = "Connection and TLS", long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// https:// only: the client certificate (PEM: RSA, ECDSA or Ed25519; a chain may
    /// follow it) for servers that ask for one (mTLS). Its private key comes from --key,
    /// or else from this same file when it holds one (as curl allows).
    #[arg(help_heading = "Connection and TLS", long, value_name = "FILE")]
    pub cert: Option<PathBuf>,
    /// https:// only: the private key of --cert (PEM: PKCS#8, RSA or EC; not encrypted).
    #[arg(help_heading = "Connection and TLS", long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// Connect to HOST2:PORT2 for the URL's HOST1:PORT1 (curl's form; an empty part
    /// matches any, or keeps the URL's): the URL's host still names the Host header, SNI
    /// and the certificate. Repeatable; applies to --vs URL_B too.
    #[arg(
        help_heading = "Connection and TLS",
        long = "connect-to",
        value_name = "HOST1:PORT1:HOST2:PORT2"
    )]
    pub connect_to: Vec<String>,
    /// Use ADDR (one or more, comma-separated) for HOST:PORT instead of looking the name
    /// up (curl's form). Repeatable.
    #[arg(
        help_heading = "Connection and TLS",
        long,
        value_name = "HOST:PORT:ADDR[,ADDR]"
    )]
    pub resolve: Vec<String>,
    /// Connect to the unix domain socket at PATH instead of the URL's host and port
    /// (curl's and oha's form): the http:// URL still gives the Host header and the path,
    /// e.g. --unix-socket /run/app.sock http://localhost/. Applies to the URL only, not to
    /// --vs URL_B, so --vs can compare the same server over TCP. Answers are timed when
    /// read: the kernel does not stamp a unix socket's arrivals.
    #[arg(
        help_heading = "Connection and TLS",
        long,
        value_name = "PATH",
        conflicts_with_all = ["connect_to", "resolve", "proxy", "proxy_from_env"]
    )]
    pub unix_socket: Option<PathBuf>,
    #[command(flatten)]
    pub proxy: crate::args::proxy::ProxyArgs,
    /// The statuses that count as success; any other is a status error. Codes, ranges
    /// and classes, e.g. 200,204,300-399 or 2xx.
    #[arg(
        help_heading = "Request",
        long,
        value_name = "LIST",
        default_value = crate::request_options::DEFAULT_EXPECT_STATUS
    )]
    pub expect_status: String,
    /// Run this long first without counting it (JIT warm-up, connection set-up); auto:
    /// until the server is steady, at most 30s (auto:CEILING for another ceiling).
    #[arg(help_heading = "Load model", long, value_name = "DURATION|auto[:CEILING]", default_value = "0s", value_parser = crate::args::warmup)]
    pub warmup: crate::args::Warmup,
    /// A request without an answer after this long is aborted and counted as a timeout
    /// (see --timeout-mode).
    #[arg(help_heading = "Load model", long, default_value = "2s", value_parser = positive_duration)]
    pub timeout: Duration,
    /// How a request past --timeout is counted: fairbench (aborted, its connection reopened)
    /// or wrk (awaited; an answer after the timeout counts as a timeout, the connection is kept).
    #[arg(help_heading = "Load model", long, value_name = "MODE", default_value = "fairbench", value_parser = timeout_mode)]
    pub timeout_mode: fairbench_engine::TimeoutMode,
    /// Constant rate in requests per second, in total (e.g. 500, 10k): latency is measured from
    /// when each request was due (wrk2 semantics). Without it: closed loop.
    #[arg(help_heading = "Load model", short = 'R', long, allow_negative_numbers = true, value_parser = rate)]
    pub rate: Option<f64>,
    /// A rate profile instead of -R and -d: stages DURATION:RATE (a step) or DURATION:FROM-TO
    /// (a linear ramp), e.g. 10s:1k,30s:1k-20k,10s:20k; planned like -R (latency from each
    /// request's planned time), broken down by stage in the summary and --json.
    #[arg(help_heading = "Load model", long, value_name = "SPEC", value_parser = parse_stages, conflicts_with_all = ["rate", "duration", "requests"])]
    pub stages: Option<Stages>,
    /// With -R: how long before its planned time a request may go out when a load thread is
    /// awake anyway, e.g. 0, 10us, 100us (at most 1ms). Latency counts from the earlier of the
    /// two times. A wider window costs less CPU per request, but the requests due within it
    /// go out together, and a server's queueing among them is in its latency; 0 sends each at
    /// its time, paying a wake-up per request (docs/load-json.md, "Sending ahead").
    #[arg(help_heading = "Load model", long, value_name = "DURATION", default_value = "100us", value_parser = duration)]
    pub send_ahead: Duration,
    /// How plain HTTP/1.1 moves its bytes: auto (sends and receives batched through io_uring
    /// where the kernel allows it, else one system call each) or epoll (one system call each).
    #[arg(help_heading = "Load model", long, value_name = "MODE", default_value = "auto", value_parser = fairbench_engine::IoMode::parse)]
    pub io: fairbench_engine::IoMode,
    /// HTTP method.
    #[arg(help_heading = "Request", short = 'm', long, default_value = "GET")]
    pub method: String,
    /// Extra request header "Name: value" (repeatable).
    #[arg(help_heading = "Request", short = 'H', long = "header")]
    pub headers: Vec<String>,
    /// Request body.
    #[arg(help_heading = "Request", long, conflicts_with = "body_file")]
    pub body: Option<String>,
    /// Request body read from a file.
    #[arg(help_heading = "Request", long)]
    pub body_file: Option<PathBuf>,
    /// Many requests: a TOML file of [[target]] tables (method, path or url, headers, body or
    /// body_file, weight, name; templates such as {{seq}}, {{uniform 1 100}}, {{zipf 1.1 1 10000}},
    /// {{line ids.txt}}). Results are broken down by target name (docs/targets.md).
    #[arg(help_heading = "Request", long, value_name = "FILE", conflicts_with_all = ["body", "body_file"])]
    pub targets: Option<PathBuf>,
    /// With templates: how many requests to prepare before the run; the load threads send
    /// them in turn.
    #[arg(help_heading = "Request", long, value_name = "N", default_value = "10000", value_parser = positive_usize)]
    pub pool: usize,
    /// Seed of the templates' random values (and of the --vs order).
    #[arg(help_heading = "Request", long, value_name = "N", default_value = "1")]
    pub seed: u64,
    /// Before and after: load this second URL too, alternating with the first repetition by
    /// repetition (seeded order), and print the paired ratios B/A of req/s and latency
    /// percentiles with 95 % intervals and a verdict. The same URL twice: the noise floor.
    #[arg(
        help_heading = "Comparing, thresholds and the knee",
        long,
        value_name = "URL_B",
        conflicts_with_all = ["proxy", "proxy_from_env"]
    )]
    pub vs: Option<String>,
    /// With --vs: how many times each URL is loaded (at least 2 for an interval), or
    /// until:3%,max:20 to go on until every ratio is known to ±3 % or its verdict is
    /// settled (intervals then widened so that 95 % holds across the looks) [default: 5]
    #[arg(help_heading = "Comparing, thresholds and the knee", long, value_name = "N|until:P%,max:N", value_parser = Repetitions::parse)]
    pub repetitions: Option<Repetitions>,
    /// With --vs: the protocol URL_B is loaded over, http/1.1, h2c, h2 or h3, e.g. the same
    /// https:// URL with --http2 and --vs-protocol h3 for h2 against h3 [default: URL_A's]
    #[arg(
        help_heading = "Comparing, thresholds and the knee",
        long,
        value_name = "PROTOCOL"
    )]
    pub vs_protocol: Option<fairbench_engine::Protocol>,
    /// A pass/fail criterion checked after the run (repeatable): p99<20ms, errors<0.1%,
    /// rps>5k, timeouts=0, p99{item}<50ms (a target), ratio.p99<1.05 (with --vs). Printed as a
    /// table; any failure exits 99.
    #[arg(
        help_heading = "Comparing, thresholds and the knee",
        long = "threshold",
        value_name = "EXPR"
    )]
    pub thresholds: Vec<String>,
    /// Search the knee, as the `sweep` suites do: constant-rate steps of -d each (10s unless
    /// given), doubling from --start-rate until one misses this latency objective, then four
    /// bisections; the knee is the highest rate meeting it with no error and at least 90 %
    /// answered. E.g. p99<=20ms.
    #[arg(help_heading = "Comparing, thresholds and the knee", long, value_name = "OBJECTIVE", value_parser = knee::Objective::parse, conflicts_with_all = ["rate", "stages", "vs", "requests"])]
    pub knee: Option<knee::Objective>,
    /// With --knee: the first rate tried, in requests per second [default: 100]
    #[arg(help_heading = "Comparing, thresholds and the knee", long, value_name = "RATE", value_parser = rate)]
    pub start_rate: Option<f64>,
    /// With --knee: the highest rate tried [default: 1M]
    #[arg(help_heading = "Comparing, thresholds and the knee", long, value_name = "RATE", value_parser = rate)]
    pub max_rate: Option<f64>,
    /// Requests in flight per connection (HTTP/1.1 pipelining).
    #[arg(help_heading = "Load model", long, default_value = "1", value_parser = bounds::pipeline)]
    pub pipeline: usize,
    /// Speak HTTP/2: h2 chosen by ALPN on https:// URLs, h2c with prior knowledge on http://.
    #[arg(help_heading = "HTTP/2", long)]
    pub http2: bool,
    /// Speak HTTP/3 over QUIC (UDP) to an https:// URL, ALPN h3.
    #[arg(help_heading = "HTTP/2", long, conflicts_with = "http2")]
    pub http3: bool,
    /// With --http2 or --http3: requests (streams) in flight per connection, as h2load's -m; a
    /// server's lower SETTINGS_MAX_CONCURRENT_STREAMS wins [default: 1, so that -c is the same
    /// concurrency over HTTP/1.1, HTTP/2 and HTTP/3]
    #[arg(help_heading = "HTTP/2", long, value_name = "N")]
    pub streams: Option<usize>,
    /// With --http3: ask for 0-RTT resumption (tickets fetched first; requests sent as early data).
    #[arg(help_heading = "HTTP/2", long)]
    pub zero_rtt: bool,
    /// Pin the load threads to these CPUs, e.g. 0 or 0,2-3.
    #[arg(help_heading = "Placement", long, value_name = "LIST")]
    pub cpus: Option<CpuList>,
    /// Print the full latency percentile spectrum (every quarter "nine", as the report
    /// draws it, and the maximum).
    #[arg(help_heading = "Output", long, short_alias = 'L')]
    pub latency: bool,
    /// The percentiles the summary leads with, e.g. 50,90,99,99.9.
    #[arg(help_heading = "Output", long, value_name = "LIST", default_value = "50,90,99,99.9", value_parser = parse_percentiles)]
    pub percentiles: Percentiles,
    /// Send one request, print the request and the response bytes as exchanged, and exit.
    #[arg(help_heading = "Output", long)]
    pub dump: bool,
    /// text (the summary) or json (docs/load-json.md; its JSON Schema in docs/schemas/).
    #[arg(
        help_heading = "Output",
        long,
        value_enum,
        value_name = "FORMAT",
        default_value = "text"
    )]
    pub format: crate::args::TextFormat,
    /// Same as --format json.
    #[arg(
        help_heading = "Output",
        long,
        short_alias = 'j',
        conflicts_with = "format"
    )]
    pub json: bool,
    /// Also write the JSON document (as --json prints it, --vs and --knee
    /// included; the error document if the run fails) to FILE, whatever is
    /// printed: the summary for a CI log, the JSON for its artefacts.
    #[arg(help_heading = "Output", long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,
    /// Also write the result as CSV to FILE: the per-second series (with
    /// --vs each repetition of each side, with --knee each step).
    #[arg(help_heading = "Output", long, value_name = "FILE")]
    pub export_csv: Option<PathBuf>,
    /// Also write a Markdown summary to FILE (a CI job's step summary).
    #[arg(help_heading = "Output", long, value_name = "FILE")]
    pub export_markdown: Option<PathBuf>,
    /// Store the result in the results database (--db) as a run of one case, for
    /// `show`, `report` and `compare`.
    #[arg(help_heading = "Output", long)]
    pub save: bool,
    /// The results database --save writes to.
    #[arg(
        help_heading = "Output",
        long,
        value_name = "PATH",
        default_value = "results.db"
    )]
    pub db: PathBuf,
    /// When another benchmark holds the machine, wait for it instead of refusing.
    #[arg(help_heading = "Placement", long)]
    pub wait: bool,
    /// Write per-second latency histograms to FILE as an HdrHistogram interval log.
    #[arg(help_heading = "Output", long, value_name = "FILE")]
    pub hdr_log: Option<PathBuf>,
    /// Serve live metrics while the load runs: GET http://ADDR/metrics answers OpenMetrics
    /// text for Prometheus, e.g. 127.0.0.1:9464 (port 0: a free one, printed on stderr).
    /// Not with --vs, --knee or a split load (docs/metrics.md).
    #[arg(help_heading = "Output", long, value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    /// With --metrics-listen: go on serving the final figures this long after the run, so
    /// that a scraper's last look sees them.
    #[arg(help_heading = "Output", long, value_name = "DURATION", default_value = "0s", value_parser = duration)]
    pub metrics_linger: Duration,
    #[command(flatten, next_help_heading = "Placement")]
    pub place: ClientArgs,
}

pub fn run(args: LoadArgs) -> anyhow::Result<i32> {
    // Export files that could never be written are refused before the
    // load, and then get no error document either.
    let writable = emit::check_targets(&args);
    let exportable = writable.is_ok();
    let result = writable.and_then(|()| run_load(&args));
    if let (Err(e), false) = (&result, args.dump) {
        if let Err(also) = emit::failure(&args, e, exportable) {
            eprintln!("fairbench: {also:#}");
        }
    }
    result
}

fn run_load(args: &LoadArgs) -> anyhow::Result<i32> {
    let cfg = config(args)?;
    let names = cfg.mix.as_ref().map_or(&[][..], |m| &m.names[..]);
    let thresholds =
        thresholds::parse_all(&args.thresholds, names, args.vs.is_some()).map_err(usage)?;
    if args.dump && args.http3 {
        return Err(usage(DUMP_H3));
    }
    if args.metrics_listen.is_some() && (args.vs.is_some() || args.knee.is_some() || args.dump) {
        return Err(usage(
            "--metrics-listen: serves a plain load's figures; not with --vs, --knee or --dump",
        ));
    }
    if args.vs.is_none() && args.vs_protocol.is_some() {
        return Err(usage("--vs-protocol: the protocol of --vs URL_B"));
    }
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
        if args.metrics_listen.is_some() {
            return Err(usage(
                "--metrics-listen: not with a load split over generators",
            ));
        }
        if let Some(via) = &cfg.target.proxy {
            return Err(usage(format!(
                "--proxy: {} serves one load generator on this machine only (not with --clients, --client-hosts or --topology)",
                via.proxy
            )));
        }
        return run_fleet(args, &cfg, &thresholds);
    }
    if p.link_rate.is_some() || p.link_delay.is_some() {
        return Err(usage(
            "--link-rate and --link-delay shape the virtual link of --topology netns",
        ));
    }
    let _metrics = metrics::start(args.metrics_listen.as_deref(), args.metrics_linger)?;
    metrics::begin(vec![("url", args.url.clone())], metrics::planned(&cfg));
    let stop = crate::interrupt::flag();
    let mut progress = progress_for(&cfg);

    let mut log = SampleLog::default();
    let mut live = metrics::Live;
    let mut watched = Fanout(vec![&mut progress as &mut dyn Observer, &mut live]);
    let (outcome, hdr) = with_observers(args, &mut watched, &mut log, |obs| {
        fairbench_engine::run(&cfg, stop, obs)
    })?;
    progress.finish();
    let outcome = match outcome {
        Ok(o) => {
            metrics::finish(&o);
            o
        }
        Err(RunError::Config(e)) => return Err(usage(flag_error(&e))),
        Err(e) => anyhow::bail!(
            "{}",
            tls_error::in_words(&e.to_string(), args.cacert.is_some())
        ),
    };

    let verdicts = thresholds::check_all(&thresholds, &outcome);
    let mut v = serde_json::to_value(LoadJson::new(&args.url, &outcome, &args.percentiles.0))?;
    add_verdicts(&mut v, &verdicts);
    emit::print(args, Doc::Load, &v, || {
        summary::render(&args.url, &outcome, &view(args)) + &thresholds::table(&verdicts)
    })?;
    save(args, &cfg, &outcome, log)?;
    hdr.write()?;
    emit::export(args, Doc::Load, &v)?;
    Ok(with_verdicts(exit_code(&outcome), &verdicts))
}

/// Why `--dump` does not speak HTTP/3: what crosses the wire is QUIC
/// packets, each encrypted with keys only the connection holds, so there
/// are no bytes "as exchanged" to print; the decoded frames would need a
/// one-request HTTP/3 exchange that prints them, which the engine has not.
const DUMP_H3: &str = "--dump: not over HTTP/3 (--http3): QUIC encrypts every packet, so there are no plain bytes as exchanged to print; use --dump with --http2 or HTTP/1.1 to see the request and answer";

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
/// saving and the HDR interval log if asked. The log is kept in memory
/// and written by [`HdrFile::write`] once the run is printed and saved,
/// as a report is ([`crate::report::write_atomic`]: through symlinks, never
/// half a file); a path it could never be written to is refused first.
fn with_observers<R>(
    args: &LoadArgs,
    progress: &mut dyn Observer,
    log: &mut SampleLog,
    f: impl FnOnce(&mut dyn Observer) -> R,
) -> anyhow::Result<(R, HdrFile)> {
    let Some(path) = &args.hdr_log else {
        if args.save {
            let r = f(&mut Fanout(vec![progress as &mut dyn Observer, log]));
            return Ok((r, HdrFile(None)));
        }
        return Ok((f(progress), HdrFile(None)));
    };
    crate::report::check_target(path).map_err(|e| anyhow::anyhow!("--hdr-log: {e:#}"))?;
    let mut bytes = Vec::new();
    let mut ser = V2DeflateSerializer::new();
    let series = log;
    let mut log = HdrLog::begin(
        &mut bytes,
        &mut ser,
        &format!("fairbench load {}", args.url),
    )
    .with_context(|| format!("--hdr-log: cannot write {}", path.display()))?;
    let result = {
        let mut fan = Fanout(vec![progress as &mut dyn Observer, &mut log]);
        if args.save {
            fan.0.push(series);
        }
        f(&mut fan)
    };
    if let Some(e) = log.error.take() {
        eprintln!("fairbench: warning: --hdr-log {}: {e}", path.display());
    }
    drop(log);
    Ok((result, HdrFile(Some((path.clone(), bytes)))))
}

/// The HDR interval log of a finished run, to be written.
#[must_use]
struct HdrFile(Option<(PathBuf, Vec<u8>)>);

impl HdrFile {
    fn write(self) -> anyhow::Result<()> {
        match self.0 {
            Some((path, bytes)) => crate::report::write_atomic(&path, &bytes)
                .map_err(|e| anyhow::anyhow!("--hdr-log: {e:#}")),
            None => Ok(()),
        }
    }
}

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
        _ => LoadProgress::new(
            cfg.warmup
                + cfg.warmup_auto.map_or(Duration::ZERO, |a| {
                    a.ceiling + fairbench_engine::warmup::RECONNECT
                })
                + cfg.duration,
        ),
    }
}
