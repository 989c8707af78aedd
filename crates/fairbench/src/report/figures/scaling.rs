//! Core scaling: median requests per second against the cores the server
//! was given.

use std::collections::BTreeSet;

use super::palette;
use super::{colour, med, series_label, summary_tip, Figure};
use crate::report::case_key::cores_label;
use crate::report::model::Group;
use crate::report::svg::line::{Axis, AxisKind, LineChart, Point, Series};
use crate::report::table::{Cell, Table};

pub(super) fn scaling(groups: &[&Group]) -> Vec<Figure> {
    // (scenario, load) pairs measured at two or more core counts.
    let mut keys: Vec<(String, String)> = Vec::new();
    for g in groups {
        let k = (g.key.scenario.clone(), g.key.load.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut figs = Vec::new();
    for (scenario, load) in keys {
        let gs: Vec<&Group> = groups
            .iter()
            .copied()
            .filter(|g| g.key.scenario == scenario && g.key.load == load && g.rps.is_some())
            .collect();
        let cores: BTreeSet<i64> = gs.iter().map(|g| g.key.cores).collect();
        if cores.len() < 2 {
            continue;
        }
        let mut variants: Vec<&Group> = Vec::new();
        for g in &gs {
            if !variants.iter().any(|v| v.label == g.label) {
                variants.push(g);
            }
        }
        let series = variants
            .iter()
            .map(|v| {
                let mut pts: Vec<&Group> =
                    gs.iter().copied().filter(|g| g.label == v.label).collect();
                pts.sort_by_key(|g| g.key.cores);
                Series {
                    label: series_label(v),
                    colour: colour(v),
                    dash: palette::dash(v.variant_index),
                    points: pts
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
                        .collect(),
                }
            })
            .collect();
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
            series,
            vmarks: Vec::new(),
            hmarks: Vec::new(),
        };
        let mut cols: Vec<(String, bool)> = vec![("variant".into(), false)];
        cols.extend(
            cores
                .iter()
                .map(|c| (format!("req/s at {}", cores_label(*c)), true)),
        );
        let col_refs: Vec<(&str, bool)> = cols.iter().map(|(n, b)| (n.as_str(), *b)).collect();
        let mut table = Table::new(format!("table-{id}"), &col_refs);
        for v in &variants {
            let mut row = vec![Cell::swatch(v.label.clone(), colour(v))];
            for c in &cores {
                row.push(Cell::opt(
                    gs.iter()
                        .find(|g| g.label == v.label && g.key.cores == *c)
                        .and_then(|g| med(&g.rps)),
                    1,
                ));
            }
            table.push(row);
        }
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
