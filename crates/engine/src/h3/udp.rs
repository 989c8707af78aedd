//! UDP batching for the QUIC connections: several datagrams per system
//! call where the kernel can (GSO: one `sendmsg` with `UDP_SEGMENT` sends
//! a train of equal datagrams; one `recvmmsg` reads several messages, each
//! of which, with GRO, may be a train of datagrams, its segment size in a
//! `UDP_GRO` control message), one datagram per send where it cannot.
//!
//! Whether the kernel can is learnt, not assumed: `UDP_GRO` is asked for
//! on each socket and used if granted; GSO is tried on the first train and
//! given up for the whole run (the shared flag) when the kernel refuses it
//! (`EIO`, `EINVAL`: no GSO on this path or kernel), that train then going
//! out one datagram at a time.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// At most this many datagrams in one train (quinn's `max_datagrams`): the
/// kernel's limit is 64 segments or 64 KiB, whichever is less.
pub(crate) const GSO_MAX: usize = 10;

/// Asks the kernel to coalesce the datagrams it receives on `fd`; true
/// when it agreed.
pub(crate) fn enable_gro(fd: RawFd) -> bool {
    let on: libc::c_int = 1;
    // SAFETY: setsockopt with a valid int option.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_UDP,
            libc::UDP_GRO,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    r == 0
}

/// What the run knows of GSO: given up once the kernel refused it.
#[derive(Clone, Default)]
pub(crate) struct Gso(Arc<AtomicBool>);

impl Gso {
    pub fn usable(&self) -> bool {
        !self.0.load(Ordering::Relaxed)
    }

    fn give_up(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// What one `send` did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sent {
    pub calls: u64,
    pub datagrams: u64,
    /// Datagrams the socket's buffer had no room for.
    pub dropped: u64,
}

/// Sends `buf` on the connected socket `fd`: one datagram, or (`segment`
/// smaller than `buf`) a train of datagrams `segment` bytes long, the last
/// one shorter.
pub(crate) fn send(fd: RawFd, buf: &[u8], segment: Option<usize>, gso: &Gso) -> io::Result<Sent> {
    let seg = segment.filter(|&s| s > 0 && s < buf.len());
    let Some(seg) = seg else {
        return one(fd, buf);
    };
    let count = buf.len().div_ceil(seg) as u64;
    if gso.usable() {
        match send_train(fd, buf, seg) {
            Ok(()) => {
                return Ok(Sent {
                    calls: 1,
                    datagrams: count,
                    dropped: 0,
                })
            }
            Err(e) if would_block(&e) => {
                return Ok(Sent {
                    calls: 1,
                    datagrams: 0,
                    dropped: count,
                })
            }
            Err(e) if matches!(e.raw_os_error(), Some(libc::EIO | libc::EINVAL)) => {
                gso.give_up();
            }
            Err(e) => return Err(e),
        }
    }
    let mut total = Sent::default();
    for d in buf.chunks(seg) {
        let s = one(fd, d)?;
        total.calls += s.calls;
        total.datagrams += s.datagrams;
        total.dropped += s.dropped;
    }
    Ok(total)
}

fn would_block(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
    )
}

fn one(fd: RawFd, buf: &[u8]) -> io::Result<Sent> {
    // SAFETY: `buf` is valid for its length.
    let r = unsafe { libc::send(fd, buf.as_ptr().cast(), buf.len(), 0) };
    if r >= 0 {
        return Ok(Sent {
            calls: 1,
            datagrams: 1,
            dropped: 0,
        });
    }
    let e = io::Error::last_os_error();
    if would_block(&e) {
        Ok(Sent {
            calls: 1,
            datagrams: 0,
            dropped: 1,
        })
    } else {
        Err(e)
    }
}

/// Room for the control messages of one datagram: an int (GRO's segment
/// size) or a u16 (GSO's).
#[repr(C, align(8))]
struct Control([u8; 64]);

fn send_train(fd: RawFd, buf: &[u8], seg: usize) -> io::Result<()> {
    let mut iov = libc::iovec {
        iov_base: buf.as_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    let mut control = Control([0; 64]);
    // SAFETY: an all-zero msghdr is valid; every pointer set below lives
    // until `sendmsg` returns, and CMSG_* stay within `control`.
    unsafe {
        let space = libc::CMSG_SPACE(std::mem::size_of::<u16>() as u32) as usize;
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.0.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_UDP;
        (*cmsg).cmsg_type = libc::UDP_SEGMENT;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<u16>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<u16>(), seg as u16);
        if libc::sendmsg(fd, &msg, 0) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Messages one `recvmmsg` reads at most.
pub(crate) const BATCH: usize = 8;
/// The largest message: a GRO train or one datagram.
const MESSAGE: usize = 65_535;

/// Room for one `recvmmsg`: its messages' buffers, control messages and
/// what each held. One per load thread, shared by its connections (each
/// reads and hands over its datagrams before the next reads).
pub(crate) struct RxBatch {
    bufs: Vec<u8>,
    controls: Vec<Control>,
    /// Each message read: its length, and its datagrams' size when the
    /// kernel coalesced a train.
    pub got: Vec<(usize, Option<usize>)>,
}

impl RxBatch {
    pub fn new() -> RxBatch {
        RxBatch {
            // Pages are touched only as datagrams fill them.
            bufs: vec![0; BATCH * MESSAGE],
            controls: (0..BATCH).map(|_| Control([0; 64])).collect(),
            got: Vec::with_capacity(BATCH),
        }
    }

    /// Message `i` of the last read.
    pub fn message(&self, i: usize) -> &[u8] {
        &self.bufs[i * MESSAGE..][..self.got[i].0]
    }
}

/// Reads up to [`BATCH`] messages queued on `fd` in one call into `b.got`;
/// fewer than [`BATCH`] means the queue was empty when the call ended
/// (what an edge-triggered poller needs: nothing is left unread without a
/// new edge to come).
pub(crate) fn recv_batch(fd: RawFd, b: &mut RxBatch) -> io::Result<()> {
    b.got.clear();
    let base = b.bufs.as_mut_ptr();
    let mut iovs: [libc::iovec; BATCH] = std::array::from_fn(|i| libc::iovec {
        // SAFETY: `i * MESSAGE` is within `bufs`, BATCH messages long.
        iov_base: unsafe { base.add(i * MESSAGE) }.cast(),
        iov_len: MESSAGE,
    });
    // SAFETY: an all-zero mmsghdr is valid; each points at its own iovec
    // and control buffer, which outlive the call.
    let mut msgs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
    for (i, m) in msgs.iter_mut().enumerate() {
        m.msg_hdr.msg_iov = &mut iovs[i];
        m.msg_hdr.msg_iovlen = 1;
        m.msg_hdr.msg_control = b.controls[i].0.as_mut_ptr().cast();
        m.msg_hdr.msg_controllen = b.controls[i].0.len() as _;
    }
    // SAFETY: BATCH valid mmsghdrs.
    let n = unsafe { libc::recvmmsg(fd, msgs.as_mut_ptr(), BATCH as _, 0, std::ptr::null_mut()) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    for m in &msgs[..n as usize] {
        // SAFETY: the kernel filled this message's control messages.
        let seg = unsafe { gro_segment(&m.msg_hdr) };
        b.got.push((m.msg_len as usize, seg));
    }
    Ok(())
}

/// The segment size in a message's `UDP_GRO` control message, if any.
///
/// # Safety
/// `msg` is one the kernel filled by `recvmsg`/`recvmmsg`.
unsafe fn gro_segment(msg: &libc::msghdr) -> Option<usize> {
    let mut seg = None;
    let mut cmsg = libc::CMSG_FIRSTHDR(msg);
    while !cmsg.is_null() {
        if (*cmsg).cmsg_level == libc::SOL_UDP && (*cmsg).cmsg_type == libc::UDP_GRO {
            let s = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>());
            seg = usize::try_from(s).ok().filter(|&s| s > 0);
        }
        cmsg = libc::CMSG_NXTHDR(msg, cmsg);
    }
    seg
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    fn pair() -> (UdpSocket, UdpSocket) {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.connect(b.local_addr().unwrap()).unwrap();
        b.connect(a.local_addr().unwrap()).unwrap();
        b.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        (a, b)
    }

    #[test]
    fn a_train_arrives_as_its_datagrams_with_or_without_gso() {
        for broken in [false, true] {
            let (a, b) = pair();
            let gso = Gso::default();
            if broken {
                gso.give_up();
            }
            let buf: Vec<u8> = (0..2500u32).map(|i| i as u8).collect();
            let s = send(a.as_raw_fd(), &buf, Some(1000), &gso).unwrap();
            assert_eq!(s.datagrams + s.dropped, 3, "{s:?}");
            // One call with GSO (unless this kernel refused it), three
            // without.
            let expect = if gso.usable() { 1 } else { 3 };
            assert_eq!(s.calls, expect, "{s:?}");
            let mut got = Vec::new();
            let mut rx = vec![0u8; 2000];
            for _ in 0..3 {
                let n = b.recv(&mut rx).unwrap();
                got.push(n);
                assert_eq!(&rx[..n], &buf[(got.len() - 1) * 1000..][..n]);
            }
            assert_eq!(got, [1000, 1000, 500]);
        }
    }

    #[test]
    fn gro_reports_the_segment_size_of_a_coalesced_train() {
        let (a, b) = pair();
        if !enable_gro(b.as_raw_fd()) {
            return; // This kernel has no UDP GRO: nothing to check.
        }
        let buf = vec![7u8; 3000];
        send(a.as_raw_fd(), &buf, Some(1200), &Gso::default()).unwrap();
        let mut rx = RxBatch::new();
        let mut total = 0;
        // However the kernel delivers the train (coalesced or not), the
        // segments it names add up to the bytes sent.
        b.set_nonblocking(true).unwrap();
        for _ in 0..500 {
            if total >= 3000 {
                break;
            }
            if recv_batch(b.as_raw_fd(), &mut rx).is_err() {
                std::thread::sleep(std::time::Duration::from_millis(10));
                continue;
            }
            for &(n, seg) in &rx.got {
                let seg = seg.unwrap_or(n);
                assert!(seg <= 1200 && n <= 3000, "{n} {seg}");
                total += n;
            }
        }
        assert_eq!(total, 3000);
    }

    #[test]
    fn one_call_reads_a_batch_and_fewer_means_drained() {
        let (a, b) = pair();
        b.set_nonblocking(true).unwrap();
        for i in 0..11u8 {
            a.send(&[i; 100]).unwrap();
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        let mut batch = RxBatch::new();
        recv_batch(b.as_raw_fd(), &mut batch).unwrap();
        assert_eq!(batch.got.len(), BATCH);
        assert_eq!(batch.message(3), &[3u8; 100][..]);
        recv_batch(b.as_raw_fd(), &mut batch).unwrap();
        assert_eq!(batch.got.len(), 3);
        assert_eq!(batch.message(2), &[10u8; 100][..]);
        let e = recv_batch(b.as_raw_fd(), &mut batch).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
    }
}
