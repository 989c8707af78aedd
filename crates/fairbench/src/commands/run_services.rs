//! `fairbench run --suite FILE` for a suite of `[[service]]`s: services that
//! already run, measured at their URLs (runner::services). Read without a
//! fairbench root, so a team keeps the suite file in its own repository.

use fairbench_engine::{LoadConfig, Outcome};

use crate::output::metrics;
use crate::output::progress::LoadProgress;
use crate::report::url_case::NOT_STARTED;
use crate::runner::metadata;
use crate::runner::services::{self, Ended, ServiceCase, SweepEnded};
use crate::store::{NewRun, RunLock, Store};
use crate::suite::{LoadProfile, Suite};
use crate::thresholds::{self, Threshold};
use crate::topology::TopologyKind;
use crate::units;
use crate::usage_error::usage;

use super::run_args::RunArgs;

pub fn run(args: &RunArgs, suite: &Suite, text: &str) -> anyhow::Result<i32> {
    refuse_zoo_flags(args)?;
    let cases = services::plan(suite);
    let configs = configs(args, suite, &cases)?;
    if args.dry_run {
        print_plan(suite, &cases, &configs);
        return Ok(0);
    }
    let _machine = crate::machine_lock::MachineLock::acquire(args.wait)?;
    let _lock = RunLock::acquire(&args.db)?;
    let mut store = Store::open(&args.db)?;
    let (run, ids) = store_plan(&mut store, suite, text, &cases, &configs)?;
    eprintln!(
        "run {run}: suite {}, {} of {} services at their URLs, results in {}",
        crate::output::terminal::text(&suite.name),
        counted(&cases),
        suite.services.len(),
        args.db.display()
    );
    eprintln!("{NOT_STARTED}");
    let tally = measure_all(&mut store, run, &cases, &configs, &ids)?;
    let code = if tally.interrupted {
        store.set_run_state(
            run,
            "interrupted",
            Some("interrupted by a signal (Ctrl-C or SIGTERM)"),
        )?;
        eprintln!("interrupted: finished cases are stored");
        130
    } else {
        store.set_run_state(run, "done", None)?;
        match (tally.failed, tally.broken) {
            (0, 0) => 0,
            (0, _) => thresholds::EXIT_FAILED,
            _ => 1,
        }
    };
    super::run_end::ended(args, &store, run)?;
    Ok(code)
}

/// Each case's load and thresholds, or a usage error naming the service
/// and its key.
fn configs(
    args: &RunArgs,
    suite: &Suite,
    cases: &[ServiceCase],
) -> anyhow::Result<Vec<(LoadConfig, Vec<Threshold>)>> {
    cases
        .iter()
        .map(|c| {
            services::config(suite, c)
                .and_then(|cfg| Ok((services::thresholds(c, &cfg)?, cfg)))
                .map(|(t, cfg)| (cfg, t))
                .map_err(|e| usage(format!("{}: service {:?}: {e}", args.suite, c.service.name)))
        })
        .collect()
}

/// `--dry-run`: the cases, how each service is asked (method, protocol,
/// thresholds, version: what a long run should not surprise anyone with),
/// and how long they would take.
fn print_plan(suite: &Suite, cases: &[ServiceCase], configs: &[(LoadConfig, Vec<Threshold>)]) {
    let text = crate::output::terminal::text;
    println!(
        "{}",
        text(&format!("suite {}: {}", suite.name, suite.description))
    );
    for (i, (c, (cfg, _))) in cases.iter().zip(configs).enumerate() {
        let mut how = vec![
            cfg.request.method.clone(),
            cfg.protocol.as_str().to_string(),
        ];
        if !c.service.thresholds.is_empty() {
            how.push(format!("thresholds {}", c.service.thresholds.join(" ")));
        }
        if let Some(v) = &c.service.version {
            how.push(format!("version {v}"));
        }
        if suite.warmup != crate::args::Warmup::default() {
            how.push(format!("warm-up {}", suite.warmup.label()));
        }
        if let LoadProfile::Sweep(s) = &c.load {
            how.push(format!(
                "rate sweep {}..{} req/s, steps of {}",
                s.start_rate,
                s.max_rate,
                humantime::format_duration(s.step_duration)
            ));
        }
        let line = format!(
            "{:>4}  {}  {}  ({})",
            i + 1,
            c.label(),
            c.service.url,
            how.join(", ")
        );
        println!("{}", text(&line));
    }
    let time: std::time::Duration = cases.iter().map(|c| services::case_time(suite, c)).sum();
    println!(
        "{} of services at their URLs; estimated time {} (nothing to build or start)",
        counted(cases),
        humantime::format_duration(std::time::Duration::from_millis(time.as_millis() as u64))
    );
    println!("{NOT_STARTED}");
}

/// "6 cases", or "2 cases and 1 sweep": what the plan measures.
fn counted(cases: &[ServiceCase]) -> String {
    let sweeps = cases.iter().filter(|c| is_sweep(c)).count();
    let n = format!("{} cases", cases.len() - sweeps);
    match sweeps {
        0 => n,
        1 => format!("{n} and 1 sweep"),
        k => format!("{n} and {k} sweeps"),
    }
}

fn is_sweep(c: &ServiceCase) -> bool {
    matches!(c.load, LoadProfile::Sweep(_))
}

/// Creates the run with its cases stored as pending; returns the run and
/// its cases' ids, in the plan's order (none for a sweep, whose steps are
/// stored as they are measured).
fn store_plan(
    store: &mut Store,
    suite: &Suite,
    text: &str,
    cases: &[ServiceCase],
    configs: &[(LoadConfig, Vec<Threshold>)],
) -> anyhow::Result<(i64, Vec<Option<i64>>)> {
    let run = store.create_run(&NewRun {
        started_at: crate::store::now_rfc3339(),
        suite: suite.name.clone(),
        suite_toml: text.to_string(),
        git_revision: None,
        host_json: serde_json::to_string(&metadata::host(&[]))?,
        toolchains_json: "{}".into(),
        planned_cases: cases.iter().filter(|c| !is_sweep(c)).count(),
    })?;
    let planned: Vec<_> = cases
        .iter()
        .zip(configs)
        .filter(|(c, _)| !is_sweep(c))
        .enumerate()
        .map(|(seq, (c, (cfg, _)))| services::planned_case(seq, c, cfg))
        .collect();
    store.insert_planned(run, &planned)?;
    let mut stored = store.cases(run)?.into_iter().map(|c| c.id);
    let ids = cases
        .iter()
        .map(|c| if is_sweep(c) { None } else { stored.next() })
        .collect();
    Ok((run, ids))
}

/// How the cases of a run went.
struct Tally {
    failed: usize,
    /// Cases that broke one of their service's thresholds.
    broken: usize,
    interrupted: bool,
}

/// Measures the cases one after another, each stored as it ends, until
/// all are done or the run is interrupted.
fn measure_all(
    store: &mut Store,
    run: i64,
    cases: &[ServiceCase],
    configs: &[(LoadConfig, Vec<Threshold>)],
    ids: &[Option<i64>],
) -> anyhow::Result<Tally> {
    let mut tally = Tally {
        failed: 0,
        broken: 0,
        interrupted: false,
    };
    for (n, ((c, (cfg, limits)), id)) in cases.iter().zip(configs).zip(ids).enumerate() {
        if crate::interrupt::interrupted() {
            tally.interrupted = true;
            break;
        }
        let ended = match id {
            Some(id) => measure_case(store, *id, c, cfg, limits, &mut tally)?,
            None => sweep_case(store, run, c, cfg, &mut tally)?,
        };
        let Some((line, below)) = ended else {
            tally.interrupted = true;
            break;
        };
        eprintln!(
            "{}",
            crate::output::terminal::text(&format!(
                "[{}/{}] {} ({}): {line}",
                n + 1,
                cases.len(),
                c.label(),
                c.service.url
            ))
        );
        eprint!("{}", crate::output::terminal::text(&below));
    }
    Ok(tally)
}

/// Measures one case: its line and what goes under it (the threshold
/// table), or None when it was interrupted.
fn measure_case(
    store: &mut Store,
    id: i64,
    c: &ServiceCase,
    cfg: &LoadConfig,
    limits: &[Threshold],
    tally: &mut Tally,
) -> anyhow::Result<Option<(String, String)>> {
    let mut progress = LoadProgress::new(cfg.warmup + cfg.duration);
    let labels = vec![
        ("service", c.service.name.clone()),
        ("url", c.service.url.clone()),
        ("load", c.load.label()),
    ];
    metrics::begin(labels, metrics::planned(cfg));
    let stop = crate::interrupt::flag();
    let end = services::measure(
        store,
        id,
        c.service.version.clone(),
        cfg,
        stop,
        &mut progress,
    )?;
    progress.finish();
    Ok(match end {
        Ended::Done(o) => {
            let verdicts = thresholds::check_all(limits, &o);
            tally.broken += usize::from(verdicts.iter().any(|v| !v.pass));
            Some((done_line(&o), thresholds::table(&verdicts)))
        }
        Ended::Failed(reason) => {
            tally.failed += 1;
            Some((
                format!("FAILED: {}", units::one_line(&reason)),
                String::new(),
            ))
        }
        Ended::Interrupted => None,
    })
}

/// Searches one service's knee: the knee on its line, and under it the
/// steps and the knee as `load --knee` prints them; None when interrupted.
fn sweep_case(
    store: &mut Store,
    run: i64,
    c: &ServiceCase,
    cfg: &LoadConfig,
    tally: &mut Tally,
) -> anyhow::Result<Option<(String, String)>> {
    Ok(match services::sweep(store, run, c, cfg)? {
        SweepEnded::Done(r) => {
            let steps = match r.steps.len() {
                1 => "1 step".to_string(),
                n => format!("{n} steps"),
            };
            let line = match r.knee_rps {
                Some(k) => format!("knee {} req/s ({steps})", units::rate(k)),
                None => format!("no knee: no rate met the objective ({steps})"),
            };
            let mut below = r.text(&c.service.url);
            for st in &r.steps {
                for w in &st.warnings {
                    below.push_str(&format!(
                        "WARNING: {} req/s step: {w}\n",
                        units::rate(st.offered_rps)
                    ));
                }
            }
            Some((line, below))
        }
        SweepEnded::Failed(reason) => {
            tally.failed += 1;
            Some((
                format!("FAILED: {}", units::one_line(&reason)),
                String::new(),
            ))
        }
        SweepEnded::Interrupted => None,
    })
}

/// A measured case's line: throughput, latency and any errors.
fn done_line(o: &Outcome) -> String {
    let l = o.latency_summary();
    let mut line = format!(
        "{} req/s  p50 {}  p99 {}",
        units::rate(o.rps()),
        units::micros(l.p50 as f64),
        units::micros(l.p99 as f64)
    );
    if o.errors.total() > 0 {
        line.push_str(&format!("  errors {}", units::count(o.errors.total())));
    }
    line
}

/// Flags that choose zoo servers, or where a server fairbench starts runs,
/// mean nothing for services at URLs: refused, not silently ignored.
fn refuse_zoo_flags(args: &RunArgs) -> anyhow::Result<()> {
    let zoo_only = [
        ("--servers", args.servers.is_some()),
        ("--scenarios", args.scenarios.is_some()),
        ("--cores", args.cores.is_some()),
        ("--variant", args.variant.is_some()),
        ("--allow-unfair", args.allow_unfair),
    ];
    if let Some((flag, _)) = zoo_only.iter().find(|(_, given)| *given) {
        return Err(usage(format!(
            "{flag}: the suite {} measures [[service]]s at their URLs, not zoo servers",
            args.suite
        )));
    }
    let c = &args.clients;
    if c.topology != TopologyKind::Local || c.clients != 1 || !c.client_hosts.is_empty() {
        return Err(usage(
            "a suite of [[service]]s is loaded from this machine, with one load generator",
        ));
    }
    Ok(())
}
