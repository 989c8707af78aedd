//! `fairbench run` of a suite asking for a precision instead of a count
//! (`repetitions = "until ±3 % or 6"`), end to end against deterministic
//! Python test servers: a clear difference stops at the first look, a
//! ratio that cannot settle runs to the maximum, the stop is stored,
//! printed and shown, an interrupted run resumes under the same rule, a
//! bad form is one line, and a dry run estimates both ends. The rule's
//! coverage is measured by the simulation in `runner::stopping`, which the
//! suite's looks share with `load --vs`.

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use support::root::Root;
use support::{repo, serial, text};

/// Two servers against the first (the reference), 1 s cases.
fn suite(name: &str, repetitions: &str) -> String {
    format!(
        r#"
name = "{name}"
reference = "ref"
responses = ["normalized"]
scenarios = ["static"]
cores = [1]
duration = "1s"
repetitions = {repetitions}
[[load]]
model = "closed"
connections = 4
threads = 1
"#
    )
}

/// A reference answering after 2 ms and a server answering after 20 ms:
/// about ten times apart, run after run.
fn apart() -> Root {
    Root::new(&[
        ("ref", &["--delay-ms", "2"]),
        ("slow", &["--delay-ms", "20"]),
    ])
}

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stopped_json(root: &Root) -> serde_json::Value {
    serde_json::from_str(&root.sql::<String>("SELECT stopped_json FROM runs")).unwrap()
}

/// The repetition a run stopped at, after checking the properties every
/// stop by settling has: before the maximum, every ratio settled, every
/// case of the repetitions run stored done or failed (a machine shared
/// with builds may starve a case of every answer), none left pending.
fn settled_stop(root: &Root, max: u64) -> u64 {
    let j = stopped_json(root);
    let k = j["repetitions"].as_u64().unwrap();
    assert!(k < max && j["settled"] == true, "{j}");
    assert_eq!(j["max"].as_u64(), Some(max));
    assert!(
        j["looks"].as_array().unwrap().contains(&k.into()),
        "a stop is at a look: {j}"
    );
    assert_eq!(root.sql::<i64>("SELECT count(*) FROM cases") as u64, 2 * k);
    assert_eq!(
        root.sql::<i64>("SELECT count(*) FROM cases WHERE state IN ('done', 'failed')") as u64,
        2 * k
    );
    assert_eq!(
        root.sql::<i64>("SELECT planned_cases FROM runs") as u64,
        2 * k
    );
    assert_eq!(root.sql::<String>("SELECT state FROM runs"), "done");
    k
}

#[test]
fn a_clear_difference_stops_before_the_maximum_and_the_stop_is_stored_and_shown() {
    let _serial = serial();
    let root = apart();
    root.suite("apart", &suite("apart", "\"until ±3 % or 8\""));
    let out = root.run(&["run", "--suite", "apart", "--quiet"]);
    // 1: a case failed (no answer at all on a starved machine); the
    // ratio pairs the repetitions both finished.
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
    root.assert_no_servers_left();
    let k = settled_stop(&root, 8);
    let printed = stdout(&out);
    assert!(
        printed.contains(&format!(
            "adaptive: stopped at repetition {k} of max 8 (every ratio within ±3 % or its verdict settled"
        )),
        "{printed}"
    );
    assert!(
        printed.contains("a fixed design needed ~")
            && printed.contains(" of machine time against "),
        "{printed}"
    );
    // The ratio at the level the stop holds for (4 looks: 98.75 %).
    let line = printed
        .lines()
        .find(|l| l.contains("slow native/normalized vs ref native/normalized"))
        .unwrap_or_else(|| panic!("{printed}"));
    assert!(line.ends_with("at 98.75 %"), "{line}");
    let j = stopped_json(&root);
    assert_eq!(j["looks"], serde_json::json!([3, 4, 6, 8]));
    let fixed = j["fixed_design"]["repetitions"].as_u64().unwrap();
    assert!((2..=k).contains(&fixed), "{j}");
    let show = root.run(&["show"]);
    assert_eq!(show.status.code(), Some(0), "{}", text(&show));
    assert!(
        stdout(&show).contains(&format!("adaptive: stopped at repetition {k} of max 8")),
        "{}",
        text(&show)
    );
}

/// A server whose delay changes at every start (`--delays` in turn,
/// counted in `--counter`): identical code whose ratio to the reference
/// swings by 2× from run to run, so that no precision is reached.
const SWINGING: &str = r#"
import os, sys
args = sys.argv[1:]
def take(flag):
    i = args.index(flag)
    v = args[i + 1]
    del args[i:i + 2]
    return v
py, delays, counter = take("--pyserver"), take("--delays").split(","), take("--counter")
n = int(open(counter).read()) if os.path.exists(counter) else 0
open(counter, "w").write(str(n + 1))
os.execvp(sys.executable, [sys.executable, py] + args + ["--delay-ms", delays[n % len(delays)]])
"#;

#[test]
fn a_ratio_that_cannot_settle_runs_to_the_maximum_and_says_so() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("swinging.py");
    std::fs::write(&script, SWINGING).unwrap();
    let py = repo().join("tests/fixtures/pyserver.py");
    let py = py.to_str().unwrap();
    let counter = |n: &str| tmp.path().join(n).to_str().unwrap().to_string();
    let (ca, cb) = (counter("ref.count"), counter("twin.count"));
    let root = Root::with_script(
        &script,
        &[
            (
                "ref",
                &["--pyserver", py, "--delays", "10", "--counter", &ca],
            ),
            (
                "twin",
                &["--pyserver", py, "--delays", "10,5,20", "--counter", &cb],
            ),
        ],
    );
    root.suite("swing", &suite("swing", "\"until:3%,max:4\""));
    let out = root.run(&["run", "--suite", "swing", "--quiet"]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
    root.assert_no_servers_left();
    let printed = stdout(&out);
    assert!(
        printed.contains(
            "adaptive: stopped at repetition 4 of max 4 (max reached: not every ratio within ±3 %"
        ),
        "{printed}"
    );
    assert_eq!(
        root.sql::<i64>("SELECT count(*) FROM cases WHERE state IN ('done', 'failed')"),
        8
    );
    assert_eq!(root.sql::<i64>("SELECT planned_cases FROM runs"), 8);
    assert_eq!(stopped_json(&root)["settled"], false);
}

#[test]
fn bad_repetitions_are_one_line_naming_the_field_or_the_flag() {
    let root = apart();
    root.suite("bad", &suite("bad", "\"until:3\""));
    let out = root.run(&["run", "--suite", "bad", "--dry-run"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("field repetitions") && err.contains("expected"),
        "{err}"
    );
    root.suite("ok", &suite("ok", "3"));
    for bad in ["until:x%", "until ±3 % or 1", "zero"] {
        let out = root.run(&["run", "--suite", "ok", "--dry-run", "--repetitions", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains("--repetitions"), "{err}");
    }
}

#[test]
fn a_dry_run_estimates_the_first_look_and_the_maximum() {
    let root = apart();
    root.suite("apart", &suite("apart", "\"until ±3 % or 6\""));
    let out = root.run(&["run", "--suite", "apart", "--dry-run"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let plan = stdout(&out);
    assert!(plan.contains("repetitions: until:3%,max:6"), "{plan}");
    assert!(plan.contains("up to 12 cases, 0 sweeps"), "{plan}");
    assert!(
        plan.contains("if every ratio settles at the first look (repetition 3) to ")
            && plan.contains(" at the maximum (6 repetitions)"),
        "{plan}"
    );
    assert!(!root.db().exists(), "a dry run stores nothing");
    // The flag overrides the suite's count with a precision.
    root.suite("fixed", &suite("fixed", "2"));
    let out = root.run(&[
        "run",
        "--suite",
        "fixed",
        "--dry-run",
        "--repetitions",
        "until:5%,max:4",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(stdout(&out).contains("up to 8 cases"), "{}", text(&out));
}

/// Waits (bounded) until `n` cases of the run are done.
fn wait_done(db: &Path, n: i64) {
    let t = Instant::now();
    loop {
        assert!(t.elapsed() < Duration::from_secs(60), "no case finished");
        let done = db.exists()
            && rusqlite::Connection::open(db)
                .and_then(|c| {
                    c.query_row("SELECT count(*) FROM cases WHERE state = 'done'", [], |r| {
                        r.get::<_, i64>(0)
                    })
                })
                .unwrap_or(0)
                >= n;
        if done {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn an_interrupted_adaptive_run_resumes_under_the_same_rule() {
    let _serial = serial();
    let root = apart();
    root.suite("apart", &suite("apart", "\"until:3%,max:8\""));
    let child = root
        .fairbench()
        .args(["run", "--suite", "apart", "--quiet"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_done(&root.db(), 1);
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    root.assert_no_servers_left();
    assert_eq!(root.sql::<String>("SELECT state FROM runs"), "interrupted");
    assert!(
        root.sql::<Option<String>>("SELECT stopped_json FROM runs")
            .is_none(),
        "an interrupted run has not stopped by the rule"
    );
    let pending: i64 = root.sql("SELECT count(*) FROM cases WHERE state = 'pending'");
    assert!(pending >= 5, "the whole plan waits: {pending} pending");

    let out = root.run(&["run", "--resume", "1", "--quiet"]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
    root.assert_no_servers_left();
    let k = settled_stop(&root, 8);
    assert!(
        stdout(&out).contains(&format!(
            "adaptive: stopped at repetition {k} of max 8 (every ratio"
        )),
        "{}",
        text(&out)
    );
    assert_eq!(root.sql::<i64>("SELECT count(*) FROM runs"), 1);
}
