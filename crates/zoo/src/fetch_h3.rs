//! One request over HTTP/3 for the check, with the engine's own QUIC and
//! HTTP/3 client (`fairbench_engine::h3::fetch`): what the check sees is
//! what the load will meet, QPACK's zero-capacity table included. The
//! answer becomes the zoo's [`RawResponse`]: its bytes are the request
//! stream as received, and [`H3Wire`] the QPACK field section's size and
//! the DATA frames'.

use std::io;
use std::time::Duration;

use fairbench_engine::h3::fetch::{self, Answer, FailureKind, FetchOptions, FetchRequest};
use fairbench_engine::TlsOptions;

use crate::dial::Dial;
use crate::fetch::{FetchError, Framing, H3Wire, Header, RawResponse, MAX_RESPONSE};
use crate::fetch_h2::{Ask, Trust};
use crate::Protocol;

/// The URL of `path` at `dial` (a TCP address: QUIC goes to the same port
/// over UDP).
fn url(dial: &Dial, path: &str) -> Result<String, FetchError> {
    match dial {
        Dial::Tcp(addr) => Ok(format!("https://{addr}{path}")),
        Dial::Unix(_) => Err(FetchError::Protocol {
            reason: "h3 runs over UDP: it is not fetched over a unix socket".into(),
            partial: Vec::new(),
        }),
    }
}

fn tls(trust: Option<&Trust>) -> Result<TlsOptions, FetchError> {
    let t = trust.ok_or_else(|| FetchError::Protocol {
        reason: "h3 needs the run CA to trust".into(),
        partial: Vec::new(),
    })?;
    Ok(TlsOptions {
        ca_pem: Some(t.ca_pem.clone()),
        ..Default::default()
    })
}

/// Sends `method path` to `dial` over HTTP/3 and reads the whole answer,
/// all within `timeout`.
pub fn fetch(
    dial: &Dial,
    (method, path, headers): Ask,
    trust: Option<&Trust>,
    timeout: Duration,
) -> Result<RawResponse, FetchError> {
    let url = url(dial, path)?;
    let opts = FetchOptions {
        tls: tls(trust)?,
        timeout,
        max_response: MAX_RESPONSE,
    };
    let req = FetchRequest {
        url: &url,
        method,
        headers,
        body: &[],
    };
    fetch::fetch(&req, &opts)
        .map(raw)
        .map_err(|e| fetch_error(dial, e, timeout))
}

/// Whether the server at `dial` completes a QUIC handshake with ALPN h3
/// within `timeout`: its readiness over HTTP/3.
pub fn handshake(dial: &Dial, trust: Option<&Trust>, timeout: Duration) -> Result<(), FetchError> {
    let url = url(dial, "/")?;
    fetch::handshake(&url, &tls(trust)?, timeout)
        .map(drop)
        .map_err(|e| fetch_error(dial, e, timeout))
}

fn fetch_error(dial: &Dial, e: fetch::FetchFailure, timeout: Duration) -> FetchError {
    match e.kind {
        FailureKind::Unreachable => FetchError::Connect {
            addr: format!("{dial} (UDP)"),
            source: io::Error::new(io::ErrorKind::ConnectionRefused, e.message),
        },
        FailureKind::Timeout => FetchError::Timeout {
            after: timeout,
            partial: e.partial,
        },
        FailureKind::Setup | FailureKind::Handshake | FailureKind::Protocol => {
            FetchError::Protocol {
                reason: format!("h3: {}", e.message),
                partial: e.partial,
            }
        }
    }
}

fn raw(a: Answer) -> RawResponse {
    RawResponse {
        head_len: a.head_end,
        version: 3,
        status: a.status,
        reason: String::new(),
        headers: a
            .headers
            .into_iter()
            .map(|(name, value)| Header { name, value })
            .collect(),
        framing: Framing::H3Frames,
        body: a.body,
        excess: 0,
        interim: Vec::new(),
        elapsed: a.elapsed,
        protocol: Protocol::H3,
        h2: None,
        h3: Some(H3Wire {
            header_block: a.header_block,
            data_frames: a.data_frames,
            alpn: a.alpn,
        }),
        bytes: a.stream,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_without_quic_is_a_connect_failure_and_a_unix_socket_is_refused() {
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = s.local_addr().unwrap();
        drop(s);
        let parent = tempfile::tempdir().unwrap();
        let pki = crate::pki::RunPki::create(parent.path(), &[]).unwrap();
        let trust = Trust {
            ca_pem: pki.ca_pem.clone().into_bytes(),
        };
        let e = fetch(
            &Dial::Tcp(addr),
            ("GET", "/", &[]),
            Some(&trust),
            Duration::from_secs(3),
        )
        .unwrap_err();
        assert!(e.is_connect(), "{e}");
        assert!(e.to_string().contains("(UDP)"), "{e}");
        let e = fetch(
            &Dial::Unix("/nonexistent".into()),
            ("GET", "/", &[]),
            Some(&trust),
            Duration::from_secs(1),
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("not fetched over a unix socket"),
            "{e}"
        );
    }
}
