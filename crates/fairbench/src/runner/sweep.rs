//! A sweep of a suite: one server session, its rate stepped by the knee
//! search, each step measured and stored as a case of its own, and the
//! knee stored as the sweep's result.

use crate::host::start::Started;
use crate::stage::placement::Sites;
use crate::stage::{CaseDb, Staged};
use crate::store::SweepRow;
use crate::suite::{LoadProfile, Subject, SweepItem, SweepSpec};
use crate::units;

use super::case::{self, CaseEnd, Measured};
use super::{knee, planned_case, Runner};

/// The server a sweep measures, started once for all its steps.
struct Session<'s> {
    item: &'s SweepItem,
    label: &'s str,
    running: &'s Started,
    placement: &'s Sites,
    case_db: Option<&'s CaseDb>,
}

/// How one step of a sweep ended.
enum Step {
    /// Stored (measured or skipped): the search goes on.
    Next,
    /// Left pending for --resume.
    Interrupted,
    /// Stored as failed; the sweep fails for this reason.
    Failed(String),
}

impl Runner<'_> {
    /// Returns true when the run was interrupted during this sweep.
    pub(super) fn sweep(&mut self, s: &SweepItem) -> anyhow::Result<bool> {
        let label = s.subject.label();
        self.n += 1;
        self.progress.case_started(self.n, self.total, &label);
        self.store.delete_sweep_steps(self.run, &s.key)?;
        let Staged {
            sites: placement,
            started: running,
            db: case_db,
            ..
        } = match self.serve(&s.subject, &label) {
            Ok(r) => r,
            Err(CaseEnd::Failed { reason, .. }) => return self.sweep_failed(s, &label, reason),
            Err(_) => return Ok(true),
        };
        if self.refused(&s.subject, &running) {
            let reason = running.unfair_reason();
            running.process.stop();
            return self.sweep_failed(s, &label, reason);
        }
        let session = Session {
            item: s,
            label: &label,
            running: &running,
            placement: &placement,
            case_db: case_db.as_ref(),
        };
        let mut search = knee_sweep(s);
        let mut first = true;
        let mut interrupted = false;
        while let Some(rate) = search.next() {
            if crate::interrupt::interrupted() {
                interrupted = true;
                break;
            }
            let warmup = if first {
                s.subject.warmup
            } else {
                crate::args::Warmup::default()
            };
            first = false;
            match self.step(&session, &mut search, rate, warmup)? {
                Step::Next => {}
                Step::Interrupted => {
                    interrupted = true;
                    break;
                }
                Step::Failed(reason) => {
                    running.process.stop();
                    return self.sweep_failed(s, &label, reason);
                }
            }
        }
        running.process.stop();
        if interrupted {
            return Ok(true);
        }
        self.sweep_done(s, &label, search.knee())
    }

    /// Measures one rate of the sweep as a case of its own, and judges it.
    fn step(
        &mut self,
        w: &Session<'_>,
        search: &mut knee::KneeSweep,
        rate: f64,
        warmup: crate::args::Warmup,
    ) -> anyhow::Result<Step> {
        let s = w.item;
        let step = Subject {
            load: step_load(&s.spec, rate),
            ..s.subject.clone()
        };
        let id = self.store.append_case(self.run, |seq| {
            planned_case(seq, &step, Some(&s.key), 1, s.spec.step_duration)
        })?;
        self.record_server(id, w.running)?;
        self.mark_running(id, w.placement)?;
        let timing = case::Timing {
            warmup,
            duration: s.spec.step_duration,
            timeout: s.subject.timeout,
            timeout_mode: s.subject.timeout_mode,
        };
        let cfg = self
            .load_for(
                w.running,
                w.placement,
                &s.subject,
                Some(rate.round()),
                timing,
            )
            .map_err(|e| anyhow::anyhow!(e))?;
        let db = self.stage.postgres().zip(w.case_db);
        super::live_case(&step, &cfg);
        let t0 = std::time::Instant::now();
        let measured = case::measure(w.running, &cfg, w.placement, &self.progress, db);
        self.clock.loaded(t0.elapsed(), warmup.at_most());
        match measured {
            Ok(Measured {
                figures: figs,
                parts,
            }) => {
                let q = figs.latency.value_at_quantile(s.spec.slo_quantile);
                self.store.record_done_with_parts(id, &figs, &parts)?;
                let lateness = figs.lateness_p99.unwrap_or(0);
                let judged = search.judge(&knee::StepFigures {
                    at_quantile_us: q,
                    errors: figs.errors.total(),
                    rps: figs.rps,
                    lateness_p99_us: lateness,
                });
                // The step is kept either way.
                self.note_step(w, rate, judged, q, lateness);
                Ok(Step::Next)
            }
            Err(CaseEnd::Interrupted) => {
                self.store.set_case_state(id, "pending", None, None)?;
                Ok(Step::Interrupted)
            }
            Err(CaseEnd::Failed { reason, log_tail }) => {
                let tail = (!log_tail.is_empty()).then(|| log_tail.join("\n"));
                self.store.record_failed(id, &reason, tail.as_deref())?;
                Ok(Step::Failed(reason))
            }
            Err(CaseEnd::Skipped { reason }) => {
                self.store
                    .set_case_state(id, "skipped", Some(&reason), None)?;
                Ok(Step::Next)
            }
        }
    }

    /// What a step at `rate` showed (`q`: its latency at the objective's
    /// quantile), under the sweep's line.
    fn note_step(&self, w: &Session<'_>, rate: f64, judged: knee::Judged, q: u64, lateness: u64) {
        let label = w.label;
        if judged == knee::Judged::Again {
            self.progress.note(&format!(
                "  {label}: {} req/s offered: the generator fell behind its own schedule (send lateness p99 {}); measuring this rate again",
                units::rate(rate),
                units::micros(lateness as f64)
            ));
            return;
        }
        self.progress.note(&format!(
            "  {label}: {} req/s offered → p{} {} {}",
            units::rate(rate),
            w.item.spec.slo_quantile * 100.0,
            units::micros(q as f64),
            if judged == knee::Judged::Met {
                "meets the objective"
            } else {
                "misses it"
            }
        ));
    }

    /// Stores the sweep as failed; the run goes on.
    fn sweep_failed(&mut self, s: &SweepItem, label: &str, reason: String) -> anyhow::Result<bool> {
        self.failed += 1;
        self.store
            .record_sweep(self.run, &sweep_row(s, None, "failed", Some(&reason)))?;
        self.progress
            .case_finished(self.n, self.total, &format!("{label}: FAILED: {reason}"));
        Ok(false)
    }

    /// Stores the knee the sweep found (or that none met the objective).
    fn sweep_done(
        &mut self,
        s: &SweepItem,
        label: &str,
        knee: Option<f64>,
    ) -> anyhow::Result<bool> {
        self.store
            .record_sweep(self.run, &sweep_row(s, knee, "done", None))?;
        let line = match knee {
            Some(k) => format!("{label}: knee at {} req/s", units::rate(k)),
            None => format!(
                "{label}: no rate met the objective (from {} req/s)",
                units::rate(s.spec.start_rate)
            ),
        };
        self.progress.case_finished(self.n, self.total, &line);
        Ok(false)
    }
}

/// The knee search of a sweep's spec, with its objective.
fn knee_sweep(s: &SweepItem) -> knee::KneeSweep {
    super::knee_load::sweep_of(&s.spec)
}

/// The constant-rate load of one step of a sweep.
pub(super) fn step_load(spec: &SweepSpec, rate: f64) -> LoadProfile {
    LoadProfile::Rate {
        rate: rate.round(),
        connections: spec.connections,
        threads: spec.threads,
        ends: crate::suite::Ends {
            streams: spec.streams,
            ..Default::default()
        },
    }
}

fn sweep_row(s: &SweepItem, knee: Option<f64>, state: &str, reason: Option<&str>) -> SweepRow {
    let w = &s.subject;
    SweepRow {
        sweep: s.key.clone(),
        server: w.server.name.clone(),
        mode: w.mode.clone(),
        response: w.response.as_str().into(),
        scenario: w.scenario.name.clone(),
        cores: w.cores as i64,
        slo_quantile: s.spec.slo_quantile,
        slo_us: s.spec.slo.as_micros() as i64,
        knee_rps: knee,
        state: state.into(),
        reason: reason.map(str::to_string),
        protocol: w.protocol.as_str().into(),
    }
}
