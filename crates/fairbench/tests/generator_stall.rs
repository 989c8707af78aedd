//! A load generator that stops (SIGSTOP, a frozen control group, a paused
//! virtual machine) reads nothing meanwhile: its stall is said as its own,
//! never as a silence of the server's, and its figures are bounds.

mod support;

use std::process::Stdio;
use std::time::Duration;

use fairbench_testkit::counting::Counting;
use fairbench_testkit::timing::Slack;
use serde_json::Value;
use support::{assert_schema, serial};

#[test]
fn a_stopped_generator_is_not_a_silent_server() {
    let _serial = serial();
    // A server that answers at once: any silence in the window is the
    // generator's.
    let srv = Counting::start(Duration::ZERO);
    let slack = Slack::of_machine();
    let url = srv.url("/");
    let args = [
        "load", &url, "-c", "4", "-t", "1", "-d", "4s", "--warmup", "0s",
    ];
    let mut child = support::command()
        .args(args)
        .arg("--json")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Stopped once the load is under way (the window has no warm-up),
    // with seconds of it left; a stop before that would prove nothing.
    let t = std::time::Instant::now();
    while srv.count("GET /") < 1000 {
        if child.try_wait().unwrap().is_some() || t.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "the load never reached 1000 requests ({} in {:?}), so it was not stopped: {}",
                srv.count("GET /"),
                t.elapsed(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    let pid = child.id() as libc::pid_t;
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    std::thread::sleep(Duration::from_millis(700));
    unsafe { libc::kill(pid, libc::SIGCONT) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {err}"));
    assert_schema("load", &v);
    let stalled = &v["generator_stalled"];
    assert!(stalled["longest_s"].as_f64().unwrap_or(0.0) >= 0.5, "{v}");
    // The stall is cut out of the server's silences: what is left is
    // wake-ups, 0.3 s or the test kit's slack if more, below the 0.7 s stop.
    let bound = f64::max(0.3, slack.above_duration(Duration::ZERO).as_secs_f64());
    let silent = v["longest_silence"]["duration_s"].as_f64().unwrap_or(0.0);
    assert!(silent < bound, "{slack}: {v}");
    let w = v["warnings"].to_string();
    assert!(
        w.contains("the load generator did not run at all")
            && !w.contains("the server answered nothing"),
        "{w}"
    );
}
