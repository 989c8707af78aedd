//! Core scaling: median requests per second against the cores the server
//! was given.

use std::collections::BTreeSet;

use super::{case_series, colour, grouped, med, named_table, summary_tip, Figure};
use crate::report::case_key::cores_label;
use crate::report::model::Group;
use crate::report::svg::line::{Axis, AxisKind, LineChart, Point, Series};
use crate::report::table::{Cell, Table};

pub(super) fn scaling(groups: &[&Group]) -> Vec<Figure> {
    let mut figs = Vec::new();
    // (scenario, load) pairs measured at two or more core counts.
    let keyed = grouped(groups.iter().copied(), |g| {
        (g.key.scenario.clone(), g.key.load.clone())
    });
    for ((scenario, load), gs) in keyed {
        let gs: Vec<&Group> = gs.into_iter().filter(|g| g.rps.is_some()).collect();
        let cores: BTreeSet<i64> = gs.iter().map(|g| g.key.cores).collect();
        if cores.len() < 2 {
            continue;
        }
        // Each variant with its cases, variants in order of first case.
        let variants = grouped(gs.iter().copied(), |g| g.label.clone());
        let id = format!("scaling-{}", figs.len() + 1);
        let title = format!("Core scaling — {scenario} · {load}");
        let chart = LineChart {
            id: format!("chart-{id}"),
            title: title.clone(),
            subtitle: Some("median requests per second at each core count".into()),
            x: Axis {
                label: "cores given to the server".into(),
                kind: AxisKind::Count,
            },
            y: Axis {
                label: "requests per second (req/s)".into(),
                kind: AxisKind::Linear,
            },
            series: variants.iter().map(|(_, v)| series(v)).collect(),
            vmarks: Vec::new(),
            hmarks: Vec::new(),
        };
        let table = table(&id, &variants, &cores);
        figs.push(Figure {
            id,
            title,
            caption: "Higher is better; a line that flattens stops scaling.".into(),
            svg: Some(chart.render()),
            table,
        });
    }
    figs
}

/// A variant's line: its median req/s at each core count, fewest first.
fn series(cases: &[&Group]) -> Series {
    let mut pts = cases.to_vec();
    pts.sort_by_key(|g| g.key.cores);
    let points = pts
        .iter()
        .map(|g| {
            let s = g.rps.as_ref().expect("filtered");
            Point {
                x: g.key.cores as f64,
                y: s.median,
                tip: format!(
                    "{}\n{}\n{}",
                    g.label,
                    cores_label(g.key.cores),
                    summary_tip(s, 1, "req/s")
                ),
            }
        })
        .collect();
    case_series(cases[0], points)
}

/// One row per variant, one column per core count.
fn table(id: &str, variants: &[(String, Vec<&Group>)], cores: &BTreeSet<i64>) -> Table {
    let mut cols: Vec<(String, bool)> = vec![("variant".into(), false)];
    cols.extend(
        cores
            .iter()
            .map(|c| (format!("req/s at {}", cores_label(*c)), true)),
    );
    let mut table = named_table(id, &cols);
    for (_, cases) in variants {
        let v = cases[0];
        let mut row = vec![Cell::swatch(v.label.clone(), colour(v))];
        for c in cores {
            row.push(Cell::opt(
                cases
                    .iter()
                    .find(|g| g.key.cores == *c)
                    .and_then(|g| med(&g.rps)),
                1,
            ));
        }
        table.push(row);
    }
    table
}
