//! Stages of a rate profile (`load --stages`), stage by stage: the rate the
//! plan asked for against the rate answered, and the latency of each
//! stage's requests.

use super::{colour, Figure};
use crate::report::model::Group;
use crate::report::svg::line::{Axis, AxisKind, LineChart, Point, Series};
use crate::report::table::{fixed, Cell, Table};
use crate::report::url_case::{StageRow, UrlLoad};

/// One figure per staged case (a staged load is saved as one case).
pub(super) fn stages(groups: &[&Group]) -> Vec<Figure> {
    groups
        .iter()
        .filter_map(|g| Some((g, g.url.as_ref().filter(|u| !u.stages.is_empty())?)))
        .enumerate()
        .map(|(i, (g, u))| figure(format!("stages-{}", i + 1), g, u))
        .collect()
}

fn figure(id: String, g: &Group, u: &UrlLoad) -> Figure {
    let (planned, achieved) = points(&u.stages);
    let chart = LineChart {
        id: format!("chart-{id}"),
        title: format!("Stages: {} {}", u.method, u.url),
        subtitle: Some("planned (dashed) and achieved (solid) rate at each stage's middle".into()),
        x: Axis {
            label: "seconds from the start of the measurement".into(),
            kind: AxisKind::Linear,
        },
        y: Axis {
            label: "requests per second".into(),
            kind: AxisKind::Linear,
        },
        series: vec![
            Series {
                label: "planned".into(),
                colour: colour(g),
                dash: "6 3",
                points: planned,
            },
            Series {
                label: "achieved".into(),
                colour: colour(g),
                dash: "",
                points: achieved,
            },
        ],
        vmarks: Vec::new(),
        hmarks: Vec::new(),
    };
    Figure {
        id: id.clone(),
        title: format!("Stages of {}", g.label),
        caption: format!(
            "{}: achieved = requests planned in the stage and answered, per second of the stage, or, in a stage the server fell behind in, the answers that came within it; latency from each request's planned time.",
            u.load
        ),
        svg: Some(chart.render()),
        table: table(&id, &u.stages),
    }
}

/// The planned and the achieved rate at each stage's middle.
fn points(stages: &[StageRow]) -> (Vec<Point>, Vec<Point>) {
    let mut planned = Vec::new();
    let mut achieved = Vec::new();
    for s in stages {
        let (want, got) = (s.planned_rps(), s.achieved_rps());
        let mid = s.start_s + s.duration_s / 2.0;
        let tip = format!(
            "{}: planned {} req/s, achieved {} req/s, p99 {} µs",
            s.name,
            fixed(want, 1),
            fixed(got, 1),
            s.p99_us
        );
        planned.push(Point {
            x: mid,
            y: want,
            tip: tip.clone(),
        });
        achieved.push(Point {
            x: mid,
            y: got,
            tip: tip.clone(),
        });
    }
    (planned, achieved)
}

fn table(id: &str, stages: &[StageRow]) -> Table {
    let mut table = Table::new(
        format!("table-{id}"),
        &[
            ("stage", false),
            ("from s", true),
            ("seconds", true),
            ("planned req/s", true),
            ("achieved req/s", true),
            ("achieved / planned", true),
            ("planned", true),
            ("answered", true),
            ("errors", true),
            ("p50 µs", true),
            ("p99 µs", true),
        ],
    );
    for s in stages {
        let (want, got) = (s.planned_rps(), s.achieved_rps());
        table.push(vec![
            Cell::text(s.name.clone()),
            Cell::num(s.start_s, 1),
            Cell::num(s.duration_s, 1),
            Cell::num(want, 1),
            Cell::num(got, 1),
            Cell::opt((want > 0.0).then(|| got / want), 3),
            Cell::num(s.planned as f64, 0),
            Cell::num(s.requests as f64, 0),
            Cell::num(s.errors as f64, 0),
            Cell::num(s.p50_us as f64, 0),
            Cell::num(s.p99_us as f64, 0),
        ]);
    }
    table
}
