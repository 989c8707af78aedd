//! The HTTP/3 lines of `load`'s summary: QUIC's handshakes and packets,
//! how streams and connections ended without an answer, and the
//! generator's own part (its acknowledgement delay, the requests' wait
//! inside it for their first packet, its UDP system calls) beside QUIC's
//! view of the path, so that none of it hides in the latency.

use std::fmt::Write;

use fairbench_engine::{H3Report, SendWait, ZeroRtt};

use super::ends::by_code;
use crate::units::{bytes, count, micros};

/// The HTTP/3 lines: QUIC's handshakes and packets, and how streams and
/// connections ended without an answer, by error code.
pub fn lines(h: &H3Report, answered: u64) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "  {:<14}{} QUIC handshakes, {} failed; {} packets sent, {} lost, {} datagrams dropped at the socket",
        "HTTP/3",
        count(h.handshakes),
        count(h.handshake_failures),
        count(h.packets_sent),
        count(h.packets_lost),
        count(h.datagrams_dropped)
    );
    if let Some(z) = &h.zero_rtt {
        zero_rtt_line(&mut s, z);
    }
    let mut ends = Vec::new();
    if !h.closes.is_empty() {
        ends.push(format!(
            "connections closed by the server: {}",
            by_code(&h.closes)
        ));
    }
    if !h.lost.is_empty() {
        ends.push(format!("connections lost: {}", by_code(&h.lost)));
    }
    if h.goaways > 0 {
        ends.push(format!(
            "{} GOAWAY ({} streams not processed)",
            count(h.goaways),
            count(h.unprocessed)
        ));
    }
    let errors = (h.protocol_errors > 0).then(|| {
        format!(
            "{} HTTP/3 errors (first: {})",
            count(h.protocol_errors),
            h.protocol_error.as_deref().unwrap_or("?")
        )
    });
    super::ends::line(&mut s, &h.resets, ends, h.cancelled, errors);
    path_line(&mut s, h);
    generator_line(&mut s, h, answered);
    reading_line(&mut s, h, answered);
    s
}

/// 0-RTT resumption (`--zero-rtt`), apart from the full handshakes, whose
/// percentiles are the 1-RTT line's.
fn zero_rtt_line(s: &mut String, z: &ZeroRtt) {
    let hs = &z.handshake;
    let took = if hs.count > 0 {
        format!(
            "; 0-RTT handshakes {} (the 1-RTT line has the full ones)",
            percentiles(hs)
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        s,
        "  {:<14}{} connections tried it: {} accepted, {} refused; {} requests sent as early data ({} sent again){took}; {} tickets ({} allowing early data) from {} handshakes before the run",
        "0-RTT",
        count(z.tried),
        count(z.accepted),
        count(z.rejected),
        count(z.early_requests),
        count(z.resent),
        count(z.tickets),
        count(z.early_tickets),
        count(z.primed)
    );
}

/// QUIC's estimates of the path, at the connections' ends.
fn path_line(s: &mut String, h: &H3Report) {
    let p = &h.path;
    if p.connections == 0 {
        return;
    }
    let _ = writeln!(
        s,
        "  {:<14}RTT smoothed {} (highest {}), min {}; congestion window {} (mean of {} connections), {} congestion events",
        "QUIC path",
        micros(p.rtt_smoothed_us as f64),
        micros(p.rtt_smoothed_max_us as f64),
        micros(p.rtt_min_us as f64),
        bytes(p.cwnd_bytes),
        count(p.connections),
        count(p.congestion_events)
    );
}

/// What the generator itself added: never in the server's part.
fn generator_line(s: &mut String, h: &H3Report, answered: u64) {
    let w = &h.send_wait;
    let wait = if w.count > 0 {
        format!("requests waited for their first packet {}", percentiles(w))
    } else {
        "no request's first packet timed".to_string()
    };
    let u = &h.udp;
    let per = h
        .syscalls_per_request(answered)
        .map(|x| format!("{x:.2} UDP system calls per answer"))
        .unwrap_or_else(|| "no answer".to_string());
    let batching = match (u.gso_refused, u.gro) {
        (false, true) => "GSO, GRO",
        (false, false) => "GSO, no GRO",
        (true, true) => "GSO refused by the kernel, GRO",
        (true, false) => "GSO refused by the kernel, no GRO",
    };
    let _ = writeln!(
        s,
        "  {:<14}ACK delay up to {} ms ({} ACKs sent); {wait}; {per} ({} sends for {} datagrams, {} receives for {}; {batching})",
        "Client QUIC",
        h.ack_delay_ms,
        count(h.acks_sent),
        count(u.send_calls),
        count(u.datagrams_sent),
        count(u.recv_calls),
        count(u.datagrams_received)
    );
}

/// How the load threads read their sockets: what woke them, and how long
/// datagrams waited in a socket (each timed by its arrival stamp, so in no
/// latency; the server's ACKs waited as long).
fn reading_line(s: &mut String, h: &H3Report, answered: u64) {
    let r = &h.reading;
    if r.wakeups == 0 {
        return;
    }
    let late = &r.late;
    let waited = if late.count > 0 {
        format!(
            "datagrams waited in the socket {} (timed by their arrival: not in the latency)",
            percentiles(late)
        )
    } else {
        "no datagram stamped on arrival".to_string()
    };
    let per = if answered > 0 {
        format!(" ({:.2} per answer)", r.wakeups as f64 / answered as f64)
    } else {
        String::new()
    };
    let unstamped = if r.unstamped > 0 {
        format!("; {} datagrams without a stamp", count(r.unstamped))
    } else {
        String::new()
    };
    let _ = writeln!(
        s,
        "  {:<14}{waited}; {} wake-ups{per}, {} by a socket{unstamped}",
        "Client reads",
        count(r.wakeups),
        count(r.socket_wakeups)
    );
}

/// "p50 X, p99 Y, max Z" of a generator-side wait.
fn percentiles(w: &SendWait) -> String {
    format!(
        "p50 {}, p99 {}, max {}",
        micros(w.p50_us as f64),
        micros(w.p99_us as f64),
        micros(w.max_us as f64)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(clippy::field_reassign_with_default)]
    #[test]
    fn the_reading_delay_and_wake_ups_are_shown() {
        let mut h = H3Report::default();
        assert!(!lines(&h, 0).contains("Client reads"));
        h.reading.wakeups = 900;
        h.reading.socket_wakeups = 12;
        h.reading.late = fairbench_engine::SendWait {
            count: 2_000,
            p50_us: 310,
            p99_us: 980,
            max_us: 4_200,
        };
        let s = lines(&h, 1_000);
        assert!(
            s.contains("datagrams waited in the socket p50 310 µs, p99 980 µs, max 4.20 ms"),
            "{s}"
        );
        assert!(
            s.contains("900 wake-ups (0.90 per answer), 12 by a socket"),
            "{s}"
        );
    }

    // The report's histogram is the engine's own: no struct literal here.
    #[allow(clippy::field_reassign_with_default)]
    #[test]
    fn the_generators_part_is_shown_beside_the_path() {
        let mut h = H3Report::default();
        h.ack_delay_ms = 25;
        h.acks_sent = 1_200;
        h.path.connections = 2;
        h.path.rtt_smoothed_us = 150;
        h.path.rtt_smoothed_max_us = 2_500;
        h.path.rtt_min_us = 40;
        h.path.cwnd_bytes = 14_720;
        h.send_wait = fairbench_engine::SendWait {
            count: 1_000,
            p50_us: 12,
            p99_us: 340,
            max_us: 1_500,
        };
        h.udp.send_calls = 600;
        h.udp.recv_calls = 900;
        h.udp.datagrams_sent = 800;
        h.udp.datagrams_received = 1_100;
        h.udp.gro = true;
        let s = lines(&h, 1_000);
        assert!(
            s.contains("RTT smoothed 150 µs (highest 2.50 ms), min 40 µs"),
            "{s}"
        );
        assert!(s.contains("ACK delay up to 25 ms (1,200 ACKs sent)"), "{s}");
        assert!(s.contains("p50 12 µs, p99 340 µs, max 1.50 ms"), "{s}");
        assert!(s.contains("1.50 UDP system calls per answer"), "{s}");
        assert!(s.contains("GSO, GRO"), "{s}");
        assert!(!s.contains("0-RTT"), "{s}");
    }

    #[allow(clippy::field_reassign_with_default)]
    #[test]
    fn zero_rtt_is_counted_apart() {
        let mut h = H3Report::default();
        let mut z = ZeroRtt::default();
        z.primed = 4;
        z.tickets = 4;
        z.early_tickets = 4;
        z.tried = 4;
        z.accepted = 3;
        z.rejected = 1;
        z.early_requests = 40;
        z.resent = 10;
        z.handshake.count = 4;
        z.handshake.p50_us = 300;
        h.zero_rtt = Some(z);
        let s = lines(&h, 1_000);
        assert!(
            s.contains("4 connections tried it: 3 accepted, 1 refused; 40 requests sent as early data (10 sent again)"),
            "{s}"
        );
        assert!(s.contains("0-RTT handshakes p50 300 µs"), "{s}");
    }
}
