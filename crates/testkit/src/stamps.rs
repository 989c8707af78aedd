//! The kernel's arrival stamps (`SO_TIMESTAMPNS`), on before a test relies
//! on them.
//!
//! The kernel stamps arriving packets only while some socket on the machine
//! asks for stamps, and it switches that on from a deferred work item when
//! the first one asks. Until the item has run, a UDP message is stamped when
//! it is read and a TCP segment not at all, so a test that asserts "stamped
//! on arrival" right after asking fails now and then, more often on a busy
//! machine (the flake hunt caught both). Hold an [`ArrivalStamps`] for the
//! test: it has seen a message stamped on its arrival, and while it lives
//! the kernel keeps stamping.

use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A socket that asks for stamps; stamping stays on while it lives.
pub struct ArrivalStamps {
    _rx: UdpSocket,
}

/// Waits (a second at most) until a message is stamped before it is read.
/// Panics if none ever is: the kernel then gives no arrival stamps.
pub fn arrival_stamps_on() -> ArrivalStamps {
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
    tx.connect(rx.local_addr().unwrap()).unwrap();
    rx.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let on: libc::c_int = 1;
    // SAFETY: a valid socket and an int option.
    let r = unsafe {
        libc::setsockopt(
            rx.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(r, 0, "SO_TIMESTAMPNS refused");
    for _ in 0..100 {
        tx.send(&[0; 8]).unwrap();
        std::thread::sleep(Duration::from_millis(10));
        let read = now();
        if stamp_of_next(&rx).is_some_and(|t| t + 5_000_000 < read) {
            return ArrivalStamps { _rx: rx };
        }
    }
    panic!("the kernel never stamped a message on its arrival");
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// The stamp of the next message on `rx` (read and dropped).
fn stamp_of_next(rx: &UdpSocket) -> Option<u64> {
    let mut buf = [0u8; 64];
    let mut control = [0u64; 16];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: zeroed msghdr is valid; the pointers set below outlive the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: a valid socket and a msghdr whose buffers are ours.
    if unsafe { libc::recvmsg(rx.as_raw_fd(), &mut msg, 0) } < 0 {
        return None;
    }
    // SAFETY: the kernel wrote well-formed control messages into `control`.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::timespec>());
                let t = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
                return (t > 0).then_some(t);
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn once_on_a_message_is_stamped_before_it_is_read() {
        let _on = arrival_stamps_on();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        rx.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let on: libc::c_int = 1;
        // SAFETY: a valid socket and an int option.
        unsafe {
            libc::setsockopt(
                rx.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_TIMESTAMPNS,
                (&on as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        let sent = now();
        tx.send(&[1; 8]).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let read = now();
        let t = stamp_of_next(&rx).expect("a stamp");
        // Stamped when it came, not when read 20 ms (or more) later.
        assert!(t >= sent && t + 5_000_000 < read, "{sent} {t} {read}");
    }
}
