//! Containment: each server in a control group of its own, so that
//! nothing it starts escapes. Its CPUs are its cpuset (no process of it can
//! run elsewhere, whatever affinity it sets itself); its CPU time and
//! memory peak are the group's own counters (every descendant, daemonized
//! or not, exited or not); its end kills every process in the group (frozen
//! first) and removes the group.
//!
//! cgroup v2 is used where it is mounted with the cpu and memory
//! controllers, else the v1 hierarchies that are mounted
//! ([`mounts`]). Where no group can be made (not root, a read-only
//! cgroup file system) servers run as process groups, as before, and the
//! caller says so once ([`fallback_warning`]).
//!
//! Groups are named `fairbench-<pid>-<start>-<n>` after the process that
//! made them and removed by their owner (drop, stop, Ctrl-C through
//! [`kill_servers`] and [`remove_all`]); a group whose owner died is removed
//! by the next fairbench ([`prepare`]).

mod group;
pub mod mounts;
pub mod name;
mod registry;
mod sweep;
pub mod throttle;

use std::sync::OnceLock;

pub use group::{kill_servers, remove_all};
pub use group::{CreateError, Group, Joiner, Purpose, Usage};
pub use mounts::{Hierarchies, Version};
pub use name::PREFIX;

/// Removes the groups of dead fairbench processes on this machine (see
/// [`prepare`], which does this too); returns (removed, problems).
pub fn clean_leftovers() -> (Vec<String>, Vec<String>) {
    match hierarchies() {
        Ok(h) => sweep::clean(h),
        Err(_) => (Vec::new(), Vec::new()),
    }
}

/// How a server (or the load generator) is held to its CPUs and measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Method {
    /// A cgroup v1 group per hierarchy.
    #[serde(rename = "cgroup-v1")]
    CgroupV1,
    /// One cgroup v2 group.
    #[serde(rename = "cgroup-v2")]
    CgroupV2,
    /// The fallback for servers: a process group, pinned with
    /// sched_setaffinity, measured from /proc.
    #[serde(rename = "process-group")]
    ProcessGroup,
    /// The fallback for the load generator's threads: sched_setaffinity.
    #[serde(rename = "affinity")]
    Affinity,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::CgroupV1 => "cgroup-v1",
            Method::CgroupV2 => "cgroup-v2",
            Method::ProcessGroup => "process-group",
            Method::Affinity => "affinity",
        }
    }

    pub fn is_cgroup(self) -> bool {
        matches!(self, Method::CgroupV1 | Method::CgroupV2)
    }
}

/// This machine's hierarchies, detected once per process.
pub fn hierarchies() -> Result<&'static Hierarchies, String> {
    static DETECTED: OnceLock<Result<Hierarchies, String>> = OnceLock::new();
    DETECTED
        .get_or_init(Hierarchies::detect)
        .as_ref()
        .map_err(Clone::clone)
}

/// Makes a group for `purpose` in this machine's hierarchies.
pub fn create(purpose: Purpose, cpus: Option<&[usize]>) -> Result<Group, CreateError> {
    let h = hierarchies().map_err(CreateError::Unavailable)?;
    Group::create(h, purpose, cpus)
}

/// What a command learns before it starts servers.
#[derive(Debug, Clone)]
pub struct Preparation {
    /// How servers will be held.
    pub method: Method,
    /// Leftover groups of dead fairbench processes that were removed.
    pub removed: Vec<String>,
    /// Leftovers that would not go, with why.
    pub problems: Vec<String>,
    /// Why no group can be made, when none can.
    pub fallback: Option<String>,
}

/// Removes the leftovers of dead fairbench processes and tries making (and
/// removing) one group, so that a command knows before its first server
/// how servers will be held.
pub fn prepare() -> Preparation {
    let h = match hierarchies() {
        Ok(h) => h,
        Err(why) => {
            return Preparation {
                method: Method::ProcessGroup,
                removed: Vec::new(),
                problems: Vec::new(),
                fallback: Some(why),
            }
        }
    };
    let (removed, problems) = sweep::clean(h);
    let (method, fallback) = match Group::create(h, Purpose::Server, None) {
        Ok(g) => {
            let m = g.method();
            drop(g);
            (m, None)
        }
        Err(e) => (Method::ProcessGroup, Some(e.to_string())),
    };
    Preparation {
        method,
        removed,
        problems,
        fallback,
    }
}

/// The one line that says what the process-group fallback does not
/// guarantee.
pub fn fallback_warning(why: &str) -> String {
    format!(
        "warning: no control group can be made ({why}); servers run as process groups instead: a process a server starts in a new session is not stopped with it and its CPU and memory are not counted, and a server can move itself off its CPUs"
    )
}

#[cfg(test)]
mod tests;
