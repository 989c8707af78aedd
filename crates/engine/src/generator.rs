//! What the load generator itself did during a run: the CPU it spent, how
//! busy and how contended its threads were, and whether the kernel timed
//! the answers' arrivals for it. Each is a way the generator, not the
//! server, could shape a figure, so each that did is said out loud.

use serde::{Deserialize, Serialize};

/// Hypervisor steal above this share of CPU time makes a result suspect.
pub const STEAL_WARN: f64 = 0.05;

/// A load thread that waited for its CPU this share of the window or more
/// was contended: something else ran there.
pub const CONTENDED: f64 = 0.05;

/// A load thread busy under this share of the window, not saturated and
/// not kept off its CPU, did not send late for its work.
const IDLE_BUSY: f64 = 0.5;

/// The machine stalled on memory this share of a run or more: not steady.
pub const MEMORY_STALL_WARN: f64 = 0.01;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Generator {
    /// User + system CPU seconds of the load threads during the measured
    /// window (warm-up and drain excluded).
    pub cpu_s: f64,
    /// The busiest load thread's share of the window that it was not waiting
    /// for events: on a CPU, or ready to run and waiting for one (a thread
    /// that shares its CPU is busy while it waits its turn).
    pub busy_fraction: f64,
    /// Each load thread's busy share, in thread order.
    #[serde(default)]
    pub thread_busy: Vec<f64>,
    /// The busiest thread above 90 %: the generator, not the server, may be
    /// the bottleneck.
    pub saturated: bool,
    /// The largest share of the window a load thread spent ready to run but
    /// waiting for its CPU (another process or thread on it).
    #[serde(default)]
    pub wait_fraction: f64,
    /// `wait_fraction` above `CONTENDED`: the generator shared its CPU,
    /// so what it offered (throughput, above all) is a lower bound.
    #[serde(default)]
    pub contended: bool,
    /// Share of the machine's CPU time the hypervisor stole during the run
    /// (/proc/stat), when readable. Above `STEAL_WARN` the numbers are not
    /// steady: the machine itself was being slowed from outside.
    pub steal_fraction: Option<f64>,
    /// Share of the run during which some task on the machine waited for
    /// memory (`/proc/pressure/memory`, PSI `some`), when the kernel says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_stall_fraction: Option<f64>,
    /// A constant rate over TCP whose answers came without the kernel's
    /// receive stamps (a kernel that refuses or ignores `SO_TIMESTAMPNS`):
    /// from the first such answer every answer woke its load thread and was
    /// timed when read, as in the closed loop. The count is of reads made
    /// late before that, each timed at its read: later than its bytes came.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unstamped: Option<u64>,
    /// A CPU quota on the load threads' control group (or an ancestor's:
    /// a container's, a CI runner's) paused them during the window; the
    /// group held off the CPUs longest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota_pause: Option<QuotaPause>,
    /// The generator's process did not run at all for stretches of the
    /// window (`crate::stall`): stopped, frozen or in a paused VM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stalled: Option<crate::stall::Stalled>,
}

/// How long a CPU quota paused the generator, and on which control group
/// it was set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuotaPause {
    /// The group's throttled time over the window: summed over the CPUs
    /// its threads were held off, so it can exceed the window (1.2–1.3 s
    /// of a 1 s window for two threads on two CPUs held to a fifth of one).
    pub throttled_s: f64,
    pub group: String,
}

impl Generator {
    /// The loud lines: each way the generator may have shaped the figures.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if self.saturated {
            w.push(format!(
                "load generator saturated: throughput is a lower bound (busiest load thread {:.0}% busy)",
                self.busy_fraction * 100.0
            ));
        }
        if self.contended {
            // The scheduler counts a quota's pause as waiting for a CPU.
            let why = match self.quota_pause {
                Some(_) => "its CPU quota paused it, or another process ran on its CPUs",
                // Over loopback, most often the server measured: unpinned,
                // it shares the generator's CPUs.
                None => "another process ran on the generator's CPUs: the server itself, if it runs on this machine without CPUs of its own",
            };
            w.push(format!(
                "a load thread waited for its CPU {:.0}% of the time ({why}): what it offered, throughput above all, is a lower bound, and latencies may include its own waits to run (an answer that came meanwhile was read, and in a closed loop timed, when it ran again)",
                self.wait_fraction * 100.0
            ));
        }
        if let Some(st) = self.steal_fraction.filter(|&f| f > STEAL_WARN) {
            w.push(format!(
                "the hypervisor stole {:.0}% of this machine's CPU time during the run (/proc/stat steal): server and generator were slowed from outside, so these figures are not steady; measure again when the host is quieter",
                st * 100.0
            ));
        }
        if let Some(m) = self
            .memory_stall_fraction
            .filter(|&f| f >= MEMORY_STALL_WARN)
        {
            w.push(format!(
                "the machine stalled on memory {:.1}% of the run (/proc/pressure/memory: some task waited for reclaim, a refault or swap-in): a host short of memory slows server and generator alike, and these figures are then not steady (measure again with memory to spare); a server held to too little memory of its own shows here too, and then this is what it did",
                m * 100.0
            ));
        }
        if let Some(q) = &self.quota_pause {
            w.push(format!(
                "a CPU quota paused the load generator: control group {} was held off the CPUs {:.3} s in all during the window (cpu.stat throttled time, summed over CPUs); paused, it sent and read nothing, so what it offered is a lower bound and latency includes its pauses; anything else in that group, a server started inside it too, paused with it",
                fairbench_sys::text::visible(&q.group),
                q.throttled_s,
            ));
        }
        w.extend(self.stalled.as_ref().map(crate::stall::Stalled::warning));
        if let Some(late) = self.unstamped {
            w.push(format!(
                "the kernel gave this run's TCP answers no receive stamps (SO_TIMESTAMPNS): answers woke the load threads and were timed when read, as in the closed loop, so each latency includes the generator's wake-up; {late} read late before that were timed at their read, later than they came"
            ));
        }
        w
    }

    /// Why a generator that sent late did, where its own books say: load
    /// threads mostly idle, neither saturated nor kept off their CPUs,
    /// paused or stopped, were woken late rather than busy (a virtual
    /// machine's timers and scheduler wake a sleeper a millisecond late
    /// now and then: send lateness p99 0.4–1.8 ms at 200–300 requests/s
    /// with the generator 2–3 % busy, on the machine of 2026-12-01).
    pub fn woken_late(&self) -> Option<String> {
        let idle = !self.saturated
            && !self.contended
            && self.quota_pause.is_none()
            && self.stalled.is_none()
            && self.busy_fraction < IDLE_BUSY;
        idle.then(|| {
            format!(
                "its busiest load thread was {:.0}% busy and not kept off its CPU, so the delay is in how late this machine woke it (its timers and scheduler, slower in a virtual machine), not in its work",
                self.busy_fraction * 100.0
            )
        })
    }

    /// Several generators' (or threads') quota pauses as one: the longest.
    pub(crate) fn merge_quota(
        parts: impl Iterator<Item = Option<QuotaPause>>,
    ) -> Option<QuotaPause> {
        parts
            .flatten()
            .reduce(|a, b| if b.throttled_s > a.throttled_s { b } else { a })
    }

    /// Several generators' (or threads') kernel stamps as one: missing if
    /// any missed them, the late reads summed.
    pub(crate) fn merge_unstamped(parts: impl Iterator<Item = Option<u64>>) -> Option<u64> {
        parts.flatten().reduce(|a, b| a + b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idle() -> Generator {
        Generator {
            cpu_s: 0.1,
            busy_fraction: 0.02,
            thread_busy: vec![0.02],
            saturated: false,
            wait_fraction: 0.001,
            contended: false,
            steal_fraction: None,
            memory_stall_fraction: None,
            unstamped: None,
            quota_pause: None,
            stalled: None,
        }
    }

    /// Late sends are put down to late wake-ups only when the generator's
    /// books rule out its work and its CPU.
    #[test]
    fn late_sends_of_an_idle_generator_are_its_wake_ups() {
        let g = idle();
        let said = g.woken_late().expect("idle and not kept off its CPU");
        assert!(
            said.starts_with("its busiest load thread was 2% busy"),
            "{said}"
        );
        let busy = Generator {
            busy_fraction: 0.7,
            ..idle()
        };
        assert_eq!(busy.woken_late(), None);
        let contended = Generator {
            wait_fraction: 0.2,
            contended: true,
            ..idle()
        };
        assert_eq!(contended.woken_late(), None);
        let paused = Generator {
            quota_pause: Some(QuotaPause {
                throttled_s: 0.5,
                group: "g".into(),
            }),
            ..idle()
        };
        assert_eq!(paused.woken_late(), None);
    }
}
