//! Where the check reaches a server: a TCP address, or the unix domain
//! socket it was told to listen on (`UNIX_SOCKET`).

use std::fmt;
use std::net::SocketAddr;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::fetch::{self, FetchError, RawResponse};

/// The place a fetch connects to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dial {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

/// The `Host` (and `:authority`) sent over a unix socket, as `load
/// --unix-socket http://localhost/...` sends it: the socket has no address
/// to name.
pub const UNIX_AUTHORITY: &str = "localhost";

impl Dial {
    /// What `Host` and `:authority` say.
    pub fn authority(&self) -> String {
        match self {
            Dial::Tcp(a) => a.to_string(),
            Dial::Unix(_) => UNIX_AUTHORITY.to_string(),
        }
    }
}

impl From<SocketAddr> for Dial {
    fn from(a: SocketAddr) -> Dial {
        Dial::Tcp(a)
    }
}

impl fmt::Display for Dial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dial::Tcp(a) => write!(f, "{a}"),
            Dial::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// Sends `request` (HTTP/1.1) to `dial` and reads one response, all within
/// `timeout`.
pub fn raw(dial: &Dial, request: &[u8], timeout: Duration) -> Result<RawResponse, FetchError> {
    let path = match dial {
        Dial::Tcp(a) => return fetch::raw(*a, request, timeout),
        Dial::Unix(p) => p,
    };
    let start = Instant::now();
    let mut s = UnixStream::connect(path).map_err(|source| FetchError::Connect {
        addr: dial.to_string(),
        source,
    })?;
    s.set_write_timeout(Some(timeout))
        .map_err(|source| FetchError::Io {
            source,
            partial: Vec::new(),
        })?;
    fetch::exchange(&mut s, request, start, timeout, |s, t| {
        s.set_read_timeout(Some(t))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn an_http1_answer_comes_back_over_a_unix_socket() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        let l = std::os::unix::net::UnixListener::bind(&path).unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut b = [0u8; 1024];
            let n = s.read(&mut b).unwrap();
            assert!(b[..n].starts_with(b"GET /x HTTP/1.1\r\nHost: localhost\r\n"));
            s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .unwrap();
        });
        let dial = Dial::Unix(path.clone());
        let req = fetch::request_bytes("GET", "/x", dial.authority(), &[]);
        let r = raw(&dial, &req, Duration::from_secs(5)).unwrap();
        assert_eq!(r.status, 200);
        let e = raw(
            &Dial::Unix(dir.path().join("none")),
            &req,
            Duration::from_secs(1),
        )
        .unwrap_err();
        assert!(e.is_connect(), "{e}");
        assert!(e.to_string().contains("unix:"), "{e}");
    }
}
