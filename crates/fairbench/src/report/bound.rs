//! When a side's figures are its load generator's limit, not its server's.
//!
//! A load generator that ran out of CPU (saturated), was paused by a CPU
//! quota, sent its requests late, or could not open its connections on its
//! own machine (the engine's `Outcome::generator_limited`) shows its server
//! slower than it was: fewer requests per second, and latencies that hold
//! the generator's own delays. Such a side's figures are bounds: its server
//! did at least as well. So a verdict that the bounded side was the better
//! one stands (it was better by at least that much), while a verdict that
//! it was worse, or no different, is withheld: the difference, or its
//! absence, may be the generator's. With both sides bounded nothing is
//! concluded.
//!
//! Stored runs keep the engine's verdict (`generator_limited`, schema
//! version 15; older rows only their saturation and send lateness:
//! [`crate::store::CaseRow::limited_by_generator`]); a live `--vs` asks the
//! engine's outcome itself.

use crate::store::CaseRow;

/// Why two sides are not compared on speed, given which were bounded by
/// their generator (`limited`, with `names` to say so) and which side a
/// verdict would call better (`better`: an index into both, or `None` for
/// no difference); `None` when the verdict may stand.
pub fn not_compared(limited: [bool; 2], names: [&str; 2], better: Option<usize>) -> Option<String> {
    let who: Vec<&str> = names
        .iter()
        .zip(limited)
        .filter_map(|(n, l)| l.then_some(*n))
        .collect();
    match (limited, better) {
        ([false, false], _) | ([true, false], Some(0)) | ([false, true], Some(1)) => None,
        _ => Some(format!(
            "not compared: the load generator limited {} (see the warnings), so those figures are bounds, not the server's",
            who.join(" and ")
        )),
    }
}

/// As [`not_compared`] for a reference's and a case's stored repetitions,
/// whatever their verdict: a row of ratios draws none.
pub fn cases_not_compared<'a>(
    mut reference: impl Iterator<Item = &'a CaseRow>,
    mut case: impl Iterator<Item = &'a CaseRow>,
) -> Option<String> {
    let limited = [
        reference.any(CaseRow::limited_by_generator),
        case.any(CaseRow::limited_by_generator),
    ];
    not_compared(limited, ["the reference", "this case"], None)
}

/// Why a case's figures (its done repetitions) are its generator's bound,
/// as one phrase; `None` when they are not. What `history` marks a point
/// with and leaves out of its change search, as
/// [`crate::report::bodies::off_work`].
pub fn off_work<'a>(mut cases: impl Iterator<Item = &'a CaseRow>) -> Option<String> {
    cases.any(CaseRow::limited_by_generator).then(|| {
        "had its figures bounded by its load generator (saturated, paused by a CPU quota, stopped, sending late or short of local ports)".into()
    })
}

/// What a standing verdict adds when its better side was bounded: the
/// difference is a lower bound.
pub fn at_least(limited: [bool; 2], names: [&str; 2]) -> Option<String> {
    let i = limited.iter().position(|&l| l)?;
    Some(format!(
        "at least: {}'s load generator was limited",
        names[i]
    ))
}

/// Why a speed figure is not compared, the server's faults (failures,
/// short bodies: `withheld`) before the generator's bound, unless the
/// failures were connects that failed on the generator's machine
/// (`local`): then they are the generator's too, and its bound is the
/// reason to give.
pub fn first_reason(
    bound: Option<String>,
    withheld: Option<String>,
    local: bool,
) -> Option<String> {
    if local {
        bound.or(withheld)
    } else {
        withheld.or(bound)
    }
}

/// Whether a repetition among `cases` had connects fail on the
/// generator's own machine (stored since schema version 15).
pub fn connects_failed_here<'a>(mut cases: impl Iterator<Item = &'a CaseRow>) -> bool {
    cases.any(CaseRow::failed_connects_here)
}

#[cfg(test)]
mod tests {
    use super::*;

    const AB: [&str; 2] = ["A", "B"];

    #[test]
    fn only_a_verdict_for_the_bounded_side_stands() {
        assert_eq!(not_compared([false, false], AB, None), None);
        assert_eq!(not_compared([false, false], AB, Some(0)), None);
        // B was bounded and still better: it was better by at least that.
        assert_eq!(not_compared([false, true], AB, Some(1)), None);
        assert_eq!(not_compared([true, false], AB, Some(0)), None);
        // B bounded and worse, or no different: may be the generator's.
        let w = not_compared([false, true], AB, Some(0)).unwrap();
        assert!(
            w.starts_with("not compared: the load generator limited B "),
            "{w}"
        );
        assert!(not_compared([false, true], AB, None).is_some());
        assert!(not_compared([true, false], AB, Some(1)).is_some());
        let both = not_compared([true, true], AB, Some(1)).unwrap();
        assert!(both.contains("limited A and B"), "{both}");
        assert_eq!(at_least([false, false], AB), None);
        let (b, w) = (Some("bound".to_string()), Some("failed".to_string()));
        assert_eq!(first_reason(b.clone(), w.clone(), false), w);
        assert_eq!(first_reason(b.clone(), w, true), b);
        assert_eq!(
            at_least([false, true], AB).as_deref(),
            Some("at least: B's load generator was limited")
        );
    }
}
