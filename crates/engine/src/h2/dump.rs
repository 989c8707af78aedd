//! `--dump` over HTTP/2: one request on a connection of its own, every
//! frame exchanged decoded into a line (header blocks into their fields),
//! in the order they went out or came in.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use super::frame::{self, Head};
use super::hpack::Decoder;
use super::session::{CLIENT_SETTINGS, CONNECTION_WINDOW};
use crate::dial::Dialed;
use crate::request::RequestSpec;
use crate::target::Target;

/// What one HTTP/2 exchange showed.
pub struct H2Dump {
    /// One line per frame ("→" sent, "←" received), header fields and a
    /// body's start indented below it.
    pub lines: Vec<String>,
    /// The answer's `:status`, once its head came.
    pub status: Option<u16>,
    /// Why the exchange ended without a whole answer.
    pub error: Option<String>,
}

/// Sends `spec` to `target` over `conn` (dialed, TLS done) as stream 1 and
/// reads until it ends, the server goes away, or `timeout` passes.
pub fn exchange(
    conn: &mut Dialed,
    spec: &RequestSpec,
    target: &Target,
    timeout: Duration,
) -> H2Dump {
    let mut d = H2Dump {
        lines: Vec::new(),
        status: None,
        error: None,
    };
    let block = match super::request::encode(spec, target) {
        Ok(b) => b,
        Err(e) => {
            d.error = Some(e.to_string());
            return d;
        }
    };
    let out = opening(spec, &block);
    d.lines.push("→ connection preface (PRI * HTTP/2.0)".into());
    let mut own = Decoder::new();
    describe("→", &out[frame::PREFACE.len()..], &mut own, &mut d);
    if let Err(e) = conn.write_all(&out).and_then(|_| conn.flush()) {
        d.error = Some(format!("cannot send: {e}"));
        return d;
    }
    read_answer(conn, timeout, &mut d);
    d
}

/// All the client sends at once: the preface, its settings, the
/// connection window, and the request (header `block` and body) as
/// stream 1.
fn opening(spec: &RequestSpec, block: &[u8]) -> Vec<u8> {
    let mut out = frame::PREFACE.to_vec();
    frame::put_settings(&mut out, &CLIENT_SETTINGS);
    frame::put_window_update(&mut out, 0, CONNECTION_WINDOW - frame::DEFAULT_WINDOW);
    let end = if spec.body.is_empty() {
        frame::END_STREAM
    } else {
        0
    };
    frame::put_head(
        &mut out,
        block.len(),
        frame::HEADERS,
        frame::END_HEADERS | end,
        1,
    );
    out.extend_from_slice(block);
    if !spec.body.is_empty() {
        // One frame, within the first window and frame size; a larger body
        // is cut to what fits, and said so.
        let n = spec.body.len().min(frame::DEFAULT_MAX_FRAME);
        frame::put_head(&mut out, n, frame::DATA, frame::END_STREAM, 1);
        out.extend_from_slice(&spec.body[..n]);
    }
    out
}

/// Reads and describes the server's frames until the exchange is over;
/// `d.error` says why when it ends without a whole answer.
fn read_answer(conn: &mut Dialed, timeout: Duration, d: &mut H2Dump) {
    let deadline = Instant::now() + timeout;
    let mut theirs = Answer {
        dec: Decoder::new(),
        acked: false,
    };
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16_384];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            d.error = Some(format!("no whole answer within {timeout:?}"));
            return;
        }
        let _ = conn.set_read_timeout(Some(left));
        match conn.read(&mut chunk) {
            Ok(0) => {
                d.error = Some("the server closed the connection".into());
                return;
            }
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) => {
                d.error = Some(format!("read failed: {e}"));
                return;
            }
        }
        let Some(at) = theirs.frames(conn, &buf, d) else {
            return;
        };
        buf.drain(..at);
    }
}

/// The server's side of the exchange: the decoder of its header blocks,
/// and whether its settings were acknowledged.
struct Answer {
    dec: Decoder,
    acked: bool,
}

impl Answer {
    /// Describes (and answers) each whole frame at the start of `buf`:
    /// the bytes they took, or `None` once the exchange is over.
    fn frames(&mut self, conn: &mut Dialed, buf: &[u8], d: &mut H2Dump) -> Option<usize> {
        let mut at = 0;
        while buf.len() - at >= frame::HEADER_LEN {
            let h = Head::parse(&buf[at..]);
            if buf.len() - at < frame::HEADER_LEN + h.len {
                break;
            }
            let whole = &buf[at..at + frame::HEADER_LEN + h.len];
            at += frame::HEADER_LEN + h.len;
            if self.frame(conn, &h, whole, d) {
                return None;
            }
        }
        Some(at)
    }

    /// One whole frame (`h` and its payload, in `whole`); true when it
    /// ends the exchange.
    fn frame(&mut self, conn: &mut Dialed, h: &Head, whole: &[u8], d: &mut H2Dump) -> bool {
        let status = describe("←", whole, &mut self.dec, d);
        if status.is_some() && d.status.is_none() {
            d.status = status;
        }
        if h.kind == frame::SETTINGS && h.flags & frame::ACK == 0 && !self.acked {
            self.acked = true;
            let mut ack = Vec::new();
            frame::put_head(&mut ack, 0, frame::SETTINGS, frame::ACK, 0);
            let _ = conn.write_all(&ack);
            d.lines.push("→ SETTINGS ACK".into());
        }
        let ends = h.stream == 1
            && (h.kind == frame::RST_STREAM
                || (matches!(h.kind, frame::DATA | frame::HEADERS)
                    && h.flags & frame::END_STREAM != 0));
        if h.kind == frame::GOAWAY || (h.kind == frame::RST_STREAM && h.stream == 1) {
            d.error = Some(format!("the server sent {}", frame::kind_name(h.kind)));
            return true;
        }
        if ends {
            let mut bye = Vec::new();
            frame::put_goaway(&mut bye, 0, frame::NO_ERROR);
            let _ = conn.write_all(&bye);
            d.lines.push("→ GOAWAY last stream 0, NO_ERROR".into());
            return true;
        }
        false
    }
}

/// Adds a line (and indented details) for each frame of `wire`; returns a
/// `:status` if a header block held one.
fn describe(dir: &str, mut wire: &[u8], dec: &mut Decoder, d: &mut H2Dump) -> Option<u16> {
    let mut status = None;
    while wire.len() >= frame::HEADER_LEN {
        let h = Head::parse(wire);
        let Some(p) = wire.get(frame::HEADER_LEN..frame::HEADER_LEN + h.len) else {
            break;
        };
        wire = &wire[frame::HEADER_LEN + h.len..];
        let mut flags = Vec::new();
        let names: &[(u8, &str)] = match h.kind {
            frame::SETTINGS | frame::PING => &[(frame::ACK, "ACK")],
            frame::DATA => &[(frame::END_STREAM, "END_STREAM"), (frame::PADDED, "PADDED")],
            frame::HEADERS => &[
                (frame::END_STREAM, "END_STREAM"),
                (frame::END_HEADERS, "END_HEADERS"),
                (frame::PADDED, "PADDED"),
                (frame::PRIORITY_FLAG, "PRIORITY"),
            ],
            frame::CONTINUATION => &[(frame::END_HEADERS, "END_HEADERS")],
            _ => &[],
        };
        for &(bit, name) in names {
            if h.flags & bit != 0 {
                flags.push(name);
            }
        }
        let mut line = format!("{dir} {}", frame::kind_name(h.kind));
        if h.stream != 0 {
            line.push_str(&format!(" stream {}", h.stream));
        }
        if !flags.is_empty() {
            line.push_str(&format!(" [{}]", flags.join(" ")));
        }
        let mut details = Vec::new();
        match h.kind {
            frame::SETTINGS => {
                let s: Vec<String> = p
                    .chunks_exact(6)
                    .map(|c| {
                        let id = u16::from_be_bytes([c[0], c[1]]);
                        format!("{}={}", frame::setting_name(id), frame::u32_at(c, 2))
                    })
                    .collect();
                if !s.is_empty() {
                    line.push_str(&format!(" {}", s.join(" ")));
                }
            }
            frame::WINDOW_UPDATE if p.len() == 4 => {
                line.push_str(&format!(" +{}", frame::u32_at(p, 0) & frame::MAX_WINDOW));
            }
            frame::RST_STREAM if p.len() == 4 => {
                line.push_str(&format!(" {}", frame::error_name(frame::u32_at(p, 0))));
            }
            frame::GOAWAY if p.len() >= 8 => {
                line.push_str(&format!(
                    " last stream {}, {}",
                    frame::u32_at(p, 0) & frame::MAX_STREAM_ID,
                    frame::error_name(frame::u32_at(p, 4))
                ));
            }
            frame::HEADERS | frame::CONTINUATION => {
                let block = frame::unpadded(h.kind, h.flags, p).unwrap_or_default();
                line.push_str(&format!(" ({} bytes of header block)", block.len()));
                let decoded = dec.decode(block, |k, v| {
                    if k == b":status" {
                        status = std::str::from_utf8(v).ok().and_then(|s| s.parse().ok());
                    }
                    details.push(format!(
                        "    {}: {}",
                        String::from_utf8_lossy(k),
                        String::from_utf8_lossy(v)
                    ));
                });
                if let Err(e) = decoded {
                    details.push(format!("    (does not decode: {e})"));
                }
            }
            frame::DATA => {
                let body = frame::unpadded(h.kind, h.flags, p).unwrap_or_default();
                line.push_str(&format!(" {} bytes", body.len()));
                if !body.is_empty() {
                    let shown = &body[..body.len().min(200)];
                    details.push(format!(
                        "    {:?}{}",
                        String::from_utf8_lossy(shown),
                        if body.len() > shown.len() { " …" } else { "" }
                    ));
                }
            }
            _ => {}
        }
        d.lines.push(line);
        d.lines.extend(details);
    }
    status
}
