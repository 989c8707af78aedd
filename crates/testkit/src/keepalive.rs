//! Keep-alive HTTP/1.1 servers the CLI's tests talk to: a fast one
//! answering the 13-byte body, one that records what it was sent, and one
//! that never answers.

use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::accept::{accept_loop, bind, content_length, read_some};

/// Accepts connections on `addr` until stopped or `lifetime` has passed,
/// each on a thread of its own running `conn` (which should return once the
/// flag it is given is set). Returns the port and the flag.
fn listen<F>(addr: &str, lifetime: Duration, conn: F) -> (u16, Arc<AtomicBool>)
where
    F: Fn(TcpStream, Arc<AtomicBool>) + Send + Sync + 'static,
{
    let (l, at) = bind(addr);
    let port = at.port();
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let conn = Arc::new(conn);
    accept_loop(l, stop.clone(), lifetime, move |c| {
        let _ = c.set_nonblocking(false);
        let _ = c.set_nodelay(true);
        c.set_read_timeout(Some(Duration::from_millis(200))).ok();
        let (s2, conn) = (s.clone(), conn.clone());
        std::thread::spawn(move || conn(c, s2));
    });
    (port, stop)
}

/// Reads more of a request, waiting at most the read timeout; false when the
/// connection is done.
fn read_more(c: &mut TcpStream, buf: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 65536];
    read_some(c, &mut chunk, buf).is_some()
}

const HELLO: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nHello World!\n";

/// A fast keep-alive HTTP server on all addresses of this machine's own
/// namespace (so that a namespace linked to it can reach it), answering the
/// 13-byte body; stops when dropped and after 120 s regardless.
pub struct Hello {
    pub port: u16,
    stop: Arc<AtomicBool>,
}

impl Hello {
    pub fn start() -> Hello {
        let (port, stop) = listen("0.0.0.0:0", Duration::from_secs(120), |mut c, stop| {
            let mut buf = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let mut out = Vec::new();
                while let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    buf.drain(..i + 4);
                    out.extend_from_slice(HELLO);
                }
                if !out.is_empty() && c.write_all(&out).is_err() {
                    return;
                }
                if !read_more(&mut c, &mut buf) {
                    return;
                }
            }
        });
        Hello { port, stop }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }
}

impl Drop for Hello {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// A keep-alive server on 127.0.0.1 that answers every request with the
/// 13-byte body and keeps the first request it was sent, whole, and the
/// most requests that ever arrived in one read (pipelining shows there);
/// stops when dropped and after 60 s regardless.
pub struct Recorder {
    pub port: u16,
    pub first: Arc<Mutex<Vec<u8>>>,
    pub most_in_one_read: Arc<Mutex<usize>>,
    stop: Arc<AtomicBool>,
}

impl Recorder {
    pub fn start() -> Recorder {
        let first = Arc::new(Mutex::new(Vec::new()));
        let most = Arc::new(Mutex::new(0));
        let (f, m) = (first.clone(), most.clone());
        let (port, stop) = listen(
            "127.0.0.1:0",
            Duration::from_secs(60),
            move |mut c, stop| {
                let mut buf = Vec::new();
                while !stop.load(Ordering::Relaxed) && read_more(&mut c, &mut buf) {
                    let mut out = Vec::new();
                    let mut here = 0;
                    while let Some(len) = request_len(&buf) {
                        let req: Vec<u8> = buf.drain(..len).collect();
                        let mut f = f.lock().unwrap();
                        if f.is_empty() {
                            *f = req;
                        }
                        here += 1;
                        out.extend_from_slice(HELLO);
                    }
                    let mut m = m.lock().unwrap();
                    *m = (*m).max(here);
                    drop(m);
                    if !out.is_empty() && c.write_all(&out).is_err() {
                        return;
                    }
                }
            },
        );
        Recorder {
            port,
            first,
            most_in_one_read: most,
            stop,
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    pub fn first_request(&self) -> String {
        String::from_utf8_lossy(&self.first.lock().unwrap()).into_owned()
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The length of the first whole request in `buf` (head and a
/// Content-Length body), if it has arrived.
fn request_len(buf: &[u8]) -> Option<usize> {
    let head = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let body = content_length(&buf[..head]);
    (buf.len() >= head + body).then_some(head + body)
}

/// A server on 127.0.0.1 that accepts connections and reads, and never
/// answers; stops when dropped and after 60 s regardless.
pub struct Silent {
    pub port: u16,
    stop: Arc<AtomicBool>,
}

impl Silent {
    pub fn start() -> Silent {
        let (port, stop) = listen("127.0.0.1:0", Duration::from_secs(60), |mut c, stop| {
            let mut buf = Vec::new();
            while !stop.load(Ordering::Relaxed) && read_more(&mut c, &mut buf) {
                buf.clear();
            }
        });
        Silent { port, stop }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }
}

impl Drop for Silent {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
