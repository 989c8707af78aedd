//! What a load thread's connection carries its bytes over: the socket
//! itself, or TLS over it.
//!
//! An enum rather than a trait object: on a plain connection a read or a
//! write is one well-predicted branch and then the socket call, with nothing
//! allocated; the TLS state lives behind a box that plain connections never
//! have. TLS is driven by hand over the non-blocking socket: ciphertext is
//! read until the socket would block (the loop is edge-triggered), and
//! ciphertext the socket did not take is kept and written first next time.

use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;

use super::stream::Stream;
use rustls::{ClientConnection, HandshakeKind};

use crate::clock::NANOS_PER_SEC;

pub(crate) enum Transport {
    Plain(Stream),
    Tls(Box<TlsStream>),
}

pub(crate) struct TlsStream {
    sock: Stream,
    conn: ClientConnection,
    /// The last read of ciphertext was shorter than the room offered: the
    /// socket was drained.
    drained: bool,
    /// The kernel's receive stamp of the last read of ciphertext (see
    /// [`Transport::read_stamped`]).
    stamp: Option<u64>,
}

/// The socket as TLS reads it, noting whether each read drained it and,
/// when asked (`stamp`), the receive stamp of the segments it read.
struct Socket<'a> {
    sock: &'a mut Stream,
    drained: &'a mut bool,
    stamp: Option<&'a mut Option<u64>>,
}

impl Read for Socket<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = match self.stamp.as_deref_mut() {
            None => self.sock.read(buf)?,
            Some(last) => {
                // A read without a stamp clears the last one: the records it
                // completes must not be given an earlier read's time.
                let (n, stamp) = recv_stamped(self.sock.as_raw_fd(), buf)?;
                *last = stamp;
                n
            }
        };
        *self.drained = n < buf.len();
        Ok(n)
    }
}

/// Where a TLS handshake stands after the socket had something to say.
pub(crate) enum Handshake {
    Done,
    /// Waiting for the server (or for room to write).
    Pending,
    Failed(String),
}

impl Transport {
    pub fn tls(sock: Stream, conn: ClientConnection) -> Transport {
        Transport::Tls(Box::new(TlsStream {
            sock,
            conn,
            drained: false,
            stamp: None,
        }))
    }

    pub fn sock(&self) -> &Stream {
        match self {
            Transport::Plain(s) => s,
            Transport::Tls(t) => &t.sock,
        }
    }

    /// The socket under any TLS: a proxy's CONNECT exchange comes before
    /// TLS says anything.
    pub fn sock_mut(&mut self) -> &mut Stream {
        match self {
            Transport::Plain(s) => s,
            Transport::Tls(t) => &mut t.sock,
        }
    }

    /// Plaintext into `buf`; `Ok(0)` at the end of the stream.
    #[inline]
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Transport::Plain(s) => s.read(buf),
            Transport::Tls(t) => t.read_with(buf, false),
        }
    }

    /// Like `read`, with the kernel's receive time (CLOCK_REALTIME
    /// nanoseconds) of the last segment read, where the socket stamps what
    /// it receives (`stamp_arrivals`). Over TLS, the stamp of the last read
    /// of ciphertext: the plaintext handed out came in it or before it (a
    /// record is complete only once its last segment is in), so the stamp
    /// is never earlier than the bytes' arrival, and never later than
    /// their read.
    #[inline]
    pub fn read_stamped(&mut self, buf: &mut [u8]) -> io::Result<(usize, Option<u64>)> {
        match self {
            Transport::Plain(s) => recv_stamped(s.as_raw_fd(), buf),
            Transport::Tls(t) => t.read_with(buf, true).map(|n| (n, t.stamp)),
        }
    }

    /// Asks the kernel to stamp every segment this socket receives.
    pub fn stamp_arrivals(&self) -> io::Result<()> {
        self.set_socket_option(libc::SO_TIMESTAMPNS, 1)
    }

    /// Wakes a reader only once `bytes` are queued (`SO_RCVLOWAT`); the end
    /// of the stream, a reset and write space wake it regardless.
    pub fn set_low_water(&self, bytes: usize) -> io::Result<()> {
        self.set_socket_option(libc::SO_RCVLOWAT, bytes.min(libc::c_int::MAX as usize) as _)
    }

    fn set_socket_option(&self, name: libc::c_int, value: libc::c_int) -> io::Result<()> {
        crate::sockopt::set_int_option(self.sock().as_raw_fd(), libc::SOL_SOCKET, name, value)
    }

    /// Plaintext from `data`, as much as is taken.
    #[inline]
    pub fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        match self {
            Transport::Plain(s) => s.write(data),
            Transport::Tls(t) => t.write(data),
        }
    }

    /// Bytes already accepted but not yet on the socket.
    #[inline]
    pub fn pending_out(&self) -> bool {
        match self {
            Transport::Plain(_) => false,
            Transport::Tls(t) => t.conn.wants_write(),
        }
    }

    pub fn flush_out(&mut self) -> io::Result<()> {
        match self {
            Transport::Plain(_) => Ok(()),
            Transport::Tls(t) => t.flush_out(),
        }
    }

    /// Whether the read just made, if it was shorter than the buffer, left
    /// the socket drained. Always, of a socket. A short read of plaintext
    /// says nothing of the socket by itself; it was drained if TLS's last
    /// read of ciphertext was shorter than the room it offered (edge-
    /// triggered: bytes that came since raise a new edge).
    #[inline]
    pub fn short_read_drains(&self) -> bool {
        match self {
            Transport::Plain(_) => true,
            Transport::Tls(t) => t.drained,
        }
    }

    /// Moves the handshake on as far as the socket allows.
    pub fn handshake(&mut self) -> Handshake {
        match self {
            Transport::Plain(_) => Handshake::Done,
            Transport::Tls(t) => t.handshake(),
        }
    }

    /// The protocol the server chose by ALPN (`None`: plain TCP, or the
    /// server chose none).
    pub fn alpn(&self) -> Option<&[u8]> {
        match self {
            Transport::Plain(_) => None,
            Transport::Tls(t) => t.conn.alpn_protocol(),
        }
    }

    /// The handshake resumed an earlier session.
    pub fn resumed(&self) -> bool {
        match self {
            Transport::Plain(_) => false,
            Transport::Tls(t) => t.conn.handshake_kind() == Some(HandshakeKind::Resumed),
        }
    }

    /// The client ends the connection: TLS says so first (close_notify),
    /// as far as the socket takes it without waiting.
    pub fn say_goodbye(&mut self) {
        if let Transport::Tls(t) = self {
            if !t.conn.is_handshaking() {
                t.conn.send_close_notify();
                let _ = t.flush_out();
            }
        }
    }
}

impl TlsStream {
    /// Plaintext into `buf`, reading ciphertext as needed; `stamped`: with
    /// the receive stamp of each read of it kept in `self.stamp`.
    fn read_with(&mut self, buf: &mut [u8], stamped: bool) -> io::Result<usize> {
        loop {
            match self.conn.reader().read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                // Closed without close_notify: many HTTP servers do, and the
                // response framing tells whether anything was cut.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
                Err(e) => return Err(e),
            }
            self.drained = false;
            let got = self.conn.read_tls(&mut Socket {
                sock: &mut self.sock,
                drained: &mut self.drained,
                stamp: stamped.then_some(&mut self.stamp),
            });
            match got {
                Ok(0) => return Ok(0),
                Ok(_) => {
                    if let Err(e) = self.conn.process_new_packets() {
                        // Tell the server why (the alert is queued).
                        let _ = self.flush_out();
                        return Err(io::Error::new(io::ErrorKind::InvalidData, e));
                    }
                    // A post-handshake message may want an answer.
                    if self.conn.wants_write() {
                        match self.flush_out() {
                            Ok(()) => {}
                            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                            Err(e) => return Err(e),
                        }
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        // Ciphertext the socket did not take last time goes first; while it
        // waits, nothing more is taken (the writable edge resumes us).
        self.flush_out()?;
        let n = self.conn.writer().write(data)?;
        if n == 0 && !data.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        match self.flush_out() {
            Ok(()) => Ok(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(n),
            Err(e) => Err(e),
        }
    }

    fn flush_out(&mut self) -> io::Result<()> {
        while self.conn.wants_write() {
            match self.conn.write_tls(&mut self.sock) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn handshake(&mut self) -> Handshake {
        loop {
            match self.flush_out() {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Handshake::Failed(e.to_string()),
            }
            if !self.conn.is_handshaking() {
                return Handshake::Done;
            }
            match self.conn.read_tls(&mut self.sock) {
                Ok(0) => {
                    return Handshake::Failed(
                        "the server closed the connection during the handshake".into(),
                    )
                }
                Ok(_) => {
                    if let Err(e) = self.conn.process_new_packets() {
                        let _ = self.flush_out();
                        return Handshake::Failed(e.to_string());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Handshake::Pending,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Handshake::Failed(e.to_string()),
            }
        }
    }
}

/// `recvmsg` with room for the receive timestamp. For TCP the kernel reports
/// the time of the last segment the read consumed: the moment the bytes read
/// were complete in the socket.
fn recv_stamped(fd: std::os::fd::RawFd, buf: &mut [u8]) -> io::Result<(usize, Option<u64>)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // u64s: the control buffer must be aligned for cmsghdr.
    let mut control = [0u64; 8];
    // SAFETY: msghdr is plain data; all-zero is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: iov and control outlive the call and their lengths are theirs.
    let n = unsafe { libc::recvmsg(fd, &mut msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((n as usize, stamp_of(&msg)))
}

/// The receive stamp among the control messages of a `recvmsg` (also one
/// made through io_uring: the kernel sets `msg_controllen` either way).
pub(super) fn stamp_of(msg: &libc::msghdr) -> Option<u64> {
    let mut stamp = None;
    // SAFETY: the CMSG_* walk stays within msg_controllen, which the kernel
    // set; the timestamp is read unaligned from within that buffer.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                if ts.tv_sec > 0 {
                    stamp = Some(ts.tv_sec as u64 * NANOS_PER_SEC + ts.tv_nsec as u64);
                }
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    stamp
}
