//! `fairbench run`'s engine room: executes a plan case by case, storing each
//! case as it finishes. Knows nothing of sockets (the load engine does) or
//! of how servers are defined (the zoo does).

pub mod adaptive;
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
pub mod stopping;
mod sweep;
pub mod time_spent;
pub mod versions;
pub mod vs;

use std::path::PathBuf;
use std::time::Duration;

use fairbench_zoo::manifest::ResponseKind;

use crate::args::format_cpus;
use crate::fleet::split::LoadSplit;
use crate::host::start::Started;
use crate::output::metrics;
use crate::output::run_progress::RunProgress;
use crate::stage::placement::Sites;
use crate::stage::{Act, Stage, StageOptions, Staged};
use crate::store::{CaseFigures, PlannedCase, Store};
use crate::suite::{CaseSpec, Subject, SweepItem};
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
    /// Each server's toolchain and version, as the plan probed them.
    pub toolchains: versions::Toolchains,
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
    versions: versions::CaseVersions,
    clock: time_spent::RunClock,
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
            versions: versions::CaseVersions::new(opts.toolchains),
            clock: time_spent::RunClock::default(),
        }
    }

    /// Executes the whole of a run's work, then ends its progress and its
    /// stage.
    pub fn execute(&mut self, work: Vec<Work>) -> anyhow::Result<RunEnd> {
        let end = self.execute_part(work);
        self.finish();
        end
    }

    /// Executes one part of a run's work (an adaptive run's, up to a
    /// look), keeping the progress bar and the stage for the next part:
    /// the bar counts the run's cases across the parts, and ends once, at
    /// [`Runner::finish`].
    pub fn execute_part(&mut self, work: Vec<Work>) -> anyhow::Result<RunEnd> {
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
        Ok(if crate::interrupt::interrupted() {
            RunEnd::Interrupted
        } else {
            RunEnd::Done {
                failed: self.failed,
                skipped: self.skipped,
            }
        })
    }

    /// Ends the run's progress bar and stops what its stage still holds
    /// (its database): once, after the last part.
    pub fn finish(&mut self) {
        self.progress.finish();
        self.stage.finish();
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
            address_family: s.address_family,
        };
        let progress = &self.progress;
        let t0 = std::time::Instant::now();
        let staged = self
            .stage
            .serve(&act, &mut |m| progress.note(&format!("  {m}")))
            .map_err(CaseEnd::from);
        self.clock.served(t0.elapsed());
        staged
    }

    /// Where the run's machine time went so far.
    pub fn time_spent(&self) -> time_spent::TimeSpent {
        self.clock.spent(self.stage.build_time())
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
        self.record_server(id, &running)?;
        if self.refused(&c.subject, &running) {
            let reason = running.unfair_reason();
            running.process.stop();
            return self.end(id, &label, CaseEnd::Skipped { reason });
        }
        self.mark_running(id, &placement)?;
        let s = &c.subject;
        let source = self.stage.source_key(&s.server.name, &s.mode);
        let v = self.versions.of(&s.server, source);
        self.store.record_versions(id, &v)?;
        let timing = case::Timing {
            warmup: c.subject.warmup,
            duration: c.duration,
            timeout: c.subject.timeout,
            timeout_mode: c.subject.timeout_mode,
        };
        let cfg = match self.load_for(&running, &placement, &c.subject, None, timing) {
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
        live_case(&c.subject, &cfg);
        let t0 = std::time::Instant::now();
        let result = case::measure(&running, &cfg, &placement, &self.progress, db);
        let warmup = result.as_ref().ok().and_then(|m| m.figures.warmup_taken());
        self.clock
            .loaded(t0.elapsed(), warmup.unwrap_or(c.subject.warmup.at_most()));
        if let (Some(tool), Ok(m)) = (self.calibrate, &result) {
            let t0 = std::time::Instant::now();
            self.calibrate(id, tool, &cfg, m.figures.outcome_requests, &label)?;
            self.clock.calibrated(t0.elapsed());
        }
        running.process.stop();
        match result {
            Ok(measured) => self.record_measured(id, &label, &running, &placement, measured),
            Err(end) => self.end(id, &label, end),
        }
    }

    /// Stores what the check of the started server found, for case `id`:
    /// its parity and how it is contained.
    fn record_server(&mut self, id: i64, running: &Started) -> anyhow::Result<()> {
        let (hb, bb) = running.bytes();
        self.store
            .record_parity(id, running.fair(), &running.parity_json(), hb, bb)?;
        running.record_containment(self.store, id)
    }

    /// Case `id` is being measured, on these CPUs.
    fn mark_running(&mut self, id: i64, placement: &Sites) -> anyhow::Result<()> {
        self.store.mark_running(
            id,
            (
                &format_cpus(&placement.server),
                &placement.generator_label(),
                placement.shared,
            ),
        )
    }

    /// The load of one measurement of `s` against its running server, at
    /// `rate` instead of the profile's when given.
    fn load_for(
        &self,
        running: &Started,
        placement: &Sites,
        s: &Subject,
        rate: Option<f64>,
        timing: case::Timing,
    ) -> Result<LoadSplit, String> {
        let mut split = case::load_split(
            (running.port, running.unix_socket.as_ref().map(|f| f.path())),
            s.protocol,
            running.trust.as_ref(),
            &s.scenario,
            &s.load,
            rate,
            placement,
            self.stage.layout(),
            timing,
        )?;
        if running.unix_socket.is_none() {
            aim_at_family(&mut split, self.stage.layout(), s)?;
        }
        Ok(split)
    }

    /// Stores a measured case with every warning it carries, and shows it.
    fn record_measured(
        &mut self,
        id: i64,
        label: &str,
        running: &Started,
        placement: &Sites,
        Measured { figures, parts }: Measured,
    ) -> anyhow::Result<bool> {
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
        self.show_finished(label, running, &figs);
        Ok(false)
    }

    /// The line of a finished case, and every warning it carries, where it
    /// is watched: the same notes the report and `show` list.
    fn show_finished(&self, label: &str, running: &Started, figs: &CaseFigures) {
        let line = format!("{label}: {}", summary(figs));
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
}

/// A case's label as a file name: what is not a letter, digit, `-`, `_`
/// or `.` becomes `_`.
/// Names the case about to be measured to the live metrics
/// (`--metrics-listen`), with the planned rate of all its generators.
fn live_case(s: &Subject, load: &LoadSplit) {
    let rate: Option<f64> = load.jobs.iter().map(|j| metrics::planned(&j.config)).sum();
    let mut labels = vec![
        ("server", s.server.name.clone()),
        ("mode", s.mode.clone()),
        ("variant", s.response.to_string()),
        ("scenario", s.scenario.name.clone()),
        ("protocol", s.protocol.as_str().to_string()),
        ("cores", s.cores.to_string()),
        ("load", s.load_label()),
    ];
    // A ladder's rungs can differ in nothing the labels above name.
    if let Some(step) = &s.step {
        labels.push(("step", step.clone()));
    }
    metrics::begin(labels, rate);
}

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

fn summary(f: &CaseFigures) -> String {
    let cpu = f
        .per_request(f.server_cpu_s)
        .map_or_else(String::new, |us| format!("  server {us:.1} µs CPU/req"));
    let db = f
        .per_request(f.db.as_ref().and_then(|d| d.cpu_s))
        .map_or_else(String::new, |us| format!("  db {us:.1} µs CPU/req"));
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
        match s.warmup {
            crate::args::Warmup::Fixed(w) => {
                m.insert("warmup_s".into(), w.as_secs_f64().into());
            }
            crate::args::Warmup::Auto(a) => {
                m.insert("warmup".into(), "auto".into());
                m.insert("warmup_ceiling_s".into(), a.ceiling.as_secs_f64().into());
            }
        }
        m.insert("duration_s".into(), duration.as_secs_f64().into());
        m.insert("timeout_s".into(), s.timeout.as_secs_f64().into());
        m.insert("timeout_mode".into(), s.timeout_mode.as_str().into());
        // Over a unix socket the figures are not TCP's: the case says so
        // (TCP's families are the suite's, as they always were).
        if s.address_family == crate::suite::AddressFamily::Unix {
            m.insert("address_family".into(), s.address_family.as_str().into());
        }
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
        load_label: s.load_label(),
        load_json: load_json.to_string(),
        sweep: sweep.map(str::to_string),
        repetition,
        protocol: s.protocol.as_str().to_string(),
        step: s.step.clone(),
    }
}

/// Sends a case's load to its own loopback family when it differs from the
/// run's (a ladder's rung with its own `address_family`): only with server
/// and load on this machine, as the suite's own `address_family`.
fn aim_at_family(split: &mut LoadSplit, layout: &Layout, s: &Subject) -> Result<(), String> {
    // Without a rung, the run's own aim (`run`'s layout) holds: a
    // topology's generators reach the server at their own addresses.
    let Some(step) = &s.step else {
        return Ok(());
    };
    let to = s.address_family.loopback();
    let local = layout.kind == crate::topology::TopologyKind::Local
        && matches!(layout.server, crate::host::Host::Local);
    if !local && s.address_family == crate::suite::AddressFamily::Ipv4 {
        return Ok(());
    }
    if layout.clients.iter().all(|c| c.server_addr == to) {
        return Ok(());
    }
    if !local {
        return Err(format!(
            "step {step}: address_family sends the load to {to}: only with server and load on this machine (no --topology, --server-host or --client-host)"
        ));
    }
    for job in &mut split.jobs {
        job.config.target = job.config.target.on_host(to).map_err(|e| e.to_string())?;
    }
    Ok(())
}
