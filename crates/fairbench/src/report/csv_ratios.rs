//! The CSV's ratio columns: each case relative to the run's reference
//! (report::paired), appended to the per-case row so existing columns keep
//! their places. Empty for sweep steps and for contexts without a reference;
//! the server + database columns also for cases without a database.

use crate::report::model::{Group, RunReport};
use crate::report::paired::{Ratio, Role};

pub const COLUMNS: [&str; 17] = [
    "ratio_reference",
    "ratio_role",
    "ratio_level",
    "rps_ratio",
    "rps_ratio_low",
    "rps_ratio_high",
    "rps_ratio_reps",
    "rps_ratio_values",
    "p99_ratio",
    "p99_ratio_low",
    "p99_ratio_high",
    "cpu_ratio",
    "cpu_ratio_low",
    "cpu_ratio_high",
    // The server's and the database's CPU per request added up: a server
    // cannot look cheaper here by moving its work into the database.
    "total_cpu_ratio",
    "total_cpu_ratio_low",
    "total_cpu_ratio_high",
];

fn num(v: Option<f64>) -> String {
    v.filter(|v| v.is_finite())
        .map(|v| format!("{v}"))
        .unwrap_or_default()
}

fn triple(q: Option<&Ratio>) -> [String; 3] {
    [
        num(q.map(|q| q.summary.geomean)),
        num(q.and_then(|q| q.summary.low)),
        num(q.and_then(|q| q.summary.high)),
    ]
}

fn join<T: ToString>(v: &[T]) -> String {
    v.iter().map(T::to_string).collect::<Vec<_>>().join(";")
}

pub fn cells(r: &RunReport, g: &Group) -> Vec<String> {
    let row = g.sweep.is_none().then(|| r.paired.row(&g.key)).flatten();
    let Some(x) = row else {
        return vec![String::new(); COLUMNS.len()];
    };
    let rps = x.rps.as_ref();
    let mut out = vec![
        x.reference.variant_label(),
        match x.role {
            Role::Reference => "reference",
            Role::Aa => "aa",
            Role::Compared => "compared",
        }
        .to_string(),
        num(Some(r.paired.level)),
    ];
    out.extend(triple(rps));
    out.push(rps.map(|q| join(&q.repetitions)).unwrap_or_default());
    out.push(rps.map(|q| join(&q.summary.values)).unwrap_or_default());
    out.extend(triple(x.p99_us.as_ref()));
    out.extend(triple(x.cpu_us_per_request.as_ref()));
    out.extend(triple(x.total_cpu_us_per_request.as_ref()));
    out
}
