//! For the `check_*` and `servers_*` tests: run the fairbench binary with a
//! bound on time, read its JSON, and find processes it left behind by the
//! marker in their environment.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

/// Every server a test run starts inherits this variable; it is how the
/// test finds processes that outlived fairbench.
pub const MARKER_VAR: &str = "FAIRBENCH_TEST_MARKER";

/// The fixture zoo of the check tests.
pub fn fixture_root() -> PathBuf {
    super::repo().join("tests/fixtures/zoo")
}

pub fn unique_marker(name: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{name}-{}-{nanos}", std::process::id())
}

/// PATH without any folder holding a `dart` executable: the machines here
/// have none, but the test must not depend on that.
pub fn path_without_dart() -> String {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let kept: Vec<PathBuf> = std::env::split_paths(&path)
        .filter(|d| !d.join("dart").exists())
        .collect();
    std::env::join_paths(kept)
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub marker: String,
    pub elapsed: Duration,
}

impl Run {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }

    /// Panics with the output when the exit code is not `code`.
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code, code,
            "exit code\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }
}

/// A spawned fairbench with its output collected in the background.
pub struct Running {
    pub child: std::process::Child,
    pub marker: String,
    out: std::thread::JoinHandle<String>,
    err: std::thread::JoinHandle<String>,
    start: Instant,
}

pub fn spawn(args: &[&str], env: &[(&str, &str)], marker: &str) -> Running {
    let mut cmd = super::command();
    cmd.args(args)
        .env(MARKER_VAR, marker)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("start fairbench");
    let read = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let out = read(Box::new(child.stdout.take().unwrap()));
    let err = read(Box::new(child.stderr.take().unwrap()));
    Running {
        child,
        marker: marker.to_string(),
        out,
        err,
        start: Instant::now(),
    }
}

impl Running {
    /// Waits at most `limit`; kills fairbench and fails the test beyond it.
    pub fn finish(mut self, limit: Duration) -> Run {
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if self.start.elapsed() > limit {
                let _ = self.child.kill();
                let _ = self.child.wait();
                kill_marked(&self.marker);
                panic!("fairbench did not finish within {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let elapsed = self.start.elapsed();
        Run {
            code: status.code().unwrap_or(-1),
            stdout: self.out.join().unwrap(),
            stderr: self.err.join().unwrap(),
            marker: self.marker,
            elapsed,
        }
    }
}

/// Runs fairbench to completion (bounded) and asserts that no process it
/// started is left.
pub fn fairbench(args: &[&str], env: &[(&str, &str)], name: &str) -> Run {
    let marker = unique_marker(name);
    let run = spawn(args, env, &marker).finish(Duration::from_secs(600));
    assert_nothing_left(&marker);
    run
}

/// Live processes whose environment carries the marker.
pub fn marked_processes(marker: &str) -> Vec<(u32, String)> {
    let needle = format!("{MARKER_VAR}={marker}");
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        // A zombie's environ reads empty: only live processes match.
        let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        if env.split(|&b| b == 0).any(|v| v == needle.as_bytes()) {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            out.push((pid, cmd));
        }
    }
    out
}

pub fn assert_nothing_left(marker: &str) {
    // fairbench has exited; its servers must already be gone. Allow a
    // moment for the kernel to finish tearing them down.
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut left = marked_processes(marker);
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        left = marked_processes(marker);
    }
    if !left.is_empty() {
        kill_marked(marker);
        panic!("processes left running after fairbench exited: {left:?}");
    }
}

fn kill_marked(marker: &str) {
    for (pid, _) in marked_processes(marker) {
        // SAFETY: signalling a pid we just found carrying our marker.
        unsafe {
            libc::kill(pid as i32, libc::SIGKILL);
        }
    }
}

/// The case of `server` for `scenario` and `response` in a check report.
pub fn case<'a>(report: &'a Value, server: &str, scenario: &str, response: &str) -> &'a Value {
    report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["server"] == server && c["scenario"] == scenario && c["response"] == response)
        .unwrap_or_else(|| panic!("no case {server} {scenario} {response} in {report:#}"))
}

/// (grade, detail) of `rule` in `case`, if graded.
pub fn rule(case: &Value, rule: &str) -> Option<(String, String)> {
    case["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["rule"] == rule)
        .map(|r| {
            (
                r["grade"].as_str().unwrap().to_string(),
                r["detail"].as_str().unwrap().to_string(),
            )
        })
}

/// Names of the rules of `case` with `grade`, sorted.
pub fn rules_with(case: &Value, grade: &str) -> Vec<String> {
    let mut v: Vec<String> = case["rules"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["grade"] == grade)
        .map(|r| r["rule"].as_str().unwrap().to_string())
        .collect();
    v.sort();
    v
}

/// `fairbench run` of the suite file `suite` over the repository's own zoo,
/// results in `db`, bounded and leaving nothing behind (as [`fairbench`]).
pub fn run_repo_suite(suite: &Path, db: &Path, name: &str) -> Run {
    let root = super::repo();
    fairbench(
        &[
            "run",
            "--root",
            root.to_str().unwrap(),
            "--suite",
            suite.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
            "--quiet",
        ],
        &[],
        name,
    )
}

/// Which of these servers of the repository's zoo can run here (their
/// toolchain is present).
pub fn runnable(names: &[&str]) -> Vec<String> {
    let zoo = fairbench_zoo::Zoo::load(&super::repo()).unwrap();
    let mut prober = fairbench_zoo::toolchain::Prober::new();
    names
        .iter()
        .filter(|n| {
            zoo.server(n)
                .is_some_and(|s| prober.probe(&s.toolchain).is_present())
        })
        .map(|n| n.to_string())
        .collect()
}

/// The cases of a check's JSON over `protocol`.
pub fn cases<'a>(r: &'a Value, protocol: &str) -> Vec<&'a Value> {
    r["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["protocol"] == protocol)
        .collect()
}

/// `check --protocols PROTOCOL` of go-nethttp beside java-jdk, which
/// serves only HTTP/1.1: go-nethttp is checked over it, java-jdk skipped
/// with its manifest's reason (`why`, as `fairbench servers` gives it),
/// recorded in the JSON; the run for more assertions.
pub fn check_skips_the_jdk(root: &Path, protocol: &str, why: &str) -> Run {
    let run = fairbench(
        &[
            "check",
            "--root",
            root.to_str().unwrap(),
            "--servers",
            "go-nethttp,java-jdk",
            "--variant",
            "normalized",
            "--scenarios",
            "static",
            "--protocols",
            protocol,
            "--json",
        ],
        &[],
        &format!("{protocol}-mixed"),
    );
    let r = run.json();
    assert_eq!(cases(&r, protocol).len(), 1, "{}", run.stderr);
    let skipped = r["skipped"].as_array().unwrap();
    let reason = format!("{protocol}: does not serve {why}: com.sun.net.httpserver");
    assert!(
        skipped.iter().any(
            |s| s["server"] == "java-jdk" && s["reason"].as_str().unwrap().starts_with(&reason)
        ),
        "{reason:?} not in {skipped:?}\n{}",
        run.stderr
    );
    run
}
