//! A `fairbench run` of a zoo suite from its plan to its end: the run
//! stored with its planned cases (or an unfinished one taken up again, its
//! pending cases matched to the plan), the work executed case by case, and
//! the run's state set by how it ended. Whatever stops a run once it exists
//! is stored with it, so it is never left `running` by a process that is
//! gone.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use fairbench_zoo::Zoo;

use super::stopping::{Repetitions, Stopped};
use super::{adaptive, metadata, planned_case, RunEnd, RunOptions, Runner, Work};
use crate::store::{NewRun, PlannedCase, Store};
use crate::suite::{self, PlanItem, Suite, SuitePlan};
use crate::topology::{ClientArgs, Layout};
use crate::usage_error::usage;

/// How the work is executed: the command's flags, the zoo's work folder,
/// the suite's readiness timeout, the plan's CPUs and the places.
pub struct Session<'a> {
    pub allow_unfair: bool,
    /// The original tool run on each case after fairbench's measurement.
    pub calibrate: Option<crate::calibration::Tool>,
    pub quiet: bool,
    /// The results database, named in the advice an interrupted run prints.
    pub db: &'a Path,
    pub zoo: &'a Zoo,
    pub ready_timeout: Duration,
    pub cpus: Vec<usize>,
    pub layout: Layout,
    /// Each server's toolchain and version, as the plan probed them.
    pub toolchains: super::versions::Toolchains,
    /// The suite's precision, when it asks for one instead of a count.
    pub adaptive: Option<Repetitions>,
}

/// Each profile's connections fit this machine's open-file limit, split
/// over the load generators the flags ask for.
pub fn fits_here(suite: &Suite, clients: &ClientArgs) -> anyhow::Result<()> {
    let generators = clients.client_hosts.len().max(clients.clients);
    for (i, l) in suite.loads.iter().enumerate() {
        let connections = match l {
            suite::LoadProfile::Closed { connections, .. }
            | suite::LoadProfile::Rate { connections, .. } => *connections,
            suite::LoadProfile::Sweep(s) => s.connections,
        };
        crate::args::bounds::connections_fit(connections, generators)
            .map_err(|m| usage(format!("{}: field load[{i}].connections: {m}", suite.name)))?;
    }
    Ok(())
}

/// Stores a new run of `suite` (stored as `text`) with the plan's cases
/// (taken from `plan.items`) and `layout`; its id and the work to do.
pub fn start(
    store: &mut Store,
    zoo: &Zoo,
    suite: &Suite,
    text: &str,
    plan: &mut SuitePlan,
    layout: &Layout,
) -> anyhow::Result<(i64, Vec<Work>)> {
    let host = metadata::host(&plan.cpus);
    let run = store.create_run(&NewRun {
        started_at: crate::store::now_rfc3339(),
        suite: suite.name.clone(),
        suite_toml: text.to_string(),
        git_revision: metadata::git_revision(&zoo.root),
        host_json: serde_json::to_string(&host)?,
        toolchains_json: metadata::toolchains(&plan.toolchains).to_string(),
        planned_cases: plan.case_count(),
    })?;
    let mut planned = Vec::new();
    for (seq, item) in plan.items.iter().enumerate() {
        if let PlanItem::Case(c) = item {
            planned.push(planned_case(
                seq,
                &c.subject,
                None,
                c.repetition,
                c.duration,
            ));
        }
    }
    // From here the run exists: whatever stops it is stored with it.
    let ids = match store_plan(store, run, layout, &planned) {
        Ok(ids) => ids,
        Err(e) => {
            let _ = store.set_run_state(run, "failed", Some(&format!("{e:#}")));
            return Err(e);
        }
    };
    let work: Vec<Work> = std::mem::take(&mut plan.items)
        .into_iter()
        .enumerate()
        .map(|(seq, item)| match item {
            PlanItem::Case(spec) => Work::Case {
                id: ids[&(seq as i64)],
                spec,
            },
            PlanItem::Sweep(s) => Work::Sweep(s),
        })
        .collect();
    Ok((run, work))
}

/// Stores the run's topology and planned cases; the case id of each
/// planned case's place in the plan, every one of them read back.
fn store_plan(
    store: &mut Store,
    run: i64,
    layout: &Layout,
    planned: &[PlannedCase],
) -> anyhow::Result<HashMap<i64, i64>> {
    store.set_run_topology(run, &layout.describe())?;
    store.insert_planned(run, planned)?;
    let ids: HashMap<i64, i64> = store.cases(run)?.iter().map(|c| (c.seq, c.id)).collect();
    if let Some(p) = planned.iter().find(|p| !ids.contains_key(&(p.seq as i64))) {
        anyhow::bail!(
            "{}: planned case {} of run {run} cannot be read back (is the database damaged? `sqlite3 {} 'PRAGMA integrity_check'`)",
            store.path().display(),
            p.seq,
            store.path().display()
        );
    }
    Ok(ids)
}

/// What is left of run `id` against its suite's plan today: each pending
/// case matched to its planned case by what it measures (one no longer in
/// the plan is stored failed), and the sweeps not yet stored.
pub fn left_to_do(store: &mut Store, id: i64, items: Vec<PlanItem>) -> anyhow::Result<Vec<Work>> {
    store.reset_unfinished(id)?;
    let key = |server: &str,
               mode: &str,
               response: &str,
               scenario: &str,
               cores: i64,
               load: &str,
               rep: i64| {
        format!("{server}|{mode}|{response}|{scenario}|{cores}|{load}|{rep}")
    };
    // A ladder's rungs of one case share all the above.
    let rung = |step: Option<&str>, k: String| match step {
        Some(step) => format!("{step}|{k}"),
        None => k,
    };
    let mut by_key: HashMap<String, PlanItem> = HashMap::new();
    let mut sweeps = Vec::new();
    let done_sweeps: Vec<String> = store.sweeps(id)?.into_iter().map(|s| s.sweep).collect();
    for item in items {
        match &item {
            PlanItem::Case(c) => {
                let s = &c.subject;
                let k = rung(
                    s.step.as_deref(),
                    key(
                        &s.server.name,
                        &s.mode,
                        s.response.as_str(),
                        &s.scenario.name,
                        s.cores as i64,
                        &s.load_label(),
                        c.repetition as i64,
                    ),
                );
                by_key.insert(k, item);
            }
            PlanItem::Sweep(s) => {
                if !done_sweeps.contains(&s.key) {
                    sweeps.push(item);
                }
            }
        }
    }
    let mut work = Vec::new();
    for c in store
        .cases(id)?
        .into_iter()
        .filter(|c| c.state == "pending" && c.sweep.is_none())
    {
        let k = rung(
            c.step.as_deref(),
            key(
                &c.server,
                &c.mode,
                &c.response,
                &c.scenario,
                c.cores,
                &c.load_label,
                c.repetition,
            ),
        );
        match by_key.remove(&k) {
            Some(PlanItem::Case(spec)) => work.push(Work::Case { id: c.id, spec }),
            _ => store.record_failed(
                c.id,
                "cannot resume: the case is no longer in the plan (its server, scenario or toolchain changed)",
                None,
            )?,
        }
    }
    for s in sweeps {
        if let PlanItem::Sweep(s) = s {
            work.push(Work::Sweep(s));
        }
    }
    Ok(work)
}

/// Marks run `id` running again in `layout`, warning when its topology
/// differs from the one it was started in.
pub fn take_up(store: &mut Store, id: i64, layout: &Layout) -> anyhow::Result<()> {
    store.set_run_state(id, "running", None)?;
    let kind = |j: &serde_json::Value| j["topology"].as_str().unwrap_or("local").to_string();
    let was = store
        .run_topology(id)?
        .map(|j| kind(&j))
        .unwrap_or_else(|| "local".into());
    let now = layout.describe();
    if was != kind(&now) {
        eprintln!(
            "warning: run {id} was started with topology {was} and resumes with {}: its cases will not be comparable (pass the same --topology/--server-host/--client-host flags)",
            kind(&now)
        );
    }
    store.set_run_topology(id, &now)?;
    Ok(())
}

/// Executes `work` of `run` and stores how the run ended; the exit code
/// (0 all done, 1 a case failed, 130 interrupted).
pub fn execute(
    session: Session,
    store: &mut Store,
    run: i64,
    work: Vec<Work>,
) -> anyhow::Result<i32> {
    let db_max_pool = crate::stage::max_pool(
        work.iter()
            .map(|w| match w {
                Work::Case { spec, .. } => &spec.subject,
                Work::Sweep(item) => &item.subject,
            })
            .filter(|s| s.scenario.needs_database())
            .map(|s| (&s.server, s.cores)),
    );
    let opts = RunOptions {
        db_max_pool,
        calibrate: session.calibrate,
        allow_unfair: session.allow_unfair,
        work_dir: session.zoo.default_work_dir(),
        ready_timeout: session.ready_timeout,
        cpus: session.cpus,
        layout: session.layout,
        toolchains: session.toolchains,
    };
    let total = work.len();
    let db = store.path().to_path_buf();
    let (end, spent, stop) = {
        let mut runner = Runner::new(store, run, opts, total, session.quiet);
        let (end, stop) = match &session.adaptive {
            Some(reps) => {
                let ended = execute_adaptive(&mut runner, (&db, run), reps, work);
                runner.finish();
                ended
            }
            None => (runner.execute(work), None),
        };
        (end, runner.time_spent(), stop)
    };
    // Kept whatever the end, so that an interrupted run's cost is known.
    store.set_time_spent(run, &serde_json::to_string(&spent)?)?;
    eprintln!("{}", spent.line());
    if let (Some((mut stopped, ran)), Some(reps)) = (stop, &session.adaptive) {
        let ratios = adaptive::ratios(store, run, reps.level())?;
        stopped.fixed_design = adaptive::fixed_design(&ratios, stopped.repetitions, &spent, ran);
        store.record_stop(run, &serde_json::to_string(&stopped)?)?;
    }
    match end {
        Ok(RunEnd::Done { failed, skipped }) => {
            store.set_run_state(run, "done", None)?;
            if skipped > 0 {
                eprintln!("{skipped} cases were skipped: `fairbench show {run}` says why (--allow-unfair measures those that failed their contract)");
            }
            Ok(if failed > 0 { 1 } else { 0 })
        }
        Ok(RunEnd::Interrupted) => {
            store.set_run_state(
                run,
                "interrupted",
                Some("interrupted by a signal (Ctrl-C or SIGTERM)"),
            )?;
            eprintln!("interrupted: finished cases are stored; `fairbench run --resume {run} --db {}` runs the rest", session.db.display());
            Ok(130)
        }
        Err(e) => {
            let msg = format!("{e:#}");
            let _ = store.set_run_state(run, "failed", Some(&msg));
            Err(e)
        }
    }
}

/// How an adaptive run ended, and how it stopped with the repetitions this
/// process ran, when it did.
type AdaptiveEnd = (anyhow::Result<RunEnd>, Option<(Stopped, usize)>);

/// Executes `work` of run `run` (in the database `db`) part by part,
/// looking after each repetition of the rule's grid; a look already
/// complete (a resumed run's) is taken again first. The work after the
/// stop is not run. The runner is left unfinished, its progress bar
/// standing across the looks: the caller finishes it once.
fn execute_adaptive(
    runner: &mut Runner,
    (db, run): (&Path, i64),
    reps: &Repetitions,
    work: Vec<Work>,
) -> AdaptiveEnd {
    let first = work.iter().map(adaptive::repetition).min();
    let ran = |at: usize| first.map_or(0, |f| (at + 1).saturating_sub(f));
    // The runner holds the store it writes: each look reads through a
    // connection of its own.
    let look = |at: usize| -> anyhow::Result<Option<Stopped>> {
        adaptive::look(&Store::open_read_only(db)?, run, reps, at)
    };
    for at in adaptive::looks_behind(&work, reps) {
        match look(at) {
            Ok(Some(s)) => return (runner.execute_part(Vec::new()), Some((s, 0))),
            Ok(None) => {}
            Err(e) => return (Err(e), None),
        }
    }
    let mut end = Ok(RunEnd::Done {
        failed: 0,
        skipped: 0,
    });
    for (part, at) in adaptive::segments(work, adaptive::repetition, reps) {
        end = runner.execute_part(part);
        if !matches!(end, Ok(RunEnd::Done { .. })) {
            return (end, None);
        }
        match look(at) {
            Ok(Some(s)) => return (end, Some((s, ran(at)))),
            Ok(None) => {}
            Err(e) => return (Err(e), None),
        }
    }
    (end, None)
}
