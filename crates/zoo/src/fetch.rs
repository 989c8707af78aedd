//! One request over a plain socket (or any connection the caller opened),
//! and the response exactly as it arrived: the parity check counts bytes, so
//! nothing may normalise them first.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde::Serialize;

/// A hostile or broken server cannot make us buffer more than this.
pub const MAX_RESPONSE: usize = 8 * 1024 * 1024;

/// After a complete response, how long to listen for bytes the server sent
/// beyond it (a Content-Length smaller than the body it wrote).
const LINGER: Duration = Duration::from_millis(50);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Framing {
    ContentLength,
    Chunked,
    /// Neither: the body ends when the server closes the connection.
    Close,
    /// No body by definition (1xx, 204, 304).
    None,
    /// HTTP/2: HEADERS then DATA frames, the end marked by END_STREAM.
    #[serde(rename = "h2-frames")]
    H2Frames,
    /// HTTP/3: HEADERS then DATA frames, the end marked by the stream's FIN.
    #[serde(rename = "h3-frames")]
    H3Frames,
}

impl Framing {
    pub fn as_str(self) -> &'static str {
        match self {
            Framing::ContentLength => "content-length",
            Framing::Chunked => "chunked",
            Framing::Close => "close",
            Framing::None => "none",
            Framing::H2Frames => "h2-frames",
            Framing::H3Frames => "h3-frames",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Header {
    /// As sent (case preserved).
    pub name: String,
    #[serde(serialize_with = "lossy")]
    pub value: Vec<u8>,
}

impl Header {
    pub fn value_str(&self) -> String {
        String::from_utf8_lossy(&self.value).into_owned()
    }
}

fn lossy<S: serde::Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&String::from_utf8_lossy(v))
}

#[derive(Debug, Clone)]
pub struct RawResponse {
    /// The whole message exactly as received: status line, headers, body
    /// framing included.
    pub bytes: Vec<u8>,
    /// Length of the status line and headers including the blank line.
    pub head_len: usize,
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub version: u8,
    pub status: u16,
    pub reason: String,
    pub headers: Vec<Header>,
    pub framing: Framing,
    /// The body with chunk framing removed.
    pub body: Vec<u8>,
    /// Bytes that arrived after the message ended.
    pub excess: usize,
    /// Interim (1xx) responses that came before this one (`103 Early
    /// Hints`, `100 Continue`), exactly as received.
    pub interim: Vec<u8>,
    pub elapsed: Duration,
    /// How it was fetched. Over HTTP/2 (3), `bytes` are the stream's frames
    /// as received, `head_len` its HEADERS (and CONTINUATION) frames,
    /// `version` 2 (3) and `reason` empty.
    pub protocol: crate::Protocol,
    /// HTTP/2 (HTTP/3) only: what the frames tell beyond the message.
    pub h2: Option<H2Wire>,
    pub h3: Option<H3Wire>,
}

/// An HTTP/3 answer's frames ([`crate::fetch_h3`]): the QPACK section's
/// size (every answer's: the table's capacity is 0), DATA lengths, ALPN.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct H3Wire {
    pub header_block: usize,
    pub data_frames: Vec<usize>,
    pub alpn: String,
}

/// What the frames of an HTTP/2 answer tell beyond the decoded message
/// (filled in by [`crate::fetch_h2`]).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct H2Wire {
    /// The response's header block as HPACK encoded it: the HEADERS and
    /// CONTINUATION fragments, without frame headers or padding.
    pub header_block: usize,
    /// The same request answered again on the same connection: the header
    /// block once HPACK's dynamic table holds the first answer's fields, as
    /// for every answer but the first under load. `None` if it failed.
    pub header_block_repeat: Option<usize>,
    /// The server's SETTINGS (its first, as announced), by name.
    pub settings: Vec<(String, u32)>,
    /// The protocol ALPN chose (h2 over TLS only).
    pub alpn: Option<String>,
}

impl RawResponse {
    /// The first header of that name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&Header> {
        self.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
    }

    pub fn headers_named(&self, name: &str) -> impl Iterator<Item = &Header> {
        let name = name.to_string();
        self.headers
            .iter()
            .filter(move |h| h.name.eq_ignore_ascii_case(&name))
    }

    /// Bytes of the body as sent, chunk framing included.
    pub fn wire_body_len(&self) -> usize {
        self.bytes.len() - self.head_len
    }

    /// The status line as sent, without CRLF; for HTTP/2, `:status N`.
    pub fn status_line(&self) -> String {
        if self.protocol.is_framed() {
            return format!(":status {}", self.status);
        }
        let end = self
            .bytes
            .windows(2)
            .position(|w| w == b"\r\n")
            .unwrap_or(0);
        String::from_utf8_lossy(&self.bytes[..end]).into_owned()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("cannot connect to {addr}: {source}")]
    Connect {
        /// The address, or `unix:` and the socket's path.
        addr: String,
        source: std::io::Error,
    },
    #[error("no complete response within {}s ({} bytes received)", after.as_secs_f64(), partial.len())]
    Timeout { after: Duration, partial: Vec<u8> },
    #[error("connection closed after {} bytes, before the response was complete", partial.len())]
    Closed { partial: Vec<u8> },
    #[error("{source} ({} bytes received)", partial.len())]
    Io {
        source: std::io::Error,
        partial: Vec<u8>,
    },
    #[error("malformed response: {reason}")]
    Malformed { reason: String, partial: Vec<u8> },
    #[error("response larger than {} bytes", MAX_RESPONSE)]
    TooLarge { partial: Vec<u8> },
    /// HTTP/2 or HTTP/3: the protocol failed, or ALPN did not choose it.
    #[error("{reason}")]
    Protocol { reason: String, partial: Vec<u8> },
}

impl FetchError {
    /// What arrived before the failure, for `--raw`.
    pub fn partial(&self) -> &[u8] {
        match self {
            FetchError::Connect { .. } => &[],
            FetchError::Timeout { partial, .. }
            | FetchError::Closed { partial }
            | FetchError::Io { partial, .. }
            | FetchError::Malformed { partial, .. }
            | FetchError::TooLarge { partial }
            | FetchError::Protocol { partial, .. } => partial,
        }
    }

    pub fn is_connect(&self) -> bool {
        matches!(self, FetchError::Connect { .. })
    }
}

/// The request fairbench sends: the request line, the headers of
/// [`crate::scenario::REQUEST_HEADERS`] (`Host`) and the scenario's own
/// `headers` (`extra`, most scenarios none), nothing else, so that no server
/// is given a header to react to that the scenario does not ask about.
/// Keep-alive (HTTP/1.1's default), as under load; a `Connection: close`
/// would make some servers answer with an extra header.
pub fn request_bytes(
    method: &str,
    path: &str,
    authority: impl std::fmt::Display,
    extra: &[(String, String)],
) -> Vec<u8> {
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {authority}\r\n");
    for (name, value) in extra {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    head.into_bytes()
}

/// Sends `request` to `addr` and reads one response, all within `timeout`.
pub fn raw(addr: SocketAddr, request: &[u8], timeout: Duration) -> Result<RawResponse, FetchError> {
    let start = Instant::now();
    let mut s =
        TcpStream::connect_timeout(&addr, timeout).map_err(|source| FetchError::Connect {
            addr: addr.to_string(),
            source,
        })?;
    let _ = s.set_nodelay(true);
    s.set_write_timeout(Some(timeout))
        .map_err(|source| FetchError::Io {
            source,
            partial: Vec::new(),
        })?;
    exchange(&mut s, request, start, timeout, |s, t| {
        s.set_read_timeout(Some(t))
    })
}

/// Sends `request` over an open connection (plain, or TLS that the caller
/// set up) and reads one response, all within `timeout` of `start` (when
/// the caller began, connecting included). `read_timeout` sets how long the
/// next read may block; writes must already be bounded.
pub fn exchange<S: Read + Write>(
    s: &mut S,
    request: &[u8],
    start: Instant,
    timeout: Duration,
    read_timeout: impl Fn(&mut S, Duration) -> std::io::Result<()>,
) -> Result<RawResponse, FetchError> {
    let deadline = start + timeout;
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    let io = |source, buf: &Vec<u8>| FetchError::Io {
        source,
        partial: buf.clone(),
    };
    s.write_all(request)
        .and_then(|_| s.flush())
        .map_err(|e| io(e, &buf))?;

    let head_only = request.starts_with(b"HEAD ");
    let mut chunk = [0u8; 16 * 1024];
    loop {
        if let Some(done) = complete(&buf, head_only)? {
            let mut r = done;
            r.excess = linger(s, r.interim.len() + r.bytes.len(), &buf, &read_timeout);
            r.elapsed = start.elapsed();
            return Ok(r);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(FetchError::Timeout {
                after: timeout,
                partial: buf,
            });
        }
        read_timeout(s, left).map_err(|e| io(e, &buf))?;
        match s.read(&mut chunk) {
            Ok(0) => {
                return match close_delimited(&buf, head_only)? {
                    Some(mut r) => {
                        r.elapsed = start.elapsed();
                        Ok(r)
                    }
                    None => Err(FetchError::Closed { partial: buf }),
                };
            }
            Ok(n) => {
                if buf.len() + n > MAX_RESPONSE {
                    return Err(FetchError::TooLarge { partial: buf });
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut =>
            {
                return Err(FetchError::Timeout {
                    after: timeout,
                    partial: buf,
                })
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io(e, &buf)),
        }
    }
}

/// Parses a response held in memory (a recorded exchange, a test). Bytes
/// beyond the message count as `excess`; a message without length framing
/// ends at the end of `bytes`.
pub fn parse(bytes: &[u8]) -> Result<RawResponse, FetchError> {
    if let Some(mut r) = complete(bytes, false)? {
        r.excess = bytes.len() - r.interim.len() - r.bytes.len();
        return Ok(r);
    }
    close_delimited(bytes, false)?.ok_or_else(|| FetchError::Closed {
        partial: bytes.to_vec(),
    })
}

/// Bytes beyond the message: already buffered plus what arrives shortly.
fn linger<S: Read>(
    s: &mut S,
    msg_len: usize,
    buf: &[u8],
    read_timeout: &impl Fn(&mut S, Duration) -> std::io::Result<()>,
) -> usize {
    let mut extra = buf.len() - msg_len;
    let _ = read_timeout(s, LINGER);
    let mut chunk = [0u8; 4096];
    while extra < MAX_RESPONSE {
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => extra += n,
        }
    }
    extra
}

struct Head {
    len: usize,
    version: u8,
    status: u16,
    reason: String,
    headers: Vec<Header>,
}

fn parse_head(buf: &[u8]) -> Result<Option<Head>, FetchError> {
    let mut n = 32;
    loop {
        let mut hs = vec![httparse::EMPTY_HEADER; n];
        let mut r = httparse::Response::new(&mut hs);
        match r.parse(buf) {
            Ok(httparse::Status::Partial) => return Ok(None),
            Ok(httparse::Status::Complete(len)) => {
                return Ok(Some(Head {
                    len,
                    version: r.version.unwrap_or(1),
                    status: r.code.unwrap_or(0),
                    reason: r.reason.unwrap_or("").to_string(),
                    headers: r
                        .headers
                        .iter()
                        .map(|h| Header {
                            name: h.name.to_string(),
                            value: h.value.to_vec(),
                        })
                        .collect(),
                }))
            }
            // No count limit but the head's own bytes: room for a field
            // per line it holds (as the load engine parses).
            Err(httparse::Error::TooManyHeaders) if n == 32 => {
                n = buf.iter().filter(|&&b| b == b'\n').count() + 1;
            }
            Err(e) => {
                return Err(FetchError::Malformed {
                    reason: format!("{e} in the status line or headers"),
                    partial: buf.to_vec(),
                })
            }
        }
    }
}

fn framing_of(head: &Head, head_only: bool) -> Result<(Framing, Option<usize>), FetchError> {
    let malformed = |reason: String| FetchError::Malformed {
        reason,
        partial: Vec::new(),
    };
    if head_only || head.status / 100 == 1 || head.status == 204 || head.status == 304 {
        return Ok((Framing::None, Some(0)));
    }
    let te = head
        .headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("transfer-encoding"))
        .map(|h| h.value_str().to_ascii_lowercase())
        .collect::<Vec<_>>()
        .join(",");
    if te.split(',').any(|t| t.trim() == "chunked") {
        return Ok((Framing::Chunked, None));
    }
    let lens: Vec<String> = head
        .headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("content-length"))
        .map(|h| h.value_str().trim().to_string())
        .collect();
    match lens.first() {
        None => Ok((Framing::Close, None)),
        Some(first) => {
            if lens.iter().any(|l| l != first) {
                return Err(malformed(format!(
                    "conflicting Content-Length values {lens:?}"
                )));
            }
            let n: usize = first
                .parse()
                .map_err(|_| malformed(format!("Content-Length {first:?} is not a number")))?;
            if n > MAX_RESPONSE {
                return Err(malformed(format!(
                    "Content-Length {n} exceeds {MAX_RESPONSE}"
                )));
            }
            Ok((Framing::ContentLength, Some(n)))
        }
    }
}

fn with_partial(e: FetchError, buf: &[u8]) -> FetchError {
    match e {
        FetchError::Malformed { reason, .. } => FetchError::Malformed {
            reason,
            partial: buf.to_vec(),
        },
        other => other,
    }
}

fn response(head: Head, framing: Framing, buf: &[u8], end: usize, body: Vec<u8>) -> RawResponse {
    RawResponse {
        bytes: buf[..end].to_vec(),
        head_len: head.len,
        version: head.version,
        status: head.status,
        reason: head.reason,
        headers: head.headers,
        framing,
        body,
        excess: 0,
        interim: Vec::new(),
        elapsed: Duration::ZERO,
        protocol: crate::Protocol::Http1,
        h2: None,
        h3: None,
    }
}

/// How many bytes of `buf` are interim (1xx) responses before the final
/// one; `None` until the final one's head has begun to arrive whole.
fn interim_len(buf: &[u8]) -> Result<Option<usize>, FetchError> {
    let mut at = 0;
    loop {
        let Some(head) = parse_head(&buf[at..])? else {
            return Ok(None);
        };
        if head.status / 100 != 1 || head.status == 101 {
            return Ok(Some(at));
        }
        at += head.len;
    }
}

/// The final response, if `buf` holds a complete one whose end the framing
/// tells, with the interim responses before it.
fn complete(buf: &[u8], head_only: bool) -> Result<Option<RawResponse>, FetchError> {
    let Some(skip) = interim_len(buf)? else {
        return Ok(None);
    };
    let Some(mut r) = complete_final(&buf[skip..], head_only)? else {
        return Ok(None);
    };
    r.interim = buf[..skip].to_vec();
    Ok(Some(r))
}

fn complete_final(buf: &[u8], head_only: bool) -> Result<Option<RawResponse>, FetchError> {
    let Some(head) = parse_head(buf)? else {
        return Ok(None);
    };
    let (framing, len) = framing_of(&head, head_only).map_err(|e| with_partial(e, buf))?;
    match framing {
        Framing::None => {
            let end = head.len;
            Ok(Some(response(head, framing, buf, end, Vec::new())))
        }
        Framing::ContentLength => {
            let end = head.len + len.unwrap_or(0);
            if buf.len() < end {
                return Ok(None);
            }
            let body = buf[head.len..end].to_vec();
            Ok(Some(response(head, framing, buf, end, body)))
        }
        Framing::Chunked => match dechunk(&buf[head.len..]).map_err(|e| with_partial(e, buf))? {
            None => Ok(None),
            Some((used, body)) => {
                let end = head.len + used;
                Ok(Some(response(head, framing, buf, end, body)))
            }
        },
        Framing::Close | Framing::H2Frames | Framing::H3Frames => Ok(None),
    }
}

/// At connection close: a close-delimited body is complete now.
fn close_delimited(all: &[u8], head_only: bool) -> Result<Option<RawResponse>, FetchError> {
    let Some(skip) = interim_len(all)? else {
        return Ok(None);
    };
    let buf = &all[skip..];
    let Some(head) = parse_head(buf)? else {
        return Ok(None);
    };
    match framing_of(&head, head_only).map_err(|e| with_partial(e, buf))? {
        (Framing::Close, _) => {
            let body = buf[head.len..].to_vec();
            let end = buf.len();
            let mut r = response(head, Framing::Close, buf, end, body);
            r.interim = all[..skip].to_vec();
            Ok(Some(r))
        }
        _ => Ok(None),
    }
}

/// Decodes a chunked body: `Some((bytes used including the last chunk and
/// trailers, body))` once complete.
fn dechunk(data: &[u8]) -> Result<Option<(usize, Vec<u8>)>, FetchError> {
    let mut pos = 0;
    let mut body = Vec::new();
    loop {
        let (used, size) = match httparse::parse_chunk_size(&data[pos..]) {
            Ok(httparse::Status::Complete(x)) => x,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(_) => {
                return Err(FetchError::Malformed {
                    reason: "invalid chunk size line".into(),
                    partial: Vec::new(),
                })
            }
        };
        pos += used;
        if size == 0 {
            // Trailers, if any, then the final CRLF.
            loop {
                let rest = &data[pos..];
                let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") else {
                    return Ok(None);
                };
                pos += eol + 2;
                if eol == 0 {
                    return Ok(Some((pos, body)));
                }
            }
        }
        let size = usize::try_from(size)
            .ok()
            .filter(|&s| s <= MAX_RESPONSE)
            .ok_or_else(|| FetchError::Malformed {
                reason: format!("chunk size {size} too large"),
                partial: Vec::new(),
            })?;
        if data.len() < pos + size + 2 {
            return Ok(None);
        }
        body.extend_from_slice(&data[pos..pos + size]);
        pos += size;
        if &data[pos..pos + 2] != b"\r\n" {
            return Err(FetchError::Malformed {
                reason: "chunk data not followed by CRLF".into(),
                partial: Vec::new(),
            });
        }
        pos += 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// Serves one canned reply to one connection, then keeps the connection
    /// open briefly (like a keep-alive server).
    fn serve(reply: &'static [u8], close: bool) -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut b = [0u8; 1024];
            let _ = s.read(&mut b);
            s.write_all(reply).unwrap();
            if !close {
                std::thread::sleep(Duration::from_millis(300));
            }
        });
        addr
    }

    const T: Duration = Duration::from_secs(5);

    #[test]
    fn the_request_carries_exactly_the_contracts_headers() {
        for addr in ["127.0.0.1:8080", "[::1]:9"] {
            let a: SocketAddr = addr.parse().unwrap();
            let bytes = request_bytes("GET", "/hello-16k.txt", a, &[]);
            let mut headers = [httparse::EMPTY_HEADER; 8];
            let mut req = httparse::Request::new(&mut headers);
            let parsed = req.parse(&bytes).unwrap();
            assert_eq!(parsed, httparse::Status::Complete(bytes.len()));
            assert_eq!(req.method, Some("GET"));
            assert_eq!(req.path, Some("/hello-16k.txt"));
            let names: Vec<&str> = req.headers.iter().map(|h| h.name).collect();
            assert_eq!(names, crate::scenario::REQUEST_HEADERS);
            assert_eq!(req.headers[0].value, addr.as_bytes());
        }
    }

    #[test]
    fn a_scenarios_headers_follow_host() {
        let a: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let extra = [("Accept-Encoding".to_string(), "gzip".to_string())];
        assert_eq!(
            request_bytes("GET", "/gzip", a, &extra),
            b"GET /gzip HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAccept-Encoding: gzip\r\n\r\n"
        );
    }

    #[test]
    fn content_length() {
        let reply = b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nHello World!\n";
        let a = serve(reply, false);
        let r = raw(a, &request_bytes("GET", "/", a, &[]), T).unwrap();
        assert_eq!(r.bytes, reply);
        assert_eq!(r.framing, Framing::ContentLength);
        assert_eq!(r.body, b"Hello World!\n");
        assert_eq!(r.head_len, reply.len() - 13);
        assert_eq!(r.excess, 0);
        assert_eq!(r.status_line(), "HTTP/1.1 200 OK");
    }

    #[test]
    fn chunked_is_decoded_and_counted_on_the_wire() {
        let reply = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nHello\r\n8\r\n World!\n\r\n0\r\n\r\n";
        let a = serve(reply, false);
        let r = raw(a, &request_bytes("GET", "/", a, &[]), T).unwrap();
        assert_eq!(r.framing, Framing::Chunked);
        assert_eq!(r.body, b"Hello World!\n");
        assert_eq!(r.bytes.len(), reply.len());
    }

    #[test]
    fn close_delimited_and_excess() {
        let a = serve(b"HTTP/1.1 200 OK\r\n\r\nbody", true);
        let r = raw(a, &request_bytes("GET", "/", a, &[]), T).unwrap();
        assert_eq!(r.framing, Framing::Close);
        assert_eq!(r.body, b"body");
        let a = serve(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nbody", false);
        let r = raw(a, &request_bytes("GET", "/", a, &[]), T).unwrap();
        assert_eq!(r.body, b"bo");
        assert_eq!(r.excess, 2);
    }

    #[test]
    fn garbage_and_early_close_are_errors_not_panics() {
        let a = serve(b"\x00\x01garbage\r\n\r\n", false);
        assert!(matches!(
            raw(a, &request_bytes("GET", "/", a, &[]), T),
            Err(FetchError::Malformed { .. })
        ));
        let a = serve(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", true);
        let e = raw(a, &request_bytes("GET", "/", a, &[]), T).unwrap_err();
        assert!(matches!(e, FetchError::Closed { .. }), "{e}");
        assert!(e.partial().ends_with(b"abc"));
    }

    #[test]
    fn silence_times_out() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = l.local_addr().unwrap();
        let t = Instant::now();
        let e = raw(a, b"GET / HTTP/1.1\r\n\r\n", Duration::from_millis(300)).unwrap_err();
        assert!(matches!(e, FetchError::Timeout { .. }), "{e}");
        assert!(t.elapsed() < Duration::from_secs(3));
        drop(l);
    }
}
