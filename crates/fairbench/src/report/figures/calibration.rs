//! Calibration: what the publication's own tool printed on the same cases,
//! against the same server processes, beside fairbench's figures computed
//! that tool's way, with their ratios.

use super::{case_rows, columns, legend, med, tip_head, Figure};
use crate::report::model::{CalibrationGroup, Group};
use crate::report::svg::bar::{Bar, BarChart};
use crate::report::svg::latency_unit;
use crate::report::table::{Cell, Table};

/// Opacity of fairbench's bar beside the tool's.
const OURS_OPACITY: f64 = 0.45;

/// fairbench's figures as the tool computes them: wrk's printed latency
/// and count where it has them (timeouts counted wrk's way), else its own
/// (wrk2 and ab time from the schedule or the send as fairbench does).
fn ours(g: &Group) -> (Option<f64>, Option<f64>, Option<f64>) {
    match &g.wrk {
        Some(w) => (
            Some(w.lat_mean.median),
            Some(w.lat_p99.median),
            Some(w.requests.median),
        ),
        None => (med(&g.lat_mean), med(&g.lat_p99), med(&g.requests)),
    }
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

pub(super) fn calibration(groups: &[&Group]) -> Option<Figure> {
    let groups: Vec<&Group> = groups
        .iter()
        .copied()
        .filter(|g| g.calibration.is_some())
        .collect();
    if groups.is_empty() {
        return None;
    }
    let id = "calibration";
    let max = groups
        .iter()
        .flat_map(|g| {
            [
                g.calibration.as_ref().and_then(|c| med(&c.lat_p99)),
                ours(g).1,
            ]
        })
        .flatten()
        .fold(0.0f64, f64::max);
    let (div, unit) = latency_unit(max);
    let mut table = Table::new(
        format!("table-{id}"),
        &columns(&[
            ("tool", false),
            ("calibrated", true),
            ("tool req/s", true),
            ("fairbench req/s", true),
            ("req/s ratio", true),
            ("tool mean µs", true),
            ("fairbench mean µs", true),
            ("mean ratio", true),
            ("tool p99 µs", true),
            ("fairbench p99 µs", true),
            ("p99 ratio", true),
            ("tool requests", true),
            ("fairbench requests", true),
            ("notes", false),
        ]),
    );
    let rows = case_rows(&groups, &mut table, |g| {
        let c = g.calibration.as_ref().expect("filtered above");
        (bars(g, c, div), cells(g, c))
    });
    let chart = BarChart {
        id: format!("chart-{id}"),
        title: "p99 latency: the original tool and fairbench on the same server".into(),
        subtitle: Some("medians of repetitions".into()),
        x_label: format!("latency ({unit})"),
        rows,
        legend: legend(&[
            ("as the tool printed it", 1.0),
            ("fairbench, computed the tool's way", OURS_OPACITY),
        ]),
    };
    Some(Figure {
        id: id.to_string(),
        title: "Calibration against the original tool".into(),
        caption: "Each calibrated case ran the publication's own tool (wrk, wrk2 or ab) right after fairbench's measurement, against the same server process, with the case's connections, threads, duration and timeout. fairbench's figures beside it are computed the tool's way: for wrk, its printed latency and count (see Latency as wrk prints it); for wrk2 and ab, fairbench's own. Ratios are fairbench over the tool; the two runs are consecutive, not simultaneous, so they differ by the server's own run-to-run spread as well.".into(),
        svg: Some(chart.render()),
        table,
    })
}

/// The tool's p99 and fairbench's beside it, each where there is one, in
/// units of `div` µs.
fn bars(g: &Group, c: &CalibrationGroup, div: f64) -> Vec<Bar> {
    let mut bars = Vec::new();
    if let Some(v) = med(&c.lat_p99) {
        bars.push(Bar {
            value: v / div,
            whisker: None,
            opacity: 1.0,
            tip: format!(
                "{}\np99 as {} printed it: {}",
                tip_head(g),
                c.tool,
                crate::units::micros(v)
            ),
            text: format!("{} {}", c.tool, crate::units::micros(v)),
        });
    }
    if let Some(v) = ours(g).1 {
        bars.push(Bar {
            value: v / div,
            whisker: None,
            opacity: OURS_OPACITY,
            tip: format!(
                "{}\np99, fairbench computed {}'s way: {}",
                tip_head(g),
                c.tool,
                crate::units::micros(v)
            ),
            text: format!("fairbench {}", crate::units::micros(v)),
        });
    }
    bars
}

/// The tool's figures, fairbench's and their ratios, then the notes.
fn cells(g: &Group, c: &CalibrationGroup) -> Vec<Cell> {
    let (mean, p99, requests) = ours(g);
    let tool_p99 = med(&c.lat_p99);
    let mut notes = c.not_done.clone();
    if !c.command.is_empty() {
        notes.push(format!("ran: {}", c.command));
    }
    vec![
        Cell::text(c.tool.clone()),
        Cell::num(c.done as f64, 0),
        Cell::opt(med(&c.rps), 1),
        Cell::opt(med(&g.rps), 1),
        Cell::opt(ratio(med(&g.rps), med(&c.rps)), 3),
        Cell::opt(med(&c.lat_mean), 1),
        Cell::opt(mean, 1),
        Cell::opt(ratio(mean, med(&c.lat_mean)), 3),
        Cell::opt(tool_p99, 0),
        Cell::opt(p99, 0),
        Cell::opt(ratio(p99, tool_p99), 3),
        Cell::opt(med(&c.requests), 0),
        Cell::opt(requests, 0),
        Cell::text(notes.join("; ")),
    ]
}
