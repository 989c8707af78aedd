//! What wrk 4.x prints, beside fairbench's own figures, for the cases
//! whose timeouts were counted wrk's way (the suites that reproduce a
//! wrk measurement): the publications' figures computed their way.

use super::{case_rows, columns, legend, med, tip_head, Figure};
use crate::report::model::{Group, WrkGroup};
use crate::report::svg::bar::{Bar, BarChart};
use crate::report::svg::latency_unit;
use crate::report::table::{Cell, Table};

/// Opacity of fairbench's own p99 beside wrk's.
const OWN_OPACITY: f64 = 0.45;

pub(super) fn as_wrk_prints(groups: &[&Group]) -> Option<Figure> {
    let groups: Vec<&Group> = groups.iter().copied().filter(|g| g.wrk.is_some()).collect();
    if groups.is_empty() {
        return None;
    }
    let id = "latency-wrk";
    let max = groups
        .iter()
        .flat_map(|g| [g.wrk.as_ref().map(|w| w.lat_p99.median), med(&g.lat_p99)])
        .flatten()
        .fold(0.0f64, f64::max);
    let (div, unit) = latency_unit(max);
    let mut table = Table::new(
        format!("table-{id}"),
        &columns(&[
            ("wrk mean µs", true),
            ("wrk stdev µs", true),
            ("wrk +/- stdev", true),
            ("wrk p50 µs", true),
            ("wrk p75 µs", true),
            ("wrk p90 µs", true),
            ("wrk p99 µs", true),
            ("wrk max µs", true),
            ("wrk requests", true),
            ("fairbench mean µs", true),
            ("fairbench p99 µs", true),
            ("fairbench requests", true),
        ]),
    );
    let rows = case_rows(&groups, &mut table, |g| {
        let w = g.wrk.as_ref().expect("filtered above");
        (bars(g, w, div), cells(g, w))
    });
    let chart = BarChart {
        id: format!("chart-{id}"),
        title: "p99 latency as wrk prints it, beside fairbench's".into(),
        subtitle: Some("medians of repetitions".into()),
        x_label: format!("latency ({unit})"),
        rows,
        legend: legend(&[
            ("p99 as wrk 4.x prints it", 1.0),
            ("p99, fairbench's own", OWN_OPACITY),
        ]),
    };
    Some(Figure {
        id: id.to_string(),
        title: "Latency as wrk prints it".into(),
        caption: "The publications' figures computed their way: wrk 4.x records no answer at or above its timeout, then adds synthetic samples for every answer of two or more expected intervals (stats_correct, its interval the run's time over each connection's completed requests) before it prints mean, stdev, +/- stdev and percentiles; its request count includes answers after the timeout. fairbench's own figures, beside them, count every request of the window, unanswered ones at their timeout. Lower is better.".into(),
        svg: Some(chart.render()),
        table,
    })
}

/// wrk's p99 and, where there is one, fairbench's own beside it, in units
/// of `div` µs.
fn bars(g: &Group, w: &WrkGroup, div: f64) -> Vec<Bar> {
    let mut bars = vec![Bar {
        value: w.lat_p99.median / div,
        whisker: None,
        opacity: 1.0,
        tip: format!(
            "{}\np99 as wrk prints it: {} (mean {}, stdev {})",
            tip_head(g),
            crate::units::micros(w.lat_p99.median),
            crate::units::micros(w.lat_mean.median),
            crate::units::micros(w.lat_stdev.median)
        ),
        text: format!("wrk p99 {}", crate::units::micros(w.lat_p99.median)),
    }];
    if let Some(p99) = med(&g.lat_p99) {
        bars.push(Bar {
            value: p99 / div,
            whisker: None,
            opacity: OWN_OPACITY,
            tip: format!(
                "{}\np99, fairbench's own (every request of the window): {}",
                tip_head(g),
                crate::units::micros(p99)
            ),
            text: format!("p99 {}", crate::units::micros(p99)),
        });
    }
    bars
}

/// What wrk printed, then fairbench's own figures.
fn cells(g: &Group, w: &WrkGroup) -> Vec<Cell> {
    vec![
        Cell::num(w.lat_mean.median, 1),
        Cell::num(w.lat_stdev.median, 1),
        Cell::text(format!("{:.2} %", w.within_stdev)),
        Cell::num(w.lat_p50.median, 0),
        Cell::num(w.lat_p75.median, 0),
        Cell::num(w.lat_p90.median, 0),
        Cell::num(w.lat_p99.median, 0),
        Cell::num(w.lat_max.median, 0),
        Cell::num(w.requests.median, 0),
        Cell::opt(med(&g.lat_mean), 1),
        Cell::opt(med(&g.lat_p99), 1),
        Cell::opt(med(&g.requests), 0),
    ]
}
