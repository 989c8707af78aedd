//! The documented bounds (docs/limits.md) on what a measurement may ask for,
//! checked before anything is allocated, started or stored: past them a
//! value is a typo or a way to exhaust the machine, never a benchmark.

/// Most load threads of one generator: well past any core count a
/// benchmark machine has, far below what exhausts the thread table.
pub const MAX_THREADS: usize = 1024;
/// Most repetitions of a suite's cases.
pub const MAX_REPETITIONS: usize = 1000;
/// Most cases and sweeps in one run's plan, checked before it is built.
pub const MAX_PLAN_ITEMS: usize = 100_000;
/// Most steps one rate sweep may take (coarse and bisection together).
pub const MAX_SWEEP_STEPS: usize = 200;
/// Most connections of one load, whatever the open-file limit (which may
/// be "unlimited"): far more than the ports one address can connect from.
pub const MAX_CONNECTIONS: u64 = 1_000_000;
/// Most requests in flight per connection (the engine's bound).
pub const MAX_PIPELINE: usize = 1024;
/// Descriptors a generator keeps for itself beyond its connections (the
/// standard streams, its poller, timers, logs, the database).
pub const FD_RESERVE: u64 = 64;

/// This process's open-file limit (the soft `RLIMIT_NOFILE`): each
/// connection is a descriptor, so it bounds the connections one generator
/// process may open.
pub fn open_file_limit() -> u64 {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0
        || r.rlim_cur == libc::RLIM_INFINITY
    {
        return u64::MAX;
    }
    r.rlim_cur
}

/// Whether `connections` spread over `generators` load generators on this
/// machine fit its open-file limit; the message says what the limit is
/// and how to raise it (the caller names the flag or field).
pub fn connections_fit(connections: usize, generators: usize) -> Result<(), String> {
    fit(connections, generators, open_file_limit())
}

fn fit(connections: usize, generators: usize, limit: u64) -> Result<(), String> {
    let per = (connections as u64).div_ceil(generators.max(1) as u64);
    let room = limit.saturating_sub(FD_RESERVE);
    if connections as u64 > MAX_CONNECTIONS {
        return Err(format!(
            "{connections} is more than the most allowed, {MAX_CONNECTIONS}"
        ));
    }
    if per <= room {
        return Ok(());
    }
    let each = if generators > 1 {
        format!(" ({per} for each of {generators} load generators)")
    } else {
        String::new()
    };
    Err(format!(
        "{connections} connections{each} need more open files than this machine lets a process have: the limit is {limit}, of which {FD_RESERVE} are kept for fairbench itself (raise it with `ulimit -n`, or use fewer connections)"
    ))
}

/// A clap value parser: connections, 1 to [`MAX_CONNECTIONS`] (the
/// open-file limit is checked where the generators are known).
pub fn connections(s: &str) -> Result<usize, String> {
    at_most(super::positive_usize(s)?, MAX_CONNECTIONS as usize)
}

/// A clap value parser: requests in flight per connection, 1 to [`MAX_PIPELINE`].
pub fn pipeline(s: &str) -> Result<usize, String> {
    at_most(super::positive_usize(s)?, MAX_PIPELINE)
}

/// A clap value parser: load threads, 1 to [`MAX_THREADS`].
pub fn threads(s: &str) -> Result<usize, String> {
    at_most(super::positive_usize(s)?, MAX_THREADS)
}

/// A clap value parser: repetitions, 1 to [`MAX_REPETITIONS`].
pub fn repetitions(s: &str) -> Result<usize, String> {
    at_most(super::positive_usize(s)?, MAX_REPETITIONS)
}

/// `n`, or why it is above `max`.
pub fn at_most(n: usize, max: usize) -> Result<usize, String> {
    if n > max {
        return Err(format!("{n} is more than the most allowed, {max}"));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_are_bounded_by_the_open_file_limit_per_generator() {
        assert!(fit(1000, 1, 20_000).is_ok());
        assert!(fit(19_936, 1, 20_000).is_ok());
        let e = fit(19_937, 1, 20_000).unwrap_err();
        assert!(
            e.contains("the limit is 20000") && e.contains("ulimit -n"),
            "{e}"
        );
        // Split over generators, each needs its share only.
        assert!(fit(30_000, 2, 20_000).is_ok());
        let e = fit(60_000, 2, 20_000).unwrap_err();
        assert!(e.contains("30000 for each of 2"), "{e}");
        assert!(fit(usize::MAX, 1, 20_000).is_err());
        let e = fit(usize::MAX, 1, u64::MAX).unwrap_err();
        assert!(e.contains("most allowed, 1000000"), "{e}");
        assert!(open_file_limit() > FD_RESERVE);
    }

    #[test]
    fn counts_have_a_ceiling() {
        assert_eq!(threads("1024").unwrap(), 1024);
        assert!(threads("1025").unwrap_err().contains("most allowed, 1024"));
        assert!(repetitions("1G").is_err());
        assert!(connections("9223372036854775807").is_err());
        assert!(connections("10G").is_err());
        assert_eq!(connections("1M").unwrap(), 1_000_000);
        assert!(pipeline("1025").is_err());
    }
}
