//! Loading through an HTTP proxy (`--proxy http://[user:pass@]host:port`),
//! as curl, k6 and vegeta do it.
//!
//! An `http://` target is forwarded: every connection goes to the proxy and
//! each request names its target in absolute form (`GET http://host/path`,
//! RFC 9112 §3.2.2), the `Host` header unchanged, with
//! `Proxy-Authorization` when the proxy URL has credentials. Both are
//! written into the request bytes before the run, so a load without a
//! proxy serialises and sends exactly what it did before.
//!
//! An `https://` target is tunnelled: each connection to the proxy first
//! asks `CONNECT host:port` (RFC 9110 §9.3.6) and, once a 2xx comes, speaks
//! TLS to the target through it (SNI and the certificate check for the
//! URL's host, ALPN after it, so h2 works). The exchange is part of opening
//! the connection: it is counted in the connect time, never in a request's
//! latency. h2c (HTTP/2 by prior knowledge) is refused with a proxy: curl
//! tunnels it only when told to, and a forwarding proxy speaks HTTP/1.1.
//!
//! The proxy's own time is in every latency measured through it, which is
//! why the summary and the JSON say one was in the path. The target's name
//! is not looked up here: the proxy does that, as curl lets it.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use crate::config_error::ConfigError;

/// curl's port for a proxy URL that names none.
const DEFAULT_PORT: u16 = 1080;
/// A proxy's answer to CONNECT is a status line and a few headers; a head
/// longer than this is not one.
const MAX_REPLY: usize = 8 * 1024;

/// A parsed `--proxy` URL. Its credentials are never shown: `Display` and
/// `Debug` give `http://host:port` only.
#[derive(Clone, PartialEq, Eq)]
pub struct Proxy {
    /// As given (credentials included): what travels to another generator.
    url: String,
    /// The host, IPv6 in brackets.
    host: String,
    port: u16,
    /// `Basic base64(user:pass)`, when the URL has a user.
    authorization: Option<String>,
}

/// A target's way through its proxy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Via {
    pub proxy: Proxy,
    /// `host:port` of the target, as CONNECT names it (the port always
    /// written, IPv6 in brackets).
    pub authority: String,
}

impl Proxy {
    /// `http://[user:pass@]host[:port]`, or `host:port` (curl reads a URL
    /// without a scheme as `http://`). Other schemes are refused: an
    /// `https://` proxy would need TLS to the proxy and again inside it.
    pub fn parse(raw: &str) -> Result<Proxy, ConfigError> {
        let err = |m: String| ConfigError::new("proxy", m);
        let with_scheme = if raw.contains("://") {
            raw.to_string()
        } else {
            format!("http://{raw}")
        };
        let url = url::Url::parse(&with_scheme).map_err(|e| {
            err(format!(
                "cannot parse {:?}: {e} (expected http://host:port)",
                mask(raw)
            ))
        })?;
        if url.scheme() != "http" {
            return Err(err(format!(
                "{}:// proxies are not supported (expected http://[user:pass@]host:port)",
                url.scheme()
            )));
        }
        let host = match url.host() {
            Some(url::Host::Ipv6(a)) => format!("[{a}]"),
            Some(h) => h.to_string(),
            None => return Err(err(format!("{:?} names no host", mask(raw)))),
        };
        if !matches!(url.path(), "" | "/") || url.query().is_some() {
            return Err(err(format!(
                "{:?}: a proxy URL has no path (expected http://host:port)",
                mask(raw)
            )));
        }
        let authorization = (!url.username().is_empty()).then(|| {
            let user = decode(url.username());
            let pass = decode(url.password().unwrap_or(""));
            format!("Basic {}", base64(format!("{user}:{pass}").as_bytes()))
        });
        Ok(Proxy {
            url: with_scheme,
            host,
            port: url.port().unwrap_or(DEFAULT_PORT),
            authorization,
        })
    }

    /// The URL as given, credentials included: for the wire to another
    /// generator only, never for a person.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The proxy's addresses, in the resolver's order without repeats.
    pub(crate) fn resolve(&self) -> Result<(SocketAddr, Vec<SocketAddr>), ConfigError> {
        let lookup = format!("{}:{}", self.host, self.port);
        let mut addrs: Vec<SocketAddr> = Vec::new();
        let found = lookup
            .to_socket_addrs()
            .map_err(|e| ConfigError::new("proxy", format!("cannot resolve {}: {e}", self.host)))?;
        for a in found {
            if !addrs.contains(&a) {
                addrs.push(a);
            }
        }
        let first = *addrs.first().ok_or_else(|| {
            ConfigError::new("proxy", format!("{} resolves to no address", self.host))
        })?;
        Ok((first, addrs))
    }

    pub(crate) fn authorization(&self) -> Option<&str> {
        self.authorization.as_deref()
    }
}

impl std::fmt::Display for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "http://{}:{}", self.host, self.port)
    }
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Proxy({self})")
    }
}

impl Via {
    /// The CONNECT request that opens a tunnel to the target.
    pub(crate) fn connect_request(&self) -> Vec<u8> {
        let mut out = format!("CONNECT {a} HTTP/1.1\r\nHost: {a}\r\n", a = self.authority);
        if let Some(auth) = self.proxy.authorization() {
            out.push_str("Proxy-Authorization: ");
            out.push_str(auth);
            out.push_str("\r\n");
        }
        out.push_str("\r\n");
        out.into_bytes()
    }
}

/// What every connection of a tunnelled load sends and expects first.
pub(crate) struct Tunnel {
    pub via: Via,
    /// The CONNECT request, serialised once.
    pub request: Vec<u8>,
}

impl Tunnel {
    pub(crate) fn to(via: &Via) -> Tunnel {
        Tunnel {
            request: via.connect_request(),
            via: via.clone(),
        }
    }
}

/// What the bytes a proxy sent so far say about a tunnel.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Reply {
    /// The head is not complete yet.
    More,
    /// A 2xx whose head is exactly the bytes read: the tunnel is open.
    Open,
    /// Refused, closed or garbled, in words naming the proxy.
    Refused(String),
}

/// Reads `buf`, what the proxy answered CONNECT so far. Nothing may follow
/// the head: the target speaks only once the client's TLS hello went
/// through, so extra bytes mean the proxy is not a tunnel.
pub(crate) fn reply(buf: &[u8], via: &Via) -> Reply {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut resp = httparse::Response::new(&mut headers);
    let refused = |why: String| {
        Reply::Refused(format!(
            "proxy {} refused the tunnel to {}: {why}",
            via.proxy, via.authority
        ))
    };
    match resp.parse(buf) {
        Ok(httparse::Status::Partial) if buf.len() < MAX_REPLY => Reply::More,
        Ok(httparse::Status::Partial) => refused(format!("an answer head over {MAX_REPLY} bytes")),
        Err(e) => refused(format!("not an HTTP answer ({e})")),
        Ok(httparse::Status::Complete(n)) => {
            let code = resp.code.unwrap_or(0);
            if !(200..300).contains(&code) {
                let reason = resp.reason.unwrap_or("");
                refused(format!("{code} {reason}").trim_end().to_string())
            } else if n < buf.len() {
                refused(format!("{} bytes after its {code} answer", buf.len() - n))
            } else {
                Reply::Open
            }
        }
    }
}

/// The proxy closed the connection before answering CONNECT.
pub(crate) fn closed(via: &Via) -> String {
    format!(
        "proxy {} closed the connection instead of answering CONNECT {}",
        via.proxy, via.authority
    )
}

/// Opens the tunnel over a blocking connection to the proxy (the check
/// before a run, `--dump`), within the socket's timeouts.
pub(crate) fn tunnel(tcp: &mut TcpStream, via: &Via, timeout: Duration) -> Result<(), String> {
    let failed = |e: io::Error| format!("proxy {} (CONNECT {}): {e}", via.proxy, via.authority);
    tcp.set_read_timeout(Some(timeout)).map_err(failed)?;
    tcp.set_write_timeout(Some(timeout)).map_err(failed)?;
    tcp.write_all(&via.connect_request()).map_err(failed)?;
    let mut got = Vec::new();
    // One byte at a time: what follows the head belongs to TLS, and the
    // head is a few dozen bytes, read once per connection.
    let mut byte = [0u8; 1];
    loop {
        match tcp.read(&mut byte) {
            Ok(0) => return Err(closed(via)),
            Ok(_) => got.push(byte[0]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(failed(e)),
        }
        if got.ends_with(b"\r\n\r\n") || got.len() >= MAX_REPLY {
            return match reply(&got, via) {
                Reply::Open => Ok(()),
                Reply::Refused(why) => Err(why),
                Reply::More => Err(closed(via)),
            };
        }
    }
}

/// The check before a run through a forwarding proxy: one `HEAD` of the
/// URL through it. A `407` is the proxy's own refusal (a run would measure
/// nothing else), and so is a close without an answer; any other status is
/// the target's, and the run counts it as such. `Err` in one line.
/// `authority` and `path` are the URL's (its `Host` header and its
/// origin-form target).
pub(crate) fn check_forwarding(
    conn: &mut (impl Read + Write),
    proxy: &Proxy,
    authority: &str,
    path: &str,
) -> Result<(), String> {
    let mut request = format!(
        "HEAD http://{authority}{path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n"
    );
    if let Some(auth) = proxy.authorization() {
        request.push_str(&format!("Proxy-Authorization: {auth}\r\n"));
    }
    request.push_str("\r\n");
    let failed = |e: io::Error| format!("proxy {proxy} (forwarding to {authority}): {e}");
    conn.write_all(request.as_bytes()).map_err(failed)?;
    let mut answer = Vec::new();
    let mut buf = [0u8; 1024];
    while !answer.windows(4).any(|w| w == b"\r\n\r\n") && answer.len() < MAX_REPLY {
        match conn.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(failed(e)),
        }
    }
    if answer.is_empty() {
        return Err(format!(
            "proxy {proxy} closed the connection instead of forwarding to {authority}"
        ));
    }
    match refusal_status(&answer, proxy, authority) {
        Some(why) => Err(why),
        None => Ok(()),
    }
}

/// A proxy's status line for a forwarded `http://` request that is the
/// proxy's own refusal (`407`).
fn refusal_status(answer: &[u8], proxy: &Proxy, authority: &str) -> Option<String> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut resp = httparse::Response::new(&mut headers);
    resp.parse(answer).ok()?;
    (resp.code == Some(407)).then(|| {
        format!(
            "proxy {proxy} refused to forward to {authority}: 407 {}",
            resp.reason.unwrap_or("")
        )
        .trim_end()
        .to_string()
    })
}

/// The URL with any password replaced, for error messages.
fn mask(raw: &str) -> String {
    match (raw.find("://"), raw.rfind('@')) {
        (Some(s), Some(at)) if at > s => format!("{}://***@{}", &raw[..s], &raw[at + 1..]),
        (None, Some(at)) => format!("***@{}", &raw[at + 1..]),
        _ => raw.to_string(),
    }
}

/// Percent-decoding of a URL's user or password.
fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = b
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (b[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(v)) => {
                out.push(v);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Standard base64 with padding (RFC 4648 §4), for Basic credentials.
fn base64(data: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (k, &b)| n | (u32::from(b) << (16 - 8 * k)));
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(ABC[((n >> (18 - 6 * k)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_become_basic_and_are_never_shown() {
        let p = Proxy::parse("http://al%40x:pa%3Ass@127.0.0.1:3128").unwrap();
        assert_eq!(p.authorization(), Some("Basic YWxAeDpwYTpzcw=="));
        assert_eq!(p.to_string(), "http://127.0.0.1:3128");
        assert_eq!(format!("{p:?}"), "Proxy(http://127.0.0.1:3128)");
        assert_eq!(base64(b"user:pass"), "dXNlcjpwYXNz");
        assert_eq!(base64(b"a"), "YQ==");
        assert_eq!(base64(b"ab"), "YWI=");
    }

    #[test]
    fn a_bare_host_port_is_http_and_a_missing_port_is_curls_1080() {
        assert_eq!(
            Proxy::parse("proxy.lan:8080").unwrap().to_string(),
            "http://proxy.lan:8080"
        );
        assert_eq!(
            Proxy::parse("http://[::1]").unwrap().to_string(),
            "http://[::1]:1080"
        );
        let e = Proxy::parse("https://u:secret@p:443")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("proxy: https:// proxies are not supported"),
            "{e}"
        );
        let e = Proxy::parse("socks5://p:1080").unwrap_err().to_string();
        assert!(e.contains("socks5://"), "{e}");
        let e = Proxy::parse("http://u:secret@p:1/x")
            .unwrap_err()
            .to_string();
        assert!(!e.contains("secret"), "{e}");
    }

    #[test]
    fn the_answer_to_connect_opens_or_refuses_in_one_line() {
        let via = Via {
            proxy: Proxy::parse("http://u:p@127.0.0.1:3128").unwrap(),
            authority: "example.com:443".into(),
        };
        let req = String::from_utf8(via.connect_request()).unwrap();
        assert_eq!(
            req,
            "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\
             Proxy-Authorization: Basic dTpw\r\n\r\n"
        );
        assert_eq!(
            reply(b"HTTP/1.1 200 Connection established\r\n", &via),
            Reply::More
        );
        assert_eq!(reply(b"HTTP/1.0 200 OK\r\n\r\n", &via), Reply::Open);
        let Reply::Refused(why) =
            reply(b"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n", &via)
        else {
            panic!("not refused")
        };
        assert_eq!(
            why,
            "proxy http://127.0.0.1:3128 refused the tunnel to example.com:443: 407 Proxy Authentication Required"
        );
        assert!(matches!(
            reply(b"HTTP/1.1 200 OK\r\n\r\nxx", &via),
            Reply::Refused(_)
        ));
        assert!(matches!(reply(b"SSH-2.0\r\n\r\n", &via), Reply::Refused(_)));
    }
}
