//! HTTP/2 servers written for the tests, frames by hand: [`scripted`] (the
//! engine's: every misbehaviour one `Action` away) and [`hello`] (the CLI's:
//! a stream limit and a 200 for every request); and the framing both use.

pub mod hello;
pub mod scripted;

/// The client connection preface (RFC 9113 §3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Appends a frame header.
pub fn head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    out.extend_from_slice(&[(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
}

/// The big-endian u32 at `at`.
pub fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// One frame read from a buffer.
pub struct Frame {
    pub kind: u8,
    pub flags: u8,
    /// The stream id, the reserved bit cleared.
    pub stream: u32,
    pub len: usize,
    /// Where the payload is in the buffer; its end is where the next
    /// frame starts.
    pub payload: std::ops::Range<usize>,
}

/// The frame starting at `at` of `buf`, if it has arrived whole.
pub fn frame_at(buf: &[u8], at: usize) -> Option<Frame> {
    if buf.len() - at < 9 {
        return None;
    }
    let len = (buf[at] as usize) << 16 | (buf[at + 1] as usize) << 8 | buf[at + 2] as usize;
    if buf.len() - at < 9 + len {
        return None;
    }
    Some(Frame {
        kind: buf[at + 3],
        flags: buf[at + 4],
        stream: u32_at(buf, at + 5) & 0x7fff_ffff,
        len,
        payload: at + 9..at + 9 + len,
    })
}
