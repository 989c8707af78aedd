//! The History section's data (report::run_history): this run's cases as
//! `fairbench history` sees them, cut at this run, with their change
//! points and charts. Made here, above both, because the history library
//! builds on the report and the report must not import it back.

use std::collections::BTreeSet;
use std::path::Path;

use crate::history::analysis::{analyse, CaseHistory, Settings, METHOD};
use crate::history::chart;
use crate::history::series::{collect, Point, Series};
use crate::report::case_key::CaseKey;
use crate::report::model::RunReport;
use crate::report::run_history::{
    HistoryCase, HistoryChange, HistoryPoint, RunHistory, MAX_CASES, MIN_RUNS,
};
use crate::store::{RunRow, Store};

/// The same as `history --min-change`'s default, so that the section and
/// the command find the same change points.
const MIN_CHANGE_PCT: f64 = 5.0;

/// `report` with its History section, or without it (and a note) when the
/// earlier runs cannot be read: they are context, and one that cannot be
/// read must not cost the report of this one.
pub fn add(
    mut report: RunReport,
    store: &Store,
    run: &RunRow,
    reference: Option<&str>,
    db: &Path,
) -> RunReport {
    report.history = build(store, run, &report, reference, db).unwrap_or_else(|e| {
        crate::note!("fairbench: report without its History section: {e:#}");
        None
    });
    report
}

/// The section's data; None when no earlier run measured any of the
/// report's cases (a report of one run reads as it always did).
fn build(
    store: &Store,
    run: &RunRow,
    report: &RunReport,
    reference: Option<&str>,
    db: &Path,
) -> anyhow::Result<Option<RunHistory>> {
    let keys: BTreeSet<&CaseKey> = report
        .groups
        .iter()
        .filter(|g| g.sweep.is_none())
        .map(|g| &g.key)
        .collect();
    let mut earlier = BTreeSet::new();
    let mut series = Vec::new();
    for mut s in collect(store, None, reference)? {
        if !keys.contains(&s.key) {
            continue;
        }
        cut_at(&mut s, run);
        if s.points.last().is_none_or(|p| p.run != run.id) {
            continue;
        }
        earlier.extend(s.points.iter().map(|p| p.run).filter(|r| *r != run.id));
        if s.points.len() >= MIN_RUNS {
            series.push(s);
        }
    }
    if earlier.is_empty() {
        return Ok(None);
    }
    let settings = Settings {
        min_change_pct: MIN_CHANGE_PCT,
    };
    let (mut cases, rest) = rank(
        series
            .into_iter()
            .map(|s| case(analyse(s, settings), run.id))
            .collect(),
    );
    for (i, c) in cases.iter_mut().enumerate() {
        c.svg = chart_of(&c.svg, i + 1);
    }
    Ok(Some(RunHistory {
        run: run.id,
        earlier_runs: earlier.len(),
        method: METHOD,
        min_change_pct: MIN_CHANGE_PCT,
        more: rest.len(),
        more_command: more_command(db, &rest),
        cases,
    }))
}

/// The [`MAX_CASES`] cases with the largest change, largest first (equal
/// ones in the plan's order), and the others.
fn rank(mut cases: Vec<HistoryCase>) -> (Vec<HistoryCase>, Vec<HistoryCase>) {
    cases.sort_by(|a, b| b.largest_change().total_cmp(&a.largest_change()));
    let rest = cases.split_off(cases.len().min(MAX_CASES));
    (cases, rest)
}

/// Drops the points of runs made after `run`, in the series' own order
/// (start time, then id): the report of an old run does not show its
/// future, and its change points are found without it.
fn cut_at(s: &mut Series, run: &RunRow) {
    let at = (&run.started_at, run.id);
    s.points.retain(|p: &Point| (&p.started_at, p.run) <= at);
}

/// The report's copy of one case's history, its chart drawn by history's
/// own (ids and this run's ring added in [`chart_of`]).
fn case(h: CaseHistory, this_run: i64) -> HistoryCase {
    let svg = chart::svg(&h, "run (oldest → newest)");
    HistoryCase {
        key: h.key,
        label: h.label,
        metric: h.metric.into(),
        unit: h.unit.into(),
        floor_pct: h.floor_pct,
        points: h
            .points
            .into_iter()
            .map(|p| HistoryPoint {
                this_run: p.run == this_run,
                run: p.run,
                started_at: p.started_at,
                revision: p.revision,
                median: p.median,
                low: p.low,
                high: p.high,
                confidence: p.confidence,
            })
            .collect(),
        changes: h
            .changes
            .into_iter()
            .map(|c| HistoryChange {
                run_before: c.run_before,
                run_after: c.run_after,
                revision_before: c.revision_before,
                revision_after: c.revision_after,
                change_pct: c.change_pct,
                ci_low_pct: c.ci_low_pct,
                ci_high_pct: c.ci_high_pct,
                direction: c.direction.into(),
            })
            .collect(),
        svg,
    }
}

/// History's chart made fit to sit beside others in one page: its fixed
/// ids (`history`, which is also the section's) made the n-th chart's, and
/// a ring round its last dot, which is this run (the points end there and
/// the dots are drawn last, left to right).
fn chart_of(svg: &str, n: usize) -> String {
    let id = format!("history-chart-{n}");
    let mut out = svg
        .replacen("id=\"history\"", &format!("id=\"{id}\""), 1)
        .replacen(
            "aria-labelledby=\"history-t history-d\"",
            &format!("aria-labelledby=\"{id}-t {id}-d\""),
            1,
        )
        .replacen("id=\"history-t\"", &format!("id=\"{id}-t\""), 1)
        .replacen("id=\"history-d\"", &format!("id=\"{id}-d\""), 1);
    if let Some((at, cx, cy)) = last_dot(&out) {
        let ring = format!(
            "<circle class=\"this-run\" cx=\"{cx}\" cy=\"{cy}\" r=\"8\" fill=\"none\" stroke=\"#000000\" stroke-width=\"2\"><title>this run</title></circle>\n\
             <text x=\"{cx}\" y=\"{cy}\" dx=\"-12\" dy=\"-12\" text-anchor=\"end\" font-size=\"11\" fill=\"#000000\">this run</text>\n"
        );
        out.insert_str(at, &ring);
    }
    out
}

/// Where the last `<circle>` element ends, and its centre (numbers the
/// SVG writer wrote).
fn last_dot(svg: &str) -> Option<(usize, String, String)> {
    let start = svg.rfind("<circle ")?;
    let tag = &svg[start..];
    let attr = |name: &str| -> Option<String> {
        let from = tag.find(&format!(" {name}=\""))? + name.len() + 3;
        let len = tag[from..].find('"')?;
        let v = &tag[from..from + len];
        v.chars()
            .all(|c| c.is_ascii_digit() || c == '.' || c == '-')
            .then(|| v.to_string())
    };
    let end = match (tag.find("</circle>"), tag.find("/>")) {
        (Some(a), Some(b)) if b < a => b + 2,
        (Some(a), _) => a + "</circle>".len(),
        (None, Some(b)) => b + 2,
        (None, None) => return None,
    };
    Some((start + end, attr("cx")?, attr("cy")?))
}

/// `fairbench history --db DB`, with `--server` when the cases left out
/// are all of one server.
fn more_command(db: &Path, rest: &[HistoryCase]) -> String {
    let mut cmd = format!(
        "fairbench history --db {}",
        shell_word(&db.display().to_string())
    );
    let servers: BTreeSet<&str> = rest.iter().map(|c| c.key.server.as_str()).collect();
    if servers.len() == 1 {
        let server = servers.into_iter().next().unwrap_or_default();
        cmd.push_str(&format!(" --server {}", shell_word(server)));
    }
    cmd
}

/// A word a POSIX shell reads back as `s`.
fn shell_word(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "._/:=@%+-,".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_dot_is_ringed_and_the_ids_are_the_charts_own() {
        let svg = "<svg id=\"history\" aria-labelledby=\"history-t history-d\"><title id=\"history-t\">t</title><desc id=\"history-d\">d</desc>\n\
                   <circle cx=\"10\" cy=\"20\" r=\"3.5\" fill=\"#000\"><title>a</title></circle>\n\
                   <circle cx=\"30.5\" cy=\"40\" r=\"3.5\" fill=\"#000\"><title>b</title></circle>\n</svg>";
        let out = chart_of(svg, 2);
        assert!(
            !out.contains("\"history\"") && !out.contains("history-t "),
            "{out}"
        );
        assert!(out.contains("id=\"history-chart-2\"") && out.contains("history-chart-2-d"));
        let ring = out
            .find("class=\"this-run\" cx=\"30.5\" cy=\"40\"")
            .unwrap();
        assert!(ring > out.find("<title>b</title></circle>").unwrap());
    }

    fn with_change(server: &str, pct: Option<f64>) -> HistoryCase {
        HistoryCase {
            key: CaseKey {
                server: server.into(),
                mode: "native".into(),
                response: "default".into(),
                scenario: "static".into(),
                cores: 1,
                load: "closed c=50 t=1".into(),
                host: String::new(),
                protocol: "http/1.1".into(),
                step: String::new(),
            },
            label: server.into(),
            metric: "rps".into(),
            unit: "req/s".into(),
            floor_pct: 5.0,
            points: Vec::new(),
            changes: pct
                .map(|p| HistoryChange {
                    run_before: 1,
                    run_after: 2,
                    revision_before: None,
                    revision_after: None,
                    change_pct: Some(p),
                    ci_low_pct: None,
                    ci_high_pct: None,
                    direction: "worse".into(),
                })
                .into_iter()
                .collect(),
            svg: String::new(),
        }
    }

    #[test]
    fn the_largest_changes_are_shown_and_the_rest_counted_with_their_command() {
        let mut cases: Vec<HistoryCase> = (0..14)
            .map(|i| with_change(&format!("quiet{i}"), None))
            .collect();
        cases.insert(5, with_change("small", Some(-6.0)));
        cases.insert(9, with_change("large", Some(-40.0)));
        cases.push(with_change("middle", Some(12.0)));
        let (shown, rest) = rank(cases);
        let names: Vec<&str> = shown.iter().map(|c| c.key.server.as_str()).collect();
        assert_eq!(names.len(), MAX_CASES);
        assert_eq!(
            &names[..5],
            ["large", "middle", "small", "quiet0", "quiet1"]
        );
        assert_eq!(rest.len(), 5);
        assert!(rest.iter().all(|c| c.changes.is_empty()));
        assert_eq!(
            more_command(Path::new("r.db"), &rest[..1]),
            format!(
                "fairbench history --db r.db --server {}",
                rest[0].key.server
            )
        );
    }

    #[test]
    fn the_command_for_the_rest_quotes_what_a_shell_would_read() {
        assert_eq!(shell_word("results.db"), "results.db");
        assert_eq!(shell_word("a b'c"), "'a b'\\''c'");
        assert_eq!(shell_word(""), "''");
        assert_eq!(
            more_command(Path::new("my runs.db"), &[]),
            "fairbench history --db 'my runs.db'"
        );
    }
}
