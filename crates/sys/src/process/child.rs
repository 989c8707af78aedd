//! A long-lived helper child that is not a server: an ssh connection's
//! master, the local ssh that carries a remote server's supervisor, a load
//! generator agent, a `tar` streaming into a copy. Servers go through
//! [`super::ServerProcess`] (a control group, a log, a readiness poll);
//! commands run to their end through [`super::bounded`].

use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

/// Starts `cmd`, with the stdio its caller set, as the leader of a process
/// group of its own, so that a Ctrl-C on the terminal reaches only
/// fairbench (which then stops its children in order) and killing the group
/// ends whatever the child forked; and the kernel kills it when the thread
/// that started it ends, so that a crashed or SIGKILLed fairbench leaves no
/// helper behind (start it from a thread that outlives it).
///
/// The group is not registered for [`super::terminate_all`]: a caller that
/// wants the first Ctrl-C to end it calls [`super::register_group`]; an ssh
/// master must live on, since the orderly cleanup after it runs through it.
pub fn spawn_child(cmd: &mut Command) -> io::Result<Child> {
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    cmd.process_group(0);
    // SAFETY: the closure only makes async-signal-safe calls.
    unsafe {
        cmd.pre_exec(move || {
            die_with_parent_thread(parent);
            Ok(())
        });
    }
    cmd.spawn()
}

/// Asks for SIGKILL when the thread that forked this process ends, and
/// exits if fairbench (pid `parent`) died before the request took effect.
///
/// # Safety
/// Only between fork and exec, in the child: it changes the calling
/// process, and exits it.
pub(super) unsafe fn die_with_parent_thread(parent: libc::pid_t) {
    // SAFETY: prctl, getppid and _exit are async-signal-safe.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if libc::getppid() != parent {
            libc::_exit(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Stdio;

    #[test]
    fn a_child_leads_a_group_of_its_own() {
        let mut cmd = Command::new("sleep");
        cmd.arg("30").stdin(Stdio::null());
        let mut child = spawn_child(&mut cmd).unwrap();
        let pid = child.id();
        let in_group = crate::process::group_members(pid as i32);
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(in_group, vec![pid]);
    }

    #[test]
    fn a_child_dies_with_the_thread_that_started_it() {
        let child = std::thread::spawn(|| {
            let mut cmd = Command::new("sleep");
            cmd.arg("30").stdin(Stdio::null());
            spawn_child(&mut cmd).unwrap()
        })
        .join()
        .unwrap();
        let mut child = child;
        let t = std::time::Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break Some(s);
            }
            if t.elapsed() > std::time::Duration::from_secs(10) {
                let _ = child.kill();
                break None;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.and_then(|s| s.signal()), Some(libc::SIGKILL));
    }
}
