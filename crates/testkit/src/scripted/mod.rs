//! A scripted HTTP/1.1 server (the engine's tests): a handler decides each
//! reply (bytes, a pause, a close) by its number on the connection, over
//! plain TCP or TLS ([`tls`]). Serves every connection on its own thread
//! and stops when dropped; every loop is bounded by a read timeout or the
//! stop flag.

pub mod tls;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::accept::{accept_loop, bind, read_some};

pub const HELLO: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\nContent-Type: text/plain\r\n\r\nHello World!\n";

/// What the server does for one request: write bytes, maybe after a pause,
/// then keep the connection or close it.
pub struct Reply {
    pub delay: Duration,
    pub bytes: Vec<u8>,
    pub close: bool,
}

impl Reply {
    pub fn ok() -> Reply {
        Reply {
            delay: Duration::ZERO,
            bytes: HELLO.to_vec(),
            close: false,
        }
    }

    /// A 200 with an empty body: what a server answers with less sends.
    pub fn empty() -> Reply {
        Reply {
            bytes: b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".to_vec(),
            ..Reply::ok()
        }
    }
}

pub struct TestServer {
    pub addr: SocketAddr,
    pub started: Instant,
    /// Connections accepted so far.
    pub accepted: Arc<std::sync::atomic::AtomicU64>,
    stop: Arc<AtomicBool>,
    scheme: &'static str,
}

/// How an accepted connection is served: as it is, or wrapped (TLS).
pub type Wrap = dyn Fn(TcpStream, u64, &dyn Fn(&mut dyn Stream)) + Send + Sync;

/// A connection the test server reads requests from and writes replies to.
pub trait Stream: Read + Write {
    fn close(&mut self);
}

impl Stream for TcpStream {
    fn close(&mut self) {
        let _ = self.shutdown(std::net::Shutdown::Both);
    }
}

impl TestServer {
    /// `handler(started, request_number_on_connection)` decides each reply.
    pub fn start<F>(bind: &str, handler: F) -> TestServer
    where
        F: Fn(Instant, u64) -> Reply + Send + Sync + 'static,
    {
        Self::start_wrapped(
            bind,
            "http",
            Arc::new(|conn, _, serve| {
                let mut conn = conn;
                serve(&mut conn)
            }),
            handler,
        )
    }

    /// The same over a wrapper: `wrap(socket, connection_number, serve)`
    /// sets the connection up (a TLS session, say) and calls `serve` on it.
    pub fn start_wrapped<F>(
        bind_to: &str,
        scheme: &'static str,
        wrap: Arc<Wrap>,
        handler: F,
    ) -> TestServer
    where
        F: Fn(Instant, u64) -> Reply + Send + Sync + 'static,
    {
        let (listener, addr) = bind(bind_to);
        let stop = Arc::new(AtomicBool::new(false));
        let started = Instant::now();
        let handler = Arc::new(handler);
        let accepted = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let s = stop.clone();
        let count = accepted.clone();
        // Bounded: the test drops the server within its own time limit,
        // and the accept loop gives up after 120 s regardless.
        accept_loop(
            listener,
            stop.clone(),
            Duration::from_secs(120),
            move |conn| {
                let n = count.fetch_add(1, Ordering::Relaxed);
                let h = handler.clone();
                let s2 = s.clone();
                let wrap = wrap.clone();
                std::thread::spawn(move || {
                    let _ = conn.set_nonblocking(false);
                    conn.set_nodelay(true).ok();
                    conn.set_read_timeout(Some(Duration::from_millis(200))).ok();
                    wrap(conn, n, &|stream| serve(stream, started, &*h, &s2));
                });
            },
        );
        TestServer {
            addr,
            started,
            accepted,
            stop,
            scheme,
        }
    }

    pub fn url(&self, path: &str) -> String {
        let scheme = self.scheme;
        match self.addr {
            SocketAddr::V4(a) => format!("{scheme}://{a}{path}"),
            SocketAddr::V6(a) => format!("{scheme}://[{}]:{}{path}", a.ip(), a.port()),
        }
    }

    /// The URL naming the host by `name` (which must resolve to this
    /// server's address).
    pub fn url_named(&self, name: &str, path: &str) -> String {
        format!("{}://{name}:{}{path}", self.scheme, self.addr.port())
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn serve<F: Fn(Instant, u64) -> Reply>(
    conn: &mut dyn Stream,
    started: Instant,
    h: &F,
    stop: &AtomicBool,
) {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    let mut n_req = 0u64;
    while !stop.load(Ordering::Relaxed) {
        // Serve every complete request already buffered (pipelining).
        while let Some(end) = find(&buf, b"\r\n\r\n") {
            buf.drain(..end + 4);
            let reply = h(started, n_req);
            n_req += 1;
            if !reply.delay.is_zero() {
                std::thread::sleep(reply.delay);
            }
            if conn.write_all(&reply.bytes).is_err() {
                return;
            }
            if reply.close {
                conn.close();
                return;
            }
        }
        if read_some(conn, &mut chunk, &mut buf).is_none() {
            return;
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}
