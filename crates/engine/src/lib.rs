//! fairbench's load engine.
//!
//! HTTP/1.1 load over N connections (plain or TLS, kept alive or one per
//! request), or HTTP/2 (h2c, or h2 by ALPN; each connection carrying up to
//! `streams` requests at once: see [`h2`]), spread on T threads, each thread its own epoll loop, requests
//! serialised once (one, or a [`RequestMix`] of many, prepared before the
//! run and broken down by target name). Two load models:
//! closed loop (wrk) and constant rate measured from the planned send time
//! (wrk2, without coordinated omission and with sub-millisecond scheduling),
//! the rate constant or a profile of steps and ramps ([`profile`]).
//! Latency goes into per-thread HDR histograms merged at the end, so memory
//! stays bounded however long the run.
//!
//! The engine knows nothing of command lines, terminals or storage: callers
//! get an [`Outcome`] and, while it runs, per-second samples through an
//! [`Observer`].

mod answered_rate;
pub mod bodies;
mod cert_probe;
pub mod clock;
mod config;
mod config_error;
pub mod dial;
pub mod endpoint;
mod expected;
#[doc(hidden)]
pub mod fuzzing;
mod generator;
pub mod h2;
pub mod h3;
pub mod hex;
pub mod histogram;
#[cfg(test)]
mod hostile;
pub mod ledger;
mod local_connects;
pub mod merge;
pub mod mix;
mod outcome;
pub mod pacer;
mod poller;
pub mod profile;
mod protocol;
pub mod proxy;
mod request;
mod request_pool;
pub mod response;
pub mod route;
mod run;
pub mod silence;
mod sockopt;
mod stall;
mod stamps;
pub mod stats;
mod status;
mod target;
pub mod thread_rate;
mod timer;
mod tls;
pub mod warmup;
mod warmup_run;
mod worker;
pub mod wrk_latency;

pub use config::{
    default_threads, GeneratorShare, IoMode, LoadConfig, LoadModel, ThreadStart, TimeoutMode,
    DEFAULT_STREAMS, MAX_STREAMS, MIN_RATE,
};
pub use config_error::ConfigError;
pub use endpoint::{AnswerClock, Endpoint};
pub use generator::QuotaPause;
pub use h2::H2Report;
pub use h3::{H3Report, QuicPath, SendWait, UdpCalls, ZeroRtt};
pub use mix::{MixRequest, RequestMix};
pub use outcome::{
    Generator, Ledger, Outcome, Phase, Schedule, SecondSample, Sockets, TargetOutcome, LATE_SEND_US,
};
pub use profile::RateStage;
pub use protocol::Protocol;
pub use request::RequestSpec;
pub use run::{Observer, Quiet, RunError};
pub use stall::Stalled;
pub use stats::{ErrorCounts, Failure, LatencySummary, Throughput};
pub use status::StatusSet;
pub use target::Target;
pub use thread_rate::ThreadReqSec;
pub use tls::TlsOptions;
pub use warmup_run::run;

/// Whether `IoMode::Auto` gets its io_uring on this machine (a kernel with
/// io_uring that lets this process set one up).
pub fn io_uring_available() -> bool {
    worker::uring_available()
}
pub use wrk_latency::{wrk_latency, WrkFigures, WrkLatency};
