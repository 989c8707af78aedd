//! Cleanup after a killed fairbench (issue 27): the next fairbench command
//! of any kind — here `servers`, which starts nothing — removes the
//! control groups, network namespaces and veth links a SIGKILLed `run
//! --topology netns` left behind, and says so in one line.

mod support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use support::root::Root;
use support::topology::{links_of, namespaces_of, netns_ready};
use support::{groups_of, serial, text};

#[test]
fn a_killed_netns_run_is_cleaned_up_by_the_next_command_of_any_kind() {
    let _serial = serial();
    if !netns_ready() {
        return;
    }
    let root = Root::new(&[("fast-a", &[])]);
    root.one_case_suite("long", 2, "60s");
    let mut victim = root
        .fairbench()
        .args(["run", "--suite", "long", "--quiet", "--topology", "netns"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = victim.id();
    let t = Instant::now();
    while namespaces_of(pid).is_empty() || !root.wait_for_a_server() {
        if t.elapsed() > Duration::from_secs(60) {
            let _ = victim.kill();
            panic!("the run never started its server in a namespace");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(1500));
    victim.kill().unwrap();
    victim.wait().unwrap();
    let namespaces = namespaces_of(pid);
    assert!(
        !namespaces.is_empty(),
        "a SIGKILLed run leaves its namespaces"
    );
    let groups = groups_of(pid);

    let o = root.run(&["servers"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    let line = err
        .lines()
        .find(|l| l.contains("removed what earlier fairbench processes left behind"))
        .unwrap_or_else(|| panic!("no line says what was removed: {err}"));
    assert!(line.contains(&namespaces[0]), "{line}");
    if let Some(g) = groups.first() {
        assert!(
            line.contains(&*g.file_name().unwrap().to_string_lossy()),
            "{line}"
        );
    }
    assert!(namespaces_of(pid).is_empty(), "{:?}", namespaces_of(pid));
    assert!(links_of(pid).is_empty(), "{:?}", links_of(pid));
    assert!(groups_of(pid).is_empty(), "{:?}", groups_of(pid));
    root.assert_no_servers_left();
}
