//! What the engine's and the CLI's tests share, in one place so that it is
//! written once: the certificate authority made for a test ([`pki`]), the
//! accept loop and socket helpers every test server uses ([`accept`]), and
//! the deterministic servers written for the tests: scripted HTTP/1.1
//! (plain or TLS, [`scripted`]), a canned keep-alive answer ([`canned`]),
//! a fast answerer, a recorder and a silent server ([`keepalive`]), a
//! counting service ([`counting`]), HTTP/2 ([`h2`]) and HTTP/3 (quic-go,
//! built from Go sources in `fixtures/`: [`h3`]), any of them over a
//! unix socket ([`unix_relay`]) or behind an HTTP proxy ([`proxy`]); and
//! the tolerance
//! rule of every assertion about time ([`timing`]). Every server
//! listens on loopback (the fast answerer on all addresses of its own
//! namespace), stops when dropped and after a lifetime regardless; every
//! loop is bounded by a read timeout or the stop flag. Timing-sensitive
//! tests depend on these servers keeping up: change what they do only with
//! the tests that measure through them.

pub mod accept;
pub mod canned;
pub mod counting;
pub mod h2;
pub mod h3;
pub mod keepalive;
pub mod pki;
pub mod proxy;
pub mod scripted;
pub mod timing;
pub mod unix_relay;

use std::sync::{Mutex, MutexGuard};

/// Pins the calling thread to `cpu` (a test's busy loop beside the load
/// thread, or a server kept off it).
pub fn pin_current_thread(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is empty; CPU_SET stays within it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set);
    }
}

/// Tests of one binary that measure, or whose assertions are about timing,
/// hold this for their whole body so that they do not steal each other's
/// CPU (each test binary has its own lock).
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}
