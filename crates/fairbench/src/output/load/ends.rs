//! How HTTP/2 and HTTP/3 streams and connections ended without an
//! answer, as `load`'s summary words it under each protocol's line.

use std::fmt::Write;

use crate::units::count;

/// Counts by error code: "3 NO_ERROR, 1 CANCEL".
pub fn by_code(m: &std::collections::BTreeMap<String, u64>) -> String {
    m.iter()
        .map(|(k, v)| format!("{} {k}", count(*v)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// How streams and connections ended without an answer, under the
/// HTTP/2 or HTTP/3 line: resets by code, the protocol's own ends
/// (`between`), cancellations at the timeout, protocol errors; no line
/// when nothing ended so.
pub fn line(
    s: &mut String,
    resets: &std::collections::BTreeMap<String, u64>,
    between: Vec<String>,
    cancelled: u64,
    errors: Option<String>,
) {
    let mut ends = Vec::new();
    if !resets.is_empty() {
        ends.push(format!("streams reset by the server: {}", by_code(resets)));
    }
    ends.extend(between);
    if cancelled > 0 {
        ends.push(format!(
            "{} streams cancelled at their timeout",
            count(cancelled)
        ));
    }
    ends.extend(errors);
    if !ends.is_empty() {
        let _ = writeln!(s, "  {:<14}{}", "", ends.join("; "));
    }
}
