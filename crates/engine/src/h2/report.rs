//! What a run over HTTP/2 adds to its outcome: the settings the generator
//! sent, the limits the server announced, and HTTP/2's own ways for a
//! request to end without an answer, by kind.
//!
//! These break the ledger down; they are not outcomes of their own. A
//! stream the server reset (`RST_STREAM`, any code) is a `read` error of
//! the ledger, as a connection lost while the answer was awaited is over
//! HTTP/1.1; a protocol violation the generator found is a `parse` error;
//! a stream the generator gave up on is a `timeout`. A stream refused
//! (`REFUSED_STREAM`) or left unprocessed by a `GOAWAY` (above its last
//! stream id, RFC 9113 §6.8) was never processed: it goes out again
//! whatever its method (RFC 9113 §8.7), keeping its planned time, up to
//! four times, each counted in `Sockets::retried`; a fifth is a `read`
//! error.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct H2Report {
    /// The SETTINGS every connection sent, by name.
    pub settings_sent: BTreeMap<String, u32>,
    /// The connection-level window every connection opened to at once
    /// (`WINDOW_UPDATE` on stream 0) and topped up to once half was used.
    pub connection_window: u32,
    /// Streams per connection asked for (`--streams`).
    pub streams: usize,
    /// The lowest `SETTINGS_MAX_CONCURRENT_STREAMS` the server announced on
    /// any connection (`None`: never announced, i.e. unlimited). Honoured:
    /// a connection carried at most this many streams at once.
    pub server_max_streams: Option<u32>,
    /// Streams the server reset (`RST_STREAM`), by error code, whatever
    /// became of their requests.
    pub resets: BTreeMap<String, u64>,
    /// Of those, `REFUSED_STREAM`: not processed, so sent again.
    pub refused: u64,
    /// `GOAWAY` frames received, by error code.
    pub goaways: BTreeMap<String, u64>,
    /// Streams above a `GOAWAY`'s last stream id: not processed by the
    /// server, so sent again.
    pub unprocessed: u64,
    /// Streams the generator reset (`CANCEL`) when their timeout passed;
    /// the connection went on carrying the others.
    pub cancelled: u64,
    /// Connections the generator ended for a protocol violation of the
    /// server (`GOAWAY` with the error sent), and the first one's reason.
    pub protocol_errors: u64,
    #[serde(default)]
    pub protocol_error: Option<String>,
    /// Frames received, by type.
    pub frames_received: BTreeMap<String, u64>,
}

impl H2Report {
    pub fn add(&mut self, o: &H2Report) {
        if self.settings_sent.is_empty() {
            self.settings_sent = o.settings_sent.clone();
            self.connection_window = o.connection_window;
            self.streams = o.streams;
        }
        self.server_max_streams = match (self.server_max_streams, o.server_max_streams) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        for (k, v) in &o.resets {
            *self.resets.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &o.goaways {
            *self.goaways.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &o.frames_received {
            *self.frames_received.entry(k.clone()).or_default() += v;
        }
        self.refused += o.refused;
        self.unprocessed += o.unprocessed;
        self.cancelled += o.cancelled;
        self.protocol_errors += o.protocol_errors;
        if self.protocol_error.is_none() {
            self.protocol_error.clone_from(&o.protocol_error);
        }
    }

    /// Resets of every code.
    pub fn resets_total(&self) -> u64 {
        self.resets.values().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_add_up_and_the_lowest_limit_stands() {
        let mut a = H2Report {
            server_max_streams: Some(100),
            ..Default::default()
        };
        a.resets.insert("CANCEL".into(), 2);
        let mut b = H2Report {
            server_max_streams: Some(8),
            refused: 1,
            ..Default::default()
        };
        b.settings_sent.insert("ENABLE_PUSH".into(), 0);
        b.resets.insert("CANCEL".into(), 3);
        b.resets.insert("REFUSED_STREAM".into(), 1);
        a.add(&b);
        assert_eq!(a.server_max_streams, Some(8));
        assert_eq!(a.resets_total(), 6);
        assert_eq!(a.settings_sent.len(), 1);
        a.add(&H2Report::default());
        assert_eq!(a.server_max_streams, Some(8));
    }
}
