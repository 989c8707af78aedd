//! `compare`'s paired view: how a case's ratio to the reference changed
//! between two runs. Within each run the case is divided by the reference
//! repetition by repetition (report::paired); then repetition i of B's
//! ratios is divided by repetition i of A's. Whatever slowed or sped up the
//! whole machine between the runs divides out; what is left is the case
//! moving relative to the reference. Summarised like every ratio: geometric
//! mean and a 95 % t interval on the logs (docs/compare.md).
//!
//! It needs both runs to hold the reference and to have as many repetitions
//! per case; otherwise compare says why it cannot pair and shows only the
//! unpaired medians.

use std::collections::BTreeMap;

use super::model::{work_moved, CaseDiff, Comparison, PairedChange, Pairing, RatioChange, Verdict};
use crate::report::model::paired_of;
use crate::report::paired::{build, pair, Paired, Ratio, RatioRow, Role};
use crate::report::url_case::is_url_run;
use crate::store::{CaseRow, RunRow};
use crate::suite::pairing::Pairing as SuitePairing;
use crate::usage_error::usage;

pub const METHOD: &str = "per repetition i, (case ÷ reference in B, repetition i) ÷ (case ÷ reference in A, repetition i); geometric mean with a 95 % Student t interval on the logs; significant when the interval excludes 1 (at least 2 repetitions)";

/// Non-sweep repetitions per case in a run (the most any case has).
fn repetitions(cases: &[CaseRow]) -> i64 {
    cases
        .iter()
        .filter(|c| c.sweep.is_none())
        .map(|c| c.repetition)
        .max()
        .unwrap_or(0)
}

fn by_rep(q: &Ratio) -> BTreeMap<i64, f64> {
    q.repetitions
        .iter()
        .copied()
        .zip(q.summary.values.iter().copied())
        .collect()
}

fn change(a: Option<&Ratio>, b: Option<&Ratio>, higher_is_better: bool) -> Option<RatioChange> {
    let (a, b) = (a?, b?);
    let c = pair(&by_rep(b), &by_rep(a))?;
    let pct = |v: f64| (v - 1.0) * 100.0;
    let significant = c.summary.contains(1.0) == Some(false);
    let direction = if !significant {
        "same"
    } else if (c.summary.geomean > 1.0) == higher_is_better {
        "better"
    } else {
        "worse"
    };
    Some(RatioChange {
        ratio_a: a.summary.geomean,
        ratio_b: b.summary.geomean,
        change_pct: pct(c.summary.geomean),
        ci_low_pct: c.summary.low.map(pct),
        ci_high_pct: c.summary.high.map(pct),
        significant,
        direction,
        repetitions: c.repetitions,
        change: c.summary,
    })
}

fn case_change(a: &RatioRow, b: &RatioRow) -> PairedChange {
    let blank = |note: Option<String>| PairedChange {
        reference: a.reference.variant_label(),
        is_reference: a.role == Role::Reference,
        rps: None,
        p99_us: None,
        cpu_us_per_request: None,
        total_cpu_us_per_request: None,
        note,
        db_note: None,
    };
    if a.reference != b.reference {
        return blank(Some(format!(
            "cannot pair: the reference is {} in A but {} in B",
            a.reference.variant_label(),
            b.reference.variant_label()
        )));
    }
    if a.role == Role::Reference {
        return blank(None);
    }
    let (primary, m) = if a.key.load.starts_with("closed") {
        ("req/s", change(a.rps.as_ref(), b.rps.as_ref(), true))
    } else {
        ("p99", change(a.p99_us.as_ref(), b.p99_us.as_ref(), false))
    };
    let note = match &m {
        None => Some(format!(
            "no {primary} repetition paired with the reference in one of the runs"
        )),
        Some(c) if c.change.n < 2 => Some(format!(
            "{} repetition paired in both runs: at least 2 are needed for an interval",
            c.change.n
        )),
        _ => None,
    };
    let cpu = change(
        a.cpu_us_per_request.as_ref(),
        b.cpu_us_per_request.as_ref(),
        false,
    );
    let total = change(
        a.total_cpu_us_per_request.as_ref(),
        b.total_cpu_us_per_request.as_ref(),
        false,
    );
    let db_note = match (&cpu, &total) {
        (Some(s), Some(t)) => work_moved(
            (s.direction, Some(s.change_pct)),
            (t.direction, Some(t.change_pct), t.significant),
        )
        .map(|l| format!("relative to {}, {l}", a.reference.variant_label())),
        _ => None,
    };
    PairedChange {
        reference: a.reference.variant_label(),
        is_reference: false,
        rps: change(a.rps.as_ref(), b.rps.as_ref(), true),
        p99_us: change(a.p99_us.as_ref(), b.p99_us.as_ref(), false),
        cpu_us_per_request: cpu,
        total_cpu_us_per_request: total,
        note,
        db_note,
    }
}

/// Why the runs cannot be paired, if they cannot.
fn obstacle(pa: &Paired, pb: &Paired, a_cases: &[CaseRow], b_cases: &[CaseRow]) -> Option<String> {
    let (na, nb) = (repetitions(a_cases), repetitions(b_cases));
    if na != nb {
        return Some(format!(
            "run A has {} per case and run B {nb}; pairing divides repetition i of B by repetition i of A, so the counts must match",
            crate::units::counted(na as u64, "repetition")
        ));
    }
    for (p, which) in [(pa, "A"), (pb, "B")] {
        if !p.rows.iter().any(|r| r.role == Role::Reference) {
            return Some(format!(
                "the reference {} has no case in run {which}",
                p.reference
            ));
        }
    }
    None
}

/// Runs of URLs (two saved `load --vs` pairs, two runs of a suite of
/// services): each run's reference is its own baseline, measured beside
/// the compared URL repetition by repetition, so the paired change is the
/// measurement itself and whatever moved the whole machine between the
/// runs divides out. Where a case's primary metric has a paired interval
/// (2+ repetitions paired), the verdict and `--fail-on-regression` read
/// it; the reference's own row is the baseline, not gated (its change
/// between the runs is the machine's as much as its own). Zoo runs keep
/// the unpaired verdict: their reference is another server, whose own
/// change would move every paired figure (docs/compare.md).
fn verdict_from_pairs(d: &mut CaseDiff, limit: Option<f64>) {
    let Some(p) = &d.paired else { return };
    if d.verdict == Verdict::NotCompared {
        // A side failed too often, or its generator bounded it: no
        // pairing makes its speed comparable.
        return;
    }
    if p.is_reference {
        d.regression = false;
        d.verdict_from = Some("paired");
        d.note = Some(
            "the baseline of both runs: B's change is read relative to it, repetition by repetition"
                .into(),
        );
        return;
    }
    let closed = d.primary == "req/s";
    let m = if closed { &p.rps } else { &p.p99_us };
    let Some((direction, change_pct)) = m
        .as_ref()
        .filter(|m| m.change.low.is_some())
        .map(|m| (m.direction, m.change_pct))
    else {
        return;
    };
    d.verdict_from = Some("paired");
    let verdict = match direction {
        "better" => Verdict::Faster,
        "worse" => Verdict::Slower,
        _ => Verdict::NoSignificantDifference,
    };
    (d.verdict, d.note) = super::model::bounded(verdict, d.limited);
    d.regression = match limit {
        // As unpaired: no gate can vouch for a generator's bound.
        Some(_) if d.verdict == Verdict::NotCompared => true,
        Some(limit) if d.verdict == Verdict::Slower => {
            if closed {
                -change_pct > limit
            } else {
                change_pct > limit
            }
        }
        _ => false,
    };
}

/// Adds the paired view to a comparison of runs `a` and `b`.
/// `reference` is `--reference`; otherwise A's suite decides.
pub fn attach(
    cmp: &mut Comparison,
    run_a: &RunRow,
    a_cases: &[CaseRow],
    b_cases: &[CaseRow],
    reference: Option<&str>,
) -> anyhow::Result<()> {
    let pa = paired_of(run_a, a_cases, reference)?;
    // B is read with A's reference and twins, so both runs divide by the
    // same variant.
    let (pairing, _) =
        SuitePairing::from_stored_suite(&run_a.suite_toml, reference).map_err(usage)?;
    let pb = build(b_cases, &pairing);
    let reason = obstacle(&pa, &pb, a_cases, b_cases);
    if reason.is_none() {
        let urls = is_url_run(a_cases) && is_url_run(b_cases);
        let limit = cmp.regression_threshold_pct;
        for d in &mut cmp.cases {
            if let (Some(a), Some(b)) = (pa.row(&d.key), pb.row(&d.key)) {
                d.paired = Some(case_change(a, b));
            }
            if urls {
                verdict_from_pairs(d, limit);
            }
        }
        cmp.regressions = cmp.cases.iter().filter(|c| c.regression).count();
    }
    cmp.pairing = Some(Pairing {
        reference: pa.reference.clone(),
        paired: reason.is_none(),
        reason,
        method: METHOD,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::paired::pair;

    fn ratio(reps: &[(i64, f64)]) -> Ratio {
        let x: BTreeMap<i64, f64> = reps.iter().copied().collect();
        let one: BTreeMap<i64, f64> = reps.iter().map(|(r, _)| (*r, 1.0)).collect();
        pair(&x, &one).unwrap()
    }

    #[test]
    fn the_change_divides_b_by_a_repetition_by_repetition() {
        let a = ratio(&[(1, 0.50), (2, 0.52), (3, 0.49)]);
        let b = ratio(&[(1, 0.55), (2, 0.572), (3, 0.539)]);
        let c = change(Some(&a), Some(&b), true).unwrap();
        assert!((c.change_pct - 10.0).abs() < 1e-9, "{c:?}");
        assert!(c.significant);
        assert_eq!(c.direction, "better");
        assert_eq!(c.repetitions, [1, 2, 3]);
        // Lower is better for latency: the same change is worse.
        assert_eq!(
            change(Some(&a), Some(&b), false).unwrap().direction,
            "worse"
        );
        // Noise both ways: no verdict.
        let n = ratio(&[(1, 0.52), (2, 0.49), (3, 0.50)]);
        let c = change(Some(&a), Some(&n), true).unwrap();
        assert!(!c.significant && c.direction == "same", "{c:?}");
        assert!(c.ci_low_pct.unwrap() < 0.0 && c.ci_high_pct.unwrap() > 0.0);
        // Only repetitions both runs have are paired.
        let short = ratio(&[(2, 0.6)]);
        let c = change(Some(&a), Some(&short), true).unwrap();
        assert_eq!((c.change.n, c.significant), (1, false));
        assert!(change(None, Some(&a), true).is_none());
    }
}
