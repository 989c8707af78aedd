//! Headless Chromium driven over the DevTools protocol through a pipe
//! (`--remote-debugging-pipe`: commands on fd 3, replies and events on fd 4,
//! NUL-separated JSON), so the browser test needs no websocket client and no
//! network port. Every wait is bounded.

use std::io::{Read, Write};
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The browser to use: $FAIRBENCH_CHROMIUM, or chromium / chromium-browser on PATH.
pub fn find() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("FAIRBENCH_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser"] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

pub struct Chrome {
    child: Child,
    to: std::fs::File,
    from: Receiver<Value>,
    next_id: u64,
    /// Events received so far, in order.
    pub events: Vec<Value>,
    _profile: tempfile::TempDir,
}

fn pipe() -> (RawFd, RawFd) {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two descriptors we then own.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(rc, 0, "pipe2: {}", std::io::Error::last_os_error());
    (fds[0], fds[1])
}

impl Chrome {
    pub fn launch(binary: &Path, width: u32, height: u32) -> Chrome {
        let profile = tempfile::tempdir().unwrap();
        let (cmd_r, cmd_w) = pipe(); // we write commands, the browser reads fd 3
        let (ev_r, ev_w) = pipe(); // the browser writes fd 4, we read
        let mut cmd = Command::new(binary);
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-default-apps",
            "--disable-extensions",
            "--hide-scrollbars",
            "--mute-audio",
            "--remote-debugging-pipe",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--window-size={width},{height}"))
        .arg("about:blank")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        // SAFETY: only async-signal-safe calls between fork and exec. The
        // descriptors are first moved above 9, so placing them on 3 and 4
        // cannot overwrite one another.
        unsafe {
            cmd.pre_exec(move || {
                let a = libc::fcntl(cmd_r, libc::F_DUPFD, 10);
                let b = libc::fcntl(ev_w, libc::F_DUPFD, 10);
                if a < 0 || b < 0 || libc::dup2(a, 3) < 0 || libc::dup2(b, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        // SAFETY: we own these descriptors; the child has its copies.
        unsafe {
            libc::close(cmd_r);
            libc::close(ev_w);
        }
        let to = unsafe { std::fs::File::from_raw_fd(cmd_w) };
        let mut from_file = unsafe { std::fs::File::from_raw_fd(ev_r) };
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let mut chunk = [0u8; 65536];
            loop {
                match from_file.read(&mut chunk) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
                while let Some(i) = buf.iter().position(|b| *b == 0) {
                    let msg: Vec<u8> = buf.drain(..=i).collect();
                    if let Ok(v) = serde_json::from_slice::<Value>(&msg[..msg.len() - 1]) {
                        if tx.send(v).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        Chrome {
            child,
            to,
            from: rx,
            next_id: 1,
            events: Vec::new(),
            _profile: profile,
        }
    }

    /// Sends a command and waits (at most 30 s) for its reply; events that
    /// arrive meanwhile are kept in `events`.
    pub fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&msg).unwrap();
        bytes.push(0);
        self.to.write_all(&bytes).expect("write to the browser");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.from.recv_timeout(left) {
                Ok(v) if v.get("id").and_then(Value::as_u64) == Some(id) => {
                    if let Some(e) = v.get("error") {
                        panic!("{method}: {e}");
                    }
                    return v["result"].clone();
                }
                Ok(v) => self.events.push(v),
                Err(RecvTimeoutError::Timeout) => {
                    panic!("{method}: no reply from the browser within 30 s")
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("{method}: the browser closed the pipe")
                }
            }
        }
    }

    /// Waits (at most `limit`) for an event named `method`.
    pub fn wait_event(&mut self, method: &str, limit: Duration) -> bool {
        if self.events.iter().any(|e| e["method"] == method) {
            return true;
        }
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.from.recv_timeout(left) {
                Ok(v) => {
                    let hit = v["method"] == method;
                    self.events.push(v);
                    if hit {
                        return true;
                    }
                }
                Err(_) => return false,
            }
        }
    }

    /// Collects events for `d` more.
    pub fn settle(&mut self, d: Duration) {
        let deadline = Instant::now() + d;
        while let Ok(v) = self
            .from
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            self.events.push(v);
        }
    }
}

impl Drop for Chrome {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A decoded 8-bit RGB(A) PNG: width, height, RGB pixels.
pub struct Image {
    pub width: usize,
    pub height: usize,
    pub rgb: Vec<[u8; 3]>,
}

/// Decodes the PNGs Chromium writes (8-bit RGB or RGBA, not interlaced).
pub fn decode_png(data: &[u8]) -> Image {
    assert!(data.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    let mut pos = 8;
    let (mut w, mut h, mut channels) = (0usize, 0usize, 0usize);
    let mut idat = Vec::new();
    while pos + 8 <= data.len() {
        let len = u32::from_be_bytes(data[pos..pos + 4].try_into().unwrap()) as usize;
        let kind = &data[pos + 4..pos + 8];
        let body = &data[pos + 8..pos + 8 + len];
        match kind {
            b"IHDR" => {
                w = u32::from_be_bytes(body[0..4].try_into().unwrap()) as usize;
                h = u32::from_be_bytes(body[4..8].try_into().unwrap()) as usize;
                assert_eq!(body[8], 8, "bit depth");
                channels = match body[9] {
                    2 => 3,
                    6 => 4,
                    t => panic!("PNG colour type {t} not handled"),
                };
                assert_eq!(body[12], 0, "interlaced PNG not handled");
            }
            b"IDAT" => idat.extend_from_slice(body),
            b"IEND" => break,
            _ => {}
        }
        pos += 12 + len;
    }
    let mut raw = Vec::new();
    flate2::read::ZlibDecoder::new(&idat[..])
        .read_to_end(&mut raw)
        .expect("inflate");
    let stride = w * channels;
    assert_eq!(raw.len(), h * (stride + 1), "PNG data size");
    let mut prev = vec![0u8; stride];
    let mut rgb = Vec::with_capacity(w * h);
    for y in 0..h {
        let filter = raw[y * (stride + 1)];
        let mut line = raw[y * (stride + 1) + 1..(y + 1) * (stride + 1)].to_vec();
        for i in 0..stride {
            let a = if i >= channels {
                line[i - channels] as i32
            } else {
                0
            };
            let b = prev[i] as i32;
            let c = if i >= channels {
                prev[i - channels] as i32
            } else {
                0
            };
            let add = match filter {
                0 => 0,
                1 => a,
                2 => b,
                3 => (a + b) / 2,
                4 => {
                    let p = a + b - c;
                    let (pa, pb, pc) = ((p - a).abs(), (p - b).abs(), (p - c).abs());
                    if pa <= pb && pa <= pc {
                        a
                    } else if pb <= pc {
                        b
                    } else {
                        c
                    }
                }
                f => panic!("PNG filter {f}"),
            };
            line[i] = line[i].wrapping_add(add as u8);
        }
        for px in line.chunks(channels) {
            rgb.push([px[0], px[1], px[2]]);
        }
        prev = line;
    }
    Image {
        width: w,
        height: h,
        rgb,
    }
}
