//! Servers the tests talk to: a fast keep-alive HTTP server in this process,
//! one that records what it was sent, one that never answers, and an
//! OpenSSH server on a loopback port.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{have, is_root, require};

/// Accepts connections on `addr` until stopped or `lifetime` has passed,
/// each on a thread of its own running `conn` (which should return once the
/// flag it is given is set). Returns the port and the flag.
fn listen<F>(addr: &str, lifetime: Duration, conn: F) -> (u16, Arc<AtomicBool>)
where
    F: Fn(TcpStream, Arc<AtomicBool>) + Send + Sync + 'static,
{
    let l = TcpListener::bind(addr).unwrap();
    l.set_nonblocking(true).unwrap();
    let port = l.local_addr().unwrap().port();
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let conn = Arc::new(conn);
    std::thread::spawn(move || {
        let t0 = Instant::now();
        while !s.load(Ordering::Relaxed) && t0.elapsed() < lifetime {
            let Ok((c, _)) = l.accept() else {
                std::thread::sleep(Duration::from_millis(2));
                continue;
            };
            let _ = c.set_nonblocking(false);
            let _ = c.set_nodelay(true);
            c.set_read_timeout(Some(Duration::from_millis(200))).ok();
            let (s2, conn) = (s.clone(), conn.clone());
            std::thread::spawn(move || conn(c, s2));
        }
    });
    (port, stop)
}

/// Reads more of a request, waiting at most the read timeout; false when the
/// connection is done.
fn read_more(c: &mut TcpStream, buf: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 65536];
    match c.read(&mut chunk) {
        Ok(0) => false,
        Ok(n) => {
            buf.extend_from_slice(&chunk[..n]);
            true
        }
        Err(e) => matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    }
}

const HELLO: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nHello World!\n";

/// A fast keep-alive HTTP server on all addresses of this machine's own
/// namespace (so that a namespace linked to it can reach it), answering the
/// 13-byte body; stops when dropped and after 120 s regardless.
pub struct Hello {
    pub port: u16,
    stop: Arc<AtomicBool>,
}

impl Hello {
    pub fn start() -> Hello {
        let (port, stop) = listen("0.0.0.0:0", Duration::from_secs(120), |mut c, stop| {
            let mut buf = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let mut out = Vec::new();
                while let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    buf.drain(..i + 4);
                    out.extend_from_slice(HELLO);
                }
                if !out.is_empty() && c.write_all(&out).is_err() {
                    return;
                }
                if !read_more(&mut c, &mut buf) {
                    return;
                }
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

/// A keep-alive server on 127.0.0.1 that answers every request with the
/// 13-byte body and keeps the first request it was sent, whole, and the
/// most requests that ever arrived in one read (pipelining shows there);
/// stops when dropped and after 60 s regardless.
pub struct Recorder {
    pub port: u16,
    pub first: Arc<Mutex<Vec<u8>>>,
    pub most_in_one_read: Arc<Mutex<usize>>,
    stop: Arc<AtomicBool>,
}

impl Recorder {
    pub fn start() -> Recorder {
        let first = Arc::new(Mutex::new(Vec::new()));
        let most = Arc::new(Mutex::new(0));
        let (f, m) = (first.clone(), most.clone());
        let (port, stop) = listen(
            "127.0.0.1:0",
            Duration::from_secs(60),
            move |mut c, stop| {
                let mut buf = Vec::new();
                while !stop.load(Ordering::Relaxed) && read_more(&mut c, &mut buf) {
                    let mut out = Vec::new();
                    let mut here = 0;
                    while let Some(len) = request_len(&buf) {
                        let req: Vec<u8> = buf.drain(..len).collect();
                        let mut f = f.lock().unwrap();
                        if f.is_empty() {
                            *f = req;
                        }
                        here += 1;
                        out.extend_from_slice(HELLO);
                    }
                    let mut m = m.lock().unwrap();
                    *m = (*m).max(here);
                    drop(m);
                    if !out.is_empty() && c.write_all(&out).is_err() {
                        return;
                    }
                }
            },
        );
        Recorder {
            port,
            first,
            most_in_one_read: most,
            stop,
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    pub fn first_request(&self) -> String {
        String::from_utf8_lossy(&self.first.lock().unwrap()).into_owned()
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The length of the first whole request in `buf` (head and a
/// Content-Length body), if it has arrived.
fn request_len(buf: &[u8]) -> Option<usize> {
    let head = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let text = String::from_utf8_lossy(&buf[..head]).to_ascii_lowercase();
    let body: usize = text
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse().unwrap_or(0));
    (buf.len() >= head + body).then_some(head + body)
}

/// A server on 127.0.0.1 that accepts connections and reads, and never
/// answers; stops when dropped and after 60 s regardless.
pub struct Silent {
    pub port: u16,
    stop: Arc<AtomicBool>,
}

impl Silent {
    pub fn start() -> Silent {
        let (port, stop) = listen("127.0.0.1:0", Duration::from_secs(60), |mut c, stop| {
            let mut buf = Vec::new();
            while !stop.load(Ordering::Relaxed) && read_more(&mut c, &mut buf) {
                buf.clear();
            }
        });
        Silent { port, stop }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }
}

impl Drop for Silent {
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
