//! Deterministic HTTP servers written for the engine's tests. Each listens on
//! loopback, serves every connection on its own thread, and stops when
//! dropped; every loop is bounded by a read timeout or the stop flag.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Tests whose assertions are about timing hold this, so that the other
/// tests of the binary (running in parallel on a 2-CPU machine) do not steal
/// their CPU.
pub fn timing() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

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
}

pub struct TestServer {
    pub addr: SocketAddr,
    pub started: Instant,
    stop: Arc<AtomicBool>,
}

impl TestServer {
    /// `handler(started, request_number_on_connection)` decides each reply.
    pub fn start<F>(bind: &str, handler: F) -> TestServer
    where
        F: Fn(Instant, u64) -> Reply + Send + Sync + 'static,
    {
        let listener = TcpListener::bind(bind).expect("bind test server");
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let started = Instant::now();
        let handler = Arc::new(handler);
        let s = stop.clone();
        std::thread::spawn(move || {
            // Bounded: the test drops the server within its own time limit,
            // and the accept loop gives up after 120 s regardless.
            while !s.load(Ordering::Relaxed) && started.elapsed() < Duration::from_secs(120) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        let h = handler.clone();
                        let s2 = s.clone();
                        std::thread::spawn(move || serve(conn, started, &*h, &s2));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
        });
        TestServer {
            addr,
            started,
            stop,
        }
    }

    pub fn url(&self, path: &str) -> String {
        match self.addr {
            SocketAddr::V4(a) => format!("http://{a}{path}"),
            SocketAddr::V6(a) => format!("http://[{}]:{}{path}", a.ip(), a.port()),
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn serve<F: Fn(Instant, u64) -> Reply>(
    mut conn: TcpStream,
    started: Instant,
    h: &F,
    stop: &AtomicBool,
) {
    conn.set_nodelay(true).ok();
    conn.set_read_timeout(Some(Duration::from_millis(200))).ok();
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
                let _ = conn.shutdown(std::net::Shutdown::Both);
                return;
            }
        }
        match conn.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}
