//! The one way the engine sets an int-valued socket option.

use std::io;
use std::os::fd::RawFd;

/// `setsockopt` of an int-valued option.
pub(crate) fn set_int_option(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: any descriptor (a bad one is refused with EBADF) and an int
    // option of the right size.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_option_names_the_system_s_error() {
        let e = set_int_option(-1, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EBADF));
    }
}
