//! A case measured with `--warmup auto`: how long each finished
//! repetition warmed up before it was measured, and whether the server was
//! steady by then or the ceiling came first (fairbench_engine::warmup).
//! The warm-up is a result in itself (a JIT needs longer than an AOT
//! binary), so the report shows it beside the case.

use serde::Serialize;
use serde_json::Value;

use crate::report::stats::Summary;
use crate::store::{CaseRow, Store};

#[derive(Debug, Clone, Serialize)]
pub struct AutoWarmup {
    /// The most it could last, as planned.
    pub ceiling_s: Option<f64>,
    /// Over the repetitions with stored seconds: the warm-up pass and the
    /// measured pass's reconnect second, as the run's time accounting
    /// counts it.
    pub taken_s: Option<Summary>,
    /// Repetitions measured after the ceiling, never steady.
    pub not_steady: usize,
    pub repetitions: Vec<AutoWarmupRepetition>,
}

#[derive(Debug, Clone, Serialize)]
pub struct AutoWarmupRepetition {
    pub repetition: i64,
    /// None when it stored no warm-up seconds.
    pub taken_s: Option<f64>,
    pub steady: bool,
}

impl AutoWarmup {
    /// The finished repetitions `done` of a case whose load asked for
    /// `auto`; None for a fixed warm-up.
    pub fn of(store: &Store, load_json: &str, done: &[&CaseRow]) -> anyhow::Result<Option<Self>> {
        let load: Value = serde_json::from_str(load_json).unwrap_or(Value::Null);
        if load.get("warmup").and_then(Value::as_str) != Some("auto") {
            return Ok(None);
        }
        let mut repetitions = Vec::new();
        for c in done {
            let warm: f64 = store
                .samples(c.id)?
                .iter()
                .filter(|s| s.phase == "warmup")
                .map(|s| s.duration_s)
                .sum();
            repetitions.push(AutoWarmupRepetition {
                repetition: c.repetition,
                taken_s: (warm > 0.0).then_some(warm),
                steady: !never_steady(&c.warnings_json),
            });
        }
        let taken: Vec<f64> = repetitions.iter().filter_map(|r| r.taken_s).collect();
        Ok(Some(AutoWarmup {
            ceiling_s: load.get("warmup_ceiling_s").and_then(Value::as_f64),
            taken_s: Summary::of(&taken),
            not_steady: repetitions.iter().filter(|r| !r.steady).count(),
            repetitions,
        }))
    }
}

/// Whether a repetition's stored warnings hold the engine's word that the
/// ceiling came before the server was steady (`WarmupVerdict::describe`,
/// the only record of it the database keeps).
fn never_steady(warnings_json: &str) -> bool {
    serde_json::from_str::<Vec<Value>>(warnings_json)
        .unwrap_or_default()
        .iter()
        .filter_map(Value::as_str)
        .any(|w| w.starts_with("warm-up auto: ") && w.contains(" not steady by the "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairbench_engine::warmup::WarmupVerdict;

    fn verdict(steady: bool) -> String {
        WarmupVerdict {
            took_s: 31.0,
            ceiling_s: 30.0,
            window_s: 5.0,
            steady,
            watched: "req/s".into(),
            live_shift: 0,
        }
        .describe()
    }

    /// The engine's own wording is what is read back: a change to it that
    /// the report would no longer see fails here.
    #[test]
    fn the_engines_warning_is_read_as_never_steady() {
        let json = |w: &str| serde_json::json!(["other", w]).to_string();
        assert!(never_steady(&json(&verdict(false))));
        assert!(!never_steady(&json(&verdict(true))));
        assert!(!never_steady("[]"));
        assert!(!never_steady("not json"));
    }
}
