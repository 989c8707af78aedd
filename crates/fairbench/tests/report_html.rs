//! Structural checks of the HTML report on the fixture database: every chart
//! is there with its title and axis labels, the tables hold exactly the
//! database's numbers, colours stay with their server, nothing external is
//! referenced, hostile strings stay text; plus `--hdr`, the default output
//! file, and the errors for a missing database or run.

mod support;

use std::collections::BTreeMap;
use std::path::Path;

use fairbench::report::fixture;
use fairbench::store;
use rusqlite::Connection;
use support::*;

fn fixture_report() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    fixture::standard_db(&dir.path().join("results.db"));
    ok(
        dir.path(),
        &["report", "1", "--db", "results.db", "-o", "report.html"],
    );
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    (dir, html)
}

/// The `<svg id="{id}" …>…</svg>` of a chart.
fn svg<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("<svg id=\"{id}\""))
        .unwrap_or_else(|| panic!("chart {id} missing"));
    let end = start + html[start..].find("</svg>").unwrap();
    &html[start..end]
}

#[test]
fn every_chart_is_present_with_title_axes_and_table() {
    let (_dir, html) = fixture_report();
    let charts: &[(&str, &[&str])] = &[
        (
            "throughput-single",
            &["Throughput, single core", "requests per second (req/s)"],
        ),
        (
            "throughput-multi",
            &["Throughput, multi-core", "requests per second (req/s)"],
        ),
        (
            "latency-single",
            &["Mean and p99 latency, single core", "latency (µs)"],
        ),
        (
            "latency-multi",
            &["Mean and p99 latency, multi-core", "latency (µs)"],
        ),
        ("requests", &["Total requests per case", "requests (count)"]),
        (
            "timeouts",
            &[
                "Timeouts per million requests",
                "timeouts per million requests",
            ],
        ),
        (
            "spectrum-1",
            &[
                "Latency by percentile — static · 1 core",
                "percentile (log scale of nines)",
                "latency (ms)",
                "99.9%",
            ],
        ),
        (
            "spectrum-4",
            &[
                "Latency by percentile — dynamic · 2 cores",
                "percentile (log scale of nines)",
            ],
        ),
        (
            "scaling-1",
            &[
                "Core scaling — static",
                "cores given to the server",
                "requests per second (req/s)",
            ],
        ),
        (
            "scaling-2",
            &["Core scaling — dynamic", "cores given to the server"],
        ),
        (
            "warmup-1",
            &[
                "Warm-up — static · 1 core",
                "time since the load began (s)",
                "measurement starts",
            ],
        ),
        (
            "warmup-4",
            &["Warm-up — dynamic · 2 cores", "requests per second (req/s)"],
        ),
        (
            "cpu-per-request",
            &[
                "Server CPU time per request",
                "CPU microseconds per request (µs)",
            ],
        ),
        ("rss-peak", &["Peak server memory (RSS)", "peak RSS (MiB)"]),
        (
            "ratio-rps",
            &[
                "Throughput relative to go-nethttp",
                "req/s relative to the reference (×, log scale)",
                "static · 1 core · closed c=50 t=1 — reference: go-nethttp default/normalized",
                "0.60× [0.60–0.60]",
            ],
        ),
        (
            "ratio-p99",
            &["p99 latency relative to go-nethttp", "1.67× [1.66–1.67]"],
        ),
        (
            "ratio-cpu",
            &[
                "Server CPU per request relative to go-nethttp",
                "1.47× [1.47–1.47]",
            ],
        ),
        (
            "cores-in-use",
            &["Server cores in use", "cores busy", "busiest second"],
        ),
        (
            "sweep-1",
            &[
                "Latency against offered rate — static · 1 core",
                "offered rate (req/s)",
                "knee go-nethttp: 4,000 req/s",
                "knee dart-shelf: 2,000 req/s",
                "objective: p99 ≤ 10.0 ms",
            ],
        ),
    ];
    for (id, texts) in charts {
        let s = svg(&html, &format!("chart-{id}"));
        assert!(
            s.contains(&format!("<title id=\"chart-{id}-t\">")),
            "{id}: no <title>"
        );
        for t in *texts {
            assert!(s.contains(t), "{id}: `{t}` not in the chart");
        }
        // Exact values on hover: marks carry <title> children.
        assert!(s.matches("<title>").count() >= 3, "{id}: no hover values");
        assert!(
            html.contains(&format!("<table id=\"table-{id}\"")),
            "{id}: no table"
        );
    }
    assert_eq!(
        html.matches("<svg id=\"chart-").count(),
        charts.len() + 2 + 2,
        "spectrum-2/3 and warmup-2/3 too"
    );
    for section in [
        "parity",
        "problems",
        "throughput",
        "latency",
        "volume",
        "spectrum",
        "scaling",
        "warmup",
        "resources",
        "sweeps",
        "method",
    ] {
        assert!(
            html.contains(&format!("<section id=\"{section}\">")),
            "section {section}"
        );
    }
}

fn key_of(row: &[(String, Option<f64>)]) -> (String, String, String, i64, String) {
    let (server, variant) = row[0].0.split_once(' ').unwrap();
    (
        server.to_string(),
        variant.to_string(),
        row[1].0.clone(),
        row[2].1.unwrap() as i64,
        row[3].0.clone(),
    )
}

/// Done values of one column for one case key, from the database directly.
fn db_values(
    conn: &Connection,
    col: &str,
    key: &(String, String, String, i64, String),
) -> Vec<f64> {
    let (mode, response) = key.1.split_once('/').unwrap();
    let mut st = conn
        .prepare(&format!(
            "SELECT {col} FROM cases WHERE run_id = 1 AND state = 'done' AND sweep IS NULL AND server = ?1
               AND mode = ?2 AND response = ?3 AND scenario = ?4 AND cores = ?5 AND load_label = ?6 ORDER BY repetition"
        ))
        .unwrap();
    st.query_map(
        rusqlite::params![key.0, mode, response, key.2, key.3, key.4],
        |r| r.get::<_, f64>(0),
    )
    .unwrap()
    .map(|v| v.unwrap())
    .collect()
}

fn column(header: &[String], name: &str) -> usize {
    header
        .iter()
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("column {name} in {header:?}"))
}

#[test]
fn table_values_equal_the_database() {
    let (dir, html) = fixture_report();
    let conn = Connection::open(dir.path().join("results.db")).unwrap();
    let mut checked = 0;
    for (table, checks) in [
        (
            "table-throughput-single",
            vec![
                ("req/s median", "rps"),
                ("CI low", "min:rps"),
                ("CI high", "max:rps"),
            ],
        ),
        (
            "table-throughput-multi",
            vec![("req/s median", "rps"), ("1-s stdev", "rps_stdev")],
        ),
        (
            "table-latency-single",
            vec![
                ("mean µs", "lat_mean"),
                ("p50 µs", "lat_p50"),
                ("p99 µs", "lat_p99"),
                ("p99.9 µs", "lat_p999"),
                ("max µs", "lat_max"),
            ],
        ),
        (
            "table-latency-multi",
            vec![("p90 µs", "lat_p90"), ("p99 µs", "lat_p99")],
        ),
        (
            "table-requests",
            vec![
                ("requests median", "requests"),
                ("min", "min:requests"),
                ("max", "max:requests"),
            ],
        ),
        (
            "table-timeouts",
            vec![("timeouts/M median", "timeouts_per_million")],
        ),
        (
            "table-cpu-per-request",
            vec![("CPU µs/req median", "server_cpu_us_per_request")],
        ),
        (
            "table-rss-peak",
            vec![("peak RSS bytes median", "server_rss_peak")],
        ),
    ] {
        let (header, rows) = html_table(&html, table);
        assert_eq!(
            rows.len(),
            if table.contains("single") || table.contains("multi") {
                6
            } else {
                12
            },
            "{table}"
        );
        for row in &rows {
            let key = key_of(row);
            assert_eq!(
                row[column(&header, "reps")].1.unwrap() as usize,
                db_values(&conn, "rps", &key).len()
            );
            for (col, spec) in &checks {
                let (agg, db_col) = spec.split_once(':').unwrap_or(("median", spec));
                let mut vals = db_values(&conn, db_col, &key);
                let expected = match agg {
                    "min" => vals.iter().copied().fold(f64::INFINITY, f64::min),
                    "max" => vals.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                    _ => median(&mut vals),
                };
                let got = row[column(&header, col)]
                    .1
                    .unwrap_or_else(|| panic!("{table} {col}: no value"));
                assert_eq!(got, expected, "{table} {key:?} {col}");
                checked += 1;
            }
        }
    }
    assert!(checked > 100, "{checked}");

    // Parity: bytes as the check stored them.
    let (header, rows) = html_table(&html, "table-parity");
    assert_eq!(rows.len(), 6);
    for row in &rows {
        let (server, variant) = row[0].0.split_once(' ').unwrap();
        let (mode, response) = variant.split_once('/').unwrap();
        let (hb, bb): (i64, i64) = conn
            .query_row(
                "SELECT header_bytes, body_bytes FROM cases WHERE run_id = 1 AND server = ?1 AND mode = ?2 AND response = ?3 AND scenario = ?4 LIMIT 1",
                rusqlite::params![server, mode, response, row[1].0],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(row[column(&header, "header B")].1, Some(hb as f64));
        assert_eq!(row[column(&header, "body B")].1, Some(bb as f64));
        assert_eq!(row[column(&header, "total B")].1, Some((hb + bb) as f64));
    }
    assert!(html.contains("extra-headers: warn — x-powered-by: Dart with package:shelf"));

    // Sweeps: knees as stored.
    let (header, rows) = html_table(&html, "table-sweep-1");
    assert_eq!(rows.len(), 6);
    let knees: BTreeMap<String, f64> = conn
        .prepare("SELECT server, knee_rps FROM sweeps WHERE run_id = 1")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(|x| x.unwrap())
        .collect();
    for row in &rows {
        let server = row[0].0.split(' ').next().unwrap();
        assert_eq!(row[column(&header, "knee req/s")].1, Some(knees[server]));
    }
}

#[test]
fn one_colour_per_server_everywhere() {
    let (_dir, html) = fixture_report();
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    let mut check = |server: &str, colour: &str| {
        let prev = seen
            .entry(server.to_string())
            .or_insert_with(|| colour.to_string());
        assert_eq!(prev, colour, "{server} drawn in two colours");
    };
    // Table swatches.
    for part in html.split("<span class=\"sw\" style=\"background:").skip(1) {
        let colour = &part[..7];
        let text = &part[part.find("</span>").unwrap() + 7..];
        check(text.split([' ', '<']).next().unwrap(), colour);
    }
    // Bars: fill, then the tooltip naming the variant.
    let mut bars = 0;
    for part in html.split("<rect ").skip(1) {
        let open = &part[..part.find('>').unwrap()];
        if let (Some(f), true) = (
            open.find("fill=\""),
            part[open.len()..].starts_with("><title>"),
        ) {
            let colour = &open[f + 6..f + 13];
            let tip = &part[open.len() + 8..];
            if tip.starts_with("go-nethttp") || tip.starts_with("dart-shelf") {
                check(tip.split(' ').next().unwrap(), colour);
                bars += 1;
            }
        }
    }
    assert!(bars > 50, "{bars}");
    assert_eq!(seen.len(), 2);
    assert_ne!(seen["go-nethttp"], seen["dart-shelf"]);
    // Okabe–Ito: sorted server names take the palette in order.
    assert_eq!(seen["dart-shelf"], "#0072B2");
    assert_eq!(seen["go-nethttp"], "#E69F00");
}

#[test]
fn the_page_references_nothing_outside_itself() {
    let (_dir, html) = fixture_report();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src &#39;none&#39;;"
    ));
    for bad in [
        "http://", "https://", "<script", "<link", "<img", "<iframe", " src=", "@import", "url(",
    ] {
        assert!(!html.contains(bad), "the report contains `{bad}`");
    }
    for part in html.split("href=\"").skip(1) {
        assert!(
            part.starts_with('#'),
            "non-local link: {}",
            &part[..part.find('"').unwrap()]
        );
    }
}

#[test]
fn hostile_strings_stay_text_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let run = {
        let mut s = store::Store::open(&dir.path().join("results.db")).unwrap();
        fixture::hostile_run(&mut s)
    }
    .to_string();
    let args = |fmt: &str| {
        vec![
            "report".to_string(),
            run.clone(),
            "--db".into(),
            "results.db".into(),
            "--format".into(),
            fmt.into(),
            "-o".into(),
            "-".into(),
        ]
    };
    let get = |fmt: &str| {
        ok(
            dir.path(),
            &args(fmt).iter().map(String::as_str).collect::<Vec<_>>(),
        )
    };

    let html = get("html");
    for raw in ["<script", "<img", "</pre><", "\x07", "\r"] {
        assert!(
            !html.contains(raw),
            "raw `{}` in the HTML",
            raw.escape_debug()
        );
    }
    assert!(html.contains("evil&lt;script&gt;alert(1)&lt;/script&gt;&quot;q&#39;\\x07\\r\\nx"));
    assert!(
        html.contains("&lt;/pre&gt;&lt;img src=x onerror=alert(3)&gt;"),
        "log tail escaped"
    );
    assert!(html.contains("warning&lt;script&gt;"), "warnings escaped");
    assert!(
        html.contains("\\r\n\\r\n&lt;/pre&gt;&lt;script&gt;alert(4)&lt;/script&gt;"),
        "raw response escaped, CR shown"
    );
    assert!(
        html.contains("X-Evil&lt;script&gt;"),
        "header names escaped"
    );
    assert!(html.contains("reason&lt;script&gt;"), "reason escaped");
    assert!(
        html.contains("got header X-Evil: &lt;script&gt;"),
        "rule detail escaped"
    );

    // CSV: parseable, the strings shown by the one escaping rule.
    let csv_text = get("csv");
    let mut r = csv::Reader::from_reader(csv_text.as_bytes());
    let header = r.headers().unwrap().clone();
    let rows: Vec<csv::StringRecord> = r.records().map(|x| x.unwrap()).collect();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].len(), header.len());
    let server = header.iter().position(|h| h == "server").unwrap();
    let shown = fairbench_sys::text::visible;
    assert_eq!(
        &rows[0][server],
        shown(&format!("evil{}", fixture::HOSTILE))
    );
    let notes = header.iter().position(|h| h == "notes").unwrap();
    assert!(rows[0][notes].contains(&shown(&format!("warning{}", fixture::HOSTILE))));

    // Markdown: no live markup, one table row per line.
    let md = get("md");
    let mut fence: Option<String> = None;
    for line in md.lines() {
        let ticks: String = line.chars().take_while(|c| *c == '`').collect();
        match &fence {
            Some(f) if line.trim_end() == f => fence = None,
            Some(_) => {} // code: shown verbatim by any Markdown renderer
            None if ticks.len() >= 3 => fence = Some(ticks),
            None => {
                let b = line.as_bytes();
                for (i, c) in b.iter().enumerate() {
                    if *c == b'<' {
                        assert!(
                            i > 0 && b[i - 1] == b'\\',
                            "unescaped `<` in Markdown: {line}"
                        );
                    }
                }
            }
        }
    }
    assert!(fence.is_none(), "unclosed code fence");
    assert!(!md.contains('\r') && !md.contains('\x07'));
    assert!(md.contains("evil\\<script\\>alert(1)\\</script\\>\"q'\\x07\\r\\nx"));

    // JSON: the strings exact.
    let v: serde_json::Value = serde_json::from_str(&get("json")).unwrap();
    assert_eq!(v["servers"][0]["name"], format!("evil{}", fixture::HOSTILE));
}

#[test]
fn hdr_logs_are_written_per_repetition() {
    let dir = tempfile::tempdir().unwrap();
    fixture::standard_db(&dir.path().join("results.db"));
    ok(
        dir.path(),
        &[
            "report",
            "1",
            "--db",
            "results.db",
            "--format",
            "json",
            "-o",
            "r.json",
            "--hdr",
            "hdr",
        ],
    );
    let mut files: Vec<_> = std::fs::read_dir(dir.path().join("hdr"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 41, "one log per finished case");
    let f = files
        .iter()
        .find(|p| {
            p.to_string_lossy()
                .contains("go-nethttp-default-normalized-static-c1-closed_c_50_t_1-r1")
        })
        .expect("named by case");
    let bytes = std::fs::read(f).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    assert!(
        text.contains("#[StartTime: 1735787045"),
        "start time is the case's: {}",
        &text[..300]
    );
    let mut n = 0;
    for entry in hdrhistogram::serialization::interval_log::IntervalLogIterator::new(&bytes) {
        if let hdrhistogram::serialization::interval_log::LogEntry::Interval(i) = entry.unwrap() {
            let blob = base64_decode(i.encoded_histogram());
            let h: hdrhistogram::Histogram<u64> = hdrhistogram::serialization::Deserializer::new()
                .deserialize(&mut &blob[..])
                .unwrap();
            assert_eq!(h.len(), 100);
            n += 1;
        }
    }
    assert_eq!(n, 10, "one interval per measured second");
    assert!(!Path::new(&dir.path().join("report-1.html")).exists());
}

#[test]
fn default_output_is_report_run_html() {
    let dir = tempfile::tempdir().unwrap();
    fixture::standard_db(&dir.path().join("results.db"));
    let o = run_in(dir.path(), &["report", "1", "--db", "results.db"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("wrote report-1.html"), "{}", stderr(&o));
    assert!(dir.path().join("report-1.html").is_file());
}

#[test]
fn missing_database_or_run_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let o = run_in(dir.path(), &["report", "--db", "nope.db"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("no results database at nope.db"),
        "{}",
        stderr(&o)
    );
    assert!(
        !dir.path().join("nope.db").exists(),
        "a report must not create a database"
    );

    drop(store::Store::open(&dir.path().join("empty.db")).unwrap());
    let o = run_in(dir.path(), &["report", "--db", "empty.db"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("empty.db holds no runs yet"),
        "{}",
        stderr(&o)
    );

    fixture::standard_db(&dir.path().join("results.db"));
    let o = run_in(dir.path(), &["report", "9", "--db", "results.db"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("no run 9 in results.db"),
        "{}",
        stderr(&o)
    );
    assert_eq!(stderr(&o).lines().count(), 1, "one line: {}", stderr(&o));

    let o = run_in(dir.path(), &["report", "abc", "--db", "results.db"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "a malformed run id is a usage error"
    );
}
