//! A small HTTP proxy for the `--proxy` tests, on loopback only: it
//! forwards absolute-form requests (`GET http://host:port/path`) rewritten
//! to origin form, and opens CONNECT tunnels, to loopback addresses only
//! (names under `.invalid` are 127.0.0.1 to it).
//! It counts what it saw (absolute-form requests, CONNECTs, the `Host` and
//! `Proxy-Authorization` headers) and can be told to refuse every request
//! with a status, or to ask for credentials (407). A thread per connection
//! and per direction; stops when dropped (and after 60 s regardless).

use std::io::Write;
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::accept::{accept_loop, bind, content_length, read_some};

/// What the proxy saw, shared with the test.
#[derive(Default)]
pub struct Seen {
    pub absolute: AtomicU64,
    pub connects: AtomicU64,
    /// Every request's `Host` header, absolute-form requests and CONNECTs.
    pub hosts: Mutex<Vec<String>>,
    /// Every request-target (the absolute URL, or CONNECT's authority).
    pub targets: Mutex<Vec<String>>,
    /// Every `Proxy-Authorization` value received.
    pub auth: Mutex<Vec<String>>,
}

/// How the proxy answers.
#[derive(Clone)]
enum Rule {
    Forward,
    /// Every request gets this status and a close.
    Refuse(u16),
    /// Requests without this `Proxy-Authorization` get a 407.
    Require(String),
    /// Forwards, answering each CONNECT only after this long.
    SlowTunnel(Duration),
}

pub struct Proxy {
    pub addr: SocketAddr,
    pub seen: Arc<Seen>,
    stop: Arc<AtomicBool>,
}

impl Proxy {
    /// Forwards and tunnels whatever it is asked.
    pub fn start() -> Proxy {
        Self::with(Rule::Forward)
    }

    /// Refuses every request with `status` (407 asks for credentials).
    pub fn refusing(status: u16) -> Proxy {
        Self::with(Rule::Refuse(status))
    }

    /// Forwards and tunnels, each tunnel opened `delay` after its CONNECT.
    pub fn slow_tunnels(delay: Duration) -> Proxy {
        Self::with(Rule::SlowTunnel(delay))
    }

    /// Asks for `Proxy-Authorization: <value>`, 407 without it.
    pub fn requiring(value: &str) -> Proxy {
        Self::with(Rule::Require(value.to_string()))
    }

    /// `http://127.0.0.1:PORT`, with `user:pass@` when given.
    pub fn url(&self, credentials: Option<&str>) -> String {
        match credentials {
            Some(c) => format!("http://{c}@{}", self.addr),
            None => format!("http://{}", self.addr),
        }
    }

    pub fn absolute(&self) -> u64 {
        self.seen.absolute.load(Ordering::Relaxed)
    }

    pub fn connects(&self) -> u64 {
        self.seen.connects.load(Ordering::Relaxed)
    }

    fn with(rule: Rule) -> Proxy {
        let (l, addr) = bind("127.0.0.1:0");
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Seen::default());
        let (s, seen2) = (stop.clone(), seen.clone());
        accept_loop(l, stop.clone(), Duration::from_secs(60), move |c| {
            let (s, seen, rule) = (s.clone(), seen2.clone(), rule.clone());
            std::thread::spawn(move || serve(c, &rule, &seen, &s));
        });
        Proxy { addr, seen, stop }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// One client connection: request heads read one by one; the first
/// CONNECT turns it into a tunnel, absolute-form requests go to one
/// upstream connection whose answers are copied back as they come.
fn serve(mut c: TcpStream, rule: &Rule, seen: &Seen, stop: &AtomicBool) {
    let _ = c.set_nonblocking(false);
    c.set_read_timeout(Some(Duration::from_millis(200))).ok();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let mut upstream: Option<TcpStream> = None;
    while !stop.load(Ordering::Relaxed) {
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            if read_some(&mut c, &mut chunk, &mut buf).is_none() {
                break;
            }
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end + 4]).into_owned();
        let body = content_length(head.as_bytes());
        while buf.len() < end + 4 + body {
            if read_some(&mut c, &mut chunk, &mut buf).is_none() {
                return;
            }
        }
        let rest: Vec<u8> = buf.drain(..end + 4 + body).skip(end + 4).collect();
        let Some((method, target, others)) = note(&head, seen) else {
            return;
        };
        if let Some(status) = refusal(rule, &head) {
            let _ = c.write_all(refused(status).as_bytes());
            return;
        }
        if method == "CONNECT" {
            seen.connects.fetch_add(1, Ordering::Relaxed);
            if let Rule::SlowTunnel(delay) = rule {
                std::thread::sleep(*delay);
            }
            tunnel(c, &target);
            return;
        }
        let Some(origin) = target.strip_prefix("http://") else {
            let _ = c.write_all(refused(400).as_bytes());
            return;
        };
        seen.absolute.fetch_add(1, Ordering::Relaxed);
        let (authority, path) = origin.split_at(origin.find('/').unwrap_or(origin.len()));
        if upstream.is_none() {
            upstream = open_upstream(authority, &c);
        }
        let Some(up) = upstream.as_mut() else {
            let _ = c.write_all(refused(502).as_bytes());
            return;
        };
        let path = if path.is_empty() { "/" } else { path };
        let mut out = format!("{method} {path} HTTP/1.1\r\n{others}\r\n").into_bytes();
        out.extend_from_slice(&rest);
        if up.write_all(&out).is_err() {
            return;
        }
    }
    if let Some(up) = upstream {
        let _ = up.shutdown(Shutdown::Both);
    }
}

/// Notes a request head: its method, its target and its other header
/// lines (without `Proxy-Authorization`, which is the proxy's own).
fn note(head: &str, seen: &Seen) -> Option<(String, String, String)> {
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let (method, target) = (first.next()?.to_string(), first.next()?.to_string());
    seen.targets.lock().unwrap().push(target.clone());
    let mut others = String::new();
    for line in lines.filter(|l| !l.is_empty()) {
        let (k, v) = line.split_once(':')?;
        if k.eq_ignore_ascii_case("proxy-authorization") {
            seen.auth.lock().unwrap().push(v.trim().to_string());
            continue;
        }
        if k.eq_ignore_ascii_case("host") {
            seen.hosts.lock().unwrap().push(v.trim().to_string());
        }
        others.push_str(line);
        others.push_str("\r\n");
    }
    Some((method, target, others))
}

fn refusal(rule: &Rule, head: &str) -> Option<u16> {
    match rule {
        Rule::Forward | Rule::SlowTunnel(_) => None,
        Rule::Refuse(s) => Some(*s),
        Rule::Require(want) => {
            let given = head.split("\r\n").find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("proxy-authorization")
                    .then(|| v.trim().to_string())
            });
            (given.as_deref() != Some(want.as_str())).then_some(407)
        }
    }
}

fn refused(status: u16) -> String {
    let ask = if status == 407 {
        "Proxy-Authenticate: Basic realm=\"test\"\r\n"
    } else {
        ""
    };
    format!("HTTP/1.1 {status} Refused By Test Proxy\r\n{ask}Content-Length: 0\r\nConnection: close\r\n\r\n")
}

/// A connection to a loopback `authority`, its answers copied back to
/// `client` on a thread of their own.
fn open_upstream(authority: &str, client: &TcpStream) -> Option<TcpStream> {
    let up = connect_loopback(authority)?;
    let _ = up.set_nodelay(true);
    let (from, to) = (up.try_clone().ok()?, client.try_clone().ok()?);
    std::thread::spawn(move || crate::unix_relay::pump(from, to, close));
    Some(up)
}

/// CONNECT: a 200, then bytes both ways until either side ends.
fn tunnel(mut c: TcpStream, authority: &str) {
    let Some(up) = connect_loopback(authority) else {
        let _ = c.write_all(refused(502).as_bytes());
        return;
    };
    if c.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .is_err()
    {
        return;
    }
    let _ = (c.set_read_timeout(None), up.set_nodelay(true));
    let (Ok(c2), Ok(up2)) = (c.try_clone(), up.try_clone()) else {
        return;
    };
    std::thread::spawn(move || crate::unix_relay::pump(up2, c2, close));
    crate::unix_relay::pump(c, up, close);
}

/// A connection to `host:port` on loopback: a name under `.invalid` (which
/// no resolver knows, RFC 6761) is 127.0.0.1 here, so a test shows the
/// client left the lookup to the proxy; any other name is looked up and
/// only its loopback addresses are tried.
fn connect_loopback(authority: &str) -> Option<TcpStream> {
    let (host, port) = authority.rsplit_once(':')?;
    let port: u16 = port.parse().ok()?;
    let addrs: Vec<SocketAddr> = if host.ends_with(".invalid") {
        vec![SocketAddr::from(([127, 0, 0, 1], port))]
    } else {
        (host.trim_matches(|c| c == '[' || c == ']'), port)
            .to_socket_addrs()
            .ok()?
            .filter(|a| a.ip().is_loopback())
            .collect()
    };
    addrs.iter().find_map(|a| TcpStream::connect(a).ok())
}

fn close(s: &TcpStream) {
    let _ = s.shutdown(Shutdown::Write);
}
