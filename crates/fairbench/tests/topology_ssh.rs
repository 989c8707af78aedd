//! ssh hosts end to end, against an OpenSSH server the test starts on a
//! loopback port with keys made for it: the server on one "host", the load
//! split over two others, the parts merged exactly, everything cleaned up.

mod support;

use std::process::Stdio;

use support::net::*;
use support::root::Root;
use support::*;

#[test]
fn a_server_host_and_two_client_hosts_merge_exactly() {
    let _serial = serial();
    let Some(sshd) = Sshd::start() else {
        return;
    };
    let cfg = sshd.config().display().to_string();
    // The test's sshd works before fairbench is asked to use it.
    let hello = sshd.ssh("fbt-probe", "echo hello");
    assert!(
        hello.status.success(),
        "ssh to the test sshd: {}\nsshd log:\n{}",
        text(&hello),
        sshd.log()
    );

    let root = Root::new(&[("py", &[])]);
    root.one_case_suite("remote", 8, "3s");
    let out = root
        .fairbench()
        .args(["run", "--suite", "remote", "--quiet"])
        .args(["--server-host", "fbt-server"])
        .args([
            "--client-host",
            "fbt-client1",
            "--client-host",
            "fbt-client2",
        ])
        .args(["--ssh-config", &cfg])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = out.id();
    let out = out.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\nsshd log:\n{}",
        text(&out),
        sshd.log()
    );
    root.assert_no_servers_left();
    assert_eq!(
        root.sql::<i64>("SELECT count(*) FROM cases WHERE state = 'done' AND fair = 1"),
        1,
        "checked through the tunnel and measured"
    );

    // The merge: request counts add up, the histogram is the sum of the
    // parts' and its percentiles are the combined histogram's.
    root.assert_merged_exactly(2);
    assert_eq!(
        root.strings("SELECT host FROM case_parts ORDER BY part"),
        vec!["ssh fbt-client1", "ssh fbt-client2"]
    );
    assert_eq!(
        root.ints("SELECT connections FROM case_parts ORDER BY part"),
        vec![4, 4]
    );
    // Each part has a series of its own, aligned with the merged one.
    assert!(root.sql::<i64>("SELECT count(DISTINCT part) FROM part_samples") == 2);

    // The server ran under the remote supervisor: its /proc was read there,
    // its log came home.
    assert!(root.sql::<f64>("SELECT server_cpu_s FROM cases") > 0.0);
    assert!(root.sql::<i64>("SELECT server_rss_peak FROM cases") > 1_000_000);
    // The remote supervisor held it in a control group there (the test's
    // sshd logs in as root) and reported the group's counters.
    let held: String = root.sql("SELECT containment FROM cases");
    assert!(held == "cgroup-v1" || held == "cgroup-v2", "{held}");
    assert_eq!(
        root.sql::<String>("SELECT server_cpuset FROM cases"),
        root.sql::<String>("SELECT server_cpus FROM cases")
    );
    assert!(root.sql::<f64>("SELECT server_group_cpu_s FROM cases") > 0.0);
    assert!(root.sql::<i64>("SELECT server_group_memory_peak FROM cases") > 1_000_000);
    let topo: String = root.sql("SELECT topology_json FROM runs");
    let topo: serde_json::Value = serde_json::from_str(&topo).unwrap();
    assert_eq!(topo["topology"], "ssh");
    assert_eq!(topo["server"]["host"], "ssh fbt-server");
    let logs: Vec<_> = std::fs::read_dir(root.path().join(".fairbench/logs/run-1"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(logs.len(), 1);
    let log = std::fs::read_to_string(logs[0].path()).unwrap();
    assert!(log.contains("on ssh fbt-server"), "{log}");
    assert!(
        log.contains("pyserver.py"),
        "copied into the session: {log}"
    );

    // Same machine here, so the case says the load competed with the server.
    let warnings: String = root.sql("SELECT warnings_json FROM cases");
    assert!(
        warnings.contains("same machine as the server"),
        "{warnings}"
    );

    // Nothing left on the "remote" side: no session directory, no agent.
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    let sessions: Vec<String> = std::fs::read_dir(format!("{home}/.cache/fairbench"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("session-"))
                .collect()
        })
        .unwrap_or_default();
    let mine: Vec<&String> = sessions
        .iter()
        .filter(|s| s.contains(&format!("-{pid}-")))
        .collect();
    assert!(mine.is_empty(), "session directories left: {mine:?}");
    assert!(live_with(&root.token).is_empty());
}

#[test]
fn an_unreachable_ssh_host_is_one_clear_error() {
    let _serial = serial();
    let Some(sshd) = Sshd::start() else {
        return;
    };
    // A config whose host points at a port nobody listens on.
    let bad = sshd.dir.path().join("bad_config");
    std::fs::write(
        &bad,
        "Host nowhere\n  HostName 127.0.0.1\n  Port 1\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n",
    )
    .unwrap();
    let root = Root::new(&[("py", &[])]);
    root.one_case_suite("x", 2, "1s");
    let out = root.run(&[
        "run",
        "--suite",
        "x",
        "--quiet",
        "--server-host",
        "nowhere",
        "--ssh-config",
        &bad.display().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--server-host nowhere") && err.contains("cannot reach ssh host nowhere"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        !root.db().exists(),
        "nothing stored for a run that could not start"
    );
}

#[test]
fn check_runs_the_server_on_an_ssh_host() {
    let _serial = serial();
    let Some(sshd) = Sshd::start() else {
        return;
    };
    let root = Root::new(&[("py", &[])]);
    let out = root.run(&[
        "check",
        "--scenarios",
        "static",
        "--variant",
        "normalized",
        "--server-host",
        "fbt-server",
        "--ssh-config",
        &sshd.config().display().to_string(),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}\n{}", text(&out), sshd.log());
    let j = json(&out);
    assert_eq!(j["cases"][0]["grade"], "pass", "{}", j["cases"][0]);
    assert_eq!(j["cases"][0]["row"]["body_bytes"], 13);
    root.assert_no_servers_left();
}

#[test]
fn load_runs_its_generator_on_an_ssh_host() {
    let _serial = serial();
    let Some(sshd) = Sshd::start() else {
        return;
    };
    let hello = Hello::start();
    let out = command()
        .args([
            "load",
            &hello.url(),
            "--json",
            "-c",
            "2",
            "-d",
            "1s",
            "--client-host",
            "fbt-client1",
            "--ssh-config",
            &sshd.config().display().to_string(),
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}\n{}", text(&out), sshd.log());
    let j = json(&out);
    let clients = j["clients"].as_array().unwrap();
    assert_eq!(clients.len(), 1);
    assert!(
        clients[0]["host"].as_str().unwrap().contains("fbt-client1"),
        "{}",
        clients[0]
    );
    assert!(j["requests"].as_u64().unwrap() > 0);
    assert_eq!(j["requests"], clients[0]["requests"]);
}
