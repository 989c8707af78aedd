//! A `timerfd` the event loop can wait on, for sub-millisecond wake-ups.
//!
//! `epoll_wait` (and so mio) takes its timeout in whole milliseconds; wrk2 and
//! oha sleep on millisecond timers and charge the up-to-1 ms lateness to the
//! server. An absolute CLOCK_MONOTONIC timerfd fires at the planned nanosecond
//! (give or take the thread's timer slack, which the worker sets to 1 µs).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::clock::{to_timespec, Nanos};

pub struct TimerFd {
    fd: OwnedFd,
    armed_at: Option<Nanos>,
}

impl TimerFd {
    pub fn new() -> io::Result<TimerFd> {
        // SAFETY: plain syscall; the result is checked before use.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(TimerFd { fd, armed_at: None })
    }

    pub fn raw(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    /// Fire at absolute monotonic time `at` at the latest. A timer already
    /// armed for `at` or earlier is left as it is: it wakes the loop early,
    /// which then arms it for its new deadline. Moving a deadline later at
    /// every wake-up would cost a system call each time (and, on a virtual
    /// machine, reprogramming the timer), where the spurious wake-up costs
    /// one read.
    pub fn arm(&mut self, at: Nanos) {
        if self.armed_at.is_some_and(|a| a <= at) {
            return;
        }
        let spec = libc::itimerspec {
            it_interval: to_timespec(0),
            // A zero it_value would disarm the timer; the epoch is never "now".
            it_value: to_timespec(at.max(1)),
        };
        // SAFETY: valid fd and pointers.
        unsafe {
            libc::timerfd_settime(
                self.fd.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        };
        self.armed_at = Some(at);
    }

    /// Consume the expiry so that the descriptor stops being readable.
    pub fn clear(&mut self) {
        let mut buf = [0u8; 8];
        // SAFETY: reading 8 bytes into a buffer of 8 bytes.
        unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
        self.armed_at = None;
    }
}
