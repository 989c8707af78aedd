//! `fairbench load --targets FILE` and templated requests, against a server
//! that counts what it receives: the per-target breakdown adds up to the
//! totals, weights and templated values reach the server as declared, and
//! every mistake in a targets file is one line naming file, line and field.

mod support;

use std::time::Duration;

use fairbench_testkit::counting::Counting;
use serde_json::Value;
use support::load::run;

fn write(dir: &std::path::Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

const TARGETS: &str = r#"
[[target]]
name = "item"
path = "/items/{{uniform 1 10}}"
weight = 6
headers = ["X-Id: {{seq 100}}"]

[[target]]
name = "popular"
path = "/pop/{{zipf 1 1 50}}"
weight = 2

[[target]]
name = "search"
path = "/search?q={{line words.txt}}"

[[target]]
name = "create"
method = "post"
path = "/new"
body = '{"n":{{seq}}}'

[[target]]
name = "broken"
url = "http://127.0.0.1:PORT/fail"
"#;

#[test]
fn a_targets_file_is_sent_as_declared_and_adds_up() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Counting::start(Duration::ZERO);
    write(dir.path(), "words.txt", "apple\nbanana\ncherry\n");
    let file = write(
        dir.path(),
        "targets.toml",
        &TARGETS.replace("PORT", &srv.port.to_string()),
    );
    let url = srv.url("/");
    let (code, out, err) = run(&[
        "load",
        &url,
        "--targets",
        &file,
        "-n",
        "5500",
        "-c",
        "4",
        "-t",
        "2",
        "--pool",
        "1100",
        "--seed",
        "9",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let ledger = &v["ledger"];
    let targets = v["targets"].as_array().expect("targets in the JSON");
    let names: Vec<&str> = targets
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["item", "popular", "search", "create", "broken"]);
    let sum = |f: &dyn Fn(&Value) -> u64| -> u64 { targets.iter().map(f).sum() };
    assert_eq!(
        sum(&|t| t["planned"].as_u64().unwrap()),
        ledger["planned"].as_u64().unwrap()
    );
    assert_eq!(
        sum(&|t| t["requests"].as_u64().unwrap()),
        v["requests"].as_u64().unwrap()
    );
    assert_eq!(
        sum(&|t| t["errors"]["status"].as_u64().unwrap()),
        v["errors"]["status"].as_u64().unwrap()
    );
    assert_eq!(
        sum(&|t| t["answered_in_window"].as_u64().unwrap()),
        v["answered_in_window"].as_u64().unwrap()
    );
    // -n 5500 over a pool of 1100 in proportions 6:2:1:1:1 (600:200:100:100:100).
    assert_eq!(ledger["planned"], 5500);
    let planned = |i: usize| targets[i]["planned"].as_u64().unwrap() as f64;
    assert!((planned(0) / planned(2) - 6.0).abs() < 0.3, "{targets:?}");
    assert!((planned(1) / planned(2) - 2.0).abs() < 0.2, "{targets:?}");
    let broken = &targets[4];
    assert_eq!(broken["status_codes"]["503"], broken["requests"]);
    assert_eq!(targets[0]["status_codes"].as_object().unwrap().len(), 1);
    assert!(targets[0]["latency_us"]["p99"].as_u64().unwrap() > 0);

    // Server-side: uniform values spread evenly over 1..=10.
    let items = srv.by_prefix("GET /items/");
    let total: u64 = items.values().sum();
    assert!(total >= 2900, "{items:?}");
    for k in 1..=10 {
        let n = items.get(&k.to_string()).copied().unwrap_or(0) as f64;
        let share = n / total as f64;
        assert!(
            (0.06..0.14).contains(&share),
            "/items/{k}: {share:.3} of {total}"
        );
    }
    assert_eq!(items.len(), 10, "values outside 1..=10: {items:?}");
    // Zipf with S = 1: value 1 twice as frequent as 2, five times as 5.
    let pop = srv.by_prefix("GET /pop/");
    let p = |k: u32| pop.get(&k.to_string()).copied().unwrap_or(0) as f64;
    assert!((p(1) / p(2) - 2.0).abs() < 0.6, "{pop:?}");
    assert!((p(1) / p(5) - 5.0).abs() < 2.0, "{pop:?}");
    assert!(pop
        .keys()
        .all(|k| (1..=50).contains(&k.parse::<u32>().unwrap())));
    // Lines in turn: each word a third.
    for w in ["apple", "banana", "cherry"] {
        let n = srv.count(&format!("GET /search?q={w}"));
        assert!((150..=220).contains(&n), "{w}: {n}");
    }
    // A sequence per target, in the header and in a body: 100 distinct
    // values of the sequence in the pool for "create", 600 for "item".
    let bodies = srv.by_prefix("BODY ");
    assert_eq!(bodies.len(), 100, "{}", bodies.len());
    assert!(bodies.contains_key("{\"n\":0}") && bodies.contains_key("{\"n\":99}"));
    assert_eq!(
        srv.by_prefix("POST /new").values().sum::<u64>(),
        sum(&|t| if t["name"] == "create" {
            t["planned"].as_u64().unwrap()
        } else {
            0
        })
    );
    let ids = srv.by_prefix("X-Id ");
    assert_eq!(ids.len(), 600);
    assert!(ids.contains_key("100") && ids.contains_key("699"));
}

#[test]
fn the_summary_breaks_the_run_down_by_target() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Counting::start(Duration::ZERO);
    let file = write(
        dir.path(),
        "t.toml",
        "[[target]]\nname = \"home\"\npath = \"/\"\n[[target]]\nname = \"down\"\npath = \"/fail\"\n",
    );
    let (code, out, err) = run(&[
        "load",
        &srv.url("/"),
        "--targets",
        &file,
        "-n",
        "400",
        "-c",
        "2",
    ]);
    assert_eq!(code, 0, "{err}");
    let row = |name: &str| {
        out.lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no row {name}:\n{out}"))
            .split_whitespace()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert!(out.contains("Target"), "{out}");
    let (home, down) = (row("home "), row("down "));
    assert_eq!(
        (home[1].as_str(), home[2].as_str(), home[3].as_str()),
        ("200", "200", "0")
    );
    assert_eq!((down[1].as_str(), down[3].as_str()), ("200", "200"));
    assert!(down.join(" ").contains("503 ×200"), "{down:?}");
}

#[test]
fn templates_work_in_a_plain_url_too() {
    let srv = Counting::start(Duration::ZERO);
    let url = srv.url("/u/{{uniform 1 5}}");
    let (code, _, err) = run(&["load", &url, "-n", "500", "-c", "2", "-H", "X-Id: {{seq}}"]);
    assert_eq!(code, 0, "{err}");
    let u = srv.by_prefix("GET /u/");
    assert_eq!(u.len(), 5, "{u:?}");
    assert!(u.values().all(|&n| n > 50), "{u:?}");
    assert_eq!(srv.by_prefix("X-Id ").len(), 500);
}

#[test]
fn mistakes_name_the_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let url = "http://127.0.0.1:9/";
    let cases: &[(&str, &str)] = &[
        (
            "[[target]]\npath = \"/a\"\n\n[[target]]\npath = \"/b/{{random 1 2}}\"\n",
            ":5: path: unknown template {{random 1 2}}",
        ),
        (
            "[[target]]\npath = \"/a\"\nweight = 0\n",
            ":3: weight: must be a whole number from 1",
        ),
        (
            "[[target]]\npath = \"/a\"\nheaders = [\"nocolon\"]\n",
            ":3: headers: \"nocolon\" is not \"Name: value\"",
        ),
        (
            "[[target]]\npath = \"/a\"\nverb = \"GET\"\n",
            ":3: unknown field `verb`",
        ),
        ("[[target]]\npath = \"/a\n", ":2: "),
        ("[[target]]\nname = \"x\"\n", ":1: [[target]]: needs a path"),
        (
            "[[target]]\nurl = \"http://example.com/x\"\n",
            ":2: url: \"http://example.com/x\" is not on http://127.0.0.1",
        ),
        (
            "[[target]]\npath = \"/{{line missing.txt}}\"\n",
            ":2: path: {{line missing.txt}}: cannot read",
        ),
        (
            "[[target]]\npath = \"/{{zipf 1.1 5 1}}\"\n",
            ":2: path: {{zipf 1.1 5 1}}: LO must not exceed HI",
        ),
        ("# nothing\n", "no [[target]] table"),
        (
            "[[target]]\npath = \"/a\"\nmethod = \"HEAD\"\n[[target]]\npath = \"/b\"\n",
            ":4: method: HEAD (of another target) cannot be mixed with GET",
        ),
    ];
    for (i, (text, want)) in cases.iter().enumerate() {
        let file = write(dir.path(), &format!("t{i}.toml"), text);
        let (code, out, err) = run(&["load", url, "--targets", &file, "-d", "1s"]);
        assert_eq!(code, 2, "{text}: {out}{err}");
        let line = err.trim();
        assert_eq!(line.lines().count(), 1, "one line: {err}");
        assert!(line.contains(&format!("t{i}.toml")), "{line}");
        assert!(line.contains(want), "{text:?}: want {want:?} in {line}");
    }
    let (code, _, err) = run(&["load", "http://127.0.0.1:9/{{nope}}", "-d", "1s"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown template {{nope}}"), "{err}");
}
