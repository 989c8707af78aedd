//! Server processes: started in a control group of their own where one can
//! be made (see [`crate::containment`]), else in their own process group;
//! pinned to CPUs, logged to a file, polled until they answer, and always
//! stopped: explicitly, on drop, or by [`terminate_all`] from the Ctrl-C
//! handler. Every other process fairbench starts comes through here too: a
//! command run to its end within a bound ([`bounded`]) or a helper that
//! lives on ([`spawn_child`]).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::containment::{self, CreateError, Group, Joiner, Method, Purpose, Usage};
use crate::listener::{self, Proto};

pub mod bounded;
mod child;

pub use child::spawn_child;

/// Process groups started by this process and not yet reaped.
static GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

fn groups() -> MutexGuard<'static, Vec<i32>> {
    // A panic elsewhere must not stop us from killing servers.
    GROUPS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Keeps a process group in the registry for as long as it lives.
#[derive(Debug)]
pub struct GroupGuard(i32);

/// Registers a process group so that [`terminate_all`] reaches it.
pub fn register_group(pgid: i32) -> GroupGuard {
    groups().push(pgid);
    GroupGuard(pgid)
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        groups().retain(|&g| g != self.0);
    }
}

/// Ends every server and process group fairbench started and has not yet
/// reaped: every process of every server's control group killed, then
/// SIGTERM to the process groups, a short grace, and SIGKILL. Safe to call
/// from the Ctrl-C handler's thread; the owners still reap their children
/// and remove the groups afterwards.
pub fn terminate_all() {
    containment::kill_servers();
    let live: Vec<i32> = groups().clone();
    if live.is_empty() {
        return;
    }
    for &g in &live {
        kill_group(g, libc::SIGTERM);
    }
    std::thread::sleep(Duration::from_millis(300));
    for &g in &live {
        kill_group(g, libc::SIGKILL);
    }
}

/// Sends `sig` to every process of group `pgid`; a group already gone is fine.
pub fn kill_group(pgid: i32, sig: i32) {
    if pgid > 1 {
        // SAFETY: kill has no memory-safety preconditions.
        unsafe {
            libc::kill(-pgid, sig);
        }
    }
}

/// Live (non-zombie) processes of group `pgid`, found through /proc; the
/// leader's pid is the group id, so this is a server's whole process tree
/// unless a child started its own group.
pub fn group_members(pgid: i32) -> Vec<u32> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // Fields after the parenthesised command: state, ppid, pgrp, ...
            let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
                return false;
            };
            let f: Vec<&str> = rest.split_whitespace().collect();
            f.len() > 2 && f[0] != "Z" && f[2].parse::<i32>().ok() == Some(pgid)
        })
        .collect()
}

/// "exited with status 3" / "was killed by signal 9 (SIGKILL)".
pub fn describe_exit(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        format!("exited with status {code}")
    } else if let Some(sig) = status.signal() {
        format!("was killed by signal {sig}{}", signal_name(sig))
    } else {
        format!("ended ({status})")
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGKILL => " (SIGKILL)",
        libc::SIGTERM => " (SIGTERM)",
        libc::SIGINT => " (SIGINT)",
        libc::SIGSEGV => " (SIGSEGV)",
        libc::SIGABRT => " (SIGABRT)",
        libc::SIGBUS => " (SIGBUS)",
        _ => "",
    }
}

pub use crate::port::free_port;

/// The loopback addresses of a port: `127.0.0.1` and `[::1]`.
pub fn loopback(port: u16) -> [SocketAddr; 2] {
    [
        SocketAddr::from(([127, 0, 0, 1], port)),
        SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, port)),
    ]
}

/// How to start one server process.
#[derive(Debug, Clone)]
pub struct ServerSpec {
    /// Program and arguments; never run through a shell.
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    /// Added to (and overriding) fairbench's own environment.
    pub env: Vec<(String, String)>,
    /// CPUs to pin the process (and so its children) to; `None` = unpinned.
    pub cpus: Option<Vec<usize>>,
    /// Where stdout and stderr go (truncated at start).
    pub log_path: PathBuf,
    /// How long `stop` waits after SIGTERM before SIGKILL.
    pub stop_grace: Duration,
    /// Deliver SIGKILL to the server when the *thread* that started it ends
    /// (Linux PR_SET_PDEATHSIG), so that even a SIGKILLed fairbench leaves no
    /// server behind. Start servers from a thread that outlives them.
    pub die_with_parent_thread: bool,
    /// Run as this (uid, gid) instead of fairbench's own user: PostgreSQL
    /// refuses to run as root.
    pub run_as: Option<(u32, u32)>,
}

impl ServerSpec {
    pub fn new(argv: Vec<String>, cwd: PathBuf, log_path: PathBuf) -> Self {
        ServerSpec {
            argv,
            cwd,
            env: Vec::new(),
            cpus: None,
            log_path,
            stop_grace: Duration::from_secs(5),
            die_with_parent_thread: true,
            run_as: None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("empty command")]
    EmptyCommand,
    #[error("CPU {0} is out of range")]
    BadCpu(usize),
    #[error("cannot create the log file {}: {source}", path.display())]
    Log {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot start `{program}`: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    Contain(String),
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum ReadyError {
    #[error("{} before answering", describe_exit(*status))]
    Exited { status: ExitStatus },
    #[error("did not answer on {addrs} within {}s", after.as_secs_f64())]
    Timeout { after: Duration, addrs: String },
    #[error("port {port} answered, but not from the server: {holder} holds it, so its answers would be measured as the server's")]
    Foreign { port: u16, holder: String },
}

#[derive(Debug)]
struct State {
    child: Child,
    /// The leader's exit status, once reaped.
    exit: Option<ExitStatus>,
    guard: Option<GroupGuard>,
    /// What went wrong removing the control group, if anything.
    leftover: Option<String>,
}

/// A running server: the leader of its own process group, in a control
/// group of its own where one could be made. Shareable between threads (a
/// sampler may watch it while another thread drives load).
#[derive(Debug)]
pub struct ServerProcess {
    state: Mutex<State>,
    pid: u32,
    log_path: PathBuf,
    stop_grace: Duration,
    group: Option<Group>,
    /// Why there is no control group.
    fallback: Option<String>,
}

impl ServerProcess {
    pub fn start(spec: &ServerSpec) -> Result<ServerProcess, StartError> {
        let program = spec.argv.first().ok_or(StartError::EmptyCommand)?;
        let (log, log2) = open_log(spec)?;

        let cpuset = match &spec.cpus {
            None => None,
            Some(cpus) => Some(cpu_set(cpus)?),
        };
        let die = spec.die_with_parent_thread;
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        let (group, fallback) = match containment::create(Purpose::Server, spec.cpus.as_deref()) {
            Ok(g) => (Some(g), None),
            Err(CreateError::Unavailable(why)) => (None, Some(why)),
            Err(CreateError::Setup(why)) => return Err(StartError::Contain(why)),
        };
        let joiner = match &group {
            Some(g) => Some(g.joiner().map_err(|e| {
                StartError::Contain(format!(
                    "cannot open control group {} for the server: {e}",
                    g.name()
                ))
            })?),
            None => None,
        };

        let mut cmd = command(spec, program, log, log2);
        BeforeExec {
            joiner,
            cpuset,
            die,
            parent,
        }
        .install(&mut cmd);
        let child = cmd.spawn().map_err(|source| StartError::Spawn {
            program: program.clone(),
            source,
        })?;
        let pid = child.id();
        Ok(ServerProcess {
            state: Mutex::new(State {
                child,
                exit: None,
                guard: Some(register_group(pid as i32)),
                leftover: None,
            }),
            pid,
            log_path: spec.log_path.clone(),
            stop_grace: spec.stop_grace,
            group,
            fallback,
        })
    }

    /// How the server is held: a control group, or the process-group
    /// fallback.
    pub fn method(&self) -> Method {
        self.group
            .as_ref()
            .map(Group::method)
            .unwrap_or(Method::ProcessGroup)
    }

    /// Why it runs as a process group only, when it does.
    pub fn fallback_reason(&self) -> Option<&str> {
        self.fallback.as_deref()
    }

    /// Its control group's cpuset, as the kernel enforces it.
    pub fn cpuset(&self) -> Option<String> {
        self.group.as_ref().and_then(Group::cpuset)
    }

    /// Its control group's counters: every process it ever had.
    pub fn group_usage(&self) -> Option<Usage> {
        self.group.as_ref().map(Group::usage)
    }

    /// The live processes of its control group.
    pub fn group_members(&self) -> Option<Vec<u32>> {
        self.group.as_ref().map(Group::members)
    }

    /// The control group's name, when it has one.
    pub fn group_name(&self) -> Option<&str> {
        self.group.as_ref().map(Group::name)
    }

    /// Its control group, when it has one.
    pub fn group(&self) -> Option<&Group> {
        self.group.as_ref()
    }

    /// What went wrong removing its control group when it was stopped.
    pub fn leftover(&self) -> Option<String> {
        self.state().leftover.clone()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The leader's pid, which is also the process group id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    pub fn pgid(&self) -> i32 {
        self.pid as i32
    }

    /// The leader's exit status once the server has ended: its leader has
    /// exited (and is reaped) and, in a control group, no process of it is
    /// left. A server whose leader hands over to a daemonized child lives
    /// on in that child.
    pub fn exit_status(&self) -> Option<ExitStatus> {
        let exit = {
            let mut st = self.state();
            if st.exit.is_none() {
                if let Ok(Some(s)) = st.child.try_wait() {
                    st.exit = Some(s);
                }
            }
            st.exit
        };
        match &self.group {
            Some(g) if exit.is_some() && !g.is_empty() => None,
            _ => exit,
        }
    }

    pub fn is_alive(&self) -> bool {
        self.exit_status().is_none()
    }

    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// The last `n` lines of the log, control characters escaped.
    pub fn log_tail(&self, n: usize) -> Vec<String> {
        log_tail(&self.log_path, n)
    }

    /// Polls TCP connects to `addrs` until one succeeds (the server is
    /// ready), the process exits, or `timeout` passes. What answered must
    /// be the server's (see [`crate::listener`]).
    pub fn wait_ready(
        &self,
        addrs: &[SocketAddr],
        timeout: Duration,
    ) -> Result<Duration, ReadyError> {
        let start = Instant::now();
        let deadline = start + timeout;
        loop {
            if let Some(status) = self.exit_status() {
                return Err(ReadyError::Exited { status });
            }
            for a in addrs {
                let left = deadline.saturating_duration_since(Instant::now());
                let t = left
                    .min(Duration::from_millis(250))
                    .max(Duration::from_millis(1));
                if TcpStream::connect_timeout(a, t).is_ok() {
                    return match self.foreign_holder(a.port(), Proto::Tcp) {
                        Some(holder) => Err(ReadyError::Foreign {
                            port: a.port(),
                            holder,
                        }),
                        None => Ok(start.elapsed()),
                    };
                }
            }
            if Instant::now() >= deadline {
                return Err(ReadyError::Timeout {
                    after: timeout,
                    addrs: addrs
                        .iter()
                        .map(|a| a.to_string())
                        .collect::<Vec<_>>()
                        .join(" or "),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The process holding a socket on `port` that is not this server's,
    /// when one does (see [`crate::listener`]).
    pub fn foreign_holder(&self, port: u16, proto: Proto) -> Option<String> {
        let members = match &self.group {
            Some(g) => g.members(),
            None => group_members(self.pid as i32),
        };
        let server = listener::Server {
            leader: self.pid,
            members: &members,
            contained: self.group.is_some(),
        };
        listener::foreign_holder(&server, port, proto)
    }

    /// SIGTERM to every process of the server, SIGKILL to all that are
    /// left after the grace period, the leader reaped; in a control group
    /// the group is then removed. Returns the leader's exit status.
    /// Idempotent.
    pub fn stop(&self) -> Option<ExitStatus> {
        let mut st = self.state();
        if st.guard.is_none() {
            return st.exit;
        }
        if let Some(g) = &self.group {
            g.signal_all(libc::SIGTERM);
            let deadline = Instant::now() + self.stop_grace;
            while Instant::now() < deadline {
                if st.exit.is_none() {
                    if let Ok(Some(s)) = st.child.try_wait() {
                        st.exit = Some(s);
                    }
                }
                if st.exit.is_some() && g.is_empty() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            g.kill_all();
            if st.exit.is_none() {
                st.exit = st.child.wait().ok();
            }
            st.leftover = g.remove().err();
            st.guard = None;
            return st.exit;
        }
        let pgid = self.pid as i32;
        if st.exit.is_none() {
            kill_group(pgid, libc::SIGTERM);
            let deadline = Instant::now() + self.stop_grace;
            while Instant::now() < deadline {
                if let Ok(Some(s)) = st.child.try_wait() {
                    st.exit = Some(s);
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        kill_group(pgid, libc::SIGKILL);
        if st.exit.is_none() {
            st.exit = st.child.wait().ok();
        }
        kill_group(pgid, libc::SIGKILL);
        // SIGKILL is delivered asynchronously: wait (bounded) until the group
        // is really gone, so "stopped" means no process is left.
        let deadline = Instant::now() + Duration::from_secs(2);
        while !group_members(pgid).is_empty() && Instant::now() < deadline {
            kill_group(pgid, libc::SIGKILL);
            std::thread::sleep(Duration::from_millis(10));
        }
        st.guard = None;
        st.exit
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The server's log, truncated and headed by the command line: one handle
/// for its stdout, one for its stderr.
fn open_log(spec: &ServerSpec) -> Result<(File, File), StartError> {
    if let Some(parent) = spec.log_path.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    let log_err = |source| StartError::Log {
        path: spec.log_path.clone(),
        source,
    };
    let mut log = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .open(&spec.log_path)
        .map_err(log_err)?;
    let _ = writeln!(
        log,
        "# fairbench: {} (in {})",
        spec.argv.join(" "),
        spec.cwd.display()
    );
    let log2 = log.try_clone().map_err(log_err)?;
    Ok((log, log2))
}

/// The server's command: in a process group of its own, its output to the
/// log, as `spec.run_as` when given.
fn command(spec: &ServerSpec, program: &str, log: File, log2: File) -> Command {
    let mut cmd = Command::new(program);
    cmd.args(&spec.argv[1..])
        .current_dir(&spec.cwd)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log2)
        .process_group(0);
    if let Some((uid, gid)) = spec.run_as {
        // std drops the supplementary groups and changes gid then uid
        // before the pre_exec closure below runs; the closure's cgroup
        // write is "0" (itself), which its own user may do, through a
        // descriptor opened here as root.
        cmd.uid(uid).gid(gid);
    }
    cmd
}

/// What the child does between fork and exec, all prepared before the fork.
struct BeforeExec {
    /// Its control group, when it has one.
    joiner: Option<Joiner>,
    cpuset: Option<libc::cpu_set_t>,
    /// Die with the thread that starts it (PR_SET_PDEATHSIG).
    die: bool,
    /// fairbench's pid, to tell whether it died before prctl took effect.
    parent: libc::pid_t,
}

impl BeforeExec {
    fn install(self, cmd: &mut Command) {
        let BeforeExec {
            joiner,
            cpuset,
            die,
            parent,
        } = self;
        // SAFETY: the closure runs between fork and exec and only makes
        // async-signal-safe system calls on data prepared before the fork.
        unsafe {
            cmd.pre_exec(move || {
                // Into its group before anything else, so that every
                // process it will ever start is born inside.
                if let Some(j) = &joiner {
                    j.join_self()?;
                }
                if let Some(set) = &cpuset {
                    if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) != 0
                    {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                if die {
                    child::die_with_parent_thread(parent);
                }
                Ok(())
            });
        }
    }
}

fn cpu_set(cpus: &[usize]) -> Result<libc::cpu_set_t, StartError> {
    // SAFETY: cpu_set_t is a plain bit array; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        if c >= libc::CPU_SETSIZE as usize {
            return Err(StartError::BadCpu(c));
        }
        // SAFETY: c is within the set's size, checked above.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    Ok(set)
}

/// The last `n` lines of a log file, reading at most its last 64 KiB.
pub fn log_tail(path: &Path, n: usize) -> Vec<String> {
    const WINDOW: u64 = 64 * 1024;
    let Ok(mut f) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let from = len.saturating_sub(WINDOW);
    if f.seek(SeekFrom::Start(from)).is_err() {
        return Vec::new();
    }
    let mut buf = Vec::new();
    let _ = f.take(WINDOW).read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf);
    let mut lines: Vec<&str> = text.lines().collect();
    if from > 0 && !lines.is_empty() {
        // The first line is probably cut in the middle.
        lines.remove(0);
    }
    let skip = lines.len().saturating_sub(n);
    lines[skip..]
        .iter()
        .map(|l| crate::text::visible(l))
        .collect()
}

#[cfg(test)]
mod tests;
