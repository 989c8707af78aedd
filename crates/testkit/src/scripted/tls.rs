//! The scripted server over TLS: each accepted connection wrapped in a
//! rustls session with a [`Pki`]'s certificate, and what its handshake
//! showed recorded.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustls::{ServerConnection, StreamOwned};

use super::{Reply, Stream, TestServer};
use crate::accept::idle;
use crate::pki::Pki;

/// What the TLS server saw of one connection's handshake.
#[derive(Debug, Clone)]
pub struct Seen {
    pub sni: Option<String>,
    pub alpn: Option<String>,
    pub resumed: bool,
}

/// How the TLS test server treats a new connection.
#[derive(Clone, Copy)]
pub struct TlsBehaviour {
    /// Wait this long before reading the ClientHello: a slow handshake.
    pub handshake_delay: Duration,
    /// Close connections whose number (from 0) is odd before any handshake.
    pub drop_odd: bool,
}

impl Default for TlsBehaviour {
    fn default() -> Self {
        TlsBehaviour {
            handshake_delay: Duration::ZERO,
            drop_odd: false,
        }
    }
}

struct Tls(StreamOwned<ServerConnection, TcpStream>);

impl Read for Tls {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf)
    }
}

impl Write for Tls {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

impl Stream for Tls {
    fn close(&mut self) {
        self.0.conn.send_close_notify();
        let _ = self.0.flush();
        let _ = self.0.sock.shutdown(std::net::Shutdown::Both);
    }
}

/// A test server speaking TLS with `pki`'s certificate; `seen` gets one
/// entry per completed handshake.
pub fn start<F>(
    bind: &str,
    pki: &Pki,
    behaviour: TlsBehaviour,
    handler: F,
) -> (TestServer, Arc<Mutex<Vec<Seen>>>)
where
    F: Fn(Instant, u64) -> Reply + Send + Sync + 'static,
{
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let config = pki.server.clone();
    let wrap = Arc::new(
        move |tcp: TcpStream, n: u64, serve: &dyn Fn(&mut dyn Stream)| {
            if behaviour.drop_odd && n % 2 == 1 {
                return;
            }
            std::thread::sleep(behaviour.handshake_delay);
            let mut tcp = tcp;
            let Ok(mut conn) = ServerConnection::new(config.clone()) else {
                return;
            };
            // Finish the handshake before serving, so that it is recorded
            // even when no request follows. Bounded by the read timeout.
            let t = Instant::now();
            while conn.is_handshaking() && t.elapsed() < Duration::from_secs(5) {
                match conn.complete_io(&mut tcp) {
                    Ok(_) => {}
                    Err(e) if idle(&e) => {}
                    Err(_) => return,
                }
            }
            if conn.is_handshaking() {
                return;
            }
            log.lock().unwrap().push(Seen {
                sni: conn.server_name().map(str::to_string),
                alpn: conn
                    .alpn_protocol()
                    .map(|p| String::from_utf8_lossy(p).into_owned()),
                resumed: conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed),
            });
            serve(&mut Tls(StreamOwned::new(conn, tcp)));
        },
    );
    let server = TestServer::start_wrapped(bind, "https", wrap, handler);
    (server, seen)
}
