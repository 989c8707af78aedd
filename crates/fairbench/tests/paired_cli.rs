//! Paired ratios end to end on fixture runs (src/report/fixture/,
//! `paired_run`): go-nethttp native/normalized as the reference, its
//! native/default A/A twin, node-http at a known fraction of go; each
//! repetition scaled by a machine drift common to all three. The expected
//! ratios and intervals are recomputed here from the database with a
//! tabled t quantile, so the pipeline is checked against arithmetic done
//! another way. Covers `show`, `report` in every format, `compare`'s
//! pairing and its "cannot pair" line, and `--reference` everywhere.

mod support;

use std::path::Path;

use fairbench::report::fixture::{self, PairedShape};
use fairbench::store;
use serde_json::Value;
use support::*;

const HEALTHY: PairedShape = PairedShape {
    repetitions: 5,
    node: 0.55,
    twin: 1.0,
    machine: 1.0,
};

/// Two-sided 95 % t critical values by degrees of freedom (any table).
fn t975(df: usize) -> f64 {
    [f64::NAN, 12.7062, 4.3027, 3.1824, 2.7764, 2.5706][df]
}

/// The req/s of one variant per repetition, from the database.
fn rps(dir: &Path, run: i64, server: &str, response: &str) -> Vec<f64> {
    let c = rusqlite::Connection::open(dir.join("results.db")).unwrap();
    let mut st = c
        .prepare(
            "SELECT rps FROM cases WHERE run_id = ?1 AND server = ?2 AND response = ?3 AND state = 'done' ORDER BY repetition",
        )
        .unwrap();
    st.query_map(rusqlite::params![run, server, response], |r| r.get(0))
        .unwrap()
        .map(|v| v.unwrap())
        .collect()
}

/// (geometric mean, low, high) of x/y per repetition.
fn expected(x: &[f64], y: &[f64]) -> (f64, f64, f64) {
    let logs: Vec<f64> = x.iter().zip(y).map(|(a, b)| (a / b).ln()).collect();
    let n = logs.len() as f64;
    let mean = logs.iter().sum::<f64>() / n;
    let sd = (logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    let half = t975(logs.len() - 1) * sd / n.sqrt();
    (mean.exp(), (mean - half).exp(), (mean + half).exp())
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-3 * b.abs()
}

fn db(shapes: &[PairedShape]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut s = store::Store::open(&dir.path().join("results.db")).unwrap();
    for (i, shape) in shapes.iter().enumerate() {
        fixture::paired_run(&mut s, *shape, &format!("2025-01-0{}T03:04:05Z", i + 1));
    }
    dir
}

fn row<'a>(paired: &'a Value, server: &str, response: &str) -> &'a Value {
    paired["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"]["server"] == server && r["key"]["response"] == response)
        .unwrap_or_else(|| panic!("no row {server} {response}"))
}

#[test]
fn ratios_and_their_intervals_are_the_arithmetic_of_the_repetitions() {
    let dir = db(&[HEALTHY]);
    let d = dir.path();
    let go = rps(d, 1, "go-nethttp", "normalized");
    let node = rps(d, 1, "node-http", "normalized");
    let twin = rps(d, 1, "go-nethttp", "default");
    // The drift moves every absolute figure by ±15 %…
    let spread =
        go.iter().cloned().fold(f64::MIN, f64::max) / go.iter().cloned().fold(f64::MAX, f64::min);
    assert!(spread > 1.3, "{go:?}");

    let j: Value = serde_json::from_str(&ok(
        d,
        &["report", "1", "--db", "results.db", "--format", "json"],
    ))
    .unwrap();
    let p = &j["paired"];
    assert_eq!(p["reference"], "go-nethttp/native/normalized");
    assert_eq!(p["reference_from"], "suite");
    assert_eq!(row(p, "go-nethttp", "normalized")["role"], "reference");
    let n = &row(p, "node-http", "normalized")["rps"];
    let (g, lo, hi) = expected(&node, &go);
    assert!(close(n["geomean"].as_f64().unwrap(), g), "{n}");
    assert!(close(n["low"].as_f64().unwrap(), lo), "{n} vs {lo}");
    assert!(close(n["high"].as_f64().unwrap(), hi), "{n} vs {hi}");
    assert_eq!(n["n"], 5);
    assert_eq!(n["level"], 0.95);
    // …but not the ratio: its interval is within ±2 % of 0.55.
    assert!(lo > 0.55 * 0.98 && hi < 0.55 * 1.02, "{lo} {hi}");
    assert_eq!(n["repetitions"], serde_json::json!([1, 2, 3, 4, 5]));

    let t = row(p, "go-nethttp", "default");
    assert_eq!(t["role"], "aa");
    let (tg, tlo, thi) = expected(&twin, &go);
    assert!(close(t["rps"]["geomean"].as_f64().unwrap(), tg));
    assert!(tlo < 1.0 && thi > 1.0);
    let aa = &p["aa"];
    assert_eq!(aa["passed"], true);
    let floor = 100.0 * (thi - 1.0).max(1.0 - tlo);
    assert!(
        close(aa["noise_floor_pct"].as_f64().unwrap(), floor),
        "{aa} vs {floor}"
    );
    let headline = aa["headline"].as_str().unwrap();
    assert!(
        headline.contains(&format!(
            "can tell apart differences larger than ±{floor:.1} %"
        )),
        "{headline}"
    );
}

#[test]
fn show_has_a_relative_column_and_the_a_a_line() {
    let dir = db(&[HEALTHY]);
    let d = dir.path();
    let text = ok(d, &["show", "1", "--db", "results.db"]);
    let header = text.lines().nth(1).unwrap();
    assert!(
        header.ends_with("relative to go-nethttp/native/normalized"),
        "{header}"
    );
    let (g, lo, hi) = expected(
        &rps(d, 1, "node-http", "normalized"),
        &rps(d, 1, "go-nethttp", "normalized"),
    );
    let cell = format!("{g:.2}× [{lo:.2}–{hi:.2}]");
    let node = text.lines().find(|l| l.starts_with("node-http")).unwrap();
    assert!(node.ends_with(&cell), "{node} should end with {cell}");
    let go = text
        .lines()
        .find(|l| l.contains("native/normalized") && l.starts_with("go-nethttp"))
        .unwrap();
    assert!(go.ends_with("reference"), "{go}");
    assert!(
        text.contains("A/A check passed: go-nethttp native/default vs go-nethttp native/normalized (static · 1 core · closed c=50) req/s ratio 1.00× ["),
        "{text}"
    );

    // --reference: node becomes the yardstick; go is about 1/0.55 of it.
    let text = ok(
        d,
        &[
            "show",
            "1",
            "--db",
            "results.db",
            "--reference",
            "node-http",
        ],
    );
    assert!(text
        .lines()
        .nth(1)
        .unwrap()
        .ends_with("relative to node-http"));
    let go = text
        .lines()
        .find(|l| l.contains("native/normalized") && l.starts_with("go-nethttp"))
        .unwrap();
    assert!(
        go.ends_with(&format!(
            "{:.2}× [{:.2}–{:.2}]",
            1.0 / g,
            1.0 / hi,
            1.0 / lo
        )),
        "{go}"
    );
    let j: Value = serde_json::from_str(&ok(
        d,
        &[
            "show",
            "1",
            "--db",
            "results.db",
            "--json",
            "--reference",
            "node-http",
        ],
    ))
    .unwrap();
    assert_eq!(j["paired"]["reference_from"], "--reference");
    assert_eq!(
        row(&j["paired"], "node-http", "normalized")["role"],
        "reference"
    );

    // A reference the run does not hold, or a malformed one: usage errors.
    for (flag, needle) in [
        ("rust-hyper", "--reference rust-hyper: no case of run 1 matches it (its variants: go-nethttp/native/default, go-nethttp/native/normalized, node-http/native/normalized)"),
        ("go/x", "--reference \"go/x\": expected a server name"),
    ] {
        let o = run_in(d, &["show", "1", "--db", "results.db", "--reference", flag]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{}", stderr(&o));
        assert_eq!(stderr(&o).lines().count(), 1, "one line: {}", stderr(&o));
    }
}

#[test]
fn every_report_format_carries_the_ratios() {
    let dir = db(&[HEALTHY]);
    let d = dir.path();
    let json: Value = serde_json::from_str(&ok(
        d,
        &["report", "1", "--db", "results.db", "--format", "json"],
    ))
    .unwrap();
    let node = &row(&json["paired"], "node-http", "normalized")["rps"];
    let headline = json["paired"]["aa"]["headline"]
        .as_str()
        .unwrap()
        .to_string();

    // HTML: the A/A line at the top, before the run table; a ratio chart
    // beside each absolute one, with its table.
    let html = ok(d, &["report", "1", "--db", "results.db", "-o", "-"]);
    let aa = html
        .find("<p id=\"aa-check\" class=\"aa\"><strong>A/A check passed")
        .expect("A/A line");
    assert!(aa < html.find("<h2 id=\"run\">").unwrap());
    assert!(html.contains("can tell apart differences larger than ±"));
    for (abs, ratio) in [
        ("chart-throughput-single", "chart-ratio-rps"),
        ("chart-latency-single", "chart-ratio-p99"),
        ("chart-cpu-per-request", "chart-ratio-cpu"),
    ] {
        let a = html
            .find(&format!("<svg id=\"{abs}\""))
            .unwrap_or_else(|| panic!("{abs}"));
        let r = html
            .find(&format!("<svg id=\"{ratio}\""))
            .unwrap_or_else(|| panic!("{ratio}"));
        let next_section = html[a..].find("</section>").unwrap() + a;
        assert!(
            a < r && r < next_section,
            "{ratio} follows {abs} in its section"
        );
    }
    let cell = format!(
        "<td class=\"num\" data-value=\"{}\">",
        node["geomean"].as_f64().unwrap()
    );
    let table = &html[html.find("<table id=\"table-ratio-rps\"").unwrap()..];
    assert!(
        table[..table.find("</table>").unwrap()].contains(&cell),
        "exact ratio in the table"
    );
    assert!(html.contains("(A/A)"), "the twin is labelled in the chart");

    // Markdown: the same line at the top and the ratio tables.
    let md = ok(d, &["report", "1", "--db", "results.db", "--format", "md"]);
    let first_section = md.find("## Run and machine").unwrap();
    assert!(
        md[..first_section].contains("A/A check passed"),
        "{}",
        &md[..first_section]
    );
    assert!(md.contains("### Throughput relative to go-nethttp/native/normalized"));
    assert!(md.contains("| A/A twin |"));

    // CSV: ratio columns appended, the same numbers as the JSON.
    let csv_text = ok(d, &["report", "1", "--db", "results.db", "--format", "csv"]);
    let mut r = csv::Reader::from_reader(csv_text.as_bytes());
    let h = r.headers().unwrap().clone();
    let col = |name: &str| {
        h.iter()
            .position(|c| c == name)
            .unwrap_or_else(|| panic!("{name}"))
    };
    assert_eq!(h.get(0), Some("run_id"));
    let rows: Vec<csv::StringRecord> = r.records().map(|x| x.unwrap()).collect();
    let node_row = rows
        .iter()
        .find(|x| &x[col("server")] == "node-http")
        .unwrap();
    assert_eq!(
        node_row[col("ratio_reference")],
        *"go-nethttp native/normalized"
    );
    assert_eq!(node_row[col("ratio_role")], *"compared");
    assert_eq!(
        node_row[col("rps_ratio")].parse::<f64>().unwrap(),
        node["geomean"].as_f64().unwrap()
    );
    assert_eq!(
        node_row[col("rps_ratio_low")].parse::<f64>().unwrap(),
        node["low"].as_f64().unwrap()
    );
    assert_eq!(node_row[col("rps_ratio_reps")], *"1;2;3;4;5");
    assert_eq!(node_row[col("ratio_level")], *"0.95");
    let twin = rows
        .iter()
        .find(|x| &x[col("response")] == "default")
        .unwrap();
    assert_eq!(twin[col("ratio_role")], *"aa");
    assert!(!headline.is_empty());

    // --reference on report.
    let j: Value = serde_json::from_str(&ok(
        d,
        &[
            "report",
            "1",
            "--db",
            "results.db",
            "--format",
            "json",
            "--reference",
            "node-http/native/normalized",
        ],
    ))
    .unwrap();
    assert_eq!(j["paired"]["reference"], "node-http/native/normalized");
    let o = run_in(
        d,
        &[
            "report",
            "1",
            "--db",
            "results.db",
            "--format",
            "json",
            "--reference",
            "nginx",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--reference nginx: no case of run 1"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_twin_that_moved_fails_the_check_loudly_everywhere() {
    let dir = db(&[PairedShape {
        twin: 0.9,
        ..HEALTHY
    }]);
    let d = dir.path();
    let html = ok(d, &["report", "1", "--db", "results.db", "-o", "-"]);
    assert!(html.contains("<p id=\"aa-check\" class=\"warn\"><strong>A/A CHECK FAILED: identical code measured differently"), "the failure is the first thing said");
    let show = ok(d, &["show", "1", "--db", "results.db"]);
    assert!(show.contains("A/A CHECK FAILED"), "{show}");
    let j: Value = serde_json::from_str(&ok(
        d,
        &["report", "1", "--db", "results.db", "--format", "json"],
    ))
    .unwrap();
    assert_eq!(j["paired"]["aa"]["passed"], false);
    assert!(j["paired"]["aa"]["noise_floor_pct"].as_f64().unwrap() > 8.0);
}

#[test]
fn compare_pairs_runs_and_sees_through_a_slower_machine() {
    // Run 2: the whole machine 20 % slower, node 10 % faster relative to go.
    let dir = db(&[
        HEALTHY,
        PairedShape {
            node: 0.55 * 1.10,
            machine: 0.80,
            ..HEALTHY
        },
    ]);
    let d = dir.path();
    let j: Value = serde_json::from_str(&ok(
        d,
        &[
            "compare",
            "1",
            "2",
            "--db",
            "results.db",
            "--format",
            "json",
        ],
    ))
    .unwrap();
    assert_eq!(j["pairing"]["paired"], true);
    assert_eq!(j["pairing"]["reference"], "go-nethttp/native/normalized");
    let case = |server: &str, response: &str| {
        j["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["key"]["server"] == server && c["key"]["response"] == response)
            .unwrap()
            .clone()
    };
    let node = case("node-http", "normalized");
    // Unpaired, node looks 12 % slower (0.8 × 1.1)…
    assert!(
        (node["rps"]["change_pct"].as_f64().unwrap() + 12.0).abs() < 0.5,
        "{node}"
    );
    // …paired, it is 10 % faster relative to go, within a tight interval.
    let p = &node["paired"]["rps"];
    assert!(
        (p["change_pct"].as_f64().unwrap() - 10.0).abs() < 0.5,
        "{p}"
    );
    assert!(
        p["ci_low_pct"].as_f64().unwrap() > 7.0 && p["ci_high_pct"].as_f64().unwrap() < 13.0,
        "{p}"
    );
    assert_eq!(p["significant"], true);
    assert_eq!(p["direction"], "better");
    let twin = &case("go-nethttp", "default")["paired"]["rps"];
    assert_eq!(twin["significant"], false, "{twin}");
    assert_eq!(
        case("go-nethttp", "normalized")["paired"]["is_reference"],
        true
    );

    let text = ok(d, &["compare", "1", "2", "--db", "results.db"]);
    assert!(
        text.contains("Paired relative to go-nethttp/native/normalized:"),
        "{text}"
    );
    assert!(text.contains("Δ vs go-nethttp/native/normalized (PAIRED)"));
    let line = text.lines().find(|l| l.starts_with("node-http")).unwrap();
    assert!(
        line.contains(&format!("{:+.1} %", p["change_pct"].as_f64().unwrap())),
        "{line}"
    );
    let md = ok(
        d,
        &["compare", "1", "2", "--db", "results.db", "--format", "md"],
    );
    assert!(
        md.contains("Δ vs go-nethttp/native/normalized (PAIRED) | VERDICT |"),
        "{md}"
    );

    // --reference on compare: relative to node, go's twin and go both moved.
    let j: Value = serde_json::from_str(&ok(
        d,
        &[
            "compare",
            "1",
            "2",
            "--db",
            "results.db",
            "--format",
            "json",
            "--reference",
            "node-http",
        ],
    ))
    .unwrap();
    assert_eq!(j["pairing"]["reference"], "node-http");
    let go = j["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["key"]["server"] == "go-nethttp" && c["key"]["response"] == "normalized")
        .unwrap();
    assert!(
        (go["paired"]["rps"]["change_pct"].as_f64().unwrap() - (100.0 / 1.1 - 100.0)).abs() < 0.5,
        "{go}"
    );
}

#[test]
fn compare_says_when_it_cannot_pair() {
    // Different repetition counts.
    let dir = db(&[
        HEALTHY,
        PairedShape {
            repetitions: 3,
            ..HEALTHY
        },
    ]);
    let d = dir.path();
    let text = ok(d, &["compare", "1", "2", "--db", "results.db"]);
    assert!(
        text.contains("Cannot pair relative to go-nethttp/native/normalized: run A has 5 repetitions per case and run B 3"),
        "{text}"
    );
    assert!(!text.contains("(PAIRED)"), "no paired column when unpaired");
    let j: Value = serde_json::from_str(&ok(
        d,
        &[
            "compare",
            "1",
            "2",
            "--db",
            "results.db",
            "--format",
            "json",
        ],
    ))
    .unwrap();
    assert_eq!(j["pairing"]["paired"], false);
    assert!(j["cases"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["paired"].is_null()));

    // The reference missing from B: a run of the standard fixture.
    let dir = tempfile::tempdir().unwrap();
    let mut s = store::Store::open(&dir.path().join("results.db")).unwrap();
    fixture::paired_run(
        &mut s,
        PairedShape {
            repetitions: 3,
            ..HEALTHY
        },
        "2025-01-01T00:00:00Z",
    );
    fixture::standard_run(&mut s, fixture::Flavour::Baseline);
    drop(s);
    let text = ok(
        dir.path(),
        &["compare", "1", "2", "--db", "results.db", "--format", "md"],
    );
    assert!(
        text.contains("Cannot pair relative to go-nethttp/native/normalized: the reference go-nethttp/native/normalized has no case in run B"),
        "{text}"
    );
}
