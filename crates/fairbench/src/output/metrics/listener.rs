//! The `/metrics` endpoint: a minimal HTTP/1.1 server on a thread of its
//! own. One request per connection, answered and closed; a client that
//! sends nothing is dropped after a read timeout; request bodies are never
//! read. Connections are served one at a time: a scraper is one client
//! every few seconds, and a slow one can hold up only the next scrape,
//! never the load (the engine's threads never touch the registry's lock;
//! the coordinating thread holds it for one update per interval).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::registry::Registry;
use super::text::{render, Format};

/// A request head larger than this is not a scrape.
const MAX_HEAD: usize = 8 * 1024;
/// How long a client may take to send its request head, or to take the answer.
const IO_TIMEOUT: Duration = Duration::from_secs(2);
/// How often the accept loop looks at its stop flag.
const POLL: Duration = Duration::from_millis(50);

/// Serves `registry` on `listener` until `stop` is set.
pub fn serve(listener: TcpListener, registry: Arc<Mutex<Registry>>, stop: Arc<AtomicBool>) {
    // Non-blocking accept, so that the thread sees `stop` without a
    // connection to wake it.
    if listener.set_nonblocking(true).is_err() {
        return;
    }
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((conn, _)) => answer(conn, &registry),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(POLL),
            Err(_) => std::thread::sleep(POLL),
        }
    }
}

/// Answers one request; any I/O failure just drops the connection.
fn answer(mut conn: TcpStream, registry: &Mutex<Registry>) {
    if conn.set_nonblocking(false).is_err()
        || conn.set_read_timeout(Some(IO_TIMEOUT)).is_err()
        || conn.set_write_timeout(Some(IO_TIMEOUT)).is_err()
    {
        return;
    }
    let Some(head) = read_head(&mut conn) else {
        return;
    };
    let reply = respond(&head, registry);
    let _ = conn.write_all(&reply);
    let _ = conn.shutdown(std::net::Shutdown::Both);
}

/// The request head up to its blank line, or `None` when the client sent
/// too much, too little or too slowly.
fn read_head(conn: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && !buf.windows(2).any(|w| w == b"\n\n") {
        let n = conn.read(&mut chunk).ok()?;
        if n == 0 || buf.len() + n > MAX_HEAD {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Some(String::from_utf8_lossy(&buf).into_owned())
}

/// The whole answer to a request head: the metrics for `GET /metrics`
/// (or `HEAD`), 404 for another path, 405 for another method, 400 for
/// what is not an HTTP request line.
pub fn respond(head: &str, registry: &Mutex<Registry>) -> Vec<u8> {
    let mut lines = head.lines();
    let mut parts = lines.next().unwrap_or("").split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    if !parts.next().unwrap_or("").starts_with("HTTP/") {
        return plain("400 Bad Request", "not an HTTP request\n");
    }
    let path = target.split('?').next().unwrap_or("");
    if path != "/metrics" {
        return plain("404 Not Found", "only /metrics is served here\n");
    }
    if method != "GET" && method != "HEAD" {
        return plain("405 Method Not Allowed", "GET /metrics\n");
    }
    let accept = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("accept"))
        .map(|(_, v)| v.trim())
        .unwrap_or("");
    let format = Format::from_accept(accept);
    // Rendered under the lock, written after it is released: a slow
    // client never holds the lock the next interval's update needs.
    let body = match registry.lock() {
        Ok(r) => render(&r, format),
        Err(poisoned) => render(&poisoned.into_inner(), format),
    };
    let mut out = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        format.content_type(),
        body.len()
    )
    .into_bytes();
    if method == "GET" {
        out.extend_from_slice(body.as_bytes());
    }
    out
}

fn plain(status: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(head: &str) -> String {
        let r = Mutex::new(Registry::default());
        let out = String::from_utf8(respond(head, &r)).unwrap();
        out.lines().next().unwrap().to_string()
    }

    #[test]
    fn only_get_of_metrics_is_answered_with_metrics() {
        assert_eq!(status("GET /metrics HTTP/1.1\r\n\r\n"), "HTTP/1.1 200 OK");
        assert_eq!(
            status("GET /metrics?x=1 HTTP/1.0\r\nAccept: text/plain\r\n\r\n"),
            "HTTP/1.1 200 OK"
        );
        assert_eq!(status("GET / HTTP/1.1\r\n\r\n"), "HTTP/1.1 404 Not Found");
        assert_eq!(
            status("POST /metrics HTTP/1.1\r\n\r\n"),
            "HTTP/1.1 405 Method Not Allowed"
        );
        assert_eq!(status("\u{0}\u{1}garbage"), "HTTP/1.1 400 Bad Request");
        assert_eq!(status(""), "HTTP/1.1 400 Bad Request");
    }
}
