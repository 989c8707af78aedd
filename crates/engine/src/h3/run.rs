//! A run over HTTP/3: the check before it (one QUIC handshake, so that a
//! server without QUIC, or a certificate not trusted, is one clear line
//! rather than a run of failures), and its load threads.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use super::conn::{Event, H3Conn};
use super::load::H3Worker;
use super::quic::QuicSetup;
use crate::clock::{self, Nanos};
use crate::config::LoadConfig;
use crate::tls::TlsClient;
use crate::worker::{ThreadPlan, ThreadReport};

/// How long a connection may stay silent before quinn gives it up; the
/// requests' own timeout is the engine's.
const IDLE: Duration = Duration::from_secs(30);

/// What the threads of an HTTP/3 run share, once the check passed.
pub(crate) struct Prepared {
    pub peer: SocketAddr,
    setup: QuicSetup,
}

/// Checks that `cfg`'s server answers a QUIC handshake with ALPN h3 (with
/// a TLS session cache of its own, so the run's first handshakes are
/// full), and sets up the run's QUIC client.
pub(crate) fn prepare(cfg: &LoadConfig, tls: &TlsClient) -> Result<Prepared, String> {
    let wait = cfg.timeout.min(Duration::from_secs(5));
    let own = tls.isolated().quic()?;
    let peer = cfg.target.addr;
    let probe = QuicSetup::new(own, &cfg.target.host, IDLE);
    handshake(&probe, peer, wait)?;
    let quic = tls.quic()?;
    Ok(Prepared {
        peer,
        setup: QuicSetup::new(quic, &cfg.target.host, IDLE),
    })
}

/// One handshake with `peer`, waiting at most `wait`.
fn handshake(setup: &QuicSetup, peer: SocketAddr, wait: Duration) -> Result<(), String> {
    let start = clock::now();
    let deadline = start + wait.as_nanos() as Nanos;
    let link = setup
        .open(peer, start)
        .map_err(|e| format!("cannot open a UDP socket to {peer}: {e}"))?;
    let mut c = H3Conn::new(link, start);
    let mut events = Vec::new();
    loop {
        let now = clock::now();
        let io = c.link.receive(now).and_then(|()| c.link.flush(now));
        if let Err(e) = io {
            return Err(if e.kind() == std::io::ErrorKind::ConnectionRefused {
                format!("nothing answers QUIC at {peer} (its UDP port is closed): does the server speak HTTP/3?")
            } else {
                format!("QUIC to {peer} failed: {e}")
            });
        }
        c.poll(now, &mut events);
        if events.contains(&Event::Connected) {
            let at = c.link.now(now);
            c.link.conn.close(
                at,
                quinn_proto::VarInt::from_u32(crate::h3::frame::H3_NO_ERROR as u32),
                bytes::Bytes::new(),
            );
            let _ = c.link.flush(now);
            return Ok(());
        }
        if let Some(closed) = &c.closed {
            return Err(format!(
                "the QUIC handshake with {peer} failed: {}",
                closed.why
            ));
        }
        if now >= deadline {
            let heard = c.link.conn.stats().udp_rx.datagrams > 0;
            return Err(if heard {
                format!(
                    "the QUIC handshake with {peer} did not finish within {} ms",
                    wait.as_millis()
                )
            } else {
                format!(
                    "nothing answered QUIC at {peer} within {} ms: does the server speak HTTP/3 on that UDP port?",
                    wait.as_millis()
                )
            });
        }
        let until = c.link.deadline().unwrap_or(deadline).min(deadline);
        wait_readable(c.link.fd(), until);
    }
}

/// Sleeps until `fd` is readable or `until` (at most 100 ms at a time).
pub(super) fn wait_readable(fd: std::os::fd::RawFd, until: Nanos) {
    let ms = until
        .saturating_sub(clock::now())
        .div_ceil(1_000_000)
        .min(100) as i32;
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call.
    unsafe { libc::poll(&mut p, 1, ms) };
}

/// The threads started, where they report, and why one could not start
/// (those started are then told to halt).
pub(crate) type Started = (
    Vec<std::thread::JoinHandle<()>>,
    mpsc::Receiver<ThreadReport>,
    Option<String>,
);

/// Starts the run's HTTP/3 load threads, the connections and the request
/// budget shared among them as among the TCP threads.
pub(crate) fn spawn_workers(
    cfg: &LoadConfig,
    plan: &Arc<ThreadPlan>,
    stop: &Arc<AtomicBool>,
    q: Prepared,
) -> Started {
    let threads = plan.threads;
    let halt = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    let mut handles = Vec::with_capacity(threads);
    let mut failure: Option<String> = None;
    for t in 0..threads {
        let conns = cfg.connections / threads + usize::from(t < cfg.connections % threads);
        let budget = cfg
            .requests
            .map(|n| n / threads as u64 + u64::from((t as u64) < n % threads as u64));
        let spawned = H3Worker::new(
            t,
            conns,
            budget,
            plan.clone(),
            q.setup.clone(),
            q.peer,
            cfg.streams,
            stop.clone(),
            halt.clone(),
            tx.clone(),
        )
        .map_err(|e| format!("cannot set up a load thread: {e}"))
        .and_then(|worker| {
            std::thread::Builder::new()
                .name(format!("fairbench-h3-{t}"))
                .spawn(move || worker.run())
                .map_err(|e| format!("cannot start a load thread: {e}"))
        });
        match spawned {
            Ok(h) => handles.push(h),
            Err(m) => {
                failure = Some(m);
                halt.store(true, Ordering::Relaxed);
                break;
            }
        }
    }
    (handles, rx, failure)
}
