//! hyper 1 on tokio: the "ceiling" of the zoo, about as little work per
//! request as a general HTTP/1.1 server does. `PROTOCOL` h2c serves HTTP/2
//! with prior knowledge beside HTTP/1.1 (hyper-util's auto builder tells
//! them apart by the preface); h2 serves HTTP/2 over TLS (rustls, ALPN h2
//! then http/1.1) with the run's certificate; h3 serves HTTP/3 on the UDP
//! port with h3 over quinn (src/h3.rs), calling the same handler.
//!
//! hyper adds `content-length` (the body size is known) and `date` by itself
//! and nothing else, so `default` and `normalized` are the same handler; the
//! only thing a hyper user must add is the Content-Type.

mod db;
mod h3;

use std::convert::Infallible;
use std::net::{Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_TYPE, VARY};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::TcpListener;

const TEXT: HeaderValue = HeaderValue::from_static("text/plain; charset=utf-8");

#[derive(Clone, Copy, PartialEq)]
enum Serve {
    Http1,
    H2c,
    H2,
    H3,
}

#[derive(Clone, Copy)]
enum Scenario {
    Static,
    Dynamic,
    File,
    /// `/gzip`: a fixed text, gzip-compressed per request that accepts it.
    Gzip,
    /// json, db, queries, fortunes, updates: only db.rs's routes.
    Stack,
}

fn main() {
    if let Err(e) = run() {
        eprintln!("rust-hyper: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let port: u16 = env("PORT")?.parse().map_err(|e| format!("PORT: {e}"))?;
    let scenario = match env("SCENARIO")?.as_str() {
        "static" => Scenario::Static,
        "dynamic" => Scenario::Dynamic,
        "file" => Scenario::File,
        "gzip" => Scenario::Gzip,
        other if db::is_stack_scenario(other) => Scenario::Stack,
        other => return Err(format!("unknown SCENARIO {other:?}")),
    };
    let protocol = match std::env::var("PROTOCOL").as_deref() {
        Err(_) | Ok("http/1.1") => Serve::Http1,
        Ok("h2c") => Serve::H2c,
        Ok("h2") => Serve::H2,
        Ok("h3") => Serve::H3,
        Ok(other) => {
            return Err(format!(
                "unknown PROTOCOL {other:?}: expected http/1.1, h2c, h2 or h3"
            ))
        }
    };
    let tls = match protocol {
        Serve::H2 => Some(tls_acceptor()?),
        _ => None,
    };
    let cores: usize = std::env::var("CORES")
        .ok()
        .and_then(|c| c.parse().ok())
        .filter(|&c| c > 0)
        .unwrap_or(1);
    let file = match scenario {
        Scenario::File => Some(Arc::new(
            PathBuf::from(env("FILES_DIR")?).join("hello-16k.txt"),
        )),
        _ => None,
    };
    let text = match scenario {
        Scenario::Gzip => {
            let f = PathBuf::from(env("FILES_DIR")?).join("gzip-text.txt");
            Bytes::from(std::fs::read(&f).map_err(|e| format!("{}: {e}", f.display()))?)
        }
        _ => Bytes::new(),
    };

    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.worker_threads(cores).enable_io();
    // quinn keeps QUIC's timers on tokio's; hyper over TCP needs none.
    if protocol == Serve::H3 {
        builder.enable_time();
    }
    let runtime = builder.build().map_err(|e| format!("tokio runtime: {e}"))?;
    runtime.block_on(async move {
        db::init().await?;
        if protocol == Serve::H3 {
            let endpoint = h3::endpoint(port)?;
            eprintln!(
                "rust-hyper: {}/{} over h3 on udp [::]:{port}, {cores} worker thread(s)",
                env("SCENARIO")?,
                std::env::var("RESPONSE").unwrap_or_default(),
            );
            let handler: h3::Handler = Arc::new(move |req| {
                let (file, text) = (file.clone(), text.clone());
                Box::pin(async move {
                    match handle(req, scenario, file, text).await {
                        Ok(res) => res,
                        Err(never) => match never {},
                    }
                })
            });
            h3::serve(endpoint, handler).await;
            return Ok(());
        }
        let listener = listen(port)?;
        eprintln!(
            "rust-hyper: {}/{} over {} on [::]:{port}, {cores} worker thread(s)",
            env("SCENARIO")?,
            std::env::var("RESPONSE").unwrap_or_default(),
            std::env::var("PROTOCOL").unwrap_or_else(|_| "http/1.1".into())
        );
        loop {
            let (stream, _) = match listener.accept().await {
                Ok(conn) => conn,
                // Running out of descriptors under load is transient; the
                // listener itself is still good.
                Err(e) => {
                    eprintln!("accept: {e}");
                    continue;
                }
            };
            // Go and Node disable Nagle on every connection; do the same so
            // no server is timed with a different socket policy.
            let _ = stream.set_nodelay(true);
            let file = file.clone();
            let text = text.clone();
            let tls = tls.clone();
            tokio::spawn(async move {
                let service =
                    service_fn(move |req| handle(req, scenario, file.clone(), text.clone()));
                // Clients closing mid-request are routine under load: no log.
                match (protocol, tls) {
                    (Serve::Http1, _) => {
                        let _ = http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    }
                    (_, Some(tls)) => {
                        if let Ok(stream) = tls.accept(stream).await {
                            let _ = auto::Builder::new(TokioExecutor::new())
                                .serve_connection(TokioIo::new(stream), service)
                                .await;
                        }
                    }
                    (_, None) => {
                        let _ = auto::Builder::new(TokioExecutor::new())
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    }
                }
            });
        }
    })
}

/// The run's certificate chain and key (TLS_CERT, TLS_KEY: PEM files), ALPN
/// h2 first.
fn tls_acceptor() -> Result<tokio_rustls::TlsAcceptor, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let (cert, key) = (env("TLS_CERT")?, env("TLS_KEY")?);
    let chain = CertificateDer::pem_file_iter(&cert)
        .and_then(|i| i.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("TLS_CERT {cert}: {e}"))?;
    let key = PrivateKeyDer::from_pem_file(&key).map_err(|e| format!("TLS_KEY {key}: {e}"))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| format!("TLS: {e}"))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

/// `[::]` with IPV6_V6ONLY switched off explicitly, so IPv4 clients are served
/// even where the system default (net.ipv6.bindv6only) says otherwise.
fn listen(port: u16) -> Result<TcpListener, String> {
    let addr = SocketAddr::from((Ipv6Addr::UNSPECIFIED, port));
    let bind = || -> std::io::Result<TcpListener> {
        let socket = Socket::new(Domain::IPV6, Type::STREAM, Some(Protocol::TCP))?;
        socket.set_only_v6(false)?;
        socket.set_reuse_address(true)?;
        socket.bind(&addr.into())?;
        // tokio's own TcpListener::bind backlog.
        socket.listen(1024)?;
        socket.set_nonblocking(true)?;
        TcpListener::from_std(socket.into())
    };
    bind().map_err(|e| format!("listen on {addr}: {e}"))
}

async fn handle<B>(
    req: Request<B>,
    scenario: Scenario,
    file: Option<Arc<PathBuf>>,
    text: Bytes,
) -> Result<Response<Full<Bytes>>, Infallible> {
    if let Some(res) = db::serve(&req).await {
        return Ok(res);
    }
    let path = match scenario {
        Scenario::File => "/hello-16k.txt",
        Scenario::Gzip => "/gzip",
        Scenario::Stack => return Ok(status(StatusCode::NOT_FOUND)),
        _ => "/",
    };
    if req.method() != Method::GET || req.uri().path() != path {
        return Ok(status(StatusCode::NOT_FOUND));
    }
    if let Scenario::Gzip = scenario {
        return Ok(gzip(&req, text));
    }
    let body = match scenario {
        Scenario::Static => Bytes::from_static(b"Hello World!\n"),
        Scenario::Dynamic => Bytes::from(format!("The time is {}\n", iso8601_now())),
        // hyper has no static-file facility; read from disk per request.
        Scenario::Stack | Scenario::Gzip => unreachable!("answered above"),
        Scenario::File => {
            match tokio::fs::read(file.as_deref().expect("file scenario has a path")).await {
                Ok(data) => Bytes::from(data),
                Err(e) => {
                    eprintln!("read: {e}");
                    return Ok(status(StatusCode::INTERNAL_SERVER_ERROR));
                }
            }
        }
    };
    let mut res = Response::new(Full::new(body));
    res.headers_mut().insert(CONTENT_TYPE, TEXT);
    Ok(res)
}

/// `text`, compressed anew for a request that accepts gzip (flate2 at its
/// default level, 6), with `Vary: Accept-Encoding` either way.
fn gzip<B>(req: &Request<B>, text: Bytes) -> Response<Full<Bytes>> {
    use std::io::Write;
    let accepts = req
        .headers()
        .get(ACCEPT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("gzip"));
    let body = if accepts {
        let mut enc = flate2::write::GzEncoder::new(
            Vec::with_capacity(text.len()),
            flate2::Compression::default(),
        );
        match enc.write_all(&text).and_then(|_| enc.finish()) {
            Ok(z) => Bytes::from(z),
            Err(e) => {
                eprintln!("gzip: {e}");
                return status(StatusCode::INTERNAL_SERVER_ERROR);
            }
        }
    } else {
        text
    };
    let mut res = Response::new(Full::new(body));
    let h = res.headers_mut();
    h.insert(CONTENT_TYPE, TEXT);
    h.insert(VARY, HeaderValue::from_static("Accept-Encoding"));
    if accepts {
        h.insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    res
}

fn status(code: StatusCode) -> Response<Full<Bytes>> {
    let mut res = Response::new(Full::new(Bytes::new()));
    *res.status_mut() = code;
    res
}

/// `2026-11-21T23:12:00Z`, UTC to the second: the standard library has no calendar, and one
/// function is cheaper than a date crate.
fn iso8601_now() -> String {
    iso8601(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
    )
}

fn iso8601(secs: u64) -> String {
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

fn env(key: &str) -> Result<String, String> {
    std::env::var(key).map_err(|_| format!("{key} is not set"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn iso8601_matches_known_instants() {
        assert_eq!(super::iso8601(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::iso8601(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(super::iso8601(1_795_302_720), "2026-11-21T23:12:00Z");
        assert_eq!(super::iso8601(4_107_542_399), "2100-02-28T23:59:59Z");
    }
}
