//! One benchmark per machine (issue 27): while one measuring command runs,
//! a second — `load` or `run`, on any database — is refused with one line
//! naming the holder, or with `--wait` queues behind it.

mod support;

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use support::net::Hello;
use support::root::Root;
use support::{command, text};

/// A gentle load (100 requests/s on one connection) holding `lock` for
/// `secs`, and its pid once the lock file names it.
fn holder(lock: &Path, url: &str, secs: &str) -> (Child, u32) {
    let child = command()
        .env("FAIRBENCH_LOCK", lock)
        .args(["load", "-R", "100", "-c", "1", "-t", "1", "-d", secs, url])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let until = Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(lock).is_ok_and(|s| s.starts_with(&format!("pid {pid} "))) {
        assert!(Instant::now() < until, "the load never took the lock");
        std::thread::sleep(Duration::from_millis(20));
    }
    (child, pid)
}

#[test]
fn a_second_measurement_is_refused_naming_the_holder_or_waits() {
    // Not beside the CPU burners below: the waiter must reach the lock in time.
    let _serial = support::serial();
    let srv = Hello::start();
    let dir = tempfile::tempdir().unwrap();
    let lock = dir.path().join("machine.lock");
    // Long enough for the refusals below on a loaded machine; killed after.
    let (mut first, pid) = holder(&lock, &srv.url(), "60s");

    // A second load: refused at once, one line naming the holder.
    let o = command()
        .env("FAIRBENCH_LOCK", &lock)
        .args(["load", "-d", "1s", &srv.url()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!(
            "another benchmark is running on this machine (pid {pid} (fairbench load -R 100"
        )) && err.contains("--wait"),
        "{err}"
    );

    // A run on a database of its own: refused too, before it stores anything.
    let root = Root::new(&[("fast-a", &[])]);
    root.one_case_suite("one", 2, "1s");
    let o = root
        .fairbench()
        .env("FAIRBENCH_LOCK", &lock)
        .args(["run", "--suite", "one", "--db", "other.db"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains(&format!("pid {pid} ")));
    assert!(!root.path().join("other.db").exists());
    root.assert_no_servers_left();

    // A killed holder leaves nothing locked: the kernel drops its lock.
    first.kill().unwrap();
    first.wait().unwrap();

    // With --wait: it says whom it waits for, and runs once the first ends;
    // 10 s so that a slow-starting waiter still finds the lock taken.
    let (mut first, pid) = holder(&lock, &srv.url(), "10s");
    let o = command()
        .env("FAIRBENCH_LOCK", &lock)
        .args([
            "load",
            "--wait",
            "-n",
            "20",
            "-c",
            "1",
            "--json",
            &srv.url(),
        ])
        .output()
        .unwrap();
    let first_end = first.wait().unwrap();
    assert!(first_end.success());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(&format!(
            "waiting for the benchmark already running here (pid {pid} "
        )),
        "{}",
        text(&o)
    );
}

/// Another process busy on a case's cores — here a Python loop, as a build
/// or another benchmark would be — is measured and stored with the case as
/// a warning.
#[test]
fn a_busy_process_on_the_cases_cores_is_warned_about_and_stored() {
    let _serial = support::serial();
    let root = Root::new(&[("fast-a", &[])]);
    root.one_case_suite("one", 2, "2s");
    // One busy thread on every CPU fairbench may use, for at most 60 s.
    let cpus = std::thread::available_parallelism().unwrap().get();
    let burners: Vec<Child> = (0..cpus)
        .map(|_| {
            std::process::Command::new("python3")
                .args([
                    "-c",
                    "import time\nt = time.time()\nwhile time.time() - t < 60: pass",
                ])
                .spawn()
                .unwrap()
        })
        .collect();
    struct Kill(Vec<Child>);
    impl Drop for Kill {
        fn drop(&mut self) {
            for c in &mut self.0 {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
    let burners = Kill(burners);
    let o = root.run(&["run", "--suite", "one", "--quiet"]);
    drop(burners);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let warnings: String = root.sql("SELECT warnings_json FROM cases");
    assert!(
        warnings.contains("other processes used") && warnings.contains("shared the cores"),
        "{warnings}"
    );
    // The server on one CPU of the two watched: what others took may all
    // have been its, and the warning says how much of it that would be.
    let server_cpus: String = root.sql("SELECT server_cpus FROM cases");
    if warnings.contains("of CPUs 0-1") && !server_cpus.contains('-') {
        assert!(
            warnings.contains(&format!(
                "had it all run on the server's CPU {server_cpus}, that was"
            )),
            "{warnings}"
        );
    }
}
