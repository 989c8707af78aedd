//! `PROTOCOL=h3`: hyper has no HTTP/3, so hyperium's `h3` over quinn
//! serves it on the UDP port PORT with the run's certificate, calling the
//! same handler as hyper does. hyper adds `content-length` and `date` by
//! itself; h3 adds nothing, so they are added here, as hyper would.
//! Under `RESPONSE=default` too: h3 over quinn is not hyper, and its own
//! defaults are not what a hyper user gets.

use std::net::{Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::SystemTime;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderValue, CONTENT_LENGTH, DATE};
use hyper::{Request, Response};
use socket2::{Domain, Protocol, Socket, Type};

/// The QUIC endpoint: `[::]:port` dual-stack, TLS 1.3, ALPN h3.
pub fn endpoint(port: u16) -> Result<quinn::Endpoint, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let (cert, key) = (crate::env("TLS_CERT")?, crate::env("TLS_KEY")?);
    let chain = CertificateDer::pem_file_iter(&cert)
        .and_then(|i| i.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("TLS_CERT {cert}: {e}"))?;
    let key = PrivateKeyDer::from_pem_file(&key).map_err(|e| format!("TLS_KEY {key}: {e}"))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| format!("TLS: {e}"))?;
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let quic = quinn::crypto::rustls::QuicServerConfig::try_from(tls)
        .map_err(|e| format!("QUIC TLS: {e}"))?;
    let config = quinn::ServerConfig::with_crypto(Arc::new(quic));
    let addr = SocketAddr::from((Ipv6Addr::UNSPECIFIED, port));
    let bind = || -> std::io::Result<std::net::UdpSocket> {
        let socket = Socket::new(Domain::IPV6, Type::DGRAM, Some(Protocol::UDP))?;
        socket.set_only_v6(false)?;
        socket.bind(&addr.into())?;
        Ok(socket.into())
    };
    let socket = bind().map_err(|e| format!("listen on udp {addr}: {e}"))?;
    quinn::Endpoint::new(
        quinn::EndpointConfig::default(),
        Some(config),
        socket,
        Arc::new(quinn::TokioRuntime),
    )
    .map_err(|e| format!("QUIC endpoint on {addr}: {e}"))
}

/// What answers one request: the handler hyper calls.
pub type Handler = Arc<
    dyn Fn(
            Request<()>,
        )
            -> std::pin::Pin<Box<dyn std::future::Future<Output = Response<Full<Bytes>>> + Send>>
        + Send
        + Sync,
>;

/// Accepts connections until the endpoint closes; each request on its own
/// task.
pub async fn serve(endpoint: quinn::Endpoint, handler: Handler) {
    while let Some(incoming) = endpoint.accept().await {
        let handler = handler.clone();
        tokio::spawn(async move {
            let Ok(conn) = incoming.await else {
                return;
            };
            // No GREASE frames (h3's default sends some on every stream):
            // a normalized answer is the fields and body, as go-nethttp's.
            let Ok(mut h3) = h3::server::builder()
                .send_grease(false)
                .build::<_, Bytes>(h3_quinn::Connection::new(conn))
                .await
            else {
                return;
            };
            // Clients closing mid-request are routine under load: no log.
            while let Ok(Some(resolver)) = h3.accept().await {
                let handler = handler.clone();
                tokio::spawn(async move {
                    let Ok((req, mut stream)) = resolver.resolve_request().await else {
                        return;
                    };
                    let res = handler(req).await;
                    let (mut parts, body) = res.into_parts();
                    let body = body
                        .collect()
                        .await
                        .map(|c| c.to_bytes())
                        .unwrap_or_default();
                    let h = &mut parts.headers;
                    if !h.contains_key(CONTENT_LENGTH) {
                        h.insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
                    }
                    if !h.contains_key(DATE) {
                        let now = httpdate::fmt_http_date(SystemTime::now());
                        if let Ok(v) = HeaderValue::from_str(&now) {
                            h.insert(DATE, v);
                        }
                    }
                    if stream
                        .send_response(Response::from_parts(parts, ()))
                        .await
                        .is_err()
                    {
                        return;
                    }
                    if !body.is_empty() && stream.send_data(body).await.is_err() {
                        return;
                    }
                    let _ = stream.finish().await;
                });
            }
        });
    }
}
