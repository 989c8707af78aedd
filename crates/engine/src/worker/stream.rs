//! The socket under a load thread's connection: TCP, or a unix domain
//! socket (`--unix-socket`).
//!
//! An enum, as [`super::tls::Transport`] is: a read or a write is one
//! well-predicted branch and then the system call, with nothing allocated
//! and no dynamic dispatch. What only TCP has (`TCP_NODELAY`) is a no-op on
//! a unix socket.

use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, RawFd};

use mio::net::{TcpStream, UnixStream};

use crate::endpoint::Endpoint;

pub(crate) enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    /// Starts a non-blocking connect. A unix socket connects at once or
    /// fails: a listener whose backlog is full refuses (`EAGAIN`), which
    /// counts as a failed connect and is retried after a back-off, as a
    /// refused TCP connect is.
    pub fn connect(to: &Endpoint) -> io::Result<Stream> {
        match to {
            Endpoint::Tcp(a) => TcpStream::connect(*a).map(Stream::Tcp),
            Endpoint::Unix(p) => UnixStream::connect(p).map(Stream::Unix),
        }
    }

    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        match self {
            Stream::Tcp(s) => s.take_error(),
            Stream::Unix(s) => s.take_error(),
        }
    }

    /// `Ok` once connected; `NotConnected` while the connect is under way.
    pub fn connected(&self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.peer_addr().map(drop),
            Stream::Unix(s) => s.peer_addr().map(drop),
        }
    }

    /// Small requests go out at once (TCP only: a unix socket has no
    /// Nagle's algorithm to turn off).
    pub fn set_nodelay(&self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_nodelay(true),
            Stream::Unix(_) => Ok(()),
        }
    }
}

impl AsRawFd for Stream {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
        }
    }
}

impl Read for Stream {
    #[inline]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    #[inline]
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(data),
            Stream::Unix(s) => s.write(data),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.flush(),
            Stream::Unix(s) => s.flush(),
        }
    }
}
