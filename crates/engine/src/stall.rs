//! The generator's own stalls: stretches in which its process did not run
//! at all, neither on a CPU nor waiting for one.
//!
//! A process stopped (SIGSTOP, a debugger), frozen with its control group
//! (the cgroup freezer, a paused container) or held in a paused virtual
//! machine reads nothing meanwhile. Answers that came wait unread in its
//! sockets and are charged the pause as latency, and a closed loop's
//! silence (`crate::silence`) is then the generator's, not the server's.
//! The scheduler's books count that time nowhere: not as CPU, not as
//! waiting for one (`/proc/thread-self/schedstat`, which the contention
//! figures read). So a watch thread sleeps [`TICK`] at a time, and a
//! wake-up later than that by [`MIN_STALL`] or more, less what the watch
//! itself waited for a CPU meanwhile (contention, which is said apart, and
//! a CPU quota's pause, which Linux counts as such a wait), is a stall.
//! Its cost: 200 wake-ups a second of a few µs each, about 0.1 % of a CPU.
//! The watch is placed as the load threads are (their control group, their
//! CPUs): it takes nothing from a server's CPUs, and a pause of the load
//! threads' group is a pause of the watch too.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::clock::{self, Nanos, NANOS_PER_SEC};

/// How long the watch sleeps between looks at the clock.
const TICK: Duration = Duration::from_millis(5);

/// The shortest stall kept: far above a sleeper's wake-up delay on a busy
/// machine (which the run-queue wait, subtracted, mostly holds anyway).
pub const MIN_STALL: Nanos = 50_000_000;

/// Stalls kept; a generator stopped that often has told its story.
const MAX_STALLS: usize = 4096;

/// The generator's stalls in a run's window: how many, how long in all,
/// the longest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stalled {
    pub count: u64,
    pub total_s: f64,
    pub longest_s: f64,
}

impl Stalled {
    /// The stalls of `spans` (each `[from, to)`), `None` without one.
    pub fn of(spans: &[[Nanos; 2]]) -> Option<Stalled> {
        let secs = |s: &[Nanos; 2]| (s[1] - s[0]) as f64 / NANOS_PER_SEC as f64;
        (!spans.is_empty()).then(|| Stalled {
            count: spans.len() as u64,
            total_s: spans.iter().map(secs).sum(),
            longest_s: spans.iter().map(secs).fold(0.0, f64::max),
        })
    }

    /// Several generators' stalls as one: the one stalled longest.
    pub(crate) fn merge(parts: impl Iterator<Item = Option<Stalled>>) -> Option<Stalled> {
        parts
            .flatten()
            .reduce(|a, b| if b.total_s > a.total_s { b } else { a })
    }

    /// The loud line.
    pub fn warning(&self) -> String {
        format!(
            "the load generator did not run at all for {:.3} s of the window ({} stretch{} of {} ms or more, the longest {:.3} s), neither on a CPU nor waiting for one: it was stopped, frozen with its control group, or its virtual machine was paused. Answers that came meanwhile waited unread and are charged that wait as latency, and what it offered is a lower bound: measure again with the generator left running",
            self.total_s,
            self.count,
            if self.count == 1 { "" } else { "es" },
            MIN_STALL / 1_000_000,
            self.longest_s
        )
    }
}

/// The watch thread of one run.
pub(crate) struct StallWatch {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Vec<[Nanos; 2]>>>,
}

impl StallWatch {
    /// Starts watching, placed by `place` as the load threads are, where
    /// the kernel keeps the scheduler's books (else a run-queue wait could
    /// not be told from a stall, and nothing is claimed). A watch that
    /// cannot be placed claims nothing either: the load threads, placed
    /// the same way, void the run.
    pub(crate) fn start<P>(place: P) -> StallWatch
    where
        P: FnOnce() -> Result<(), String> + Send + 'static,
    {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("fairbench-stall".into())
            .spawn(move || {
                if place().is_err() {
                    return Vec::new();
                }
                match File::open("/proc/thread-self/schedstat") {
                    Ok(books) => watch(&flag, &books),
                    Err(_) => Vec::new(),
                }
            })
            .ok();
        StallWatch { stop, handle }
    }

    /// The stalls seen since the start, `[from, to)` on the engine's clock.
    pub(crate) fn finish(mut self) -> Vec<[Nanos; 2]> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for StallWatch {
    /// Waits out the watch's last tick: it is in the load threads' control
    /// group, which cannot be removed while it runs there.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn watch(stop: &AtomicBool, books: &File) -> Vec<[Nanos; 2]> {
    let tick = TICK.as_nanos() as Nanos;
    let mut out = Vec::new();
    while !stop.load(Ordering::Relaxed) && out.len() < MAX_STALLS {
        let (before, waited) = (clock::now(), run_delay(books));
        std::thread::sleep(TICK);
        let after = clock::now();
        let late = after.saturating_sub(before + tick);
        if late >= MIN_STALL {
            let held = run_delay(books).saturating_sub(waited);
            if late.saturating_sub(held) >= MIN_STALL {
                out.push([before + tick, after]);
            }
        }
    }
    out
}

/// The thread's time ready to run but waiting for a CPU, ns: the second
/// field of its schedstat.
fn run_delay(books: &File) -> Nanos {
    let mut buf = [0u8; 96];
    let n = books.read_at(&mut buf, 0).unwrap_or(0);
    std::str::from_utf8(&buf[..n])
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

/// `spans` (absolute, sorted) clipped to the window `[start, end)` and
/// made relative to its start, as `crate::silence` counts.
pub(crate) fn in_window(spans: &[[Nanos; 2]], start: Nanos, end: Nanos) -> Vec<[u64; 2]> {
    spans
        .iter()
        .map(|s| [s[0].max(start), s[1].min(end)])
        .filter(|s| s[1] > s[0])
        .map(|s| [s[0] - start, s[1] - start])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stalls_are_summed_and_clipped_to_the_window() {
        let s = Stalled::of(&[[0, 100_000_000], [200_000_000, 500_000_000]]).unwrap();
        assert_eq!(s.count, 2);
        assert!((s.total_s - 0.4).abs() < 1e-9 && (s.longest_s - 0.3).abs() < 1e-9);
        assert!(s.warning().contains("0.400 s of the window (2 stretches"));
        assert_eq!(Stalled::of(&[]), None);
        let w = in_window(&[[50, 150], [300, 400], [900, 1200]], 100, 1000);
        assert_eq!(w, vec![[0, 50], [200, 300], [800, 900]]);
    }

    /// A watch that cannot read the scheduler's books sees no stall, and
    /// the run-queue wait is read as a number.
    #[test]
    fn the_books_are_read() {
        let f = File::open("/proc/thread-self/schedstat").unwrap();
        let a = run_delay(&f);
        std::thread::sleep(Duration::from_millis(1));
        assert!(run_delay(&f) >= a);
    }
}
