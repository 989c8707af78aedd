//! The plan of a ladder: the shipped `study-ladder` suite over the
//! repository's zoo, every toolchain taken as present.

use super::{full_matrix, CaseSpec, PlanItem, Subject, Suite};

/// What a rung may change, as a comparable tuple.
fn settings(
    s: &Subject,
) -> (
    String,
    &'static str,
    Option<usize>,
    std::time::Duration,
    String,
) {
    (
        s.response.as_str().to_string(),
        s.address_family.loopback(),
        s.workers,
        s.warmup.at_most(),
        s.load.label(),
    )
}

#[test]
fn every_rung_plans_the_same_cases_each_one_change_from_the_rung_before() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let zoo = fairbench_zoo::Zoo::load(&root).unwrap();
    let (suite, _) = Suite::resolve(&root, "study-ladder").unwrap();
    assert_eq!(suite.steps.len(), 6);
    let plan = full_matrix(&suite, &zoo).unwrap();
    let cases: Vec<&CaseSpec> = plan
        .items
        .iter()
        .map(|i| match i {
            PlanItem::Case(c) => c.as_ref(),
            PlanItem::Sweep(_) => panic!("a ladder plans no sweep"),
        })
        .collect();
    assert_eq!(cases.len() % 6, 0);
    // Repetitions stay the outer loop across rungs.
    let reps: Vec<usize> = cases.iter().map(|c| c.repetition).collect();
    assert!(reps.windows(2).all(|w| w[0] <= w[1]), "{reps:?}");
    let per_rung = cases.len() / 6;
    for (i, step) in suite.steps.iter().enumerate() {
        let at: Vec<&&CaseSpec> = cases
            .iter()
            .filter(|c| c.subject.step.as_deref() == Some(step.name.as_str()))
            .collect();
        assert_eq!(at.len(), per_rung, "{}", step.name);
        assert!(at
            .iter()
            .all(|c| c.label().starts_with(&format!("[{}] ", step.name))));
        if i == 0 {
            continue;
        }
        let prev = &suite.steps[i - 1].name;
        for c in &at {
            let before = cases
                .iter()
                .find(|b| {
                    b.subject.step.as_deref() == Some(prev.as_str())
                        && b.repetition == c.repetition
                        && b.subject.server.name == c.subject.server.name
                        && b.subject.mode == c.subject.mode
                        && b.subject.scenario.name == c.subject.scenario.name
                })
                .unwrap_or_else(|| panic!("{} has no case at {prev}", c.label()));
            let (x, y) = (settings(&before.subject), settings(&c.subject));
            let differ = [x.0 != y.0, x.1 != y.1, x.2 != y.2, x.3 != y.3, x.4 != y.4]
                .iter()
                .filter(|d| **d)
                .count();
            assert_eq!(differ, 1, "{} against {}", c.label(), before.label());
        }
    }
}
