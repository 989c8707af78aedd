//! One request over HTTP/2 — h2c with prior knowledge, or h2 over TLS
//! chosen by ALPN — for the check: the decoded response, and from the
//! frames as they arrived the sizes a byte comparison needs (the HPACK
//! header block, the frames of the stream). The h2 crate does the protocol
//! on a current-thread tokio runtime made per fetch: this is the check, not
//! the load.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::dial::Dial;
use crate::fetch::{FetchError, Framing, H2Wire, Header, RawResponse, MAX_RESPONSE};
use crate::Protocol;

/// The flow-control window fairbench's client announces, for the stream
/// and the connection: large enough that a whole response of the largest
/// size the check accepts is never held back by the client.
const WINDOW: u32 = MAX_RESPONSE as u32;

/// Trust for h2 over TLS and h3: the run CA's certificate, PEM.
#[derive(Debug, Clone)]
pub struct Trust {
    pub ca_pem: Vec<u8>,
}

/// The pseudo-header lines fairbench sends (the `:authority` is what
/// `Host` is over HTTP/1.1) and the scenario's own headers, as `--raw`
/// shows them.
pub fn request_text(
    protocol: Protocol,
    (method, path, headers): (&str, &str, &[(String, String)]),
    authority: impl std::fmt::Display,
) -> Vec<u8> {
    let mut text = format!(
        ":method: {method}\n:scheme: {}\n:authority: {authority}\n:path: {path}\n",
        scheme(protocol)
    );
    for (name, value) in headers {
        text.push_str(&format!("{}: {value}\n", name.to_ascii_lowercase()));
    }
    text.into_bytes()
}

/// What is asked: the method, the path and the scenario's own headers.
pub type Ask<'a> = (&'a str, &'a str, &'a [(String, String)]);

/// The decoded response as `--raw` shows it: `:status`, the fields, a blank
/// line and the body.
pub fn response_text(r: &RawResponse) -> Vec<u8> {
    let mut out = format!(":status: {}\n", r.status).into_bytes();
    for h in &r.headers {
        out.extend_from_slice(h.name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(&h.value);
        out.push(b'\n');
    }
    out.push(b'\n');
    out.extend_from_slice(&r.body);
    out
}

fn scheme(protocol: Protocol) -> &'static str {
    if protocol.tls() {
        "https"
    } else {
        "http"
    }
}

/// Sends `method path` to `dial` over `protocol` (h2c or h2) and reads the
/// whole answer, all within `timeout`.
pub fn fetch(
    protocol: Protocol,
    dial: impl Into<Dial>,
    ask: Ask,
    trust: Option<&Trust>,
    timeout: Duration,
) -> Result<RawResponse, FetchError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|source| FetchError::Io {
            source,
            partial: Vec::new(),
        })?;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let start = Instant::now();
    let dial = dial.into();
    let run = exchange(protocol, &dial, ask, trust, seen.clone());
    let result = rt.block_on(async { tokio::time::timeout(timeout, run).await });
    let partial = || seen.lock().map(|b| b.clone()).unwrap_or_default();
    let (mut r, repeat, alpn) = match result {
        Err(_) => {
            return Err(FetchError::Timeout {
                after: timeout,
                partial: partial(),
            })
        }
        Ok(Err(e)) => return Err(http1_answer(protocol, e.into_fetch_error(partial()))),
        Ok(Ok(x)) => x,
    };
    let received = partial();
    let frames = Frames::parse(&received);
    let first = frames.stream(1);
    r.head_len = first.header_frames.len();
    r.bytes = [first.header_frames, first.data_frames].concat();
    r.elapsed = start.elapsed();
    r.h2 = Some(H2Wire {
        header_block: first.header_block,
        header_block_repeat: repeat.and(frames.stream(3).header_block_if_any()),
        settings: frames.settings,
        alpn,
    });
    Ok(r)
}

/// A server that answered the connection preface in HTTP/1.x does not
/// serve h2c: said so, with its status line, rather than as a frame error.
fn http1_answer(protocol: Protocol, e: FetchError) -> FetchError {
    let partial = e.partial();
    if e.is_connect() || !partial.starts_with(b"HTTP/1.") {
        return e;
    }
    let line_end = partial
        .windows(2)
        .position(|w| w == b"\r\n")
        .unwrap_or(partial.len().min(80));
    let line = fairbench_sys::text::escape_bytes(&partial[..line_end]);
    FetchError::Protocol {
        reason: format!(
            "{protocol}: the server answered HTTP/2's connection preface in HTTP/1.x (`{line}`): it does not serve {}",
            protocol.describe()
        ),
        partial: partial.to_vec(),
    }
}

/// A failure inside the exchange, before its bytes are attached.
enum Failure {
    Connect(std::io::Error, String),
    Io(std::io::Error),
    Protocol(String),
}

impl Failure {
    fn into_fetch_error(self, partial: Vec<u8>) -> FetchError {
        match self {
            Failure::Connect(source, addr) => FetchError::Connect { addr, source },
            Failure::Io(source) => FetchError::Io { source, partial },
            Failure::Protocol(reason) => FetchError::Protocol { reason, partial },
        }
    }
}

fn h2_failure(e: h2::Error) -> Failure {
    if e.is_io() {
        return match e.into_io() {
            Some(io) => Failure::Io(io),
            None => Failure::Protocol("HTTP/2 I/O error".into()),
        };
    }
    let reason = match e.reason() {
        // The h2 client resets a stream whose answer is malformed: a
        // connection-specific field, a TE other than "trailers", a bad
        // pseudo-header, a Content-Length the DATA frames contradict.
        Some(h2::Reason::PROTOCOL_ERROR) if !e.is_remote() && e.is_reset() => {
            return Failure::Protocol(format!(
                "malformed HTTP/2 response, the stream was reset with PROTOCOL_ERROR ({e}): HTTP/2 forbids connection-specific fields (Connection, Keep-Alive, Proxy-Connection, Transfer-Encoding, Upgrade; RFC 9113 §8.2.2) and a Content-Length other than the body's length (§8.1.1)"
            ))
        }
        _ if e.is_go_away() => format!("the server sent GOAWAY: {e}"),
        _ if e.is_reset() && e.is_remote() => format!("the server reset the stream: {e}"),
        _ => e.to_string(),
    };
    Failure::Protocol(format!("HTTP/2: {reason}"))
}

type Outcome = (RawResponse, Option<()>, Option<String>);

async fn exchange(
    protocol: Protocol,
    dial: &Dial,
    ask: Ask<'_>,
    trust: Option<&Trust>,
    seen: Arc<Mutex<Vec<u8>>>,
) -> Result<Outcome, Failure> {
    let addr = match dial {
        Dial::Tcp(addr) => *addr,
        Dial::Unix(path) if protocol == Protocol::H2c => {
            let unix = tokio::net::UnixStream::connect(path)
                .await
                .map_err(|e| Failure::Connect(e, dial.to_string()))?;
            let authority = dial.authority();
            return over(Recorder::new(unix, seen), protocol, &authority, ask, None).await;
        }
        Dial::Unix(_) => {
            return Err(Failure::Protocol(format!(
                "{protocol} is not fetched over a unix socket (h2c is)"
            )))
        }
    };
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| Failure::Connect(e, addr.to_string()))?;
    let _ = tcp.set_nodelay(true);
    let authority = addr.to_string();
    match protocol {
        Protocol::Http1 => Err(Failure::Protocol(
            "HTTP/1.1 is fetched by crate::fetch".into(),
        )),
        Protocol::H3 => Err(Failure::Protocol(
            "HTTP/3 is not fetched by the zoo yet".into(),
        )),
        Protocol::H2c => over(Recorder::new(tcp, seen), protocol, &authority, ask, None).await,
        Protocol::H2 => {
            let trust = trust
                .ok_or_else(|| Failure::Protocol("h2 over TLS needs the run CA to trust".into()))?;
            let tls = connect_tls(tcp, addr, trust).await?;
            let alpn = tls
                .get_ref()
                .1
                .alpn_protocol()
                .map(|p| String::from_utf8_lossy(p).into_owned());
            match alpn.as_deref() {
                Some("h2") => {}
                Some(other) => {
                    return Err(Failure::Protocol(format!(
                        "h2 over TLS: the server chose {} by ALPN, not h2 (fairbench offered h2, http/1.1): it does not serve HTTP/2 there",
                        fairbench_sys::text::visible(other)
                    )))
                }
                None => {
                    return Err(Failure::Protocol(
                        "h2 over TLS: the server chose no protocol by ALPN (fairbench offered h2, http/1.1): it does not offer HTTP/2 there".into(),
                    ))
                }
            }
            over(Recorder::new(tls, seen), protocol, &authority, ask, alpn).await
        }
    }
}

async fn connect_tls(
    tcp: tokio::net::TcpStream,
    addr: SocketAddr,
    trust: &Trust,
) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>, Failure> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, ServerName};
    let bad = |what: &str, e: &dyn std::fmt::Display| Failure::Protocol(format!("{what}: {e}"));
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(&trust.ca_pem) {
        let c = c.map_err(|e| bad("the run CA", &e))?;
        roots.add(c).map_err(|e| bad("the run CA", &e))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad("TLS set-up", &e))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    // Both, so that a server without HTTP/2 can say what it serves instead.
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let name = ServerName::IpAddress(addr.ip().into());
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(|e| bad("TLS handshake", &e))
}

async fn over<T>(
    io: T,
    protocol: Protocol,
    authority: &str,
    (method, path, headers): Ask<'_>,
    alpn: Option<String>,
) -> Result<Outcome, Failure>
where
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (send, conn) = h2::client::Builder::new()
        .initial_window_size(WINDOW)
        .initial_connection_window_size(WINDOW)
        .handshake::<_, Bytes>(io)
        .await
        .map_err(h2_failure)?;
    let driver = tokio::spawn(conn);
    let uri = format!("{}://{authority}{path}", scheme(protocol));
    let first = request(send.clone(), (method, &uri, headers)).await;
    let first = match first {
        Ok(r) => r,
        Err(e) => {
            driver.abort();
            return Err(e);
        }
    };
    // The same request again on this connection, for the header block's
    // size once HPACK's dynamic table is warm.
    let repeat = request(send, (method, &uri, headers)).await.ok().map(drop);
    driver.abort();
    let (parts, body) = first;
    let r = RawResponse {
        bytes: Vec::new(),
        head_len: 0,
        version: 2,
        status: parts.status.as_u16(),
        reason: String::new(),
        headers: parts
            .headers
            .iter()
            .map(|(n, v)| Header {
                name: n.as_str().to_string(),
                value: v.as_bytes().to_vec(),
            })
            .collect(),
        framing: Framing::H2Frames,
        body,
        excess: 0,
        interim: Vec::new(),
        elapsed: Duration::ZERO,
        protocol,
        h2: None,
        h3: None,
    };
    Ok((r, repeat, alpn))
}

async fn request(
    send: h2::client::SendRequest<Bytes>,
    (method, uri, headers): Ask<'_>,
) -> Result<(http::response::Parts, Vec<u8>), Failure> {
    let mut send = send.ready().await.map_err(h2_failure)?;
    let mut req = http::Request::builder().method(method).uri(uri);
    for (name, value) in headers {
        req = req.header(name.as_str(), value.as_str());
    }
    let req = req
        .body(())
        .map_err(|e| Failure::Protocol(format!("request: {e}")))?;
    let (answer, _) = send.send_request(req, true).map_err(h2_failure)?;
    let (parts, mut body) = answer.await.map_err(h2_failure)?.into_parts();
    let mut data = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.map_err(h2_failure)?;
        if data.len() + chunk.len() > MAX_RESPONSE {
            return Err(Failure::Protocol(format!(
                "response larger than {MAX_RESPONSE} bytes"
            )));
        }
        let _ = body.flow_control().release_capacity(chunk.len());
        data.extend_from_slice(&chunk);
    }
    Ok((parts, data))
}

/// Keeps a copy of every byte read (after TLS): the frames as they arrived.
struct Recorder<T> {
    inner: T,
    seen: Arc<Mutex<Vec<u8>>>,
}

impl<T> Recorder<T> {
    fn new(inner: T, seen: Arc<Mutex<Vec<u8>>>) -> Self {
        Recorder { inner, seen }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Recorder<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = r {
            let new = &buf.filled()[before..];
            if let Ok(mut seen) = self.seen.lock() {
                // Two answers and the connection's frames: bounded as one.
                if seen.len() + new.len() <= 2 * MAX_RESPONSE + 64 * 1024 {
                    seen.extend_from_slice(new);
                }
            }
        }
        r
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Recorder<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const SETTINGS: u8 = 0x4;
const CONTINUATION: u8 = 0x9;
const FLAG_ACK: u8 = 0x1;
const FLAG_PADDED: u8 = 0x8;
const FLAG_PRIORITY: u8 = 0x20;

/// The frames a server sent, split by what the check counts.
#[derive(Debug, Default)]
struct Frames {
    /// Each frame: type, flags, stream, the frame as received (header too).
    frames: Vec<(u8, u8, u32, Vec<u8>)>,
    settings: Vec<(String, u32)>,
}

/// One stream's frames.
#[derive(Debug, Default)]
struct StreamFrames {
    header_frames: Vec<u8>,
    header_block: usize,
    data_frames: Vec<u8>,
}

impl StreamFrames {
    fn header_block_if_any(&self) -> Option<usize> {
        (!self.header_frames.is_empty()).then_some(self.header_block)
    }
}

impl Frames {
    /// Splits the bytes a server sent into frames; a truncated last frame
    /// is left out (the h2 crate has already judged the connection).
    fn parse(b: &[u8]) -> Frames {
        let mut out = Frames::default();
        let mut at = 0;
        while b.len() >= at + 9 {
            let len =
                (usize::from(b[at]) << 16) | (usize::from(b[at + 1]) << 8) | usize::from(b[at + 2]);
            let (kind, flags) = (b[at + 3], b[at + 4]);
            let stream =
                u32::from_be_bytes([b[at + 5], b[at + 6], b[at + 7], b[at + 8]]) & 0x7fff_ffff;
            let end = at + 9 + len;
            if end > b.len() {
                break;
            }
            let frame = b[at..end].to_vec();
            if kind == SETTINGS && flags & FLAG_ACK == 0 && stream == 0 && out.settings.is_empty() {
                out.settings = frame[9..]
                    .chunks_exact(6)
                    .map(|s| {
                        let id = u16::from_be_bytes([s[0], s[1]]);
                        (
                            setting_name(id),
                            u32::from_be_bytes([s[2], s[3], s[4], s[5]]),
                        )
                    })
                    .collect();
            }
            out.frames.push((kind, flags, stream, frame));
            at = end;
        }
        out
    }

    fn stream(&self, id: u32) -> StreamFrames {
        let mut s = StreamFrames::default();
        for (kind, flags, stream, frame) in &self.frames {
            if *stream != id {
                continue;
            }
            let payload = &frame[9..];
            let padding = |p: &[u8]| -> usize {
                if flags & FLAG_PADDED != 0 {
                    1 + p.first().map(|&n| usize::from(n)).unwrap_or(0)
                } else {
                    0
                }
            };
            match *kind {
                HEADERS => {
                    let priority = if flags & FLAG_PRIORITY != 0 { 5 } else { 0 };
                    s.header_block += payload.len().saturating_sub(padding(payload) + priority);
                    s.header_frames.extend_from_slice(frame);
                }
                CONTINUATION => {
                    s.header_block += payload.len();
                    s.header_frames.extend_from_slice(frame);
                }
                DATA => s.data_frames.extend_from_slice(frame),
                _ => {}
            }
        }
        s
    }
}

/// RFC 9113 §6.5.2's names.
fn setting_name(id: u16) -> String {
    match id {
        1 => "HEADER_TABLE_SIZE".into(),
        2 => "ENABLE_PUSH".into(),
        3 => "MAX_CONCURRENT_STREAMS".into(),
        4 => "INITIAL_WINDOW_SIZE".into(),
        5 => "MAX_FRAME_SIZE".into(),
        6 => "MAX_HEADER_LIST_SIZE".into(),
        8 => "ENABLE_CONNECT_PROTOCOL".into(),
        9 => "NO_RFC7540_PRIORITIES".into(),
        n => format!("0x{n:x}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let n = payload.len();
        let mut f = vec![(n >> 16) as u8, (n >> 8) as u8, n as u8, kind, flags];
        f.extend_from_slice(&stream.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }

    #[test]
    fn header_blocks_are_counted_without_frame_headers_padding_or_priority() {
        let settings = frame(SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 100, 0, 4, 0, 1, 0, 0]);
        let ack = frame(SETTINGS, FLAG_ACK, 0, &[]);
        // 2 bytes of padding (length byte + 2) and a priority block.
        let mut padded = vec![2];
        padded.extend_from_slice(&[0; 5]);
        padded.extend_from_slice(b"0123456789");
        padded.extend_from_slice(&[0, 0]);
        let h = frame(HEADERS, FLAG_PADDED | FLAG_PRIORITY, 1, &padded);
        let c = frame(CONTINUATION, 0x4, 1, b"abcd");
        let d = frame(DATA, 0x1, 1, b"Hello World!\n");
        let other = frame(HEADERS, 0x4, 3, b"xyz");
        let all = [
            settings,
            ack,
            h.clone(),
            c.clone(),
            d.clone(),
            other,
            vec![0, 0],
        ]
        .concat();
        let f = Frames::parse(&all);
        assert_eq!(
            f.settings,
            vec![
                ("MAX_CONCURRENT_STREAMS".to_string(), 100),
                ("INITIAL_WINDOW_SIZE".to_string(), 65536)
            ]
        );
        let s = f.stream(1);
        assert_eq!(s.header_block, 14);
        assert_eq!(s.header_frames, [h, c].concat());
        assert_eq!(s.data_frames, d);
        assert_eq!(f.stream(3).header_block_if_any(), Some(3));
        assert_eq!(f.stream(5).header_block_if_any(), None);
    }

    #[test]
    fn an_http1_server_asked_for_h2c_is_named_as_such() {
        use std::io::{Read, Write};
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let a = l.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut b = [0u8; 1024];
            let _ = s.read(&mut b);
            let _ = s.write_all(
                b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        });
        let e = fetch(
            Protocol::H2c,
            a,
            ("GET", "/", &[]),
            None,
            Duration::from_secs(5),
        )
        .unwrap_err();
        let m = e.to_string();
        assert!(
            m.contains(
                "answered HTTP/2's connection preface in HTTP/1.x (`HTTP/1.1 400 Bad Request`)"
            ) && m.contains("does not serve HTTP/2 cleartext (h2c)"),
            "{m}"
        );
    }

    #[test]
    fn a_silent_port_times_out_and_a_closed_one_fails_to_connect() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let a = l.local_addr().unwrap();
        let t = Instant::now();
        let e = fetch(
            Protocol::H2c,
            a,
            ("GET", "/", &[]),
            None,
            Duration::from_millis(300),
        )
        .unwrap_err();
        assert!(matches!(e, FetchError::Timeout { .. }), "{e}");
        assert!(t.elapsed() < Duration::from_secs(3));
        drop(l);
        let e = fetch(
            Protocol::H2c,
            a,
            ("GET", "/", &[]),
            None,
            Duration::from_secs(2),
        )
        .unwrap_err();
        assert!(e.is_connect(), "{e}");
    }
}
