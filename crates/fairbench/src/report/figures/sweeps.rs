//! Rate sweeps: latency against the offered rate, with the objective and
//! the knee.

use std::collections::BTreeSet;

use super::palette;
use super::{trim_pct, Figure};
use crate::report::case_key::cores_label;
use crate::report::model::{RunReport, SweepInfo};
use crate::report::svg::latency_unit;
use crate::report::svg::line::{Axis, AxisKind, LineChart, Mark, Point, Series};
use crate::report::table::{fixed, Cell, Table};

pub(super) fn sweeps(r: &RunReport) -> Vec<Figure> {
    let mut keys: Vec<(String, i64)> = Vec::new();
    for s in &r.sweeps {
        let k = (s.scenario.clone(), s.cores);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut figs = Vec::new();
    for (i, (scenario, cores)) in keys.iter().enumerate() {
        let ss: Vec<&SweepInfo> = r
            .sweeps
            .iter()
            .filter(|s| &s.scenario == scenario && s.cores == *cores)
            .collect();
        let max = ss
            .iter()
            .flat_map(|s| s.steps.iter().flat_map(|p| [p.p50_us, p.p99_us]))
            .flatten()
            .chain(ss.iter().map(|s| s.slo_us as f64))
            .fold(0.0, f64::max);
        let (div, unit) = latency_unit(max);
        let mut series = Vec::new();
        let mut vmarks = Vec::new();
        for s in &ss {
            let c = palette::colour(s.palette_index);
            for (name, dash, pick) in [
                (
                    "p99",
                    "",
                    (|p: &crate::report::model::SweepStep| p.p99_us)
                        as fn(&crate::report::model::SweepStep) -> Option<f64>,
                ),
                ("p50", "2 3", |p: &crate::report::model::SweepStep| p.p50_us),
            ] {
                series.push(Series {
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
                });
            }
            if let Some(k) = s.knee_rps {
                vmarks.push(Mark {
                    at: k,
                    colour: c,
                    dash: "6 3",
                    label: format!("knee {}: {} req/s", s.server, fixed(k, 0)),
                });
            }
        }
        let slos: BTreeSet<(i64, i64)> = ss
            .iter()
            .map(|s| ((s.slo_quantile * 1e6) as i64, s.slo_us))
            .collect();
        let hmarks = ss
            .first()
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
            .collect();
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
            hmarks,
        };
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
        for s in &ss {
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
