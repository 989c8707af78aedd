//! The kernel's arrival stamps (`SO_TIMESTAMPNS`), known to be on before a
//! run relies on them.
//!
//! The kernel stamps arriving packets only while some socket on the machine
//! asks for stamps, and it switches that on from a deferred work item when
//! the first one asks. Until the item has run, a UDP datagram is stamped
//! when it is read and a TCP segment not at all, so the first answers of a
//! run that reads late would be timed at their read, later than they came
//! (the flake hunt caught the same race in tests on a busy machine). A run
//! that reads late holds an [`ArrivalStamps`]: it has seen a datagram
//! stamped before it was read, and while it lives the kernel keeps stamping.

use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use crate::clock;
use crate::h3::udp::{recv_batch, RxBatch};
use crate::sockopt::set_int_option;

/// A socket that asks for stamps; stamping stays on while it lives.
pub(crate) struct ArrivalStamps {
    _rx: UdpSocket,
}

/// How long a probe datagram waits unread: a stamp before its read is then
/// the arrival's, since a stamp taken at the read comes after this.
const PROBE_GAP: Duration = Duration::from_micros(500);

impl ArrivalStamps {
    /// Asks for stamps and waits, `within` at most, until a datagram sent
    /// over loopback is stamped before it is read. `None` when none was:
    /// the kernel gives no arrival stamps here (or not yet), and a late
    /// read's time stands as the answer's, later than its arrival.
    pub(crate) fn on(within: Duration) -> Option<ArrivalStamps> {
        let tx = UdpSocket::bind("127.0.0.1:0").ok()?;
        let rx = UdpSocket::bind("127.0.0.1:0").ok()?;
        tx.connect(rx.local_addr().ok()?).ok()?;
        rx.set_nonblocking(true).ok()?;
        set_int_option(rx.as_raw_fd(), libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1).ok()?;
        let deadline = Instant::now() + within;
        let mut batch = RxBatch::new();
        // Bounded by the deadline and by a count, whichever comes first.
        for _ in 0..10_000 {
            tx.send(&[0; 8]).ok()?;
            std::thread::sleep(PROBE_GAP);
            let read_at = clock::realtime();
            // Loopback delivers within the send; an empty read is a
            // stalled machine, and the next probe tries again.
            if recv_batch(rx.as_raw_fd(), &mut batch).is_ok()
                && batch
                    .got
                    .iter()
                    .any(|g| g.stamp.is_some_and(|t| t < read_at))
            {
                return Some(ArrivalStamps { _rx: rx });
            }
            if Instant::now() >= deadline {
                break;
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn once_on_a_new_socket_s_messages_are_stamped_before_they_are_read() {
        let _on = ArrivalStamps::on(Duration::from_secs(1)).expect("arrival stamps");
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        rx.set_nonblocking(true).unwrap();
        set_int_option(rx.as_raw_fd(), libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1).unwrap();
        let sent = clock::realtime();
        tx.send(&[1; 8]).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let read = clock::realtime();
        let mut batch = RxBatch::new();
        recv_batch(rx.as_raw_fd(), &mut batch).unwrap();
        let t = batch.got[0].stamp.expect("a stamp");
        // Stamped when it came, not when read 20 ms (or more) later.
        assert!(t >= sent && t + 5_000_000 < read, "{sent} {t} {read}");
    }
}
