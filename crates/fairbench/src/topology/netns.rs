//! Network namespaces on one machine: a server namespace (or this machine's
//! own namespace, for `fairbench load`) and one namespace per load
//! generator, each generator joined to the server by its own veth pair with
//! addresses from 198.18.0.0/15 (RFC 2544's benchmarking range), optionally
//! shaped with tc.
//!
//! Everything is named after the fairbench process that made it
//! (`fairbench-<pid>-<n>-…` for namespaces, `fb<pid>-<n>-<i>` in hex for the
//! veth ends in this machine's own namespace), removed by a guard's
//! destructor or the second-Ctrl-C hook, and, when the process died without
//! either, found and removed by the next fairbench that builds a topology.

use std::net::Ipv4Addr;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail};
use fairbench_sys::process::bounded::{self, Finished};
use serde::Serialize;

use super::link::{self, Link};
use crate::interrupt::CleanupGuard;

/// Namespaces fairbench creates start with this.
pub const PREFIX: &str = "fairbench-";

static SEQ: AtomicU64 = AtomicU64::new(1);

/// Where the server end of every link lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerSide {
    /// A namespace of its own, where fairbench starts the server.
    Namespace,
    /// This machine's own namespace, where a server is already running
    /// (`fairbench load --topology netns`).
    Root,
}

/// One load generator's namespace and link.
#[derive(Debug, Clone, Serialize)]
pub struct ClientLink {
    pub namespace: String,
    /// The generator's address.
    pub address: Ipv4Addr,
    /// The server's address on this link: what the generator connects to.
    pub server_address: Ipv4Addr,
    pub client_dev: String,
    pub server_dev: String,
}

#[derive(Serialize)]
pub struct NetnsTopology {
    pub id: String,
    /// `None` when the server side is this machine's own namespace.
    pub server_namespace: Option<String>,
    pub clients: Vec<ClientLink>,
    pub link: Link,
    #[serde(skip)]
    teardown: Arc<Teardown>,
    #[serde(skip)]
    _hook: CleanupGuard,
}

#[derive(Default)]
struct Teardown {
    namespaces: std::sync::Mutex<Vec<String>>,
    root_links: std::sync::Mutex<Vec<String>>,
    done: AtomicBool,
}

impl Teardown {
    fn run(&self) {
        if self.done.swap(true, Ordering::SeqCst) {
            return;
        }
        let links = self
            .root_links
            .lock()
            .map(|v| v.clone())
            .unwrap_or_default();
        let namespaces = self
            .namespaces
            .lock()
            .map(|v| v.clone())
            .unwrap_or_default();
        remove(&namespaces, &links);
    }
}

/// Kills what still runs in the namespaces and deletes them and the links.
fn remove(namespaces: &[String], root_links: &[String]) {
    for ns in namespaces {
        kill_inside(ns);
    }
    for l in root_links {
        let _ = quiet(&["link", "del", l]);
    }
    for ns in namespaces {
        let _ = quiet(&["netns", "del", ns]);
    }
}

fn kill_inside(ns: &str) {
    if let Ok(out) = command("ip", &["netns", "pids", ns]) {
        for pid in String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .filter_map(|p| p.parse::<i32>().ok())
        {
            // SAFETY: kill has no memory-safety preconditions.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

impl Drop for NetnsTopology {
    fn drop(&mut self) {
        self.teardown.run();
    }
}

/// `ip ARGS`, an error with ip's own words if it fails.
fn ip(args: &[&str]) -> anyhow::Result<()> {
    run("ip", args)
}

/// How long `ip` or `tc` may take: they answer in milliseconds, but a
/// netlink call can block on a kernel lock a stuck driver holds.
const BOUND: Duration = Duration::from_secs(60);

/// `prog ARGS` run to its end (within [`BOUND`]), its output kept.
fn command(prog: &str, args: &[&str]) -> std::io::Result<Finished> {
    let mut cmd = Command::new(prog);
    cmd.args(args);
    bounded::run(cmd, None, BOUND)
}

fn run(prog: &str, args: &[&str]) -> anyhow::Result<()> {
    let out = command(prog, args)
        .map_err(|e| anyhow!("cannot run {prog}: {e} (network namespaces need iproute2)"))?;
    match out.status {
        Some(s) if s.success() => return Ok(()),
        None => bail!(
            "`{prog} {}`: still running after {} s: killed",
            args.join(" "),
            BOUND.as_secs()
        ),
        Some(_) => {}
    }
    let err = out.stderr_text();
    let line = err
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("failed");
    bail!("`{prog} {}`: {line}", args.join(" "))
}

fn quiet(args: &[&str]) -> bool {
    command("ip", args).is_ok_and(|f| f.status.is_some_and(|s| s.success()))
}

/// Root is needed for namespaces and veth pairs; one clear message otherwise.
pub fn require_root() -> anyhow::Result<()> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        bail!("--topology netns needs root: it creates network namespaces and veth pairs (run fairbench as root, e.g. with sudo)");
    }
    if command("ip", &["-V"]).is_err() {
        bail!("--topology netns needs the `ip` command (Debian: apt-get install iproute2)");
    }
    Ok(())
}

/// Whether the kernel has netem, tried in a throw-away namespace.
pub fn netem_available() -> anyhow::Result<bool> {
    let ns = format!(
        "{PREFIX}{}-{}-probe",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    );
    ip(&["netns", "add", &ns])?;
    let out = command(
        "tc",
        &[
            "-n", &ns, "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms",
        ],
    );
    let _ = quiet(&["netns", "del", &ns]);
    let out = out.map_err(|e| anyhow!("cannot run tc: {e} (link shaping needs iproute2)"))?;
    match out.status {
        Some(s) if s.success() => return Ok(true),
        None => bail!(
            "tc cannot add netem: still running after {} s: killed",
            BOUND.as_secs()
        ),
        Some(_) => {}
    }
    let err = out.stderr_text();
    if err.contains(link::UNKNOWN_QDISC) {
        return Ok(false);
    }
    bail!(
        "tc cannot add netem: {}",
        err.lines().next().unwrap_or("failed").trim()
    )
}

/// Whether a fairbench process with this pid is still alive.
fn owner_alive(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|c| c.trim().starts_with("fairbench"))
        .unwrap_or(false)
}

/// The owner pid in a namespace name `fairbench-<pid>-…`.
fn namespace_owner(name: &str) -> Option<u32> {
    name.strip_prefix(PREFIX)?.split('-').next()?.parse().ok()
}

/// The owner pid in a root-side veth name `fb<pid hex>-<n hex>-<i hex>`.
fn link_owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("fb")?;
    let parts: Vec<&str> = rest.split('-').collect();
    if parts.len() != 3
        || parts
            .iter()
            .any(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        return None;
    }
    u32::from_str_radix(parts[0], 16).ok()
}

/// Namespaces whose names start with `fairbench-`.
pub fn namespaces() -> Vec<String> {
    let Ok(out) = command("ip", &["netns", "list"]) else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(PREFIX))
        .map(str::to_string)
        .collect()
}

/// Root-namespace veth ends named by fairbench.
pub fn root_links() -> Vec<String> {
    let Ok(out) = command("ip", &["-o", "link", "show"]) else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let name = l.split(':').nth(1)?.trim();
            Some(name.split('@').next()?.to_string())
        })
        .filter(|n| link_owner(n).is_some())
        .collect()
}

/// Removes the namespaces and links of fairbench processes that are gone
/// (killed, crashed); returns what it removed.
pub fn clean_leftovers() -> Vec<String> {
    let dead_ns: Vec<String> = namespaces()
        .into_iter()
        .filter(|n| namespace_owner(n).is_some_and(|p| !owner_alive(p)))
        .collect();
    let dead_links: Vec<String> = root_links()
        .into_iter()
        .filter(|n| link_owner(n).is_some_and(|p| !owner_alive(p)))
        .collect();
    remove(&dead_ns, &dead_links);
    dead_ns.into_iter().chain(dead_links).collect()
}

/// Holds an exclusive lock on a file in /run while root-namespace
/// addresses are chosen and assigned, so that two fairbench processes do
/// not pick the same subnet.
struct AddressLock {
    _file: std::fs::File,
}

impl AddressLock {
    fn take() -> anyhow::Result<AddressLock> {
        let path = "/run/fairbench-netns.lock";
        let f = fairbench_sys::flock::exclusive(std::path::Path::new(path))
            .map_err(|e| anyhow!("cannot lock {path}: {e}"))?;
        Ok(AddressLock { _file: f })
    }
}

/// The /30 blocks of 198.18.0.0/15 taken, and where to look for the next.
struct Blocks {
    used: std::collections::HashSet<u32>,
    next: u32,
}

impl Blocks {
    /// The first block not in use, now taken.
    fn take(&mut self) -> anyhow::Result<u32> {
        while self.used.contains(&self.next) {
            self.next += 1;
        }
        if self.next >= 1 << 15 {
            bail!("198.18.0.0/15 is full: no free /30 for another link");
        }
        self.used.insert(self.next);
        Ok(self.next)
    }
}

/// The /30 block `b` of 198.18.0.0/15: (network, server end, client end).
fn block(b: u32) -> (Ipv4Addr, Ipv4Addr, Ipv4Addr) {
    let base = u32::from(Ipv4Addr::new(198, 18, 0, 0)) + b * 4;
    (
        Ipv4Addr::from(base),
        Ipv4Addr::from(base + 1),
        Ipv4Addr::from(base + 2),
    )
}

/// Blocks with an address in use in this machine's own namespace.
fn blocks_in_use() -> std::collections::HashSet<u32> {
    let out = command("ip", &["-4", "-o", "addr", "show"]);
    let base = u32::from(Ipv4Addr::new(198, 18, 0, 0));
    let mut used = std::collections::HashSet::new();
    if let Ok(out) = out {
        for w in String::from_utf8_lossy(&out.stdout).split_whitespace() {
            if let Some(a) = w.split('/').next().and_then(|a| a.parse::<Ipv4Addr>().ok()) {
                let a = u32::from(a);
                if (base..base + (1 << 17)).contains(&a) {
                    used.insert((a - base) / 4);
                }
            }
        }
    }
    used
}

impl NetnsTopology {
    /// Builds `clients` client namespaces linked to the server side, shaped
    /// as `link` says (no client: a server namespace alone, for `check`).
    /// Needs root. Cleans up after itself if any step fails.
    pub fn create(side: ServerSide, clients: usize, link: Link) -> anyhow::Result<NetnsTopology> {
        require_root()?;
        if clients > 255 {
            bail!("--clients: at most 255 load generators");
        }
        if link.is_shaped() && !link::tc_present() {
            bail!("link shaping needs the `tc` command (Debian: apt-get install iproute2)");
        }
        if link.delay.is_some() && !netem_available()? {
            bail!("{}", link::no_netem_message());
        }
        let pid = std::process::id();
        let seq = SEQ.fetch_add(1, Ordering::Relaxed);
        let id = format!("{PREFIX}{pid}-{seq}");
        let teardown = Arc::new(Teardown::default());
        let hook = {
            let t = teardown.clone();
            crate::interrupt::on_exit(move || t.run())
        };
        let mut topo = NetnsTopology {
            id: id.clone(),
            server_namespace: None,
            clients: Vec::new(),
            link,
            teardown,
            _hook: hook,
        };
        if side == ServerSide::Namespace {
            let s = format!("{id}-srv");
            topo.add_namespace(&s)?;
            topo.server_namespace = Some(s);
        }
        // Root-side addresses are shared by every process: choose them
        // under a lock, away from blocks in use. Namespaced ones are private.
        let _lock = match side {
            ServerSide::Root => Some(AddressLock::take()?),
            ServerSide::Namespace => None,
        };
        let mut blocks = Blocks {
            used: match side {
                ServerSide::Root => blocks_in_use(),
                ServerSide::Namespace => Default::default(),
            },
            next: 0,
        };
        for i in 0..clients {
            let cns = format!("{id}-c{i}");
            topo.add_namespace(&cns)?;
            let cdev = format!("fbc{i}");
            let sdev = match side {
                ServerSide::Namespace => format!("fbs{i}"),
                ServerSide::Root => format!("fb{pid:x}-{:x}-{i:x}", seq % 256),
            };
            topo.add_veth(side, &cns, &cdev, &sdev)?;
            let (_, saddr, caddr) = block(blocks.take()?);
            let client = ClientLink {
                namespace: cns,
                address: caddr,
                server_address: saddr,
                client_dev: cdev,
                server_dev: sdev,
            };
            topo.address(side, &client)?;
            topo.shape(&client)?;
            topo.clients.push(client);
        }
        Ok(topo)
    }

    /// A namespace of this topology, with its loopback up; removed at
    /// teardown.
    fn add_namespace(&self, name: &str) -> anyhow::Result<()> {
        ip(&["netns", "add", name])?;
        self.teardown
            .namespaces
            .lock()
            .map_err(|_| anyhow!("poisoned"))?
            .push(name.to_string());
        ip(&["-n", name, "link", "set", "lo", "up"])
    }

    /// The veth pair `cdev` (in the client namespace `cns`) to `sdev` (on
    /// the server side); a root-side end is removed at teardown.
    fn add_veth(&self, side: ServerSide, cns: &str, cdev: &str, sdev: &str) -> anyhow::Result<()> {
        let mut args = vec![
            "link", "add", cdev, "netns", cns, "type", "veth", "peer", "name", sdev,
        ];
        if let Some(s) = &self.server_namespace {
            args.extend(["netns", s.as_str()]);
        }
        ip(&args)?;
        if side == ServerSide::Root {
            self.teardown
                .root_links
                .lock()
                .map_err(|_| anyhow!("poisoned"))?
                .push(sdev.to_string());
        }
        Ok(())
    }

    /// `-n NAMESPACE` for a command on the server side, when it has one.
    fn server_side(&self) -> Vec<&str> {
        let mut v: Vec<&str> = Vec::new();
        if let Some(s) = &self.server_namespace {
            v.extend(["-n", s.as_str()]);
        }
        v
    }

    /// `ip ARGS` on the server side.
    fn on_server(&self, rest: &[&str]) -> anyhow::Result<()> {
        let mut v = self.server_side();
        v.extend(rest);
        ip(&v)
    }

    /// The link's addresses on both ends, both ends up; from a root-side
    /// server, the client's default route through it.
    fn address(&self, side: ServerSide, c: &ClientLink) -> anyhow::Result<()> {
        let (cns, cdev, sdev) = (&c.namespace, &c.client_dev, &c.server_dev);
        ip(&[
            "-n",
            cns,
            "addr",
            "add",
            &format!("{}/30", c.address),
            "dev",
            cdev,
        ])?;
        self.on_server(&[
            "addr",
            "add",
            &format!("{}/30", c.server_address),
            "dev",
            sdev,
        ])?;
        ip(&["-n", cns, "link", "set", cdev, "up"])?;
        self.on_server(&["link", "set", sdev, "up"])?;
        if side == ServerSide::Root {
            // A URL naming one of this machine's own addresses works too.
            ip(&[
                "-n",
                cns,
                "route",
                "add",
                "default",
                "via",
                &c.server_address.to_string(),
            ])?;
        }
        Ok(())
    }

    /// The link's shaping on both ends, as `link` says.
    fn shape(&self, c: &ClientLink) -> anyhow::Result<()> {
        for cmd in self.link.tc_commands(&c.client_dev, false) {
            let mut v: Vec<&str> = vec!["-n", &c.namespace];
            v.extend(cmd.iter().map(String::as_str));
            run("tc", &v).map_err(shaping_error)?;
        }
        for cmd in self.link.tc_commands(&c.server_dev, true) {
            let mut v = self.server_side();
            v.extend(cmd.iter().map(String::as_str));
            run("tc", &v).map_err(shaping_error)?;
        }
        Ok(())
    }

    /// Removes everything now (also done on drop).
    pub fn teardown(&self) {
        self.teardown.run();
    }
}

fn shaping_error(e: anyhow::Error) -> anyhow::Error {
    if e.to_string().contains(link::UNKNOWN_QDISC) {
        anyhow!("{}", link::no_netem_message())
    } else {
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_from_names() {
        assert_eq!(namespace_owner("fairbench-1234-1-c0"), Some(1234));
        assert_eq!(namespace_owner("fairbench-x"), None);
        assert_eq!(namespace_owner("other-1234"), None);
        assert_eq!(link_owner("fb4d2-1-0"), Some(0x4d2));
        assert_eq!(link_owner("ifb0"), None);
        assert_eq!(link_owner("fbc0"), None);
        assert_eq!(link_owner("fb12-3"), None);
        assert!(owner_alive(std::process::id()));
    }

    #[test]
    fn blocks_are_slash_30s_in_the_benchmarking_range() {
        assert_eq!(
            block(0),
            (
                Ipv4Addr::new(198, 18, 0, 0),
                Ipv4Addr::new(198, 18, 0, 1),
                Ipv4Addr::new(198, 18, 0, 2)
            )
        );
        assert_eq!(block(64).1, Ipv4Addr::new(198, 18, 1, 1));
        assert_eq!(block((1 << 15) - 1).2, Ipv4Addr::new(198, 19, 255, 254));
    }

    #[test]
    fn names_fit_the_kernel_limit() {
        let longest = format!("fb{:x}-{:x}-{:x}", 4_194_304u32, 255, 254);
        assert!(longest.len() <= 15, "{longest}");
    }
}
