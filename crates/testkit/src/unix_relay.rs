//! A unix domain socket in front of a TCP test server: every connection
//! accepted on the socket is relayed, byte for byte, to the server's port,
//! so that each server here (HTTP/1.1, h2c) can be loaded over a unix
//! socket (`--unix-socket`) without a second implementation of it. A half
//! close is passed on as one, so a server's close still reads as the end of
//! the stream. Stops when dropped (and after 120 s regardless).

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub struct UnixRelay {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    _dir: tempfile::TempDir,
}

impl UnixRelay {
    /// A socket relaying to `127.0.0.1:port`.
    pub fn to_port(port: u16) -> UnixRelay {
        let dir = tempfile::tempdir().expect("a directory for the socket");
        let path = dir.path().join("server.sock");
        let l = UnixListener::bind(&path).expect("bind the test socket");
        l.set_nonblocking(true).expect("a non-blocking listener");
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        std::thread::spawn(move || {
            let end = Instant::now() + Duration::from_secs(120);
            while !s.load(Ordering::Relaxed) && Instant::now() < end {
                match l.accept() {
                    Ok((c, _)) => relay(c, port),
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
        });
        UnixRelay {
            path,
            stop,
            _dir: dir,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for UnixRelay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// One accepted connection, joined to a fresh connection to the server.
fn relay(client: UnixStream, port: u16) {
    let _ = client.set_nonblocking(false);
    let Ok(server) = TcpStream::connect(("127.0.0.1", port)) else {
        return;
    };
    let _ = server.set_nodelay(true);
    let (Ok(c2), Ok(s2)) = (client.try_clone(), server.try_clone()) else {
        return;
    };
    std::thread::spawn(move || {
        pump(c2, s2, |s| {
            let _ = s.shutdown(Shutdown::Write);
        })
    });
    std::thread::spawn(move || {
        pump(server, client, |c| {
            let _ = c.shutdown(Shutdown::Write);
        })
    });
}

/// Copies `from` to `to` until either ends, then half-closes `to`.
pub(crate) fn pump<R: Read, W: Write>(mut from: R, mut to: W, close: impl FnOnce(&W)) {
    let mut buf = [0u8; 64 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
    close(&to);
}
