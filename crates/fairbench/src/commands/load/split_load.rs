//! `load` split over several load generators (`--clients`,
//! `--client-host`, `--topology netns`), merged exactly.

use fairbench_engine::LoadConfig;

use super::{
    add_verdicts, emit, exit_code, progress_for, save, view, with_observers, with_verdicts,
    LoadArgs,
};
use crate::fleet::split::{split, Aim};
use crate::output::load::{clients, summary};
use crate::report::json_doc::Doc;
use crate::runner::adhoc::SampleLog;
use crate::topology::Layout;
use crate::usage_error::usage;
use crate::{fleet, host, thresholds};

/// The load split over several generators (namespaces, ssh hosts, or
/// processes here), started together and merged exactly.
pub(super) fn run_fleet(
    args: &LoadArgs,
    cfg: &LoadConfig,
    thresholds: &[thresholds::Threshold],
) -> anyhow::Result<i32> {
    // The flags' own bounds first (--clients at most 64), then the split.
    args.place.check(None)?;
    let n = match args.place.client_hosts.len() {
        0 => args.place.clients,
        hosts => hosts,
    };
    if cfg.connections < n {
        return Err(usage(format!(
            "--connections: {} cannot be split over {n} load generators",
            cfg.connections
        )));
    }
    let layout = Layout::for_load(&args.place)?;
    for n in &layout.notes {
        eprintln!("{n}");
    }
    eprintln!("{}", layout.summary());
    if cfg.target.addr.ip().is_loopback() && layout.kind == crate::topology::TopologyKind::Ssh {
        let here = host::local_info().boot_id;
        if let Some(c) = layout.clients.iter().find(|c| c.info.boot_id != here) {
            return Err(usage(format!(
                "the URL names loopback, which on {} is that machine itself: give the server's address as the load generators see it",
                c.host.label()
            )));
        }
    }
    let cpus = args.cpus.clone().map(|c| c.0);
    let sites = crate::stage::placement::load_sites(&layout, cpus.as_deref());
    // In a namespace, this machine's loopback is the far end of the link.
    let aim = if layout.kind == crate::topology::TopologyKind::Netns
        && cfg.target.addr.ip().is_loopback()
    {
        Aim::EachSite
    } else {
        Aim::AsGiven
    };
    let load =
        split(cfg, &layout, &sites, args.threads, aim).map_err(|e| anyhow::anyhow!("{e}"))?;
    let jobs = load.jobs.clone();
    let stop = crate::interrupt::flag();
    let mut progress = progress_for(cfg);
    let mut log = SampleLog::default();
    let (result, hdr) = with_observers(args, &mut progress, &mut log, |obs| {
        fleet::run(jobs, stop, obs)
    })?;
    progress.finish();
    let mut f = match result {
        Ok(f) => f,
        Err(fleet::FleetError::Interrupted) => {
            eprintln!("interrupted before the load started");
            return Ok(130);
        }
        Err(e) => {
            let mut m = e.to_string();
            if layout.kind == crate::topology::TopologyKind::Netns && m.contains("cannot connect") {
                m.push_str(" (with --topology netns the load reaches this machine over a veth link, not loopback: the server must listen on the any address, 0.0.0.0 or [::])");
            }
            anyhow::bail!("{m}")
        }
    };
    f.warnings = load.warnings(&f);
    let verdicts = thresholds::check_all(thresholds, &f.merged);
    let mut v = clients::json(&args.url, &args.percentiles.0, layout.describe(), &f)?;
    add_verdicts(&mut v, &verdicts);
    emit::print(args, Doc::Load, &v, || {
        summary::render(&args.url, &f.merged, &view(args))
            + &clients::text(&f)
            + &thresholds::table(&verdicts)
    })?;
    layout.teardown();
    save(args, cfg, &f.merged, log)?;
    hdr.write()?;
    emit::export(args, Doc::Load, &v)?;
    Ok(with_verdicts(exit_code(&f.merged), &verdicts))
}
