//! When two stored results are not compared on speed: a side's successes
//! carried other bodies than the work measured.
//!
//! The check proves one answer's body before the load; a server may
//! answer under load with less (an empty or "busy" page with a 200) or
//! with other bytes, and look faster for the work it skipped, as a server
//! answering errors fast does ([`super::failing`]). Off are, per
//! repetition, the successes whose body was not the size the check proved
//! where the scenario fixes the body (`cases.body_unlike`), else the short
//! ones (under half the largest, `fairbench_engine::bodies`). Above
//! [`super::failing::FAILING_SHARE`] of a side's successes, pooled over
//! its repetitions, the speed verdicts are withheld. Cases stored before
//! schema 14 have no body counts and are taken as they were.

use crate::store::CaseRow;

/// One repetition's successes off the measured work, and its successes.
pub fn case_counts(c: &CaseRow) -> (u64, u64) {
    let Some(sizes) = c
        .body_sizes_json
        .as_deref()
        .and_then(|j| serde_json::from_str::<fairbench_engine::bodies::BodySizes>(j).ok())
    else {
        return (0, 0);
    };
    let off = match c.body_unlike {
        Some(n) => n.max(0) as u64,
        None => sizes.short().map_or(0, |s| s.short),
    };
    (off, sizes.total())
}

/// The share of the successes of `cases` (repetitions of one case) off
/// the measured work.
pub fn case_share<'a>(cases: impl Iterator<Item = &'a CaseRow>) -> f64 {
    let (off, all) = cases
        .map(case_counts)
        .fold((0, 0), |(o, a), (x, n)| (o + x, a + n));
    super::failing::share(off, all)
}

/// Why two sides are not compared on speed, given the share of each's
/// successes off the work; `None` when both are within the share.
pub fn not_compared_named(a: (f64, &str), b: (f64, &str)) -> Option<String> {
    super::failing::over_share(
        a,
        b,
        "answered over 1 % of its successes with another body than the check proved (or a short one)",
    )
}

/// Why a case's figures (its done repetitions `cases`) are not the work
/// the server was asked for, as one phrase: it failed over the share of
/// its requests, or answered over it with other bodies; `None` when
/// neither. What `history` marks a point with and leaves out of its
/// change search.
pub fn off_work<'a>(cases: impl Iterator<Item = &'a CaseRow> + Clone) -> Option<String> {
    use super::failing::{share_text, FAILING_SHARE};
    let failed = super::failing::case_share(cases.clone());
    if failed > FAILING_SHARE {
        return Some(format!("failed {} of its requests", share_text(failed)));
    }
    let off = case_share(cases);
    (off > FAILING_SHARE).then(|| {
        format!(
            "answered {} of its successes with another body than the check proved (or a short one)",
            share_text(off)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(sizes: Option<&str>, unlike: Option<i64>) -> CaseRow {
        CaseRow {
            body_sizes_json: sizes.map(str::to_string),
            body_unlike: unlike,
            ..CaseRow::default()
        }
    }

    #[test]
    fn unlike_bodies_count_where_known_else_short_ones() {
        let sizes = r#"{"counts":{"12":30,"13":70},"other":0,"min":12,"max":13}"#;
        assert_eq!(case_counts(&row(Some(sizes), Some(30))), (30, 100));
        // No fixed body: a byte less is not short.
        assert_eq!(case_counts(&row(Some(sizes), None)), (0, 100));
        let short = r#"{"counts":{"0":50,"13":50},"other":0,"min":0,"max":13}"#;
        assert_eq!(case_counts(&row(Some(short), None)), (50, 100));
        // Before schema 14: nothing known, nothing withheld.
        assert_eq!(case_counts(&row(None, None)), (0, 0));
        let (a, b) = (row(Some(sizes), Some(30)), row(Some(sizes), Some(0)));
        assert!((case_share([&a, &b].into_iter()) - 0.15).abs() < 1e-12);
    }

    #[test]
    fn a_case_off_its_work_says_how() {
        let sizes = r#"{"counts":{"12":30,"13":70},"other":0,"min":12,"max":13}"#;
        let other = row(Some(sizes), Some(30));
        assert_eq!(
            off_work([&other].into_iter()).as_deref(),
            Some("answered 30.0 % of its successes with another body than the check proved (or a short one)")
        );
        let failing = CaseRow {
            planned: Some(100),
            requests: Some(50),
            err_status: Some(50),
            ..row(Some(sizes), Some(0))
        };
        assert_eq!(
            off_work([&failing].into_iter()).as_deref(),
            Some("failed 50.0 % of its requests")
        );
        assert_eq!(off_work([&row(Some(sizes), Some(1))].into_iter()), None);
    }

    #[test]
    fn only_a_side_over_the_share_withholds_the_comparison() {
        assert_eq!(not_compared_named((0.0, "A"), (0.01, "B")), None);
        let why = not_compared_named((0.0, "the reference"), (0.3, "this case")).unwrap();
        assert_eq!(
            why,
            "not compared: this case answered over 1 % of its successes with another body than the check proved (or a short one) (the reference 0.00 %, this case 30.0 %)"
        );
    }
}
