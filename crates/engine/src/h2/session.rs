//! One HTTP/2 connection's protocol state, apart from the requests it
//! carries: frames in (split into [`Event`]s for the load thread), frames
//! out (queued in `out`), the peer's settings, and both directions' flow
//! control.
//!
//! Flow control never throttles the server. The client announces the
//! largest stream window there is (`INITIAL_WINDOW_SIZE` 2³¹−1) and raises
//! the connection window to the same before its first request; both are
//! topped up once half is used. A server would have to send a gigabyte
//! unread to meet a closed window, and the load thread reads as it goes.
//!
//! The other direction is the server's to set: a request body goes out only
//! as far as the server's windows allow; the rest waits, in order, for its
//! `WINDOW_UPDATE`s. A request waiting for a window is still timed from
//! its planned time, as one waiting for a connection is.

use std::collections::VecDeque;

use super::frame;
use super::hpack::Decoder;

mod inbound;

/// What the server said, frame by frame, that concerns the requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    /// A header block of a stream: `status` is its `:status` (0 if none:
    /// trailers); `end` when it ends the stream.
    Headers { stream: u32, status: u16, end: bool },
    /// `len` bytes of a stream's body (flow-controlled length).
    Data { stream: u32, len: u32, end: bool },
    /// The server reset a stream.
    Reset { stream: u32, code: u32 },
    /// The server will process no stream above `last`.
    GoAway { last: u32, code: u32 },
    /// The server's settings arrived (the first time: the connection may
    /// now carry requests) or changed.
    Settings,
}

/// The connection broke the protocol (RFC 9113 §5.4.1): it must end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConnError {
    pub code: u32,
    pub why: String,
}

impl ConnError {
    fn new(code: u32, why: impl Into<String>) -> ConnError {
        ConnError {
            code,
            why: why.into(),
        }
    }
}

/// The settings every connection announces (shown in the outcome).
pub(crate) const CLIENT_SETTINGS: [(u16, u32); 2] = [
    (frame::SETTINGS_ENABLE_PUSH, 0),
    (frame::SETTINGS_INITIAL_WINDOW_SIZE, frame::MAX_WINDOW),
];
/// The connection window the client opens to at once (`WINDOW_UPDATE` on
/// stream 0), and tops up to.
pub(crate) const CONNECTION_WINDOW: u32 = frame::MAX_WINDOW;

/// A request body not yet sent for want of window: bytes `from..to` of the
/// request pool.
struct Pending {
    stream: u32,
    from: usize,
    to: usize,
    window: i64,
}

pub(crate) struct Session {
    /// Frames to write; `out_pos` bytes of them are written.
    pub out: Vec<u8>,
    pub out_pos: usize,
    /// A frame that arrived incomplete.
    held: Vec<u8>,
    decoder: Decoder,
    /// A header block being gathered from HEADERS and CONTINUATION frames.
    block: Vec<u8>,
    block_stream: u32,
    block_end: bool,
    /// The server's SETTINGS came: the connection may carry requests.
    pub ready: bool,
    /// The server's `SETTINGS_MAX_CONCURRENT_STREAMS` (unlimited until said).
    pub peer_max_streams: u32,
    peer_window: i64,
    peer_max_frame: usize,
    /// The connection's send window.
    send_window: i64,
    /// Body bytes received since the connection window was last topped up.
    unacked: u64,
    /// The next stream id to open.
    next_stream: u32,
    /// The highest stream id opened.
    pub last_stream: u32,
    /// The server's GOAWAY: no stream above this id is processed.
    pub goaway: Option<u32>,
    pending: VecDeque<Pending>,
    /// Frames of each type received, by type (0..=9, the rest in 10).
    pub frames_in: [u64; 11],
    /// The latest streams the client reset: frames the server had sent on
    /// them before it read the reset are the protocol's own race.
    reset_streams: VecDeque<u32>,
}

/// How many of the client's latest resets are remembered.
const RESETS_KEPT: usize = 256;

impl Session {
    /// A new connection's session, its preface, settings and connection
    /// window already queued.
    pub fn new() -> Session {
        let mut out = Vec::with_capacity(256);
        out.extend_from_slice(frame::PREFACE);
        frame::put_settings(&mut out, &CLIENT_SETTINGS);
        frame::put_window_update(&mut out, 0, CONNECTION_WINDOW - frame::DEFAULT_WINDOW);
        Session {
            out,
            out_pos: 0,
            held: Vec::new(),
            decoder: Decoder::new(),
            block: Vec::new(),
            block_stream: 0,
            block_end: false,
            ready: false,
            peer_max_streams: u32::MAX,
            peer_window: frame::DEFAULT_WINDOW as i64,
            peer_max_frame: frame::DEFAULT_MAX_FRAME,
            send_window: frame::DEFAULT_WINDOW as i64,
            unacked: 0,
            next_stream: 1,
            last_stream: 0,
            goaway: None,
            pending: VecDeque::new(),
            frames_in: [0; 11],
            reset_streams: VecDeque::new(),
        }
    }

    /// Whether a new stream may be opened at all (the server's settings
    /// came, it did not go away, ids are left).
    #[inline]
    pub fn open_for_streams(&self) -> bool {
        self.ready && self.goaway.is_none() && self.next_stream <= frame::MAX_STREAM_ID
    }

    /// Queues a request: its header block `block` and body `pool[from..to]`
    /// (as far as the windows allow; the rest waits). Returns its stream id.
    pub fn start(&mut self, block: &[u8], pool: &[u8], from: usize, to: usize) -> u32 {
        let stream = self.next_stream;
        self.next_stream += 2;
        self.last_stream = stream;
        let flags = frame::END_HEADERS | if from == to { frame::END_STREAM } else { 0 };
        frame::put_head(&mut self.out, block.len(), frame::HEADERS, flags, stream);
        self.out.extend_from_slice(block);
        if from < to {
            self.pending.push_back(Pending {
                stream,
                from,
                to,
                window: self.peer_window,
            });
            self.send_bodies(pool);
        }
        stream
    }

    /// Sends what the windows allow of the bodies waiting, in order.
    pub fn send_bodies(&mut self, pool: &[u8]) {
        while let Some(p) = self.pending.front_mut() {
            let room = self.send_window.min(p.window);
            if room <= 0 {
                return;
            }
            let n = (p.to - p.from).min(room as usize).min(self.peer_max_frame);
            let end = p.from + n == p.to;
            let flags = if end { frame::END_STREAM } else { 0 };
            frame::put_head(&mut self.out, n, frame::DATA, flags, p.stream);
            self.out.extend_from_slice(&pool[p.from..p.from + n]);
            p.from += n;
            p.window -= n as i64;
            self.send_window -= n as i64;
            if end {
                self.pending.pop_front();
            }
        }
    }

    /// The client gives up on `stream` (its timeout): a reset tells the
    /// server, and what of its body had not gone out never will.
    pub fn cancel(&mut self, stream: u32) {
        self.reset(stream, frame::CANCEL);
    }

    /// Resets `stream` with `code`; what of its body waits never goes out.
    pub fn reset(&mut self, stream: u32, code: u32) {
        self.forget(stream);
        frame::put_rst_stream(&mut self.out, stream, code);
        if self.reset_streams.len() >= RESETS_KEPT {
            self.reset_streams.pop_front();
        }
        self.reset_streams.push_back(stream);
    }

    /// Whether the client reset `stream` lately.
    pub fn was_reset(&self, stream: u32) -> bool {
        self.reset_streams.contains(&stream)
    }

    /// Drops what of `stream`'s body is still waiting.
    pub fn forget(&mut self, stream: u32) {
        self.pending.retain(|p| p.stream != stream);
    }

    /// A stream received `len` body bytes in all since its window was last
    /// topped up: top it up once half is used.
    pub fn stream_received(&mut self, stream: u32, total: u32) -> bool {
        if total >= frame::MAX_WINDOW / 2 {
            frame::put_window_update(&mut self.out, stream, total);
            return true;
        }
        false
    }

    /// Ends the connection with an error the client found; best effort.
    pub fn go_away(&mut self, code: u32) {
        frame::put_goaway(&mut self.out, 0, code);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::h2::frame::Head;

    fn server_settings(max_streams: Option<u32>) -> Vec<u8> {
        let mut b = Vec::new();
        let s: Vec<(u16, u32)> = max_streams
            .map(|m| (frame::SETTINGS_MAX_CONCURRENT_STREAMS, m))
            .into_iter()
            .collect();
        frame::put_settings(&mut b, &s);
        b
    }

    fn response(stream: u32) -> Vec<u8> {
        let mut b = Vec::new();
        // :status 200 is static entry 8.
        frame::put_head(&mut b, 1, frame::HEADERS, frame::END_HEADERS, stream);
        b.push(0x88);
        frame::put_head(&mut b, 5, frame::DATA, frame::END_STREAM, stream);
        b.extend_from_slice(b"hello");
        b
    }

    #[test]
    fn settings_then_a_response_in_every_split() {
        let mut wire = server_settings(Some(7));
        wire.extend(response(1));
        for cut in 0..wire.len() {
            let mut s = Session::new();
            s.start(&[0x82, 0x86, 0x84], &[], 0, 0);
            let mut ev = Vec::new();
            s.feed(&wire[..cut], &mut ev).unwrap();
            s.feed(&wire[cut..], &mut ev).unwrap();
            assert_eq!(
                ev,
                [
                    Event::Settings,
                    Event::Headers {
                        stream: 1,
                        status: 200,
                        end: false
                    },
                    Event::Data {
                        stream: 1,
                        len: 5,
                        end: true
                    },
                ],
                "cut {cut}"
            );
            assert_eq!(s.peer_max_streams, 7);
            assert!(s.open_for_streams());
        }
    }

    #[test]
    fn frames_on_streams_never_opened_or_before_settings_are_errors() {
        let mut s = Session::new();
        let mut ev = Vec::new();
        let e = s.feed(&response(1), &mut ev).unwrap_err();
        assert_eq!(e.code, frame::PROTOCOL_ERROR);
        let mut s = Session::new();
        s.feed(&server_settings(None), &mut ev).unwrap();
        let e = s.feed(&response(1), &mut ev).unwrap_err();
        assert!(e.why.contains("never opened"), "{}", e.why);
        let mut big = Vec::new();
        frame::put_head(&mut big, 20_000, frame::DATA, 0, 1);
        assert_eq!(
            s.feed(&big, &mut ev).unwrap_err().code,
            frame::FRAME_SIZE_ERROR
        );
    }

    #[test]
    fn a_body_waits_for_the_servers_window() {
        let mut s = Session::new();
        let mut ev = Vec::new();
        let mut settings = Vec::new();
        frame::put_settings(&mut settings, &[(frame::SETTINGS_INITIAL_WINDOW_SIZE, 4)]);
        s.feed(&settings, &mut ev).unwrap();
        s.out.clear();
        let pool = b"0123456789";
        let id = s.start(&[0x83], pool, 0, 10);
        // HEADERS (9 + 1) and a DATA frame of the 4 bytes the window allows.
        assert_eq!(s.out.len(), 10 + 9 + 4);
        assert_eq!(&s.out[19..], b"0123");
        s.out.clear();
        let mut wu = Vec::new();
        frame::put_window_update(&mut wu, id, 100);
        s.feed(&wu, &mut ev).unwrap();
        s.send_bodies(pool);
        let h = Head::parse(&s.out);
        assert_eq!(
            (h.kind, h.len, h.flags),
            (frame::DATA, 6, frame::END_STREAM)
        );
        assert_eq!(&s.out[9..], b"456789");
    }

    #[test]
    fn ping_is_answered_and_goaway_only_lowers() {
        let mut s = Session::new();
        let mut ev = Vec::new();
        s.feed(&server_settings(None), &mut ev).unwrap();
        s.out.clear();
        let mut w = Vec::new();
        frame::put_head(&mut w, 8, frame::PING, 0, 0);
        w.extend_from_slice(b"12345678");
        frame::put_goaway(&mut w, 9, 0);
        frame::put_goaway(&mut w, 11, 0);
        s.feed(&w, &mut ev).unwrap();
        assert_eq!(Head::parse(&s.out).flags, frame::ACK);
        assert_eq!(&s.out[9..17], b"12345678");
        assert_eq!(s.goaway, Some(9));
        assert!(!s.open_for_streams());
    }
}
