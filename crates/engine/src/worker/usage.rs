//! What a load thread cost itself, read at the window's start and
//! end (see `books::generator`).

use fairbench_sys::containment::throttle::{QuotaWatch, Throttled};

use crate::clock::{self, Nanos};

/// Thread CPU and scheduler figures at one instant, and how long a CPU
/// quota had paused its control group (see [`Throttled`]).
#[derive(Clone)]
pub(crate) struct Usage {
    pub at: Nanos,
    pub(super) cpu: Nanos,
    pub(super) wait: Nanos,
    pub(super) throttled: Throttled,
}

impl Usage {
    /// Now, with the thread's paused time so far (a few small reads, none
    /// where there is no CPU controller).
    pub fn now(quota: &mut QuotaWatch) -> Usage {
        Usage {
            at: clock::now(),
            cpu: clock::thread_cpu(),
            wait: clock::thread_wait(),
            throttled: quota.look(),
        }
    }
}

#[cfg(test)]
mod tests {
    use fairbench_sys::containment::throttle::QuotaWatch;

    use super::Usage;

    #[test]
    fn a_short_window_after_work_is_not_charged_the_work() {
        // Spinning leaves the scheduler's own count of the thread's time on
        // the CPU a tick behind; a window of a few idle milliseconds read
        // with it was up to 100 % busy.
        let t = std::time::Instant::now();
        while t.elapsed() < std::time::Duration::from_millis(50) {
            std::hint::spin_loop();
        }
        let mut quota = QuotaWatch::default();
        let from = Usage::now(&mut quota);
        std::thread::sleep(std::time::Duration::from_millis(3));
        let g = super::super::books::generator(from, Usage::now(&mut quota));
        // Waiting for a CPU after the sleep is busy; the work before it is
        // not.
        assert!(g.busy_fraction - g.wait_fraction < 0.5, "{g:?}");
    }

    #[test]
    fn saturation_and_contention_are_judged_over_fifty_milliseconds_or_more() {
        let at = |ms: u64, wait_ms: u64| Usage {
            at: ms * 1_000_000,
            cpu: 0,
            wait: wait_ms * 1_000_000,
            throttled: Default::default(),
        };
        let short = super::super::books::generator(at(0, 0), at(3, 3));
        assert!(short.busy_fraction > 0.9 && !short.saturated && !short.contended);
        let long = super::super::books::generator(at(0, 0), at(100, 99));
        assert!(long.saturated && long.contended, "{long:?}");
    }
}
