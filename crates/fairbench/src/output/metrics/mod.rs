//! Live metrics (`--metrics-listen ADDR`): while `load` or `run` works,
//! `GET /metrics` on ADDR answers OpenMetrics text of every case so far
//! (docs/metrics.md).
//!
//! One registry per process, set when the endpoint starts: the commands
//! name each case as it begins ([`begin`]), the per-interval observers
//! they already have feed it ([`Live`], or [`interval`] and [`server`]
//! from the runner's watch), and each case's outcome closes it
//! ([`finish`]). Without the flag every one of these is a no-op. All of
//! them run on the thread that coordinates the load, once per interval,
//! never on a load thread.

mod listener;
mod registry;
mod text;

use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

use fairbench_engine::{LoadConfig, LoadModel, Observer, Outcome, SecondSample};
use hdrhistogram::Histogram;

use crate::usage_error::usage;
pub use registry::Labels;

static REGISTRY: OnceLock<Arc<Mutex<Registry>>> = OnceLock::new();

use registry::Registry;

/// The registry, when the endpoint was started.
fn live() -> Option<MutexGuard<'static, Registry>> {
    let r = REGISTRY.get()?;
    Some(r.lock().unwrap_or_else(|p| p.into_inner()))
}

/// The running endpoint. Dropped when the command is done: it serves the
/// final figures `linger` longer (so that a scraper's last look sees them),
/// then stops.
pub struct Endpoint {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    linger: Duration,
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        if !crate::interrupt::interrupted() {
            std::thread::sleep(self.linger);
        }
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Starts the endpoint on `addr` (`--metrics-listen`), before any load,
/// so that a bad address or a port in use is a usage error (exit 2) and
/// never a failed run. Prints the bound address, port 0 resolved, on one
/// line of stderr.
pub fn start(addr: Option<&str>, linger: Duration) -> anyhow::Result<Option<Endpoint>> {
    let Some(at) = check(addr, linger)? else {
        return Ok(None);
    };
    let listener = TcpListener::bind(at)
        .map_err(|e| usage(format!("--metrics-listen: cannot listen on {at}: {e}")))?;
    let bound = listener.local_addr().unwrap_or(at);
    let registry = REGISTRY
        .get_or_init(|| Arc::new(Mutex::new(Registry::default())))
        .clone();
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let thread = std::thread::Builder::new()
        .name("metrics".into())
        .spawn(move || listener::serve(listener, registry, s))
        .map_err(|e| anyhow::anyhow!("--metrics-listen: cannot start its thread: {e}"))?;
    eprintln!("metrics: serving OpenMetrics at http://{bound}/metrics");
    Ok(Some(Endpoint {
        stop,
        thread: Some(thread),
        linger,
    }))
}

/// The flags' mistakes, refused without listening (a dry run's check);
/// the address to listen on, if any.
pub fn check(addr: Option<&str>, linger: Duration) -> anyhow::Result<Option<SocketAddr>> {
    match addr {
        Some(addr) => parse(addr).map(Some),
        None if !linger.is_zero() => Err(usage(
            "--metrics-linger: serves on after --metrics-listen ADDR",
        )),
        None => Ok(None),
    }
}

/// HOST:PORT (a name, an IPv4 address or a bracketed IPv6 one); port 0
/// picks a free port.
fn parse(addr: &str) -> anyhow::Result<SocketAddr> {
    let bad = || {
        usage(format!(
            "--metrics-listen: expected HOST:PORT, e.g. 127.0.0.1:9464 or [::1]:0, got {addr:?}"
        ))
    };
    if let Ok(a) = addr.parse::<SocketAddr>() {
        return Ok(a);
    }
    let (_, port) = addr.rsplit_once(':').ok_or_else(bad)?;
    port.parse::<u16>().map_err(|_| bad())?;
    addr.to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(bad)
}

/// Every case from now on carries `key="value"` before its own labels.
pub fn label_all(key: &'static str, value: &str) {
    if let Some(mut r) = live() {
        r.label_all(key, value);
    }
}

/// A case begins under `labels`; `rate` is its planned constant rate.
pub fn begin(labels: Labels, rate: Option<f64>) {
    if let Some(mut r) = live() {
        r.begin(labels, rate);
    }
}

/// The constant rate `cfg` plans; `None` in a closed loop.
pub fn planned(cfg: &LoadConfig) -> Option<f64> {
    match cfg.model {
        LoadModel::ConstantRate { rps } => Some(rps),
        _ => None,
    }
}

/// One interval of the running case.
pub fn interval(s: &SecondSample, h: &Histogram<u64>) {
    if let Some(mut r) = live() {
        r.interval(s, h);
    }
}

/// The server's CPU seconds in the last interval and its memory now.
pub fn server(measured: bool, cpu_s: f64, memory_bytes: u64) {
    if let Some(mut r) = live() {
        r.server(measured, cpu_s, memory_bytes);
    }
}

/// The running case ended with `o`.
pub fn finish(o: &Outcome) {
    if let Some(mut r) = live() {
        r.finish(o);
    }
}

/// The observer to fan out beside a progress display.
pub struct Live;

impl Observer for Live {
    fn on_interval(&mut self, s: &SecondSample, h: &Histogram<u64>) {
        interval(s, h);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_host_and_port() {
        assert!(parse("127.0.0.1:0").is_ok());
        assert!(parse("[::1]:9464").is_ok());
        assert!(parse("localhost:9464").is_ok());
        for bad in [
            "",
            "9464",
            "127.0.0.1",
            "127.0.0.1:x",
            "127.0.0.1:70000",
            ":::",
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(
                e.starts_with("--metrics-listen: expected HOST:PORT"),
                "{bad}: {e}"
            );
        }
    }
}
