//! `fairbench run`'s engine room: executes a plan case by case, storing each
//! case as it finishes. Knows nothing of sockets (the load engine does) or
//! of how servers are defined (the zoo does).

pub mod adhoc;
pub mod adhoc_pair;
mod case;
pub mod dump;
pub mod knee;
pub mod knee_load;
pub mod metadata;
mod sampler;
pub mod services;
pub mod session;
pub mod vs;

use std::path::PathBuf;
use std::time::Duration;

use fairbench_zoo::manifest::ResponseKind;

use crate::args::format_cpus;
use crate::host::start::Started;
use crate::output::run_progress::RunProgress;
use crate::stage::{Act, Stage, StageOptions, Staged};
use crate::store::{CaseFigures, PlannedCase, Store, SweepRow};
use crate::suite::{CaseSpec, LoadProfile, Subject, SweepItem};
use crate::topology::Layout;
use crate::units;
use case::{CaseEnd, Measured};
use fairbench_zoo::build::BuildOptions;
use fairbench_zoo::parity::InspectOptions;

pub struct RunOptions {
    pub allow_unfair: bool,
    /// `<root>/.fairbench`: build cache and server logs.
    pub work_dir: PathBuf,
    pub ready_timeout: Duration,
    /// This machine's CPUs for the run.
    pub cpus: Vec<usize>,
    /// Where the server and the load generators run.
    pub layout: Layout,
    /// The largest database pool of the run's servers.
    pub db_max_pool: usize,
    pub calibrate: Option<crate::calibration::Tool>,
}

/// One unit of work: a planned case (already stored as pending) or a sweep.
pub enum Work {
    Case { id: i64, spec: Box<CaseSpec> },
    Sweep(Box<SweepItem>),
}

pub enum RunEnd {
    Done { failed: usize, skipped: usize },
    Interrupted,
}

pub struct Runner<'a> {
    store: &'a mut Store,
    run: i64,
    allow_unfair: bool,
    calibrate: Option<crate::calibration::Tool>,
    stage: Stage,
    progress: RunProgress,
    total: usize,
    n: usize,
    failed: usize,
    skipped: usize,
}

impl<'a> Runner<'a> {
    pub fn new(
        store: &'a mut Store,
        run: i64,
        opts: RunOptions,
        total: usize,
        quiet: bool,
    ) -> Runner<'a> {
        let stage = Stage::new(StageOptions {
            log_dir: opts.work_dir.join("logs").join(format!("run-{run}")),
            work_dir: opts.work_dir,
            layout: opts.layout,
            cpus: opts.cpus,
            ready_timeout: opts.ready_timeout,
            stop_grace: Duration::from_secs(5),
            fetch_timeout: InspectOptions::default().fetch_timeout,
            build: BuildOptions::default(),
            db_max_pool: opts.db_max_pool,
        });
        Runner {
            store,
            run,
            allow_unfair: opts.allow_unfair,
            calibrate: opts.calibrate,
            stage,
            progress: RunProgress::new(total as u64, quiet),
            total,
            n: 0,
            failed: 0,
            skipped: 0,
        }
    }

    pub fn execute(&mut self, work: Vec<Work>) -> anyhow::Result<RunEnd> {
        let end = self.execute_all(work);
        self.stage.finish();
        end
    }

    fn execute_all(&mut self, work: Vec<Work>) -> anyhow::Result<RunEnd> {
        for w in work {
            if crate::interrupt::interrupted() {
                break;
            }
            let interrupted = match w {
                Work::Case { id, spec } => self.case(id, &spec)?,
                Work::Sweep(item) => self.sweep(&item)?,
            };
            if interrupted {
                break;
            }
        }
        self.progress.finish();
        Ok(if crate::interrupt::interrupted() {
            RunEnd::Interrupted
        } else {
            RunEnd::Done {
                failed: self.failed,
                skipped: self.skipped,
            }
        })
    }

    /// Builds the subject's server and starts it in its place, pinned to
    /// its CPUs, ready and checked: what every case and sweep begins with.
    fn serve(&mut self, s: &Subject, label: &str) -> Result<Staged, CaseEnd> {
        let act = Act {
            server: &s.server,
            mode: &s.mode,
            response: s.response,
            scenario: &s.scenario,
            protocol: s.protocol,
            cores: s.cores,
            workers: s.workers,
            server_cpus: None,
            log_name: format!("{:04}-{}.log", self.n, file_safe(label)),
        };
        let progress = &self.progress;
        self.stage
            .serve(&act, &mut |m| progress.note(&format!("  {m}")))
            .map_err(CaseEnd::from)
    }

    /// A normalized variant that fails its contract is not measured unless
    /// the run allows it.
    fn refused(&self, s: &Subject, started: &Started) -> bool {
        !started.fair() && s.response == ResponseKind::Normalized && !self.allow_unfair
    }

    /// Returns true when the run was interrupted during this case.
    fn case(&mut self, id: i64, c: &CaseSpec) -> anyhow::Result<bool> {
        self.n += 1;
        let label = c.label();
        self.progress.case_started(self.n, self.total, &label);
        let Staged {
            sites: placement,
            started: running,
            db: case_db,
            ..
        } = match self.serve(&c.subject, &label) {
            Ok(r) => r,
            Err(end) => return self.end(id, &label, end),
        };
        let (hb, bb) = running.bytes();
        self.store
            .record_parity(id, running.fair(), &running.parity_json(), hb, bb)?;
        running.record_containment(self.store, id)?;
        if self.refused(&c.subject, &running) {
            let reason = running.unfair_reason();
            running.process.stop();
            return self.end(id, &label, CaseEnd::Skipped { reason });
        }
        self.store.mark_running(
            id,
            (
                &format_cpus(&placement.server),
                &placement.generator_label(),
                placement.shared,
            ),
        )?;
        let cfg = match case::load_split(
            running.port,
            c.subject.protocol,
            running.trust.as_ref(),
            &c.subject.scenario,
            &c.subject.load,
            None,
            &placement,
            self.stage.layout(),
            case::Timing {
                warmup: c.subject.warmup,
                duration: c.duration,
                timeout: c.subject.timeout,
                timeout_mode: c.subject.timeout_mode,
            },
        ) {
            Ok(cfg) => cfg,
            Err(e) => {
                running.process.stop();
                return self.end(
                    id,
                    &label,
                    CaseEnd::Failed {
                        reason: e,
                        log_tail: Vec::new(),
                    },
                );
            }
        };
        let db = self.stage.postgres().zip(case_db.as_ref());
        let result = case::measure(&running, &cfg, &placement, &self.progress, db);
        if let (Some(tool), Ok(m)) = (self.calibrate, &result) {
            self.calibrate(id, tool, &cfg, m.figures.outcome_requests, &label)?;
        }
        running.process.stop();
        match result {
            Ok(Measured { figures, parts }) => {
                let mut figs = figures;
                figs.warnings.extend(running.leftover_warning());
                if placement.shared {
                    figs.warnings.push(format!(
                        "server and load shared CPUs {}: this machine has too few CPUs to separate them",
                        format_cpus(&placement.server)
                    ));
                }
                figs.warnings.extend(self.stage.layout().warnings());
                if parts.is_empty() {
                    self.store.record_done(id, &figs)?;
                } else {
                    self.store.record_done_with_parts(id, &figs, &parts)?;
                }
                let line = format!("{label}: {}", summary(&figs));
                // Every warning the case carries, where it is watched: the
                // same notes the report and `show` list.
                let mut flags = Vec::new();
                if !running.fair() {
                    flags.push("failed its contract in the check".to_string());
                }
                if figs.saturated {
                    flags.push("load generator saturated".to_string());
                }
                let notes = crate::report::model::notes(flags, &figs.warnings);
                if notes.is_empty() {
                    self.progress.case_finished(self.n, self.total, &line);
                } else {
                    self.progress
                        .case_finished(self.n, self.total, &format!("{line}  ⚠"));
                    for n in notes {
                        self.progress
                            .note(&format!("    ⚠ {}", units::one_line(&n)));
                    }
                }
                Ok(false)
            }
            Err(end) => self.end(id, &label, end),
        }
    }

    /// Runs the original tool on the case just measured, on the same
    /// server, and stores what it printed; never fails the case.
    fn calibrate(
        &mut self,
        id: i64,
        tool: crate::calibration::Tool,
        cfg: &crate::fleet::split::LoadSplit,
        measured: u64,
        label: &str,
    ) -> anyhow::Result<()> {
        if crate::interrupt::interrupted() {
            return Ok(());
        }
        let cal = match cfg.in_process() {
            Some(c) => {
                self.progress
                    .note(&format!("  {label}: calibrating with {} …", tool.name()));
                crate::calibration::calibrate(tool, c, measured)
            }
            None => crate::calibration::Calibration::skipped(
                tool,
                "the original tool runs on this machine only, beside one load generator".into(),
            ),
        };
        let line = match (&cal.state, &cal.reason) {
            (crate::calibration::State::Done, _) => format!("{} done", tool.name()),
            (s, Some(why)) => format!("{} {}: {why}", tool.name(), s.as_str()),
            (s, None) => format!("{} {}", tool.name(), s.as_str()),
        };
        self.progress.note(&format!(
            "  {label}: calibration: {}",
            units::one_line(&line)
        ));
        self.store
            .record_calibration(&crate::store::CalibrationRow {
                case_id: id,
                tool: tool.name().into(),
                command: cal.command.join(" "),
                state: cal.state.as_str().into(),
                reason: cal.reason.clone(),
                output: cal.output.clone(),
                figures_json: cal
                    .figures
                    .as_ref()
                    .and_then(|f| serde_json::to_string(f).ok()),
            })
    }

    /// Records a case that ended without figures; true if interrupted.
    fn end(&mut self, id: i64, label: &str, end: CaseEnd) -> anyhow::Result<bool> {
        match end {
            CaseEnd::Failed { reason, log_tail } => {
                self.failed += 1;
                let tail = (!log_tail.is_empty()).then(|| log_tail.join("\n"));
                self.store.record_failed(id, &reason, tail.as_deref())?;
                self.progress.case_finished(
                    self.n,
                    self.total,
                    &format!("{label}: FAILED: {reason}"),
                );
                Ok(false)
            }
            CaseEnd::Skipped { reason } => {
                self.skipped += 1;
                self.store
                    .set_case_state(id, "skipped", Some(&reason), None)?;
                self.progress.case_finished(
                    self.n,
                    self.total,
                    &format!("{label}: skipped: {reason}"),
                );
                Ok(false)
            }
            CaseEnd::Interrupted => {
                // Abandoned, not failed: --resume runs it again.
                self.store.set_case_state(id, "pending", None, None)?;
                Ok(true)
            }
        }
    }

    fn sweep(&mut self, s: &SweepItem) -> anyhow::Result<bool> {
        let label = s.subject.label();
        self.n += 1;
        self.progress.case_started(self.n, self.total, &label);
        self.store.delete_sweep_steps(self.run, &s.key)?;
        let fail = |this: &mut Self, reason: String| -> anyhow::Result<bool> {
            this.failed += 1;
            this.store
                .record_sweep(this.run, &sweep_row(s, None, "failed", Some(&reason)))?;
            this.progress
                .case_finished(this.n, this.total, &format!("{label}: FAILED: {reason}"));
            Ok(false)
        };
        let Staged {
            sites: placement,
            started: running,
            db: case_db,
            ..
        } = match self.serve(&s.subject, &label) {
            Ok(r) => r,
            Err(CaseEnd::Failed { reason, .. }) => return fail(self, reason),
            Err(_) => return Ok(true),
        };
        if self.refused(&s.subject, &running) {
            let reason = running.unfair_reason();
            running.process.stop();
            return fail(self, reason);
        }
        let (hb, bb) = running.bytes();
        let mut search = knee::KneeSweep::new(
            knee::KneeSearch::new(
                s.spec.start_rate,
                s.spec.max_rate,
                s.spec.step_factor,
                s.spec.bisect_steps,
            ),
            knee::Objective {
                quantile: s.spec.slo_quantile,
                limit_us: s.spec.slo.as_micros() as u64,
            },
        );
        let mut first = true;
        let mut interrupted = false;
        while let Some(rate) = search.next() {
            if crate::interrupt::interrupted() {
                interrupted = true;
                break;
            }
            let step_load = LoadProfile::Rate {
                rate: rate.round(),
                connections: s.spec.connections,
                threads: s.spec.threads,
                ends: crate::suite::Ends {
                    streams: s.spec.streams,
                    ..Default::default()
                },
            };
            let step = Subject {
                load: step_load,
                ..s.subject.clone()
            };
            let id = self.store.append_case(self.run, |seq| {
                planned_case(seq, &step, Some(&s.key), 1, s.spec.step_duration)
            })?;
            self.store
                .record_parity(id, running.fair(), &running.parity_json(), hb, bb)?;
            running.record_containment(self.store, id)?;
            self.store.mark_running(
                id,
                (
                    &format_cpus(&placement.server),
                    &placement.generator_label(),
                    placement.shared,
                ),
            )?;
            let warmup = if first {
                s.subject.warmup
            } else {
                Duration::ZERO
            };
            first = false;
            let cfg = case::load_split(
                running.port,
                s.subject.protocol,
                running.trust.as_ref(),
                &s.subject.scenario,
                &s.subject.load,
                Some(rate.round()),
                &placement,
                self.stage.layout(),
                case::Timing {
                    warmup,
                    duration: s.spec.step_duration,
                    timeout: s.subject.timeout,
                    timeout_mode: s.subject.timeout_mode,
                },
            )
            .map_err(|e| anyhow::anyhow!(e))?;
            let db = self.stage.postgres().zip(case_db.as_ref());
            match case::measure(&running, &cfg, &placement, &self.progress, db) {
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
                    if judged == knee::Judged::Again {
                        self.progress.note(&format!(
                            "  {label}: {} req/s offered: the generator fell behind its own schedule (send lateness p99 {}); measuring this rate again",
                            units::rate(rate),
                            units::micros(lateness as f64)
                        ));
                        continue;
                    }
                    self.progress.note(&format!(
                        "  {label}: {} req/s offered → p{} {} {}",
                        units::rate(rate),
                        s.spec.slo_quantile * 100.0,
                        units::micros(q as f64),
                        if judged == knee::Judged::Met {
                            "meets the objective"
                        } else {
                            "misses it"
                        }
                    ));
                }
                Err(CaseEnd::Interrupted) => {
                    self.store.set_case_state(id, "pending", None, None)?;
                    interrupted = true;
                    break;
                }
                Err(CaseEnd::Failed { reason, log_tail }) => {
                    let tail = (!log_tail.is_empty()).then(|| log_tail.join("\n"));
                    self.store.record_failed(id, &reason, tail.as_deref())?;
                    running.process.stop();
                    return fail(self, reason);
                }
                Err(CaseEnd::Skipped { reason }) => {
                    self.store
                        .set_case_state(id, "skipped", Some(&reason), None)?;
                }
            }
        }
        running.process.stop();
        if interrupted {
            return Ok(true);
        }
        let knee = search.knee();
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

/// A case's label as a file name: what is not a letter, digit, `-`, `_`
/// or `.` becomes `_`.
fn file_safe(label: &str) -> String {
    label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
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

fn summary(f: &CaseFigures) -> String {
    let cpu = match f.server_cpu_s {
        Some(c) if f.outcome_requests > 0 => {
            format!(
                "  server {:.1} µs CPU/req",
                c * 1e6 / f.outcome_requests as f64
            )
        }
        _ => String::new(),
    };
    let db = match f.db.as_ref().and_then(|d| d.cpu_s) {
        Some(c) if f.outcome_requests > 0 => {
            format!("  db {:.1} µs CPU/req", c * 1e6 / f.outcome_requests as f64)
        }
        _ => String::new(),
    };
    let errs = f.errors.total();
    format!(
        "{} req/s  p50 {}  p99 {}{}{cpu}{db}",
        units::rate(f.rps),
        units::micros(f.latency_summary.p50 as f64),
        units::micros(f.latency_summary.p99 as f64),
        if errs > 0 {
            format!("  errors {}", units::count(errs))
        } else {
            String::new()
        }
    )
}

/// The stored form of a planned case.
pub fn planned_case(
    seq: usize,
    s: &Subject,
    sweep: Option<&str>,
    repetition: usize,
    duration: Duration,
) -> PlannedCase {
    let mut load_json = serde_json::to_value(&s.load).unwrap_or_default();
    if let Some(m) = load_json.as_object_mut() {
        m.insert("warmup_s".into(), s.warmup.as_secs_f64().into());
        m.insert("duration_s".into(), duration.as_secs_f64().into());
        m.insert("timeout_s".into(), s.timeout.as_secs_f64().into());
        m.insert("timeout_mode".into(), s.timeout_mode.as_str().into());
    }
    let params = s
        .server
        .modes
        .get(&s.mode)
        .map(|m| serde_json::to_string(&m.params).unwrap_or_else(|_| "{}".into()))
        .unwrap_or_else(|| "{}".into());
    PlannedCase {
        seq,
        server: s.server.name.clone(),
        language: s.server.language.clone(),
        framework: s.server.framework.clone(),
        mode: s.mode.clone(),
        response: s.response.as_str().to_string(),
        variant_params_json: params,
        scenario: s.scenario.name.clone(),
        cores: s.cores,
        cores_requested: s.cores_requested.label(),
        load_label: s.load.label(),
        load_json: load_json.to_string(),
        sweep: sweep.map(str::to_string),
        repetition,
        protocol: s.protocol.as_str().to_string(),
    }
}
