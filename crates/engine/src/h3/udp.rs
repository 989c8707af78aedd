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
//!
//! Each message read carries the kernel's receive time where the socket
//! asked for it (`SO_TIMESTAMPNS`): what lets the load thread read late
//! and still time each datagram by its arrival (see `h3::load`). A
//! coalesced train has one stamp, its first segment's arrival: its
//! segments came in one burst.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::sockopt::set_int_option;

/// At most this many datagrams in one train (quinn's `max_datagrams`): the
/// kernel's limit is 64 segments or 64 KiB, whichever is less.
pub(crate) const GSO_MAX: usize = 10;

/// Asks the kernel to coalesce the datagrams it receives on `fd`; true
/// when it agreed.
pub(crate) fn enable_gro(fd: RawFd) -> bool {
    set_int_option(fd, libc::SOL_UDP, libc::UDP_GRO, 1).is_ok()
}

/// Asks the kernel to stamp each datagram `fd` receives with its arrival
/// time (CLOCK_REALTIME, a control message of every read); true when it
/// agreed.
pub(crate) fn enable_timestamps(fd: RawFd) -> bool {
    set_int_option(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1).is_ok()
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
/// size) and a timespec (the arrival stamp), or a u16 (GSO's).
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

/// One message read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Got {
    pub len: usize,
    /// Its datagrams' size when the kernel coalesced a train.
    pub segment: Option<usize>,
    /// When it arrived (CLOCK_REALTIME ns), where the socket stamps.
    pub stamp: Option<u64>,
}

/// Room for one `recvmmsg`: its messages' buffers, control messages and
/// what each held. One per load thread, shared by its connections (each
/// reads and hands over its datagrams before the next reads).
pub(crate) struct RxBatch {
    bufs: Vec<u8>,
    controls: Vec<Control>,
    /// Each message read.
    pub got: Vec<Got>,
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
        &self.bufs[i * MESSAGE..][..self.got[i].len]
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
        let (segment, stamp) = unsafe { control(&m.msg_hdr) };
        b.got.push(Got {
            len: m.msg_len as usize,
            segment,
            stamp,
        });
    }
    Ok(())
}

/// What a message's control messages say: the segment size of a
/// coalesced train (`UDP_GRO`), and the arrival stamp (`SCM_TIMESTAMPNS`,
/// CLOCK_REALTIME ns; a zero stamp, which the kernel gives before the
/// option took effect, is none).
///
/// # Safety
/// `msg` is one the kernel filled by `recvmsg`/`recvmmsg`, or one whose
/// `msg_control` holds well-formed control messages `msg_controllen`
/// bytes long.
unsafe fn control(msg: &libc::msghdr) -> (Option<usize>, Option<u64>) {
    let (mut seg, mut stamp) = (None, None);
    let mut cmsg = libc::CMSG_FIRSTHDR(msg);
    while !cmsg.is_null() {
        let (level, ty) = ((*cmsg).cmsg_level, (*cmsg).cmsg_type);
        if level == libc::SOL_UDP && ty == libc::UDP_GRO {
            let s = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>());
            seg = usize::try_from(s).ok().filter(|&s| s > 0);
        } else if level == libc::SOL_SOCKET && ty == libc::SCM_TIMESTAMPNS {
            let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast());
            if ts.tv_sec > 0 && ts.tv_nsec >= 0 {
                stamp = Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            }
        }
        cmsg = libc::CMSG_NXTHDR(msg, cmsg);
    }
    (seg, stamp)
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
            for g in &rx.got {
                let (n, seg) = (g.len, g.segment.unwrap_or(g.len));
                assert!(seg <= 1200 && n <= 3000, "{n} {seg}");
                total += n;
            }
        }
        assert_eq!(total, 3000);
    }

    /// A control buffer as the kernel writes it: a GRO segment size and
    /// an arrival stamp, in either order, or neither.
    fn parsed(
        gro: Option<libc::c_int>,
        ts: Option<libc::timespec>,
    ) -> (Option<usize>, Option<u64>) {
        let mut control = Control([0; 64]);
        // SAFETY: an all-zero msghdr is valid; the CMSG_* walk below stays
        // within `control`, which is large enough for both messages.
        unsafe {
            let mut msg: libc::msghdr = std::mem::zeroed();
            msg.msg_control = control.0.as_mut_ptr().cast();
            let int = std::mem::size_of::<libc::c_int>() as u32;
            let spec = std::mem::size_of::<libc::timespec>() as u32;
            let mut len = 0;
            len += gro.map_or(0, |_| libc::CMSG_SPACE(int) as usize);
            len += ts.map_or(0, |_| libc::CMSG_SPACE(spec) as usize);
            msg.msg_controllen = len as _;
            if len == 0 {
                return control_of(&msg);
            }
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            if let Some(t) = ts {
                (*c).cmsg_level = libc::SOL_SOCKET;
                (*c).cmsg_type = libc::SCM_TIMESTAMPNS;
                (*c).cmsg_len = libc::CMSG_LEN(spec) as _;
                std::ptr::write_unaligned(libc::CMSG_DATA(c).cast(), t);
                c = libc::CMSG_NXTHDR(&msg, c);
            }
            if let Some(g) = gro {
                (*c).cmsg_level = libc::SOL_UDP;
                (*c).cmsg_type = libc::UDP_GRO;
                (*c).cmsg_len = libc::CMSG_LEN(int) as _;
                std::ptr::write_unaligned(libc::CMSG_DATA(c).cast(), g);
            }
            control_of(&msg)
        }
    }

    fn control_of(msg: &libc::msghdr) -> (Option<usize>, Option<u64>) {
        // SAFETY: `parsed` wrote well-formed control messages.
        unsafe { control(msg) }
    }

    #[test]
    fn control_messages_give_the_segment_size_and_the_arrival_stamp() {
        let ts = |s, ns| libc::timespec {
            tv_sec: s,
            tv_nsec: ns,
        };
        assert_eq!(
            parsed(Some(1200), Some(ts(1_700_000_000, 250))),
            (Some(1200), Some(1_700_000_000_000_000_250))
        );
        assert_eq!(parsed(None, Some(ts(3, 7))), (None, Some(3_000_000_007)));
        assert_eq!(parsed(Some(1350), None), (Some(1350), None));
        assert_eq!(parsed(None, None), (None, None));
        // A zero stamp (the option not yet in effect) is no stamp.
        assert_eq!(parsed(None, Some(ts(0, 0))), (None, None));
    }

    #[test]
    fn a_stamping_socket_gives_each_message_its_arrival_time() {
        let (a, b) = pair();
        b.set_nonblocking(true).unwrap();
        let _on = crate::stamps::ArrivalStamps::on(std::time::Duration::from_secs(1))
            .expect("arrival stamps");
        assert!(enable_timestamps(b.as_raw_fd()), "SO_TIMESTAMPNS refused");
        let before = crate::clock::realtime();
        a.send(&[1; 50]).unwrap();
        a.send(&[2; 60]).unwrap();
        let after_send = crate::clock::realtime();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut rx = RxBatch::new();
        recv_batch(b.as_raw_fd(), &mut rx).unwrap();
        assert_eq!(rx.got.len(), 2);
        for g in &rx.got {
            let t = g.stamp.expect("a stamp on every message");
            // Stamped on arrival, not at the read 20 ms later.
            assert!(t >= before && t <= after_send, "{before} {t} {after_send}");
        }
        // Without the option: no stamp.
        let (c, d) = pair();
        d.set_nonblocking(true).unwrap();
        c.send(&[3; 10]).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        recv_batch(d.as_raw_fd(), &mut rx).unwrap();
        assert_eq!(rx.got[0].stamp, None);
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
