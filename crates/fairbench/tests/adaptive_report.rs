//! How an adaptive run stopped and how long each `--warmup auto` case
//! warmed up, as `show --json`, the HTML report and its Markdown and JSON
//! forms give them, on the adaptive fixture database
//! (src/report/fixture/adaptive.rs): the documents valid against their
//! closed schemas, a fixed run's `stopped` null, the sentence under the
//! report's header, the warm-up table with its flag.

mod support;

use fairbench::report::fixture::{self, AdaptiveShape};
use serde_json::Value;
use support::*;

/// A folder whose `results.db` holds the standard run 1 (fixed count),
/// then adaptive runs: stopped at 4 of 8 with the ratio known to ±3 % (2),
/// run to the maximum of 8 unsettled (3), stopped at 4 with the ratio's
/// verdict settled but not its precision (4).
fn adaptive_db() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    let mut s = fairbench::store::Store::open(&path).unwrap();
    fixture::standard_run(&mut s, fixture::Flavour::Baseline);
    fixture::adaptive_run(&mut s, 4, AdaptiveShape::Precise);
    fixture::adaptive_run(&mut s, 8, AdaptiveShape::Unsettled);
    fixture::adaptive_run(&mut s, 4, AdaptiveShape::Decided);
    dir
}

fn show_json(dir: &std::path::Path, run: &str) -> Value {
    let v: Value =
        serde_json::from_str(&ok(dir, &["show", run, "--db", "results.db", "--json"])).unwrap();
    assert_schema("show", &v);
    v
}

fn report(dir: &std::path::Path, run: &str, format: &str) -> String {
    ok(
        dir,
        &[
            "report",
            run,
            "--db",
            "results.db",
            "--format",
            format,
            "-o",
            "-",
        ],
    )
}

#[test]
fn show_json_says_why_and_where_the_repetitions_stopped() {
    let dir = adaptive_db();
    let d = dir.path();
    assert_eq!(show_json(d, "1")["stopped"], Value::Null, "a fixed count");

    let s = &show_json(d, "2")["stopped"];
    assert_eq!(s["reason"], "precision", "{s}");
    assert_eq!(
        (s["repetition"].as_u64(), s["max"].as_u64()),
        (Some(4), Some(8))
    );
    assert_eq!(s["asked_half_width_pct"], 3.0);
    assert_eq!(s["looks"], serde_json::json!([3, 4, 6, 8]));
    assert_eq!(s["level_per_look"], 0.9875);
    assert_eq!(s["fixed_design"]["repetitions"], 3);
    let ratios = s["ratios"].as_array().unwrap();
    assert_eq!(ratios.len(), 1, "{s}");
    let r = &ratios[0];
    assert!(
        r["ratio"]
            .as_str()
            .unwrap()
            .starts_with("node-http native/normalized vs go-nethttp native/normalized"),
        "{r}"
    );
    let half = r["half_width_pct"].as_f64().unwrap();
    assert!(half > 0.0 && half <= 3.0, "{r}");
    assert_eq!(r["settled_by"], "precision");
    let g = r["geomean"].as_f64().unwrap();
    assert!((0.59..0.61).contains(&g), "{r}");
    assert!(r["low"].as_f64().unwrap() < g && g < r["high"].as_f64().unwrap());

    let s = &show_json(d, "3")["stopped"];
    assert_eq!(s["reason"], "maximum", "{s}");
    assert_eq!(s["repetition"], 8);
    let r = &s["ratios"][0];
    assert_eq!(r["settled_by"], Value::Null, "{r}");
    assert!(r["half_width_pct"].as_f64().unwrap() > 3.0, "{r}");

    let s = &show_json(d, "4")["stopped"];
    assert_eq!(s["reason"], "verdict", "{s}");
    assert_eq!(s["repetition"], 4);
    let r = &s["ratios"][0];
    assert_eq!(r["settled_by"], "verdict", "{r}");
    assert!(r["half_width_pct"].as_f64().unwrap() > 3.0, "{r}");
    assert!(r["high"].as_f64().unwrap() < 0.9, "{r}");
}

/// The text `show` gives each ratio the rule looked at under its stop
/// line: its interval at each look's level and how it was settled, so the
/// ratio that kept a run going to its maximum is named.
#[test]
fn show_lists_each_ratio_and_how_it_was_settled() {
    let dir = adaptive_db();
    let d = dir.path();
    let text = ok(d, &["show", "1", "--db", "results.db"]);
    assert!(!text.contains("adaptive:"), "a fixed count: {text}");
    for (run, how) in [
        ("2", "settled by its precision"),
        ("3", "not settled"),
        ("4", "settled by its verdict"),
    ] {
        let text = ok(d, &["show", run, "--db", "results.db"]);
        let lines: Vec<&str> = text.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.starts_with("adaptive: stopped at repetition"))
            .unwrap_or_else(|| panic!("run {run}: no stop line in\n{text}"));
        let ratio = lines.get(at + 1).copied().unwrap_or_default();
        assert!(
            ratio.starts_with("  ") && ratio.contains(" vs ") && ratio.contains("× ["),
            "run {run}: {ratio:?}\n{text}"
        );
        assert!(ratio.ends_with(how), "run {run}: {ratio:?}");
    }
}

/// The report's ratio tables of an adaptive run are at each look's level,
/// as its stop record: a 95 % interval computed after looking at the data
/// repeatedly would overstate what is known.
#[test]
fn an_adaptive_runs_ratios_are_shown_at_the_level_of_each_look() {
    let dir = adaptive_db();
    let d = dir.path();
    let fixed: Value = serde_json::from_str(&report(d, "1", "json")).unwrap();
    assert_eq!(fixed["paired"]["level"], 0.95);
    for run in ["2", "3", "4"] {
        let json: Value = serde_json::from_str(&report(d, run, "json")).unwrap();
        let (p, stop) = (&json["paired"], &json["stopped"]);
        let level = stop["level_per_look"].as_f64().unwrap();
        assert!(level > 0.95, "run {run}: {level}");
        assert_eq!(p["level"].as_f64(), Some(level), "run {run}");
        let notes = p["notes"].to_string();
        assert!(
            notes.contains("the level of each look"),
            "run {run}: {notes}"
        );
        // The table's rps ratio is the one the rule stopped on.
        let rule = &stop["ratios"][0];
        let row = p["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["role"] != "reference" && !r["rps"].is_null())
            .unwrap_or_else(|| panic!("run {run}: no ratio row in {p}"));
        for f in ["geomean", "low", "high"] {
            let (a, b) = (row["rps"][f].as_f64(), rule[f].as_f64());
            assert!(
                matches!((a, b), (Some(a), Some(b)) if (a - b).abs() < 1e-9),
                "run {run}: {f} {a:?} in the table, {b:?} in the stop record"
            );
        }
        assert_eq!(row["rps"]["level"].as_f64(), Some(level), "run {run}");
    }
}

#[test]
fn the_report_says_under_its_header_how_the_repetitions_stopped() {
    let dir = adaptive_db();
    let d = dir.path();
    let html = report(d, "2", "html");
    let header = &html[..html.find("</header>").unwrap()];
    let lede = header.find("class=\"lede\"").unwrap();
    let at = header
        .find("<p id=\"adaptive-stop\">Repetitions stopped at 4 of at most 8: every ratio known to ±3 %.</p>")
        .unwrap_or_else(|| panic!("{header}"));
    assert!(lede < at && at < header.find("id=\"run\"").unwrap());

    let html = report(d, "3", "html");
    let line = html
        .lines()
        .find(|l| l.starts_with("<p id=\"adaptive-stop\""))
        .unwrap_or_else(|| panic!("no stop in the report of run 3"));
    assert!(
        line.starts_with("<p id=\"adaptive-stop\" class=\"warn\">Repetitions ran to their maximum of 8: 1 of 1 ratios not known to ±3 %, the widest ±"),
        "{line}"
    );

    let html = report(d, "4", "html");
    assert!(
        html.contains("<p id=\"adaptive-stop\">Repetitions stopped at 4 of at most 8: every ratio known to ±3 % or its verdict settled (1 of 1 by its verdict).</p>"),
        "{}",
        &html[..html.find("</header>").unwrap()]
    );

    let fixed = report(d, "1", "html");
    assert!(
        !fixed.contains("adaptive-stop"),
        "a fixed count says nothing"
    );
    let md = report(d, "1", "md");
    assert!(!md.contains("Repetitions stopped"), "{md}");

    let md = report(d, "2", "md");
    let head = &md[..md.find("## Run and machine").unwrap()];
    assert!(
        head.contains("Repetitions stopped at 4 of at most 8: every ratio known to ±3 %.\n"),
        "{head}"
    );

    let json: Value = serde_json::from_str(&report(d, "2", "json")).unwrap();
    assert_schema("report", &json);
    assert_eq!(json["stopped"]["reason"], "precision");
    assert_eq!(json["stopped"]["repetition"], 4);
    let json: Value = serde_json::from_str(&report(d, "1", "json")).unwrap();
    assert_eq!(json["stopped"], Value::Null);
}

#[test]
fn each_auto_warm_up_case_shows_what_it_took_and_when_it_never_settled() {
    let dir = adaptive_db();
    let d = dir.path();
    let html = report(d, "2", "html");
    let at = html
        .find("<figure id=\"fig-warmup-auto\">")
        .unwrap_or_else(|| panic!("no auto warm-up figure"));
    let fig = &html[at..at + html[at..].find("</figure>").unwrap()];
    assert!(fig.contains("Automatic warm-up (--warmup auto)"), "{fig}");
    let rows: Vec<&str> = fig.split("<tr>").skip(2).collect();
    assert_eq!(rows.len(), 1, "only node-http warmed up auto: {fig}");
    let row = rows[0];
    assert!(row.contains("node-http native/normalized"), "{row}");
    // 4.5, 31.5, 13.5 and 18 s: median 15.75, min 4.5, max 31.5,
    // ceiling 30.
    for v in ["15.75", "4.5", "31.5", "30"] {
        assert!(row.contains(&format!("data-value=\"{v}\"")), "{v}: {row}");
    }
    assert!(
        row.contains("⚠ no: 1 of 4 repetitions not steady by the ceiling"),
        "{row}"
    );
    // A fixed warm-up has no such table.
    assert!(!report(d, "1", "html").contains("fig-warmup-auto"));

    let md = report(d, "2", "md");
    assert!(
        md.lines().any(|l| l.contains("node-http native/normalized")
            && l.contains("1 of 4 repetitions not steady")),
        "{md}"
    );

    let json: Value = serde_json::from_str(&report(d, "2", "json")).unwrap();
    assert_schema("report", &json);
    let groups = json["groups"].as_array().unwrap();
    let node = groups
        .iter()
        .find(|g| g["key"]["server"] == "node-http")
        .unwrap();
    let a = &node["auto_warmup"];
    assert_eq!(a["ceiling_s"], 30.0);
    assert_eq!(a["not_steady"], 1);
    assert_eq!(a["taken_s"]["median"], 15.75);
    let steady: Vec<bool> = a["repetitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["steady"].as_bool().unwrap())
        .collect();
    assert_eq!(steady, [true, false, true, true]);
    let go = groups
        .iter()
        .find(|g| g["key"]["server"] == "go-nethttp")
        .unwrap();
    assert!(go.get("auto_warmup").is_none(), "a fixed warm-up: {go}");
}

/// A real run: a service warmed up `auto`, its report written by
/// `run --report`, shows what the warm-up took (a flat server is steady at
/// its first window, or flagged if a loaded machine kept it from it).
#[test]
fn run_report_shows_the_warm_up_an_auto_case_took() {
    let srv = support::load::Server::plain(support::load::HELLO);
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("svc.toml");
    std::fs::write(
        &suite,
        format!(
            "name = \"svc\"\nduration = \"1s\"\nrepetitions = 1\nwarmup = \"auto:8s\"\n\n\
             [[service]]\nname = \"api\"\nurl = \"{}\"\n\n\
             [[load]]\nmodel = \"closed\"\nconnections = 2\n",
            srv.url()
        ),
    )
    .unwrap();
    let o = run_in(
        dir.path(),
        &[
            "run",
            "--suite",
            suite.to_str().unwrap(),
            "--db",
            "svc.db",
            "--report",
            "r.html",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let html = std::fs::read_to_string(dir.path().join("r.html")).unwrap();
    assert!(!html.contains("adaptive-stop"), "a fixed count");
    let at = html
        .find("<figure id=\"fig-warmup-auto\">")
        .unwrap_or_else(|| panic!("no auto warm-up figure in the report"));
    let fig = &html[at..at + html[at..].find("</figure>").unwrap()];
    let row = fig.split("<tr>").nth(2).unwrap_or_else(|| panic!("{fig}"));
    assert!(row.contains(">api<"), "{row}");
    assert!(row.contains("data-value=\"8\""), "the ceiling: {row}");
    assert!(
        row.contains("<td>yes</td>") || row.contains("1 of 1 repetitions not steady"),
        "{row}"
    );
    let v: Value =
        serde_json::from_str(&ok(dir.path(), &["show", "--db", "svc.db", "--json"])).unwrap();
    assert_schema("show", &v);
    assert_eq!(v["stopped"], Value::Null);
}
