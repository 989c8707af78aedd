//! Cached builds: a mode's build steps run only when the server folder or its
//! manifest changed since the last successful build.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::manifest::{Mode, Server};
use crate::placeholder;

/// Folders that builds write into or tools fill; never part of the cache key.
pub const SKIPPED_DIRS: &[&str] = &["node_modules", "target", ".dart_tool", "build"];

/// The stamp file in `{out}` holding the key of the last successful build
/// and the folders it left in the server's own folder (`outputs …`).
pub const STAMP: &str = ".fairbench-stamp";

#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// Per build step; a Rust release build on two busy cores is slow.
    pub step_timeout: Duration,
    /// Rebuild even when the stamp matches.
    pub force: bool,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            step_timeout: Duration::from_secs(30 * 60),
            force: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BuildStatus {
    /// The stamp matched; nothing ran.
    Cached,
    Built,
}

#[derive(Debug, Clone, Serialize)]
pub struct BuildOutcome {
    pub status: BuildStatus,
    /// `{out}`: where the build put its artifacts.
    pub out_dir: PathBuf,
    pub log_path: PathBuf,
    pub duration: Duration,
    /// The cache key (hex SHA-256).
    pub key: String,
}

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("mode {mode} is unsupported: {reason}")]
    Unsupported { mode: String, reason: String },
    #[error("no mode named {0}")]
    UnknownMode(String),
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    #[error("build step `{step}` {outcome} (log: {})", log_path.display())]
    StepFailed {
        step: String,
        outcome: String,
        log_tail: Vec<String>,
        log_path: PathBuf,
    },
}

impl BuildError {
    /// The last log lines, when the build ran and failed.
    pub fn log_tail(&self) -> &[String] {
        match self {
            BuildError::StepFailed { log_tail, .. } => log_tail,
            _ => &[],
        }
    }
}

/// `{cache_dir}/<server>/<mode>`.
pub fn out_dir(cache_dir: &Path, server: &Server, mode: &str) -> PathBuf {
    cache_dir.join(&server.name).join(mode)
}

/// Builds `mode` of `server` unless the cached build is current.
pub fn ensure_built(
    server: &Server,
    mode: &str,
    cache_dir: &Path,
) -> Result<BuildOutcome, BuildError> {
    ensure_built_with(server, mode, cache_dir, &BuildOptions::default())
}

pub fn ensure_built_with(
    server: &Server,
    mode_name: &str,
    cache_dir: &Path,
    opts: &BuildOptions,
) -> Result<BuildOutcome, BuildError> {
    let mode = server
        .modes
        .get(mode_name)
        .ok_or_else(|| BuildError::UnknownMode(mode_name.to_string()))?;
    if let Some(reason) = &mode.unsupported {
        return Err(BuildError::Unsupported {
            mode: mode_name.to_string(),
            reason: reason.clone(),
        });
    }
    let started = Instant::now();
    let out = out_dir(cache_dir, server, mode_name);
    let io = |what: String| move |source| BuildError::Io { what, source };
    std::fs::create_dir_all(&out).map_err(io(format!("cannot create {}", out.display())))?;
    let out =
        std::fs::canonicalize(&out).map_err(io(format!("cannot resolve {}", out.display())))?;
    let log_path = out.with_file_name(format!("{mode_name}.build.log"));

    // Two fairbench processes building the same mode take turns.
    let lock_path = out.with_file_name(format!("{mode_name}.lock"));
    let _lock = fairbench_sys::flock::exclusive(&lock_path)
        .map_err(io(format!("cannot lock {}", lock_path.display())))?;

    let stamp_path = out.join(STAMP);
    let key =
        cache_key(server, mode).map_err(io(format!("cannot read {}", server.dir.display())))?;
    let stamp = std::fs::read_to_string(&stamp_path).unwrap_or_default();
    if !opts.force && stamp_holds(&stamp, &key, &server.dir) {
        return Ok(BuildOutcome {
            status: BuildStatus::Cached,
            out_dir: out,
            log_path,
            duration: started.elapsed(),
            key,
        });
    }
    let _ = std::fs::remove_file(&stamp_path);

    let mut log = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .open(&log_path)
        .map_err(io(format!("cannot create {}", log_path.display())))?;

    let values = values(server, &out);
    let env: Vec<(String, String)> = mode
        .build_env
        .iter()
        .map(|(k, v)| (k.clone(), placeholder::substitute(v, &values)))
        .collect();
    for step in server.build_steps(mode) {
        let argv: Vec<String> = step
            .iter()
            .map(|a| placeholder::substitute(a, &values))
            .collect();
        run_step(server, &argv, &env, &mut log, &log_path, opts.step_timeout)?;
    }

    // Keyed on the folder as the build left it: a build that rewrites a
    // tracked file (a lockfile, generated code) must not rebuild every time.
    let key =
        cache_key(server, mode).map_err(io(format!("cannot read {}", server.dir.display())))?;
    std::fs::write(&stamp_path, stamp_text(&key, &server.dir))
        .map_err(io(format!("cannot write {}", stamp_path.display())))?;
    Ok(BuildOutcome {
        status: BuildStatus::Built,
        out_dir: out,
        log_path,
        duration: started.elapsed(),
        key,
    })
}

/// Placeholder values of build commands.
/// The stamp of a build keyed `key` that left `dir` as it is now. A build
/// may write into the server's own folder what the cache key skips
/// (`npm ci`'s node_modules, cargo's target): those folders are listed, so
/// that a cached build whose output was deleted since is built again
/// instead of started without it.
fn stamp_text(key: &str, dir: &Path) -> String {
    let outputs: Vec<&str> = SKIPPED_DIRS
        .iter()
        .copied()
        .filter(|d| dir.join(d).is_dir())
        .collect();
    format!("{key}\noutputs {}\n", outputs.join(" "))
}

/// Whether `stamp` says the build keyed `key` is done and its outputs in
/// `dir` are still there. A stamp without an `outputs` line (written
/// before outputs were recorded) does not hold: one rebuild records them.
fn stamp_holds(stamp: &str, key: &str, dir: &Path) -> bool {
    let mut lines = stamp.lines();
    if lines.next().map(str::trim) != Some(key) {
        return false;
    }
    match lines.find_map(|l| l.strip_prefix("outputs")) {
        Some(list) => list.split_whitespace().all(|d| dir.join(d).is_dir()),
        None => false,
    }
}

fn values(server: &Server, out: &Path) -> HashMap<&'static str, String> {
    let mut v = HashMap::new();
    v.insert("dir", server.dir.display().to_string());
    v.insert("out", out.display().to_string());
    v.insert("files", server.files_dir.display().to_string());
    v
}

fn run_step(
    server: &Server,
    argv: &[String],
    env: &[(String, String)],
    log: &mut File,
    log_path: &Path,
    timeout: Duration,
) -> Result<(), BuildError> {
    let shown = argv.join(" ");
    let _ = writeln!(log, "$ {shown}");
    let _ = log.flush();
    let failed = |outcome: String| BuildError::StepFailed {
        step: shown.clone(),
        outcome,
        log_tail: fairbench_sys::process::log_tail(log_path, 20),
        log_path: log_path.to_path_buf(),
    };
    let stdout = log
        .try_clone()
        .map_err(|e| failed(format!("could not start: {e}")))?;
    let stderr = log
        .try_clone()
        .map_err(|e| failed(format!("could not start: {e}")))?;
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .current_dir(&server.dir)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr);
    // Build tools leave daemons behind (gradle, sccache): the step's whole
    // group is killed when it ends, so none outlives it.
    let status = fairbench_sys::process::bounded::run_logged(cmd, timeout)
        .map_err(|e| failed(format!("could not run: {e}")))?
        .status;
    match status {
        Some(s) if s.success() => Ok(()),
        Some(s) => Err(failed(fairbench_sys::process::describe_exit(s))),
        None => Err(failed(format!(
            "did not finish within {}s",
            timeout.as_secs()
        ))),
    }
}

/// SHA-256 over the mode name, the manifest and every file of the server
/// folder outside the skipped folders and hidden entries.
pub fn cache_key(server: &Server, mode: &Mode) -> std::io::Result<String> {
    let mut h = Sha256::new();
    h.update(b"fairbench-build-v1\0");
    h.update(mode.name.as_bytes());
    h.update(b"\0");
    h.update(server.manifest_text.as_bytes());
    h.update(b"\0");
    hash_dir(&server.dir, Path::new(""), &mut h)?;
    Ok(hex(&h.finalize()))
}

fn hash_dir(dir: &Path, rel: &Path, h: &mut Sha256) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name();
        let n = name.to_string_lossy();
        if n.starts_with('.') || SKIPPED_DIRS.contains(&n.as_ref()) {
            continue;
        }
        let path = e.path();
        let rel = rel.join(&name);
        let ft = e.file_type()?;
        if ft.is_symlink() {
            h.update(b"L");
            h.update(rel.to_string_lossy().as_bytes());
            h.update(b"\0");
            h.update(std::fs::read_link(&path)?.to_string_lossy().as_bytes());
            h.update(b"\0");
        } else if ft.is_dir() {
            hash_dir(&path, &rel, h)?;
        } else if ft.is_file() {
            h.update(b"F");
            h.update(rel.to_string_lossy().as_bytes());
            h.update(b"\0");
            let mut f = File::open(&path)?;
            let mut buf = [0u8; 64 * 1024];
            let mut len: u64 = 0;
            loop {
                let n = f.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                len += n as u64;
                h.update(&buf[..n]);
            }
            h.update(len.to_le_bytes());
        }
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(root: &Path, build: &str) -> Server {
        let dir = root.join("servers/demo");
        std::fs::create_dir_all(dir.join("node_modules")).unwrap();
        std::fs::write(
            dir.join("server.toml"),
            format!(
                r#"name = "demo"
language = "Shell"
framework = "sh"
framework_version = "1"
[toolchain]
name = "sh"
probe = ["sh", "-c", "true"]
[modes.native]
build = [{build}]
run = ["{{out}}/run"]
[responses.default]
[responses.normalized]
"#
            ),
        )
        .unwrap();
        std::fs::write(dir.join("main.sh"), "echo hi").unwrap();
        Server::load(&dir, Path::new("servers/demo/server.toml")).unwrap()
    }

    #[test]
    fn builds_once_then_caches_until_sources_change() {
        let root = tempfile::tempdir().unwrap();
        let s = server(
            root.path(),
            r#"["sh", "-c", "echo built >> {out}/count; cp main.sh {out}/run"]"#,
        );
        let cache = root.path().join("cache");
        assert_eq!(
            ensure_built(&s, "native", &cache).unwrap().status,
            BuildStatus::Built
        );
        assert_eq!(
            ensure_built(&s, "native", &cache).unwrap().status,
            BuildStatus::Cached
        );
        // Skipped folders do not count.
        std::fs::write(s.dir.join("node_modules/x.js"), "x").unwrap();
        std::fs::write(s.dir.join(".hidden"), "x").unwrap();
        assert_eq!(
            ensure_built(&s, "native", &cache).unwrap().status,
            BuildStatus::Cached
        );
        std::fs::write(s.dir.join("main.sh"), "echo changed").unwrap();
        let o = ensure_built(&s, "native", &cache).unwrap();
        assert_eq!(o.status, BuildStatus::Built);
        let count = std::fs::read_to_string(o.out_dir.join("count")).unwrap();
        assert_eq!(count.lines().count(), 2);
    }

    #[test]
    fn a_cached_build_whose_output_in_the_server_folder_was_deleted_builds_again() {
        let root = tempfile::tempdir().unwrap();
        // As `npm ci` does: the build fills node_modules in the server's folder.
        let s = server(
            root.path(),
            r#"["sh", "-c", "mkdir -p node_modules; touch node_modules/dep.js"]"#,
        );
        let cache = root.path().join("cache");
        let built = |want| assert_eq!(ensure_built(&s, "native", &cache).unwrap().status, want);
        built(BuildStatus::Built);
        built(BuildStatus::Cached);
        std::fs::remove_dir_all(s.dir.join("node_modules")).unwrap();
        built(BuildStatus::Built);
        assert!(s.dir.join("node_modules/dep.js").exists());
        built(BuildStatus::Cached);
        // A stamp of the old form (the key alone) is built again once.
        let stamp = out_dir(&cache, &s, "native").join(STAMP);
        let key = std::fs::read_to_string(&stamp).unwrap();
        std::fs::write(&stamp, key.lines().next().unwrap()).unwrap();
        built(BuildStatus::Built);
        built(BuildStatus::Cached);
    }

    #[test]
    fn failure_reports_log_tail_and_path() {
        let root = tempfile::tempdir().unwrap();
        let s = server(
            root.path(),
            r#"["sh", "-c", "echo compiler says no >&2; exit 2"]"#,
        );
        let e = ensure_built(&s, "native", &root.path().join("cache")).unwrap_err();
        assert!(e.to_string().contains("exited with status 2"), "{e}");
        assert_eq!(
            e.log_tail().last().map(String::as_str),
            Some("compiler says no")
        );
        // A failed build leaves no stamp: the next call builds again.
        assert!(!out_dir(&root.path().join("cache"), &s, "native")
            .join(STAMP)
            .exists());
    }
}
