//! One blocking connection to the target, plain or TLS, handshake done: the
//! check before a run starts, and a single exchange to look at (`--dump`).

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use rustls::{ClientConnection, StreamOwned};

use crate::target::Target;
use crate::tls::{TlsClient, TlsOptions};

/// An open connection, ready for a request.
pub enum Dialed {
    Plain(TcpStream),
    Tls(Box<StreamOwned<ClientConnection, TcpStream>>),
    /// `--unix-socket` (plain HTTP only).
    Unix(UnixStream),
}

impl Dialed {
    pub fn set_read_timeout(&self, d: Option<Duration>) -> io::Result<()> {
        match self {
            Dialed::Plain(s) => s.set_read_timeout(d),
            Dialed::Tls(t) => t.sock.set_read_timeout(d),
            Dialed::Unix(s) => s.set_read_timeout(d),
        }
    }

    pub fn set_write_timeout(&self, d: Option<Duration>) -> io::Result<()> {
        match self {
            Dialed::Plain(s) => s.set_write_timeout(d),
            Dialed::Tls(t) => t.sock.set_write_timeout(d),
            Dialed::Unix(s) => s.set_write_timeout(d),
        }
    }

    /// The address this connection reached (one of the target's); `None`
    /// over a unix socket.
    pub fn peer(&self) -> Option<std::net::SocketAddr> {
        match self {
            Dialed::Plain(s) => s.peer_addr().ok(),
            Dialed::Tls(t) => t.sock.peer_addr().ok(),
            Dialed::Unix(_) => None,
        }
    }

    /// The protocol the server chose by ALPN, if any.
    pub fn alpn(&self) -> Option<String> {
        match self {
            Dialed::Plain(_) | Dialed::Unix(_) => None,
            Dialed::Tls(t) => t
                .conn
                .alpn_protocol()
                .map(|p| String::from_utf8_lossy(p).into_owned()),
        }
    }
}

impl Read for Dialed {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Dialed::Plain(s) => s.read(buf),
            Dialed::Unix(s) => s.read(buf),
            Dialed::Tls(t) => match t.read(buf) {
                // Many servers close without a close_notify; for HTTP with
                // its own framing that is an ordinary end of stream.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(0),
                other => other,
            },
        }
    }
}

impl Write for Dialed {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Dialed::Plain(s) => s.write(buf),
            Dialed::Unix(s) => s.write(buf),
            Dialed::Tls(t) => t.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Dialed::Plain(s) => s.flush(),
            Dialed::Unix(s) => s.flush(),
            Dialed::Tls(t) => t.flush(),
        }
    }
}

/// Connects to the target (and completes the TLS handshake for https://),
/// each step within `timeout`. The error is one line for a person.
pub fn dial(target: &Target, tls: &TlsOptions, timeout: Duration) -> Result<Dialed, String> {
    let client = if target.tls {
        Some(TlsClient::new(target, tls).map_err(|e| e.to_string())?)
    } else {
        None
    };
    dial_with(target, client.as_ref(), timeout)
}

/// The same, offering `protocol` by ALPN (HTTP/2: h2 and http/1.1).
pub fn dial_as(
    target: &Target,
    tls: &TlsOptions,
    protocol: crate::Protocol,
    timeout: Duration,
) -> Result<Dialed, String> {
    let client = if target.tls {
        Some(
            TlsClient::new(target, tls)
                .map_err(|e| e.to_string())?
                .for_protocol(protocol),
        )
    } else {
        None
    };
    dial_with(target, client.as_ref(), timeout)
}

pub(crate) fn dial_with(
    target: &Target,
    tls: Option<&TlsClient>,
    timeout: Duration,
) -> Result<Dialed, String> {
    if let Some(path) = &target.unix_socket {
        return dial_unix(path);
    }
    let mut tcp = match &target.proxy {
        None => connect_any(target, timeout)?,
        Some(via) => {
            let named = |e: String| format!("proxy {}: {e}", via.proxy);
            let mut tcp = connect_any(target, timeout).map_err(named)?;
            if target.tunnelled().is_some() {
                crate::proxy::tunnel(&mut tcp, via, timeout)?;
            }
            tcp
        }
    };
    let _ = tcp.set_nodelay(true);
    let Some(client) = tls else {
        return Ok(Dialed::Plain(tcp));
    };
    let reached = match &target.proxy {
        Some(via) => format!("through proxy {}", via.proxy),
        None => tcp.peer_addr().unwrap_or(target.addr).to_string(),
    };
    let failed = |e: String| format!("TLS handshake with {} ({reached}) failed: {e}", target.host);
    let mut conn = client.session().map_err(|e| failed(e.to_string()))?;
    let set = tcp
        .set_read_timeout(Some(timeout))
        .and_then(|_| tcp.set_write_timeout(Some(timeout)));
    set.map_err(|e| failed(e.to_string()))?;
    let words = |e: &io::Error| client.refusal(e).unwrap_or_else(|| handshake_error(e));
    while conn.is_handshaking() {
        if let Err(e) = conn.complete_io(&mut tcp) {
            return Err(failed(words(&e)));
        }
    }
    let verdict = client.await_verdict(&mut conn, &mut tcp, timeout);
    verdict.map_err(|e| failed(words(&e)))?;
    Ok(Dialed::Tls(Box::new(StreamOwned::new(conn, tcp))))
}

/// A connection to the first of the target's addresses that accepts one,
/// tried in the resolver's order (as curl does: `localhost` may resolve to
/// `::1` first while the server listens on `127.0.0.1` only).
fn connect_any(target: &Target, timeout: Duration) -> Result<TcpStream, String> {
    let addrs: &[std::net::SocketAddr] = if target.addrs.is_empty() {
        std::slice::from_ref(&target.addr)
    } else {
        &target.addrs
    };
    let mut failed = Vec::new();
    for a in addrs {
        match connect_patiently(a, timeout) {
            Ok(s) => return Ok(s),
            // Not the server's doing: say whose it is.
            Err(e) if crate::local_connects::is_local(&e) => {
                return Err(format!(
                    "cannot open a connection to {a} on this machine ({e}): {}, before reaching the server",
                    crate::local_connects::SHORTAGE
                ))
            }
            Err(e) => failed.push(format!("{a}: {e}")),
        }
    }
    Err(format!("cannot connect to {}", failed.join("; ")))
}

/// How long a connect that fails for want of a local port is tried again:
/// the ports a load just closed (a `--vs` pair's other side, the last
/// stage) sit in TIME_WAIT, and over loopback the kernel lends them again
/// after a second.
const LOCAL_PATIENCE: Duration = Duration::from_millis(2_500);

/// A connect to `a`, tried again while it fails on this machine alone.
fn connect_patiently(a: &std::net::SocketAddr, timeout: Duration) -> io::Result<TcpStream> {
    let deadline = std::time::Instant::now() + LOCAL_PATIENCE;
    loop {
        match TcpStream::connect_timeout(a, timeout) {
            Err(e)
                if crate::local_connects::is_local(&e) && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(50));
            }
            r => return r,
        }
    }
}

/// A connection to the unix socket at `path` (a target with one is
/// `http://` only). No connect timeout: the connect finds a listener or
/// fails at once, and waits only while the listener's backlog is full.
fn dial_unix(path: &Path) -> Result<Dialed, String> {
    UnixStream::connect(path)
        .map(Dialed::Unix)
        .map_err(|e| format!("cannot connect to unix socket {}: {e}", path.display()))
}

/// The handshake's error in words, with what to do about a certificate that
/// was refused.
fn handshake_error(e: &io::Error) -> String {
    let tls = e.get_ref().and_then(|x| x.downcast_ref::<rustls::Error>());
    match tls {
        Some(rustls::Error::InvalidCertificate(_)) => format!(
            "{e} (--cacert FILE trusts the CA that signed it; --insecure accepts any certificate)"
        ),
        Some(_) => e.to_string(),
        None if matches!(
            e.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
        ) =>
        {
            "no answer within the timeout (is the server speaking TLS on this port?)".into()
        }
        None if e.kind() == io::ErrorKind::UnexpectedEof => {
            "the server closed the connection (is it speaking TLS on this port?)".into()
        }
        None => e.to_string(),
    }
}
