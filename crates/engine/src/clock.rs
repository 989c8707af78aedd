//! The engine's clock: CLOCK_MONOTONIC in nanoseconds.
//!
//! `std::time::Instant` is the same clock on Linux but cannot be turned into a
//! `timespec`, and the constant-rate scheduler waits until absolute planned
//! times. Keeping every timestamp as a plain `u64` of nanoseconds also
//! makes in-flight bookkeeping cheap to store and compare.

/// Nanoseconds on the monotonic clock (an arbitrary epoch, usually boot).
pub type Nanos = u64;

pub const NANOS_PER_SEC: u64 = 1_000_000_000;

#[inline]
fn read(clock: libc::clockid_t) -> Nanos {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; these clocks always exist on Linux.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * NANOS_PER_SEC + ts.tv_nsec as u64
}

#[inline]
pub fn now() -> Nanos {
    read(libc::CLOCK_MONOTONIC)
}

/// Wall-clock nanoseconds since the Unix epoch: the clock of the kernel's
/// receive timestamps.
#[inline]
pub fn realtime() -> Nanos {
    read(libc::CLOCK_REALTIME)
}

pub fn to_timespec(t: Nanos) -> libc::timespec {
    libc::timespec {
        tv_sec: (t / NANOS_PER_SEC) as libc::time_t,
        tv_nsec: (t % NANOS_PER_SEC) as libc::c_long,
    }
}

/// CPU time (user + system) consumed so far by the calling thread.
pub fn thread_cpu() -> Nanos {
    read(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// The calling thread's (time on a CPU, time waiting for one) in nanoseconds,
/// from /proc/thread-self/schedstat. Their sum is the time the thread was not
/// blocked: a thread that shares its CPU with another is busy while it waits
/// for its turn, which CPU time alone does not show. Where schedstat is not
/// available (a kernel without CONFIG_SCHED_INFO), the wait reads as 0.
pub fn thread_sched() -> (Nanos, Nanos) {
    if let Ok(s) = std::fs::read_to_string("/proc/thread-self/schedstat") {
        let mut f = s.split_whitespace().map(|x| x.parse::<u64>().ok());
        if let (Some(Some(run)), Some(Some(wait))) = (f.next(), f.next()) {
            return (run, wait);
        }
    }
    (thread_cpu(), 0)
}

/// CPU time (user + system) consumed so far by the whole process.
pub fn process_cpu() -> Nanos {
    read(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// Cumulative (steal, total) CPU ticks of the whole machine from /proc/stat.
/// Steal is time the hypervisor ran something else while a vCPU of this VM
/// wanted to run: on a shared cloud host it slows server and generator alike
/// and no measurement taken during it is steady. None where unreadable.
pub fn machine_steal_ticks() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal [guest guest_nice]
    if v.len() < 8 {
        return None;
    }
    Some((v[7], v[..8].iter().sum()))
}

/// The share of CPU time stolen between two readings of
/// [`machine_steal_ticks`].
pub fn steal_fraction(before: Option<(u64, u64)>, after: Option<(u64, u64)>) -> Option<f64> {
    let ((s0, t0), (s1, t1)) = (before?, after?);
    let total = t1.checked_sub(t0)?;
    (total > 0).then(|| s1.saturating_sub(s0) as f64 / total as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steal_share_between_two_readings() {
        assert_eq!(
            steal_fraction(Some((10, 1000)), Some((60, 1200))),
            Some(0.25)
        );
        assert_eq!(steal_fraction(Some((10, 1000)), Some((10, 1000))), None);
        assert_eq!(steal_fraction(None, Some((1, 2))), None);
        // A counter that went backwards (not expected) is not a negative share.
        assert_eq!(
            steal_fraction(Some((50, 1000)), Some((40, 1100))),
            Some(0.0)
        );
    }

    #[test]
    fn schedstat_counts_time_on_the_cpu() {
        let (run0, _) = thread_sched();
        let t = std::time::Instant::now();
        let mut x = 0u64;
        while t.elapsed() < std::time::Duration::from_millis(30) {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        let (run1, _) = thread_sched();
        assert!(x > 0 && run1 > run0);
    }

    #[test]
    fn reads_proc_stat_here() {
        let (steal, total) = machine_steal_ticks().expect("/proc/stat on Linux");
        assert!(total > 0 && steal <= total);
    }
}
