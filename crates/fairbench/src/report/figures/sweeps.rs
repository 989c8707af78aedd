//! Rate sweeps: latency against the offered rate, with the objective and
//! the knee.

use std::collections::BTreeSet;

use super::palette;
use super::{grouped, trim_pct, Figure};
use crate::report::case_key::cores_label;
use crate::report::model::{RunReport, SweepInfo, SweepStep};
use crate::report::svg::latency_unit;
use crate::report::svg::line::{Axis, AxisKind, LineChart, Mark, Point, Series};
use crate::report::table::{fixed, Cell, Table};

pub(super) fn sweeps(r: &RunReport) -> Vec<Figure> {
    let keyed = grouped(&r.sweeps, |s| (s.scenario.clone(), s.cores));
    let mut figs = Vec::new();
    for (i, ((scenario, cores), ss)) in keyed.iter().enumerate() {
        let max = ss
            .iter()
            .flat_map(|s| s.steps.iter().flat_map(|p| [p.p50_us, p.p99_us]))
            .flatten()
            .chain(ss.iter().map(|s| s.slo_us as f64))
            .fold(0.0, f64::max);
        let (div, unit) = latency_unit(max);
        let mut series = Vec::new();
        let mut vmarks = Vec::new();
        for s in ss {
            series.extend(sweep_series(s, div));
            vmarks.extend(knee(s));
        }
        let id = format!("sweep-{}", i + 1);
        let title = format!(
            "Latency against offered rate — {scenario} · {}",
            cores_label(*cores)
        );
        let chart = LineChart {
            id: format!("chart-{id}"),
            title: title.clone(),
            subtitle: Some("constant-rate steps, medians of repetitions; knee = highest rate meeting the objective".into()),
            x: Axis { label: "offered rate (req/s)".into(), kind: AxisKind::Linear },
            y: Axis { label: format!("latency ({unit}, log scale)"), kind: AxisKind::Log },
            series,
            vmarks,
            hmarks: objective(ss, div),
        };
        let table = table(&id, ss);
        figs.push(Figure {
            id,
            title,
            caption:
                "Past the knee, latency climbs: the server cannot keep up with the offered rate."
                    .into(),
            svg: Some(chart.render()),
            table,
        });
    }
    figs
}

/// A sweep's p99 (solid) and p50 (dashed) against the offered rate, in
/// units of `div` µs.
fn sweep_series(s: &SweepInfo, div: f64) -> [Series; 2] {
    let c = palette::colour(s.palette_index);
    let line = |name: &str, dash: &'static str, pick: fn(&SweepStep) -> Option<f64>| Series {
        label: format!("{} {name}", s.variant_label()),
        colour: c,
        dash,
        points: s
            .steps
            .iter()
            .filter_map(|p| {
                pick(p).map(|v| Point {
                    x: p.offered_rps,
                    y: v / div,
                    tip: format!(
                        "{}\noffered {} req/s, achieved {} req/s\n{name} {} µs",
                        s.variant_label(),
                        fixed(p.offered_rps, 0),
                        p.achieved_rps.map_or("—".into(), |a| fixed(a, 1)),
                        fixed(v, 0)
                    ),
                })
            })
            .collect(),
    };
    [
        line("p99", "", |p| p.p99_us),
        line("p50", "2 3", |p| p.p50_us),
    ]
}

/// The knee of a sweep, as a vertical line, if it has one.
fn knee(s: &SweepInfo) -> Option<Mark> {
    s.knee_rps.map(|k| Mark {
        at: k,
        colour: palette::colour(s.palette_index),
        dash: "6 3",
        label: format!("knee {}: {} req/s", s.server, fixed(k, 0)),
    })
}

/// The objective as a horizontal line, when every sweep shares it.
fn objective(ss: &[&SweepInfo], div: f64) -> Vec<Mark> {
    let slos: BTreeSet<(i64, i64)> = ss
        .iter()
        .map(|s| ((s.slo_quantile * 1e6) as i64, s.slo_us))
        .collect();
    ss.first()
        .filter(|_| slos.len() == 1)
        .map(|s| Mark {
            at: s.slo_us as f64 / div,
            colour: "#999999",
            dash: "3 3",
            label: format!(
                "objective: p{} ≤ {}",
                trim_pct(s.slo_quantile * 100.0),
                crate::units::micros(s.slo_us as f64)
            ),
        })
        .into_iter()
        .collect()
}

/// One row per step; a sweep without steps gets one row saying why.
fn table(id: &str, ss: &[&SweepInfo]) -> Table {
    let mut table = Table::new(
        format!("table-{id}"),
        &[
            ("variant", false),
            ("offered req/s", true),
            ("achieved req/s", true),
            ("p50 µs", true),
            ("p99 µs", true),
            ("met objective", false),
            ("knee req/s", true),
        ],
    );
    for s in ss {
        for p in &s.steps {
            table.push(vec![
                Cell::swatch(s.variant_label(), palette::colour(s.palette_index)),
                Cell::num(p.offered_rps, 0),
                Cell::opt(p.achieved_rps, 1),
                Cell::opt(p.p50_us, 1),
                Cell::opt(p.p99_us, 1),
                Cell::text(match p.met {
                    Some(true) => "yes",
                    Some(false) => "no",
                    None => "—",
                }),
                Cell::opt(s.knee_rps, 0),
            ]);
        }
        if s.steps.is_empty() {
            table.push(vec![
                Cell::swatch(s.variant_label(), palette::colour(s.palette_index)),
                Cell::none(),
                Cell::none(),
                Cell::none(),
                Cell::none(),
                Cell::text(format!(
                    "{}{}",
                    s.state,
                    s.reason
                        .as_deref()
                        .map(|r| format!(": {r}"))
                        .unwrap_or_default()
                )),
                Cell::opt(s.knee_rps, 0),
            ]);
        }
    }
    table
}
