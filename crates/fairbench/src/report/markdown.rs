//! The report as Markdown: the same sections and tables as the HTML, without
//! the charts. Every cell is escaped for Markdown (and for the HTML a
//! Markdown renderer may let through).

use std::fmt::Write;

use crate::report::escape::markdown as md;
use crate::report::figures::sections;
use crate::report::model::RunReport;
use crate::report::overview;
use crate::report::table::Table;

pub fn render(r: &RunReport) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# fairbench report — run {} ({})\n",
        r.run.id,
        md(&r.run.suite)
    );
    if let Some(aa) = &r.paired.aa {
        let _ = writeln!(o, "**{}**\n", md(&aa.headline));
    }
    if let Some(stop) = &r.stopped {
        let _ = writeln!(o, "{}\n", md(&stop.sentence()));
    }
    o.push_str("## Run and machine\n\n");
    table(&mut o, &overview::run_table(r), false);
    if overview::is_url_run(r) {
        o.push_str("## URLs measured\n\n");
        let _ = writeln!(o, "{}.\n", md(crate::report::url_case::NOT_STARTED));
        table(&mut o, &overview::urls_table(r), true);
    } else {
        o.push_str("## Servers and toolchains\n\n");
        table(&mut o, &overview::servers_table(r), true);
    }

    o.push_str("## Parity: what each server sent\n\n");
    let parity = overview::parity_table(r);
    if parity.rows.is_empty() {
        o.push_str("No check results were stored with this run.\n\n");
    } else {
        table(&mut o, &parity, true);
    }

    let notes = overview::notes_table(r);
    if !r.problems.is_empty() || !notes.rows.is_empty() {
        o.push_str("## Problems and notes\n\n");
        if !r.problems.is_empty() {
            table(&mut o, &overview::problems_table(r), true);
            for p in r
                .problems
                .iter()
                .filter(|p| p.log_tail.as_deref().is_some_and(|t| !t.is_empty()))
            {
                let tail = p.log_tail.as_deref().unwrap_or("");
                let _ = writeln!(
                    o,
                    "Server log, {} — {}, repetition {}:\n",
                    md(&p.key.variant_label()),
                    md(&p.key.context()),
                    p.repetition
                );
                fenced(&mut o, tail);
            }
        }
        if !notes.rows.is_empty() {
            o.push_str("### Notes on cases\n\n");
            table(&mut o, &notes, true);
        }
    }

    let history = r
        .history
        .as_ref()
        .map(crate::report::history_section::section);
    for s in sections(r).into_iter().chain(history) {
        let _ = writeln!(o, "## {}\n\n{}\n", md(s.title), md(&s.intro));
        for f in &s.figures {
            let _ = writeln!(o, "### {}\n\n{}\n", md(&f.title), md(&f.caption));
            table(&mut o, &f.table, true);
        }
    }

    o.push_str("## How the numbers were made\n\n");
    let _ = writeln!(o, "- Aggregation: {}.", md(r.method.aggregate));
    let _ = writeln!(o, "- Interval: {}.", md(r.method.interval));
    let _ = writeln!(
        o,
        "- Ratios to {} (the reference, from {}): {}.{}\n",
        md(&r.paired.reference),
        md(r.paired.reference_from),
        md(r.paired.method),
        r.paired.notes_text(md)
    );
    o
}

fn table(o: &mut String, t: &Table, head: bool) {
    if head {
        let names: Vec<String> = t.columns.iter().map(|c| md(&c.name)).collect();
        let _ = writeln!(o, "| {} |", names.join(" | "));
    } else {
        let _ = writeln!(o, "|{}", " |".repeat(t.columns.len()));
    }
    let rule: Vec<&str> = t
        .columns
        .iter()
        .map(|c| if c.numeric { "---:" } else { "---" })
        .collect();
    let _ = writeln!(o, "| {} |", rule.join(" | "));
    for row in &t.rows {
        let cells: Vec<String> = row.iter().map(|c| md(&c.text)).collect();
        let _ = writeln!(o, "| {} |", cells.join(" | "));
    }
    o.push('\n');
}

/// A fenced code block whose fence is longer than any backtick run inside,
/// so the text cannot close it (CommonMark); control characters other than
/// line breaks and tabs are made visible.
fn fenced(o: &mut String, text: &str) {
    let mut longest = 0;
    let mut run = 0;
    for ch in text.chars() {
        if ch == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    let fence = "`".repeat(longest.max(2) + 1);
    let body: String = text
        .lines()
        .map(crate::report::escape::visible)
        .collect::<Vec<_>>()
        .join("\n");
    let _ = writeln!(o, "{fence}text\n{body}\n{fence}\n");
}
