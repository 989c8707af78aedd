//! A minimal HTTP/2 server for the `fairbench load --http2` tests: h2c with
//! prior knowledge, or h2 over TLS (ALPN `h2`, a certificate made for the
//! test); its SETTINGS (with a stream limit), and a 200 "Hello World!\n"
//! for every request, frames by hand. Stops when dropped (and after 60 s
//! regardless); every loop is bounded by a read timeout or the stop flag.

use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rustls::{ServerConfig, ServerConnection, StreamOwned};

use super::{frame_at, head};
use crate::accept::{accept_loop, bind, read_some};
use crate::pki::Pki;

pub struct H2c {
    pub port: u16,
    scheme: &'static str,
    stop: Arc<AtomicBool>,
}

impl H2c {
    /// Announces `SETTINGS_MAX_CONCURRENT_STREAMS` = `max_streams`.
    pub fn start(max_streams: u32) -> H2c {
        Self::serving(max_streams, None)
    }

    /// The same over TLS, offering only `h2` by ALPN.
    pub fn tls(max_streams: u32, pki: &Pki) -> H2c {
        Self::serving(max_streams, Some(pki.alpn(&[b"h2"])))
    }

    fn serving(max_streams: u32, tls: Option<Arc<ServerConfig>>) -> H2c {
        let scheme = if tls.is_some() { "https" } else { "http" };
        let (l, addr) = bind("127.0.0.1:0");
        let port = addr.port();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        accept_loop(l, stop.clone(), Duration::from_secs(60), move |c| {
            let (s2, tls2) = (s.clone(), tls.clone());
            std::thread::spawn(move || {
                let _ = c.set_nonblocking(false);
                let _ = c.set_nodelay(true);
                let _ = c.set_read_timeout(Some(Duration::from_millis(20)));
                match tls2 {
                    None => serve(c, max_streams, &s2),
                    Some(cfg) => {
                        let Ok(conn) = ServerConnection::new(cfg) else {
                            return;
                        };
                        let mut t = StreamOwned::new(conn, c);
                        // The handshake first, patiently: a read timeout
                        // inside it would end it.
                        let _ = t.sock.set_read_timeout(Some(Duration::from_secs(5)));
                        while t.conn.is_handshaking() {
                            if t.conn.complete_io(&mut t.sock).is_err() {
                                return;
                            }
                        }
                        let _ = t.sock.set_read_timeout(Some(Duration::from_millis(20)));
                        serve(t, max_streams, &s2)
                    }
                }
            });
        });
        H2c { port, scheme, stop }
    }

    pub fn url(&self) -> String {
        format!("{}://127.0.0.1:{}/", self.scheme, self.port)
    }
}

impl Drop for H2c {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn serve<S: Read + Write>(mut c: S, max_streams: u32, stop: &AtomicBool) {
    let mut out = Vec::new();
    head(&mut out, 6, 0x4, 0, 0);
    out.extend_from_slice(&3u16.to_be_bytes());
    out.extend_from_slice(&max_streams.to_be_bytes());
    if c.write_all(&out).and_then(|_| c.flush()).is_err() {
        return;
    }
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16384];
    let mut preface = false;
    while !stop.load(Ordering::Relaxed) {
        match read_some(&mut c, &mut chunk, &mut buf) {
            None => return,
            Some(0) => continue,
            Some(_) => {}
        }
        if !preface {
            if buf.len() < 24 {
                continue;
            }
            buf.drain(..24);
            preface = true;
        }
        let mut out = Vec::new();
        let mut at = 0;
        while let Some(f) = frame_at(&buf, at) {
            let (kind, flags, stream) = (f.kind, f.flags, f.stream);
            at = f.payload.end;
            match kind {
                0x4 if flags & 1 == 0 => head(&mut out, 0, 0x4, 1, 0),
                // A request whose headers end it: :status 200 (static 8).
                0x1 if flags & 1 != 0 => {
                    head(&mut out, 1, 0x1, 0x4, stream);
                    out.push(0x88);
                    head(&mut out, 13, 0x0, 0x1, stream);
                    out.extend_from_slice(b"Hello World!\n");
                }
                _ => {}
            }
        }
        buf.drain(..at);
        if !out.is_empty() && c.write_all(&out).and_then(|_| c.flush()).is_err() {
            return;
        }
    }
}
