//! Is a server's toolchain installed here, and which version?

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde::Serialize;

use crate::manifest::{Argv, Toolchain};

/// A JVM starting on a busy 2-core machine can take seconds; a probe that
/// takes longer than this is treated as broken rather than waited on.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(20);

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum ToolchainStatus {
    /// The probe ran and exited 0. `version` is `None` when the manifest has
    /// no `version_regex` or it did not match.
    Present {
        version: Option<String>,
    },
    Unavailable {
        reason: String,
    },
}

impl ToolchainStatus {
    pub fn is_present(&self) -> bool {
        matches!(self, ToolchainStatus::Present { .. })
    }

    /// "present (1.22.1)" / "unavailable: dart not found on PATH".
    pub fn describe(&self) -> String {
        match self {
            ToolchainStatus::Present { version: Some(v) } => format!("present ({v})"),
            ToolchainStatus::Present { version: None } => "present".to_string(),
            ToolchainStatus::Unavailable { reason } => format!("unavailable: {reason}"),
        }
    }
}

/// Runs the toolchain's probe (no shell) and reads its version.
pub fn probe(tc: &Toolchain) -> ToolchainStatus {
    let program = &tc.probe[0];
    let Some(resolved) = resolve(program) else {
        return ToolchainStatus::Unavailable {
            reason: if program.contains('/') {
                format!("{program} not found")
            } else {
                format!("{} not found on PATH", tc.name)
            },
        };
    };
    let mut cmd = Command::new(&resolved);
    cmd.args(&tc.probe[1..]);
    let shown = tc.probe.join(" ");
    match probe_output(cmd, PROBE_TIMEOUT) {
        Err(e) => ToolchainStatus::Unavailable {
            reason: format!("`{shown}` could not run: {e}"),
        },
        Ok(None) => ToolchainStatus::Unavailable {
            reason: format!(
                "`{shown}` did not finish within {}s",
                PROBE_TIMEOUT.as_secs()
            ),
        },
        Ok(Some((status, out))) if !status.success() => {
            let last = out
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            ToolchainStatus::Unavailable {
                reason: format!(
                    "`{shown}` {}{}",
                    fairbench_sys::process::describe_exit(status),
                    if last.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", fairbench_sys::text::visible(last))
                    }
                ),
            }
        }
        Ok(Some((_, out))) => ToolchainStatus::Present {
            version: tc
                .version_regex
                .as_ref()
                .and_then(|re| re.captures(&out))
                .and_then(|c| c.get(1))
                .map(|m| fairbench_sys::text::visible(m.as_str())),
        },
    }
}

/// Probes each distinct probe once: four Dart servers share one
/// `dart --version`. Keyed on the version regex too, since manifests that
/// share a probe may read its output differently.
#[derive(Debug, Default)]
pub struct Prober {
    seen: HashMap<(Argv, Option<String>), ToolchainStatus>,
}

impl Prober {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn probe(&mut self, tc: &Toolchain) -> ToolchainStatus {
        let key = (
            tc.probe.clone(),
            tc.version_regex.as_ref().map(|r| r.as_str().to_string()),
        );
        self.seen.entry(key).or_insert_with(|| probe(tc)).clone()
    }
}

/// Where `program` would be found: as given when it has a slash, else the
/// first executable file of that name on PATH.
pub fn resolve(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        let p = Path::new(program);
        return is_executable(p).then(|| p.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// Runs `cmd` to its end within `timeout`, stdout and stderr as one text.
/// `Ok(None)` means it timed out.
fn probe_output(
    cmd: Command,
    timeout: Duration,
) -> std::io::Result<Option<(std::process::ExitStatus, String)>> {
    let f = fairbench_sys::process::bounded::run(cmd, None, timeout)?;
    Ok(f.status
        .map(|s| (s, format!("{}{}", f.stdout_text(), f.stderr_text()))))
}
