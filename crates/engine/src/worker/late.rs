//! Reading late (the worker's module doc): which connections are polled
//! rather than waking the thread, when they go back to waking it, and what
//! time an answer read late is given.

use crate::clock::{self, Nanos};

use super::conn::State;
use super::{Worker, H2_POLL_EVERY, LOW_WATER, WATCH_AFTER};

impl Worker {
    /// Constant rate: answers are timed by the kernel's receive stamps,
    /// whether read late (plain TCP) or as they come (TLS), so the thread's
    /// own wake-up is never charged to the server. A unix socket has none
    /// (see [`Endpoint::stamps_arrivals`]): its answers are read as they come.
    ///
    /// [`Endpoint::stamps_arrivals`]: crate::Endpoint::stamps_arrivals
    pub(super) fn stamped(&self) -> bool {
        self.pacer.is_some() && self.plan.addr.stamps_arrivals()
    }

    /// When bytes just read from connection `i` arrived: the kernel's
    /// receive timestamp where there is one, else now (see
    /// [`arrival_time`]).
    #[inline]
    pub(super) fn arrival(&mut self, i: usize, stamp: Option<u64>) -> Nanos {
        self.arrival_at(i, stamp, clock::now())
    }

    /// The same for bytes read by `read_at` (an io_uring batch's read).
    #[inline]
    pub(super) fn arrival_at(&mut self, i: usize, stamp: Option<u64>, read_at: Nanos) -> Nanos {
        if self.deferred && matches!(stamp, None | Some(0)) {
            self.stamps_missing();
        }
        arrival_time(
            stamp,
            self.realtime_offset,
            self.conns[i].drained_at,
            read_at,
        )
    }

    /// Reading late: connection `i` was just given a request; its answer is
    /// read at the thread's coming turns rather than waking it.
    pub(super) fn poll_later(&mut self, i: usize) {
        if !self.deferred {
            return;
        }
        if self.draining {
            // The drain is not read in turns: a connection that opened (or
            // was given its request) after the window ended must wake the
            // thread itself, or its answer would wait for the timeout.
            self.watch(i);
            return;
        }
        let c = &mut self.conns[i];
        if c.state != State::Open || c.inflight.is_empty() {
            return;
        }
        if c.lowat != LOW_WATER {
            // Watched: only a connection that was idle goes back to being
            // polled, or a watched answer could be polled late.
            if c.inflight.len() > 1 {
                return;
            }
            match c.stream.as_ref().map(|s| s.set_low_water(LOW_WATER)) {
                Some(Ok(())) => c.lowat = LOW_WATER,
                _ => return,
            }
        }
        c.empty_polls = 0;
        // Not read again in the turn that sent it: its answer cannot be in.
        c.read_turn = self.turn;
        if !c.polled {
            c.polled = true;
            self.polled.push(i);
        }
    }

    /// Reads every polled connection not yet read in this turn. One whose
    /// answer has not come after [`WATCH_AFTER`] polls is left to wake the
    /// thread instead.
    ///
    /// Over HTTP/2 a connection read late still has room, so reading it
    /// sooner frees nothing: it is read when it is next given a request
    /// (see `h2_may_add`), and here only once [`H2_POLL_EVERY`] has passed
    /// since it was last read, so that a poll seldom finds nothing.
    pub(super) fn poll_busy(&mut self) {
        let now = clock::now();
        let depth = self.plan.pipeline;
        let batched = self.io.active();
        let mut due = std::mem::take(&mut self.io.polls);
        due.clear();
        let mut k = 0;
        while k < self.polled.len() {
            let i = self.polled[k];
            let c = &self.conns[i];
            if c.state != State::Open || c.inflight.is_empty() || c.lowat != LOW_WATER {
                self.conns[i].polled = false;
                self.polled.swap_remove(k);
                continue;
            }
            let early = c.h2.is_some()
                && c.has_room(depth)
                && now.saturating_sub(c.drained_at) < H2_POLL_EVERY;
            if c.read_turn != self.turn && !early {
                if batched {
                    due.push(i);
                } else {
                    let any = self.read(i, false);
                    self.polled_read(i, any);
                }
            }
            k += 1;
        }
        if batched {
            // Read together, in one io_uring enter (see `uring`).
            self.read_polled(&due);
            self.io.polls = due;
        }
    }

    /// A poll of connection `i` found something (`any`) or nothing.
    pub(super) fn polled_read(&mut self, i: usize, any: bool) {
        let c = &mut self.conns[i];
        if any {
            c.empty_polls = 0;
        } else if c.state == State::Open && !c.inflight.is_empty() {
            c.empty_polls += 1;
            if c.empty_polls >= WATCH_AFTER {
                self.watch(i);
            }
        }
    }

    /// Connection `i`'s answers wake the thread from now on. Lowering the
    /// mark wakes the thread at once if enough is already queued.
    pub(super) fn watch(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if c.lowat == 1 {
            return;
        }
        if let Some(s) = c.stream.as_ref() {
            if s.set_low_water(1).is_ok() {
                c.lowat = 1;
            }
        }
    }

    /// The kernel does not stamp this run's arrivals: it refused the option
    /// when connecting, or bytes just read came without a stamp. Reading
    /// late would then time answers at a read that may come a send interval
    /// after them, charging the generator's schedule to the server; from now
    /// on every answer wakes the thread instead and is timed as it is read,
    /// as in the closed loop (the generator's wake-up in it, microseconds
    /// rather than a send interval). The requests in flight on connections
    /// read late until now are counted: each answer among them that already
    /// came is read after it came, and timed then.
    pub(super) fn stamps_missing(&mut self) {
        if !self.deferred {
            return;
        }
        let late: usize = (self.conns.iter())
            .filter(|c| c.lowat == LOW_WATER)
            .map(|c| c.inflight.len())
            .sum();
        self.unstamped = Some(late as u64);
        self.deferred = false;
        self.watch_all();
        for i in 0..self.conns.len() {
            self.watch(i);
        }
    }

    /// Every answer wakes the thread: a due request found no free
    /// connection (the next answer frees one), or the drain.
    pub(super) fn watch_all(&mut self) {
        while let Some(i) = self.polled.pop() {
            self.conns[i].polled = false;
            self.watch(i);
        }
    }
}

/// A receive timestamp (`stamp`, CLOCK_REALTIME) on the engine's clock,
/// given `offset` = realtime − monotonic. Trusted only within [`floor`,
/// `now`]: bytes cannot have arrived before the socket was last found empty,
/// nor after they were read. Outside that (a wall-clock step between the
/// stamp and the read) or without a stamp, the read time `now` stands,
/// which can only lengthen a latency.
fn arrival_time(stamp: Option<u64>, offset: i128, floor: Nanos, now: Nanos) -> Nanos {
    let Some(rt) = stamp else { return now };
    let t = rt as i128 - offset;
    if t < floor as i128 || t > now as i128 {
        return now;
    }
    t as Nanos
}

#[cfg(test)]
mod tests {
    use super::arrival_time;

    const OFFSET: i128 = 1_700_000_000_000_000_000;

    #[test]
    fn a_stamp_between_the_last_empty_read_and_now_is_the_arrival() {
        let rt = (OFFSET + 5_000) as u64;
        assert_eq!(arrival_time(Some(rt), OFFSET, 1_000, 9_000), 5_000);
    }

    #[test]
    fn without_a_stamp_or_with_an_impossible_one_the_read_time_stands() {
        assert_eq!(arrival_time(None, OFFSET, 1_000, 9_000), 9_000);
        // Before the socket was last found empty: the wall clock stepped
        // forward after the stamp (a later arrival would look earlier).
        let early = (OFFSET + 500) as u64;
        assert_eq!(arrival_time(Some(early), OFFSET, 1_000, 9_000), 9_000);
        // After the read: the wall clock stepped back.
        let late = (OFFSET + 9_500) as u64;
        assert_eq!(arrival_time(Some(late), OFFSET, 1_000, 9_000), 9_000);
        // A stamp of 0 (timestamps not yet on) never yields a time.
        assert_eq!(arrival_time(Some(0), OFFSET, 1_000, 9_000), 9_000);
    }
}
