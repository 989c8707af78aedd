//! The publications' claims, each with the same ratio from this run, its
//! interval and a verdict (report::claims holds the rule).

use super::Figure;
use crate::report::claims::{judge, Verdict};
use crate::report::model::RunReport;
use crate::report::table::{Cell, Table};

pub(super) fn claims(r: &RunReport) -> Figure {
    let mut table = Table::new(
        "table-claims".to_string(),
        &[
            ("claim", false),
            ("source", false),
            ("as published", false),
            ("claimed", false),
            ("case", false),
            ("measured", true),
            ("interval low", true),
            ("interval high", true),
            ("verdict", false),
            ("why", false),
        ],
    );
    for j in judge(&r.paired) {
        let c = &j.claim;
        let claimed = if c.high.is_infinite() {
            format!(
                "{} / {} > {}",
                c.numerator_label, c.denominator_label, c.low
            )
        } else {
            format!(
                "{} / {} in {}–{}",
                c.numerator_label, c.denominator_label, c.low, c.high
            )
        };
        let head = || {
            vec![
                Cell::text(c.id),
                Cell::text(c.source),
                Cell::text(c.quote),
                Cell::text(claimed.clone()),
            ]
        };
        if let Some(why) = &j.not_judged {
            let mut cells = head();
            cells.extend([
                Cell::text("—"),
                Cell::none(),
                Cell::none(),
                Cell::none(),
                Cell::text(Verdict::CannotTell.as_str()),
                Cell::text(why.clone()),
            ]);
            table.push(cells);
        }
        for f in &j.findings {
            let mut cells = head();
            cells.extend([
                Cell::text(format!(
                    "{}{} {}/{} {} {}c {}",
                    if f.key.step.is_empty() {
                        String::new()
                    } else {
                        format!("[{}] ", f.key.step)
                    },
                    f.key.server,
                    f.key.mode,
                    f.key.response,
                    f.key.scenario,
                    f.key.cores,
                    f.key.load
                )),
                Cell::num(f.ratio, 2),
                Cell::opt(f.low, 2),
                Cell::opt(f.high, 2),
                Cell::text(f.verdict.as_str()),
                Cell::text(f.why.clone()),
            ]);
            table.push(cells);
        }
    }
    Figure {
        id: "claims".into(),
        title: "Published claims, judged by this run".into(),
        caption: "Each quantitative claim of the study and the 2012 post, as the same req/s ratio from this run's paired repetitions (geometric mean and interval, as in the ratio figures). It holds when the whole interval lies in the claimed range, is refuted when the whole interval lies outside it, and cannot be told here when the interval straddles an edge, there is one repetition, or the run has no case of the claim's servers.".into(),
        svg: None,
        table,
    }
}
