//! The database's figures wherever the server's are shown, on stored
//! fixture runs (src/report/fixture/ `db_run`: go-nethttp and node-http,
//! `json` without a database, `db` and `fortunes` with one; run 2 moves
//! node-http's `db` work into the database): its memory beside the
//! server's in `show` and the report, its columns in the CSV and JSON, the
//! pool per row, and `compare`'s database and server + database CPU per
//! request, so that moved work cannot pass for saved work. No PostgreSQL
//! is started: tests/db_scenarios.rs does that.

mod support;

use std::path::Path;

use fairbench::report::fixture::{self, DbFlavour, DB_VARIANTS};
use fairbench::store::{CaseRow, Store};
use fairbench::units;
use serde_json::Value;
use support::*;

/// results.db with the baseline run (1) and the moved-work run (2).
fn db_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&dir.path().join("results.db")).unwrap();
    fixture::db_run(&mut s, DbFlavour::Baseline, "2025-01-02T03:04:05Z");
    fixture::db_run(&mut s, DbFlavour::Moved, "2025-01-09T03:04:05Z");
    dir
}

fn cases(dir: &Path, run: i64) -> Vec<CaseRow> {
    Store::open_read_only(&dir.join("results.db"))
        .unwrap()
        .cases(run)
        .unwrap()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The median over a case's repetitions of `f`, from the stored rows.
fn stored(
    rows: &[CaseRow],
    server: &str,
    scenario: &str,
    f: impl Fn(&CaseRow) -> Option<f64>,
) -> f64 {
    let v: Vec<f64> = rows
        .iter()
        .filter(|c| c.server == server && c.scenario == scenario)
        .map(|c| f(c).expect("a stored value"))
        .collect();
    assert_eq!(v.len(), 3, "{server} {scenario}");
    median(v)
}

/// A terminal table's cells: columns are two spaces or more apart.
fn cells(line: &str) -> Vec<String> {
    line.split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(String::from)
        .collect()
}

/// The report's CSV of `run`: its header and its rows.
fn csv_of(dir: &Path, run: &str) -> (csv::StringRecord, Vec<csv::StringRecord>) {
    let text = ok(
        dir,
        &["report", run, "--db", "results.db", "--format", "csv"],
    );
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let head = r.headers().unwrap().clone();
    (head, r.records().map(Result::unwrap).collect())
}

/// Where column `name` is in `head`.
fn column(head: &csv::StringRecord, name: &str) -> usize {
    head.iter()
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("no column {name}"))
}

#[test]
fn show_puts_the_database_memory_beside_the_servers_and_the_pool_per_row() {
    let dir = db_dir();
    let out = ok(dir.path(), &["show", "1", "--db", "results.db"]);
    let lines: Vec<&str> = out.lines().collect();
    let head = cells(lines.iter().find(|l| l.starts_with("server")).unwrap());
    let at = |name: &str| {
        head.iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no column {name} in {head:?}"))
    };
    // Each database column right after the server's own.
    assert_eq!(at("DB CPU/req"), at("CPU/req") + 1, "{head:?}");
    assert_eq!(at("DB mem"), at("RSS") + 1, "{head:?}");
    assert_eq!(at("pool"), at("DB mem") + 1, "{head:?}");
    let rows = cases(dir.path(), 1);
    for (server, pool) in DB_VARIANTS.iter().map(|v| (v.0, v.6)) {
        for scenario in ["json", "db", "fortunes"] {
            let line = lines
                .iter()
                .find(|l| l.starts_with(server) && cells(l)[2] == scenario)
                .unwrap_or_else(|| panic!("no row {server} {scenario}:\n{out}"));
            let row = cells(line);
            assert_eq!(row.len(), head.len(), "{line}");
            if scenario == "json" {
                // No database ran: absent, not zero.
                for col in ["DB CPU/req", "DB mem", "pool"] {
                    assert_eq!(row[at(col)], "-", "{col} of {line}");
                }
                continue;
            }
            let mem = stored(&rows, server, scenario, |c| {
                c.db_memory_peak.map(|v| v as f64)
            });
            assert_eq!(row[at("DB mem")], units::bytes(mem as u64), "{line}");
            assert_eq!(row[at("pool")], pool.to_string(), "{line}");
            let db_cpu = stored(&rows, server, scenario, |c| c.db_cpu_us_per_request);
            assert_eq!(row[at("DB CPU/req")], format!("{db_cpu:.1} µs"), "{line}");
        }
    }
    assert!(
        out.contains("DB mem: the peak memory of its control group"),
        "{out}"
    );

    let j: Value = serde_json::from_str(&ok(
        dir.path(),
        &["show", "1", "--db", "results.db", "--json"],
    ))
    .unwrap();
    for c in j["cases"].as_array().unwrap() {
        let with_db = c["scenario"] != "json";
        for f in ["db_memory_peak", "db_pool", "db_cpu_us_per_request"] {
            assert_eq!(c.get(f).is_some(), with_db, "{f} of {c}");
        }
    }
}

#[test]
fn the_report_shows_database_memory_total_cpu_and_pool_per_row() {
    let dir = db_dir();
    ok(
        dir.path(),
        &["report", "1", "--db", "results.db", "-o", "r.html"],
    );
    let html = std::fs::read_to_string(dir.path().join("r.html")).unwrap();
    let rows = cases(dir.path(), 1);

    let (head, body) = html_table(&html, "table-rss-peak");
    let col = |name: &str| head.iter().position(|h| h == name).unwrap();
    let (rss, db_mem) = (
        col("peak RSS bytes median"),
        col("DB memory peak bytes median"),
    );
    assert_eq!(db_mem, col("max") + 1, "beside the server's: {head:?}");
    assert_eq!(body.len(), 6, "every case, with or without a database");
    for r in &body {
        let server = r[0].0.split(' ').next().unwrap();
        let scenario = r[1].0.as_str();
        assert!(r[rss].1.is_some(), "{server} {scenario}: the server's RSS");
        if scenario == "json" {
            assert_eq!((r[db_mem].0.as_str(), r[db_mem].1), ("—", None));
        } else {
            let want = stored(&rows, server, scenario, |c| {
                c.db_memory_peak.map(|v| v as f64)
            });
            assert_eq!(r[db_mem].1, Some(want), "{server} {scenario}");
        }
    }
    assert!(html.contains("Peak memory: server (RSS) and database"));

    let (head, body) = html_table(&html, "table-db-cpu-per-request");
    let col = |name: &str| head.iter().position(|h| h == name).unwrap();
    assert_eq!(body.len(), 4, "the database cases only: {body:?}");
    for r in &body {
        let server = r[0].0.split(' ').next().unwrap();
        let scenario = r[1].0.as_str();
        let v = |name: &str| r[col(name)].1.unwrap();
        let total = stored(&rows, server, scenario, |c| {
            Some(c.server_cpu_us_per_request? + c.db_cpu_us_per_request?)
        });
        assert!((v("server + DB CPU µs/req median") - total).abs() < 1e-9);
        assert!(
            (v("DB CPU µs/req median")
                - stored(&rows, server, scenario, |c| c.db_cpu_us_per_request))
            .abs()
                < 1e-9
        );
        let pool = DB_VARIANTS.iter().find(|x| x.0 == server).unwrap().6;
        assert_eq!(v("pool"), pool as f64, "{server}");
    }

    // Markdown: the same tables.
    let md = ok(
        dir.path(),
        &["report", "1", "--db", "results.db", "--format", "md"],
    );
    assert!(
        md.contains("### Peak memory: server (RSS) and database"),
        "{md}"
    );
    assert!(md.contains("| DB memory peak bytes median |"));
    assert!(md.contains("| server + DB CPU µs/req median |"));
    assert!(md.contains("| pool |"));
}

#[test]
fn csv_and_json_carry_the_database_columns_empty_without_a_database() {
    let dir = db_dir();
    let rows = cases(dir.path(), 1);
    let (head, records) = csv_of(dir.path(), "1");
    let col = |name: &str| column(&head, name);
    let db_cols = [
        "db_cpu_s",
        "db_cpu_us_per_request",
        "total_cpu_us_per_request",
        "db_memory_peak",
        "db_cpus",
        "db_pool",
    ];
    assert_eq!(records.len(), 6);
    for rec in &records {
        let (server, scenario) = (&rec[col("server")], &rec[col("scenario")]);
        if scenario == "json" {
            for c in db_cols {
                assert_eq!(&rec[col(c)], "", "{c} of {server} json");
            }
            continue;
        }
        let f = |c: &str| rec[col(c)].parse::<f64>().unwrap();
        let s = |f: fn(&CaseRow) -> Option<f64>| stored(&rows, server, scenario, f);
        assert!((f("db_cpu_s") - s(|c| c.db_cpu_s)).abs() < 1e-12);
        assert!((f("db_cpu_us_per_request") - s(|c| c.db_cpu_us_per_request)).abs() < 1e-9);
        assert!((f("total_cpu_us_per_request") - s(|c| c.total_cpu_us_per_request())).abs() < 1e-9);
        assert_eq!(
            f("db_memory_peak"),
            s(|c| c.db_memory_peak.map(|v| v as f64))
        );
        assert_eq!(&rec[col("db_cpus")], "0");
        let pool = DB_VARIANTS.iter().find(|x| x.0 == server).unwrap().6;
        assert_eq!(f("db_pool"), pool as f64);
    }

    let json: Value = serde_json::from_str(&ok(
        dir.path(),
        &["report", "1", "--db", "results.db", "--format", "json"],
    ))
    .unwrap();
    let groups = json["groups"].as_array().unwrap();
    for g in groups {
        let fields = [
            "db_cpu_s",
            "db_cpu_us_per_request",
            "total_cpu_us_per_request",
            "db_memory_peak",
            "db_cpus",
            "db_pool",
        ];
        let with_db = g["key"]["scenario"] != "json";
        for f in fields {
            assert_eq!(g.get(f).is_some(), with_db, "{f} of {}", g["key"]);
        }
        if with_db {
            assert_eq!(g["db_memory_peak"]["values"].as_array().unwrap().len(), 3);
        }
    }
}

#[test]
fn compare_shows_work_moved_into_the_database() {
    let dir = db_dir();
    let text = ok(dir.path(), &["compare", "1", "2", "--db", "results.db"]);
    let head = cells(text.lines().find(|l| l.starts_with("VARIANT")).unwrap());
    let at = |name: &str| head.iter().position(|h| h == name).unwrap();
    assert_eq!(at("Δ DB CPU/REQ"), at("Δ CPU/REQ") + 1, "{head:?}");
    assert_eq!(at("Δ SERVER+DB CPU/REQ"), at("Δ CPU/REQ") + 2, "{head:?}");
    assert!(
        text.lines().any(
            |l| l.starts_with("note: node-http native/normalized — db · ")
                && l.contains("work moved into the database is not work saved")
        ),
        "{text}"
    );
    // Once unpaired, once relative to the reference (paired).
    let moved: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("work moved into the database is not work saved"))
        .collect();
    assert_eq!(
        moved.len(),
        2,
        "only node-http's db case moved work: {text}"
    );
    assert!(
        moved.iter().any(|l| l.starts_with(
            "note: node-http native/normalized — db · "
        ) && l.contains(
            "(paired): relative to go-nethttp native/normalized, server CPU per request -30.0 % but server + database +5.9 % (significant)"
        )),
        "{text}"
    );
    assert!(text.contains("Δ SERVER+DB CPU/REQ: the server's and the database's added up"));

    let v: Value = serde_json::from_str(&ok(
        dir.path(),
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
    let case = |server: &str, scenario: &str| {
        v["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["key"]["server"] == server && c["key"]["scenario"] == scenario)
            .unwrap()
            .clone()
    };
    let moved = case("node-http", "db");
    // The server alone looks 30 % cheaper; the stack costs 6 % more.
    assert_eq!(moved["cpu_us_per_request"]["direction"], "better");
    assert_eq!(moved["db_cpu_us_per_request"]["direction"], "worse");
    assert_eq!(moved["total_cpu_us_per_request"]["direction"], "worse");
    let total_pct = moved["total_cpu_us_per_request"]["change_pct"]
        .as_f64()
        .unwrap();
    assert!((total_pct - 5.88).abs() < 0.1, "{total_pct}");
    assert!(moved["db_note"].as_str().unwrap().contains("-30.0 %"));
    // Relative to go-nethttp, repetition by repetition: the same story.
    let p = &moved["paired"];
    assert_eq!(p["cpu_us_per_request"]["direction"], "better");
    assert_eq!(p["total_cpu_us_per_request"]["direction"], "worse");
    let paired_pct = p["total_cpu_us_per_request"]["change_pct"]
        .as_f64()
        .unwrap();
    // (90 ÷ 50) ÷ (85 ÷ 50): node-http's stack against go-nethttp's.
    assert!(
        (paired_pct - (90.0 / 85.0 - 1.0) * 100.0).abs() < 1e-6,
        "{paired_pct}"
    );
    assert!(p["db_note"].as_str().unwrap().contains("-30.0 %"), "{p}");
    let same = case("go-nethttp", "db");
    assert_eq!(same["total_cpu_us_per_request"]["direction"], "same");
    assert!(same.get("db_note").is_none());
    let fortunes = case("node-http", "fortunes")["paired"].clone();
    assert_eq!(fortunes["total_cpu_us_per_request"]["direction"], "same");
    assert!(fortunes.get("db_note").is_none(), "{fortunes}");
    let json_case = case("node-http", "json");
    for f in [
        "db_cpu_us_per_request",
        "total_cpu_us_per_request",
        "db_note",
    ] {
        assert!(json_case.get(f).is_none(), "{f}: no database in json");
        assert!(
            json_case["paired"].get(f).is_none(),
            "paired {f}: no database in json"
        );
    }

    let md = ok(
        dir.path(),
        &["compare", "1", "2", "--db", "results.db", "--format", "md"],
    );
    assert!(
        md.contains("| Δ CPU/REQ | Δ DB CPU/REQ | Δ SERVER+DB CPU/REQ |"),
        "{md}"
    );
    assert!(md.contains("work moved into the database is not work saved"));
}

#[test]
fn runs_without_a_database_keep_their_columns() {
    let dir = tempfile::tempdir().unwrap();
    fixture::standard_db(&dir.path().join("results.db"));
    let show = ok(dir.path(), &["show", "1", "--db", "results.db"]);
    assert!(!show.contains("DB mem") && !show.contains("pool"), "{show}");
    let cmp = ok(dir.path(), &["compare", "1", "2", "--db", "results.db"]);
    assert!(!cmp.contains("DB CPU"), "{cmp}");
    let md = ok(
        dir.path(),
        &["report", "1", "--db", "results.db", "--format", "md"],
    );
    assert!(md.contains("### Peak server memory (RSS)"));
    assert!(!md.contains("DB memory") && !md.contains("Database CPU"));
}

/// Not a test: writes the database fixture (both runs) to
/// $FAIRBENCH_FIXTURE_OUT for looking at by hand
/// (`cargo test --test db_columns write_db_fixture -- --ignored`).
#[test]
#[ignore]
fn write_db_fixture() {
    let out = std::env::var("FAIRBENCH_FIXTURE_OUT").expect("FAIRBENCH_FIXTURE_OUT");
    let _ = std::fs::remove_file(&out);
    let mut s = Store::open(Path::new(&out)).unwrap();
    fixture::db_run(&mut s, DbFlavour::Baseline, "2025-01-02T03:04:05Z");
    fixture::db_run(&mut s, DbFlavour::Moved, "2025-01-09T03:04:05Z");
}

#[test]
fn the_paired_ratio_of_server_plus_database_shows_moved_work() {
    let dir = db_dir();
    ok(
        dir.path(),
        &["report", "2", "--db", "results.db", "-o", "r2.html"],
    );
    let html = std::fs::read_to_string(dir.path().join("r2.html")).unwrap();
    let ratio_of = |table: &str, server: &str, scenario: &str| {
        let (head, body) = html_table(&html, table);
        let col = head.iter().position(|h| h == "ratio").unwrap();
        let row = body
            .iter()
            .find(|r| r[0].0.starts_with(server) && r[1].0 == scenario)
            .unwrap_or_else(|| panic!("{table}: no {server} {scenario}"));
        row[col].1
    };
    // In run 2 node-http's own CPU per request is 42 µs against
    // go-nethttp's 30 (1.4×); with the database's, 90 against 50 (1.8×).
    let server = ratio_of("table-ratio-cpu", "node-http", "db").unwrap();
    let total = ratio_of("table-ratio-total-cpu", "node-http", "db").unwrap();
    assert!((server - 1.4).abs() < 1e-6, "{server}");
    assert!((total - 1.8).abs() < 1e-6, "{total}");
    // Only the contexts with a database have the total's rows.
    let (_, body) = html_table(&html, "table-ratio-total-cpu");
    assert!(body.iter().all(|r| r[1].0 != "json"), "{body:?}");
    assert_eq!(body.len(), 4);
    // JSON: the ratio beside the server's, left out without a database.
    let v: Value = serde_json::from_str(&ok(
        dir.path(),
        &["report", "2", "--db", "results.db", "--format", "json"],
    ))
    .unwrap();
    for row in v["paired"]["rows"].as_array().unwrap() {
        let has = row.get("total_cpu_us_per_request").is_some();
        let compared = row["role"] != "reference" && row["key"]["scenario"] != "json";
        assert_eq!(has, compared, "{row}");
    }
    // CSV: the total's ratio beside the server's, with its interval.
    let (head, records) = csv_of(dir.path(), "2");
    let col = |name: &str| column(&head, name);
    assert_eq!(col("total_cpu_ratio"), col("cpu_ratio_high") + 1);
    let mut seen = 0;
    for rec in &records {
        let (server, scenario) = (&rec[col("server")], &rec[col("scenario")]);
        let cells = [
            &rec[col("total_cpu_ratio")],
            &rec[col("total_cpu_ratio_low")],
            &rec[col("total_cpu_ratio_high")],
        ];
        if scenario == "json" || server == "go-nethttp" {
            assert_eq!(cells, ["", "", ""], "{server} {scenario}");
            continue;
        }
        let v: Vec<f64> = cells.iter().map(|c| c.parse().unwrap()).collect();
        let want = if scenario == "db" { 1.8 } else { 85.0 / 50.0 };
        assert!((v[0] - want).abs() < 1e-6, "{server} {scenario}: {v:?}");
        assert!(v[1] <= v[0] && v[0] <= v[2], "{server} {scenario}: {v:?}");
        let server_ratio: f64 = rec[col("cpu_ratio")].parse().unwrap();
        if scenario == "db" {
            assert!((server_ratio - 1.4).abs() < 1e-6, "{server_ratio}");
        }
        seen += 1;
    }
    assert_eq!(seen, 2, "node-http's db and fortunes");
}
