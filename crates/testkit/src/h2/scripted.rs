//! A deterministic HTTP/2 server written for the engine's tests, frames by
//! hand: every misbehaviour a test needs (resets, GOAWAY, low stream
//! limits, stalls, tiny windows, protocol violations) is one `Action` or
//! setting away. h2c only (prior knowledge), one thread per connection,
//! bounded by a read timeout and the stop flag.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{frame_at, head, u32_at, Frame, PREFACE};
use crate::accept::{accept_loop, bind, read_some};

/// What the server does with one request, decided when it is complete.
#[derive(Clone, Debug)]
pub enum Action {
    /// Answer with `status` and `body` after `delay`.
    Respond {
        delay: Duration,
        status: u16,
        body: Vec<u8>,
    },
    /// Reset the stream with this error code.
    Reset(u32),
    /// Send GOAWAY naming the stream `back` streams before this one as the
    /// last processed; answer those up to it, ignore the rest, then close.
    GoAway { back: u32 },
    /// Send bytes that break the protocol (a DATA frame on stream 0).
    Violate,
    /// Never answer.
    Ignore,
    /// Answer at once, and the same answer again on the same (by then
    /// closed) stream `gap` later: a stray no request asked for.
    Twice { gap: Duration },
}

impl Action {
    pub fn ok() -> Action {
        Action::Respond {
            delay: Duration::ZERO,
            status: 200,
            body: b"Hello World!\n".to_vec(),
        }
    }
    pub fn after(delay: Duration) -> Action {
        Action::Respond {
            delay,
            status: 200,
            body: b"Hello World!\n".to_vec(),
        }
    }
}

/// What a request looked like, for the handler.
pub struct Seen {
    /// Since the server started.
    pub at: Duration,
    /// Which connection (0, 1, ...) and which request on it (0, 1, ...).
    pub conn: u64,
    pub nth: u64,
    pub stream: u32,
    pub body_len: usize,
}

/// What the server saw, for the test's assertions.
#[derive(Default)]
pub struct Stats {
    /// The most streams open at once on one connection (requested and not
    /// yet answered, reset or ignored).
    pub max_open: AtomicU64,
    pub requests: AtomicU64,
    /// Requests that opened a stream on a connection that already had one
    /// open whose answer was not yet due. One whose answer is overdue (the
    /// machine held this server's thread) is the server's delay, not the
    /// client's choice, and is not counted.
    pub overlapped: AtomicU64,
    pub body_bytes: AtomicU64,
    /// RST_STREAM frames received from the client, by error code.
    pub client_resets: Mutex<HashMap<u32, u64>>,
    /// The client's SETTINGS, as received first.
    pub client_settings: Mutex<Vec<(u16, u32)>>,
    /// The client's first connection WINDOW_UPDATE increment.
    pub client_window_update: AtomicU64,
}

pub struct H2Server {
    pub addr: SocketAddr,
    pub stats: Arc<Stats>,
    stop: Arc<AtomicBool>,
    scheme: &'static str,
}

impl H2Server {
    /// `settings`: what the server announces; `handler` decides each reply.
    pub fn start<F>(settings: Vec<(u16, u32)>, handler: F) -> H2Server
    where
        F: Fn(&Seen) -> Action + Send + Sync + 'static,
    {
        Self::start_with(None, settings, handler)
    }

    /// The same over TLS with `tls`'s certificate and ALPN offer.
    pub fn start_tls<F>(
        tls: Arc<rustls::ServerConfig>,
        settings: Vec<(u16, u32)>,
        handler: F,
    ) -> H2Server
    where
        F: Fn(&Seen) -> Action + Send + Sync + 'static,
    {
        Self::start_with(Some(tls), settings, handler)
    }

    fn start_with<F>(
        tls: Option<Arc<rustls::ServerConfig>>,
        settings: Vec<(u16, u32)>,
        handler: F,
    ) -> H2Server
    where
        F: Fn(&Seen) -> Action + Send + Sync + 'static,
    {
        let scheme = if tls.is_some() { "https" } else { "http" };
        let (listener, addr) = bind("127.0.0.1:0");
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(Stats::default());
        let handler = Arc::new(handler);
        let started = Instant::now();
        let (s, st) = (stop.clone(), stats.clone());
        let mut n = 0;
        accept_loop(
            listener,
            stop.clone(),
            Duration::from_secs(120),
            move |conn| {
                let (h, s2, st2, set) = (handler.clone(), s.clone(), st.clone(), settings.clone());
                let tls = tls.clone();
                let id = n;
                n += 1;
                std::thread::spawn(move || {
                    let _ = conn.set_nonblocking(false);
                    conn.set_nodelay(true).ok();
                    conn.set_read_timeout(Some(IDLE)).ok();
                    // A handle of the socket's own whatever wraps it, to
                    // wait on until an answer is due.
                    let Ok(socket) = conn.try_clone() else { return };
                    let shared = Shared {
                        started,
                        settings: &set,
                        handler: &*h,
                        stop: &s2,
                        stats: &st2,
                    };
                    match tls {
                        None => serve(conn, socket, id, &shared),
                        Some(cfg) => {
                            let Ok(session) = rustls::ServerConnection::new(cfg) else {
                                return;
                            };
                            let conn = rustls::StreamOwned::new(session, conn);
                            serve(conn, socket, id, &shared)
                        }
                    }
                });
            },
        );
        H2Server {
            addr,
            stats,
            stop,
            scheme,
        }
    }

    pub fn url(&self) -> String {
        format!("{}://{}/", self.scheme, self.addr)
    }
}

impl Drop for H2Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// A response: `:status` as a literal with the static name (index 8), then
/// the body in one DATA frame.
fn response(out: &mut Vec<u8>, stream: u32, status: u16, body: &[u8]) {
    let s = status.to_string();
    let block = [&[0x08u8, 3][..], s.as_bytes()].concat();
    head(out, block.len(), 0x1, 0x4, stream);
    out.extend_from_slice(&block);
    head(out, body.len(), 0x0, 0x1, stream);
    out.extend_from_slice(body);
}

struct Open {
    nth: u64,
    body: usize,
}

/// The longest a connection's loop waits for a frame before it looks at
/// its stop flag again.
const IDLE: Duration = Duration::from_millis(5);

/// Whether bytes arrive on `s` within `wait`.
fn readable_within(s: &std::net::TcpStream, wait: Duration) -> bool {
    use std::os::fd::AsRawFd;
    let mut fd = libc::pollfd {
        fd: s.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: wait.as_secs() as _,
        tv_nsec: wait.subsec_nanos() as _,
    };
    // SAFETY: one valid pollfd and a timespec that outlive the call.
    let n = unsafe { libc::ppoll(&mut fd, 1, &ts, std::ptr::null()) };
    n != 0
}

/// What every connection of one server shares.
struct Shared<'a, F> {
    started: Instant,
    /// What the server announces.
    settings: &'a [(u16, u32)],
    handler: &'a F,
    stop: &'a AtomicBool,
    stats: &'a Stats,
}

/// Serves one connection (number `id`) until the client leaves, the stop
/// flag is set, or the answers a GOAWAY promised are out.
fn serve<F: Fn(&Seen) -> Action>(
    mut conn: impl Read + Write,
    socket: std::net::TcpStream,
    id: u64,
    shared: &Shared<F>,
) {
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 65536];
    let mut preface = false;
    let mut out = Vec::new();
    head(&mut out, shared.settings.len() * 6, 0x4, 0, 0);
    for &(k, v) in shared.settings {
        out.extend_from_slice(&k.to_be_bytes());
        out.extend_from_slice(&v.to_be_bytes());
    }
    if conn.write_all(&out).is_err() {
        return;
    }
    let mut session = Session::new(id, shared);
    while !shared.stop.load(Ordering::Relaxed) {
        let mut out = Vec::new();
        session.answers_due(&mut out);
        if session.goaway_done() {
            // Dropped, it closes.
            let _ = conn.write_all(&out);
            return;
        }
        if !out.is_empty() && conn.write_all(&out).is_err() {
            return;
        }
        // An answer due before the read would time out: wait for frames
        // only until then. The socket's read timeout counts in the kernel's
        // ticks (4 ms and more); poll's is exact to tens of µs.
        if let Some(d) = session.next_due() {
            let wait = d.saturating_duration_since(Instant::now());
            if wait < IDLE && !readable_within(&socket, wait) {
                continue;
            }
        }
        if read_some(&mut conn, &mut chunk, &mut buf).is_none() {
            return;
        }
        if !preface {
            if buf.len() < PREFACE.len() {
                continue;
            }
            assert_eq!(&buf[..PREFACE.len()], PREFACE, "client preface");
            buf.drain(..PREFACE.len());
            preface = true;
        }
        let mut out = Vec::new();
        let mut at = 0;
        while let Some(f) = frame_at(&buf, at) {
            let p = buf[f.payload.clone()].to_vec();
            at = f.payload.end;
            if session.frame(&f, &p, &mut out) {
                session.request(f.stream, &mut out);
            }
        }
        buf.drain(..at);
        if !out.is_empty() && conn.write_all(&out).is_err() {
            return;
        }
    }
}

/// One connection's streams and what is owed on them.
struct Session<'a, F> {
    id: u64,
    shared: &'a Shared<'a, F>,
    open: HashMap<u32, Open>,
    /// Answers to send: when, on which stream, status and body.
    due: Vec<(Instant, u32, u16, Vec<u8>)>,
    /// Strays: answers sent again on streams already answered.
    again: Vec<(Instant, u32)>,
    /// Requests seen so far.
    nth: u64,
    /// The last stream a GOAWAY sent promised to process.
    goaway: Option<u32>,
    first_settings: bool,
    first_wu: bool,
}

impl<'a, F: Fn(&Seen) -> Action> Session<'a, F> {
    fn new(id: u64, shared: &'a Shared<'a, F>) -> Self {
        Session {
            id,
            shared,
            open: HashMap::new(),
            due: Vec::new(),
            again: Vec::new(),
            nth: 0,
            goaway: None,
            first_settings: true,
            first_wu: true,
        }
    }

    /// Appends the responses (and strays) whose time came.
    fn answers_due(&mut self, out: &mut Vec<u8>) {
        let now = Instant::now();
        self.due.sort_by_key(|d| d.0);
        while self.due.first().is_some_and(|d| d.0 <= now) {
            let (_, stream, status, body) = self.due.remove(0);
            if self.open.remove(&stream).is_some() {
                response(out, stream, status, &body);
            }
        }
        self.again.retain(|&(at, stream)| {
            if at > now {
                return true;
            }
            response(out, stream, 200, b"Hello World!\n");
            false
        });
    }

    /// After a GOAWAY: whether every stream it promised is answered.
    fn goaway_done(&self) -> bool {
        self.goaway
            .is_some_and(|last| !self.open.keys().any(|&s| s <= last) && self.due.is_empty())
    }

    /// When the next answer (or stray) is due.
    fn next_due(&self) -> Option<Instant> {
        self.due
            .first()
            .map(|d| d.0)
            .into_iter()
            .chain(self.again.iter().map(|a| a.0))
            .min()
    }

    /// Takes in one frame (payload `p`), appending what it calls for to
    /// `out`; whether it completes a request.
    fn frame(&mut self, f: &Frame, p: &[u8], out: &mut Vec<u8>) -> bool {
        let (kind, flags, stream, len) = (f.kind, f.flags, f.stream, f.len);
        let stats = self.shared.stats;
        match kind {
            0x4 if flags & 1 == 0 => {
                if self.first_settings {
                    self.first_settings = false;
                    let mut s = stats.client_settings.lock().unwrap();
                    if s.is_empty() {
                        *s = p
                            .chunks(6)
                            .map(|c| (u16::from_be_bytes([c[0], c[1]]), u32_at(c, 2)))
                            .collect();
                    }
                }
                head(out, 0, 0x4, 1, 0);
            }
            0x8 if stream == 0 && self.first_wu => {
                self.first_wu = false;
                let _ = stats.client_window_update.compare_exchange(
                    0,
                    u32_at(p, 0) as u64,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
            }
            0x1 => {
                let now = Instant::now();
                let overdue = |s: &u32| self.due.iter().any(|d| d.1 == *s && d.0 <= now);
                if self.open.keys().any(|s| !overdue(s)) {
                    stats.overlapped.fetch_add(1, Ordering::Relaxed);
                }
                self.open.insert(
                    stream,
                    Open {
                        nth: self.nth,
                        body: 0,
                    },
                );
                self.nth += 1;
                let n = self.open.len() as u64;
                stats.max_open.fetch_max(n, Ordering::Relaxed);
                return flags & 1 != 0;
            }
            0x0 => {
                if let Some(o) = self.open.get_mut(&stream) {
                    o.body += len;
                }
                stats.body_bytes.fetch_add(len as u64, Ordering::Relaxed);
                if len > 0 {
                    // Give the window back at once: the test is of the
                    // client's patience, not of this server's.
                    head(out, 4, 0x8, 0, stream);
                    out.extend_from_slice(&(len as u32).to_be_bytes());
                    head(out, 4, 0x8, 0, 0);
                    out.extend_from_slice(&(len as u32).to_be_bytes());
                }
                return flags & 1 != 0;
            }
            0x3 => {
                self.open.remove(&stream);
                *stats
                    .client_resets
                    .lock()
                    .unwrap()
                    .entry(u32_at(p, 0))
                    .or_default() += 1;
            }
            _ => {}
        }
        false
    }

    /// A complete request on `stream`: the handler decides what to do.
    fn request(&mut self, stream: u32, out: &mut Vec<u8>) {
        if self.goaway.is_some_and(|g| stream > g) {
            // Not processed: left without an answer, as RFC 9113 §6.8 allows.
            return;
        }
        let Some(o) = self.open.get(&stream) else {
            return;
        };
        self.shared.stats.requests.fetch_add(1, Ordering::Relaxed);
        let seen = Seen {
            at: self.shared.started.elapsed(),
            conn: self.id,
            nth: o.nth,
            stream,
            body_len: o.body,
        };
        let action = (self.shared.handler)(&seen);
        self.act(action, stream, out);
    }

    fn act(&mut self, action: Action, stream: u32, out: &mut Vec<u8>) {
        match action {
            Action::Respond {
                delay,
                status,
                body,
            } => {
                self.due
                    .push((Instant::now() + delay, stream, status, body));
            }
            Action::Reset(code) => {
                self.open.remove(&stream);
                head(out, 4, 0x3, 0, stream);
                out.extend_from_slice(&code.to_be_bytes());
            }
            Action::GoAway { back } => {
                let last = stream.saturating_sub(2 * back);
                self.goaway = Some(last);
                head(out, 8, 0x7, 0, 0);
                out.extend_from_slice(&last.to_be_bytes());
                out.extend_from_slice(&0u32.to_be_bytes());
                // Those up to it are answered; the rest never.
                for (&s, _) in self.open.iter().filter(|(&s, _)| s <= last) {
                    self.due
                        .push((Instant::now(), s, 200, b"Hello World!\n".to_vec()));
                }
            }
            Action::Violate => {
                head(out, 4, 0x0, 0, 0);
                out.extend_from_slice(b"oops");
            }
            Action::Ignore => {}
            Action::Twice { gap } => {
                self.due
                    .push((Instant::now(), stream, 200, b"Hello World!\n".to_vec()));
                self.again.push((Instant::now() + gap, stream));
            }
        }
    }
}
