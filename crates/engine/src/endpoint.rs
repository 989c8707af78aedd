//! Where a load's connections go: a TCP address, or the path of a unix
//! domain socket (`--unix-socket`, as curl's and oha's), the URL then naming
//! only the `Host` header, the request target and the scheme.

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

impl Endpoint {
    /// Whether the kernel stamps what a socket of this kind receives
    /// (`SO_TIMESTAMPNS`). Linux stamps TCP segments but not the data of an
    /// AF_UNIX stream: the option is accepted and no stamp ever comes
    /// (measured on 6.18). Nor does `SO_RCVLOWAT` hold back an AF_UNIX
    /// socket's readiness, so over one every answer wakes the load thread
    /// and is timed when it is read, as in the closed loop.
    pub fn stamps_arrivals(&self) -> bool {
        matches!(self, Endpoint::Tcp(_))
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Tcp(a) => a.fmt(f),
            Endpoint::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// What an answer's arrival time was taken from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerClock {
    /// The moment the load thread read it: the closed loop, where each
    /// answer is read as it comes, and anything over a unix socket.
    #[default]
    Read,
    /// The kernel's receive stamp of its last segment (constant rate over
    /// TCP, TLS included), so a thread that reads late does not lengthen
    /// it; the read time where a segment came without a stamp.
    KernelStamp,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unix_socket_is_named_as_nginx_names_one() {
        let e = Endpoint::Unix("/run/app.sock".into());
        assert_eq!(e.to_string(), "unix:/run/app.sock");
        assert!(!e.stamps_arrivals());
        let t = Endpoint::Tcp("127.0.0.1:80".parse().unwrap());
        assert_eq!(t.to_string(), "127.0.0.1:80");
        assert!(t.stamps_arrivals());
    }
}
