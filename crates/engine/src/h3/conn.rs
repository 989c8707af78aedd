//! HTTP/3 over one QUIC connection (RFC 9114 §6): the client's control
//! stream with its SETTINGS, the server's control and QPACK streams read
//! as they come, and request streams that each carry one request and its
//! answer.
//!
//! What the server sends is turned into [`Event`]s for the load thread;
//! what breaks HTTP/3 on the connection closes it with the error's code
//! (a connection error, §8), and what breaks one answer only ends that
//! stream. A closed connection says why in [`Closed`].

use std::collections::HashMap;

use quinn_proto::{ConnectionError, Dir, ReadError, StreamEvent, StreamId, VarInt};

use super::frame::{self, FrameReader, H3Error, Piece};
use super::qpack;
use super::quic::Link;
use super::varint;
use crate::clock::Nanos;
use crate::stats::Failure;

/// The largest field section the client reads (announced to the server).
pub(crate) const MAX_FIELD_SECTION: u64 = 64 * 1024;

/// What the load thread learns from a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    /// The handshake is done: requests may go out.
    Connected,
    /// The final head of the answer on request stream `stream` (an index).
    Head { stream: u64, status: u16 },
    /// Body bytes of an answer.
    Data { stream: u64, len: usize },
    /// The answer ended whole.
    Done { stream: u64 },
    /// The answer ended otherwise: the server reset the stream (`code`),
    /// or it broke HTTP/3 on this stream only (`code` the error's).
    Reset {
        stream: u64,
        code: u64,
        by_server: bool,
    },
    /// The server is going away: request streams from index `first` on
    /// were not processed.
    GoAway { first: u64 },
    /// The handshake of a connection that sent 0-RTT data is done (before
    /// [`Event::Connected`]): the server accepted the early data, or
    /// refused it, and then the requests sent early went out again, each
    /// from its old stream index to its new one (`None`: the server's
    /// limits left no stream for it now).
    Early {
        accepted: bool,
        moved: Vec<(u64, Option<u64>)>,
    },
}

/// Why a connection ended.
#[derive(Debug, Clone)]
pub(crate) struct Closed {
    /// What the requests it carried end as.
    pub failure: Failure,
    /// The error code's name (an HTTP/3 code, a QUIC transport error, or
    /// "idle timeout").
    pub code: String,
    pub why: String,
    /// The server closed it (rather than the client, for an error).
    pub by_server: bool,
}

struct Request {
    reader: FrameReader,
    head: bool,
    /// Request bytes quinn did not take yet (its send buffer or the
    /// server's window was full).
    out: Vec<u8>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum UniKind {
    Unknown,
    Control,
    Encoder,
    Ignored,
}

struct Uni {
    /// Bytes before the stream type was whole.
    head: Vec<u8>,
    kind: Option<UniKind>,
    reader: FrameReader,
    pending: Vec<u8>,
}

pub(crate) struct H3Conn {
    pub link: Link,
    pub connected: bool,
    /// When the handshake began.
    pub started: Nanos,
    settings: bool,
    control_seen: bool,
    requests: HashMap<u64, Request>,
    unis: HashMap<StreamId, Uni>,
    pub closed: Option<Closed>,
    pub goaway: Option<u64>,
    scratch: Vec<u8>,
    /// Requests sent as 0-RTT data, by stream index, with their bytes:
    /// quinn forgets streams whose early data the server refused, so the
    /// client sends them again.
    early: Vec<(u64, Vec<u8>)>,
}

fn code_of(v: VarInt) -> u64 {
    v.into_inner()
}

impl H3Conn {
    pub fn new(link: Link, now: Nanos) -> H3Conn {
        H3Conn {
            link,
            connected: false,
            started: now,
            settings: false,
            control_seen: false,
            requests: HashMap::new(),
            unis: HashMap::new(),
            closed: None,
            goaway: None,
            scratch: Vec::new(),
            early: Vec::new(),
        }
    }

    /// Requests may go out before the handshake ends, as 0-RTT data (the
    /// connection resumed a session whose ticket allows early data).
    pub fn early(&self) -> bool {
        !self.connected && self.closed.is_none() && self.link.conn.has_0rtt()
    }

    /// Sends a request whose field section is `head` and body `body`;
    /// returns its stream's index, or `None` when the server allows no
    /// more streams now.
    pub fn start(&mut self, head: &[u8], body: &[u8]) -> Option<u64> {
        let id = self.link.conn.streams().open(Dir::Bi)?;
        let mut out = Vec::with_capacity(head.len() + body.len() + 16);
        frame::head(frame::HEADERS, head.len(), &mut out);
        out.extend_from_slice(head);
        if !body.is_empty() {
            frame::head(frame::DATA, body.len(), &mut out);
            out.extend_from_slice(body);
        }
        if !self.connected {
            self.early.push((id.index(), out.clone()));
        }
        self.write_request(id, out, true);
        Some(id.index())
    }

    /// Writes a request's bytes on stream `id` (what quinn does not take
    /// now goes when the stream is writable); `first`: its first sending,
    /// whose wait for its first packet is timed.
    fn write_request(&mut self, id: StreamId, mut out: Vec<u8>, first: bool) {
        let mut s = self.link.conn.send_stream(id);
        let n = s.write(&out).unwrap_or(0);
        out.drain(..n);
        if out.is_empty() {
            let _ = s.finish();
        }
        self.link.handed(crate::clock::now(), first);
        self.requests.insert(
            id.index(),
            Request {
                reader: FrameReader::new(MAX_FIELD_SECTION),
                head: false,
                out,
            },
        );
    }

    /// The handshake of a connection that sent 0-RTT data ended. When the
    /// server refused the early data, quinn has dropped every stream
    /// opened before (rather than sending their data again), so each
    /// request is written again, in order, on a new stream: still one
    /// request, the same one in the ledger.
    fn early_settled(&mut self, out: &mut Vec<Event>) {
        let early = std::mem::take(&mut self.early);
        if !self.link.conn.has_0rtt() {
            return;
        }
        let accepted = self.link.conn.accepted_0rtt();
        let mut moved = Vec::new();
        if !accepted {
            for (old, _) in &early {
                self.requests.remove(old);
            }
            for (old, bytes) in early {
                let new = self.link.conn.streams().open(Dir::Bi);
                if let Some(id) = new {
                    self.write_request(id, bytes, false);
                }
                moved.push((old, new.map(|id| id.index())));
            }
        }
        out.push(Event::Early { accepted, moved });
    }

    /// Gives up on request stream `stream`: its sending is reset and its
    /// reading stopped, with `H3_REQUEST_CANCELLED` (RFC 9114 §4.1.1).
    pub fn cancel(&mut self, stream: u64) {
        if self.requests.remove(&stream).is_none() {
            return;
        }
        let id = StreamId::new(quinn_proto::Side::Client, Dir::Bi, stream);
        let code = VarInt::from_u32(frame::H3_REQUEST_CANCELLED as u32);
        let _ = self.link.conn.send_stream(id).reset(code);
        let _ = self.link.conn.recv_stream(id).stop(code);
    }

    /// Closes the connection for an HTTP/3 error the client found.
    pub fn fail(&mut self, now: Nanos, e: H3Error) {
        if self.closed.is_some() {
            return;
        }
        let at = self.link.now(now);
        let code = VarInt::from_u64(e.code).unwrap_or(VarInt::from_u32(0x101));
        self.link
            .conn
            .close(at, code, bytes::Bytes::from(e.why.clone().into_bytes()));
        self.closed = Some(Closed {
            failure: Failure::Parse,
            code: frame::error_name(e.code),
            why: e.why,
            by_server: false,
        });
    }

    /// Takes every event quinn has, reading streams as they become
    /// readable; what the load thread must know goes to `out`.
    pub fn poll(&mut self, now: Nanos, out: &mut Vec<Event>) {
        while let Some(ev) = self.link.conn.poll() {
            let r = match ev {
                quinn_proto::Event::Connected => self.on_connected(out),
                quinn_proto::Event::ConnectionLost { reason } => {
                    if self.closed.is_none() {
                        self.closed = Some(self.lost(reason));
                    }
                    Ok(())
                }
                quinn_proto::Event::Stream(StreamEvent::Opened { dir: Dir::Uni }) => {
                    while let Some(id) = self.link.conn.streams().accept(Dir::Uni) {
                        self.unis.insert(id, Uni::new());
                        if let Err(e) = self.read_uni(id, out) {
                            self.fail(now, e);
                        }
                    }
                    Ok(())
                }
                quinn_proto::Event::Stream(StreamEvent::Readable { id }) => match id.dir() {
                    Dir::Bi => self.read_request(id, out),
                    Dir::Uni => self.read_uni(id, out),
                },
                quinn_proto::Event::Stream(StreamEvent::Writable { id }) => {
                    self.write_rest(id);
                    Ok(())
                }
                _ => Ok(()),
            };
            if let Err(e) = r {
                self.fail(now, e);
            }
        }
    }

    fn on_connected(&mut self, out: &mut Vec<Event>) -> Result<(), H3Error> {
        let alpn = self
            .link
            .conn
            .crypto_session()
            .handshake_data()
            .and_then(|d| {
                d.downcast::<quinn_proto::crypto::rustls::HandshakeData>()
                    .ok()
            })
            .and_then(|d| d.protocol);
        if alpn.as_deref() != Some(b"h3") {
            return Err(H3Error::new(
                frame::H3_GENERAL_PROTOCOL_ERROR,
                "the server did not choose h3 by ALPN",
            ));
        }
        self.early_settled(out);
        let Some(id) = self.link.conn.streams().open(Dir::Uni) else {
            return Err(H3Error::new(
                frame::H3_STREAM_CREATION_ERROR,
                "the server allows the client no unidirectional stream for its control stream",
            ));
        };
        let preface = frame::control_stream_preface(MAX_FIELD_SECTION);
        let n = self.link.conn.send_stream(id).write(&preface).unwrap_or(0);
        // Its frame leaves before the requests': not a request's wait.
        self.link.handed(crate::clock::now(), false);
        if n < preface.len() {
            return Err(H3Error::new(
                frame::H3_STREAM_CREATION_ERROR,
                "the server's flow control does not let the client send its SETTINGS",
            ));
        }
        self.connected = true;
        out.push(Event::Connected);
        Ok(())
    }

    fn lost(&self, reason: ConnectionError) -> Closed {
        let handshaking = !self.connected;
        let (failure, code, by_server) = match &reason {
            ConnectionError::ApplicationClosed(c) => (
                Failure::Read,
                frame::error_name(code_of(c.error_code)),
                true,
            ),
            ConnectionError::ConnectionClosed(c) => (
                if handshaking {
                    Failure::Tls
                } else {
                    Failure::Read
                },
                c.error_code.to_string(),
                true,
            ),
            ConnectionError::TransportError(e) => (
                if handshaking {
                    Failure::Tls
                } else {
                    Failure::Parse
                },
                e.code.to_string(),
                false,
            ),
            ConnectionError::TimedOut => (
                if handshaking {
                    Failure::Connect
                } else {
                    Failure::Read
                },
                "idle timeout".to_string(),
                false,
            ),
            ConnectionError::Reset => (Failure::Read, "stateless reset".to_string(), true),
            ConnectionError::VersionMismatch | ConnectionError::CidsExhausted => {
                (Failure::Connect, reason.to_string(), false)
            }
            ConnectionError::LocallyClosed => (Failure::Read, "closed".to_string(), false),
        };
        Closed {
            failure,
            code,
            why: reason.to_string(),
            by_server,
        }
    }

    fn write_rest(&mut self, id: StreamId) {
        if id.dir() != Dir::Bi {
            return;
        }
        let Some(r) = self.requests.get_mut(&id.index()) else {
            return;
        };
        if r.out.is_empty() {
            return;
        }
        let mut s = self.link.conn.send_stream(id);
        let n = s.write(&r.out).unwrap_or(0);
        r.out.drain(..n);
        if r.out.is_empty() {
            let _ = s.finish();
        }
    }

    /// Reads what request stream `id` has: the answer's frames.
    fn read_request(&mut self, id: StreamId, out: &mut Vec<Event>) -> Result<(), H3Error> {
        let stream = id.index();
        let Some(req) = self.requests.get_mut(&stream) else {
            return Ok(());
        };
        let scratch = &mut self.scratch;
        let mut recv = self.link.conn.recv_stream(id);
        let Ok(mut chunks) = recv.read(true) else {
            return Ok(());
        };
        let mut ended: Option<Event> = None;
        let mut result = Ok(());
        while ended.is_none() && result.is_ok() {
            match chunks.next(usize::MAX) {
                Ok(Some(chunk)) => {
                    result = req.reader.feed(&chunk.bytes, &mut |p| {
                        answer_piece(stream, &mut req.head, p, scratch, out)
                    });
                }
                Ok(None) if req.head && req.reader.at_boundary() => {
                    ended = Some(Event::Done { stream });
                }
                Ok(None) => {
                    // The answer ended before its head or inside a frame: this
                    // answer is malformed (§4.1.2), the connection is not.
                    ended = Some(Event::Reset {
                        stream,
                        code: frame::H3_MESSAGE_ERROR,
                        by_server: false,
                    });
                }
                Err(ReadError::Blocked) => break,
                Err(ReadError::Reset(code)) => {
                    ended = Some(Event::Reset {
                        stream,
                        code: code_of(code),
                        by_server: true,
                    });
                }
            }
        }
        let _ = chunks.finalize();
        if let Some(ev) = ended {
            self.requests.remove(&stream);
            out.push(ev);
        }
        result
    }

    /// Reads what a unidirectional stream of the server's has.
    fn read_uni(&mut self, id: StreamId, out: &mut Vec<Event>) -> Result<(), H3Error> {
        let Some(mut uni) = self.unis.remove(&id) else {
            return Ok(());
        };
        let mut recv = self.link.conn.recv_stream(id);
        let Ok(mut chunks) = recv.read(true) else {
            return Ok(());
        };
        let mut result = Ok(());
        let mut ended = false;
        let mut pieces: Vec<bytes::Bytes> = Vec::new();
        loop {
            match chunks.next(usize::MAX) {
                Ok(Some(chunk)) => pieces.push(chunk.bytes),
                Ok(None) | Err(ReadError::Reset(_)) => {
                    ended = true;
                    break;
                }
                Err(ReadError::Blocked) => break,
            }
        }
        let _ = chunks.finalize();
        for p in pieces {
            if result.is_ok() {
                result = self.uni_bytes(id, &mut uni, &p, out);
            }
        }
        let critical = matches!(uni.kind, Some(UniKind::Control | UniKind::Encoder));
        if ended && critical && result.is_ok() {
            result = Err(H3Error::new(
                frame::H3_CLOSED_CRITICAL_STREAM,
                "the server closed one of its control or QPACK streams",
            ));
        }
        if !ended {
            self.unis.insert(id, uni);
        }
        result
    }

    fn uni_bytes(
        &mut self,
        id: StreamId,
        uni: &mut Uni,
        mut p: &[u8],
        out: &mut Vec<Event>,
    ) -> Result<(), H3Error> {
        if uni.kind.is_none() {
            while uni.kind.is_none() && !p.is_empty() {
                uni.head.push(p[0]);
                p = &p[1..];
                if let Some((ty, _)) = varint::decode(&uni.head) {
                    uni.kind = Some(self.uni_kind(id, ty)?);
                }
            }
        }
        match uni.kind {
            Some(UniKind::Control) => {
                let mut events = Vec::new();
                let settings = &mut self.settings;
                let goaway = &mut self.goaway;
                uni.reader.feed(p, &mut |piece| {
                    control_piece(piece, settings, goaway, &mut events)
                })?;
                out.extend(events);
                Ok(())
            }
            Some(UniKind::Encoder) => {
                uni.pending.extend_from_slice(p);
                let n = qpack::encoder_instructions(&uni.pending)?;
                uni.pending.drain(..n);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn uni_kind(&mut self, id: StreamId, ty: u64) -> Result<UniKind, H3Error> {
        Ok(match ty {
            frame::CONTROL_STREAM if self.control_seen => {
                return Err(H3Error::new(
                    frame::H3_STREAM_CREATION_ERROR,
                    "the server opened a second control stream",
                ))
            }
            frame::CONTROL_STREAM => {
                self.control_seen = true;
                UniKind::Control
            }
            frame::PUSH_STREAM => {
                return Err(H3Error::new(
                    frame::H3_ID_ERROR,
                    "the server opened a push stream, which the client never allowed",
                ))
            }
            frame::ENCODER_STREAM => UniKind::Encoder,
            frame::DECODER_STREAM => UniKind::Ignored,
            _ => {
                // Unknown and reserved stream types are ignored (§6.2.3).
                let code = VarInt::from_u32(frame::H3_STREAM_CREATION_ERROR as u32);
                let _ = self.link.conn.recv_stream(id).stop(code);
                UniKind::Unknown
            }
        })
    }
}

impl Uni {
    fn new() -> Uni {
        Uni {
            head: Vec::new(),
            kind: None,
            reader: FrameReader::new(MAX_FIELD_SECTION),
            pending: Vec::new(),
        }
    }
}

/// One piece of an answer on request stream `stream`.
fn answer_piece(
    stream: u64,
    head: &mut bool,
    p: Piece<'_>,
    scratch: &mut Vec<u8>,
    out: &mut Vec<Event>,
) -> Result<(), H3Error> {
    match p {
        Piece::Data(_) if !*head => Err(H3Error::new(
            frame::H3_FRAME_UNEXPECTED,
            "the server sent DATA before the answer's HEADERS",
        )),
        Piece::Data(len) => {
            out.push(Event::Data { stream, len });
            Ok(())
        }
        Piece::Frame(frame::HEADERS, block) if !*head => {
            let status = qpack::status(block, scratch)?;
            // Informational heads (1xx) come before the final one.
            if status >= 200 {
                *head = true;
                out.push(Event::Head { stream, status });
            }
            Ok(())
        }
        // Trailers: decoded (a section that needs the dynamic table is an
        // error whatever it holds), otherwise ignored.
        Piece::Frame(frame::HEADERS, block) => qpack::decode(block, scratch, |_, _| {}),
        Piece::Frame(frame::PUSH_PROMISE, _) => Err(H3Error::new(
            frame::H3_ID_ERROR,
            "the server promised a push, which the client never allowed",
        )),
        Piece::Frame(ty, _) => Err(H3Error::new(
            frame::H3_FRAME_UNEXPECTED,
            format!("the server sent frame type 0x{ty:x} on a request stream"),
        )),
    }
}

/// One piece of the server's control stream.
fn control_piece(
    p: Piece<'_>,
    settings: &mut bool,
    goaway: &mut Option<u64>,
    events: &mut Vec<Event>,
) -> Result<(), H3Error> {
    match p {
        Piece::Frame(frame::SETTINGS, body) if !*settings => {
            frame::parse_settings(body)?;
            *settings = true;
            Ok(())
        }
        _ if !*settings => Err(H3Error::new(
            frame::H3_MISSING_SETTINGS,
            "the server's control stream does not begin with SETTINGS",
        )),
        Piece::Frame(frame::GOAWAY, body) => {
            let id = frame::parse_goaway(body)?;
            if id % 4 != 0 || goaway.is_some_and(|g| id > g) {
                return Err(H3Error::new(
                    frame::H3_ID_ERROR,
                    format!(
                        "the server's GOAWAY names stream {id}, not a lower client request stream"
                    ),
                ));
            }
            *goaway = Some(id);
            events.push(Event::GoAway { first: id / 4 });
            Ok(())
        }
        Piece::Frame(frame::CANCEL_PUSH, _) => Ok(()),
        Piece::Frame(ty, _) => Err(H3Error::new(
            frame::H3_FRAME_UNEXPECTED,
            format!("the server sent frame type 0x{ty:x} on its control stream"),
        )),
        Piece::Data(_) => Err(H3Error::new(
            frame::H3_FRAME_UNEXPECTED,
            "the server sent DATA on its control stream",
        )),
    }
}
