//! Advisory file locks (`flock`): the kernel releases one when its holder
//! exits or crashes, so no lock outlives the process that took it.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

/// `path` opened (created when missing, never truncated) and locked
/// exclusively, if no other open file holds its lock; `Ok(None)` when one
/// does. The lock lasts as long as the returned file.
pub fn try_exclusive(path: &Path) -> io::Result<Option<File>> {
    let file = open(path)?;
    Ok(try_lock(&file)?.then_some(file))
}

/// `path` opened (created when missing, never truncated) and locked
/// exclusively, waiting for any other holder to let go.
pub fn exclusive(path: &Path) -> io::Result<File> {
    let file = open(path)?;
    // SAFETY: flock on a descriptor `file` keeps open for the call.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(file)
}

fn open(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
}

/// Locks the open `file` exclusively unless another open file holds its
/// lock (`Ok(false)`); the lock lasts until `file` is closed.
pub fn try_lock(file: &File) -> io::Result<bool> {
    // SAFETY: flock on a descriptor `file` keeps open for the call.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(true);
    }
    match io::Error::last_os_error() {
        e if e.raw_os_error() == Some(libc::EWOULDBLOCK) => Ok(false),
        e => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.lock");
        let first = try_exclusive(&p).unwrap().expect("free");
        assert!(try_exclusive(&p).unwrap().is_none());
        drop(first);
        let again = try_exclusive(&p).unwrap().expect("free again");
        // A waiting locker gets the lock once the holder lets go.
        let waiter = {
            let p = p.clone();
            std::thread::spawn(move || exclusive(&p).map(|_| ()))
        };
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!waiter.is_finished(), "took a held lock");
        drop(again);
        waiter.join().unwrap().unwrap();
    }
}
