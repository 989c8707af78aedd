//! What else ran on a case's CPUs: the CPU time the kernel counts on those
//! CPUs (/proc/stat, per CPU) less what the server's processes and this
//! fairbench (the in-process load generator) used there. Another
//! benchmark, a build or a cron job on the same cores takes time from the
//! server or the generator, and must not go unnoticed: past
//! [`NOTABLE_SHARE`] of the CPUs' time the case is stored with a warning.

use std::time::Instant;

/// Above this share of the CPUs' time, others' use is warned about. Below
/// it: kernel threads, the sampler, a terminal — the noise of any machine.
pub const NOTABLE_SHARE: f64 = 0.05;

/// Counters at one moment.
#[derive(Debug, Clone, Copy)]
pub struct BusySnapshot {
    /// user + nice + system ticks summed over the CPUs watched (interrupt
    /// and softirq time is the network's work for the load itself, and is
    /// not counted to any process).
    cpus_ticks: u64,
    /// This process's user + system ticks (all its threads) and those of
    /// the children it has waited for (load agents, once a load ends).
    own_ticks: u64,
    at: Instant,
}

/// What others used between two snapshots.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Others {
    /// CPU seconds used by processes other than the server and fairbench.
    pub cpu_s: f64,
    /// That as a share of the watched CPUs' time.
    pub share: f64,
    /// The seconds between the snapshots.
    pub elapsed_s: f64,
}

/// The CPUs' and this process's counters now; `None` where /proc cannot
/// tell (not Linux, or a CPU missing).
pub fn snapshot(cpus: &[usize]) -> Option<BusySnapshot> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let own = std::fs::read_to_string("/proc/self/stat").ok()?;
    let own = fairbench_sys::procfs::Stat::parse(&own)?;
    Some(BusySnapshot {
        cpus_ticks: cpus_ticks(&stat, cpus)?,
        own_ticks: own.num(11) + own.num(12) + own.num(13) + own.num(14),
        at: Instant::now(),
    })
}

/// Sums user, nice and system of the `cpuN` lines named.
fn cpus_ticks(stat: &str, cpus: &[usize]) -> Option<u64> {
    let mut total = 0;
    for &c in cpus {
        let name = format!("cpu{c}");
        let line = stat
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name.as_str()))?;
        let f: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .take(3)
            .map(|v| v.parse().unwrap_or(0))
            .collect();
        total += f.iter().sum::<u64>();
    }
    Some(total)
}

/// Others' use of `n_cpus` CPUs between `a` and `b`, given the server's
/// CPU seconds over the same time; `clk_tck` ticks a second.
pub fn others(
    a: &BusySnapshot,
    b: &BusySnapshot,
    server_cpu_s: f64,
    n_cpus: usize,
    clk_tck: f64,
) -> Others {
    let ticks = b.cpus_ticks.saturating_sub(a.cpus_ticks) as f64;
    let own = b.own_ticks.saturating_sub(a.own_ticks) as f64;
    let cpu_s = ((ticks - own) / clk_tck - server_cpu_s).max(0.0);
    let elapsed_s = b.at.duration_since(a.at).as_secs_f64();
    let wall = elapsed_s * n_cpus.max(1) as f64;
    Others {
        cpu_s,
        share: if wall > 0.0 { cpu_s / wall } else { 0.0 },
        elapsed_s,
    }
}

impl Others {
    /// The warning stored with the case, when others' share is notable.
    /// `server` is the server's own CPUs, when they are fewer than those
    /// watched, and how many: what others took may all have been the
    /// server's, and its share of them is then larger than the pooled one
    /// (the split per CPU is not known: /proc/stat counts CPUs, not whose
    /// time it was).
    pub fn warning(&self, cpus: &str, server: Option<(&str, usize)>) -> Option<String> {
        (self.share > NOTABLE_SHARE).then(|| {
            let worst = match server {
                Some((label, n)) if n > 0 && self.elapsed_s > 0.0 => {
                    let of_server = (self.cpu_s / (self.elapsed_s * n as f64)).min(1.0);
                    format!(
                        "; had it all run on the server's CPU{} {label}, that was {:.0}% of {}",
                        if n > 1 { "s" } else { "" },
                        of_server * 100.0,
                        if n > 1 { "them" } else { "it" }
                    )
                }
                _ => String::new(),
            };
            format!(
                "other processes used {:.0}% of CPUs {cpus} during the case ({:.1} CPU-s besides the server and the load{worst}): another benchmark, a build or a job shared the cores",
                self.share * 100.0,
                self.cpu_s
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const STAT: &str = "cpu  10 0 10 100 0 0 0 0 0 0\ncpu0 5 1 4 50 0 9 9 0 0 0\ncpu1 5 0 6 50 0 0 0 0 0 0\nintr 1 2\n";

    #[test]
    fn sums_user_nice_system_of_the_cpus_named() {
        assert_eq!(cpus_ticks(STAT, &[0]), Some(10));
        assert_eq!(cpus_ticks(STAT, &[0, 1]), Some(21));
        assert_eq!(cpus_ticks(STAT, &[2]), None);
    }

    #[test]
    fn others_are_what_neither_server_nor_fairbench_used() {
        let t = Instant::now();
        let a = BusySnapshot {
            cpus_ticks: 1000,
            own_ticks: 50,
            at: t,
        };
        let b = BusySnapshot {
            cpus_ticks: 1300,
            own_ticks: 100,
            at: t + Duration::from_secs(2),
        };
        // 300 ticks = 3 s on the CPUs; 0.5 s ours, 1.5 s the server's.
        let o = others(&a, &b, 1.5, 2, 100.0);
        assert!((o.cpu_s - 1.0).abs() < 1e-9, "{o:?}");
        assert!((o.share - 0.25).abs() < 1e-9, "{o:?}");
        let w = o.warning("0-1", None).unwrap();
        assert!(
            w.contains(
                "25% of CPUs 0-1 during the case (1.0 CPU-s besides the server and the load)"
            ),
            "{w}"
        );
        // 1 CPU-s of 2 s on the server's one CPU: half of it, at worst.
        let w = o.warning("0-1", Some(("1", 1))).unwrap();
        assert!(
            w.contains("load; had it all run on the server's CPU 1, that was 50% of it)"),
            "{w}"
        );
        let quiet = others(&a, &b, 2.45, 2, 100.0);
        assert!(quiet.warning("0-1", Some(("1", 1))).is_none(), "{quiet:?}");
    }

    #[test]
    fn snapshots_read_this_machine_and_count_this_process() {
        let cpus = super::super::allowed_cpus();
        let a = snapshot(&cpus).unwrap();
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed() < Duration::from_millis(300) {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        let b = snapshot(&cpus).unwrap();
        assert!(b.own_ticks > a.own_ticks && x > 0, "{a:?} {b:?}");
        assert!(b.cpus_ticks > a.cpus_ticks, "{a:?} {b:?}");
    }
}
