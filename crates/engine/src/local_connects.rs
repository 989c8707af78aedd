//! Connects that failed on this machine: the generator's, not the server's.
//!
//! A connect that fails before any packet leaves (no free local port, no
//! file descriptor, no kernel memory for a socket) says nothing about the
//! server, yet it ends its request as a failed connect. Such requests are
//! counted with the failed connects (`errors.local` of `errors.connect`)
//! and kept out of the latency figures, where every other unanswered
//! request stands at the timeout: the wait was the generator's. The commonest cause is fairbench's own: without keep-alive
//! every connection it closes holds its local port in TIME_WAIT for a
//! minute, and over loopback the kernel reuses one only after a second
//! (`net.ipv4.tcp_tw_reuse`), so the connects per second are capped by the
//! size of `net.ipv4.ip_local_port_range`, and that cap would read as the
//! server's capacity. Such failures are counted apart and named loudly.

use std::io;

/// Whether a failed connect (or the registration of its socket) never
/// reached the network: the errors the kernel gives for a local shortage.
pub fn is_local(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EADDRNOTAVAIL | libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

/// What ran short, as the warning and the dial's error both say it.
pub const SHORTAGE: &str = "fairbench ran out of local ports (its own closed connections hold theirs in TIME_WAIT; see net.ipv4.ip_local_port_range) or of file descriptors or socket memory";

/// The loud line when any connect failed here (`local` of the `failed`
/// connects, for `planned` requests), and what that did to the figures.
pub fn warning(local: u64, failed: u64, planned: u64) -> Option<String> {
    (local > 0).then(|| {
        format!(
            "{} of the {} failed connects (for {} planned requests) failed on this machine before reaching the server: {SHORTAGE}. They are the generator's failures, not the server's: their requests are counted with the failed connects but kept out of the latency, and the throughput is capped by them: keep connections alive, open fewer per second, or widen the port range, and measure again",
            local, failed, planned
        )
    })
}

/// Where the `n` unanswered requests stand in the latency figures, when
/// `local` of them failed on this machine (`timeout` as words).
pub fn timed(n: u64, local: u64, timeout: &str) -> String {
    let timed = n.saturating_sub(local);
    if local == 0 {
        format!("they are in the latency figures as at least the {timeout} timeout")
    } else if timed == 0 {
        "none reached the server: their connects failed on this machine (the generator's), so they are kept out of the latency figures".into()
    } else {
        format!("{timed} are in the latency figures as at least the {timeout} timeout; {local} whose connects failed on this machine (the generator's) are kept out of them")
    }
}

/// Why requests due at a constant rate found no connection, when some of
/// fairbench's own connects had failed.
pub const NO_CONNECTION: &str = "fairbench's own connects failed on this machine (see that warning), so connections were missing when requests were due: the generator's shortfall, not the server's";

/// The line for `n` requests due at a constant rate but never sent before
/// their timeout, with why: failed connects (`local` of `failed` on this
/// machine) left no connection to carry them, or every one was busy.
pub fn never_sent(n: u64, local: u64, failed: u64) -> Option<String> {
    (n > 0).then(|| {
        format!(
            "{n} requests were due but never sent: {}",
            never_sent_why(local, failed)
        )
    })
}

fn never_sent_why(local: u64, failed: u64) -> &'static str {
    if local > 0 {
        NO_CONNECTION
    } else if failed > 0 {
        "connects failed (the server refused or did not answer them), so no connection could carry them before their timeout"
    } else {
        "every connection stayed busy until their timeout; raise --connections to offer the full rate"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_local_shortages_are_local() {
        for e in [
            libc::EADDRNOTAVAIL,
            libc::EMFILE,
            libc::ENFILE,
            libc::ENOBUFS,
        ] {
            assert!(is_local(&io::Error::from_raw_os_error(e)), "{e}");
        }
        // The server's answers (a refusal, a reset, no route, a timeout).
        for e in [
            libc::ECONNREFUSED,
            libc::ECONNRESET,
            libc::EHOSTUNREACH,
            libc::ETIMEDOUT,
        ] {
            assert!(!is_local(&io::Error::from_raw_os_error(e)), "{e}");
        }
        assert!(!is_local(&io::Error::other("no errno")));
    }

    #[test]
    fn only_the_requests_that_reached_the_server_are_timed() {
        assert_eq!(
            timed(3, 0, "2 s"),
            "they are in the latency figures as at least the 2 s timeout"
        );
        assert!(timed(3, 3, "2 s").starts_with("none reached the server"));
        assert!(timed(5, 3, "2 s").starts_with(
            "2 are in the latency figures as at least the 2 s timeout; 3 whose connects"
        ));
    }

    #[test]
    fn the_warning_counts_and_names_the_cause_only_when_there_was_one() {
        assert_eq!(warning(0, 76, 678), None);
        assert_eq!(never_sent(0, 5, 5), None);
        assert!(never_sent(3, 0, 0)
            .unwrap()
            .starts_with("3 requests were due but never sent: every connection stayed busy"));
        assert!(never_sent_why(0, 5).contains("the server refused"));
        assert!(never_sent_why(5, 5).contains("not the server's"));
        let w = warning(76, 76, 678).unwrap();
        assert!(
            w.starts_with(
                "76 of the 76 failed connects (for 678 planned requests) failed on this machine"
            ),
            "{w}"
        );
        assert!(
            w.contains("not the server's") && w.contains("ip_local_port_range"),
            "{w}"
        );
    }
}
