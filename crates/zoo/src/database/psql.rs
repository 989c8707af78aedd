//! How fairbench reaches the PostgreSQL it started from outside: the names
//! every server is given, the superuser, and a client or setup command
//! (`psql`, `initdb`) run to its end. Apart from [`super::postgres`] (which
//! starts the database) and [`super::oracle`] (which reads it for the
//! check), so that neither depends on the other for these.

use std::process::Command;
use std::time::Duration;

/// The database, role and password every server is given.
pub const DB_NAME: &str = "fairbench";
pub const DB_USER: &str = "fairbench";
pub const DB_PASSWORD: &str = "fairbench";
/// The superuser initdb makes; reached only through the folder's socket.
pub const SUPERUSER: &str = "postgres";

/// Runs `cmd` to its end within `timeout`, `input` on its stdin; its
/// stdout, or why it failed (with its stderr).
pub(crate) fn command_output(
    cmd: Command,
    input: Option<Vec<u8>>,
    timeout: Duration,
    what: &str,
) -> Result<String, String> {
    let f = fairbench_sys::process::bounded::run(cmd, input, timeout)
        .map_err(|e| format!("cannot start {what}: {e}"))?;
    match f.status {
        None => Err(format!("{what} took longer than {}s", timeout.as_secs())),
        Some(s) if s.success() => Ok(f.stdout_text()),
        Some(s) => {
            let stderr = f.stderr_text();
            let last: Vec<&str> = stderr.lines().rev().take(3).collect();
            let last: Vec<&str> = last.into_iter().rev().collect();
            Err(format!(
                "{what} {}: {}",
                fairbench_sys::process::describe_exit(s),
                fairbench_sys::text::visible(&last.join(" / "))
            ))
        }
    }
}
