//! Whether the target speaks HTTP/2, asked once before a run: the one
//! clear line a person needs ("it chose http/1.1 by ALPN", "it answered the
//! preface in HTTP/1.1") rather than a run of connection errors.

use std::io::{Read, Write};

use super::frame::{self, Head};
use super::session::CLIENT_SETTINGS;
use crate::dial::Dialed;
use crate::Protocol;

/// Checks that `conn` (just dialed, TLS handshake done) speaks HTTP/2:
/// ALPN chose h2 (over TLS), and the server answers the client preface with
/// its SETTINGS. `who` names the server in the error.
pub(crate) fn probe(conn: &mut Dialed, protocol: Protocol, who: &str) -> Result<(), String> {
    if protocol == Protocol::H2 {
        match conn.alpn() {
            Some(p) if p == "h2" => {}
            Some(p) => {
                return Err(format!(
                    "{who} does not speak h2: offered h2 and http/1.1 by ALPN, it chose {p:?} (drop --http2, or use http:// for h2c)"
                ))
            }
            None => {
                return Err(format!(
                    "{who} does not speak h2: offered h2 and http/1.1 by ALPN, it chose none (it speaks HTTP/1.1 at most; drop --http2)"
                ))
            }
        }
    }
    let mut hello = frame::PREFACE.to_vec();
    frame::put_settings(&mut hello, &CLIENT_SETTINGS);
    conn.write_all(&hello)
        .and_then(|_| conn.flush())
        .map_err(|e| format!("{who}: cannot send the HTTP/2 preface: {e}"))?;
    let mut got = Vec::with_capacity(64);
    let mut buf = [0u8; 512];
    while got.len() < frame::HEADER_LEN {
        match conn.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => {
                return Err(format!(
                    "{who} did not answer the HTTP/2 preface: {e}{}",
                    hint(protocol)
                ))
            }
        }
    }
    if got.starts_with(b"HTTP/") {
        let line = String::from_utf8_lossy(&got[..got.len().min(200)]);
        let line = line.lines().next().unwrap_or_default().to_string();
        return Err(format!(
            "{who} answered the HTTP/2 preface in HTTP/1.1 ({line:?}): it does not speak h2c with prior knowledge{}",
            hint(protocol)
        ));
    }
    if got.len() < frame::HEADER_LEN {
        return Err(format!(
            "{who} closed the connection after the HTTP/2 preface{}",
            hint(protocol)
        ));
    }
    let h = Head::parse(&got);
    if h.kind != frame::SETTINGS || h.stream != 0 || h.flags & frame::ACK != 0 {
        return Err(format!(
            "{who} answered the HTTP/2 preface with a {} frame, not SETTINGS{}",
            frame::kind_name(h.kind),
            hint(protocol)
        ));
    }
    Ok(())
}

fn hint(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::H2c => " (drop --http2 for HTTP/1.1, or use https:// for h2 over TLS)",
        _ => "",
    }
}
