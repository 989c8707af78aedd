//! The tolerance rule of every assertion about time, in one place.
//!
//! A test that bounds a latency or a duration by what its deterministic
//! server was told to do must allow for what the machine adds: on a small
//! shared host the server's thread and the generator's wake up late while
//! the CPUs serve other work, and a bound tuned on a quiet machine fails on
//! a busy one (CI's machines differ from day to day). The allowance is
//! measured, never guessed:
//!
//! - from the run itself where it has a figure for it: the generator's own
//!   send lateness (how late its thread woke for due requests), which the
//!   engine measures at a constant rate;
//! - else from the machine, now: how late a thread that sleeps 1 ms wakes,
//!   measured over 200 sleeps ([`Slack::of_machine`]).
//!
//! The rule, for a figure whose fault-free value is `expected`:
//!
//! ```text
//! bound = expected + 2 ms + 4 × lateness p99
//! ```
//!
//! 2 ms covers a quiet machine's scheduling and timer noise; four times the
//! measured lateness covers the server's own late wake-ups (it runs on the
//! same CPUs, so it is late by about as much as the generator) and the
//! answer's wait for the generator's next wake-up. A test must still fail
//! when what it guards breaks: choose `expected` so that the fault's value
//! is above `bound` on a quiet machine (the tests say by how much), or
//! assert a property instead of a count a schedule happens to produce.

use std::time::{Duration, Instant};

/// The slack a timing assertion allows: see the module doc.
#[derive(Clone, Copy, Debug)]
pub struct Slack {
    /// The lateness the bound allows for, µs (a p99).
    pub late_us: u64,
}

impl Slack {
    /// From a run's own send lateness p99 (µs), as the engine measured it.
    pub fn of_run(late_p99_us: u64) -> Slack {
        Slack {
            late_us: late_p99_us,
        }
    }

    /// This machine's wake-up lateness now: the p99 of how much later than
    /// asked a thread woke from 200 sleeps of 1 ms (about 0.25 s).
    pub fn of_machine() -> Slack {
        let mut late: Vec<u64> = (0..200)
            .map(|_| {
                let t = Instant::now();
                std::thread::sleep(Duration::from_millis(1));
                (t.elapsed().as_micros() as u64).saturating_sub(1_000)
            })
            .collect();
        late.sort_unstable();
        Slack {
            late_us: late[late.len() * 99 / 100],
        }
    }

    /// The most a figure whose fault-free value is `expected_us` may show.
    pub fn above(&self, expected_us: u64) -> u64 {
        expected_us + 2_000 + 4 * self.late_us
    }

    /// [`Slack::above`] for durations.
    pub fn above_duration(&self, expected: Duration) -> Duration {
        Duration::from_micros(self.above(expected.as_micros() as u64))
    }
}

impl std::fmt::Display for Slack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "bound: 2 ms + 4 × lateness p99 {} µs above the expected",
            self.late_us
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_is_the_expected_plus_two_ms_and_four_times_the_lateness() {
        assert_eq!(Slack::of_run(0).above(12_000), 14_000);
        assert_eq!(Slack::of_run(500).above(12_000), 16_000);
        assert_eq!(
            Slack::of_run(250).above_duration(Duration::from_millis(1)),
            Duration::from_millis(4)
        );
    }
}
