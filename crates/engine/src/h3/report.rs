//! What a run over HTTP/3 adds to its outcome: how its streams and
//! connections ended other than by an answer, by error code, and what
//! QUIC itself did (packets sent, lost, datagrams dropped), with the
//! generator's own part apart from the server's: its acknowledgement
//! delay, how long requests waited inside the generator for the
//! congestion window or the pacer, and its system calls.
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
    /// The longest the client delays an acknowledgement, ms (what it
    /// announces as `max_ack_delay`).
    #[serde(default)]
    pub ack_delay_ms: u64,
    /// ACK frames the client sent.
    #[serde(default)]
    pub acks_sent: u64,
    /// QUIC's view of the path at each connection's end.
    #[serde(default)]
    pub path: QuicPath,
    /// How long requests waited inside the generator, from being handed
    /// to QUIC to their first packet leaving the socket (the congestion
    /// window, the pacer, the loop's own turn): never in the latency's
    /// server part, shown beside it.
    #[serde(default)]
    pub send_wait: SendWait,
    /// The UDP sockets' system calls.
    #[serde(default)]
    pub udp: UdpCalls,
    /// How the load threads read their sockets: the wake-ups, and how
    /// long datagrams waited in a socket for the thread (never in a
    /// latency: each datagram is timed by its arrival).
    #[serde(default)]
    pub reading: Reading,
    /// 0-RTT resumption, when asked for (`--zero-rtt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zero_rtt: Option<ZeroRtt>,
    #[serde(skip)]
    pub(crate) waits: Waits,
}

/// 0-RTT resumption, counted apart from the full handshakes. The ledger
/// knows nothing of it: a request sent as early data that the server
/// refused is sent again by the client and is still one request, timed
/// from its first send.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ZeroRtt {
    /// Full handshakes made before the run to get the server's session
    /// tickets, the tickets received, and how many allow early data.
    pub primed: u64,
    pub tickets: u64,
    pub early_tickets: u64,
    /// Connections that opened with 0-RTT keys (a ticket allowing early
    /// data), and of those whose handshake ended, how many the server's
    /// early data accepted or refused.
    pub tried: u64,
    pub accepted: u64,
    pub rejected: u64,
    /// Requests sent as 0-RTT data, and those of them sent again because
    /// the server refused their early data.
    pub early_requests: u64,
    pub resent: u64,
    /// The handshake time of the connections that tried 0-RTT (the
    /// run's handshake percentiles are the others', full 1-RTT ones).
    pub handshake: SendWait,
    #[serde(skip)]
    pub(crate) times: Waits,
}

impl ZeroRtt {
    fn add(&mut self, o: &ZeroRtt) {
        self.primed += o.primed;
        self.tickets += o.tickets;
        self.early_tickets += o.early_tickets;
        self.tried += o.tried;
        self.accepted += o.accepted;
        self.rejected += o.rejected;
        self.early_requests += o.early_requests;
        self.resent += o.resent;
        self.times.add(&o.times);
        self.handshake = self.times.summary();
    }

    pub(crate) fn handshake_took(&mut self, ns: u64) {
        self.times.record(ns);
        self.handshake = self.times.summary();
    }

    /// One line when 0-RTT was asked for and not (all) used, saying why.
    pub fn warning(&self) -> Option<String> {
        if self.tickets == 0 {
            return Some(
                "0-RTT was asked (--zero-rtt) but not used: the server issued no session ticket"
                    .into(),
            );
        }
        if self.early_tickets == 0 {
            return Some("0-RTT was asked (--zero-rtt) but not used: the server's session tickets allow no early data".into());
        }
        if self.tried > 0 && self.accepted == 0 {
            return Some(format!(
                "0-RTT was asked (--zero-rtt) but refused: the server refused the early data of all {} connections that tried it, and their requests went again as 1-RTT",
                self.tried
            ));
        }
        if self.tried == 0 {
            return Some(
                "0-RTT was asked (--zero-rtt) but not used: no connection had a ticket to resume"
                    .into(),
            );
        }
        None
    }
}

/// QUIC's estimates of the path, over the connections that completed
/// their handshake.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuicPath {
    /// Connections these figures are of.
    pub connections: u64,
    /// Smoothed RTT, µs: the mean over connections, and the highest.
    pub rtt_smoothed_us: u64,
    pub rtt_smoothed_max_us: u64,
    /// The lowest RTT any connection saw, µs.
    pub rtt_min_us: u64,
    /// Congestion window, bytes: the mean over connections.
    pub cwnd_bytes: u64,
    /// Congestion events (losses that shrank the window).
    pub congestion_events: u64,
}

impl QuicPath {
    pub(crate) fn add_connection(&mut self, rtt: u64, min_rtt: u64, cwnd: u64, events: u64) {
        self.add(&QuicPath {
            connections: 1,
            rtt_smoothed_us: rtt,
            rtt_smoothed_max_us: rtt,
            rtt_min_us: min_rtt,
            cwnd_bytes: cwnd,
            congestion_events: events,
        });
    }

    fn add(&mut self, o: &QuicPath) {
        let n = self.connections + o.connections;
        if n == 0 {
            return;
        }
        let mean = |a: u64, b: u64| {
            ((a as u128 * self.connections as u128 + b as u128 * o.connections as u128) / n as u128)
                as u64
        };
        self.rtt_smoothed_us = mean(self.rtt_smoothed_us, o.rtt_smoothed_us);
        self.cwnd_bytes = mean(self.cwnd_bytes, o.cwnd_bytes);
        self.rtt_smoothed_max_us = self.rtt_smoothed_max_us.max(o.rtt_smoothed_max_us);
        self.rtt_min_us = match (self.connections, o.connections) {
            (0, _) => o.rtt_min_us,
            (_, 0) => self.rtt_min_us,
            _ => self.rtt_min_us.min(o.rtt_min_us),
        };
        self.congestion_events += o.congestion_events;
        self.connections = n;
    }
}

/// Percentiles of the requests' waits inside the generator, µs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendWait {
    /// Requests timed (their first packet left).
    pub count: u64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
}

/// How the load threads read their sockets. At a constant rate a thread
/// sleeps until its next send is due and then reads what arrived (see
/// `h3::load`): datagrams wait in the socket for it, and quinn is handed
/// each at its kernel arrival stamp, so the wait is in no latency and no
/// RTT; it delays the ACKs and flow-control credit the server gets, and
/// is shown here, beside the ACK delay.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reading {
    /// Times a load thread's wait ended (a send due, quinn's timer, a
    /// socket), and of those, the waits a socket ended (a datagram read
    /// at once, or a socket error).
    pub wakeups: u64,
    pub socket_wakeups: u64,
    /// Per stamped datagram, its read time less its arrival: `count` the
    /// datagrams timed, µs.
    pub late: SendWait,
    /// Datagrams the kernel gave no arrival stamp (their socket is read
    /// at once, and they are timed at their read).
    pub unstamped: u64,
    #[serde(skip)]
    lateness: Waits,
}

impl Reading {
    pub(crate) fn add_datagrams(&mut self, late: &Waits, unstamped: u64) {
        self.lateness.add(late);
        self.late = self.lateness.summary();
        self.unstamped += unstamped;
    }

    fn add(&mut self, o: &Reading) {
        self.wakeups += o.wakeups;
        self.socket_wakeups += o.socket_wakeups;
        self.add_datagrams(&o.lateness, o.unstamped);
    }
}

/// The UDP sockets' system calls and the datagrams they carried: with GSO
/// one send carries several datagrams, with GRO one receive reads several.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UdpCalls {
    /// `send`/`sendmsg` calls, and `recvmsg` calls (the last of each
    /// read, which finds nothing, included).
    pub send_calls: u64,
    pub recv_calls: u64,
    pub datagrams_sent: u64,
    pub datagrams_received: u64,
    /// The kernel refused GSO: datagrams went one per call from then on.
    pub gso_refused: bool,
    /// The kernel coalesced received datagrams (UDP GRO).
    pub gro: bool,
}

/// A histogram of waits in nanoseconds, mergeable and cheap: eight
/// buckets per power of two (within 12.5 %).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Waits {
    buckets: Vec<u64>,
    count: u64,
    max: u64,
}

const SUB: u64 = 8;

fn bucket(v: u64) -> usize {
    if v < SUB {
        return v as usize;
    }
    let e = 63 - u64::from(v.leading_zeros());
    let sub = (v >> (e - 3)) & (SUB - 1);
    ((e - 2) * SUB + sub) as usize
}

/// The lowest value of bucket `i`.
fn low(i: usize) -> u64 {
    let i = i as u64;
    if i < SUB {
        return i;
    }
    let (e, sub) = (i / SUB + 2, i % SUB);
    (SUB + sub) << (e - 3)
}

impl Waits {
    pub fn record(&mut self, ns: u64) {
        let b = bucket(ns);
        if self.buckets.len() <= b {
            self.buckets.resize(b + 1, 0);
        }
        self.buckets[b] += 1;
        self.count += 1;
        self.max = self.max.max(ns);
    }

    fn add(&mut self, o: &Waits) {
        if self.buckets.len() < o.buckets.len() {
            self.buckets.resize(o.buckets.len(), 0);
        }
        for (a, b) in self.buckets.iter_mut().zip(&o.buckets) {
            *a += b;
        }
        self.count += o.count;
        self.max = self.max.max(o.max);
    }

    /// The value at quantile `q`, ns: its bucket's highest value, at most
    /// the highest seen.
    fn quantile(&self, q: f64) -> u64 {
        let rank = ((q * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return (low(i + 1) - 1).min(self.max);
            }
        }
        self.max
    }

    fn summary(&self) -> SendWait {
        SendWait {
            count: self.count,
            p50_us: self.quantile(0.5) / 1_000,
            p99_us: self.quantile(0.99) / 1_000,
            max_us: self.max / 1_000,
        }
    }
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
        self.ack_delay_ms = self.ack_delay_ms.max(o.ack_delay_ms);
        self.acks_sent += o.acks_sent;
        self.path.add(&o.path);
        self.add_waits(&o.waits);
        let u = &mut self.udp;
        u.send_calls += o.udp.send_calls;
        u.recv_calls += o.udp.recv_calls;
        u.datagrams_sent += o.udp.datagrams_sent;
        u.datagrams_received += o.udp.datagrams_received;
        u.gso_refused |= o.udp.gso_refused;
        u.gro |= o.udp.gro;
        self.reading.add(&o.reading);
        if let Some(z) = &o.zero_rtt {
            self.zero_rtt.get_or_insert_with(ZeroRtt::default).add(z);
        }
    }

    pub(crate) fn add_waits(&mut self, w: &Waits) {
        self.waits.add(w);
        self.send_wait = self.waits.summary();
    }

    /// System calls on the UDP sockets per request answered.
    pub fn syscalls_per_request(&self, answered: u64) -> Option<f64> {
        (answered > 0).then(|| (self.udp.send_calls + self.udp.recv_calls) as f64 / answered as f64)
    }

    /// What the reader of a run must know about the generator's own part.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if self.send_wait.p99_us > 1_000 {
            w.push(format!(
                "HTTP/3 requests waited inside the generator before their first packet left (congestion window, pacer or the loop's turn): p99 {} µs, max {} µs; the latency includes that wait",
                self.send_wait.p99_us, self.send_wait.max_us
            ));
        }
        if let Some(line) = self.zero_rtt.as_ref().and_then(ZeroRtt::warning) {
            w.push(line);
        }
        if self.reading.late.p99_us > 5_000 {
            w.push(format!(
                "HTTP/3 datagrams waited in the generator's sockets before it read them: p99 {} µs, max {} µs; each is timed by its arrival (not in the latency), but the server's ACKs and flow-control credit were held back as long",
                self.reading.late.p99_us, self.reading.late.max_us
            ));
        }
        if self.datagrams_dropped > 0 {
            w.push(format!(
                "{} QUIC datagrams were not sent because the generator's UDP socket buffer was full: QUIC sent them again, and the latency includes the loss recovery",
                self.datagrams_dropped
            ));
        }
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_within_an_eighth() {
        for v in (0..5_000u64).chain([1 << 20, (1 << 33) + 12_345, u64::MAX >> 2]) {
            let b = bucket(v);
            assert!(low(b) <= v && v < low(b + 1), "{v} in {b}");
            assert!(low(b + 1) - low(b) <= (v / SUB).max(1), "{v}");
        }
    }

    #[test]
    fn waits_merge_and_give_percentiles() {
        let mut a = Waits::default();
        let mut b = Waits::default();
        for i in 1..=99 {
            a.record(i * 1_000);
        }
        b.record(5_000_000);
        let mut r = H3Report::default();
        r.add_waits(&a);
        let mut o = H3Report::default();
        o.add_waits(&b);
        r.add(&o);
        assert_eq!(r.send_wait.count, 100);
        let p50 = r.send_wait.p50_us;
        assert!((50..=57).contains(&p50), "{p50}");
        let p99 = r.send_wait.p99_us;
        assert!((99..=112).contains(&p99), "{p99}");
        assert_eq!(r.send_wait.max_us, 5_000);
    }

    #[test]
    fn waits_and_drops_of_the_generators_own_are_warned_of() {
        let mut r = H3Report::default();
        assert!(r.warnings().is_empty());
        let mut w = Waits::default();
        w.record(3_000_000);
        r.add_waits(&w);
        r.datagrams_dropped = 4;
        let all = r.warnings().join("\n");
        assert!(
            all.contains("p99 3") && all.contains("inside the generator"),
            "{all}"
        );
        assert!(all.contains("4 QUIC datagrams were not sent"), "{all}");
    }

    #[test]
    fn reading_merges_over_threads_and_a_long_wait_is_warned_of() {
        let mut a = H3Report::default();
        let mut late = Waits::default();
        for us in [100, 200, 300] {
            late.record(us * 1_000);
        }
        a.reading.add_datagrams(&late, 2);
        a.reading.wakeups = 10;
        a.reading.socket_wakeups = 1;
        let mut b = H3Report::default();
        let mut long = Waits::default();
        for _ in 0..3 {
            long.record(9_000_000);
        }
        b.reading.add_datagrams(&long, 0);
        b.reading.wakeups = 5;
        a.add(&b);
        let r = &a.reading;
        assert_eq!((r.wakeups, r.socket_wakeups, r.unstamped), (15, 1, 2));
        assert_eq!(r.late.count, 6);
        assert_eq!(r.late.max_us, 9_000);
        assert!(a.reading.late.p99_us > 5_000);
        let all = a.warnings().join("\n");
        assert!(all.contains("waited in the generator's sockets"), "{all}");
        assert!(H3Report::default().warnings().is_empty());
    }

    #[test]
    fn path_means_weigh_connections() {
        let mut p = QuicPath::default();
        p.add_connection(100, 40, 12_000, 0);
        p.add_connection(300, 30, 24_000, 2);
        let mut q = QuicPath::default();
        q.add(&p);
        q.add(&QuicPath::default());
        assert_eq!(q.connections, 2);
        assert_eq!(q.rtt_smoothed_us, 200);
        assert_eq!(q.rtt_smoothed_max_us, 300);
        assert_eq!(q.rtt_min_us, 30);
        assert_eq!(q.cwnd_bytes, 18_000);
        assert_eq!(q.congestion_events, 2);
    }
}
