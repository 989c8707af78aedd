//! Values that used to crash fairbench or silently change what it measures
//! (issue 27): each is refused up front, exit 2, with one line naming the
//! flag or field — on the command line and in suite files alike, with and
//! without `--dry-run`, and before a run row is written.

mod support;

use support::root::Root;
use support::{command, text};

/// Asserts exit 2, one line on stderr containing `needle`, no panic.
fn refused(o: &std::process::Output, needle: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{needle}: {}", text(o));
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {}", text(o));
    assert!(err.contains(needle), "{needle:?} not in: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

const URL: &str = "http://127.0.0.1:1/";

#[test]
fn load_values_past_their_bounds_are_refused_before_anything_is_allocated() {
    for (args, needle) in [
        (
            &["-c", "9223372036854775807"][..],
            "--connections <CONNECTIONS>': 9223372036854775807 is more than the most allowed, 1000000",
        ),
        (&["-c", "10G"][..], "--connections"),
        (&["-c", "18446744073709551615"][..], "--connections"),
        (&["-t", "1M"][..], "--threads"),
        (&["--pipeline", "1G"][..], "--pipeline"),
        (&["--clients", "1G"][..], "--clients"),
        (&["-R", "1G"][..], "--rate: more than 100,000,000"),
        (&["--expect-status", "999"][..], "--expect-status"),
        (&["--expect-status", "6xx"][..], "--expect-status"),
    ] {
        let o = command()
            .arg("load")
            .args(args)
            .arg(URL)
            .output()
            .unwrap();
        refused(&o, needle);
    }
}

/// The open-file limit bounds the connections of each generator: a child
/// with a limit of 256 may not open 1000, nor 400 over one generator, but
/// may over two.
#[test]
fn the_open_file_limit_bounds_connections() {
    let bin = support::bin();
    let sh = |args: &str| {
        std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("ulimit -n 256 && exec {bin} {args}"))
            .env("FAIRBENCH_LOCK", support::own_lock())
            .output()
            .unwrap()
    };
    let o = sh(&format!("load -c 1000 {URL}"));
    refused(&o, "--connections: 1000 connections need more open files");
    assert!(String::from_utf8_lossy(&o.stderr).contains("the limit is 256"));
    refused(&sh(&format!("load -c 300 {URL}")), "limit is 256");
    refused(
        &sh(&format!("load -c 400 --clients 2 {URL}")),
        "(200 for each of 2 load generators)",
    );
    // Split over two generators, each needs 150: it gets as far as the
    // (closed) port, which is not a usage error.
    let o = sh(&format!("load -c 300 --clients 2 -d 1s {URL}"));
    assert_ne!(o.status.code(), Some(2), "{}", text(&o));
}

const SUITE: &str = r#"
name = "t"
servers = ["*"]
responses = ["normalized"]
scenarios = ["static"]
cores = [1]
duration = "1s"
repetitions = 1
[[load]]
model = "closed"
connections = 4
"#;

/// Every refusal happens with and without `--dry-run`, and no run row (no
/// database) is written.
fn refused_both_ways(root: &Root, args: &[&str], needle: &str) {
    for dry in [true, false] {
        let mut a = args.to_vec();
        if dry {
            a.push("--dry-run");
        }
        refused(&root.run(&a), needle);
        assert!(!root.db().exists(), "{a:?} wrote a database");
    }
}

#[test]
fn run_flags_and_suite_values_are_checked_alike_before_a_run_row() {
    let root = Root::new(&[("fast-a", &[])]);
    root.suite("t", SUITE);
    let run = |extra: &[&'static str]| {
        let mut a = vec!["run", "--suite", "t"];
        a.extend_from_slice(extra);
        a
    };
    for (extra, needle) in [
        (
            &["--connections", "9223372036854775807"][..],
            "--connections <N>': 9223372036854775807 is more than",
        ),
        (
            &["--connections", "18446744073709551615"][..],
            "18446744073709551615 is more than",
        ),
        (&["--repetitions", "1G"][..], "--repetitions"),
        (&["--threads", "1G"][..], "--threads"),
        (&["--pipeline", "2000"][..], "--pipeline"),
        (&["--rate", "1G"][..], "field load[0].rate"),
        (&["--warmup", "40days"][..], "--warmup"),
        (&["--timeout", "2h"][..], "field timeout"),
        (
            &["--link-rate", "100mbit"][..],
            "--link-rate and --link-delay",
        ),
    ] {
        let mut a = run(extra);
        if !matches!(
            extra[0],
            "--rate" | "--timeout" | "--link-rate" | "--report"
        ) {
            // Refused by clap before anything: only once.
            a.push("--dry-run");
            refused(&root.run(&a), needle);
        } else {
            refused_both_ways(&root, &a, needle);
        }
    }
    let files: [(&str, String, &str); 8] = [
        (
            "sweep",
            SUITE.replace(
                "model = \"closed\"",
                "model = \"sweep\"\nstart_rate = 1e-300\nmax_rate = 1000",
            ),
            "field load[0].start_rate",
        ),
        (
            "slow",
            SUITE.replace(
                "model = \"closed\"",
                "model = \"sweep\"\nstart_rate = 1\nmax_rate = 1000\nstep_factor = 1.0000001",
            ),
            "field load[0].step_factor",
        ),
        (
            "pipe0",
            SUITE.replace("connections = 4", "connections = 4\npipeline = 0"),
            "field load[0].pipeline: must be at least 1",
        ),
        (
            "reps",
            SUITE.replace("repetitions = 1", "repetitions = 1000000000"),
            "field repetitions",
        ),
        (
            "huge",
            SUITE.replace("connections = 4", "connections = 9223372036854775807"),
            "field load[0].connections",
        ),
        (
            "ref",
            format!("reference = \"fast-x\"\n{SUITE}"),
            "field reference: \"fast-x\": no server named",
        ),
        (
            "aa",
            format!("aa = [\"fast-a/jit/default\"]\n{SUITE}"),
            "field aa: \"fast-a/jit/default\": fast-a has no mode \"jit\"",
        ),
        (
            "aaresp",
            format!("aa = [\"fast-a/native/fast\"]\n{SUITE}"),
            "field aa",
        ),
    ];
    for (name, body, needle) in files {
        root.suite(
            name,
            &body.replace("name = \"t\"", &format!("name = \"{name}\"")),
        );
        refused_both_ways(&root, &["run", "--suite", name], needle);
    }
    // A plan with nothing runnable (more cores than the machine's) is
    // refused by a dry run as by a real one, after saying what was skipped.
    let many = (std::thread::available_parallelism().unwrap().get() + 1).to_string();
    for dry in [true, false] {
        let mut a = vec!["run", "--suite", "t", "--cores", many.as_str()];
        if dry {
            a.push("--dry-run");
        }
        let o = root.run(&a);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        assert!(
            err.contains(&format!("skipped cores = {many}")) && err.contains("nothing to run"),
            "{err}"
        );
        assert!(!root.db().exists());
    }
    // The matrix's size is checked before it is built: 1000 repetitions of
    // 101 load profiles.
    let mut big = SUITE.replace("repetitions = 1", "repetitions = 1000");
    for c in 5..106 {
        big.push_str(&format!(
            "[[load]]\nmodel = \"closed\"\nconnections = {c}\n"
        ));
    }
    root.suite("big", &big.replace("name = \"t\"", "name = \"big\""));
    refused_both_ways(&root, &["run", "--suite", "big"], "more than 100000 cases");
}

#[test]
fn check_refuses_a_reference_or_cores_that_would_change_what_it_checks() {
    let root = Root::new(&[("fast-a", &[])]);
    let o = root.run(&["check", "--reference", "fast-x"]);
    refused(
        &o,
        "--reference fast-x: no server has that name; there are: fast-a",
    );
    let cpus = std::thread::available_parallelism().unwrap().get();
    let too_many = (cpus + 1).to_string();
    let o = root.run(&["check", "--cores", &too_many]);
    refused(
        &o,
        &format!("--cores {too_many}: this machine lets fairbench use {cpus} CPUs"),
    );
}

#[test]
fn negative_values_reach_the_flags_own_message() {
    for (args, needle) in [
        (
            &["load", "-c", "-1", URL][..],
            "--connections <CONNECTIONS>': \"-1\" is negative",
        ),
        (
            &["load", "-R", "-5", URL][..],
            "--rate <RATE>': \"-5\" is negative",
        ),
        (
            &["load", "-d", "-1s", URL][..],
            "-d -1s: a value below zero is not accepted",
        ),
        (
            &["run", "--duration", "-5s"][..],
            "--duration -5s: a value below zero",
        ),
        (
            &["check", "--cores", "-2"][..],
            "--cores <N>': \"-2\" is negative",
        ),
    ] {
        let o = command().args(args).output().unwrap();
        refused(&o, needle);
        assert!(
            !String::from_utf8_lossy(&o.stderr).contains("'-- -"),
            "{}",
            text(&o)
        );
    }
}

#[test]
fn a_broken_scenario_says_what_is_broken_and_regex_errors_fit_one_line() {
    let root = Root::new(&[("fast-a", &[])]);
    let scenarios = root.path().join("scenarios");
    std::fs::write(
        scenarios.join("broken.toml"),
        "name = \"broken\"\nmethod = [\n",
    )
    .unwrap();
    let o = root.run(&["check", "--scenarios", "broken"]);
    refused(
        &o,
        "--scenarios: scenario broken is broken: scenarios/broken.toml",
    );
    root.suite("b", &SUITE.replace("[\"static\"]", "[\"broken\"]"));
    refused_both_ways(
        &root,
        &["run", "--suite", "b"],
        "names a broken scenario: scenarios/broken.toml",
    );

    std::fs::remove_file(scenarios.join("broken.toml")).unwrap();
    let regex = std::fs::read_to_string(scenarios.join("static.toml"))
        .unwrap()
        .replace("name = \"static\"", "name = \"regex\"")
        .replace(
            "body = \"Hello World!\\n\"",
            "body_regex = \"Hello (World\"",
        );
    std::fs::write(scenarios.join("regex.toml"), regex).unwrap();
    let o = root.run(&["check", "--scenarios", "regex"]);
    let err = String::from_utf8_lossy(&o.stderr);
    let line = err
        .lines()
        .find(|l| l.contains("body_regex"))
        .unwrap_or_else(|| panic!("{}", text(&o)));
    assert!(
        line.ends_with("expected a regular expression: unclosed group (at character 7)"),
        "{line}"
    );
}
