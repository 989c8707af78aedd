//! When two results are not compared on speed: one side failed too many
//! of its requests.
//!
//! A server that answers errors fast (a 503 when it is busy, a 500 when its
//! database pool is empty) shows a higher rate and lower latencies than
//! one that does the work. A ratio of their rates is a true figure, but
//! "B faster" drawn from it would credit B with its failures. So above
//! [`FAILING_SHARE`] of a side's requests failed (pooled over its
//! repetitions: every error class, an unexpected status included), the
//! speed verdicts between the two are withheld and the failures are said
//! instead. 1 % is far above what a healthy server and generator lose on
//! this project's machines (none, or a few timeouts per million), and far
//! below what moves a rate: a side that fails 1 % of its requests fast is
//! at most about 1 % faster for it.

/// The share of its requests a side may fail (or answer short) and still
/// be compared: the engine's own line for warning of short answers, so
/// that what a run warns of and what a comparison withholds for stay one
/// rule.
pub const FAILING_SHARE: f64 = fairbench_engine::bodies::SHORT_SHARE;

/// `failed` of `planned`, as a share (0 when nothing was planned).
pub fn share(failed: u64, planned: u64) -> f64 {
    if planned == 0 {
        0.0
    } else {
        failed as f64 / planned as f64
    }
}

/// "50.0 %", "0.42 %".
pub fn share_text(x: f64) -> String {
    if x >= 0.1 {
        format!("{:.1} %", 100.0 * x)
    } else {
        format!("{:.2} %", 100.0 * x)
    }
}

/// Why A and B are not compared on speed, given the share of requests
/// each failed; `None` when both are within [`FAILING_SHARE`].
pub fn not_compared(a: f64, b: f64) -> Option<String> {
    not_compared_named((a, "A"), (b, "B"))
}

/// As [`not_compared`], the sides named ("the reference", "this case").
pub fn not_compared_named(a: (f64, &str), b: (f64, &str)) -> Option<String> {
    over_share(a, b, "failed over 1 % of its requests")
}

/// "not compared: {who} {what} ({a_name} x %, {b_name} y %)", where who
/// are the sides whose share is over [`FAILING_SHARE`]; `None` when
/// neither's is.
pub fn over_share(
    (a, a_name): (f64, &str),
    (b, b_name): (f64, &str),
    what: &str,
) -> Option<String> {
    let who = match (a > FAILING_SHARE, b > FAILING_SHARE) {
        (false, false) => return None,
        (true, true) => format!("{a_name} and {b_name}"),
        (true, false) => a_name.to_string(),
        (false, true) => b_name.to_string(),
    };
    Some(format!(
        "not compared: {who} {what} ({a_name} {}, {b_name} {})",
        share_text(a),
        share_text(b)
    ))
}

/// The share of the requests of `cases` (repetitions of one case) that
/// failed. Rows from before the ledger have no `planned`: each of their
/// requests was answered or failed.
pub fn case_share<'a>(cases: impl Iterator<Item = &'a crate::store::CaseRow>) -> f64 {
    let (failed, planned) = cases
        .map(case_counts)
        .fold((0, 0), |(f, p), (e, n)| (f + e, p + n));
    share(failed, planned)
}

/// One repetition's requests failed and planned (see [`case_share`]).
pub fn case_counts(c: &crate::store::CaseRow) -> (u64, u64) {
    let e = c.errors_total().unwrap_or(0).max(0) as u64;
    let n = c
        .planned
        .unwrap_or(c.requests.unwrap_or(0) + e as i64)
        .max(0) as u64;
    (e, n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_side_over_the_share_withholds_the_comparison() {
        assert_eq!(not_compared(0.0, FAILING_SHARE), None);
        assert_eq!(
            not_compared(0.0, 0.5).as_deref(),
            Some("not compared: B failed over 1 % of its requests (A 0.00 %, B 50.0 %)")
        );
        assert!(not_compared(0.02, 0.0).unwrap().contains(": A failed"));
        assert!(not_compared(0.02, 0.3)
            .unwrap()
            .contains(": A and B failed"));
        assert_eq!(share(1, 0), 0.0);
    }
}
