//! The HTML report: one file, no script, no external resource. Styles are
//! inline, charts are inline SVG, and a Content-Security-Policy forbids the
//! browser from loading or running anything even if something slipped in.

use std::fmt::Write;

use super::escape::{html, html_multiline};
use super::figures::{sections, Section};
use super::model::RunReport;
use super::overview;
use super::table::Table;

/// Scripts, frames, fetches, fonts, images from anywhere: all refused.
pub const CSP: &str =
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'";

const CSS: &str = r#"
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       margin: 0 auto; max-width: 1000px; padding: 16px 20px 48px; color: #1a1a1a; background: #ffffff;
       line-height: 1.45; }
h1 { font-size: 1.6em; margin: 0.4em 0 0.2em; }
h2 { font-size: 1.3em; margin: 1.6em 0 0.4em; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
h3 { font-size: 1.05em; margin: 1.2em 0 0.4em; }
p.lede { color: #444; margin-top: 0; }
nav ol { columns: 2; font-size: 0.95em; }
a { color: #0b5cad; }
table { border-collapse: collapse; font-size: 12.5px; margin: 8px 0 16px; }
th, td { border: 1px solid #d8d8d8; padding: 3px 7px; vertical-align: top; }
th { background: #f3f3f3; text-align: left; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tbody tr:nth-child(even) { background: #fafafa; }
table.meta td:first-child { font-weight: 600; background: #f7f7f7; white-space: nowrap; }
.sw { display: inline-block; width: 10px; height: 10px; margin-right: 6px; border-radius: 2px;
      vertical-align: baseline; }
figure { margin: 12px 0 28px; }
figure svg { max-width: 100%; height: auto; display: block; border: 1px solid #eee; }
figcaption { font-size: 0.92em; color: #444; margin: 6px 0; }
.tablewrap { overflow-x: auto; }
pre { background: #f6f6f6; padding: 8px; overflow-x: auto; font-size: 12px; white-space: pre-wrap;
      word-break: break-all; }
.warn { color: #8a4b00; }
p.aa { color: #1d5e2c; }
footer { margin-top: 40px; color: #666; font-size: 0.9em; }
"#;

pub fn render(r: &RunReport) -> String {
    let mut secs = sections(r);
    secs.extend(r.history.as_ref().map(super::history_section::section));
    let mut o = String::with_capacity(256 * 1024);
    let title = format!("fairbench report — run {} ({})", r.run.id, r.run.suite);
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"fairbench {}\">\n<title>{}</title>\n<style>{}</style>\n</head>\n<body>\n",
        html(CSP),
        html(env!("CARGO_PKG_VERSION")),
        html(&title),
        CSS
    );

    // Header: what, when, where.
    let _ = write!(
        o,
        "<header id=\"top\">\n<h1>{}</h1>\n<p class=\"lede\">Suite <strong>{}</strong>, run {} started {}: {}, {}. \
         Every chart has its numbers in a table beneath it; hover a bar or a point for its exact values.</p>\n",
        html(&title),
        html(&r.run.suite),
        r.run.id,
        html(&r.run.started_at),
        crate::units::counted(r.servers.len() as u64, "server"),
        crate::units::counted(r.groups.len() as u64, "case")
    );
    header_lines(&mut o, r);
    o.push_str("<h2 id=\"run\">Run and machine</h2>\n");
    table_html(&mut o, &overview::run_table(r), &["meta"], false);
    if overview::is_url_run(r) {
        let _ = writeln!(
            o,
            "<h3 id=\"urls\">URLs measured</h3>\n<p class=\"warn\">{}.</p>",
            html(super::url_case::NOT_STARTED)
        );
        table_html(&mut o, &overview::urls_table(r), &[], true);
    } else {
        o.push_str("<h3 id=\"servers\">Servers and toolchains</h3>\n");
        table_html(&mut o, &overview::servers_table(r), &[], true);
    }
    o.push_str("</header>\n");

    // Contents: local anchors only.
    o.push_str("<nav><h2>Contents</h2><ol>\n<li><a href=\"#parity\">Parity: what each server sent</a></li>\n");
    if !r.problems.is_empty() || !overview::notes_table(r).rows.is_empty() {
        o.push_str("<li><a href=\"#problems\">Problems and notes</a></li>\n");
    }
    for s in &secs {
        let _ = writeln!(o, "<li><a href=\"#{}\">{}</a></li>", s.id, html(s.title));
    }
    o.push_str("<li><a href=\"#method\">How the numbers were made</a></li>\n</ol></nav>\n");

    // Parity.
    o.push_str("<section id=\"parity\">\n<h2>Parity: what each server sent</h2>\n\
        <p>The check fetched each scenario's response from every server variant before the run and graded it against the scenario's contract. \
        A comparison is fair only between servers that did the same work: compare the byte counts, the framing and the contract column.</p>\n");
    let parity = overview::parity_table(r);
    if parity.rows.is_empty() {
        o.push_str("<p>No check results were stored with this run.</p>\n");
    } else {
        table_html(&mut o, &parity, &[], true);
        rules_details(&mut o, r);
    }
    o.push_str("</section>\n");

    problems(&mut o, r);

    for s in &secs {
        section_html(&mut o, s);
    }

    method(&mut o, r);
    let _ = write!(
        o,
        "<footer>Made by fairbench {} from results database run {}. This file needs no network: it holds no script and loads nothing.</footer>\n</body>\n</html>\n",
        html(env!("CARGO_PKG_VERSION")),
        r.run.id
    );
    o
}

/// What a reader must know before the tables: the A/A check's verdict,
/// and how an adaptive run's repetitions stopped.
fn header_lines(o: &mut String, r: &RunReport) {
    if let Some(aa) = &r.paired.aa {
        let _ = writeln!(
            o,
            "<p id=\"aa-check\" class=\"{}\"><strong>{}</strong></p>",
            if aa.warning { "warn" } else { "aa" },
            html(&aa.headline)
        );
    }
    if let Some(stop) = &r.stopped {
        let _ = writeln!(
            o,
            "<p id=\"adaptive-stop\"{}>{}</p>",
            if stop.reason == super::stop::Reason::Maximum {
                " class=\"warn\""
            } else {
                ""
            },
            html(&stop.sentence())
        );
    }
}

fn section_html(o: &mut String, s: &Section) {
    let _ = write!(
        o,
        "<section id=\"{}\">\n<h2>{}</h2>\n<p>{}</p>\n",
        s.id,
        html(s.title),
        html(&s.intro)
    );
    for f in &s.figures {
        let _ = writeln!(o, "<figure id=\"fig-{}\">", html(&f.id));
        if let Some(svg) = &f.svg {
            o.push_str(svg);
            o.push('\n');
        } else {
            let _ = writeln!(o, "<h3>{}</h3>", html(&f.title));
        }
        let _ = writeln!(o, "<figcaption>{}</figcaption>", html(&f.caption));
        table_html(o, &f.table, &[], true);
        o.push_str("</figure>\n");
    }
    o.push_str("</section>\n");
}

/// A table; `head` false for label/value tables without a header row.
pub fn table_html(o: &mut String, t: &Table, classes: &[&str], head: bool) {
    let mut cls = vec!["data"];
    cls.extend_from_slice(classes);
    let _ = writeln!(
        o,
        "<div class=\"tablewrap\"><table id=\"{}\" class=\"{}\">",
        html(&t.id),
        cls.join(" ")
    );
    if head {
        o.push_str("<thead><tr>");
        for c in &t.columns {
            let _ = write!(o, "<th>{}</th>", html(&c.name));
        }
        o.push_str("</tr></thead>\n");
    }
    o.push_str("<tbody>\n");
    for row in &t.rows {
        o.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            let numeric = t.columns.get(i).is_some_and(|c| c.numeric);
            o.push_str(if numeric { "<td class=\"num\"" } else { "<td" });
            if let Some(v) = cell.value {
                let _ = write!(o, " data-value=\"{}\"", html(&format!("{v}")));
            }
            o.push('>');
            if let Some(c) = cell.swatch {
                let _ = write!(
                    o,
                    "<span class=\"sw\" style=\"background:{}\"></span>",
                    html(c)
                );
            }
            o.push_str(&html(&cell.text));
            o.push_str("</td>");
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</tbody></table></div>\n");
}

fn rules_details(o: &mut String, r: &RunReport) {
    if r.parity
        .iter()
        .all(|p| p.rules.is_empty() && p.raw_response.is_none())
    {
        return;
    }
    o.push_str(
        "<details><summary>Every rule of every check, and the responses as received</summary>\n",
    );
    for p in r
        .parity
        .iter()
        .filter(|p| !p.rules.is_empty() || p.raw_response.is_some())
    {
        let _ = write!(
            o,
            "<h3>{} {}/{} — {}</h3>\n<ul>\n",
            html(&p.server),
            html(&p.mode),
            html(&p.response),
            html(&p.scenario)
        );
        for rule in &p.rules {
            let _ = writeln!(
                o,
                "<li><strong>{}</strong> {}{}</li>",
                html(&rule.grade.to_uppercase()),
                html(&rule.rule),
                if rule.detail.is_empty() {
                    String::new()
                } else {
                    format!(" — {}", html(&rule.detail))
                }
            );
        }
        o.push_str("</ul>\n");
        if let Some(raw) = &p.raw_response {
            let _ = writeln!(o, "<pre class=\"raw\">{}</pre>", html_multiline(raw));
        }
    }
    o.push_str("</details>\n");
}

fn problems(o: &mut String, r: &RunReport) {
    let notes = overview::notes_table(r);
    if r.problems.is_empty() && notes.rows.is_empty() {
        return;
    }
    o.push_str("<section id=\"problems\">\n<h2>Problems and notes</h2>\n");
    if !r.problems.is_empty() {
        o.push_str("<p class=\"warn\">These cases did not finish; their figures are missing from the charts.</p>\n");
        table_html(o, &overview::problems_table(r), &[], true);
        for p in r
            .problems
            .iter()
            .filter(|p| p.log_tail.as_deref().is_some_and(|t| !t.is_empty()))
        {
            let _ = write!(
                o,
                "<details><summary>Server log, {} — {}, repetition {}</summary>\n<pre>{}</pre>\n</details>\n",
                html(&p.key.variant_label()),
                html(&p.key.context()),
                p.repetition,
                html_multiline(p.log_tail.as_deref().unwrap_or(""))
            );
        }
    }
    if !notes.rows.is_empty() {
        o.push_str("<h3>Notes on cases</h3>\n");
        table_html(o, &notes, &[], true);
    }
    o.push_str("</section>\n");
}

fn method(o: &mut String, r: &RunReport) {
    let _ = write!(
        o,
        "<section id=\"method\">\n<h2>How the numbers were made</h2>\n<ul>\n\
         <li><strong>Aggregation:</strong> {}.</li>\n<li><strong>Interval:</strong> {}.</li>\n\
         <li><strong>Ratios</strong> to {} (the reference, from {}): {}.{}</li>\n\
         <li><strong>Latency</strong> is recorded per request into HdrHistograms at microsecond resolution. Closed loop (wrk-like): from the send. Constant rate (wrk2-like): from when the request was due, which corrects coordinated omission.</li>\n\
         <li><strong>Server CPU and memory</strong> are read from /proc for the server's whole process tree during the measurement only.</li>\n\
         <li><strong>Colours</strong> are one per server, the same in every chart (Okabe–Ito palette, safe for colour-blind readers); dash patterns tell a server's variants apart.</li>\n</ul>\n\
         <details><summary>The suite as run</summary>\n<pre>{}</pre>\n</details>\n</section>\n",
        html(r.method.aggregate),
        html(r.method.interval),
        html(&r.paired.reference),
        html(r.paired.reference_from),
        html(r.paired.method),
        r.paired.notes_text(html),
        html_multiline(&r.run.suite_toml)
    );
}
