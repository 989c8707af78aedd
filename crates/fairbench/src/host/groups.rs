//! fairbench's use of control groups (the mechanism is
//! crates/sys/src/containment): what a command says before it starts
//! servers, and the load generator's own group.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use fairbench_engine::ThreadStart;
pub use fairbench_sys::containment::Method;
use fairbench_sys::containment::{self, Group, Purpose};

static WARNED: AtomicBool = AtomicBool::new(false);

/// Prints, once per fairbench process, what the process-group fallback
/// does not guarantee.
pub fn warn_fallback(why: &str) {
    if !WARNED.swap(true, Ordering::SeqCst) {
        eprintln!("{}", containment::fallback_warning(why));
    }
}

/// Before the first server: removes the control groups that fairbench
/// processes now gone left behind, and, when servers run on this machine
/// (`servers_here`), says at once if they cannot be put in groups here. (An
/// ssh host says so with its first server.)
pub fn prepare(servers_here: bool) {
    let p = containment::prepare();
    if !p.removed.is_empty() {
        eprintln!(
            "removed control groups that earlier fairbench processes left behind: {}",
            p.removed.join(", ")
        );
    }
    for problem in &p.problems {
        eprintln!("warning: a leftover control group would not go: {problem}");
    }
    if let (Some(why), true) = (&p.fallback, servers_here) {
        warn_fallback(why);
    }
}

/// The load generator's threads in this process, held to their CPUs by a
/// control group of their own where one can be made (cgroup v1), else by
/// sched_setaffinity alone. Lives for one load; removed on drop.
pub struct GeneratorGroup {
    group: Option<Arc<Group>>,
}

impl GeneratorGroup {
    /// A group whose cpuset is `cpus`; none when the generator is not
    /// pinned (a machine of its own) or no group can be made.
    pub fn new(cpus: Option<&[usize]>) -> GeneratorGroup {
        let group = cpus.and_then(|c| containment::create(Purpose::Threads, Some(c)).ok());
        GeneratorGroup {
            group: group.map(Arc::new),
        }
    }

    /// The engine's hook that moves each load thread into the group.
    pub fn hook(&self) -> Option<ThreadStart> {
        let g = self.group.clone()?;
        Some(ThreadStart(Arc::new(move || {
            // SAFETY: gettid has no preconditions.
            let tid = unsafe { libc::gettid() } as u32;
            g.add_thread(tid)
                .map_err(|e| format!("cannot move it into control group {}: {e}", g.name()))
        })))
    }

    /// How the threads are held: a control group, or affinity alone.
    pub fn method(&self) -> Method {
        self.group
            .as_ref()
            .map(|g| g.method())
            .unwrap_or(Method::Affinity)
    }

    /// The group's cpuset as the kernel enforces it.
    pub fn cpuset(&self) -> Option<String> {
        self.group.as_ref().and_then(|g| g.cpuset())
    }
}

impl Drop for GeneratorGroup {
    fn drop(&mut self) {
        if let Some(g) = &self.group {
            let _ = g.remove();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_threads_land_in_the_generator_group() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 || containment::hierarchies().is_err() {
            eprintln!("skipped: no control groups here");
            return;
        }
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let cpu: usize = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .and_then(|v| v.trim().split([',', '-']).next()?.parse().ok())
            .unwrap();
        let g = GeneratorGroup::new(Some(&[cpu]));
        if g.method() == Method::Affinity {
            // cgroup v2 keeps a process's threads together.
            assert_eq!(
                containment::hierarchies().unwrap().version,
                containment::Version::V2
            );
            assert!(g.hook().is_none());
            return;
        }
        assert_eq!(g.cpuset(), Some(cpu.to_string()));
        let hook = g.hook().unwrap();
        let paths = g.group.as_ref().unwrap().paths();
        let allowed = std::thread::spawn(move || {
            (hook.0)().unwrap();
            std::fs::read_to_string("/proc/thread-self/status")
                .unwrap()
                .lines()
                .find_map(|l| {
                    l.strip_prefix("Cpus_allowed_list:")
                        .map(|v| v.trim().to_string())
                })
                .unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(allowed, cpu.to_string());
        drop(g);
        assert!(paths.iter().all(|p| !p.exists()), "{paths:?}");
        assert_eq!(GeneratorGroup::new(None).method(), Method::Affinity);
    }
}
