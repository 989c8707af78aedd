//! A reader that went away: `fairbench show --json | head -1`.
//!
//! Rust ignores SIGPIPE, so the next print to the closed pipe fails with
//! EPIPE, and the print macros panic on it: a stack trace for what every
//! Unix tool treats as the normal end of a pipeline. SIGPIPE is not
//! restored at start-up instead, as most tools do, because the load engine
//! writes to sockets the server may have closed, and the signal would kill
//! the run there. So such a panic prints nothing, unwinds as any panic does
//! (every started server, control group and namespace is removed by its
//! owner's destructor on the way), and [`die`] then ends fairbench the way
//! a tool killed by SIGPIPE ends: the shell sees status 141, and
//! `set -o pipefail` treats it as it treats `seq`'s or `grep`'s.

use std::any::Any;
use std::panic::PanicHookInfo;

/// Installs the panic hook that stays silent on a closed stdout or stderr
/// and prints every other panic as before.
pub fn install() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info: &PanicHookInfo<'_>| {
        if !is_broken_pipe(info.payload()) {
            previous(info);
        }
    }));
}

/// Whether a panic is the print macros' on a reader that went away
/// ("failed printing to stdout: Broken pipe (os error 32)").
pub fn is_broken_pipe(payload: &(dyn Any + Send)) -> bool {
    let text = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied());
    text.is_some_and(|t| {
        t.starts_with("failed printing to std")
            && t.contains(&std::io::Error::from_raw_os_error(libc::EPIPE).to_string())
    })
}

/// Writes `bytes` to stdout and flushes it; a reader that went away ends
/// fairbench as SIGPIPE would (as the print macros' panic does), and any
/// other failure is the caller's to say.
pub fn write_stdout(bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|_| stdout.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => die(),
        r => r,
    }
}

/// Ends fairbench as SIGPIPE would have, after the unwinding cleaned up.
pub fn die() -> ! {
    // SAFETY: restoring a signal's default action and raising it in this
    // process; nothing else runs on this thread afterwards.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::raise(libc::SIGPIPE);
    }
    // Delivered synchronously to this thread; should it be blocked, exit
    // with the status a shell gives a process SIGPIPE ended.
    std::process::exit(128 + libc::SIGPIPE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_print_macros_broken_pipe_is_quiet() {
        let epipe = std::io::Error::from_raw_os_error(libc::EPIPE);
        let printed: Box<dyn Any + Send> = Box::new(format!("failed printing to stdout: {epipe}"));
        assert!(is_broken_pipe(&*printed));
        let stderr: Box<dyn Any + Send> = Box::new(format!("failed printing to stderr: {epipe}"));
        assert!(is_broken_pipe(&*stderr));
        let other: Box<dyn Any + Send> = Box::new("index out of bounds".to_string());
        assert!(!is_broken_pipe(&*other));
        let full: Box<dyn Any + Send> = Box::new(format!(
            "failed printing to stdout: {}",
            std::io::Error::from_raw_os_error(libc::ENOSPC)
        ));
        assert!(!is_broken_pipe(&*full));
    }
}
