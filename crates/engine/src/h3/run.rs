//! A run over HTTP/3: the check before it (one QUIC handshake, so that a
//! server without QUIC, or a certificate not trusted, is one clear line
//! rather than a run of failures), and its load threads.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use super::fetch::{handshake_on, IDLE};
use super::load::H3Worker;
use super::quic::QuicSetup;
use super::report::ZeroRtt;
use super::tickets::{Filler, TicketPool};
use crate::config::LoadConfig;
use crate::tls::TlsClient;
use crate::worker::{ThreadPlan, ThreadReport};

/// What the threads of an HTTP/3 run share, once the check passed.
pub(crate) struct Prepared {
    pub peer: SocketAddr,
    setup: QuicSetup,
    /// With `zero_rtt`: what priming the session tickets found.
    zero_rtt: Option<ZeroRtt>,
}

/// Priming handshakes under way at once.
const PRIMERS: usize = 32;

/// Checks that `cfg`'s server answers a QUIC handshake with ALPN h3 (with
/// a TLS session cache of its own, so the run's first handshakes are
/// full), and sets up the run's QUIC client.
pub(crate) fn prepare(cfg: &LoadConfig, tls: &TlsClient) -> Result<Prepared, String> {
    let wait = cfg.timeout.min(Duration::from_secs(5));
    let own = tls.isolated().quic()?;
    let peer = cfg.target.addr;
    let probe = QuicSetup::new(own, &cfg.target.host, IDLE);
    handshake_on(&probe, peer, wait, false).map_err(|e| e.message)?;
    if !cfg.zero_rtt {
        let quic = tls.quic()?;
        return Ok(Prepared {
            peer,
            setup: QuicSetup::new(quic, &cfg.target.host, IDLE),
            zero_rtt: None,
        });
    }
    let pool = TicketPool::new();
    let filler = QuicSetup::new(
        tls.quic_early(Arc::new(Filler(pool.clone())))?,
        &cfg.target.host,
        IDLE,
    );
    let primed = prime(&filler, peer, cfg.connections, wait);
    let quic = tls.quic_early(pool.clone())?;
    Ok(Prepared {
        peer,
        setup: QuicSetup::new(quic, &cfg.target.host, IDLE),
        zero_rtt: Some(ZeroRtt {
            primed,
            tickets: pool.issued(),
            early_tickets: pool.early(),
            ..Default::default()
        }),
    })
}

/// Before the run: `n` full handshakes, [`PRIMERS`] at a time, each
/// keeping the session ticket it gets, one for each connection of the
/// run to resume. Returns how many handshakes completed; one that fails
/// only leaves a connection without a ticket (it then makes a full
/// handshake, counted as such).
fn prime(setup: &QuicSetup, peer: SocketAddr, n: usize, wait: Duration) -> u64 {
    let next = AtomicUsize::new(0);
    let done = AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..PRIMERS.min(n) {
            s.spawn(|| {
                while next.fetch_add(1, Ordering::Relaxed) < n {
                    if handshake_on(setup, peer, wait, true).is_ok() {
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    done.into_inner()
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
        let budget = plan.budget(t);
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
        .map(|worker| match &q.zero_rtt {
            // The priming's figures are counted once, by the first thread.
            Some(z) if t == 0 => worker.zero_rtt(z.clone()),
            Some(_) => worker.zero_rtt(ZeroRtt::default()),
            None => worker,
        })
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
