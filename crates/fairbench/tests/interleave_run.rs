//! `fairbench run --interleave case`: cases of a repetition in a seeded
//! shuffle rotated each repetition, the seed stored with the run; dry runs
//! show the order, the same seed gives the same order, and a real run
//! stores its cases in that order.

mod support;

use std::collections::BTreeMap;

use support::root::Root;
use support::{serial, stderr, stdout, text};

const SUITE: &str = r#"
name = "three"
servers = ["*"]
responses = ["normalized"]
scenarios = ["static"]
cores = [1]
warmup = "1s"
duration = "2s"
repetitions = 3
[[load]]
model = "closed"
connections = 2
threads = 1
"#;

/// The server of every planned case, per repetition, from a dry run.
fn plan_order(out: &str) -> BTreeMap<usize, Vec<String>> {
    let mut by_rep: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for line in out.lines() {
        let Some((label, _)) = line.trim_start().split_once("  (") else {
            continue;
        };
        let Some((_, rest)) = label.trim_start().split_once("  ") else {
            continue;
        };
        let Some((_, rep)) = rest.rsplit_once(" #") else {
            continue;
        };
        let server = rest.split_whitespace().next().unwrap().to_string();
        by_rep.entry(rep.parse().unwrap()).or_default().push(server);
    }
    by_rep
}

fn root() -> Root {
    let r = Root::new(&[("srv-a", &[]), ("srv-b", &[]), ("srv-c", &[])]);
    r.suite("three", SUITE);
    r
}

#[test]
fn dry_runs_show_a_rotated_shuffle_reproducible_from_its_seed() {
    let root = root();
    let dry = |extra: &[&str]| {
        let mut args = vec!["run", "--suite", "three", "--dry-run"];
        args.extend_from_slice(extra);
        let o = root.run(&args);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        stdout(&o)
    };
    let plain = plan_order(&dry(&[]));
    assert_eq!(plain.len(), 3);
    for servers in plain.values() {
        assert_eq!(servers, &["srv-a", "srv-b", "srv-c"], "matrix order");
    }

    let out = dry(&["--interleave", "case", "--interleave-seed", "7"]);
    assert!(
        out.contains("order: cases shuffled with seed 7 and rotated one place each repetition"),
        "{out}"
    );
    let seven = plan_order(&out);
    assert_eq!(
        plan_order(&dry(&["--interleave", "case", "--interleave-seed", "7"])),
        seven
    );
    // Each repetition is the previous one rotated by one place: over three
    // repetitions every server runs first, second and third once.
    for rep in 2..=3 {
        let mut prev = seven[&(rep - 1)].clone();
        prev.rotate_left(1);
        assert_eq!(seven[&rep], prev, "repetition {rep}");
    }
    for pos in 0..3 {
        let mut at: Vec<&String> = seven.values().map(|v| &v[pos]).collect();
        at.sort();
        assert_eq!(at, ["srv-a", "srv-b", "srv-c"], "position {pos}");
    }
    // Other seeds give other shuffles (3 servers: 3 rotations of 2 cycles).
    let firsts: std::collections::BTreeSet<Vec<String>> = (1..=12)
        .map(|s| {
            plan_order(&dry(&[
                "--interleave",
                "case",
                "--interleave-seed",
                &s.to_string(),
            ]))[&1]
                .clone()
        })
        .collect();
    assert!(firsts.len() > 1, "{firsts:?}");

    // `--interleave repetition` keeps matrix order even if the suite interleaves.
    root.suite(
        "inter",
        &SUITE.replace(
            "name = \"three\"",
            "name = \"inter\"\ninterleave = \"case\"",
        ),
    );
    let o = root.run(&["run", "--suite", "inter", "--dry-run"]);
    let out = stdout(&o);
    assert!(
        out.contains("order: cases shuffled with seed "),
        "a seed is drawn: {out}"
    );
    let o = root.run(&[
        "run",
        "--suite",
        "inter",
        "--dry-run",
        "--interleave",
        "repetition",
    ]);
    for servers in plan_order(&stdout(&o)).values() {
        assert_eq!(servers, &["srv-a", "srv-b", "srv-c"]);
    }
}

#[test]
fn bad_interleave_flags_are_usage_errors() {
    let root = root();
    for (args, needle) in [
        (
            vec![
                "run",
                "--suite",
                "three",
                "--interleave-seed",
                "5",
                "--dry-run",
            ],
            "--interleave-seed: only --interleave case shuffles",
        ),
        (
            vec!["run", "--suite", "three", "--interleave", "random"],
            "invalid value 'random' for '--interleave <ORDER>'",
        ),
        (
            vec!["run", "--resume", "1", "--interleave", "case"],
            "cannot be used with",
        ),
        (
            vec![
                "run",
                "--suite",
                "three",
                "--interleave",
                "case",
                "--interleave-seed",
                "9223372036854775808",
                "--dry-run",
            ],
            "--interleave-seed 9223372036854775808: must be below 2^63",
        ),
    ] {
        let o = root.run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn a_real_run_stores_its_seed_and_runs_cases_in_that_order() {
    let _serial = serial();
    let root = Root::new(&[("srv-a", &[]), ("srv-b", &[])]);
    root.suite("two", &SUITE.replace("repetitions = 3", "repetitions = 2"));
    let o = root.run(&[
        "run",
        "--suite",
        "two",
        "--quiet",
        "--interleave",
        "case",
        "--interleave-seed",
        "3",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    root.assert_no_servers_left();
    let suite: String = root.sql("SELECT suite_toml FROM runs");
    assert!(suite.contains("interleave = \"case\""), "{suite}");
    assert!(suite.contains("interleave_seed = 3"), "{suite}");
    // Stored in run order (seq: the runner works through the plan in
    // order); with two cases the two repetitions mirror each other.
    let by_seq =
        root.rows("SELECT repetition, server FROM cases WHERE state = 'done' ORDER BY seq");
    assert_eq!(by_seq.len(), 4);
    assert_eq!(by_seq[0][0], "1");
    assert_eq!(by_seq[2][0], "2");
    assert_eq!(
        (&by_seq[0][1], &by_seq[1][1]),
        (&by_seq[3][1], &by_seq[2][1])
    );
    // The report says how the cases were ordered.
    let md = stdout(&root.run(&["report", "--format", "md"]));
    assert!(
        md.contains("| order | repetitions outermost; cases shuffled (seed 3) and rotated one place each repetition |"),
        "{md}"
    );
    // The run's closing table has the ratio column; no go-nethttp here, so
    // it says why it is empty.
    let out = stdout(&o);
    assert!(out.contains("relative to go-nethttp"), "{out}");
    assert!(out.contains("no go-nethttp case, so no ratios"), "{out}");
}
