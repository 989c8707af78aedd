//! The ratio figures: each case relative to the reference, per metric, as a
//! chart of intervals beside the absolute chart of its section, with the
//! table of every number it draws (report::paired computes them).

use super::Figure;
use crate::report::model::RunReport;
use crate::report::paired::{Ratio, RatioRow, Role};
use crate::report::palette;
use crate::report::ratio_stats::ratio;
use crate::report::svg::ratio::{RatioChart, RatioRow as ChartRow};
use crate::report::table::{percent, Cell, Table};

#[derive(Clone, Copy)]
pub enum Metric {
    Rps,
    P99,
    CpuPerRequest,
    /// Server + database (the database scenarios).
    TotalCpuPerRequest,
}

impl Metric {
    fn id(self) -> &'static str {
        match self {
            Metric::Rps => "ratio-rps",
            Metric::P99 => "ratio-p99",
            Metric::CpuPerRequest => "ratio-cpu",
            Metric::TotalCpuPerRequest => "ratio-total-cpu",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Metric::Rps => "req/s",
            Metric::P99 => "p99 latency",
            Metric::CpuPerRequest => "server CPU time per request",
            Metric::TotalCpuPerRequest => "server + database CPU time per request",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Metric::Rps => "Throughput",
            Metric::P99 => "p99 latency",
            Metric::CpuPerRequest => "Server CPU per request",
            Metric::TotalCpuPerRequest => "Server + database CPU per request",
        }
    }

    fn get(self, r: &RatioRow) -> Option<&Ratio> {
        match self {
            Metric::Rps => r.rps.as_ref(),
            Metric::P99 => r.p99_us.as_ref(),
            Metric::CpuPerRequest => r.cpu_us_per_request.as_ref(),
            Metric::TotalCpuPerRequest => r.total_cpu_us_per_request.as_ref(),
        }
    }

    /// Req/s of a constant-rate case is the schedule's, not the server's.
    fn applies(self, r: &RatioRow) -> bool {
        !matches!(self, Metric::Rps) || r.key.load.starts_with("closed")
    }

    fn reading(self) -> &'static str {
        match self {
            Metric::Rps => "right of the dashed line: more requests per second than the reference",
            _ => "left of the dashed line: lower (better) than the reference",
        }
    }
}

fn role_text(role: Role) -> &'static str {
    match role {
        Role::Reference => "reference",
        Role::Aa => "A/A twin",
        Role::Compared => "",
    }
}

/// The figure of one metric; None when no case has a ratio for it.
pub fn figure(r: &RunReport, m: Metric) -> Option<Figure> {
    let p = &r.paired;
    let rows = rows_of(r, m)?;
    let names: Vec<String> = r.servers.iter().map(|s| s.name.clone()).collect();
    let colour = |server: &str| palette::colour(palette::index(&names, server));
    let mut table = Table::new(
        format!("table-{}", m.id()),
        &[
            ("variant", false),
            ("scenario", false),
            ("cores", true),
            ("load", false),
            ("role", false),
            ("paired reps", true),
            ("ratio", true),
            ("CI low", true),
            ("CI high", true),
            ("CI level", false),
            ("per repetition", false),
            ("notes", false),
        ],
    );
    let contexts = super::grouped(rows, |x| x.key.context());
    let mut chart_rows = Vec::new();
    for (ctx, group) in &contexts {
        chart_rows.push(ChartRow::Section(format!(
            "{ctx} — reference: {}",
            group[0].reference.variant_label()
        )));
        for &x in group {
            let c = colour(&x.key.server);
            chart_rows.extend(point(x, m, c));
            table.push(cells(x, m, c));
        }
    }
    let title = format!("{} relative to {}", m.title(), p.reference);
    let chart = RatioChart {
        id: format!("chart-{}", m.id()),
        title: title.clone(),
        subtitle: Some(format!(
            "per repetition ÷ the reference's in the same repetition; dot: geometric mean; line: {} interval",
            percent(p.level)
        )),
        x_label: format!("{} relative to the reference (×, log scale)", m.name()),
        rows: chart_rows,
    };
    Some(Figure {
        id: m.id().to_string(),
        title,
        caption: format!(
            "Paired ratios, steadier than the absolute figures on a noisy machine because both halves of each ratio ran in the same repetition. {}; an interval that crosses the line cannot tell the two apart.",
            capitalise(m.reading())
        ),
        svg: Some(chart.render()),
        table,
    })
}

/// The rows the metric applies to; None when none has a ratio for it.
fn rows_of(r: &RunReport, m: Metric) -> Option<Vec<&RatioRow>> {
    let mut rows: Vec<&RatioRow> = r.paired.rows.iter().filter(|x| m.applies(x)).collect();
    if !rows.iter().any(|x| m.get(x).is_some()) {
        return None;
    }
    if let Metric::TotalCpuPerRequest = m {
        // Only the contexts with a database: elsewhere there is no total.
        let measured: Vec<String> = rows
            .iter()
            .filter(|x| m.get(x).is_some())
            .map(|x| x.key.context())
            .collect();
        rows.retain(|x| measured.contains(&x.key.context()));
    }
    Some(rows)
}

/// A row's point on the chart: the reference as its mark at 1, a ratio
/// as its dot and interval, nothing for a row without a ratio.
fn point(x: &RatioRow, m: Metric, colour: &'static str) -> Option<ChartRow> {
    let head = format!("{}\n{}", x.key.variant_label(), x.key.context());
    let (value, interval, tip, text) = match (x.role, m.get(x)) {
        (Role::Reference, _) => (
            None,
            None,
            format!("{head}\nthe reference: every ratio in this group is relative to it"),
            "reference".to_string(),
        ),
        (_, Some(q)) => {
            let s = &q.summary;
            (
                Some(s.geomean),
                s.low.zip(s.high),
                ratio_tip(&head, q, m),
                s.text(),
            )
        }
        (_, None) => (
            None,
            None,
            format!("{head}\nno repetition paired with the reference"),
            "no data".to_string(),
        ),
    };
    let label = match x.role {
        Role::Aa => format!("{} (A/A)", x.key.variant_label()),
        _ => x.key.variant_label(),
    };
    (value.is_some() || x.role == Role::Reference).then_some(ChartRow::Point {
        label,
        colour,
        value,
        interval,
        tip,
        text,
    })
}

/// The hover text of a ratio: its geometric mean, interval and every
/// repetition's.
fn ratio_tip(head: &str, q: &Ratio, m: Metric) -> String {
    let s = &q.summary;
    let reps: Vec<String> = q
        .repetitions
        .iter()
        .zip(&s.values)
        .map(|(rep, v)| format!("#{rep} {}", ratio(*v)))
        .collect();
    let mut tip = format!(
        "{head}\n{} ÷ reference's: geometric mean {} over {}",
        m.name(),
        ratio(s.geomean),
        crate::units::counted(s.n as u64, "repetition")
    );
    if let (Some(lo), Some(hi)) = (s.low, s.high) {
        tip.push_str(&format!(
            "\n{} interval: {} … {}",
            percent(s.level),
            ratio(lo),
            ratio(hi)
        ));
    }
    tip.push_str(&format!("\nper repetition: {}", reps.join(", ")));
    tip
}

/// A row's table cells: its case, its role, its ratio (dashes for the
/// reference and for a row without one), its notes.
fn cells(x: &RatioRow, m: Metric, colour: &'static str) -> Vec<Cell> {
    let mut cells = vec![
        Cell::swatch(x.key.variant_label(), colour),
        Cell::text(x.key.scenario.clone()),
        Cell::num(x.key.cores as f64, 0),
        Cell::text(x.key.load.clone()),
        Cell::text(role_text(x.role)),
    ];
    match (x.role, m.get(x)) {
        (Role::Reference, _) | (_, None) => cells.extend([
            Cell::none(),
            Cell::none(),
            Cell::none(),
            Cell::none(),
            Cell::none(),
            Cell::none(),
        ]),
        (_, Some(q)) => {
            let s = &q.summary;
            cells.extend([
                Cell::num(s.n as f64, 0),
                Cell::num(s.geomean, 3),
                Cell::opt(s.low, 3),
                Cell::opt(s.high, 3),
                Cell::text(if s.low.is_some() {
                    percent(s.level)
                } else {
                    "n = 1".into()
                }),
                Cell::text(
                    s.values
                        .iter()
                        .map(|v| ratio(*v))
                        .collect::<Vec<_>>()
                        .join(", "),
                ),
            ]);
        }
    }
    cells.push(Cell::text(x.note.clone().unwrap_or_default()));
    cells
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}
