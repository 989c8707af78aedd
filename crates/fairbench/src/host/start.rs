//! Starting one server for one scenario in its place — this machine, a
//! network namespace or an ssh host — the one way `check`, `run` and rate
//! sweeps do it: a free port there, the build copied there, the process
//! started in a control group of its own on its CPUs (the process-group
//! fallback where none can be made; see crates/sys/src/containment),
//! waited for until it accepts connections (over h3, until it completes a
//! QUIC handshake on its UDP port), and that very process checked against
//! the scenario contract.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use fairbench_zoo::fetch_h2::Trust;
use fairbench_zoo::launch::{self, LaunchParams, TlsFiles};
use fairbench_zoo::parity::{self, CaseId, CaseReport, InspectOptions};
use fairbench_zoo::pki::RunPki;
use fairbench_zoo::rule::{Grade, Rule};
use fairbench_zoo::{Protocol, ResponseKind, Scenario, Server};

use crate::host::{Host, ServerHandle};

/// Lines of the server's log kept when it did not become ready.
pub const LOG_TAIL: usize = 20;

/// What to start, and how patiently.
pub struct StartSpec<'a> {
    pub server: &'a Server,
    pub mode: &'a str,
    pub response: ResponseKind,
    pub scenario: &'a Scenario,
    /// CORES told to the server.
    pub cores: usize,
    /// WORKERS told to the server (isolates, GOMAXPROCS, processes) when it
    /// differs from CORES; `None`: the server uses CORES.
    pub workers: Option<usize>,
    /// More environment: the database's address and the pool size for the
    /// database scenarios (docs/scenarios.md).
    pub env: Vec<(String, String)>,
    /// The CPUs of its host it is pinned to; `None`: not pinned.
    pub cpus: Option<Vec<usize>>,
    /// The build output, on this machine.
    pub out_dir: &'a Path,
    pub log_path: PathBuf,
    pub ready_timeout: Duration,
    /// Between SIGTERM and SIGKILL when it is stopped.
    pub stop_grace: Duration,
    pub inspect: InspectOptions,
    /// What it serves on its port, and what the check speaks to it.
    pub protocol: Protocol,
    /// The run's CA and certificate, for h2 over TLS.
    pub pki: Option<&'a RunPki>,
    /// Where it listens: `None`, a free TCP port; a path, that unix domain
    /// socket (`UNIX_SOCKET`, this machine only), removed when it stops.
    pub unix_socket: Option<PathBuf>,
}

impl StartSpec<'_> {
    pub fn case_id(&self) -> CaseId {
        CaseId {
            server: self.server.name.clone(),
            mode: self.mode.to_string(),
            response: self.response,
            scenario: self.scenario.name.clone(),
            protocol: self.protocol,
        }
    }
}

/// How a client trusts a server started with `pki`'s certificate.
pub fn trust(pki: Option<&RunPki>) -> Option<Trust> {
    pki.map(|p| Trust {
        ca_pem: p.ca_pem.clone().into_bytes(),
    })
}

/// A started, ready server and the check of its answer.
pub struct Started {
    pub process: ServerHandle,
    /// Where it listens, on its host.
    pub port: u16,
    pub parity: CaseReport,
    /// What it serves there, and how a client trusts it (h2 over TLS).
    pub protocol: Protocol,
    pub trust: Option<Trust>,
    /// The unix socket it listens on instead of `port`.
    pub unix_socket: Option<SocketFile>,
    /// The lock on its log file while it runs (crate::stage's claim):
    /// a second check or run sharing the log folder names its own log,
    /// and the configuration beside it (nginx's), otherwise.
    pub log_claim: Option<std::fs::File>,
    /// The body size the check proved, when the scenario fixes it: every
    /// answer under load must carry it too (`None`: the scenario's bodies
    /// vary by design, or are encoded, or the check had no answer).
    pub fixed_body: Option<u64>,
}

/// Why a server could not be started; the process, if there was one, is
/// stopped.
#[derive(Debug)]
pub enum StartError {
    /// No free port on its host.
    NoPort(String),
    /// Its folder or build could not be copied to its host.
    Stage { host: String, message: String },
    /// Its manifest gives no command for this variant and scenario.
    Spec(String),
    /// The process would not start.
    Start(String),
    /// It started but did not accept connections in time (or exited).
    NotReady {
        message: String,
        /// Where its log is, for people.
        log: String,
        log_tail: Vec<String>,
    },
}

impl StartError {
    /// The rule a check reports the failure under.
    pub fn rule(&self) -> Rule {
        match self {
            StartError::NotReady { .. } => Rule::Ready,
            _ => Rule::Start,
        }
    }

    pub fn log_tail(&self) -> &[String] {
        match self {
            StartError::NotReady { log_tail, .. } => log_tail,
            _ => &[],
        }
    }
}

/// The bare reason, without the caller's framing.
impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::NoPort(m) => write!(f, "no free port: {m}"),
            StartError::Stage { message, .. }
            | StartError::Spec(message)
            | StartError::Start(message) => f.write_str(message),
            StartError::NotReady { message, .. } => f.write_str(message),
        }
    }
}

/// Starts `s` on `host`, waits until it is ready and checks it where it
/// is (its own loopback, from its namespace or through an ssh tunnel).
pub fn start(host: &Host, s: &StartSpec<'_>) -> Result<Started, StartError> {
    if !s.server.serves(s.protocol) {
        return Err(StartError::Spec(format!(
            "{} does not serve {}: {}",
            s.server.name,
            s.protocol,
            s.server.why_not(s.protocol)
        )));
    }
    let tls = tls_files(host, s)?;
    let port = match &s.unix_socket {
        Some(path) => unix_socket_here(host, s, path)?,
        None if s.protocol == Protocol::H3 && matches!(host, Host::Local) => free_udp_port(host)?,
        None => host
            .free_port()
            .map_err(|e| StartError::NoPort(format!("{e:#}")))?,
    };
    // On an ssh host: the server's folder, build and files copied there.
    let (server, out_dir) =
        host.stage_server(s.server, s.out_dir)
            .map_err(|e| StartError::Stage {
                host: host.label(),
                message: format!("{e:#}"),
            })?;
    let params = launch_params(s, port, out_dir, tls);
    let spec = launch::spec(&server, s.mode, s.response, &params)
        .map_err(|e| StartError::Spec(e.to_string()))?;
    render_templates(host, s, &server, &params)?;
    let process = host
        .start_server(&spec, port, s.ready_timeout)
        .map_err(StartError::Start)?;
    let ready = match &s.unix_socket {
        Some(path) => wait_unix_ready(&process, path, s.ready_timeout),
        None if s.protocol == Protocol::H3 => process
            .wait_ready_h3(port, trust(s.pki).as_ref(), s.ready_timeout)
            .map(drop),
        None => process.wait_ready(port, s.ready_timeout).map(drop),
    };
    if let Err(message) = ready {
        let e = StartError::NotReady {
            message,
            log: process.log_location(),
            log_tail: process.log_tail(LOG_TAIL),
        };
        process.stop();
        if let Some(path) = &s.unix_socket {
            let _ = std::fs::remove_file(path);
        }
        return Err(e);
    }
    let id = s.case_id();
    let deviations = &s
        .server
        .response(s.response)
        .deviations_for(&s.scenario.name);
    let inspect = InspectOptions {
        trust: trust(s.pki),
        ..s.inspect.clone()
    };
    let parity = match &s.unix_socket {
        Some(path) => parity::inspect_unix(path, s.scenario, &id, deviations, &inspect),
        None => host
            .with_loopback(port, |p| {
                parity::inspect(p, s.scenario, &id, deviations, &inspect)
            })
            .unwrap_or_else(|e| CaseReport::failed(&id, deviations, Rule::Fetch, format!("{e:#}"))),
    };
    let fixed_body = s
        .scenario
        .expect
        .body
        .fixed_len()
        .filter(|_| s.scenario.expect.content_encoding.is_none())
        .and(parity.row.as_ref().map(|r| r.body_bytes as u64));
    Ok(Started {
        process,
        port,
        fixed_body,
        parity,
        protocol: s.protocol,
        trust: inspect.trust,
        unix_socket: s.unix_socket.clone().map(SocketFile),
        log_claim: None,
    })
}

/// A unix socket is a file of this machine, and h2 is TLS over TCP: a
/// server here, over HTTP/1.1 or h2c, with no stale file at `path`. Its
/// port is 0: it has none.
fn unix_socket_here(host: &Host, s: &StartSpec<'_>, path: &Path) -> Result<u16, StartError> {
    if !matches!(host, Host::Local) {
        return Err(StartError::Spec(format!(
            "{}: a unix socket is reached on this machine only, and the server runs on {}",
            s.server.name,
            host.label()
        )));
    }
    if s.protocol.tls() {
        return Err(StartError::Spec(format!(
            "{}: {} over a unix socket is not offered (HTTP/1.1 and h2c are)",
            s.server.name, s.protocol
        )));
    }
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(StartError::Start(format!(
            "cannot remove the stale socket {}: {e}",
            path.display()
        ))),
        _ => Ok(0),
    }
}

/// A port free for TCP (what `free_port` finds) that is free for UDP too
/// on this machine: over h3 the server listens there.
fn free_udp_port(host: &Host) -> Result<u16, StartError> {
    for _ in 0..20 {
        let port = host
            .free_port()
            .map_err(|e| StartError::NoPort(format!("{e:#}")))?;
        if std::net::UdpSocket::bind((std::net::Ipv6Addr::UNSPECIFIED, port)).is_ok() {
            return Ok(port);
        }
    }
    Err(StartError::NoPort(
        "20 ports free for TCP were all taken for UDP".into(),
    ))
}

/// Polls until the server accepts a connection on its unix socket, it
/// exits, or `timeout` passes.
fn wait_unix_ready(
    process: &crate::host::ServerHandle,
    path: &Path,
    timeout: Duration,
) -> Result<(), String> {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        if let Some(how) = process.exit_description() {
            return Err(format!(
                "the server {how} before accepting connections on unix:{}",
                path.display()
            ));
        }
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Ok(());
        }
        if std::time::Instant::now() >= deadline {
            return Err(format!(
                "not accepting connections on unix:{} after {}s",
                path.display(),
                timeout.as_secs_f64()
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The certificate and key a server serving h2 over TLS reads: the run's,
/// on this machine; none for the other protocols.
fn tls_files(host: &Host, s: &StartSpec<'_>) -> Result<Option<TlsFiles>, StartError> {
    match (s.protocol.tls(), s.pki) {
        (false, _) => Ok(None),
        // The certificate files are on this machine, as templates are.
        (true, _) if matches!(host, Host::Ssh(_)) => Err(StartError::Spec(format!(
            "{}: h2 over TLS is not yet supported on an ssh host ({}): the run's certificate is written on this machine; run it here or in a namespace",
            s.server.name,
            host.label()
        ))),
        (true, Some(p)) => Ok(Some(TlsFiles {
            cert: p.cert_path.clone(),
            key: p.key_path.clone(),
        })),
        (true, None) => Err(StartError::Spec(format!(
            "{}: h2 over TLS needs the run's certificate, and none was made",
            s.server.name
        ))),
    }
}

/// What the manifest's placeholders are filled with for this start.
fn launch_params(
    s: &StartSpec<'_>,
    port: u16,
    out_dir: PathBuf,
    tls: Option<TlsFiles>,
) -> LaunchParams {
    LaunchParams {
        port,
        scenario: s.scenario.name.clone(),
        cores: s.cores,
        cpus: s.cpus.clone(),
        out_dir,
        // Beside the log: one folder per start, as the log is one file.
        conf_dir: s.log_path.with_extension("conf"),
        log_path: s.log_path.clone(),
        stop_grace: s.stop_grace,
        extra_env: s
            .workers
            .map(|w| ("WORKERS".to_string(), w.to_string()))
            .into_iter()
            .chain(s.env.iter().cloned())
            .collect(),
        protocol: s.protocol,
        tls,
        unix_socket: s.unix_socket.clone(),
    }
}

/// The mode's config-file templates, filled in, when it has any.
fn render_templates(
    host: &Host,
    s: &StartSpec<'_>,
    server: &Server,
    params: &LaunchParams,
) -> Result<(), StartError> {
    let templates = server
        .modes
        .get(s.mode)
        .is_some_and(|m| !m.templates.is_empty());
    if templates {
        // Written on this machine, where a namespace's server reads them too.
        if let Host::Ssh(_) = host {
            return Err(StartError::Spec(format!(
                "{}: config-file templates are written on this machine, and the server runs on {}: run it here or in a namespace",
                s.server.name,
                host.label()
            )));
        }
        launch::render_templates(server, s.mode, s.response, params)
            .map_err(|e| StartError::Spec(format!("templates: {e}")))?;
    }
    Ok(())
}

/// The unix socket a started server listens on, removed when this is
/// dropped: a server stopped by a signal leaves its socket file behind.
#[derive(Debug)]
pub struct SocketFile(PathBuf);

impl SocketFile {
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for SocketFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

impl Started {
    /// The answer passed its contract (warnings allowed).
    pub fn fair(&self) -> bool {
        self.parity.grade != Grade::Fail
    }

    pub fn parity_json(&self) -> String {
        serde_json::to_string(&self.parity).unwrap_or_else(|_| "{}".into())
    }

    /// Header and body bytes of its answer, when it answered.
    pub fn bytes(&self) -> (Option<u64>, Option<u64>) {
        match &self.parity.row {
            Some(r) => (Some(r.header_bytes as u64), Some(r.body_bytes as u64)),
            None => (None, None),
        }
    }

    /// Stores how the server is held: its control group and cpuset, or
    /// the process-group fallback.
    pub fn record_containment(&self, store: &crate::store::Store, id: i64) -> anyhow::Result<()> {
        let held = self.process.held();
        store.record_containment(id, held.method.as_str(), held.cpuset.as_deref())
    }

    /// A warning when the stopped server's control group would not go.
    pub fn leftover_warning(&self) -> Option<String> {
        self.process
            .leftover()
            .map(|why| format!("the server's control group was not removed: {why}"))
    }

    /// Why a normalized variant may not be measured: its failing rules.
    pub fn unfair_reason(&self) -> String {
        let failing: Vec<String> = self
            .parity
            .rules
            .iter()
            .filter(|r| r.grade == Grade::Fail)
            .map(|r| format!("{}: {}", r.rule.name(), r.detail))
            .collect();
        format!(
            "normalized variant fails its contract ({}); pass --allow-unfair to measure it anyway",
            failing.join("; ")
        )
    }
}
