//! A short command run to its end within a time bound: a toolchain probe,
//! a build step, `initdb`, `psql`. It runs in a process group of its own,
//! registered so that the Ctrl-C handler reaches it, and the whole group is
//! killed when it ends or its time is up, so that nothing it forked (a
//! build daemon, a probe's server) outlives it or holds its pipes open.

use std::io::{self, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The most of each stream kept: a runaway command cannot fill memory.
pub const MAX_OUTPUT: u64 = 1 << 20;

/// How a bounded command ended.
#[derive(Debug)]
pub struct Finished {
    /// `None`: it was still running at its bound, and was killed.
    pub status: Option<ExitStatus>,
    /// What it wrote (at most [`MAX_OUTPUT`] bytes of each); empty for
    /// [`run_logged`], whose output went where the caller sent it.
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl Finished {
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
}

/// Runs `cmd` with `input` on its stdin (else none) and its stdout and
/// stderr captured; kills its group at `timeout`.
pub fn run(cmd: Command, input: Option<Vec<u8>>, timeout: Duration) -> io::Result<Finished> {
    let input = input.map_or(Input::Null, Input::Bytes);
    run_with(cmd, input, MAX_OUTPUT, timeout)
}

/// What a bounded command reads. Never the terminal: a command run to its
/// end must not wait for a keyboard that is not there (CI has no stdin).
#[derive(Debug)]
pub enum Input {
    /// Nothing: end of file at once.
    Null,
    /// These bytes, written by a thread of ours.
    Bytes(Vec<u8>),
    /// A file or another process's output, streamed without passing
    /// through memory: a copy to an ssh host of a binary or a tar archive.
    From(Stdio),
}

/// As [`run`], with its stdin given as an [`Input`] and up to `keep` bytes
/// of each output stream kept: a whole file read through a command is
/// wanted whole, where a probe's output is bounded by [`MAX_OUTPUT`].
pub fn run_with(
    mut cmd: Command,
    input: Input,
    keep: u64,
    timeout: Duration,
) -> io::Result<Finished> {
    let bytes = match input {
        Input::Null => {
            cmd.stdin(Stdio::null());
            None
        }
        Input::Bytes(b) => {
            cmd.stdin(Stdio::piped());
            Some(b)
        }
        Input::From(stdio) => {
            cmd.stdin(stdio);
            None
        }
    };
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = cmd.spawn()?;
    // Our copy of a streamed stdin closes now: a producer (tar) whose
    // reader died then fails its next write instead of filling a pipe.
    drop(cmd);
    let _guard = super::register_group(child.id() as i32);
    let writer = bytes.and_then(|bytes| {
        let mut stdin = child.stdin.take()?;
        Some(std::thread::spawn(move || {
            let _ = stdin.write_all(&bytes);
        }))
    });
    let reader = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(r) = r {
                let _ = r.take(keep).read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = reader(
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let err = reader(
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let status = wait(&mut child, timeout);
    if let Some(w) = writer {
        let _ = w.join();
    }
    Ok(Finished {
        status: status?,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    })
}

/// Runs `cmd` with the stdio its caller set (a build step writes to its
/// log); kills its group at `timeout`.
pub fn run_logged(mut cmd: Command, timeout: Duration) -> io::Result<Finished> {
    cmd.process_group(0);
    let mut child = cmd.spawn()?;
    let _guard = super::register_group(child.id() as i32);
    Ok(Finished {
        status: wait(&mut child, timeout)?,
        stdout: Vec::new(),
        stderr: Vec::new(),
    })
}

/// Waits for `child`, the leader of a process group of its own, until
/// `timeout`; then, ended or not, kills its whole group (what it left
/// behind included) and reaps it. `None`: it was still running. Also ends a
/// helper started by [`super::spawn_child`] that should be ending (a `tar`
/// whose reader is done).
pub fn wait(child: &mut Child, timeout: Duration) -> io::Result<Option<ExitStatus>> {
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_millis(1);
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Ok(Some(s)),
            Ok(None) if Instant::now() >= deadline => break Ok(None),
            Ok(None) => {
                std::thread::sleep(pause);
                // Quick commands end in a few ms; long ones are polled less.
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(e) => break Err(e),
        }
    };
    super::kill_group(child.id() as i32, libc::SIGKILL);
    if !matches!(status, Ok(Some(_))) {
        let _ = child.wait();
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_and_status_are_kept_and_input_is_given() {
        let mut c = Command::new("sh");
        c.args(["-c", "cat; echo err >&2; exit 3"]);
        let f = run(c, Some(b"in\n".to_vec()), Duration::from_secs(20)).unwrap();
        assert_eq!(f.status.and_then(|s| s.code()), Some(3));
        assert_eq!(f.stdout_text(), "in\n");
        assert_eq!(f.stderr_text(), "err\n");
    }

    #[test]
    fn a_streamed_stdin_is_read_and_no_stdin_is_an_end_of_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in");
        std::fs::write(&path, "0123456789").unwrap();
        let from = Input::From(Stdio::from(std::fs::File::open(&path).unwrap()));
        let f = run_with(Command::new("cat"), from, 4, Duration::from_secs(20)).unwrap();
        assert!(f.status.is_some_and(|s| s.success()));
        assert_eq!(f.stdout_text(), "0123");
        // Were it the terminal's, `cat` would wait for a keyboard.
        let f = run(Command::new("cat"), None, Duration::from_secs(20)).unwrap();
        assert!(f.status.is_some_and(|s| s.success()));
        assert_eq!(f.stdout_text(), "");
    }

    #[test]
    fn a_command_past_its_bound_is_killed_with_what_it_forked() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("child");
        let mut c = Command::new("sh");
        c.arg("-c")
            .arg(format!("sleep 30 & echo $! > {}; wait", pid_file.display()));
        let t = Instant::now();
        let f = run(c, None, Duration::from_millis(300)).unwrap();
        assert!(f.status.is_none());
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
        let pid: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // The forked sleep was in the group: it is gone (or a zombie being
        // reaped by init) within moments, never left sleeping its 30 s.
        let gone = || {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            state.is_empty() || state.split_whitespace().nth(2) == Some("Z")
        };
        let t = Instant::now();
        while !gone() && t.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(gone(), "the forked sleep {pid} outlived its group");
    }
}
