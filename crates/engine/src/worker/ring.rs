//! One load thread's io_uring: a batch of sends, receives, or receives
//! with their kernel stamps, submitted in one `io_uring_enter` and
//! complete when it returns (see `uring` for how the loop uses it).

use std::io;
use std::os::fd::RawFd;

use io_uring::{opcode, squeue, types, IoUring};

/// Entries per `io_uring_enter` at the most: a larger batch goes in several.
pub(crate) const SLOTS: usize = 256;
/// A batched read's buffer. An answer longer than this is read on with
/// the thread's own buffer (today's calls).
pub(crate) const RECV_BUF: usize = 16 * 1024;
/// One thread's ring and buffers.
pub(crate) struct Ring {
    ring: IoUring,
    pub bufs: Vec<Box<[u8]>>,
    pub results: Vec<i32>,
    /// The receive stamps of a `recv_stamped`, by entry.
    pub stamps: Vec<Option<u64>>,
    /// Their control buffers (u64s: aligned for cmsghdr).
    controls: Vec<[u64; 8]>,
}

impl Ring {
    /// `None` where the kernel refuses (ENOSYS, EPERM, ENOMEM).
    pub fn new() -> Option<Ring> {
        let ring = IoUring::builder()
            .setup_single_issuer()
            .setup_coop_taskrun()
            .build(SLOTS as u32)
            .or_else(|_| IoUring::new(SLOTS as u32))
            .ok()?;
        Some(Ring {
            ring,
            bufs: Vec::new(),
            results: Vec::new(),
            stamps: Vec::new(),
            controls: Vec::new(),
        })
    }

    /// Submits `entries` (each's user data: its index) in one enter and
    /// waits for all their completions: `results[k]` is entry k's.
    fn run(&mut self, entries: &[squeue::Entry]) -> io::Result<()> {
        let n = entries.len();
        self.results.clear();
        self.results.resize(n, i32::MIN);
        // SAFETY: every buffer an entry names outlives this call (the
        // ring's own, or the run's request pool), and the call returns only
        // once every entry has completed.
        unsafe { self.ring.submission().push_multiple(entries) }
            .map_err(|_| io::Error::other("submission queue full"))?;
        let mut done = 0;
        // Bounded: with MSG_DONTWAIT every entry completes inside the enter
        // that submits it; only signals make more than one.
        for _ in 0..1000 {
            match self.ring.submit_and_wait(n - done) {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                Err(e) => return Err(e),
            }
            for cqe in self.ring.completion() {
                if let Some(r) = self.results.get_mut(cqe.user_data() as usize) {
                    *r = cqe.result();
                    done += 1;
                }
            }
            if done >= n {
                return Ok(());
            }
        }
        Err(io::Error::other("completions never came"))
    }

    /// Reads each socket of `fds` into a buffer of its own.
    pub fn recv(&mut self, fds: &[RawFd]) -> io::Result<()> {
        while self.bufs.len() < fds.len() {
            self.bufs.push(vec![0u8; RECV_BUF].into_boxed_slice());
        }
        let entries: Vec<squeue::Entry> = fds
            .iter()
            .zip(self.bufs.iter_mut())
            .enumerate()
            .map(|(k, (&fd, buf))| {
                opcode::Recv::new(types::Fd(fd), buf.as_mut_ptr(), buf.len() as u32)
                    .flags(libc::MSG_DONTWAIT)
                    .build()
                    .user_data(k as u64)
            })
            .collect();
        self.run(&entries)
    }

    /// Like `recv`, each with the kernel's receive stamp of the last
    /// segment read (`stamps`), as `recvmsg` gives it (see `tls`).
    pub fn recv_stamped(&mut self, fds: &[RawFd]) -> io::Result<()> {
        let n = fds.len();
        while self.bufs.len() < n {
            self.bufs.push(vec![0u8; RECV_BUF].into_boxed_slice());
        }
        self.controls.clear();
        self.controls.resize(n, [0; 8]);
        let mut iovs: Vec<libc::iovec> = self.bufs[..n]
            .iter_mut()
            .map(|b| libc::iovec {
                iov_base: b.as_mut_ptr().cast(),
                iov_len: b.len(),
            })
            .collect();
        let mut msgs: Vec<libc::msghdr> = iovs
            .iter_mut()
            .zip(self.controls.iter_mut())
            .map(|(iov, control)| {
                // SAFETY: msghdr is plain data; all-zero is a valid empty header.
                let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
                msg.msg_iov = iov;
                msg.msg_iovlen = 1;
                msg.msg_control = control.as_mut_ptr().cast();
                msg.msg_controllen = std::mem::size_of_val(control) as _;
                msg
            })
            .collect();
        let entries: Vec<squeue::Entry> = fds
            .iter()
            .zip(msgs.iter_mut())
            .enumerate()
            .map(|(k, (&fd, msg))| {
                opcode::RecvMsg::new(types::Fd(fd), msg)
                    .flags(libc::MSG_DONTWAIT as u32)
                    .build()
                    .user_data(k as u64)
            })
            .collect();
        self.run(&entries)?;
        self.stamps.clear();
        self.stamps
            .extend(msgs.iter().zip(&self.results).map(|(m, &r)| {
                if r > 0 {
                    super::tls::stamp_of(m)
                } else {
                    None
                }
            }));
        Ok(())
    }

    /// Sends each of `items`: (socket, bytes).
    pub fn send(&mut self, items: &[(RawFd, &[u8])]) -> io::Result<()> {
        let entries: Vec<squeue::Entry> = items
            .iter()
            .enumerate()
            .map(|(k, &(fd, bytes))| {
                let len = bytes.len().min(i32::MAX as usize) as u32;
                opcode::Send::new(types::Fd(fd), bytes.as_ptr(), len)
                    .flags(libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL)
                    .build()
                    .user_data(k as u64)
            })
            .collect();
        self.run(&entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    fn pair() -> (UnixStream, UnixStream) {
        let (a, b) = UnixStream::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        b.set_nonblocking(true).unwrap();
        (a, b)
    }

    #[test]
    fn a_batch_reads_each_socket_and_an_empty_one_would_block() {
        let Some(mut ring) = Ring::new() else {
            eprintln!("io_uring unavailable here: nothing to check");
            return;
        };
        let (a, mut a_peer) = pair();
        let (b, _b_peer) = pair();
        let (c, c_peer) = pair();
        a_peer.write_all(b"hello").unwrap();
        drop(c_peer);
        ring.recv(&[a.as_raw_fd(), b.as_raw_fd(), c.as_raw_fd()])
            .unwrap();
        assert_eq!(ring.results, [5, -libc::EAGAIN, 0]);
        assert_eq!(&ring.bufs[0][..5], b"hello");
    }

    #[test]
    fn a_batch_sends_each_and_a_full_socket_takes_part_or_would_block() {
        let Some(mut ring) = Ring::new() else {
            eprintln!("io_uring unavailable here: nothing to check");
            return;
        };
        let (a, mut a_peer) = pair();
        let (b, mut b_peer) = pair();
        let big = vec![7u8; 8 << 20];
        let items = [(a.as_raw_fd(), &b"GET /"[..]), (b.as_raw_fd(), &big[..])];
        ring.send(&items).unwrap();
        assert_eq!(ring.results[0], 5);
        // Far more than a socket buffer: a short send, never a wait.
        let took = ring.results[1];
        assert!(took > 0 && (took as usize) < big.len(), "{took}");
        let mut got = [0u8; 16];
        assert_eq!(a_peer.read(&mut got).unwrap(), 5);
        // Full: the next send would block, and says so at once.
        ring.send(&[(b.as_raw_fd(), &big[..])]).unwrap();
        assert_eq!(ring.results[0], -libc::EAGAIN);
        let mut sink = vec![0u8; 1 << 16];
        assert!(b_peer.read(&mut sink).unwrap() > 0);
    }

    #[test]
    fn a_stamped_batch_gives_each_read_its_arrival_stamp() {
        let Some(mut ring) = Ring::new() else {
            eprintln!("io_uring unavailable here: nothing to check");
            return;
        };
        let _on = crate::stamps::ArrivalStamps::on(std::time::Duration::from_secs(1))
            .expect("arrival stamps");
        // A unix socket stamps nothing: TCP over loopback.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut a_peer = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (a, _) = l.accept().unwrap();
        a.set_nonblocking(true).unwrap();
        crate::sockopt::set_int_option(a.as_raw_fd(), libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)
            .unwrap();
        let (b, _b_peer) = pair();
        a_peer.write_all(b"stamped").unwrap();
        // Bounded: loopback delivers at once; the wait is for a slow machine.
        let mut ready = [libc::pollfd {
            fd: a.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(ready.as_mut_ptr(), 1, 5_000) };
        ring.recv_stamped(&[a.as_raw_fd(), b.as_raw_fd()]).unwrap();
        assert_eq!(ring.results, [7, -libc::EAGAIN]);
        let stamp = ring.stamps[0].expect("a stamp");
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        assert!(
            stamp <= wall && wall - stamp < 60_000_000_000,
            "{stamp} {wall}"
        );
        assert_eq!(ring.stamps[1], None);
    }
}
