//! `fairbench compare` output: an aligned text table (default), Markdown or
//! JSON, all from the same comparison.

use std::fmt::Write;

use crate::compare::model::{CaseDiff, Comparison, MetricDiff};
use crate::output::check_table::Table;
use crate::report::case_key::CaseKey;
use crate::report::escape::{markdown, visible};
use crate::report::table::fixed;

fn signed(p: f64) -> String {
    format!("{}{} %", if p > 0.0 { "+" } else { "" }, fixed(p, 1))
}

/// "+5.3 % [+4.1 … +6.2]" with a `*` when significant.
pub fn change(d: &Option<MetricDiff>) -> String {
    let Some(d) = d else { return "—".into() };
    let Some(p) = d.change_pct else {
        return "—".into();
    };
    let mut s = signed(p);
    if let (Some(lo), Some(hi)) = (d.ci_low_pct, d.ci_high_pct) {
        s.push_str(&format!(" [{} … {}]", signed(lo), signed(hi)));
    }
    if d.significant {
        s.push('*');
    }
    s
}

fn medians(d: &Option<MetricDiff>, decimals: usize) -> (String, String) {
    match d {
        Some(d) => (fixed(d.median_a, decimals), fixed(d.median_b, decimals)),
        None => ("—".into(), "—".into()),
    }
}

const HEAD: [&str; 10] = [
    "VARIANT",
    "CONTEXT",
    "REQ/S A",
    "REQ/S B",
    "Δ REQ/S [95 % CI]",
    "P99 µs A",
    "P99 µs B",
    "Δ P99",
    "Δ CPU/REQ",
    "VERDICT",
];

/// Where the database's columns go: after the server's CPU per request.
const DB_AT: usize = 9;
const DB_HEAD: [&str; 2] = ["Δ DB CPU/REQ", "Δ SERVER+DB CPU/REQ"];

/// Whether any case measured a database: then the database's CPU per
/// request and the whole stack's stand beside the server's.
fn with_db(c: &Comparison) -> bool {
    c.cases
        .iter()
        .any(|d| d.db_cpu_us_per_request.is_some() || d.total_cpu_us_per_request.is_some())
}

/// The header, with the database's columns when a case had one and the
/// paired column when the runs paired.
fn head(c: &Comparison) -> Vec<String> {
    let mut h: Vec<String> = HEAD.iter().map(|s| s.to_string()).collect();
    if with_db(c) {
        for (i, name) in DB_HEAD.iter().enumerate() {
            h.insert(DB_AT + i, name.to_string());
        }
    }
    if let Some(p) = c.pairing.as_ref().filter(|p| p.paired) {
        h.insert(h.len() - 1, format!("Δ vs {} (PAIRED)", p.reference));
    }
    h
}

/// "+5.3 % [+4.1 … +6.2]*" of the primary metric relative to the reference.
fn paired_cell(c: &CaseDiff) -> String {
    let Some(p) = &c.paired else {
        return "—".into();
    };
    if p.is_reference {
        return "reference".into();
    }
    let m = if c.primary == "req/s" {
        &p.rps
    } else {
        &p.p99_us
    };
    let Some(m) = m else { return "—".into() };
    let mut s = signed(m.change_pct);
    if let (Some(lo), Some(hi)) = (m.ci_low_pct, m.ci_high_pct) {
        s.push_str(&format!(" [{} … {}]", signed(lo), signed(hi)));
    }
    if m.significant {
        s.push('*');
    }
    s
}

fn row(cmp: &Comparison, c: &CaseDiff, esc: fn(&str) -> String) -> Vec<String> {
    let mut r = cells(c, esc);
    if with_db(cmp) {
        let db = [
            change(&c.db_cpu_us_per_request),
            change(&c.total_cpu_us_per_request),
        ];
        for (i, cell) in db.into_iter().enumerate() {
            r.insert(DB_AT + i, cell);
        }
    }
    if cmp.pairing.as_ref().is_some_and(|p| p.paired) {
        let v = r.pop().expect("a verdict");
        r.push(paired_cell(c));
        r.push(v);
    }
    r
}

/// The pairing line under the heading.
fn pairing_line(c: &Comparison) -> Option<String> {
    c.pairing.as_ref().map(|p| match &p.reason {
        None => format!("Paired relative to {}: {}.", p.reference, p.method),
        Some(why) => format!(
            "Cannot pair relative to {}: {why}. Only unpaired changes are shown.",
            p.reference
        ),
    })
}

fn cells(c: &CaseDiff, esc: fn(&str) -> String) -> Vec<String> {
    let (ra, rb) = medians(&c.rps, 0);
    let (pa, pb) = medians(&c.p99_us, 0);
    let mut verdict = c.verdict.as_str().to_string();
    if c.primary != "req/s" {
        verdict.push_str(&format!(" (by {})", c.primary));
    }
    if c.verdict_from.is_some() && c.paired.as_ref().is_some_and(|p| !p.is_reference) {
        verdict.push_str(" (paired)");
    }
    if c.regression {
        verdict.push_str(" REGRESSION");
    }
    vec![
        esc(&c.key.variant_label()),
        esc(&c.key.context()),
        ra,
        rb,
        change(&c.rps),
        pa,
        pb,
        change(&c.p99_us),
        change(&c.cpu_us_per_request),
        verdict,
    ]
}

fn tally(c: &Comparison) -> String {
    let count = |v: &str| c.cases.iter().filter(|x| x.verdict.as_str() == v).count();
    format!(
        "{} cases matched: {} faster, {} slower, {} no significant difference{}; {} only in A, {} only in B",
        c.cases.len(),
        count("faster"),
        count("slower"),
        count("no significant difference"),
        match count("not compared") {
            0 => String::new(),
            n => format!(
                ", {n} not compared (a side failed over 1 % of its requests, answered them with another body, or had its figures bounded by its load generator)"
            ),
        },
        c.only_in_a.len(),
        c.only_in_b.len()
    )
}

fn heading(c: &Comparison) -> String {
    format!(
        "A: run {} ({}, {}) on {} in {}\nB: run {} ({}, {}) on {} in {}\nChanges are B relative to A; * = significant ({}).",
        c.a.id,
        visible(&c.a.suite),
        c.a.started_at,
        visible(&c.a.host),
        visible(&c.a.db),
        c.b.id,
        visible(&c.b.suite),
        c.b.started_at,
        visible(&c.b.host),
        visible(&c.b.db),
        c.method
    )
}

/// What the database's columns are, under a table that has them.
fn db_line(c: &Comparison) -> Option<String> {
    with_db(c).then(|| {
        "Δ DB CPU/REQ: PostgreSQL's CPU per request; Δ SERVER+DB CPU/REQ: the server's and the database's added up per repetition, the whole stack's work (— where a case had no database)."
            .to_string()
    })
}

fn regression_line(c: &Comparison) -> Option<String> {
    c.regression_threshold_pct.map(|p| {
        if c.regressions == 0 {
            format!(
                "No case is significantly slower by more than {} %.",
                fixed(p, 1)
            )
        } else {
            format!(
                "{} case{} significantly slower by more than {} %.",
                c.regressions,
                if c.regressions == 1 { " is" } else { "s are" },
                fixed(p, 1)
            )
        }
    })
}

fn notes(c: &Comparison) -> Vec<String> {
    let paired = c.cases.iter().flat_map(|d| {
        let p = d.paired.as_ref();
        [
            p.and_then(|p| p.note.as_ref()),
            p.and_then(|p| p.db_note.as_ref()),
        ]
        .into_iter()
        .flatten()
        .map(|n| format!("{} (paired): {n}", d.key.label()))
    });
    let db = c.cases.iter().filter_map(|d| {
        let n = d.db_note.as_ref()?;
        Some(format!("{}: {n}", d.key.label()))
    });
    c.cases
        .iter()
        .filter_map(|d| d.note.as_ref().map(|n| format!("{}: {n}", d.key.label())))
        .chain(db)
        .chain(paired)
        .collect()
}

fn keys(list: &[CaseKey]) -> Vec<String> {
    list.iter().map(|k| k.label()).collect()
}

pub fn text(c: &Comparison) -> String {
    let mut o = heading(c);
    if let Some(l) = pairing_line(c) {
        o.push('\n');
        o.push_str(&visible(&l));
    }
    o.push_str("\n\n");
    let h = head(c);
    let h: Vec<&str> = h.iter().map(String::as_str).collect();
    // Numbers right: every column but the first two and the verdict.
    let numbers: Vec<usize> = (2..h.len() - 1).collect();
    let mut t = Table::new(&h).right_align(&numbers);
    for d in &c.cases {
        t.row(row(c, d, visible));
    }
    o.push_str(&t.render());
    o.push('\n');
    for n in notes(c) {
        let _ = writeln!(o, "note: {}", visible(&n));
    }
    for k in keys(&c.only_in_a) {
        let _ = writeln!(o, "only in A: {}", visible(&k));
    }
    for k in keys(&c.only_in_b) {
        let _ = writeln!(o, "only in B: {}", visible(&k));
    }
    let _ = writeln!(o, "{}", tally(c));
    if let Some(l) = db_line(c) {
        let _ = writeln!(o, "{l}");
    }
    if let Some(l) = regression_line(c) {
        let _ = writeln!(o, "{l}");
    }
    o
}

pub fn markdown_doc(c: &Comparison) -> String {
    let mut o = String::from("# fairbench compare\n\n");
    for line in heading(c).lines().chain(pairing_line(c).as_deref()) {
        let _ = writeln!(o, "{}  ", markdown(line));
    }
    o.push('\n');
    let h = head(c);
    let _ = writeln!(o, "| {} |", h.join(" | "));
    let rule: Vec<&str> = (0..h.len())
        .map(|i| {
            if i < 2 || i == h.len() - 1 {
                "---"
            } else {
                "---:"
            }
        })
        .collect();
    let _ = writeln!(o, "| {} |", rule.join(" | "));
    for d in &c.cases {
        let _ = writeln!(
            o,
            "| {} |",
            row(c, d, str::to_string)
                .iter()
                .map(|s| markdown(s))
                .collect::<Vec<_>>()
                .join(" | ")
        );
    }
    o.push('\n');
    for n in notes(c) {
        let _ = writeln!(o, "- note: {}", markdown(&n));
    }
    for k in keys(&c.only_in_a) {
        let _ = writeln!(o, "- only in A: {}", markdown(&k));
    }
    for k in keys(&c.only_in_b) {
        let _ = writeln!(o, "- only in B: {}", markdown(&k));
    }
    let _ = writeln!(o, "\n{}", markdown(&tally(c)));
    if let Some(l) = db_line(c) {
        let _ = writeln!(o, "\n{}", markdown(&l));
    }
    if let Some(l) = regression_line(c) {
        let _ = writeln!(o, "\n{}", markdown(&l));
    }
    o
}

pub fn json(c: &Comparison) -> anyhow::Result<String> {
    let mut s = crate::report::json_doc::render(crate::report::json_doc::Doc::Compare, c)?;
    s.push('\n');
    Ok(s)
}
