//! `load --export-csv` and `--export-markdown`: the load's JSON document
//! (the one source of its figures) as the table a CI job keeps. Each form
//! of `load` has its table: one URL (or several generators) its
//! per-second series in CSV and its summary in Markdown; `--vs` each
//! repetition of each side, and the paired ratios; `--knee` each step.
//! Strings from servers and URLs are data: quoted by the csv crate, escaped
//! for Markdown.

use serde_json::Value;

use crate::report::escape;
use crate::report::json_doc::Doc;

/// A column: its header and where its value is in a row (`a.b` for a
/// nested field).
type Column = (&'static str, &'static str);

const SERIES: &[Column] = &[
    ("second", "second"),
    ("phase", "phase"),
    ("start_s", "start_s"),
    ("duration_s", "duration_s"),
    ("requests", "requests"),
    ("errors", "errors"),
    ("bytes", "bytes"),
    ("p50_us", "p50_us"),
    ("p99_us", "p99_us"),
];

const REPETITION: &[Column] = &[
    ("requests", "requests"),
    ("planned", "planned"),
    ("errors", "errors"),
    ("rps", "rps"),
    ("p50_us", "latency_us.p50"),
    ("p90_us", "latency_us.p90"),
    ("p99_us", "latency_us.p99"),
    ("max_us", "latency_us.max"),
];

const STEP: &[Column] = &[
    ("offered_rps", "offered_rps"),
    ("answered_rps", "answered_rps"),
    ("p50_us", "p50_us"),
    ("at_quantile_us", "at_quantile_us"),
    ("lateness_p99_us", "lateness_p99_us"),
    ("errors", "errors"),
    ("judged", "judged"),
];

/// The document `v` (of kind `doc`) as CSV, RFC 4180 with a header row.
pub fn csv(doc: Doc, v: &Value) -> anyhow::Result<String> {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    match doc {
        Doc::LoadVs => {
            let vs = &v["vs"];
            let mut head = vec!["side", "url", "repetition"];
            head.extend(REPETITION.iter().map(|c| c.0));
            w.write_record(&head)?;
            for (side, runs) in [("A", "a_runs"), ("B", "b_runs")] {
                let url = cell(&vs[side.to_lowercase().as_str()]);
                for (i, run) in rows(&vs[runs]).iter().enumerate() {
                    let mut rec = vec![side.to_string(), url.clone(), (i + 1).to_string()];
                    rec.extend(REPETITION.iter().map(|c| cell(at(run, c.1))));
                    w.write_record(&rec)?;
                }
            }
        }
        Doc::LoadKnee => write_rows(&mut w, STEP, rows(&v["knee"]["steps"]))?,
        Doc::LoadError => {
            w.write_record(["url", "error"])?;
            w.write_record([cell(&v["url"]), cell(&v["error"])])?;
        }
        _ => write_rows(&mut w, SERIES, rows(&v["series"]))?,
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

/// The document `v` (of kind `doc`) as a Markdown summary.
pub fn markdown(doc: Doc, v: &Value) -> String {
    let mut out = String::new();
    match doc {
        Doc::LoadVs => vs_markdown(&mut out, &v["vs"]),
        Doc::LoadKnee => knee_markdown(&mut out, v),
        Doc::LoadError => {
            out.push_str(&format!(
                "# fairbench load {}\n\nThe run failed: {}\n",
                md(&v["url"]),
                md(&v["error"])
            ));
        }
        _ => one_markdown(&mut out, v),
    }
    out
}

fn one_markdown(out: &mut String, v: &Value) {
    let (lat, ledger) = (&v["latency_us"], &v["ledger"]);
    let count = |x: &Value| x.as_u64().unwrap_or(0);
    out.push_str(&format!("# fairbench load {}\n\n", md(&v["url"])));
    table(
        out,
        &[
            "model",
            "connections",
            "duration s",
            "planned",
            "answered",
            "failed",
            "error statuses",
            "req/s",
        ],
        &[vec![
            md(&v["mode"]),
            md(&v["connections"]),
            md(&v["duration_s"]),
            md(&ledger["planned"]),
            md(&ledger["answered"]),
            count(&ledger["planned"])
                .saturating_sub(count(&ledger["answered"]))
                .to_string(),
            md(&v["errors"]["status"]),
            format!("{:.1}", v["rps"].as_f64().unwrap_or(0.0)),
        ]],
    );
    out.push_str("\nLatency (µs, every request of the window, from its planned time; in a closed loop, its send):\n\n");
    let cols = ["p50", "p90", "p99", "p999", "max"];
    table(
        out,
        &["p50", "p90", "p99", "p99.9", "max"],
        &[cols.iter().map(|c| md(&lat[*c])).collect()],
    );
    warnings(out, &v["warnings"]);
}

fn vs_markdown(out: &mut String, vs: &Value) {
    out.push_str(&format!(
        "# fairbench load {} --vs {}\n\n{} repetitions of each, order {}; B relative to A:\n\n",
        md(&vs["a"]),
        md(&vs["b"]),
        md(&vs["repetitions"]),
        md(&vs["order"]),
    ));
    let level = vs["level"].as_f64().unwrap_or(0.95) * 100.0;
    let interval = format!("B ÷ A [{level:.0} % interval]");
    let rows: Vec<Vec<String>> = rows(&vs["ratios"])
        .iter()
        .map(|r| {
            let q = &r["ratio"];
            vec![
                md(&r["metric"]),
                figure(&r["a_median"]),
                figure(&r["b_median"]),
                format!(
                    "{:.3} [{:.3} … {:.3}]",
                    q["geomean"].as_f64().unwrap_or(f64::NAN),
                    q["low"].as_f64().unwrap_or(f64::NAN),
                    q["high"].as_f64().unwrap_or(f64::NAN)
                ),
                md(&r["verdict"]),
            ]
        })
        .collect();
    table(
        out,
        &["metric", "A median", "B median", &interval, "verdict"],
        &rows,
    );
}

fn knee_markdown(out: &mut String, v: &Value) {
    let k = &v["knee"];
    out.push_str(&format!(
        "# fairbench load {} --knee\n\nKnee: {} req/s\n\n",
        md(&v["url"]),
        match k["knee_rps"].as_f64() {
            Some(r) => format!("{r:.0}"),
            None => "not found".into(),
        }
    ));
    let rows: Vec<Vec<String>> = rows(&k["steps"])
        .iter()
        .map(|s| STEP.iter().map(|c| md(at(s, c.1))).collect())
        .collect();
    let head: Vec<&str> = STEP.iter().map(|c| c.0).collect();
    table(out, &head, &rows);
}

fn warnings(out: &mut String, w: &Value) {
    let list = rows(w);
    if list.is_empty() {
        return;
    }
    out.push_str("\nWarnings:\n\n");
    for line in list {
        out.push_str(&format!("- {}\n", md(line)));
    }
}

fn table(out: &mut String, head: &[&str], rows: &[Vec<String>]) {
    out.push_str(&format!("| {} |\n", head.join(" | ")));
    out.push_str(&format!("|{}\n", "---|".repeat(head.len())));
    for r in rows {
        out.push_str(&format!("| {} |\n", r.join(" | ")));
    }
}

fn write_rows(
    w: &mut ::csv::Writer<Vec<u8>>,
    columns: &[Column],
    rows: &[Value],
) -> anyhow::Result<()> {
    w.write_record(columns.iter().map(|c| c.0))?;
    for r in rows {
        w.write_record(columns.iter().map(|c| cell(at(r, c.1))))?;
    }
    Ok(())
}

fn rows(v: &Value) -> &[Value] {
    v.as_array().map_or(&[], |a| a.as_slice())
}

/// The value at a dotted path; null where there is none.
fn at<'a>(v: &'a Value, path: &str) -> &'a Value {
    path.split('.').fold(v, |v, k| &v[k])
}

/// A CSV cell: strings made visible (the csv crate quotes), numbers as
/// JSON writes them, null as empty.
fn cell(v: &Value) -> String {
    escape::visible(&raw(v))
}

/// A Markdown cell: escaped for Markdown (control characters visible).
fn md(v: &Value) -> String {
    escape::markdown(&raw(v))
}

/// A measured figure for a reader: one decimal.
fn figure(v: &Value) -> String {
    v.as_f64().map_or_else(String::new, |x| format!("{x:.1}"))
}

fn raw(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_series_is_one_row_a_second_and_strings_are_quoted() {
        let v = serde_json::json!({"series": [
            {"second": 0, "phase": "measure", "start_s": 0.0, "duration_s": 1.0,
             "requests": 10, "errors": 1, "bytes": 100, "p50_us": 5, "p99_us": 9},
            {"second": 1, "phase": "drain, \"late\"", "start_s": 1.0, "duration_s": 0.2,
             "requests": 2, "errors": 0, "bytes": 20, "p50_us": null, "p99_us": null}
        ]});
        let text = csv(Doc::Load, &v).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "second,phase,start_s,duration_s,requests,errors,bytes,p50_us,p99_us"
        );
        assert_eq!(lines[1], "0,measure,0.0,1.0,10,1,100,5,9");
        assert_eq!(lines[2], "1,\"drain, \"\"late\"\"\",1.0,0.2,2,0,20,,");
    }

    #[test]
    fn a_vs_pair_is_one_row_per_repetition_of_each_side() {
        let run = |rps: f64| {
            serde_json::json!({"requests": 5, "planned": 5, "errors": 0,
            "rps": rps, "latency_us": {"p50": 1, "p90": 2, "p99": 3, "max": 4}})
        };
        let v = serde_json::json!({"vs": {"a": "http://a/", "b": "http://b/",
            "a_runs": [run(1.0), run(2.0)], "b_runs": [run(3.0), run(4.0)]}});
        let text = csv(Doc::LoadVs, &v).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5, "{text}");
        assert!(
            lines[3].starts_with("B,http://b/,1,5,5,0,3.0,1,2,3,4"),
            "{text}"
        );
    }

    #[test]
    fn markdown_escapes_what_a_server_or_url_carries() {
        let v = serde_json::json!({"url": "http://x/|<b>", "mode": "closed",
            "connections": 2, "duration_s": 1.0, "rps": 3.0,
            "ledger": {"planned": 4, "answered": 3}, "errors": {"status": 2},
            "latency_us": {"p50": 1, "p90": 2, "p99": 3, "p999": 4, "max": 5},
            "warnings": ["evil | \u{1b}[31m"]});
        let md = markdown(Doc::Load, &v);
        assert!(
            md.starts_with("# fairbench load http://x/\\|\\<b\\>"),
            "{md}"
        );
        assert!(
            md.contains("| closed | 2 | 1.0 | 4 | 3 | 1 | 2 | 3.0 |"),
            "{md}"
        );
        assert!(md.contains("- evil \\| \\x1b\\[31m"), "{md}");
    }
}
