//! The integration tests' one support module: running the fairbench binary
//! and reading what it printed, the repository's paths, finding processes
//! a run left behind, and, in submodules, what a family of tests needs:
//! throw-away fairbench roots with Python test servers ([`root`]), sshd
//! ([`net`]), running `load` ([`load`]), network namespaces ([`topology`]),
//! bounded `check` runs ([`check`]), golden files ([`golden`]), HTML tables
//! ([`html`]) and a headless browser ([`chrome`]). Fixture databases come
//! from the library itself (`fairbench::report::fixture`), written by the
//! store's own writer; the test CA and the test HTTP servers the engine's
//! tests use too come from `fairbench_testkit`.

#![allow(dead_code, unused_imports)]

pub mod check;
pub mod chrome;
pub mod golden;
pub mod html;
pub mod load;
pub mod net;
pub mod root;
pub mod topology;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub use golden::*;
pub use html::*;

/// The binary cargo built for these tests; `FAIRBENCH_TEST_BIN` names
/// another (a copy taken right after the build, where several worktrees
/// share one target directory and its `debug/fairbench`).
pub fn bin() -> &'static str {
    static BIN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        std::env::var("FAIRBENCH_TEST_BIN")
            .unwrap_or_else(|_| env!("CARGO_BIN_EXE_fairbench").to_string())
    })
}

/// The fairbench binary, to be given arguments; a measuring command takes
/// a machine lock of its own (tests run many at once, each measuring a
/// test server of its own), unless a test sets `FAIRBENCH_LOCK` itself.
pub fn command() -> Command {
    let mut c = Command::new(bin());
    c.env("FAIRBENCH_LOCK", own_lock());
    c
}

/// A lock file path no other command of this test run uses.
pub fn own_lock() -> PathBuf {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("machine-locks");
    std::fs::create_dir_all(&dir).unwrap();
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    dir.join(format!("{}-{n}.lock", std::process::id()))
}

/// Runs fairbench in `dir` (so `--db results.db` stays relative and outputs
/// name no temporary path).
pub fn run_in(dir: &Path, args: &[&str]) -> Output {
    command()
        .args(args)
        .current_dir(dir)
        .env_remove("RUST_LOG")
        .output()
        .expect("run fairbench")
}

/// Asserts success and returns stdout.
pub fn ok(dir: &Path, args: &[&str]) -> String {
    let o = run_in(dir, args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "fairbench {args:?} failed:\n{}",
        stderr(&o)
    );
    stdout(&o)
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("utf-8 stdout")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Exit code and both streams, for assertion messages.
pub fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The JSON fairbench printed.
pub fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(o)))
}

pub fn flush() {
    let _ = std::io::stderr().flush();
}

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Tests of one file that measure, or that pin servers to the same CPU,
/// hold this for their whole body so that they do not measure each other.
pub use fairbench_testkit::serial;

/// Where the cgroup file systems (v1 controllers and v2) are mounted.
pub fn cgroup_mounts() -> Vec<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    info.lines()
        .filter_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            let fstype = right.split(' ').next()?;
            let point = left.split(' ').nth(4)?;
            (fstype == "cgroup" || fstype == "cgroup2").then(|| PathBuf::from(point))
        })
        .collect()
}

/// Control groups named after fairbench process `pid`, anywhere in the
/// cgroup mounts: what a run left behind.
pub fn groups_of(pid: u32) -> Vec<PathBuf> {
    fn walk(dir: &Path, prefix: &str, depth: usize, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if e.file_name().to_string_lossy().starts_with(prefix) {
                out.push(e.path());
            } else if depth < 4 {
                walk(&e.path(), prefix, depth + 1, out);
            }
        }
    }
    let prefix = format!("fairbench-{pid}-");
    let mut out = Vec::new();
    for m in cgroup_mounts() {
        walk(&m, &prefix, 0, &mut out);
    }
    out
}

/// Live (non-zombie) processes other than this one whose command line
/// contains `needle`.
pub fn live_with(needle: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let zombie = stat
            .rsplit_once(") ")
            .map(|(_, r)| r.starts_with('Z'))
            .unwrap_or(false);
        if !zombie && String::from_utf8_lossy(&cmd).contains(needle) {
            out.push(pid);
        }
    }
    out
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// Whether a test's prerequisites are here. In CI a missing one fails the
/// test with `why`; elsewhere the test prints the reason and skips.
pub fn require(ok: bool, why: &str) -> bool {
    if ok {
        return true;
    }
    if in_ci() {
        panic!("prerequisite missing in CI: {why}");
    }
    eprintln!("SKIPPED: {why}");
    false
}

/// The lines of every case log (`*.log`) under `dir`, at any depth, whose
/// file was written at or after `since`.
pub fn log_lines(dir: &Path, since: std::time::SystemTime) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(log_lines(&p, since));
        } else if p.extension().is_some_and(|x| x == "log")
            && e.metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t >= since)
        {
            let t = std::fs::read_to_string(&p).unwrap_or_default();
            out.extend(t.lines().map(String::from));
        }
    }
    out
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

pub fn have(cmd: &str, arg: &str) -> bool {
    Command::new(cmd)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// Standard base64 (for screenshots and interval-log histograms).
pub fn base64_decode(s: &str) -> Vec<u8> {
    let val = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => (c - b'A') as u32,
            b'a'..=b'z' => (c - b'a' + 26) as u32,
            b'0'..=b'9' => (c - b'0' + 52) as u32,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("base64 {c}"),
        }
    };
    let bytes: Vec<u8> = s
        .bytes()
        .filter(|b| *b != b'=' && !b.is_ascii_whitespace())
        .collect();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut n = 0u32;
        for (i, b) in chunk.iter().enumerate() {
            n |= val(*b) << (18 - 6 * i);
        }
        out.push((n >> 16) as u8);
        if chunk.len() > 2 {
            out.push((n >> 8) as u8);
        }
        if chunk.len() > 3 {
            out.push(n as u8);
        }
    }
    out
}

/// A folder with the fixture database `results.db`: the standard runs 1
/// and 2, and the hostile run 3 (`fairbench::report::fixture`).
pub fn fixture_db() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    fairbench::report::fixture::standard_db(&path);
    let mut s = fairbench::store::Store::open(&path).unwrap();
    fairbench::report::fixture::hostile_run(&mut s);
    dir
}

/// The temporary files (`*.tmp`) an atomic write left in `dir`: none
/// when it cleaned up.
pub fn temporaries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect()
}

/// Whether the zoo's `server` can be built here (its toolchain answers
/// its probe); a test that needs it skips with [`require`] otherwise.
pub fn toolchain_present(root: &Path, server: &str) -> bool {
    let zoo = fairbench_zoo::Zoo::load(root).unwrap();
    let s = zoo.server(server).unwrap();
    fairbench_zoo::toolchain::probe(&s.toolchain).is_present()
}

/// The suite `text` written to a file in `dir`, and a `fairbench run`
/// of it against the zoo at `root` (more arguments added per call).
pub fn suite_run(dir: &Path, text: &str, root: &Path) -> impl Fn(&[&str]) -> Command {
    let suite = dir.join("suite.toml");
    std::fs::write(&suite, text).unwrap();
    let root = root.to_path_buf();
    move |extra: &[&str]| {
        let mut c = command();
        c.args(["run", "--suite"])
            .arg(&suite)
            .arg("--root")
            .arg(&root)
            .args(extra);
        c
    }
}

/// Panics unless `v` is valid against docs/schemas/fairbench-`doc`.schema.json.
pub fn assert_schema(doc: &str, v: &serde_json::Value) {
    let schema = repo().join(format!("docs/schemas/fairbench-{doc}.schema.json"));
    let mut schemas = boon::Schemas::new();
    let index = boon::Compiler::new()
        .compile(schema.to_str().unwrap(), &mut schemas)
        .unwrap();
    if let Err(e) = schemas.validate(v, index) {
        panic!("not a valid {doc} document:\n{e:#}");
    }
}
