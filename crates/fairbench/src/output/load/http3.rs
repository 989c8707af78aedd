//! The HTTP/3 lines of `load`'s summary: QUIC's handshakes and packets,
//! how streams and connections ended without an answer, and the
//! generator's own part (its acknowledgement delay, the requests' wait
//! inside it for their first packet, its UDP system calls) beside QUIC's
//! view of the path, so that none of it hides in the latency.

use std::fmt::Write;

use fairbench_engine::H3Report;

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
    s
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
        format!(
            "requests waited for their first packet p50 {}, p99 {}, max {}",
            micros(w.p50_us as f64),
            micros(w.p99_us as f64),
            micros(w.max_us as f64)
        )
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

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
