//! The parts every test server shares: binding, the accept loop, reading
//! what arrived within the read timeout, a request's body length, and a
//! port with nothing listening.

use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A listener on `addr`, non-blocking (so that the accept loop sees its stop
/// flag), and the address it got.
pub fn bind(addr: &str) -> (TcpListener, SocketAddr) {
    let l = TcpListener::bind(addr).expect("bind test server");
    l.set_nonblocking(true).unwrap();
    let at = l.local_addr().unwrap();
    (l, at)
}

/// Accepts on a thread of its own until `stop` is set or `lifetime` has
/// passed, handing each connection to `conn` on that thread (which spawns
/// the connection's own thread); polls every 2 ms while nothing arrives.
pub fn accept_loop<F>(l: TcpListener, stop: Arc<AtomicBool>, lifetime: Duration, mut conn: F)
where
    F: FnMut(TcpStream) + Send + 'static,
{
    std::thread::spawn(move || {
        let t0 = Instant::now();
        while !stop.load(Ordering::Relaxed) && t0.elapsed() < lifetime {
            match l.accept() {
                Ok((c, _)) => conn(c),
                Err(_) => std::thread::sleep(Duration::from_millis(2)),
            }
        }
    });
}

/// One read into `chunk`, appended to `buf`: `Some(n)` bytes arrived
/// (`Some(0)`: none within the read timeout), `None`: the connection is
/// closed or failed.
pub fn read_some<R: Read + ?Sized>(
    c: &mut R,
    chunk: &mut [u8],
    buf: &mut Vec<u8>,
) -> Option<usize> {
    match c.read(chunk) {
        Ok(0) => None,
        Ok(n) => {
            buf.extend_from_slice(&chunk[..n]);
            Some(n)
        }
        Err(e) if idle(&e) => Some(0),
        Err(_) => None,
    }
}

/// Whether an error only says that nothing arrived within the read timeout.
pub fn idle(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

/// The Content-Length a request head declares (0 when none).
pub fn content_length(head: &[u8]) -> usize {
    String::from_utf8_lossy(head)
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0)
}

/// A TCP port on 127.0.0.1 with nothing listening (bound, then let go).
pub fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
