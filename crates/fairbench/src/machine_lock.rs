//! One benchmark per machine: every command that measures (`run`, `load`)
//! holds a lock on one file for the whole machine, whatever database it
//! writes, so two measurements never share the cores unknowingly (each
//! would be stored as if it had the machine to itself). A second one is
//! refused with the holder's pid and command, or with `--wait` queues
//! behind it.
//!
//! The lock is a `flock` on [`path`]: the kernel releases it when its
//! holder dies, so a killed fairbench never leaves the machine locked.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::time::Duration;

use crate::usage_error::usage;

/// Overrides the lock's path: for a test harness that runs many commands at
/// once, each with its own machine.
pub const ENV: &str = "FAIRBENCH_LOCK";

/// The lock file: `$FAIRBENCH_LOCK`, else `/run/lock/fairbench.lock` (the
/// system's folder for lock files, writable by every user), else
/// `/tmp/fairbench.lock`.
pub fn path() -> PathBuf {
    if let Some(p) = std::env::var_os(ENV).filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    let run_lock = std::path::Path::new("/run/lock");
    if run_lock.is_dir() {
        return run_lock.join("fairbench.lock");
    }
    PathBuf::from("/tmp/fairbench.lock")
}

/// Held until dropped.
pub struct MachineLock {
    _file: File,
}

/// How often `--wait` tries again, and looks at Ctrl-C.
const POLL: Duration = Duration::from_millis(200);

impl MachineLock {
    /// Takes the lock, or refuses (exit 2) naming the holder; with `wait`,
    /// waits for it (saying once whom for) until it is free or the user
    /// interrupts.
    pub fn acquire(wait: bool) -> anyhow::Result<MachineLock> {
        let path = path();
        let mut file = open(&path)?;
        let mut said = false;
        loop {
            if fairbench_sys::flock::try_lock(&file).unwrap_or(false) {
                break;
            }
            let holder = holder(&mut file);
            if !wait {
                return Err(usage(format!(
                    "another benchmark is running on this machine ({holder}; lock {}): two at once would each measure the other; wait for it, or pass --wait to queue behind it",
                    path.display()
                )));
            }
            if !said {
                eprintln!("waiting for the benchmark already running here ({holder}) to finish…");
                said = true;
            }
            if crate::interrupt::interrupted() {
                anyhow::bail!("interrupted while waiting for {holder}");
            }
            std::thread::sleep(POLL);
        }
        let me = format!(
            "pid {} ({})",
            std::process::id(),
            fairbench_sys::text::visible(&command_line())
        );
        let _ = file.set_len(0);
        let _ = file.rewind();
        let _ = file.write_all(me.as_bytes());
        let _ = file.flush();
        Ok(MachineLock { _file: file })
    }
}

/// Opens the lock file without following a symlink planted in a shared
/// folder, creating it readable and writable by every user (another user's
/// benchmark shares the cores too).
fn open(path: &std::path::Path) -> anyhow::Result<File> {
    let opened = |create: bool| {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .truncate(false)
            .mode(0o666)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
    };
    // An existing file is opened without O_CREAT: in a sticky folder the
    // kernel (protected_regular) refuses O_CREAT on another user's file.
    let file = opened(false).or_else(|_| opened(true)).map_err(|e| {
        anyhow::anyhow!(
            "cannot open the machine's benchmark lock {}: {e} (set {ENV} to another path)",
            path.display()
        )
    })?;
    // The umask may have taken write access from other users.
    let _ = file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    Ok(file)
}

/// What the holder wrote: "pid N (command)".
fn holder(file: &mut File) -> String {
    let mut s = String::new();
    let _ = file.rewind();
    let _ = Read::by_ref(file).take(4096).read_to_string(&mut s);
    let s = fairbench_sys::text::visible(s.trim());
    if s.is_empty() {
        "its pid is not known yet".into()
    } else {
        s
    }
}

fn command_line() -> String {
    let mut args: Vec<String> = std::env::args().collect();
    if let Some(first) = args.first_mut() {
        if let Some(name) = std::path::Path::new(first.as_str()).file_name() {
            *first = name.to_string_lossy().into_owned();
        }
    }
    let line = args.join(" ");
    line.chars().take(200).collect()
}
