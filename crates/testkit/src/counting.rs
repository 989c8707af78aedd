//! A keep-alive HTTP/1.1 server that counts what it receives, for checking
//! server-side that requests went out as declared: every request is
//! counted by "METHOD path" (bodies by "BODY text"); paths under /fail are
//! answered 503, those under /slow 300 ms late, the rest 200 (every answer
//! after the server's `delay` too). Stops when
//! dropped, and after 120 s regardless; every loop is bounded by a read
//! timeout or the stop flag.

use std::collections::HashMap;
use std::io::Write;
use std::net::TcpStream;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::accept::{accept_loop, bind, content_length, read_some};

pub struct Counting {
    pub port: u16,
    pub seen: Arc<Mutex<HashMap<String, u64>>>,
    stop: Arc<AtomicBool>,
}

impl Counting {
    /// `delay`: how long every answer waits (a slower service).
    pub fn start(delay: Duration) -> Counting {
        let (l, addr) = bind("127.0.0.1:0");
        let port = addr.port();
        let seen = Arc::new(Mutex::new(HashMap::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, log) = (stop.clone(), seen.clone());
        accept_loop(l, stop.clone(), Duration::from_secs(120), move |c| {
            let (s2, log2) = (s.clone(), log.clone());
            std::thread::spawn(move || serve(c, delay, &s2, &log2));
        });
        Counting { port, seen, stop }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// How many requests had `key` ("GET /x", "BODY {...}").
    pub fn count(&self, key: &str) -> u64 {
        self.seen.lock().unwrap().get(key).copied().unwrap_or(0)
    }

    /// Counts of the keys starting with `prefix`, by the rest of the key.
    pub fn by_prefix(&self, prefix: &str) -> HashMap<String, u64> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter_map(|(k, n)| Some((k.strip_prefix(prefix)?.to_string(), *n)))
            .collect()
    }
}

impl Drop for Counting {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn serve(mut c: TcpStream, delay: Duration, stop: &AtomicBool, log: &Mutex<HashMap<String, u64>>) {
    let _ = c.set_nonblocking(false);
    c.set_nodelay(true).ok();
    c.set_read_timeout(Some(Duration::from_millis(200))).ok();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let t0 = Instant::now();
    while !stop.load(Ordering::Relaxed) && t0.elapsed() < Duration::from_secs(120) {
        let mut out = Vec::new();
        while let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..i]).into_owned();
            let len = content_length(&buf[..i]);
            if buf.len() < i + 4 + len {
                break;
            }
            let body = String::from_utf8_lossy(&buf[i + 4..i + 4 + len]).into_owned();
            buf.drain(..i + 4 + len);
            let mut words = head.lines().next().unwrap_or("").split(' ');
            let (m, p) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
            {
                let mut l = log.lock().unwrap();
                *l.entry(format!("{m} {p}")).or_insert(0) += 1;
                if !body.is_empty() {
                    *l.entry(format!("BODY {body}")).or_insert(0) += 1;
                }
                for h in head.lines().skip(1) {
                    if let Some(v) = h.strip_prefix("X-Id: ") {
                        *l.entry(format!("X-Id {v}")).or_insert(0) += 1;
                    }
                }
            }
            if p.starts_with("/slow") {
                std::thread::sleep(Duration::from_millis(300));
            }
            out.extend_from_slice(if p.starts_with("/fail") {
                b"HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n".as_slice()
            } else {
                b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".as_slice()
            });
        }
        if !out.is_empty() {
            if !delay.is_zero() {
                std::thread::sleep(delay);
            }
            if c.write_all(&out).is_err() {
                return;
            }
        }
        if read_some(&mut c, &mut chunk, &mut buf).is_none() {
            return;
        }
    }
}
