//! The latency spectrum: latency by percentile on a log "nines" axis, every
//! repetition's histogram merged.

use super::{by_context, case_series, named_table, trim_pct, Figure};
use crate::report::model::{Group, NINES_STEP};
use crate::report::svg::latency_unit;
use crate::report::svg::line::{Axis, AxisKind, LineChart, Point, Series};
use crate::report::table::{fixed, Cell, Table};

pub(super) fn spectra(groups: &[&Group]) -> Vec<Figure> {
    let mut figs = Vec::new();
    let with: Vec<&Group> = groups
        .iter()
        .copied()
        .filter(|g| g.spectrum.is_some())
        .collect();
    for (i, (ctx, gs)) in by_context(&with).into_iter().enumerate() {
        let max = gs
            .iter()
            .filter_map(|g| g.spectrum.as_ref())
            .flat_map(|s| s.points.iter().map(|p| p.latency_us as f64))
            .fold(0.0, f64::max);
        let (div, unit) = latency_unit(max);
        let id = format!("spectrum-{}", i + 1);
        let title = format!("Latency by percentile — {ctx}");
        let chart = LineChart {
            id: format!("chart-{id}"),
            title: title.clone(),
            subtitle: Some("all repetitions merged; x: percentile on a log \"nines\" scale".into()),
            x: Axis {
                label: "percentile (log scale of nines)".into(),
                kind: AxisKind::Nines,
            },
            y: Axis {
                label: format!("latency ({unit})"),
                kind: AxisKind::Linear,
            },
            series: gs.iter().map(|g| series(g, div)).collect(),
            vmarks: Vec::new(),
            hmarks: Vec::new(),
        };
        let table = table(&id, &gs);
        figs.push(Figure {
            id,
            title,
            caption: format!(
                "Lower is better. Points every {NINES_STEP} nines; the table adds the maximum. Line colour: server; dash: variant."
            ),
            svg: Some(chart.render()),
            table,
        });
    }
    figs
}

/// A case's latency at each percentile drawn, in units of `div` µs.
fn series(g: &Group, div: f64) -> Series {
    let sp = g.spectrum.as_ref().expect("filtered");
    let points = sp
        .points
        .iter()
        .map(|p| Point {
            x: p.nines,
            y: p.latency_us as f64 / div,
            tip: format!(
                "{}\np{}: {} µs ({} samples)",
                g.label,
                trim_pct(p.percentile),
                fixed(p.latency_us as f64, 0),
                fixed(sp.count as f64, 0)
            ),
        })
        .collect();
    case_series(g, points)
}

/// One row per percentile drawn, then the maximum; one column per variant.
fn table(id: &str, gs: &[&Group]) -> Table {
    let mut cols: Vec<(String, bool)> = vec![("percentile".into(), false)];
    cols.extend(gs.iter().map(|g| (format!("{} µs", g.label), true)));
    let mut table = named_table(id, &cols);
    let deepest = gs
        .iter()
        .filter_map(|g| g.spectrum.as_ref().map(|s| s.points.len()))
        .max()
        .unwrap_or(0);
    for step in 0..deepest {
        let pct = gs
            .iter()
            .filter_map(|g| g.spectrum.as_ref().and_then(|s| s.points.get(step)))
            .map(|p| p.percentile)
            .next()
            .unwrap_or(f64::NAN);
        let mut row = vec![Cell {
            text: format!("p{}", trim_pct(pct)),
            value: Some(pct),
            swatch: None,
        }];
        for g in gs {
            row.push(Cell::opt(
                g.spectrum
                    .as_ref()
                    .and_then(|s| s.points.get(step))
                    .map(|p| p.latency_us as f64),
                0,
            ));
        }
        table.push(row);
    }
    let mut row = vec![Cell::text("max")];
    for g in gs {
        row.push(Cell::opt(g.spectrum.as_ref().map(|s| s.max_us as f64), 0));
    }
    table.push(row);
    table
}
