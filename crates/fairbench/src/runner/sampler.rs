//! Resource use of a server's whole process tree, read from /proc on the
//! server's host.
//!
//! The tree is the server's process group (fairbench starts every server as
//! a group leader), so cluster workers, isolates' helper processes and JIT
//! compiler threads are all counted.

use std::time::Instant;

use crate::host::Host;

#[derive(Debug, Clone, Copy, Default)]
pub struct TreeSample {
    /// User + system CPU seconds consumed so far by the tree (reaped children
    /// included through the leader's cumulative counters).
    pub cpu_s: f64,
    pub rss_bytes: u64,
    pub threads: u64,
}

pub struct TreeSampler {
    host: Host,
    pgid: i32,
    leader: u32,
    ticks_per_s: f64,
    page: u64,
    last: Option<Instant>,
}

impl TreeSampler {
    /// Samples the process group led by `leader` on `host` (its /proc there).
    pub fn new(host: Host, leader: u32) -> TreeSampler {
        let info = host.info();
        TreeSampler {
            host,
            pgid: leader as i32,
            leader,
            ticks_per_s: if info.clk_tck > 0.0 {
                info.clk_tck
            } else {
                100.0
            },
            page: info.page_size.max(1),
            last: None,
        }
    }

    pub fn sample(&self) -> TreeSample {
        let mut s = TreeSample::default();
        let mut ticks = 0u64;
        for f in self.host.group_stats(self.pgid) {
            // Fields from `state` on (1-based in proc(5) minus 2): utime 11, stime 12,
            // cutime 13, cstime 14, num_threads 17, rss 21.
            ticks += f.num(11) + f.num(12);
            if f.pid == self.leader {
                ticks += f.num(13) + f.num(14);
            }
            s.threads += f.num(17);
            s.rss_bytes += f.num(21) * self.page;
        }
        s.cpu_s = ticks as f64 / self.ticks_per_s;
        s
    }

    /// A sample plus the wall seconds since the previous call's.
    pub fn tick(&mut self) -> (TreeSample, Option<f64>) {
        let now = Instant::now();
        let s = self.sample();
        let gap = self
            .last
            .map(|t| now.duration_since(t).as_secs_f64())
            .filter(|&g| g > 0.0);
        self.last = Some(now);
        (s, gap)
    }
}

/// Readings (and intervals: the last, cut by the end of the run) shorter
/// than this are too short to say how many cores were busy.
const CORES_AT_LEAST_S: f64 = 0.5;

/// The cores kept busy between two readings `gap_s` apart that saw
/// `busy_s` of CPU used, for an interval of `interval_s`:
///
/// ```text
/// cores = busy_s / gap_s      when gap_s and interval_s ≥ CORES_AT_LEAST_S
/// ```
///
/// The divisor is the readings' own gap, not the interval's nominal
/// length: a reading made late (its observer runs on a busy machine)
/// holds the CPU of the longer gap, and over the nominal second a server
/// held to one CPU would read 1.3 cores.
pub fn cores_between(busy_s: f64, gap_s: Option<f64>, interval_s: f64) -> Option<f64> {
    let gap = gap_s?;
    (gap.min(interval_s) >= CORES_AT_LEAST_S).then(|| busy_s.max(0.0) / gap)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cores_are_the_cpu_over_the_readings_gap_not_the_nominal_interval() {
        // One CPU kept busy, read 0.3 s late: one core, not 1.3.
        assert_eq!(cores_between(1.3, Some(1.3), 1.0), Some(1.0));
        // The next reading on time after a late one: a short gap, still one.
        assert_eq!(cores_between(0.7, Some(0.7), 1.0), Some(1.0));
        // Too short a gap or interval to say.
        assert_eq!(cores_between(0.1, Some(0.1), 1.0), None);
        assert_eq!(cores_between(0.3, Some(1.0), 0.3), None);
        assert_eq!(cores_between(1.0, None, 1.0), None);
    }

    #[test]
    fn counts_the_cpu_time_of_a_child_group() {
        use std::os::unix::process::CommandExt;
        // A group of its own whose child burns a fixed amount of CPU time
        // (0.3 s, measured by its own process clock) and then idles: the
        // total is the same however slowly a stolen-from VM runs it.
        let mut child = std::process::Command::new("sh")
            .args([
                "-c",
                "python3 -c 'import time\nwhile time.process_time() < 0.3: pass\ntime.sleep(30)' & wait",
            ])
            .process_group(0)
            .spawn()
            .unwrap();
        let s = TreeSampler::new(Host::Local, child.id());
        let t = std::time::Instant::now();
        let mut sample = s.sample();
        while sample.cpu_s < 0.29 && t.elapsed() < std::time::Duration::from_secs(30) {
            std::thread::sleep(std::time::Duration::from_millis(100));
            sample = s.sample();
        }
        let _ = unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
        let _ = child.wait();
        // The burner is a child of the group's leader: found through the group.
        assert!(sample.cpu_s >= 0.29, "CPU of the group: {} s", sample.cpu_s);
        assert!(sample.cpu_s < 3.0, "CPU of the group: {} s", sample.cpu_s);
        assert!(sample.threads >= 2, "sh and python: {}", sample.threads);
        assert!(sample.rss_bytes > 0);
    }
}
