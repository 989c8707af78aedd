//! `load`'s flags as the engine's configuration; the engine's own
//! objections named by the flag.

use std::time::Duration;

use fairbench_engine::{LoadConfig, LoadModel};

use super::LoadArgs;
use crate::args::{bounds, migrant};
use crate::request_options::{self, Body, RequestOptions};
use crate::topology::TopologyKind;
use crate::usage_error::usage;

pub(super) fn config(args: &LoadArgs) -> anyhow::Result<LoadConfig> {
    let options = request_options(args);
    let routes = options.routes(&flag).map_err(usage)?;
    let urls: Vec<&str> = std::iter::once(args.url.as_str())
        .chain(args.vs.as_deref())
        .collect();
    request_options::check_routes_used(&urls, &routes, &flag).map_err(usage)?;
    if args.unix_socket.is_some() {
        one_generator_here(args)?;
    }
    let target = options
        .target(&args.url, &routes, &flag)
        .map_err(|e| usage(migrant::url_hint(&args.url).unwrap_or(e)))?;
    let mut cfg = LoadConfig::new(target);
    cfg.connections = args.connections;
    // Placed as every load at a URL is (one thread per CPU it is given),
    // unless told otherwise.
    let site = crate::stage::placement::url_generator(args.cpus.as_ref().map(|c| &c.0[..]));
    cfg.threads = args.threads.unwrap_or(site.default_threads);
    cfg.cpus = site.cpus;
    cfg.duration = match (args.duration, args.requests) {
        (Some(d), _) => d,
        (None, None) => DEFAULT_DURATION,
        // As long as the requests take: the bound is only a safety net.
        (None, Some(_)) => REQUESTS_BOUND,
    };
    cfg.requests = args.requests;
    cfg.keepalive = !args.no_keepalive;
    args.warmup.apply(&mut cfg);
    cfg.timeout = args.timeout;
    cfg.timeout_mode = args.timeout_mode;
    cfg.pipeline = args.pipeline;
    cfg.send_ahead = args.send_ahead;
    cfg.io = args.io;
    cfg.model = match args.rate {
        None => LoadModel::ClosedLoop,
        Some(rps) => LoadModel::ConstantRate { rps },
    };
    if let Some(stages) = &args.stages {
        // Planned like -R at the peak; the pacer follows the profile.
        let peak = stages.iter().map(|s| s.from.max(s.to)).fold(0.0, f64::max);
        cfg.model = LoadModel::ConstantRate { rps: peak };
        cfg.duration = stages.iter().map(|s| s.duration).sum();
        cfg.stages = Some(stages.clone());
    }
    cfg.zero_rtt = args.zero_rtt;
    options.apply(&args.url, &mut cfg, &flag).map_err(usage)?;
    cfg.validate().map_err(|e| usage(flag_error(&e)))?;
    let generators = args.place.client_hosts.len().max(args.place.clients);
    bounds::connections_fit(cfg.connections, generators)
        .map_err(|m| usage(format!("--connections: {m}")))?;
    Ok(cfg)
}

pub(super) const DEFAULT_DURATION: Duration = Duration::from_secs(10);
/// With `-n` and no `-d`: the longest run the engine takes (30 days).
pub(super) const REQUESTS_BOUND: Duration = Duration::from_secs(30 * 86_400);

/// Engine settings are named like the long flags; point the user at the flag.
pub(super) fn flag_error(e: &fairbench_engine::ConfigError) -> String {
    request_options::engine_error(e, &flag)
}

/// An option as `load` spells it: its long flag.
fn flag(name: &str) -> String {
    format!("--{name}")
}

/// The request and connection flags, as a service's keys give them too.
fn request_options(args: &LoadArgs) -> RequestOptions {
    RequestOptions {
        method: args.method.clone(),
        headers: args.headers.clone(),
        body: match (&args.body, &args.body_file) {
            (Some(b), _) => Body::Text(b.clone()),
            (None, Some(p)) => Body::File(p.clone()),
            (None, None) => Body::None,
        },
        targets: args.targets.clone(),
        pool: args.pool,
        seed: args.seed,
        http2: args.http2,
        http3: args.http3,
        streams: args.streams,
        insecure: args.insecure,
        cacert: args.cacert.clone(),
        cert: args.cert.clone(),
        key: args.key.clone(),
        connect_to: args.connect_to.clone(),
        resolve: args.resolve.clone(),
        unix_socket: args.unix_socket.clone(),
        proxy: crate::args::proxy::for_url(&args.proxy, &args.url),
        expect_status: args.expect_status.clone(),
    }
}

pub(super) fn timeout_mode(s: &str) -> Result<fairbench_engine::TimeoutMode, String> {
    fairbench_engine::TimeoutMode::parse(s)
}

/// `--unix-socket PATH` is for one load generator on this machine.
fn one_generator_here(args: &LoadArgs) -> anyhow::Result<()> {
    let p = &args.place;
    if p.clients > 1 || !p.client_hosts.is_empty() || p.topology != TopologyKind::Local {
        return Err(usage(
            "--unix-socket: one load generator on this machine only (not with --clients, --client-hosts or --topology)",
        ));
    }
    Ok(())
}
