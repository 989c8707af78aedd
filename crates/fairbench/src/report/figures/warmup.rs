//! Warm-up: requests per second second by second, warm-up included.

use super::{by_context, case_series, columns, key_cells, named_table, Figure};
use crate::report::model::Group;
use crate::report::svg::line::{Axis, AxisKind, LineChart, Mark, Point, Series};
use crate::report::table::{fixed, Cell, Table};

pub(super) fn warmups(groups: &[&Group]) -> Vec<Figure> {
    let with: Vec<&Group> = groups
        .iter()
        .copied()
        .filter(|g| g.warmup.is_some())
        .collect();
    let mut figs: Vec<Figure> = auto_warmups(groups).into_iter().collect();
    for (i, (ctx, gs)) in by_context(&with).into_iter().enumerate() {
        let id = format!("warmup-{}", i + 1);
        let title = format!("Warm-up — {ctx}");
        let chart = LineChart {
            id: format!("chart-{id}"),
            title: title.clone(),
            subtitle: Some(
                "requests per second, second by second; first finished repetition".into(),
            ),
            x: Axis {
                label: "time since the load began (s)".into(),
                kind: AxisKind::Linear,
            },
            y: Axis {
                label: "requests per second (req/s)".into(),
                kind: AxisKind::Linear,
            },
            series: gs.iter().map(|g| series(g)).collect(),
            vmarks: measurement_start(&gs),
            hmarks: Vec::new(),
        };
        let table = table(&id, &gs);
        figs.push(Figure {
            id,
            title,
            caption: "Seconds before the dashed line are warm-up and are not counted in any other figure.".into(),
            svg: Some(chart.render()),
            table,
        });
    }
    figs
}

/// A case's requests per second, second by second.
fn series(g: &Group) -> Series {
    let w = g.warmup.as_ref().expect("filtered");
    let points = w
        .points
        .iter()
        .map(|p| Point {
            x: p.t_s,
            y: p.rps,
            tip: format!(
                "{}\nsecond {} ({}), t = {} s: {} req/s, p99 {} µs",
                g.label,
                p.second,
                p.phase,
                fixed(p.t_s, 1),
                fixed(p.rps, 1),
                fixed(p.p99_us as f64, 0)
            ),
        })
        .collect();
    case_series(g, points)
}

/// The line where the measurement starts, if it starts after the load.
fn measurement_start(gs: &[&Group]) -> Vec<Mark> {
    // The measurement starts at the first 'measure' sample.
    let start = gs
        .iter()
        .filter_map(|g| g.warmup.as_ref())
        .filter_map(|w| {
            w.points
                .iter()
                .find(|p| p.phase == "measure")
                .map(|p| p.t_s)
        })
        .fold(f64::NAN, |a: f64, b| if a.is_nan() { b } else { a.min(b) });
    if start.is_finite() && start > 0.0 {
        vec![Mark {
            at: start,
            colour: "#444444",
            dash: "4 3",
            label: "measurement starts".into(),
        }]
    } else {
        Vec::new()
    }
}

/// One row per second any case has, one column per variant.
fn table(id: &str, gs: &[&Group]) -> Table {
    let mut seconds: Vec<(i64, f64, String)> = Vec::new();
    for g in gs {
        for p in &g.warmup.as_ref().expect("filtered").points {
            if !seconds.iter().any(|(s, _, _)| *s == p.second) {
                seconds.push((p.second, p.t_s, p.phase.clone()));
            }
        }
    }
    seconds.sort_by_key(|(s, _, _)| *s);
    let mut cols: Vec<(String, bool)> = vec![
        ("second".into(), true),
        ("t (s)".into(), true),
        ("phase".into(), false),
    ];
    cols.extend(gs.iter().map(|g| (format!("{} req/s", g.label), true)));
    let mut table = named_table(id, &cols);
    for (sec, t, phase) in seconds {
        let mut row = vec![Cell::num(sec as f64, 0), Cell::num(t, 1), Cell::text(phase)];
        for g in gs {
            let p = g
                .warmup
                .as_ref()
                .and_then(|w| w.points.iter().find(|p| p.second == sec));
            row.push(Cell::opt(p.map(|p| p.rps), 1));
        }
        table.push(row);
    }
    table
}

/// The warm-up each case measured with `--warmup auto` took, over its
/// repetitions, and the repetitions the ceiling cut before the server was
/// steady; None when no case was.
fn auto_warmups(groups: &[&Group]) -> Option<Figure> {
    let auto: Vec<(&Group, &crate::report::model::AutoWarmup)> = groups
        .iter()
        .filter_map(|g| g.auto_warmup.as_ref().map(|a| (*g, a)))
        .collect();
    if auto.is_empty() {
        return None;
    }
    let id = "warmup-auto";
    let mut table = Table::new(
        format!("table-{id}"),
        &columns(&[
            ("warm-up median (s)", true),
            ("min (s)", true),
            ("max (s)", true),
            ("ceiling (s)", true),
            ("steady", false),
        ]),
    );
    for (g, a) in auto {
        let mut row = key_cells(g);
        let t = a.taken_s.as_ref();
        row.extend([
            Cell::opt(t.map(|s| s.median), 1),
            Cell::opt(t.map(|s| s.min), 1),
            Cell::opt(t.map(|s| s.max), 1),
            Cell::opt(a.ceiling_s, 0),
            Cell::text(match a.not_steady {
                0 => "yes".to_string(),
                n => format!(
                    "⚠ no: {n} of {} repetitions not steady by the ceiling, measured anyway",
                    a.repetitions.len()
                ),
            }),
        ]);
        table.push(row);
    }
    Some(Figure {
        id: id.into(),
        title: "Automatic warm-up (--warmup auto)".into(),
        caption: "How long each case warmed up before it was measured: until a trend test over the last seconds said the server was steady, at most the ceiling (the reconnect second before the measurement included). The time is a result in itself: a JIT needs longer than an AOT binary. A case not steady by the ceiling was measured anyway, possibly still warming.".into(),
        svg: None,
        table,
    })
}
