//! TLS for the test servers: a CA made for the test, certificates it signs
//! (valid, expired, for another name), and a server that wraps each
//! accepted connection in a rustls session and records what it saw.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rcgen::{
    date_time_ymd, BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::{ServerConfig, ServerConnection, StreamOwned};

use super::{Reply, Stream, TestServer};

/// A CA and one certificate it signed, with the server settings that use it.
pub struct TestPki {
    /// The CA certificate, PEM: what `--cacert` is given.
    pub ca_pem: String,
    pub server: Arc<ServerConfig>,
}

/// A certificate for `names`, signed by a CA of its own; `expired` makes it
/// valid only in the year 2000.
pub fn pki(names: &[&str], expired: bool) -> TestPki {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "fairbench test CA");
    let ca = CertifiedIssuer::self_signed(ca_params, ca_key).unwrap();

    let key = KeyPair::generate().unwrap();
    let mut params =
        CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
    if expired {
        params.not_before = date_time_ymd(2000, 1, 1);
        params.not_after = date_time_ymd(2000, 12, 31);
    }
    let cert = params.signed_by(&key, &ca).unwrap();

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut server = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(cert.der().to_vec())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .unwrap();
    server.alpn_protocols = vec![b"http/1.1".to_vec()];
    TestPki {
        ca_pem: ca.pem(),
        server: Arc::new(server),
    }
}

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
    pki: &TestPki,
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
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        ) => {}
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
