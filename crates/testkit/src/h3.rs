//! An HTTP/3 server for the tests: quic-go's `http3` (the Go program in
//! `fixtures/h3server`), built with `go build` once per version of its
//! sources into a cache directory, started on 127.0.0.1 with a certificate
//! from this crate's test CA, its behaviour fixed by [`H3Options`].
//!
//! It prints the address it listens on, and stops when its standard input
//! closes (the test process is gone), when the [`H3Server`] is dropped, or
//! after its lifetime regardless.

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

/// What the server does. Every answer is 200 with the body unless a flag
/// makes it do otherwise.
#[derive(Debug, Clone)]
pub struct H3Options {
    pub body: String,
    /// Answer with this many bytes instead of `body` (0: `body`).
    pub body_size: usize,
    /// Before every answer.
    pub delay: Duration,
    /// From request `stall_after` on, every answer in progress waits until
    /// `stall` after that request came: one stall of the whole server.
    pub stall_after: u32,
    pub stall: Duration,
    /// Reset every Nth request's stream with `reset_code` (0: never).
    pub reset_every: u32,
    pub reset_code: u64,
    /// Close each connection after its Nth request with `close_code`.
    pub close_after: u32,
    pub close_code: u64,
    /// Request streams the server lets each connection have open at once
    /// (quic-go's `MaxIncomingStreams`).
    pub streams: u32,
    /// Session tickets allow 0-RTT and early data is accepted (quic-go's
    /// `Allow0RTT`); off, tickets are issued without early data.
    pub allow_0rtt: bool,
    /// With `allow_0rtt`: tickets say early data is allowed, but each
    /// resumption's early data is refused (the session still resumes).
    pub reject_0rtt: bool,
}

impl Default for H3Options {
    fn default() -> Self {
        H3Options {
            body: "ok".into(),
            body_size: 0,
            delay: Duration::ZERO,
            stall_after: 0,
            stall: Duration::ZERO,
            reset_every: 0,
            reset_code: 0x10c,
            close_after: 0,
            close_code: 0x101,
            streams: 1000,
            allow_0rtt: false,
            reject_0rtt: false,
        }
    }
}

pub struct H3Server {
    pub addr: SocketAddr,
    /// The CA that signed its certificate, PEM (what `--cacert` is given).
    pub ca_pem: String,
    child: Child,
    /// Kept open: a write of the server's to a closed pipe would end it.
    _stdout: BufReader<std::process::ChildStdout>,
    _dir: tempfile::TempDir,
}

impl Drop for H3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn sources() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/h3server")
}

/// The server's binary, built if its sources changed since it last was.
fn binary() -> Result<PathBuf, String> {
    static BUILD: Mutex<()> = Mutex::new(());
    let _one = BUILD.lock().unwrap_or_else(|p| p.into_inner());
    let src = sources();
    let mut stamp: u64 = 0xcbf2_9ce4_8422_2325;
    for f in ["main.go", "go.mod", "go.sum"] {
        let bytes = std::fs::read(src.join(f)).map_err(|e| format!("{f}: {e}"))?;
        for b in bytes {
            stamp = (stamp ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    let dir = std::env::temp_dir().join("fairbench-h3server");
    let bin = dir.join(format!("h3server-{stamp:016x}"));
    if bin.exists() {
        return Ok(bin);
    }
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    // Built under a name of its own, then renamed: test binaries that
    // build at once never run a half-written file.
    let tmp = dir.join(format!("h3server-{stamp:016x}.{}", std::process::id()));
    let out = Command::new("go")
        .args(["build", "-o"])
        .arg(&tmp)
        .arg(".")
        .current_dir(&src)
        .env("GOTOOLCHAIN", "local")
        .env("CGO_ENABLED", "0")
        .output()
        .map_err(|e| {
            format!("cannot run go (Go is needed to build the HTTP/3 test server): {e}")
        })?;
    if !out.status.success() {
        return Err(format!(
            "go build of the HTTP/3 test server failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    std::fs::rename(&tmp, &bin).map_err(|e| e.to_string())?;
    Ok(bin)
}

/// Starts a server doing `opts`; panics with the reason when it cannot.
pub fn start(opts: &H3Options) -> H3Server {
    let bin = binary().unwrap_or_else(|e| panic!("{e}"));
    let pki = crate::pki::mtls_pki("fairbench test CA", &["127.0.0.1", "localhost"]);
    let dir = tempfile::tempdir().unwrap();
    let cert = dir.path().join("cert.pem");
    let key = dir.path().join("key.pem");
    std::fs::write(&cert, &pki.server_cert_pem).unwrap();
    std::fs::write(&key, &pki.server_key_pem).unwrap();
    let mut cmd = Command::new(bin);
    cmd.arg("-cert")
        .arg(&cert)
        .arg("-key")
        .arg(&key)
        .arg(format!("-body={}", opts.body))
        .arg(format!("-body-size={}", opts.body_size))
        .arg(format!("-delay={}ns", opts.delay.as_nanos()))
        .arg(format!("-stall-after={}", opts.stall_after))
        .arg(format!("-stall={}ns", opts.stall.as_nanos()))
        .arg(format!("-reset-every={}", opts.reset_every))
        .arg(format!("-reset-code={}", opts.reset_code))
        .arg(format!("-close-after={}", opts.close_after))
        .arg(format!("-close-code={}", opts.close_code))
        .arg(format!("-streams={}", opts.streams))
        .arg(format!("-allow-0rtt={}", opts.allow_0rtt))
        .arg(format!("-reject-0rtt={}", opts.reject_0rtt))
        .arg("-lifetime=5m")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut child = cmd.spawn().expect("start the HTTP/3 test server");
    let out = child.stdout.take().unwrap();
    let mut line = String::new();
    let mut out = BufReader::new(out);
    out.read_line(&mut line).unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening ")
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| {
            let _ = child.kill();
            panic!("the HTTP/3 test server said {line:?} instead of its address")
        });
    if let Some(stdin) = child.stdin.as_mut() {
        let _ = stdin.flush();
    }
    H3Server {
        addr,
        ca_pem: pki.ca_pem,
        child,
        _stdout: out,
        _dir: dir,
    }
}

/// A UDP port on 127.0.0.1 with nothing listening on it (bound, then
/// released).
pub fn closed_udp_port() -> SocketAddr {
    let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    s.local_addr().unwrap()
}
