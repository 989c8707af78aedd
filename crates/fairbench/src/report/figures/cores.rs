//! Cores in use: how many of its CPUs the server kept busy, on average and
//! in its busiest second, and the load generator's beside it (the study
//! reported both).

use super::{case_rows, columns, legend, med, tip_head, Figure};
use crate::report::model::Group;
use crate::report::svg::bar::{Bar, BarChart};
use crate::report::table::{Cell, Table};

pub(super) fn cores_in_use(groups: &[&Group]) -> Option<Figure> {
    if !groups.iter().any(|g| g.server_cores_mean.is_some()) {
        return None;
    }
    let id = "cores-in-use";
    let mut table = Table::new(
        format!("table-{id}"),
        &columns(&[
            ("server cores, mean", true),
            ("server cores, peak second", true),
            ("generator cores, mean", true),
        ]),
    );
    let rows = case_rows(groups, &mut table, |g| {
        let cells = vec![
            Cell::opt(med(&g.server_cores_mean), 2),
            Cell::opt(med(&g.server_cores_peak), 2),
            Cell::opt(med(&g.generator_cores_mean), 2),
        ];
        (bars(g), cells)
    });
    let chart = BarChart {
        id: format!("chart-{id}"),
        title: "Server cores in use".into(),
        subtitle: Some("medians of repetitions".into()),
        x_label: "cores busy".into(),
        rows,
        legend: legend(&[("mean over the measurement", 0.45), ("busiest second", 1.0)]),
    };
    Some(Figure {
        id: id.to_string(),
        title: "Cores in use".into(),
        caption: "CPU time over wall time: the server's (its control group, else its process tree) over the measurement and in its busiest second, and the load generator's threads over the measurement. A server held to N cores cannot show more than N; a generator near its own CPU count was saturated.".into(),
        svg: Some(chart.render()),
        table,
    })
}

/// The server's cores in use, on average (pale) and in its busiest second,
/// each where it was measured.
fn bars(g: &Group) -> Vec<Bar> {
    let mut bars = Vec::new();
    if let Some(m) = med(&g.server_cores_mean) {
        bars.push(Bar {
            value: m,
            whisker: None,
            opacity: 0.45,
            tip: format!("{}\nserver: {m:.2} cores busy on average", tip_head(g)),
            text: format!("mean {m:.2}"),
        });
    }
    if let Some(p) = med(&g.server_cores_peak) {
        bars.push(Bar {
            value: p,
            whisker: None,
            opacity: 1.0,
            tip: format!(
                "{}\nserver: {p:.2} cores busy in its busiest second",
                tip_head(g)
            ),
            text: format!("peak {p:.2}"),
        });
    }
    bars
}
