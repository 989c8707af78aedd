//! `load --knee`: the sweep suites' knee search on one URL.

use fairbench_engine::{LoadConfig, LoadModel, RunError};

use super::config::{flag_error, DEFAULT_DURATION};
use super::{emit, progress_for, LoadArgs};
use crate::output::load::tls_error;
use crate::report::json_doc::Doc;
use crate::runner::knee;
use crate::topology::TopologyKind;
use crate::usage_error::usage;
use crate::{runner, thresholds, units};

/// `--knee`: the sweep suites' knee search on this URL.
pub(super) fn run_knee(
    args: &LoadArgs,
    cfg: &LoadConfig,
    objective: knee::Objective,
    ts: &[thresholds::Threshold],
) -> anyhow::Result<i32> {
    let p = &args.place;
    if p.topology != TopologyKind::Local || p.clients != 1 || !p.client_hosts.is_empty() {
        return Err(usage(
            "--knee searches from this machine, with one load generator",
        ));
    }
    if !ts.is_empty() {
        return Err(usage(
            "--threshold: checks one load; --knee reports the knee itself",
        ));
    }
    if args.save || args.hdr_log.is_some() {
        return Err(usage(
            "--knee cannot be combined with --save or --hdr-log yet: the steps and the knee are printed (and in --json)",
        ));
    }
    let (start, max) = (
        args.start_rate.unwrap_or(100.0),
        args.max_rate.unwrap_or(1e6),
    );
    if max < start {
        return Err(usage(format!(
            "--max-rate {max}: must not be below --start-rate {start}"
        )));
    }
    if args.dump {
        return runner::dump::dump(&args.url, cfg, args.cacert.is_some());
    }
    let _machine = crate::machine_lock::MachineLock::acquire(args.wait)?;
    let mut cfg = cfg.clone();
    // Each step as long as -d, by default 10 s.
    cfg.duration = args.duration.unwrap_or(DEFAULT_DURATION);
    // As the sweep suites' defaults: doubling, then four bisections.
    let sweep = knee::KneeSweep::new(knee::KneeSearch::new(start, max, 2.0, 4), objective);
    let stop = crate::interrupt::flag();
    let result = runner::knee_load::search(&cfg, sweep, |c| {
        if let LoadModel::ConstantRate { rps } = c.model {
            eprintln!("step: {} req/s offered", units::rate(rps));
        }
        let mut progress = progress_for(c);
        let o = fairbench_engine::run(c, stop.clone(), &mut progress);
        progress.finish();
        o
    });
    let result = match result {
        Ok(r) => r,
        Err(RunError::Config(e)) => return Err(usage(flag_error(&e))),
        Err(e) => anyhow::bail!(
            "{}",
            tls_error::in_words(&e.to_string(), args.cacert.is_some())
        ),
    };
    let v = serde_json::json!({
        "fairbench_version": env!("CARGO_PKG_VERSION"),
        "url": args.url,
        "knee": result,
    });
    emit::print(args, Doc::LoadKnee, &v, || result.text(&args.url))?;
    for st in &result.steps {
        for w in &st.warnings {
            eprintln!("WARNING: {} req/s step: {w}", units::rate(st.offered_rps));
        }
    }
    emit::export(args, Doc::LoadKnee, &v)?;
    if crate::interrupt::interrupted() {
        eprintln!("interrupted: the knee is of the steps measured");
        return Ok(130);
    }
    if result.steps.iter().all(|s| s.answered_rps == 0.0) {
        eprintln!("fairbench: no request was answered");
        return Ok(1);
    }
    Ok(0)
}
