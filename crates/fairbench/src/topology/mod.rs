//! Where the server and the load generators run: the command-line flags,
//! and the [`Layout`] they build: one server [`Host`] and one or more client
//! hosts, each with the address it reaches the server at. The runner and the
//! commands use a Layout without knowing which topology made it.
//!
//! - `local`: everything on this machine, over loopback (the default).
//! - `netns`: a server namespace and client namespaces on this machine,
//!   joined by veth links that can be shaped (`--link-rate`, `--link-delay`).
//! - ssh hosts: `--server-host` and `--client-host`, other machines.

pub mod link;
pub mod netns;

use std::collections::HashMap;
use std::path::PathBuf;

use anyhow::Context;
use serde_json::json;

use crate::host::{self, Host, HostInfo, SshOptions, SshSession};
use crate::usage_error::usage;
pub use link::Link;
use netns::{NetnsTopology, ServerSide};

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TopologyKind {
    /// This machine, over loopback.
    #[default]
    Local,
    /// Network namespaces on this machine joined by veth links (needs root).
    Netns,
    /// Servers or load generators on other machines, reached over ssh
    /// (chosen by `--server-host`/`--client-host`, never by `--topology`).
    #[value(skip)]
    Ssh,
}

impl TopologyKind {
    /// The name the results database, the JSON and the summary use.
    pub fn as_str(self) -> &'static str {
        match self {
            TopologyKind::Local => "local",
            TopologyKind::Netns => "netns",
            TopologyKind::Ssh => "ssh",
        }
    }
}

impl std::fmt::Display for TopologyKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where the load runs (all commands that drive load).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ClientArgs {
    /// Where things run: `local` (this machine, loopback) or `netns` (the
    /// load generators, and for `run` the server, in network namespaces
    /// joined by veth links; needs root). See docs/topology.md.
    #[arg(long, value_enum, default_value = "local")]
    pub topology: TopologyKind,
    /// Limit the netns link to this rate in each direction (tc tbf), e.g. 100mbit, 1gbit.
    #[arg(long, value_name = "RATE")]
    pub link_rate: Option<String>,
    /// Add this much to every round trip on the netns link (tc netem), e.g. 2ms.
    #[arg(long, value_name = "DURATION")]
    pub link_delay: Option<String>,
    /// Split the load over N load generators started together, their results
    /// merged exactly (each in its own namespace with --topology netns).
    #[arg(long, value_name = "N", default_value = "1", value_parser = crate::args::positive_usize)]
    pub clients: usize,
    /// Run a load generator on this ssh host (repeatable: the connections and
    /// the rate are split between them and the results merged).
    #[arg(long = "client-host", value_name = "USER@HOST")]
    pub client_hosts: Vec<String>,
    /// The ssh configuration file to use instead of ~/.ssh/config.
    #[arg(long, value_name = "FILE")]
    pub ssh_config: Option<PathBuf>,
}

/// Where the server runs (`run`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ServerArgs {
    /// Run the server on this ssh host: fairbench copies the built server and
    /// itself there, starts and pins the server there, and reads its /proc.
    #[arg(long, value_name = "USER@HOST")]
    pub server_host: Option<String>,
    /// The address the load generators reach the server at
    /// [default: the server host's HostName as ssh resolves it].
    #[arg(long, value_name = "ADDR")]
    pub server_address: Option<String>,
}

/// Where `check` starts the servers it checks.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct CheckPlaceArgs {
    /// `local`, or `netns`: start each server in a network namespace of its
    /// own and check it from there (needs root). See docs/topology.md.
    #[arg(long, value_enum, default_value = "local")]
    pub topology: TopologyKind,
    /// Start and check the servers on this ssh host (fairbench copies the
    /// built server and itself there).
    #[arg(long, value_name = "USER@HOST")]
    pub server_host: Option<String>,
    /// The ssh configuration file to use instead of ~/.ssh/config.
    #[arg(long, value_name = "FILE")]
    pub ssh_config: Option<PathBuf>,
}

/// One load generator's place.
pub struct ClientSite {
    pub host: Host,
    /// The server's address as this generator reaches it.
    pub server_addr: String,
    pub info: HostInfo,
    /// On the same machine as the server (the same kernel boot id).
    pub with_server: bool,
    /// How many generators share this generator's machine (itself included).
    pub machine_share: usize,
}

pub struct Layout {
    pub kind: TopologyKind,
    pub server: Host,
    pub server_info: HostInfo,
    pub clients: Vec<ClientSite>,
    pub link: Link,
    /// Printed once when the layout is built (e.g. leftovers removed).
    pub notes: Vec<String>,
    netns: Option<NetnsTopology>,
    // Sessions are held by the hosts; kept here too so that they outlive
    // every host clone until the layout is dropped.
    _sessions: Vec<std::sync::Arc<SshSession>>,
}

impl ClientArgs {
    /// The flags' own consistency, without opening anything (`run
    /// --dry-run` checks what a real run would).
    pub fn check(&self, server: Option<&ServerArgs>) -> anyhow::Result<Link> {
        let link =
            Link::parse(self.link_rate.as_deref(), self.link_delay.as_deref()).map_err(usage)?;
        let ssh = !self.client_hosts.is_empty() || server.is_some_and(|s| s.server_host.is_some());
        if link.is_shaped() && self.topology != TopologyKind::Netns {
            return Err(usage(
                "--link-rate and --link-delay shape the virtual link of --topology netns (with ssh hosts the network is real: shape it there)",
            ));
        }
        if self.topology == TopologyKind::Netns && ssh {
            return Err(usage(
                "--topology netns runs everything on this machine; it does not combine with --server-host or --client-host",
            ));
        }
        if self.clients == 0 || self.clients > 64 {
            return Err(usage("--clients: between 1 and 64 load generators"));
        }
        if self.clients > 1 && !self.client_hosts.is_empty() {
            return Err(usage(
                "--clients counts load generators on this machine; with --client-host there is one per host (name a host twice to run two there)",
            ));
        }
        if server.is_some_and(|s| s.server_address.is_some() && !ssh) {
            return Err(usage(
                "--server-address only applies with --server-host or --client-host",
            ));
        }
        Ok(link)
    }
}

fn same_machine(a: &HostInfo, b: &HostInfo) -> bool {
    !a.boot_id.is_empty() && a.boot_id == b.boot_id
}

impl Layout {
    /// Aims the load at `loopback` (127.0.0.1 or ::1) instead of 127.0.0.1:
    /// only where server and load share this machine's loopback.
    pub fn aim_at(&mut self, loopback: &str) -> Result<(), String> {
        if loopback == "127.0.0.1" {
            return Ok(());
        }
        if self.kind != TopologyKind::Local || !matches!(self.server, Host::Local) {
            return Err(format!(
                "the suite's address_family sends the load to {loopback}: only with server and load on this machine (no --topology, --server-host or --client-host)"
            ));
        }
        for c in &mut self.clients {
            c.server_addr = loopback.to_string();
        }
        Ok(())
    }

    /// For `run` and `check`: fairbench starts the server.
    pub fn for_run(c: &ClientArgs, s: &ServerArgs) -> anyhow::Result<Layout> {
        let link = c.check(Some(s))?;
        if c.topology == TopologyKind::Netns {
            return Self::with_netns(ServerSide::Namespace, c.clients, link);
        }
        let opts = SshOptions {
            config: c.ssh_config.clone(),
        };
        let mut sessions = Vec::new();
        let (server, server_name) = match &s.server_host {
            Some(dest) => {
                let sess = SshSession::open(dest, &opts)
                    .with_context(|| format!("--server-host {dest}"))?;
                sessions.push(sess.clone());
                let name = s
                    .server_address
                    .clone()
                    .or_else(|| host::SshSession::resolve(dest, &opts))
                    .unwrap_or_else(|| dest.rsplit('@').next().unwrap_or(dest).to_string());
                (Host::Ssh(sess), Some(name))
            }
            None => (Host::Local, None),
        };
        let server_info = server.info();
        let mut clients = Vec::new();
        if c.client_hosts.is_empty() {
            let info = host::local_info();
            let addr = match &server_name {
                Some(n) => n.clone(),
                None => "127.0.0.1".into(),
            };
            for _ in 0..c.clients {
                clients.push(ClientSite {
                    host: Host::Local,
                    server_addr: addr.clone(),
                    with_server: same_machine(&info, &server_info),
                    info: info.clone(),
                    machine_share: 1,
                });
            }
        } else {
            for dest in &c.client_hosts {
                let sess = SshSession::open(dest, &opts)
                    .with_context(|| format!("--client-host {dest}"))?;
                sessions.push(sess.clone());
                let info = sess.info().clone();
                let with_server = same_machine(&info, &server_info);
                let addr = match (&server_name, &s.server_address) {
                    (Some(n), _) => n.clone(),
                    (None, Some(a)) => a.clone(),
                    (None, None) => {
                        let resolved = SshSession::resolve(dest, &opts).unwrap_or_default();
                        if with_server || host::is_loopback_name(&resolved) {
                            "127.0.0.1".into()
                        } else {
                            return Err(usage(format!(
                                "--client-host {dest}: the load generators need this machine's address to reach the server here: pass --server-address ADDR"
                            )));
                        }
                    }
                };
                clients.push(ClientSite {
                    host: Host::Ssh(sess),
                    server_addr: addr,
                    with_server,
                    info,
                    machine_share: 1,
                });
            }
        }
        let mut layout = Layout {
            kind: if sessions.is_empty() {
                TopologyKind::Local
            } else {
                TopologyKind::Ssh
            },
            server,
            server_info,
            clients,
            link,
            notes: Vec::new(),
            netns: None,
            _sessions: sessions,
        };
        layout.count_shares();
        Ok(layout)
    }

    /// For `check`: only a place for the server, no load generators.
    pub fn for_check(a: &CheckPlaceArgs) -> anyhow::Result<Layout> {
        if a.topology == TopologyKind::Netns && a.server_host.is_some() {
            return Err(usage(
                "--topology netns runs the server on this machine; it does not combine with --server-host",
            ));
        }
        let c = ClientArgs {
            topology: a.topology,
            ssh_config: a.ssh_config.clone(),
            ..ClientArgs::default()
        };
        let mut layout = if a.topology == TopologyKind::Netns {
            Self::with_netns(ServerSide::Namespace, 0, Link::default())?
        } else {
            let s = ServerArgs {
                server_host: a.server_host.clone(),
                server_address: None,
            };
            Self::for_run(&ClientArgs { clients: 1, ..c }, &s)?
        };
        layout.clients.clear();
        Ok(layout)
    }

    /// For `load`: the server is already running on this machine (or
    /// wherever the URL points).
    pub fn for_load(c: &ClientArgs) -> anyhow::Result<Layout> {
        let link = c.check(None)?;
        if c.topology == TopologyKind::Netns {
            return Self::with_netns(ServerSide::Root, c.clients, link);
        }
        let mut s = ServerArgs::default();
        if !c.client_hosts.is_empty() {
            // The URL says where the server is; the address is not used.
            s.server_address = Some(String::new());
        }
        Self::for_run(c, &s)
    }

    fn with_netns(side: ServerSide, clients: usize, link: Link) -> anyhow::Result<Layout> {
        netns::require_root()?;
        let mut notes = Vec::new();
        let removed = netns::clean_leftovers();
        if !removed.is_empty() {
            notes.push(format!(
                "removed what earlier fairbench processes left behind: {}",
                removed.join(", ")
            ));
        }
        let topo = NetnsTopology::create(side, clients, link)?;
        let info = host::local_info();
        let server = match &topo.server_namespace {
            Some(n) => Host::Netns(n.clone()),
            None => Host::Local,
        };
        let sites = topo
            .clients
            .iter()
            .map(|c| ClientSite {
                host: Host::Netns(c.namespace.clone()),
                server_addr: c.server_address.to_string(),
                info: info.clone(),
                with_server: true,
                machine_share: 1,
            })
            .collect();
        let mut layout = Layout {
            kind: TopologyKind::Netns,
            server,
            server_info: info,
            clients: sites,
            link,
            notes,
            netns: Some(topo),
            _sessions: Vec::new(),
        };
        layout.count_shares();
        Ok(layout)
    }

    fn count_shares(&mut self) {
        let mut per: HashMap<String, usize> = HashMap::new();
        for c in &self.clients {
            *per.entry(c.info.boot_id.clone()).or_default() += 1;
        }
        for c in self.clients.iter_mut() {
            c.machine_share = per.get(&c.info.boot_id).copied().unwrap_or(1);
        }
    }

    /// The load runs in this process (the engine here), not through agents.
    pub fn in_process(&self) -> bool {
        self.clients.len() == 1 && matches!(self.clients[0].host, Host::Local)
    }

    /// The server's CPUs: on its own machine.
    pub fn server_cpus(&self, local: &[usize]) -> Vec<usize> {
        match self.server {
            Host::Ssh(_) => self.server_info.cpus.clone(),
            _ => local.to_vec(),
        }
    }

    /// For the results database (`runs.topology_json`) and `--json` output.
    pub fn describe(&self) -> serde_json::Value {
        let clients: Vec<serde_json::Value> = self
            .clients
            .iter()
            .map(|c| {
                json!({
                    "host": c.host.label(),
                    "server_address": c.server_addr,
                    "same_machine_as_server": c.with_server,
                    "hostname": c.info.hostname,
                    "kernel": c.info.kernel,
                    "cpus": c.info.cpus.len(),
                })
            })
            .collect();
        json!({
            "topology": self.kind.as_str(),
            "server": {
                "host": self.server.label(),
                "hostname": self.server_info.hostname,
                "kernel": self.server_info.kernel,
                "cpus": self.server_info.cpus.len(),
            },
            "clients": clients,
            "link": self.link,
            "link_description": self.link.describe(),
            "netns": self.netns.as_ref().map(|t| serde_json::to_value(t).unwrap_or_default()),
        })
    }

    /// One line for people: where the server and the load are.
    pub fn summary(&self) -> String {
        let n = self.clients.len();
        let gens = if n == 1 {
            format!("load on {}", self.clients[0].host.label())
        } else {
            let mut labels: Vec<String> = self.clients.iter().map(|c| c.host.label()).collect();
            labels.dedup();
            format!("load split over {n} generators ({})", labels.join(", "))
        };
        let mut s = format!(
            "topology {}: server on {}, {gens}",
            self.kind,
            self.server.label()
        );
        if self.kind == TopologyKind::Netns {
            s.push_str(&format!(", link {}", self.link.describe()));
        }
        s
    }

    /// What makes a case measured in this layout less than it seems.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if self.kind == TopologyKind::Ssh {
            for c in self.clients.iter().filter(|c| c.with_server) {
                w.push(format!(
                    "the load generator on {} runs on the same machine as the server ({}): they compete for it",
                    c.host.label(),
                    self.server.label()
                ));
            }
        }
        w
    }

    /// Removes namespaces now rather than at drop (idempotent).
    pub fn teardown(&self) {
        if let Some(t) = &self.netns {
            t.teardown();
        }
    }
}
