//! Servers written for the `fairbench load` tests: a keep-alive HTTP/1.1
//! server with a canned answer, over plain TCP or TLS with a certificate
//! made for the test. Each stops when dropped (and after 60 s regardless);
//! every loop is bounded by a read timeout or the stop flag.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rcgen::{
    date_time_ymd, BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::{ServerConfig, ServerConnection, StreamOwned};

pub const HELLO: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nHello World!\n";

/// Exit code, stdout, stderr.
pub fn run(args: &[&str]) -> (i32, String, String) {
    let out = super::command().args(args).output().expect("run fairbench");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A CA made for the test and the server settings of a certificate it
/// signed.
pub struct Pki {
    pub ca_pem: String,
    config: Arc<ServerConfig>,
}

/// A certificate for `names`; `expired`: valid in the year 2000 only.
pub fn pki(names: &[&str], expired: bool) -> Pki {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "fairbench test CA");
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let mut params =
        CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
    if expired {
        params.not_before = date_time_ymd(2000, 1, 1);
        params.not_after = date_time_ymd(2000, 12, 31);
    }
    let cert = params.signed_by(&key, &ca).unwrap();
    Pki {
        ca_pem: ca.pem(),
        config: server_config(cert.der().to_vec(), &key),
    }
}

impl Pki {
    /// The server's settings offering `protocols` by ALPN instead.
    pub fn alpn(&self, protocols: &[&[u8]]) -> Arc<ServerConfig> {
        let mut c = (*self.config).clone();
        c.alpn_protocols = protocols.iter().map(|p| p.to_vec()).collect();
        Arc::new(c)
    }
}

/// The mistake of a first TLS set-up: one self-signed CA certificate (as
/// `openssl req -x509` makes by default) served as the server's own, and
/// the same file given to --cacert.
pub fn ca_as_server(names: &[&str]) -> Pki {
    let mut params =
        CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    Pki {
        ca_pem: cert.pem(),
        config: server_config(cert.der().to_vec(), &key),
    }
}

fn server_config(cert_der: Vec<u8>, key: &KeyPair) -> Arc<ServerConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(cert_der)],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .unwrap();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(config)
}

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
        Self::start(reply, Some(pki.config.clone()))
    }

    pub fn url(&self) -> String {
        format!("{}://127.0.0.1:{}/", self.scheme, self.port)
    }

    fn start(reply: &'static [u8], tls: Option<Arc<ServerConfig>>) -> Server {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let port = l.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let accepted = Arc::new(AtomicU64::new(0));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (s, count, log) = (stop.clone(), accepted.clone(), requests.clone());
        let scheme = if tls.is_some() { "https" } else { "http" };
        std::thread::spawn(move || {
            let t0 = Instant::now();
            while !s.load(Ordering::Relaxed) && t0.elapsed() < Duration::from_secs(60) {
                let Ok((c, _)) = l.accept() else {
                    std::thread::sleep(Duration::from_millis(2));
                    continue;
                };
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
            }
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
        match c.read(&mut chunk) {
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

fn content_length(head: &[u8]) -> usize {
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

/// A TCP port with nothing listening.
pub fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A 404 with an empty body.
pub const NOT_FOUND: &[u8] = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";

/// `load --json`'s output as JSON, or a panic that shows it.
pub fn json(out: &str) -> serde_json::Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// Writes `pem` as the file `--cacert` is given.
pub fn write_ca(dir: &tempfile::TempDir, pem: &str) -> String {
    let p = dir.path().join("ca.pem");
    std::fs::write(&p, pem).unwrap();
    p.to_str().unwrap().to_string()
}
