//! The unit tests of `process`.

use super::*;

fn spec(dir: &Path, script: &str) -> ServerSpec {
    let mut s = ServerSpec::new(
        vec!["sh".into(), "-c".into(), script.into()],
        dir.to_path_buf(),
        dir.join("log/server.log"),
    );
    s.stop_grace = Duration::from_millis(300);
    s
}

#[test]
fn exits_are_reported_with_log() {
    let d = tempfile::tempdir().unwrap();
    let p = ServerProcess::start(&spec(d.path(), "echo boom; exit 3")).unwrap();
    let e = p
        .wait_ready(&loopback(free_port().unwrap()), Duration::from_secs(10))
        .unwrap_err();
    assert!(matches!(e, ReadyError::Exited { .. }), "{e}");
    assert_eq!(e.to_string(), "exited with status 3 before answering");
    assert_eq!(p.log_tail(1), vec!["boom"]);
}

#[test]
fn a_port_another_process_holds_is_refused_and_the_holder_named() {
    // The port answers at once, but from this (older) test process, not
    // from the server, which never listens: its answers must not be
    // measured as the server's.
    let d = tempfile::tempdir().unwrap();
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = held.local_addr().unwrap().port();
    let p = ServerProcess::start(&spec(d.path(), "sleep 30")).unwrap();
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let e = p.wait_ready(&[addr], Duration::from_secs(10)).unwrap_err();
    let me = std::process::id();
    assert!(
        matches!(&e, ReadyError::Foreign { port: q, holder } if *q == port && holder.starts_with(&format!("pid {me} ("))),
        "{e}"
    );
    assert!(e.to_string().contains("not from the server"), "{e}");
    p.stop();
    // A server that listens there itself is ready.
    drop(held);
    let script = format!("exec python3 -c 'import socket,time; s=socket.socket(); s.bind((\"127.0.0.1\", {port})); s.listen(); time.sleep(30)'");
    let p = ServerProcess::start(&spec(d.path(), &script)).unwrap();
    p.wait_ready(&[addr], Duration::from_secs(10)).unwrap();
    p.stop();
}

#[test]
fn stop_kills_a_group_that_ignores_sigterm() {
    let d = tempfile::tempdir().unwrap();
    let p =
        ServerProcess::start(&spec(d.path(), "trap '' TERM; sleep 30 & sleep 30; wait")).unwrap();
    let pg = p.pgid();
    assert!(groups().contains(&pg));
    std::thread::sleep(Duration::from_millis(100));
    let paths = p.group.as_ref().map(Group::paths).unwrap_or_default();
    let t = Instant::now();
    let st = p.stop().unwrap();
    assert!(t.elapsed() < Duration::from_secs(5));
    assert_eq!(st.signal(), Some(libc::SIGKILL));
    assert!(!groups().contains(&pg));
    assert_eq!(group_members(pg), Vec::<u32>::new());
    assert!(paths.iter().all(|p| !p.exists()), "{paths:?}");
}

/// Whether this test process may make control groups (root, mounted).
fn contained() -> bool {
    // SAFETY: geteuid has no preconditions.
    let ok = unsafe { libc::geteuid() } == 0 && containment::hierarchies().is_ok();
    if !ok {
        eprintln!("skipped: no control groups here");
    }
    ok
}

fn wait_until(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let t = Instant::now();
    while !f() {
        if t.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

#[test]
fn a_server_that_daemonizes_lives_on_in_its_child_and_ends_whole() {
    if !contained() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let p = ServerProcess::start(&spec(
        d.path(),
        "setsid sh -c 'trap \"\" TERM; while :; do :; done' & exit 0",
    ))
    .unwrap();
    assert!(p.method().is_cgroup());
    assert!(wait_until(Duration::from_secs(10), || p
        .state()
        .child
        .try_wait()
        .ok()
        .flatten()
        .is_some()));
    // The leader is gone; the server is not.
    assert!(p.is_alive());
    let members = p.group_members().unwrap();
    assert_eq!(members.len(), 1, "{members:?}");
    assert!(wait_until(Duration::from_secs(30), || p
        .group_usage()
        .unwrap()
        .cpu_s
        .unwrap_or(0.0)
        > 0.1));
    let st = p.stop().unwrap();
    assert_eq!(st.code(), Some(0), "the leader's own exit");
    assert!(!p.is_alive());
    assert_eq!(p.leftover(), None);
    for pid in members {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists()
                || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .unwrap_or_default()
                    .contains(") Z"),
            "pid {pid} outlived its server"
        );
    }
}

#[test]
fn a_server_cannot_widen_its_cpus_beyond_its_cpuset() {
    if !contained() {
        return;
    }
    let all = (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| std::path::Path::new(&format!("/sys/devices/system/cpu/cpu{c}")).exists())
        .count();
    if all < 2 {
        eprintln!("skipped: one CPU");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let mut s = spec(
        d.path(),
        "python3 -c 'import os\nos.sched_setaffinity(0, range(os.cpu_count()))\nprint(sorted(os.sched_getaffinity(0)))'",
    );
    s.cpus = Some(vec![1]);
    let p = ServerProcess::start(&s).unwrap();
    assert_eq!(p.cpuset().as_deref(), Some("1"));
    assert!(wait_until(Duration::from_secs(20), || !p.is_alive()));
    assert_eq!(p.log_tail(1), vec!["[1]"]);
}

#[test]
fn forked_workers_count_in_the_group_cpu() {
    if !contained() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    // Two workers each burn 0.3 s of their own CPU and exit; the
    // leader waits for them and idles.
    let burn = "python3 -c 'import time\nwhile time.process_time() < 0.3: pass'";
    let p = ServerProcess::start(&spec(
        d.path(),
        &format!("{burn} & {burn} & wait; sleep 30"),
    ))
    .unwrap();
    assert!(wait_until(Duration::from_secs(30), || p
        .group_usage()
        .unwrap()
        .cpu_s
        .unwrap_or(0.0)
        >= 0.59));
    // Both burners have exited: their CPU stays counted.
    assert!(wait_until(Duration::from_secs(10), || p
        .group_members()
        .unwrap()
        .len()
        == 2));
    let cpu = p.group_usage().unwrap().cpu_s.unwrap();
    assert!(cpu < 3.0, "{cpu}");
    p.stop();
}

#[test]
fn pins_cpus() {
    let d = tempfile::tempdir().unwrap();
    let mut s = spec(d.path(), "grep Cpus_allowed_list /proc/self/status");
    s.cpus = Some(vec![0]);
    let p = ServerProcess::start(&s).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while p.is_alive() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let tail = p.log_tail(1).join("");
    // The tab is shown as the escape every output uses.
    assert!(tail.ends_with("Cpus_allowed_list:\\t0"), "{tail}");
}
