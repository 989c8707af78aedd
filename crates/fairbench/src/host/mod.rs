//! Where a process runs, and how files and answers get there and back.
//!
//! A [`Host`] is this machine ([`Host::Local`]), a network namespace on this
//! machine ([`Host::Netns`]) or another machine reached with the system's
//! OpenSSH client ([`Host::Ssh`]). Commands, the runner and the fleet of load
//! generators only call the methods here: start a server (pinned, logged,
//! stoppable), run a command, reach the server's loopback port for the
//! parity check, read /proc for its CPU and memory, copy files across. They
//! never ask which kind of host they hold.

pub mod busy;
pub mod groups;

pub mod quote;
mod server;
mod ssh;
pub mod start;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Context};
use fairbench_sys::process::ServerSpec;
use fairbench_sys::procfs;
use fairbench_zoo::Server;
use serde::Serialize;

pub use server::{contained_line, usage_line, ServerHandle};
pub use ssh::{SshOptions, SshSession};

#[derive(Clone)]
pub enum Host {
    /// This machine, in fairbench's own network namespace.
    Local,
    /// A named network namespace (`ip netns`) on this machine.
    Netns(String),
    /// Another machine (or this one through sshd), over one multiplexed
    /// OpenSSH connection.
    Ssh(Arc<SshSession>),
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.label())
    }
}

/// What the orchestration needs to know about a host's machine.
#[derive(Debug, Clone, Serialize)]
pub struct HostInfo {
    /// The kernel's boot id: two hosts with the same one are the same machine.
    pub boot_id: String,
    /// The CPUs fairbench may use there.
    pub cpus: Vec<usize>,
    pub hostname: String,
    pub kernel: String,
    pub machine: String,
    #[serde(skip)]
    pub clk_tck: f64,
    #[serde(skip)]
    pub page_size: u64,
}

impl Host {
    /// For people and the results database: `local`, `netns NAME`, `ssh DEST`.
    pub fn label(&self) -> String {
        match self {
            Host::Local => "local".into(),
            Host::Netns(n) => format!("netns {n}"),
            Host::Ssh(s) => format!("ssh {}", s.dest()),
        }
    }

    pub fn info(&self) -> HostInfo {
        match self {
            Host::Local | Host::Netns(_) => local_info(),
            Host::Ssh(s) => s.info().clone(),
        }
    }

    /// `argv` turned into a command line that runs it on this host.
    pub fn wrap(&self, argv: &[String]) -> Vec<String> {
        match self {
            Host::Local => argv.to_vec(),
            Host::Netns(n) => {
                let mut v: Vec<String> = ["ip", "netns", "exec", n.as_str()]
                    .iter()
                    .map(|s| s.to_string())
                    .collect();
                v.extend(argv.iter().cloned());
                v
            }
            Host::Ssh(s) => s.ssh_argv(&quote::line(argv)),
        }
    }

    /// A local command that runs `argv` on this host. Its stdin, stdout and
    /// stderr are those of the remote program. Start it with
    /// [`fairbench_sys::process::spawn_child`] (a process group of its own,
    /// killed if fairbench dies) or run it to its end with
    /// [`fairbench_sys::process::bounded`].
    pub fn command(&self, argv: &[String]) -> Command {
        let full = self.wrap(argv);
        let mut cmd = Command::new(&full[0]);
        cmd.args(&full[1..]);
        cmd
    }

    /// The path of a fairbench binary on this host, copying this one across
    /// first if needed.
    pub fn fairbench_exe(&self) -> anyhow::Result<String> {
        match self {
            Host::Local | Host::Netns(_) => Ok(own_exe()),
            Host::Ssh(s) => s.fairbench_exe(),
        }
    }

    /// `server` with its folder and the scenario files on this host, and
    /// the build output `out_dir` there (copied across for an ssh host).
    pub fn stage_server(
        &self,
        server: &Server,
        out_dir: &Path,
    ) -> anyhow::Result<(Server, PathBuf)> {
        match self {
            Host::Local | Host::Netns(_) => Ok((server.clone(), out_dir.to_path_buf())),
            Host::Ssh(s) => s.stage_server(server, out_dir),
        }
    }

    /// A TCP port that is free on this host.
    pub fn free_port(&self) -> anyhow::Result<u16> {
        match self {
            // A fresh namespace has every port free; finding one here is as good.
            Host::Local | Host::Netns(_) => {
                fairbench_sys::process::free_port().context("no free port")
            }
            Host::Ssh(s) => s.free_port(),
        }
    }

    /// Starts a server here, in a control group of its own with
    /// `spec.cpus` of this host as its cpuset (else as the leader of its
    /// own process group, pinned); `port` is where it will answer.
    pub fn start_server(
        &self,
        spec: &ServerSpec,
        port: u16,
        ready_timeout: Duration,
    ) -> Result<ServerHandle, String> {
        ServerHandle::start(self, spec, port, ready_timeout)
    }

    /// Runs `f` with a port through which the loopback addresses of this
    /// host's port `port` are reachable from the calling code: the port
    /// itself here, the same port from inside the namespace, or a local port
    /// forwarded over ssh to the host's `127.0.0.1` and `[::1]`.
    pub fn with_loopback<R: Send>(
        &self,
        port: u16,
        f: impl FnOnce(u16) -> R + Send,
    ) -> anyhow::Result<R> {
        match self {
            Host::Local => Ok(f(port)),
            Host::Netns(n) => in_netns(n, move || f(port)),
            Host::Ssh(s) => s.with_tunnel(port, f),
        }
    }

    /// The /proc/PID/stat entries of the live members of process group `pgid`.
    pub fn group_stats(&self, pgid: i32) -> Vec<procfs::Stat> {
        match self {
            Host::Local | Host::Netns(_) => procfs::local_group(pgid),
            Host::Ssh(s) => s.group_stats(pgid),
        }
    }

    /// A whole file of this host.
    pub fn read_file(&self, path: &str) -> anyhow::Result<Vec<u8>> {
        match self {
            Host::Local | Host::Netns(_) => {
                std::fs::read(path).with_context(|| format!("cannot read {path}"))
            }
            Host::Ssh(s) => s.read_file(path),
        }
    }
}

/// A path that runs this very fairbench binary: its path, or, when that
/// file has been replaced since it started (a rebuild), /proc/PID/exe,
/// which still refers to the running binary. Agents must be the same build
/// as the fairbench that talks to them.
pub fn own_exe() -> String {
    use std::os::unix::fs::MetadataExt;
    let proc_exe = format!("/proc/{}/exe", std::process::id());
    let running = std::fs::metadata("/proc/self/exe").ok();
    if let Ok(path) = std::env::current_exe() {
        if let (Ok(m), Some(r)) = (std::fs::metadata(&path), &running) {
            if m.ino() == r.ino() && m.dev() == r.dev() {
                return path.display().to_string();
            }
        }
    }
    proc_exe
}

/// The loopback addresses of `port`, for code running "at" a host.
pub fn loopback(port: u16) -> [SocketAddr; 2] {
    fairbench_sys::process::loopback(port)
}

/// This machine as the orchestration sees it.
pub fn local_info() -> HostInfo {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    // SAFETY: sysconf has no preconditions.
    let (tck, page) = unsafe {
        (
            libc::sysconf(libc::_SC_CLK_TCK),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    HostInfo {
        boot_id: read("/proc/sys/kernel/random/boot_id"),
        cpus: allowed_cpus(),
        hostname: read("/proc/sys/kernel/hostname"),
        kernel: read("/proc/sys/kernel/osrelease"),
        machine: std::env::consts::ARCH.to_string(),
        clk_tck: if tck > 0 { tck as f64 } else { 100.0 },
        page_size: if page > 0 { page as u64 } else { 4096 },
    }
}

/// The CPUs this process may run on.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is a plain bit array; sched_getaffinity fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return vec![0];
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// Runs `f` on a thread that has entered the network namespace `name`:
/// sockets it opens live in that namespace.
pub fn in_netns<R: Send>(name: &str, f: impl FnOnce() -> R + Send) -> anyhow::Result<R> {
    let path = format!("/run/netns/{name}");
    let ns = std::fs::File::open(&path)
        .with_context(|| format!("network namespace {name} is gone ({path})"))?;
    std::thread::scope(|s| {
        s.spawn(move || {
            use std::os::fd::AsRawFd;
            // SAFETY: setns on a valid namespace fd changes only this thread's
            // network namespace; the thread ends with the closure.
            if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                return Err(anyhow!(
                    "cannot enter network namespace {name}: {}",
                    std::io::Error::last_os_error()
                ));
            }
            Ok(f())
        })
        .join()
        .map_err(|_| anyhow!("a thread inside network namespace {name} panicked"))?
    })
}

/// Whether a host name or address means this machine's loopback.
pub fn is_loopback_name(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    h.eq_ignore_ascii_case("localhost")
        || h.parse::<std::net::IpAddr>().is_ok_and(|a| a.is_loopback())
}

/// `host` as it goes into a URL: IPv6 literals in brackets.
pub fn url_host(host: &str) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_may_use_some_cpu() {
        assert!(!allowed_cpus().is_empty());
    }

    #[test]
    fn wraps_for_a_namespace() {
        let h = Host::Netns("fairbench-1-1-c0".into());
        assert_eq!(
            h.wrap(&["a".into(), "b c".into()]),
            vec!["ip", "netns", "exec", "fairbench-1-1-c0", "a", "b c"]
        );
        assert_eq!(Host::Local.wrap(&["x".into()]), vec!["x"]);
    }

    #[test]
    fn loopback_names() {
        assert!(is_loopback_name("127.0.0.1"));
        assert!(is_loopback_name("[::1]"));
        assert!(is_loopback_name("LocalHost"));
        assert!(!is_loopback_name("198.18.0.1"));
        assert_eq!(url_host("::1"), "[::1]");
        assert_eq!(url_host("10.0.0.1"), "10.0.0.1");
    }

    #[test]
    fn local_info_is_sane() {
        let i = local_info();
        assert!(!i.boot_id.is_empty());
        assert!(i.clk_tck > 0.0 && i.page_size >= 4096);
    }
}
