//! Throughput: median requests per second per case, with the confidence
//! interval of the median as whiskers.

use super::{
    bar_label, by_context, colour, columns, key_cells, no_data, summary_tip, tip_head, Figure,
};
use crate::report::model::Group;
use crate::report::svg::bar::{Bar, BarChart, BarRow};
use crate::report::table::{fixed, percent, Cell, Table};

pub(super) fn throughput(groups: &[&Group], id: &str, title: &str) -> Figure {
    let mut rows = Vec::new();
    let mut table = Table::new(
        format!("table-{id}"),
        &columns(&[
            ("req/s median", true),
            ("CI low", true),
            ("CI high", true),
            ("CI level", false),
            ("1-s stdev", true),
            ("notes", false),
        ]),
    );
    for (ctx, gs) in by_context(groups) {
        rows.push(BarRow::Section(ctx));
        for g in gs {
            let bar = match &g.rps {
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
            };
            rows.push(BarRow::Bars {
                label: bar_label(g),
                colour: colour(g),
                bars: vec![bar],
            });
            let mut cells = key_cells(g);
            match &g.rps {
                Some(s) if s.n >= 2 => cells.extend([
                    Cell::num(s.median, 1),
                    Cell::num(s.low, 1),
                    Cell::num(s.high, 1),
                    Cell::text(percent(s.confidence)),
                ]),
                Some(s) => cells.extend([
                    Cell::num(s.median, 1),
                    Cell::none(),
                    Cell::none(),
                    Cell::text("n = 1"),
                ]),
                None => cells.extend([Cell::none(), Cell::none(), Cell::none(), Cell::none()]),
            }
            cells.push(Cell::opt(g.rps_stdev_1s, 1));
            cells.push(Cell::text(g.flags().join("; ")));
            table.push(cells);
        }
    }
    let chart = BarChart {
        id: format!("chart-{id}"),
        title: title.to_string(),
        subtitle: Some("median of repetitions; whiskers: CI of the median (1 repetition: ± stdev of 1-s rates)".into()),
        x_label: "requests per second (req/s)".into(),
        rows,
        legend: Vec::new(),
    };
    Figure {
        id: id.to_string(),
        title: title.to_string(),
        caption: "Higher is better. ⚠ marks a case with a note (contract failed, generator saturated, shared CPUs or failed repetitions): see the table. Requests per second of all load threads together; the studies plotted wrk's per-thread Req/Sec, about this divided by the load's threads (t=).".into(),
        svg: Some(chart.render()),
        table,
    }
}
