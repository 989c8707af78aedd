//! Incremental HTTP/1.1 response parsing.
//!
//! The parser consumes bytes as they arrive and never copies a body: a
//! content-length or chunked body is only counted down. Only an incomplete
//! status line + headers (or chunk-size line) must be kept by the caller until
//! more bytes arrive. Every malformed input is an error value, never a panic.

use std::fmt;

/// The response head may not exceed this many bytes; a larger one is a parse
/// error (a hostile or broken server cannot make the generator buffer
/// unboundedly).
pub const DEFAULT_MAX_HEAD: usize = 64 * 1024;
/// Header fields parsed without allocating; a head with more is parsed
/// again with room for one field per line it can hold. There is no other
/// limit on the count: the head's bytes (`max_head`) bound it, for `load`,
/// `--dump` and `check` alike.
const FEW_HEADERS: usize = 64;

/// What a parsed head leads to.
enum HeadStep {
    Partial,
    /// An interim (1xx) response: the final one follows.
    Interim,
    Body,
}
const MAX_CHUNK_LINE: usize = 4096;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    Malformed(String),
    HeadTooLarge(usize),
    /// The connection ended in the middle of a response.
    Truncated,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Malformed(m) => write!(f, "malformed response: {m}"),
            ParseError::HeadTooLarge(n) => write!(f, "response head larger than {n} bytes"),
            ParseError::Truncated => f.write_str("connection closed mid-response"),
        }
    }
}

/// What one call to [`ResponseParser::feed`] achieved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// `consumed` bytes were used; the rest (if any) must be offered again
    /// together with more input.
    NeedMore { consumed: usize },
    /// A whole response ended after `consumed` bytes.
    Done {
        consumed: usize,
        status: u16,
        /// The server will close the connection (`Connection: close` or HTTP/1.0
        /// without keep-alive); the caller must reconnect.
        close: bool,
        /// The body's bytes as sent (chunked: the chunks' data, framing
        /// left out; HEAD, 204 and 304: none).
        body: u64,
    },
}

#[derive(Debug, Clone, Copy)]
enum State {
    Head,
    Length { remaining: u64 },
    ChunkSize,
    ChunkData { remaining: u64 },
    ChunkDataEnd { need: u8 },
    Trailer,
    UntilClose,
}

#[derive(Debug, Clone)]
pub struct ResponseParser {
    state: State,
    status: u16,
    close: bool,
    body: u64,
    head_has_no_body: bool,
    max_head: usize,
}

impl ResponseParser {
    /// `no_body` is set for HEAD requests, whose responses carry framing
    /// headers but no body.
    pub fn new(no_body: bool, max_head: usize) -> Self {
        ResponseParser {
            state: State::Head,
            status: 0,
            close: false,
            body: 0,
            head_has_no_body: no_body,
            max_head,
        }
    }

    /// True between responses: no byte of the next response has been consumed.
    pub fn is_idle(&self) -> bool {
        matches!(self.state, State::Head)
    }

    pub fn feed(&mut self, buf: &[u8]) -> Result<Step, ParseError> {
        let mut pos = 0;
        loop {
            let rest = &buf[pos..];
            // `None`: the state changed and the loop goes on with the rest.
            let step = match self.state {
                State::Head => self.feed_head(rest, &mut pos)?,
                State::Length { remaining } => Some(self.feed_length(remaining, rest, &mut pos)),
                State::ChunkSize => self.feed_chunk_size(rest, &mut pos)?,
                State::ChunkData { remaining } => self.feed_chunk_data(remaining, rest, &mut pos),
                State::ChunkDataEnd { need } => self.feed_chunk_data_end(need, rest, &mut pos)?,
                State::Trailer => self.feed_trailer(rest, &mut pos)?,
                State::UntilClose => {
                    self.body += rest.len() as u64;
                    Some(Step::NeedMore {
                        consumed: buf.len(),
                    })
                }
            };
            if let Some(step) = step {
                return Ok(step);
            }
        }
    }

    /// The status line and header fields; `None` once they are taken (an
    /// interim response or the head of the final one).
    fn feed_head(&mut self, rest: &[u8], pos: &mut usize) -> Result<Option<Step>, ParseError> {
        let mut headers = [httparse::EMPTY_HEADER; FEW_HEADERS];
        let mut resp = httparse::Response::new(&mut headers);
        let parsed = match resp.parse(rest) {
            // Rare: a head with more fields than the usual
            // handful is parsed again with room for as many as
            // its bytes can hold.
            Err(httparse::Error::TooManyHeaders) => {
                let head = &rest[..rest.len().min(self.max_head)];
                let n = head.iter().filter(|&&b| b == b'\n').count() + 1;
                let mut many = vec![httparse::EMPTY_HEADER; n];
                let mut resp = httparse::Response::new(&mut many);
                let r = resp.parse(rest);
                self.head_parsed(r, &resp, rest.len(), pos)?
            }
            r => self.head_parsed(r, &resp, rest.len(), pos)?,
        };
        Ok(match parsed {
            HeadStep::Partial => Some(Step::NeedMore { consumed: *pos }),
            HeadStep::Interim | HeadStep::Body => None,
        })
    }

    /// A body of known length, counted down.
    #[inline]
    fn feed_length(&mut self, remaining: u64, rest: &[u8], pos: &mut usize) -> Step {
        let take = remaining.min(rest.len() as u64);
        *pos += take as usize;
        self.body += take;
        if take == remaining {
            return self.finish(*pos);
        }
        self.state = State::Length {
            remaining: remaining - take,
        };
        Step::NeedMore { consumed: *pos }
    }

    #[inline]
    fn feed_chunk_size(
        &mut self,
        rest: &[u8],
        pos: &mut usize,
    ) -> Result<Option<Step>, ParseError> {
        match httparse::parse_chunk_size(rest) {
            Ok(httparse::Status::Complete((n, size))) => {
                *pos += n;
                self.state = if size == 0 {
                    State::Trailer
                } else {
                    State::ChunkData { remaining: size }
                };
                Ok(None)
            }
            Ok(httparse::Status::Partial) => {
                if rest.len() > MAX_CHUNK_LINE {
                    return Err(ParseError::Malformed("chunk-size line too long".into()));
                }
                Ok(Some(Step::NeedMore { consumed: *pos }))
            }
            Err(_) => Err(ParseError::Malformed("invalid chunk size".into())),
        }
    }

    /// A chunk's data, counted down.
    #[inline]
    fn feed_chunk_data(&mut self, remaining: u64, rest: &[u8], pos: &mut usize) -> Option<Step> {
        let take = remaining.min(rest.len() as u64);
        *pos += take as usize;
        self.body += take;
        if take < remaining {
            self.state = State::ChunkData {
                remaining: remaining - take,
            };
            return Some(Step::NeedMore { consumed: *pos });
        }
        self.state = State::ChunkDataEnd { need: 2 };
        None
    }

    /// The CRLF after a chunk's data, which may arrive a byte at a time.
    #[inline]
    fn feed_chunk_data_end(
        &mut self,
        need: u8,
        rest: &[u8],
        pos: &mut usize,
    ) -> Result<Option<Step>, ParseError> {
        let expected: &[u8] = if need == 2 { b"\r\n" } else { b"\n" };
        let take = rest.len().min(need as usize);
        if rest[..take] != expected[..take] {
            return Err(ParseError::Malformed(
                "chunk data not followed by CRLF".into(),
            ));
        }
        *pos += take;
        if take < need as usize {
            self.state = State::ChunkDataEnd {
                need: need - take as u8,
            };
            return Ok(Some(Step::NeedMore { consumed: *pos }));
        }
        self.state = State::ChunkSize;
        Ok(None)
    }

    /// Trailer lines after the last chunk, skipped up to the empty line.
    #[inline]
    fn feed_trailer(&mut self, rest: &[u8], pos: &mut usize) -> Result<Option<Step>, ParseError> {
        match rest.windows(2).position(|w| w == b"\r\n") {
            Some(0) => {
                *pos += 2;
                Ok(Some(self.finish(*pos)))
            }
            Some(i) => {
                *pos += i + 2;
                Ok(None)
            }
            None => {
                if rest.len() > MAX_CHUNK_LINE {
                    return Err(ParseError::Malformed("trailer line too long".into()));
                }
                Ok(Some(Step::NeedMore { consumed: *pos }))
            }
        }
    }

    /// The peer closed the connection. A read-until-close body ends here; any
    /// other partial response is truncated. `Ok(None)` means the close came
    /// cleanly between responses (`pending` = bytes held by the caller).
    pub fn on_eof(&mut self, pending: usize) -> Result<Option<Step>, ParseError> {
        match self.state {
            State::UntilClose => {
                let step = self.finish(0);
                if let Step::Done { status, body, .. } = step {
                    return Ok(Some(Step::Done {
                        consumed: 0,
                        status,
                        close: true,
                        body,
                    }));
                }
                Ok(Some(step))
            }
            State::Head if pending == 0 => Ok(None),
            _ => Err(ParseError::Truncated),
        }
    }

    /// Takes the result of parsing a head from a slice of `len` bytes.
    fn head_parsed(
        &mut self,
        r: httparse::Result<usize>,
        resp: &httparse::Response<'_, '_>,
        len: usize,
        pos: &mut usize,
    ) -> Result<HeadStep, ParseError> {
        match r {
            Ok(httparse::Status::Partial) => {
                if len > self.max_head {
                    return Err(ParseError::HeadTooLarge(self.max_head));
                }
                Ok(HeadStep::Partial)
            }
            Ok(httparse::Status::Complete(n)) => {
                if n > self.max_head {
                    return Err(ParseError::HeadTooLarge(self.max_head));
                }
                *pos += n;
                let status = resp.code.unwrap_or(0);
                if (100..200).contains(&status) && status != 101 {
                    // Interim response (e.g. 100 Continue): the real one follows.
                    return Ok(HeadStep::Interim);
                }
                self.begin_body(status, resp.version.unwrap_or(1), resp.headers)?;
                Ok(HeadStep::Body)
            }
            Err(e) => Err(ParseError::Malformed(e.to_string())),
        }
    }

    fn begin_body(
        &mut self,
        status: u16,
        version: u8,
        headers: &[httparse::Header<'_>],
    ) -> Result<(), ParseError> {
        self.status = status;
        self.body = 0;
        let mut length: Option<u64> = None;
        let mut chunked = false;
        // HTTP/1.0 closes by default unless it asks to keep alive.
        let mut close = version == 0;
        for h in headers {
            if h.name.eq_ignore_ascii_case("content-length") {
                let v = std::str::from_utf8(h.value)
                    .ok()
                    .and_then(|s| s.trim().parse::<u64>().ok())
                    .ok_or_else(|| ParseError::Malformed("invalid Content-Length".into()))?;
                if length.is_some_and(|l| l != v) {
                    return Err(ParseError::Malformed("conflicting Content-Length".into()));
                }
                length = Some(v);
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                // Chunked must be the final coding (RFC 9112 §6.1).
                chunked = h
                    .value
                    .rsplit(|&b| b == b',')
                    .next()
                    .is_some_and(|last| last.trim_ascii().eq_ignore_ascii_case(b"chunked"));
            } else if h.name.eq_ignore_ascii_case("connection") {
                for token in h.value.split(|&b| b == b',') {
                    let t = token.trim_ascii();
                    if t.eq_ignore_ascii_case(b"close") {
                        close = true;
                    } else if t.eq_ignore_ascii_case(b"keep-alive") {
                        close = false;
                    }
                }
            }
        }
        self.close = close;
        let no_body = self.head_has_no_body || status == 204 || status == 304;
        self.state = if no_body {
            State::Length { remaining: 0 }
        } else if chunked {
            State::ChunkSize
        } else if let Some(n) = length {
            State::Length { remaining: n }
        } else {
            self.close = true;
            State::UntilClose
        };
        Ok(())
    }

    fn finish(&mut self, consumed: usize) -> Step {
        self.state = State::Head;
        Step::Done {
            consumed,
            status: self.status,
            close: self.close,
            body: self.body,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(input: &[u8], split: usize) -> Result<Vec<(u16, bool)>, ParseError> {
        Ok(parse_bodies(input, split)?
            .into_iter()
            .map(|(status, close, _)| (status, close))
            .collect())
    }

    /// Each response's status, close and body bytes, fed in pieces of
    /// `split` bytes, unconsumed bytes kept as the caller keeps them.
    fn parse_bodies(input: &[u8], split: usize) -> Result<Vec<(u16, bool, u64)>, ParseError> {
        let mut p = ResponseParser::new(false, DEFAULT_MAX_HEAD);
        let mut pending: Vec<u8> = Vec::new();
        let mut out = Vec::new();
        for piece in input.chunks(split.max(1)) {
            pending.extend_from_slice(piece);
            loop {
                match p.feed(&pending)? {
                    Step::NeedMore { consumed } => {
                        pending.drain(..consumed);
                        break;
                    }
                    Step::Done {
                        consumed,
                        status,
                        close,
                        body,
                    } => {
                        pending.drain(..consumed);
                        out.push((status, close, body));
                    }
                }
            }
        }
        if let Some(Step::Done {
            status,
            close,
            body,
            ..
        }) = p.on_eof(pending.len())?
        {
            out.push((status, close, body));
        }
        Ok(out)
    }

    #[test]
    fn body_bytes_are_counted_however_the_body_is_framed_and_cut() {
        let r = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nHello\r\n8\r\n World!\n\r\n0\r\nX-T: 1\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nHTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nbusyHTTP/1.1 200 OK\r\n\r\nuntil the close";
        for split in 1..r.len() {
            let bodies: Vec<u64> = parse_bodies(r, split)
                .unwrap()
                .into_iter()
                .map(|(_, _, b)| b)
                .collect();
            assert_eq!(bodies, vec![13, 0, 0, 4, 15], "split {split}");
        }
    }

    const TWO: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nHello World!\nHTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";

    #[test]
    fn content_length_in_every_split() {
        for split in 1..TWO.len() {
            assert_eq!(
                parse_all(TWO, split).unwrap(),
                vec![(200, false), (404, false)],
                "split {split}"
            );
        }
    }

    #[test]
    fn chunked_with_extensions_and_trailers_in_every_split() {
        let r = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nHello\r\n8\r\n World!\n\r\n0\r\nX-T: 1\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\nx";
        for split in 1..r.len() {
            assert_eq!(
                parse_all(r, split).unwrap(),
                vec![(200, false), (201, false)],
                "split {split}"
            );
        }
    }

    #[test]
    fn connection_close_and_http10() {
        let r = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok";
        assert_eq!(parse_all(r, 100).unwrap(), vec![(200, true)]);
        let r = b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok";
        assert_eq!(parse_all(r, 100).unwrap(), vec![(200, true)]);
        let r = b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok";
        assert_eq!(parse_all(r, 100).unwrap(), vec![(200, false)]);
    }

    #[test]
    fn body_until_close() {
        let r = b"HTTP/1.1 200 OK\r\n\r\nsome body";
        assert_eq!(parse_all(r, 3).unwrap(), vec![(200, true)]);
    }

    #[test]
    fn interim_100_is_skipped() {
        let r = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(parse_all(r, 7).unwrap(), vec![(200, false)]);
    }

    #[test]
    fn an_early_hints_and_a_continue_precede_the_answer() {
        let r = b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        assert_eq!(parse_all(r, 9).unwrap(), vec![(200, false)]);
    }

    #[test]
    fn any_number_of_header_fields_that_fits_the_head_is_taken() {
        let mut head = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n".to_vec();
        for i in 0..3000 {
            head.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
        }
        head.extend_from_slice(b"\r\nok");
        assert!(head.len() < DEFAULT_MAX_HEAD);
        for split in [1000, 4096] {
            assert_eq!(
                parse_all(&head, split).unwrap(),
                vec![(200, false)],
                "{split}"
            );
        }
        // The bytes, not the count, are the limit.
        let mut big = b"HTTP/1.1 200 OK\r\n".to_vec();
        while big.len() <= DEFAULT_MAX_HEAD {
            big.extend_from_slice(b"a:\n");
        }
        big.extend_from_slice(b"\r\n");
        assert!(matches!(
            parse_all(&big, 4096),
            Err(ParseError::HeadTooLarge(_))
        ));
    }

    #[test]
    fn no_body_statuses() {
        let r = b"HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n";
        assert_eq!(parse_all(r, 5).unwrap(), vec![(204, false), (304, false)]);
    }

    #[test]
    fn malformed_inputs_are_errors_not_panics() {
        let cases: &[&[u8]] = &[
            b"garbage\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXY",
        ];
        for c in cases {
            assert!(
                matches!(parse_all(c, 4), Err(ParseError::Malformed(_))),
                "{:?}",
                String::from_utf8_lossy(c)
            );
        }
    }

    #[test]
    fn truncated_body_is_reported() {
        let r = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort";
        assert_eq!(parse_all(r, 100), Err(ParseError::Truncated));
        let r = b"HTTP/1.1 200 O";
        assert_eq!(parse_all(r, 100), Err(ParseError::Truncated));
    }

    #[test]
    fn oversized_head_is_an_error() {
        let mut r = b"HTTP/1.1 200 OK\r\nX-Big: ".to_vec();
        r.extend(std::iter::repeat_n(b'a', 1 << 20));
        r.extend_from_slice(b"\r\n\r\n");
        assert_eq!(
            parse_all(&r, 8192),
            Err(ParseError::HeadTooLarge(DEFAULT_MAX_HEAD))
        );
    }

    #[test]
    fn head_requests_have_no_body() {
        let mut p = ResponseParser::new(true, DEFAULT_MAX_HEAD);
        let r = b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\n";
        assert_eq!(
            p.feed(r).unwrap(),
            Step::Done {
                consumed: r.len(),
                status: 200,
                close: false,
                body: 0
            }
        );
    }
}
