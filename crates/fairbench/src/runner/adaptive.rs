//! The looks of a suite run asking for a precision (`repetitions =
//! "until:3%,max:20"`): the plan's work cut where the rule looks, the
//! paired ratios the run reports recomputed from the store at the rule's
//! level, and the record of the stop with what a fixed design would have
//! spent. The rule itself, and why it keeps its coverage, is
//! `runner::stopping`.

use super::stopping::{fixed_repetitions, FixedDesign, Repetitions, Stopped};
use super::time_spent::TimeSpent;
use super::Work;
use crate::report::paired::Role;
use crate::report::ratio_stats::RatioSummary;
use crate::store::Store;

/// The repetition a unit of work belongs to: a sweep runs in the first.
pub fn repetition(w: &Work) -> usize {
    match w {
        Work::Case { spec, .. } => spec.repetition,
        Work::Sweep(_) => 1,
    }
}

/// The work (repetitions outermost, as planned) cut after each repetition
/// of the grid: each part with the look that follows it. Work out of that
/// order (the sweeps a resumed run lists after its cases) joins the first
/// part, so that no stop leaves it unrun.
pub fn segments<W>(
    work: Vec<W>,
    repetition: impl Fn(&W) -> usize,
    reps: &Repetitions,
) -> Vec<(Vec<W>, usize)> {
    let looks = reps.looks();
    let look_after = |rep: usize| {
        looks
            .iter()
            .copied()
            .find(|&l| l >= rep)
            .unwrap_or(reps.max())
    };
    let mut out: Vec<(Vec<W>, usize)> = Vec::new();
    let mut late = Vec::new();
    for w in work {
        let at = look_after(repetition(&w));
        match out.last_mut() {
            Some((part, l)) if *l == at => part.push(w),
            Some((_, l)) if *l > at => late.push(w),
            _ => out.push((vec![w], at)),
        }
    }
    if let Some((first, _)) = out.first_mut() {
        first.extend(late);
    }
    out
}

/// The looks already complete before `work` runs (a resumed run's): those
/// before the first repetition left to do.
pub fn looks_behind(work: &[Work], reps: &Repetitions) -> Vec<usize> {
    let first = work.iter().map(repetition).min().unwrap_or(usize::MAX);
    reps.looks().into_iter().filter(|&l| l < first).collect()
}

/// Every paired ratio the run reports so far (each variant's primary
/// ratio to its context's reference, as the run's table shows it),
/// recomputed at `level`: (what it compares, its summary).
pub fn ratios(
    store: &Store,
    run: i64,
    level: f64,
) -> anyhow::Result<Vec<(String, Option<RatioSummary>)>> {
    let Some(row) = store.run(run)? else {
        anyhow::bail!("run {run} is not in {}", store.path().display());
    };
    let cases = store.cases(run)?;
    let paired = crate::report::model::paired_of(&row, &cases, None)?;
    Ok(paired
        .rows
        .iter()
        .filter(|r| r.role != Role::Reference)
        .map(|r| {
            let (metric, q) = r.primary();
            let what = format!(
                "{} vs {} ({}) {metric}",
                r.key.variant_label(),
                r.reference.variant_label(),
                r.key.context()
            );
            (
                what,
                q.and_then(|q| RatioSummary::of(&q.summary.values, level)),
            )
        })
        .collect())
}

/// The rule's verdict after repetition `done`: how the run stopped, or
/// None to go on. Reads the run's cases through its own connection, so
/// that the runner keeps the store it writes.
pub fn look(
    store: &Store,
    run: i64,
    reps: &Repetitions,
    done: usize,
) -> anyhow::Result<Option<Stopped>> {
    if !reps.looks().contains(&done) {
        return Ok(None);
    }
    let ratios: Vec<Option<RatioSummary>> = ratios(store, run, reps.level())?
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    if !reps.may_stop(done, &ratios) {
        return Ok(None);
    }
    let settled = done < reps.max()
        || ratios
            .iter()
            .all(|r| super::stopping::settled(r.as_ref(), half_width(reps)));
    Ok(Stopped::of(reps, done, settled))
}

fn half_width(reps: &Repetitions) -> f64 {
    match *reps {
        Repetitions::Until { half_width_pct, .. } => half_width_pct,
        Repetitions::Fixed(_) => f64::INFINITY,
    }
}

/// What a fixed design would have spent for the precision the run reached
/// (`stopping`'s doc): the most repetitions any ratio needs, and the
/// machine time at that count and at the run's, from `spent` over the
/// `ran` repetitions this process measured.
pub fn fixed_design(
    ratios: &[(String, Option<RatioSummary>)],
    stopped_at: usize,
    spent: &TimeSpent,
    ran: usize,
) -> Option<FixedDesign> {
    let n = ratios
        .iter()
        .filter_map(|(_, r)| r.as_ref().and_then(fixed_repetitions))
        .max()?;
    let per_rep = (ran > 0).then(|| (spent.total_s - spent.builds_s).max(0.0) / ran as f64);
    let at = |k: usize| per_rep.map(|p| spent.builds_s + p * k as f64);
    Some(FixedDesign {
        repetitions: n,
        time_s: at(n),
        adaptive_time_s: at(stopped_at),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_work_is_cut_at_the_looks_and_late_work_joins_the_first_part() {
        let reps = Repetitions::parse("until:3%,max:6").unwrap();
        // (repetition, id): a fresh plan, repetitions outermost.
        let plan: Vec<(usize, usize)> =
            (1..=6).flat_map(|r| [(r, 2 * r), (r, 2 * r + 1)]).collect();
        let parts = segments(plan, |w| w.0, &reps);
        let shape: Vec<(Vec<usize>, usize)> = parts
            .iter()
            .map(|(p, at)| (p.iter().map(|w| w.0).collect(), *at))
            .collect();
        assert_eq!(
            shape,
            [
                (vec![1, 1, 2, 2, 3, 3], 3),
                (vec![4, 4], 4),
                (vec![5, 5, 6, 6], 6)
            ]
        );
        // A resumed run: repetition 4 on, and a sweep (repetition 1)
        // listed last.
        let resumed = vec![(4, 0), (5, 1), (6, 2), (1, 3)];
        let parts = segments(resumed, |w| w.0, &reps);
        let ids: Vec<Vec<usize>> = parts
            .iter()
            .map(|(p, _)| p.iter().map(|w| w.1).collect())
            .collect();
        assert_eq!(ids, [vec![0, 3], vec![1, 2]]);
    }

    #[test]
    fn the_fixed_design_takes_the_neediest_ratio_and_the_runs_own_cost() {
        let wide = RatioSummary::of(&[0.9, 1.0, 1.1, 1.05], 0.99);
        let flat = RatioSummary::of(&[2.0, 2.0, 2.0, 2.0], 0.99);
        let ratios = vec![
            ("a".to_string(), wide.clone()),
            ("b".into(), flat),
            ("c".into(), None),
        ];
        let spent = TimeSpent {
            total_s: 50.0,
            builds_s: 10.0,
            ..TimeSpent::default()
        };
        let f = fixed_design(&ratios, 4, &spent, 4).unwrap();
        let n = fixed_repetitions(wide.as_ref().unwrap()).unwrap();
        assert_eq!(f.repetitions, n);
        assert!(n < 4, "{n}");
        assert_eq!(f.adaptive_time_s, Some(50.0));
        assert_eq!(f.time_s, Some(10.0 + 10.0 * n as f64));
        // Nothing measured in this process (a resume that only looked).
        let none = fixed_design(&ratios, 4, &TimeSpent::default(), 0).unwrap();
        assert_eq!((none.time_s, none.adaptive_time_s), (None, None));
        assert!(fixed_design(&[("c".into(), None)], 4, &spent, 4).is_none());
    }
}
