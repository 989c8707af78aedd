//! One HTTP/3 request over one QUIC connection, for `check` and the zoo's
//! readiness: the same QUIC set-up ([`super::quic`]), connection handling
//! ([`super::conn`]: ALPN, the control stream, the server's SETTINGS and
//! QPACK streams) and QPACK ([`super::qpack`]) as the load, so what the
//! check sees is what the load will meet.
//!
//! The load counts an answer's DATA and never keeps it; the check must
//! compare bytes, so here the request stream is read whole (bounded) and
//! its frames walked afterwards: the decoded fields and body, and the
//! sizes a byte comparison needs (the QPACK-encoded header block, each
//! DATA frame).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use quinn_proto::{Dir, ReadError, StreamId, VarInt};

use super::conn::{Event, H3Conn};
use super::frame::{self, H3_NO_ERROR};
use super::qpack;
use super::quic::QuicSetup;
use super::varint;
use crate::clock::{self, Nanos};
use crate::request::RequestSpec;
use crate::target::Target;
use crate::tls::{TlsClient, TlsOptions};

/// How long a connection may stay silent before quinn gives it up; the
/// fetch's own timeout, and a load's requests' timeout, are shorter in
/// practice.
pub(super) const IDLE: Duration = Duration::from_secs(30);

/// How long a handshake-only exchange waits, after its handshake, for the
/// server to confirm it (HANDSHAKE_DONE) and send its session ticket: a
/// server that sends neither is not waited for longer.
const SETTLE: Duration = Duration::from_secs(1);

/// Fields HTTP/3 forbids in a message (RFC 9114 §4.2).
const CONNECTION_SPECIFIC: [&str; 5] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
];

/// What is asked: `method url`, with these header fields and body.
#[derive(Debug, Clone)]
pub struct FetchRequest<'a> {
    /// `https://host:port/path`; its host is the TLS server name.
    pub url: &'a str,
    pub method: &'a str,
    pub headers: &'a [(String, String)],
    pub body: &'a [u8],
}

/// How it is asked.
#[derive(Debug, Clone)]
pub struct FetchOptions {
    /// Whom to trust (`ca_pem`: the run CA's certificate).
    pub tls: TlsOptions,
    /// For everything: handshake, request and the whole answer.
    pub timeout: Duration,
    /// The most bytes of the request stream read.
    pub max_response: usize,
}

/// The answer, decoded, and its frames' sizes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    /// The final field section's lines but `:status`, in order, names as
    /// sent (lower-case, or the answer was refused as malformed).
    pub headers: Vec<(String, Vec<u8>)>,
    /// The DATA frames' payloads, joined.
    pub body: Vec<u8>,
    /// The statuses of informational (1xx) field sections before it.
    pub interim: Vec<u16>,
    /// The trailer section's lines, when one came.
    pub trailers: Vec<(String, Vec<u8>)>,
    /// The final field section as QPACK encoded it (its HEADERS frame's
    /// payload).
    pub header_block: usize,
    /// Where the final HEADERS frame ends in `stream` (its type and length
    /// included, and any informational sections before it).
    pub head_end: usize,
    /// Each DATA frame's payload length, in order.
    pub data_frames: Vec<usize>,
    /// The request stream exactly as received: every frame of the answer.
    pub stream: Vec<u8>,
    /// The request's field section as the engine encoded it.
    pub request_block: usize,
    /// ALPN's choice (always `h3`: anything else is refused).
    pub alpn: String,
    /// From the start to the handshake's end, and to the answer's end.
    pub handshake: Duration,
    pub elapsed: Duration,
}

/// Why a fetch failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// The URL, the trust or the socket could not be set up.
    Setup,
    /// Nothing answered QUIC (the UDP port is closed, or silent).
    Unreachable,
    /// The handshake failed (certificate, ALPN, a transport error).
    Handshake,
    /// Not done in time.
    Timeout,
    /// The server broke HTTP/3, reset the stream, or closed the connection.
    Protocol,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchFailure {
    pub kind: FailureKind,
    pub message: String,
    /// The request stream's bytes received before it failed.
    pub partial: Vec<u8>,
}

impl std::fmt::Display for FetchFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for FetchFailure {}

fn failure(kind: FailureKind, message: impl Into<String>) -> FetchFailure {
    FetchFailure {
        kind,
        message: message.into(),
        partial: Vec::new(),
    }
}

/// Sends one request and reads its whole answer, all within
/// `opts.timeout`.
pub fn fetch(req: &FetchRequest<'_>, opts: &FetchOptions) -> Result<Answer, FetchFailure> {
    let target = Target::parse(req.url).map_err(|e| failure(FailureKind::Setup, format!("{e}")))?;
    let spec = RequestSpec {
        method: req.method.to_string(),
        headers: req.headers.to_vec(),
        body: req.body.to_vec(),
    };
    let block =
        qpack::encode(&spec, &target).map_err(|e| failure(FailureKind::Setup, format!("{e}")))?;
    let mut out = Vec::with_capacity(block.len() + req.body.len() + 16);
    frame::head(frame::HEADERS, block.len(), &mut out);
    out.extend_from_slice(&block);
    if !req.body.is_empty() {
        frame::head(frame::DATA, req.body.len(), &mut out);
        out.extend_from_slice(req.body);
    }
    let mut x = Exchange::open(&target, opts)?;
    let (stream, handshake) = x.run(Some(out), opts.max_response)?;
    let mut a = walk(&stream).map_err(|message| FetchFailure {
        kind: FailureKind::Protocol,
        message,
        partial: stream.clone(),
    })?;
    a.stream = stream;
    a.request_block = block.len();
    a.handshake = handshake;
    a.elapsed = x.began.elapsed();
    Ok(a)
}

/// One QUIC handshake with ALPN `h3` to `url`'s address within `timeout`
/// (a server's readiness over HTTP/3); returns how long it took.
pub fn handshake(url: &str, tls: &TlsOptions, timeout: Duration) -> Result<Duration, FetchFailure> {
    let target = Target::parse(url).map_err(|e| failure(FailureKind::Setup, format!("{e}")))?;
    let opts = FetchOptions {
        tls: tls.clone(),
        timeout,
        max_response: 0,
    };
    let mut x = Exchange::open(&target, &opts)?;
    x.run(None, 0).map(|(_, took)| took)
}

/// One QUIC handshake on `setup` with `peer` within `timeout`: the check
/// before a load, and each connection that fetches a session ticket for
/// 0-RTT (`ticket`: wait for the ticket too, within [`SETTLE`]). The
/// exchange ends only once the server confirmed the handshake (or did not
/// within [`SETTLE`]), and closes the connection: a server never sees a
/// handshake left half done, which would count against its limits.
pub(crate) fn handshake_on(
    setup: &QuicSetup,
    peer: SocketAddr,
    timeout: Duration,
    ticket: bool,
) -> Result<Duration, FetchFailure> {
    let mut x = Exchange::start(setup, peer, timeout)?;
    x.want_ticket = ticket;
    x.run(None, 0).map(|(_, took)| took)
}

/// One connection under way.
struct Exchange {
    conn: H3Conn,
    peer: SocketAddr,
    began: Instant,
    deadline: Nanos,
    timeout: Duration,
    /// Handshake only: wait for a session ticket too.
    want_ticket: bool,
}

impl Exchange {
    fn open(target: &Target, opts: &FetchOptions) -> Result<Exchange, FetchFailure> {
        let setup_failed = |e: String| failure(FailureKind::Setup, e);
        let tls = TlsClient::new(target, &opts.tls)
            .map_err(|e| setup_failed(e.to_string()))?
            .isolated()
            .quic()
            .map_err(setup_failed)?;
        let setup = QuicSetup::new(tls, &target.host, IDLE);
        Exchange::start(&setup, target.addr, opts.timeout)
    }

    fn start(
        setup: &QuicSetup,
        peer: SocketAddr,
        timeout: Duration,
    ) -> Result<Exchange, FetchFailure> {
        let start = clock::now();
        let link = setup.open(peer, start).map_err(|e| {
            failure(
                FailureKind::Setup,
                format!("cannot open a UDP socket to {peer}: {e}"),
            )
        })?;
        Ok(Exchange {
            conn: H3Conn::new(link, start),
            peer,
            began: Instant::now(),
            deadline: start + timeout.as_nanos() as Nanos,
            timeout,
            want_ticket: false,
        })
    }

    /// Handshake only, once connected: whether the server has confirmed
    /// the handshake (and sent a ticket, when one is wanted: its only
    /// CRYPTO data after the handshake), or was given [`SETTLE`] to.
    fn settled(&mut self, crypto_then: u64, connected_at: Nanos, now: Nanos) -> bool {
        let rx = self.conn.link.conn.stats().frame_rx;
        let confirmed = rx.handshake_done > 0;
        let ticket = !self.want_ticket || rx.crypto > crypto_then;
        (confirmed && ticket) || now >= connected_at + SETTLE.as_nanos() as Nanos
    }

    /// Drives the connection until the handshake is done and, with a
    /// request (`out`: its frames), until its answer ended; returns the
    /// request stream's bytes and how long the handshake took. The
    /// connection is closed (H3_NO_ERROR) whatever happens.
    fn run(
        &mut self,
        out: Option<Vec<u8>>,
        max: usize,
    ) -> Result<(Vec<u8>, Duration), FetchFailure> {
        let mut ask = out.map(|o| Ask {
            out: o,
            id: None,
            got: Vec::new(),
            done: false,
        });
        let r = self.drive(&mut ask, max);
        let now = clock::now();
        if self.conn.closed.is_none() {
            let at = self.conn.link.now(now);
            let code = VarInt::from_u32(H3_NO_ERROR as u32);
            self.conn.link.conn.close(at, code, bytes::Bytes::new());
        }
        let _ = self.conn.link.flush(now);
        r.map_err(|mut e| {
            e.partial = ask.map(|a| a.got).unwrap_or_default();
            e
        })
    }

    fn drive(
        &mut self,
        ask: &mut Option<Ask>,
        max: usize,
    ) -> Result<(Vec<u8>, Duration), FetchFailure> {
        let mut events = Vec::new();
        let mut handshake: Option<Duration> = None;
        // CRYPTO frames received and the clock when the handshake ended.
        let mut connected_at = (0, 0);
        loop {
            let now = clock::now();
            self.conn
                .link
                .receive(now)
                .map_err(|e| self.io_failure(e))?;
            self.conn.poll(now, &mut events);
            if handshake.is_none() && events.contains(&Event::Connected) {
                handshake = Some(self.began.elapsed());
                connected_at = (self.conn.link.conn.stats().frame_rx.crypto, now);
            }
            if let Some(c) = &self.conn.closed {
                return Err(self.closed_failure(c.clone(), handshake.is_some()));
            }
            if let Some(took) = handshake {
                match ask.as_mut() {
                    // Past the deadline, a handshake done is still done.
                    None if now >= self.deadline
                        || self.settled(connected_at.0, connected_at.1, now) =>
                    {
                        return Ok((Vec::new(), took))
                    }
                    None => {}
                    Some(a) => {
                        a.step(&mut self.conn, max)?;
                        if a.done {
                            return Ok((std::mem::take(&mut a.got), took));
                        }
                    }
                }
            }
            self.conn.link.flush(now).map_err(|e| self.io_failure(e))?;
            if now >= self.deadline {
                return Err(self.timed_out(handshake.is_some()));
            }
            let until = self
                .conn
                .link
                .deadline()
                .unwrap_or(self.deadline)
                .min(self.deadline);
            wait_readable(self.conn.link.fd(), until);
        }
    }

    fn io_failure(&self, e: std::io::Error) -> FetchFailure {
        let peer = self.peer;
        if e.kind() == std::io::ErrorKind::ConnectionRefused {
            failure(
                FailureKind::Unreachable,
                format!("nothing answers QUIC at {peer} (its UDP port is closed): does the server speak HTTP/3?"),
            )
        } else {
            failure(
                FailureKind::Unreachable,
                format!("QUIC to {peer} failed: {e}"),
            )
        }
    }

    fn closed_failure(&self, c: super::conn::Closed, connected: bool) -> FetchFailure {
        let peer = self.peer;
        if !connected {
            return failure(
                FailureKind::Handshake,
                format!("the QUIC handshake with {peer} failed: {}", c.why),
            );
        }
        let who = if c.by_server {
            "the server"
        } else {
            "fairbench"
        };
        failure(
            FailureKind::Protocol,
            format!(
                "HTTP/3: {who} closed the connection ({}): {}",
                c.code, c.why
            ),
        )
    }

    fn timed_out(&mut self, connected: bool) -> FetchFailure {
        let (peer, ms) = (self.peer, self.timeout.as_millis());
        let heard = self.conn.link.conn.stats().udp_rx.datagrams > 0;
        let message = if connected {
            format!("HTTP/3: no complete answer from {peer} within {ms} ms")
        } else if heard {
            format!("the QUIC handshake with {peer} did not finish within {ms} ms")
        } else {
            format!("nothing answered QUIC at {peer} within {ms} ms: does the server speak HTTP/3 on that UDP port?")
        };
        let kind = if connected || heard {
            FailureKind::Timeout
        } else {
            FailureKind::Unreachable
        };
        failure(kind, message)
    }
}

/// The request under way on its stream.
struct Ask {
    /// Request bytes quinn has not taken yet.
    out: Vec<u8>,
    id: Option<StreamId>,
    /// The request stream's bytes so far.
    got: Vec<u8>,
    done: bool,
}

impl Ask {
    /// Opens the stream once, writes what quinn takes, reads what came.
    fn step(&mut self, c: &mut H3Conn, max: usize) -> Result<(), FetchFailure> {
        let id = match self.id {
            Some(id) => id,
            None => {
                let Some(id) = c.link.conn.streams().open(Dir::Bi) else {
                    return Err(failure(
                        FailureKind::Protocol,
                        "HTTP/3: the server allows no request stream",
                    ));
                };
                self.id = Some(id);
                id
            }
        };
        if !self.out.is_empty() {
            let mut s = c.link.conn.send_stream(id);
            let n = s.write(&self.out).unwrap_or(0);
            self.out.drain(..n);
            if self.out.is_empty() {
                let _ = s.finish();
            }
        }
        self.read(c, id, max)
    }

    fn read(&mut self, c: &mut H3Conn, id: StreamId, max: usize) -> Result<(), FetchFailure> {
        let mut recv = c.link.conn.recv_stream(id);
        let Ok(mut chunks) = recv.read(true) else {
            return Ok(());
        };
        let mut r = Ok(());
        loop {
            match chunks.next(usize::MAX) {
                Ok(Some(chunk)) if self.got.len() + chunk.bytes.len() > max => {
                    r = Err(failure(
                        FailureKind::Protocol,
                        format!("HTTP/3: the answer is larger than {max} bytes"),
                    ));
                    break;
                }
                Ok(Some(chunk)) => self.got.extend_from_slice(&chunk.bytes),
                Ok(None) => {
                    self.done = true;
                    break;
                }
                Err(ReadError::Blocked) => break,
                Err(ReadError::Reset(code)) => {
                    let code = code.into_inner();
                    r = Err(failure(
                        FailureKind::Protocol,
                        format!(
                            "HTTP/3: the server reset the request stream ({})",
                            frame::error_name(code)
                        ),
                    ));
                    break;
                }
            }
        }
        let _ = chunks.finalize();
        r
    }
}

/// Sleeps until `fd` is readable or `until` (at most 100 ms at a time).
fn wait_readable(fd: std::os::fd::RawFd, until: Nanos) {
    let ms = until
        .saturating_sub(clock::now())
        .div_ceil(1_000_000)
        .min(100) as i32;
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call.
    unsafe { libc::poll(&mut p, 1, ms) };
}

/// One decoded field section: `:status` (when it had one) and the rest.
type Section = (Option<u16>, Vec<(String, Vec<u8>)>);

fn section(block: &[u8]) -> Result<Section, String> {
    let mut status = None;
    let mut fields = Vec::new();
    let mut bad: Option<String> = None;
    qpack::decode(block, &mut Vec::new(), |k, v| {
        let name = String::from_utf8_lossy(k).into_owned();
        if name == ":status" {
            status = std::str::from_utf8(v)
                .ok()
                .filter(|s| s.len() == 3)
                .and_then(|s| s.parse().ok());
        } else if name.starts_with(':') {
            bad.get_or_insert(format!("the pseudo-header {name} in a response"));
        } else if name.bytes().any(|b| b.is_ascii_uppercase()) {
            bad.get_or_insert(format!("the field name {name:?} is not lower-case"));
        } else if CONNECTION_SPECIFIC.contains(&name.as_str()) {
            bad.get_or_insert(format!("the connection-specific field {name}"));
        } else {
            fields.push((name, v.to_vec()));
        }
    })
    .map_err(|e| format!("HTTP/3: {e}"))?;
    if let Some(b) = bad {
        return Err(format!(
            "malformed HTTP/3 response: {b} (RFC 9114 §4.2 forbids connection-specific fields and upper-case names)"
        ));
    }
    Ok((status, fields))
}

/// Walks the request stream's frames into an [`Answer`].
fn walk(stream: &[u8]) -> Result<Answer, String> {
    let mut a = Answer {
        status: 0,
        headers: Vec::new(),
        body: Vec::new(),
        interim: Vec::new(),
        trailers: Vec::new(),
        header_block: 0,
        head_end: 0,
        data_frames: Vec::new(),
        stream: Vec::new(),
        request_block: 0,
        alpn: "h3".to_string(),
        handshake: Duration::ZERO,
        elapsed: Duration::ZERO,
    };
    let mut head = false;
    let mut p = stream;
    while !p.is_empty() {
        let cut = "HTTP/3: the answer ends inside a frame (H3_FRAME_ERROR)";
        let (ty, n) = varint::decode(p).ok_or(cut)?;
        let (len, m) = varint::decode(&p[n..]).ok_or(cut)?;
        let start = n + m;
        let end = usize::try_from(len)
            .ok()
            .and_then(|l| start.checked_add(l))
            .filter(|&e| e <= p.len())
            .ok_or(cut)?;
        let payload = &p[start..end];
        match ty {
            frame::HEADERS if !head => {
                let (status, fields) = section(payload)?;
                let status = status
                    .ok_or("malformed HTTP/3 response: a field section without a valid :status")?;
                if status >= 200 {
                    head = true;
                    a.status = status;
                    a.headers = fields;
                    a.header_block = payload.len();
                    a.head_end = stream.len() - p.len() + end;
                } else {
                    a.interim.push(status);
                }
            }
            frame::HEADERS if !a.trailers.is_empty() => {
                return Err(
                    "HTTP/3: a HEADERS frame after the trailers (H3_FRAME_UNEXPECTED)".into(),
                )
            }
            frame::HEADERS => a.trailers = section(payload)?.1,
            frame::DATA if !head => {
                return Err("HTTP/3: DATA before the answer's HEADERS (H3_FRAME_UNEXPECTED)".into())
            }
            frame::DATA => {
                a.data_frames.push(payload.len());
                a.body.extend_from_slice(payload);
            }
            // Frame types HTTP/3 defines for other streams, and HTTP/2's.
            0x02..=0x09 | frame::MAX_PUSH_ID => {
                return Err(format!(
                    "HTTP/3: frame type 0x{ty:x} on a request stream (H3_FRAME_UNEXPECTED)"
                ))
            }
            // Unknown and reserved types are ignored (§9).
            _ => {}
        }
        p = &p[end..];
    }
    if !head {
        return Err("HTTP/3: the request stream ended without an answer's HEADERS".into());
    }
    let declared = a
        .headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .map(|(_, v)| String::from_utf8_lossy(v).trim().to_string());
    if let Some(d) = declared {
        if d != a.body.len().to_string() {
            return Err(format!(
                "malformed HTTP/3 response: content-length {d:?} but the DATA frames carried {} bytes (RFC 9114 §4.1.2)",
                a.body.len()
            ));
        }
    }
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame_of(ty: u64, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        frame::head(ty, payload.len(), &mut out);
        out.extend_from_slice(payload);
        out
    }

    /// `:status 200` (static index 25), `content-length: 2` (literal value,
    /// static name 4).
    fn head_200_len2() -> Vec<u8> {
        vec![0x00, 0x00, 0xd9, 0x54, 0x01, b'2']
    }

    #[test]
    fn an_answer_is_walked_into_fields_body_and_sizes() {
        let h = frame_of(frame::HEADERS, &head_200_len2());
        // `:status 100` (static index 63) first, and a reserved frame type.
        let stream = [
            frame_of(frame::HEADERS, &[0x00, 0x00, 0xff, 0x00]),
            h.clone(),
            frame_of(0x21, b"grease"),
            frame_of(frame::DATA, b"o"),
            frame_of(frame::DATA, b"k"),
        ]
        .concat();
        let a = walk(&stream).unwrap();
        assert_eq!(a.interim, [100]);
        assert_eq!(a.status, 200);
        assert_eq!(a.headers, [("content-length".to_string(), b"2".to_vec())]);
        assert_eq!(a.body, b"ok");
        assert_eq!(a.header_block, 6);
        assert_eq!(a.head_end, 6 + h.len());
        assert_eq!(a.data_frames, [1, 1]);
    }

    #[test]
    fn malformed_answers_are_named() {
        let h = frame_of(frame::HEADERS, &head_200_len2());
        let short = [h.clone(), frame_of(frame::DATA, b"o")].concat();
        assert!(walk(&short).unwrap_err().contains("content-length \"2\""));
        let cut = [h.clone(), vec![0x00, 0x05, b'o']].concat();
        assert!(walk(&cut).unwrap_err().contains("ends inside a frame"));
        let data_first = frame_of(frame::DATA, b"ok");
        assert!(walk(&data_first).unwrap_err().contains("DATA before"));
        let settings = [h.clone(), frame_of(frame::SETTINGS, &[])].concat();
        assert!(walk(&settings).unwrap_err().contains("0x4"));
        // `connection: close`, its name a literal (length 10: 7 + 3).
        let mut conn = vec![0x00, 0x00, 0xd9, 0x27, 0x03];
        conn.extend_from_slice(b"connection");
        conn.extend_from_slice(&[0x05]);
        conn.extend_from_slice(b"close");
        let e = walk(&frame_of(frame::HEADERS, &conn)).unwrap_err();
        assert!(e.contains("connection-specific field connection"), "{e}");
        assert!(walk(&[]).unwrap_err().contains("without an answer"));
    }
}
