//! The ladder's tables: one row per server variant and context, one column
//! per rung (report::ladder computes every number).

use super::Figure;
use crate::report::ladder::{Ladder, LadderCell};
use crate::report::paired::Ratio;
use crate::report::table::{Cell, Table};

/// The req/s table and the p99 table.
pub(super) fn ladder(l: &Ladder) -> Vec<Figure> {
    let rungs: Vec<String> = l
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let what = if s.changes.is_empty() {
                "the suite as written".to_string()
            } else {
                s.changes.join(", ")
            };
            format!("{i} {} ({what})", s.name)
        })
        .collect();
    let reference = l
        .rows
        .first()
        .map(|r| r.reference.clone())
        .unwrap_or_default();
    let metric = |id: &str,
                  title: &str,
                  pick: fn(&LadderCell) -> (Option<&Ratio>, Option<&Ratio>),
                  what: &str| {
        let mut columns: Vec<(&str, bool)> = vec![("server variant", false)];
        columns.extend(rungs.iter().map(|r| (r.as_str(), false)));
        let mut table = Table::new(format!("table-{id}"), &columns);
        for row in &l.rows {
            let mut cells = vec![Cell::text(row.label())];
            cells.extend(row.cells.iter().map(|c| Cell::text(cell_text(pick(c)))));
            table.push(cells);
        }
        Figure {
            id: id.into(),
            title: title.into(),
            caption: format!(
                "{what} relative to {reference}, rung by rung: each cell is the ratio at that rung with its interval, then (↦) how that rung moved it from the rung before. Method: {}.",
                l.method
            ),
            svg: None,
            table,
        }
    };
    vec![
        metric(
            "ladder-rps",
            "The ladder: req/s relative to the reference",
            |c| (c.rps.as_ref(), c.rps_move.as_ref()),
            "Requests per second",
        ),
        metric(
            "ladder-p99",
            "The ladder: p99 latency relative to the reference",
            |c| (c.p99_us.as_ref(), c.p99_move.as_ref()),
            "p99 latency (lower is better)",
        ),
    ]
}

/// `0.83× [0.79–0.87] ↦ 1.05× [0.98–1.12]`; `—` where there is no ratio.
fn cell_text((ratio, moved): (Option<&Ratio>, Option<&Ratio>)) -> String {
    let Some(r) = ratio else {
        return "—".into();
    };
    match moved {
        Some(m) => format!("{} ↦ {}", r.summary.text(), m.summary.text()),
        None => r.summary.text(),
    }
}
