//! A keep-alive HTTP/1.1 server with a canned answer (the `fairbench load`
//! tests), over plain TCP or TLS with a [`Pki`]'s certificate, keeping the
//! first requests it was sent. Stops when dropped (and after 60 s
//! regardless); every loop is bounded by a read timeout or the stop flag.

use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustls::{ServerConfig, ServerConnection, StreamOwned};

use crate::accept::{accept_loop, bind, content_length, read_some};
use crate::pki::Pki;

pub const HELLO: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nHello World!\n";

/// A 404 with an empty body.
pub const NOT_FOUND: &[u8] = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";

pub struct Server {
    pub port: u16,
    scheme: &'static str,
    stop: Arc<AtomicBool>,
    /// Connections accepted.
    pub accepted: Arc<AtomicU64>,
    /// The first requests received (head and body), as sent.
    pub requests: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl Server {
    /// Answers every request with `reply`.
    pub fn plain(reply: &'static [u8]) -> Server {
        Self::start(reply, None)
    }

    pub fn tls(reply: &'static [u8], pki: &Pki) -> Server {
        Self::start(reply, Some(pki.server.clone()))
    }

    pub fn url(&self) -> String {
        format!("{}://127.0.0.1:{}/", self.scheme, self.port)
    }

    fn start(reply: &'static [u8], tls: Option<Arc<ServerConfig>>) -> Server {
        let (l, addr) = bind("127.0.0.1:0");
        let port = addr.port();
        let stop = Arc::new(AtomicBool::new(false));
        let accepted = Arc::new(AtomicU64::new(0));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (s, count, log) = (stop.clone(), accepted.clone(), requests.clone());
        let scheme = if tls.is_some() { "https" } else { "http" };
        accept_loop(l, stop.clone(), Duration::from_secs(60), move |c| {
            count.fetch_add(1, Ordering::Relaxed);
            let (s2, log2, tls2) = (s.clone(), log.clone(), tls.clone());
            std::thread::spawn(move || {
                let _ = c.set_nonblocking(false);
                c.set_read_timeout(Some(Duration::from_millis(200))).ok();
                match tls2 {
                    None => serve(c, reply, &s2, &log2),
                    Some(cfg) => {
                        let Ok(conn) = ServerConnection::new(cfg) else {
                            return;
                        };
                        serve(StreamOwned::new(conn, c), reply, &s2, &log2)
                    }
                }
            });
        });
        Server {
            port,
            scheme,
            stop,
            accepted,
            requests,
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn serve<S: Read + Write>(mut c: S, reply: &[u8], stop: &AtomicBool, log: &Mutex<Vec<Vec<u8>>>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let t0 = Instant::now();
    while !stop.load(Ordering::Relaxed) && t0.elapsed() < Duration::from_secs(60) {
        while let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let body = content_length(&buf[..i]);
            if buf.len() < i + 4 + body {
                break;
            }
            let request: Vec<u8> = buf.drain(..i + 4 + body).collect();
            {
                let mut l = log.lock().unwrap();
                if l.len() < 100 {
                    l.push(request);
                }
            }
            if c.write_all(reply).and_then(|_| c.flush()).is_err() {
                return;
            }
        }
        if read_some(&mut c, &mut chunk, &mut buf).is_none() {
            return;
        }
    }
}
