//! One connection of a worker: its socket, the requests it carries, and the
//! incomplete response head it holds between reads.

use std::collections::VecDeque;
use std::ops::Range;

use crate::clock::Nanos;
use crate::ledger::{Req, CREDITED};
use crate::response::{ResponseParser, Step};

use super::tls::Transport;
use crate::h2::session::Session;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum State {
    Connecting {
        since: Nanos,
    },
    /// TCP to the proxy is open; its answer to CONNECT is awaited.
    Tunnelling {
        since: Nanos,
    },
    /// TCP is open; the TLS handshake is under way.
    Handshaking {
        since: Nanos,
    },
    Open,
    Backoff {
        until: Nanos,
    },
    /// No socket, and none wanted until a request needs one (one connection
    /// per request: `keepalive` off).
    Idle,
}

pub(crate) struct Conn {
    pub stream: Option<Transport>,
    /// HTTP/2: the connection's protocol state, from the moment it opens.
    pub h2: Option<Box<Session>>,
    pub state: State,
    pub parser: ResponseParser,
    /// Bytes of a response head (or chunk line) that arrived incomplete.
    /// Only those: body bytes are counted, never kept.
    pub pending: Vec<u8>,
    /// Requests written or being written, oldest first.
    pub inflight: VecDeque<Req>,
    /// Pool entries still to write, oldest first; `write_pos` bytes of the
    /// first are written.
    pub out: VecDeque<u32>,
    pub write_pos: usize,
    /// When the connection last went from full (or closed) to having room
    /// for another request.
    pub free_since: Nanos,
    /// The `free_since` under which it stands in the worker's queue of
    /// connections with room.
    pub listed_at: Option<Nanos>,
    /// It stands in the worker's rotation (HTTP/2 reading late).
    pub in_rotation: bool,
    pub failures: u32,
    /// When a read last found the socket empty: nothing read later can have
    /// arrived before it. The floor for a receive timestamp.
    pub drained_at: Nanos,
    /// The socket's receive low-water mark: 1 (every byte wakes the thread)
    /// or [`super::LOW_WATER`] (answers are polled; reading late).
    pub lowat: usize,
    /// Polls in a row that found nothing (reading late).
    pub empty_polls: u8,
    /// In the worker's list of polled connections.
    pub polled: bool,
    /// The loop turn in which it was last read.
    pub read_turn: u64,
    /// HTTP/1.1: its latest answers that a stray could have stood in for,
    /// with the time each was credited (see [`Conn::credit`]).
    pub credited: VecDeque<(Nanos, Req, bool)>,
    /// Answers on the current socket so far.
    pub answers: u32,
    /// In the io_uring batch's list of sends, and of closed-loop refills
    /// (see `uring`).
    pub send_queued: bool,
    pub refill_queued: bool,
    /// The dispatch whose batched read found it clean (see `uring`).
    pub clean_in: u64,
}

impl super::free::Slot for Conn {
    fn has_room(&self, depth: usize) -> bool {
        Conn::has_room(self, depth)
    }
    fn free_since(&self) -> Nanos {
        self.free_since
    }
    fn listed_at(&mut self) -> &mut Option<Nanos> {
        &mut self.listed_at
    }
    fn in_rotation(&mut self) -> &mut bool {
        &mut self.in_rotation
    }
}

/// The bytes of the queued requests that go out in one write: the
/// longest run of consecutive pool entries at the front of `out`
/// (contiguous bytes), less what of the first is written. `span` gives
/// an entry's bytes in the pool. Returns (from, to, entries in the run).
pub fn next_run(
    out: &VecDeque<u32>,
    write_pos: usize,
    span: impl Fn(u32) -> Range<usize>,
) -> Option<(usize, usize, usize)> {
    let &first = out.front()?;
    let mut last = first;
    let mut k = 1;
    while k < out.len() && out[k] == last + 1 {
        last += 1;
        k += 1;
    }
    Some((span(first).start + write_pos, span(last).end, k))
}

/// The bytes of a run of `k` entries (see [`next_run`]) up to
/// `at` went out: the entries they finish leave `out`, and the first
/// one left, if begun, keeps its place in `write_pos`.
pub fn wrote(
    out: &mut VecDeque<u32>,
    write_pos: &mut usize,
    at: usize,
    k: usize,
    span: impl Fn(u32) -> Range<usize>,
) {
    *write_pos = 0;
    for _ in 0..k {
        let Some(&e) = out.front() else { return };
        let e = span(e);
        if e.end <= at {
            out.pop_front();
        } else {
            *write_pos = at - e.start;
            return;
        }
    }
}

/// What the bytes that arrived held.
pub(crate) enum Parsed {
    /// So many responses ended; `close` when the last one asked to close.
    Responses,
    Close,
    Fault,
}

/// A pending head is grown by at most this much (or its own size) per parse,
/// so that a head split across two reads does not copy the whole second read.
const PIECE: usize = 512;
/// A pending buffer that grew beyond this is given back once empty.
const KEEP_CAPACITY: usize = 4096;

impl Conn {
    pub fn new(no_body: bool, max_head: usize, pipeline: usize) -> Conn {
        Conn {
            stream: None,
            h2: None,
            state: State::Backoff { until: 0 },
            parser: ResponseParser::new(no_body, max_head),
            pending: Vec::new(),
            inflight: VecDeque::with_capacity(pipeline),
            out: VecDeque::with_capacity(pipeline),
            write_pos: 0,
            free_since: 0,
            listed_at: None,
            in_rotation: false,
            failures: 0,
            drained_at: 0,
            lowat: 1,
            empty_polls: 0,
            polled: false,
            read_turn: 0,
            credited: VecDeque::new(),
            answers: 0,
            send_queued: false,
            refill_queued: false,
            clean_in: 0,
        }
    }

    /// Forgets everything of the old socket; the requests it carried must
    /// have been accounted for (or moved) by the caller.
    pub fn reset(&mut self, no_body: bool, max_head: usize) {
        self.parser = ResponseParser::new(no_body, max_head);
        self.pending = Vec::new();
        self.h2 = None;
        self.inflight.clear();
        self.out.clear();
        self.write_pos = 0;
        // A new socket's mark is the kernel's default.
        self.lowat = 1;
        self.empty_polls = 0;
        self.credited.clear();
        self.answers = 0;
    }

    /// Notes that `r` was credited with an answer at `now`.
    ///
    /// An HTTP/1.1 answer names no request: a response the server sent
    /// nobody (a duplicate, a late copy) that comes while a request is in
    /// flight is taken for that request's answer, and every answer after it
    /// on the socket is then credited one request late. No client can tell
    /// at that moment; it shows only when the server's last answer comes
    /// with nothing in flight. So the socket's latest answers are kept here,
    /// for at most `hold` and [`CREDITED`] of them, to be taken back out of
    /// the latency figures if that happens (the worker's `stray`). The
    /// socket's first answer is never kept: no earlier request's answer
    /// could have stood in for it.
    #[inline]
    /// `unexpected`: the answer's status was not expected.
    pub fn credit(&mut self, now: Nanos, r: Req, hold: Nanos, unexpected: bool) {
        if self.answers > 0 {
            while self.credited.len() >= CREDITED
                || self
                    .credited
                    .front()
                    .is_some_and(|&(at, _, _)| at + hold < now)
            {
                self.credited.pop_front();
            }
            self.credited.push_back((now, r, unexpected));
        }
        self.answers = self.answers.saturating_add(1);
    }

    /// Open, with a request in flight.
    pub fn busy(&self) -> bool {
        self.state == State::Open && !self.inflight.is_empty()
    }

    /// An idle slot has room too: a request given to it opens its
    /// connection.
    pub fn has_room(&self, pipeline: usize) -> bool {
        self.inflight.len() < self.depth(pipeline)
    }

    /// How many requests it may carry at once now: `pipeline`, but over
    /// HTTP/2 none until the server's settings came or once it went away,
    /// and never more than the server's `SETTINGS_MAX_CONCURRENT_STREAMS`.
    #[inline]
    pub fn depth(&self, pipeline: usize) -> usize {
        match &self.h2 {
            None if matches!(self.state, State::Open | State::Idle) => pipeline,
            None => 0,
            Some(s) if self.state == State::Open && s.open_for_streams() => {
                pipeline.min(s.peer_max_streams as usize)
            }
            Some(_) => 0,
        }
    }

    /// Parses `data`, calling `done(status, body bytes)` for every response
    /// that ends. Stops at the first response that asks to close.
    pub fn parse(&mut self, data: &[u8], mut done: impl FnMut(&mut Self, u16, u64)) -> Parsed {
        let mut off = 0;
        loop {
            if !self.pending.is_empty() {
                // Finish the head held from an earlier read, feeding the new
                // bytes in growing pieces; once the parser has taken all that
                // was held, go on from the read buffer itself.
                let piece = (data.len() - off).min(self.pending.len().max(PIECE));
                if piece == 0 {
                    return Parsed::Responses;
                }
                self.pending.extend_from_slice(&data[off..off + piece]);
                off += piece;
                match self.parser.feed(&self.pending) {
                    Ok(Step::NeedMore { consumed }) => {
                        self.pending.drain(..consumed);
                    }
                    Ok(Step::Done {
                        consumed,
                        status,
                        close,
                        body,
                    }) => {
                        self.pending.drain(..consumed);
                        done(self, status, body);
                        if close {
                            return Parsed::Close;
                        }
                    }
                    Err(_) => return Parsed::Fault,
                }
                if self.pending.is_empty() && self.pending.capacity() > KEEP_CAPACITY {
                    self.pending = Vec::new();
                }
                continue;
            }
            match self.parser.feed(&data[off..]) {
                Ok(Step::NeedMore { consumed }) => {
                    off += consumed;
                    self.pending.extend_from_slice(&data[off..]);
                    return Parsed::Responses;
                }
                Ok(Step::Done {
                    consumed,
                    status,
                    close,
                    body,
                }) => {
                    off += consumed;
                    done(self, status, body);
                    if close {
                        return Parsed::Close;
                    }
                    if off == data.len() {
                        return Parsed::Responses;
                    }
                }
                Err(_) => return Parsed::Fault,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::response::DEFAULT_MAX_HEAD;

    fn response(body: usize) -> Vec<u8> {
        let mut r = format!("HTTP/1.1 200 OK\r\nContent-Length: {body}\r\n\r\n").into_bytes();
        r.resize(r.len() + body, b'x');
        r
    }

    #[test]
    fn a_head_split_across_reads_keeps_only_the_head() {
        let one = response(16 * 1024);
        let stream: Vec<u8> = one.iter().chain(one.iter()).copied().collect();
        // Split inside the second response's head.
        let cut = one.len() + 10;
        let mut c = Conn::new(false, DEFAULT_MAX_HEAD, 1);
        let mut n = 0;
        assert!(matches!(
            c.parse(&stream[..cut], |_, _, _| n += 1),
            Parsed::Responses
        ));
        assert_eq!((n, c.pending.len()), (1, 10));
        // The rest arrives with a third response behind it: only a piece is
        // copied to finish the head, never the whole read.
        let rest: Vec<u8> = stream[cut..].iter().chain(one.iter()).copied().collect();
        assert!(matches!(
            c.parse(&rest, |_, _, _| n += 1),
            Parsed::Responses
        ));
        assert_eq!(n, 3);
        assert!(c.pending.is_empty());
        assert!(
            c.pending.capacity() <= KEEP_CAPACITY,
            "{}",
            c.pending.capacity()
        );
    }

    #[test]
    fn every_split_of_two_responses_parses_the_same() {
        let one = response(300);
        let stream: Vec<u8> = one.iter().chain(one.iter()).copied().collect();
        for cut in 1..stream.len() {
            let mut c = Conn::new(false, DEFAULT_MAX_HEAD, 1);
            let mut n = 0;
            c.parse(&stream[..cut], |_, _, _| n += 1);
            c.parse(&stream[cut..], |_, _, _| n += 1);
            assert_eq!(n, 2, "cut {cut}");
            assert!(c.pending.is_empty(), "cut {cut}");
        }
    }

    #[test]
    fn an_oversized_head_in_pieces_is_a_fault() {
        let mut c = Conn::new(false, 1024, 1);
        let mut head = b"HTTP/1.1 200 OK\r\nX-Big: ".to_vec();
        head.resize(4000, b'a');
        assert!(matches!(
            c.parse(&head[..100], |_, _, _| {}),
            Parsed::Responses
        ));
        assert!(matches!(c.parse(&head[100..], |_, _, _| {}), Parsed::Fault));
    }
}
