//! Entry points for the fuzz targets under `fuzz/` and for their replay on
//! the stable toolchain (`tests/fuzz_corpus.rs`): each takes what a hostile
//! server could send to one of the engine's parsers. None may panic on any
//! input. The checks each makes on what was decoded (that it does not
//! depend on where the bytes were cut, that another HPACK decoder agrees)
//! panic when they fail, so that a fuzzer reports them as findings.
//!
//! Not part of the engine's interface: it exists so that the fuzzers, the
//! corpus replay and the property tests drive the parsers one way.

use std::fmt::Debug;

use arbitrary::{Arbitrary, Unstructured};

use crate::h2::frame;
use crate::h2::hpack::{Decoder, HpackError};
use crate::h2::session::{Event, Session};
use crate::h3::frame::{self as h3frame, FrameReader, Piece};
use crate::h3::qpack;
use crate::response::{ParseError, ResponseParser, Step};

/// A decoded header block: its fields, in order.
pub type Fields = Vec<(Vec<u8>, Vec<u8>)>;

/// The head that the `chunked` target's bytes follow as the body.
const CHUNKED_HEAD: &[u8] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";

/// The client's request header block (`GET / http`, static entries).
const REQUEST_BLOCK: [u8; 3] = [0x82, 0x86, 0x84];

/// The head limit the HTTP/1.1 targets parse with: small, so that inputs
/// a fuzzer can grow reach it.
const MAX_HEAD: usize = 2048;

/// Any bytes as a server's HTTP/1.1 responses, for a GET and for a HEAD
/// request: the same answers (and fault) whole or cut anywhere.
pub fn http1_response(data: &[u8]) {
    for no_body in [false, true] {
        same_however_cut(data, |b, cuts| responses(b, cuts, no_body));
    }
}

/// Any bytes as the body of a chunked response.
pub fn chunked(body: &[u8]) {
    let mut r = CHUNKED_HEAD.to_vec();
    r.extend_from_slice(body);
    same_however_cut(&r, |b, cuts| responses(b, cuts, false));
}

/// Any bytes as what a server sends on an HTTP/2 connection that has
/// three requests open (one with a body): the same events (and connection
/// error) whole or cut anywhere.
pub fn h2_frames(data: &[u8]) {
    same_however_cut(data, frames);
}

/// Calls `run` with no cut, one cut in the middle and cuts every few
/// bytes, and asserts that the results are equal.
fn same_however_cut<T: PartialEq + Debug>(data: &[u8], run: impl Fn(&[u8], &[usize]) -> T) {
    let whole = run(data, &[]);
    let step = (data.len() / 64).max(7);
    let many: Vec<usize> = (1..data.len()).step_by(step).collect();
    for cuts in [vec![data.len() / 2], many] {
        let cut = run(data, &cuts);
        assert_eq!(whole, cut, "cut at {cuts:?}");
    }
}

/// Each response's status and close flag, whether a fault ended the
/// bytes, and what the connection's end then meant.
pub(crate) type Answers = (Vec<(u16, bool)>, bool, Result<Option<Step>, ParseError>);

/// What a connection to the server makes of `bytes` arriving cut at
/// `cuts` (ascending): each response's status and close flag, whether it
/// failed, and (if not) what the server closing the connection then meant.
/// The held-bytes logic is the load thread's: what `feed` did not consume
/// is offered again with the next piece.
pub(crate) fn responses(bytes: &[u8], cuts: &[usize], no_body: bool) -> Answers {
    let mut p = ResponseParser::new(no_body, MAX_HEAD);
    let mut held: Vec<u8> = Vec::new();
    let mut got = Vec::new();
    let mut at = 0;
    for &edge in cuts.iter().chain([&bytes.len()]) {
        let edge = edge.clamp(at, bytes.len());
        held.extend_from_slice(&bytes[at..edge]);
        at = edge;
        if !feed_held(&mut p, &mut held, &mut got) {
            return (got, true, Err(ParseError::Truncated));
        }
    }
    let eof = p.on_eof(held.len());
    (got, false, eof)
}

/// Feeds what is held until the parser needs more; false on a fault.
fn feed_held(p: &mut ResponseParser, held: &mut Vec<u8>, got: &mut Vec<(u16, bool)>) -> bool {
    loop {
        match p.feed(held) {
            Ok(Step::NeedMore { consumed }) => {
                held.drain(..consumed);
                return true;
            }
            Ok(Step::Done {
                consumed,
                status,
                close,
                ..
            }) => {
                held.drain(..consumed);
                got.push((status, close));
                if held.is_empty() {
                    return true;
                }
            }
            Err(_) => return false,
        }
    }
}

/// The request body bytes streams are opened with.
const POOL: [u8; 300] = [b'x'; 300];

/// The events and connection error of an HTTP/2 session with streams 1,
/// 3 and 5 open (3 with a 300-byte body) that receives `bytes` cut at
/// `cuts`.
fn frames(bytes: &[u8], cuts: &[usize]) -> (Vec<Event>, Option<(u32, String)>) {
    let mut s = Session::new();
    s.start(&REQUEST_BLOCK, &POOL, 0, 0);
    s.start(&REQUEST_BLOCK, &POOL, 0, POOL.len());
    s.start(&REQUEST_BLOCK, &POOL, 0, 0);
    let mut events = Vec::new();
    let mut at = 0;
    for &edge in cuts.iter().chain([&bytes.len()]) {
        let edge = edge.clamp(at, bytes.len());
        let fed = s.feed(&bytes[at..edge], &mut events);
        at = edge;
        if let Err(e) = fed {
            return (events, Some((e.code, e.why)));
        }
        s.send_bodies(&POOL);
    }
    (events, None)
}

/// Header blocks out of fuzz input: each block is preceded by its length
/// in one byte (the last one takes what is left), so that one input holds
/// a sequence that shares the decoder's dynamic table (RFC 7541 C.3).
fn hpack_blocks(data: &[u8]) -> Vec<&[u8]> {
    let mut blocks = Vec::new();
    let mut rest = data;
    while let Some((&n, tail)) = rest.split_first() {
        let n = (n as usize).min(tail.len());
        blocks.push(&tail[..n]);
        rest = &tail[n..];
    }
    blocks
}

/// Each block of `data` (each preceded by its length in one byte) as our
/// decoder reads it, one decoder for all: the fields, up to and including
/// the first block it rejects (why, as text).
pub fn hpack_decode(data: &[u8]) -> Vec<Result<Fields, String>> {
    let mut d = Decoder::new();
    let mut out = Vec::new();
    for block in hpack_blocks(data) {
        let mut fields = Vec::new();
        let r = d.decode(block, |n, v| fields.push((n.to_vec(), v.to_vec())));
        let failed = r.is_err();
        out.push(r.map(|_| fields).map_err(|e| e.to_string()));
        if failed {
            break;
        }
    }
    out
}

/// Our decoder against `reference` (another crate's decoder, one for the
/// whole input) on each block of `data`. Where both accept a block they
/// must decode the same fields; where one rejects it the comparison ends
/// (the tables no longer agree), and the disagreement must be one of
/// [`accepted_difference`]'s. Returns how the input ended, for counting.
pub fn hpack_differential(
    data: &[u8],
    mut reference: impl FnMut(&[u8]) -> Result<Fields, String>,
) -> Agreement {
    let ours = hpack_decode(data);
    for (block, ours) in hpack_blocks(data).into_iter().zip(ours) {
        let theirs = reference(block);
        match (&ours, &theirs) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "the decoders differ on block {block:02x?}"),
            (Err(_), Err(_)) => return Agreement::BothRejected,
            _ => {
                let known = accepted_difference(block, &ours, &theirs);
                assert!(
                    known.is_some(),
                    "block {block:02x?}: ours {ours:?}, the reference {theirs:?}"
                );
                return Agreement::Differ(known.unwrap_or_default());
            }
        }
    }
    Agreement::Same
}

/// How a differential input ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agreement {
    /// Every block decoded alike.
    Same,
    /// Both rejected the same block.
    BothRejected,
    /// One rejected a block the other took, for the reason named.
    Differ(&'static str),
}

/// Where our decoder and the reference (`loona-hpack`, limited to the
/// same 4,096-byte table) may disagree on whether a block is valid, and
/// why ours is right by RFC 7541. `None`: a disagreement nobody has
/// explained, which is a finding.
pub fn accepted_difference(
    block: &[u8],
    ours: &Result<Fields, String>,
    theirs: &Result<Fields, String>,
) -> Option<&'static str> {
    match (ours, theirs) {
        // §4.2: a size update "MUST occur at the beginning of a header
        // block"; the reference takes one between fields.
        (Err(e), Ok(_)) if e == &HpackError::LateTableSizeUpdate.to_string() => {
            Some("a size update after a field")
        }
        // A block of size updates alone: nothing in §4.2 or §6.3 asks for
        // a field after one; the reference rejects a block that ends in one.
        (Ok(f), Err(e)) if f.is_empty() && block.first().is_some_and(|b| b & 0xe0 == 0x20) => e
            .contains("SizeUpdateAtEnd")
            .then_some("a block of size updates alone"),
        _ => None,
    }
}

/// A hostile server's side of one connection, played against the client's
/// state machine (see [`conversation`]).
#[derive(Arbitrary, Debug)]
pub struct Conversation {
    /// HTTP/2 (the session) or HTTP/1.1 (the response reader).
    pub h2: bool,
    pub actions: Vec<Action>,
}

/// One step of a [`Conversation`]: the client's or the server's.
#[derive(Arbitrary, Debug)]
pub enum Action {
    /// The client sends a request with `body` bytes (HTTP/2 only; HTTP/1.1
    /// responses are read whether asked for or not).
    Request { body: u8 },
    /// The client gives up on its `nth` open stream (its timeout).
    Cancel { nth: u8 },
    /// Bytes from the server, in one read.
    Bytes(Vec<u8>),
    /// An HTTP/1.1 response framed by `framing` (length, chunked, close,
    /// none), delivered in reads of `piece` bytes.
    Response {
        status: u16,
        framing: u8,
        body: Vec<u8>,
        piece: u8,
    },
    /// An HTTP/2 frame of any type and flags; `stream` 0 is the
    /// connection, others the `stream`th odd id.
    Frame {
        kind: u8,
        flags: u8,
        stream: u8,
        payload: Vec<u8>,
    },
    /// A valid header block (static-table fields picked by `fields`) on
    /// the `stream`th odd stream, in a HEADERS frame and, past `split`
    /// bytes, CONTINUATIONs.
    Headers {
        stream: u8,
        fields: Vec<u8>,
        end: bool,
        split: u8,
    },
    /// The server closes the connection; the client opens another.
    Close,
}

/// Plays the conversation that `data` describes (decoded by `arbitrary`)
/// against the HTTP/1.1 response reader or the HTTP/2 session, the way
/// the load thread drives them (neither needs a socket). Checks that
/// nothing panics and that the HTTP/2 session reports events only on
/// streams the client opened.
pub fn conversation(data: &[u8]) {
    let Ok(c) = Conversation::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    if c.h2 {
        let mut conn = H2Conn::new();
        c.actions.iter().for_each(|a| conn.act(a));
    } else {
        let mut conn = H1Conn::new();
        c.actions.iter().for_each(|a| conn.act(a));
    }
}

/// The bytes a server action puts on the wire and the size of the reads
/// they arrive in (0: one read).
fn wire(a: &Action) -> Option<(Vec<u8>, usize)> {
    match a {
        Action::Bytes(b) => Some((b.clone(), 0)),
        Action::Response {
            status,
            framing,
            body,
            piece,
        } => Some((http1_bytes(*status, *framing, body), *piece as usize)),
        Action::Frame {
            kind,
            flags,
            stream,
            payload,
        } => {
            let mut out = Vec::new();
            frame::put_head(&mut out, payload.len(), *kind, *flags, stream_id(*stream));
            out.extend_from_slice(payload);
            Some((out, 0))
        }
        Action::Headers {
            stream,
            fields,
            end,
            split,
        } => Some((header_frames(stream_id(*stream), fields, *end, *split), 0)),
        Action::Request { .. } | Action::Cancel { .. } | Action::Close => None,
    }
}

fn stream_id(n: u8) -> u32 {
    if n == 0 {
        0
    } else {
        n as u32 * 2 - 1
    }
}

/// An HTTP/1.1 response with `body`, framed one of four ways.
fn http1_bytes(status: u16, framing: u8, body: &[u8]) -> Vec<u8> {
    let mut r = format!("HTTP/1.1 {status} X\r\n").into_bytes();
    match framing % 4 {
        0 => r.extend(format!("Content-Length: {}\r\n\r\n", body.len()).bytes()),
        1 => r.extend(b"Transfer-Encoding: chunked\r\n\r\n"),
        2 => r.extend(b"Connection: close\r\n\r\n"),
        _ => r.extend(b"\r\n"),
    }
    if framing % 4 == 1 {
        for c in body.chunks(framing as usize / 4 + 1) {
            r.extend(format!("{:x}\r\n", c.len()).bytes());
            r.extend_from_slice(c);
            r.extend(b"\r\n");
        }
        r.extend(b"0\r\n\r\n");
    } else {
        r.extend_from_slice(body);
    }
    r
}

/// A header block of static-table fields (indexed, and literal without
/// indexing for the picks above the table) in HEADERS + CONTINUATION.
fn header_frames(stream: u32, fields: &[u8], end: bool, split: u8) -> Vec<u8> {
    let mut block = Vec::new();
    for &f in fields {
        match f % 64 {
            0 => block.extend_from_slice(&[0x08, 0x03, b'2', b'0', b'0']),
            n if n <= 61 => block.push(0x80 | n),
            _ => block.extend_from_slice(&[0x0f, 0x27, 0x01, b'x']),
        }
    }
    let split = (split as usize).min(block.len());
    let (first, rest) = block.split_at(split);
    let mut out = Vec::new();
    let end_stream = if end { frame::END_STREAM } else { 0 };
    let more = !rest.is_empty();
    let flags = end_stream | if more { 0 } else { frame::END_HEADERS };
    frame::put_head(&mut out, first.len(), frame::HEADERS, flags, stream);
    out.extend_from_slice(first);
    if more {
        frame::put_head(
            &mut out,
            rest.len(),
            frame::CONTINUATION,
            frame::END_HEADERS,
            stream,
        );
        out.extend_from_slice(rest);
    }
    out
}

/// The client's HTTP/1.1 connection: the response reader and the bytes it
/// holds between reads.
struct H1Conn {
    parser: ResponseParser,
    held: Vec<u8>,
}

impl H1Conn {
    fn new() -> H1Conn {
        H1Conn {
            parser: ResponseParser::new(false, MAX_HEAD),
            held: Vec::new(),
        }
    }

    fn act(&mut self, a: &Action) {
        if let Action::Close = a {
            let _ = self.parser.on_eof(self.held.len());
            *self = H1Conn::new();
            return;
        }
        let Some((bytes, piece)) = wire(a) else {
            return;
        };
        let mut got = Vec::new();
        let piece = if piece == 0 { bytes.len() } else { piece };
        for read in bytes.chunks(piece.max(1)) {
            self.held.extend_from_slice(read);
            // A fault or a close ends the connection: the client opens another.
            if !feed_held(&mut self.parser, &mut self.held, &mut got)
                || got.iter().any(|&(_, close)| close)
            {
                *self = H1Conn::new();
                return;
            }
        }
    }
}

/// The client's HTTP/2 connection: the session and the streams it has
/// open, with their body bytes received.
struct H2Conn {
    session: Session,
    open: Vec<(u32, u32)>,
    events: Vec<Event>,
}

impl H2Conn {
    fn new() -> H2Conn {
        H2Conn {
            session: Session::new(),
            open: Vec::new(),
            events: Vec::new(),
        }
    }

    fn act(&mut self, a: &Action) {
        match a {
            Action::Request { body } => {
                if self.session.open_for_streams() {
                    let id = self.session.start(&REQUEST_BLOCK, &POOL, 0, *body as usize);
                    self.open.push((id, 0));
                }
            }
            Action::Cancel { nth } => {
                if !self.open.is_empty() {
                    let (id, _) = self.open.remove(*nth as usize % self.open.len());
                    self.session.cancel(id);
                }
            }
            Action::Close => *self = H2Conn::new(),
            _ => {
                if let Some((bytes, _)) = wire(a) {
                    self.receive(&bytes);
                }
            }
        }
        // What is queued is written at once.
        self.session.out.clear();
        self.session.out_pos = 0;
    }

    /// The server's bytes, and what the load thread does with the events.
    fn receive(&mut self, bytes: &[u8]) {
        let mut events = std::mem::take(&mut self.events);
        events.clear();
        let fed = self.session.feed(bytes, &mut events);
        self.session.send_bodies(&POOL);
        for ev in &events {
            self.on_event(*ev);
        }
        self.events = events;
        if let Err(e) = fed {
            self.session.go_away(e.code);
            *self = H2Conn::new();
        }
    }

    fn on_event(&mut self, ev: Event) {
        let (stream, len, end) = match ev {
            Event::Headers { stream, end, .. } => (stream, 0, end),
            Event::Data { stream, len, end } => (stream, len, end),
            Event::Reset { stream, .. } => (stream, 0, true),
            Event::GoAway { .. } | Event::Settings => return,
        };
        let last = self.session.last_stream;
        assert!(
            stream % 2 == 1 && stream <= last,
            "{ev:?} on a stream the client never opened (last {last})"
        );
        let Some(at) = self.open.iter().position(|&(id, _)| id == stream) else {
            return;
        };
        let total = &mut self.open[at].1;
        *total = total.saturating_add(len);
        if self.session.stream_received(stream, *total) {
            *total = 0;
        }
        if end {
            self.open.remove(at);
        }
    }
}

/// What one HTTP/3 request stream's bytes make: DATA bytes (consecutive
/// ones added up, as cuts split them), each HEADERS frame's fields as
/// QPACK decodes them (or its error code), each other frame the reader
/// keeps; the error that ended the stream; whether it ended on a frame
/// boundary.
type H3Stream = (Vec<H3Piece>, Option<u64>, bool);

#[derive(Debug, PartialEq)]
enum H3Piece {
    Data(usize),
    Fields(Result<Fields, u64>),
    Frame(u64, Vec<u8>),
}

/// Any bytes as a server's HTTP/3 request stream (frames, QPACK field
/// sections decoded with the client's zero-capacity table): the same
/// pieces and error whole or cut anywhere.
pub fn h3_frames(data: &[u8]) {
    same_however_cut(data, h3_stream);
}

fn h3_stream(bytes: &[u8], cuts: &[usize]) -> H3Stream {
    let mut r = FrameReader::new(MAX_HEAD as u64);
    let mut got: Vec<H3Piece> = Vec::new();
    let mut scratch = Vec::new();
    let mut at = 0;
    for &edge in cuts.iter().chain([&bytes.len()]) {
        let edge = edge.clamp(at, bytes.len());
        let fed = r.feed(&bytes[at..edge], &mut |p| {
            match p {
                Piece::Data(n) => match got.last_mut() {
                    Some(H3Piece::Data(m)) => *m += n,
                    _ => got.push(H3Piece::Data(n)),
                },
                Piece::Frame(h3frame::HEADERS, block) => {
                    got.push(H3Piece::Fields(qpack_fields(block, &mut scratch)))
                }
                Piece::Frame(ty, payload) => got.push(H3Piece::Frame(ty, payload.to_vec())),
            }
            Ok(())
        });
        at = edge;
        if let Err(e) = fed {
            return (got, Some(e.code), false);
        }
    }
    (got, None, r.at_boundary())
}

fn qpack_fields(block: &[u8], scratch: &mut Vec<u8>) -> Result<Fields, u64> {
    let mut fields = Vec::new();
    qpack::decode(block, scratch, |n, v| fields.push((n.to_vec(), v.to_vec())))
        .map(|()| fields)
        .map_err(|e| e.code)
}

/// Any bytes as one QPACK field section, decoded with the client's
/// zero-capacity table: the same fields (or error) with a scratch buffer
/// fresh or reused, and the `:status` the load thread reads agreeing with
/// the decoded fields.
pub fn qpack_decode(data: &[u8]) -> Result<Fields, u64> {
    let mut scratch = Vec::new();
    let first = qpack_fields(data, &mut scratch);
    scratch.extend_from_slice(b"left over");
    assert_eq!(
        first,
        qpack_fields(data, &mut scratch),
        "the scratch buffer carried state"
    );
    let status = qpack::status(data, &mut scratch).map_err(|e| e.code);
    match &first {
        Err(code) => assert_eq!(status, Err(*code), "status() and decode() disagree"),
        Ok(fields) => {
            let want = fields
                .iter()
                .find(|(k, _)| k == b":status")
                .and_then(|(_, v)| std::str::from_utf8(v).ok())
                .filter(|s| s.len() == 3)
                .and_then(|s| s.parse::<u16>().ok());
            assert_eq!(status.ok(), want, "status() and the fields disagree");
        }
    }
    first
}
