//! Volume: completed requests per case, and requests that got no answer
//! (timed out or still unanswered at the end) per million planned.

use super::{by_context, med, simple_bar, Figure, SimpleBar};
use crate::report::model::Group;
use crate::report::table::{fixed, Cell};

pub(super) fn requests(groups: &[&Group]) -> Figure {
    let mut f = simple_bar(
        groups,
        SimpleBar {
            id: "requests",
            title: "Total requests per case",
            subtitle: "completed responses in the measurement, median of repetitions",
            caption:
                "Higher is better at equal duration; the table also counts errors of every class.",
            axis: "requests (count)".into(),
            div: 1.0,
            unit: "requests",
            decimals: 0,
            metric: |g| &g.requests,
            text: |v| fixed(v, 0),
        },
        &[("requests median", true), ("min", true), ("max", true)],
    );
    // wrk printed the bytes read and "Transfer/sec" beside the requests.
    for name in ["errors median", "bytes read median", "transfer B/s median"] {
        f.table.columns.push(crate::report::table::Column {
            name: name.into(),
            numeric: true,
        });
    }
    for (row, g) in f
        .table
        .rows
        .iter_mut()
        .zip(by_context(groups).into_iter().flat_map(|(_, v)| v))
    {
        row.push(Cell::opt(med(&g.errors), 0));
        row.push(Cell::opt(med(&g.bytes_read), 0));
        row.push(Cell::opt(med(&g.transfer_bytes_per_s), 0));
    }
    f
}

/// What the timeouts figure says of its counting, by the cases' modes.
fn timeouts_caption(groups: &[&Group]) -> &'static str {
    let wrk = groups
        .iter()
        .filter(|g| g.load.timeout_mode == "wrk")
        .count();
    if wrk == 0 {
        "Lower is better; zero draws no bar. Counted fairbench's way: a request is aborted at its timeout and its connection reopened. wrk, which the studies' \"timeouts per million\" came from, counts an answer that arrives after the timeout as a timeout and keeps the connection, so the two counts differ (a suite's `timeout_mode = \"wrk\"` counts wrk's way)."
    } else if wrk == groups.len() {
        "Lower is better; zero draws no bar. Counted wrk's way, as the studies' \"timeouts per million\" were: no request is aborted; an answer that arrives after the timeout counts as a timeout and its connection is kept (requests never answered by the end count too, which wrk's would not). fairbench's own counting aborts at the timeout and reopens the connection."
    } else {
        "Lower is better; zero draws no bar. The cases were counted two ways (the table's \"counted\" column): fairbench's aborts a request at its timeout and reopens its connection; wrk's (the studies') keeps waiting and counts an answer that arrives after the timeout as a timeout, keeping the connection. Compare like with like."
    }
}

pub(super) fn timeouts(groups: &[&Group]) -> Figure {
    let mut f = simple_bar(
        groups,
        SimpleBar {
            id: "timeouts",
            title: "Timeouts per million requests",
            subtitle: "requests without an answer within the timeout or by the end of the run, per million planned; median of repetitions",
            caption: timeouts_caption(groups),
            axis: "timeouts per million requests".into(),
            div: 1.0,
            unit: "per million",
            decimals: 1,
            metric: |g| &g.timeouts_per_million,
            text: |v| fixed(v, 1),
        },
        &[("timeouts/M median", true), ("min", true), ("max", true)],
    );
    f.table.columns.push(crate::report::table::Column {
        name: "counted".into(),
        numeric: false,
    });
    for (row, g) in f
        .table
        .rows
        .iter_mut()
        .zip(by_context(groups).into_iter().flat_map(|(_, v)| v))
    {
        row.push(Cell::text(format!("{}'s way", g.load.timeout_mode)));
    }
    f
}
