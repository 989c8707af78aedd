//! An ssh host: one multiplexed OpenSSH connection (ControlMaster) per host
//! for the whole fairbench command, the user's own ssh configuration and
//! keys, and a working directory on the host that is removed at the end.

use std::collections::HashMap;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use fairbench_zoo::Server;

use super::quote;
use super::HostInfo;
use crate::args::CpuList;
use crate::interrupt::CleanupGuard;
use fairbench_sys::process::bounded::{self, Finished, Input};
use fairbench_sys::process::{self, describe_exit};
use fairbench_sys::procfs::{self, Stat};

/// How long a short command through ssh may take (a probe, a mkdir, a read
/// of /proc): a dead link ends it in about 15 s by itself (ServerAlive),
/// but a command stuck on the host (a hung disk) would not end at all.
const SHORT: Duration = Duration::from_secs(120);

/// How long a copy to or from the host may take: a build output over a
/// slow link.
const COPY: Duration = Duration::from_secs(3600);

/// Everything a command through ssh prints is kept: a whole file was asked
/// for, and /proc of a busy host is large.
const ALL: u64 = u64::MAX;

/// How fairbench calls ssh, beyond the user's defaults.
#[derive(Debug, Clone, Default)]
pub struct SshOptions {
    /// `ssh -F FILE`: a configuration file instead of ~/.ssh/config.
    pub config: Option<PathBuf>,
}

impl SshOptions {
    fn base(&self) -> Vec<String> {
        let mut v = Vec::new();
        if let Some(c) = &self.config {
            v.push("-F".to_string());
            v.push(c.display().to_string());
        }
        for o in [
            // Never wait for a password or a host-key prompt nobody sees.
            "BatchMode=yes",
            // A dead link ends the session in about 15 s instead of hanging.
            "ServerAliveInterval=5",
            "ServerAliveCountMax=3",
            "ConnectTimeout=15",
        ] {
            v.push("-o".into());
            v.push(o.into());
        }
        v
    }
}

static SESSIONS: AtomicU64 = AtomicU64::new(0);

pub struct SshSession {
    dest: String,
    opts: SshOptions,
    control_dir: PathBuf,
    master: Mutex<Option<Child>>,
    info: HostInfo,
    /// This session's working directory on the host (absolute).
    work: String,
    /// The host's cache directory (absolute), shared by sessions.
    cache: String,
    exe: Mutex<Option<String>>,
    staged: Mutex<HashMap<PathBuf, String>>,
    counter: AtomicU64,
    _cleanup: Mutex<Option<CleanupGuard>>,
}

impl std::fmt::Debug for SshSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ssh {}", self.dest)
    }
}

impl SshSession {
    /// Connects to `dest` (`user@host` or a Host alias of the ssh config),
    /// and learns what the orchestration needs to know about the machine.
    pub fn open(dest: &str, opts: &SshOptions) -> anyhow::Result<Arc<SshSession>> {
        if dest.is_empty() || dest.starts_with('-') {
            bail!("{dest:?} is not an ssh destination (expected user@host)");
        }
        let mut version = Command::new("ssh");
        version.arg("-V");
        if bounded::run(version, None, SHORT).is_err() {
            bail!("ssh hosts need the OpenSSH client, and `ssh` is not on PATH (Debian: apt-get install openssh-client)");
        }
        let n = SESSIONS.fetch_add(1, Ordering::Relaxed);
        let control_dir =
            std::env::temp_dir().join(format!("fairbench-ssh-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&control_dir);
        std::fs::create_dir_all(&control_dir)
            .with_context(|| format!("cannot create {}", control_dir.display()))?;
        let _ = std::fs::set_permissions(&control_dir, std::fs::Permissions::from_mode(0o700));
        let master = start_master(dest, opts, &control_dir)?;

        let mut s = SshSession::connected(dest, opts, control_dir, master);
        let home = s.learn_host()?;
        let local = super::local_info();
        if s.info.machine != local.machine {
            bail!(
                "ssh host {dest} is {}, this machine is {}: fairbench copies its own binary there, so both must be the same architecture",
                s.info.machine,
                local.machine
            );
        }
        s.cache = format!("{home}/.cache/fairbench");
        s.work = format!(
            "{}/session-{}-{}-{n}",
            s.cache,
            sanitize(&local.hostname),
            std::process::id()
        );
        s.exec(&format!("mkdir -p {}", quote::word(&s.work)))?;
        let s = Arc::new(s);
        // A second Ctrl-C exits without destructors: close the connection so
        // that every remote program fairbench started sees its end.
        let weak = Arc::downgrade(&s);
        *lock(&s._cleanup) = Some(crate::interrupt::on_exit(move || {
            if let Some(s) = weak.upgrade() {
                s.close_master();
            }
        }));
        Ok(s)
    }

    /// A session over the `master` connection, before it knows the host.
    fn connected(dest: &str, opts: &SshOptions, control_dir: PathBuf, master: Child) -> Self {
        SshSession {
            dest: dest.to_string(),
            opts: opts.clone(),
            control_dir,
            master: Mutex::new(Some(master)),
            info: HostInfo {
                boot_id: String::new(),
                cpus: Vec::new(),
                hostname: String::new(),
                kernel: String::new(),
                machine: String::new(),
                clk_tck: 100.0,
                page_size: 4096,
            },
            work: String::new(),
            cache: String::new(),
            exe: Mutex::new(None),
            staged: Mutex::new(HashMap::new()),
            counter: AtomicU64::new(0),
            _cleanup: Mutex::new(None),
        }
    }

    /// Asks the host what it is (into `info`); its `$HOME`. An error when
    /// it is not a Linux machine.
    fn learn_host(&mut self) -> anyhow::Result<String> {
        let probe = self.exec(
            "echo \"home=$HOME\"; echo \"boot_id=$(cat /proc/sys/kernel/random/boot_id)\"; \
             grep Cpus_allowed_list /proc/self/status; echo \"clk_tck=$(getconf CLK_TCK)\"; \
             echo \"page=$(getconf PAGESIZE)\"; echo \"hostname=$(uname -n)\"; \
             echo \"kernel=$(uname -r)\"; echo \"machine=$(uname -m)\"",
        )?;
        let mut home = String::new();
        let info = &mut self.info;
        for line in probe.lines() {
            let (k, v) = match line.split_once('=').or_else(|| line.split_once(':')) {
                Some((k, v)) => (k.trim(), v.trim()),
                None => continue,
            };
            match k {
                "home" => home = v.to_string(),
                "boot_id" => info.boot_id = v.to_string(),
                "Cpus_allowed_list" => {
                    info.cpus = v.parse::<CpuList>().map(|c| c.0).unwrap_or_default()
                }
                "clk_tck" => info.clk_tck = v.parse().unwrap_or(100.0),
                "page" => info.page_size = v.parse().unwrap_or(4096),
                "hostname" => info.hostname = v.to_string(),
                "kernel" => info.kernel = v.to_string(),
                "machine" => info.machine = v.to_string(),
                _ => {}
            }
        }
        if home.is_empty() || info.cpus.is_empty() {
            bail!(
                "ssh host {} is not a Linux machine fairbench can use (no $HOME or /proc there)",
                self.dest
            );
        }
        Ok(home)
    }

    pub fn dest(&self) -> &str {
        &self.dest
    }

    pub fn info(&self) -> &HostInfo {
        &self.info
    }

    /// The session's working directory on the host.
    pub fn work_dir(&self) -> &str {
        &self.work
    }

    fn control_opts(&self) -> Vec<String> {
        let mut v = self.opts.base();
        v.extend([
            "-o".into(),
            "ControlMaster=no".into(),
            "-o".into(),
            format!("ControlPath={}", self.control_dir.join("cm").display()),
        ]);
        v
    }

    /// The local argv that runs the shell command line `remote` on the host.
    pub fn ssh_argv(&self, remote: &str) -> Vec<String> {
        let mut v = vec!["ssh".to_string()];
        v.extend(self.control_opts());
        v.extend([
            "-T".to_string(),
            self.dest.clone(),
            "--".into(),
            remote.into(),
        ]);
        v
    }

    /// Runs the shell command line `remote` on the host to its end, within
    /// `bound`, with `input` on its stdin.
    fn run(&self, remote: &str, input: Input, bound: Duration) -> anyhow::Result<Finished> {
        let argv = self.ssh_argv(remote);
        let mut c = Command::new(&argv[0]);
        c.args(&argv[1..]);
        bounded::run_with(c, input, ALL, bound)
            .with_context(|| format!("cannot run ssh to {}", self.dest))
    }

    /// `remote`'s stdout, or one line naming `what` failed and why.
    fn call(
        &self,
        what: &str,
        remote: &str,
        input: Input,
        bound: Duration,
    ) -> anyhow::Result<Vec<u8>> {
        let out = self.run(remote, input, bound)?;
        let why = match out.status {
            Some(s) if s.success() => return Ok(out.stdout),
            Some(s) => last_line(&out.stderr_text()).unwrap_or_else(|| describe_exit(s)),
            None => format!("still running after {} s: killed", bound.as_secs()),
        };
        Err(anyhow!("{what} on ssh host {} failed: {why}", self.dest))
    }

    /// Runs a shell command line on the host; its stdout.
    pub fn exec(&self, remote: &str) -> anyhow::Result<String> {
        let first = remote.split_whitespace().next().unwrap_or("command");
        let out = self.call(first, remote, Input::Null, SHORT)?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    pub fn read_file(&self, path: &str) -> anyhow::Result<Vec<u8>> {
        let remote = format!("cat -- {}", quote::word(path));
        self.call(&format!("reading {path}"), &remote, Input::Null, COPY)
    }

    /// The last `bytes` of a file on the host (empty if it cannot be read).
    pub fn read_tail(&self, path: &str, bytes: u64) -> Vec<u8> {
        let remote = format!("tail -c {bytes} -- {}", quote::word(path));
        self.call("tail", &remote, Input::Null, SHORT)
            .unwrap_or_default()
    }

    pub fn group_stats(&self, pgid: i32) -> Vec<Stat> {
        let text = self
            .run(
                "cat /proc/[0-9]*/stat 2>/dev/null; true",
                Input::Null,
                SHORT,
            )
            .map(|f| f.stdout_text())
            .unwrap_or_default();
        procfs::group_of(&text, pgid)
    }

    /// Copies a local file to `remote` (atomically: a partial copy is never
    /// at the final path).
    fn put_file(&self, local: &Path, remote: &str, mode: u32) -> anyhow::Result<()> {
        let file = std::fs::File::open(local)
            .with_context(|| format!("cannot read {}", local.display()))?;
        let tmp = format!("{remote}.part-{}", sanitize(&self.work));
        let dir = Path::new(remote)
            .parent()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| ".".into());
        let script = format!(
            "mkdir -p {d} && cat > {t} && chmod {mode:o} {t} && mv -f {t} {r}",
            d = quote::word(&dir),
            t = quote::word(&tmp),
            r = quote::word(remote)
        );
        let what = format!("copying {}", local.display());
        self.call(&what, &script, Input::From(Stdio::from(file)), COPY)?;
        Ok(())
    }

    /// Copies the tree `local` to the directory `remote` (tar over ssh),
    /// leaving out paths matching `exclude` (tar patterns).
    fn put_dir(&self, local: &Path, remote: &str, exclude: &[&str]) -> anyhow::Result<()> {
        let mut tar = Command::new("tar");
        tar.arg("-C").arg(local).arg("-cf").arg("-");
        for e in exclude {
            tar.arg(format!("--exclude={e}"));
        }
        tar.arg(".")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut tar = process::spawn_child(&mut tar)
            .context("cannot run tar (needed to copy files to ssh hosts)")?;
        let stdout = tar.stdout.take().expect("piped");
        // Read as it comes, so that many warnings cannot stall tar.
        let mut stderr = tar.stderr.take().expect("piped");
        let tar_err = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            s
        });
        let script = format!(
            "rm -rf {r} && mkdir -p {r} && tar -C {r} -xf -",
            r = quote::word(remote)
        );
        let what = format!("copying {}", local.display());
        let copied = self.call(&what, &script, Input::From(Stdio::from(stdout)), COPY);
        // ssh has read all tar wrote, or is gone and tar's next write
        // fails: tar is ending, or stuck (a hung disk) and killed.
        let st = bounded::wait(&mut tar, Duration::from_secs(30))?;
        let tar_err = tar_err.join().unwrap_or_default();
        // tar killed by a broken pipe: ssh ended first, and says why.
        let copied = match copied {
            Err(e) if st.and_then(|s| s.signal()) == Some(libc::SIGPIPE) => return Err(e),
            c => c,
        };
        if !st.is_some_and(|s| s.success()) {
            let why = match st {
                Some(s) => describe_exit(s),
                None => "still running after ssh ended: killed".into(),
            };
            bail!(
                "cannot pack {}: {}",
                local.display(),
                last_line(&tar_err).unwrap_or(why)
            );
        }
        copied?;
        Ok(())
    }

    /// fairbench's own binary on the host, copied once per build of it
    /// (cached under ~/.cache/fairbench/bin on the host).
    pub fn fairbench_exe(&self) -> anyhow::Result<String> {
        let mut exe = lock(&self.exe);
        if let Some(p) = &*exe {
            return Ok(p.clone());
        }
        // The running binary, even if its file was replaced since.
        let local = PathBuf::from("/proc/self/exe");
        let meta = std::fs::metadata(&local).context("cannot read fairbench's own binary")?;
        let mtime = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let remote = format!("{}/bin/{}-{mtime}/fairbench", self.cache, meta.len());
        let present = self
            .call(
                "test",
                &format!("test -x {}", quote::word(&remote)),
                Input::Null,
                SHORT,
            )
            .is_ok();
        if !present {
            self.put_file(&local, &remote, 0o755)?;
            // Every build of fairbench is a new copy: keep the newest few.
            let _ = self.exec(&format!(
                "cd {} && ls -1t | tail -n +4 | xargs -r rm -rf --",
                quote::word(&format!("{}/bin", self.cache))
            ));
        }
        *exe = Some(remote.clone());
        Ok(remote)
    }

    /// Copies a server's folder, the scenario files and a build output to
    /// this session's working directory, once each; the server as it is
    /// found there.
    pub fn stage_server(
        &self,
        server: &Server,
        out_dir: &Path,
    ) -> anyhow::Result<(Server, PathBuf)> {
        let mut remote = server.clone();
        remote.dir = PathBuf::from(self.stage(&server.dir, &[])?);
        remote.files_dir = PathBuf::from(self.stage(&server.files_dir, &[])?);
        remote.manifest_path = remote.dir.join("server.toml");
        // Build caches are not needed to run what was built.
        let out = self.stage(
            out_dir,
            &[
                "target/*/deps",
                "target/*/build",
                "target/*/.fingerprint",
                "target/*/incremental",
                "target/*/examples",
            ],
        )?;
        Ok((remote, PathBuf::from(out)))
    }

    fn stage(&self, local: &Path, exclude: &[&str]) -> anyhow::Result<String> {
        if let Some(r) = lock(&self.staged).get(local) {
            return Ok(r.clone());
        }
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let name = local
            .file_name()
            .map(|s| sanitize(&s.to_string_lossy()))
            .unwrap_or_else(|| "dir".into());
        let remote = format!("{}/stage/{n}-{name}", self.work);
        if local.is_dir() {
            self.put_dir(local, &remote, exclude)?;
        } else {
            // Nothing to copy (e.g. no scenario files): an empty directory.
            self.exec(&format!("mkdir -p {}", quote::word(&remote)))?;
        }
        lock(&self.staged).insert(local.to_path_buf(), remote.clone());
        Ok(remote)
    }

    pub fn free_port(&self) -> anyhow::Result<u16> {
        let exe = self.fairbench_exe()?;
        let out = self.exec(&format!("{} agent free-port", quote::word(&exe)))?;
        out.trim()
            .parse()
            .map_err(|_| anyhow!("ssh host {}: no free port ({out:?})", self.dest))
    }

    /// Runs `f` with a local port forwarded to the host's loopback `port`
    /// (`127.0.0.1` and `[::1]` each to their own family), over the master
    /// connection; the forwarding is removed afterwards.
    pub fn with_tunnel<R: Send>(
        &self,
        port: u16,
        f: impl FnOnce(u16) -> R + Send,
    ) -> anyhow::Result<R> {
        let local = fairbench_sys::process::free_port().context("no free local port")?;
        let specs = [
            format!("127.0.0.1:{local}:127.0.0.1:{port}"),
            format!("[::1]:{local}:[::1]:{port}"),
        ];
        let mut added = Vec::new();
        for (i, spec) in specs.iter().enumerate() {
            let out = self.mux("forward", spec)?;
            if out.status.is_some_and(|s| s.success()) {
                added.push(spec.clone());
            } else if i == 0 {
                bail!(
                    "cannot forward a port to ssh host {}: {}",
                    self.dest,
                    last_line(&out.stderr_text()).unwrap_or_default()
                );
            }
        }
        let r = f(local);
        for spec in added {
            let _ = self.mux("cancel", &spec);
        }
        Ok(r)
    }

    fn mux(&self, op: &str, forward: &str) -> anyhow::Result<Finished> {
        let mut c = Command::new("ssh");
        c.args(self.control_opts())
            .args(["-O", op, "-L", forward])
            .arg(&self.dest);
        bounded::run(c, None, SHORT).with_context(|| format!("cannot run ssh to {}", self.dest))
    }

    fn close_master(&self) {
        if let Some(mut m) = lock(&self.master).take() {
            let _ = m.kill();
            let _ = m.wait();
        }
    }
}

impl Drop for SshSession {
    fn drop(&mut self) {
        if lock(&self.master).is_some() && !self.work.is_empty() {
            let _ = self.exec(&format!("rm -rf {}", quote::word(&self.work)));
        }
        let mut exit = Command::new("ssh");
        exit.args(self.control_opts())
            .args(["-O", "exit"])
            .arg(&self.dest);
        let _ = bounded::run(exit, None, SHORT);
        self.close_master();
        let _ = std::fs::remove_dir_all(&self.control_dir);
    }
}

impl SshSession {
    /// What `ssh -G` resolves `dest` to (HostName), for the URL the load
    /// generators use to reach a server there.
    pub fn resolve(dest: &str, opts: &SshOptions) -> Option<String> {
        resolve_hostname(dest, opts)
    }
}

fn resolve_hostname(dest: &str, opts: &SshOptions) -> Option<String> {
    let mut cmd = Command::new("ssh");
    if let Some(c) = &opts.config {
        cmd.arg("-F").arg(c);
    }
    cmd.arg("-G").arg(dest);
    let out = bounded::run(cmd, None, SHORT).ok()?;
    out.stdout_text()
        .lines()
        .find_map(|l| l.strip_prefix("hostname ").map(|h| h.trim().to_string()))
}

/// Starts the connection's master (its socket and log in `control_dir`)
/// and waits up to 30 s for its socket; on failure `control_dir` is
/// removed and the error says why, as ssh said it.
fn start_master(dest: &str, opts: &SshOptions, control_dir: &Path) -> anyhow::Result<Child> {
    let socket = control_dir.join("cm");
    let log = control_dir.join("master.log");

    let mut cmd = Command::new("ssh");
    cmd.args(opts.base())
        .args(["-M", "-N", "-o", "ControlPersist=no", "-o"])
        .arg(format!("ControlPath={}", socket.display()))
        .arg(dest)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log)?);
    let mut master =
        process::spawn_child(&mut cmd).with_context(|| format!("cannot start ssh to {dest}"))?;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if socket.exists() {
            break;
        }
        if let Ok(Some(st)) = master.try_wait() {
            let why = last_line(&std::fs::read_to_string(&log).unwrap_or_default())
                .unwrap_or_else(|| format!("ssh exited ({st})"));
            let _ = std::fs::remove_dir_all(control_dir);
            bail!("cannot reach ssh host {dest}: {why}");
        }
        if Instant::now() > deadline {
            let _ = master.kill();
            let _ = master.wait();
            let _ = std::fs::remove_dir_all(control_dir);
            bail!("cannot reach ssh host {dest}: no connection after 30 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(master)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn last_line(s: &str) -> Option<String> {
    s.lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .map(fairbench_sys::text::visible)
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_made_safe() {
        assert_eq!(sanitize("my host/1"), "my_host_1");
        assert_eq!(last_line("a\n\nlast one\n\n").as_deref(), Some("last one"));
    }

    #[test]
    fn an_unreachable_host_is_one_clear_error() {
        // Port 1 on loopback: refused at once, no network involved.
        let dir = std::env::temp_dir().join(format!("fb-ssh-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cfg = dir.join("config");
        std::fs::write(
            &cfg,
            "Host fbnowhere\n  HostName 127.0.0.1\n  Port 1\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n",
        )
        .unwrap();
        let e = SshSession::open(
            "fbnowhere",
            &SshOptions {
                config: Some(cfg.clone()),
            },
        )
        .unwrap_err()
        .to_string();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(e.starts_with("cannot reach ssh host fbnowhere"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }
}
