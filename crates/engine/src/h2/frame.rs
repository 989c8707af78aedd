//! HTTP/2 framing (RFC 9113 §4, §6): the 9-byte frame header, the frames
//! the client writes, and the names of error codes and settings for people.
//!
//! Written by hand rather than taken from a crate: the only crate with a
//! maintained frame layer (`h2`) is tied to tokio, and a client needs little
//! of it: a header to read, and a handful of small frames to write.

/// The connection preface every client sends first (RFC 9113 §3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
pub const HEADER_LEN: usize = 9;
/// The largest frame payload a peer may send before it is told otherwise,
/// and the largest fairbench accepts (it never asks for more: the test is
/// of the server, with the settings clients use).
pub const DEFAULT_MAX_FRAME: usize = 16_384;
/// The largest flow-control window there is (RFC 9113 §6.9.1).
pub const MAX_WINDOW: u32 = (1 << 31) - 1;
/// Every window starts at this size (RFC 9113 §6.9.2).
pub const DEFAULT_WINDOW: u32 = 65_535;
/// Stream ids are 31 bits; a client's are odd.
pub const MAX_STREAM_ID: u32 = (1 << 31) - 1;

pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
pub const PRIORITY: u8 = 0x2;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const PUSH_PROMISE: u8 = 0x5;
pub const PING: u8 = 0x6;
pub const GOAWAY: u8 = 0x7;
pub const WINDOW_UPDATE: u8 = 0x8;
pub const CONTINUATION: u8 = 0x9;

pub const END_STREAM: u8 = 0x1;
pub const ACK: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;
pub const PADDED: u8 = 0x8;
pub const PRIORITY_FLAG: u8 = 0x20;

pub const SETTINGS_HEADER_TABLE_SIZE: u16 = 0x1;
pub const SETTINGS_ENABLE_PUSH: u16 = 0x2;
pub const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
pub const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;
pub const SETTINGS_MAX_FRAME_SIZE: u16 = 0x5;
pub const SETTINGS_MAX_HEADER_LIST_SIZE: u16 = 0x6;

pub const NO_ERROR: u32 = 0x0;
pub const PROTOCOL_ERROR: u32 = 0x1;
pub const FLOW_CONTROL_ERROR: u32 = 0x3;
pub const FRAME_SIZE_ERROR: u32 = 0x6;
pub const REFUSED_STREAM: u32 = 0x7;
pub const CANCEL: u32 = 0x8;
pub const STREAM_CLOSED: u32 = 0x5;
pub const COMPRESSION_ERROR: u32 = 0x9;

/// A frame's header, read off the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    pub len: usize,
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
}

impl Head {
    /// The header at the start of `b` (at least [`HEADER_LEN`] bytes).
    #[inline]
    pub fn parse(b: &[u8]) -> Head {
        Head {
            len: (b[0] as usize) << 16 | (b[1] as usize) << 8 | b[2] as usize,
            kind: b[3],
            flags: b[4],
            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & MAX_STREAM_ID,
        }
    }
}

/// Appends a frame header to `out`.
#[inline]
pub fn put_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    out.extend_from_slice(&[(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
}

pub fn put_settings(out: &mut Vec<u8>, settings: &[(u16, u32)]) {
    put_head(out, settings.len() * 6, SETTINGS, 0, 0);
    for &(id, v) in settings {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&v.to_be_bytes());
    }
}

pub fn put_window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    put_head(out, 4, WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&increment.to_be_bytes());
}

pub fn put_rst_stream(out: &mut Vec<u8>, stream: u32, code: u32) {
    put_head(out, 4, RST_STREAM, 0, stream);
    out.extend_from_slice(&code.to_be_bytes());
}

pub fn put_goaway(out: &mut Vec<u8>, last_stream: u32, code: u32) {
    put_head(out, 8, GOAWAY, 0, 0);
    out.extend_from_slice(&last_stream.to_be_bytes());
    out.extend_from_slice(&code.to_be_bytes());
}

/// A big-endian u32 at `at` of `b` (31 bits where a reserved bit leads).
#[inline]
pub fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// An error code's name (RFC 9113 §7), or its number.
pub fn error_name(code: u32) -> String {
    const NAMES: [&str; 14] = [
        "NO_ERROR",
        "PROTOCOL_ERROR",
        "INTERNAL_ERROR",
        "FLOW_CONTROL_ERROR",
        "SETTINGS_TIMEOUT",
        "STREAM_CLOSED",
        "FRAME_SIZE_ERROR",
        "REFUSED_STREAM",
        "CANCEL",
        "COMPRESSION_ERROR",
        "CONNECT_ERROR",
        "ENHANCE_YOUR_CALM",
        "INADEQUATE_SECURITY",
        "HTTP_1_1_REQUIRED",
    ];
    NAMES
        .get(code as usize)
        .map_or_else(|| format!("0x{code:x}"), |s| s.to_string())
}

/// A setting's name (RFC 9113 §6.5.2), or its number.
pub fn setting_name(id: u16) -> String {
    match id {
        SETTINGS_HEADER_TABLE_SIZE => "HEADER_TABLE_SIZE".into(),
        SETTINGS_ENABLE_PUSH => "ENABLE_PUSH".into(),
        SETTINGS_MAX_CONCURRENT_STREAMS => "MAX_CONCURRENT_STREAMS".into(),
        SETTINGS_INITIAL_WINDOW_SIZE => "INITIAL_WINDOW_SIZE".into(),
        SETTINGS_MAX_FRAME_SIZE => "MAX_FRAME_SIZE".into(),
        SETTINGS_MAX_HEADER_LIST_SIZE => "MAX_HEADER_LIST_SIZE".into(),
        0x8 => "ENABLE_CONNECT_PROTOCOL".into(),
        0x9 => "NO_RFC7540_PRIORITIES".into(),
        _ => format!("0x{id:x}"),
    }
}

/// A frame type's name, or its number.
pub fn kind_name(kind: u8) -> String {
    const NAMES: [&str; 10] = [
        "DATA",
        "HEADERS",
        "PRIORITY",
        "RST_STREAM",
        "SETTINGS",
        "PUSH_PROMISE",
        "PING",
        "GOAWAY",
        "WINDOW_UPDATE",
        "CONTINUATION",
    ];
    NAMES
        .get(kind as usize)
        .map_or_else(|| format!("0x{kind:x}"), |s| s.to_string())
}

/// The payload of a HEADERS (or DATA) frame without its padding and
/// priority fields; `None` when the padding is longer than the frame.
pub fn unpadded(kind: u8, flags: u8, payload: &[u8]) -> Option<&[u8]> {
    let mut p = payload;
    let mut pad = 0;
    if flags & PADDED != 0 {
        pad = *p.first()? as usize;
        p = &p[1..];
    }
    if kind == HEADERS && flags & PRIORITY_FLAG != 0 {
        p = p.get(5..)?;
    }
    p.get(..p.len().checked_sub(pad)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_written_reads_back() {
        let mut b = Vec::new();
        put_head(
            &mut b,
            70_000,
            HEADERS,
            END_HEADERS | END_STREAM,
            0x7fff_fff1,
        );
        assert_eq!(b.len(), HEADER_LEN);
        assert_eq!(
            Head::parse(&b),
            Head {
                len: 70_000,
                kind: HEADERS,
                flags: END_HEADERS | END_STREAM,
                stream: 0x7fff_fff1
            }
        );
        // The reserved bit is ignored on receipt.
        b[5] |= 0x80;
        assert_eq!(Head::parse(&b).stream, 0x7fff_fff1);
    }

    #[test]
    fn padding_and_priority_are_stripped_or_refused() {
        assert_eq!(
            unpadded(DATA, PADDED, &[2, b'a', b'b', 0, 0]),
            Some(&b"ab"[..])
        );
        assert_eq!(unpadded(DATA, PADDED, &[9, b'a']), None);
        assert_eq!(unpadded(DATA, PADDED, &[]), None);
        let p = [0, 0, 0, 3, 16, 0x88];
        assert_eq!(unpadded(HEADERS, PRIORITY_FLAG, &p), Some(&[0x88][..]));
        assert_eq!(error_name(7), "REFUSED_STREAM");
        assert_eq!(error_name(0x99), "0x99");
    }
}
