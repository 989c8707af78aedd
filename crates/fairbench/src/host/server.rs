//! A started server on any host: a local one (this machine or a namespace
//! of it), in a control group of its own where one can be made, else a
//! process group; or one supervised on an ssh host by `fairbench agent
//! supervise`, which contains and pins it there the same way, reports its
//! pid, containment, readiness, group counters and exit, and stops it when
//! told to or when the ssh connection ends.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Stdio};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use fairbench_sys::containment::{Method, Usage};
use fairbench_sys::listener::Proto;
use fairbench_sys::process::{self, GroupGuard, ReadyError, ServerProcess, ServerSpec};

use super::{quote, Host, SshSession};

/// How a started server is held to its CPUs and measured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    pub method: Method,
    /// The CPUs its control group allows, as the kernel reports them.
    pub cpuset: Option<String>,
}

pub struct ServerHandle {
    host: Host,
    inner: Inner,
}

enum Inner {
    Process(ServerProcess),
    Remote(RemoteServer),
}

impl ServerHandle {
    pub(super) fn start(
        host: &Host,
        spec: &ServerSpec,
        port: u16,
        ready_timeout: Duration,
    ) -> Result<ServerHandle, String> {
        let inner = match host {
            Host::Local | Host::Netns(_) => {
                let mut spec = spec.clone();
                // `ip netns exec` execs the server in place: same pid, same
                // process group, control group and CPU affinity.
                spec.argv = host.wrap(&spec.argv);
                let p = ServerProcess::start(&spec).map_err(|e| e.to_string())?;
                if let Some(why) = p.fallback_reason() {
                    crate::host::groups::warn_fallback(why);
                }
                Inner::Process(p)
            }
            Host::Ssh(s) => {
                Inner::Remote(RemoteServer::start(s.clone(), spec, port, ready_timeout)?)
            }
        };
        Ok(ServerHandle {
            host: host.clone(),
            inner,
        })
    }

    pub fn host(&self) -> &Host {
        &self.host
    }

    /// The leader's pid on its host, which is also its process group id.
    pub fn pid(&self) -> u32 {
        match &self.inner {
            Inner::Process(p) => p.pid(),
            Inner::Remote(r) => r.pid,
        }
    }

    pub fn is_alive(&self) -> bool {
        match &self.inner {
            Inner::Process(p) => p.is_alive(),
            Inner::Remote(r) => r.is_alive(),
        }
    }

    /// How it is held: its control group (and cpuset) or the fallback.
    pub fn held(&self) -> Held {
        match &self.inner {
            Inner::Process(p) => Held {
                method: p.method(),
                cpuset: p.cpuset(),
            },
            Inner::Remote(r) => r.held(),
        }
    }

    /// Its control group's counters (all its processes, ever); `None`
    /// without a group.
    pub fn group_usage(&self) -> Option<Usage> {
        match &self.inner {
            Inner::Process(p) => p.group_usage(),
            Inner::Remote(r) => r.group_usage(),
        }
    }

    /// What went wrong removing its control group, once stopped.
    pub fn leftover(&self) -> Option<String> {
        match &self.inner {
            Inner::Process(p) => p.leftover(),
            Inner::Remote(r) => lock(&r.state.0).leftover.clone(),
        }
    }

    /// How it ended ("exited with status 3", "was killed by signal 9
    /// (SIGKILL)"), once it has.
    pub fn exit_description(&self) -> Option<String> {
        match &self.inner {
            Inner::Process(p) => p.exit_status().map(process::describe_exit),
            Inner::Remote(r) => r.exit_description(),
        }
    }

    /// Polls until the server accepts connections on its loopback `port`.
    pub fn wait_ready(&self, port: u16, timeout: Duration) -> Result<Duration, String> {
        match &self.inner {
            Inner::Process(p) => self
                .host
                .with_loopback(port, |p2| {
                    p.wait_ready(&super::loopback(p2), timeout)
                        .map_err(|e| e.to_string())
                })
                .map_err(|e| e.to_string())?,
            Inner::Remote(r) => r.wait_ready(timeout),
        }
    }

    /// Polls QUIC handshakes (ALPN h3, the run CA trusted) to its loopback
    /// `port` until one completes, it exits, or `timeout` passes: over
    /// HTTP/3 it listens on UDP, where no connection is accepted to tell.
    /// What answered must be the server's, as over TCP.
    pub fn wait_ready_h3(
        &self,
        port: u16,
        trust: Option<&fairbench_zoo::fetch_h2::Trust>,
        timeout: Duration,
    ) -> Result<Duration, String> {
        if let Inner::Remote(_) = self.inner {
            return Err("h3 is not served on an ssh host (its tunnel carries TCP only)".into());
        }
        let start = Instant::now();
        let deadline = start + timeout;
        let trust = trust.cloned();
        self.host
            .with_loopback(port, |p| {
                let mut last = String::new();
                loop {
                    if let Some(how) = self.exit_description() {
                        return Err(format!("the server {how} before answering QUIC"));
                    }
                    for a in super::loopback(p) {
                        let left = deadline.saturating_duration_since(Instant::now());
                        let t = left.clamp(Duration::from_millis(1), Duration::from_secs(1));
                        let dial = fairbench_zoo::dial::Dial::Tcp(a);
                        match fairbench_zoo::fetch_h3::handshake(&dial, trust.as_ref(), t) {
                            Ok(()) => return self.own_udp(port).map(|()| start.elapsed()),
                            Err(e) => last = e.to_string(),
                        }
                    }
                    if Instant::now() >= deadline {
                        return Err(format!(
                            "no QUIC handshake (h3) on UDP port {p} after {}s: {last}",
                            timeout.as_secs_f64()
                        ));
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            })
            .map_err(|e| e.to_string())?
    }

    /// Refuses a UDP `port` held by a process that is not the server's.
    fn own_udp(&self, port: u16) -> Result<(), String> {
        let Inner::Process(p) = &self.inner else {
            return Ok(());
        };
        match p.foreign_holder(port, Proto::Udp) {
            Some(holder) => Err(ReadyError::Foreign { port, holder }.to_string()),
            None => Ok(()),
        }
    }

    /// Where its log is, for people.
    pub fn log_location(&self) -> String {
        match &self.inner {
            Inner::Process(p) => p.log_path().display().to_string(),
            Inner::Remote(r) => r.local_log.display().to_string(),
        }
    }

    /// The last `n` lines of its log, control characters escaped.
    pub fn log_tail(&self, n: usize) -> Vec<String> {
        match &self.inner {
            Inner::Process(p) => p.log_tail(n),
            Inner::Remote(r) => r.log_tail(n),
        }
    }

    /// Stops the whole server (SIGTERM to each of its processes, then
    /// SIGKILL to all that are left after the grace period; its control
    /// group removed). Idempotent.
    pub fn stop(&self) {
        match &self.inner {
            Inner::Process(p) => {
                p.stop();
            }
            Inner::Remote(r) => r.stop(),
        }
    }
}

#[derive(Default)]
struct RemoteState {
    pid: Option<u32>,
    held: Option<Held>,
    /// The last `usage` answer and how many have come.
    usage: Option<Usage>,
    usages: u64,
    leftover: Option<String>,
    ready: Option<Result<Duration, String>>,
    exit: Option<String>,
    /// The supervisor's output ended (it exited or the connection broke).
    closed: bool,
    stderr: Vec<String>,
}

struct RemoteServer {
    host: Host,
    session: Arc<SshSession>,
    pid: u32,
    child: Mutex<Child>,
    stdin: Mutex<Option<ChildStdin>>,
    state: SharedState,
    remote_log: String,
    local_log: PathBuf,
    grace: Duration,
    group: Mutex<Option<GroupGuard>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl RemoteServer {
    fn start(
        session: Arc<SshSession>,
        spec: &ServerSpec,
        port: u16,
        ready_timeout: Duration,
    ) -> Result<RemoteServer, String> {
        let exe = session.fairbench_exe().map_err(|e| format!("{e:#}"))?;
        let name = spec
            .log_path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "server.log".into());
        let remote_log = format!("{}/logs/{name}", session.work_dir());
        let argv = supervise_argv(exe, spec, &remote_log, port, ready_timeout);

        if let Some(dir) = spec.log_path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = std::fs::write(
            &spec.log_path,
            format!(
                "# fairbench: on ssh {}: {}\n",
                session.dest(),
                quote::line(&spec.argv)
            ),
        );
        let mut cmd = Host::Ssh(session.clone()).command(&argv);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child =
            process::spawn_child(&mut cmd).map_err(|e| format!("cannot run ssh: {e}"))?;
        // Ctrl-C's terminate_all ends the local ssh; the supervisor sees its
        // input close and stops the server.
        let group = process::register_group(child.id() as i32);
        let state: SharedState = Arc::default();
        let stdout = child.stdout.take().expect("piped");
        let stderr = child.stderr.take().expect("piped");
        read_reports(stdout, state.clone());
        read_ssh_errors(stderr, state.clone());
        let stdin = child.stdin.take();
        let pid = wait_for_pid(&state, &mut child, &session)?;
        Ok(RemoteServer {
            host: Host::Ssh(session.clone()),
            session,
            pid,
            child: Mutex::new(child),
            stdin: Mutex::new(stdin),
            state,
            remote_log,
            local_log: spec.log_path.clone(),
            grace: spec.stop_grace,
            group: Mutex::new(Some(group)),
        })
    }

    fn is_alive(&self) -> bool {
        let st = lock(&self.state.0);
        st.exit.is_none() && !st.closed
    }

    fn held(&self) -> Held {
        lock(&self.state.0).held.clone().unwrap_or(Held {
            method: Method::ProcessGroup,
            cpuset: None,
        })
    }

    /// Asks the supervisor for its group's counters and waits (bounded)
    /// for the answer.
    fn group_usage(&self) -> Option<Usage> {
        if !self.held().method.is_cgroup() {
            return None;
        }
        let (lock_, cv) = &*self.state;
        let before = lock(lock_).usages;
        {
            let mut stdin = lock(&self.stdin);
            let w = stdin.as_mut()?;
            if w.write_all(b"usage\n").and_then(|_| w.flush()).is_err() {
                return None;
            }
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut st = lock(lock_);
        while st.usages == before && !st.closed && Instant::now() < deadline {
            st = cv
                .wait_timeout(st, Duration::from_millis(50))
                .map(|(g, _)| g)
                .unwrap_or_else(|p| p.into_inner().0);
        }
        (st.usages > before).then_some(st.usage).flatten()
    }

    fn exit_description(&self) -> Option<String> {
        let st = lock(&self.state.0);
        match (&st.exit, st.closed) {
            (Some(e), _) => Some(e.clone()),
            (None, true) => Some(format!(
                "was lost: the ssh connection to {} ended",
                self.session.dest()
            )),
            (None, false) => None,
        }
    }

    fn wait_ready(&self, timeout: Duration) -> Result<Duration, String> {
        let (lock_, cv) = &*self.state;
        // The supervisor gives up after `timeout` itself; allow for the trip.
        let deadline = Instant::now() + timeout + Duration::from_secs(10);
        let mut st = lock(lock_);
        loop {
            if let Some(r) = &st.ready {
                return r.clone();
            }
            if let Some(e) = &st.exit {
                return Err(format!("{e} before answering"));
            }
            if st.closed {
                return Err(format!(
                    "the ssh connection to {} ended before the server answered",
                    self.session.dest()
                ));
            }
            if Instant::now() > deadline {
                return Err(format!("did not answer within {}s", timeout.as_secs_f64()));
            }
            st = cv
                .wait_timeout(st, Duration::from_millis(100))
                .map(|(g, _)| g)
                .unwrap_or_else(|p| p.into_inner().0);
        }
    }

    fn log_tail(&self, n: usize) -> Vec<String> {
        let stopped = lock(&self.group).is_none();
        if stopped {
            return process::log_tail(&self.local_log, n);
        }
        let bytes = self.session.read_tail(&self.remote_log, 64 * 1024);
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> = text.lines().collect();
        let skip = lines.len().saturating_sub(n);
        lines[skip..]
            .iter()
            .map(|l| fairbench_sys::text::visible(l))
            .collect()
    }

    fn stop(&self) {
        let mut group = lock(&self.group);
        if group.is_none() {
            return;
        }
        if let Some(mut stdin) = lock(&self.stdin).take() {
            let _ = stdin.write_all(b"stop\n");
            let _ = stdin.flush();
        }
        {
            let (lock_, cv) = &*self.state;
            let deadline = Instant::now() + self.grace + Duration::from_secs(10);
            let mut st = lock(lock_);
            while st.exit.is_none() && !st.closed && Instant::now() < deadline {
                st = cv
                    .wait_timeout(st, Duration::from_millis(100))
                    .map(|(g, _)| g)
                    .unwrap_or_else(|p| p.into_inner().0);
            }
        }
        {
            let mut child = lock(&self.child);
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        // The server's log comes home with the rest of the run's logs.
        let mut log = self.host.read_file(&self.remote_log).unwrap_or_default();
        let ssh_err = lock(&self.state.0).stderr.clone();
        if !ssh_err.is_empty() {
            log.extend_from_slice(b"\n# fairbench: ssh said:\n");
            for l in ssh_err {
                log.extend_from_slice(l.as_bytes());
                log.push(b'\n');
            }
        }
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&self.local_log)
        {
            let _ = f.write_all(&log);
        }
        *group = None;
    }
}

impl Drop for RemoteServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// What the supervisor reports, and a signal for each report.
type SharedState = Arc<(Mutex<RemoteState>, Condvar)>;

/// `fairbench agent supervise` on the ssh host (`exe`) for `spec`, its log
/// at `remote_log` there, waiting up to `ready_timeout` for `port`.
fn supervise_argv(
    exe: String,
    spec: &ServerSpec,
    remote_log: &str,
    port: u16,
    ready_timeout: Duration,
) -> Vec<String> {
    let mut argv = vec![
        exe,
        "agent".into(),
        "supervise".into(),
        "--log".into(),
        remote_log.to_string(),
        "--cwd".into(),
        spec.cwd.display().to_string(),
        "--grace-ms".into(),
        spec.stop_grace.as_millis().to_string(),
        "--ready-port".into(),
        port.to_string(),
        "--ready-timeout-ms".into(),
        ready_timeout.as_millis().to_string(),
    ];
    if let Some(cpus) = &spec.cpus {
        argv.push("--cpus".into());
        argv.push(crate::args::format_cpus(cpus));
    }
    for (k, v) in &spec.env {
        argv.push("--env".into());
        argv.push(format!("{k}={v}"));
    }
    argv.push("--".into());
    argv.extend(spec.argv.iter().cloned());
    argv
}

/// Reads the supervisor's reports into `state` on a thread of their own,
/// until its output ends.
fn read_reports(stdout: ChildStdout, state: SharedState) {
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let (lock_, cv) = &*state;
            let mut st = lock(lock_);
            report(&mut st, &line);
            cv.notify_all();
        }
        let (lock_, cv) = &*state;
        lock(lock_).closed = true;
        cv.notify_all();
    });
}

/// One report line of the supervisor, `WORD REST`, taken into `st`.
fn report(st: &mut RemoteState, line: &str) {
    let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
    match word {
        "pid" => st.pid = rest.trim().parse().ok(),
        "contained" => {
            let (held, why) = parse_contained(rest);
            if let Some(why) = why {
                crate::host::groups::warn_fallback(&why);
            }
            st.held = Some(held);
        }
        "usage" => {
            st.usage = parse_usage(rest);
            st.usages += 1;
        }
        "leftover" => st.leftover = Some(rest.to_string()),
        "ready" => {
            let ms: u64 = rest.trim().parse().unwrap_or(0);
            st.ready = Some(Ok(Duration::from_millis(ms)));
        }
        "notready" => st.ready = Some(Err(rest.to_string())),
        "exit" => st.exit = Some(rest.to_string()),
        _ => {}
    }
}

/// Keeps what ssh says on stderr, made visible, once it has said it all.
fn read_ssh_errors(stderr: ChildStderr, state: SharedState) {
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = BufReader::new(stderr).read_to_string(&mut text);
        let (lock_, cv) = &*state;
        lock(lock_).stderr = text.lines().map(fairbench_sys::text::visible).collect();
        cv.notify_all();
    });
}

/// The server's pid as the supervisor reports it (waiting up to a
/// minute); else ssh is ended and the error names the last thing it said.
fn wait_for_pid(
    state: &SharedState,
    child: &mut Child,
    session: &SshSession,
) -> Result<u32, String> {
    let (lock_, cv) = &**state;
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut st = lock(lock_);
    while st.pid.is_none() && !st.closed && Instant::now() < deadline {
        st = cv
            .wait_timeout(st, Duration::from_millis(100))
            .map(|(g, _)| g)
            .unwrap_or_else(|p| p.into_inner().0);
    }
    if let Some(p) = st.pid {
        return Ok(p);
    }
    // Give stderr a moment to arrive for the message.
    drop(st);
    std::thread::sleep(Duration::from_millis(200));
    let st = lock(lock_);
    let why = st
        .stderr
        .iter()
        .rfind(|l| !l.trim().is_empty())
        .cloned()
        .unwrap_or_else(|| "no answer from the remote supervisor".into());
    drop(st);
    let _ = child.kill();
    let _ = child.wait();
    Err(format!(
        "cannot start on ssh host {}: {why}",
        session.dest()
    ))
}

/// `contained METHOD CPUSET [WHY…]` from the supervisor (`-` for none).
fn parse_contained(rest: &str) -> (Held, Option<String>) {
    let mut parts = rest.splitn(3, ' ');
    let method = match parts.next().unwrap_or("") {
        "cgroup-v1" => Method::CgroupV1,
        "cgroup-v2" => Method::CgroupV2,
        _ => Method::ProcessGroup,
    };
    let cpuset = parts
        .next()
        .filter(|c| !c.is_empty() && *c != "-")
        .map(str::to_string);
    let why = parts
        .next()
        .map(str::trim)
        .filter(|w| !w.is_empty())
        .map(fairbench_sys::text::visible);
    (Held { method, cpuset }, why)
}

/// `usage CPU_S PEAK` from the supervisor (`-` for a counter it lacks).
fn parse_usage(rest: &str) -> Option<Usage> {
    let mut parts = rest.split_whitespace();
    let cpu_s = parts.next()?.parse().ok();
    let memory_peak = parts.next().and_then(|v| v.parse().ok());
    Some(Usage { cpu_s, memory_peak })
}

/// The supervisor's side of `parse_contained`.
pub fn contained_line(p: &ServerProcess) -> String {
    format!(
        "contained {} {} {}",
        p.method().as_str(),
        p.cpuset().unwrap_or_else(|| "-".into()),
        p.fallback_reason().unwrap_or("")
    )
    .trim_end()
    .to_string()
}

/// The supervisor's side of `parse_usage`.
pub fn usage_line(u: Option<Usage>) -> String {
    let u = u.unwrap_or_default();
    format!(
        "usage {} {}",
        u.cpu_s.map(|c| c.to_string()).unwrap_or_else(|| "-".into()),
        u.memory_peak
            .map(|m| m.to_string())
            .unwrap_or_else(|| "-".into())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supervisor_lines_round_trip() {
        let (h, why) = parse_contained("cgroup-v1 1");
        assert_eq!(
            h,
            Held {
                method: Method::CgroupV1,
                cpuset: Some("1".into())
            }
        );
        assert_eq!(why, None);
        let (h, why) = parse_contained("process-group - cannot create /x: Permission denied");
        assert_eq!(h.method, Method::ProcessGroup);
        assert_eq!(h.cpuset, None);
        assert_eq!(why.as_deref(), Some("cannot create /x: Permission denied"));
        let u = Usage {
            cpu_s: Some(1.25),
            memory_peak: Some(4096),
        };
        let line = usage_line(Some(u));
        assert_eq!(parse_usage(line.strip_prefix("usage ").unwrap()), Some(u));
        let none = usage_line(None);
        assert_eq!(none, "usage - -");
        assert_eq!(
            parse_usage("- -"),
            Some(Usage {
                cpu_s: None,
                memory_peak: None
            })
        );
    }
}
