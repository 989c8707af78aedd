//! Names of fairbench's control groups, and whether their owner lives.
//!
//! `fairbench-<pid>-<start>-<n>`: the owning process's pid and its start
//! time (clock ticks since boot, from /proc/PID/stat), so that a leftover
//! is recognised as dead even when its pid has been reused, and a group
//! whose owner runs under any name (a test binary, an agent) is never taken
//! for a leftover.

use std::sync::atomic::{AtomicU64, Ordering};

/// Every group fairbench creates starts with this.
pub const PREFIX: &str = "fairbench-";

static SEQ: AtomicU64 = AtomicU64::new(1);

/// A fresh name owned by this process.
pub fn fresh() -> String {
    let pid = std::process::id();
    let start = start_time(pid).unwrap_or(0);
    let n = SEQ.fetch_add(1, Ordering::Relaxed);
    format!("{PREFIX}{pid}-{start}-{n}")
}

/// The owner (pid, start time) of a group name made by [`fresh`].
pub fn owner(name: &str) -> Option<(u32, u64)> {
    let mut parts = name.strip_prefix(PREFIX)?.split('-');
    let pid = parts.next()?.parse().ok()?;
    let start = parts.next()?.parse().ok()?;
    let seq = parts.next()?;
    if seq.is_empty() || !seq.bytes().all(|b| b.is_ascii_alphanumeric()) || parts.next().is_some() {
        return None;
    }
    Some((pid, start))
}

/// Whether the process that made a group still runs.
pub fn owner_alive(pid: u32, start: u64) -> bool {
    pid == std::process::id() || start_time(pid) == Some(start)
}

/// A process's start time in clock ticks since boot (field 22 of
/// /proc/PID/stat); `None` when it is gone.
pub fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    // Fields after the command: state (3) … starttime (22).
    rest.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_their_owner() {
        let n = fresh();
        let me = std::process::id();
        let (pid, start) = owner(&n).unwrap();
        assert_eq!(pid, me);
        assert!(start > 0);
        assert!(owner_alive(pid, start));
        assert_ne!(fresh(), n);
    }

    #[test]
    fn foreign_and_dead_names() {
        assert_eq!(owner("fairbench-12-34-5"), Some((12, 34)));
        assert_eq!(owner("fairbench-12-34"), None);
        assert_eq!(owner("fairbench-12-34-5-6"), None);
        assert_eq!(owner("other-12-34-5"), None);
        assert_eq!(owner("fairbench-x-34-5"), None);
        // pid 1 runs, but it did not start at tick 1: not the owner.
        let init = start_time(1).unwrap();
        assert!(!owner_alive(1, init + 1));
        assert!(owner_alive(1, init));
    }
}
