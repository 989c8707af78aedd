//! `fairbench run`: a suite's whole matrix, stored case by case. The suite
//! with the flags' overrides is `suite::overrides`, the run's life from
//! plan to end `runner::session`; here the flags are read and the outcome
//! printed.

use fairbench_zoo::Zoo;

use super::run_args::RunArgs;
use super::run_end;
use crate::args::{load_zoo, resolve_root};
use crate::machine_lock::MachineLock;
use crate::output::metrics;
use crate::output::run_plan;
use crate::runner::session::{self, Session};
use crate::runner::Work;
use crate::store::{RunLock, Store};
use crate::suite::overrides::{self, Overrides};
use crate::suite::{self, Suite};
use crate::topology::Layout;
use crate::units;
use crate::usage_error::usage;

pub fn run(args: RunArgs) -> anyhow::Result<i32> {
    run_end::check_targets(&args)?;
    // A dry run refuses what a run would, but listens on nothing.
    let _metrics = if args.dry_run {
        metrics::check(args.metrics_listen.as_deref(), args.metrics_linger)?;
        None
    } else {
        metrics::start(args.metrics_listen.as_deref(), args.metrics_linger)?
    };
    if let Some(id) = args.resume {
        let zoo = load_zoo(&resolve_root(args.root.as_deref())?)?;
        return resume(&args, &zoo, id);
    }
    // A suite of `[[service]]`s given as a path needs no fairbench root:
    // the root is asked for only where it is needed.
    let root = match resolve_root(args.root.as_deref()) {
        Ok(r) => Some(r),
        Err(e) if !Suite::is_path(&args.suite) => return Err(e),
        Err(_) => None,
    };
    let (shown, text) = Suite::read(root.as_deref(), &args.suite)?;
    let (suite, text) = overrides::read(&text, &overrides_of(&args), &shown)?;
    metrics::label_all("suite", &suite.name);
    if !suite.services.is_empty() {
        return super::run_services::run(&args, &suite, &text);
    }
    let root = match root {
        Some(r) => r,
        None => resolve_root(args.root.as_deref())?,
    };
    fresh(&args, &load_zoo(&root)?, suite, text)
}

/// The flags that change the suite.
fn overrides_of(a: &RunArgs) -> Overrides<'_> {
    Overrides {
        servers: a.servers.as_deref(),
        scenarios: a.scenarios.as_deref(),
        cores: a.cores.as_deref(),
        duration: a.duration.as_deref(),
        repetitions: a.repetitions,
        variant: a.variant.as_ref(),
        connections: a.connections,
        rate: a.rate,
        threads: a.threads,
        pipeline: a.pipeline,
        warmup: a.warmup,
        timeout: a.timeout,
        interleave: a.interleave,
        interleave_seed: a.interleave_seed,
    }
}

fn fresh(args: &RunArgs, zoo: &Zoo, suite: Suite, text: String) -> anyhow::Result<i32> {
    let mut plan = suite::plan(&suite, zoo)?;
    session::fits_here(&suite, &args.clients)?;
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
    if args.dry_run {
        // What a real run refuses before it starts, a dry run refuses too.
        args.clients.check(Some(&args.server))?;
        if args.clients.topology == crate::topology::TopologyKind::Netns {
            crate::topology::netns::require_root()?;
        }
        print!(
            "{}",
            crate::output::terminal::text(&run_plan::render(&suite, &plan))
        );
        let full = suite::full_matrix(&suite, zoo)?;
        println!(
            "full matrix (every toolchain present, {} CPUs): {}",
            suite::FULL_MATRIX_CPUS,
            suite::span::cases_and_time(full.case_count(), full.sweep_count(), full.estimate())
        );
        return Ok(0);
    }
    let _machine = MachineLock::acquire(args.wait)?;
    let layout = layout(args, suite.address_family)?;
    let _lock = RunLock::acquire(&args.db)?;
    let mut store = Store::open(&args.db)?;
    let (run, work) = session::start(&mut store, zoo, &suite, &text, &mut plan, &layout)?;
    eprintln!(
        "run {run}: suite {}, {}{} cases{}, results in {}",
        crate::output::terminal::text(&suite.name),
        if suite.adaptive.is_some() {
            "up to "
        } else {
            ""
        },
        cases(&work),
        sweeps_note(&work),
        args.db.display()
    );
    if let Some(reps) = &suite.adaptive {
        eprintln!("{}", run_plan::adaptive_note(reps));
    }
    let how = session(args, zoo, &suite, (plan.cpus, &plan.toolchains), layout);
    let code = session::execute(how, &mut store, run, work)?;
    run_end::ended(args, &store, run)?;
    Ok(code)
}

/// Where the server and the load run, as the flags say, the load going to
/// the suite's address family; notes printed once.
fn layout(args: &RunArgs, family: suite::AddressFamily) -> anyhow::Result<Layout> {
    let mut layout = Layout::for_run(&args.clients, &args.server)?;
    layout.aim_at(family.loopback()).map_err(usage)?;
    let here = layout.kind == crate::topology::TopologyKind::Local
        && matches!(layout.server, crate::host::Host::Local);
    if family == suite::AddressFamily::Unix && args.calibrate.is_some() {
        return Err(usage(format!(
            "--calibrate: {}",
            suite::AddressFamily::UNIX_CALIBRATE
        )));
    }
    if family == suite::AddressFamily::Unix && !here {
        return Err(usage(
            "the suite's address_family = \"unix\" reaches each server on a unix socket of this machine: only with server and load here (no --topology, --server-host or --client-host)",
        ));
    }
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
    let _lock = RunLock::acquire(&args.db)?;
    let mut store = Store::open_existing(&args.db)?;
    let run = store
        .run(id)?
        .ok_or_else(|| usage(format!("--resume: no run {id} in {}", args.db.display())))?;
    if run.state == "done" {
        return Err(usage(format!("--resume: run {id} is already done")));
    }
    let suite = Suite::parse(&run.suite_toml, &format!("run {id}'s suite"))?;
    metrics::label_all("suite", &suite.name);
    let layout = layout(args, suite.address_family)?;
    let plan = suite::plan(&suite, zoo)?;
    session::fits_here(&suite, &args.clients)?;
    let work = session::left_to_do(&mut store, id, plan.items)?;
    eprintln!(
        "resuming run {id}: {} cases left{}",
        cases(&work),
        sweeps_note(&work)
    );
    session::take_up(&mut store, id, &layout)?;
    let how = session(args, zoo, &suite, (plan.cpus, &plan.toolchains), layout);
    let code = session::execute(how, &mut store, id, work)?;
    run_end::ended(args, &store, id)?;
    Ok(code)
}

/// How the work is executed.
fn session<'a>(
    args: &'a RunArgs,
    zoo: &'a Zoo,
    suite: &Suite,
    (cpus, probes): (Vec<usize>, &suite::Probes),
    layout: Layout,
) -> Session<'a> {
    Session {
        allow_unfair: args.allow_unfair,
        calibrate: args.calibrate.or(suite.calibrate),
        quiet: args.quiet,
        db: &args.db,
        zoo,
        ready_timeout: suite.ready_timeout,
        cpus,
        layout,
        toolchains: crate::runner::versions::toolchains(probes),
        adaptive: suite.adaptive,
    }
}

fn cases(work: &[Work]) -> usize {
    work.iter()
        .filter(|w| matches!(w, Work::Case { .. }))
        .count()
}

fn sweeps_note(work: &[Work]) -> String {
    let n = work.iter().filter(|w| matches!(w, Work::Sweep(_))).count();
    if n == 0 {
        String::new()
    } else {
        format!(" and {n} rate sweeps")
    }
}
