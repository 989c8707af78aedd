//! Servers contained and measured as a whole (issue 12), against test
//! servers that try to escape (tests/fixtures/contained_server.py): one
//! that daemonizes into a new session, one that ignores SIGTERM, one that
//! widens its own CPU affinity, one that forks CPU-burning workers. After
//! every command no process of the server and no control group of the
//! fairbench process is left. Without permission to make groups, fairbench
//! falls back to process groups and says so.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::root::Root;
use support::{cgroup_mounts, groups_of, have, is_root, repo, require, serial};

fn script() -> PathBuf {
    repo().join("tests/fixtures/contained_server.py")
}

/// When this machine lets the test make control groups (root and a cgroup
/// file system): the lock that keeps these tests from measuring each other.
/// Otherwise the test is skipped (failed in CI) with a message.
fn contained() -> Option<std::sync::MutexGuard<'static, ()>> {
    require(
        is_root() && !cgroup_mounts().is_empty(),
        "control groups need root and a mounted cgroup file system",
    )
    .then(serial)
}

fn assert_nothing_left(root: &Root, fairbench_pid: u32) {
    root.assert_no_servers_left();
    let left = groups_of(fairbench_pid);
    assert!(left.is_empty(), "control groups left behind: {left:?}");
}

struct Done {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    pid: u32,
}

impl Done {
    fn text(&self) -> String {
        format!(
            "exit {:?}\nstdout:\n{}\nstderr:\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// Runs `cmd` (a fairbench) with its output in files, calls `during` with
/// its pid, and waits at most `limit` for it.
fn finish(mut cmd: Command, dir: &Path, limit: Duration, during: impl FnOnce(u32)) -> Done {
    let out = dir.join("fairbench.out");
    let err = dir.join("fairbench.err");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let pid = child.id();
    during(pid);
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "fairbench did not finish within {limit:?}; stderr:\n{}",
                std::fs::read_to_string(&err).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Done {
        code: status.code(),
        stdout: std::fs::read_to_string(&out).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err).unwrap_or_default(),
        pid,
    }
}

fn fairbench(root: &Root, args: &[&str]) -> Command {
    let mut c = root.fairbench();
    c.args(args);
    c
}

fn check(root: &Root, servers: &str, extra: &[&str]) -> Done {
    let mut args = vec![
        "check",
        "--servers",
        servers,
        "--variant",
        "normalized",
        "--scenarios",
        "static",
        "--stop-grace",
        "1",
        "--ready-timeout",
        "20",
        "--json",
    ];
    args.extend_from_slice(extra);
    let d = finish(
        fairbench(root, &args),
        root.path(),
        Duration::from_secs(120),
        |_| {},
    );
    assert_eq!(d.code, Some(0), "{}", d.text());
    let j: serde_json::Value = serde_json::from_str(&d.stdout).unwrap();
    assert_eq!(j["ok"], true, "{}", d.text());
    d
}

const SUITE: &str = r#"
name = "contain"
responses = ["normalized"]
scenarios = ["static"]
cores = [1]
warmup = "1s"
duration = "2s"
repetitions = 1
[[load]]
model = "closed"
connections = 2
threads = 1
"#;

/// One measured case of each server of `root`; returns fairbench's run.
fn run_suite(root: &Root) -> Done {
    root.suite("contain", SUITE);
    let d = finish(
        fairbench(root, &["run", "--suite", "contain", "--quiet"]),
        root.path(),
        Duration::from_secs(300),
        |_| {},
    );
    assert_eq!(d.code, Some(0), "{}", d.text());
    d
}

/// The stored case of `server` as (column, value) text.
fn case(root: &Root, server: &str, columns: &str) -> Vec<String> {
    root.rows(&format!(
        "SELECT {columns} FROM cases WHERE server = '{server}'"
    ))
    .pop()
    .unwrap_or_else(|| panic!("no case of {server}"))
}

fn num(v: &str) -> f64 {
    v.parse()
        .unwrap_or_else(|_| panic!("{v:?} is not a number"))
}

#[test]
fn check_stops_a_server_that_daemonizes_into_a_new_session() {
    let Some(_serial) = contained() else { return };
    let root = Root::with_script(&script(), &[("daemon", &["--daemonize"])]);
    let d = check(&root, "daemon", &[]);
    // Its leader exited at once; the server lived on in its child.
    let j: serde_json::Value = serde_json::from_str(&d.stdout).unwrap();
    assert_eq!(j["cases"][0]["grade"], "pass", "{}", d.text());
    assert_nothing_left(&root, d.pid);
}

#[test]
fn check_kills_a_server_that_ignores_sigterm() {
    let Some(_serial) = contained() else { return };
    let root = Root::with_script(
        &script(),
        &[("stubborn", &["--ignore-term", "--workers", "2"])],
    );
    let t = Instant::now();
    let d = check(&root, "stubborn", &[]);
    // Killed after the 1 s grace, not when its 120 s lifetime ends.
    assert!(t.elapsed() < Duration::from_secs(60), "{:?}", t.elapsed());
    assert_nothing_left(&root, d.pid);
}

#[test]
fn check_in_a_network_namespace_contains_the_server_too() {
    let Some(_serial) = contained() else { return };
    if !require(
        have("ip", "-V"),
        "network namespaces need the `ip` command (iproute2)",
    ) {
        return;
    }
    let root = Root::with_script(&script(), &[("daemon", &["--daemonize"])]);
    let d = check(&root, "daemon", &["--topology", "netns"]);
    assert_nothing_left(&root, d.pid);
}

#[test]
fn run_counts_the_cpu_of_a_daemonized_server_and_leaves_nothing() {
    let Some(_serial) = contained() else { return };
    let root = Root::with_script(&script(), &[("daemon", &["--daemonize", "--burn-ms", "2"])]);
    let d = run_suite(&root);
    assert_nothing_left(&root, d.pid);
    let c = case(
        &root,
        "daemon",
        "state, containment, server_cpus, server_cpuset, server_group_cpu_us_per_request,
         server_cpu_us_per_request, server_group_memory_peak, generator_cpus,
         generator_containment, generator_cpuset",
    );
    assert_eq!(c[0], "done", "{c:?}");
    assert!(c[1] == "cgroup-v1" || c[1] == "cgroup-v2", "{c:?}");
    assert_eq!(c[3], c[2], "the cpuset is the server's CPUs: {c:?}");
    // Every response cost the daemon 2 ms of its own CPU time; python's
    // own overhead per request is well under the upper bound.
    let group = num(&c[4]);
    assert!((1800.0..10_000.0).contains(&group), "{c:?}");
    // /proc follows the process group, which the daemon left: it misses
    // nearly all of it. This is the difference the group figures fix.
    assert!(num(&c[5]) < group / 2.0, "{c:?}");
    assert!(num(&c[6]) > 1_000_000.0, "{c:?}");
    match c[8].as_str() {
        "cgroup-v1" => assert_eq!(c[9], c[7], "{c:?}"),
        // cgroup v2 keeps a process's threads together.
        "affinity" => assert_eq!(c[1], "cgroup-v2", "{c:?}"),
        other => panic!("generator held by {other}: {c:?}"),
    }
}

#[test]
fn run_counts_forked_workers_in_the_case_cpu() {
    let Some(_serial) = contained() else { return };
    let root = Root::with_script(
        &script(),
        &[("forks", &["--workers", "2", "--burn-ms", "2"])],
    );
    let d = run_suite(&root);
    assert_nothing_left(&root, d.pid);
    let c = case(
        &root,
        "forks",
        "state, server_group_cpu_us_per_request, server_cpu_us_per_request",
    );
    assert_eq!(c[0], "done", "{c:?}");
    let group = num(&c[1]);
    assert!((1800.0..10_000.0).contains(&group), "{c:?}");
    // The workers stay in the process group: /proc sees them too, and the
    // two figures agree.
    let procfs = num(&c[2]);
    assert!(
        (procfs - group).abs() < 0.15 * group,
        "/proc {procfs} µs vs group {group} µs per request"
    );
}

#[test]
fn a_server_that_widens_its_affinity_stays_on_its_cpuset() {
    let Some(_serial) = contained() else { return };
    if std::thread::available_parallelism().unwrap().get() < 2 {
        eprintln!("skipped: one CPU leaves nothing to widen to");
        return;
    }
    let root = Root::with_script(
        &script(),
        &[("wide", &["--widen-affinity", "--burn-ms", "1"])],
    );
    let d = run_suite(&root);
    assert_nothing_left(&root, d.pid);
    let c = case(&root, "wide", "state, server_cpus, server_cpuset");
    assert_eq!(c[0], "done", "{c:?}");
    assert_eq!(c[1], c[2], "{c:?}");
    let cpus: Vec<String> = c[1].split(',').map(str::to_string).collect();
    let logs = root.path().join(".fairbench/logs/run-1");
    let log: String = std::fs::read_dir(&logs)
        .unwrap()
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    let may: Vec<&str> = log
        .lines()
        .filter_map(|l| l.split_once("] may run on ").map(|(_, c)| c))
        .collect();
    assert!(!may.is_empty(), "{log}");
    assert!(may.iter().all(|m| *m == c[1]), "{may:?} vs {c:?}");
    let ran: Vec<&str> = log
        .lines()
        .filter_map(|l| l.split_once("] ran on CPU ").map(|(_, c)| c))
        .collect();
    assert!(!ran.is_empty(), "{log}");
    assert!(
        ran.iter().all(|r| cpus.iter().any(|c| c == r)),
        "ran on {ran:?}, cpuset {c:?}"
    );
}

/// Ctrl-C once (the run stops in order) or twice (fairbench exits at once,
/// no destructor runs): either way nothing of a daemonized server is left.
fn interrupted_run_leaves_nothing(presses: usize) {
    let root = Root::with_script(&script(), &[("daemon", &["--daemonize"])]);
    root.suite("long", &SUITE.replace("\"2s\"", "\"60s\""));
    let d = finish(
        fairbench(&root, &["run", "--suite", "long", "--quiet"]),
        root.path(),
        Duration::from_secs(60),
        |pid| {
            if !root.wait_for_a_server() {
                // SAFETY: signalling the child we started, so that a failed
                // test leaves no run behind.
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
                let read =
                    |f: &str| std::fs::read_to_string(root.path().join(f)).unwrap_or_default();
                panic!(
                    "the server never started; fairbench's stdout:\n{}\nstderr:\n{}",
                    read("fairbench.out"),
                    read("fairbench.err")
                );
            }
            // Into the load.
            std::thread::sleep(Duration::from_secs(3));
            assert!(!groups_of(pid).is_empty(), "the server runs in a group");
            for _ in 0..presses {
                // SAFETY: signalling the child we started.
                unsafe { libc::kill(pid as i32, libc::SIGINT) };
                std::thread::sleep(Duration::from_millis(20));
            }
        },
    );
    assert_eq!(d.code, Some(130), "{}", d.text());
    assert_nothing_left(&root, d.pid);
}

#[test]
fn ctrl_c_leaves_nothing_of_a_daemonized_server() {
    let Some(_serial) = contained() else { return };
    interrupted_run_leaves_nothing(1);
}

#[test]
fn a_second_ctrl_c_leaves_nothing_either() {
    let Some(_serial) = contained() else { return };
    interrupted_run_leaves_nothing(2);
}

/// The supervisor that holds servers on ssh hosts, run here: it reports
/// the containment and the group's counters on request.
#[test]
fn the_remote_supervisor_contains_and_reports() {
    let Some(_serial) = contained() else { return };
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("[::]:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let token = format!("fbtest-supervise-{}", std::process::id());
    let cpu = std::thread::available_parallelism().unwrap().get() - 1;
    let mut child = Command::new(support::bin())
        .args(["agent", "supervise", "--log"])
        .arg(dir.path().join("server.log"))
        .arg("--cwd")
        .arg(dir.path())
        .args(["--grace-ms", "500", "--ready-port", &port.to_string()])
        .args(["--cpus", &cpu.to_string(), "--env", &format!("PORT={port}")])
        .args(["--", "python3"])
        .arg(script())
        .args(["--token", &token, "--daemonize", "--burn-ms", "1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = || lines.next().unwrap().unwrap();
    assert!(next().starts_with("pid "));
    let contained = next();
    assert!(
        contained == format!("contained cgroup-v1 {cpu}")
            || contained == format!("contained cgroup-v2 {cpu}"),
        "{contained}"
    );
    assert!(next().starts_with("ready "));
    // Some work for its counters.
    for _ in 0..20 {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut buf = [0u8; 256];
        let _ = std::io::Read::read(&mut s, &mut buf).unwrap();
    }
    stdin.write_all(b"usage\n").unwrap();
    let usage = next();
    let f: Vec<&str> = usage.split(' ').collect();
    assert_eq!(f[0], "usage", "{usage}");
    assert!(num(f[1]) >= 0.019, "20 requests of 1 ms each: {usage}");
    assert!(num(f[2]) > 1_000_000.0, "{usage}");
    stdin.write_all(b"stop\n").unwrap();
    assert!(next().starts_with("exit "));
    assert!(child.wait().unwrap().success());
    let deadline = Instant::now() + Duration::from_secs(5);
    let live = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter(|e| {
                std::fs::read(e.path().join("cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&token))
            })
            .count()
    };
    while live() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(live(), 0, "server processes outlived the supervisor");
    assert!(groups_of(pid).is_empty(), "{:?}", groups_of(pid));
}

/// Run as an unprivileged user (nobody), fairbench cannot make groups:
/// servers run as process groups, the case records that, and one line
/// says what is not guaranteed.
#[test]
fn without_permission_servers_run_as_process_groups_and_say_so() {
    if !require(
        is_root() && have("setpriv", "--help"),
        "the fallback test runs fairbench as nobody: it needs root and setpriv",
    ) {
        return;
    }
    let _serial = serial();
    let root = Root::with_script(&script(), &[("plain", &["--burn-ms", "1"])]);
    root.suite("contain", SUITE);
    // nobody needs to read the root and write the database and logs.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let as_nobody = |args: &[&str]| {
        let mut c = Command::new("setpriv");
        c.args(["--reuid", "65534", "--regid", "65534", "--clear-groups"])
            .arg(support::bin())
            .args(args)
            .current_dir(root.path())
            // The system's python: a root-only pyenv is out of its reach.
            .env("PATH", "/usr/bin:/bin")
            // A machine lock of its own, where nobody may create it.
            .env("FAIRBENCH_LOCK", root.path().join("machine.lock"));
        c
    };
    let warning = "servers run as process groups instead";
    let d = finish(
        as_nobody(&[
            "check",
            "--servers",
            "plain",
            "--variant",
            "normalized",
            "--scenarios",
            "static",
            "--json",
        ]),
        root.path(),
        Duration::from_secs(120),
        |_| {},
    );
    assert_eq!(d.code, Some(0), "{}", d.text());
    assert_eq!(d.stderr.matches(warning).count(), 1, "{}", d.text());
    assert!(d.stderr.contains("Permission denied"), "{}", d.text());
    assert_nothing_left(&root, d.pid);

    let d = finish(
        as_nobody(&["run", "--suite", "contain", "--quiet"]),
        root.path(),
        Duration::from_secs(300),
        |_| {},
    );
    assert_eq!(d.code, Some(0), "{}", d.text());
    assert_eq!(d.stderr.matches(warning).count(), 1, "{}", d.text());
    assert_nothing_left(&root, d.pid);
    let c = case(
        &root,
        "plain",
        "state, containment, server_cpuset, server_group_cpu_s, server_cpu_s, generator_containment",
    );
    assert_eq!(
        c[..5],
        ["done", "process-group", "NULL", "NULL", &c[4]],
        "{c:?}"
    );
    assert!(num(&c[4]) > 0.0, "the /proc figures remain: {c:?}");
    assert_eq!(c[5], "affinity", "{c:?}");
}

/// A fairbench killed outright runs no cleanup: the daemonized server
/// lives on in its group. The next fairbench removes the group and what
/// runs in it before it starts anything, and says so.
#[test]
fn groups_of_a_killed_fairbench_are_removed_by_the_next() {
    let Some(_serial) = contained() else { return };
    let root = Root::with_script(&script(), &[("daemon", &["--daemonize"])]);
    root.suite("long", &SUITE.replace("\"2s\"", "\"60s\""));
    let killed = finish(
        fairbench(&root, &["run", "--suite", "long", "--quiet"]),
        root.path(),
        Duration::from_secs(60),
        |pid| {
            root.wait_for_a_server();
            std::thread::sleep(Duration::from_secs(2));
            // SAFETY: signalling the child we started.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        },
    );
    assert_eq!(killed.code, None, "killed by a signal");
    let left = groups_of(killed.pid);
    assert!(!left.is_empty(), "the crash leaves its groups");
    assert!(
        !root.live_servers().is_empty(),
        "the daemon outlives a SIGKILLed fairbench"
    );
    let next = check(&root, "daemon", &[]);
    let name = left[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        next.stderr
            .contains("removed what earlier fairbench processes left behind: control groups")
            && next.stderr.contains(&name),
        "{}",
        next.text()
    );
    assert_nothing_left(&root, killed.pid);
    assert!(groups_of(next.pid).is_empty());
}
