//! Server resources: CPU time per request and peak resident memory of the
//! server process tree.

use super::{simple_bar, Figure, SimpleBar};
use crate::report::model::Group;
use crate::report::svg::byte_unit;
use crate::report::table::fixed;

pub(super) fn cpu_per_request(groups: &[&Group]) -> Figure {
    let with: Vec<&Group> = groups
        .iter()
        .copied()
        .filter(|g| g.cpu_us_per_request.is_some())
        .collect();
    simple_bar(
        &with,
        SimpleBar {
            id: "cpu-per-request",
            title: "Server CPU time per request",
            subtitle:
                "CPU seconds of the server process tree during the measurement ÷ completed requests",
            caption: "Lower is better: the work the server spends on one response.",
            axis: "CPU microseconds per request (µs)".into(),
            div: 1.0,
            unit: "µs",
            decimals: 2,
            metric: |g| &g.cpu_us_per_request,
            text: |v| format!("{} µs", fixed(v, 2)),
        },
        &[("CPU µs/req median", true), ("min", true), ("max", true)],
    )
}

/// The database's CPU per request beside each server's (the database
/// scenarios): the pool each server kept is in the table.
pub(super) fn db_cpu_per_request(groups: &[&Group]) -> Figure {
    let with: Vec<&Group> = groups
        .iter()
        .copied()
        .filter(|g| g.db_cpu_us_per_request.is_some())
        .collect();
    let mut pools: Vec<String> = with
        .iter()
        .filter_map(|g| Some(format!("{} {}", g.key.server, g.db_pool?)))
        .collect();
    pools.sort();
    pools.dedup();
    let caption = format!(
        "Lower is better. Add it to the server's CPU per request for the whole stack's work: a server that moves work into the database does not look cheaper. Connection pool (DB_POOL, the manifest's [db] pool): {}.",
        pools.join(", ")
    );
    simple_bar(
        &with,
        SimpleBar {
            id: "db-cpu-per-request",
            title: "Database CPU time per request",
            subtitle: "CPU seconds of PostgreSQL's control group (every backend) during the measurement ÷ completed requests",
            caption: &caption,
            axis: "database CPU microseconds per request (µs)".into(),
            div: 1.0,
            unit: "µs",
            decimals: 2,
            metric: |g| &g.db_cpu_us_per_request,
            text: |v| format!("{} µs", fixed(v, 2)),
        },
        &[("DB CPU µs/req median", true), ("min", true), ("max", true)],
    )
}

pub(super) fn rss_peak(groups: &[&Group]) -> Figure {
    let with: Vec<&Group> = groups
        .iter()
        .copied()
        .filter(|g| g.rss_peak.is_some())
        .collect();
    let max = with
        .iter()
        .filter_map(|g| g.rss_peak.as_ref().map(|s| s.max))
        .fold(0.0, f64::max);
    let (div, unit) = byte_unit(max);
    simple_bar(
        &with,
        SimpleBar {
            id: "rss-peak",
            title: "Peak server memory (RSS)",
            subtitle: "peak resident set size of the server process tree, median of repetitions",
            caption: "Lower is better.",
            axis: format!("peak RSS ({unit})"),
            div,
            unit: "bytes",
            decimals: 0,
            metric: |g| &g.rss_peak,
            text: |v| crate::units::bytes(v as u64),
        },
        &[
            ("peak RSS bytes median", true),
            ("min", true),
            ("max", true),
        ],
    )
}
