//! `fairbench run --dry-run`'s plan: every case and sweep in the order it
//! would run, with the case order's seed and the estimated time.

use std::fmt::Write;

use crate::suite::order::Interleave;
use crate::suite::{PlanItem, Repetitions, Suite, SuitePlan};

/// The plan as text (not yet made safe for the terminal).
pub fn render(suite: &Suite, plan: &SuitePlan) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "suite {}: {}", suite.name, suite.description);
    if let (Interleave::Case, Some(seed)) = (suite.interleave, suite.interleave_seed) {
        let _ = writeln!(
        o,"order: cases shuffled with seed {seed} and rotated one place each repetition (--interleave-seed {seed} runs this order)");
    }
    // A ladder's rungs, each with what it changes from the one before.
    for (i, step) in suite.steps.iter().enumerate() {
        let what = if step.changes.is_empty() {
            "the suite as written".to_string()
        } else {
            step.changes.join(", ")
        };
        let _ = writeln!(o, "step {i} {}: {what}", step.name);
    }
    for (i, item) in plan.items.iter().enumerate() {
        let _ = match item {
            PlanItem::Case(c) => writeln!(
                o,
                "{:>4}  {}  ({} warm-up + {})",
                i + 1,
                c.label(),
                c.subject.warmup.label(),
                humantime::format_duration(c.duration)
            ),
            PlanItem::Sweep(s) => writeln!(
                o,
                "{:>4}  {}  (rate sweep {}..{} req/s)",
                i + 1,
                s.subject.label(),
                s.spec.start_rate,
                s.spec.max_rate
            ),
        };
    }
    let est = plan.estimate();
    let secs = |d: std::time::Duration| {
        humantime::format_duration(std::time::Duration::from_secs(d.as_secs()))
    };
    let Some(reps) = &suite.adaptive else {
        let _ = writeln!(
            o,
            "{} cases, {} sweeps; estimated time {} (measurement plus about 3 s to start each server; builds not included)",
            plan.case_count(),
            plan.sweep_count(),
            secs(est)
        );
        return o;
    };
    let first = reps.looks().first().copied().unwrap_or(reps.max());
    let _ = writeln!(o, "{}", adaptive_note(reps));
    let _ = writeln!(
        o,
        "up to {} cases, {} sweeps; estimated time {} if every ratio settles at the first look (repetition {first}) to {} at the maximum ({} repetitions) (measurement plus about 3 s to start each server; builds not included)",
        plan.case_count(),
        plan.sweep_count(),
        secs(plan.estimate_through(first)),
        secs(est),
        reps.max()
    );
    o
}

/// What an adaptive run's repetitions are, in one line.
pub fn adaptive_note(reps: &Repetitions) -> String {
    let looks: Vec<String> = reps.looks().iter().map(|l| l.to_string()).collect();
    format!(
        "repetitions: {} — until every paired ratio is known to the precision or its verdict is settled; looks after repetitions {}, each interval at {:.2} % so that 95 % holds across the looks",
        reps.canonical(),
        looks.join(", "),
        100.0 * reps.level()
    )
}
