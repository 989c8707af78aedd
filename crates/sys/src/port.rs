//! Ports for the servers fairbench starts: free when chosen, and chosen
//! below the kernel's ephemeral range.
//!
//! A port found by binding port 0 and letting go comes from the ephemeral
//! range (`net.ipv4.ip_local_port_range`), where the kernel also picks the
//! source port of every outgoing connection on the machine and the port of
//! every other bind to port 0. Between the choice and the server's own
//! bind, any of those can take it: the server then fails to bind, and
//! whatever took the port answers in its place until its exit is seen (a
//! fresh clone's CI once graded another test's server that way). Below the
//! range the kernel never picks a port by itself, so only a process that
//! names its port can take one; fairbench's own choices start at random
//! places in a band of thousands, so two of them rarely meet. When they
//! do, the readiness check finds the port held by a process that is not
//! the server's and refuses to measure it (see [`crate::listener`]).

use std::io;
use std::net::{TcpListener, UdpSocket};

/// Where the kernel's ephemeral range starts when /proc does not say.
const EPHEMERAL_START: u16 = 32768;
/// Ports tried before giving up.
const TRIES: usize = 512;

/// A port free a moment ago for TCP and for UDP (a QUIC server listens on
/// the same number), on every address, below the ephemeral range. Another
/// process naming the same port may still take it in between; a server
/// that fails to bind then shows that in its log.
pub fn free_port() -> io::Result<u16> {
    let (lo, hi) = band(ephemeral_start());
    if hi <= lo {
        return any_port();
    }
    let span = u32::from(hi - lo);
    let start = seed() % span;
    for k in 0..(TRIES as u32).min(span) {
        let port = lo + ((start + k) % span) as u16;
        if bindable(port) {
            return Ok(port);
        }
    }
    any_port()
}

/// The band below the ephemeral range that ports are chosen from: its
/// lower half, and never a port below 1024.
fn band(ephemeral_start: u16) -> (u16, u16) {
    ((ephemeral_start / 2).max(1024), ephemeral_start)
}

fn ephemeral_start() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse().ok())
        .unwrap_or(EPHEMERAL_START)
}

/// Differs between processes and between calls, so that two fairbench
/// processes choosing at once start at different places.
fn seed() -> u32 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let mixed = (u64::from(std::process::id()) << 32 | u64::from(nanos))
        .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (mixed >> 32) as u32
}

fn bindable(port: u16) -> bool {
    let tcp = TcpListener::bind(("::", port)).or_else(|_| TcpListener::bind(("0.0.0.0", port)));
    let udp = UdpSocket::bind(("::", port)).or_else(|_| UdpSocket::bind(("0.0.0.0", port)));
    tcp.is_ok() && udp.is_ok()
}

/// The kernel's choice, where no band is left below its range.
fn any_port() -> io::Result<u16> {
    let l = TcpListener::bind("[::]:0").or_else(|_| TcpListener::bind("0.0.0.0:0"))?;
    Ok(l.local_addr()?.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chosen_port_is_below_the_ephemeral_range_and_free() {
        let start = ephemeral_start();
        let (lo, hi) = band(start);
        for _ in 0..20 {
            let p = free_port().unwrap();
            assert!((lo..hi).contains(&p), "{p} not in {lo}..{hi}");
            // Free for a server of either protocol. A test of this binary
            // that forks a server while the choice's probe sockets are
            // open holds copies of them until its child's exec (the likely
            // cause of an EADDRINUSE here in a loaded hunt): the bind is
            // tried again for up to 10 s; a real holder keeps the port
            // longer and still fails the test.
            let bind_soon = |bind: &dyn Fn() -> io::Result<()>| {
                let t = std::time::Instant::now();
                loop {
                    match bind() {
                        Err(_) if t.elapsed() < std::time::Duration::from_secs(10) => {
                            std::thread::sleep(std::time::Duration::from_millis(10));
                        }
                        r => return r,
                    }
                }
            };
            bind_soon(&|| TcpListener::bind(("127.0.0.1", p)).map(drop)).unwrap();
            bind_soon(&|| UdpSocket::bind(("127.0.0.1", p)).map(drop)).unwrap();
        }
    }

    #[test]
    fn a_port_taken_for_either_protocol_is_not_chosen() {
        let (lo, hi) = band(ephemeral_start());
        let taken = free_port().unwrap();
        let _udp = UdpSocket::bind(("::", taken)).or_else(|_| UdpSocket::bind(("0.0.0.0", taken)));
        assert!(!bindable(taken));
        assert!((lo..hi).contains(&free_port().unwrap()));
    }

    #[test]
    fn the_band_is_the_lower_half_below_the_range_and_above_1023() {
        assert_eq!(band(32768), (16384, 32768));
        assert_eq!(band(1500), (1024, 1500));
        assert_eq!(band(900), (1024, 900));
    }
}
