//! Frames in: the server's bytes cut into frames, each frame checked
//! against the protocol and turned into [`Event`]s for the load thread or
//! into the session's answers (SETTINGS and PING acknowledged, windows
//! moved).

use super::{ConnError, Event, Session, CONNECTION_WINDOW};
use crate::h2::frame::{self, Head};

/// A header block larger than this is a connection error: nothing a load
/// test asks for has one, and it bounds what a server can make us hold.
const MAX_BLOCK: usize = 1 << 20;

impl Session {
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
            // A header can arrive a byte at a time, over several reads.
            if self.held.len() < frame::HEADER_LEN {
                return Ok(());
            }
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
            frame::DATA => self.on_data(&h, p, events),
            frame::HEADERS => self.on_headers(&h, p, events),
            frame::CONTINUATION => self.on_continuation(&h, p, events),
            frame::PRIORITY => Ok(()),
            frame::RST_STREAM => self.on_rst_stream(&h, p, events),
            frame::SETTINGS => self.settings(&h, p, events),
            frame::PUSH_PROMISE => Err(ConnError::new(
                frame::PROTOCOL_ERROR,
                "a PUSH_PROMISE, though the client disabled push",
            )),
            frame::PING => self.on_ping(&h, p),
            frame::GOAWAY => self.on_goaway(&h, p, events),
            frame::WINDOW_UPDATE => self.on_window_update(&h, p),
            // Unknown frame types are ignored (RFC 9113 §4.1).
            _ => Ok(()),
        }
    }

    /// Body bytes: counted against the connection window (topped up once
    /// half is used) and told to the stream.
    #[inline]
    fn on_data(&mut self, h: &Head, p: &[u8], events: &mut Vec<Event>) -> Result<(), ConnError> {
        self.stream_frame(h)?;
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
        Ok(())
    }

    /// The start of a header block: decoded at once when it is whole,
    /// gathered otherwise.
    #[inline]
    fn on_headers(&mut self, h: &Head, p: &[u8], events: &mut Vec<Event>) -> Result<(), ConnError> {
        self.stream_frame(h)?;
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
        Ok(())
    }

    /// More of the header block being gathered.
    fn on_continuation(
        &mut self,
        h: &Head,
        p: &[u8],
        events: &mut Vec<Event>,
    ) -> Result<(), ConnError> {
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
        Ok(())
    }

    /// The server reset a stream: what of its body waits never goes out.
    fn on_rst_stream(
        &mut self,
        h: &Head,
        p: &[u8],
        events: &mut Vec<Event>,
    ) -> Result<(), ConnError> {
        if h.stream == 0 || h.len != 4 {
            return Err(ConnError::new(
                frame::PROTOCOL_ERROR,
                "a malformed RST_STREAM",
            ));
        }
        self.idle_stream(h)?;
        self.forget(h.stream);
        events.push(Event::Reset {
            stream: h.stream,
            code: frame::u32_at(p, 0),
        });
        Ok(())
    }

    /// A PING is answered with its payload; an answer to ours is taken.
    fn on_ping(&mut self, h: &Head, p: &[u8]) -> Result<(), ConnError> {
        if h.stream != 0 || h.len != 8 {
            return Err(ConnError::new(frame::PROTOCOL_ERROR, "a malformed PING"));
        }
        if h.flags & frame::ACK == 0 {
            frame::put_head(&mut self.out, 8, frame::PING, frame::ACK, 0);
            self.out.extend_from_slice(p);
        }
        Ok(())
    }

    fn on_goaway(&mut self, h: &Head, p: &[u8], events: &mut Vec<Event>) -> Result<(), ConnError> {
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
        Ok(())
    }

    /// The server opens a send window: the connection's, or a stream's
    /// whose body waits.
    fn on_window_update(&mut self, h: &Head, p: &[u8]) -> Result<(), ConnError> {
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
