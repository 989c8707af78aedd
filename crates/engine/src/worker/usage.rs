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
    pub(super) run: Nanos,
    pub(super) wait: Nanos,
    pub(super) throttled: Throttled,
}

impl Usage {
    /// Now, with the thread's paused time so far (a few small reads, none
    /// where there is no CPU controller).
    pub fn now(quota: &mut QuotaWatch) -> Usage {
        let (run, wait) = clock::thread_sched();
        Usage {
            at: clock::now(),
            cpu: clock::thread_cpu(),
            run,
            wait,
            throttled: quota.look(),
        }
    }
}
