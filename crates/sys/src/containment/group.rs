//! One control group fairbench made: a directory per hierarchy (v1) or one
//! directory (v2), its CPUs set with cpuset, its members, its counters,
//! and its end: every process killed and the directories removed.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::mounts::{Hierarchies, Hierarchy, Version, V2_CONTROLLERS};
use super::registry::Registry;
use super::{name, Method};

/// The groups this process has made and not yet removed.
static LIVE: Registry<Inner> = Registry::new();

/// Kills every process in every server group this process made; the
/// groups stay for their owners to remove. For the first Ctrl-C.
pub fn kill_servers() {
    for g in LIVE
        .snapshot()
        .iter()
        .filter(|g| g.purpose == Purpose::Server)
    {
        kill_all(g);
    }
}

/// Ends and removes every group this process made. For an exit that runs
/// no destructor (a second Ctrl-C).
pub fn remove_all() {
    for g in LIVE.take() {
        let _ = remove(&g);
    }
}

/// What a group holds, which decides its controllers and how it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// A server's whole process tree: every controller; ended by killing,
    /// and killed at once on Ctrl-C ([`super::kill_servers`]).
    Server,
    /// A load generator's process (an agent): every controller; ended by
    /// killing, but left to finish and report on a first Ctrl-C.
    Generator,
    /// Threads of fairbench itself (the load generator): cpuset and CPU
    /// accounting only; ended by moving any thread left back out, never
    /// by killing.
    Threads,
}

/// Why a group could not be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreateError {
    /// No group can be made here (no permission, read-only, not mounted):
    /// the caller falls back and says so.
    Unavailable(String),
    /// A group could be made but not set up as asked (e.g. CPUs that the
    /// parent group does not have): the caller's request is wrong.
    Setup(String),
}

impl std::fmt::Display for CreateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CreateError::Unavailable(m) | CreateError::Setup(m) => f.write_str(m),
        }
    }
}

/// The group's own counters, covering every process that was ever in it
/// (exited ones included).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    /// User + system CPU seconds (cpuacct.usage, cpu.stat usage_usec).
    pub cpu_s: Option<f64>,
    /// The highest memory charged to the group since it was made, page
    /// cache included (memory.max_usage_in_bytes, memory.peak).
    pub memory_peak: Option<u64>,
}

#[derive(Debug)]
pub(super) struct Dir {
    pub path: PathBuf,
    pub parent: PathBuf,
    pub controllers: Vec<String>,
}

impl Dir {
    fn has(&self, c: &str) -> bool {
        self.controllers.iter().any(|x| x == c)
    }
}

#[derive(Debug)]
pub(super) struct Inner {
    pub name: String,
    pub version: Version,
    pub purpose: Purpose,
    pub dirs: Vec<Dir>,
    pub removed: AtomicBool,
}

/// A live control group; removed (its processes killed first) on drop.
#[derive(Debug)]
pub struct Group {
    inner: Arc<Inner>,
}

const FREEZE_WAIT: Duration = Duration::from_secs(1);
const EMPTY_WAIT: Duration = Duration::from_secs(5);
const RMDIR_WAIT: Duration = Duration::from_secs(2);
/// Groups a server makes inside its own are followed this deep.
const MAX_DEPTH: usize = 8;

fn write(path: &Path, value: &str) -> std::io::Result<()> {
    let mut f = OpenOptions::new().write(true).open(path)?;
    f.write_all(value.as_bytes())
}

fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

fn cpu_list(cpus: &[usize]) -> String {
    cpus.iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

impl Group {
    /// Makes a group named after this process in every hierarchy of `h`
    /// that has a controller `purpose` needs, with `cpus` as its cpuset
    /// (`None`: the parent's).
    pub fn create(
        h: &Hierarchies,
        purpose: Purpose,
        cpus: Option<&[usize]>,
    ) -> Result<Group, CreateError> {
        Self::create_named(h, name::fresh(), purpose, cpus)
    }

    pub(super) fn create_named(
        h: &Hierarchies,
        name: String,
        purpose: Purpose,
        cpus: Option<&[usize]>,
    ) -> Result<Group, CreateError> {
        let mut inner = Inner {
            name,
            version: h.version,
            purpose,
            dirs: Vec::new(),
            removed: AtomicBool::new(false),
        };
        let made = match h.version {
            Version::V1 => make_v1(&mut inner, h, cpus),
            Version::V2 => make_v2(&mut inner, h, cpus),
        };
        if let Err(e) = made {
            // Nothing is in it yet: removing is only rmdir.
            let _ = remove_dirs(&inner);
            return Err(e);
        }
        let inner = Arc::new(inner);
        LIVE.add(inner.clone());
        Ok(Group { inner })
    }

    /// The group's name (the same in every hierarchy).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    pub fn method(&self) -> Method {
        match self.inner.version {
            Version::V1 => Method::CgroupV1,
            Version::V2 => Method::CgroupV2,
        }
    }

    /// Its directories, one per hierarchy.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.inner.dirs.iter().map(|d| d.path.clone()).collect()
    }

    /// Opens what a child needs to move itself in between fork and exec,
    /// where nothing may allocate: see [`Joiner::join_self`].
    pub fn joiner(&self) -> std::io::Result<Joiner> {
        let mut fds = Vec::with_capacity(self.inner.dirs.len());
        for d in &self.inner.dirs {
            let f = OpenOptions::new()
                .write(true)
                .open(d.path.join("cgroup.procs"))?;
            fds.push(OwnedFd::from(f));
        }
        Ok(Joiner { fds })
    }

    /// Moves process `pid` (all its threads) into the group.
    pub fn add_process(&self, pid: u32) -> std::io::Result<()> {
        for d in &self.inner.dirs {
            write(&d.path.join("cgroup.procs"), &pid.to_string())?;
        }
        Ok(())
    }

    /// Moves one thread of this process into the group (cgroup v1 only:
    /// v2 keeps a process's threads together outside threaded subtrees).
    pub fn add_thread(&self, tid: u32) -> std::io::Result<()> {
        if self.inner.version != Version::V1 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "single threads are placed only in cgroup v1 groups",
            ));
        }
        for d in &self.inner.dirs {
            write(&d.path.join("tasks"), &tid.to_string())?;
        }
        Ok(())
    }

    /// The processes in the group and in any group made inside it.
    pub fn members(&self) -> Vec<u32> {
        members(&self.inner)
    }

    pub fn is_empty(&self) -> bool {
        self.members().is_empty()
    }

    /// The group's CPU time and memory peak, as far as its controllers
    /// count them.
    pub fn usage(&self) -> Usage {
        let mut u = Usage::default();
        for d in &self.inner.dirs {
            match self.inner.version {
                Version::V1 => {
                    if d.has("cpuacct") {
                        u.cpu_s = read(&d.path.join("cpuacct.usage"))
                            .and_then(|s| s.trim().parse::<u64>().ok())
                            .map(|ns| ns as f64 / 1e9);
                    }
                    if d.has("memory") {
                        u.memory_peak = read(&d.path.join("memory.max_usage_in_bytes"))
                            .and_then(|s| s.trim().parse().ok());
                    }
                }
                Version::V2 => {
                    u.cpu_s = read(&d.path.join("cpu.stat")).and_then(|s| {
                        s.lines()
                            .find_map(|l| l.strip_prefix("usage_usec "))
                            .and_then(|v| v.trim().parse::<u64>().ok())
                            .map(|us| us as f64 / 1e6)
                    });
                    u.memory_peak =
                        read(&d.path.join("memory.peak")).and_then(|s| s.trim().parse().ok());
                }
            }
        }
        u
    }

    /// The CPUs the group's processes may run on (`0-3,6` form), when it
    /// has a cpuset.
    pub fn cpuset(&self) -> Option<String> {
        let d = self.inner.dirs.iter().find(|d| d.has("cpuset"))?;
        let files: &[&str] = match self.inner.version {
            Version::V1 => &["cpuset.effective_cpus", "cpuset.cpus"],
            Version::V2 => &["cpuset.cpus.effective", "cpuset.cpus"],
        };
        files
            .iter()
            .filter_map(|f| read(&d.path.join(f)))
            .map(|s| s.trim().to_string())
            .find(|s| !s.is_empty())
    }

    /// Gives the group other CPUs (the database's, moved case by case so
    /// that it never shares the server's). Nothing happens without a
    /// cpuset controller.
    pub fn set_cpus(&self, cpus: &[usize]) -> Result<(), String> {
        let Some(d) = self.inner.dirs.iter().find(|d| d.has("cpuset")) else {
            return Ok(());
        };
        let list = cpu_list(cpus);
        write(&d.path.join("cpuset.cpus"), &list).map_err(|e| {
            format!(
                "cannot give control group {} CPUs {list}: {e}",
                self.inner.name
            )
        })
    }

    /// Starts the memory peak afresh (cgroup v1's max_usage_in_bytes and
    /// v2's memory.peak take a write), so that a peak read later is that
    /// of the time since. Best effort: a kernel without a resettable peak
    /// keeps the peak since the group was made.
    pub fn reset_memory_peak(&self) {
        for d in self.inner.dirs.iter().filter(|d| d.has("memory")) {
            let file = match self.inner.version {
                Version::V1 => "memory.max_usage_in_bytes",
                Version::V2 => "memory.peak",
            };
            let _ = write(&d.path.join(file), "0");
        }
    }

    /// Sends `sig` to every process in the group.
    pub fn signal_all(&self, sig: i32) {
        for pid in self.members() {
            // SAFETY: kill has no memory-safety preconditions.
            unsafe { libc::kill(pid as i32, sig) };
        }
    }

    /// Kills every process in the group (frozen first, so that none can
    /// fork away meanwhile) and waits, bounded, until it is empty. Returns
    /// whether it is. Not for [`Purpose::Threads`] groups.
    pub fn kill_all(&self) -> bool {
        kill_all(&self.inner)
    }

    /// Ends the group: kills what is left (a server's group) or moves its
    /// threads back out (a threads group), then removes its directories.
    /// Idempotent; also done on drop.
    pub fn remove(&self) -> Result<(), String> {
        let r = remove(&self.inner);
        LIVE.forget(&self.inner);
        r
    }
}

#[cfg(test)]
impl Group {
    /// Leaves the group behind as a crashed owner would.
    pub(super) fn abandon(self) {
        LIVE.forget(&self.inner);
        std::mem::forget(self);
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

/// Lets a freshly forked child enter its group without allocating.
#[derive(Debug)]
pub struct Joiner {
    fds: Vec<OwnedFd>,
}

impl Joiner {
    /// Moves the calling process into the group: "0" written to each
    /// cgroup.procs means "the writer". Only async-signal-safe calls, for
    /// use between fork and exec. The descriptors are close-on-exec.
    pub fn join_self(&self) -> std::io::Result<()> {
        for fd in &self.fds {
            // SAFETY: writing a static byte to an open descriptor.
            let n = unsafe { libc::write(fd.as_raw_fd(), b"0".as_ptr().cast(), 1) };
            if n != 1 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

fn wanted_v1(purpose: Purpose, h: &Hierarchy) -> bool {
    match purpose {
        Purpose::Server | Purpose::Generator => true,
        // Freezing, killing or charging memory to fairbench's own threads
        // is never wanted: only where they run and what CPU they use.
        Purpose::Threads => h.has("cpuset") || h.has("cpuacct") || h.has("cpu"),
    }
}

fn make_v1(inner: &mut Inner, h: &Hierarchies, cpus: Option<&[usize]>) -> Result<(), CreateError> {
    for hier in h.list.iter().filter(|x| wanted_v1(inner.purpose, x)) {
        let path = hier.parent.join(&inner.name);
        std::fs::create_dir(&path).map_err(|e| {
            CreateError::Unavailable(format!("cannot create {}: {e}", path.display()))
        })?;
        inner.dirs.push(Dir {
            path: path.clone(),
            parent: hier.parent.clone(),
            controllers: hier.controllers.clone(),
        });
        if hier.has("cpuset") {
            // A v1 cpuset starts empty and admits no process until both
            // its memory nodes and its CPUs are set.
            let mems = read(&hier.parent.join("cpuset.mems")).unwrap_or_default();
            write(&path.join("cpuset.mems"), mems.trim()).map_err(|e| {
                CreateError::Setup(format!(
                    "cannot copy the memory nodes into {}: {e}",
                    path.display()
                ))
            })?;
            let list = match cpus {
                Some(c) => cpu_list(c),
                None => read(&hier.parent.join("cpuset.cpus"))
                    .unwrap_or_default()
                    .trim()
                    .to_string(),
            };
            write(&path.join("cpuset.cpus"), &list).map_err(|e| {
                CreateError::Setup(format!(
                    "cannot give control group {} CPUs {list} (its parent has {}): {e}",
                    inner.name,
                    read(&hier.parent.join("cpuset.cpus"))
                        .unwrap_or_default()
                        .trim()
                ))
            })?;
        }
    }
    if inner.dirs.is_empty() {
        return Err(CreateError::Unavailable(
            "no mounted hierarchy has the controllers needed".into(),
        ));
    }
    Ok(())
}

fn make_v2(inner: &mut Inner, h: &Hierarchies, cpus: Option<&[usize]>) -> Result<(), CreateError> {
    if inner.purpose == Purpose::Threads {
        return Err(CreateError::Unavailable(
            "cgroup v2 places whole processes, not the load generator's threads".into(),
        ));
    }
    let hier = &h.list[0];
    // Hand the controllers down from fairbench's own group where allowed;
    // one refused (e.g. fairbench's group holds processes) leaves the rest.
    for c in V2_CONTROLLERS.iter().filter(|c| hier.has(c)) {
        let _ = write(
            &hier.parent.join("cgroup.subtree_control"),
            &format!("+{c}"),
        );
    }
    let path = hier.parent.join(&inner.name);
    std::fs::create_dir(&path)
        .map_err(|e| CreateError::Unavailable(format!("cannot create {}: {e}", path.display())))?;
    let controllers: Vec<String> = read(&path.join("cgroup.controllers"))
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect();
    inner.dirs.push(Dir {
        path: path.clone(),
        parent: hier.parent.clone(),
        controllers,
    });
    if let (Some(c), true) = (cpus, inner.dirs[0].has("cpuset")) {
        let list = cpu_list(c);
        write(&path.join("cpuset.cpus"), &list).map_err(|e| {
            CreateError::Setup(format!(
                "cannot give control group {} CPUs {list}: {e}",
                inner.name
            ))
        })?;
    }
    Ok(())
}

/// Every directory of the group's subtree in one hierarchy, deepest first.
fn subtree(dir: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
        if depth < MAX_DEPTH {
            if let Ok(rd) = std::fs::read_dir(dir) {
                for e in rd.flatten() {
                    if e.file_type().is_ok_and(|t| t.is_dir()) {
                        walk(&e.path(), depth + 1, out);
                    }
                }
            }
        }
        out.push(dir.to_path_buf());
    }
    let mut out = Vec::new();
    walk(dir, 0, &mut out);
    out
}

fn ids(path: &Path, file: &str) -> Vec<u32> {
    read(&path.join(file))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

pub(super) fn members(inner: &Inner) -> Vec<u32> {
    let file = match inner.purpose {
        Purpose::Server | Purpose::Generator => "cgroup.procs",
        Purpose::Threads => "tasks",
    };
    let mut all: Vec<u32> = inner
        .dirs
        .iter()
        .filter(|d| d.path.exists())
        .flat_map(|d| subtree(&d.path))
        .flat_map(|p| ids(&p, file))
        .collect();
    all.sort_unstable();
    all.dedup();
    all
}

fn freeze(inner: &Inner, on: bool) {
    for d in &inner.dirs {
        match inner.version {
            Version::V1 if d.has("freezer") => {
                let want = if on { "FROZEN" } else { "THAWED" };
                let _ = write(&d.path.join("freezer.state"), want);
                if on {
                    let t = Instant::now();
                    while read(&d.path.join("freezer.state")).is_some_and(|s| s.trim() != want)
                        && t.elapsed() < FREEZE_WAIT
                    {
                        std::thread::sleep(Duration::from_millis(2));
                    }
                }
            }
            Version::V2 => {
                let _ = write(&d.path.join("cgroup.freeze"), if on { "1" } else { "0" });
                if on {
                    let t = Instant::now();
                    while read(&d.path.join("cgroup.events"))
                        .is_some_and(|s| !s.lines().any(|l| l.trim() == "frozen 1"))
                        && t.elapsed() < FREEZE_WAIT
                    {
                        std::thread::sleep(Duration::from_millis(2));
                    }
                }
            }
            _ => {}
        }
    }
}

fn kill_all(inner: &Inner) -> bool {
    if inner.purpose == Purpose::Threads {
        return members(inner).is_empty();
    }
    let deadline = Instant::now() + EMPTY_WAIT;
    loop {
        let left = members(inner);
        if left.is_empty() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        let cgroup_kill = inner.dirs[0].path.join("cgroup.kill");
        if inner.version == Version::V2 && cgroup_kill.exists() {
            // One write kills the whole subtree, forks in flight included.
            let _ = write(&cgroup_kill, "1");
        } else {
            // Frozen, nobody can fork a new process we would miss; the
            // kills land when the group thaws.
            freeze(inner, true);
            for pid in members(inner) {
                // SAFETY: kill has no memory-safety preconditions.
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            }
            freeze(inner, false);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Moves the threads still in a threads group back to where they came from.
fn evict(inner: &Inner) {
    for d in &inner.dirs {
        for tid in ids(&d.path, "tasks") {
            let _ = write(&d.parent.join("tasks"), &tid.to_string());
        }
    }
}

fn remove_dirs(inner: &Inner) -> Result<(), String> {
    let mut failed = Vec::new();
    for d in &inner.dirs {
        for p in subtree(&d.path) {
            let t = Instant::now();
            loop {
                match std::fs::remove_dir(&p) {
                    Ok(()) => break,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                    // A process still leaving (or a thread still being
                    // moved out) keeps it busy for a moment.
                    Err(e) if t.elapsed() >= RMDIR_WAIT => {
                        failed.push(format!("{}: {e}", p.display()));
                        break;
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("cannot remove control group {}", failed.join("; ")))
    }
}

pub(super) fn remove(inner: &Inner) -> Result<(), String> {
    if inner.removed.swap(true, Ordering::SeqCst) {
        return Ok(());
    }
    match inner.purpose {
        Purpose::Server | Purpose::Generator => {
            kill_all(inner);
        }
        Purpose::Threads => evict(inner),
    }
    remove_dirs(inner)
}

/// A group found on disk (a leftover), adopted to be removed.
pub(super) fn adopt(name: &str, version: Version, dirs: Vec<(PathBuf, Vec<String>)>) -> Inner {
    Inner {
        name: name.to_string(),
        version,
        purpose: Purpose::Server,
        dirs: dirs
            .into_iter()
            .map(|(parent, controllers)| Dir {
                path: parent.join(name),
                parent,
                controllers,
            })
            .collect(),
        removed: AtomicBool::new(false),
    }
}
