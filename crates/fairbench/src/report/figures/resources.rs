//! Server resources: CPU time per request and peak resident memory of the
//! server process tree, and for the database scenarios the database's
//! beside them.

use super::{
    case_rows, columns, legend, med, no_data, simple_bar, summary_tip, tip_head, Figure, SimpleBar,
};
use crate::report::model::Group;
use crate::report::stats::Summary;
use crate::report::svg::bar::{Bar, BarChart};
use crate::report::svg::byte_unit;
use crate::report::table::{fixed, Cell, Table};

pub(super) fn cpu_per_request(groups: &[&Group]) -> Figure {
    let with: Vec<&Group> = groups
        .iter()
        .copied()
        .filter(|g| g.cpu_us_per_request.is_some())
        .collect();
    simple_bar(
        &with,
        SimpleBar {
            id: "cpu-per-request",
            title: "Server CPU time per request",
            subtitle:
                "CPU seconds of the server process tree during the measurement ÷ completed requests",
            caption: "Lower is better: the work the server spends on one response.",
            axis: "CPU microseconds per request (µs)".into(),
            div: 1.0,
            unit: "µs",
            decimals: 2,
            metric: |g| &g.cpu_us_per_request,
            text: |v| format!("{} µs", fixed(v, 2)),
        },
        &[("CPU µs/req median", true), ("min", true), ("max", true)],
    )
}

/// Opacity of the second bar of a row (the whole stack's CPU, the
/// database's memory) beside the first.
const BESIDE_OPACITY: f64 = 0.45;

/// The bar of one summary, with its whisker, tip and text.
fn bar(g: &Group, s: &Summary, spec: &BarSpec, what: &str, opacity: f64) -> Bar {
    Bar {
        value: s.median / spec.div,
        whisker: (s.n >= 2).then(|| (s.low / spec.div, s.high / spec.div)),
        opacity,
        tip: format!(
            "{}\n{what}: {}",
            tip_head(g),
            summary_tip(s, spec.decimals, spec.unit)
        ),
        text: format!("{} {what}", (spec.text)(s.median)),
    }
}

struct BarSpec {
    div: f64,
    decimals: usize,
    unit: &'static str,
    text: fn(f64) -> String,
}

/// The database's CPU per request beside each server's whole stack (the
/// database scenarios): per row, PostgreSQL's CPU per request and the
/// server's and the database's together, so that a server that moves work
/// into the database does not look cheaper; the pool each server kept is a
/// column of the table.
pub(super) fn db_cpu_per_request(groups: &[&Group]) -> Figure {
    let with: Vec<&Group> = groups
        .iter()
        .copied()
        .filter(|g| g.db_cpu_us_per_request.is_some() || g.db_pool.is_some())
        .collect();
    let spec = BarSpec {
        div: 1.0,
        decimals: 2,
        unit: "µs",
        text: |v| format!("{} µs", fixed(v, 2)),
    };
    let id = "db-cpu-per-request";
    let mut table = Table::new(
        format!("table-{id}"),
        &columns(&[
            ("DB CPU µs/req median", true),
            ("DB min", true),
            ("DB max", true),
            ("server CPU µs/req median", true),
            ("server + DB CPU µs/req median", true),
            ("total min", true),
            ("total max", true),
            ("pool", true),
        ]),
    );
    let rows = case_rows(&with, &mut table, |g| {
        let mut bars = Vec::new();
        match &g.db_cpu_us_per_request {
            Some(s) => bars.push(bar(g, s, &spec, "database", 1.0)),
            None => bars.push(no_data(g)),
        }
        if let Some(s) = &g.total_cpu_us_per_request {
            bars.push(bar(g, s, &spec, "server + database", BESIDE_OPACITY));
        }
        let db = g.db_cpu_us_per_request.as_ref();
        let total = g.total_cpu_us_per_request.as_ref();
        let cells = vec![
            Cell::opt(db.map(|s| s.median), 2),
            Cell::opt(db.map(|s| s.min), 2),
            Cell::opt(db.map(|s| s.max), 2),
            Cell::opt(med(&g.cpu_us_per_request), 2),
            Cell::opt(total.map(|s| s.median), 2),
            Cell::opt(total.map(|s| s.min), 2),
            Cell::opt(total.map(|s| s.max), 2),
            Cell::opt(g.db_pool.map(|p| p as f64), 0),
        ];
        (bars, cells)
    });
    let title = "Database CPU time per request, and server + database";
    let chart = BarChart {
        id: format!("chart-{id}"),
        title: title.into(),
        subtitle: Some("CPU of PostgreSQL's control group (every backend) in the measurement ÷ completed requests; pale: server + database".into()),
        x_label: "CPU microseconds per request (µs)".into(),
        rows,
        legend: legend(&[
            ("database (PostgreSQL)", 1.0),
            ("server + database", BESIDE_OPACITY),
        ]),
    };
    Figure {
        id: id.into(),
        title: title.into(),
        caption: "Lower is better. The solid bar is the database's CPU per request; the pale bar beside it the server's and the database's together (summed per repetition, then the median): the whole stack's work for one response, so a server that moves work into the database does not look cheaper. pool: the connections each server was told to keep (DB_POOL, its manifest's [db] pool, else 4 × cores).".into(),
        svg: Some(chart.render()),
        table,
    }
}

pub(super) fn rss_peak(groups: &[&Group]) -> Figure {
    if groups.iter().any(|g| g.db_memory_peak.is_some()) {
        return rss_and_db_memory(groups);
    }
    let with: Vec<&Group> = groups
        .iter()
        .copied()
        .filter(|g| g.rss_peak.is_some())
        .collect();
    let max = with
        .iter()
        .filter_map(|g| g.rss_peak.as_ref().map(|s| s.max))
        .fold(0.0, f64::max);
    let (div, unit) = byte_unit(max);
    simple_bar(
        &with,
        SimpleBar {
            id: "rss-peak",
            title: "Peak server memory (RSS)",
            subtitle: "peak resident set size of the server process tree, median of repetitions",
            caption: "Lower is better.",
            axis: format!("peak RSS ({unit})"),
            div,
            unit: "bytes",
            decimals: 0,
            metric: |g| &g.rss_peak,
            text: |v| crate::units::bytes(v as u64),
        },
        &[
            ("peak RSS bytes median", true),
            ("min", true),
            ("max", true),
        ],
    )
}

/// The server's peak RSS with the database's peak memory beside it, for a
/// run with the database scenarios: a pale bar and three columns, absent
/// (a dash) for a case without a database.
fn rss_and_db_memory(groups: &[&Group]) -> Figure {
    let with: Vec<&Group> = groups
        .iter()
        .copied()
        .filter(|g| g.rss_peak.is_some() || g.db_memory_peak.is_some())
        .collect();
    let max = with
        .iter()
        .flat_map(|g| [&g.rss_peak, &g.db_memory_peak])
        .filter_map(|s| s.as_ref().map(|s| s.max))
        .fold(0.0, f64::max);
    let (div, unit) = byte_unit(max);
    let spec = BarSpec {
        div,
        decimals: 0,
        unit: "bytes",
        text: |v| crate::units::bytes(v as u64),
    };
    let id = "rss-peak";
    let mut table = Table::new(
        format!("table-{id}"),
        &columns(&[
            ("peak RSS bytes median", true),
            ("min", true),
            ("max", true),
            ("DB memory peak bytes median", true),
            ("DB min", true),
            ("DB max", true),
        ]),
    );
    let rows = case_rows(&with, &mut table, |g| {
        let mut bars = vec![match &g.rss_peak {
            Some(s) => bar(g, s, &spec, "server", 1.0),
            None => no_data(g),
        }];
        if let Some(s) = &g.db_memory_peak {
            bars.push(bar(g, s, &spec, "database", BESIDE_OPACITY));
        }
        let mut cells = Vec::new();
        for m in [&g.rss_peak, &g.db_memory_peak] {
            let m = m.as_ref();
            cells.extend([
                Cell::opt(m.map(|s| s.median), 0),
                Cell::opt(m.map(|s| s.min), 0),
                Cell::opt(m.map(|s| s.max), 0),
            ]);
        }
        (bars, cells)
    });
    let title = "Peak memory: server (RSS) and database";
    let chart = BarChart {
        id: format!("chart-{id}"),
        title: title.into(),
        subtitle: Some("peak resident set size of the server process tree; pale: the peak of PostgreSQL's control group; medians of repetitions".into()),
        x_label: format!("peak memory ({unit})"),
        rows,
        legend: legend(&[
            ("server (RSS)", 1.0),
            ("database (PostgreSQL's group)", BESIDE_OPACITY),
        ]),
    };
    Figure {
        id: id.into(),
        title: title.into(),
        caption: "Lower is better. The solid bar is the server process tree's peak RSS; the pale bar beside it, for the database scenarios, the memory high-water mark of PostgreSQL's control group during the case (its processes, its shared buffers and the page cache charged to it: not an RSS, so compare databases with databases). No pale bar and a dash in the table: the case had no database.".into(),
        svg: Some(chart.render()),
        table,
    }
}
