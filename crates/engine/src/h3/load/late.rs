//! Reading late (the module doc of `h3::load`): which sockets wake the
//! thread, which are read at its next wake-up instead, and how each
//! datagram is handed over at its own arrival.

use crate::clock::Nanos;
use crate::pacer::Pacer;

use super::H3Worker;

/// The longest a socket with requests in flight goes unread while the
/// thread sleeps: it wakes at least this often to read them.
///
/// What the server gets from the client's reads must not be held back
/// long enough to slow it: ACKs (its congestion window grows, and its
/// loss detection waits, on them), and flow-control credit. quinn
/// announces a `max_ack_delay` of 25 ms, and the ACK delay it reports is
/// counted from each datagram's arrival stamp, so the server takes the
/// reading delay out of its RTT samples; a tenth of that delay, and less,
/// keeps the server's view of the path as if read at once. At 1 ms the
/// 1.25 MB stream window would only close on a server sending one answer
/// faster than 10 Gbit/s, and the 4 MiB socket buffer only overflow above
/// 32 Gbit/s.
pub(super) const READ_LATE_MAX: Nanos = 1_000_000;

/// How long a socket read late stays so once its last answer is in: a
/// connection given requests more often than this is not switched back
/// and forth (two `epoll_ctl` each time). Idle longer, it wakes the
/// thread again for whatever comes (a close, a GOAWAY, an ACK), so that
/// nothing waits in it longer than this, a fifth of quinn's
/// `max_ack_delay`.
pub(super) const IDLE_LATE_MAX: Nanos = 5_000_000;

/// What the thread's state says of reading late, this turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Thread {
    /// A constant rate or a profile (the closed loop reads at once: each
    /// answer frees the next request).
    pub paced: bool,
    /// The thread's next sends are at most [`READ_LATE_MAX`] apart: it
    /// wakes that often anyway. Further apart, reading late would cost
    /// more wake-ups (one per [`READ_LATE_MAX`] while requests are in
    /// flight) than the datagrams' own.
    pub dense: bool,
    /// After the measured window: what is outstanding is awaited.
    pub draining: bool,
    /// A due request found no stream (every connection full, or the
    /// server's stream credit used up): the next answer or credit frees
    /// one.
    pub starved: bool,
}

/// A connection as reading late sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Socket {
    /// Its handshake is done (its answers are what let requests go out).
    pub connected: bool,
    /// Its kernel stamps each datagram's arrival (without a stamp, a
    /// datagram read late would be timed late).
    pub stamps: bool,
    /// Requests in flight, and when it last had some.
    pub flying: bool,
    pub busy_at: Nanos,
}

/// Whether a connection's socket is read late (at the thread's next
/// wake-up) rather than waking it, `now`: only at a constant rate whose
/// sends come often, within the window, with streams to spare, on a
/// connection that is connected, stamps, and has requests in flight or
/// had some within [`IDLE_LATE_MAX`].
pub(super) fn reads_late(t: Thread, s: Socket, now: Nanos) -> bool {
    let busy = s.flying || now.saturating_sub(s.busy_at) < IDLE_LATE_MAX;
    t.paced && t.dense && !t.draining && !t.starved && s.connected && s.stamps && busy
}

/// The latest the thread may sleep to, `now`, for a socket read late: to
/// read its answers within [`READ_LATE_MAX`], or once idle for
/// [`IDLE_LATE_MAX`] to have it wake the thread again.
pub(super) fn late_wake(s: Socket, now: Nanos) -> Nanos {
    if s.flying {
        now + READ_LATE_MAX
    } else {
        s.busy_at + IDLE_LATE_MAX
    }
}

/// The thread's reading state.
#[derive(Debug, Default)]
pub(super) struct Late {
    /// Per connection: when it was last read, and last had requests in
    /// flight.
    read_at: Vec<Nanos>,
    busy_at: Vec<Nanos>,
    /// Connections read late this turn, sent for after the dispatch (so
    /// that their ACKs leave with the requests due).
    pending: Vec<usize>,
    pub starved: bool,
}

impl H3Worker {
    fn thread_state(&self) -> Thread {
        let dense = self.pacer.as_ref().is_some_and(|p| {
            let (a, b) = (p.due(self.next_i), p.due(self.next_i + 1));
            a < self.end && b.saturating_sub(a) <= READ_LATE_MAX
        });
        Thread {
            paced: self.pacer.is_some(),
            dense,
            draining: self.draining,
            starved: self.late.starved,
        }
    }

    /// Before a wait at `now`: each socket wakes the thread for what it
    /// reads, or not (read late), as [`reads_late`] says; returns the
    /// latest the thread may sleep to for the sockets read late.
    fn arrange(&mut self, now: Nanos) -> Nanos {
        let t = self.thread_state();
        let n = self.slots.len();
        let late = &mut self.late;
        late.read_at.resize(n, 0);
        late.busy_at.resize(n, 0);
        let mut wake = Nanos::MAX;
        for (i, s) in self.slots.iter_mut().enumerate() {
            let Some(c) = s.conn.as_mut() else {
                continue;
            };
            if !s.inflight.is_empty() {
                late.busy_at[i] = now;
            }
            let sock = Socket {
                connected: c.connected,
                stamps: c.link.stamps(),
                flying: !s.inflight.is_empty(),
                busy_at: late.busy_at[i],
            };
            let reads_late = reads_late(t, sock, now);
            if c.link.watch != Some(!reads_late)
                && self.poller.watch_reads(c.link.fd(), i, !reads_late).is_ok()
            {
                c.link.watch = Some(!reads_late);
            }
            if c.link.watch == Some(false) {
                wake = wake.min(late_wake(sock, now));
            }
        }
        wake
    }

    /// When the thread wakes: at its next send, quinn's deadline or its
    /// books, and no later than the sockets read late allow.
    pub(super) fn wake_reading(&mut self, now: Nanos) -> Nanos {
        let bound = self.arrange(now);
        self.wake_at(now).min(bound.max(now))
    }

    /// After a wait: counts it, and reads every socket read late that has
    /// requests in flight (their answers) or a quinn deadline due (the
    /// ACKs its timer waits for are read before it fires).
    pub(super) fn after_wait(&mut self, now: Nanos, woken_by_socket: bool) {
        let r = &mut self.report.reading;
        r.wakeups += 1;
        r.socket_wakeups += u64::from(woken_by_socket);
        for i in 0..self.slots.len() {
            let Some(c) = self.slots[i].conn.as_mut() else {
                continue;
            };
            if c.link.watch != Some(false) {
                continue;
            }
            let due = c.link.deadline().is_some_and(|d| d <= now);
            if due || !self.slots[i].inflight.is_empty() {
                self.read_now(i, now);
            }
        }
    }

    /// Connection `i` is read late and was last read more than
    /// [`READ_LATE_MAX`] before `now`.
    fn stale(&self, i: usize, now: Nanos) -> bool {
        let late = self.slots[i]
            .conn
            .as_ref()
            .is_some_and(|c| c.link.watch == Some(false));
        let read_at = self.late.read_at.get(i).copied().unwrap_or(0);
        late && now.saturating_sub(read_at) > READ_LATE_MAX
    }

    /// Reads connection `i` (read late) now; what it has to send goes after
    /// the dispatch, unless it closed.
    fn read_now(&mut self, i: usize, now: Nanos) {
        if let Some(t) = self.late.read_at.get_mut(i) {
            *t = now;
        }
        self.take_in(i, now);
        let closed = self.slots[i]
            .conn
            .as_ref()
            .is_some_and(|c| c.closed.is_some());
        if closed {
            self.send_out(i, now);
        } else {
            self.late.pending.push(i);
        }
    }

    /// The open connection with the fewest requests in flight, if any has
    /// room, read first if it is read late and was not within
    /// [`READ_LATE_MAX`]: a request goes to a connection whose close or
    /// GOAWAY came no earlier than if it were read at once, give or take
    /// that.
    pub(super) fn roomiest_read(&mut self, now: Nanos) -> Option<usize> {
        for _ in 0..=self.slots.len() {
            let i = self.roomiest()?;
            if !self.stale(i, now) {
                return Some(i);
            }
            self.read_now(i, now);
        }
        self.roomiest()
    }

    /// What the connections read late this turn have to send (their ACKs,
    /// quinn's timers), after the dispatch put the due requests with them.
    pub(super) fn send_pending(&mut self, now: Nanos) {
        let mut pending = std::mem::take(&mut self.late.pending);
        for &i in &pending {
            self.send_out(i, now);
        }
        pending.clear();
        self.late.pending = pending;
    }

    /// Reads what connection `i`'s socket holds, handing quinn one
    /// datagram at a time and taking its events at once: an answer a
    /// datagram completes is timed at that datagram's arrival, however
    /// late it was read and whatever came after it in the same read.
    pub(super) fn take_in(&mut self, i: usize, now: Nanos) {
        let mut events = std::mem::take(&mut self.events);
        let mut failed = None;
        while let Some(c) = self.slots[i].conn.as_mut() {
            let more = match c.link.read(now) {
                Ok(more) => more,
                Err(e) => {
                    failed = Some(e);
                    false
                }
            };
            while let Some(c) = self.slots[i].conn.as_mut() {
                let Some(at) = c.link.next_datagram() else {
                    break;
                };
                events.clear();
                c.poll(at, &mut events);
                for ev in events.drain(..) {
                    self.on_event(i, ev, at);
                }
            }
            if !more {
                break;
            }
        }
        self.events = events;
        if let Some(e) = failed {
            self.io_failed(i, now, e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LATE: Thread = Thread {
        paced: true,
        dense: true,
        draining: false,
        starved: false,
    };

    const NOW: Nanos = 50_000_000;

    const BUSY: Socket = Socket {
        connected: true,
        stamps: true,
        flying: true,
        busy_at: NOW,
    };

    #[test]
    fn only_a_dense_constant_rate_with_streams_to_spare_reads_late() {
        assert!(reads_late(LATE, BUSY, NOW));
        for t in [
            Thread {
                paced: false,
                ..LATE
            },
            Thread {
                dense: false,
                ..LATE
            },
            Thread {
                draining: true,
                ..LATE
            },
            Thread {
                starved: true,
                ..LATE
            },
        ] {
            assert!(!reads_late(t, BUSY, NOW), "{t:?}");
        }
        // A handshake in progress, or a socket without stamps: at once.
        for s in [
            Socket {
                connected: false,
                ..BUSY
            },
            Socket {
                stamps: false,
                ..BUSY
            },
        ] {
            assert!(!reads_late(LATE, s, NOW), "{s:?}");
        }
        // Idle a little: still read late; idle longer: it wakes the thread.
        let idle = |for_ns: Nanos| Socket {
            flying: false,
            busy_at: NOW - for_ns,
            ..BUSY
        };
        assert!(reads_late(LATE, idle(IDLE_LATE_MAX - 1), NOW));
        assert!(!reads_late(LATE, idle(IDLE_LATE_MAX), NOW));
    }

    #[test]
    fn a_socket_read_late_bounds_the_sleep() {
        // Requests in flight: read within the bound.
        assert_eq!(late_wake(BUSY, NOW), NOW + READ_LATE_MAX);
        // Idle: woken when it is to wake the thread itself again.
        let idle = Socket {
            flying: false,
            busy_at: NOW - 1_000_000,
            ..BUSY
        };
        assert_eq!(late_wake(idle, NOW), NOW - 1_000_000 + IDLE_LATE_MAX);
    }
}
