//! `fairbench load --json`: the schema documented in docs/load-json.md.

use fairbench_engine::{
    ErrorCounts, H2Report, LatencySummary, Ledger, LoadModel, Outcome, Protocol, Schedule,
    SecondSample, Sockets, Throughput,
};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Serialize)]
pub struct LoadJson<'a> {
    pub fairbench_version: &'static str,
    pub url: &'a str,
    /// The address measured: the first of the URL's that accepted a
    /// connection, or `unix:PATH` (`--unix-socket`).
    pub address: &'a str,
    /// What the answers' arrival times were taken from: "kernel_stamp" or
    /// "read" (closed loop; a unix socket, which the kernel does not stamp).
    pub answer_clock: fairbench_engine::AnswerClock,
    /// A constant rate over TCP whose answers came without the kernel's
    /// receive stamps: the requests that may have been read late before
    /// that was seen (the rest woke the thread); absent when stamps came.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unstamped_late_reads: Option<u64>,
    /// `--proxy`: the proxy in the path (`http://host:port`, never its
    /// credentials), whose own time is in every latency; null without one.
    pub proxy: Option<&'a str>,
    /// "closed" or "rate".
    pub mode: &'static str,
    pub connections: usize,
    pub threads: usize,
    pub pipeline: usize,
    /// "http/1.1", "h2c", "h2" or "h3".
    pub protocol: Protocol,
    /// HTTP/2 runs only (left out otherwise): settings sent, the server's
    /// stream limit, resets, GOAWAYs and protocol errors by kind.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http2: Option<&'a H2Report>,
    /// HTTP/3 runs only (left out otherwise): handshakes, resets, closes
    /// and GOAWAYs by code, packets sent and lost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http3: Option<&'a fairbench_engine::H3Report>,
    /// false: a new connection per request (`--no-keepalive`).
    pub keepalive: bool,
    pub warmup_s: f64,
    /// `--warmup auto` only: how long it took and whether it ended steady.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto_warmup: Option<&'a fairbench_engine::warmup::WarmupVerdict>,
    pub duration_s: f64,
    pub timeout_s: f64,
    /// Every request of the measured window and how it ended:
    /// planned = answered + connect + write + read + parse + timeout + unanswered.
    pub ledger: Ledger,
    /// Answered requests of the window (= ledger.answered).
    pub requests: u64,
    /// Answers that arrived within the window, whenever planned.
    pub answered_in_window: u64,
    /// requests / duration_s, or answered_in_window / duration_s when the
    /// server fell behind a constant rate (`Outcome::throughput_answers`).
    pub rps: f64,
    pub throughput: Throughput,
    /// Every request of the window: answered ones from their planned time,
    /// unanswered ones as at least the timeout.
    pub latency_us: LatencySummary,
    /// The percentiles asked for (`--percentiles`) of `latency_us`'s
    /// distribution, keyed as written ("50", "99.9").
    pub latency_percentiles_us: BTreeMap<String, u64>,
    /// Answered requests only.
    pub answered_latency_us: LatencySummary,
    /// Answers with an expected status only; `None` when none had another.
    pub expected_latency_us: Option<LatencySummary>,
    pub uncorrected_latency_us: LatencySummary,
    pub send_lateness_us: Option<LatencySummary>,
    pub schedule: Option<&'a Schedule>,
    pub errors: ErrorCounts,
    /// Answers of the window per status code, e.g. {"200": 9812, "503": 12}.
    pub status_codes: &'a BTreeMap<u16, u64>,
    pub body_sizes: super::json_bodies::BodySizesJson<'a>,
    /// The statuses that counted as success; any other is `errors.status`.
    pub expect_status: &'a str,
    pub connections_stats: Sockets,
    /// Time to open each connection (TCP connect; through a proxy's
    /// tunnel, its CONNECT exchange too).
    pub connect_time_us: LatencySummary,
    /// Time of each TLS handshake after the connect; null for http://.
    pub tls_handshake_us: Option<LatencySummary>,
    pub bytes_read: u64,
    /// Timeouts (`ledger.timeout`) per million planned requests, counted as
    /// `timeout_mode` says.
    pub timeouts_per_million: f64,
    /// "fairbench": a request is aborted at its timeout and its connection
    /// reopened; "wrk": an answer after the timeout counts as a timeout and
    /// its connection is kept.
    pub timeout_mode: &'static str,
    /// Answers that came after the timeout, counted among the timeouts
    /// (wrk's counting only; 0 otherwise).
    pub late_answers: u64,
    /// wrk's Thread Stats "Req/Sec": each load thread's answers per 100 ms
    /// interval, as requests per second; null when no interval was sampled.
    pub thread_req_sec: Option<ThreadReqSecJson>,
    /// What wrk 4.x would print (its latency after its own correction, in
    /// µs, and its request count, late answers included): closed loop with
    /// `timeout_mode` "wrk" only, null otherwise. Never fairbench's figure.
    pub wrk: Option<fairbench_engine::WrkFigures>,
    pub generator_cpu_s: f64,
    pub generator_cpu_us_per_request: Option<f64>,
    pub generator_busy_fraction: f64,
    pub generator_thread_busy: &'a [f64],
    /// The largest share of the window a load thread waited for its CPU.
    pub generator_wait_fraction: f64,
    /// `generator_wait_fraction` ≥ 5 %: something else ran on the
    /// generator's CPUs; throughput is a lower bound.
    pub generator_contended: bool,
    /// A CPU quota paused the load threads: for how long, and on which
    /// control group; absent when none did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generator_quota_pause: Option<&'a fairbench_engine::QuotaPause>,
    /// The generator's process did not run at all for stretches of the
    /// window (stopped, frozen, a paused VM); absent when it always ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generator_stalled: Option<&'a fairbench_engine::Stalled>,
    /// Share of the machine's CPU time stolen by the hypervisor during the run.
    pub host_steal_fraction: Option<f64>,
    /// Share of the run some task on the machine stalled on memory (PSI);
    /// absent where the kernel does not say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_memory_stall_fraction: Option<f64>,
    /// Closed loop: the longest stretch of the window in which no answer
    /// came at all, which its percentiles hide; absent otherwise, or when
    /// there was none of 20 ms or more.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub longest_silence: Option<SilenceJson>,
    pub saturated: bool,
    pub interrupted: bool,
    pub warnings: Vec<String>,
    pub series: &'a [SecondSample],
    /// Per target name of a request mix (`--targets`, templates); left out
    /// without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub targets: Option<Vec<super::json_targets::TargetJson<'a>>>,
    /// Per stage of `--stages`, by planned time; left out without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stages: Option<Vec<super::json_targets::TargetJson<'a>>>,
}

impl<'a> LoadJson<'a> {
    pub fn new(url: &'a str, o: &'a Outcome, percentiles: &[f64]) -> LoadJson<'a> {
        LoadJson {
            fairbench_version: env!("CARGO_PKG_VERSION"),
            url,
            address: &o.address,
            answer_clock: o.answer_clock,
            unstamped_late_reads: o.generator.unstamped,
            proxy: o.proxy.as_deref(),
            mode: match o.model {
                LoadModel::ClosedLoop => "closed",
                LoadModel::ConstantRate { .. } => "rate",
            },
            connections: o.connections,
            threads: o.threads,
            pipeline: o.pipeline,
            protocol: o.protocol,
            http2: o.h2.as_ref(),
            http3: o.h3.as_ref(),
            keepalive: o.keepalive,
            warmup_s: o.warmup_s,
            auto_warmup: o.auto_warmup.as_ref(),
            duration_s: o.measured_s,
            timeout_s: o.timeout_s,
            ledger: o.ledger(),
            requests: o.requests,
            answered_in_window: o.arrived,
            rps: o.rps(),
            throughput: o.throughput(),
            latency_us: o.latency_summary(),
            latency_percentiles_us: percentiles
                .iter()
                .map(|&p| {
                    let v = if o.latency.is_empty() {
                        0
                    } else {
                        o.latency.value_at_quantile(p / 100.0)
                    };
                    (format!("{p}"), v)
                })
                .collect(),
            answered_latency_us: o.answered_summary(),
            expected_latency_us: o.expected_summary(),
            uncorrected_latency_us: o.uncorrected_summary(),
            send_lateness_us: o.lateness_summary(),
            schedule: o.schedule.as_ref(),
            errors: o.errors,
            status_codes: &o.status_codes,
            body_sizes: super::json_bodies::BodySizesJson::of(&o.body_sizes),
            expect_status: &o.expect_status,
            connections_stats: o.sockets,
            connect_time_us: o.connect_summary(),
            tls_handshake_us: o.handshake_summary(),
            bytes_read: o.bytes_read,
            timeouts_per_million: o.timeouts_per_million(),
            timeout_mode: o.timeout_mode.as_str(),
            late_answers: o.late_answers,
            thread_req_sec: ThreadReqSecJson::of(&o.thread_req_sec),
            wrk: o.wrk_figures(),
            generator_cpu_s: o.generator.cpu_s,
            generator_cpu_us_per_request: o.cpu_us_per_request(),
            generator_busy_fraction: o.generator.busy_fraction,
            generator_thread_busy: &o.generator.thread_busy,
            generator_wait_fraction: o.generator.wait_fraction,
            generator_contended: o.generator.contended,
            generator_quota_pause: o.generator.quota_pause.as_ref(),
            generator_stalled: o.generator.stalled.as_ref(),
            host_steal_fraction: o.generator.steal_fraction,
            host_memory_stall_fraction: o.generator.memory_stall_fraction,
            longest_silence: SilenceJson::of(o),
            saturated: o.generator.saturated,
            interrupted: o.interrupted,
            warnings: o.warnings(),
            series: &o.series,
            targets: super::json_targets::of(o, percentiles),
            stages: super::json_targets::stages(o, percentiles),
        }
    }
}

/// wrk's per-thread Req/Sec: mean, standard deviation (n − 1) and maximum
/// of every load thread's 100 ms rates.
#[derive(Serialize, Debug, Clone, Copy)]
pub struct ThreadReqSecJson {
    pub mean: f64,
    pub stdev: f64,
    pub max: f64,
    pub samples: u64,
}

/// The closed loop's longest silence (see `fairbench_engine::silence`).
#[derive(Serialize)]
pub struct SilenceJson {
    pub at_s: f64,
    pub duration_s: f64,
    pub truncated: bool,
}

impl SilenceJson {
    fn of(o: &Outcome) -> Option<SilenceJson> {
        if o.model != fairbench_engine::LoadModel::ClosedLoop {
            return None;
        }
        o.silences.longest().map(|(at_s, duration_s)| SilenceJson {
            at_s,
            duration_s,
            truncated: o.silences.truncated,
        })
    }
}

impl ThreadReqSecJson {
    pub fn of(r: &fairbench_engine::ThreadReqSec) -> Option<ThreadReqSecJson> {
        r.some().map(|r| ThreadReqSecJson {
            mean: r.mean,
            stdev: r.stdev(),
            max: r.max,
            samples: r.samples,
        })
    }
}
