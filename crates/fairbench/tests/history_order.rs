//! `fairbench history --order revision --repo DIR`, `fairbench history
//! --order version` and `fairbench history --within RUN --window 30s` on
//! databases written here with the store's own writer: runs whose dates
//! disagree with their commits (a git repository made by the test), runs
//! that declare versions 1.9 and 1.10, and long runs whose per-second
//! series steps. The change must be found at the right revision, version
//! and window; points that cannot be placed are kept and counted; flags
//! used wrongly are one-line usage errors.

mod support;

use std::path::Path;
use std::process::Command;

use fairbench::store::{CaseFigures, NewRun, PlannedCase, SampleRow, Store, Versions};
use fairbench_engine::histogram::new_histogram;
use fairbench_engine::{ErrorCounts, LatencySummary};
use serde_json::Value;
use support::load::{json, run};

const CLOSED: &str = r#"{"model":"closed","connections":50,"threads":1,"rate":null,"pipeline":1,"duration_s":10.0,"warmup_s":3.0,"timeout_s":2.0}"#;

/// One second of a stored per-second series.
fn second(i: i64, rps: f64, rss_mib: u64, phase: &str) -> SampleRow {
    SampleRow {
        second: i,
        phase: phase.into(),
        start_s: (i + 3) as f64,
        duration_s: 1.0,
        requests: rps.round() as u64,
        errors: 0,
        bytes: 0,
        p50_us: 200,
        p99_us: 900,
        interval_hist: None,
        server_cpu: Some(0.5),
        server_rss: Some(rss_mib << 20),
        server_threads: None,
    }
}

/// A finished repetition at `rps` req/s with its per-second series.
fn figures(rps: f64, samples: Vec<SampleRow>) -> CaseFigures {
    let mut h = new_histogram();
    for i in 0..100u64 {
        h.record(200 + i * 7).unwrap();
    }
    let requests = (rps * 10.0) as u64;
    CaseFigures {
        planned: requests,
        outcome_requests: requests,
        throughput_answers: requests,
        duration_s: 10.0,
        rps,
        rps_stdev: 0.0,
        rps_max: rps,
        bytes_read: 0,
        errors: ErrorCounts::default(),
        timeouts_per_million: 0.0,
        latency_summary: LatencySummary::of(&h),
        unc_p50: 200,
        unc_p99: 900,
        lateness_p99: None,
        generator_cpu_s: 1.0,
        generator_busy: 0.1,
        saturated: false,
        generator_limited: false,
        connect_local: 0,
        server_cpu_s: Some(1.0),
        server_rss_peak: Some(64 << 20),
        server_rss_mean: Some(64 << 20),
        server_threads_max: None,
        steal_fraction: None,
        server_group_cpu_s: None,
        server_group_memory_peak: None,
        generator_containment: None,
        generator_cpuset: None,
        db: None,
        thread_req_sec: None,
        late_answers: 0,
        body_sizes: Default::default(),
        body_unlike: None,
        wrk: None,
        server_cores_peak: None,
        http3: None,
        warnings: Vec::new(),
        answered: h.clone(),
        uncorrected: h.clone(),
        latency: h,
        lateness: None,
        samples,
    }
}

/// What one stored run is: when, at which revision, declaring which
/// version, and its repetitions (each a req/s and a per-second series).
struct Stored<'a> {
    started: String,
    revision: Option<&'a str>,
    declared: Option<&'a str>,
    repetitions: Vec<(f64, Vec<SampleRow>)>,
}

/// Three repetitions ±1 % around `rps`, no per-second series.
fn reps(rps: f64) -> Vec<(f64, Vec<SampleRow>)> {
    [0.99, 1.0, 1.01]
        .iter()
        .map(|f| (rps * f, Vec::new()))
        .collect()
}

/// Stores one run of the case `api native/default static 1 core closed`;
/// returns its id.
fn store_run(db: &Path, r: Stored) -> i64 {
    let mut store = Store::open(db).unwrap();
    let plan: Vec<PlannedCase> = (0..r.repetitions.len())
        .map(|i| PlannedCase {
            seq: i,
            server: "api".into(),
            language: "rust".into(),
            framework: "axum".into(),
            mode: "native".into(),
            response: "default".into(),
            variant_params_json: "{}".into(),
            scenario: "static".into(),
            cores: 1,
            cores_requested: "1".into(),
            load_label: "closed c=50 t=1".into(),
            load_json: CLOSED.into(),
            sweep: None,
            repetition: i + 1,
            protocol: "http/1.1".into(),
            step: None,
        })
        .collect();
    let id = store
        .create_run(&NewRun {
            started_at: r.started,
            suite: "t".into(),
            suite_toml: "name = \"t\"\n".into(),
            git_revision: r.revision.map(String::from),
            host_json: r#"{"cpus":2}"#.into(),
            toolchains_json: "{}".into(),
            planned_cases: plan.len(),
        })
        .unwrap();
    store.insert_planned(id, &plan).unwrap();
    for (c, (rps, samples)) in store.cases(id).unwrap().iter().zip(r.repetitions) {
        store.mark_running(c.id, ("1", "0", false)).unwrap();
        let v = Versions {
            declared: r.declared.map(String::from),
            ..Versions::default()
        };
        store.record_versions(c.id, &v).unwrap();
        store.record_done(c.id, &figures(rps, samples)).unwrap();
    }
    store.set_run_state(id, "done", None).unwrap();
    id
}

fn day(d: usize) -> String {
    format!("2026-03-{d:02}T10:00:00Z")
}

/// A git repository of `n` empty commits made in `dir`; their hashes,
/// oldest first.
fn repo(dir: &Path, n: usize) -> Vec<String> {
    std::fs::create_dir_all(dir).unwrap();
    let git = |args: &[&str]| {
        let o = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
            .args(args)
            .output()
            .expect("git");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    git(&["init", "-q"]);
    for i in 0..n {
        git(&["commit", "-q", "--allow-empty", "-m", &format!("c{i}")]);
    }
    git(&["rev-list", "--reverse", "HEAD"])
        .lines()
        .map(String::from)
        .collect()
}

fn history(db: &Path, extra: &[&str]) -> (i32, String, String) {
    let mut a = vec!["history", "--db", db.to_str().unwrap(), "--server", "api"];
    a.extend_from_slice(extra);
    run(&a)
}

#[test]
fn revision_order_follows_the_commits_and_keeps_what_it_cannot_place() {
    let dir = tempfile::tempdir().unwrap();
    let commits = repo(&dir.path().join("repo"), 6);
    let short: Vec<&str> = commits.iter().map(|c| &c[..12]).collect();
    let db = dir.path().join("r.db");
    // Commits 0–2 fast, 3–5 slower; stored in an order of dates that
    // interleaves them, then one run without a revision and one at a
    // revision of another project.
    let by_date = [3, 0, 4, 1, 5, 2];
    for (d, &c) in by_date.iter().enumerate() {
        let rps = if c < 3 { 1000.0 } else { 700.0 };
        let revision = if c == 4 {
            // A dirty checkout of commit 4 is placed at commit 4.
            format!("{}-dirty", short[4])
        } else {
            short[c].to_string()
        };
        store_run(
            &db,
            Stored {
                started: day(d + 1),
                revision: Some(&revision),
                declared: None,
                repetitions: reps(rps),
            },
        );
    }
    // A second run of commit 1, the newest by date, sits beside the first.
    let again = short[1].to_string();
    for (d, revision, rps) in [
        (7, None, 700.0),
        (8, Some("0123456789ab"), 700.0),
        (9, Some(again.as_str()), 1000.0),
    ] {
        store_run(
            &db,
            Stored {
                started: day(d),
                revision,
                declared: None,
                repetitions: reps(rps),
            },
        );
    }
    let repo_dir = dir.path().join("repo");
    let repo_dir = repo_dir.to_str().unwrap();
    let (code, out, err) = history(&db, &["--order", "revision", "--repo", repo_dir, "--json"]);
    assert_eq!(code, 0, "{err}");
    let v = json(&out);
    support::assert_schema("history", &v);
    assert_eq!(v["order"], "revision");
    let case = &v["cases"][0];
    let runs: Vec<i64> = case["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["run"].as_i64().unwrap())
        .collect();
    // Run ids follow the dates: commit c was stored as run by_date⁻¹(c)+1;
    // run 9 is commit 1 again.
    assert_eq!(runs, [2, 4, 9, 6, 1, 3, 5, 7, 8]);
    let changes = case["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{case}");
    assert_eq!(changes[0]["index"], 4);
    assert_eq!(changes[0]["revision_after"], short[3]);
    assert_eq!(changes[0]["direction"], "worse");
    assert_eq!(case["points"][4]["order_key"], short[3]);
    assert_eq!(case["points"][7]["order_key"], Value::Null);
    // The warning: on standard error and in the document, counted.
    let line = err.lines().find(|l| l.contains("could not be placed"));
    let line = line.unwrap_or_else(|| panic!("no warning: {err}"));
    assert!(
        line.contains("2 point(s)")
            && line.contains("1 with no recorded revision")
            && line.contains("1 whose revision is not one commit"),
        "{line}"
    );
    assert_eq!(
        v["warnings"][0].as_str().unwrap(),
        line.trim_start_matches("fairbench: ")
    );

    // The text says the order and places each row; in date order the
    // same runs alternate and the change is not at commit 3.
    let (code, out, _) = history(&db, &["--order", "revision", "--repo", repo_dir]);
    assert_eq!(code, 0);
    assert!(
        out.lines()
            .next()
            .unwrap()
            .starts_with("in commit order of"),
        "{out}"
    );
    let marked: Vec<&str> = out.lines().filter(|l| l.contains('◆')).collect();
    assert_eq!(marked.len(), 1, "{out}");
    assert!(marked[0].trim_start().starts_with("1 "), "{out}");
    let (_, date_json, _) = history(&db, &["--json"]);
    assert_eq!(json(&date_json)["order"], "date");
    let csv = history(
        &db,
        &["--order", "revision", "--repo", repo_dir, "--format", "csv"],
    )
    .1;
    assert!(csv.lines().nth(5).unwrap().contains(",revision,"), "{csv}");
}

#[test]
fn the_gate_judges_the_newest_commit_not_the_newest_date() {
    let dir = tempfile::tempdir().unwrap();
    let commits = repo(&dir.path().join("repo"), 6);
    let db = dir.path().join("r.db");
    // The newest commit is slower, but it was measured third.
    for (d, c) in [0, 1, 5, 2, 3, 4].into_iter().enumerate() {
        store_run(
            &db,
            Stored {
                started: day(d + 1),
                revision: Some(&commits[c][..12]),
                declared: None,
                repetitions: reps(if c == 5 { 600.0 } else { 1000.0 }),
            },
        );
    }
    let repo_dir = dir.path().join("repo");
    let repo_dir = repo_dir.to_str().unwrap();
    let (code, _, err) = history(
        &db,
        &[
            "--order",
            "revision",
            "--repo",
            repo_dir,
            "--fail-on-change",
        ],
    );
    assert_eq!(code, 97, "{err}");
    assert!(
        err.contains("changed for the worse at the newest run"),
        "{err}"
    );
    let (code, _, err) = history(&db, &["--fail-on-change"]);
    assert_eq!(
        code, 0,
        "in date order the newest run is like the rest: {err}"
    );
}

#[test]
fn version_order_is_natural_and_keeps_undeclared_points_last() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let stored = [
        (Some("app 1.10"), 700.0),
        (Some("app 1.2"), 1000.0),
        (None, 700.0),
        (Some("app 1.9"), 1000.0),
        (Some("app 1.11"), 700.0),
    ];
    for (d, (declared, rps)) in stored.into_iter().enumerate() {
        store_run(
            &db,
            Stored {
                started: day(d + 1),
                revision: None,
                declared,
                repetitions: reps(rps),
            },
        );
    }
    let (code, out, err) = history(&db, &["--order", "version", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v = json(&out);
    support::assert_schema("history", &v);
    let case = &v["cases"][0];
    let keys: Vec<Value> = case["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["order_key"].clone())
        .collect();
    assert_eq!(
        keys,
        ["app 1.2", "app 1.9", "app 1.10", "app 1.11"]
            .map(Value::from)
            .into_iter()
            .chain([Value::Null])
            .collect::<Vec<_>>()
    );
    assert_eq!(case["changes"][0]["index"], 2, "{case}");
    assert!(
        err.contains("1 point(s) could not be placed (1 with no declared server version)"),
        "{err}"
    );
}

#[test]
fn order_flags_used_wrongly_are_one_line_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    store_run(
        &db,
        Stored {
            started: day(1),
            revision: None,
            declared: None,
            repetitions: reps(1000.0),
        },
    );
    let not_git = dir.path().join("plain");
    std::fs::create_dir_all(&not_git).unwrap();
    let cases: [(&[&str], &str); 5] = [
        (&["--order", "revision"], "--repo"),
        (
            &["--order", "revision", "--repo", not_git.to_str().unwrap()],
            "--repo",
        ),
        (&["--repo", "."], "--repo"),
        (&["--window", "10s"], "--within"),
        (&["--within", "1", "--order", "version"], "--order"),
    ];
    for (args, flag) in cases {
        let (code, out, err) = history(&db, args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?}: {err}");
    }
    let (code, _, err) = history(&db, &["--within", "1", "--window", "0s"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--window"), "{err}");
}

/// A repetition's per-second series: `seconds` measured seconds (after 3
/// of warm-up) whose req/s and memory step at `step_s`.
fn soak_series(seconds: i64, step_s: i64) -> Vec<SampleRow> {
    let mut s: Vec<SampleRow> = (-3..0).map(|i| second(i, 300.0, 100, "warmup")).collect();
    s.extend((0..seconds).map(|i| {
        // ±1 % of second-to-second noise, the same every run.
        let wobble = 1.0 + 0.01 * ((i * 7 % 5) - 2) as f64 / 2.0;
        let (rps, rss) = if i < step_s {
            (1000.0, 100)
        } else {
            (800.0, 200)
        };
        second(i, rps * wobble, rss, "measure")
    }));
    s
}

/// A run of one repetition of [`soak_series`].
fn soak(db: &Path, seconds: i64, step_s: i64) -> i64 {
    store_run(
        db,
        Stored {
            started: day(1),
            revision: Some("0123456789ab"),
            declared: None,
            repetitions: vec![(950.0, soak_series(seconds, step_s))],
        },
    )
}

/// `history --within RUN --repetition N --svg FILE`: each repetition is a
/// series, and the chart needs one.
#[test]
fn within_a_run_of_several_repetitions_one_is_picked_for_the_chart() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let id = store_run(
        &db,
        Stored {
            started: day(1),
            revision: None,
            declared: None,
            repetitions: vec![
                (950.0, soak_series(245, 150)),
                (950.0, soak_series(245, 90)),
            ],
        },
    )
    .to_string();
    let svg = dir.path().join("w.svg");
    let svg = svg.to_str().unwrap();
    let base = ["--within", &id, "--window", "30s", "--svg", svg];
    // Two series: the one-line refusal names the flag that picks one.
    let (code, out, err) = history(&db, &base);
    assert_eq!(code, 2, "{out}{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("2 series") && err.contains("--repetition"),
        "{err}"
    );

    let (code, out, err) = history(&db, &[&base[..], &["--repetition", "2", "--json"]].concat());
    assert_eq!(code, 0, "{err}");
    let v = json(&out);
    let cases = v["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 1, "{v}");
    // The second repetition's step, at 90 s: the fourth window.
    let changes = cases[0]["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{v}");
    assert_eq!(changes[0]["index"], 3, "{v}");
    let chart = std::fs::read_to_string(svg).unwrap();
    assert!(chart.contains("90–120 s"), "{chart}");

    // A repetition the run does not have, none, or one without --within.
    for (args, line) in [
        (vec!["--within", &id, "--repetition", "3"], "--repetition"),
        (
            vec!["--within", &id, "--repetition", "0"],
            "must be at least 1",
        ),
        (vec!["--repetition", "1"], "--within"),
    ] {
        let (code, out, err) = history(&db, &args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(line), "{args:?}: {err}");
    }
}

#[test]
fn within_a_soak_the_step_is_found_in_its_window() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let id = soak(&db, 245, 150);
    let id = id.to_string();
    let files = ["w.json", "w.csv", "w.svg"].map(|f| dir.path().join(f));
    let (code, out, err) = history(
        &db,
        &[
            "--within",
            &id,
            "--window",
            "30s",
            "--json",
            "--export-csv",
            files[1].to_str().unwrap(),
            "--svg",
            files[2].to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let v = json(&out);
    support::assert_schema("history", &v);
    assert_eq!(v["order"], "window");
    assert_eq!(v["within"]["window_s"], 30.0);
    let case = &v["cases"][0];
    let points = case["points"].as_array().unwrap();
    assert_eq!(points.len(), 8, "245 s: eight whole windows of 30 s");
    assert_eq!(points[0]["window"]["seconds"], 30);
    let changes = case["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{case}");
    assert_eq!(changes[0]["index"], 5);
    assert_eq!(points[5]["window"]["start_s"], 150.0);
    assert_eq!(changes[0]["direction"], "worse");
    let csv = std::fs::read_to_string(&files[1]).unwrap();
    assert_eq!(csv.lines().count(), 9, "{csv}");
    let svg = std::fs::read_to_string(&files[2]).unwrap();
    assert!(
        svg.contains("150–180 s") && svg.contains("within its run"),
        "{svg}"
    );

    // The text: the header, a row per window, the change on 150–180 s;
    // memory drifts at the same window.
    let (code, out, err) = history(
        &db,
        &["--within", "latest", "--window", "30s", "--metric", "rss"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with(&format!("run {id}: each case's per-second series")),
        "{out}"
    );
    assert!(
        out.contains("the last 5 s, shorter than a window, left out"),
        "{out}"
    );
    let marked: Vec<&str> = out.lines().filter(|l| l.contains('◆')).collect();
    assert_eq!(marked.len(), 1, "{out}");
    assert!(marked[0].trim_start().starts_with("150–180 s"), "{out}");
    assert!(
        marked[0].contains("worse") && out.contains("server memory (MiB)"),
        "{out}"
    );
}

#[test]
fn a_run_shorter_than_two_windows_says_so_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let id = soak(&db, 5, 100).to_string();
    let (code, out, err) = history(&db, &["--within", &id]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim().lines().count(), 1, "{out}");
    assert!(
        out.contains(&format!(
            "run {id}: measured 5 s, shorter than two windows of 1m"
        )),
        "{out}"
    );
    // The document still comes with --json; the line goes to stderr.
    let (code, out, err) = history(&db, &["--within", &id, "--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("shorter than two windows"), "{err}");
    assert_eq!(json(&out)["format"], "fairbench-history");
}

#[test]
fn the_gate_within_a_run_judges_its_last_window() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    // Eight windows of 30 s; the last one slower.
    let id = soak(&db, 240, 210).to_string();
    let (code, _, err) = history(
        &db,
        &["--within", &id, "--window", "30s", "--fail-on-change"],
    );
    assert_eq!(code, 97, "{err}");
    assert!(
        err.contains("changed for the worse at the newest window"),
        "{err}"
    );
    // Its median latency did not move: the gate passes.
    let (code, _, err) = history(
        &db,
        &[
            "--within",
            &id,
            "--window",
            "30s",
            "--metric",
            "p50",
            "--fail-on-change",
        ],
    );
    assert_eq!(code, 0, "{err}");
}
