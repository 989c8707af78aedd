//! `load URL_A --vs URL_B`: before and after, with paired ratios.

use fairbench_engine::{LoadConfig, RunError, Target};

use super::config::flag_error;
use super::{add_verdicts, emit, progress_for, with_verdicts, LoadArgs};
use crate::report::json_doc::Doc;
use crate::runner::stopping::Repetitions;
use crate::topology::TopologyKind;
use crate::usage_error::usage;
use crate::{runner, thresholds};

/// `--vs URL_B`: both URLs, repetition by repetition in a seeded order,
/// and their paired ratios. Non-ratio thresholds are checked on B (all its
/// repetitions together), `ratio.` ones on the paired ratio's interval.
pub(super) fn run_vs(
    args: &LoadArgs,
    cfg_a: &LoadConfig,
    url_b: &str,
    ts: &[thresholds::Threshold],
) -> anyhow::Result<i32> {
    let p = &args.place;
    if p.topology != TopologyKind::Local || p.clients != 1 || !p.client_hosts.is_empty() {
        return Err(usage(
            "--vs runs both URLs from this machine, with one load generator",
        ));
    }
    if args.hdr_log.is_some() {
        return Err(usage(
            "--vs cannot be combined with --hdr-log yet: the paired ratios are printed (and in --json)",
        ));
    }
    let cfg_b = config_b(args, cfg_a, url_b)?;
    let stop = crate::interrupt::flag();
    let reps = args.repetitions.unwrap_or(Repetitions::Fixed(5));
    let of = match reps {
        Repetitions::Fixed(n) => n.to_string(),
        Repetitions::Until { max, .. } => format!("at most {max}"),
    };
    let pair = runner::vs::run_pair(cfg_a, &cfg_b, &reps, args.seed, |r, side, cfg| {
        eprintln!("repetition {r} of {of}: {side} {}", cfg.target.url);
        let mut progress = progress_for(cfg);
        let o = fairbench_engine::run(cfg, stop.clone(), &mut progress);
        progress.finish();
        match o {
            Ok(o) if o.interrupted => Err(None),
            Ok(o) => Ok(o),
            Err(e) => Err(Some(e)),
        }
    });
    let pair = match pair {
        Ok(p) => p,
        Err(None) => {
            eprintln!("interrupted: no verdict");
            return Ok(130);
        }
        Err(Some(RunError::Config(e))) => return Err(usage(flag_error(&e))),
        Err(Some(e)) => anyhow::bail!("{e}"),
    };
    let b_parts: Vec<&fairbench_engine::Outcome> = pair.b.iter().collect();
    let b_all = fairbench_engine::Outcome::merge(&b_parts, Vec::new());
    let mut verdicts = thresholds::check_all(ts, &b_all);
    verdicts.extend(pair.check(ts));
    let a = runner::vs::Side {
        url: &args.url,
        protocol: cfg_a.protocol,
    };
    let b = runner::vs::Side {
        url: cfg_b.target.url.as_str(),
        protocol: cfg_b.protocol,
    };
    let mut v = serde_json::json!({
        "fairbench_version": env!("CARGO_PKG_VERSION"),
        "vs": pair.json(&a, &b),
    });
    add_verdicts(&mut v, &verdicts);
    emit::print(args, Doc::LoadVs, &v, || {
        pair.text(&a, &b) + &thresholds::table(&verdicts)
    })?;
    for (side, runs) in [("A", &pair.a), ("B", &pair.b)] {
        for (i, o) in runs.iter().enumerate() {
            for w in o.warnings() {
                eprintln!("WARNING: {side} repetition {}: {w}", i + 1);
            }
        }
    }
    let failed = pair.a.iter().chain(&pair.b).any(|o| o.requests == 0);
    if failed {
        eprintln!("fairbench: a repetition had no request answered (not saved)");
        return Ok(1);
    }
    if args.save {
        let argv: Vec<String> = std::env::args().collect();
        let run = runner::adhoc_pair::save_pair(&args.db, &argv, cfg_a, &cfg_b, &pair)?;
        eprintln!(
            "saved as run {run} in {} (`fairbench show {run} --db {}`: B relative to A)",
            args.db.display(),
            args.db.display()
        );
    }
    emit::export(args, Doc::LoadVs, &v)?;
    Ok(with_verdicts(0, &verdicts))
}

/// B's settings: A's, at URL_B, over `--vs-protocol` when given.
fn config_b(args: &LoadArgs, cfg_a: &LoadConfig, url_b: &str) -> anyhow::Result<LoadConfig> {
    let mut cfg_b = cfg_a.clone();
    cfg_b.target = Target::parse_routed(url_b, &cfg_a.target.routes)
        .map_err(|e| usage(format!("--vs: {e}")))?;
    if cfg_b.target.tls != cfg_a.target.tls {
        return Err(usage("--vs: both URLs must be http:// or both https://"));
    }
    if let Some(p) = args.vs_protocol {
        cfg_b.protocol = p;
        cfg_b.validate().map_err(|e| usage(protocol_error(p, &e)))?;
    }
    Ok(cfg_b)
}

/// The engine's objection to URL_B over `p`, named by `--vs-protocol`:
/// its own flag is the one that chose the protocol, not `--http2`.
fn protocol_error(p: fairbench_engine::Protocol, e: &fairbench_engine::ConfigError) -> String {
    match e.field.as_str() {
        "http2" | "http3" => format!("--vs-protocol {p}: {}", e.message),
        _ => format!("--vs-protocol {p}: {}", flag_error(e)),
    }
}
