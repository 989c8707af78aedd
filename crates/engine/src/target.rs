//! What to load: the URL, resolved once before the run.

use std::net::{Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};

use crate::route::Routes;

use crate::config_error::ConfigError;

/// A parsed `http://` or `https://` URL with its resolved socket address.
#[derive(Debug, Clone)]
pub struct Target {
    pub url: String,
    /// `https://`: the connection speaks TLS.
    pub tls: bool,
    /// The host as named in the URL, without brackets: the TLS server name
    /// (sent as SNI when it is a DNS name) and what the certificate must
    /// match.
    pub host: String,
    /// Value of the Host header: the authority as written, port included
    /// only when it is not the scheme default (RFC 9112 §3.2).
    pub host_header: String,
    /// Origin-form request target: path plus query.
    pub path: String,
    /// The address the load goes to: the first of `addrs` until a
    /// connection finds which of them answers (see [`crate::dial`]). Over
    /// a unix socket, the unspecified address with the URL's port.
    pub addr: SocketAddr,
    /// Every address the host resolved to, in the resolver's order (`localhost`
    /// may give `::1` before `127.0.0.1`).
    pub addrs: Vec<SocketAddr>,
    /// `--connect-to` and `--resolve`: the addresses came from these rules
    /// rather than from the URL's name, which still names the `Host`
    /// header, SNI and the certificate.
    pub routes: Routes,
    /// `--unix-socket`: every connection goes to this path instead; the
    /// host is not looked up (`addrs` is empty).
    pub unix_socket: Option<PathBuf>,
    /// `--proxy`: every connection goes to the proxy (`addr` and `addrs`
    /// are its), which looks the URL's host up ([`crate::proxy`]).
    pub proxy: Option<crate::proxy::Via>,
}

/// A target travels as its URL (with its routes, when it has any) and is
/// resolved again where it arrives: a load generator in a namespace or on
/// another host reaches the server by its own name lookup.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
enum Wire {
    Url(String),
    Routed {
        url: String,
        #[serde(default)]
        routes: Routes,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        unix_socket: Option<PathBuf>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        proxy: Option<String>,
    },
}

impl serde::Serialize for Target {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.routes.is_empty() && self.unix_socket.is_none() && self.proxy.is_none() {
            return s.serialize_str(&self.url);
        }
        Wire::Routed {
            url: self.url.clone(),
            routes: self.routes.clone(),
            unix_socket: self.unix_socket.clone(),
            proxy: self.proxy.as_ref().map(|v| v.proxy.url().to_string()),
        }
        .serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for Target {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Target, D::Error> {
        let (url, routes, unix, proxy) = match Wire::deserialize(d)? {
            Wire::Url(url) => (url, Routes::default(), None, None),
            Wire::Routed {
                url,
                routes,
                unix_socket,
                proxy,
            } => (url, routes, unix_socket, proxy),
        };
        match (unix, proxy) {
            (Some(path), _) => Target::parse_unix(&url, &path),
            (None, Some(p)) => {
                crate::proxy::Proxy::parse(&p).and_then(|p| Target::parse_proxied(&url, p))
            }
            (None, None) => Target::parse_routed(&url, &routes),
        }
        .map_err(serde::de::Error::custom)
    }
}

impl Target {
    /// The same scheme, port and request target on another host: the server
    /// as a load generator elsewhere reaches it. `host` is a name or an
    /// address (IPv6 with or without brackets).
    pub fn on_host(&self, host: &str) -> Result<Target, ConfigError> {
        let scheme = self.url.split_once("://").map_or("http", |(s, _)| s);
        let host = if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]")
        } else {
            host.to_string()
        };
        Target::parse_routed(
            &format!("{scheme}://{host}:{}{}", self.addr.port(), self.path),
            &self.routes,
        )
    }

    pub fn parse(raw: &str) -> Result<Target, ConfigError> {
        Target::parse_routed(raw, &Routes::default())
    }

    /// [`Target::parse`], its addresses given by `routes` where a rule
    /// applies ([`crate::route`]).
    pub fn parse_routed(raw: &str, routes: &Routes) -> Result<Target, ConfigError> {
        Target::parse_with(raw, routes, None, None)
    }

    /// [`Target::parse`] through `proxy` (`--proxy`): connections go to the
    /// proxy, and the URL's host is not looked up here (the proxy does).
    pub fn parse_proxied(raw: &str, proxy: crate::proxy::Proxy) -> Result<Target, ConfigError> {
        Target::parse_with(raw, &Routes::default(), None, Some(proxy))
    }

    /// [`Target::parse`] for a server listening on the unix domain socket
    /// at `path` (`--unix-socket`, as curl's): the URL's host is not looked
    /// up; it names the `Host` header only. `http://` only: TLS over a unix
    /// socket is refused.
    pub fn parse_unix(raw: &str, path: &Path) -> Result<Target, ConfigError> {
        Target::parse_with(raw, &Routes::default(), Some(path), None)
    }

    /// The proxy its requests are forwarded to in absolute form: an
    /// `http://` target's (an `https://` one's go through a tunnel).
    pub(crate) fn forward_proxy(&self) -> Option<&crate::proxy::Proxy> {
        self.proxy.as_ref().filter(|_| !self.tls).map(|v| &v.proxy)
    }

    /// Its way through a proxy's CONNECT tunnel: an `https://` target's.
    pub(crate) fn tunnelled(&self) -> Option<&crate::proxy::Via> {
        self.proxy.as_ref().filter(|_| self.tls)
    }

    /// Where connections to a target go, `reached` being the TCP address
    /// that accepted the check's connection.
    pub fn endpoint(&self, reached: SocketAddr) -> crate::Endpoint {
        match &self.unix_socket {
            Some(p) => crate::Endpoint::Unix(p.clone()),
            None => crate::Endpoint::Tcp(reached),
        }
    }

    fn parse_with(
        raw: &str,
        routes: &Routes,
        unix: Option<&Path>,
        proxy: Option<crate::proxy::Proxy>,
    ) -> Result<Target, ConfigError> {
        let url = url::Url::parse(raw).map_err(|e| {
            ConfigError::new(
                "URL",
                format!("cannot parse {raw:?}: {e} (expected e.g. http://127.0.0.1:8080/)"),
            )
        })?;
        let tls = match url.scheme() {
            "http" => false,
            "https" => true,
            other => {
                return Err(ConfigError::new(
                    "URL",
                    format!("unsupported scheme {other:?}: expected http:// or https://"),
                ))
            }
        };
        let host = url
            .host()
            .ok_or_else(|| ConfigError::new("URL", format!("{raw:?} has no host")))?;
        let port = url
            .port_or_known_default()
            .unwrap_or(if tls { 443 } else { 80 });
        let host_str = match &host {
            url::Host::Ipv6(a) => format!("[{a}]"),
            other => other.to_string(),
        };
        let host_header = match url.port() {
            Some(p) => format!("{host_str}:{p}"),
            None => host_str.clone(),
        };
        let lookup = match &host {
            url::Host::Ipv6(a) => format!("[{a}]:{port}"),
            other => format!("{other}:{port}"),
        };
        let bare = crate::route::routed_by(&url).map_or_else(String::new, |(h, _)| h);
        let (addr, addrs) = match unix {
            Some(_) if tls => {
                let why = "a unix socket carries http:// only (TLS over one is not supported)";
                return Err(ConfigError::new("unix-socket", format!("{raw:?}: {why}")));
            }
            Some(_) => (SocketAddr::from((Ipv4Addr::UNSPECIFIED, port)), Vec::new()),
            None => match &proxy {
                Some(p) => p.resolve()?,
                None => resolve(routes, &bare, port, &lookup, &host_str)?,
            },
        };
        let proxy = proxy.map(|proxy| crate::proxy::Via {
            proxy,
            authority: format!("{host_str}:{port}"),
        });
        let mut path = url.path().to_string();
        if let Some(q) = url.query() {
            path.push('?');
            path.push_str(q);
        }
        Ok(Target {
            url: raw.to_string(),
            tls,
            host: bare,
            host_header,
            path,
            addr,
            addrs,
            routes: routes.clone(),
            unix_socket: unix.map(Path::to_path_buf),
            proxy,
        })
    }
}

/// The addresses `routes` give the host, else those it resolves to, in
/// the resolver's order without repeats; the first of them.
fn resolve(
    routes: &Routes,
    bare: &str,
    port: u16,
    lookup: &str,
    host_str: &str,
) -> Result<(SocketAddr, Vec<SocketAddr>), ConfigError> {
    let routed = routes
        .addresses(bare, port)
        .map_err(|e| ConfigError::new("connect-to", e))?;
    let mut addrs: Vec<SocketAddr> = Vec::new();
    let resolved: Vec<SocketAddr> = match routed {
        Some(a) => a,
        None => lookup
            .to_socket_addrs()
            .map_err(|e| ConfigError::new("URL", format!("cannot resolve {host_str}: {e}")))?
            .collect(),
    };
    for a in resolved {
        if !addrs.contains(&a) {
            addrs.push(a);
        }
    }
    let addr = *addrs
        .first()
        .ok_or_else(|| ConfigError::new("URL", format!("{host_str} resolves to no address")))?;
    Ok((addr, addrs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_with_port_and_query() {
        let t = Target::parse("http://127.0.0.1:8080/a/b?x=1").unwrap();
        assert_eq!(t.host_header, "127.0.0.1:8080");
        assert_eq!(t.path, "/a/b?x=1");
        assert_eq!(t.addr, "127.0.0.1:8080".parse().unwrap());
    }

    #[test]
    fn ipv6_literal() {
        let t = Target::parse("http://[::1]:9000/").unwrap();
        assert_eq!(t.host_header, "[::1]:9000");
        assert_eq!(t.addr, "[::1]:9000".parse().unwrap());
    }

    #[test]
    fn default_port_is_not_in_host_header() {
        let t = Target::parse("http://127.0.0.1/").unwrap();
        assert_eq!(t.host_header, "127.0.0.1");
        assert_eq!(t.addr.port(), 80);
    }

    #[test]
    fn https_defaults_to_443_and_names_its_host() {
        let t = Target::parse("https://127.0.0.1/x").unwrap();
        assert!(t.tls);
        assert_eq!(t.addr.port(), 443);
        assert_eq!(
            (t.host.as_str(), t.host_header.as_str()),
            ("127.0.0.1", "127.0.0.1")
        );
        let t = Target::parse("https://[::1]:8443/").unwrap();
        assert_eq!(
            (t.host.as_str(), t.host_header.as_str()),
            ("::1", "[::1]:8443")
        );
        let t = Target::parse("https://localhost:8443/").unwrap();
        assert_eq!(t.host, "localhost");
        assert!(!Target::parse("http://127.0.0.1/").unwrap().tls);
    }

    #[test]
    fn other_schemes_are_rejected_clearly() {
        let e = Target::parse("ftp://127.0.0.1/").unwrap_err();
        assert!(
            e.to_string().contains("expected http:// or https://"),
            "{e}"
        );
    }

    #[test]
    fn moves_to_another_host_keeping_port_and_path() {
        let t = Target::parse("http://127.0.0.1:8080/a?b=1").unwrap();
        let v6 = t.on_host("::1").unwrap();
        assert_eq!(v6.url, "http://[::1]:8080/a?b=1");
        assert_eq!(v6.addr, "[::1]:8080".parse().unwrap());
        let v4 = t.on_host("10.0.0.2").unwrap();
        assert_eq!(v4.url, "http://10.0.0.2:8080/a?b=1");
        assert_eq!(v4.host_header, "10.0.0.2:8080");
    }

    #[test]
    fn travels_as_its_url_and_resolves_on_arrival() {
        let t = Target::parse("http://[::1]:9000/x").unwrap();
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(json, "\"http://[::1]:9000/x\"");
        let back: Target = serde_json::from_str(&json).unwrap();
        assert_eq!((back.addr, back.path), (t.addr, t.path));
        let e = serde_json::from_str::<Target>("\"ftp://x/\"").unwrap_err();
        assert!(e.to_string().contains("unsupported scheme"), "{e}");
    }

    #[test]
    fn garbage_names_the_url() {
        let e = Target::parse("not a url").unwrap_err();
        assert!(e.to_string().starts_with("URL:"), "{e}");
    }
}
