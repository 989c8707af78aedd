//! A connection's CONNECT tunnel through a proxy (`https://` targets with
//! `--proxy`, see [`crate::proxy`]): asked once TCP to the proxy is open,
//! answered before TLS says anything. The exchange belongs to opening the
//! connection: its time joins the connect time, never a request's latency,
//! and a proxy that refuses or closes fails the connect as a refused
//! connect does. Loads without a proxy never come here.

use std::io::{self, Read, Write};

use crate::clock::{self, Nanos};
use crate::histogram::record_ns;
use crate::proxy::{reply, Reply};
use crate::stats::Failure;

use super::conn::State;
use super::{Worker, LOW_WATER};

impl Worker {
    /// TCP to the proxy is open (`since`: when its connect began): sends
    /// CONNECT. A fresh socket's send buffer takes its few hundred bytes in
    /// one write; one that does not is a failed connect.
    pub(super) fn ask_tunnel(&mut self, i: usize, since: Nanos) {
        let Some(tunnel) = &self.plan.tunnel else {
            return;
        };
        let c = &mut self.conns[i];
        let Some(s) = c.stream.as_mut() else { return };
        match s.sock_mut().write(&tunnel.request) {
            Ok(n) if n == tunnel.request.len() => {
                c.pending.clear();
                c.state = State::Tunnelling { since };
            }
            _ => self.open_failed(i, clock::now(), Failure::Connect),
        }
    }

    /// Reads the proxy's answer as far as the socket allows; true once the
    /// tunnel is open and the TLS handshake may begin. The answer's bytes
    /// wait in the connection's `pending`, empty again once it is open.
    pub(super) fn read_tunnel(&mut self, i: usize, since: Nanos) -> bool {
        let Some(tunnel) = &self.plan.tunnel else {
            return false;
        };
        let c = &mut self.conns[i];
        let Some(s) = c.stream.as_mut() else {
            return false;
        };
        let mut buf = [0u8; 512];
        let verdict = loop {
            match s.sock_mut().read(&mut buf) {
                Ok(0) => break Err(()),
                Ok(n) => {
                    c.pending.extend_from_slice(&buf[..n]);
                    match reply(&c.pending, &tunnel.via) {
                        Reply::More => {}
                        Reply::Open => break Ok(()),
                        Reply::Refused(_) => break Err(()),
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break Err(()),
            }
        };
        c.pending.clear();
        let now = clock::now();
        if verdict.is_err() {
            // The check before the run named the refusal; one that comes
            // later counts as the failed connect it is.
            self.open_failed(i, now, Failure::Connect);
            return false;
        }
        record_ns(&mut self.connect_time, now.saturating_sub(since));
        if self.deferred && !self.plan.h2 {
            if let Some(s) = c.stream.as_ref() {
                if s.set_low_water(LOW_WATER).is_ok() {
                    c.lowat = LOW_WATER;
                }
            }
        }
        c.state = State::Handshaking { since: now };
        true
    }
}
