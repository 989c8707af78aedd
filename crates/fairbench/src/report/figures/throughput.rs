//! Throughput: median requests per second per case, with the confidence
//! interval of the median as whiskers.

use super::{case_rows, columns, legend, no_data, summary_tip, tip_head, Figure};
use crate::report::model::Group;
use crate::report::stats::Summary;
use crate::report::svg::bar::{Bar, BarChart};
use crate::report::table::{fixed, percent, Cell, Table};

/// Opacity of the per-thread bar beside the total.
const PER_THREAD_OPACITY: f64 = 0.45;

pub(super) fn throughput(groups: &[&Group], id: &str, title: &str) -> Figure {
    // wrk's per-thread Req/Sec, where it was measured, beside the total.
    let per_thread = groups.iter().any(|g| g.thread_rps.is_some());
    let mut table = Table::new(format!("table-{id}"), &columns(&table_columns(per_thread)));
    let rows = case_rows(groups, &mut table, |g| {
        let mut bars = vec![total_bar(g)];
        bars.extend(g.thread_rps.as_ref().map(|t| per_thread_bar(g, t)));
        (bars, cells(g, per_thread))
    });
    let chart = BarChart {
        id: format!("chart-{id}"),
        title: title.to_string(),
        subtitle: Some("median of repetitions; whiskers: CI of the median (1 repetition: ± stdev of 1-s rates)".into()),
        x_label: "requests per second (req/s)".into(),
        rows,
        legend: if per_thread {
            legend(&[
                ("total, all load threads", 1.0),
                ("per load thread (wrk's Req/Sec)", PER_THREAD_OPACITY),
            ])
        } else {
            Vec::new()
        },
    };
    let caption = if per_thread {
        "Higher is better. ⚠ marks a case with a note (contract failed, generator saturated, shared CPUs or failed repetitions): see the table. The solid bar is the requests per second of all load threads together; the pale bar beside it, wrk's per-thread Req/Sec, the figure the studies plotted: the mean of every load thread's rate over 100 ms intervals (about the total divided by the load's threads, t=), with its stdev and max in the table."
    } else {
        "Higher is better. ⚠ marks a case with a note (contract failed, generator saturated, shared CPUs or failed repetitions): see the table. Requests per second of all load threads together; the studies plotted wrk's per-thread Req/Sec, about this divided by the load's threads (t=)."
    };
    Figure {
        id: id.to_string(),
        title: title.to_string(),
        caption: caption.into(),
        svg: Some(chart.render()),
        table,
    }
}

/// The columns after the key columns; wrk's per-thread figures only where
/// some case has them.
fn table_columns(per_thread: bool) -> Vec<(&'static str, bool)> {
    let mut cols = vec![
        ("req/s median", true),
        ("CI low", true),
        ("CI high", true),
        ("CI level", false),
        ("1-s stdev", true),
    ];
    if per_thread {
        cols.extend([
            ("per-thread req/s (wrk) median", true),
            ("per-thread stdev", true),
            ("per-thread max", true),
        ]);
    }
    cols.push(("notes", false));
    cols
}

/// The requests per second of all load threads together.
fn total_bar(g: &Group) -> Bar {
    match &g.rps {
        Some(s) => {
            let whisker = if s.n >= 2 {
                Some((s.low, s.high))
            } else {
                g.rps_stdev_1s
                    .map(|sd| ((s.median - sd).max(0.0), s.median + sd))
            };
            let mut tip = format!("{}\n{}", tip_head(g), summary_tip(s, 1, "req/s"));
            if let Some(sd) = g.rps_stdev_1s {
                tip.push_str(&format!(
                    "\nstdev of the 1-second rates: {} req/s",
                    fixed(sd, 1)
                ));
            }
            Bar {
                value: s.median,
                whisker,
                opacity: 1.0,
                tip,
                text: fixed(s.median, 0),
            }
        }
        None => no_data(g),
    }
}

/// wrk's per-thread Req/Sec, the pale bar beside the total.
fn per_thread_bar(g: &Group, t: &Summary) -> Bar {
    Bar {
        value: t.median,
        whisker: None,
        opacity: PER_THREAD_OPACITY,
        tip: format!(
            "{}\nper load thread (wrk's Req/Sec): mean {} req/s{}{}",
            tip_head(g),
            fixed(t.median, 1),
            g.thread_rps_stdev
                .map(|sd| format!(", stdev {}", fixed(sd, 1)))
                .unwrap_or_default(),
            g.thread_rps_max
                .as_ref()
                .map(|m| format!(", max {}", fixed(m.median, 1)))
                .unwrap_or_default()
        ),
        text: format!("{} /thread", fixed(t.median, 0)),
    }
}

fn cells(g: &Group, per_thread: bool) -> Vec<Cell> {
    let mut cells = match &g.rps {
        Some(s) if s.n >= 2 => vec![
            Cell::num(s.median, 1),
            Cell::num(s.low, 1),
            Cell::num(s.high, 1),
            Cell::text(percent(s.confidence)),
        ],
        Some(s) => vec![
            Cell::num(s.median, 1),
            Cell::none(),
            Cell::none(),
            Cell::text("n = 1"),
        ],
        None => vec![Cell::none(), Cell::none(), Cell::none(), Cell::none()],
    };
    cells.push(Cell::opt(g.rps_stdev_1s, 1));
    if per_thread {
        cells.push(Cell::opt(g.thread_rps.as_ref().map(|s| s.median), 1));
        cells.push(Cell::opt(g.thread_rps_stdev, 1));
        cells.push(Cell::opt(g.thread_rps_max.as_ref().map(|s| s.median), 1));
    }
    cells.push(Cell::text(g.flags().join("; ")));
    cells
}
