//! Shared by the topology tests: a throw-away fairbench root whose test
//! server lives inside its server folder (so ssh hosts get it copied), the
//! prerequisites check (root, ip, sshd) that fails in CI and skips with a
//! reason elsewhere, a fast in-process HTTP server, a test sshd on a
//! loopback port, and what the tests inspect afterwards.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;

/// The topology tests of one file measure throughput and latency: one at a
/// time, so that they do not compete for the CPUs.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// Whether a test's prerequisites are here. In CI a missing one fails the
/// test with `why`; elsewhere the test prints the reason and skips.
pub fn require(ok: bool, why: &str) -> bool {
    if ok {
        return true;
    }
    if in_ci() {
        panic!("prerequisite missing in CI: {why}");
    }
    eprintln!("SKIPPED: {why}");
    false
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

pub fn have(cmd: &str, arg: &str) -> bool {
    Command::new(cmd)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// Root, iproute2 and tc: what `--topology netns` needs.
pub fn netns_ready() -> bool {
    require(
        is_root(),
        "network namespace tests need root (CI runs as root)",
    ) && require(
        have("ip", "-V") && have("tc", "-V"),
        "network namespace tests need iproute2 (ip, tc)",
    )
}

pub fn fairbench() -> Command {
    Command::new(env!("CARGO_BIN_EXE_fairbench"))
}

pub fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// A fairbench root with one Python test server (tests/fixtures/pyserver.py,
/// copied into its folder) and a one-case suite.
pub struct Root {
    pub dir: tempfile::TempDir,
    pub token: String,
}

impl Root {
    pub fn new(server: &str) -> Root {
        let dir = tempfile::tempdir().unwrap();
        let token = format!(
            "fbtopo-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        );
        let root = dir.path();
        std::fs::create_dir_all(root.join("scenarios/files")).unwrap();
        for f in [
            "static.toml",
            "dynamic.toml",
            "file.toml",
            "files/hello-16k.txt",
        ] {
            std::fs::copy(
                repo().join("scenarios").join(f),
                root.join("scenarios").join(f),
            )
            .unwrap();
        }
        let d = root.join("servers").join(server);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::copy(
            repo().join("tests/fixtures/pyserver.py"),
            d.join("pyserver.py"),
        )
        .unwrap();
        std::fs::write(
            d.join("server.toml"),
            format!(
                r#"name = "{server}"
language = "Python"
framework = "asyncio test server"
framework_version = "test"
[toolchain]
name = "python3"
probe = ["python3", "--version"]
version_regex = 'Python (\S+)'
[modes.native]
run = ["python3", "{{dir}}/pyserver.py", "--token", "{token}", "--lifetime", "120"]
[responses.default]
[responses.normalized]
"#
            ),
        )
        .unwrap();
        std::fs::create_dir_all(root.join("suites")).unwrap();
        Root { dir, token }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn db(&self) -> PathBuf {
        self.path().join("results.db")
    }

    /// A one-case suite: static, 1 core, closed loop with `connections`.
    pub fn suite(&self, name: &str, connections: usize, duration: &str) {
        std::fs::write(
            self.path().join("suites").join(format!("{name}.toml")),
            format!(
                r#"name = "{name}"
responses = ["normalized"]
scenarios = ["static"]
cores = [1]
warmup = "1s"
duration = "{duration}"
repetitions = 1
[[load]]
model = "closed"
connections = {connections}
threads = 2
"#
            ),
        )
        .unwrap();
    }

    pub fn fairbench(&self) -> Command {
        let mut c = fairbench();
        c.current_dir(self.path());
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.fairbench().args(args).output().unwrap()
    }

    pub fn sql<T: rusqlite::types::FromSql>(&self, q: &str) -> T {
        let c = rusqlite::Connection::open(self.db()).unwrap();
        c.query_row(q, [], |r| r.get(0)).unwrap()
    }

    pub fn blobs(&self, q: &str) -> Vec<Vec<u8>> {
        let c = rusqlite::Connection::open(self.db()).unwrap();
        let mut st = c.prepare(q).unwrap();
        st.query_map([], |r| r.get::<_, Vec<u8>>(0))
            .unwrap()
            .map(|r| r.unwrap())
            .collect()
    }

    pub fn ints(&self, q: &str) -> Vec<i64> {
        let c = rusqlite::Connection::open(self.db()).unwrap();
        let mut st = c.prepare(q).unwrap();
        st.query_map([], |r| r.get::<_, i64>(0))
            .unwrap()
            .map(|r| r.unwrap())
            .collect()
    }

    pub fn strings(&self, q: &str) -> Vec<String> {
        let c = rusqlite::Connection::open(self.db()).unwrap();
        let mut st = c.prepare(q).unwrap();
        st.query_map([], |r| r.get::<_, String>(0))
            .unwrap()
            .map(|r| r.unwrap())
            .collect()
    }

    /// Processes whose command line carries this root's token.
    pub fn live_servers(&self) -> Vec<u32> {
        live_with(&self.token)
    }

    pub fn assert_no_servers_left(&self) {
        let t = Instant::now();
        while !self.live_servers().is_empty() && t.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(
            self.live_servers().is_empty(),
            "servers left running: {:?}",
            self.live_servers()
        );
    }

    /// Exactness of a stored merge: for every case with parts, the merged
    /// request count is the sum of the parts', the merged latency histogram
    /// is the sum of theirs and its stored percentiles are the combined
    /// histogram's, and each merged second sums the parts' seconds.
    pub fn assert_merged_exactly(&self, parts_expected: usize) {
        let cases = self.ints("SELECT id FROM cases WHERE state = 'done' ORDER BY id");
        assert!(!cases.is_empty(), "no case done");
        for case in cases {
            let parts: i64 = self.sql(&format!(
                "SELECT count(*) FROM case_parts WHERE case_id = {case}"
            ));
            assert_eq!(parts as usize, parts_expected, "parts of case {case}");
            let total: i64 = self.sql(&format!("SELECT requests FROM cases WHERE id = {case}"));
            let sum: i64 = self.sql(&format!(
                "SELECT sum(requests) FROM case_parts WHERE case_id = {case}"
            ));
            assert_eq!(total, sum, "merged requests = sum of the parts");
            assert!(total > 0);
            let mut combined = empty_histogram();
            for b in self.blobs(&format!(
                "SELECT latency FROM case_parts WHERE case_id = {case} ORDER BY part"
            )) {
                combined.add(decode(&b)).unwrap();
            }
            let merged = decode(
                &self.blobs(&format!(
                    "SELECT data FROM histograms WHERE case_id = {case} AND kind = 'latency'"
                ))[0],
            );
            assert_eq!(merged, combined, "merged histogram = sum of the parts'");
            assert_eq!(merged.len() as i64, total);
            for (col, q) in [
                ("lat_p50", 0.5),
                ("lat_p90", 0.9),
                ("lat_p99", 0.99),
                ("lat_p999", 0.999),
                ("lat_max", 1.0),
            ] {
                let stored: i64 = self.sql(&format!("SELECT {col} FROM cases WHERE id = {case}"));
                assert_eq!(
                    stored as u64,
                    combined.value_at_quantile(q),
                    "{col} of case {case} is the combined histogram's"
                );
            }
            let mismatched: i64 = self.sql(&format!(
                "SELECT count(*) FROM samples s WHERE s.case_id = {case} AND s.requests !=
                   (SELECT coalesce(sum(p.requests), 0) FROM part_samples p
                     WHERE p.case_id = s.case_id AND p.second = s.second)"
            ));
            assert_eq!(mismatched, 0, "every merged second sums the parts' seconds");
        }
    }
}

pub fn empty_histogram() -> Histogram<u64> {
    let mut h = Histogram::new_with_bounds(1, 60_000_000, 3).unwrap();
    h.auto(true);
    h
}

pub fn decode(b: &[u8]) -> Histogram<u64> {
    Deserializer::new().deserialize(&mut &b[..]).unwrap()
}

/// Live (non-zombie) processes whose command line contains `needle`.
pub fn live_with(needle: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let zombie = stat
            .rsplit_once(") ")
            .map(|(_, r)| r.starts_with('Z'))
            .unwrap_or(false);
        if !zombie && String::from_utf8_lossy(&cmd).contains(needle) {
            out.push(pid);
        }
    }
    out
}

/// Network namespaces made by the fairbench process `pid`.
pub fn namespaces_of(pid: u32) -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let prefix = format!("fairbench-{pid}-");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&prefix))
        .map(str::to_string)
        .collect()
}

/// This machine's own veth ends made by the fairbench process `pid`.
pub fn links_of(pid: u32) -> Vec<String> {
    let out = Command::new("ip")
        .args(["-o", "link", "show"])
        .output()
        .unwrap();
    let prefix = format!("fb{pid:x}-");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| Some(l.split(':').nth(1)?.trim().split('@').next()?.to_string()))
        .filter(|n| n.starts_with(&prefix))
        .collect()
}

/// Removes whatever a failed test left of process `pid`'s topology.
pub struct NetnsJanitor(pub Vec<u32>);

impl Drop for NetnsJanitor {
    fn drop(&mut self) {
        for &pid in &self.0 {
            for ns in namespaces_of(pid) {
                let _ = Command::new("ip").args(["netns", "del", &ns]).status();
            }
            for l in links_of(pid) {
                let _ = Command::new("ip").args(["link", "del", &l]).status();
            }
        }
    }
}

/// A fast keep-alive HTTP server on all addresses of this machine's own
/// namespace (so that a namespace linked to it can reach it), answering the
/// 13-byte body; stops when dropped and after 120 s regardless.
pub struct Hello {
    pub port: u16,
    stop: Arc<AtomicBool>,
}

impl Hello {
    pub fn start() -> Hello {
        let l = TcpListener::bind("0.0.0.0:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let port = l.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        std::thread::spawn(move || {
            let t0 = Instant::now();
            while !s.load(Ordering::Relaxed) && t0.elapsed() < Duration::from_secs(120) {
                let Ok((mut c, _)) = l.accept() else {
                    std::thread::sleep(Duration::from_millis(2));
                    continue;
                };
                let _ = c.set_nonblocking(false);
                let _ = c.set_nodelay(true);
                let s2 = s.clone();
                std::thread::spawn(move || {
                    c.set_read_timeout(Some(Duration::from_millis(200))).ok();
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    while !s2.load(Ordering::Relaxed) {
                        let mut out = Vec::new();
                        while let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            buf.drain(..i + 4);
                            out.extend_from_slice(
                                b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nHello World!\n",
                            );
                        }
                        if !out.is_empty() && c.write_all(&out).is_err() {
                            return;
                        }
                        match c.read(&mut chunk) {
                            Ok(0) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            Err(e)
                                if e.kind() == std::io::ErrorKind::WouldBlock
                                    || e.kind() == std::io::ErrorKind::TimedOut => {}
                            Err(_) => return,
                        }
                    }
                });
            }
        });
        Hello { port, stop }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }
}

impl Drop for Hello {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// An OpenSSH server on a loopback port for the test: a host key and a user
/// key generated into a temporary directory, an ssh config naming hosts
/// `fbt-*` that all lead to it, and a Drop that kills it.
pub struct Sshd {
    pub dir: tempfile::TempDir,
    pub port: u16,
    child: Child,
}

impl Sshd {
    /// `None` (with the reason printed, or a panic in CI) when OpenSSH's
    /// server or client is missing.
    pub fn start() -> Option<Sshd> {
        let sshd = Path::new("/usr/sbin/sshd");
        if !require(
            sshd.exists(),
            "the ssh tests need Debian's openssh-server (/usr/sbin/sshd); scripts/setup-test-deps.sh installs it",
        ) || !require(
            have("ssh", "-V") && have("ssh-keygen", "--help"),
            "the ssh tests need the OpenSSH client (ssh, ssh-keygen)",
        ) || !require(is_root(), "the ssh tests start sshd, which needs root")
        {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for k in ["host_key", "user_key"] {
            let st = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", ""])
                .arg("-f")
                .arg(d.join(k))
                .stdin(Stdio::null())
                .status()
                .unwrap();
            assert!(st.success(), "ssh-keygen failed");
        }
        std::fs::copy(d.join("user_key.pub"), d.join("authorized_keys")).unwrap();
        // sshd wants its privilege-separation directory.
        let _ = std::fs::create_dir_all("/run/sshd");
        let port = {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let cfg = d.join("sshd_config");
        std::fs::write(
            &cfg,
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {hk}\nAuthorizedKeysFile {ak}\n\
                 PidFile {d}/sshd.pid\nStrictModes no\nUsePAM no\nPermitRootLogin prohibit-password\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\nAllowTcpForwarding yes\n\
                 MaxSessions 64\nMaxStartups 64\n",
                hk = d.join("host_key").display(),
                ak = d.join("authorized_keys").display(),
                d = d.display()
            ),
        )
        .unwrap();
        let user = std::env::var("USER").unwrap_or_else(|_| "root".into());
        std::fs::write(
            d.join("ssh_config"),
            format!(
                "Host fbt-*\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n  IdentityFile {key}\n  \
                 IdentitiesOnly yes\n  StrictHostKeyChecking no\n  UserKnownHostsFile {kh}\n  LogLevel ERROR\n",
                key = d.join("user_key").display(),
                kh = d.join("known_hosts").display()
            ),
        )
        .unwrap();
        let child = Command::new(sshd)
            .arg("-D")
            .arg("-f")
            .arg(&cfg)
            .arg("-E")
            .arg(d.join("sshd.log"))
            .stdin(Stdio::null())
            .spawn()
            .expect("start sshd");
        let s = Sshd { dir, port, child };
        let t = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "sshd did not listen: {}",
                std::fs::read_to_string(s.dir.path().join("sshd.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(s)
    }

    pub fn config(&self) -> PathBuf {
        self.dir.path().join("ssh_config")
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }

    /// Runs a command through the test sshd.
    pub fn ssh(&self, host: &str, cmd: &str) -> Output {
        Command::new("ssh")
            .arg("-F")
            .arg(self.config())
            .args(["-o", "BatchMode=yes", host, cmd])
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        // SIGTERM to the listener; sessions it forked end with it or their
        // connections.
        // SAFETY: kill has no memory-safety preconditions.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The JSON a `fairbench load --json` printed.
pub fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(o)))
}

pub fn flush() {
    let _ = std::io::stderr().flush();
}
