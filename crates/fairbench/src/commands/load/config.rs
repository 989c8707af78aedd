//! `load`'s flags as the engine's configuration; the engine's own
//! objections named by the flag.

use std::path::PathBuf;
use std::time::Duration;

use fairbench_engine::{
    LoadConfig, LoadModel, Protocol, RequestSpec, StatusSet, Target, TlsOptions, DEFAULT_STREAMS,
};

use super::LoadArgs;
use crate::args::{bounds, migrant};
use crate::topology::TopologyKind;
use crate::usage_error::usage;

pub(super) fn config(args: &LoadArgs) -> anyhow::Result<LoadConfig> {
    let routes = routes(args)?;
    check_routes_used(args, &routes)?;
    let target = match &args.unix_socket {
        Some(path) => unix_target(args, path)?,
        None => Target::parse_routed(&args.url, &routes),
    }
    .map_err(|e| usage(migrant::url_hint(&args.url).unwrap_or_else(|| flag_error(&e))))?;
    let mut cfg = LoadConfig::new(target);
    cfg.connections = args.connections;
    // One load thread per CPU it is given, unless told otherwise.
    match (args.threads, &args.cpus) {
        (Some(t), _) => cfg.threads = t,
        (None, Some(cpus)) => cfg.threads = cpus.len(),
        (None, None) => {}
    }
    cfg.duration = match (args.duration, args.requests) {
        (Some(d), _) => d,
        (None, None) => DEFAULT_DURATION,
        // As long as the requests take: the bound is only a safety net.
        (None, Some(_)) => REQUESTS_BOUND,
    };
    cfg.requests = args.requests;
    cfg.keepalive = !args.no_keepalive;
    cfg.expect_status = StatusSet::parse(&args.expect_status).map_err(|e| usage(flag_error(&e)))?;
    cfg.tls = tls_options(args, cfg.target.tls)?;
    cfg.warmup = args.warmup;
    cfg.timeout = args.timeout;
    cfg.timeout_mode = args.timeout_mode;
    cfg.pipeline = args.pipeline;
    if args.http2 {
        cfg.protocol = Protocol::h2_for(cfg.target.tls);
    }
    cfg.streams = args.streams.unwrap_or(DEFAULT_STREAMS);
    cfg.send_ahead = args.send_ahead;
    cfg.cpus = args.cpus.clone().map(|c| c.0);
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
    let mut headers = Vec::new();
    for h in &args.headers {
        headers.push(RequestSpec::parse_header(h).map_err(|e| usage(flag_error(&e)))?);
    }
    let body = match (&args.body, &args.body_file) {
        (Some(b), _) => b.clone().into_bytes(),
        (None, Some(p)) => std::fs::read(p)
            .map_err(|e| usage(format!("--body-file: cannot read {}: {e}", p.display())))?,
        (None, None) => Vec::new(),
    };
    cfg.request = RequestSpec {
        method: args.method.clone(),
        headers,
        body,
    };
    if args.targets.is_some() && args.method != "GET" {
        return Err(usage(
            "--method: with --targets each target says its method (method = \"POST\")",
        ));
    }
    cfg.mix = crate::mix::for_load(
        &args.url,
        args.targets.as_deref(),
        &cfg.request,
        args.pool,
        args.seed,
    )
    .map_err(usage)?;
    cfg.validate().map_err(|e| usage(flag_error(&e)))?;
    let generators = args.place.client_hosts.len().max(args.place.clients);
    bounds::connections_fit(cfg.connections, generators)
        .map_err(|m| usage(format!("--connections: {m}")))?;
    if args.cacert.is_some() && args.insecure {
        return Err(usage(
            "--cacert and --insecure: choose one (--insecure accepts any certificate)",
        ));
    }
    // Serialising also validates the method.
    cfg.request
        .serialize(&cfg.target)
        .map_err(|e| usage(flag_error(&e)))?;
    Ok(cfg)
}

/// The TLS flags as the engine's options, the client certificate checked
/// before anything is sent.
fn tls_options(args: &LoadArgs, https: bool) -> anyhow::Result<TlsOptions> {
    let tls = TlsOptions {
        insecure: args.insecure,
        ca_pem: read_pem(&args.cacert, "cacert")?,
        cert_pem: read_pem(&args.cert, "cert")?,
        key_pem: read_pem(&args.key, "key")?,
    };
    tls.check_client_cert().map_err(|e| usage(flag_error(&e)))?;
    if args.cert.is_some() && !https {
        return Err(usage("--cert and --key: apply to https:// URLs only"));
    }
    Ok(tls)
}

/// The contents of a `--cacert`, `--cert` or `--key` file, when given.
fn read_pem(path: &Option<PathBuf>, flag: &str) -> anyhow::Result<Option<Vec<u8>>> {
    path.as_ref()
        .map(|p| {
            std::fs::read(p)
                .map_err(|e| usage(format!("--{flag}: cannot read {}: {e}", p.display())))
        })
        .transpose()
}

pub(super) const DEFAULT_DURATION: Duration = Duration::from_secs(10);
/// With `-n` and no `-d`: the longest run the engine takes (30 days).
pub(super) const REQUESTS_BOUND: Duration = Duration::from_secs(30 * 86_400);

/// Engine settings are named like the long flags; point the user at the flag.
pub(super) fn flag_error(e: &fairbench_engine::ConfigError) -> String {
    if e.field == "URL" {
        e.to_string()
    } else {
        format!("--{}: {}", e.field, e.message)
    }
}

pub(super) fn timeout_mode(s: &str) -> Result<fairbench_engine::TimeoutMode, String> {
    fairbench_engine::TimeoutMode::parse(s)
}

/// `--connect-to` and `--resolve`, parsed.
fn routes(args: &LoadArgs) -> anyhow::Result<fairbench_engine::route::Routes> {
    use fairbench_engine::route::{ConnectTo, Resolve, Routes};
    let connect_to = args
        .connect_to
        .iter()
        .map(|s| ConnectTo::parse(s).map_err(|e| usage(format!("--connect-to {e}"))))
        .collect::<Result<_, _>>()?;
    let resolve = args
        .resolve
        .iter()
        .map(|s| Resolve::parse(s).map_err(|e| usage(format!("--resolve {e}"))))
        .collect::<Result<_, _>>()?;
    Ok(Routes {
        connect_to,
        resolve,
    })
}

/// A rule that routes neither the URL nor `--vs URL_B` is a mistake
/// (a typo in a host or a port), not something to ignore. Checked before
/// any name is looked up: such a rule is why a name would not resolve.
fn check_routes_used(
    args: &LoadArgs,
    routes: &fairbench_engine::route::Routes,
) -> anyhow::Result<()> {
    let urls: Vec<(String, u16)> = std::iter::once(args.url.as_str())
        .chain(args.vs.as_deref())
        .filter_map(|u| {
            let u = url::Url::parse(u).ok()?;
            let host = match u.host()? {
                url::Host::Ipv6(x) => x.to_string(),
                other => other.to_string(),
            };
            Some((host, u.port_or_known_default()?))
        })
        .collect();
    let pairs: Vec<(&str, u16)> = urls.iter().map(|(h, p)| (h.as_str(), *p)).collect();
    match routes.unused(&pairs).first() {
        Some(rule) => Err(usage(format!(
            "{rule}: applies to no URL of this load ({})",
            pairs
                .iter()
                .map(|(h, p)| format!("{h}:{p}"))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
        None => Ok(()),
    }
}

/// `--unix-socket PATH`: a socket that is not there is a usage error before
/// anything runs, not a run of failed connects.
fn unix_target(
    args: &LoadArgs,
    path: &std::path::Path,
) -> anyhow::Result<Result<Target, fairbench_engine::ConfigError>> {
    use std::os::unix::fs::FileTypeExt;
    let p = &args.place;
    if p.clients > 1 || !p.client_hosts.is_empty() || p.topology != TopologyKind::Local {
        return Err(usage(
            "--unix-socket: one load generator on this machine only (not with --clients, --client-hosts or --topology)",
        ));
    }
    match std::fs::metadata(path) {
        Ok(m) if m.file_type().is_socket() => Ok(Target::parse_unix(&args.url, path)),
        Ok(_) => Err(usage(format!(
            "--unix-socket: {} is not a socket (expected the path a server listens on)",
            path.display()
        ))),
        Err(e) => Err(usage(format!("--unix-socket: {}: {e}", path.display()))),
    }
}
