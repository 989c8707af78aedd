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

pub(super) fn timeouts(groups: &[&Group]) -> Figure {
    simple_bar(
        groups,
        SimpleBar {
            id: "timeouts",
            title: "Timeouts per million requests",
            subtitle: "requests without an answer within the timeout or by the end of the run, per million planned; median of repetitions",
            caption: "Lower is better; zero draws no bar. Counted fairbench's way: a request is aborted at its timeout and its connection reopened. wrk, which the studies' \"timeouts per million\" came from, counts an answer that arrives after the timeout as a timeout and keeps the connection, so the two counts differ.",
            axis: "timeouts per million requests".into(),
            div: 1.0,
            unit: "per million",
            decimals: 1,
            metric: |g| &g.timeouts_per_million,
            text: |v| fixed(v, 1),
        },
        &[("timeouts/M median", true), ("min", true), ("max", true)],
    )
}
