//! The event loop's wait: epoll with a nanosecond deadline.
//!
//! A constant-rate schedule needs wake-ups at planned nanoseconds, which
//! `epoll_wait` (and so mio) cannot express: its timeout is in whole
//! milliseconds. The first version armed a `timerfd` for each due request,
//! which costs three system calls per request on top of the wait itself
//! (`timerfd_settime`, the wake-up's `read`, and an extra `epoll_wait` turn
//! when the timer and an answer do not coincide). `epoll_pwait2` (Linux 5.11)
//! takes a `timespec` timeout and sleeps on the same high-resolution timer, so
//! the deadline costs nothing beyond the wait. On older kernels the poller
//! falls back to the timerfd, registered under a token no connection uses.
//!
//! `epoll_pwait2` arms its timer at every wait that finds nothing ready and
//! cancels it when a socket wakes the thread first. On a virtual machine
//! each of those reprograms the timer through the hypervisor. Where answers
//! wake the thread between due times (a constant rate over TLS, whose
//! answers are not read late), that is most waits. The timerfd instead is
//! kept armed across waits and moved only to an earlier deadline (see
//! [`TimerFd::arm`]). Against nginx on a Firecracker guest, in alternating
//! runs of the same build otherwise: HTTP/1.1 over TLS at 60,000 requests/s
//! took 12.5–13.0 CPU-µs per request instead of 14.0–14.3, and HTTP/2 over
//! TLS at 94,000/s 8.2–8.7 instead of 9.3–9.7 (timers armed per request:
//! 0.12 instead of 0.33, and 0.09 instead of 0.14–0.18). Where the thread
//! sleeps until the timer (plain TCP, answers read late) the timerfd's
//! extra read per wake-up made it no cheaper, so `epoll_pwait2` stays.
//!
//! Registration is edge-triggered for reading and writing, like mio's: the
//! worker reads and writes until `WouldBlock`.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use crate::clock::{self, to_timespec, Nanos};
use crate::timer::TimerFd;

/// The fallback timer's token; connections use their index.
const TIMER: u64 = u64::MAX;

pub struct Poller {
    epfd: OwnedFd,
    events: Vec<libc::epoll_event>,
    /// Present only where `epoll_pwait2` is missing.
    timer: Option<TimerFd>,
}

/// One readiness report for the connection with index `token`.
#[derive(Debug, Clone, Copy)]
pub struct Ready {
    pub token: usize,
    pub readable: bool,
    pub writable: bool,
    /// The peer closed its side, or the socket has an error: reading must
    /// go on until the end of the stream even after a short read.
    pub closed: bool,
}

impl Poller {
    /// `keep_timer`: wait on a timer kept armed across waits rather than
    /// on `epoll_pwait2`'s (see the module doc for when that pays).
    pub fn new(capacity: usize, keep_timer: bool) -> io::Result<Poller> {
        // SAFETY: plain syscall; the result is checked before use.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a fresh descriptor we own.
        let epfd = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut p = Poller {
            epfd,
            events: vec![libc::epoll_event { events: 0, u64: 0 }; capacity.max(1)],
            timer: None,
        };
        if keep_timer || !pwait2_works(p.epfd.as_raw_fd()) {
            let t = TimerFd::new()?;
            p.ctl(libc::EPOLL_CTL_ADD, t.raw(), TIMER, libc::EPOLLIN as u32)?;
            p.timer = Some(t);
        }
        Ok(p)
    }

    /// Watches `fd` for reading and writing, edge-triggered.
    pub fn add(&self, fd: RawFd, token: usize) -> io::Result<()> {
        let flags = libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLET;
        self.ctl(libc::EPOLL_CTL_ADD, fd, token as u64, flags as u32)
    }

    /// What `fd` (added by [`Poller::add`]) ends a wait for from now on:
    /// data to read (`reads`), or only an error or hang-up. A socket the
    /// caller reads in its own time (never waiting to write) is not woken
    /// for every datagram, nor for the send space each send frees. With
    /// `reads`, data already queued ends the next wait.
    pub fn watch_reads(&self, fd: RawFd, token: usize, reads: bool) -> io::Result<()> {
        let flags = if reads {
            libc::EPOLLIN | libc::EPOLLET
        } else {
            libc::EPOLLET
        };
        self.ctl(libc::EPOLL_CTL_MOD, fd, token as u64, flags as u32)
    }

    /// Stops watching `fd` (closing it would too; this keeps the set exact
    /// when a descriptor number is reused before the close is seen).
    pub fn remove(&self, fd: RawFd) {
        // SAFETY: a null event is allowed for EPOLL_CTL_DEL since 2.6.9.
        unsafe {
            libc::epoll_ctl(
                self.epfd.as_raw_fd(),
                libc::EPOLL_CTL_DEL,
                fd,
                std::ptr::null_mut(),
            )
        };
    }

    fn ctl(&self, op: i32, fd: RawFd, token: u64, flags: u32) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: flags,
            u64: token,
        };
        // SAFETY: valid descriptors and a valid event pointer.
        if unsafe { libc::epoll_ctl(self.epfd.as_raw_fd(), op, fd, &mut ev) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Waits until something is ready or the monotonic clock reaches
    /// `deadline`, and calls `f` for each ready connection. Interrupted waits
    /// return normally: the caller's loop re-checks the clock. So does a
    /// wait that a kept timer, armed for an earlier deadline, ends early.
    pub fn wait(&mut self, deadline: Nanos, mut f: impl FnMut(Ready)) -> io::Result<()> {
        let n = match &mut self.timer {
            None => {
                let ts = to_timespec(deadline.saturating_sub(clock::now()));
                // SAFETY: the buffer holds `len` events; ts outlives the call.
                unsafe {
                    libc::epoll_pwait2(
                        self.epfd.as_raw_fd(),
                        self.events.as_mut_ptr(),
                        self.events.len() as i32,
                        &ts,
                        std::ptr::null(),
                    )
                }
            }
            Some(t) => {
                t.arm(deadline);
                // SAFETY: as above; -1 waits for the timer or a socket.
                unsafe {
                    libc::epoll_wait(
                        self.epfd.as_raw_fd(),
                        self.events.as_mut_ptr(),
                        self.events.len() as i32,
                        -1,
                    )
                }
            }
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok(())
            } else {
                Err(e)
            };
        }
        for ev in &self.events[..n as usize] {
            let (flags, token) = (ev.events, ev.u64);
            if token == TIMER {
                if let Some(t) = self.timer.as_mut() {
                    t.clear();
                }
                continue;
            }
            let has = |bit: i32| flags & bit as u32 != 0;
            let closed = has(libc::EPOLLHUP)
                || has(libc::EPOLLERR)
                || (has(libc::EPOLLIN) && has(libc::EPOLLRDHUP));
            f(Ready {
                token: token as usize,
                readable: has(libc::EPOLLIN) || closed,
                writable: has(libc::EPOLLOUT),
                closed,
            });
        }
        Ok(())
    }
}

/// Probes `epoll_pwait2` with a zero timeout: kernels before 5.11 (and
/// seccomp filters that do not know it) answer ENOSYS or EPERM.
fn pwait2_works(epfd: RawFd) -> bool {
    let mut ev = libc::epoll_event { events: 0, u64: 0 };
    let ts = to_timespec(0);
    // SAFETY: one-event buffer, valid timespec.
    let r = unsafe { libc::epoll_pwait2(epfd, &mut ev, 1, &ts, std::ptr::null()) };
    r >= 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::net::UnixStream;

    fn both() -> [Poller; 2] {
        [
            Poller::new(8, false).unwrap(),
            Poller::new(8, true).unwrap(),
        ]
    }

    #[test]
    fn a_deadline_without_events_returns_at_the_deadline_not_before() {
        for mut p in both() {
            let deadline = clock::now() + 3_000_000;
            let mut seen = 0;
            p.wait(deadline, |_| seen += 1).unwrap();
            assert_eq!(seen, 0);
            assert!(clock::now() >= deadline);
            // A deadline already passed does not block.
            let before = clock::now();
            p.wait(before - 1, |_| seen += 1).unwrap();
            assert!(clock::now() - before < 1_000_000_000);
        }
    }

    #[test]
    fn a_timer_kept_armed_is_moved_to_an_earlier_deadline() {
        for mut p in both() {
            let (a, mut b) = UnixStream::pair().unwrap();
            a.set_nonblocking(true).unwrap();
            p.add(a.as_raw_fd(), 7).unwrap();
            // A socket ends a wait whose timer was armed for 10 s.
            b.write_all(b"x").unwrap();
            let mut seen = 0;
            p.wait(clock::now() + 10_000_000_000, |_| seen += 1)
                .unwrap();
            assert_eq!(seen, 1);
            // The next deadline is earlier: the wait ends by it, not at 10 s.
            let before = clock::now();
            let deadline = before + 5_000_000;
            p.wait(deadline, |_| seen += 1).unwrap();
            assert_eq!(seen, 1);
            let now = clock::now();
            assert!(now >= deadline, "{} ns early", deadline - now);
            assert!(now - before < 1_000_000_000, "{} ns", now - before);
            p.remove(a.as_raw_fd());
        }
    }

    #[test]
    fn a_socket_not_watched_for_reads_ends_no_wait_until_it_is_again() {
        let mut p = Poller::new(8, false).unwrap();
        let (a, mut b) = UnixStream::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        p.add(a.as_raw_fd(), 3).unwrap();
        p.watch_reads(a.as_raw_fd(), 3, false).unwrap();
        b.write_all(b"x").unwrap();
        let mut seen = 0;
        p.wait(clock::now() + 20_000_000, |_| seen += 1).unwrap();
        assert_eq!(seen, 0);
        // Watched again: what is queued ends the next wait at once.
        p.watch_reads(a.as_raw_fd(), 3, true).unwrap();
        let mut got = Vec::new();
        p.wait(clock::now() + 5_000_000_000, |r| got.push(r))
            .unwrap();
        assert!(got.iter().any(|r| r.token == 3 && r.readable), "{got:?}");
        p.remove(a.as_raw_fd());
    }

    #[test]
    fn a_ready_socket_is_reported_with_its_token() {
        for p in both() {
            ready_and_closed(p);
        }
    }

    fn ready_and_closed(mut p: Poller) {
        let (a, mut b) = UnixStream::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        p.add(a.as_raw_fd(), 7).unwrap();
        b.write_all(b"x").unwrap();
        let mut got = Vec::new();
        p.wait(clock::now() + 1_000_000_000, |r| got.push(r))
            .unwrap();
        let r = got.iter().find(|r| r.token == 7).expect("token 7 ready");
        assert!(r.readable && !r.closed);
        drop(b);
        got.clear();
        p.wait(clock::now() + 1_000_000_000, |r| got.push(r))
            .unwrap();
        assert!(got.iter().any(|r| r.token == 7 && r.closed));
        p.remove(a.as_raw_fd());
    }
}
