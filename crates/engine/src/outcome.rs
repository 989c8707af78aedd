//! What a run measured.

use crate::bodies::BodySizes;
use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::config::LoadModel;
pub use crate::generator::{Generator, CONTENDED};
use crate::local_connects;
use crate::stats::{ErrorCounts, LatencySummary, Throughput};
use crate::status::StatusSet;

/// Whether a one-second interval belonged to the warm-up or the measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    Warmup,
    Measure,
    /// After the window: nothing new planned, outstanding requests awaited.
    Drain,
}

impl Phase {
    /// The name stored and printed: "warmup", "measure", "drain".
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Warmup => "warmup",
            Phase::Measure => "measure",
            Phase::Drain => "drain",
        }
    }
}

/// One interval of the per-second time series.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SecondSample {
    /// Interval index from the start of the measurement; warm-up intervals are
    /// negative.
    pub second: i64,
    pub phase: Phase,
    /// Start of the interval, seconds since the run (warm-up included) began.
    pub start_s: f64,
    /// Length of the interval in seconds (the last one may be shorter).
    pub duration_s: f64,
    pub requests: u64,
    pub errors: u64,
    pub bytes: u64,
    pub p50_us: u64,
    pub p99_us: u64,
}

impl SecondSample {
    pub fn rps(&self) -> f64 {
        if self.duration_s > 0.0 {
            self.requests as f64 / self.duration_s
        } else {
            0.0
        }
    }
}

/// One target name's share of the window (a run with a request mix): its
/// ledger, statuses and honest latency, counted exactly as the totals are,
/// so that the names add up to them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TargetOutcome {
    pub name: String,
    pub planned: u64,
    pub requests: u64,
    /// A target: answers to its requests that arrived within the window.
    /// A stage: answers that arrived within its span, whichever request
    /// they answered (see `Outcome::stage_rps`).
    #[serde(default)]
    pub arrived: u64,
    /// A stage: answers to its own requests that arrived within its span.
    #[serde(default)]
    pub answered_within: u64,
    pub errors: ErrorCounts,
    #[serde(default, with = "crate::status::keys_as_strings")]
    pub status_codes: BTreeMap<u16, u64>,
    /// The body sizes of its answers with an expected status.
    #[serde(default)]
    pub body_sizes: BodySizes,
    #[serde(with = "crate::histogram::as_hex")]
    pub latency: Histogram<u64>,
}

impl TargetOutcome {
    pub fn latency_summary(&self) -> LatencySummary {
        LatencySummary::of(&self.latency)
    }
}

/// How well a constant-rate schedule was kept.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Schedule {
    pub rate: f64,
    /// Requests due during the measurement window that went out.
    pub sent: u64,
    /// Requests due during the window that never went out: no connection had
    /// room for them before their timeout (or the end of an interrupted run).
    /// They are in the ledger as timeout, connect or unanswered.
    pub never_sent: u64,
    /// Requests for which no connection was free at their due time; their
    /// latency includes the wait, as it should, but the offered rate was
    /// limited by the connection count.
    pub waited_for_connection: u64,
    /// How far before its planned time a request was allowed to go out
    /// (`LoadConfig::send_ahead`), in µs.
    pub send_ahead_us: f64,
    /// Requests of the window that went out before their planned time (by at
    /// most `send_ahead_us`); their latency counts from the send.
    pub sent_early: u64,
    /// The most any request went out before its planned time, in µs: never
    /// more than `send_ahead_us`.
    #[serde(default)]
    pub early_max_us: f64,
    /// The generator's own lateness p99 exceeded 1 ms, or requests never went
    /// out.
    pub behind: bool,
}

/// Connection events, apart from the requests' ledger.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Sockets {
    /// Connections established.
    pub opened: u64,
    /// Connection attempts refused, failed or timed out.
    pub connect_failed: u64,
    /// Of those, the attempts that failed on this machine before any packet
    /// left it: no free local port (`EADDRNOTAVAIL`: fairbench's own closed
    /// connections held theirs in TIME_WAIT), no file descriptor, no kernel
    /// memory. The server never saw them; they are the generator's.
    #[serde(default)]
    pub connect_local: u64,
    /// Connections the server closed (after a `Connection: close` answer or
    /// at any other time) or reset.
    pub closed_by_server: u64,
    /// Responses that no request can own: they arrived with nothing in
    /// flight (a 408 sent before closing an idle connection, say), or before
    /// the request they would answer was sent. Each closed its connection,
    /// and no request was credited with it.
    pub unsolicited_responses: u64,
    /// Bytes that were not a whole response arrived on a connection with
    /// nothing in flight: the connection was closed and replaced, and no
    /// request was charged with them.
    #[serde(default)]
    pub stray_bytes: u64,
    /// Answers of the window credited shortly before an unsolicited
    /// response came on their connection: any of them may have been a
    /// stray taken for the answer, so they count as answered but are kept
    /// out of every latency figure.
    #[serde(default)]
    pub possibly_mistimed: u64,
    /// Answers on those connections before the ones taken back (older
    /// than the timeout, or beyond the most a connection holds): a stray
    /// taken for one of them would have made every later one late by a
    /// request, and they are in the latency figures.
    #[serde(default)]
    pub mistimed_left_in: u64,
    /// Requests sent a second time, with their planned time, because their
    /// connection closed or was reset before any byte of their answer came
    /// (a request crossing a server's idle close; RFC 9110 §9.2.2). Only
    /// idempotent methods, and only once: a second loss is an error.
    #[serde(default)]
    pub retried: u64,
    /// Connections fairbench closed after their answer (`--no-keepalive`).
    #[serde(default)]
    pub closed_by_client: u64,
    /// TLS handshakes completed, and how many of them resumed a session.
    #[serde(default)]
    pub tls_handshakes: u64,
    #[serde(default)]
    pub tls_resumed: u64,
    /// TLS handshakes that failed or did not end within the timeout.
    #[serde(default)]
    pub tls_failed: u64,
    /// Load threads whose plain HTTP/1.1 sends and receives went through
    /// io_uring (`--io auto` where the kernel allows it); the others made
    /// one system call each, as `--io epoll` asks.
    #[serde(default)]
    pub io_uring_threads: u64,
}

impl Sockets {
    pub fn add(&mut self, o: &Sockets) {
        self.opened += o.opened;
        self.connect_failed += o.connect_failed;
        self.connect_local += o.connect_local;
        self.closed_by_server += o.closed_by_server;
        self.unsolicited_responses += o.unsolicited_responses;
        self.stray_bytes += o.stray_bytes;
        self.possibly_mistimed += o.possibly_mistimed;
        self.mistimed_left_in += o.mistimed_left_in;
        self.retried += o.retried;
        self.closed_by_client += o.closed_by_client;
        self.tls_handshakes += o.tls_handshakes;
        self.tls_resumed += o.tls_resumed;
        self.tls_failed += o.tls_failed;
        self.io_uring_threads += o.io_uring_threads;
    }
}

/// planned = answered + each class of not answered, for the measured window.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct Ledger {
    pub planned: u64,
    pub answered: u64,
    pub connect: u64,
    pub tls: u64,
    pub write: u64,
    pub read: u64,
    pub parse: u64,
    pub timeout: u64,
    pub unanswered: u64,
}

impl Ledger {
    pub fn not_answered(&self) -> u64 {
        self.connect
            + self.tls
            + self.write
            + self.read
            + self.parse
            + self.timeout
            + self.unanswered
    }

    /// Holds by construction; a test and the JSON consumer can check it.
    pub fn balances(&self) -> bool {
        self.planned == self.answered + self.not_answered()
    }
}

fn yes() -> bool {
    true
}

fn default_expected() -> String {
    StatusSet::default().as_str().to_string()
}

/// Send lateness p99 above this (µs) is a generator that could not keep
/// its schedule.
pub const LATE_SEND_US: u64 = 1_000;

/// It travels whole (load agents send it as JSON, histograms encoded; see
/// [`crate::histogram`]), so a generator elsewhere reports exactly what one
/// here would.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Outcome {
    pub model: LoadModel,
    /// The protocol every connection spoke.
    #[serde(default)]
    pub protocol: crate::Protocol,
    /// HTTP/2 runs: the settings sent, the server's limits, and resets,
    /// GOAWAYs and protocol errors by kind (see [`crate::H2Report`]).
    #[serde(default)]
    pub h2: Option<crate::H2Report>,
    /// HTTP/3 runs: resets, closes and GOAWAYs by code, handshakes, and
    /// what QUIC did (see [`crate::H3Report`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub h3: Option<crate::H3Report>,
    pub connections: usize,
    pub threads: usize,
    pub pipeline: usize,
    /// The timeout every request had, from its planned time.
    pub timeout_s: f64,
    pub warmup_s: f64,
    /// Length of the measurement actually run (shorter when interrupted).
    pub measured_s: f64,
    /// Requests of the measured window: planned on the schedule (constant
    /// rate) or sent (closed loop). Each ended answered or in one class of
    /// `errors` (see [`Outcome::ledger`]).
    pub planned: u64,
    /// Requests of the window that were answered (any status).
    pub requests: u64,
    /// Answers that arrived within the window, whenever their request was
    /// planned. A server that falls behind a constant rate answers the
    /// window's last requests after it, in the drain: they are in
    /// `requests` and the latency, but crediting them to the window's
    /// seconds would show a rate the server never kept (see
    /// [`Outcome::throughput_answers`]).
    #[serde(default)]
    pub arrived: u64,
    pub bytes_read: u64,
    pub errors: ErrorCounts,
    /// The honest latency distribution: every request of the window, answered
    /// ones from the planned send time (constant rate) or the actual send
    /// (closed loop), unanswered ones as the time they waited but at least
    /// the timeout.
    #[serde(with = "crate::histogram::as_hex")]
    pub latency: Histogram<u64>,
    /// Answered requests only: the server's latency when it does answer.
    #[serde(with = "crate::histogram::as_hex")]
    pub answered_latency: Histogram<u64>,
    /// Of those, the answers with a status not expected (`crate::expected`).
    #[serde(
        default = "crate::histogram::new_histogram",
        with = "crate::histogram::as_hex"
    )]
    pub unexpected_latency: Histogram<u64>,
    /// Latency of answered requests from their actual send: the server's
    /// service time as wrk sees it.
    #[serde(with = "crate::histogram::as_hex")]
    pub uncorrected: Histogram<u64>,
    /// Actual send − planned send (constant rate only).
    #[serde(with = "crate::histogram::option_as_hex")]
    pub lateness: Option<Histogram<u64>>,
    /// Answers of the window per status code.
    #[serde(default, with = "crate::status::keys_as_strings")]
    pub status_codes: BTreeMap<u16, u64>,
    /// The body sizes of the window's answers with an expected status
    /// (see [`crate::bodies`]).
    #[serde(default)]
    pub body_sizes: BodySizes,
    /// The statuses that counted as success, as given (`200-399` unless
    /// told otherwise); any other is a status error.
    #[serde(default = "default_expected")]
    pub expect_status: String,
    /// Time to open each connection the run opened (TCP), warm-up and
    /// drain included.
    #[serde(
        with = "crate::histogram::as_hex",
        default = "crate::histogram::new_histogram"
    )]
    pub connect_time: Histogram<u64>,
    /// Time of each TLS handshake that completed, after the TCP connect
    /// (https:// only). Never part of a request's latency, except with
    /// `keepalive` off, where every request opens its own connection.
    #[serde(with = "crate::histogram::option_as_hex", default)]
    pub handshake_time: Option<Histogram<u64>>,
    /// Why the first TLS handshake that failed during the run failed.
    #[serde(default)]
    pub tls_error: Option<String>,
    /// Off: every request went over a connection of its own, opened for it
    /// and closed by fairbench after the answer; its latency includes the
    /// connect (and TLS handshake), as with ab.
    #[serde(default = "yes")]
    pub keepalive: bool,
    pub series: Vec<SecondSample>,
    pub generator: Generator,
    pub schedule: Option<Schedule>,
    pub sockets: Sockets,
    pub interrupted: bool,
    /// The address the load went to: the first of the URL's resolved
    /// addresses that accepted a connection.
    #[serde(default)]
    pub address: String,
    /// `--proxy`: the proxy every request went through (`http://host:port`,
    /// never its credentials), its own time in every latency; `address` is
    /// then the proxy's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<String>,
    /// Per target name, when the run sent a request mix; empty otherwise.
    #[serde(default)]
    pub targets: Vec<TargetOutcome>,
    /// Per stage of a rate profile (by planned time), named as given
    /// ("30s:1k-20k"); empty otherwise.
    #[serde(default)]
    pub stages: Vec<TargetOutcome>,
    /// The rate profile `stages` are of, in order.
    #[serde(default)]
    pub stage_plan: Vec<crate::profile::RateStage>,
    /// How requests past their timeout were counted (and whether aborted).
    #[serde(default)]
    pub timeout_mode: crate::config::TimeoutMode,
    /// Counted wrk's way: answers of the window that came at or after the
    /// timeout, counted among `errors.timeout` (0 counted fairbench's way).
    #[serde(default)]
    pub late_answers: u64,
    /// wrk's per-thread Req/Sec: each load thread's answers per 100 ms
    /// interval, as requests per second (see [`crate::thread_rate`]).
    #[serde(default)]
    pub thread_req_sec: crate::thread_rate::ThreadReqSec,
    /// Stretches of the window in which no answer came at all (see
    /// [`crate::silence`]): in a closed loop, the stalls its percentiles
    /// hide.
    #[serde(default)]
    pub silences: crate::silence::Silences,
    /// What the answers' arrival times were taken from.
    #[serde(default)]
    pub answer_clock: crate::endpoint::AnswerClock,
    /// `--warmup auto`: how long the warm-up took and whether it ended
    /// steady; `None` for a fixed warm-up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_warmup: Option<crate::warmup::WarmupVerdict>,
}

impl Outcome {
    pub fn latency_summary(&self) -> LatencySummary {
        LatencySummary::of(&self.latency)
    }

    pub fn answered_summary(&self) -> LatencySummary {
        LatencySummary::of(&self.answered_latency)
    }

    /// What wrk 4.x would print for this run: its corrected latency and
    /// its request count (every completed response, late ones included).
    /// Closed loop only, where fairbench times answers from their send as
    /// wrk does (a constant rate's own latency is already from the plan),
    /// and counted wrk's way only, where late answers are awaited and
    /// counted as wrk counts them (fairbench's way aborts them).
    pub fn wrk_figures(&self) -> Option<crate::WrkFigures> {
        if self.model != LoadModel::ClosedLoop
            || self.timeout_mode != crate::config::TimeoutMode::Wrk
        {
            return None;
        }
        let complete = self.requests + self.late_answers;
        Some(crate::WrkFigures {
            latency: crate::wrk_latency(
                &self.answered_latency,
                (self.timeout_s * 1e6) as u64,
                (self.measured_s * 1e6) as u64,
                complete,
                self.connections as u64,
            ),
            requests: complete,
        })
    }

    pub fn ledger(&self) -> Ledger {
        let e = &self.errors;
        Ledger {
            planned: self.planned,
            answered: self.requests,
            connect: e.connect,
            tls: e.tls,
            write: e.write,
            read: e.read,
            parse: e.parse,
            timeout: e.timeout,
            unanswered: e.unanswered,
        }
    }

    pub fn uncorrected_summary(&self) -> LatencySummary {
        LatencySummary::of(&self.uncorrected)
    }

    pub fn lateness_summary(&self) -> Option<LatencySummary> {
        self.lateness.as_ref().map(LatencySummary::of)
    }

    /// Whether `status` counted as a success in this run.
    pub fn expected_status(&self, status: u16) -> bool {
        StatusSet::parse(&self.expect_status)
            .unwrap_or_default()
            .contains(status)
    }

    pub fn connect_summary(&self) -> LatencySummary {
        LatencySummary::of(&self.connect_time)
    }

    pub fn handshake_summary(&self) -> Option<LatencySummary> {
        self.handshake_time.as_ref().map(LatencySummary::of)
    }

    /// Over the measurement's intervals; an interval shorter than half a
    /// second (the tail of a run) would distort the spread and is left out.
    pub fn throughput(&self) -> Throughput {
        let rates: Vec<f64> = self
            .series
            .iter()
            .filter(|s| s.phase == Phase::Measure && s.duration_s >= 0.5)
            .map(SecondSample::rps)
            .collect();
        Throughput::of(&rates)
    }

    /// Timeouts per million requests of the window, the figure the studies
    /// report.
    pub fn timeouts_per_million(&self) -> f64 {
        if self.planned == 0 {
            0.0
        } else {
            self.errors.timeout as f64 * 1e6 / self.planned as f64
        }
    }
}

impl Outcome {
    /// What makes this result less than it seems, in words for people and
    /// machines alike. Empty when the measurement is clean.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        self.warn_failures(&mut w);
        let k = &self.sockets;
        let (local, failed, planned) = (k.connect_local, k.connect_failed, self.ledger().planned);
        w.extend(local_connects::warning(local, failed, planned));
        self.warn_bodies(&mut w);
        w.extend(self.generator.warnings());
        self.warn_schedule(&mut w);
        w.extend(self.h3.iter().flat_map(|h| h.warnings()));
        self.warn_unsolicited(&mut w);
        self.warn_redirects(&mut w);
        self.warn_connection_faults(&mut w);
        self.warn_coverage(&mut w);
        if self.model == LoadModel::ClosedLoop {
            let p99 = self.latency.value_at_quantile(0.99) as f64 / 1e6;
            // The scheduler counts a quota's pause as waiting for a CPU.
            let waited = self.generator.wait_fraction * self.measured_s;
            w.extend(self.silences.warning(p99, self.rps(), waited));
        }
        w.extend(
            self.auto_warmup
                .iter()
                .filter(|v| !v.steady)
                .map(|v| v.describe()),
        );
        w
    }

    /// Requests that got no answer, or not the one expected.
    fn warn_failures(&self, w: &mut Vec<String>) {
        let (l, t) = (self.ledger(), humanize(self.timeout_s));
        let n = l.not_answered();
        if n > 0 {
            w.push(format!(
                "{n} of {} requests got no answer ({}): {}",
                l.planned,
                self.not_answered_breakdown(),
                local_connects::timed(n, self.errors.local, &t)
            ));
        }
        if self.late_answers > 0 {
            w.push(format!(
                "{} of the timeouts were answers that came after the {} timeout: counted wrk's way, as timeouts, with their connections kept (they are in the latency figures as what they waited)",
                self.late_answers,
                humanize(self.timeout_s)
            ));
        }
        if self.sockets.tls_failed > 0 {
            w.push(format!(
                "{} TLS handshakes failed{}",
                self.sockets.tls_failed,
                self.tls_error
                    .as_ref()
                    .map(|e| format!(" (the first: {e})"))
                    .unwrap_or_default()
            ));
        }
        if let Some(said) = self.status_warning() {
            w.push(said);
        }
    }

    /// A constant rate the generator could not keep, or that the
    /// connections capped.
    fn warn_schedule(&self, w: &mut Vec<String>) {
        let k = &self.sockets;
        if let (Some(s), Some(p99)) = (&self.schedule, self.lateness_p99_us()) {
            if p99 > LATE_SEND_US {
                let why = self.generator.woken_late().map(|c| format!("; {c}"));
                w.push(format!(
                    "generator could not keep the schedule: send lateness p99 is {p99} µs (> 1000 µs); latency figures include the generator's own delay{}",
                    why.unwrap_or_default()
                ));
            }
            w.extend(local_connects::never_sent(
                s.never_sent,
                k.connect_local,
                k.connect_failed,
            ));
            if s.waited_for_connection > 0 {
                let share = s.waited_for_connection as f64 / s.sent.max(1) as f64 * 100.0;
                if share >= 1.0 {
                    // Behind the rate, every connection is busy because
                    // every answer is late: the server is the limit.
                    let why = if k.connect_local > 0 {
                        local_connects::NO_CONNECTION
                    } else if self.generator_limited() {
                        "the load generator fell behind its own schedule (its warnings say why), so requests bunched up whenever it ran"
                    } else if self.answered_after_window().is_some() {
                        "the server fell behind the rate, so more connections would only queue more requests at it"
                    } else {
                        "the rate offered to the server was capped by --connections at those moments"
                    };
                    w.push(format!(
                        "{share:.1}% of requests found no free connection when due: their latency includes the wait (as it should); {why}"
                    ));
                }
            }
            self.behind_warnings(w);
        }
    }

    /// Responses nobody asked for, and the answers they may have put out
    /// of step.
    fn warn_unsolicited(&self, w: &mut Vec<String>) {
        if self.h2.is_some() && self.sockets.unsolicited_responses + self.sockets.stray_bytes > 0 {
            w.push(format!(
                "the server sent {} responses and {} bodies on HTTP/2 streams that had already ended (a protocol fault): each stream was reset as closed; a frame names its stream, so no request was credited with them",
                self.sockets.unsolicited_responses, self.sockets.stray_bytes
            ));
        } else if self.sockets.unsolicited_responses > 0 {
            w.push(format!(
                "the server sent {} responses nobody asked for (with nothing in flight, or before the request they would answer was sent): each connection was closed and replaced. A stray that comes while a request is in flight cannot be told from its answer, so the answers credited on those connections shortly before (within the timeout, at most {} per connection, never a connection's first) are possibly mis-timed: {} of the window's, counted as answered and kept out of every latency figure",
                self.sockets.unsolicited_responses,
                crate::ledger::CREDITED,
                self.sockets.possibly_mistimed
            ));
        }
        if self.sockets.mistimed_left_in > 0 {
            w.push(format!(
                "{} earlier answers on the connections that got unsolicited responses are still in the latency figures (older than the timeout, or beyond the last {} of a connection): if a stray came before them, each was credited one request late, and the latency figures cannot be trusted",
                self.sockets.mistimed_left_in,
                crate::ledger::CREDITED
            ));
        }
    }

    fn warn_redirects(&self, w: &mut Vec<String>) {
        let redirects: u64 = self
            .status_codes
            .iter()
            .filter(|(c, _)| (300..400).contains(*c) && **c != 304)
            .map(|(_, n)| n)
            .sum();
        if redirects > 0 {
            w.push(format!(
                "{redirects} answers were redirects (3xx): redirects are not followed, so this measured the redirect itself; load the URL it points to to measure that"
            ));
        }
    }

    /// Stray bytes on HTTP/1.1 connections, and requests sent again.
    fn warn_connection_faults(&self, w: &mut Vec<String>) {
        if self.sockets.stray_bytes > 0 && self.h2.is_none() {
            w.push(format!(
                "bytes nobody asked for arrived {} times on connections with nothing in flight (a protocol fault of the server): each connection was closed and replaced, no request was charged with them",
                self.sockets.stray_bytes
            ));
        }
        // Kept alive as asked, a connection closes rarely (nginx: every
        // 1,000 answers); closed more often, the run measured reconnects.
        let closed = self.sockets.closed_by_server;
        if self.keepalive && closed * 100 > self.requests && closed > 1 {
            w.push(format!(
                "the server closed or reset {closed} connections, one every {:.1} answers: it did not keep them alive as asked (or closed them idle: a connection's requests come 1/rate × connections apart), so the run measured reconnects too (each costs the server an accept and the client a connect, in the throughput; latency is from each request's planned time)",
                self.requests as f64 / closed as f64
            ));
        }
        if self.sockets.retried > 0 {
            w.push(format!(
                "{} requests were sent again because their connection closed or was reset before any byte of their answer came (a request crossing the server's close); they kept their planned time",
                self.sockets.retried
            ));
        }
    }

    /// How much of the run the figures cover.
    fn warn_coverage(&self, w: &mut Vec<String>) {
        if self.interrupted {
            w.push("interrupted: figures cover only the part of the run that completed".into());
        }
        if self.measured_s <= 0.0 {
            w.push("nothing was measured: the run ended during warm-up".into());
        } else if self.planned > 0 && self.requests == 0 {
            w.push("no request was answered".into());
        }
    }

    /// "timeout 12, read 3" for the classes that are not zero.
    pub fn not_answered_breakdown(&self) -> String {
        let l = self.ledger();
        let parts: Vec<String> = [
            ("connect", l.connect),
            ("tls handshake", l.tls),
            ("write", l.write),
            ("read", l.read),
            ("parse", l.parse),
            ("timeout", l.timeout),
            ("unanswered at the end", l.unanswered),
        ]
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
        parts.join(", ")
    }
}

fn humanize(s: f64) -> String {
    if s >= 1.0 {
        format!("{s} s")
    } else {
        format!("{} ms", (s * 1000.0).round())
    }
}
