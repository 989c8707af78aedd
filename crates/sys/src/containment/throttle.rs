//! Whether a CPU quota paused a thread: the throttled time of its control
//! group's CPU controller (`cpu.stat`: `throttled_time`, ns, in v1;
//! `throttled_usec` in v2) and of every ancestor's, for a quota set on a
//! container or a CI runner's slice above it bites there.
//!
//! A thread whose group ran out of quota is taken off the CPU until the
//! next period: it is not waiting for a CPU (the scheduler's run delay need
//! not count it), and it is not busy, so nothing else a load generator
//! measures of itself shows the pause, yet every request it should have
//! sent then goes out late and every answer waits to be read. Everything
//! in that group pauses together (a server started inside it too).

use std::path::PathBuf;

use super::mounts::{Hierarchies, Version};
use super::{Group, Method, Purpose};

/// One reading of the throttled time (ns) of a thread's group and of each
/// ancestor whose `cpu.stat` says it.
#[derive(Debug, Clone, Default)]
pub struct Throttled(Vec<(PathBuf, u64)>);

impl Throttled {
    /// The calling thread's, now; empty where there is no CPU controller to
    /// read (no control groups mounted, none with `cpu`).
    pub fn of_this_thread() -> Throttled {
        let Ok(h) = Hierarchies::detect_from("/proc/thread-self/cgroup") else {
            return Throttled::default();
        };
        let dir = h
            .list
            .iter()
            .find(|x| h.version == Version::V2 || x.has("cpu"))
            .map(|x| x.parent.clone());
        Throttled::from_dir(dir)
    }

    /// The group at `dir` and its ancestors, read now.
    pub fn from_dir(dir: Option<PathBuf>) -> Throttled {
        let mut out = Vec::new();
        let mut at = dir;
        while let Some(d) = at.filter(|d| d.join("cpu.stat").exists()) {
            at = d.parent().map(PathBuf::from);
            out.extend(read(d));
        }
        Throttled(out)
    }

    /// The same groups, read again now.
    pub fn again(&self) -> Throttled {
        Throttled(self.0.iter().filter_map(|(d, _)| read(d.clone())).collect())
    }

    /// How long the quota that bit hardest paused the group between
    /// `earlier` and this reading (ns), and the group it was set on; `None`
    /// when no group was throttled. Both are readings of the same groups,
    /// or totals of one [`QuotaWatch`], where a group the earlier one lacks
    /// was entered since, its total counted from zero.
    pub fn since(&self, earlier: &Throttled) -> Option<(u64, PathBuf)> {
        self.0
            .iter()
            .map(|(d, ns)| {
                let before = earlier.0.iter().find(|(e, _)| e == d).map_or(0, |x| x.1);
                (ns.saturating_sub(before), d.clone())
            })
            .filter(|(ns, _)| *ns > 0)
            .max_by_key(|(ns, _)| *ns)
    }
}

/// A thread's pauses under CPU quotas since the watch began, following it
/// into whatever groups it is moved to: each [`QuotaWatch::look`] reads
/// the groups it is in then, and adds to each group's total what its
/// counter gained since the last look that saw it. A thread moved after it
/// started (an orchestrator placing a running process) is then still seen
/// paused; it loses at most its new group's pauses between the move and the
/// next look.
#[derive(Debug, Clone, Default)]
pub struct QuotaWatch {
    /// `/proc/thread-self/cgroup` as last read: the groups are detected
    /// again (mountinfo read) only when it changed.
    placement: String,
    last: Throttled,
    total: Throttled,
}

impl QuotaWatch {
    /// The calling thread's, from now.
    pub fn of_this_thread() -> QuotaWatch {
        let mut w = QuotaWatch::default();
        w.look();
        w
    }

    /// Reads the watched thread's groups again (on that thread); the
    /// totals so far, one per group it has been seen in.
    pub fn look(&mut self) -> Throttled {
        let placement = std::fs::read_to_string("/proc/thread-self/cgroup").unwrap_or_default();
        let now = if placement == self.placement {
            self.last.again()
        } else {
            Throttled::of_this_thread()
        };
        self.placement = placement;
        for (d, ns) in &now.0 {
            let gained =
                (self.last.0.iter().find(|(e, _)| e == d)).map_or(0, |x| ns.saturating_sub(x.1));
            match self.total.0.iter_mut().find(|(e, _)| e == d) {
                Some((_, t)) => *t += gained,
                None => self.total.0.push((d.clone(), gained)),
            }
        }
        self.last = now;
        self.total.clone()
    }
}

/// A new control group whose CPU quota holds the threads placed in it to
/// `quota_us` of CPU per `period_us`, and its cpu directory: where a cgroup
/// v1 cpu controller lets single threads be placed, `None` elsewhere (v2
/// keeps a process's threads together; no control groups here). What the
/// tests of a quota's pauses place their threads in.
pub fn quota_group(period_us: u64, quota_us: u64) -> Option<(Group, PathBuf)> {
    let g = super::create(Purpose::Server, None).ok()?;
    let cpu = (g.paths().into_iter())
        .find(|p| p.join("cpu.cfs_quota_us").exists())
        .filter(|_| g.method() == Method::CgroupV1);
    let set = cpu.as_ref().map(|c| {
        std::fs::write(c.join("cpu.cfs_period_us"), period_us.to_string())
            .and_then(|()| std::fs::write(c.join("cpu.cfs_quota_us"), quota_us.to_string()))
    });
    match (cpu, set) {
        (Some(c), Some(Ok(()))) => Some((g, c)),
        _ => {
            let _ = g.remove();
            None
        }
    }
}

/// Group `dir`'s throttled time now, when its `cpu.stat` says it.
fn read(dir: PathBuf) -> Option<(PathBuf, u64)> {
    let text = std::fs::read_to_string(dir.join("cpu.stat")).ok()?;
    Some((dir, throttled_ns(&text)?))
}

/// `throttled_time` (v1, ns) or `throttled_usec` (v2) of a cpu.stat text.
fn throttled_ns(text: &str) -> Option<u64> {
    text.lines().find_map(|line| match line.split_once(' ')? {
        ("throttled_time", v) => v.trim().parse().ok(),
        ("throttled_usec", v) => v.trim().parse::<u64>().ok().map(|us| us * 1_000),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_versions_of_cpu_stat_are_read_in_nanoseconds() {
        let v1 = "nr_periods 40\nnr_throttled 12\nthrottled_time 345000000\nnr_bursts 0\n";
        assert_eq!(throttled_ns(v1), Some(345_000_000));
        let v2 = "usage_usec 100\nnr_throttled 3\nthrottled_usec 2500\n";
        assert_eq!(throttled_ns(v2), Some(2_500_000));
        // v2 without the cpu controller enabled: no throttling to read.
        assert_eq!(throttled_ns("usage_usec 100\nuser_usec 60\n"), None);
    }

    #[test]
    fn a_thread_held_to_a_quota_is_seen_throttled() {
        use std::time::{Duration, Instant};
        // 1 ms of CPU per 10 ms period: a thread that spins is paused for
        // most of each period.
        let Some((g, cpu)) = quota_group(10_000, 1_000) else {
            eprintln!("skipped: no cgroup v1 cpu controller to place a thread under");
            return;
        };
        let (before, after) = std::thread::scope(|s| {
            s.spawn(|| {
                // SAFETY: gettid has no preconditions.
                let tid = unsafe { libc::gettid() } as u32;
                g.add_thread(tid).unwrap();
                let before = Throttled::of_this_thread();
                let t = Instant::now();
                while t.elapsed() < Duration::from_millis(300) {
                    std::hint::spin_loop();
                }
                (before.clone(), before.again())
            })
            .join()
            .unwrap()
        });
        let seen = after.since(&before);
        let _ = g.remove();
        let (ns, dir) = seen.expect("the quota's pauses are seen");
        // About 270 ms of the 300; a loaded machine runs the thread less.
        assert!(ns >= 20_000_000, "throttled {ns} ns");
        assert_eq!(dir, cpu);
    }

    #[test]
    fn the_hardest_bitten_group_is_the_one_reported() {
        let at = |v: &[(&str, u64)]| {
            Throttled(v.iter().map(|(d, ns)| (PathBuf::from(d), *ns)).collect())
        };
        let before = at(&[("/g/child", 10), ("/g", 100)]);
        let after = at(&[("/g/child", 15), ("/g", 400)]);
        assert_eq!(after.since(&before), Some((300, PathBuf::from("/g"))));
        assert_eq!(before.since(&before), None);
        assert_eq!(Throttled::default().since(&before), None);
        // A group entered since the earlier total counts from zero.
        let moved = at(&[("/g/child", 15), ("/g", 100), ("/h", 50)]);
        assert_eq!(moved.since(&before), Some((50, PathBuf::from("/h"))));
    }

    #[test]
    fn a_thread_moved_under_a_quota_after_the_watch_began_is_seen_paused() {
        use std::time::{Duration, Instant};
        let Some((g, cpu)) = quota_group(10_000, 1_000) else {
            eprintln!("skipped: no cgroup v1 cpu controller to place a thread under");
            return;
        };
        let (start, end) = std::thread::scope(|s| {
            s.spawn(|| {
                let mut watch = QuotaWatch::of_this_thread();
                let start = watch.look();
                // SAFETY: gettid has no preconditions.
                let tid = unsafe { libc::gettid() } as u32;
                g.add_thread(tid).unwrap();
                // The next look finds the new group and counts from then
                // (its earlier pauses were other threads'), as a load
                // thread's once-a-second look does.
                watch.look();
                let t = Instant::now();
                while t.elapsed() < Duration::from_millis(300) {
                    std::hint::spin_loop();
                }
                (start, watch.look())
            })
            .join()
            .unwrap()
        });
        let _ = g.remove();
        let (ns, dir) = end
            .since(&start)
            .expect("the pauses after the move are seen");
        assert!(ns >= 20_000_000, "throttled {ns} ns");
        assert_eq!(dir, cpu);
    }
}
