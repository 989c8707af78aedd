//! What a run over HTTP/3 adds to its outcome: how its streams and
//! connections ended other than by an answer, by error code, and what
//! QUIC itself did (packets sent, lost, datagrams dropped).
//!
//! These break the ledger down; they are not outcomes of their own. A
//! stream the server reset is a `read` error of the ledger (as over
//! HTTP/2), a connection the server closed fails the requests it carried
//! as `read`, an HTTP/3 violation found by the client is `parse`, a
//! handshake that failed is `tls`, and one that never began (nothing
//! answers QUIC) is `connect`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct H3Report {
    /// Streams per connection asked for (`--streams`).
    pub streams: usize,
    /// Handshakes completed, and how many failed or did not finish within
    /// the timeout.
    pub handshakes: u64,
    pub handshake_failures: u64,
    /// Streams the server reset, by error code.
    pub resets: BTreeMap<String, u64>,
    /// Connections the server closed, by error code.
    pub closes: BTreeMap<String, u64>,
    /// Connections that ended without the server closing them (idle
    /// timeout, the client's own close for an error), by reason.
    pub lost: BTreeMap<String, u64>,
    /// GOAWAY frames received.
    pub goaways: u64,
    /// Streams above a GOAWAY's limit: not processed, so sent again.
    pub unprocessed: u64,
    /// Streams the client reset (`H3_REQUEST_CANCELLED`) when their
    /// timeout passed.
    pub cancelled: u64,
    /// Connections the client closed for an HTTP/3 violation, and the
    /// first one's reason.
    pub protocol_errors: u64,
    #[serde(default)]
    pub protocol_error: Option<String>,
    /// QUIC packets sent and declared lost, over every connection.
    pub packets_sent: u64,
    pub packets_lost: u64,
    /// Datagrams not sent because the socket's buffer was full.
    pub datagrams_dropped: u64,
}

fn add_map(to: &mut BTreeMap<String, u64>, from: &BTreeMap<String, u64>) {
    for (k, v) in from {
        *to.entry(k.clone()).or_default() += v;
    }
}

impl H3Report {
    pub fn add(&mut self, o: &H3Report) {
        self.streams = self.streams.max(o.streams);
        self.handshakes += o.handshakes;
        self.handshake_failures += o.handshake_failures;
        add_map(&mut self.resets, &o.resets);
        add_map(&mut self.closes, &o.closes);
        add_map(&mut self.lost, &o.lost);
        self.goaways += o.goaways;
        self.unprocessed += o.unprocessed;
        self.cancelled += o.cancelled;
        self.protocol_errors += o.protocol_errors;
        if self.protocol_error.is_none() {
            self.protocol_error.clone_from(&o.protocol_error);
        }
        self.packets_sent += o.packets_sent;
        self.packets_lost += o.packets_lost;
        self.datagrams_dropped += o.datagrams_dropped;
    }
}
