//! The session tickets of a run asked for 0-RTT (`zero_rtt`): a pool that
//! keeps every TLS 1.3 ticket the server issued, as many as there are
//! connections, so that each measured connection resumes with one.
//!
//! A ticket is used once (rustls hands each out at most once, as TLS 1.3
//! advises), and quic-go issues one per connection: so the run's
//! connections are primed by as many full handshakes, each through a
//! [`Filler`] that keeps the ticket it got and takes none, and a resumed
//! connection gets a new ticket for its next opening.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rustls::client::{ClientSessionMemoryCache, ClientSessionStore};
use rustls::client::{Tls12ClientSessionValue, Tls13ClientSessionValue};
use rustls::pki_types::ServerName;
use rustls::NamedGroup;

/// The tickets kept for a server (older ones are dropped past this).
const MOST: usize = 100_000;

#[derive(Debug)]
pub(crate) struct TicketPool {
    /// Key exchange hints (and TLS 1.2 sessions, which QUIC never uses).
    hints: ClientSessionMemoryCache,
    tickets: Mutex<VecDeque<(ServerName<'static>, Tls13ClientSessionValue)>>,
    /// Tickets received, and those of them that allow early data.
    pub issued: AtomicU64,
    pub early: AtomicU64,
}

/// The same pool, taking no ticket: a priming handshake is full.
#[derive(Debug)]
pub(crate) struct Filler(pub Arc<TicketPool>);

impl TicketPool {
    pub fn new() -> Arc<TicketPool> {
        Arc::new(TicketPool {
            hints: ClientSessionMemoryCache::new(4),
            tickets: Mutex::new(VecDeque::new()),
            issued: AtomicU64::new(0),
            early: AtomicU64::new(0),
        })
    }

    pub fn issued(&self) -> u64 {
        self.issued.load(Ordering::Relaxed)
    }

    pub fn early(&self) -> u64 {
        self.early.load(Ordering::Relaxed)
    }

    fn keep(&self, name: ServerName<'static>, value: Tls13ClientSessionValue) {
        self.issued.fetch_add(1, Ordering::Relaxed);
        // QUIC allows early data only with a limit of 2^32 - 1.
        if value.max_early_data_size() == u32::MAX {
            self.early.fetch_add(1, Ordering::Relaxed);
        }
        let mut t = self.tickets.lock().unwrap_or_else(|p| p.into_inner());
        if t.len() >= MOST {
            t.pop_front();
        }
        t.push_back((name, value));
    }
}

impl ClientSessionStore for TicketPool {
    fn set_kx_hint(&self, server_name: ServerName<'static>, group: NamedGroup) {
        self.hints.set_kx_hint(server_name, group);
    }

    fn kx_hint(&self, server_name: &ServerName<'_>) -> Option<NamedGroup> {
        self.hints.kx_hint(server_name)
    }

    fn set_tls12_session(&self, _: ServerName<'static>, _: Tls12ClientSessionValue) {}

    fn tls12_session(&self, _: &ServerName<'_>) -> Option<Tls12ClientSessionValue> {
        None
    }

    fn remove_tls12_session(&self, _: &ServerName<'static>) {}

    fn insert_tls13_ticket(&self, name: ServerName<'static>, value: Tls13ClientSessionValue) {
        self.keep(name, value);
    }

    /// The newest ticket for `name`: the freshest is likeliest accepted.
    fn take_tls13_ticket(&self, name: &ServerName<'static>) -> Option<Tls13ClientSessionValue> {
        let mut t = self.tickets.lock().unwrap_or_else(|p| p.into_inner());
        let at = t.iter().rposition(|(n, _)| n == name)?;
        t.remove(at).map(|(_, v)| v)
    }
}

impl ClientSessionStore for Filler {
    fn set_kx_hint(&self, server_name: ServerName<'static>, group: NamedGroup) {
        self.0.set_kx_hint(server_name, group);
    }

    fn kx_hint(&self, server_name: &ServerName<'_>) -> Option<NamedGroup> {
        self.0.kx_hint(server_name)
    }

    fn set_tls12_session(&self, _: ServerName<'static>, _: Tls12ClientSessionValue) {}

    fn tls12_session(&self, _: &ServerName<'_>) -> Option<Tls12ClientSessionValue> {
        None
    }

    fn remove_tls12_session(&self, _: &ServerName<'static>) {}

    fn insert_tls13_ticket(&self, name: ServerName<'static>, value: Tls13ClientSessionValue) {
        self.0.keep(name, value);
    }

    fn take_tls13_ticket(&self, _: &ServerName<'static>) -> Option<Tls13ClientSessionValue> {
        None
    }
}
