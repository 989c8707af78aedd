//! The engine's clock: CLOCK_MONOTONIC in nanoseconds.
//!
//! `std::time::Instant` is the same clock on Linux but cannot be turned into a
//! `timespec`, and the constant-rate scheduler arms a `timerfd` at absolute
//! planned times. Keeping every timestamp as a plain `u64` of nanoseconds also
//! makes in-flight bookkeeping cheap to store and compare.

/// Nanoseconds on the monotonic clock (an arbitrary epoch, usually boot).
pub type Nanos = u64;

pub const NANOS_PER_SEC: u64 = 1_000_000_000;

#[inline]
pub fn now() -> Nanos {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * NANOS_PER_SEC + ts.tv_nsec as u64
}

pub fn to_timespec(t: Nanos) -> libc::timespec {
    libc::timespec {
        tv_sec: (t / NANOS_PER_SEC) as libc::time_t,
        tv_nsec: (t % NANOS_PER_SEC) as libc::c_long,
    }
}

/// CPU time (user + system) consumed so far by the calling thread.
pub fn thread_cpu() -> Nanos {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer; the per-thread CPU clock exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * NANOS_PER_SEC + ts.tv_nsec as u64
}

/// CPU time (user + system) consumed so far by the whole process.
pub fn process_cpu() -> Nanos {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * NANOS_PER_SEC + ts.tv_nsec as u64
}
