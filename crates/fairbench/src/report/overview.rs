//! The tables at the top of a report: the run, the machine, the servers and
//! their toolchains, the parity check, and what went wrong.

use serde_json::Value;

use super::model::{value_text, RunReport};
use super::palette;
use super::table::{Cell, Table};

/// What was run, when, where: label/value rows.
pub fn run_table(r: &RunReport) -> Table {
    let mut t = Table::new("table-run", &[("", false), ("", false)]);
    let run = &r.run;
    let mut row = |k: &str, v: String| t.push(vec![Cell::text(k), Cell::text(v)]);
    row("run", run.id.to_string());
    row("suite", run.suite.clone());
    row(
        "state",
        match &run.reason {
            Some(reason) => format!("{} ({reason})", run.state),
            None => run.state.clone(),
        },
    );
    row("started", run.started_at.clone());
    row(
        "finished",
        run.finished_at.clone().unwrap_or_else(|| "—".into()),
    );
    row(
        "cases",
        format!(
            "{} planned: {} done, {} failed, {} skipped",
            run.planned_cases, run.cases_done, run.cases_failed, run.cases_skipped
        ),
    );
    row(
        "order",
        crate::suite::order::describe_stored(&run.suite_toml),
    );
    row(
        "fairbench",
        match &run.git_revision {
            Some(g) => format!("{} ({g})", run.fairbench_version),
            None => run.fairbench_version.clone(),
        },
    );
    for (k, v) in run.host_fields() {
        row(&k, v);
    }
    // A report of several machines: each run, and the label its cases carry.
    for m in r.machines.iter().skip(1) {
        row(
            "also",
            format!(
                "run {} of {} ({}, started {}), its cases labelled \"on {}\"",
                m.run, m.db, m.suite, m.started_at, m.label
            ),
        );
    }
    if let Some(m) = r.machines.first() {
        row(
            "machine label",
            format!("this run's cases: \"on {}\"", m.label),
        );
    }
    t
}

/// A run whose every case was measured at a URL (`load --save`, a `--vs`
/// pair, a suite's services): its report lists the URLs where a zoo run
/// lists servers and toolchains.
pub fn is_url_run(r: &RunReport) -> bool {
    !r.groups.is_empty() && r.groups.iter().all(|g| g.url.is_some())
}

/// What each URL case measured.
pub fn urls_table(r: &RunReport) -> Table {
    let mut t = Table::new(
        "table-urls",
        &[
            ("name", false),
            ("URL", false),
            ("method", false),
            ("load", false),
            ("connections", true),
            ("repetitions", true),
        ],
    );
    for g in &r.groups {
        let Some(u) = &g.url else { continue };
        t.push(vec![
            Cell::swatch(g.label.clone(), palette::colour(g.palette_index)),
            Cell::text(u.url.clone()),
            Cell::text(u.method.clone()),
            Cell::text(u.load.clone()),
            Cell::opt(u.connections.map(|c| c as f64), 0),
            Cell::num(g.done as f64, 0),
        ]);
    }
    t
}

pub fn servers_table(r: &RunReport) -> Table {
    let mut t = Table::new(
        "table-servers",
        &[
            ("server", false),
            ("language", false),
            ("framework", false),
            ("toolchain", false),
            ("toolchain version", false),
            ("framework version", false),
        ],
    );
    for s in &r.servers {
        let tc = s.toolchain.as_ref();
        let field = |k: &str| {
            tc.and_then(|v| v.get(k))
                .filter(|v| !v.is_null())
                .map(value_text)
                .unwrap_or_else(|| "—".into())
        };
        let tool = match tc {
            Some(Value::String(s)) => s.clone(),
            _ => field("toolchain"),
        };
        // `version`, or the probe's `status.version` as `run` records it.
        let version = match field("version") {
            v if v != "—" => v,
            _ => tc
                .and_then(|v| v.get("status"))
                .and_then(|st| st.get("version"))
                .filter(|v| !v.is_null())
                .map(value_text)
                .unwrap_or_else(|| "—".into()),
        };
        t.push(vec![
            Cell::swatch(s.name.clone(), palette::colour(s.palette_index)),
            Cell::text(s.language.clone()),
            Cell::text(s.framework.clone()),
            Cell::text(tool),
            Cell::text(version),
            Cell::text(field("framework_version")),
        ]);
    }
    t
}

fn yes_no(b: Option<bool>) -> Cell {
    Cell::text(match b {
        Some(true) => "yes",
        Some(false) => "NO",
        None => "—",
    })
}

/// Bytes per response per server and variant, and the contract results.
pub fn parity_table(r: &RunReport) -> Table {
    let mut t = Table::new(
        "table-parity",
        &[
            ("variant", false),
            ("scenario", false),
            ("header B", true),
            ("body B", true),
            ("total B", true),
            ("vs reference B", true),
            ("framing", false),
            ("headers, in order", false),
            ("Date", false),
            ("IPv4", false),
            ("IPv6", false),
            ("contract", false),
            ("rules passed", false),
            ("findings", false),
        ],
    );
    for p in &r.parity {
        let idx = palette::index(
            &r.servers.iter().map(|s| s.name.clone()).collect::<Vec<_>>(),
            &p.server,
        );
        let passed = p.rules.iter().filter(|r| r.grade == "pass").count();
        let mut findings = p.findings();
        if let Some(n) = &p.note {
            findings.push(n.clone());
        }
        t.push(vec![
            Cell::swatch(
                format!("{} {}/{}", p.server, p.mode, p.response),
                palette::colour(idx),
            ),
            Cell::text(p.scenario.clone()),
            Cell::opt(p.header_bytes.map(|v| v as f64), 0),
            Cell::opt(p.body_bytes.map(|v| v as f64), 0),
            Cell::opt(p.total_bytes.map(|v| v as f64), 0),
            match p.vs_reference {
                Some(d) => Cell {
                    text: format!("{d:+}"),
                    value: Some(d as f64),
                    swatch: None,
                },
                None => Cell::none(),
            },
            Cell::text(p.framing.clone().unwrap_or_else(|| "—".into())),
            Cell::text(if p.header_names.is_empty() {
                "—".to_string()
            } else {
                p.header_names.join(", ")
            }),
            Cell::text(p.date.clone().unwrap_or_else(|| "—".into())),
            yes_no(p.ipv4),
            yes_no(p.ipv6),
            Cell::text(match (p.fair, p.grade.as_deref()) {
                (Some(false), _) => "FAIL".to_string(),
                (_, Some(g)) => g.to_uppercase(),
                (Some(true), None) => "PASS".to_string(),
                (None, None) => "—".to_string(),
            }),
            Cell::text(if p.rules.is_empty() {
                "—".to_string()
            } else {
                format!("{passed} of {}", p.rules.len())
            }),
            Cell::text(findings.join("; ")),
        ]);
    }
    t
}

/// Cases that did not finish, with why (log tails are shown apart).
pub fn problems_table(r: &RunReport) -> Table {
    let mut t = Table::new(
        "table-problems",
        &[
            ("variant", false),
            ("context", false),
            ("rep", true),
            ("state", false),
            ("reason", false),
        ],
    );
    for p in &r.problems {
        t.push(vec![
            Cell::text(p.key.variant_label()),
            Cell::text(p.key.context()),
            Cell::num(p.repetition as f64, 0),
            Cell::text(p.state.clone()),
            Cell::text(p.reason.clone().unwrap_or_else(|| "—".into())),
        ]);
    }
    t
}

/// Every case's flags and recorded warnings.
pub fn notes_table(r: &RunReport) -> Table {
    let mut t = Table::new(
        "table-notes",
        &[("variant", false), ("context", false), ("note", false)],
    );
    for g in &r.groups {
        for n in crate::report::model::notes(g.flags(), &g.warnings) {
            t.push(vec![
                Cell::text(g.label.clone()),
                Cell::text(g.key.context()),
                Cell::text(n),
            ]);
        }
    }
    t
}
