//! HTTP/3 framing (RFC 9114 §7): frame and stream types, error codes, the
//! frames the client writes, and a reader that walks a stream's frames as
//! its bytes come, in any pieces.
//!
//! DATA payloads are counted, never buffered (a large body costs no
//! memory); the other frames the client must understand are kept whole up
//! to a limit; frames of unknown and reserved types are skipped, as the
//! RFC asks (§9), and the HTTP/2 frame types HTTP/3 reserves are an error
//! (§7.2.8).

use super::varint;

pub(crate) const DATA: u64 = 0x00;
pub(crate) const HEADERS: u64 = 0x01;
pub(crate) const CANCEL_PUSH: u64 = 0x03;
pub(crate) const SETTINGS: u64 = 0x04;
pub(crate) const PUSH_PROMISE: u64 = 0x05;
pub(crate) const GOAWAY: u64 = 0x07;
pub(crate) const MAX_PUSH_ID: u64 = 0x0d;

/// Unidirectional stream types (§6.2, RFC 9204 §4.2).
pub(crate) const CONTROL_STREAM: u64 = 0x00;
pub(crate) const PUSH_STREAM: u64 = 0x01;
pub(crate) const ENCODER_STREAM: u64 = 0x02;
pub(crate) const DECODER_STREAM: u64 = 0x03;

/// Settings (§7.2.4.1, RFC 9204 §5).
pub(crate) const QPACK_MAX_TABLE_CAPACITY: u64 = 0x01;
pub(crate) const MAX_FIELD_SECTION_SIZE: u64 = 0x06;
pub(crate) const QPACK_BLOCKED_STREAMS: u64 = 0x07;

/// Error codes (§8.1, RFC 9204 §6).
pub(crate) const H3_NO_ERROR: u64 = 0x100;
pub(crate) const H3_GENERAL_PROTOCOL_ERROR: u64 = 0x101;
pub(crate) const H3_STREAM_CREATION_ERROR: u64 = 0x103;
pub(crate) const H3_CLOSED_CRITICAL_STREAM: u64 = 0x104;
pub(crate) const H3_FRAME_UNEXPECTED: u64 = 0x105;
pub(crate) const H3_FRAME_ERROR: u64 = 0x106;
pub(crate) const H3_EXCESSIVE_LOAD: u64 = 0x107;
pub(crate) const H3_ID_ERROR: u64 = 0x108;
pub(crate) const H3_SETTINGS_ERROR: u64 = 0x109;
pub(crate) const H3_MISSING_SETTINGS: u64 = 0x10a;
pub(crate) const H3_REQUEST_CANCELLED: u64 = 0x10c;
pub(crate) const H3_MESSAGE_ERROR: u64 = 0x10e;
pub(crate) const QPACK_DECOMPRESSION_FAILED: u64 = 0x200;
pub(crate) const QPACK_ENCODER_STREAM_ERROR: u64 = 0x201;

/// The name of an HTTP/3 or QPACK error code, or its number in hex.
pub fn error_name(code: u64) -> String {
    const NAMES: [&str; 17] = [
        "H3_NO_ERROR",
        "H3_GENERAL_PROTOCOL_ERROR",
        "H3_INTERNAL_ERROR",
        "H3_STREAM_CREATION_ERROR",
        "H3_CLOSED_CRITICAL_STREAM",
        "H3_FRAME_UNEXPECTED",
        "H3_FRAME_ERROR",
        "H3_EXCESSIVE_LOAD",
        "H3_ID_ERROR",
        "H3_SETTINGS_ERROR",
        "H3_MISSING_SETTINGS",
        "H3_REQUEST_REJECTED",
        "H3_REQUEST_CANCELLED",
        "H3_REQUEST_INCOMPLETE",
        "H3_MESSAGE_ERROR",
        "H3_CONNECT_ERROR",
        "H3_VERSION_FALLBACK",
    ];
    match code {
        0x100..=0x110 => NAMES[(code - 0x100) as usize].to_string(),
        0x200 => "QPACK_DECOMPRESSION_FAILED".to_string(),
        0x201 => "QPACK_ENCODER_STREAM_ERROR".to_string(),
        0x202 => "QPACK_DECODER_STREAM_ERROR".to_string(),
        _ => format!("0x{code:x}"),
    }
}

/// A connection error: its code and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct H3Error {
    pub code: u64,
    pub why: String,
}

impl H3Error {
    pub fn new(code: u64, why: impl Into<String>) -> H3Error {
        H3Error {
            code,
            why: why.into(),
        }
    }
}

impl std::fmt::Display for H3Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.why, error_name(self.code))
    }
}

/// What a [`FrameReader`] hands out.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Piece<'a> {
    /// `n` bytes of a DATA frame's payload.
    Data(usize),
    /// A whole frame of a type the client understands (not DATA).
    Frame(u64, &'a [u8]),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Head,
    Data,
    Keep,
    Skip,
}

/// Walks one stream's frames.
pub(crate) struct FrameReader {
    head: [u8; 16],
    head_len: usize,
    ty: u64,
    left: u64,
    mode: Mode,
    payload: Vec<u8>,
    /// The largest frame other than DATA it keeps.
    limit: u64,
}

/// Whether the client reads frames of type `ty` whole (others but DATA
/// are skipped).
fn kept(ty: u64) -> bool {
    matches!(
        ty,
        HEADERS | CANCEL_PUSH | SETTINGS | PUSH_PROMISE | GOAWAY | MAX_PUSH_ID
    )
}

impl FrameReader {
    pub fn new(limit: u64) -> FrameReader {
        FrameReader {
            head: [0; 16],
            head_len: 0,
            ty: 0,
            left: 0,
            mode: Mode::Head,
            payload: Vec::new(),
            limit,
        }
    }

    /// Whether the bytes so far end on a frame boundary: a stream that
    /// ends elsewhere ends inside a frame (`H3_FRAME_ERROR`).
    pub fn at_boundary(&self) -> bool {
        self.mode == Mode::Head && self.head_len == 0
    }

    /// Reads `input`, handing each piece to `f`; stops at the first error.
    pub fn feed(
        &mut self,
        mut input: &[u8],
        f: &mut impl FnMut(Piece<'_>) -> Result<(), H3Error>,
    ) -> Result<(), H3Error> {
        while !input.is_empty() {
            if self.mode == Mode::Head {
                self.head[self.head_len] = input[0];
                self.head_len += 1;
                input = &input[1..];
                self.start_frame(f)?;
                continue;
            }
            let n = (self.left.min(input.len() as u64)) as usize;
            let (now, rest) = input.split_at(n);
            input = rest;
            self.left -= n as u64;
            match self.mode {
                Mode::Data => f(Piece::Data(n))?,
                Mode::Keep => self.payload.extend_from_slice(now),
                _ => {}
            }
            if self.left == 0 {
                self.end_frame(f)?;
            }
        }
        Ok(())
    }

    /// Once the frame's type and length are whole: what to do with it.
    fn start_frame(
        &mut self,
        f: &mut impl FnMut(Piece<'_>) -> Result<(), H3Error>,
    ) -> Result<(), H3Error> {
        let head = &self.head[..self.head_len];
        let Some((ty, a)) = varint::decode(head) else {
            return Ok(());
        };
        let Some((len, b)) = varint::decode(&head[a..]) else {
            return Ok(());
        };
        debug_assert_eq!(a + b, self.head_len);
        self.head_len = 0;
        self.ty = ty;
        self.left = len;
        self.mode = match ty {
            DATA => Mode::Data,
            // HTTP/2's PRIORITY, PING, WINDOW_UPDATE and CONTINUATION.
            0x02 | 0x06 | 0x08 | 0x09 => {
                return Err(H3Error::new(
                    H3_FRAME_UNEXPECTED,
                    format!("the server sent frame type 0x{ty:x}, reserved for HTTP/2"),
                ))
            }
            t if kept(t) => {
                if len > self.limit {
                    return Err(H3Error::new(
                        H3_EXCESSIVE_LOAD,
                        format!(
                            "the server sent a frame of type 0x{ty:x} of {len} bytes, above {}",
                            self.limit
                        ),
                    ));
                }
                Mode::Keep
            }
            _ => Mode::Skip,
        };
        if len == 0 {
            self.end_frame(f)?;
        }
        Ok(())
    }

    fn end_frame(
        &mut self,
        f: &mut impl FnMut(Piece<'_>) -> Result<(), H3Error>,
    ) -> Result<(), H3Error> {
        let mode = std::mem::replace(&mut self.mode, Mode::Head);
        if mode == Mode::Keep {
            let r = f(Piece::Frame(self.ty, &self.payload));
            self.payload.clear();
            r?;
        }
        Ok(())
    }
}

/// Appends a frame header.
pub(crate) fn head(ty: u64, len: usize, out: &mut Vec<u8>) {
    varint::encode(ty, out);
    varint::encode(len as u64, out);
}

/// The client's control stream as it opens: its type, then SETTINGS with
/// a zero-capacity QPACK table and no blocked streams.
pub(crate) fn control_stream_preface(max_field_section: u64) -> Vec<u8> {
    let mut settings = Vec::new();
    for (id, v) in [
        (QPACK_MAX_TABLE_CAPACITY, 0),
        (QPACK_BLOCKED_STREAMS, 0),
        (MAX_FIELD_SECTION_SIZE, max_field_section),
    ] {
        varint::encode(id, &mut settings);
        varint::encode(v, &mut settings);
    }
    let mut out = Vec::new();
    varint::encode(CONTROL_STREAM, &mut out);
    head(SETTINGS, settings.len(), &mut out);
    out.extend_from_slice(&settings);
    out
}

/// The identifiers and values of a SETTINGS payload. Settings HTTP/2
/// defined and HTTP/3 reserves, and a setting sent twice, are errors
/// (§7.2.4.1).
pub(crate) fn parse_settings(mut p: &[u8]) -> Result<Vec<(u64, u64)>, H3Error> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    while !p.is_empty() {
        let bad = || H3Error::new(H3_FRAME_ERROR, "a SETTINGS frame ends inside a setting");
        let (id, a) = varint::decode(p).ok_or_else(bad)?;
        let (v, b) = varint::decode(&p[a..]).ok_or_else(bad)?;
        p = &p[a + b..];
        if (0x02..=0x05).contains(&id) {
            return Err(H3Error::new(
                H3_SETTINGS_ERROR,
                format!("the server sent setting 0x{id:x}, reserved for HTTP/2"),
            ));
        }
        if out.iter().any(|&(i, _)| i == id) {
            return Err(H3Error::new(
                H3_SETTINGS_ERROR,
                format!("the server sent setting 0x{id:x} twice"),
            ));
        }
        out.push((id, v));
    }
    Ok(out)
}

/// The stream id of a GOAWAY payload.
pub(crate) fn parse_goaway(p: &[u8]) -> Result<u64, H3Error> {
    match varint::decode(p) {
        Some((id, n)) if n == p.len() => Ok(id),
        _ => Err(H3Error::new(H3_FRAME_ERROR, "a GOAWAY frame is malformed")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(reader: &mut FrameReader, input: &[u8], step: usize) -> Result<Vec<String>, H3Error> {
        let mut seen = Vec::new();
        for chunk in input.chunks(step.max(1)) {
            reader.feed(chunk, &mut |p| {
                seen.push(match p {
                    Piece::Data(n) => format!("data {n}"),
                    Piece::Frame(t, b) => format!("frame {t} {b:?}"),
                });
                Ok(())
            })?;
        }
        Ok(seen)
    }

    fn frame(ty: u64, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        head(ty, payload.len(), &mut out);
        out.extend_from_slice(payload);
        out
    }

    #[test]
    fn frames_are_read_whatever_the_pieces() {
        let mut wire = frame(HEADERS, &[1, 2, 3]);
        wire.extend(frame(0x21, &[9; 70])); // reserved (0x1f * N + 0x21): skipped
        wire.extend(frame(DATA, &[7; 10]));
        wire.extend(frame(HEADERS, &[]));
        let whole = pieces(&mut FrameReader::new(1024), &wire, wire.len()).unwrap();
        assert_eq!(whole, ["frame 1 [1, 2, 3]", "data 10", "frame 1 []"]);
        let mut r = FrameReader::new(1024);
        let bytewise = pieces(&mut r, &wire, 1).unwrap();
        assert_eq!(
            bytewise.iter().filter(|s| s.starts_with("data")).count(),
            10
        );
        assert_eq!(bytewise.first().unwrap(), "frame 1 [1, 2, 3]");
        assert_eq!(bytewise.last().unwrap(), "frame 1 []");
        assert!(r.at_boundary());
    }

    #[test]
    fn a_stream_ending_inside_a_frame_is_not_at_a_boundary() {
        let wire = frame(DATA, &[0; 5]);
        let mut r = FrameReader::new(16);
        pieces(&mut r, &wire[..4], 4).unwrap();
        assert!(!r.at_boundary());
        let mut r = FrameReader::new(16);
        pieces(&mut r, &wire[..1], 1).unwrap();
        assert!(!r.at_boundary());
    }

    #[test]
    fn http2_frame_types_and_oversized_frames_are_errors() {
        for ty in [0x02, 0x06, 0x08, 0x09] {
            let e = pieces(&mut FrameReader::new(16), &frame(ty, &[]), 8).unwrap_err();
            assert_eq!(e.code, H3_FRAME_UNEXPECTED);
        }
        let e = pieces(&mut FrameReader::new(16), &frame(HEADERS, &[0; 17]), 64).unwrap_err();
        assert_eq!(e.code, H3_EXCESSIVE_LOAD);
        // A huge unknown frame is skipped, never kept.
        let mut wire = Vec::new();
        head(0x40, 1 << 40, &mut wire);
        assert!(pieces(&mut FrameReader::new(16), &wire, 64)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn the_client_settings_announce_a_zero_capacity_table() {
        let p = control_stream_preface(65536);
        assert_eq!(p[0], CONTROL_STREAM as u8);
        let mut got = Vec::new();
        FrameReader::new(64)
            .feed(&p[1..], &mut |piece| {
                if let Piece::Frame(SETTINGS, b) = piece {
                    got = parse_settings(b).unwrap();
                }
                Ok(())
            })
            .unwrap();
        assert_eq!(
            got,
            [
                (QPACK_MAX_TABLE_CAPACITY, 0),
                (QPACK_BLOCKED_STREAMS, 0),
                (MAX_FIELD_SECTION_SIZE, 65536)
            ]
        );
    }

    #[test]
    fn bad_settings_and_goaways_are_errors() {
        assert_eq!(
            parse_settings(&[0x02, 0x00]).unwrap_err().code,
            H3_SETTINGS_ERROR
        );
        assert_eq!(
            parse_settings(&[0x06, 0x01, 0x06, 0x02]).unwrap_err().code,
            H3_SETTINGS_ERROR
        );
        assert_eq!(parse_settings(&[0x06]).unwrap_err().code, H3_FRAME_ERROR);
        // Unknown settings are kept and ignored by the caller.
        assert_eq!(parse_settings(&[0x21, 0x05]).unwrap(), [(0x21, 5)]);
        assert_eq!(parse_goaway(&[0x04]).unwrap(), 4);
        assert_eq!(
            parse_goaway(&[0x04, 0x00]).unwrap_err().code,
            H3_FRAME_ERROR
        );
        assert_eq!(parse_goaway(&[]).unwrap_err().code, H3_FRAME_ERROR);
    }

    #[test]
    fn error_codes_have_names() {
        assert_eq!(error_name(0x10c), "H3_REQUEST_CANCELLED");
        assert_eq!(error_name(0x200), "QPACK_DECOMPRESSION_FAILED");
        assert_eq!(error_name(0x1234), "0x1234");
    }

    #[test]
    fn no_input_makes_the_reader_panic() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..2000 {
            let len = (seed % 64) as usize;
            let mut bytes = Vec::with_capacity(len);
            for _ in 0..len {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                bytes.push(seed as u8);
            }
            let mut r = FrameReader::new(32);
            let _ = pieces(&mut r, &bytes, 1 + (seed % 7) as usize);
            let _ = parse_settings(&bytes);
            let _ = parse_goaway(&bytes);
        }
    }
}
