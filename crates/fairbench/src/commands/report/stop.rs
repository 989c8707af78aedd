//! The report's account of an adaptive run's stop (report::stop) from the
//! record the runner stored and its ratios recomputed by the rule's own
//! functions (runner::adaptive, runner::stopping). Made here, above both:
//! the runner builds on the report, and the report must not import it back.

use crate::report::model::RunReport;
use crate::report::stop::{FixedDesign, Reason, Stop, StopRatio};
use crate::runner::adaptive;
use crate::runner::stopping::{half_width_pct, settled, Stopped};
use crate::store::Store;

/// How run `run` stopped; None for a fixed count, a run not stopped by the
/// rule (yet), or a record that cannot be read. The ratios are the ones
/// the rule looked at: each variant's to the suite's reference, whatever
/// reference a reader asks the tables for.
pub fn of(store: &Store, run: i64) -> anyhow::Result<Option<Stop>> {
    let Some(stopped) = store
        .stopped(run)?
        .and_then(|j| serde_json::from_str::<Stopped>(&j).ok())
    else {
        return Ok(None);
    };
    let asked = stopped.asked_half_width_pct;
    let ratios: Vec<StopRatio> = adaptive::ratios(store, run, stopped.level_per_look)?
        .into_iter()
        .map(|(what, r)| {
            let half = r.as_ref().and_then(half_width_pct);
            let settled_by = if half.is_some_and(|h| h <= asked) {
                Some(Reason::Precision)
            } else if settled(r.as_ref(), asked) {
                Some(Reason::Verdict)
            } else {
                None
            };
            StopRatio {
                ratio: what,
                geomean: r.as_ref().map(|r| r.geomean),
                low: r.as_ref().and_then(|r| r.low),
                high: r.as_ref().and_then(|r| r.high),
                half_width_pct: half,
                settled_by,
            }
        })
        .collect();
    let reason = if !stopped.settled {
        Reason::Maximum
    } else if ratios
        .iter()
        .all(|r| r.settled_by == Some(Reason::Precision))
    {
        Reason::Precision
    } else {
        Reason::Verdict
    };
    Ok(Some(Stop {
        reason,
        repetition: stopped.repetitions,
        max: stopped.max,
        asked_half_width_pct: asked,
        looks: stopped.looks,
        level_per_look: stopped.level_per_look,
        family_level: stopped.family_level,
        fixed_design: stopped.fixed_design.map(|f| FixedDesign {
            repetitions: f.repetitions,
            time_s: f.time_s,
            adaptive_time_s: f.adaptive_time_s,
        }),
        ratios,
    }))
}

/// `report` with its run's stop; without it (and a note) when the ratios
/// cannot be recomputed, which must not cost the report of the run.
pub fn add(mut report: RunReport, store: &Store) -> RunReport {
    report.stopped = of(store, report.run.id).unwrap_or_else(|e| {
        crate::note!("fairbench: report without how its repetitions stopped: {e:#}");
        None
    });
    report
}
