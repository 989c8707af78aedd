//! The report's History section (docs/report.md) on fixture databases:
//! four runs of the standard fixture, two as measured and two changed
//! (go-nethttp 10 % faster, dart-shelf jit/default static 1 core 20 %
//! slower), so every series steps at run 3. The report of run 4 shows the
//! change there, in HTML, Markdown and JSON, this run marked; the reports
//! of runs 2 and 3 show nothing of the runs after them; a database of one
//! run has no section; a hostile server's name stays text.

mod support;

use std::collections::BTreeSet;
use std::path::Path;

use fairbench::report::fixture::{self, Flavour, HOSTILE};
use fairbench::store::Store;
use serde_json::Value;
use support::*;

/// Runs 1 and 2 as measured, 3 and 4 changed.
fn stepped_db() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("results.db")).unwrap();
    for f in [
        Flavour::Baseline,
        Flavour::Baseline,
        Flavour::Changed,
        Flavour::Changed,
    ] {
        fixture::standard_run(&mut store, f);
    }
    dir
}

fn html(dir: &Path, run: &str) -> String {
    ok(dir, &["report", run, "--db", "results.db", "-o", "-"])
}

fn report_json(dir: &Path, run: &str) -> Value {
    let text = ok(
        dir,
        &["report", run, "--db", "results.db", "--format", "json"],
    );
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_schema("report", &v);
    v
}

/// The History section of an HTML report.
fn section(page: &str) -> &str {
    let start = page
        .find("<section id=\"history\">")
        .unwrap_or_else(|| panic!("no History section"));
    let len = page[start..].find("</section>").unwrap();
    &page[start..start + len]
}

/// The rows of the table `id` in `html`, as the cells' text.
fn rows(html: &str, id: &str) -> Vec<Vec<String>> {
    let start = html
        .find(&format!("<table id=\"{id}\""))
        .unwrap_or_else(|| panic!("no table {id}"));
    let table = &html[start..start + html[start..].find("</table>").unwrap()];
    let body = &table[table.find("<tbody>").unwrap()..];
    body.split("<tr>")
        .skip(1)
        .map(|r| {
            r.split("<td")
                .skip(1)
                .map(|c| {
                    let c = &c[c.find('>').unwrap() + 1..];
                    c[..c.find("</td>").unwrap()].to_string()
                })
                .collect()
        })
        .collect()
}

#[test]
fn the_report_of_the_newest_run_shows_the_step_where_it_happened() {
    let dir = stepped_db();
    let page = html(dir.path(), "4");
    assert!(page.contains("<li><a href=\"#history\">History</a></li>"));
    let s = section(&page);
    // Every closed-loop case of the fixture was measured by all four runs.
    let charts = s.matches("<svg ").count();
    assert_eq!(charts, 12, "{s}");
    assert_eq!(s.matches("class=\"this-run\"").count(), charts);

    // go-nethttp's four cases and dart-shelf jit/default static 1 core
    // changed, each between runs 2 and 3; nothing else.
    let changes = rows(s, "history-changes");
    assert_eq!(changes.len(), 5, "{changes:?}");
    for r in &changes {
        assert_eq!(r[2], "run 2 · abc1234", "{r:?}");
        assert_eq!(r[3], "run 3 · abc1234", "{r:?}");
    }
    let jit = changes
        .iter()
        .find(|r| r[0].starts_with("dart-shelf jit/default"))
        .expect("the slower case");
    assert!(jit[0].contains("static · 1 core"), "{jit:?}");
    assert_eq!((jit[4].as_str(), jit[6].as_str()), ("-20.0 %", "worse"));
    assert!(
        jit[5].starts_with("[-2") && jit[5].ends_with(" %]"),
        "{jit:?}"
    );
    let go: Vec<_> = changes
        .iter()
        .filter(|r| r[0].starts_with("go-nethttp"))
        .collect();
    assert_eq!(go.len(), 4);
    assert!(go.iter().all(|r| r[4] == "+10.0 %" && r[6] == "better"));
    // The largest change first, and its chart marks it at run 3.
    assert!(changes[0][0].starts_with("dart-shelf jit/default"));
    let first = &s[s.find("<figure id=\"fig-history-1\"").unwrap()..];
    let first = &first[..first.find("</figure>").unwrap()];
    assert!(first.contains(">run 3: -20.0 %</text>"), "{first}");
    // Its table: one row per run, the change on run 3, this run on run 4.
    let points = rows(first, "history-1");
    let runs: Vec<&str> = points.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(runs, ["1", "2", "3", "4"]);
    assert!(points[2][5].starts_with("-20.0 % [") && points[2][5].ends_with("worse"));
    let marked: Vec<&str> = points
        .iter()
        .filter(|r| r[6] == "this run")
        .map(|r| r[0].as_str())
        .collect();
    assert_eq!(marked, ["4"]);

    // Every id of the page is its own.
    let ids: Vec<&str> = page
        .split(" id=\"")
        .skip(1)
        .map(|r| &r[..r.find('"').unwrap()])
        .collect();
    let unique: BTreeSet<&str> = ids.iter().copied().collect();
    assert_eq!(ids.len(), unique.len(), "duplicate ids");
}

#[test]
fn markdown_and_json_say_the_same() {
    let dir = stepped_db();
    let md = ok(
        dir.path(),
        &["report", "4", "--db", "results.db", "--format", "md"],
    );
    let at = md.find("## History\n").expect("a History section");
    let hist = &md[at..md[at..].find("## How the numbers").unwrap() + at];
    assert!(!hist.contains("<svg"));
    assert!(hist.contains("### Change points"));
    assert_eq!(
        hist.matches("| run 2 · abc1234 | run 3 · abc1234 |")
            .count(),
        5
    );
    assert_eq!(hist.matches("| this run |").count(), 12);

    let v = report_json(dir.path(), "4");
    let h = &v["history"];
    assert_eq!(
        (h["run"].as_i64(), h["earlier_runs"].as_i64()),
        (Some(4), Some(3))
    );
    let cases = h["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 12);
    let changed: Vec<&Value> = cases
        .iter()
        .flat_map(|c| c["changes"].as_array().unwrap())
        .collect();
    assert_eq!(changed.len(), 5);
    assert!(changed
        .iter()
        .all(|c| c["run_before"] == 2 && c["run_after"] == 3));
    for c in cases {
        let p = c["points"].as_array().unwrap();
        let this: Vec<bool> = p.iter().map(|p| p["this_run"] == true).collect();
        assert_eq!(this, [false, false, false, true]);
        assert!(c.get("svg").is_none());
    }
}

#[test]
fn an_older_run_shows_no_run_made_after_it() {
    let dir = stepped_db();
    // Run 3: three runs, no point of run 4, and too few to find a change.
    let page = html(dir.path(), "3");
    let s = section(&page);
    assert_eq!(s.matches("<svg ").count(), 12);
    assert!(!s.contains("history-changes"));
    for i in 1..=12 {
        let runs: Vec<String> = rows(s, &format!("history-{i}"))
            .into_iter()
            .map(|r| r[0].clone())
            .collect();
        assert_eq!(runs, ["1", "2", "3"], "chart {i}");
    }
    assert!(!s.contains("run 4"), "{s}");
    let v = report_json(dir.path(), "3");
    for c in v["history"]["cases"].as_array().unwrap() {
        let runs: Vec<i64> = c["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["run"].as_i64().unwrap())
            .collect();
        assert_eq!(runs, [1, 2, 3]);
    }

    // Run 2: one earlier run, no history yet: one sentence, no chart.
    let page = html(dir.path(), "2");
    let s = section(&page);
    assert!(s.contains("1 earlier run of this database"), "{s}");
    assert!(!s.contains("<svg") && !s.contains("<table"), "{s}");
    assert!(!s.contains("run 3") && !s.contains("run 4"), "{s}");
    let v = report_json(dir.path(), "2");
    assert_eq!(v["history"]["earlier_runs"], 1);
    assert_eq!(v["history"]["cases"], serde_json::json!([]));
}

#[test]
fn a_database_of_one_run_has_no_history_section() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("results.db")).unwrap();
    fixture::standard_run(&mut store, Flavour::Baseline);
    let page = html(dir.path(), "1");
    assert!(!page.contains("id=\"history") && !page.contains("#history"));
    let md = ok(
        dir.path(),
        &["report", "1", "--db", "results.db", "--format", "md"],
    );
    assert!(!md.contains("## History"));
    assert!(report_json(dir.path(), "1").get("history").is_none());
}

#[test]
fn a_hostile_server_name_stays_text() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("results.db")).unwrap();
    for _ in 0..3 {
        fixture::hostile_run(&mut store);
    }
    let page = html(dir.path(), "3");
    let s = section(&page);
    assert_eq!(s.matches("<svg ").count(), 1, "{s}");
    assert!(!page.contains("<script"), "markup from the database ran");
    assert!(!s.contains('\x07') && !s.contains("\"q'"));
    assert!(s.contains("evil&lt;script&gt;alert(1)&lt;/script&gt;&quot;q&#39;\\x07\\r\\nx"));
    assert!(s.contains("rev&lt;script&gt;"));
    let md = ok(
        dir.path(),
        &["report", "3", "--db", "results.db", "--format", "md"],
    );
    let at = md.find("## History\n").unwrap();
    let hist = &md[at..md[at..].find("## How the numbers").unwrap() + at];
    // Every `<` is a Markdown escape.
    assert!(!hist.replace("\\<", "").contains('<'), "{hist}");
    assert!(hist.contains("evil\\<script\\>"), "{hist}");
    let v = report_json(dir.path(), "3");
    assert_eq!(
        v["history"]["cases"][0]["key"]["server"],
        format!("evil{HOSTILE}")
    );
}

/// `run --report` writes the same report `report` does: from the third
/// run of a case on, with its History section.
#[test]
fn the_report_a_run_writes_at_its_end_has_the_history_too() {
    let srv = fairbench_testkit::canned::Server::plain(fairbench_testkit::canned::HELLO);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("svc.toml"),
        format!(
            "name = \"svc\"\nduration = \"1s\"\nrepetitions = 1\n\n\
             [[service]]\nname = \"api\"\nurl = \"{}\"\n\n\
             [[load]]\nmodel = \"closed\"\nconnections = 2\n",
            srv.url()
        ),
    )
    .unwrap();
    for n in 1..=3 {
        let report = format!("r{n}.html");
        let o = run_in(
            dir.path(),
            &[
                "run", "--suite", "svc.toml", "--db", "r.db", "--report", &report,
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    let read = |f: &str| std::fs::read_to_string(dir.path().join(f)).unwrap();
    assert!(!read("r1.html").contains("<section id=\"history\">"));
    let third = read("r3.html");
    assert!(
        third.contains("<section id=\"history\">"),
        "no History section"
    );
    assert!(third.contains("this run"), "this run is not marked");
}
