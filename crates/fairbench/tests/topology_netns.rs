//! `--topology netns` end to end, as root: the server and the load in
//! network namespaces joined by veth links, link shaping that shows up in
//! the figures, several load generators merged exactly, and no namespace or
//! veth left behind, even by a fairbench that was killed.

mod support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use support::net::*;
use support::root::Root;
use support::topology::*;
use support::*;

#[test]
fn a_case_runs_in_namespaces_and_leaves_nothing_behind() {
    let _serial = serial();
    if !netns_ready() {
        return;
    }
    let root = Root::new(&[("py", &[])]);
    root.one_case_suite("ns", 8, "2s");
    let child = root
        .fairbench()
        .args(["run", "--suite", "ns", "--quiet", "--topology", "netns"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let _janitor = NetnsJanitor(vec![pid]);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    root.assert_no_servers_left();
    assert!(
        namespaces_of(pid).is_empty(),
        "namespaces left: {:?}",
        namespaces_of(pid)
    );
    assert!(links_of(pid).is_empty(), "veths left: {:?}", links_of(pid));

    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("topology netns"), "{stderr}");
    assert_eq!(
        root.sql::<i64>("SELECT count(*) FROM cases WHERE state = 'done' AND requests > 0"),
        1
    );
    // Checked from inside the server's namespace, over IPv4 and IPv6 loopback.
    assert_eq!(root.sql::<i64>("SELECT fair FROM cases"), 1);
    // Its /proc read while it ran.
    assert!(root.sql::<f64>("SELECT server_cpu_s FROM cases") > 0.0);
    // Server and load generator each in a control group of their own with
    // their CPUs as the cpuset, made from outside the namespaces (`ip
    // netns exec` hides the cgroup file system from what it runs).
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    if mountinfo.contains(" - cgroup") {
        let held = root.strings(
            "SELECT containment || ' ' || generator_containment || ' ' ||
                    (server_cpuset = server_cpus) || ' ' || (server_group_cpu_s > 0) FROM cases",
        );
        assert!(
            held == ["cgroup-v1 cgroup-v1 1 1"] || held == ["cgroup-v2 cgroup-v2 1 1"],
            "{held:?}"
        );
    }
    let topo: String = root.sql("SELECT topology_json FROM runs");
    let topo: serde_json::Value = serde_json::from_str(&topo).unwrap();
    assert_eq!(topo["topology"], "netns");
    assert!(topo["server"]["host"]
        .as_str()
        .unwrap()
        .starts_with(&format!("netns fairbench-{pid}-")));
    // The load went over the link, to the server's address in 198.18.0.0/15.
    let url: String = root.sql("SELECT url FROM case_parts");
    assert!(url.starts_with("http://198.18."), "{url}");
    root.assert_merged_exactly(1);
}

#[test]
fn two_generators_in_namespaces_merge_exactly() {
    let _serial = serial();
    if !netns_ready() {
        return;
    }
    let root = Root::new(&[("py", &[])]);
    root.one_case_suite("two", 8, "3s");
    let child = root
        .fairbench()
        .args([
            "run",
            "--suite",
            "two",
            "--quiet",
            "--topology",
            "netns",
            "--clients",
            "2",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _janitor = NetnsJanitor(vec![child.id()]);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    root.assert_no_servers_left();
    root.assert_merged_exactly(2);
    // Connections split 4 + 4, each generator in its own namespace.
    assert_eq!(
        root.ints("SELECT connections FROM case_parts ORDER BY part"),
        vec![4, 4]
    );
    let hosts = root.strings("SELECT host FROM case_parts ORDER BY part");
    assert!(
        hosts[0].ends_with("-c0") && hosts[1].ends_with("-c1"),
        "{hosts:?}"
    );
    // Each has its own link: two different server addresses.
    let urls = root.strings("SELECT url FROM case_parts ORDER BY part");
    assert_ne!(urls[0], urls[1]);
}

/// `load --topology netns` against a server in this machine's own
/// namespace, unshaped and at 1 Mbit/s.
#[test]
fn a_link_rate_caps_the_throughput() {
    let _serial = serial();
    if !netns_ready() {
        return;
    }
    let hello = Hello::start();
    let run = |extra: &[&str]| {
        let child = command()
            .args(["load", &hello.url(), "-d", "3s", "-c", "16", "--json"])
            .args(["--topology", "netns"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let _janitor = NetnsJanitor(vec![child.id()]);
        let pid = child.id();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        assert!(namespaces_of(pid).is_empty() && links_of(pid).is_empty());
        json(&out)
    };
    let free = run(&[]);
    let capped = run(&["--link-rate", "1mbit"]);
    let (free_rps, capped_rps) = (
        free["rps"].as_f64().unwrap(),
        capped["rps"].as_f64().unwrap(),
    );
    eprintln!("unshaped {free_rps:.0} req/s, at 1 Mbit/s {capped_rps:.0} req/s");
    // ~70 bytes of response and ~60 of request per round trip plus TCP/IP
    // headers: 1 Mbit/s carries well under 3,000 of them a second.
    assert!(capped_rps > 0.0 && capped_rps < 3_000.0, "{capped_rps}");
    assert!(
        free_rps > 3.0 * capped_rps,
        "unshaped {free_rps} vs capped {capped_rps}"
    );
    assert_eq!(capped["topology"]["link"]["rate_bps"], 1_000_000);
    // The link, not the server, set that pace, and the run says so.
    let filled = |v: &serde_json::Value| {
        v["warnings"].as_array().unwrap().iter().any(|w| {
            let w = w.as_str().unwrap();
            w.contains("% of its link's --link-rate 1 Mbit/s")
                && w.contains("the throughput is the link's")
        })
    };
    assert!(filled(&capped), "{}", capped["warnings"]);
    assert!(!filled(&free), "{}", free["warnings"]);
    assert_eq!(capped["clients"].as_array().unwrap().len(), 1);
    assert!(capped["clients"][0]["url"]
        .as_str()
        .unwrap()
        .starts_with("http://198.18."));
}

/// 2 ms added to the round trip moves the fastest answer by about 2 ms,
/// where the kernel has netem; where it has not, fairbench says so in one
/// line.
#[test]
fn a_link_delay_shows_in_the_latency_or_is_refused_clearly() {
    let _serial = serial();
    if !netns_ready() {
        return;
    }
    let hello = Hello::start();
    // A modest constant rate: no queueing, so the fastest answer is the
    // round trip.
    let run = |extra: &[&str]| {
        let child = command()
            .args([
                "load",
                &hello.url(),
                "-d",
                "3s",
                "-c",
                "4",
                "-R",
                "200",
                "--json",
            ])
            .args(["--topology", "netns"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let _janitor = NetnsJanitor(vec![child.id()]);
        let pid = child.id();
        let out = child.wait_with_output().unwrap();
        assert!(namespaces_of(pid).is_empty() && links_of(pid).is_empty());
        out
    };
    let delayed = run(&["--link-delay", "2ms"]);
    if delayed.status.code() != Some(0) {
        let err = String::from_utf8_lossy(&delayed.stderr);
        assert_eq!(delayed.status.code(), Some(1), "{}", text(&delayed));
        assert!(
            err.contains("netem") && err.contains("Specified qdisc kind is unknown"),
            "{}",
            text(&delayed)
        );
        assert_eq!(err.trim().lines().count(), 1, "one clear line: {err}");
        eprintln!("SKIPPED: this kernel has no netem: {}", err.trim());
        return;
    }
    let base = run(&[]);
    assert_eq!(base.status.code(), Some(0), "{}", text(&base));
    // The minimum, not p50: the delay is a floor that a busy machine's
    // noise only adds to, so two runs' minima differ by the delay where
    // their medians differ by the noise too. Delayed both ways: ~4 ms.
    let min = |o: &std::process::Output| json(o)["latency_us"]["min"].as_f64().unwrap();
    let (b, d) = (min(&base), min(&delayed));
    eprintln!("min unshaped {b} µs, with 2 ms delay {d} µs");
    assert!(
        (1_500.0..=3_500.0).contains(&(d - b)),
        "2 ms of delay moved the minimum by {} µs",
        d - b
    );
}

#[test]
fn namespaces_of_a_killed_fairbench_are_removed_by_the_next() {
    let _serial = serial();
    if !netns_ready() {
        return;
    }
    let hello = Hello::start();
    let victim = command()
        .args(["load", &hello.url(), "-d", "60s", "-c", "4"])
        .args(["--topology", "netns", "--clients", "2"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let vpid = victim.id();
    let mut janitor = NetnsJanitor(vec![vpid]);
    let mut victim = victim;
    let t = Instant::now();
    while namespaces_of(vpid).len() < 2 {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "the victim never built its namespaces"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Let the load start, then kill it without a chance to clean up.
    std::thread::sleep(Duration::from_millis(1500));
    victim.kill().unwrap();
    victim.wait().unwrap();
    let left = namespaces_of(vpid);
    assert_eq!(left.len(), 2, "a SIGKILLed fairbench leaves its namespaces");
    assert_eq!(links_of(vpid).len(), 2, "and its veth ends");
    // Its load generators died with it (their job names the server's port).
    let needle = format!(":{}/\"", hello.port);
    let t = Instant::now();
    while !live_with(&needle).is_empty() && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        live_with(&needle).is_empty(),
        "load generators outlived fairbench"
    );

    let next = command()
        .args([
            "load",
            &hello.url(),
            "-d",
            "1s",
            "-c",
            "2",
            "--topology",
            "netns",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    janitor.0.push(next.id());
    let npid = next.id();
    let out = next.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("removed what earlier fairbench processes left behind")
            && err.contains(&left[0]),
        "{err}"
    );
    assert!(namespaces_of(vpid).is_empty(), "{:?}", namespaces_of(vpid));
    assert!(links_of(vpid).is_empty(), "{:?}", links_of(vpid));
    assert!(namespaces_of(npid).is_empty() && links_of(npid).is_empty());
}

#[test]
fn ctrl_c_keeps_the_figures_and_removes_the_namespaces() {
    let _serial = serial();
    if !netns_ready() {
        return;
    }
    let hello = Hello::start();
    let child = command()
        .args(["load", &hello.url(), "-d", "30s", "-c", "4", "--json"])
        .args(["--topology", "netns", "--clients", "2"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let _janitor = NetnsJanitor(vec![pid]);
    let t = Instant::now();
    while namespaces_of(pid).len() < 2 {
        assert!(t.elapsed() < Duration::from_secs(20), "no namespaces");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(2500));
    // SAFETY: kill has no memory-safety preconditions.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    let j = json(&out);
    assert_eq!(j["interrupted"], true);
    let parts: u64 = j["clients"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["requests"].as_u64().unwrap())
        .sum();
    assert!(parts > 0);
    assert_eq!(j["requests"].as_u64().unwrap(), parts);
    assert!(namespaces_of(pid).is_empty() && links_of(pid).is_empty());
}

#[test]
fn check_starts_the_server_in_a_namespace_and_checks_it_there() {
    let _serial = serial();
    if !netns_ready() {
        return;
    }
    let root = Root::new(&[("py", &[])]);
    let child = root
        .fairbench()
        .args(["check", "--scenarios", "static", "--variant", "normalized"])
        .args(["--topology", "netns", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let _janitor = NetnsJanitor(vec![pid]);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let j = json(&out);
    assert_eq!(j["ok"], true);
    let case = &j["cases"][0];
    assert_eq!(case["grade"], "pass", "{case}");
    // IPv4 and IPv6 loopback of the server's own namespace both answered.
    let rules = case["rules"].as_array().unwrap();
    for r in ["ipv4", "ipv6"] {
        assert!(
            rules
                .iter()
                .any(|x| x["rule"].as_str().is_some_and(|n| n.contains(r)) && x["grade"] == "pass"),
            "{r}: {rules:?}"
        );
    }
    root.assert_no_servers_left();
    assert!(namespaces_of(pid).is_empty());
}
