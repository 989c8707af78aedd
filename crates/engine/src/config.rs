//! What a run is asked to do, checked before anything starts.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::config_error::ConfigError;
use crate::mix::RequestMix;
use crate::profile::RateStage;
use crate::protocol::Protocol;
use crate::request::RequestSpec;
use crate::response::DEFAULT_MAX_HEAD;
use crate::status::StatusSet;
use crate::target::Target;
use crate::tls::TlsOptions;

/// How requests are offered.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum LoadModel {
    /// wrk semantics: each connection sends its next request when the previous
    /// answer arrives. Measures the most a server does with this concurrency.
    ClosedLoop,
    /// wrk2 semantics: requests are due on a fixed schedule of `rps` per
    /// second in total; latency counts from when a request was due.
    ConstantRate { rps: f64 },
}

/// How a request that outlives its timeout is counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TimeoutMode {
    /// At its timeout the request is aborted, counted as a timeout, and its
    /// connection closed and reopened (requests queued behind it go out
    /// again): a server that stalls cannot hold a connection.
    #[default]
    Fairbench,
    /// wrk's counting: nothing is aborted; an answer that arrives after the
    /// timeout counts as a timeout (not as answered), is read whole, and its
    /// connection carries on. Requests never answered are still timeouts at
    /// the end of the run (wrk would not count them at all).
    Wrk,
}

impl TimeoutMode {
    pub fn as_str(self) -> &'static str {
        match self {
            TimeoutMode::Fairbench => "fairbench",
            TimeoutMode::Wrk => "wrk",
        }
    }

    pub fn parse(s: &str) -> Result<TimeoutMode, String> {
        match s {
            "fairbench" => Ok(TimeoutMode::Fairbench),
            "wrk" => Ok(TimeoutMode::Wrk),
            other => Err(format!("expected fairbench or wrk, got {other:?}")),
        }
    }
}

/// How a plain HTTP/1.1 load thread moves its bytes (see the worker's
/// `uring` module).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IoMode {
    /// Sends and receives batched through io_uring where the kernel allows
    /// it, else one system call each.
    #[default]
    Auto,
    /// One `send` and one `recv` system call each, as before io_uring.
    Epoll,
}

impl IoMode {
    pub fn parse(s: &str) -> Result<IoMode, String> {
        match s {
            "auto" => Ok(IoMode::Auto),
            "epoll" => Ok(IoMode::Epoll),
            other => Err(format!("expected auto or epoll, got {other:?}")),
        }
    }
}

/// It travels whole: a load generator elsewhere (a namespace, an ssh host)
/// is sent its configuration as JSON; the target is resolved again there.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct LoadConfig {
    pub target: Target,
    pub request: RequestSpec,
    /// Many requests instead of `request`: prepared before the run, sent in
    /// turn, results broken down by target name.
    #[serde(default)]
    pub mix: Option<RequestMix>,
    /// A rate profile instead of one constant rate (the model must be
    /// `ConstantRate`; its rate is then the profile's peak, and `duration`
    /// the stages' total). See [`crate::profile`].
    #[serde(default)]
    pub stages: Option<Vec<RateStage>>,
    pub connections: usize,
    pub threads: usize,
    /// How long the window lasts at most (with `requests`, an upper bound).
    pub duration: Duration,
    /// End the window after this many requests of it: sent (closed loop) or
    /// due (constant rate). The whole load's count: split over its
    /// generators (`share`) and their load threads, each planning its
    /// share; the warm-up's requests are not counted.
    pub requests: Option<u64>,
    /// Off: one request per connection, opened for it and closed by the
    /// client after the answer (ab without -k); latency includes the
    /// connect and any TLS handshake.
    pub keepalive: bool,
    pub warmup: Duration,
    /// Instead of `warmup`: warm up until the server is steady, at most a
    /// ceiling ([`crate::warmup`]).
    #[serde(default)]
    pub warmup_auto: Option<crate::warmup::AutoWarmup>,
    pub timeout: Duration,
    /// How a request past its timeout is counted (and whether it is
    /// aborted).
    #[serde(default)]
    pub timeout_mode: TimeoutMode,
    pub model: LoadModel,
    /// Requests in flight per connection (HTTP/1.1 pipelining depth).
    pub pipeline: usize,
    /// HTTP/1.1, or HTTP/2 (h2c on `http://`, h2 by ALPN on `https://`).
    #[serde(default)]
    pub protocol: Protocol,
    /// HTTP/2: the most streams (requests) in flight per connection, as
    /// h2load's `-m`; a server's lower `SETTINGS_MAX_CONCURRENT_STREAMS`
    /// wins. The default, [`DEFAULT_STREAMS`], is 1 so that `-c N` offers
    /// the same concurrency over either protocol.
    #[serde(default = "default_streams")]
    pub streams: usize,
    /// HTTP/3: every connection resumes a session with 0-RTT, its first
    /// requests sent as early data (`--zero-rtt`; see `h3::tickets`).
    #[serde(default)]
    pub zero_rtt: bool,
    /// Constant rate: how long before its planned time a request may go out
    /// when the load thread is awake anyway. Its latency then counts from
    /// the send, never from the later planned time. See `worker` for why a
    /// window, and `DEFAULT_SEND_AHEAD` for its size.
    pub send_ahead: Duration,
    /// Answers with any other status count as status errors.
    pub expect_status: StatusSet,
    /// For `https://` targets.
    pub tls: TlsOptions,
    pub max_head: usize,
    /// Pin the worker threads to these CPUs (all of them, not one each).
    pub cpus: Option<Vec<usize>>,
    /// This generator's place among several that share one load: generator
    /// `index` of `count` offsets its constant-rate schedule by `index/R`
    /// (R the total rate) so that the merged schedule is evenly spaced.
    pub share: GeneratorShare,
    /// Begin the run's schedule (warm-up, measurement and the one-second
    /// intervals) at this wall-clock time rather than now. Several generators
    /// given the same time start together and their intervals line up, so
    /// their results can be merged exactly. `None`: start at once.
    pub start_at: Option<SystemTime>,
    /// Run first on every load thread, before it is pinned, so that the
    /// caller can place its threads (e.g. in a control group) without the
    /// engine knowing how. An error voids the run like a failed pinning.
    /// It stays with the caller: a generator elsewhere places its own.
    #[serde(skip)]
    pub thread_start: Option<ThreadStart>,
    /// Whether plain HTTP/1.1 batches its system calls through io_uring.
    #[serde(default)]
    pub io: IoMode,
    /// Plays a kernel that gives TCP arrivals no receive stamps (one that
    /// ignores `SO_TIMESTAMPNS`): the option is not asked for. For the tests
    /// of what the engine does then; no flag sets it.
    #[doc(hidden)]
    #[serde(skip)]
    pub unstamped_kernel: bool,
}

/// A caller's hook run on each load thread as it starts.
#[derive(Clone)]
pub struct ThreadStart(pub Arc<dyn Fn() -> Result<(), String> + Send + Sync>);

impl fmt::Debug for ThreadStart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ThreadStart(..)")
    }
}

impl LoadConfig {
    pub fn new(target: Target) -> Self {
        LoadConfig {
            target,
            request: RequestSpec::default(),
            mix: None,
            stages: None,
            connections: 50,
            threads: default_threads(),
            duration: Duration::from_secs(10),
            requests: None,
            keepalive: true,
            warmup: Duration::ZERO,
            warmup_auto: None,
            timeout: Duration::from_secs(2),
            timeout_mode: TimeoutMode::Fairbench,
            model: LoadModel::ClosedLoop,
            pipeline: 1,
            protocol: Protocol::Http1,
            streams: DEFAULT_STREAMS,
            zero_rtt: false,
            send_ahead: DEFAULT_SEND_AHEAD,
            expect_status: StatusSet::default(),
            tls: TlsOptions::default(),
            max_head: DEFAULT_MAX_HEAD,
            cpus: None,
            share: GeneratorShare::default(),
            start_at: None,
            thread_start: None,
            io: IoMode::Auto,
            unstamped_kernel: false,
        }
    }

    /// Field names match the `fairbench load` long flags so that the CLI can
    /// point at the flag to fix.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.validate_sizes()?;
        self.validate_protocol()?;
        self.validate_tls()?;
        self.validate_rate()?;
        if let Some(mix) = &self.mix {
            mix.validate()?;
        }
        self.validate_stages()?;
        validate_warmup(self)?;
        self.validate_placement()
    }

    /// Counts, durations and the generator's share.
    fn validate_sizes(&self) -> Result<(), ConfigError> {
        if self.connections == 0 {
            return Err(ConfigError::new("connections", "must be at least 1"));
        }
        if self.threads == 0 {
            return Err(ConfigError::new("threads", "must be at least 1"));
        }
        if self.duration.is_zero() {
            return Err(ConfigError::new("duration", "must be longer than 0"));
        }
        for (field, d) in [("duration", self.duration), ("warmup", self.warmup)] {
            if d > MAX_RUN {
                return Err(ConfigError::new(field, "must be at most 30 days"));
            }
        }
        if self.timeout.is_zero() {
            return Err(ConfigError::new("timeout", "must be longer than 0"));
        }
        if self.timeout > MAX_TIMEOUT {
            return Err(ConfigError::new("timeout", "must be at most 1 hour"));
        }
        if self.share.count == 0 || self.share.index >= self.share.count {
            return Err(ConfigError::new(
                "share",
                format!(
                    "generator {} of {} does not exist",
                    self.share.index, self.share.count
                ),
            ));
        }
        if self.pipeline == 0 || self.pipeline > 1024 {
            return Err(ConfigError::new("pipeline", "must be between 1 and 1024"));
        }
        if self.send_ahead > MAX_SEND_AHEAD {
            return Err(ConfigError::new(
                "send-ahead",
                "must be at most 1ms (a wider window is a burst, not a schedule)",
            ));
        }
        if self.requests == Some(0) {
            return Err(ConfigError::new("requests", "must be at least 1"));
        }
        if !self.keepalive && self.pipeline > 1 {
            return Err(ConfigError::new(
                "pipeline",
                "cannot be combined with --no-keepalive (a connection carries one request)",
            ));
        }
        Ok(())
    }

    /// TLS options only for `https://`, and a CA file that reads.
    fn validate_tls(&self) -> Result<(), ConfigError> {
        if !self.target.tls {
            if self.tls.insecure {
                return Err(ConfigError::new(
                    "insecure",
                    "applies to https:// URLs only",
                ));
            }
            if self.tls.ca_pem.is_some() {
                return Err(ConfigError::new("cacert", "applies to https:// URLs only"));
            }
        }
        if let Some(pem) = &self.tls.ca_pem {
            crate::tls::ca_roots(pem)?;
        }
        Ok(())
    }

    /// A constant rate is a plausible positive number.
    fn validate_rate(&self) -> Result<(), ConfigError> {
        if let LoadModel::ConstantRate { rps } = self.model {
            if !(rps.is_finite() && rps > 0.0) {
                return Err(ConfigError::new(
                    "rate",
                    format!("must be a positive number of requests per second, got {rps}"),
                ));
            }
            if rps < MIN_RATE {
                return Err(ConfigError::new(
                    "rate",
                    format!("must be at least {MIN_RATE} requests per second (one per 1000 s), got {rps}"),
                ));
            }
            if rps > 100_000_000.0 {
                return Err(ConfigError::new(
                    "rate",
                    "more than 100,000,000 requests/s is not plausible",
                ));
            }
        }
        Ok(())
    }

    /// A rate profile fits the model, the duration and one generator.
    fn validate_stages(&self) -> Result<(), ConfigError> {
        if let Some(stages) = &self.stages {
            crate::profile::validate(stages)?;
            if !matches!(self.model, LoadModel::ConstantRate { .. }) {
                return Err(ConfigError::new(
                    "stages",
                    "plan a rate: the model must be constant rate",
                ));
            }
            let total: Duration = stages.iter().map(|s| s.duration).sum();
            if total != self.duration {
                return Err(ConfigError::new(
                    "stages",
                    format!(
                        "last {total:?} in all, but the run's duration is {:?}",
                        self.duration
                    ),
                ));
            }
            if self.share.count > 1 {
                return Err(ConfigError::new("stages", "run on one load generator only"));
            }
        }
        Ok(())
    }

    /// Where and when the load threads run: CPUs to pin to, a planned
    /// start.
    fn validate_placement(&self) -> Result<(), ConfigError> {
        if let Some(cpus) = &self.cpus {
            if cpus.is_empty() {
                return Err(ConfigError::new("cpus", "must name at least one CPU"));
            }
        }
        if let Some(at) = self.start_at {
            if at
                .duration_since(SystemTime::now())
                .is_ok_and(|d| d > MAX_START_DELAY)
            {
                return Err(ConfigError::new(
                    "start-at",
                    "is more than 10 minutes away: is a clock wrong?",
                ));
            }
        }
        Ok(())
    }

    /// Field names are the CLI's: `streams`, and `http2` for the protocol.
    fn validate_protocol(&self) -> Result<(), ConfigError> {
        if self.streams == 0 || self.streams > MAX_STREAMS {
            return Err(ConfigError::new(
                "streams",
                format!("must be between 1 and {MAX_STREAMS}"),
            ));
        }
        if self.zero_rtt && self.protocol != Protocol::H3 {
            return Err(ConfigError::new(
                "zero-rtt",
                "applies to HTTP/3 only (--http3)",
            ));
        }
        if self.protocol == Protocol::H3 {
            return self.validate_h3();
        }
        if !self.protocol.is_h2() {
            if self.streams > 1 {
                return Err(ConfigError::new(
                    "streams",
                    "applies to HTTP/2 only (--http2); HTTP/1.1 keeps several requests in flight with --pipeline",
                ));
            }
            return Ok(());
        }
        if !self.keepalive {
            return Err(ConfigError::new(
                "http2",
                "cannot be combined with --no-keepalive (an HTTP/2 connection carries many requests)",
            ));
        }
        if self.pipeline > 1 {
            return Err(ConfigError::new(
                "http2",
                "cannot be combined with --pipeline (HTTP/2 multiplexes: use --streams N)",
            ));
        }
        match (self.protocol, self.target.tls) {
            (Protocol::H2c, false) if self.target.proxy.is_some() => Err(ConfigError::new(
                "proxy",
                "h2c (HTTP/2 by prior knowledge) does not go through a proxy: use an https:// URL (h2 through a CONNECT tunnel) or HTTP/1.1",
            )),
            (Protocol::H2c, true) => Err(ConfigError::new(
                "http2",
                "h2c is HTTP/2 over plain TCP: it needs an http:// URL (https:// speaks h2 by ALPN)",
            )),
            (Protocol::H2, false) => Err(ConfigError::new(
                "http2",
                "h2 runs over TLS: it needs an https:// URL (http:// speaks h2c)",
            )),
            _ => Ok(()),
        }
    }

    /// HTTP/3 runs over QUIC to an `https://` URL's own address: no
    /// proxy, no unix socket, no pipelining, kept-alive connections.
    fn validate_h3(&self) -> Result<(), ConfigError> {
        let why = if !self.target.tls {
            "HTTP/3 runs over QUIC with TLS: it needs an https:// URL"
        } else if self.target.proxy.is_some() {
            "HTTP/3 does not go through a proxy here (QUIC is UDP): drop --proxy"
        } else if self.target.unix_socket.is_some() {
            "HTTP/3 runs over UDP: it cannot be combined with --unix-socket"
        } else if !self.keepalive {
            "cannot be combined with --no-keepalive (a QUIC connection carries many requests)"
        } else if self.pipeline > 1 {
            "cannot be combined with --pipeline (HTTP/3 multiplexes: use --streams N)"
        } else {
            return Ok(());
        };
        Err(ConfigError::new("http3", why))
    }

    /// Threads beyond the connection count (or the request count) would
    /// have nothing to do.
    pub fn effective_threads(&self) -> usize {
        // This generator's part of the count, about: exactly, at a constant
        // rate, once the warm-up's slots are known.
        let (g, n) = (self.share.index as u64, self.share.count as u64);
        let by_requests = self.requests.map_or(usize::MAX, |r| {
            crate::pacer::share(r, 0, g, n).min(usize::MAX as u64) as usize
        });
        self.threads.min(self.connections).min(by_requests).max(1)
    }
}

/// A generator's place among the generators of one load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GeneratorShare {
    pub index: usize,
    pub count: usize,
}

impl Default for GeneratorShare {
    fn default() -> Self {
        GeneratorShare { index: 0, count: 1 }
    }
}

/// Longest measurement or warm-up: beyond it a typo is likelier than intent,
/// and nanosecond arithmetic stays far from overflow.
const MAX_RUN: Duration = Duration::from_secs(30 * 86_400);
const MAX_TIMEOUT: Duration = Duration::from_secs(3_600);
/// HTTP/2 streams per connection unless told: 1, as h2load's `-m` and
/// oha's `-p`, so that a run's concurrency is `-c` whatever the protocol and
/// HTTP/1.1 and HTTP/2 compare at equal concurrency; multiplexing is asked
/// for (`--streams N`), never slipped in.
pub const DEFAULT_STREAMS: usize = 1;
/// At most this many streams per connection: 10,000 in flight is the
/// memory bound the engine is measured at; ten times that is still far
/// below a stream-id space a connection would use up in one window.
pub const MAX_STREAMS: usize = 100_000;

fn default_streams() -> usize {
    DEFAULT_STREAMS
}

/// The default constant-rate send-ahead window.
///
/// A wake-up of a sleeping load thread costs a timer interrupt and two
/// context switches whatever the time slept; on the virtual machines this
/// project measures on, 25–35 µs of CPU (bench/wakeup.py). Waking once per
/// window instead of once per request divides that by the requests due in
/// it (3.5 at 35,000/s), which is what brings constant rate near the
/// closed loop's cost. 100 µs keeps every arrival within a tenth of the
/// millisecond to which wrk2 and oha round their timers.
pub const DEFAULT_SEND_AHEAD: Duration = Duration::from_micros(100);
const MAX_SEND_AHEAD: Duration = Duration::from_millis(1);
/// Slowest constant rate: one request per 1000 s.
pub const MIN_RATE: f64 = 0.001;

/// The furthest in the future a planned start may be.
const MAX_START_DELAY: Duration = Duration::from_secs(600);

/// The CPUs this process may run on (its affinity mask), at least 1.
pub fn default_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// `auto` combines with one generator starting at once, and not with a
/// fixed warm-up: several generators would each end their warm-up at their
/// own second, and their windows would no longer line up.
fn validate_warmup(cfg: &LoadConfig) -> Result<(), ConfigError> {
    let Some(auto) = cfg.warmup_auto else {
        return Ok(());
    };
    if !cfg.warmup.is_zero() {
        return Err(ConfigError::new(
            "warmup",
            "give a duration or auto, not both",
        ));
    }
    auto.check().map_err(|m| ConfigError::new("warmup", m))?;
    if cfg.share.count > 1 || cfg.start_at.is_some() {
        return Err(ConfigError::new(
            "warmup",
            "auto needs one generator starting at once (several would end their warm-ups apart)",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_configuration_survives_the_trip() {
        let mut cfg = LoadConfig::new(Target::parse("http://127.0.0.1:8080/x?y=1").unwrap());
        cfg.connections = 7;
        cfg.threads = 2;
        cfg.model = LoadModel::ConstantRate { rps: 1234.5 };
        cfg.request.body = b"a\x00b".to_vec();
        cfg.request.headers = vec![("X-A".into(), "1".into())];
        cfg.cpus = Some(vec![0]);
        cfg.share = GeneratorShare { index: 1, count: 3 };
        cfg.warmup = Duration::from_millis(1500);
        let json = serde_json::to_string(&cfg).unwrap();
        assert!(
            json.contains("\"body\":\"610062\""),
            "bodies travel as hex: {json}"
        );
        let back: LoadConfig = serde_json::from_str(&json).unwrap();
        assert_eq!(back.target.url, cfg.target.url);
        assert_eq!(back.target.addr, cfg.target.addr);
        assert_eq!(back.request.body, cfg.request.body);
        assert_eq!(back.request.headers, cfg.request.headers);
        assert_eq!(
            (back.connections, back.threads, back.model, back.share),
            (7, 2, cfg.model, cfg.share)
        );
        assert_eq!((back.warmup, back.duration), (cfg.warmup, cfg.duration));
        assert_eq!(back.cpus, Some(vec![0]));
        back.validate().unwrap();
    }

    #[test]
    fn http2_settings_that_cannot_work_name_their_field() {
        let plain = Target::parse("http://127.0.0.1:8080/").unwrap();
        let mut cfg = LoadConfig::new(plain.clone());
        assert_eq!(
            (cfg.protocol, cfg.streams),
            (Protocol::Http1, DEFAULT_STREAMS)
        );
        cfg.streams = 4;
        assert_eq!(cfg.validate().unwrap_err().field, "streams");
        cfg.protocol = Protocol::H2c;
        cfg.validate().unwrap();
        cfg.streams = 0;
        assert_eq!(cfg.validate().unwrap_err().field, "streams");
        cfg.streams = MAX_STREAMS + 1;
        assert_eq!(cfg.validate().unwrap_err().field, "streams");
        cfg.streams = 8;
        cfg.keepalive = false;
        let e = cfg.validate().unwrap_err();
        assert!(
            e.field == "http2" && e.message.contains("--no-keepalive"),
            "{e}"
        );
        cfg.keepalive = true;
        cfg.pipeline = 2;
        let e = cfg.validate().unwrap_err();
        assert!(
            e.field == "http2" && e.message.contains("--pipeline"),
            "{e}"
        );
        cfg.pipeline = 1;
        cfg.protocol = Protocol::H2;
        assert_eq!(cfg.validate().unwrap_err().field, "http2");
        let mut tls = LoadConfig::new(Target::parse("https://127.0.0.1:8443/").unwrap());
        tls.protocol = Protocol::H2c;
        assert_eq!(tls.validate().unwrap_err().field, "http2");
        tls.protocol = Protocol::H2;
        tls.validate().unwrap();
        // A configuration from before HTTP/2 reads as HTTP/1.1, one stream.
        let mut json: serde_json::Value = serde_json::to_value(LoadConfig::new(plain)).unwrap();
        let o = json.as_object_mut().unwrap();
        o.remove("protocol");
        o.remove("streams");
        let back: LoadConfig = serde_json::from_value(json).unwrap();
        assert_eq!((back.protocol, back.streams), (Protocol::Http1, 1));
    }
}
