//! Topology flags that need neither root nor ssh: clear usage errors, and
//! several local load generators merged exactly.

mod support;

use support::net::*;
use support::root::Root;
use support::*;

fn usage_error(args: &[&str], expect: &str) {
    let out = command().args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(expect), "expected {expect:?} in: {err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
}

#[test]
fn mistakes_are_usage_errors_that_name_the_flag() {
    let url = "http://127.0.0.1:9/";
    usage_error(
        &["load", url, "--link-rate", "1mbit"],
        "--link-rate and --link-delay shape the virtual link of --topology netns",
    );
    usage_error(
        &["load", url, "--topology", "netns", "--link-rate", "fast"],
        "--link-rate: \"fast\" is not a rate",
    );
    usage_error(
        &["load", url, "--topology", "netns", "--link-delay", "soon"],
        "--link-delay:",
    );
    usage_error(
        &[
            "load",
            url,
            "--topology",
            "netns",
            "--client-host",
            "me@there",
        ],
        "does not combine with --server-host or --client-host",
    );
    usage_error(
        &["load", url, "--clients", "65", "-c", "100"],
        "--clients: between 1 and 64",
    );
    usage_error(
        &["load", url, "--clients", "0"],
        "'--clients <N>': must be at least 1",
    );
    usage_error(
        &["load", url, "--clients", "2", "--client-host", "a@b"],
        "with --client-host there is one per host",
    );
    usage_error(
        &["load", url, "--clients", "3", "-c", "2"],
        "--connections: 2 cannot be split over 3 load generators",
    );
}

#[test]
fn run_refuses_link_and_address_flags_that_do_not_apply() {
    let root = Root::new(&[("py", &[])]);
    root.one_case_suite("x", 2, "1s");
    for (flags, expect) in [
        (
            &["--link-rate", "1mbit"][..],
            "--link-rate and --link-delay shape the virtual link of --topology netns",
        ),
        (
            &["--link-delay", "2ms"][..],
            "--link-rate and --link-delay shape the virtual link of --topology netns",
        ),
        (
            &["--server-address", "10.0.0.2"][..],
            "--server-address only applies with --server-host or --client-host",
        ),
    ] {
        let mut args = vec!["run", "--suite", "x", "--quiet"];
        args.extend(flags);
        let out = root.run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(expect), "{args:?}: {err}");
        assert!(!root.db().exists(), "nothing stored for a refused run");
        root.assert_no_servers_left();
    }
}

#[test]
fn local_generators_start_together_and_merge_exactly() {
    let _serial = serial();
    let hello = Hello::start();
    let out = command()
        .args([
            "load",
            &hello.url(),
            "-d",
            "2s",
            "-c",
            "6",
            "--clients",
            "3",
            "--json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let j = json(&out);
    let clients = j["clients"].as_array().unwrap();
    assert_eq!(clients.len(), 3);
    let sum: u64 = clients
        .iter()
        .map(|c| c["requests"].as_u64().unwrap())
        .sum();
    assert!(sum > 0);
    assert_eq!(j["requests"].as_u64().unwrap(), sum);
    let conns: Vec<u64> = clients
        .iter()
        .map(|c| c["connections"].as_u64().unwrap())
        .collect();
    assert_eq!(conns, vec![2, 2, 2]);
    assert_eq!(j["connections"], 6);
    // Every merged second is the sum of the generators' same second: they
    // shared one planned start.
    let series = j["series"].as_array().unwrap();
    for s in series {
        let k = s["second"].as_i64().unwrap();
        let parts: u64 = clients
            .iter()
            .map(|c| {
                c["series"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|x| x["second"].as_i64() == Some(k))
                    .map(|x| x["requests"].as_u64().unwrap())
                    .sum::<u64>()
            })
            .sum();
        assert_eq!(s["requests"].as_u64().unwrap(), parts, "second {k}");
    }
    // The window's answers are in its seconds, and in the drain for the
    // requests still outstanding as it closed.
    let per_second: u64 = series
        .iter()
        .filter(|s| s["phase"] != "warmup")
        .map(|s| s["requests"].as_u64().unwrap())
        .sum();
    // Answers to requests in flight at the end land in the drain interval.
    assert_eq!(per_second, sum);
    // Merged percentiles can only be between the parts' extremes.
    let p50s: Vec<u64> = clients
        .iter()
        .map(|c| c["latency_us"]["p50"].as_u64().unwrap())
        .collect();
    let p50 = j["latency_us"]["p50"].as_u64().unwrap();
    assert!(p50 >= *p50s.iter().min().unwrap() && p50 <= *p50s.iter().max().unwrap());
}

#[test]
fn local_generators_share_one_request_count_as_one_schedule() {
    let _serial = serial();
    let hello = Hello::start();
    // Five slots at 10/s over two generators: half a second, after a
    // warm-up that begins the measurement on generator 1's slot. Each
    // generator counting its own 3 + 2 ended the window at its next slot
    // (0.6 s: "5 answered in 0.60 s = 8.3 req/s").
    let url = hello.url();
    let args = [
        "load",
        &url,
        "--clients",
        "2",
        "-c",
        "2",
        "-R",
        "10",
        "-n",
        "5",
    ];
    let out = command()
        .args(args)
        .args(["--warmup", "50ms", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let j = json(&out);
    assert_eq!(j["requests"], 5, "{j}");
    assert_eq!(j["duration_s"], 0.5, "{j}");
    assert_eq!(j["rps"], 10.0, "{j}");
    let parts: Vec<u64> = (j["clients"].as_array().unwrap().iter())
        .map(|c| c["requests"].as_u64().unwrap())
        .collect();
    assert_eq!(
        parts,
        [2, 3],
        "generator 0 owns slots 2 and 4, 1 owns 1, 3, 5"
    );
}
