//! `fairbench run`: a suite's whole matrix, stored case by case.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use fairbench_zoo::Zoo;

use crate::args::{load_zoo, resolve_root, VariantSel};
use crate::machine_lock::MachineLock;
use crate::output::run_table;
use crate::runner::{self, metadata, RunEnd, RunOptions, Runner, Work};
use crate::store::{NewRun, RunLock, Store};
use crate::suite::order::{self, Interleave};
use crate::suite::{self, PlanItem, Suite};
use crate::topology::{ClientArgs, Layout, ServerArgs};
use crate::units;
use crate::usage_error::usage;

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Suite name (suites/NAME.toml) or path to a suite file.
    #[arg(long, default_value = "quick")]
    pub suite: String,
    /// Only these servers (comma-separated names or globs).
    #[arg(long)]
    pub servers: Option<String>,
    /// Only these scenarios (comma-separated).
    #[arg(long)]
    pub scenarios: Option<String>,
    /// Core counts instead of the suite's (comma-separated numbers or "all").
    #[arg(long)]
    pub cores: Option<String>,
    /// Measurement duration of each case instead of the suite's (e.g. 10s).
    #[arg(long)]
    pub duration: Option<String>,
    /// Repetitions of each case instead of the suite's.
    #[arg(long, value_parser = crate::args::bounds::repetitions)]
    pub repetitions: Option<usize>,
    /// Only these variants: a response shape (`default`, `normalized` or
    /// `study`), a mode (e.g. `native`, `jit`), or both as MODE/RESPONSE (as
    /// for `check`).
    #[arg(long, value_name = "VARIANT")]
    pub variant: Option<VariantSel>,
    /// One load profile instead of the suite's [[load]] list: this many
    /// connections (e.g. 50, 1k). Unset parts come from the suite's first profile.
    #[arg(long, value_name = "N", value_parser = crate::args::bounds::connections)]
    pub connections: Option<usize>,
    /// One constant-rate profile at this many requests per second (e.g. 2000, 10k)
    /// instead of the suite's [[load]] list.
    #[arg(long, value_name = "RATE", value_parser = crate::args::rate)]
    pub rate: Option<f64>,
    /// Load threads of the one profile given by these flags.
    #[arg(long, value_name = "N", value_parser = crate::args::bounds::threads)]
    pub threads: Option<usize>,
    /// Requests in flight per connection of the one (closed-loop) profile.
    #[arg(long, value_name = "N", value_parser = crate::args::bounds::pipeline)]
    pub pipeline: Option<usize>,
    /// Warm-up before each case instead of the suite's (e.g. 2s).
    #[arg(long, value_name = "DURATION", value_parser = crate::args::duration)]
    pub warmup: Option<Duration>,
    /// Request timeout instead of the suite's (e.g. 2s, 500ms).
    #[arg(long, value_name = "DURATION", value_parser = crate::args::positive_duration)]
    pub timeout: Option<Duration>,
    /// Order of cases within each repetition instead of the suite's:
    /// `case` shuffles them (seeded, the seed stored with the run) and
    /// rotates that order each repetition, so drift does not line up with one server.
    #[arg(long, value_enum, value_name = "ORDER")]
    pub interleave: Option<Interleave>,
    /// The seed of `--interleave case`'s shuffle [default: drawn, then stored with the run]
    #[arg(long, value_name = "N")]
    pub interleave_seed: Option<u64>,
    /// Print the expanded plan, the case count and the estimated time; run nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// The results database.
    #[arg(long, default_value = "results.db")]
    pub db: PathBuf,
    /// The fairbench root (holding servers/, scenarios/, suites/); default: found from the current directory.
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// Measure normalized variants even when they fail their scenario contract.
    #[arg(long)]
    pub allow_unfair: bool,
    /// Finish the remaining cases of an interrupted run.
    #[arg(long, value_name = "RUN", conflicts_with_all = ["servers", "scenarios", "cores", "duration", "repetitions", "variant", "connections", "rate", "threads", "pipeline", "warmup", "timeout", "interleave", "interleave_seed", "dry_run"])]
    pub resume: Option<i64>,
    /// Write the HTML report of the run to FILE when it ends.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// When another benchmark holds the machine, wait for it instead of refusing.
    #[arg(long)]
    pub wait: bool,
    /// No progress display.
    #[arg(long)]
    pub quiet: bool,
    #[command(flatten)]
    pub clients: ClientArgs,
    #[command(flatten)]
    pub server: ServerArgs,
}

pub fn run(args: RunArgs) -> anyhow::Result<i32> {
    if args.resume.is_none() {
        if let Some((suite, text)) = services_suite(&args)? {
            return super::run_services::run(&args, &suite, &text);
        }
    }
    let root = resolve_root(args.root.as_deref())?;
    let zoo = load_zoo(&root)?;
    match args.resume {
        Some(id) => resume(&args, &zoo, id),
        None => fresh(&args, &zoo),
    }
}

fn fresh(args: &RunArgs, zoo: &Zoo) -> anyhow::Result<i32> {
    let (_, text) = Suite::resolve(&zoo.root, &args.suite)?;
    let text = apply_overrides(&text, args)?;
    let (suite, text) = record_seed(Suite::parse(&text, &args.suite)?, text, &args.suite)?;
    let plan = suite::plan(&suite, zoo)?;
    fits_here(&suite, &args.clients)?;
    for s in &plan.skips {
        eprintln!(
            "{}",
            crate::output::terminal::text(&format!(
                "skipped {}: {}",
                s.what,
                units::one_line(&s.reason)
            ))
        );
    }
    if plan.items.is_empty() {
        anyhow::bail!("nothing to run: the suite selected no runnable case");
    }
    if let Some(p) = &args.report {
        crate::report::check_target(p).map_err(|e| usage(format!("--report: {e:#}")))?;
    }
    if args.dry_run {
        // What a real run refuses before it starts, a dry run refuses too.
        args.clients.check(Some(&args.server))?;
        if args.clients.topology == crate::topology::TopologyKind::Netns {
            crate::topology::netns::require_root()?;
        }
        print_plan(&suite, &plan);
        let full = suite::full_matrix(&suite, zoo)?;
        println!(
            "full matrix (every toolchain present, {} CPUs): {}",
            suite::FULL_MATRIX_CPUS,
            suite::span::cases_and_time(full.case_count(), full.sweep_count(), full.estimate())
        );
        return Ok(0);
    }
    let _machine = MachineLock::acquire(args.wait)?;
    let layout = layout(args)?;
    let _lock = RunLock::acquire(&args.db)?;
    let mut store = Store::open(&args.db)?;
    let host = metadata::host(&plan.cpus);
    let run = store.create_run(&NewRun {
        started_at: crate::store::now_rfc3339(),
        suite: suite.name.clone(),
        suite_toml: text.clone(),
        git_revision: metadata::git_revision(&zoo.root),
        host_json: serde_json::to_string(&host)?,
        toolchains_json: metadata::toolchains(&plan.toolchains).to_string(),
        planned_cases: plan.case_count(),
    })?;
    let mut planned = Vec::new();
    for (seq, item) in plan.items.iter().enumerate() {
        if let PlanItem::Case(c) = item {
            planned.push(runner::planned_case(
                seq,
                &c.subject,
                None,
                c.repetition,
                c.duration,
            ));
        }
    }
    // From here the run exists: whatever stops it is stored with it, so
    // it is never left `running` by a process that is gone.
    let ids = match store_plan(&mut store, run, &layout, &planned) {
        Ok(ids) => ids,
        Err(e) => {
            let _ = store.set_run_state(run, "failed", Some(&format!("{e:#}")));
            return Err(e);
        }
    };
    let work: Vec<Work> = plan
        .items
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
    eprintln!(
        "run {run}: suite {}, {} cases{}, results in {}",
        crate::output::terminal::text(&suite.name),
        planned.len(),
        sweeps_note(&work),
        args.db.display()
    );
    execute(
        args,
        zoo,
        &mut store,
        run,
        suite.ready_timeout,
        plan.cpus,
        work,
        layout,
    )
}

/// Stores the run's topology and planned cases; the case id of each
/// planned case's place in the plan, every one of them read back.
fn store_plan(
    store: &mut Store,
    run: i64,
    layout: &Layout,
    planned: &[crate::store::PlannedCase],
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

/// Each profile's connections fit this machine's open-file limit, split
/// over the load generators the flags ask for.
fn fits_here(suite: &Suite, clients: &ClientArgs) -> anyhow::Result<()> {
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

/// Where the server and the load run, as the flags say; notes printed once.
fn layout(args: &RunArgs) -> anyhow::Result<Layout> {
    let layout = Layout::for_run(&args.clients, &args.server)?;
    for n in &layout.notes {
        eprintln!("{n}");
    }
    crate::host::groups::prepare(!matches!(layout.server, crate::host::Host::Ssh(_)));
    if layout.kind != crate::topology::TopologyKind::Local || layout.clients.len() > 1 {
        eprintln!("{}", layout.summary());
    }
    Ok(layout)
}

fn resume(args: &RunArgs, zoo: &Zoo, id: i64) -> anyhow::Result<i32> {
    let _machine = MachineLock::acquire(args.wait)?;
    let layout = layout(args)?;
    let _lock = RunLock::acquire(&args.db)?;
    let mut store = Store::open_existing(&args.db)?;
    let run = store
        .run(id)?
        .ok_or_else(|| usage(format!("--resume: no run {id} in {}", args.db.display())))?;
    if run.state == "done" {
        return Err(usage(format!("--resume: run {id} is already done")));
    }
    let suite = Suite::parse(&run.suite_toml, &format!("run {id}'s suite"))?;
    let plan = suite::plan(&suite, zoo)?;
    fits_here(&suite, &args.clients)?;
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
    let mut by_key: HashMap<String, PlanItem> = HashMap::new();
    let mut sweeps = Vec::new();
    let done_sweeps: Vec<String> = store.sweeps(id)?.into_iter().map(|s| s.sweep).collect();
    for item in plan.items {
        match &item {
            PlanItem::Case(c) => {
                let s = &c.subject;
                let k = key(
                    &s.server.name,
                    &s.mode,
                    s.response.as_str(),
                    &s.scenario.name,
                    s.cores as i64,
                    &s.load.label(),
                    c.repetition as i64,
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
        let k = key(
            &c.server,
            &c.mode,
            &c.response,
            &c.scenario,
            c.cores,
            &c.load_label,
            c.repetition,
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
    eprintln!(
        "resuming run {id}: {} cases left{}",
        work.iter()
            .filter(|w| matches!(w, Work::Case { .. }))
            .count(),
        sweeps_note(&work)
    );
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
    execute(
        args,
        zoo,
        &mut store,
        id,
        suite.ready_timeout,
        plan.cpus,
        work,
        layout,
    )
}

#[allow(clippy::too_many_arguments)]
fn execute(
    args: &RunArgs,
    zoo: &Zoo,
    store: &mut Store,
    run: i64,
    ready_timeout: std::time::Duration,
    cpus: Vec<usize>,
    work: Vec<Work>,
    layout: Layout,
) -> anyhow::Result<i32> {
    let opts = RunOptions {
        allow_unfair: args.allow_unfair,
        work_dir: zoo.default_work_dir(),
        ready_timeout,
        cpus,
        layout,
    };
    let total = work.len();
    let end = {
        let mut runner = Runner::new(store, run, opts, total, args.quiet);
        runner.execute(work)
    };
    let code = match end {
        Ok(RunEnd::Done { failed, skipped }) => {
            store.set_run_state(run, "done", None)?;
            if skipped > 0 {
                eprintln!("{skipped} cases were skipped as unfair (see `fairbench show {run}`; --allow-unfair measures them)");
            }
            if failed > 0 {
                1
            } else {
                0
            }
        }
        Ok(RunEnd::Interrupted) => {
            store.set_run_state(
                run,
                "interrupted",
                Some("interrupted by a signal (Ctrl-C or SIGTERM)"),
            )?;
            eprintln!("interrupted: finished cases are stored; `fairbench run --resume {run} --db {}` runs the rest", args.db.display());
            130
        }
        Err(e) => {
            let msg = format!("{e:#}");
            let _ = store.set_run_state(run, "failed", Some(&msg));
            return Err(e);
        }
    };
    if let (Some(r), cases) = (store.run(run)?, store.cases(run)?) {
        println!();
        let paired = crate::report::model::paired_of(&r, &cases, None).ok();
        print!(
            "{}",
            crate::output::terminal::text(&run_table::render(&r, &cases, paired.as_ref()))
        );
    }
    if let Some(path) = &args.report {
        write_report(&args.db, run, path);
    }
    Ok(code)
}

/// The HTML report, when the report module is built in; a failure here must
/// not hide the run's own outcome.
fn write_report(db: &Path, run: i64, path: &Path) {
    if let Err(e) = crate::report::write_html(db, run, path) {
        eprintln!(
            "fairbench: could not write the report {}: {e:#}",
            path.display()
        );
    } else {
        eprintln!("report: {}", path.display());
    }
}

fn sweeps_note(work: &[Work]) -> String {
    let n = work.iter().filter(|w| matches!(w, Work::Sweep(_))).count();
    if n == 0 {
        String::new()
    } else {
        format!(" and {n} rate sweeps")
    }
}

/// A suite of `[[service]]`s, read without a zoo: a path needs no
/// fairbench root, a name is looked up in the root's suites/ if there is
/// one. `None` for any other suite (and for a file that cannot be read,
/// which the zoo path then reports).
fn services_suite(args: &RunArgs) -> anyhow::Result<Option<(Suite, String)>> {
    let p = Path::new(&args.suite);
    let path = if args.suite.ends_with(".toml") || p.components().count() > 1 {
        p.to_path_buf()
    } else {
        match resolve_root(args.root.as_deref()) {
            Ok(root) => root.join("suites").join(format!("{}.toml", args.suite)),
            Err(_) => return Ok(None),
        }
    };
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(None);
    };
    match text.parse::<toml::Table>() {
        Ok(doc) if doc.contains_key("service") => {}
        _ => return Ok(None),
    }
    let text = apply_overrides(&text, args)?;
    let (suite, text) = record_seed(Suite::parse(&text, &args.suite)?, text, &args.suite)?;
    Ok(Some((suite, text)))
}

/// Applies command-line overrides to the suite's TOML so that the stored
/// suite is exactly what ran (and what `--resume` re-plans).
fn apply_overrides(text: &str, a: &RunArgs) -> anyhow::Result<String> {
    if a.servers.is_none()
        && a.scenarios.is_none()
        && a.cores.is_none()
        && a.duration.is_none()
        && a.repetitions.is_none()
        && a.interleave.is_none()
        && a.interleave_seed.is_none()
        && a.variant.is_none()
        && !load_flags(a)
        && a.warmup.is_none()
        && a.timeout.is_none()
    {
        return Ok(text.to_string());
    }
    let mut doc: toml::Table = text.parse().map_err(|e| usage(format!("--suite: {e}")))?;
    let list = |s: &str| -> toml::Value {
        toml::Value::Array(
            s.split(',')
                .map(str::trim)
                .filter(|x| !x.is_empty())
                .map(|x| toml::Value::String(x.into()))
                .collect(),
        )
    };
    if let Some(s) = &a.servers {
        doc.insert("servers".into(), list(s));
    }
    if let Some(s) = &a.scenarios {
        doc.insert("scenarios".into(), list(s));
    }
    if let Some(c) = &a.cores {
        let mut v = Vec::new();
        for part in c.split(',').map(str::trim).filter(|x| !x.is_empty()) {
            v.push(match crate::args::positive_count(part).map(i64::try_from) {
                Ok(Ok(n)) => toml::Value::Integer(n),
                _ if part == "all" => toml::Value::String("all".into()),
                _ => return Err(usage(format!("--cores: {part:?} is not a core count (expected numbers or \"all\", e.g. 1,all)"))),
            });
        }
        doc.insert("cores".into(), toml::Value::Array(v));
    }
    if let Some(d) = &a.duration {
        crate::args::positive_duration(d).map_err(|m| usage(format!("--duration: {m}")))?;
        doc.insert("duration".into(), toml::Value::String(d.clone()));
    }
    if let Some(r) = a.repetitions {
        doc.insert("repetitions".into(), toml::Value::Integer(r as i64));
    }
    if let Some(v) = &a.variant {
        if let Some(m) = &v.mode {
            doc.insert("modes".into(), list(m));
        }
        if let Some(r) = v.response {
            doc.insert("responses".into(), list(r.as_str()));
        }
    }
    let dur = |d: &Duration| toml::Value::String(humantime::format_duration(*d).to_string());
    if let Some(w) = &a.warmup {
        doc.insert("warmup".into(), dur(w));
    }
    if let Some(t) = &a.timeout {
        doc.insert("timeout".into(), dur(t));
    }
    if load_flags(a) {
        doc.insert(
            "load".into(),
            toml::Value::Array(vec![one_profile(&doc, a)?]),
        );
    }
    if let Some(i) = a.interleave {
        doc.insert("interleave".into(), toml::Value::String(i.as_str().into()));
    }
    if let Some(seed) = a.interleave_seed {
        let seed = i64::try_from(seed)
            .map_err(|_| usage(format!("--interleave-seed {seed}: must be below 2^63")))?;
        let mode = doc.get("interleave").and_then(toml::Value::as_str);
        if mode != Some(Interleave::Case.as_str()) {
            return Err(usage(
                "--interleave-seed: only --interleave case shuffles (this suite runs cases in matrix order)",
            ));
        }
        doc.insert("interleave_seed".into(), toml::Value::Integer(seed));
    }
    Ok(toml::to_string(&doc)?)
}

/// Any of the flags that make the one load profile.
fn load_flags(a: &RunArgs) -> bool {
    a.connections.is_some() || a.rate.is_some() || a.threads.is_some() || a.pipeline.is_some()
}

/// The [[load]] the flags describe: closed loop, or constant rate with
/// `--rate`; connections, request count, keep-alive and HTTP/2 streams not
/// given on the command line are the suite's first profile's, so `--rate` alone on
/// ab2012 still opens a connection per request.
fn one_profile(doc: &toml::Table, a: &RunArgs) -> anyhow::Result<toml::Value> {
    let first = doc
        .get("load")
        .and_then(toml::Value::as_array)
        .and_then(|l| l.first())
        .and_then(toml::Value::as_table);
    let mut p = toml::Table::new();
    let model = if a.rate.is_some() { "rate" } else { "closed" };
    p.insert("model".into(), model.into());
    let connections = match (a.connections, first.and_then(|f| f.get("connections"))) {
        (Some(c), _) => toml::Value::Integer(c as i64),
        (None, Some(c)) => c.clone(),
        (None, None) => toml::Value::Integer(50),
    };
    p.insert("connections".into(), connections);
    if let Some(f) = first {
        for k in ["requests", "keepalive", "streams"] {
            if let Some(v) = f.get(k) {
                p.insert(k.into(), v.clone());
            }
        }
    }
    if let Some(r) = a.rate {
        p.insert("rate".into(), toml::Value::Float(r));
    }
    if let Some(t) = a.threads {
        p.insert("threads".into(), toml::Value::Integer(t as i64));
    }
    if let Some(n) = a.pipeline {
        if a.rate.is_some() {
            return Err(usage(
                "--pipeline: only closed-loop profiles pipeline (drop --rate or --pipeline)",
            ));
        }
        p.insert("pipeline".into(), toml::Value::Integer(n as i64));
    }
    Ok(toml::Value::Table(p))
}

/// A suite interleaving cases without a seed gets one now, written into the
/// suite text the run stores, so the order can be told and repeated.
fn record_seed(suite: Suite, text: String, shown: &str) -> anyhow::Result<(Suite, String)> {
    if suite.interleave != Interleave::Case || suite.interleave_seed.is_some() {
        return Ok((suite, text));
    }
    let mut doc: toml::Table = text.parse().map_err(|e| usage(format!("--suite: {e}")))?;
    doc.insert(
        "interleave_seed".into(),
        toml::Value::Integer(order::fresh_seed() as i64),
    );
    let text = toml::to_string(&doc)?;
    Ok((Suite::parse(&text, shown)?, text))
}

fn print_plan(suite: &Suite, plan: &suite::SuitePlan) {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(o, "suite {}: {}", suite.name, suite.description);
    if let (Interleave::Case, Some(seed)) = (suite.interleave, suite.interleave_seed) {
        let _ = writeln!(
        o,"order: cases shuffled with seed {seed} and rotated one place each repetition (--interleave-seed {seed} runs this order)");
    }
    for (i, item) in plan.items.iter().enumerate() {
        let _ = match item {
            PlanItem::Case(c) => writeln!(
                o,
                "{:>4}  {}  ({} warm-up + {})",
                i + 1,
                c.label(),
                humantime::format_duration(c.subject.warmup),
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
    let _ = writeln!(
        o,
        "{} cases, {} sweeps; estimated time {} (measurement plus about 3 s to start each server; builds not included)",
        plan.case_count(),
        plan.sweep_count(),
        humantime::format_duration(std::time::Duration::from_secs(est.as_secs()))
    );
    print!("{}", crate::output::terminal::text(&o));
}
