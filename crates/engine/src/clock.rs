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

/// The calling thread's time waiting for a CPU, in nanoseconds, from
/// /proc/thread-self/schedstat (its run delay, complete whenever the thread
/// itself reads it: it is running). With its CPU time ([`thread_cpu`]) it
/// is the time the thread was not blocked: a thread that shares its CPU
/// with another is busy while it waits for its turn, which CPU time alone
/// does not show. (Schedstat's own time on the CPU is not used: for a
/// running thread it lags by up to a scheduler tick, which over a short
/// window read as 100 % busy.) Where schedstat is not available (a kernel
/// without CONFIG_SCHED_INFO), 0.
pub fn thread_wait() -> Nanos {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
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
    fn a_thread_behind_another_on_its_cpu_waits() {
        // SAFETY: no arguments; the CPU this thread is on, one it may use.
        let cpu = unsafe { libc::sched_getcpu() }.max(0) as usize;
        // Two spinning threads pinned to one CPU: each waits about half
        // the time for the other.
        let spin = || {
            // SAFETY: a zeroed cpu_set_t is an empty set; the calls take
            // this thread (pid 0) and the set's own size.
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu, &mut set);
                libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set);
            }
            let w0 = thread_wait();
            let t = std::time::Instant::now();
            while t.elapsed() < std::time::Duration::from_millis(200) {
                std::hint::spin_loop();
            }
            thread_wait() - w0
        };
        let waits: Vec<Nanos> = std::thread::scope(|s| {
            let a = s.spawn(spin);
            let b = s.spawn(spin);
            vec![a.join().unwrap(), b.join().unwrap()]
        });
        assert!(waits.iter().any(|&w| w > 10_000_000), "{waits:?}");
    }

    #[test]
    fn reads_proc_stat_here() {
        let (steal, total) = machine_steal_ticks().expect("/proc/stat on Linux");
        assert!(total > 0 && steal <= total);
    }
}
