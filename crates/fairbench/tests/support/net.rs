//! Servers the tests talk to: an OpenSSH server on a loopback port, and
//! (from the test kit) a fast keep-alive HTTP server, one that records what
//! it was sent and one that never answers.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use fairbench_testkit::accept::closed_port;
pub use fairbench_testkit::keepalive::{Hello, Recorder, Silent};

use super::{have, is_root, require};

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
        let port = closed_port();
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
