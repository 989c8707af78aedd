//! `sockets = [...]` and `[sockets_unsupported]`: where a server can be
//! told to listen. TCP (`PORT`) always; a unix domain socket (`UNIX_SOCKET`,
//! a path, instead of `PORT`) when its manifest says so, or the reason it
//! cannot, as protocols are declared.

use std::fmt;

use indexmap::IndexMap;

/// A kind of socket a server listens on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Socket {
    /// `PORT` on every address (IPv4 and IPv6).
    Tcp,
    /// `UNIX_SOCKET`: a path in the file system.
    Unix,
}

impl Socket {
    pub const ALL: [Socket; 2] = [Socket::Tcp, Socket::Unix];

    pub fn as_str(self) -> &'static str {
        match self {
            Socket::Tcp => "tcp",
            Socket::Unix => "unix",
        }
    }

    pub fn parse(s: &str) -> Option<Socket> {
        Socket::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

impl fmt::Display for Socket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The sockets listed (TCP among them: `servers`, the reference and every
/// suite without `address_family = "unix"` reach a server over TCP) and the
/// reasons for the others; `errs` gets each mistake as (field, message).
pub(super) fn sockets(
    listed: Option<Vec<String>>,
    reasons: IndexMap<String, String>,
    errs: &mut Vec<(String, String)>,
) -> (Vec<Socket>, IndexMap<Socket, String>) {
    let expected = "expected \"tcp\" or \"unix\"";
    let mut err = |field: String, msg: String| errs.push((field, msg));
    let mut served = Vec::new();
    for (i, name) in listed.iter().flatten().enumerate() {
        match Socket::parse(name) {
            Some(s) if served.contains(&s) => {
                err(format!("sockets[{i}]"), format!("{name:?} is listed twice"))
            }
            Some(s) => served.push(s),
            None => err(
                format!("sockets[{i}]"),
                format!("unknown socket {name:?}; {expected}"),
            ),
        }
    }
    if listed.is_none() {
        served.push(Socket::Tcp);
    } else if !served.contains(&Socket::Tcp) {
        err(
            "sockets".into(),
            "expected \"tcp\" among them: every server listens on PORT (the contract, `servers` and the reference reach it there)".into(),
        );
    }
    served.sort();
    let mut why = IndexMap::new();
    for (name, reason) in reasons {
        let field = format!("sockets_unsupported.{name}");
        match Socket::parse(&name) {
            None => err(field, format!("unknown socket {name:?}; {expected}")),
            Some(s) if served.contains(&s) => err(
                field,
                format!("{name} is in sockets: a server either listens on one or says why not"),
            ),
            Some(_) if reason.trim().is_empty() => err(field, "expected a non-empty string".into()),
            Some(s) => {
                why.insert(s, reason);
            }
        }
    }
    (served, why)
}
