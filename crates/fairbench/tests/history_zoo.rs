//! Issue 43 end to end: real stored runs of a zoo test server across two
//! commits of the zoo's root, the second adding a 50 ms per-request sleep
//! to the server's command. `history --order revision --repo ROOT` must
//! find the one change, between the two commits, for the worse;
//! `--fail-on-change` must fail when the slow commit's first run is the
//! newest, and not again once the change is older news.
//!
//! Five runs of the fast commit, and a 50 ms sleep. A series shorter
//! than four points is not tested (docs/history.md) and the gate needs
//! the change at the newest point, so fast ×3, slow is the shortest
//! series where it can fire; but at four points the search's threshold
//! is F > ~277, which one fast run whose p50 a busy machine moved by a
//! few milliseconds (a Python server held to one CPU) keeps it under: on
//! CI the gate once did not fire at four points. At six points the threshold is ~54 (docs/history.md) and
//! the step from ~0.3 ms to ~100 ms (the sleep blocks the server's only
//! thread, so with two connections the slow p50 is about twice it)
//! stays over it unless a fast run's p50 strays by ~25 ms.

mod support;

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use support::root::Root;
use support::{serial, text};

const SERVER: &str = "step";

/// Runs of the fast commit before the slow one (see the top).
const FAST_RUNS: usize = 5;

/// One case, as short as a p50 can be read from: a blocking sleep moves
/// every answer's latency, so one second of a closed loop shows it.
const SUITE: &str = r#"
name = "step"
servers = ["step"]
responses = ["normalized"]
scenarios = ["static"]
cores = [1]
warmup = "0s"
duration = "1s"
repetitions = 1
[[load]]
model = "closed"
connections = 2
threads = 1
"#;

/// git in `dir`, with an identity and no signing of its own (the
/// machine's global configuration is not the test's); its stdout.
fn git(dir: &Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=fairbench test",
            "-c",
            "user.email=test@example.invalid",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .output()
        .expect("run git");
    assert!(o.status.success(), "git {args:?}: {}", text(&o));
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// Commits every change to a tracked file as `message` (what a run leaves
/// in the root stays untracked); the new commit's full hash.
fn commit(dir: &Path, message: &str) -> String {
    git(dir, &["commit", "--quiet", "--all", "-m", message]);
    git(dir, &["rev-parse", "HEAD"])
}

/// One run of the suite; it must finish.
fn measure(root: &Root) {
    let out = root.run(&["run", "--suite", "step", "--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

/// `fairbench history` on the root's database along the root's commits:
/// (exit code, stdout, stderr).
fn history(root: &Root, extra: &[&str]) -> (Option<i32>, String, String) {
    let repo = root.path().display().to_string();
    let db = root.db().display().to_string();
    let mut args = vec![
        "history",
        "--db",
        &db,
        "--order",
        "revision",
        "--repo",
        &repo,
        "--metric",
        "p50",
        // The step is ~0.3 ms → ~100 ms; a loaded machine's noise is far
        // below a doubling.
        "--min-change",
        "100",
    ];
    args.extend_from_slice(extra);
    let o = root.run(&args);
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Adds `--delay-ms 50` to the server's command in its manifest.
fn add_sleep(root: &Root) {
    let p = root.path().join("servers").join(SERVER).join("server.toml");
    let manifest = std::fs::read_to_string(&p).unwrap();
    let slow = manifest.replacen(r#""120"]"#, r#""120", "--delay-ms", "50"]"#, 1);
    assert_ne!(
        slow, manifest,
        "the command line was not found:\n{manifest}"
    );
    std::fs::write(p, slow).unwrap();
}

#[test]
fn a_sleep_added_in_a_commit_is_found_at_that_commit_and_fails_the_gate_once() {
    let _serial = serial();
    let root = Root::new(&[(SERVER, &[])]);
    root.suite("step", SUITE);
    git(root.path(), &["init", "--quiet"]);
    git(root.path(), &["add", "--all"]);
    let fast = commit(root.path(), "fast server");
    for _ in 0..FAST_RUNS {
        measure(&root);
    }
    add_sleep(&root);
    let slow = commit(root.path(), "server sleeps 50 ms per request");
    measure(&root);
    // What `run` recorded: the checkout's commit, clean (results.db and
    // whatever else a run leaves are untracked).
    let revisions = root.strings("SELECT git_revision FROM runs ORDER BY id");
    let mut expected = vec![&fast[..12]; FAST_RUNS];
    expected.push(&slow[..12]);
    assert_eq!(revisions, expected, "runs.git_revision");

    // The newest commit's run starts a change for the worse: the gate.
    let (code, out, err) = history(&root, &["--fail-on-change"]);
    if code != Some(97) {
        // The medians the search saw: what a failure here needs to say.
        let (_, json, _) = history(&root, &["--format", "json"]);
        panic!("exit {code:?}, not 97\nstdout:\n{out}\nstderr:\n{err}\njson:\n{json}");
    }
    assert!(
        err.contains("changed for the worse at the newest run"),
        "{err}"
    );
    // The summary line names the commits on either side.
    let line = out
        .lines()
        .find(|l| l.contains(SERVER))
        .unwrap_or_else(|| panic!("no line for the case:\n{out}"));
    assert!(
        line.contains(&format!("{} → {}", &fast[..12], &slow[..12])) && line.contains("worse"),
        "{line}"
    );

    measure(&root);
    let (code, out, err) = history(&root, &["--format", "json"]);
    assert_eq!(code, Some(0), "{err}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    support::assert_schema("history", &v);
    assert_eq!(v["order"], "revision");
    assert_eq!(v["warnings"].as_array().map(Vec::len), Some(0), "{v}");
    let cases = v["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 1, "{v}");
    let case = &cases[0];
    let runs: Vec<i64> = case["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["run"].as_i64().unwrap())
        .collect();
    assert_eq!(
        runs,
        (1..=FAST_RUNS as i64 + 2).collect::<Vec<_>>(),
        "{case}"
    );
    let changes = case["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "exactly one change: {case}");
    let c = &changes[0];
    let n = FAST_RUNS as i64;
    assert_eq!(c["index"], n, "{c}");
    assert_eq!(
        (c["run_before"].as_i64(), c["run_after"].as_i64()),
        (Some(n), Some(n + 1))
    );
    assert_eq!(c["revision_before"], &fast[..12], "{c}");
    assert_eq!(c["revision_after"], &slow[..12], "{c}");
    assert_eq!(c["direction"], "worse", "{c}");
    let (before, after) = (
        c["median_before"].as_f64().unwrap(),
        c["median_after"].as_f64().unwrap(),
    );
    assert!(
        after > 2.0 * before && after >= 50_000.0,
        "p50 (µs) {before} → {after}"
    );
    // The manifest changed, so the server's source key did too.
    assert_ne!(c["source_before"], c["source_after"], "{c}");

    // Not news any more: the change began before the newest run.
    let (code, _, err) = history(&root, &["--fail-on-change"]);
    assert_eq!(code, Some(0), "{err}");
    root.assert_no_servers_left();
}
