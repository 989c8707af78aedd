//! Resource use of a server's whole process tree, read from /proc.
//!
//! The tree is the server's process group (fairbench starts every server as
//! a group leader), so cluster workers, isolates' helper processes and JIT
//! compiler threads are all counted.

use std::time::Instant;

#[derive(Debug, Clone, Copy, Default)]
pub struct TreeSample {
    /// User + system CPU seconds consumed so far by the tree (reaped children
    /// included through the leader's cumulative counters).
    pub cpu_s: f64,
    pub rss_bytes: u64,
    pub threads: u64,
}

pub struct TreeSampler {
    pgid: i32,
    leader: u32,
    ticks_per_s: f64,
    page: u64,
    last: Option<(Instant, TreeSample)>,
}

impl TreeSampler {
    pub fn new(leader: u32) -> TreeSampler {
        // SAFETY: sysconf has no preconditions.
        let (tck, page) = unsafe {
            (
                libc::sysconf(libc::_SC_CLK_TCK),
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        TreeSampler {
            pgid: leader as i32,
            leader,
            ticks_per_s: if tck > 0 { tck as f64 } else { 100.0 },
            page: if page > 0 { page as u64 } else { 4096 },
            last: None,
        }
    }

    pub fn sample(&self) -> TreeSample {
        let mut s = TreeSample::default();
        let mut ticks = 0u64;
        for pid in fairbench_zoo::process::group_members(self.pgid) {
            let Some(f) = stat_fields(pid) else { continue };
            // Fields from `state` on (1-based in proc(5) minus 2): utime 11, stime 12,
            // cutime 13, cstime 14, num_threads 17, rss 21.
            let get = |i: usize| {
                f.get(i)
                    .and_then(|v| v.parse::<i64>().ok())
                    .unwrap_or(0)
                    .max(0) as u64
            };
            ticks += get(11) + get(12);
            if pid == self.leader {
                ticks += get(13) + get(14);
            }
            s.threads += get(17);
            s.rss_bytes += get(21) * self.page;
        }
        s.cpu_s = ticks as f64 / self.ticks_per_s;
        s
    }

    /// A sample plus the cores in use since the previous call.
    pub fn tick(&mut self) -> (TreeSample, Option<f64>) {
        let now = Instant::now();
        let s = self.sample();
        let cores = self.last.map(|(t, prev)| {
            let dt = now.duration_since(t).as_secs_f64();
            if dt > 0.0 {
                ((s.cpu_s - prev.cpu_s) / dt).max(0.0)
            } else {
                0.0
            }
        });
        self.last = Some((now, s));
        (s, cores)
    }
}

fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    Some(rest.split_whitespace().map(str::to_string).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_a_busy_child_group() {
        use std::os::unix::process::CommandExt;
        // A group of its own that burns CPU for a bounded time.
        let mut child = std::process::Command::new("sh")
            .args([
                "-c",
                "end=$(($(date +%s)+3)); while [ $(date +%s) -lt $end ]; do :; done",
            ])
            .process_group(0)
            .spawn()
            .unwrap();
        let mut s = TreeSampler::new(child.id());
        s.tick();
        std::thread::sleep(std::time::Duration::from_millis(1200));
        let (sample, cores) = s.tick();
        let _ = child.kill();
        let _ = child.wait();
        assert!(sample.threads >= 1);
        assert!(sample.rss_bytes > 0);
        let cores = cores.unwrap();
        assert!(
            cores > 0.3 && cores < 1.5,
            "a busy loop uses about one core: {cores}"
        );
    }
}
