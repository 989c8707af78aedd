//! Where a URL's connections go, apart from what the URL names: curl's
//! `--connect-to HOST1:PORT1:HOST2:PORT2` and `--resolve HOST:PORT:ADDR`.
//! The URL's host still names the `Host` header, the TLS server name (SNI)
//! and what the certificate must match; only the address connected to
//! changes. So one backend behind a load-balanced name, a canary, or a
//! staging address with the production certificate can be measured.
//!
//! As curl: the first `--connect-to` whose HOST1 and PORT1 match (an empty
//! one matches any) gives the host and port to connect to (an empty HOST2
//! or PORT2 keeps the URL's); a `--resolve` for that host and port then
//! gives its addresses, else the name is looked up.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

use serde::{Deserialize, Serialize};

/// The host and port a URL's connections are routed by: the host bare (an
/// IPv6 address without its brackets, as the rules spell it) and the port
/// the URL gives or its scheme's default.
pub fn routed_by(url: &url::Url) -> Option<(String, u16)> {
    let host = match url.host()? {
        url::Host::Ipv6(a) => a.to_string(),
        other => other.to_string(),
    };
    Some((host, url.port_or_known_default()?))
}

/// One `--connect-to` rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectTo {
    pub from_host: Option<String>,
    pub from_port: Option<u16>,
    pub to_host: Option<String>,
    pub to_port: Option<u16>,
}

/// One `--resolve` rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resolve {
    pub host: String,
    pub port: u16,
    pub addrs: Vec<IpAddr>,
}

/// Every rule given, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Routes {
    #[serde(default)]
    pub connect_to: Vec<ConnectTo>,
    #[serde(default)]
    pub resolve: Vec<Resolve>,
}

impl ConnectTo {
    /// `HOST1:PORT1:HOST2:PORT2`, any part empty, IPv6 hosts in brackets.
    pub fn parse(spec: &str) -> Result<ConnectTo, String> {
        let parts = split(spec);
        let [h1, p1, h2, p2] = parts.as_slice() else {
            return Err(format!(
                "{spec:?}: expected HOST1:PORT1:HOST2:PORT2 (any part may be empty, IPv6 in brackets)"
            ));
        };
        Ok(ConnectTo {
            from_host: host(h1),
            from_port: port(p1, spec)?,
            to_host: host(h2),
            to_port: port(p2, spec)?,
        })
    }

    fn matches(&self, host: &str, port: u16) -> bool {
        self.from_host
            .as_deref()
            .is_none_or(|h| h.eq_ignore_ascii_case(host))
            && self.from_port.is_none_or(|p| p == port)
    }
}

impl Resolve {
    /// `HOST:PORT:ADDR[,ADDR…]`, IPv6 addresses with or without brackets.
    pub fn parse(spec: &str) -> Result<Resolve, String> {
        let parts = split(spec);
        let expected = || format!("{spec:?}: expected HOST:PORT:ADDR[,ADDR...]");
        let [h, p, addrs] = parts.as_slice() else {
            return Err(expected());
        };
        let host = host(h).ok_or_else(expected)?;
        let port = port(p, spec)?.ok_or_else(expected)?;
        let addrs = addrs
            .split(',')
            .map(|a| {
                let a = a.trim().trim_start_matches('[').trim_end_matches(']');
                a.parse::<IpAddr>()
                    .map_err(|_| format!("{spec:?}: {a:?} is not an IP address"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Resolve { host, port, addrs })
    }

    fn matches(&self, host: &str, port: u16) -> bool {
        self.host.eq_ignore_ascii_case(host) && self.port == port
    }
}

impl std::fmt::Display for ConnectTo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let h = |h: &Option<String>| match h.as_deref() {
            Some(h) if h.contains(':') => format!("[{h}]"),
            Some(h) => h.to_string(),
            None => String::new(),
        };
        let p = |p: Option<u16>| p.map_or(String::new(), |p| p.to_string());
        write!(
            f,
            "--connect-to {}:{}:{}:{}",
            h(&self.from_host),
            p(self.from_port),
            h(&self.to_host),
            p(self.to_port)
        )
    }
}

impl std::fmt::Display for Resolve {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let addrs: Vec<String> = self.addrs.iter().map(|a| a.to_string()).collect();
        write!(
            f,
            "--resolve {}:{}:{}",
            self.host,
            self.port,
            addrs.join(",")
        )
    }
}

impl Routes {
    /// The rules that apply to none of `urls` (host, port), as given: a
    /// rule that routes nothing is a mistake to report, never to ignore.
    pub fn unused(&self, urls: &[(&str, u16)]) -> Vec<String> {
        let used = |m: &dyn Fn(&str, u16) -> bool| urls.iter().any(|(h, p)| m(h, *p));
        let mut out: Vec<String> = self
            .connect_to
            .iter()
            .filter(|c| !used(&|h, p| c.matches(h, p)))
            .map(|c| c.to_string())
            .collect();
        // A --resolve may serve a --connect-to's destination too.
        let dests: Vec<(String, u16)> = urls
            .iter()
            .filter_map(|(h, p)| {
                let c = self.connect_to.iter().find(|c| c.matches(h, *p))?;
                Some((
                    c.to_host.clone().unwrap_or_else(|| h.to_string()),
                    c.to_port.unwrap_or(*p),
                ))
            })
            .collect();
        out.extend(
            self.resolve
                .iter()
                .filter(|r| {
                    !used(&|h, p| r.matches(h, p)) && !dests.iter().any(|(h, p)| r.matches(h, *p))
                })
                .map(|r| r.to_string()),
        );
        out
    }

    pub fn is_empty(&self) -> bool {
        self.connect_to.is_empty() && self.resolve.is_empty()
    }

    /// The addresses to connect to for the URL's `host` and `port`, or
    /// `None` when no rule applies (the name is looked up as usual).
    pub fn addresses(&self, host: &str, port: u16) -> Result<Option<Vec<SocketAddr>>, String> {
        let (to_host, to_port) = match self.connect_to.iter().find(|c| c.matches(host, port)) {
            Some(c) => (
                c.to_host.clone().unwrap_or_else(|| host.to_string()),
                c.to_port.unwrap_or(port),
            ),
            None => (host.to_string(), port),
        };
        if let Some(r) = self.resolve.iter().find(|r| r.matches(&to_host, to_port)) {
            return Ok(Some(
                r.addrs
                    .iter()
                    .map(|a| SocketAddr::new(*a, to_port))
                    .collect(),
            ));
        }
        if (to_host.as_str(), to_port) == (host, port) {
            return Ok(None);
        }
        let lookup = match to_host.parse::<IpAddr>() {
            Ok(IpAddr::V6(a)) => format!("[{a}]:{to_port}"),
            _ => format!("{to_host}:{to_port}"),
        };
        let found: Vec<SocketAddr> = lookup
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve {to_host}: {e}"))?
            .collect();
        Ok(Some(found))
    }
}

/// The colon-separated parts of a spec; brackets keep an IPv6 address's
/// colons inside one part.
fn split(spec: &str) -> Vec<String> {
    let (mut parts, mut cur, mut depth) = (Vec::new(), String::new(), 0u32);
    for c in spec.chars() {
        match c {
            '[' => {
                depth += 1;
                cur.push(c);
            }
            ']' => {
                depth = depth.saturating_sub(1);
                cur.push(c);
            }
            ':' if depth == 0 => parts.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    parts.push(cur);
    parts
}

/// A host part: empty is none; brackets around an IPv6 address dropped.
fn host(s: &str) -> Option<String> {
    let s = s.trim().trim_start_matches('[').trim_end_matches(']');
    (!s.is_empty()).then(|| s.to_string())
}

fn port(s: &str, spec: &str) -> Result<Option<u16>, String> {
    match s.trim() {
        "" => Ok(None),
        p => p
            .parse::<u16>()
            .ok()
            .filter(|&p| p > 0)
            .map(Some)
            .ok_or_else(|| format!("{spec:?}: {p:?} is not a port (1-65535)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn routes(connect: &[&str], resolve: &[&str]) -> Routes {
        Routes {
            connect_to: connect
                .iter()
                .map(|s| ConnectTo::parse(s).unwrap())
                .collect(),
            resolve: resolve.iter().map(|s| Resolve::parse(s).unwrap()).collect(),
        }
    }

    #[test]
    fn connect_to_sends_the_connections_elsewhere_as_curl_does() {
        let r = routes(&["api.example:443:127.0.0.1:8443"], &[]);
        assert_eq!(
            r.addresses("api.example", 443).unwrap(),
            Some(vec!["127.0.0.1:8443".parse().unwrap()])
        );
        // Another port of the name is not matched: looked up as usual.
        assert_eq!(r.addresses("api.example", 80).unwrap(), None);
        assert_eq!(
            r.unused(&[("api.example", 80)]),
            ["--connect-to api.example:443:127.0.0.1:8443"]
        );
        assert!(r
            .unused(&[("api.example", 80), ("api.example", 443)])
            .is_empty());
        // Empty parts: any host and port, the same port.
        let r = routes(&["::[::1]:"], &[]);
        assert_eq!(
            r.addresses("name.test", 9000).unwrap(),
            Some(vec!["[::1]:9000".parse().unwrap()])
        );
    }

    #[test]
    fn resolve_gives_the_addresses_of_a_name_and_follows_connect_to() {
        let r = routes(&[], &["API.example:80:127.0.0.1,[::1]"]);
        assert_eq!(
            r.addresses("api.example", 80).unwrap(),
            Some(vec![
                "127.0.0.1:80".parse().unwrap(),
                "[::1]:80".parse().unwrap()
            ])
        );
        let r = routes(&["a.test:80:b.test:81"], &["b.test:81:127.0.0.2"]);
        assert_eq!(
            r.addresses("a.test", 80).unwrap(),
            Some(vec!["127.0.0.2:81".parse().unwrap()])
        );
        assert!(
            r.unused(&[("a.test", 80)]).is_empty(),
            "the resolve serves the route"
        );
        assert_eq!(r.unused(&[("c.test", 80)]).len(), 2);
    }

    #[test]
    fn a_malformed_rule_is_one_line_naming_it() {
        for (bad, needle) in [
            ("a:1:b", "expected HOST1:PORT1:HOST2:PORT2"),
            ("a:x:b:2", "\"x\" is not a port"),
            ("a:0:b:2", "\"0\" is not a port"),
        ] {
            let e = ConnectTo::parse(bad).unwrap_err();
            assert!(e.contains(needle), "{bad}: {e}");
        }
        for (bad, needle) in [
            ("a:80", "expected HOST:PORT:ADDR"),
            (":80:1.2.3.4", "expected HOST:PORT:ADDR"),
            ("a:80:not-an-ip", "is not an IP address"),
        ] {
            let e = Resolve::parse(bad).unwrap_err();
            assert!(e.contains(needle), "{bad}: {e}");
        }
    }
}
