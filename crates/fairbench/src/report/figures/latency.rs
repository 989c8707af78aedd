//! Latency: mean and p99 per case, medians over repetitions.

use super::{case_rows, columns, legend, med, no_data, summary_tip, tip_head, Figure};
use crate::report::model::Group;
use crate::report::svg::bar::{Bar, BarChart};
use crate::report::svg::latency_unit;
use crate::report::table::{Cell, Table};

pub(super) fn latency(groups: &[&Group], id: &str, title: &str) -> Figure {
    let max = groups
        .iter()
        .filter_map(|g| g.lat_p99.as_ref().map(|s| s.high.max(s.median)))
        .fold(0.0f64, f64::max);
    let (div, unit) = latency_unit(max);
    let mut table = Table::new(
        format!("table-{id}"),
        &columns(&[
            ("mean µs", true),
            ("stdev µs", true),
            ("p50 µs", true),
            ("p90 µs", true),
            ("p99 µs", true),
            ("p99 CI low", true),
            ("p99 CI high", true),
            ("p99.9 µs", true),
            ("max µs", true),
        ]),
    );
    let rows = case_rows(groups, &mut table, |g| (bars(g, div), cells(g)));
    let chart = BarChart {
        id: format!("chart-{id}"),
        title: title.to_string(),
        subtitle: Some("medians of repetitions; whiskers: CI of the p99 median".into()),
        x_label: format!("latency ({unit})"),
        rows,
        legend: legend(&[("mean", 0.45), ("p99", 1.0)]),
    };
    Figure {
        id: id.to_string(),
        title: title.to_string(),
        caption:
            "Lower is better. Bars use the server's colour: light for the mean, solid for p99."
                .into(),
        svg: Some(chart.render()),
        table,
    }
}

/// A case's light mean bar and solid p99 bar, in units of `div` µs.
fn bars(g: &Group, div: f64) -> Vec<Bar> {
    match (&g.lat_mean, &g.lat_p99) {
        (Some(mean), Some(p99)) => vec![
            Bar {
                value: mean.median / div,
                whisker: None,
                opacity: 0.45,
                tip: format!(
                    "{}\nmean latency: {}",
                    tip_head(g),
                    summary_tip(mean, 1, "µs")
                ),
                text: format!("mean {}", crate::units::micros(mean.median)),
            },
            Bar {
                value: p99.median / div,
                whisker: (p99.n >= 2).then(|| (p99.low / div, p99.high / div)),
                opacity: 1.0,
                tip: format!(
                    "{}\np99 latency: {}",
                    tip_head(g),
                    summary_tip(p99, 1, "µs")
                ),
                text: format!("p99 {}", crate::units::micros(p99.median)),
            },
        ],
        _ => vec![no_data(g)],
    }
}

fn cells(g: &Group) -> Vec<Cell> {
    vec![
        Cell::opt(med(&g.lat_mean), 1),
        Cell::opt(med(&g.lat_stdev), 1),
        Cell::opt(med(&g.lat_p50), 1),
        Cell::opt(med(&g.lat_p90), 1),
        Cell::opt(med(&g.lat_p99), 1),
        Cell::opt(g.lat_p99.as_ref().filter(|s| s.n >= 2).map(|s| s.low), 1),
        Cell::opt(g.lat_p99.as_ref().filter(|s| s.n >= 2).map(|s| s.high), 1),
        Cell::opt(med(&g.lat_p999), 1),
        Cell::opt(med(&g.lat_max), 1),
    ]
}
