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

use super::frame::{self, Head};
use super::hpack::Decoder;

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
/// A header block larger than this is a connection error: nothing a load
/// test asks for has one, and it bounds what a server can make us hold.
const MAX_BLOCK: usize = 1 << 20;

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

    /// Reads frames from `data`, pushing what concerns the requests to
    /// `events`; frames the protocol answers (SETTINGS, PING) are answered.
    pub fn feed(&mut self, mut data: &[u8], events: &mut Vec<Event>) -> Result<(), ConnError> {
        if !self.held.is_empty() {
            // Complete the frame held from the last read first.
            let need = if self.held.len() < frame::HEADER_LEN {
                frame::HEADER_LEN - self.held.len()
            } else {
                frame::HEADER_LEN + Head::parse(&self.held).len - self.held.len()
            };
            let take = need.min(data.len());
            self.held.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.held.len() == frame::HEADER_LEN {
                let h = Head::parse(&self.held);
                self.check_size(&h)?;
                let rest = h.len.min(data.len());
                self.held.extend_from_slice(&data[..rest]);
                data = &data[rest..];
            }
            let h = Head::parse(&self.held);
            if self.held.len() < frame::HEADER_LEN + h.len {
                return Ok(());
            }
            let held = std::mem::take(&mut self.held);
            self.frame(h, &held[frame::HEADER_LEN..], events)?;
            self.held = held;
            self.held.clear();
        }
        while data.len() >= frame::HEADER_LEN {
            let h = Head::parse(data);
            self.check_size(&h)?;
            if data.len() < frame::HEADER_LEN + h.len {
                break;
            }
            self.frame(
                h,
                &data[frame::HEADER_LEN..frame::HEADER_LEN + h.len],
                events,
            )?;
            data = &data[frame::HEADER_LEN + h.len..];
        }
        self.held.extend_from_slice(data);
        Ok(())
    }

    fn check_size(&self, h: &Head) -> Result<(), ConnError> {
        if h.len > frame::DEFAULT_MAX_FRAME {
            return Err(ConnError::new(
                frame::FRAME_SIZE_ERROR,
                format!(
                    "a {} frame of {} bytes, above the {} the client allows",
                    frame::kind_name(h.kind),
                    h.len,
                    frame::DEFAULT_MAX_FRAME
                ),
            ));
        }
        Ok(())
    }

    fn frame(&mut self, h: Head, p: &[u8], events: &mut Vec<Event>) -> Result<(), ConnError> {
        self.frames_in[(h.kind as usize).min(10)] += 1;
        if self.block_stream != 0 && h.kind != frame::CONTINUATION {
            return Err(ConnError::new(
                frame::PROTOCOL_ERROR,
                format!("a {} frame inside a header block", frame::kind_name(h.kind)),
            ));
        }
        if !self.ready && h.kind != frame::SETTINGS {
            return Err(ConnError::new(
                frame::PROTOCOL_ERROR,
                format!(
                    "the server's first frame was {}, not SETTINGS",
                    frame::kind_name(h.kind)
                ),
            ));
        }
        match h.kind {
            frame::DATA => {
                self.stream_frame(&h)?;
                self.unacked += h.len as u64;
                if self.unacked >= (CONNECTION_WINDOW / 2) as u64 {
                    frame::put_window_update(&mut self.out, 0, self.unacked as u32);
                    self.unacked = 0;
                }
                // Padding longer than the frame is malformed; the body itself
                // is counted, never kept.
                frame::unpadded(h.kind, h.flags, p).ok_or_else(|| {
                    ConnError::new(frame::PROTOCOL_ERROR, "DATA padding longer than the frame")
                })?;
                events.push(Event::Data {
                    stream: h.stream,
                    len: h.len as u32,
                    end: h.flags & frame::END_STREAM != 0,
                });
            }
            frame::HEADERS => {
                self.stream_frame(&h)?;
                let frag = frame::unpadded(h.kind, h.flags, p).ok_or_else(|| {
                    ConnError::new(
                        frame::PROTOCOL_ERROR,
                        "HEADERS padding longer than the frame",
                    )
                })?;
                self.block_stream = h.stream;
                self.block_end = h.flags & frame::END_STREAM != 0;
                if h.flags & frame::END_HEADERS != 0 {
                    // A block in one frame (every answer a load test
                    // asks for) is decoded where it lies.
                    self.end_block(Some(frag), events)?;
                } else {
                    self.block.clear();
                    self.block.extend_from_slice(frag);
                }
            }
            frame::CONTINUATION => {
                if self.block_stream == 0 || h.stream != self.block_stream {
                    return Err(ConnError::new(
                        frame::PROTOCOL_ERROR,
                        "a CONTINUATION frame outside a header block",
                    ));
                }
                if self.block.len() + p.len() > MAX_BLOCK {
                    return Err(ConnError::new(
                        frame::PROTOCOL_ERROR,
                        "a header block above 1 MiB",
                    ));
                }
                self.block.extend_from_slice(p);
                if h.flags & frame::END_HEADERS != 0 {
                    self.end_block(None, events)?;
                }
            }
            frame::PRIORITY => {}
            frame::RST_STREAM => {
                if h.stream == 0 || h.len != 4 {
                    return Err(ConnError::new(
                        frame::PROTOCOL_ERROR,
                        "a malformed RST_STREAM",
                    ));
                }
                self.idle_stream(&h)?;
                self.forget(h.stream);
                events.push(Event::Reset {
                    stream: h.stream,
                    code: frame::u32_at(p, 0),
                });
            }
            frame::SETTINGS => self.settings(&h, p, events)?,
            frame::PUSH_PROMISE => {
                return Err(ConnError::new(
                    frame::PROTOCOL_ERROR,
                    "a PUSH_PROMISE, though the client disabled push",
                ))
            }
            frame::PING => {
                if h.stream != 0 || h.len != 8 {
                    return Err(ConnError::new(frame::PROTOCOL_ERROR, "a malformed PING"));
                }
                if h.flags & frame::ACK == 0 {
                    frame::put_head(&mut self.out, 8, frame::PING, frame::ACK, 0);
                    self.out.extend_from_slice(p);
                }
            }
            frame::GOAWAY => {
                if h.stream != 0 || h.len < 8 {
                    return Err(ConnError::new(frame::PROTOCOL_ERROR, "a malformed GOAWAY"));
                }
                let last = frame::u32_at(p, 0) & frame::MAX_STREAM_ID;
                // A later GOAWAY may only lower the last stream id.
                let last = self.goaway.map_or(last, |g| g.min(last));
                self.goaway = Some(last);
                events.push(Event::GoAway {
                    last,
                    code: frame::u32_at(p, 4),
                });
            }
            frame::WINDOW_UPDATE => {
                if h.len != 4 {
                    return Err(ConnError::new(
                        frame::FRAME_SIZE_ERROR,
                        "a malformed WINDOW_UPDATE",
                    ));
                }
                let inc = (frame::u32_at(p, 0) & frame::MAX_WINDOW) as i64;
                if h.stream == 0 {
                    self.send_window += inc;
                    if self.send_window > frame::MAX_WINDOW as i64 {
                        return Err(ConnError::new(
                            frame::FLOW_CONTROL_ERROR,
                            "the connection window grew above 2^31-1",
                        ));
                    }
                } else if let Some(pd) = self.pending.iter_mut().find(|pd| pd.stream == h.stream) {
                    pd.window += inc;
                }
            }
            // Unknown frame types are ignored (RFC 9113 §4.1).
            _ => {}
        }
        Ok(())
    }

    /// A frame that belongs to a stream the client opened.
    fn stream_frame(&self, h: &Head) -> Result<(), ConnError> {
        if h.stream == 0 {
            return Err(ConnError::new(
                frame::PROTOCOL_ERROR,
                format!("a {} frame on stream 0", frame::kind_name(h.kind)),
            ));
        }
        self.idle_stream(h)
    }

    /// Frames on a stream the client never opened (an even id: the server's,
    /// or one above the last opened) are a connection error.
    fn idle_stream(&self, h: &Head) -> Result<(), ConnError> {
        if h.stream.is_multiple_of(2) || h.stream > self.last_stream {
            return Err(ConnError::new(
                frame::PROTOCOL_ERROR,
                format!(
                    "a {} frame on stream {}, which the client never opened",
                    frame::kind_name(h.kind),
                    h.stream
                ),
            ));
        }
        Ok(())
    }

    /// A whole header block (`whole`, or the one gathered in `block`):
    /// decoded (always, to keep the decoder's table in step with the
    /// server's encoder) for its `:status`.
    fn end_block(
        &mut self,
        whole: Option<&[u8]>,
        events: &mut Vec<Event>,
    ) -> Result<(), ConnError> {
        let mut status = 0u16;
        let mut bad_status = false;
        let block = whole.unwrap_or(&self.block);
        self.decoder
            .decode(block, |name, value| {
                if name == b":status" {
                    // Three digits, 100 to 999 (RFC 9110 §15).
                    match *value {
                        [a @ b'1'..=b'9', b @ b'0'..=b'9', c @ b'0'..=b'9'] => {
                            status =
                                (a - b'0') as u16 * 100 + (b - b'0') as u16 * 10 + (c - b'0') as u16
                        }
                        _ => bad_status = true,
                    }
                }
            })
            .map_err(|e| {
                ConnError::new(
                    frame::COMPRESSION_ERROR,
                    format!("a header block that does not decode: {e}"),
                )
            })?;
        let stream = self.block_stream;
        self.block_stream = 0;
        if self.block.capacity() > 4096 {
            self.block = Vec::new();
        }
        if bad_status {
            return Err(ConnError::new(frame::PROTOCOL_ERROR, "a malformed :status"));
        }
        events.push(Event::Headers {
            stream,
            status,
            end: self.block_end,
        });
        Ok(())
    }

    fn settings(&mut self, h: &Head, p: &[u8], events: &mut Vec<Event>) -> Result<(), ConnError> {
        if h.stream != 0 || !h.len.is_multiple_of(6) {
            return Err(ConnError::new(
                frame::PROTOCOL_ERROR,
                "a malformed SETTINGS frame",
            ));
        }
        if h.flags & frame::ACK != 0 {
            if h.len != 0 {
                return Err(ConnError::new(
                    frame::FRAME_SIZE_ERROR,
                    "a SETTINGS ACK with a payload",
                ));
            }
            return Ok(());
        }
        for s in p.chunks_exact(6) {
            let id = u16::from_be_bytes([s[0], s[1]]);
            let v = frame::u32_at(s, 2);
            match id {
                frame::SETTINGS_MAX_CONCURRENT_STREAMS => self.peer_max_streams = v,
                frame::SETTINGS_INITIAL_WINDOW_SIZE => {
                    if v > frame::MAX_WINDOW {
                        return Err(ConnError::new(
                            frame::FLOW_CONTROL_ERROR,
                            "an INITIAL_WINDOW_SIZE above 2^31-1",
                        ));
                    }
                    // Open streams' windows move by the change (§6.9.2).
                    let delta = v as i64 - self.peer_window;
                    for pd in &mut self.pending {
                        pd.window += delta;
                    }
                    self.peer_window = v as i64;
                }
                frame::SETTINGS_MAX_FRAME_SIZE => {
                    if !(16_384..=16_777_215).contains(&v) {
                        return Err(ConnError::new(
                            frame::PROTOCOL_ERROR,
                            format!("a MAX_FRAME_SIZE of {v}"),
                        ));
                    }
                    self.peer_max_frame = v as usize;
                }
                frame::SETTINGS_ENABLE_PUSH if v > 1 => {
                    return Err(ConnError::new(frame::PROTOCOL_ERROR, "ENABLE_PUSH above 1"));
                }
                _ => {}
            }
        }
        frame::put_head(&mut self.out, 0, frame::SETTINGS, frame::ACK, 0);
        self.ready = true;
        events.push(Event::Settings);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
